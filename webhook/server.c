/*
 * server.c: HTTPS serving with libmicrohttpd (see server.h).
 *
 * Invariants: handlers never block on I/O; every request gets a struct request on its first
 * call, freed by the completion callback; a body never grows past cfg.max_body (bytes past it
 * are drained uncounted and answered with 413, never truncated and evaluated); after
 * server_stop() begins, no new connection is accepted and every response closes its connection.
 */
#include "server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <limits.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "policy/decision.h"
#include "bounds.h"
#include "cluster/pending.h"
#include "log.h"
#include "policy/eval.h"
#include "json.h"
#include "metrics.h"
#include "mono.h"
#include "parse.h"
#include "review.h"
#include "text.h"

/* GnuTLS's certificate callback has no user pointer, so the one credential store this process
 * serves is reachable from here. It is written once, before the daemon starts, and only read
 * after that; the store itself is thread-safe (creds.h). */
static struct creds *tls_creds;

/* One open connection, for the deadline sweep: libmicrohttpd's own timeout restarts on every
 * byte, so a client that trickles a byte now and then would hold its connection for ever. */
struct conn {
    struct conn *prev, *next;
    struct server *s;
    int fd;
    bool shed;                   /* closed unserved: its ClientHello waited past --max-queue-ms */
    atomic_llong phase_start_ms; /* connection start, or the end of its last request */
    bool cut;                    /* already shut down by the sweep */
    bool plain;                  /* on the plain-HTTP metrics port */
    /* the TLS handshake, as the connection's own thread sees it (for the metrics) */
    bool hello;             /* a ClientHello was received */
    unsigned finished;      /* Finished messages sent and received: 2 once complete */
    unsigned long requests; /* requests begun on it */
    /* --client-ca: the verdict on the client's certificate, taken at the first request that
     * needs it and kept until a new handshake, a new bundle or the chain's first expiry */
    signed char client_ok;       /* 0 not yet checked, 1 accepted, -1 refused */
    unsigned client_checked_at;  /* finished, when it was checked */
    unsigned long client_ca_gen; /* the client CA bundle it was checked against */
    time_t client_not_after;     /* the earliest notAfter of the accepted chain */
    char client_why[CLIENT_WHY_MAX];
};

/* One listening daemon: the HTTPS one, or the plain-HTTP metrics one (--metrics-addr). */
struct listener {
    struct server *s;
    bool plain;
};

struct server {
    struct server_config cfg;
    struct MHD_Daemon *mhd;
    struct MHD_Daemon *mhd_metrics; /* NULL without --metrics-addr */
    struct listener tls_listener, plain_listener;
    struct creds *creds;
    /* session ticket key: clients that resume skip the certificate and key exchange work of a
     * full handshake. Made at start, never leaves the process; GnuTLS derives the keys it
     * really uses from it and rotates them. Wiped at stop. */
    gnutls_datum_t ticket_key;
    struct sockaddr_storage addr;
    atomic_long mute_handshake_logs; /* failed handshakes of shed connections, not logged */
    /* requests refused for want of a client certificate since the last summary line */
    pthread_mutex_t refused_lock;
    unsigned long unauthenticated;
    char unauthenticated_last[DIAG_MSG_MAX + 64];
    atomic_long shed; /* connections shed since the last summary log line */
    atomic_int stopping;
    atomic_long in_flight;     /* requests between their first call and completion */
    atomic_long connections;   /* open connections */
    atomic_llong last_done_ms; /* monotonic time the last request completed */
    atomic_llong body_bytes;   /* request body memory held by all requests together */
    pthread_mutex_t conns_lock;
    struct conn *conns; /* every open connection, under conns_lock */
};

struct request {
    const struct route *route; /* NULL when err_status says why */
    uint64_t start_ns;         /* monotonic, when its headers were read */
    unsigned kind, op;         /* metrics labels, once the review is decoded */
    enum metrics_outcome outcome;
    unsigned err_status; /* an error to answer once the body is drained, or 0 */
    const char *err_allow;
    char err_msg[DEFER_MSG_MAX];
    char *body;
    size_t len, cap;
    size_t reserved; /* bytes of s->body_bytes this request holds */
    size_t seen;     /* bytes received, kept or not */
    bool too_large;
    bool unauthenticated; /* refused for want of a client certificate (--client-ca) */
};

typedef enum MHD_Result (*route_fn)(struct server *s, struct MHD_Connection *c, struct request *rq);

struct route {
    const char *path;
    const char *method; /* GET routes answer HEAD too */
    const char *allow;  /* the Allow header of a 405 */
    bool has_body;
    route_fn fn;
    int endpoint; /* enum metrics_endpoint of a review route, or -1 */
    bool plain;   /* served on the plain-HTTP metrics port too */
    bool open;    /* served without a client certificate when --client-ca is set */
};

static enum MHD_Result route_mutate(struct server *s, struct MHD_Connection *c, struct request *rq);
static enum MHD_Result route_validate(struct server *s, struct MHD_Connection *c,
                                      struct request *rq);
static enum MHD_Result route_healthz(struct server *s, struct MHD_Connection *c,
                                     struct request *rq);
static enum MHD_Result route_readyz(struct server *s, struct MHD_Connection *c, struct request *rq);
static enum MHD_Result route_debug_view(struct server *s, struct MHD_Connection *c,
                                        struct request *rq);
static enum MHD_Result route_debug_explain(struct server *s, struct MHD_Connection *c,
                                           struct request *rq);
