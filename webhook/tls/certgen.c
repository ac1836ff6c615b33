/*
 * certgen.c: "gpuadmit certs" (see certgen.h for the files it owns).
 *
 * CA rotation, one step per --rotate, each safe to repeat after a crash:
 *   1. a new CA is made (next-ca.*) and ca.crt becomes old CA + new CA: the webhook
 *      configurations get that caBundle, and clients trust either CA;
 *   2. the serving certificate is re-issued by the new CA: the Secret gets it; clients still
 *      trust both, so old and new serving certificates both work during the switch;
 *   3. ca.crt and ca.key become the new CA and next-ca.* go: the caBundle drops the old CA.
 * The step to do is read from the files: no next CA means 1; a next CA missing from ca.crt
 * means 1 did not finish; a serving certificate not yet signed by it means 2; else 3.
 */
#include "certgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "x509.h"
#include "parse.h"

#define EXIT_USAGE      2
#define EXIT_UNREADABLE 3

/* ---- names ---- */

static bool label_ok(const char *s, size_t len, bool first_alpha)
{
    if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
        return false;
    if (first_alpha && !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

static bool ip_ok(const char *s)
{
    unsigned char buf[16];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

bool certgen_dns_ok(const char *s)
{
    size_t len = strlen(s);
    const char *p = s;

    if (strncmp(p, "*.", 2) == 0)
        p += 2;
    if (len == 0 || len > 253 || *p == '\0' || ip_ok(s))
        return false;
    while (*p != '\0') {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);

        for (size_t i = 0; i < n; i++) {
            char c = p[i];

            /* DNS is case-insensitive; upper case is accepted here and compared as such */
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return false;
        }
        if (n == 0 || n > 63 || p[0] == '-' || p[n - 1] == '-')
            return false;
        p += n;
        if (*p == '.' && p[1] == '\0')
            return false; /* no trailing dot in a certificate */
        if (*p == '.')
            p++;
    }
    return true;
}

/* Appends "kind:v" to the "DNS:a,IP:b" list in n, unless it is there already. */
static int san_add(struct buf *n, const char *kind, const char *v)
{
    char item[300];
    size_t k;

    snprintf(item, sizeof(item), "%s:%s", kind, v);
    k = strlen(item);
    if (n->p != NULL) {
        /* skip a name already listed (",item," within ",list,") */
        for (const char *p = n->p; (p = strstr(p, item)) != NULL; p++) {
            if ((p == n->p || p[-1] == ',') && (p[k] == ',' || p[k] == '\0'))
                return 0;
        }
    }
    if ((n->len > 0 && buf_add(n, ",", 1, SIZE_MAX) < 0) || buf_add(n, item, k, SIZE_MAX) < 0)
        return -1;
    return 0;
}

/* The names of the options: SERVICE.NAMESPACE.svc, its cluster.local form, --dns, --ip. */
static int san_from_opts(const struct certgen_opts *o, struct buf *n, struct diag *d)
{
    char svc[160];

    if (!label_ok(o->service, strlen(o->service), true)) {
        diag_set(d, NULL, 0, 0,
                 "--service \"%s\": a Service name is a DNS-1035 label (a-z, 0-9, '-', starting "
                 "with a letter, at most 63)",
                 o->service);
        return -1;
    }
    if (!label_ok(o->ns, strlen(o->ns), false)) {
        diag_set(d, NULL, 0, 0,
                 "--namespace \"%s\": a namespace is a DNS-1123 label (a-z, 0-9, '-', at most 63)",
                 o->ns);
        return -1;
    }
    snprintf(svc, sizeof(svc), "%s.%s.svc", o->service, o->ns);
    if (san_add(n, "DNS", svc) < 0)
        goto oom;
    snprintf(svc, sizeof(svc), "%s.%s.svc.cluster.local", o->service, o->ns);
    if (san_add(n, "DNS", svc) < 0)
        goto oom;
    for (size_t i = 0; i < o->n_dns; i++) {
        if (!certgen_dns_ok(o->dns[i])) {
            diag_set(d, NULL, 0, 0, "--dns \"%s\": not a DNS name%s", o->dns[i],
                     ip_ok(o->dns[i]) ? " (an IP address goes with --ip)" : "");
            return -1;
        }
        if (san_add(n, "DNS", o->dns[i]) < 0)
            goto oom;
    }
    for (size_t i = 0; i < o->n_ip; i++) {
        if (!ip_ok(o->ip[i])) {
            diag_set(d, NULL, 0, 0, "--ip \"%s\": not an IPv4 or IPv6 address", o->ip[i]);
            return -1;
        }
        if (san_add(n, "IP", o->ip[i]) < 0)
            goto oom;
    }
    return 0;
oom:
    diag_set(d, NULL, 0, 0, "out of memory");
    return -1;
}

/* The names of an existing certificate (its DNS and IP SANs) added to n. */
static int san_from_cert(X509 *x, struct buf *n, struct diag *d)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    int rc = 0;

    for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens) && rc == 0; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        char buf[INET6_ADDRSTRLEN > 256 ? INET6_ADDRSTRLEN : 256];

        if (g->type == GEN_DNS) {
            int len = ASN1_STRING_length(g->d.dNSName);

            if (len <= 0 || len >= (int)sizeof(buf))
                continue;
            memcpy(buf, ASN1_STRING_get0_data(g->d.dNSName), (size_t)len);
            buf[len] = '\0';
            /* only names that could have been given on the command line: no comma sneaks in */
            if (certgen_dns_ok(buf))
                rc = san_add(n, "DNS", buf);
        } else if (g->type == GEN_IPADD) {
            int len = ASN1_STRING_length(g->d.iPAddress);
            const void *a = ASN1_STRING_get0_data(g->d.iPAddress);

            if ((len == 4 && inet_ntop(AF_INET, a, buf, sizeof(buf))) ||
                (len == 16 && inet_ntop(AF_INET6, a, buf, sizeof(buf))))
                rc = san_add(n, "IP", buf);
        }
    }
    GENERAL_NAMES_free(gens);
    if (rc < 0)
        diag_set(d, NULL, 0, 0, "out of memory");
    return rc;
}

