/*
 * creds.c: serving credentials with hot reload (see creds.h).
 *
 * Invariants: c->current is never NULL after creds_new(); only creds_poll() (one thread, the
 * main loop) writes it, under c->lock; handshake threads read it under the same lock and use
 * the set without holding the lock, which is safe because a replaced set lives on in
 * c->retired for CERT_RETIRE_S before it is freed.
 */
#include "creds.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "x509.h"
#include "bounds.h"
#include "log.h"

struct file_sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int missing;
};

struct credset {
    gnutls_pcert_st chain[CERT_CHAIN_MAX];
    unsigned chain_len;
    gnutls_privkey_t key;
    time_t not_after;
    time_t retired_at;
    struct credset *next_retired;
};

/* A client CA bundle: immutable once published, retired like a credset. */
struct caset {
    gnutls_x509_trust_list_t trust;
    unsigned count;
    time_t retired_at;
    struct caset *next_retired;
};

struct creds {
    char *cert_path;
    char *key_path;
    struct file_sig cert_sig, key_sig; /* of the last attempt, good or bad */
    pthread_mutex_t lock;
    struct credset *current;
    struct credset *retired;
    time_t expiry_warned; /* when "expires soon" was last logged */
    /* --client-ca: NULL ca_path when clients are not verified */
    char *ca_path;
    struct file_sig ca_sig;
    struct caset *ca_current; /* under lock, like current */
    unsigned long ca_gen;     /* under lock: bundles put in force */
    struct caset *ca_retired;
    char **names; /* --client-name values; n_names == 0: any name */
    size_t n_names;
};

static void sig_read(const char *path, struct file_sig *s)
{
    struct stat st;

    memset(s, 0, sizeof(*s));
    /* stat follows symlinks: a Kubernetes Secret volume swaps its "..data" link atomically */
    if (stat(path, &st) < 0) {
        s->missing = 1;
        return;
    }
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
}