static enum MHD_Result route_metrics(struct server *s, struct MHD_Connection *c,
                                     struct request *rq);

static const struct route routes[] = {
    {"/mutate", "POST", "POST", true, route_mutate, METRICS_EP_MUTATE, false, false},
    {"/validate", "POST", "POST", true, route_validate, METRICS_EP_VALIDATE, false, false},
    /* the kubelet's probes and the scrapers have no client certificate */
    {"/healthz", "GET", "GET, HEAD", false, route_healthz, -1, true, true},
    {"/readyz", "GET", "GET, HEAD", false, route_readyz, -1, true, true},
    {"/metrics", "GET", "GET, HEAD", false, route_metrics, -1, true, true},
    {"/debug/view", "GET", "GET, HEAD", false, route_debug_view, -1, false, false},
    {"/debug/explain", "GET", "GET, HEAD", false, route_debug_explain, -1, false, false},
};

/* Counts an answer about to be queued: every error, and every answer of a review route (its
 * outcome, labels and latency). */
static void count_answer(struct server *s, const struct request *rq, unsigned status)
{
    if (status >= 400)
        metrics_http_error(s->cfg.metrics, status);
    /* not a review: anyone who can reach the port could otherwise push the error ratio */
    if (rq == NULL || rq->route == NULL || rq->route->endpoint < 0 || rq->unauthenticated)
        return;
    metrics_request(s->cfg.metrics, (enum metrics_endpoint)rq->route->endpoint, rq->kind, rq->op,
                    status == MHD_HTTP_OK ? rq->outcome : METRICS_ERROR, mono_ns() - rq->start_ns);
}

/* ---- responses ---- */

/* Queues body (owned, malloc'd; may be NULL for an empty body) as the answer to rq. allow,
 * when not NULL, is the Allow header of a 405. */
