/*
 * kube.c: the API-server client (see kube.h): one list+watch thread per cluster kind, and the
 * HTTP underneath (libcurl with OpenSSL). Where to connect and with which credentials comes
 * from kubeconfig.c; the workers' state is in kube_watch.h, so that tests reach the decoder.
 *
 * Invariants: the target and the kube's settings are read-only once the threads run; each
 * worker owns its curl handles, buffers, token copy and resourceVersion, so the threads share
 * nothing but the stop flag (atomic, and also guarded by k->lock so a backoff sleep cannot miss
 * it) and the view (which has its own lock). Every transfer runs on the worker's own multi
 * handle, polled at most KUBE_POLL_MS at a time: kube_stop() sets the flag and wakes each
 * handle with curl_multi_wakeup(), so a blocked watch ends within milliseconds.
 *
 * Protocol (docs/protocol.md §9): lists carry no resourceVersion (a consistent read) and go page by
 * page with limit/continue; each page goes to the view as it arrives. The watch starts at the
 * list's resourceVersion and resumes from the last one seen (events and bookmarks) after a
 * clean end or a broken connection. 410 Gone, an ERROR event, or a stream that cannot be parsed
 * means relist. resourceVersions are opaque strings: copied and compared, never parsed.
 *
 * Silence: a watch that receives nothing (no event, no bookmark) for its timeoutSeconds plus a
 * margin is dropped by the poll loop itself (the time of the last byte is kept by the write
 * callback), which is exact where CURLOPT_LOW_SPEED_TIME averages over a window.
 *
 * Threads: kube_start() calls curl_global_init(), which is not thread-safe: call it from the
 * main thread before starting other threads that use libcurl or OpenSSL; kube_stop() joins the
 * workers and calls curl_global_cleanup(). The workers block every signal.
 *
 * Secrets: the bearer token and key material are wiped when released and never logged; curl's
 * verbose mode (which prints headers) is never enabled.
 */
#include "kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "json.h"
#include "kube_watch.h"
#include "kubeconfig.h"
#include "bounds.h"
#include "log.h"
#include "metrics.h"
#include "mono.h"
#include "text.h"

/* The timeouts, backoff and body caps against the apiserver are in bounds.h. */
#define KUBE_POLL_MS   250 /* longest wait in curl before checking stop and silence */
#define KUBE_MSG_SHOWN 300 /* chars of an apiserver message in logs */

#define KUBE_USER_AGENT "gpuadmit (kube client)"

/* ------------------------------------------------------------------------------------------ */
/* Small helpers */

/* A new string by format; NULL when out of memory. */
static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s = NULL;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        goto out;
    s = malloc((size_t)n + 1);
    if (s == NULL)
        goto out;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
out:
    return s;
}

/* A string from the apiserver, cut to max_runes and cleaned for a log field, in out (at least
 * SHOWN_SIZE(max_runes) bytes); "" when out of memory. Returns out. */
#define SHOWN_SIZE(max_runes) ((max_runes)*4 + 1)
static const char *shown(const char *s, size_t max_runes, char *out, size_t len)
{
    char *clean = text_utf8_clean(s ? s : "", max_runes, true);

    snprintf(out, len, "%s", clean ? clean : "");
    free(clean);
    return out;
}

/* The string of v when it is one without NUL bytes, else NULL: resourceVersions, continue
 * tokens and event types are used as C strings (jansson refused "\u0000" outright). */
static const char *plain_str(yyjson_val *v)
{
    const char *s = yyjson_get_str(v);

    return s != NULL && strlen(s) == yyjson_get_len(v) ? s : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Workers: one thread per kind */

static bool stopping(struct kube *k)
{
    return atomic_load(&k->stop);
}

/* xorshift64*: per-worker jitter, no shared state. */
static uint64_t rng_next(struct worker *w)
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 2685821657736338717ull;
}

/* The log fields of a failed request, in doc, with the apiserver's message from an error body
 * (a metav1.Status); NULL when out of memory. */
static yyjson_mut_val *status_fields(yyjson_mut_doc *doc, struct worker *w, const struct reply *r,
                                     const char *op)
{
    yyjson_mut_val *f =
        json_pack(doc, "{s:s, s:s, s:s}", "kind", w->plural, "op", op, "resourceVersion", w->rv);
    yyjson_doc *st;
    yyjson_val *msg, *reason;
    struct diag d;
    char text[SHOWN_SIZE(KUBE_MSG_SHOWN)];

    if (f == NULL)
        return NULL;
    if (r->status != 0)
        json_mut_set(doc, f, "status", yyjson_mut_sint(doc, r->status));
    if (r->status != 0 && r->status != 200 && w->body.len > 0) {
        diag_clear(&d);
        /* not in place: the body is kept as it came */
        st = json_read(w->body.p, w->body.len, 0, VIEW_DEPTH_MAX, NULL, &d);
        msg = yyjson_obj_get(yyjson_doc_get_root(st), "message");
        reason = yyjson_obj_get(yyjson_doc_get_root(st), "reason");
        /* nothing when either is there but not a string (a body that is no Status) */
        if ((msg == NULL || yyjson_is_str(msg)) && (reason == NULL || yyjson_is_str(reason))) {
            if (msg != NULL)
                json_mut_set(doc, f, "message",
                             yyjson_mut_strcpy(doc, shown(yyjson_get_str(msg), KUBE_MSG_SHOWN, text,
                                                          sizeof(text))));
            if (reason != NULL)
                json_mut_set(
                    doc, f, "reason",
                    yyjson_mut_strcpy(doc, shown(yyjson_get_str(reason), 64, text, sizeof(text))));
        }
        yyjson_doc_free(st);
    }
    if (r->silent) {
        snprintf(text, sizeof(text), "no data for %.0f s", w->k->silence_s);
        json_mut_set(doc, f, "error", yyjson_mut_strcpy(doc, text));
    } else if (r->res != CURLE_OK) {
        json_mut_set(
            doc, f, "error",
            yyjson_mut_strcpy(doc, shown(w->errbuf[0] ? w->errbuf : curl_easy_strerror(r->res), 200,
                                         text, sizeof(text))));
    }
    return f;
}

