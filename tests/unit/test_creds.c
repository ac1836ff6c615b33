/*
 * test_creds.c: the hot-reloading credential store (creds.c): good pairs load, changes are
 * picked up, broken or mismatched pairs are refused and leave the served pair untouched. The
 * pair check itself (tls/x509.c) is test_x509's.
 */
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bounds.h"
#include "tls/creds.h"
#include "harness.h"
#include "log.h"

struct pem {
    char cert[4096];
    char key[4096];
    time_t not_after;
};

static void bio_to(BIO *b, char *out, size_t n)
{
    int got = BIO_read(b, out, (int)n - 1);
    out[got < 0 ? 0 : got] = '\0';
}

/* A self-signed certificate valid from `from` to `days` days from now, with an ECDSA P-256 or
 * RSA-2048 key. */
static void make_pem_window(struct pem *p, long from_s, long days, int rsa)
{
    EVP_PKEY *key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIO *b;

    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)rand());
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"test", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_sign(x, key, EVP_sha256());
    p->not_after = time(NULL) + days * 86400;
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    bio_to(b, p->cert, sizeof(p->cert));
    BIO_free(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    bio_to(b, p->key, sizeof(p->key));
    BIO_free(b);
    X509_free(x);
    EVP_PKEY_free(key);
}

static void make_pem(struct pem *p, long days, int rsa)
{
    make_pem_window(p, -60, days, rsa);
}

static void write_file(const char *path, const char *text)
{
    char tmp[512];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    fputs(text, f);
    fclose(f);
    rename(tmp, path); /* a new inode, as a Secret volume update makes */
}

static gnutls_pcert_st *served(struct creds *c)
{
    gnutls_pcert_st *chain;
    unsigned n;
    gnutls_privkey_t key;

    creds_current(c, &chain, &n, &key);
    return chain;
}

static void test_reload(void)
{
    char dir[] = "/tmp/gpuadmit-test-XXXXXX", cert[256], key[256];
    struct pem a, b, c3;
    struct creds *c;
    struct diag d;
    gnutls_pcert_st *first;

    make_pem(&a, 100, 0);
    make_pem(&b, 200, 1); /* RSA this time: both key types are served */
    make_pem(&c3, 300, 0);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);

    /* a broken pair at start is refused */
    write_file(cert, a.cert);
    write_file(key, b.key);
    diag_clear(&d);
    CHECK(creds_new(cert, key, &d) == NULL);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");
    CHECK_CONTAINS(d.msg, cert);

    write_file(key, a.key);
    diag_clear(&d);
    c = creds_new(cert, key, &d);
    CHECK(c != NULL);
    if (c == NULL)
        return;
    CHECK(labs((long)(creds_not_after(c) - a.not_after)) < 5);
    first = served(c);
    CHECK(creds_poll(c, false) == 0); /* unchanged */
    CHECK(served(c) == first);

    /* the new certificate arrives before its key: refused, the old pair stays */
    write_file(cert, b.cert);
    CHECK(creds_poll(c, false) == -1);
    CHECK(served(c) == first);
    CHECK(labs((long)(creds_not_after(c) - a.not_after)) < 5);
    CHECK(creds_poll(c, false) == 0); /* the same refused files are not retried every tick */
    write_file(key, b.key);
    CHECK(creds_poll(c, false) == 1);
    CHECK(served(c) != first);
    CHECK(labs((long)(creds_not_after(c) - b.not_after)) < 5);

    /* garbage and a missing file are refused too */
    write_file(cert, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
    CHECK(creds_poll(c, false) == -1);
    CHECK(labs((long)(creds_not_after(c) - b.not_after)) < 5);
    unlink(cert);
    CHECK(creds_poll(c, false) == -1);
    CHECK(labs((long)(creds_not_after(c) - b.not_after)) < 5);

    /* SIGHUP's forced reload reads the files even when nothing changed */
    write_file(cert, c3.cert);
    write_file(key, c3.key);
    CHECK(creds_poll(c, true) == 1);
    CHECK(labs((long)(creds_not_after(c) - c3.not_after)) < 5);
    CHECK(creds_poll(c, true) == 1);

    creds_free(c);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

static void test_refuses_certificates_clients_would_refuse(void)
{
    char dir[] = "/tmp/gpuadmit-test-XXXXXX", cert[256], key[256], fifo[256];
    struct pem good, expired, future;
    struct creds *c;
    struct diag d;

    make_pem(&good, 100, 0);
    make_pem_window(&expired, -40 * 86400, -10, 0);
    make_pem_window(&future, 86400, 30, 0);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);

    /* an expired pair does not start the server */
    write_file(cert, expired.cert);
    write_file(key, expired.key);
    diag_clear(&d);
    CHECK(creds_new(cert, key, &d) == NULL);
    CHECK_CONTAINS(d.msg, "the certificate expired 10 days ago");

    write_file(cert, good.cert);
    write_file(key, good.key);
    c = creds_new(cert, key, &d);
    CHECK(c != NULL);
    if (c == NULL)
        return;
    /* nor replaces a good one: expired, then not yet valid */
    write_file(cert, expired.cert);
    write_file(key, expired.key);
    CHECK(creds_poll(c, false) == -1);
    CHECK(labs((long)(creds_not_after(c) - good.not_after)) < 5);
    write_file(cert, future.cert);
    write_file(key, future.key);
    CHECK(creds_poll(c, false) == -1);
    CHECK(labs((long)(creds_not_after(c) - good.not_after)) < 5);

    /* a FIFO in the certificate's place is refused at once, not waited on */
    unlink(cert);
    CHECK(mkfifo(cert, 0600) == 0);
    CHECK(creds_poll(c, false) == -1);
    CHECK(labs((long)(creds_not_after(c) - good.not_after)) < 5);
    unlink(cert);
    creds_free(c);
    unlink(key);
    rmdir(dir);
}