static enum MHD_Result respond(struct server *s, struct MHD_Connection *c, struct request *rq,
                               unsigned status, const char *content_type, char *body, size_t len,
                               const char *allow)
{
    struct MHD_Response *r;
    enum MHD_Result ok;

    count_answer(s, rq, status);
    if (body != NULL)
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    else
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (allow != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (atomic_load(&s->stopping))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result respond_text(struct server *s, struct MHD_Connection *c, struct request *rq,
                                    unsigned status, const char *text)
{
    return respond(s, c, rq, status, "text/plain; charset=utf-8", strdup(text), strlen(text), NULL);
}

/* A metav1.Status error answer, logged. */
static enum MHD_Result respond_error(struct server *s, struct MHD_Connection *c, struct request *rq,
                                     unsigned status, const char *url, const char *message,
                                     const char *allow)
{
    char *body = NULL;
    size_t len = 0;
    char path[256], error[DIAG_MSG_MAX + 64];

    /* the path and some messages carry client bytes: keep the log line valid JSON */
    snprintf(path, sizeof(path), "%s", url);
    snprintf(error, sizeof(error), "%s", message);
    text_utf8_fix(path);
    text_utf8_fix(error);
    if (rq != NULL && rq->unauthenticated) {
        /* one line a second at most (server_sweep): a caller without a certificate must not
         * be able to fill the log */
        pthread_mutex_lock(&s->refused_lock);
        s->unauthenticated++;
        snprintf(s->unauthenticated_last, sizeof(s->unauthenticated_last), "%s", error);
        pthread_mutex_unlock(&s->refused_lock);
    } else {
        log_event(status >= 500 ? LOG_ERROR : LOG_WARN, "request refused", "{s:i, s:s, s:s}",
                  "status", (int)status, "path", path, "error", error);
    }
    if (review_status_body((int)status, NULL, message, &body, &len) < 0)
        return MHD_NO;
    return respond(s, c, rq, status, "application/json", body, len, allow);
}

/* ---- admission ---- */

static enum MHD_Result admit(struct server *s, struct MHD_Connection *c, struct request *rq,
                             bool mutating)
{
    const char *url = rq->route->path;
    struct diag d;
    struct review review, *r = &review;
    struct decision dec;
    char *out = NULL;
    size_t len = 0;
    char msg[DIAG_MSG_MAX + 64];
    char empty[YYJSON_PADDING_SIZE + 1] = "";
    struct policy *policy;
    struct review_arena *arena = review_thread_arena();
    int rc;

    /* read in situ: the body has YYJSON_PADDING_SIZE spare bytes (take_body), zeroed here, and
     * is not read again after the review is released; into the thread's pool when it fits */
    if (rq->body != NULL)
        memset(rq->body + rq->len, 0, YYJSON_PADDING_SIZE);
    diag_clear(&d);
    if (review_decode_in(r, rq->body ? rq->body : empty, rq->len, JSON_READ_INSITU,
                         review_arena_reader(arena, rq->len), &d) < 0) {
        snprintf(msg, sizeof(msg), "not a valid AdmissionReview: %s", d.msg);
        return respond_error(s, c, rq, MHD_HTTP_BAD_REQUEST, url, msg, NULL);
    }
    rq->kind = metrics_kind_index(r->kind.kind);
    rq->op = metrics_op_index(review_op_name(r->op));
    decision_init_alc(&dec, arena ? arena->dyn : NULL);
    policy = policy_holder_get(s->cfg.policies);
    rc = eval_review(policy, r, mutating, s->cfg.audit_only, s->cfg.view, &dec);
    /* the notes borrow the policy's rules: counted before the reference is dropped */
    for (size_t i = 0; rc == 0 && i < dec.n_notes; i++)
        metrics_rule_outcome(s->cfg.metrics, dec.notes[i].rule->name, dec.notes[i].rule->type,
                             dec.notes[i].enforcement, dec.notes[i].finding);
    policy_unref(policy);
    if (rc < 0 || review_encode(r, &dec, mutating, &out, &len) < 0) {
        decision_release(&dec);
        review_release(r);
        return respond_error(s, c, rq, MHD_HTTP_INTERNAL_SERVER_ERROR, url,
                             "could not evaluate the review (out of memory)", NULL);
    }
    rq->outcome = !dec.allowed                                     ? METRICS_DENIED
                  : mutating && yyjson_mut_arr_size(dec.patch) > 0 ? METRICS_PATCHED
                                                                   : METRICS_ALLOWED;
    if (log_enabled(LOG_DEBUG))
        log_event(LOG_DEBUG, "review", "{s:s, s:s, s:s, s:s, s:s, s:b}", "uid", r->uid, "kind",
                  r->kind.kind, "namespace", r->ns, "name", r->name, "operation",
                  review_op_name(r->op), "allowed", dec.allowed);
    decision_release(&dec);
    review_release(r);
    return respond(s, c, rq, MHD_HTTP_OK, "application/json", out, len, NULL);
}

static enum MHD_Result route_mutate(struct server *s, struct MHD_Connection *c, struct request *rq)
{
    return admit(s, c, rq, true);
}

static enum MHD_Result route_validate(struct server *s, struct MHD_Connection *c,
                                      struct request *rq)
{
    return admit(s, c, rq, false);
}

static enum MHD_Result route_healthz(struct server *s, struct MHD_Connection *c, struct request *rq)
{
    return respond_text(s, c, rq, MHD_HTTP_OK, "ok\n");
}

static enum MHD_Result route_readyz(struct server *s, struct MHD_Connection *c, struct request *rq)
{
    if (atomic_load(&s->stopping))
        return respond_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
    if (s->cfg.view_must_sync && !cluster_synced(s->cfg.view))
        return respond_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                            "the cluster view has not synced yet\n");
    return respond_text(s, c, rq, MHD_HTTP_OK, "ok\n");
}

/* The Prometheus text exposition, format 0.0.4. */
static enum MHD_Result route_metrics(struct server *s, struct MHD_Connection *c, struct request *rq)
{
    struct metrics_sources src = {s->cfg.view, s->creds, s->cfg.policies};
    size_t len = 0;
    char *text = metrics_render(s->cfg.metrics, &src, &len);

    if (text == NULL)
        return respond_error(s, c, rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "/metrics",
                             "could not render the metrics (out of memory)", NULL);
    return respond(s, c, rq, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len,
                   NULL);
}

/* The /debug/ routes answer only with --debug-endpoints and a view (they list nodes and pods
 * to whoever can reach the port): NULL when they may, else the 404 to answer. */
static const char *debug_refusal(const struct server *s)
{
    if (s->cfg.view == NULL)
        return "no cluster view is configured";
    return s->cfg.debug_endpoints ? NULL : "debug endpoints are off (--debug-endpoints)";
}

/* doc (freed here; NULL: out of memory) as the JSON answer. */
static enum MHD_Result respond_doc(struct server *s, struct MHD_Connection *c, struct request *rq,
                                   yyjson_mut_doc *doc)
{
    size_t len = 0;
    char *text = doc ? yyjson_mut_write(doc, YYJSON_WRITE_NOFLAG, &len) : NULL;

    yyjson_mut_doc_free(doc);
    if (text == NULL)
        return MHD_NO;
    return respond(s, c, rq, MHD_HTTP_OK, "application/json", text, len, NULL);
}

/* The cluster view, for tests and debugging. */
static enum MHD_Result route_debug_view(struct server *s, struct MHD_Connection *c,
                                        struct request *rq)
{
    const char *no = debug_refusal(s);

    if (no != NULL)
        return respond_error(s, c, rq, MHD_HTTP_NOT_FOUND, "/debug/view", no, NULL);
    return respond_doc(s, c, rq, cluster_dump(s->cfg.view));
}

/* Why GPU pods are Pending (gpuadmit explain -o json), for ?namespace=NS&name=NAME (both
 * optional; NAME as gpuadmit explain takes it, e.g. replicaset/trainer), the first
 * PENDING_DEBUG_PODS_MAX pods (morePods counts the others). A name that is no kind gpuadmit
 * explains is a 400. */
static enum MHD_Result route_debug_explain(struct server *s, struct MHD_Connection *c,
                                           struct request *rq)
{
    const char *ns = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "namespace");
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    struct pending_query q = {ns != NULL && ns[0] ? ns : NULL, &name, name != NULL && name[0],
                              PENDING_DEBUG_PODS_MAX};
    const char *no = debug_refusal(s);
    yyjson_mut_doc *doc;
    struct diag d;

    if (no != NULL)
        return respond_error(s, c, rq, MHD_HTTP_NOT_FOUND, "/debug/explain", no, NULL);
    diag_clear(&d);
    if ((doc = pending_explain(s->cfg.view, &q, &d)) == NULL)
        return respond_error(s, c, rq,
                             strncmp(d.msg, "out of memory", 13) == 0
                                 ? MHD_HTTP_INTERNAL_SERVER_ERROR
                                 : MHD_HTTP_BAD_REQUEST,
                             "/debug/explain", d.msg, NULL);
    return respond_doc(s, c, rq, doc);
}

/* ---- request intake ---- */