/* ---- keys and certificates ---- */

static enum certgen_key key_kind(EVP_PKEY *k)
{
    if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA)
        return EVP_PKEY_get_bits(k) >= 3072 ? CERTGEN_KEY_RSA3072 : CERTGEN_KEY_RSA2048;
    return CERTGEN_KEY_P256;
}

static EVP_PKEY *new_key(enum certgen_key k, struct diag *d)
{
    EVP_PKEY *key;
    char err[256];

    switch (k) {
    case CERTGEN_KEY_RSA2048: key = EVP_RSA_gen(2048); break;
    case CERTGEN_KEY_RSA3072: key = EVP_RSA_gen(3072); break;
    default: key = EVP_EC_gen("P-256"); break;
    }
    if (key == NULL)
        diag_set(d, NULL, 0, 0, "cannot make a key: %s", x509_ssl_error(err, sizeof(err)));
    return key;
}

struct issue {
    const char *cn;
    EVP_PKEY *key;        /* the subject's */
    X509 *issuer;         /* NULL: self-signed */
    EVP_PKEY *issuer_key; /* NULL: self-signed */
    bool ca;
    const char *san; /* "DNS:a,IP:b", leaf only */
    unsigned days;
};

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    int ok = e != NULL && X509_add_ext(x, e, -1) == 1;

    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

static int set_serial(X509 *x)
{
    unsigned char b[CERTGEN_SERIAL_BYTES];
    BIGNUM *bn = NULL;
    int ok;

    if (RAND_bytes(b, sizeof(b)) != 1)
        return -1;
    b[0] = (unsigned char)((b[0] & 0x7f) | 0x40); /* positive, never shorter than its size */
    bn = BN_bin2bn(b, sizeof(b), NULL);
    ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

static X509 *issue(const struct issue *is, struct diag *d)
{
    X509 *x = X509_new();
    X509V3_CTX ctx;
    time_t now = time(NULL);
    X509_NAME *name;
    bool rsa = EVP_PKEY_get_base_id(is->key) == EVP_PKEY_RSA;
    char err[256];
    int ok;

    ERR_clear_error();
    ok = x != NULL && X509_set_version(x, 2) == 1 && set_serial(x) == 0 &&
         /* a little in the past, so that a peer whose clock lags takes it at once */
         ASN1_TIME_set(X509_getm_notBefore(x), now - CERT_CLOCK_SKEW_S) != NULL &&
         ASN1_TIME_set(X509_getm_notAfter(x), now + (time_t)is->days * 86400) != NULL &&
         (name = X509_get_subject_name(x)) != NULL &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)is->cn, -1,
                                    -1, 0) == 1 &&
         X509_set_issuer_name(x, is->issuer ? X509_get_subject_name(is->issuer) : name) == 1 &&
         X509_set_pubkey(x, is->key) == 1;
    if (ok) {
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, is->issuer ? is->issuer : x, x, NULL, NULL, 0);
        ok = add_ext(x, &ctx, NID_basic_constraints,
                     is->ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE") == 0 &&
             add_ext(x, &ctx, NID_key_usage,
                     is->ca ? "critical,keyCertSign,cRLSign"
                     : rsa  ? "critical,digitalSignature,keyEncipherment"
                            : "critical,digitalSignature") == 0 &&
             add_ext(x, &ctx, NID_subject_key_identifier, "hash") == 0 &&
             add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") == 0 &&
             (is->ca || (add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") == 0 &&
                         add_ext(x, &ctx, NID_subject_alt_name, is->san) == 0)) &&
             X509_sign(x, is->issuer_key ? is->issuer_key : is->key, EVP_sha256()) > 0;
    }
    if (!ok) {
        diag_set(d, NULL, 0, 0, "cannot make the certificate \"%s\": %s", is->cn,
                 x509_ssl_error(err, sizeof(err)));
        X509_free(x);
        return NULL;
    }
    return x;
}

/* A CA: the time in its name keeps an old and a new CA apart for every client. */
static X509 *issue_ca(EVP_PKEY *key, unsigned days, struct diag *d)
{
    char cn[64], when[32];
    time_t now = time(NULL);
    struct tm tm;
    struct issue is = {cn, key, NULL, NULL, true, NULL, days};

    unsigned char r[4] = {0};

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* and the random part keeps apart two made within a second */
    if (RAND_bytes(r, sizeof(r)) != 1)
        ERR_clear_error();
    snprintf(cn, sizeof(cn), "gpuadmit CA %s %02x%02x%02x%02x", when, r[0], r[1], r[2], r[3]);
    return issue(&is, d);
}

/* ---- files ---- */

static int path_of(char *buf, size_t len, const char *dir, const char *name)
{
    return (size_t)snprintf(buf, len, "%s/%s", dir, name) < len ? 0 : -1;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;

    if (fd >= 0)
        close(fd);
    return rc;
}

/* Writes name in dir through a temporary file and a rename. */
static int write_file(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                      struct diag *d)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    int fd = -1;
    size_t done = 0;

    if (path_of(path, sizeof(path), dir, name) < 0 ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= sizeof(tmp)) {
        diag_set(d, NULL, 0, 0, "%s: path too long", dir);
        return -1;
    }
    fd = mkstemp(tmp); /* mode 0600 from the start: a key is never readable by others */
    if (fd < 0)
        goto fail;
    if (fchmod(fd, mode) < 0)
        goto fail;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        done += (size_t)n;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) < 0)
        goto fail;
    return 0;
