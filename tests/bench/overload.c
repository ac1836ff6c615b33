/*
 * overload.c: a webhook under more callers than it can serve, judged as the API server judges
 * it: every call has a deadline (the webhook's timeoutSeconds), counted from before the
 * connection is made.
 *
 *   overload HOST PORT SECONDS CLIENTS DEADLINE_MS full|keepalive PATH BODY_FILE
 *
 * Each of CLIENTS threads calls in a loop: connect (full: a new connection and a full TLS
 * handshake per call, as an API server does when its idle connections run out; keepalive: one
 * connection, reopened after a failure), POST the body to PATH, read the answer. A call ends
 * as one of
 *   ok       HTTP 200 within the deadline;
 *   refused  anything else within the deadline: another status (503), or the connection
 *            refused, reset or closed before an answer (the API server then applies its
 *            failurePolicy at once);
 *   late     no answer by the deadline (the API server gave up, the caller waited for nothing).
 * A caller that was refused or timed out calls again after 20-50 ms. Prints one JSON line: the
 * counts, and the ok and refused times (p50, p99, max, in ms).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES 4096 /* per client */

enum outcome { OK, REFUSED, LATE };

struct job {
    SSL_CTX *ctx;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    const char *req; /* the whole request, headers and body */
    size_t req_len;
    bool keepalive;
    double end, deadline_s;
    unsigned long n[3];
    double *ok_ms, *refused_ms;
    size_t n_ok, n_refused;
    unsigned seed;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The socket's blocking calls give up at the deadline. false when it has passed. */
static bool arm(int fd, double until)
{
    double left = until - now_s();
    struct timeval tv;

    if (left <= 0)
        return false;
    tv.tv_sec = (time_t)left;
    tv.tv_usec = (suseconds_t)((left - (double)tv.tv_sec) * 1e6) + 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return true;
}

struct conn {
    int fd;
    SSL *ssl;
};

static void drop(struct conn *c)
{
    if (c->ssl != NULL)
        SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
}

/* A connection, by until: 1, 0 when refused (reset, closed), -1 when the deadline passed. */
static int open_conn(struct job *j, struct conn *c, double until)
{
    struct pollfd p;
    int one = 1, err = 0, fl, ms;
    socklen_t len = sizeof(err);

    c->fd = socket(j->addr.ss_family, SOCK_STREAM, 0);
    if (c->fd < 0)
        return 0;
    fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(c->fd, (struct sockaddr *)&j->addr, j->addrlen) < 0) {
        if (errno != EINPROGRESS)
            return 0;
        ms = (int)((until - now_s()) * 1000) + 1;
        p = (struct pollfd){c->fd, POLLOUT, 0};
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            return -1;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0)
            return 0;
    }
    fcntl(c->fd, F_SETFL, fl);
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (!arm(c->fd, until))
        return -1;
    c->ssl = SSL_new(j->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return 0;
    SSL_set_tlsext_host_name(c->ssl, "localhost");
    if (SSL_connect(c->ssl) != 1)
        return now_s() >= until ? -1 : 0;
    return 1;
}

/* One call on c (opened when needed). */
static enum outcome call(struct job *j, struct conn *c, double start)
{
    double until = start + j->deadline_s;
    char buf[16384];
    size_t got = 0, need = 0;
    int n, status = 0;
    char *hdr_end, *cl;

