/*
 * handshake.c: TLS handshake rate of a server, one new connection per request.
 *
 *   handshake HOST PORT SECONDS THREADS full|resume PATH
 *
 * Each thread connects, handshakes, sends "GET PATH" with Connection: close, reads the answer
 * to the end, and starts again. "full" offers no session (no ticket, no cache): every handshake
 * is a full one. "resume" offers the session of the thread's previous connection (a TLS 1.3
 * ticket, or a 1.2 ticket or session id). Prints one JSON line: connections completed, how
 * many of them were resumed according to OpenSSL (SSL_session_reused), failures, and answers
 * that were not "HTTP/1.1 200". The client does not verify the certificate: what is measured
 * is the server, and the client should spend as little as it can.
 */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct job {
    SSL_CTX *ctx;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    const char *path;
    bool resume;
    double deadline;
    unsigned long conns, resumed, errors, bad;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One connection, one request. Returns 0, or -1 on a failure; *reused and *ok say how it went.
 * *sess is replaced by this connection's session when resuming. */
static int one(struct job *j, SSL_SESSION **sess, bool *reused, bool *ok)
{
    char req[512], buf[4096];
    int fd = -1, one_ = 1, n, rc = -1;
    size_t got = 0;
    SSL *ssl = NULL;

    fd = socket(j->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&j->addr, j->addrlen) < 0)
        goto out;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one_, sizeof(one_));
    ssl = SSL_new(j->ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1)
        goto out;
    SSL_set_tlsext_host_name(ssl, "localhost");
    if (j->resume && *sess != NULL)
        SSL_set_session(ssl, *sess);
    if (SSL_connect(ssl) != 1)
        goto out;
    *reused = SSL_session_reused(ssl) == 1;
    n = snprintf(req, sizeof(req),
                 "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", j->path);
    if (SSL_write(ssl, req, n) != n)
        goto out;
    /* to the end: a TLS 1.3 ticket arrives after the handshake, with or before the answer */
    while ((n = SSL_read(ssl, buf + got, (int)(sizeof(buf) - 1 - got))) > 0) {
        got += (size_t)n;
        if (got == sizeof(buf) - 1)
            got = 0; /* only the status line matters, and it came first */
    }
    buf[got] = '\0';
    *ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
    if (j->resume) {
        SSL_SESSION_free(*sess);
        *sess = SSL_get1_session(ssl);
    }
    SSL_shutdown(ssl);
    rc = 0;
out:
    if (rc < 0)
        ERR_clear_error();
    SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    return rc;
}

static void *run(void *arg)
{
    struct job *j = arg;
    SSL_SESSION *sess = NULL;

    while (now_s() < j->deadline) {
        bool reused = false, ok = false;

        if (one(j, &sess, &reused, &ok) < 0) {
            j->errors++;
            continue;
        }
        j->conns++;
        j->resumed += reused;
        j->bad += !ok;
    }
    SSL_SESSION_free(sess);
    return NULL;
}

int main(int argc, char **argv)
{
    struct addrinfo hints = {0}, *res = NULL;
    struct job *jobs;
    pthread_t *tids;
    SSL_CTX *ctx;
    double seconds, start, elapsed;
    unsigned long threads, conns = 0, resumed = 0, errors = 0, bad = 0;
    bool resume;

    if (argc != 7 || (strcmp(argv[5], "full") != 0 && strcmp(argv[5], "resume") != 0)) {
        fprintf(stderr, "usage: handshake HOST PORT SECONDS THREADS full|resume PATH\n");
        return 2;
    }
    seconds = strtod(argv[3], NULL);
    threads = strtoul(argv[4], NULL, 10);
    resume = strcmp(argv[5], "resume") == 0;
    if (seconds <= 0 || threads < 1 || threads > 64) {
        fprintf(stderr, "handshake: bad SECONDS or THREADS\n");
        return 2;
    }
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(argv[1], argv[2], &hints, &res) != 0) {
        fprintf(stderr, "handshake: cannot resolve %s:%s\n", argv[1], argv[2]);
        return 2;
    }
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    if (!resume) {
        /* nothing to resume from: no ticket asked for, no session kept */
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    jobs = calloc(threads, sizeof(*jobs));
    tids = calloc(threads, sizeof(*tids));
    start = now_s();
    for (unsigned long i = 0; i < threads; i++) {
        jobs[i].ctx = ctx;
        memcpy(&jobs[i].addr, res->ai_addr, res->ai_addrlen);
        jobs[i].addrlen = res->ai_addrlen;
        jobs[i].path = argv[6];
        jobs[i].resume = resume;
        jobs[i].deadline = start + seconds;
        pthread_create(&tids[i], NULL, run, &jobs[i]);
    }
    for (unsigned long i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        conns += jobs[i].conns;
        resumed += jobs[i].resumed;
        errors += jobs[i].errors;
        bad += jobs[i].bad;
    }
    elapsed = now_s() - start;
    printf("{\"connections\":%lu,\"resumed\":%lu,\"errors\":%lu,\"bad\":%lu,\"seconds\":%.3f}\n",
           conns, resumed, errors, bad, elapsed);
    freeaddrinfo(res);
    free(jobs);
    free(tids);
    SSL_CTX_free(ctx);
    return 0;
}