/* Re-reads the token file when it is due (or forced after a 401). A failed read keeps the
 * previous token, as client-go does. True when the token changed. */
static bool token_refresh(struct worker *w, bool force)
{
    const struct kubeconfig_target *t = &w->k->t;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];
    char *fresh;
    double now = mono_s();
    bool changed;

    if (t->token_path == NULL ||
        (!force && w->token != NULL && now - w->token_at < KUBE_TOKEN_REFRESH_S))
        return false;
    w->token_at = now;
    diag_clear(&d);
    fresh = kubeconfig_token_read(t->token_path, &d);
    if (fresh == NULL) {
        if (!w->token_warned)
            log_event(LOG_WARN, "cannot read the token file; keeping the previous token",
                      "{s:s, s:s}", "kind", w->plural, "error", diag_format(&d, msg, sizeof(msg)));
        w->token_warned = true;
        return false;
    }
    w->token_warned = false;
    changed = w->token == NULL || strcmp(w->token, fresh) != 0;
    kubeconfig_secret_free(w->token);
    w->token = fresh;
    return changed;
}

static const char *token_now(const struct worker *w)
{
    return w->token != NULL ? w->token : w->k->t.token;
}

static void headers_free(struct curl_slist *h)
{
    for (struct curl_slist *e = h; e != NULL; e = e->next)
        OPENSSL_cleanse(e->data, strlen(e->data)); /* the Authorization header */
    curl_slist_free_all(h);
}

static struct curl_slist *headers_new(const struct worker *w)
{
    struct curl_slist *h = NULL, *n;
    const char *tok = token_now(w);
    char *auth;

    h = curl_slist_append(NULL, "Accept: application/json");
    if (h == NULL || tok == NULL)
        return h;
    auth = str_printf("Authorization: Bearer %s", tok);
    n = auth ? curl_slist_append(h, auth) : NULL;
    kubeconfig_secret_free(auth);
    if (n == NULL) {
        headers_free(h);
        return NULL;
    }
    return n;
}

static int process_line(struct worker *w, char *p, size_t len, bool insitu);

/* Splits the watch stream into lines; chunk boundaries mean nothing. -1 to abort the stream. */
int kube_watch_feed(struct worker *w, const char *p, size_t n)
{
    const char *nl;
    size_t take;

    while (n > 0) {
        nl = memchr(p, '\n', n);
        take = nl ? (size_t)(nl - p) : n;
        if (nl != NULL && w->line.len == 0) {
            /* a whole line in this chunk: no copy */
            if (process_line(w, (char *)p, take, false) < 0)
                return -1;
        } else {
            if (buf_add(&w->line, p, take, KUBE_LINE_MAX) < 0) {
                w->verdict = w->line.len + take > KUBE_LINE_MAX ? V_BROKEN : V_NOMEM;
                snprintf(w->why, sizeof(w->why), "an event longer than %u bytes", KUBE_LINE_MAX);
                return -1;
            }
            if (nl == NULL)
                break;
            /* the line buffer is padded (buf_add): read in place */
            if (process_line(w, w->line.p, w->line.len, true) < 0)
                return -1;
            w->line.len = 0;
        }
        p += take + 1;
        n -= take + 1;
    }
    return 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    struct worker *w = arg;
    size_t n = size * nmemb, keep;

    w->last_data = mono_s();
    if (w->status == 0)
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
    if (w->status != 200) {
        /* a failed request's Status, for the log; past the cap it is not worth keeping */
        keep = KUBE_ERROR_BODY_MAX - w->body.len < n ? KUBE_ERROR_BODY_MAX - w->body.len : n;
        (void)buf_add(&w->body, p, keep, KUBE_ERROR_BODY_MAX);
        return n;
    }
    if (w->mode == REQ_WATCH)
        return kube_watch_feed(w, p, n) < 0 ? 0 : n;
    if (buf_add(&w->body, p, n, KUBE_LIST_BODY_MAX) < 0) {
        w->verdict = w->body.len + n > KUBE_LIST_BODY_MAX ? V_TOO_BIG : V_NOMEM;
        return 0;
    }
    return n;
}

/* ERROR event: 410 means relist at once; anything else is logged and relisted after a backoff. */
static int on_error_event(struct worker *w, yyjson_val *status)
{
    int64_t code = 0;
    const char *reason = json_get_str(status, "reason"), *message = json_get_str(status, "message");
    char rtext[SHOWN_SIZE(64)], mtext[SHOWN_SIZE(KUBE_MSG_SHOWN)];

    if (!json_int64(yyjson_obj_get(status, "code"), &code))
        code = 0;
    if (reason == NULL)
        reason = "";
    if (message == NULL)
        message = "";
    if (code == 410) {
        w->verdict = V_GONE;
        snprintf(w->why, sizeof(w->why), "%.*s", KUBE_MSG_SHOWN, message);
    } else {
        w->verdict = V_ERROR;
        log_event(LOG_WARN, "watch ERROR event; relisting", "{s:s, s:s, s:I, s:s, s:s}", "kind",
                  w->plural, "resourceVersion", w->rv, "code", code, "reason",
                  shown(reason, 64, rtext, sizeof(rtext)), "message",
                  shown(message, KUBE_MSG_SHOWN, mtext, sizeof(mtext)));
    }
    return -1;
}