/* The route of url; on the plain metrics port only /metrics, /healthz and /readyz. */
static const struct route *route_find(const char *url, bool plain)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (strcmp(url, routes[i].path) == 0 && (!plain || routes[i].plain))
            return &routes[i];
    }
    return NULL;
}

static bool method_ok(const struct route *r, const char *method)
{
    if (strcmp(method, r->method) == 0)
        return true;
    return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

/* application/json, any case, optionally with parameters ("; charset=utf-8"). */
static bool content_type_json(const char *ct)
{
    static const char want[] = "application/json";
    size_t n = sizeof(want) - 1;

    if (ct == NULL || strncasecmp(ct, want, n) != 0)
        return false;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* Grows rq's share of the process-wide body memory to want bytes; false when that would pass
 * --max-body-memory (many large bodies at once: refuse one rather than run out of memory). */
static bool reserve(struct server *s, struct request *rq, size_t want)
{
    long long delta = (long long)want - (long long)rq->reserved;

    if (delta <= 0)
        return true;
    if (atomic_fetch_add(&s->body_bytes, delta) + delta > (long long)s->cfg.max_body_memory) {
        atomic_fetch_sub(&s->body_bytes, delta);
        return false;
    }
    rq->reserved = want;
    return true;
}

static void release(struct server *s, struct request *rq)
{
    atomic_fetch_sub(&s->body_bytes, (long long)rq->reserved);
    rq->reserved = 0;
}

#define BUSY_MESSAGE "too many large requests in flight (--max-body-memory); retry"

/* Announced body length, or -1 when there is none (chunked) or it does not parse. */
static long long content_length(struct MHD_Connection *c)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t v;

    return cl != NULL && parse_uint(cl, 0, LLONG_MAX, &v) == 0 ? (long long)v : -1;
}

/* Records an error answer for the end of the request: the body (if any) is read and dropped
 * first, so that the connection stays usable for the next request. */
static void defer_error(struct request *rq, unsigned status, const char *msg, const char *allow)
{
    rq->err_status = status;
    snprintf(rq->err_msg, sizeof(rq->err_msg), "%s", msg);
    rq->err_allow = allow;
}

/* --client-ca: whether the connection's client may call a route that is not open; false with
 * the reason in *why. The verdict is kept per connection (struct conn says until when). */
static bool client_allowed(struct server *s, struct MHD_Connection *c, const char **why)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *cn = ci ? ci->socket_context : NULL;
    char local[sizeof(cn->client_why)];
    char *msg = cn ? cn->client_why : local;
    int rc;

    unsigned long gen = creds_client_ca_generation(s->creds);
    time_t not_after = 0;

    /* a new bundle (a CA dropped) or the certificate's expiry makes it check again */
    if (cn != NULL && cn->client_ok != 0 && cn->client_checked_at == cn->finished &&
        cn->client_ca_gen == gen && (cn->client_ok < 0 || time(NULL) <= cn->client_not_after)) {
        *why = cn->client_why;
        return cn->client_ok > 0;
    }
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci == NULL || ci->tls_session == NULL) {
        snprintf(msg, sizeof(local), "no TLS session");
        rc = -1;
    } else {
        rc = creds_verify_client(s->creds, ci->tls_session, &not_after, msg, sizeof(local));
    }
    if (cn != NULL) {
        cn->client_ok = rc == 0 ? 1 : -1;
        cn->client_checked_at = cn->finished;
        cn->client_ca_gen = gen;
        cn->client_not_after = not_after;
    }
    *why = msg;
    return rc == 0;
}

/* The first call for a request: route, method, headers. An error is answered once the body is
 * drained, which keeps the connection, when the body is small; a large one, or one the client
 * waits to send (Expect: 100-continue), is refused at once and the connection closed. Returns
 * true with *result set when an answer was queued. */
static bool screen(struct server *s, bool plain, struct MHD_Connection *c, const char *url,
                   const char *method, struct request *rq, enum MHD_Result *result)
{
    const char *ct, *why;
    char msg[DEFER_MSG_MAX];
    long long announced = content_length(c);
    bool waits = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT) != NULL;

    /* found first, so that a 413 at /mutate or /validate counts as that endpoint's error */
    rq->route = route_find(url, plain);
    /* --client-ca: a caller without a valid certificate learns nothing else (not even which
     * paths exist) and its refusals are neither review errors nor log lines of their own */
    if (!plain && (rq->route == NULL || !rq->route->open) && creds_client_ca_enabled(s->creds) &&
        !client_allowed(s, c, &why)) {
        snprintf(msg, sizeof(msg), "%s requires a client certificate from --client-ca: %s",
                 rq->route != NULL ? rq->route->path : "this path", why);
        defer_error(rq, MHD_HTTP_FORBIDDEN, msg, NULL);
        rq->unauthenticated = true;
    } else if (announced > (long long)s->cfg.max_body) {
        snprintf(msg, sizeof(msg), "body of %lld bytes is over the limit of %zu bytes", announced,
                 s->cfg.max_body);
        *result = respond_error(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, url, msg, NULL);
        return true;
    }
    if (rq->err_status != 0) {
        /* refused above */
    } else if (rq->route == NULL) {
        defer_error(rq, MHD_HTTP_NOT_FOUND,
                    plain ? "no such path; this port serves /metrics, /healthz and /readyz"
                          : "no such path; gpuadmit serves /mutate, /validate, /healthz, /readyz "
                            "and /metrics",
                    NULL);
    } else if (!method_ok(rq->route, method)) {
        snprintf(msg, sizeof(msg), "method %.16s not allowed on %s; use %s", method,
                 rq->route->path, rq->route->allow);
        defer_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, msg, rq->route->allow);
    } else if (rq->route->has_body) {
        ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!content_type_json(ct)) {
            snprintf(msg, sizeof(msg), "Content-Type must be application/json, got \"%.64s\"",
                     ct ? ct : "");
            defer_error(rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, msg, NULL);
        } else if (announced > 0 && !reserve(s, rq, (size_t)announced)) {
            defer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, BUSY_MESSAGE, NULL);
        } else if (announced > 0) {
            rq->cap = (size_t)announced; /* allocated once, on the first piece */
        }
    }
    if (rq->err_status != 0 && (waits || announced > (long long)DEFER_ERROR_BODY_MAX)) {
        *result = respond_error(s, c, rq, rq->err_status, url, rq->err_msg, rq->err_allow);
        return true;
    }
    return false;
}