static bool sig_equal(const struct file_sig *a, const struct file_sig *b)
{
    return a->missing == b->missing && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void credset_free(struct credset *s)
{
    if (s == NULL)
        return;
    for (unsigned i = 0; i < s->chain_len; i++)
        gnutls_pcert_deinit(&s->chain[i]);
    if (s->key != NULL)
        gnutls_privkey_deinit(s->key); /* gnutls wipes key material on deinit */
    free(s);
}

static struct credset *credset_from_pem(char *cert, size_t cert_len, char *key, size_t key_len,
                                        const char *cert_path, struct diag *d)
{
    struct credset *s = calloc(1, sizeof(*s));
    gnutls_datum_t cd = {(unsigned char *)cert, (unsigned)cert_len};
    gnutls_datum_t kd = {(unsigned char *)key, (unsigned)key_len};
    unsigned n = CERT_CHAIN_MAX;
    int err;

    if (s == NULL) {
        diag_set(d, cert_path, 0, 0, "out of memory");
        return NULL;
    }
    err = gnutls_pcert_list_import_x509_raw(s->chain, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (err < 0) {
        diag_set(d, cert_path, 0, 0, "GnuTLS cannot use the certificate chain (at most %u): %s",
                 CERT_CHAIN_MAX, gnutls_strerror(err));
        goto fail;
    }
    s->chain_len = n;
    if ((err = gnutls_privkey_init(&s->key)) < 0 ||
        (err = gnutls_privkey_import_x509_raw(s->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        diag_set(d, cert_path, 0, 0, "GnuTLS cannot use the key: %s", gnutls_strerror(err));
        goto fail;
    }
    return s;
fail:
    credset_free(s);
    return NULL;
}

/* A new checked set from the files, or NULL with d filled. */
static struct credset *credset_load(const char *cert_path, const char *key_path, struct diag *d)
{
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    struct x509_info info;
    struct diag pair;
    struct credset *s = NULL;
    time_t now;

    if (x509_read_file(cert_path, CERT_FILE_MAX_BYTES, &cert, &cert_len, d) < 0 ||
        x509_read_file(key_path, CERT_FILE_MAX_BYTES, &key, &key_len, d) < 0)
        goto out;
    diag_clear(&pair);
    if (x509_check_pair(cert, cert_len, key, key_len, &info, &pair) < 0) {
        /* the check knows the parts, not the files: name them */
        diag_set(d, NULL, 0, 0, "%s with %s: %s", cert_path, key_path, pair.msg);
        goto out;
    }
    /* a certificate every client would refuse is no better than a broken one */
    now = time(NULL);
    if (now > info.not_after) {
        diag_set(d, cert_path, 0, 0, "the certificate expired %.0f days ago",
                 difftime(now, info.not_after) / 86400.0);
        goto out;
    }
    if (now + CERT_CLOCK_SKEW_S < info.not_before) {
        diag_set(d, cert_path, 0, 0, "the certificate is not valid for another %.0f minutes",
                 difftime(info.not_before, now) / 60.0);
        goto out;
    }
    s = credset_from_pem(cert, cert_len, key, key_len, cert_path, d);
    if (s != NULL)
        s->not_after = info.not_after;
out:
    x509_buf_free(cert, cert_len);
    x509_buf_free(key, key_len);
    return s;
}

/* Logs a warning when the served certificate has under CERT_EXPIRY_WARN_DAYS left: at load,
 * and again every CERT_EXPIRY_REMIND_S while it is not replaced. */
static void log_expiry(struct creds *c, time_t not_after, time_t now, bool reminder)
{
    double days = difftime(not_after, now) / 86400.0;

    if (days >= CERT_EXPIRY_WARN_DAYS ||
        (reminder && now - c->expiry_warned < (time_t)CERT_EXPIRY_REMIND_S))
        return;
    c->expiry_warned = now;
    log_event(LOG_WARN, "serving certificate expires soon", "{s:s, s:I, s:f}", "cert", c->cert_path,
              "not_after", (int64_t)not_after, "days_left", days);
}

struct creds *creds_new(const char *cert_path, const char *key_path, struct diag *d)
{
    struct creds *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->cert_path = strdup(cert_path);
    c->key_path = strdup(key_path);
    if (c->cert_path == NULL || c->key_path == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto fail;
    }
    sig_read(cert_path, &c->cert_sig);
    sig_read(key_path, &c->key_sig);
    c->current = credset_load(cert_path, key_path, d);
    if (c->current == NULL)
        goto fail;
    log_expiry(c, c->current->not_after, time(NULL), false);
    return c;
fail:
    creds_free(c);
    return NULL;
}

static void caset_free(struct caset *s)
{
    if (s == NULL)
        return;
    gnutls_x509_trust_list_deinit(s->trust, 1);
    free(s);
}

void creds_free(struct creds *c)
{
    struct credset *s, *next;
    struct caset *cs, *cnext;

    if (c == NULL)
        return;
    credset_free(c->current);
    for (s = c->retired; s != NULL; s = next) {
        next = s->next_retired;
        credset_free(s);
    }
    caset_free(c->ca_current);
    for (cs = c->ca_retired; cs != NULL; cs = cnext) {
        cnext = cs->next_retired;
        caset_free(cs);
    }
    for (size_t i = 0; i < c->n_names; i++)
        free(c->names[i]);
    free(c->names);
    pthread_mutex_destroy(&c->lock);
    free(c->cert_path);
    free(c->key_path);
    free(c->ca_path);
    free(c);
}

/* Frees retired sets old enough that no handshake or verification can still hold them. */
static void reap_retired(struct creds *c, time_t now)
{
    struct credset **pp = &c->retired, *s;
    struct caset **cpp = &c->ca_retired, *cs;

    while ((s = *pp) != NULL) {
        if (now - s->retired_at >= (time_t)CERT_RETIRE_S) {
            *pp = s->next_retired;
            credset_free(s);
        } else {
            pp = &s->next_retired;
        }
    }
    while ((cs = *cpp) != NULL) {
        if (now - cs->retired_at >= (time_t)CERT_RETIRE_S) {
            *cpp = cs->next_retired;
            caset_free(cs);
        } else {
            cpp = &cs->next_retired;
        }
    }
}

/* A client CA bundle from path: one or more PEM certificates, each a CA. NULL with d filled. */
static struct caset *caset_load(const char *path, struct diag *d)
{
    char *pem = NULL;
    size_t len = 0;
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0, i;
    gnutls_datum_t data;
    struct caset *s = NULL;
    int err;

    if (x509_read_file(path, CERT_FILE_MAX_BYTES, &pem, &len, d) < 0)
        return NULL;
    data = (gnutls_datum_t){(unsigned char *)pem, (unsigned)len};
    err = gnutls_x509_crt_list_import2(&crts, &n, &data, GNUTLS_X509_FMT_PEM, 0);
    x509_buf_free(pem, len);
    if (err < 0 || n == 0) {
        diag_set(d, path, 0, 0, "no PEM certificate can be read from it%s%s", err < 0 ? ": " : "",
                 err < 0 ? gnutls_strerror(err) : "");
        goto fail;
    }
    if (n > CLIENT_CA_MAX) {
        diag_set(d, path, 0, 0, "%u certificates; at most %u are accepted", n, CLIENT_CA_MAX);
        goto fail;
    }
    for (i = 0; i < n; i++) {
        /* a leaf given by mistake would otherwise make every client fail with "signer not
         * found", far from the cause */
        if (gnutls_x509_crt_get_ca_status(crts[i], NULL) <= 0) {
            diag_set(d, path, 0, 0,
                     "certificate %u of %u is not a CA certificate (basicConstraints CA:TRUE "
                     "missing)",
                     i + 1, n);
            goto fail;
        }
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL || gnutls_x509_trust_list_init(&s->trust, 0) < 0) {
        free(s);
        s = NULL;
        diag_set(d, path, 0, 0, "out of memory");
        goto fail;
    }
    /* the list takes over the certificates it added (it returns how many: all of them, but
     * for want of memory) */
    err = gnutls_x509_trust_list_add_cas(s->trust, crts, n, 0);
    if (err < (int)n) {
        for (i = err > 0 ? (unsigned)err : 0; i < n; i++)
            gnutls_x509_crt_deinit(crts[i]);
        gnutls_x509_trust_list_deinit(s->trust, 1);
        free(s);
        gnutls_free(crts);
        diag_set(d, path, 0, 0, "GnuTLS cannot use the CA certificates: %s",
                 err < 0 ? gnutls_strerror(err) : "out of memory");
        return NULL;
    }
    s->count = n;
    gnutls_free(crts);
    return s;
fail:
    for (i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return NULL;
}

int creds_set_client_ca(struct creds *c, const char *path, const char *const *names, size_t n,
                        struct diag *d)
{
    struct caset *s;

    sig_read(path, &c->ca_sig);
    s = caset_load(path, d);
    if (s == NULL)
        return -1;
    c->ca_path = strdup(path);
    c->names = n ? calloc(n, sizeof(*c->names)) : NULL;
    if (c->ca_path == NULL || (n && c->names == NULL)) {
        caset_free(s);
        diag_set(d, NULL, 0, 0, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if ((c->names[i] = strdup(names[i])) == NULL) {
            caset_free(s);
            diag_set(d, NULL, 0, 0, "out of memory");
            return -1;
        }
        c->n_names = i + 1;
    }
    c->ca_current = s;
    return 0;
}

bool creds_client_ca_enabled(const struct creds *c)
{
    return c->ca_path != NULL;
}

unsigned long creds_client_ca_generation(struct creds *c)
{
    unsigned long g;

    pthread_mutex_lock(&c->lock);
    g = c->ca_gen;
    pthread_mutex_unlock(&c->lock);
    return g;
}

/* Reloads the client CA bundle when its file changed. */
static void poll_client_ca(struct creds *c, bool force, time_t now)
{
    struct file_sig sig;
    struct caset *fresh, *old;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];

    if (c->ca_path == NULL)
        return;
    sig_read(c->ca_path, &sig);
    if (!force && sig_equal(&sig, &c->ca_sig))
        return;
    c->ca_sig = sig;
    diag_clear(&d);
    fresh = caset_load(c->ca_path, &d);
    if (fresh == NULL) {
        log_event(LOG_ERROR, "new client CA refused; the previous one stays in use", "{s:s, s:s}",
                  "client_ca", c->ca_path, "error", diag_format(&d, msg, sizeof(msg)));
        return;
    }
    pthread_mutex_lock(&c->lock);
    old = c->ca_current;
    c->ca_current = fresh;
    c->ca_gen++;
    pthread_mutex_unlock(&c->lock);
    old->retired_at = now;
    old->next_retired = c->ca_retired;
    c->ca_retired = old;
    log_event(LOG_INFO, "client CA reloaded", "{s:s, s:i}", "client_ca", c->ca_path, "certificates",
              (int)fresh->count);
}

/* true when the leaf's subject CN or one of its DNS names is one of c's names. DNS names
 * compare without regard to case; the CN exactly, and only when the subject has one CN (a
 * second one could make readers disagree on which is the name). */
static bool name_accepted(const struct creds *c, gnutls_x509_crt_t leaf)
{
    char buf[CLIENT_NAME_MAX];
    size_t len;
    unsigned type;
    int err;

    for (unsigned i = 0;; i++) {
        len = sizeof(buf);
        err = gnutls_x509_crt_get_subject_alt_name2(leaf, i, buf, &len, &type, NULL);
        if (err == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (err < 0 || type != GNUTLS_SAN_DNSNAME || len != strlen(buf))
            continue;
        for (size_t k = 0; k < c->n_names; k++)
            if (strcasecmp(buf, c->names[k]) == 0)
                return true;
    }
    len = sizeof(buf);
    if (gnutls_x509_crt_get_dn_by_oid(leaf, GNUTLS_OID_X520_COMMON_NAME, 1, 0, NULL, &len) !=
        GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
        return false; /* none, or more than one */
    len = sizeof(buf);
    if (gnutls_x509_crt_get_dn_by_oid(leaf, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf, &len) < 0 ||
        len != strlen(buf))
        return false; /* none, too long, or an embedded NUL */
    for (size_t k = 0; k < c->n_names; k++)
        if (strcmp(buf, c->names[k]) == 0)
            return true;
    return false;
}

int creds_verify_client(struct creds *c, gnutls_session_t session, time_t *not_after, char *why,
                        size_t why_len)
{
    const gnutls_datum_t *peers;
    unsigned n = 0, i, made = 0, status = 0;
    gnutls_x509_crt_t chain[CERT_CHAIN_MAX];
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID, (void *)GNUTLS_KP_TLS_WWW_CLIENT,
                                     0};
    gnutls_datum_t out = {NULL, 0};
    struct caset *set;
    int err = 0, rc = -1, len;

    peers = gnutls_certificate_get_peers(session, &n);
    if (peers == NULL || n == 0) {
        snprintf(why, why_len, "no client certificate was presented");
        return -1;
    }
    if (n > CERT_CHAIN_MAX) {
        snprintf(why, why_len, "the client certificate chain has %u certificates (at most %u)", n,
                 CERT_CHAIN_MAX);
        return -1;
    }
    for (i = 0; i < n; i++) {
        if ((err = gnutls_x509_crt_init(&chain[made])) < 0)
            break;
        made++;
        if ((err = gnutls_x509_crt_import(chain[i], &peers[i], GNUTLS_X509_FMT_DER)) < 0)
            break;
    }
    if (err < 0) {
        snprintf(why, why_len, "client certificate %u of %u cannot be read: %s", i + 1, n,
                 gnutls_strerror(err));
        goto out;
    }
    /* the set stays valid for CERT_RETIRE_S after a reload replaces it */
    pthread_mutex_lock(&c->lock);
    set = c->ca_current;
    pthread_mutex_unlock(&c->lock);
    err = gnutls_x509_trust_list_verify_crt2(set->trust, chain, n, &purpose, 1, 0, &status, NULL);
    if (err < 0) {
        snprintf(why, why_len, "the client certificate cannot be verified: %s",
                 gnutls_strerror(err));
        goto out;
    }
    if (status != 0) {
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) < 0)
            out.data = NULL;
        len = snprintf(why, why_len, "the client certificate is not accepted by --client-ca: %s",
                       out.data ? (const char *)out.data : "verification failed");
        /* GnuTLS ends each sentence with a space */
        if (len > 0 && (size_t)len < why_len)
            while (len > 0 && why[len - 1] == ' ')
                why[--len] = '\0';
        gnutls_free(out.data);
        goto out;
    }
    if (c->n_names > 0 && !name_accepted(c, chain[0])) {
        snprintf(why, why_len, "the client certificate's name is not one of --client-name");
        goto out;
    }
    /* the first of the chain's certificates to expire ends the verdict (the bundle's own
     * CAs are checked again whenever the bundle changes) */
    *not_after = gnutls_x509_crt_get_expiration_time(chain[0]);
    for (i = 1; i < n; i++) {
        time_t t = gnutls_x509_crt_get_expiration_time(chain[i]);

        if (t < *not_after)
            *not_after = t;
    }
    rc = 0;
out:
    for (i = 0; i < made; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return rc;
}

int creds_poll(struct creds *c, bool force)
{
    struct file_sig cs, ks;
    struct credset *fresh, *old;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];
    time_t now = time(NULL);

    reap_retired(c, now);
    poll_client_ca(c, force, now);
    /* read the signatures before the files: a change during the read shows up next time */
    sig_read(c->cert_path, &cs);
    sig_read(c->key_path, &ks);
    if (!force && sig_equal(&cs, &c->cert_sig) && sig_equal(&ks, &c->key_sig)) {
        log_expiry(c, c->current->not_after, now, true);
        return 0;
    }
    c->cert_sig = cs;
    c->key_sig = ks;
    diag_clear(&d);
    fresh = credset_load(c->cert_path, c->key_path, &d);
    if (fresh == NULL) {
        log_event(LOG_ERROR, "new serving certificate refused; the previous one stays in use",
                  "{s:s, s:s, s:s}", "cert", c->cert_path, "key", c->key_path, "error",
                  diag_format(&d, msg, sizeof(msg)));
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    old = c->current;
    c->current = fresh;
    pthread_mutex_unlock(&c->lock);
    old->retired_at = now;
    old->next_retired = c->retired;
    c->retired = old;
    log_event(LOG_INFO, "serving certificate reloaded", "{s:s, s:I}", "cert", c->cert_path,
              "not_after", (int64_t)fresh->not_after);
    log_expiry(c, fresh->not_after, now, false);
    return 1;
}

void creds_current(struct creds *c, gnutls_pcert_st **chain, unsigned *chain_len,
                   gnutls_privkey_t *key)
{
    pthread_mutex_lock(&c->lock);
    *chain = c->current->chain;
    *chain_len = c->current->chain_len;
    *key = c->current->key;
    pthread_mutex_unlock(&c->lock);
}

time_t creds_not_after(struct creds *c)
{
    time_t t;

    pthread_mutex_lock(&c->lock);
    t = c->current->not_after;
    pthread_mutex_unlock(&c->lock);
    return t;
}