static int broken(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int broken(struct worker *w, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(w->why, sizeof(w->why), fmt, ap);
    va_end(ap);
    w->verdict = V_BROKEN;
    return -1;
}

/* One line of the watch stream: {"type": ..., "object": {...}}. p is read in place when insitu
 * (then it carries YYJSON_PADDING_SIZE zero bytes after len, and is changed), else left as it
 * is. -1 ends the stream (verdict set). */
static int process_line(struct worker *w, char *p, size_t len, bool insitu)
{
    yyjson_doc *ev = NULL;
    yyjson_val *root, *obj;
    const char *type, *rv;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];
    size_t i;
    int rc = -1;

    for (i = 0; i < len && strchr(" \t\r", p[i]) != NULL; i++) {
    }
    if (i == len)
        return 0; /* a blank line */
    diag_clear(&d);
    ev = json_read(p, len, insitu ? JSON_READ_INSITU : 0, VIEW_DEPTH_MAX, NULL, &d);
    if (ev == NULL) {
        rc = broken(w, "malformed event: %s", d.msg);
        goto out;
    }
    root = yyjson_doc_get_root(ev);
    type = plain_str(yyjson_obj_get(root, "type"));
    obj = yyjson_obj_get(root, "object");
    if (type == NULL || !yyjson_is_obj(obj)) {
        rc = broken(w, "an event without a type and an object");
        goto out;
    }
    if (strcmp(type, "ERROR") == 0) {
        rc = on_error_event(w, obj);
        goto out;
    }
    rv = plain_str(yyjson_obj_get(yyjson_obj_get(obj, "metadata"), "resourceVersion"));
    if (rv == NULL || rv[0] == '\0' || strlen(rv) > KUBE_RV_MAX) {
        rc = broken(w, "a %.16s event without a usable metadata.resourceVersion", type);
        goto out;
    }
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
        strcmp(type, "DELETED") == 0) {
        diag_clear(&d);
        if (cluster_apply(w->k->view, w->kind, type, obj, &d) < 0)
            log_event(LOG_WARN, "watch event skipped", "{s:s, s:s, s:s, s:s}", "kind", w->plural,
                      "type", type, "resourceVersion", rv, "error",
                      diag_format(&d, msg, sizeof(msg)));
    } else if (strcmp(type, "BOOKMARK") != 0) {
        rc = broken(w, "an event of unknown type \"%.32s\"", type);
        goto out;
    }
    memcpy(w->rv, rv, strlen(rv) + 1);
    w->events++;
    w->failures = 0; /* the watch works */
    cluster_heartbeat(w->k->view, w->kind);
    rc = 0;
out:
    yyjson_doc_free(ev);
    return rc;
}

/* Prepares the easy handle for one GET. */
static int setup(struct worker *w, const char *url, struct curl_slist *headers)
{
    const struct kubeconfig_target *t = &w->k->t;
    CURL *h = w->easy;
    CURLcode e = CURLE_OK;
    struct curl_blob ca = {t->ca, t->ca_len, CURL_BLOB_NOCOPY};
    struct curl_blob cert = {t->cert, t->cert_len, CURL_BLOB_NOCOPY};
    struct curl_blob key = {t->key, t->key_len, CURL_BLOB_NOCOPY};
    /* a watch that outlives twice its timeoutSeconds is not being ended by the server */
    long total = w->mode == REQ_LIST ? KUBE_LIST_TIMEOUT_S
                                     : (long)w->k->watch_timeout_s * 2 + (long)w->k->silence_s;

#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (e == CURLE_OK)                                                                         \
            e = curl_easy_setopt(h, opt, val);                                                     \
    } while (0)
    curl_easy_reset(h); /* keeps the connections and TLS sessions */
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PROTOCOLS_STR, "https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    SET(CURLOPT_SSL_VERIFYPEER, t->insecure ? 0L : 1L);
    SET(CURLOPT_SSL_VERIFYHOST, t->insecure ? 0L : 2L);
    if (t->ca_path != NULL)
        SET(CURLOPT_CAINFO, t->ca_path);
    if (t->ca != NULL)
        SET(CURLOPT_CAINFO_BLOB, &ca);
    if (t->cert_path != NULL) {
        SET(CURLOPT_SSLCERT, t->cert_path);
        SET(CURLOPT_SSLKEY, t->key_path);
    }
    if (t->cert != NULL) {
        SET(CURLOPT_SSLCERT_BLOB, &cert);
        SET(CURLOPT_SSLKEY_BLOB, &key);
    }
    if (t->cert_path != NULL || t->cert != NULL) {
        SET(CURLOPT_SSLCERTTYPE, "PEM");
        SET(CURLOPT_SSLKEYTYPE, "PEM");
    }
    SET(CURLOPT_CONNECTTIMEOUT, KUBE_CONNECT_TIMEOUT_S);
    SET(CURLOPT_TIMEOUT, total);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_TCP_KEEPIDLE, KUBE_TCP_KEEPIDLE_S);
    SET(CURLOPT_TCP_KEEPINTVL, KUBE_TCP_KEEPINTVL_S);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_USERAGENT, KUBE_USER_AGENT);
    if (w->mode == REQ_LIST)
        SET(CURLOPT_ACCEPT_ENCODING, ""); /* lists compress well; watches are not compressed */
    SET(CURLOPT_ERRORBUFFER, w->errbuf);
    SET(CURLOPT_WRITEFUNCTION, on_data);
    SET(CURLOPT_WRITEDATA, w);