/* Appends a piece of the body. Returns false when the connection should be dropped. */
static bool take_body(struct server *s, struct request *rq, const char *data, size_t n)
{
    size_t cap;
    char *grown;

    rq->seen += n;
    if (rq->err_status != 0 || rq->too_large)
        return rq->seen <= (size_t)s->cfg.max_body * BODY_DRAIN_FACTOR;
    if (rq->len + n > s->cfg.max_body) {
        rq->too_large = true;
        free(rq->body);
        rq->body = NULL;
        rq->len = rq->cap = 0;
        release(s, rq);
        return true;
    }
    if (rq->len + n > rq->cap || rq->body == NULL) {
        cap = rq->cap ? rq->cap : BODY_INITIAL_BYTES;
        while (cap < rq->len + n)
            cap *= 2;
        if (cap > s->cfg.max_body)
            cap = s->cfg.max_body;
        if (!reserve(s, rq, cap)) {
            free(rq->body);
            rq->body = NULL;
            rq->len = rq->cap = 0;
            release(s, rq);
            defer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, BUSY_MESSAGE, NULL);
            return true;
        }
        /* YYJSON_PADDING_SIZE more for the in-situ read (admit) */
        grown = realloc(rq->body, cap + YYJSON_PADDING_SIZE);
        if (grown == NULL)
            return false;
        rq->body = grown;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
    return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    const struct listener *l = cls;
    struct server *s = l->s;
    struct request *rq = *req_cls;
    enum MHD_Result result;
    char msg[128];
    const union MHD_ConnectionInfo *ci;

    (void)version;
    if (rq == NULL) {
        rq = calloc(1, sizeof(*rq));
        if (rq == NULL)
            return MHD_NO;
        *req_cls = rq;
        rq->start_ns = mono_ns();
        rq->kind = metrics_kind_index(NULL);
        rq->op = metrics_op_index(NULL);
        atomic_fetch_add(&s->in_flight, 1);
        ci = l->plain ? NULL : MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (ci != NULL && ci->socket_context != NULL)
            ((struct conn *)ci->socket_context)->requests++;
        if (screen(s, l->plain, c, url, method, rq, &result))
            return result;
        /* answers come on a later call, once the body (if any) is in: a response queued
         * before that makes libmicrohttpd close the connection */
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!take_body(s, rq, upload_data, *upload_data_size)) {
            log_event(LOG_WARN, "connection dropped: body far over the limit", "{s:s, s:I}", "path",
                      url, "bytes", (int64_t)rq->seen);
            return MHD_NO;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rq->err_status != 0)
        return respond_error(s, c, rq, rq->err_status, url, rq->err_msg, rq->err_allow);
    if (rq->too_large) {
        snprintf(msg, sizeof(msg), "body of %zu bytes is over the limit of %zu bytes", rq->seen,
                 s->cfg.max_body);
        return respond_error(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, url, msg, NULL);
    }
    return rq->route->fn(s, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct server *s = ((const struct listener *)cls)->s;
    struct request *rq = *req_cls;
    const union MHD_ConnectionInfo *ci;
    long long now = mono_ms();

    (void)toe;
    if (rq == NULL)
        return;

    release(s, rq);
    free(rq->body);
    free(rq);
    *req_cls = NULL;
    /* the connection's deadline starts again: it may now idle, then send the next request */
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci != NULL && ci->socket_context != NULL)
        atomic_store(&((struct conn *)ci->socket_context)->phase_start_ms, now);
    atomic_store(&s->last_done_ms, now);
    atomic_fetch_sub(&s->in_flight, 1);
}

/* Overload: whether a new connection's ClientHello has waited longer than --max-queue-ms for
 * its turn. The kernel knows when the bytes arrived, even while the connection sat in the
 * listen backlog, unaccepted; that wait is invisible from here otherwise. Such a connection
 * is closed before any costly TLS work (key exchange, signature): its caller, the apiserver,
 * gives up before an answer could come, and serving it would only make the next ones wait
 * longer. */
static bool queued_too_long(const struct conn *cn)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (cn->fd < 0 || getsockopt(cn->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
        len < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof(ti.tcpi_last_data_recv))
        return false;
    return ti.tcpi_last_data_recv > cn->s->cfg.max_queue_ms;
}

/* GnuTLS calls this for every handshake message the connection sends or receives (installed
 * when the connection starts). libmicrohttpd 0.9.75 sets the session's pointer to its
 * connection, which leads to our struct conn. */
