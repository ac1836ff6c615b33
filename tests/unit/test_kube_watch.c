/*
 * test_kube_watch.c: what the list+watch client does when a watch or a list page ends, without
 * a network: through kube_watch.h (as tests/fuzz/fuzz_watch.c), the stream decoder
 * (kube_watch_feed) and the decisions after a request (kube_watch_outcome, kube_list_retry) are
 * reached as they are.
 *
 * Expected: as client-go's reflector (k8s.io/client-go/tools/cache/reflector.go) and the
 * apiserver's watch protocol have it. A watch whose resourceVersion is too old ends with 410
 * Gone, as the HTTP status or as an ERROR event carrying a metav1.Status with code 410
 * (reason Expired); the client must then list again (watching again from the same
 * resourceVersion would get the same 410 for ever). A list page whose continue token expired
 * (410) starts the list over. A watch that ends cleanly resumes from the last resourceVersion
 * it saw, bookmarks included.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "cluster/kube_watch.h"
#include "log.h"
#include "mono.h"

#define NODE_EVENT(type, name, rv)                                                                 \
    "{\"type\":\"" type "\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"" name          \
    "\",\"resourceVersion\":\"" rv "\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"},"      \
    "\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}}\n"
#define ERROR_EVENT(code, reason)                                                                  \
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"        \
    "\"Failure\",\"message\":\"too old resource version: 5 (9)\",\"reason\":\"" reason             \
    "\",\"code\":" #code "}}\n"

static struct kube k;

/* A node worker of a client that is stopping, so that no path under test sleeps a backoff
 * (a path that would sleep returns W_STOP or false instead). */
static struct worker *fresh_worker(void)
{
    struct cluster_config cfg = {60};
    struct worker *w = &k.w[CLUSTER_NODES];

    if (k.view != NULL)
        cluster_free(k.view);
    buf_free(&w->line);
    buf_free(&w->body);
    memset(w, 0, sizeof(*w));
    k.view = cluster_new(&cfg);
    w->k = &k;
    w->kind = CLUSTER_NODES;
    w->plural = cluster_kind_plural(CLUSTER_NODES);
    w->rng = 1;
    w->page = 500;
    snprintf(w->rv, sizeof(w->rv), "1");
    for (int i = 0; i < CLUSTER_KINDS; i++) {
        cluster_list_begin(k.view, (enum cluster_kind)i);
        cluster_list_end(k.view, (enum cluster_kind)i);
    }
    return w;
}

/* Feeds text in two pieces, cut at cut bytes: the decoder must not care where. */
static int feed(struct worker *w, const char *text, size_t cut)
{
    size_t n = strlen(text);

    if (cut > n)
        cut = n;
    if (kube_watch_feed(w, text, cut) < 0)
        return -1;
    return kube_watch_feed(w, text + cut, n - cut);
}

static bool has_node(const char *name)
{
    yyjson_mut_doc *dump = cluster_dump(k.view);
    bool found = yyjson_mut_obj_get(yyjson_mut_obj_get(yyjson_mut_doc_get_root(dump), "nodes"),
                                    name) != NULL;

    yyjson_mut_doc_free(dump);
    return found;
}

static void test_error_event_410_relists(void)
{
    struct worker *w = fresh_worker();
    struct reply r = {.res = CURLE_OK, .status = 200};

    w->mode = REQ_WATCH;
    /* an event, then the ERROR event, cut inside both */
    CHECK(feed(w, NODE_EVENT("ADDED", "g1", "5") ERROR_EVENT(410, "Expired"), 40) == -1);
    CHECK(w->verdict == V_GONE);
    CHECK_CONTAINS(w->why, "too old resource version");
    CHECK(has_node("g1")); /* what came before the ERROR is kept */
    CHECK_STR(w->rv, "5"); /* and its resourceVersion */
    CHECK(kube_watch_outcome(w, &r, mono_s()) == W_RELIST);
}

