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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "certs.h"
#include "limits.h"
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

struct creds {
    char *cert_path;
    char *key_path;
    struct file_sig cert_sig, key_sig; /* of the last attempt, good or bad */
    pthread_mutex_t lock;
    struct credset *current;
    struct credset *retired;
    time_t expiry_warned; /* when "expires soon" was last logged */
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
    struct certs_info info;
    struct diag pair;
    struct credset *s = NULL;
    time_t now;

    if (certs_read_file(cert_path, CERT_FILE_MAX_BYTES, &cert, &cert_len, d) < 0 ||
        certs_read_file(key_path, CERT_FILE_MAX_BYTES, &key, &key_len, d) < 0)
        goto out;
    diag_clear(&pair);
    if (certs_check_pair(cert, cert_len, key, key_len, &info, &pair) < 0) {
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
    certs_buf_free(cert, cert_len);
    certs_buf_free(key, key_len);
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
    log_event(LOG_WARN, "serving certificate expires soon",
              json_pack("{s:s, s:I, s:f}", "cert", c->cert_path, "not_after", (json_int_t)not_after,
                        "days_left", days));
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

void creds_free(struct creds *c)
{
    struct credset *s, *next;

    if (c == NULL)
        return;
    credset_free(c->current);
    for (s = c->retired; s != NULL; s = next) {
        next = s->next_retired;
        credset_free(s);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->cert_path);
    free(c->key_path);
    free(c);
}

/* Frees retired sets old enough that no handshake can still hold them. */
static void reap_retired(struct creds *c, time_t now)
{
    struct credset **pp = &c->retired, *s;

    while ((s = *pp) != NULL) {
        if (now - s->retired_at >= (time_t)CERT_RETIRE_S) {
            *pp = s->next_retired;
            credset_free(s);
        } else {
            pp = &s->next_retired;
        }
    }
}

int creds_poll(struct creds *c, bool force)
{
    struct file_sig cs, ks;
    struct credset *fresh, *old;
    struct diag d;
    char msg[DIAG_MSG_MAX + 300];
    time_t now = time(NULL);

    reap_retired(c, now);
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
                  json_pack("{s:s, s:s, s:s}", "cert", c->cert_path, "key", c->key_path, "error",
                            diag_format(&d, msg, sizeof(msg))));
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    old = c->current;
    c->current = fresh;
    pthread_mutex_unlock(&c->lock);
    old->retired_at = now;
    old->next_retired = c->retired;
    c->retired = old;
    log_event(
        LOG_INFO, "serving certificate reloaded",
        json_pack("{s:s, s:I}", "cert", c->cert_path, "not_after", (json_int_t)fresh->not_after));
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