static int on_handshake_message(gnutls_session_t session, unsigned int htype, unsigned when,
                                unsigned int incoming, const gnutls_datum_t *msg)
{
    struct MHD_Connection *c = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *ci =
        c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct conn *cn = ci ? ci->socket_context : NULL;

    (void)msg;
    if (cn == NULL)
        return 0;
    if (htype == GNUTLS_HANDSHAKE_CLIENT_HELLO && incoming && when == GNUTLS_HOOK_PRE &&
        !cn->hello && cn->finished == 0 && queued_too_long(cn)) {
        cn->shed = true;
        metrics_shed(cn->s->cfg.metrics);
        atomic_fetch_add(&cn->s->shed, 1);
        atomic_fetch_add(&cn->s->mute_handshake_logs, 1);
        return GNUTLS_E_APPLICATION_ERROR_MIN;
    }
    /* before it is processed: a hello that is then refused still counts as received */
    if (htype == GNUTLS_HANDSHAKE_CLIENT_HELLO && incoming)
        cn->hello = true;
    else if (htype == GNUTLS_HANDSHAKE_FINISHED && when == GNUTLS_HOOK_POST)
        cn->finished++;
    return 0;
}

/* A connection that closes before its handshake completed and before any request is a failed
 * handshake: the client refused the certificate or the parameters, gave up, or sent something
 * that is not TLS (also a bare TCP connect and close, which cannot be told apart from the
 * last). One that completed the handshake and left without a request is not counted. */
static void count_handshake(struct server *s, const struct conn *cn)
{
    if (cn->requests > 0 || cn->finished >= 2 || cn->shed)
        return;
    metrics_tls_failure(s->cfg.metrics,
                        cn->hello ? METRICS_TLS_AFTER_HELLO : METRICS_TLS_BEFORE_HELLO);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    const struct listener *l = cls;
    struct server *s = l->s;
    struct conn *cn = *socket_context;
    const union MHD_ConnectionInfo *ci;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* the metrics port's connections are swept alike, but are not what a shutdown
         * drains, and have no handshake to count */
        if (!l->plain)
            atomic_fetch_add(&s->connections, 1);
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        cn = calloc(1, sizeof(*cn));
        if (cn == NULL || ci == NULL) {
            free(cn);
            return; /* not swept: libmicrohttpd's idle timeout still applies */
        }
        cn->fd = ci->connect_fd;
        cn->s = s;
        atomic_store(&cn->phase_start_ms, mono_ms());
        ci = l->plain ? NULL : MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        cn->plain = l->plain;
        if (ci != NULL && ci->tls_session != NULL) {
            gnutls_handshake_set_hook_function(ci->tls_session, GNUTLS_HANDSHAKE_ANY,
                                               GNUTLS_HOOK_BOTH, on_handshake_message);
            /* libmicrohttpd keeps no session cache and sends no tickets: without this every
             * reconnect is a full handshake. A failure only costs resumption. */
            if (s->ticket_key.data != NULL)
                gnutls_session_ticket_enable_server(ci->tls_session, &s->ticket_key);
            /* asked, not required: the handshake completes either way, so that the probes
             * reach /healthz and /readyz and other callers get a 403 that says why */
            if (creds_client_ca_enabled(s->creds))
                gnutls_certificate_server_set_request(ci->tls_session, GNUTLS_CERT_REQUEST);
        }
        pthread_mutex_lock(&s->conns_lock);
        cn->next = s->conns;
        if (s->conns != NULL)
            s->conns->prev = cn;
        s->conns = cn;
        pthread_mutex_unlock(&s->conns_lock);
        *socket_context = cn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!l->plain)
            atomic_fetch_sub(&s->connections, 1);
        if (cn == NULL)
            return;
        if (!cn->plain)
            count_handshake(s, cn);
        /* libmicrohttpd closes the socket after this returns, so the sweep, which holds the
         * same lock, never shuts down a descriptor that was reused */
        pthread_mutex_lock(&s->conns_lock);
        if (cn->prev != NULL)
            cn->prev->next = cn->next;
        else
            s->conns = cn->next;
        if (cn->next != NULL)
            cn->next->prev = cn->prev;
        pthread_mutex_unlock(&s->conns_lock);
        free(cn);
        *socket_context = NULL;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    static const char failed_handshake[] = "Error: received handshake message out of context";
    struct server *s = cls;
    char buf[512];
    size_t n;
    long mute;

    vsnprintf(buf, sizeof(buf), fmt, ap);
    /* the connections shed under overload are summed up once a second (server_sweep) */
    if (s != NULL && strncmp(buf, failed_handshake, sizeof(failed_handshake) - 1) == 0) {
        mute = atomic_load(&s->mute_handshake_logs);
        while (mute > 0 && !atomic_compare_exchange_weak(&s->mute_handshake_logs, &mute, mute - 1))
            ;
        if (mute > 0)
            return;
    }
    n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    text_utf8_fix(buf);
    /* libmicrohttpd reports problems only: failed handshakes, limits, bind errors */
    log_event(LOG_WARN, "libmicrohttpd", "{s:s}", "detail", buf);
}

static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                          const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                          gnutls_pcert_st **pcert, unsigned int *pcert_length,
                          gnutls_privkey_t *pkey)
{
    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    creds_current(tls_creds, pcert, pcert_length, pkey);
    return 0;
}

/* ---- lifecycle ---- */

