/*
 * main.c: the gpuadmit command line. "serve" runs the webhook; the main thread owns signals and
 * background reloads (serving certificate), the server's threads own requests.
 */
#include <errno.h>
#include <getopt.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "creds.h"
#include "limits.h"
#include "log.h"
#include "policy.h"
#include "rules.h"
#include "server.h"

#ifndef GPUADMIT_VERSION
#define GPUADMIT_VERSION "dev"
#endif

#define EXIT_USAGE 2

static const char usage_main[] =
    "usage: gpuadmit COMMAND [OPTIONS]\n"
    "\n"
    "Kubernetes admission webhook that keeps GPU workloads schedulable.\n"
    "\n"
    "commands:\n"
    "  serve        serve the mutating and validating webhook over HTTPS\n"
    "\n"
    "  gpuadmit --help       this text;  gpuadmit COMMAND --help  the command's options\n"
    "  gpuadmit --version    print the version\n";

static const char usage_serve[] =
    "usage: gpuadmit serve --tls-cert FILE --tls-key FILE [OPTIONS]\n"
    "\n"
    "Serves POST /mutate, POST /validate, GET /healthz and GET /readyz over HTTPS.\n"
    "\n"
    "  --listen ADDR:PORT        address to listen on (default 0.0.0.0:8443; [::]:8443 for IPv6;\n"
    "                            port 0 picks a free port, logged at start)\n"
    "  --tls-cert FILE           PEM serving certificate, leaf first, then intermediates\n"
    "  --tls-key FILE            PEM private key (ECDSA or RSA, unencrypted)\n"
    "                            both files are re-read when they change; a broken pair is\n"
    "                            refused and the previous one stays in use\n"
    "  --rules DIR               policy directory (default rules); reloaded when a file in it\n"
    "                            changes and on SIGHUP; a broken policy is refused and the\n"
    "                            last good one stays in force\n"
    "  --audit-only              report what every rule would do (warnings are not sent;\n"
    "                            audit annotations and logs are), deny and patch nothing\n"
    "  --max-body-bytes N        largest request body (default 8388608); larger gets 413\n"
    "  --threads N               worker threads (default: one per CPU)\n"
    "  --max-connections N       concurrent connections (default 1024)\n"
    "  --idle-timeout SECONDS    close idle or stalled connections (default 30)\n"
    "  --shutdown-grace SECONDS  on SIGTERM, wait this long for in-flight requests (default 25)\n"
    "  --log-level LEVEL         debug, info, warn or error (default info)\n"
    "\n"
    "Signals: SIGTERM/SIGINT stop gracefully; SIGHUP reloads the rules and the certificate now.\n";

struct serve_opts {
    struct server_config server;
    const char *cert;
    const char *key;
    const char *rules;
};

static int parse_uint(const char *flag, const char *s, unsigned long long min,
                      unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    if (s[0] == '-' || s[0] == '\0')
        goto bad;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        goto bad;
    *out = v;
    return 0;
bad:
    fprintf(stderr, "gpuadmit serve: %s takes a whole number from %llu to %llu, got \"%s\"\n", flag,
            min, max, s);
    return -1;
}

enum {
    OPT_LISTEN = 256,
    OPT_CERT,
    OPT_KEY,
    OPT_RULES,
    OPT_MAX_BODY,
    OPT_THREADS,
    OPT_MAX_CONN,
    OPT_IDLE,
    OPT_GRACE,
    OPT_LOG_LEVEL,
    OPT_AUDIT_ONLY,
    OPT_HELP
};

static const struct option serve_longopts[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"tls-cert", required_argument, NULL, OPT_CERT},
    {"tls-key", required_argument, NULL, OPT_KEY},
    {"rules", required_argument, NULL, OPT_RULES},
    {"max-body-bytes", required_argument, NULL, OPT_MAX_BODY},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-connections", required_argument, NULL, OPT_MAX_CONN},
    {"idle-timeout", required_argument, NULL, OPT_IDLE},
    {"shutdown-grace", required_argument, NULL, OPT_GRACE},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"audit-only", no_argument, NULL, OPT_AUDIT_ONLY},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Returns 0 to go on, 1 when help was printed, -1 on a usage error (already reported). */