static void test_http_410_relists(void)
{
    struct worker *w = fresh_worker();
    struct reply r = {.res = CURLE_OK, .status = 410};

    w->mode = REQ_WATCH;
    CHECK(kube_watch_outcome(w, &r, mono_s()) == W_RELIST);
}

/* Any other ERROR event is logged and relisted too (after the relist backoff, in
 * worker_main). */
static void test_other_error_event_relists(void)
{
    struct worker *w = fresh_worker();
    struct reply r = {.res = CURLE_OK, .status = 200};

    w->mode = REQ_WATCH;
    CHECK(feed(w, ERROR_EVENT(500, "InternalError"), 10) == -1);
    CHECK(w->verdict == V_ERROR);
    CHECK(kube_watch_outcome(w, &r, mono_s()) == W_RELIST);
}

/* A watch the server ended cleanly is resumed, from the last resourceVersion, bookmarks
 * included; one that failed otherwise (here a 500) is retried after a backoff, not relisted. */
static void test_clean_end_resumes(void)
{
    struct worker *w = fresh_worker();
    struct reply ok = {.res = CURLE_OK, .status = 200}, failed = {.res = CURLE_OK, .status = 500};

    w->mode = REQ_WATCH;
    CHECK(
        feed(w,
             NODE_EVENT("ADDED", "g1", "7") "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":"
                                            "\"Node\",\"metadata\":{\"resourceVersion\":\"9\"}}}\n",
             100) == 0);
    CHECK(w->verdict == V_OK && w->events == 2);
    CHECK_STR(w->rv, "9");
    CHECK(kube_watch_outcome(w, &ok, mono_s()) == W_REWATCH);
    CHECK(kube_watch_outcome(w, &failed, mono_s()) == W_STOP); /* it would sleep first: stopping */
}

static void test_list_continue_410_restarts(void)
{
    struct worker *w = fresh_worker();
    struct reply gone = {.res = CURLE_OK, .status = 410};
    struct listing L = {.cont = strdup("page-3-token"), .pages = 2, .items = 1000};

    w->mode = REQ_LIST;
    CHECK(kube_list_retry(w, &gone, &L)); /* the first time at once, without a backoff */
    CHECK(L.cont == NULL && L.pages == 0 && L.items == 0);
    kube_listing_restart(&L);
}

/* One event may be KUBE_LINE_MAX bytes long, and not one more: past it the stream is broken
 * (and relisted) rather than held in memory without end. */
static void test_event_size_limit(void)
{
    struct worker *w = fresh_worker();
    size_t piece = 1024u * 1024u, fed = 0;
    char *x = malloc(piece);
    int rc = 0;

    memset(x, 'x', piece);
    w->mode = REQ_WATCH;
    while (rc == 0 && fed < KUBE_LINE_MAX) {
        size_t n = KUBE_LINE_MAX - fed < piece ? KUBE_LINE_MAX - fed : piece;

        rc = kube_watch_feed(w, x, n);
        fed += n;
    }
    CHECK(rc == 0 && w->verdict == V_OK && w->line.len == KUBE_LINE_MAX);
    CHECK(kube_watch_feed(w, x, 1) == -1);
    CHECK(w->verdict == V_BROKEN);
    CHECK_CONTAINS(w->why, "an event longer than 16777216 bytes");
    free(x);
}

int main(void)
{
    FILE *logf = tmpfile();

    log_set_fd(fileno(logf));
    pthread_mutex_init(&k.lock, NULL);
    pthread_cond_init(&k.wake, NULL);
    atomic_store(&k.stop, true);
    k.silence_s = 60;
    RUN(test_error_event_410_relists);
    RUN(test_http_410_relists);
    RUN(test_other_error_event_relists);
    RUN(test_clean_end_resumes);
    RUN(test_list_continue_410_restarts);
    RUN(test_event_size_limit);
    buf_free(&k.w[CLUSTER_NODES].line);
    buf_free(&k.w[CLUSTER_NODES].body);
    cluster_free(k.view);
    pthread_cond_destroy(&k.wake);
    pthread_mutex_destroy(&k.lock);
    fclose(logf);
    TEST_MAIN_END("test_kube_watch");
}