int server_parse_listen(const char *listen, struct sockaddr_storage *out, struct diag *d)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *port;
    size_t hlen;
    struct addrinfo hints, *res = NULL;
    int err;
    uint64_t pnum;

    if (colon == NULL || colon[1] == '\0') {
        diag_set(d, NULL, 0, 0, "--listen %s: expected ADDR:PORT, e.g. 0.0.0.0:8443 or [::]:8443",
                 listen);
        return -1;
    }
    port = colon + 1;
    hlen = (size_t)(colon - listen);
    if (hlen >= 2 && listen[0] == '[' && listen[hlen - 1] == ']') {
        listen++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host)) {
        diag_set(d, NULL, 0, 0, "--listen: missing or overlong address");
        return -1;
    }
    memcpy(host, listen, hlen);
    host[hlen] = '\0';
    if (parse_uint(port, 0, 65535, &pnum) < 0) {
        diag_set(d, NULL, 0, 0, "--listen %s: the port must be a number from 0 to 65535",
                 listen - (listen[-1] == '[' ? 1 : 0));
        return -1;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    err = getaddrinfo(host, port, &hints, &res);
    if (err != 0) {
        diag_set(d, NULL, 0, 0, "--listen %s:%s: %s", host, port, gai_strerror(err));
        return -1;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* CPUs this process may use: its affinity mask, and a cgroup v2 CPU quota when one is set (a
 * container limited to 2 CPUs on a 64-core node should not start 64 threads). */
static unsigned usable_cpus(void)
{
    cpu_set_t set;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f;
    long long quota, period;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    f = fopen("/sys/fs/cgroup/cpu.max", "re");
    if (f != NULL) {
        if (fscanf(f, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0 &&
            (quota + period - 1) / period < n)
            n = (long)((quota + period - 1) / period);
        fclose(f);
    }
    if (n < 1)
        n = 1;
    return n > (long)MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

/* TLS 1.2 and 1.3 only, AEAD ciphers with forward secrecy, the server's order. */
static const char tls_priorities[] =
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE";

/* The plain-HTTP daemon of --metrics-addr: /metrics, /healthz and /readyz for scrapers and
 * probes that do not speak TLS, one thread, few connections. */
static struct MHD_Daemon *start_plain(struct server *s, struct diag *d)
{
    struct sockaddr_storage addr;
    struct MHD_Daemon *mhd;
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;

    if (server_parse_listen(s->cfg.metrics_addr, &addr, d) < 0)
        return NULL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    {
        struct MHD_OptionItem opts[] = {
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL},
            {MHD_OPTION_SOCK_ADDR, 0, &addr},
            {MHD_OPTION_CONNECTION_LIMIT, METRICS_CONNECTION_LIMIT, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.idle_timeout_s, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY_BYTES, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, &s->plain_listener},
            /* slow clients are cut here too, or 64 tricklers would shut the scrapers out */
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, &s->plain_listener},
            {MHD_OPTION_END, 0, NULL},
        };

        mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &s->plain_listener,
                               MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    }
    if (mhd == NULL)
        diag_set(d, NULL, 0, 0,
                 "cannot serve metrics on %s (address in use or no permission; see the "
                 "libmicrohttpd log line above)",
                 s->cfg.metrics_addr);
    return mhd;
}

/* After the daemons stopped: no session uses the key any more. */
static void drop_ticket_key(struct server *s)
{
    if (s->ticket_key.data == NULL)
        return;
    gnutls_memset(s->ticket_key.data, 0, s->ticket_key.size);
    gnutls_free(s->ticket_key.data);
    s->ticket_key.data = NULL;
}

struct server *server_start(const struct server_config *cfg, struct creds *creds, struct diag *d)
{
    struct server *s = calloc(1, sizeof(*s));
    unsigned threads = cfg->threads;
    /* poll(), not epoll: with epoll, MHD_quiesce_daemon and the polling thread race to take the
     * listening socket out of the epoll set, and the loser aborts the process (libmicrohttpd
     * 0.9.75, "Failed to remove listen FD from epoll set", seen at shutdown under test). The
     * webhook's connections are few and kept alive, where poll() costs nothing. */
    unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;

    if (s == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->creds = creds;
    if (s->cfg.max_queue_ms == 0)
        s->cfg.max_queue_ms = DEFAULT_MAX_QUEUE_MS;
    s->tls_listener = (struct listener){s, false};
    s->plain_listener = (struct listener){s, true};
    pthread_mutex_init(&s->conns_lock, NULL);
    pthread_mutex_init(&s->refused_lock, NULL);
    if (server_parse_listen(cfg->listen, &s->addr, d) < 0)
        goto fail;
    if (s->addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (threads == 0)
        threads = usable_cpus();
    tls_creds = creds;
    if (gnutls_session_ticket_key_generate(&s->ticket_key) < 0) {
        s->ticket_key.data = NULL; /* served without resumption */
        log_event(LOG_WARN, "cannot make a TLS session ticket key; sessions are not resumed", NULL);
    }
    {
        struct MHD_OptionItem opts[] = {
            /* first, so that libmicrohttpd's own start-up messages come through it */
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, s},
            {MHD_OPTION_SOCK_ADDR, 0, &s->addr},
            {MHD_OPTION_THREAD_POOL_SIZE, threads, NULL},
            {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY_BYTES, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, &s->tls_listener},
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, &s->tls_listener},
            {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)tls_priorities},
            {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)on_certificate},
            {MHD_OPTION_END, 0, NULL},
        };

        s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &s->tls_listener,
                                  MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    }
    if (s->mhd == NULL) {
        diag_set(d, NULL, 0, 0,
                 "cannot serve on %s (address in use, no permission, or bad TLS "
                 "settings; see the libmicrohttpd log line above)",
                 cfg->listen);
        goto fail;
    }
    if (cfg->metrics_addr != NULL && (s->mhd_metrics = start_plain(s, d)) == NULL) {
        MHD_stop_daemon(s->mhd);
        goto fail;
    }
    return s;
fail:
    drop_ticket_key(s);
    pthread_mutex_destroy(&s->conns_lock);
    pthread_mutex_destroy(&s->refused_lock);
    free(s);
    return NULL;
}