/* A certificate with under 30 days left is warned about when loaded, not at every poll; a
 * renewed one is not. main() counts the warnings in the log. */
static void test_expiry_warning(void)
{
    char dir[] = "/tmp/gpuadmit-test-XXXXXX", cert[256], key[256];
    struct pem soon, renewed;
    struct creds *c;
    struct diag d;

    make_pem(&soon, 10, 0);
    make_pem(&renewed, 100, 0);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    write_file(cert, soon.cert);
    write_file(key, soon.key);
    diag_clear(&d);
    c = creds_new(cert, key, &d); /* warning 1 */
    CHECK(c != NULL);
    if (c == NULL)
        return;
    CHECK(labs((long)(creds_not_after(c) - soon.not_after)) < 5);
    for (int i = 0; i < 5; i++)
        CHECK(creds_poll(c, false) == 0); /* unchanged: no warning each second */
    CHECK(creds_poll(c, true) == 1);      /* a reload is a load: warning 2 */
    write_file(cert, renewed.cert);
    write_file(key, renewed.key);
    CHECK(creds_poll(c, false) == 1);
    CHECK(labs((long)(creds_not_after(c) - renewed.not_after)) < 5);
    creds_free(c);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

/* A Kubernetes Secret volume: tls.crt -> ..data/tls.crt, ..data -> ..2026_..., swapped
 * atomically by renaming a new ..data link over the old one. */
static void test_secret_volume_swap(void)
{
    char dir[] = "/tmp/gpuadmit-test-XXXXXX", p[512], q[512], cert[256], key[256];
    struct pem a, b;
    struct creds *c;
    struct diag d;

    make_pem(&a, 100, 0);
    make_pem(&b, 200, 0);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof(p), "%s/..v1", dir);
    CHECK(mkdir(p, 0700) == 0);
    snprintf(p, sizeof(p), "%s/..v1/tls.crt", dir);
    write_file(p, a.cert);
    snprintf(p, sizeof(p), "%s/..v1/tls.key", dir);
    write_file(p, a.key);
    snprintf(p, sizeof(p), "%s/..data", dir);
    CHECK(symlink("..v1", p) == 0);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    CHECK(symlink("..data/tls.crt", cert) == 0);
    CHECK(symlink("..data/tls.key", key) == 0);
    diag_clear(&d);
    c = creds_new(cert, key, &d);
    CHECK(c != NULL);
    if (c == NULL)
        return;
    CHECK(creds_poll(c, false) == 0);
    snprintf(p, sizeof(p), "%s/..v2", dir);
    CHECK(mkdir(p, 0700) == 0);
    snprintf(p, sizeof(p), "%s/..v2/tls.crt", dir);
    write_file(p, b.cert);
    snprintf(p, sizeof(p), "%s/..v2/tls.key", dir);
    write_file(p, b.key);
    snprintf(p, sizeof(p), "%s/..data_tmp", dir);
    CHECK(symlink("..v2", p) == 0);
    snprintf(q, sizeof(q), "%s/..data", dir);
    CHECK(rename(p, q) == 0);
    CHECK(creds_poll(c, false) == 1);
    CHECK(labs((long)(creds_not_after(c) - b.not_after)) < 5);
    creds_free(c);
    /* clean up */
    const char *names[] = {"tls.crt",      "tls.key",      "..data",      "..v1/tls.crt",
                           "..v1/tls.key", "..v2/tls.crt", "..v2/tls.key"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    snprintf(p, sizeof(p), "%s/..v1", dir);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/..v2", dir);
    rmdir(p);
    rmdir(dir);
}

/* A self-signed CA certificate (basicConstraints CA:TRUE), PEM, appended to f. */
static void append_ca_pem(FILE *f, int serial)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509V3_CTX v3;
    X509_EXTENSION *bc;

    X509_set_version(x, 2); /* v3: extensions */
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"test ca", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, bc, -1);
    X509_EXTENSION_free(bc);
    X509_sign(x, key, EVP_sha256());
    PEM_write_X509(f, x);
    X509_free(x);
    EVP_PKEY_free(key);
}

