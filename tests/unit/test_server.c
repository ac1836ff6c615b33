/*
 * test_server.c: the request body limits of server.c, against the real daemon started in this
 * process on a loopback port, spoken to over TLS by a client written here (OpenSSL, verifying
 * the certificate gpuadmit certs makes), so that what is checked is what goes over the wire:
 * when the answer comes, relative to the bytes of the body sent.
 *
 * - A Content-Length past --max-body is refused with 413 before any of the body is read: the
 *   client sends the headers only and still gets its answer. At the limit the server waits for
 *   the body, and judges it.
 * - A chunked body (no Content-Length) past the limit is drained and answered with 413, never
 *   truncated and judged; one at the limit is judged. Past BODY_DRAIN_FACTOR times the limit
 *   the connection is dropped.
 * - --max-body-memory is one budget for all requests at once: 503 past it, free again after.
 * - Content-Type is application/json in any case, with parameters; anything else gets 415.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tls/certgen.h"
#include "tls/creds.h"
#include "harness.h"
#include "bounds.h"
#include "log.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "server.h"

#define MAX_BODY    MIN_MAX_BODY_BYTES /* small, so that bodies past it are cheap to send */
#define REPLY_MAX   8192
#define WAIT_MS     5000 /* how long an answer that must come may take */
#define QUIET_MS    300  /* how long the server must stay silent while it waits for a body */
#define CHUNK_BYTES 1000

static char dir[256];
static struct server *srv;
static struct creds *creds;
static struct policy_holder *policies;
static SSL_CTX *ctx;

struct client {
    int fd;
    SSL *ssl;
};

/* A response as read: status 0 when none came within the wait, -1 when the connection was
 * closed (or reset) without one. */
struct reply {
    int status;
    char text[REPLY_MAX];
};

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int setup(void)
{
    const char *tmp = getenv("TMPDIR");
    struct certgen_opts o = {0};
    struct server_config cfg = {0};
    char cert[300], key[300], ca[300];
    const char *rules[1] = {"tests/data/policies/deny.yaml"};
    struct rules_errors errs;
    struct policy *p;
    struct diag d;

    snprintf(dir, sizeof(dir), "%s/gpuadmit-test-server-XXXXXX", tmp && tmp[0] ? tmp : P_tmpdir);
    if (mkdtemp(dir) == NULL)
        return -1;
    o.dir = dir;
    o.service = "gpuadmit";
    o.ns = "test";
    o.ip[o.n_ip++] = "127.0.0.1";
    o.days = 1;
    o.ca_days = 1;
    diag_clear(&d);
    if (certgen_create(&o, &d) < 0) {
        printf("certgen: %s\n", d.msg);
        return -1;
    }
    path_in(cert, sizeof(cert), "tls.crt");
    path_in(key, sizeof(key), "tls.key");
    path_in(ca, sizeof(ca), "ca.crt");
    if ((creds = creds_new(cert, key, &d)) == NULL) {
        printf("creds: %s\n", d.msg);
        return -1;
    }
    if ((p = rules_load_files(rules, 1, &errs)) == NULL)
        return -1;
    policies = policy_holder_new(p);
    cfg.listen = "127.0.0.1:0";
    cfg.max_body = MAX_BODY;
    cfg.threads = 1;
    cfg.max_connections = 16;
    cfg.max_queue_ms = MAX_MAX_QUEUE_MS;
    cfg.idle_timeout_s = 10;
    cfg.request_timeout_s = 10;
    cfg.max_body_memory = MAX_BODY + MAX_BODY / 2; /* one body at the limit, not two */
    cfg.shutdown_grace_s = 1;
    cfg.policies = policies;
    if ((srv = server_start(&cfg, creds, &d)) == NULL) {
        printf("server: %s\n", d.msg);
        return -1;
    }
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
        return -1;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return 0;
}