    if (c->ssl == NULL) {
        n = open_conn(j, c, until);
        if (n <= 0) {
            ERR_clear_error();
            drop(c);
            return n < 0 ? LATE : REFUSED;
        }
    }
    if (!arm(c->fd, until) || SSL_write(c->ssl, j->req, (int)j->req_len) != (int)j->req_len)
        goto failed;
    for (;;) {
        n = SSL_read(c->ssl, buf + got, (int)(sizeof(buf) - 1 - got));
        if (n <= 0)
            goto failed;
        got += (size_t)n;
        buf[got] = '\0';
        if (status == 0 && (hdr_end = strstr(buf, "\r\n\r\n")) != NULL) {
            if (sscanf(buf, "HTTP/1.1 %d", &status) != 1)
                goto failed;
            cl = strcasestr(buf, "\r\nContent-Length:");
            need = (size_t)(hdr_end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
        }
        if (status != 0 && got >= need)
            break;
        if (got == sizeof(buf) - 1)
            goto failed; /* answers here are small */
    }
    if (!j->keepalive || status != 200)
        drop(c);
    if (now_s() > until)
        return LATE;
    return status == 200 ? OK : REFUSED;
failed:
    ERR_clear_error();
    drop(c);
    return now_s() >= until ? LATE : REFUSED;
}

static void *run(void *arg)
{
    struct job *j = arg;
    struct conn c = {-1, NULL};
    double start;
    enum outcome o;

    while ((start = now_s()) < j->end) {
        o = call(j, &c, start);
        j->n[o]++;
        if (o == OK && j->n_ok < SAMPLES)
            j->ok_ms[j->n_ok++] = (now_s() - start) * 1000;
        else if (o == REFUSED && j->n_refused < SAMPLES)
            j->refused_ms[j->n_refused++] = (now_s() - start) * 1000;
        /* a refused caller comes back after a while, as a controller's retry would (and so
         * that its retries do not take the CPU the server shares with this tool) */
        if (o != OK)
            usleep(20000 + (useconds_t)(rand_r(&j->seed) % 30000));
    }
    drop(&c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void pct(const char *name, double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp);
    printf(",\"%s_p50_ms\":%.1f,\"%s_p99_ms\":%.1f,\"%s_max_ms\":%.1f", name, n ? v[n / 2] : 0.0,
           name, n ? v[(size_t)((double)(n - 1) * 0.99)] : 0.0, name, n ? v[n - 1] : 0.0);
}

int main(int argc, char **argv)
{
    struct addrinfo hints = {0}, *res = NULL;
    struct job *jobs;
    pthread_t *tids;
    pthread_attr_t attr;
    SSL_CTX *ctx;
    FILE *f;
    char *body, *req;
    long blen;
    size_t rlen, n_ok = 0, n_refused = 0;
    double seconds, deadline_ms, start;
    unsigned long clients, n[3] = {0, 0, 0};
    double *ok_ms, *refused_ms;

    if (argc != 9 || (strcmp(argv[6], "full") != 0 && strcmp(argv[6], "keepalive") != 0)) {
        fprintf(stderr, "usage: overload HOST PORT SECONDS CLIENTS DEADLINE_MS full|keepalive "
                        "PATH BODY_FILE\n");
        return 2;
    }
    seconds = strtod(argv[3], NULL);
    clients = strtoul(argv[4], NULL, 10);
    deadline_ms = strtod(argv[5], NULL);
    if (seconds <= 0 || clients < 1 || clients > 4096 || deadline_ms <= 0) {
        fprintf(stderr, "overload: bad SECONDS, CLIENTS or DEADLINE_MS\n");
        return 2;
    }
    f = fopen(argv[8], "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (blen = ftell(f)) <= 0) {
        fprintf(stderr, "overload: cannot read %s\n", argv[8]);
        return 2;
    }
    rewind(f);
    body = malloc((size_t)blen);
    if (fread(body, 1, (size_t)blen, f) != (size_t)blen)
        return 2;
    fclose(f);
    req = malloc((size_t)blen + 512);
    rlen = (size_t)snprintf(req, 512,
                            "POST %s?timeout=%.0fs HTTP/1.1\r\nHost: localhost\r\n"
                            "Content-Type: application/json\r\nContent-Length: %ld\r\n%s\r\n",
                            argv[7], (deadline_ms + 999) / 1000, blen,
                            strcmp(argv[6], "full") == 0 ? "Connection: close\r\n" : "");
    memcpy(req + rlen, body, (size_t)blen);
    rlen += (size_t)blen;
    free(body);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(argv[1], argv[2], &hints, &res) != 0) {
        fprintf(stderr, "overload: cannot resolve %s:%s\n", argv[1], argv[2]);
        return 2;
    }
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    /* as client-go: no session cache, so every new connection is a full handshake */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    jobs = calloc(clients, sizeof(*jobs));
    tids = calloc(clients, sizeof(*tids));
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    start = now_s();
    for (unsigned long i = 0; i < clients; i++) {
        jobs[i].ctx = ctx;
        memcpy(&jobs[i].addr, res->ai_addr, res->ai_addrlen);
        jobs[i].addrlen = res->ai_addrlen;
        jobs[i].req = req;
        jobs[i].req_len = rlen;
        jobs[i].keepalive = strcmp(argv[6], "keepalive") == 0;
        jobs[i].end = start + seconds;
        jobs[i].deadline_s = deadline_ms / 1000;
        jobs[i].seed = (unsigned)i + 1;
        jobs[i].ok_ms = malloc(sizeof(double) * SAMPLES);
        jobs[i].refused_ms = malloc(sizeof(double) * SAMPLES);
        if (pthread_create(&tids[i], &attr, run, &jobs[i]) != 0) {
            fprintf(stderr, "overload: cannot start client %lu\n", i);
            return 2;
        }
    }
    ok_ms = malloc(sizeof(double) * SAMPLES * clients);
    refused_ms = malloc(sizeof(double) * SAMPLES * clients);
    for (unsigned long i = 0; i < clients; i++) {
        pthread_join(tids[i], NULL);
        for (int k = 0; k < 3; k++)
            n[k] += jobs[i].n[k];
        memcpy(ok_ms + n_ok, jobs[i].ok_ms, jobs[i].n_ok * sizeof(double));
        n_ok += jobs[i].n_ok;
        memcpy(refused_ms + n_refused, jobs[i].refused_ms, jobs[i].n_refused * sizeof(double));
        n_refused += jobs[i].n_refused;
        free(jobs[i].ok_ms);
        free(jobs[i].refused_ms);
    }
    printf("{\"calls\":%lu,\"ok\":%lu,\"refused\":%lu,\"late\":%lu,\"seconds\":%.3f",
           n[0] + n[1] + n[2], n[OK], n[REFUSED], n[LATE], now_s() - start);
    pct("ok", ok_ms, n_ok);
    pct("refused", refused_ms, n_refused);
    printf("}\n");
    freeaddrinfo(res);
    free(jobs);
    free(tids);
    free(req);
    free(ok_ms);
    free(refused_ms);
    SSL_CTX_free(ctx);
    return 0;
}