/* A --client-ca bundle holds at most CLIENT_CA_MAX certificates: that many are taken, one
 * more is refused with a message that says the limit (a bundle is read whole on every
 * reload, and each handshake may be checked against all of it). */
static void test_client_ca_count_limit(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[256], cert[300], key[300], bundle[300];
    struct pem a;
    struct creds *c;
    struct diag d;
    FILE *f;
    char want[128];

    snprintf(dir, sizeof(dir), "%s/gpuadmit-test-ca-XXXXXX", tmp && tmp[0] ? tmp : P_tmpdir);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(bundle, sizeof(bundle), "%s/ca.crt", dir);
    make_pem(&a, 100, 0);
    write_file(cert, a.cert);
    write_file(key, a.key);
    diag_clear(&d);
    c = creds_new(cert, key, &d);
    CHECK(c != NULL);
    if (c == NULL)
        return;
    f = fopen(bundle, "w");
    for (unsigned i = 0; i < CLIENT_CA_MAX; i++)
        append_ca_pem(f, (int)i + 1);
    fclose(f);
    diag_clear(&d);
    CHECK(creds_set_client_ca(c, bundle, NULL, 0, &d) == 0);
    if (d.msg[0])
        printf("  %u CAs: %s\n", CLIENT_CA_MAX, d.msg);
    CHECK(creds_client_ca_enabled(c));
    f = fopen(bundle, "a");
    append_ca_pem(f, (int)CLIENT_CA_MAX + 1);
    fclose(f);
    diag_clear(&d);
    CHECK(creds_set_client_ca(c, bundle, NULL, 0, &d) == -1);
    snprintf(want, sizeof(want), "%u certificates; at most %u are accepted", CLIENT_CA_MAX + 1,
             CLIENT_CA_MAX);
    CHECK_CONTAINS(d.msg, want);
    creds_free(c);
    unlink(bundle);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

int main(void)
{
    /* refusals are logged by design: capture the log and count them */
    FILE *logf = tmpfile();
    char *logtext;
    size_t loglen;
    int refused = 0;

    log_set_fd(fileno(logf));
    srand((unsigned)getpid());
    RUN(test_reload);
    RUN(test_refuses_certificates_clients_would_refuse);
    RUN(test_secret_volume_swap);
    RUN(test_expiry_warning);
    RUN(test_client_ca_count_limit);
    fflush(stderr);
    loglen = (size_t)lseek(fileno(logf), 0, SEEK_END);
    logtext = calloc(1, loglen + 1);
    CHECK(pread(fileno(logf), logtext, loglen, 0) == (ssize_t)loglen);
    for (const char *p = logtext; (p = strstr(p, "new serving certificate refused")) != NULL; p++)
        refused++;
    CHECK(refused == 6); /* cert before key, garbage, missing; expired, not yet valid, FIFO */
    refused = 0;
    for (const char *p = logtext; (p = strstr(p, "serving certificate expires soon")) != NULL; p++)
        refused++;
    CHECK(refused == 2);
    CHECK_CONTAINS(logtext, "\"level\":\"error\"");
    CHECK_CONTAINS(logtext, "serving certificate reloaded");
    free(logtext);
    TEST_MAIN_END("test_creds");
}