fail:
    diag_set(d, path, 0, 0, "cannot write: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

static int write_certs(const char *dir, const char *name, X509 *const *certs, size_t n,
                       struct diag *d)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data;
    long len;
    int rc = -1;

    for (size_t i = 0; b != NULL && i < n; i++) {
        if (PEM_write_bio_X509(b, certs[i]) != 1)
            goto out;
    }
    if (b == NULL || (len = BIO_get_mem_data(b, &data)) <= 0)
        goto out;
    rc = write_file(dir, name, data, (size_t)len, 0644, d);
out:
    if (rc < 0)
        diag_set(d, NULL, 0, 0, "%s/%s: cannot encode the certificates", dir, name);
    BIO_free(b);
    return rc;
}

static int write_key(const char *dir, const char *name, EVP_PKEY *key, struct diag *d)
{
    /* secure memory BIO: its buffer is wiped when freed */
    BIO *b = BIO_new(BIO_s_secmem());
    char *data;
    long len;
    int rc = -1;

    if (b == NULL || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1 ||
        (len = BIO_get_mem_data(b, &data)) <= 0) {
        diag_set(d, NULL, 0, 0, "%s/%s: cannot encode the key", dir, name);
        goto out;
    }
    rc = write_file(dir, name, data, (size_t)len, 0600, d);
out:
    BIO_free(b);
    return rc;
}

static bool exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;

    return path_of(path, sizeof(path), dir, name) == 0 && lstat(path, &st) == 0;
}

static int remove_file(const char *dir, const char *name, struct diag *d)
{
    char path[PATH_MAX];

    if (path_of(path, sizeof(path), dir, name) < 0 || (unlink(path) < 0 && errno != ENOENT)) {
        diag_set(d, path, 0, 0, "cannot remove: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The certificates of dir/name, in file order (free with sk_X509_pop_free(.., X509_free)). */
static STACK_OF(X509) * load_certs(const char *dir, const char *name, struct diag *d)
{
    char path[PATH_MAX], err[256];
    char *buf = NULL;
    size_t len = 0;
    STACK_OF(X509) *sk = NULL;
    int n;

    if (path_of(path, sizeof(path), dir, name) < 0 ||
        x509_read_file(path, CERT_FILE_MAX_BYTES, &buf, &len, d) < 0)
        goto out;
    if ((n = x509_read_chain(buf, len, &sk)) < 0)
        diag_set(d, path, 0, 0, "out of memory");
    else if (n == 0)
        diag_set(d, path, 0, 0, "cannot read the PEM certificates (%s)",
                 x509_ssl_error(err, sizeof(err)));
out:
    x509_buf_free(buf, len);
    return sk;
}

static EVP_PKEY *load_key(const char *dir, const char *name, struct diag *d)
{
    char path[PATH_MAX], err[256];
    char *buf = NULL;
    size_t len = 0;
    EVP_PKEY *k = NULL;

    if (path_of(path, sizeof(path), dir, name) < 0 ||
        x509_read_file(path, CERT_FILE_MAX_BYTES, &buf, &len, d) < 0)
        goto out;
    if ((k = x509_read_key(buf, len)) == NULL)
        diag_set(d, path, 0, 0, "no unencrypted PEM private key found (%s)",
                 x509_ssl_error(err, sizeof(err)));
out:
    x509_buf_free(buf, len);
    return k;
}

static int make_dir(const char *dir, struct diag *d)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path)) {
        diag_set(d, NULL, 0, 0, "%s: path too long", dir);
        return -1;
    }
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;

            *p = '\0';
            if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                diag_set(d, path, 0, 0, "cannot make the directory: %s", strerror(errno));
                return -1;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

/* ---- the set in a directory ---- */

struct set {
    STACK_OF(X509) * ca; /* ca.crt */
    X509 *signer;        /* the certificate of ca.crt that ca.key belongs to (borrowed) */
    EVP_PKEY *ca_key;
    STACK_OF(X509) * tls; /* tls.crt */
    EVP_PKEY *tls_key;
    X509 *next; /* next-ca.crt, or NULL */
    EVP_PKEY *next_key;
};

static void set_free(struct set *s)
{
    sk_X509_pop_free(s->ca, X509_free);
    sk_X509_pop_free(s->tls, X509_free);
    EVP_PKEY_free(s->ca_key);
    EVP_PKEY_free(s->tls_key);
    X509_free(s->next);
    EVP_PKEY_free(s->next_key);
    memset(s, 0, sizeof(*s));
}

static int set_load(const char *dir, struct set *s, struct diag *d)
{
    memset(s, 0, sizeof(*s));
    if ((s->ca = load_certs(dir, "ca.crt", d)) == NULL ||
        (s->ca_key = load_key(dir, "ca.key", d)) == NULL ||
        (s->tls = load_certs(dir, "tls.crt", d)) == NULL ||
        (s->tls_key = load_key(dir, "tls.key", d)) == NULL)
        goto fail;
    /* any certificate of the bundle: a rotation cut short in step 3 has the new key already */
    for (int i = 0; i < sk_X509_num(s->ca) && s->signer == NULL; i++)
        if (X509_check_private_key(sk_X509_value(s->ca, i), s->ca_key) == 1)
            s->signer = sk_X509_value(s->ca, i);
    ERR_clear_error();
    if (s->signer == NULL) {
        diag_set(d, NULL, 0, 0, "%s/ca.key is not the key of any certificate in ca.crt", dir);
        goto fail;
    }
    /* one of the two alone is what a step 1 or 3 cut short between the files leaves: step 1
     * writes the key first, step 3 removes the certificate first; either way it goes */
    if (exists(dir, "next-ca.crt") != exists(dir, "next-ca.key") &&
        (remove_file(dir, "next-ca.crt", d) < 0 || remove_file(dir, "next-ca.key", d) < 0))
        goto fail;
    if (exists(dir, "next-ca.crt") && exists(dir, "next-ca.key")) {
        STACK_OF(X509) *next = load_certs(dir, "next-ca.crt", d);

        if (next == NULL || (s->next_key = load_key(dir, "next-ca.key", d)) == NULL) {
            sk_X509_pop_free(next, X509_free);
            goto fail;
        }
        s->next = sk_X509_shift(next);
        sk_X509_pop_free(next, X509_free);
        if (X509_check_private_key(s->next, s->next_key) != 1) {
            ERR_clear_error();
            diag_set(d, NULL, 0, 0, "%s/next-ca.key is not the key of next-ca.crt", dir);
            goto fail;
        }
    }
    return 0;
fail:
    set_free(s);
    return -1;
}

static bool signed_by(X509 *x, X509 *ca)
{
    int ok = X509_verify(x, X509_get0_pubkey(ca)) == 1;

    ERR_clear_error();
    return ok;
}

static int leaf_names(X509 *leaf, const struct certgen_opts *o, struct buf *n, char *cn,
                      size_t cn_len, struct diag *d)
{
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, (int)cn_len) <=
        0)
        snprintf(cn, cn_len, "%s.%s.svc", o->service, o->ns);
    if (san_from_cert(leaf, n, d) < 0)
        return -1;
    if (o->names_given) {
        char svc[160];

        snprintf(svc, sizeof(svc), "%s.%s.svc", o->service, o->ns);
        if (san_add(n, "DNS", svc) < 0)
            return -1;
        snprintf(svc, sizeof(svc), "%s.%s.svc.cluster.local", o->service, o->ns);
        if (san_add(n, "DNS", svc) < 0)
            return -1;
    }
    for (size_t i = 0; i < o->n_dns; i++) {
        if (!certgen_dns_ok(o->dns[i]) || san_add(n, "DNS", o->dns[i]) < 0) {
            diag_set(d, NULL, 0, 0, "--dns \"%s\": not a DNS name", o->dns[i]);
            return -1;
        }
    }
    for (size_t i = 0; i < o->n_ip; i++) {
        if (!ip_ok(o->ip[i]) || san_add(n, "IP", o->ip[i]) < 0) {
            diag_set(d, NULL, 0, 0, "--ip \"%s\": not an IPv4 or IPv6 address", o->ip[i]);
            return -1;
        }
    }
    if (n->p == NULL) {
        diag_set(d, NULL, 0, 0, "tls.crt names nothing to serve (no DNS or IP SAN)");
        return -1;
    }
    return 0;
}

