/*
 * kube_watch.h: the inside of the kube client (kube.c), for kube.c, its unit test
 * (tests/unit/test_kube_watch.c) and its fuzz target (tests/fuzz/fuzz_watch.c) only: the state
 * of a list+watch worker, the watch-stream decoder, and what the client does when a watch or a
 * list page ends. Everything else includes kube.h.
 *
 * A test drives these without a network or threads: it builds a struct kube with a view, a
 * stopping flag (so that no path sleeps a backoff) and its lock and condition, and feeds a
 * worker.
 */
#ifndef GPUADMIT_KUBE_WATCH_H
#define GPUADMIT_KUBE_WATCH_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cluster.h"
#include "kubeconfig.h"
#include "bounds.h"
#include "metrics.h"

#define KUBE_WHY_MAX 512u

enum verdict {
    V_OK,      /* keep reading */
    V_GONE,    /* a 410 ERROR event: relist */
    V_ERROR,   /* another ERROR event: relist after a backoff */
    V_BROKEN,  /* a line we cannot use: relist */
    V_TOO_BIG, /* a list page past KUBE_LIST_BODY_MAX */
    V_NOMEM,   /* out of memory while reading */
};

enum req_mode { REQ_LIST, REQ_WATCH };

/* How one request ended. */
struct reply {
    CURLcode res;        /* the transport's result */
    long status;         /* HTTP status; 0 when none came */
    long retry_after_ms; /* the server's Retry-After, 0 when none */
    bool stopped;        /* kube_stop() cut it */
    bool silent;         /* a watch that went quiet for too long */
};

struct kube;

/* One thread per kind; it alone touches its fields. */
struct worker {
    struct kube *k;
    enum cluster_kind kind;
    const char *plural;
    pthread_t thread;
    bool running;
    CURLM *multi;
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    uint64_t rng;
    unsigned failures; /* failed requests in a row, for the backoff */
    unsigned relists;  /* relists forced by the stream since a watch last ended cleanly */
    unsigned page;     /* list limit; halves when a page is too big to hold */
    long absent;       /* an optional kind: the status (404, 403) it was last refused with, 0
                          while it is served */
    char rv[KUBE_RV_MAX + 1];
    /* the bearer token read from t->token_path (wiped) */
    char *token;
    double token_at;
    bool token_warned;
    /* the transfer in progress */
    enum req_mode mode;
    long status;     /* of the response, once known; 0 before */
    struct buf body; /* a list page, or the Status of a failed request */
    struct buf line; /* a watch event not yet complete */
    double last_data;
    enum verdict verdict;
    unsigned events; /* of the current watch, bookmarks included */
    char why[KUBE_WHY_MAX];
};

/* The client: read-only once the threads run, but for stop (and the view, which has its lock). */
struct kube {
    struct kubeconfig_target t;
    struct cluster *view;
    struct metrics *metrics; /* borrowed, or NULL */
    unsigned watch_timeout_s, list_page;
    double silence_s;
    atomic_bool stop;
    pthread_mutex_t lock; /* with wake: backoff sleeps and the stop flag */
    pthread_cond_t wake;
    bool sync_inited, curl_inited;
    struct worker w[CLUSTER_KINDS];
};

/* A list in progress. */
struct listing {
    char *cont;     /* the next page's continue token; NULL for the first page */
    unsigned pages; /* pages taken */
    size_t items;
};

/* What follows a watch. */
enum wres { W_REWATCH, W_RELIST, W_STOP };

/* Splits the watch stream into lines and applies each event to the view; chunk boundaries mean
 * nothing. -1 to abort the stream (w->verdict, and w->why when broken, say why). */
int kube_watch_feed(struct worker *w, const char *p, size_t n);

/* What a finished watch (started at start, on the monotonic clock) means: watch again from
 * w->rv, relist, or stop. */
enum wres kube_watch_outcome(struct worker *w, const struct reply *r, double start);

/* After a list page that failed: readies the retry (a smaller page, or the list from its start)
 * and waits. False when stopping. */
bool kube_list_retry(struct worker *w, const struct reply *r, struct listing *L);

/* Drops a list in progress: the next page is the first. */
void kube_listing_restart(struct listing *L);

#endif