unsigned server_port(const struct server *s)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);

    return i ? i->port : 0;
}

unsigned server_metrics_port(const struct server *s)
{
    const union MHD_DaemonInfo *i =
        s->mhd_metrics ? MHD_get_daemon_info(s->mhd_metrics, MHD_DAEMON_INFO_BIND_PORT) : NULL;

    return i ? i->port : 0;
}

/* The lines that sum up a second of refusals: requests without a valid client certificate,
 * connections shed under overload. */
static void log_summaries(struct server *s)
{
    long shed;

    pthread_mutex_lock(&s->refused_lock);
    if (s->unauthenticated > 0)
        log_event(LOG_WARN, "requests refused: no valid client certificate", "{s:I, s:s}",
                  "requests", (int64_t)s->unauthenticated, "last_error", s->unauthenticated_last);
    s->unauthenticated = 0;
    pthread_mutex_unlock(&s->refused_lock);
    shed = atomic_exchange(&s->shed, 0);
    /* the failed handshakes of shed connections are logged within milliseconds, if at all */
    atomic_store(&s->mute_handshake_logs, 0);
    if (shed > 0)
        log_event(LOG_WARN, "overloaded: connections closed unserved", "{s:I, s:s, s:i}",
                  "connections", (int64_t)shed, "reason",
                  "the TLS handshake would begin more than --max-queue-ms after the "
                  "connection arrived",
                  "max_queue_ms", (int)s->cfg.max_queue_ms);
}

void server_sweep(struct server *s)
{
    long long now = mono_ms();
    long long limit = ((long long)s->cfg.idle_timeout_s + s->cfg.request_timeout_s) * 1000;
    int cut = 0;

    pthread_mutex_lock(&s->conns_lock);
    for (struct conn *cn = s->conns; cn != NULL; cn = cn->next) {
        if (cn->cut || now - atomic_load(&cn->phase_start_ms) <= limit)
            continue;
        /* shutdown, not close: libmicrohttpd sees the end of the stream in its own thread and
         * closes the connection itself */
        shutdown(cn->fd, SHUT_RDWR);
        cn->cut = true;
        cut++;
    }
    pthread_mutex_unlock(&s->conns_lock);
    log_summaries(s);
    if (cut > 0)
        log_event(LOG_WARN, "closed slow connections", "{s:i, s:s}", "connections", cut, "reason",
                  "no complete request within --idle-timeout + --request-timeout");
}

int server_stop(struct server *s, int abort_fd)
{
    struct pollfd pfd = {abort_fd, POLLIN, 0};
    MHD_socket fd;
    long long start = mono_ms(), now, quiet_since;
    int rc = 0;
    struct timespec pause = {0, SHUTDOWN_POLL_MS * 1000000L};

    atomic_store(&s->stopping, 1);
    /* The listening socket is shut down, so that new connections are refused at once, but
     * closed only after MHD_stop_daemon, so that its number cannot be reused while a polling
     * thread may still be waiting on it. */
    fd = MHD_quiesce_daemon(s->mhd);
    if (fd != MHD_INVALID_SOCKET)
        shutdown(fd, SHUT_RDWR);
    log_event(LOG_INFO, "stopped accepting; draining", "{s:I, s:I}", "in_flight",
              (int64_t)atomic_load(&s->in_flight), "connections",
              (int64_t)atomic_load(&s->connections));
    for (;;) {
        now = mono_ms();
        if (atomic_load(&s->connections) == 0)
            break;
        if (atomic_load(&s->in_flight) == 0) {
            /* idle keep-alive connections get a moment after the last answer to send one more
             * request, answered with Connection: close, before they are closed under the
             * client */
            quiet_since = atomic_load(&s->last_done_ms);
            if (quiet_since < start)
                quiet_since = start;
            if (now - quiet_since >= SHUTDOWN_IDLE_DRAIN_MS)
                break;
        }
        if (abort_fd >= 0 && poll(&pfd, 1, 0) > 0) {
            log_event(LOG_WARN, "second signal; closing the remaining requests", "{s:I}",
                      "in_flight", (int64_t)atomic_load(&s->in_flight));
            rc = -1;
            break;
        }
        if (now - start >= (long long)s->cfg.shutdown_grace_s * 1000) {
            log_event(LOG_WARN, "grace period over; closing the remaining requests", "{s:I}",
                      "in_flight", (int64_t)atomic_load(&s->in_flight));
            rc = -1;
            break;
        }
        nanosleep(&pause, NULL);
    }
    MHD_stop_daemon(s->mhd);
    log_summaries(s); /* the last second's, and the drain's */
    /* scrapers may read the last counters until the very end */
    if (s->mhd_metrics != NULL)
        MHD_stop_daemon(s->mhd_metrics);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    drop_ticket_key(s);
    pthread_mutex_destroy(&s->conns_lock);
    pthread_mutex_destroy(&s->refused_lock);
    free(s);
    return rc;
}
