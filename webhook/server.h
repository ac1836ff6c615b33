/*
 * server.h: the HTTPS endpoint (libmicrohttpd over GnuTLS): routes, limits, graceful stop.
 *
 * Routes: POST /mutate, POST /validate, GET /healthz, GET /readyz, GET /metrics. Every answer is
 * a response: admission reviews get 200 with an AdmissionReview; bad requests get a 4xx with a
 * metav1.Status body and a log line. With metrics_addr, a second, plain-HTTP listener serves
 * only /metrics, /healthz and /readyz.
 */
#ifndef GPUADMIT_SERVER_H
#define GPUADMIT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "cluster/cluster.h"
#include "tls/creds.h"
#include "diag.h"
#include "metrics.h"
#include "policy/policy.h"

struct server_config {
    const char *listen; /* "ADDR:PORT"; IPv6 as "[::1]:8443"; port 0 picks a free one */
    size_t max_body;    /* bytes */
    unsigned threads;   /* 0: one per online CPU */
    unsigned max_connections;
    unsigned max_queue_ms; /* a connection not begun within this of its accept is shed */
    unsigned idle_timeout_s;
    unsigned request_timeout_s; /* a connection must complete a request within idle + this */
    size_t max_body_memory;     /* bytes of request bodies held at once, all requests together */
    unsigned shutdown_grace_s;
    struct policy_holder *policies; /* borrowed; must outlive the server */
    struct cluster *view;           /* borrowed, or NULL: the capacity rule's cluster view */
    bool view_must_sync;            /* /readyz waits for the view's first sync (API source) */
    bool debug_endpoints;           /* serve GET /debug/view */
    bool audit_only;                /* every rule reports instead of denying or patching */
    struct metrics *metrics;        /* borrowed; must outlive the server (NULL: none kept) */
    const char *metrics_addr;       /* "ADDR:PORT" of a plain-HTTP metrics port, or NULL */
};

struct server;

/* "ADDR:PORT" (IPv6 as "[ADDR]:PORT") into an address; -1 with d filled when it is not one. */
int server_parse_listen(const char *listen, struct sockaddr_storage *out, struct diag *d);

/* Starts serving with creds (borrowed; must outlive the server). New: stop with
 * server_stop(). NULL with d filled when the address cannot be used. */
struct server *server_start(const struct server_config *cfg, struct creds *creds, struct diag *d);
/* Closes connections that have not completed a request within idle_timeout_s +
 * request_timeout_s of their start or of their previous request (clients that trickle bytes to
 * dodge the idle timeout). Call about once a second. */
void server_sweep(struct server *s);
/* The port actually bound (useful with port 0); the metrics port's, or 0 without one. */
unsigned server_port(const struct server *s);
unsigned server_metrics_port(const struct server *s);
/* Stops accepting, lets in-flight requests finish (responses now carry Connection: close and
 * /readyz answers 503), waits at most the grace period, or until abort_fd (-1 for none) becomes
 * readable, then stops and frees the server. Returns 0 when everything in flight finished, -1
 * when the grace period ran out or abort_fd fired. */
int server_stop(struct server *s, int abort_fd);

#endif