#undef SET
    if (e != CURLE_OK)
        snprintf(w->errbuf, sizeof(w->errbuf), "libcurl refused an option: %s",
                 curl_easy_strerror(e));
    return e == CURLE_OK ? 0 : -1;
}

/* Runs the prepared transfer on the worker's multi handle, checking the stop flag and, for a
 * watch, silence between waits. */
static void perform(struct worker *w, struct reply *r)
{
    CURLMsg *msg;
    CURLMcode mc = CURLM_OK;
    curl_off_t retry_after = 0;
    int running = 1, left;
    bool done = false;

    w->last_data = mono_s();
    if (curl_multi_add_handle(w->multi, w->easy) != CURLM_OK) {
        r->res = CURLE_FAILED_INIT;
        return;
    }
    while (mc == CURLM_OK) {
        mc = curl_multi_perform(w->multi, &running);
        if (mc != CURLM_OK || running == 0)
            break;
        if (stopping(w->k)) {
            r->stopped = true;
            break;
        }
        if (w->mode == REQ_WATCH && mono_s() - w->last_data > w->k->silence_s) {
            r->silent = true;
            break;
        }
        mc = curl_multi_poll(w->multi, NULL, 0, KUBE_POLL_MS, NULL);
    }
    while ((msg = curl_multi_info_read(w->multi, &left)) != NULL) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == w->easy) {
            r->res = msg->data.result;
            done = true;
        }
    }
    if (r->stopped) {
        r->res = CURLE_ABORTED_BY_CALLBACK;
    } else if (r->silent) {
        r->res = CURLE_OPERATION_TIMEDOUT; /* never a clean end */
    } else if (!done) {
        r->res = CURLE_RECV_ERROR;
        snprintf(w->errbuf, sizeof(w->errbuf), "libcurl: %s", curl_multi_strerror(mc));
    }
    curl_multi_remove_handle(w->multi, w->easy);
    curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (curl_easy_getinfo(w->easy, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
        retry_after > 0)
        r->retry_after_ms = retry_after > KUBE_BACKOFF_MAX_MS / 1000 ? (long)KUBE_BACKOFF_MAX_MS
                                                                     : (long)retry_after * 1000;
}

/* One GET. After a 401 the token file is re-read, and the request made once more when the
 * token changed. */
static void request(struct worker *w, const char *url, enum req_mode mode, struct reply *r)
{
    struct curl_slist *h = NULL;

    token_refresh(w, false);
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(r, 0, sizeof(*r));
        w->mode = mode;
        w->status = 0;
        w->body.len = 0;
        w->line.len = 0;
        w->verdict = V_OK;
        w->events = 0;
        w->errbuf[0] = '\0';
        w->why[0] = '\0';
        headers_free(h);
        h = headers_new(w);
        if (h == NULL || setup(w, url, h) < 0) {
            r->res = CURLE_OUT_OF_MEMORY;
            break;
        }
        perform(w, r);
        if (r->status != 401 || r->stopped || attempt > 0 || !token_refresh(w, true))
            break;
        if (log_enabled(LOG_DEBUG))
            log_event(LOG_DEBUG, "401 Unauthorized: the token file changed; retrying", "{s:s}",
                      "kind", w->plural);
    }
    headers_free(h);
}

/* The next backoff delay (and one more failure in the count). */
static long backoff_ms(struct worker *w, unsigned *count, long min_ms)
{
    unsigned shift = *count < 16 ? *count : 16;
    uint64_t ceiling = (uint64_t)KUBE_BACKOFF_BASE_MS << shift, ms;

    if (ceiling > KUBE_BACKOFF_MAX_MS)
        ceiling = KUBE_BACKOFF_MAX_MS;
    ms = rng_next(w) % (ceiling + 1);
    if (ms < (uint64_t)min_ms)
        ms = (uint64_t)min_ms;
    (*count)++;
    return (long)ms;
}

/* Sleeps ms unless the client stops first. False when stopping. */
static bool sleep_ms(struct kube *k, long ms)
{
    struct timespec until;
    bool stop;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->lock);
    while (!(stop = stopping(k)) &&
           pthread_cond_timedwait(&k->wake, &k->lock, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&k->lock);
    return !stop && !stopping(k);
}

/* Logs a failed request and sleeps its backoff. False when stopping. */
static bool retry_after_failure(struct worker *w, const struct reply *r, const char *op)
{
    long ms = backoff_ms(w, &w->failures, r->retry_after_ms);
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *f = doc != NULL ? status_fields(doc, w, r, op) : NULL;
    bool config = r->status == 401 || r->status == 403;
    const char *msg = r->status == 401   ? "apiserver refused the credentials (401); retrying"
                      : r->status == 403 ? "apiserver forbids it (403: RBAC?); retrying"
                      : op[0] == 'w'     ? "watch restarted"
                                         : "list failed; retrying";

    if (f != NULL)
        json_mut_set(doc, f, "retry_in_ms", yyjson_mut_sint(doc, ms));
    if (r->silent)
        msg = "watch silent; reconnecting";
    log_event_obj(config ? LOG_ERROR : LOG_WARN, msg, f);
    yyjson_mut_doc_free(doc);
    return sleep_ms(w->k, ms);
}

/* Feeds one list page (in w->body, read in place: the body is changed) to the view. Sets *next
 * to the continue token (new string; NULL on the last page) and w->rv. -1 (logged) when the page
 * is not a usable list. The page's document is freed here: the view copies what it keeps. */