static int parse_serve(int argc, char **argv, struct serve_opts *o)
{
    unsigned long long v;
    enum log_level level;
    int ch;

    o->server.listen = "0.0.0.0:8443";
    o->server.max_body = DEFAULT_MAX_BODY_BYTES;
    o->server.threads = 0;
    o->server.max_connections = DEFAULT_CONNECTION_LIMIT;
    o->server.idle_timeout_s = DEFAULT_IDLE_TIMEOUT_S;
    o->server.shutdown_grace_s = DEFAULT_SHUTDOWN_GRACE_S;
    o->rules = "rules";
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", serve_longopts, NULL)) != -1) {
        switch (ch) {
        case OPT_LISTEN: o->server.listen = optarg; break;
        case OPT_CERT: o->cert = optarg; break;
        case OPT_KEY: o->key = optarg; break;
        case OPT_RULES: o->rules = optarg; break;
        case OPT_MAX_BODY:
            if (parse_uint("--max-body-bytes", optarg, MIN_MAX_BODY_BYTES, MAX_MAX_BODY_BYTES, &v) <
                0)
                return -1;
            o->server.max_body = (size_t)v;
            break;
        case OPT_THREADS:
            if (parse_uint("--threads", optarg, 1, MAX_THREADS, &v) < 0)
                return -1;
            o->server.threads = (unsigned)v;
            break;
        case OPT_MAX_CONN:
            if (parse_uint("--max-connections", optarg, 1, 1000000, &v) < 0)
                return -1;
            o->server.max_connections = (unsigned)v;
            break;
        case OPT_IDLE:
            if (parse_uint("--idle-timeout", optarg, 1, MAX_IDLE_TIMEOUT_S, &v) < 0)
                return -1;
            o->server.idle_timeout_s = (unsigned)v;
            break;
        case OPT_GRACE:
            if (parse_uint("--shutdown-grace", optarg, 0, MAX_SHUTDOWN_GRACE_S, &v) < 0)
                return -1;
            o->server.shutdown_grace_s = (unsigned)v;
            break;
        case OPT_LOG_LEVEL:
            if (log_level_parse(optarg, &level) < 0) {
                fprintf(stderr,
                        "gpuadmit serve: --log-level takes debug, info, warn or error, "
                        "got \"%s\"\n",
                        optarg);
                return -1;
            }
            log_set_level(level);
            break;
        case OPT_AUDIT_ONLY: o->server.audit_only = true; break;
        case OPT_HELP: fputs(usage_serve, stdout); return 1;
        case ':':
            fprintf(stderr, "gpuadmit serve: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "gpuadmit serve: unknown option \"%s\"; see gpuadmit serve --help\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuadmit serve: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    if (o->cert == NULL || o->key == NULL) {
        fprintf(stderr, "gpuadmit serve: --tls-cert and --tls-key are required\n");
        return -1;
    }
    return 0;
}

/* Logs every error of a refused policy, one line each. */
static void log_rules_errors(const char *msg, const char *dir, const struct rules_errors *e)
{
    char text[DIAG_MSG_MAX + 300];

    for (size_t i = 0; i < e->n; i++)
        log_event(LOG_ERROR, msg,
                  json_pack("{s:s, s:s}", "rules", dir, "error",
                            diag_format(&e->items[i], text, sizeof(text))));
    if (e->dropped > 0)
        log_event(LOG_ERROR, msg,
                  json_pack("{s:s, s:I}", "rules", dir, "more_errors", (json_int_t)e->dropped));
}

static void log_policy(const char *msg, const char *dir, const struct policy *p)
{
    size_t rules = 0;

    for (size_t i = 0; i < p->n_docs; i++)
        rules += p->docs[i].n_rules;
    log_event(LOG_INFO, msg,
              json_pack("{s:s, s:I, s:I, s:I}", "rules", dir, "generation",
                        (json_int_t)p->generation, "policies", (json_int_t)p->n_docs, "rule_count",
                        (json_int_t)rules));
}

/* Loads the rules directory and, when it is good, puts it in force. */
static void reload_rules(struct policy_holder *h, const char *dir)
{
    struct rules_errors errs;
    struct policy *p = rules_load_dir(dir, &errs);
    struct policy *now;

    if (p == NULL) {
        log_rules_errors("policy refused; the last good policy stays in force", dir, &errs);
        return;
    }
    policy_holder_swap(h, p);
    now = policy_holder_get(h);
    log_policy("policy reloaded", dir, now);
    policy_unref(now);
}

/* Watches dir for changes to its entries (a ConfigMap volume swaps a "..data" symlink). */
static int watch_rules(int ifd, const char *dir)
{
    int wd = inotify_add_watch(ifd, dir,
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                   IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF);

    if (wd < 0)
        log_event(LOG_WARN, "cannot watch the rules directory; reload with SIGHUP",
                  json_pack("{s:s, s:s}", "rules", dir, "error", strerror(errno)));
    return wd;
}

static long long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs until SIGTERM or SIGINT. Returns the process exit code. */
static int serve_loop(int sfd, int ifd, struct server *srv, struct creds *creds,
                      struct policy_holder *policies, const char *rules_dir)
{
    struct pollfd pfd[2] = {{sfd, POLLIN, 0}, {ifd, POLLIN, 0}};
    struct signalfd_siginfo si;
    char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    long long next_cert = mono_ms() + DEFAULT_CERT_POLL_MS, reload_at = 0, now;
    int n, timeout, wd = ifd >= 0 ? watch_rules(ifd, rules_dir) : -1;

    for (;;) {
        now = mono_ms();
        timeout = (int)(next_cert - now);
        if (reload_at && reload_at - now < timeout)
            timeout = (int)(reload_at - now);
        n = poll(pfd, ifd >= 0 ? 2 : 1, timeout < 0 ? 0 : timeout);
        if (n < 0 && errno != EINTR) {
            log_event(LOG_ERROR, "poll failed", json_pack("{s:s}", "error", strerror(errno)));
            break;
        }
        now = mono_ms();
        if (n > 0 && (pfd[1].revents & POLLIN)) {
            /* collect a burst of changes (an editor's save, a volume swap) into one reload */
            while (read(ifd, events, sizeof(events)) > 0)
                ;
            reload_at = now + RULES_RELOAD_DEBOUNCE_MS;
        }
        if (reload_at && now >= reload_at) {
            reload_at = 0;
            if (wd < 0 && ifd >= 0)
                wd = watch_rules(ifd, rules_dir);
            reload_rules(policies, rules_dir);
        }
        if (now >= next_cert) {
            creds_poll(creds, false);
            next_cert = now + DEFAULT_CERT_POLL_MS;
        }
        if (n <= 0 || !(pfd[0].revents & POLLIN))
            continue;
        if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
            continue;
        if (si.ssi_signo == SIGHUP) {
            log_event(LOG_INFO, "SIGHUP: reloading", NULL);
            reload_rules(policies, rules_dir);
            creds_poll(creds, true);
            continue;
        }
        log_event(LOG_INFO, "shutting down",
                  json_pack("{s:s}", "signal", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT"));
        break;
    }
    if (server_stop(srv) < 0)
        return 1;
    log_event(LOG_INFO, "stopped", NULL);
    return 0;
}

static int cmd_serve(int argc, char **argv)
{
    struct serve_opts o;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];
    struct creds *creds = NULL;
    struct server *srv = NULL;
    struct policy *policy;
    struct policy_holder *policies = NULL;
    struct rules_errors errs;
    sigset_t mask;
    int sfd = -1, ifd = -1, rc = EXIT_USAGE;

    memset(&o, 0, sizeof(o));
    switch (parse_serve(argc, argv, &o)) {
    case 1: return 0;
    case -1: return EXIT_USAGE;
    }
    json_object_seed(0);
    policy = rules_load_dir(o.rules, &errs);
    if (policy == NULL) {
        log_rules_errors("policy refused", o.rules, &errs);
        return EXIT_USAGE;
    }
    policies = policy_holder_new(policy);
    if (policies == NULL) {
        policy_free(policy);
        return 1;
    }
    o.server.policies = policies;
    signal(SIGPIPE, SIG_IGN);
    /* block before any thread starts, so that every thread inherits the mask and only the
     * signalfd sees these */
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sfd < 0) {
        log_event(LOG_ERROR, "signalfd failed", json_pack("{s:s}", "error", strerror(errno)));
        rc = 1;
        goto out;
    }
    diag_clear(&d);
    creds = creds_new(o.cert, o.key, &d);
    if (creds == NULL) {
        log_event(LOG_ERROR, "cannot load the serving certificate",
                  json_pack("{s:s}", "error", diag_format(&d, msg, sizeof(msg))));
        goto out;
    }
    srv = server_start(&o.server, creds, &d);
    if (srv == NULL) {
        log_event(LOG_ERROR, "cannot start the server",
                  json_pack("{s:s}", "error", diag_format(&d, msg, sizeof(msg))));
        rc = 1;
        goto out;
    }
    ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ifd < 0)
        log_event(LOG_WARN, "inotify unavailable; reload the rules with SIGHUP",
                  json_pack("{s:s}", "error", strerror(errno)));
    policy = policy_holder_get(policies);
    log_policy("policy loaded", o.rules, policy);
    policy_unref(policy);
    log_event(LOG_INFO, "serving",
              json_pack("{s:s, s:i, s:s, s:s, s:I, s:b}", "listen", o.server.listen, "port",
                        (int)server_port(srv), "cert", o.cert, "rules", o.rules, "max_body_bytes",
                        (json_int_t)o.server.max_body, "audit_only", o.server.audit_only));
    rc = serve_loop(sfd, ifd, srv, creds, policies, o.rules);
out:
    creds_free(creds);
    policy_holder_free(policies);
    if (sfd >= 0)
        close(sfd);
    if (ifd >= 0)
        close(ifd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("gpuadmit %s\n", GPUADMIT_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    fprintf(stderr, "gpuadmit: unknown command \"%s\"\n\n%s", argv[1], usage_main);
    return EXIT_USAGE;
}