static void teardown(void)
{
    static const char *const files[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
    char path[300];

    if (srv != NULL)
        server_stop(srv, -1);
    creds_free(creds);
    policy_holder_free(policies);
    SSL_CTX_free(ctx);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_in(path, sizeof(path), files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void set_timeout(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static int client_open(struct client *cl)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)server_port(srv))};
    X509_VERIFY_PARAM *vp;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cl->ssl = NULL;
    cl->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cl->fd < 0 || connect(cl->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        return -1;
    set_timeout(cl->fd, WAIT_MS);
    cl->ssl = SSL_new(ctx);
    vp = SSL_get0_param(cl->ssl);
    X509_VERIFY_PARAM_set1_ip_asc(vp, "127.0.0.1");
    SSL_set_fd(cl->ssl, cl->fd);
    return SSL_connect(cl->ssl) == 1 ? 0 : -1;
}

static void client_close(struct client *cl)
{
    if (cl->ssl != NULL)
        SSL_free(cl->ssl);
    if (cl->fd >= 0)
        close(cl->fd);
}

/* Writes all of p; -1 when the server closed the connection under it. */
static int send_all(struct client *cl, const char *p, size_t n)
{
    size_t wrote;

    if (cl->ssl == NULL)
        return -1; /* client_open failed, and said so */
    while (n > 0) {
        if (SSL_write_ex(cl->ssl, p, n, &wrote) != 1)
            return -1;
        p += wrote;
        n -= wrote;
    }
    return 0;
}

static int send_text(struct client *cl, const char *text)
{
    return send_all(cl, text, strlen(text));
}

/* Reads one response (headers and the body its Content-Length announces) within ms. */
static void read_reply(struct client *cl, int ms, struct reply *r)
{
    size_t len = 0, got;
    const char *end, *cl_hdr;
    long want = -1;

    r->status = 0;
    r->text[0] = '\0';
    if (cl->ssl == NULL) {
        r->status = -1;
        return;
    }
    set_timeout(cl->fd, ms);
    for (;;) {
        if (SSL_read_ex(cl->ssl, r->text + len, sizeof(r->text) - 1 - len, &got) != 1) {
            int e = SSL_get_error(cl->ssl, 0);

            /* a receive timeout is EAGAIN under SSL_ERROR_SYSCALL (or WANT_READ) */
            if (len == 0)
                r->status = ((e == SSL_ERROR_SYSCALL || e == SSL_ERROR_WANT_READ) &&
                             (errno == EAGAIN || errno == EWOULDBLOCK))
                                ? 0
                                : -1;
            ERR_clear_error();
            break;
        }
        len += got;
        r->text[len] = '\0';
        end = strstr(r->text, "\r\n\r\n");
        if (end == NULL)
            continue;
        if (want < 0 && (cl_hdr = strcasestr(r->text, "\r\ncontent-length:")) != NULL &&
            cl_hdr < end)
            want = strtol(cl_hdr + 17, NULL, 10);
        if (want < 0 || (long)(len - (size_t)(end + 4 - r->text)) >= want)
            break;
    }
    if (len > 0 && sscanf(r->text, "HTTP/1.1 %d", &r->status) != 1)
        r->status = -1;
    set_timeout(cl->fd, WAIT_MS);
}

static void headers_typed(char *buf, size_t len, const char *type, const char *framing)
{
    snprintf(buf, len,
             "POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s\r\n\r\n", type,
             framing);
}

static void headers(char *buf, size_t len, const char *framing)
{
    headers_typed(buf, len, "application/json", framing);
}

/* n bytes that are not JSON: a body that is judged gets 400 for them. */
static char *filler(size_t n)
{
    char *b = malloc(n);

    memset(b, 'x', n);
    return b;
}

static void test_content_length_refused_before_the_body(void)
{
    static const size_t over[] = {MAX_BODY + 1, 2 * MAX_BODY, 10u * 1024u * 1024u};
    char req[512], framing[64];
    struct client cl;
    struct reply r;
    char *body = filler(MAX_BODY);

    for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
        snprintf(framing, sizeof(framing), "Content-Length: %zu", over[i]);
        headers(req, sizeof(req), framing);
        CHECK(client_open(&cl) == 0);
        CHECK(send_text(&cl, req) == 0);
        read_reply(&cl, WAIT_MS, &r); /* not a byte of the body sent */
        CHECK(r.status == 413);
        if (r.status != 413)
            printf("  Content-Length %zu: status %d\n", over[i], r.status);
        snprintf(framing, sizeof(framing), "body of %zu bytes is over the limit of %u bytes",
                 over[i], MAX_BODY);
        CHECK_CONTAINS(r.text, framing);
        client_close(&cl);
    }
    /* at the limit: the server waits for the body, then judges it */
    snprintf(framing, sizeof(framing), "Content-Length: %u", MAX_BODY);
    headers(req, sizeof(req), framing);
    CHECK(client_open(&cl) == 0);
    CHECK(send_text(&cl, req) == 0);
    read_reply(&cl, QUIET_MS, &r);
    CHECK(r.status == 0);
    CHECK(send_all(&cl, body, MAX_BODY) == 0);
    read_reply(&cl, WAIT_MS, &r);
    CHECK(r.status == 400);
    client_close(&cl);
    free(body);
}

/* Sends n bytes as a chunked body, CHUNK_BYTES a chunk, then the last chunk; -1 when the
 * server closed the connection on the way. */
static int send_chunked(struct client *cl, size_t n)
{
    char size[32], *chunk = filler(CHUNK_BYTES);
    int rc = 0;

    for (size_t off = 0; rc == 0 && off < n; off += CHUNK_BYTES) {
        size_t k = n - off < CHUNK_BYTES ? n - off : CHUNK_BYTES;

        snprintf(size, sizeof(size), "%zx\r\n", k);
        rc = send_text(cl, size) < 0 || send_all(cl, chunk, k) < 0 || send_text(cl, "\r\n") < 0 ? -1
                                                                                                : 0;
    }
    if (rc == 0)
        rc = send_text(cl, "0\r\n\r\n");
    free(chunk);
    return rc;
}