static int take_page(struct worker *w, bool first, char **next, size_t *count)
{
    yyjson_doc *doc = NULL;
    yyjson_val *root, *meta, *vrv, *vcont, *items;
    const char *rv, *cont;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300], text[SHOWN_SIZE(200)];
    int rc = -1;

    *next = NULL;
    diag_clear(&d);
    /* the error says where and what (yyjson's words, or a JSON Pointer), never the page's text */
    doc = w->body.p != NULL
              ? json_read(w->body.p, w->body.len, JSON_READ_INSITU, VIEW_DEPTH_MAX, NULL, &d)
              : json_read("", 0, 0, VIEW_DEPTH_MAX, NULL, &d);
    root = yyjson_doc_get_root(doc);
    meta = yyjson_obj_get(root, "metadata");
    vrv = yyjson_obj_get(meta, "resourceVersion");
    vcont = yyjson_obj_get(meta, "continue");
    items = yyjson_obj_get(root, "items");
    if (doc == NULL || !yyjson_is_obj(meta) || (vrv != NULL && !yyjson_is_str(vrv)) ||
        (vcont != NULL && !yyjson_is_str(vcont))) {
        if (doc != NULL)
            diag_set(&d, NULL, 0, 0,
                     "no metadata object, or a resourceVersion or continue not a string");
        log_event(LOG_WARN, "list page unreadable", "{s:s, s:s}", "kind", w->plural, "error",
                  shown(d.msg, 200, text, sizeof(text)));
        goto out;
    }
    rv = plain_str(vrv);
    cont = vcont != NULL ? plain_str(vcont) : "";
    if (!(items == NULL || yyjson_is_null(items) || yyjson_is_arr(items)) || rv == NULL ||
        rv[0] == '\0' || strlen(rv) > KUBE_RV_MAX || cont == NULL) {
        log_event(LOG_WARN, "list page unreadable", "{s:s, s:s}", "kind", w->plural, "error",
                  "items is not an array, or no usable metadata.resourceVersion or continue");
        goto out;
    }
    if (cont[0] != '\0' && (*next = strdup(cont)) == NULL)
        goto out;
    if (first)
        cluster_list_begin(w->k->view, w->kind);
    if (yyjson_is_arr(items)) {
        diag_clear(&d);
        if (cluster_list_items(w->k->view, w->kind, items, &d) < 0)
            log_event(LOG_WARN, "list items skipped", "{s:s, s:s}", "kind", w->plural, "error",
                      diag_format(&d, msg, sizeof(msg)));
        *count += yyjson_arr_size(items);
    }
    memcpy(w->rv, rv, strlen(rv) + 1);
    rc = 0;
out:
    yyjson_doc_free(doc);
    return rc;
}

void kube_listing_restart(struct listing *L)
{
    free(L->cont);
    memset(L, 0, sizeof(*L));
}

/* The URL of a list page (new string), or NULL when out of memory. */
static char *list_url(struct worker *w, const char *cont)
{
    const char *sel = cluster_kind_selector(w->kind);
    char *esc = cont != NULL ? curl_easy_escape(w->easy, cont, 0) : NULL;
    char *url = NULL;

    if (cont == NULL || esc != NULL)
        url = str_printf("%s%s?limit=%u%s%s%s%s", w->k->t.server, cluster_kind_path(w->kind),
                         w->page, esc ? "&continue=" : "", esc ? esc : "", sel[0] ? "&" : "", sel);
    curl_free(esc);
    return url;
}

/* After a page that failed: readies the retry and waits. False when stopping. */
bool kube_list_retry(struct worker *w, const struct reply *r, struct listing *L)
{
    if (w->verdict == V_TOO_BIG && w->page > 1) {
        w->page /= 2;
        log_event(LOG_WARN, "list page too large; asking for smaller pages", "{s:s, s:i, s:i}",
                  "kind", w->plural, "limit", (int)w->page, "max_bytes", (int)KUBE_LIST_BODY_MAX);
        return true;
    }
    if (r->status == 410 && L->cont != NULL) {
        /* the continue token expired: the list starts over, at once the first time */
        log_event(LOG_WARN, "list restarted: continue token expired (410)", "{s:s, s:i}", "kind",
                  w->plural, "pages", (int)L->pages);
        kube_listing_restart(L);
        return w->failures++ == 0 || sleep_ms(w->k, backoff_ms(w, &w->failures, 0));
    }
    return retry_after_failure(w, r, "list");
}

/* An optional kind (the node autoscalers') the apiserver does not serve (404: no such CRD, or
 * no kube-system namespace) or does not let gpuadmit read (403): the view holds none of it and
 * counts it listed, so that it neither holds /readyz nor ages the view. Said once per change. */
static bool optional_absent(struct worker *w, const struct reply *r)
{
    if (!cluster_kind_optional(w->kind) || r->res != CURLE_OK ||
        (r->status != 404 && r->status != 403))
        return false;
    if (w->absent != r->status)
        log_event(r->status == 403 ? LOG_WARN : LOG_INFO,
                  r->status == 403 ? "optional kind forbidden (403): read as none; grant get, "
                                     "list and watch on it for the autoscaler's headroom"
                                   : "optional kind not served (404): read as none",
                  "{s:s, s:i}", "kind", w->plural, "retry_in_ms", (int)KUBE_OPTIONAL_RELIST_MS);
    w->absent = r->status;
    w->failures = 0;
    cluster_kind_absent(w->k->view, w->kind);
    return true;
}

/* Lists the kind into the view page by page. 0 when done (w->rv is the list's), -1 when
 * stopping. */
