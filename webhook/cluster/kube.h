/*
 * kube.h: the API-server client (libcurl, OpenSSL) that keeps a cluster view current by
 * list+watch, in background threads; the request path never waits on it.
 *
 * Per kind (cluster.h): list with pagination (limit/continue), then watch from the list's
 * resourceVersion with bookmarks; 410 Gone (as the HTTP status of a list or watch, or as an
 * ERROR event) means relist; a watch that ends cleanly is resumed from the last resourceVersion
 * seen; a dropped, failing or silent connection is noticed by timeouts and retried with
 * exponential backoff and jitter. The bearer token is re-read from its file as it rotates, and
 * never logged.
 */
#ifndef GPUADMIT_KUBE_H
#define GPUADMIT_KUBE_H

#include "cluster.h"
#include "diag.h"
#include "metrics.h"

struct kube_config {
    const char *kubeconfig;   /* a kubeconfig file (its current context), or NULL for in-cluster */
    unsigned watch_timeout_s; /* timeoutSeconds asked of each watch (default 300) */
    unsigned list_page;       /* limit per list page (default 500) */
    struct metrics *metrics;  /* relists and watch restarts are counted here (borrowed; NULL) */
};

struct kube;

/* Reads the configuration (kubeconfig or in-cluster files: kubeconfig.h) and starts feeding view
 * (borrowed; must outlive the client). It initialises libcurl (curl_global_init, which is not
 * thread-safe): call it from the main thread before any other thread starts.
 *
 * NULL with d filled when the configuration is unusable (missing
 * file, no current context, bad certificate data); network trouble is not an error here: the
 * client keeps retrying, and the view stays unsynced until it succeeds. */
struct kube *kube_start(const struct kube_config *cfg, struct cluster *view, struct diag *d);

/* Stops the threads (within about a second) and frees the client. */
void kube_stop(struct kube *k);

#endif