/* A new tls.key and tls.crt from signer, with the names of the current serving certificate. */
static int reissue(const struct certgen_opts *o, struct set *s, X509 *signer, EVP_PKEY *signer_key,
                   struct diag *d)
{
    struct buf n = {0};
    char cn[256];
    EVP_PKEY *key = NULL;
    X509 *leaf = NULL;
    int rc = -1;

    if (leaf_names(sk_X509_value(s->tls, 0), o, &n, cn, sizeof(cn), d) < 0)
        goto out;
    key = new_key(o->key != CERTGEN_KEY_DEFAULT ? o->key : key_kind(s->tls_key), d);
    if (key == NULL)
        goto out;
    struct issue is = {cn, key, signer, signer_key, false, n.p, o->days};

    if ((leaf = issue(&is, d)) == NULL)
        goto out;
    /* the key first: a server that sees the new key with the old certificate refuses the pair
     * and keeps serving, then takes both when the certificate lands */
    if (write_key(o->dir, "tls.key", key, d) < 0 || write_certs(o->dir, "tls.crt", &leaf, 1, d) < 0)
        goto out;
    rc = fsync_dir(o->dir) < 0 ? -1 : 0;
    if (rc < 0)
        diag_set(d, o->dir, 0, 0, "cannot sync the directory: %s", strerror(errno));
out:
    buf_free(&n);
    EVP_PKEY_free(key);
    X509_free(leaf);
    return rc;
}

/* ---- the commands ---- */

