/*
 * certgen.h: the "gpuadmit certs" command: makes a CA and a serving certificate with OpenSSL,
 * checks existing files, and rotates the CA in three steps without a window of TLS errors.
 *
 * A certificate directory holds the names a Kubernetes TLS Secret uses:
 *   ca.crt    the CAs clients must trust now (the caBundle); two during a CA rotation
 *   ca.key    the key of the CA that signs (the first certificate of ca.crt)
 *   tls.crt   the serving certificate
 *   tls.key   its key
 *   next-ca.crt, next-ca.key   only between rotation steps 1 and 3: the CA being introduced
 * Keys are written mode 0600, certificates 0644, each file through a temporary file and a
 * rename, so that a reader sees the old file or the new one, never half of one.
 */
#ifndef GPUADMIT_CERTGEN_H
#define GPUADMIT_CERTGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "diag.h"
#include "bounds.h"

enum certgen_key {
    CERTGEN_KEY_DEFAULT, /* ECDSA P-256 for new sets; the replaced key's kind on rotation */
    CERTGEN_KEY_P256,
    CERTGEN_KEY_RSA2048,
    CERTGEN_KEY_RSA3072
};

/* What --check found wrong, as bits of the exit status (values below 4 are whole-command
 * errors: 2 usage, 3 unreadable or unparsable files). */
enum {
    CERTGEN_BAD_KEY = 4,      /* tls.key does not belong to tls.crt */
    CERTGEN_BAD_CHAIN = 8,    /* tls.crt does not verify against ca.crt */
    CERTGEN_BAD_NAME = 16,    /* the SANs do not cover SERVICE.NAMESPACE.svc (or a --dns/--ip) */
    CERTGEN_BAD_EXPIRED = 32, /* a certificate of the chain is expired or not yet valid */
    CERTGEN_BAD_SOON = 64     /* one expires within --min-days */
};

struct certgen_opts {
    const char *dir;
    const char *service;
    const char *ns;
    const char *dns[CERTGEN_MAX_NAMES];
    size_t n_dns;
    const char *ip[CERTGEN_MAX_NAMES];
    size_t n_ip;
    enum certgen_key key;
    unsigned days;    /* serving certificate validity */
    unsigned ca_days; /* CA validity */
    unsigned min_days;
    bool force;
    bool names_given; /* --service or --namespace given: --renew adds their names */
    time_t now;       /* the time checks judge at; 0 means now */
};

/* True when s may be a DNS name in a SAN: letters, digits, '-' and '.', labels of 1..63,
 * at most 253 in all, optionally "*." first. */
bool certgen_dns_ok(const char *s);

/* Makes ca.*, tls.* in o->dir (created if missing). Refuses when any of them exists, unless
 * o->force. Returns 0, or -1 with d filled. */
int certgen_create(const struct certgen_opts *o, struct diag *d);

/* Issues a new serving certificate and key from the signing CA, keeping the current
 * certificate's names (o->dns and o->ip are added). Returns 0, or with d filled -2 when the
 * files cannot be read or do not belong together, -1 on other failures. */
int certgen_renew(const struct certgen_opts *o, struct diag *d);

/* Does the next CA rotation step (see certgen.c), or step want when want is 1..3, and
 * returns its number; 0 when step want is done already (nothing changed); on failure -2 or
 * -1 as certgen_renew() (a step asked for before its turn is -1). */
int certgen_rotate(const struct certgen_opts *o, int want, struct diag *d);

/* Checks the files in o->dir, printing one line per check to out. Returns 0 when all pass,
 * 3 when a file cannot be read, else an OR of CERTGEN_BAD_*. */
int certgen_check(const struct certgen_opts *o, FILE *out);

/* Writes base64 of dir/ca.crt and a newline to out: the caBundle of the webhook
 * configurations. Returns 0 or -1 with d filled. */
int certgen_print_bundle(const char *dir, FILE *out, struct diag *d);

/* The command line: argv[0] is "certs". Returns the exit status. */
int certgen_main(int argc, char **argv);

#endif