static int chunked(size_t n, struct reply *r)
{
    char req[512];
    struct client cl;
    int rc;

    headers(req, sizeof(req), "Transfer-Encoding: chunked");
    rc = client_open(&cl);
    CHECK(rc == 0);
    if (rc == 0 && send_text(&cl, req) == 0)
        (void)send_chunked(&cl, n); /* a dropped connection shows in the reply */
    read_reply(&cl, WAIT_MS, r);
    client_close(&cl);
    return r->status;
}

static void test_chunked_body_limit(void)
{
    struct reply r;
    char want[128];

    CHECK(chunked(MAX_BODY, &r) == 400); /* at the limit: judged (and not JSON) */
    CHECK_CONTAINS(r.text, "\"code\":400");
    CHECK(chunked(MAX_BODY + 1, &r) == 413);
    snprintf(want, sizeof(want), "body of %u bytes is over the limit of %u bytes", MAX_BODY + 1,
             MAX_BODY);
    CHECK_CONTAINS(r.text, want);
    /* drained up to BODY_DRAIN_FACTOR times the limit, still answered */
    CHECK(chunked((size_t)MAX_BODY * BODY_DRAIN_FACTOR, &r) == 413);
    /* past it: not worth reading, the connection is dropped */
    CHECK(chunked((size_t)MAX_BODY * BODY_DRAIN_FACTOR + CHUNK_BYTES, &r) == -1);
}

/* Sends a whole request of n filler bytes with Content-Length and reads the answer. */
static int whole(const char *type, size_t n, struct reply *r)
{
    char req[512], framing[64], *body = filler(n);
    struct client cl;

    snprintf(framing, sizeof(framing), "Content-Length: %zu", n);
    headers_typed(req, sizeof(req), type, framing);
    CHECK(client_open(&cl) == 0);
    if (send_text(&cl, req) == 0)
        (void)send_all(&cl, body, n);
    read_reply(&cl, WAIT_MS, r);
    client_close(&cl);
    free(body);
    return r->status;
}

/* --max-body-memory is shared by all requests: with one body at the limit held (its
 * Content-Length reserves it at once), a second gets 503 and may retry; once the first is
 * answered its share is free again. */
static void test_body_memory_is_shared(void)
{
    char req[512], framing[64], *body = filler(MAX_BODY);
    struct client held;
    struct reply r;
    int status = 0;

    snprintf(framing, sizeof(framing), "Content-Length: %u", MAX_BODY);
    headers(req, sizeof(req), framing);
    CHECK(client_open(&held) == 0);
    CHECK(send_text(&held, req) == 0);
    read_reply(&held, QUIET_MS, &r); /* the server now waits for its body */
    CHECK(r.status == 0);
    CHECK(whole("application/json", MAX_BODY, &r) == 503);
    CHECK_CONTAINS(r.text, "too many large requests in flight (--max-body-memory); retry");
    CHECK(send_all(&held, body, MAX_BODY) == 0);
    read_reply(&held, WAIT_MS, &r);
    CHECK(r.status == 400);
    client_close(&held);
    /* the completion callback releases the share just after the answer is sent */
    for (int i = 0; i < 200 && (status = whole("application/json", MAX_BODY, &r)) == 503; i++) {
        struct timespec ms = {0, 10000000};

        nanosleep(&ms, NULL);
    }
    CHECK(status == 400);
    free(body);
}

/* Media types are case-insensitive, parameters allowed (RFC 9110, section 8.3.1: "The type
 * and subtype tokens are case-insensitive"); anything but JSON gets 415. */
static void test_content_type(void)
{
    struct reply r;

    CHECK(whole("Application/JSON; charset=utf-8", 10, &r) == 400); /* judged: not JSON */
    CHECK(whole("application/json;charset=UTF-8", 10, &r) == 400);
    CHECK(whole("text/plain", 10, &r) == 415);
    CHECK_CONTAINS(r.text, "Content-Type must be application/json, got \\\"text/plain\\\"");
    CHECK(whole("application/jsonx", 10, &r) == 415);
}

int main(void)
{
    FILE *logf = tmpfile();

    /* refusals are logged by design; keep them out of the test output */
    log_set_fd(fileno(logf));
    signal(SIGPIPE, SIG_IGN); /* a dropped connection fails a write; it must not end the run */
    if (setup() < 0) {
        printf("test_server: cannot start the server\n");
        teardown();
        return 2;
    }
    RUN(test_content_length_refused_before_the_body);
    RUN(test_chunked_body_limit);
    RUN(test_body_memory_is_shared);
    RUN(test_content_type);
    teardown();
    fclose(logf);
    TEST_MAIN_END("test_server");
}