static int list_all(struct worker *w)
{
    struct listing L = {0};
    char *url = NULL, *next = NULL;
    struct reply r;
    int rc = -1;

    while (!stopping(w->k)) {
        free(url);
        url = list_url(w, L.cont);
        if (url == NULL) {
            if (!sleep_ms(w->k, backoff_ms(w, &w->failures, 0)))
                goto out;
            continue;
        }
        request(w, url, REQ_LIST, &r);
        if (r.stopped)
            goto out;
        if (optional_absent(w, &r)) {
            kube_listing_restart(&L);
            if (!sleep_ms(w->k, KUBE_OPTIONAL_RELIST_MS))
                goto out;
            continue;
        }
        if (r.res != CURLE_OK || r.status != 200) {
            if (!kube_list_retry(w, &r, &L))
                goto out;
            continue;
        }
        if (take_page(w, L.pages == 0, &next, &L.items) < 0) {
            /* not a list: start over after a pause */
            kube_listing_restart(&L);
            if (!sleep_ms(w->k, backoff_ms(w, &w->failures, 0)))
                goto out;
            continue;
        }
        L.pages++;
        free(L.cont);
        L.cont = next;
        if (L.cont == NULL) {
            w->absent = 0;
            cluster_list_end(w->k->view, w->kind);
            cluster_heartbeat(w->k->view, w->kind);
            log_event(LOG_INFO, "list", "{s:s, s:s, s:I, s:i}", "kind", w->plural,
                      "resourceVersion", w->rv, "items", (int64_t)L.items, "pages", (int)L.pages);
            w->failures = 0;
            rc = 0;
            goto out;
        }
    }
out:
    /* a big page's buffer is not worth keeping through the watch */
    buf_free(&w->body);
    free(url);
    kube_listing_restart(&L);
    return rc;
}

/* The URL of a watch from w->rv (new string), or NULL when out of memory. */
static char *watch_url(struct worker *w)
{
    const char *sel = cluster_kind_selector(w->kind);
    char *esc = curl_easy_escape(w->easy, w->rv, 0);
    char *url = NULL;

    if (esc != NULL)
        url = str_printf("%s%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true"
                         "&timeoutSeconds=%u%s%s",
                         w->k->t.server, cluster_kind_path(w->kind), esc, w->k->watch_timeout_s,
                         sel[0] ? "&" : "", sel);
    curl_free(esc);
    return url;
}

/* The server ended the watch: resume from the last resourceVersion. */
static enum wres watch_ended(struct worker *w, double start)
{
    cluster_heartbeat(w->k->view, w->kind);
    w->relists = 0;
    if (log_enabled(LOG_DEBUG))
        log_event(LOG_DEBUG, "watch ended", "{s:s, s:s, s:i}", "kind", w->plural, "resourceVersion",
                  w->rv, "events", (int)w->events);
    if (w->events == 0 && mono_s() - start < KUBE_WATCH_MIN_HEALTHY_S)
        return sleep_ms(w->k, backoff_ms(w, &w->failures, 0)) ? W_REWATCH : W_STOP;
    w->failures = 0;
    return W_REWATCH;
}

/* What a finished watch means: watch again from w->rv, relist, or stop. */
enum wres kube_watch_outcome(struct worker *w, const struct reply *r, double start)
{
    char text[SHOWN_SIZE(KUBE_MSG_SHOWN)];

    if (r->status == 200 && r->res == CURLE_OK && w->verdict == V_OK && w->line.len > 0)
        broken(w, "the stream ended inside an event");
    switch (w->verdict) {
    case V_GONE:
        log_event(LOG_INFO, "relist (410 Gone)", "{s:s, s:s, s:s, s:s}", "kind", w->plural,
                  "resourceVersion", w->rv, "via", "ERROR event", "message",
                  shown(w->why, KUBE_MSG_SHOWN, text, sizeof(text)));
        return W_RELIST;
    case V_ERROR: /* logged as it came */ return W_RELIST;
    case V_BROKEN:
    case V_NOMEM:
    case V_TOO_BIG:
        log_event(LOG_WARN, "watch stream broken; relisting", "{s:s, s:s, s:s}", "kind", w->plural,
                  "resourceVersion", w->rv, "error",
                  shown(w->verdict == V_NOMEM ? "out of memory" : w->why, KUBE_MSG_SHOWN, text,
                        sizeof(text)));
        return W_RELIST;
    case V_OK: break;
    }
    if (r->status == 410) {
        log_event(LOG_INFO, "relist (410 Gone)", "{s:s, s:s, s:s}", "kind", w->plural,
                  "resourceVersion", w->rv, "via", "HTTP status");
        return W_RELIST;
    }
    /* an optional kind's CRD deleted, or its access revoked: the list says so */
    if (cluster_kind_optional(w->kind) && r->res == CURLE_OK &&
        (r->status == 404 || r->status == 403))
        return W_RELIST;
    if (r->res == CURLE_OK && r->status == 200)
        return watch_ended(w, start);
    return retry_after_failure(w, r, "watch") ? W_REWATCH : W_STOP;
}

/* One watch from w->rv, and what to do next. */
static enum wres watch_once(struct worker *w)
{
    char *url = watch_url(w);
    double start = mono_s();
    struct reply r;
    enum wres res;

    if (url == NULL) {
        res = sleep_ms(w->k, backoff_ms(w, &w->failures, 0)) ? W_REWATCH : W_STOP;
        goto out;
    }
    if (log_enabled(LOG_DEBUG))
        log_event(LOG_DEBUG, "watch", "{s:s, s:s}", "kind", w->plural, "resourceVersion", w->rv);
    request(w, url, REQ_WATCH, &r);
    res = r.stopped ? W_STOP : kube_watch_outcome(w, &r, start);
out:
    /* an event can be 16 MiB: do not keep its buffer between watches */
    buf_free(&w->line);
    buf_free(&w->body);
    free(url);
    return res;
}