int certgen_create(const struct certgen_opts *o, struct diag *d)
{
    static const char *const files[] = {"ca.crt",  "ca.key",      "tls.crt",
                                        "tls.key", "next-ca.crt", "next-ca.key"};
    struct buf n = {0};
    EVP_PKEY *ca_key = NULL, *key = NULL;
    X509 *ca = NULL, *leaf = NULL;
    char cn[160];
    int rc = -1;

    if (san_from_opts(o, &n, d) < 0)
        goto out;
    for (size_t i = 0; !o->force && i < sizeof(files) / sizeof(files[0]); i++) {
        if (exists(o->dir, files[i])) {
            diag_set(d, NULL, 0, 0,
                     "%s/%s exists; not replacing it (--force replaces the whole set, "
                     "--renew only the serving certificate, --rotate the CA)",
                     o->dir, files[i]);
            goto out;
        }
    }
    if (make_dir(o->dir, d) < 0)
        goto out;
    /* a CN holds at most 64 characters; clients read the SANs, the CN only names the thing */
    if (strlen(o->service) + strlen(o->ns) + 5 <= 64)
        snprintf(cn, sizeof(cn), "%s.%s.svc", o->service, o->ns);
    else
        snprintf(cn, sizeof(cn), "%s", o->service);
    ca_key = new_key(o->key, d);
    key = ca_key ? new_key(o->key, d) : NULL;
    if (key == NULL || (ca = issue_ca(ca_key, o->ca_days, d)) == NULL)
        goto out;
    struct issue is = {cn, key, ca, ca_key, false, n.p, o->days};

    if ((leaf = issue(&is, d)) == NULL)
        goto out;
    if (write_key(o->dir, "ca.key", ca_key, d) < 0 ||
        write_certs(o->dir, "ca.crt", &ca, 1, d) < 0 || write_key(o->dir, "tls.key", key, d) < 0 ||
        write_certs(o->dir, "tls.crt", &leaf, 1, d) < 0 ||
        remove_file(o->dir, "next-ca.crt", d) < 0 || remove_file(o->dir, "next-ca.key", d) < 0)
        goto out;
    if (fsync_dir(o->dir) < 0) {
        diag_set(d, o->dir, 0, 0, "cannot sync the directory: %s", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    buf_free(&n);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(key);
    X509_free(ca);
    X509_free(leaf);
    return rc;
}

int certgen_renew(const struct certgen_opts *o, struct diag *d)
{
    struct set s;
    int rc = -1;

    if (set_load(o->dir, &s, d) < 0)
        return -2;
    if (s.next != NULL) {
        diag_set(d, NULL, 0, 0,
                 "a CA rotation is under way in %s (next-ca.crt exists); finish it with --rotate",
                 o->dir);
        goto out;
    }
    rc = reissue(o, &s, s.signer, s.ca_key, d);
out:
    set_free(&s);
    return rc;
}

static bool bundle_has(STACK_OF(X509) * sk, X509 *x)
{
    for (int i = 0; i < sk_X509_num(sk); i++)
        if (X509_cmp(sk_X509_value(sk, i), x) == 0)
            return true;
    return false;
}

/* Step 1: the new CA, and a bundle of the current CAs plus it. */
static int rotate_introduce(const struct certgen_opts *o, struct set *s, struct diag *d)
{
    X509 *all[CERT_CHAIN_MAX + 1];
    size_t n = 0;

    if (s->next == NULL) {
        s->next_key = new_key(o->key != CERTGEN_KEY_DEFAULT ? o->key : key_kind(s->ca_key), d);
        if (s->next_key == NULL || (s->next = issue_ca(s->next_key, o->ca_days, d)) == NULL)
            return -1;
        if (write_key(o->dir, "next-ca.key", s->next_key, d) < 0 ||
            write_certs(o->dir, "next-ca.crt", &s->next, 1, d) < 0)
            return -1;
    }
    if (sk_X509_num(s->ca) >= (int)CERT_CHAIN_MAX) {
        diag_set(d, NULL, 0, 0, "%s/ca.crt holds %d certificates; at most %u can be rotated",
                 o->dir, sk_X509_num(s->ca), CERT_CHAIN_MAX - 1);
        return -1;
    }
    for (int i = 0; i < sk_X509_num(s->ca); i++)
        all[n++] = sk_X509_value(s->ca, i);
    all[n++] = s->next;
    return write_certs(o->dir, "ca.crt", all, n, d);
}

/* Step 3: the new CA alone. */
static int rotate_drop(const struct certgen_opts *o, struct set *s, struct diag *d)
{
    if (write_key(o->dir, "ca.key", s->next_key, d) < 0 ||
        write_certs(o->dir, "ca.crt", &s->next, 1, d) < 0 ||
        remove_file(o->dir, "next-ca.crt", d) < 0 || remove_file(o->dir, "next-ca.key", d) < 0)
        return -1;
    return 0;
}

int certgen_rotate(const struct certgen_opts *o, int want, struct diag *d)
{
    struct set s;
    int step = -1, next;

    if (set_load(o->dir, &s, d) < 0)
        return -2;
    /* the step the files are ready for; 1 also finishes a step 1 cut short */
    next = s.next == NULL || !bundle_has(s.ca, s.next)   ? 1
           : !signed_by(sk_X509_value(s.tls, 0), s.next) ? 2
                                                         : 3;
    if (want != 0 && want != next) {
        /* a repeated run of a step that is done does nothing; a skipped step is refused */
        if (want < next || (want == 3 && s.next == NULL))
            step = 0;
        else
            diag_set(d, NULL, 0, 0,
                     "step %d of the rotation cannot be done yet: step %d is next (%s)", want, next,
                     next == 1 ? "no rotation is under way" : "run --rotate=2 first");
        goto out;
    }
    if (next == 1 && rotate_introduce(o, &s, d) == 0)
        step = 1;
    else if (next == 2 && reissue(o, &s, s.next, s.next_key, d) == 0)
        step = 2;
    else if (next == 3 && rotate_drop(o, &s, d) == 0)
        step = 3;
    if (step > 0 && fsync_dir(o->dir) < 0) {
        diag_set(d, o->dir, 0, 0, "cannot sync the directory: %s", strerror(errno));
        step = -1;
    }
out:
    set_free(&s);
    return step;
}

/* ---- --check ---- */

enum mark { MARK_OK, MARK_FAIL, MARK_NOTE };

static void report(FILE *out, enum mark m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(FILE *out, enum mark m, const char *fmt, ...)
{
    va_list ap;

    fputs(m == MARK_OK ? "ok    " : m == MARK_FAIL ? "FAIL  " : "note  ", out);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}

static time_t cert_time(const ASN1_TIME *t)
{
    struct tm tm;

    return ASN1_TIME_to_tm(t, &tm) == 1 ? timegm(&tm) : 0;
}

/* Expiry of one certificate: the bits it fails. */
/* Expiry of one certificate: the bits it fails. A certificate no client uses (a CA the chain
 * does not reach) is only noted: bad says how its problems are marked. */
static int check_time(FILE *out, const char *file, X509 *x, const struct certgen_opts *o,
                      time_t now, enum mark bad)
{
    char cn[128] = "", until[32];
    time_t nb = cert_time(X509_get0_notBefore(x)), na = cert_time(X509_get0_notAfter(x));
    double days = difftime(na, now) / 86400.0;
    struct tm tm;

    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
    gmtime_r(&na, &tm);
    strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (now > na) {
        report(out, bad, "%s \"%s\" expired on %s (%.0f days ago)", file, cn, until, -days);
        return CERTGEN_BAD_EXPIRED;
    }
    if (now + CERT_CLOCK_SKEW_S < nb) {
        report(out, bad, "%s \"%s\" is not valid before %.0f minutes from now", file, cn,
               difftime(nb, now) / 60.0);
        return CERTGEN_BAD_EXPIRED;
    }
    if (days < (double)o->min_days) {
        report(out, bad, "%s \"%s\" expires on %s: %.1f days left, fewer than %u", file, cn, until,
               days, o->min_days);
        return CERTGEN_BAD_SOON;
    }
    report(out, MARK_OK, "%s \"%s\" valid until %s (%.0f days left)", file, cn, until, days);
    return 0;
}

/* Verifies tls.crt against ca.crt as a TLS client would; the chain it built into *chain (new:
 * free with sk_X509_pop_free(.., X509_free)) when it verifies, else NULL. */
static int check_chain(FILE *out, STACK_OF(X509) * tls, STACK_OF(X509) * ca,
                       STACK_OF(X509) * *chain)
{
    X509_STORE *st = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    int ok = 0;

    *chain = NULL;
    if (st == NULL || ctx == NULL || untrusted == NULL)
        goto out;
    for (int i = 0; i < sk_X509_num(ca); i++)
        X509_STORE_add_cert(st, sk_X509_value(ca, i));
    for (int i = 1; i < sk_X509_num(tls); i++)
        sk_X509_push(untrusted, sk_X509_value(tls, i));
    if (X509_STORE_CTX_init(ctx, st, sk_X509_value(tls, 0), untrusted) != 1)
        goto out;
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    /* expiry is its own check, with its own exit bit; an intermediate given as the caBundle is
     * a trust anchor to Go's crypto/x509 (the apiserver), so it is here too */
    X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx),
                                X509_V_FLAG_NO_CHECK_TIME | X509_V_FLAG_PARTIAL_CHAIN);
    ok = X509_verify_cert(ctx) == 1;
    if (ok) {
        *chain = X509_STORE_CTX_get1_chain(ctx);
        report(out, MARK_OK, "tls.crt verifies against ca.crt (%d CA%s trusted)", sk_X509_num(ca),
               sk_X509_num(ca) == 1 ? "" : "s");
    } else {
        report(out, MARK_FAIL, "tls.crt does not verify against ca.crt: %s",
               X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    }
out:
    ERR_clear_error();
    sk_X509_free(untrusted);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(st);
    return ok ? 0 : CERTGEN_BAD_CHAIN;
}

static bool in_chain(STACK_OF(X509) * chain, X509 *x)
{
    return chain == NULL || bundle_has(chain, x);
}

static int check_names(FILE *out, X509 *leaf, const struct certgen_opts *o)
{
    char svc[160];
    int bad = 0;
    /* the apiserver calls SERVICE.NAMESPACE.svc and, like every Go client, ignores the CN */
    unsigned flags = X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS;

    snprintf(svc, sizeof(svc), "%s.%s.svc", o->service, o->ns);
    if (X509_check_host(leaf, svc, 0, flags, NULL) == 1) {
        report(out, MARK_OK, "tls.crt covers %s", svc);
    } else {
        report(out, MARK_FAIL, "tls.crt does not cover %s (the name the apiserver calls)", svc);
        bad = CERTGEN_BAD_NAME;
    }
    for (size_t i = 0; i < o->n_dns; i++) {
        bool ok = X509_check_host(leaf, o->dns[i], 0, flags, NULL) == 1;

        report(out, ok ? MARK_OK : MARK_FAIL, "tls.crt %s %s", ok ? "covers" : "does not cover",
               o->dns[i]);
        bad |= ok ? 0 : CERTGEN_BAD_NAME;
    }
    for (size_t i = 0; i < o->n_ip; i++) {
        bool ok = X509_check_ip_asc(leaf, o->ip[i], 0) == 1;

        report(out, ok ? MARK_OK : MARK_FAIL, "tls.crt %s %s", ok ? "covers" : "does not cover",
               o->ip[i]);
        bad |= ok ? 0 : CERTGEN_BAD_NAME;
    }
    ERR_clear_error();
    return bad;
}

int certgen_check(const struct certgen_opts *o, FILE *out)
{
    STACK_OF(X509) *ca = NULL, *tls = NULL, *chain = NULL;
    EVP_PKEY *key = NULL;
    struct diag d;
    char msg[DIAG_MSG_MAX + 64];
    time_t now = o->now ? o->now : time(NULL);
    int bad = 0;

    diag_clear(&d);
    if ((tls = load_certs(o->dir, "tls.crt", &d)) == NULL ||
        (key = load_key(o->dir, "tls.key", &d)) == NULL ||
        (ca = load_certs(o->dir, "ca.crt", &d)) == NULL) {
        report(out, MARK_FAIL, "%s", diag_format(&d, msg, sizeof(msg)));
        bad = EXIT_UNREADABLE;
        goto out;
    }
    if (X509_check_private_key(sk_X509_value(tls, 0), key) == 1) {
        report(out, MARK_OK, "tls.key belongs to tls.crt");
    } else {
        report(out, MARK_FAIL, "tls.key does not belong to tls.crt");
        bad |= CERTGEN_BAD_KEY;
    }
    ERR_clear_error();
    bad |= check_chain(out, tls, ca, &chain);
    bad |= check_names(out, sk_X509_value(tls, 0), o);
    /* the certificates clients use: the verified chain (all of them when it does not verify);
     * an expired CA the chain does not use is only noted */
    for (int i = 0; i < sk_X509_num(tls); i++) {
        int b =
            check_time(out, "tls.crt", sk_X509_value(tls, i), o, now,
                       i == 0 || in_chain(chain, sk_X509_value(tls, i)) ? MARK_FAIL : MARK_NOTE);

        bad |= i == 0 || in_chain(chain, sk_X509_value(tls, i)) ? b : 0;
    }
    for (int i = 0; i < sk_X509_num(ca); i++) {
        bool used = in_chain(chain, sk_X509_value(ca, i));
        int b =
            check_time(out, "ca.crt", sk_X509_value(ca, i), o, now, used ? MARK_FAIL : MARK_NOTE);

        bad |= used ? b : 0;
    }
    if (exists(o->dir, "next-ca.crt"))
        fprintf(out, "note  a CA rotation is under way (next-ca.crt exists): run --rotate on\n");
out:
    sk_X509_pop_free(chain, X509_free);
    sk_X509_pop_free(ca, X509_free);
    sk_X509_pop_free(tls, X509_free);
    EVP_PKEY_free(key);
    return bad;
}

int certgen_print_bundle(const char *dir, FILE *out, struct diag *d)
{
    char path[PATH_MAX];
    char *pem = NULL;
    unsigned char *b64 = NULL;
    size_t len = 0;
    int rc = -1;

    if (path_of(path, sizeof(path), dir, "ca.crt") < 0 ||
        x509_read_file(path, CERT_FILE_MAX_BYTES, &pem, &len, d) < 0)
        goto out;
    if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto out;
    }
    EVP_EncodeBlock(b64, (const unsigned char *)pem, (int)len);
    fprintf(out, "%s\n", (const char *)b64);
    rc = 0;
out:
    free(b64);
    x509_buf_free(pem, len);
    return rc;
}

/* ---- the command line ---- */

static const char usage_certs[] =
    "usage: gpuadmit certs [--service NAME] [--namespace NS] --out DIR [--dns NAME]... [--ip "
    "ADDR]...\n"
    "       gpuadmit certs --check --out DIR [--service NAME] [--namespace NS] [--min-days N]\n"
    "       gpuadmit certs --rotate[=STEP] --out DIR      gpuadmit certs --renew --out DIR\n"
    "\n"
    "Makes a CA and a serving certificate for the webhook's Service, in the files a Kubernetes\n"
    "TLS Secret uses: DIR/ca.crt, ca.key, tls.crt, tls.key (keys mode 0600). The serving\n"
    "certificate covers SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local. Prints the\n"
    "caBundle of the webhook configurations (base64 of ca.crt) on standard output.\n"
    "\n"
    "  --service NAME      the webhook's Service (default gpuadmit)\n"
    "  --namespace NS      its namespace (default gpuadmit-system)\n"
    "  --out DIR           the certificate directory (--dir is the same)\n"
    "  --dns NAME          another DNS name to cover (repeatable)\n"
    "  --ip ADDR           an IP address to cover (repeatable)\n"
    "  --key-type TYPE     ecdsa-p256 (default), rsa-2048 or rsa-3072\n"
    "  --days N            serving certificate validity (default 365)\n"
    "  --ca-days N         CA validity (default 3650)\n"
    "  --force             replace an existing set (the default is to refuse)\n"
    "  --renew             re-issue the serving certificate from the current CA, same names\n"
    "                      (plus those of --service/--namespace/--dns/--ip when given)\n"
    "  --rotate[=STEP]     the next step of a CA rotation (three runs, see certs/README.md):\n"
    "                      1 introduce a new CA (caBundle trusts both), 2 re-issue the\n"
    "                      serving certificate from it, 3 drop the old CA; with STEP, only\n"
    "                      that step: a step done already changes nothing, one not yet\n"
    "                      due is refused (safe to repeat in scripts)\n"
    "  --check             inspect DIR: key matches certificate, chain verifies against ca.crt,\n"
    "                      names cover the Service (and each --dns/--ip), expiry\n"
    "  --min-days N        with --check: fail when a certificate has fewer days left (30)\n"
    "\n"
    "Exit code: 0 done or all checks passed; 1 could not make or write the files, or a\n"
    "--rotate step was refused; 2 usage; 3 a file cannot be read or parsed; with --check,\n"
    "otherwise the sum of: 4 key does not match, 8 chain does not verify, 16 names not\n"
    "covered, 32 expired or not yet valid, 64 expires within --min-days.\n";

enum {
    C_SERVICE = 256,
    C_NS,
    C_OUT,
    C_DNS,
    C_IP,
    C_KEY,
    C_DAYS,
    C_CA_DAYS,
    C_FORCE,
    C_RENEW,
    C_ROTATE,
    C_CHECK,
    C_MIN_DAYS,
    C_HELP
};

static int days_arg(const char *flag, const char *s, unsigned min, unsigned *out)
{
    uint64_t v;

    if (parse_uint(s, min, MAX_CERT_DAYS, &v) < 0) {
        fprintf(stderr, "gpuadmit certs: %s takes a whole number from %u to %u, got \"%s\"\n", flag,
                min, MAX_CERT_DAYS, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* Returns 1 for --help, 0, or -1 on a usage error (reported). */
static int parse_certs(int argc, char **argv, struct certgen_opts *o, int *mode, int *step)
{
    static const struct option longopts[] = {{"service", required_argument, NULL, C_SERVICE},
                                             {"namespace", required_argument, NULL, C_NS},
                                             {"out", required_argument, NULL, C_OUT},
                                             {"dir", required_argument, NULL, C_OUT},
                                             {"dns", required_argument, NULL, C_DNS},
                                             {"ip", required_argument, NULL, C_IP},
                                             {"key-type", required_argument, NULL, C_KEY},
                                             {"days", required_argument, NULL, C_DAYS},
                                             {"ca-days", required_argument, NULL, C_CA_DAYS},
                                             {"force", no_argument, NULL, C_FORCE},
                                             {"renew", no_argument, NULL, C_RENEW},
                                             {"rotate", optional_argument, NULL, C_ROTATE},
                                             {"check", no_argument, NULL, C_CHECK},
                                             {"min-days", required_argument, NULL, C_MIN_DAYS},
                                             {"help", no_argument, NULL, C_HELP},
                                             {NULL, 0, NULL, 0}};
    int ch;

    o->service = "gpuadmit";
    o->ns = "gpuadmit-system";
    o->days = DEFAULT_CERT_SERVING_DAYS;
    o->ca_days = DEFAULT_CERT_CA_DAYS;
    o->min_days = CERT_EXPIRY_WARN_DAYS;
    *mode = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (ch) {
        case C_SERVICE:
            o->service = optarg;
            o->names_given = true;
            break;
        case C_NS:
            o->ns = optarg;
            o->names_given = true;
            break;
        case C_OUT: o->dir = optarg; break;
        case C_DNS:
        case C_IP:
            if ((ch == C_DNS ? o->n_dns : o->n_ip) >= CERTGEN_MAX_NAMES) {
                fprintf(stderr, "gpuadmit certs: at most %u --dns and %u --ip\n", CERTGEN_MAX_NAMES,
                        CERTGEN_MAX_NAMES);
                return -1;
            }
            if (ch == C_DNS)
                o->dns[o->n_dns++] = optarg;
            else
                o->ip[o->n_ip++] = optarg;
            break;
        case C_KEY:
            if (strcmp(optarg, "ecdsa-p256") == 0)
                o->key = CERTGEN_KEY_P256;
            else if (strcmp(optarg, "rsa-2048") == 0)
                o->key = CERTGEN_KEY_RSA2048;
            else if (strcmp(optarg, "rsa-3072") == 0)
                o->key = CERTGEN_KEY_RSA3072;
            else {
                fprintf(stderr,
                        "gpuadmit certs: --key-type is ecdsa-p256, rsa-2048 or rsa-3072, got "
                        "\"%s\"\n",
                        optarg);
                return -1;
            }
            break;
        case C_DAYS:
            if (days_arg("--days", optarg, 1, &o->days) < 0)
                return -1;
            break;
        case C_CA_DAYS:
            if (days_arg("--ca-days", optarg, 1, &o->ca_days) < 0)
                return -1;
            break;
        case C_MIN_DAYS:
            if (days_arg("--min-days", optarg, 0, &o->min_days) < 0)
                return -1;
            break;
        case C_FORCE: o->force = true; break;
        case C_ROTATE:
            if (optarg != NULL && (optarg[0] < '1' || optarg[0] > '3' || optarg[1] != '\0')) {
                fprintf(stderr, "gpuadmit certs: --rotate=STEP takes 1, 2 or 3, got \"%s\"\n",
                        optarg);
                return -1;
            }
            *step = optarg != NULL ? optarg[0] - '0' : 0;
            /* fall through */
        case C_RENEW:
        case C_CHECK:
            if (*mode != 0 && *mode != ch) {
                fprintf(stderr,
                        "gpuadmit certs: --check, --renew and --rotate are separate runs\n");
                return -1;
            }
            *mode = ch;
            break;
        case 'h':
        case C_HELP: fputs(usage_certs, stdout); return 1;
        case ':':
            fprintf(stderr, "gpuadmit certs: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "gpuadmit certs: unknown option \"%s\"\n%s", argv[optind - 1],
                    usage_certs);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuadmit certs: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    if (o->dir == NULL || o->dir[0] == '\0') {
        fprintf(stderr, "gpuadmit certs: --out DIR is required\n");
        return -1;
    }
    struct buf n = {0};
    struct diag d;
    char msg[DIAG_MSG_MAX + 64];
    int rc;

    diag_clear(&d);
    rc = san_from_opts(o, &n, &d);
    buf_free(&n);
    if (rc < 0)
        fprintf(stderr, "gpuadmit certs: %s\n", diag_format(&d, msg, sizeof(msg)));
    return rc;
}

static const char *const rotate_next[] = {
    NULL,
    "step 1 of 3 done: a new CA is introduced; ca.crt trusts the old and the new CA.\n"
    "  Put this caBundle in both webhook configurations, wait until every API server uses it,\n"
    "  then run --rotate again.",
    "step 2 of 3 done: the serving certificate is now signed by the new CA.\n"
    "  Put tls.crt and tls.key in the Secret (the server picks them up without a restart),\n"
    "  wait until every webhook pod serves it, then run --rotate again.",
    "step 3 of 3 done: the old CA is dropped.\n"
    "  Put this caBundle in both webhook configurations. The rotation is complete."};

int certgen_main(int argc, char **argv)
{
    struct certgen_opts o;
    struct diag d;
    char msg[DIAG_MSG_MAX + 64];
    int mode, rc = -1, step, want = 0;

    memset(&o, 0, sizeof(o));
    switch (parse_certs(argc, argv, &o, &mode, &want)) {
    case 1: return 0;
    case -1: return EXIT_USAGE;
    }
    if (mode == C_CHECK)
        return certgen_check(&o, stdout);
    diag_clear(&d);
    switch (mode) {
    case C_RENEW:
        if ((rc = certgen_renew(&o, &d)) < 0)
            goto fail;
        fprintf(stderr, "certs: re-issued %s/tls.crt and tls.key; the caBundle is unchanged\n",
                o.dir);
        break;
    case C_ROTATE:
        if ((rc = step = certgen_rotate(&o, want, &d)) < 0)
            goto fail;
        if (step == 0)
            fprintf(stderr, "certs: step %d of 3 is done already; nothing changed\n", want);
        else
            fprintf(stderr, "certs: %s\n", rotate_next[step]);
        break;
    default:
        if (certgen_create(&o, &d) < 0)
            goto fail;
        fprintf(stderr, "certs: made a CA and a serving certificate for %s.%s.svc in %s\n",
                o.service, o.ns, o.dir);
    }
    if (certgen_print_bundle(o.dir, stdout, &d) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "gpuadmit certs: %s\n", diag_format(&d, msg, sizeof(msg)));
    return rc == -2 ? EXIT_UNREADABLE : 1;
}