/* The URL listing ConfigMap ref by name (new string), or NULL when out of memory. */
static char *config_url(struct worker *w, const struct cluster_cm_ref *ref)
{
    char *ns = curl_easy_escape(w->easy, ref->ns, 0),
         *name = curl_easy_escape(w->easy, ref->name, 0);
    char *url = NULL;

    if (ns != NULL && name != NULL)
        url = str_printf("%s/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s",
                         w->k->t.server, ns, name);
    curl_free(ns);
    curl_free(name);
    return url;
}

/* The device plugin's config ConfigMaps the view wants (cluster_plugin_configs_want): each
 * listed by name every KUBE_PLUGIN_CONFIG_POLL_MS, which RBAC's resourceNames match (a list
 * with a metadata.name field selector names it: requestinfo.go). One the apiserver does not let
 * gpuadmit read (403) is read as absent, said once; a round that fails keeps what the view
 * holds and is tried again after a backoff. */
static void poll_configs(struct worker *w)
{
    struct cluster_cm_ref refs[CLUSTER_PLUGIN_CONFIGS_MAX];
    struct reply r = {0};
    bool said_forbidden = false;
    size_t last_items = SIZE_MAX;

    while (!stopping(w->k)) {
        size_t n = cluster_plugin_configs_wanted(w->k->view, refs), items = 0, i;
        bool ok = true, forbidden = false;
        char *next = NULL;

        cluster_list_begin(w->k->view, w->kind);
        for (i = 0; i < n && ok; i++) {
            char *url = config_url(w, &refs[i]);

            if (url == NULL) {
                ok = false;
                break;
            }
            request(w, url, REQ_LIST, &r);
            free(url);
            if (r.stopped)
                return;
            if (r.res == CURLE_OK && r.status == 404)
                continue; /* not served here: read as none */
            if (r.res == CURLE_OK && r.status == 403) {
                forbidden = true;
                if (!said_forbidden)
                    log_event(LOG_WARN,
                              "device plugin config forbidden (403): read as none; grant get, "
                              "list and watch on configmaps with its name (resourceNames)",
                              "{s:s, s:s}", "namespace", refs[i].ns, "name", refs[i].name);
                continue;
            }
            ok = r.res == CURLE_OK && r.status == 200 && take_page(w, false, &next, &items) == 0;
            free(next);
            next = NULL;
            if (!ok)
                break;
        }
        said_forbidden = forbidden;
        if (ok) {
            cluster_list_end(w->k->view, w->kind);
            w->failures = 0;
            if (items != last_items) /* said when what it holds changes, not every round */
                log_event(LOG_INFO, "list", "{s:s, s:I, s:i}", "kind", w->plural, "items",
                          (int64_t)items, "configmaps", (int)n);
            last_items = items;
        } else {
            /* i < n: the one that failed (a status, a page that is no list: logged above) */
            log_event(LOG_WARN,
                      "device plugin config not read; the view keeps the configs it read last "
                      "and tries again",
                      "{s:s, s:s, s:i, s:s}", "namespace", i < n ? refs[i].ns : "", "name",
                      i < n ? refs[i].name : "", "status", (int)r.status, "error",
                      r.res != CURLE_OK ? curl_easy_strerror(r.res) : "");
            /* optional: a view that never read them is synced without them */
            if (!cluster_kind_listed(w->k->view, w->kind))
                cluster_kind_absent(w->k->view, w->kind);
        }
        buf_free(&w->body);
        if (!sleep_ms(w->k, ok ? (long)KUBE_PLUGIN_CONFIG_POLL_MS : backoff_ms(w, &w->failures, 0)))
            return;
    }
}

/* The kind's list, then watches from its resourceVersion, relisting when they cannot resume,
 * until the client stops. */
static void list_and_watch(struct worker *w)
{
    enum wres next = W_STOP;

    while (!stopping(w->k)) {
        if (list_all(w) < 0)
            break;
        for (;;) {
            next = watch_once(w);
            if (next != W_REWATCH)
                break;
            metrics_cluster_watch_restart(w->k->metrics, w->kind);
        }
        if (next == W_STOP)
            break;
        metrics_cluster_relist(w->k->metrics, w->kind);
        /* relisting in a loop (410s, ERROR events, broken streams) backs off too */
        if (!sleep_ms(w->k, backoff_ms(w, &w->relists, 0)))
            break;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    if (w->kind == CLUSTER_PLUGIN_CONFIGS)
        poll_configs(w);
    else
        list_and_watch(w);
    buf_free(&w->body);
    buf_free(&w->line);
    kubeconfig_secret_free(w->token);
    w->token = NULL;
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Start and stop */

static int check_curl(struct diag *d)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

    /* the *_BLOB options (7.71/7.77), CURLOPT_PROTOCOLS_STR (7.85) */
    if (v->version_num < 0x075500) {
        diag_set(d, NULL, 0, 0, "libcurl %s is too old: 7.85 or newer is needed", v->version);
        return -1;
    }
    if (!(v->features & CURL_VERSION_SSL) || v->ssl_version == NULL ||
        strncmp(v->ssl_version, "OpenSSL", 7) != 0) {
        diag_set(d, NULL, 0, 0, "libcurl is built without OpenSSL (it has %s)",
                 v->ssl_version ? v->ssl_version : "no TLS");
        return -1;
    }
    return 0;
}

static uint64_t seed(unsigned salt)
{
    uint64_t s = 0;

    if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
        s = (uint64_t)(mono_s() * 1e9);
    s ^= (uint64_t)salt * 0x9e3779b97f4a7c15ull;
    return s != 0 ? s : 0x2545f4914f6cdd1dull;
}

static void log_start(const struct kube *k)
{
    const struct kubeconfig_target *t = &k->t;
    const char *auth = t->token_path             ? "token file"
                       : t->token                ? "token"
                       : t->cert || t->cert_path ? "client certificate"
                                                 : "none";
    const char *ca = t->insecure  ? "not verified"
                     : t->ca_path ? t->ca_path
                     : t->ca      ? "inline"
                                  : "system";

    log_event(LOG_INFO, "kube client starting", "{s:s, s:s, s:s, s:s, s:i, s:i}", "server",
              t->server, "config", t->source, "auth", auth, "ca", ca, "watch_timeout_s",
              (int)k->watch_timeout_s, "list_page", (int)k->list_page);
    if (t->insecure)
        log_event(LOG_WARN,
                  "the apiserver's certificate is not verified "
                  "(insecure-skip-tls-verify)",
                  "{s:s}", "server", t->server);
}

/* The workers' handles, before any thread exists. */
static int workers_init(struct kube *k, struct diag *d)
{
    for (int i = 0; i < CLUSTER_KINDS; i++) {
        struct worker *w = &k->w[i];

        w->k = k;
        w->kind = (enum cluster_kind)i;
        w->plural = cluster_kind_plural(w->kind);
        w->page = k->list_page;
        w->rng = seed((unsigned)i + 1);
        w->multi = curl_multi_init();
        w->easy = curl_easy_init();
        if (w->multi == NULL || w->easy == NULL) {
            diag_set(d, NULL, 0, 0, "libcurl: out of memory");
            return -1;
        }
    }
    return 0;
}

static int threads_start(struct kube *k, struct diag *d)
{
    sigset_t all, old;
    int err = 0;

    /* the threads take no signals: main owns them (signalfd) */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < CLUSTER_KINDS && err == 0; i++) {
        err = pthread_create(&k->w[i].thread, NULL, worker_main, &k->w[i]);
        k->w[i].running = err == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0)
        diag_set(d, NULL, 0, 0, "cannot start a thread: %s", strerror(err));
    return err == 0 ? 0 : -1;
}

/* Not thread-safe (curl_global_init): call it from the main thread before other threads that
 * use libcurl or OpenSSL start. */
struct kube *kube_start(const struct kube_config *cfg, struct cluster *view, struct diag *d)
{
    struct kube *k = calloc(1, sizeof(*k));
    pthread_condattr_t ca;
    unsigned margin;

    if (k == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    atomic_init(&k->stop, false);
    k->view = view;
    k->watch_timeout_s = cfg->watch_timeout_s ? cfg->watch_timeout_s : KUBE_DEFAULT_WATCH_TIMEOUT_S;
    k->list_page = cfg->list_page ? cfg->list_page : KUBE_DEFAULT_LIST_PAGE;
    k->metrics = cfg->metrics;
    if (k->watch_timeout_s > KUBE_MAX_WATCH_TIMEOUT_S || k->list_page > KUBE_MAX_LIST_PAGE) {
        diag_set(d, NULL, 0, 0, "the watch timeout must be 1 to %u s and the list page 1 to %u",
                 KUBE_MAX_WATCH_TIMEOUT_S, KUBE_MAX_LIST_PAGE);
        goto fail;
    }
    margin = k->watch_timeout_s / 10;
    k->silence_s = k->watch_timeout_s +
                   (margin > KUBE_SILENCE_MARGIN_MIN_S ? margin : KUBE_SILENCE_MARGIN_MIN_S);
    if ((cfg->kubeconfig ? kubeconfig_load(cfg->kubeconfig, &k->t, d)
                         : kubeconfig_load_in_cluster(&k->t, d)) < 0)
        goto fail;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->wake, &ca);
    pthread_condattr_destroy(&ca);
    k->sync_inited = true;
    if (check_curl(d) < 0)
        goto fail;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        diag_set(d, NULL, 0, 0, "libcurl failed to initialise");
        goto fail;
    }
    k->curl_inited = true;
    if (workers_init(k, d) < 0)
        goto fail;
    log_start(k);
    if (threads_start(k, d) < 0)
        goto fail;
    return k;
fail:
    kube_stop(k);
    return NULL;
}

void kube_stop(struct kube *k)
{
    int i;

    if (k == NULL)
        return;
    if (k->sync_inited) {
        pthread_mutex_lock(&k->lock);
        atomic_store(&k->stop, true);
        pthread_cond_broadcast(&k->wake);
        pthread_mutex_unlock(&k->lock);
    }
    for (i = 0; i < CLUSTER_KINDS; i++)
        if (k->w[i].multi != NULL)
            curl_multi_wakeup(k->w[i].multi);
    for (i = 0; i < CLUSTER_KINDS; i++) {
        if (k->w[i].running)
            pthread_join(k->w[i].thread, NULL);
        if (k->w[i].easy != NULL)
            curl_easy_cleanup(k->w[i].easy);
        if (k->w[i].multi != NULL)
            curl_multi_cleanup(k->w[i].multi);
    }
    if (k->curl_inited)
        curl_global_cleanup();
    if (k->sync_inited) {
        pthread_cond_destroy(&k->wake);
        pthread_mutex_destroy(&k->lock);
    }
    kubeconfig_target_free(&k->t);
    free(k);
}
