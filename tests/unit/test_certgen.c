/*
 * test_certgen.c: "gpuadmit certs" as a library: names, a new set, --check finding each kind
 * of problem (mismatched key, foreign CA, uncovered name, expired, expiring), --renew, and the
 * three CA rotation steps with the chain verifying after each.
 */
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tls/certgen.h"
#include "harness.h"

static char root[64];

static void opts(struct certgen_opts *o, const char *dir)
{
    memset(o, 0, sizeof(*o));
    o->dir = dir;
    o->service = "gpuadmit";
    o->ns = "gpuadmit-system";
    o->days = 365;
    o->ca_days = 3650;
    o->min_days = 30;
}

static void sub(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", root, name);
}

static int check_quiet(const struct certgen_opts *o)
{
    FILE *f = tmpfile();
    int rc = certgen_check(o, f);

    fclose(f);
    return rc;
}

static int copy(const char *from_dir, const char *from, const char *to_dir, const char *to)
{
    char a[256], b[256], buf[8192];
    size_t n;
    FILE *in, *out;

    snprintf(a, sizeof(a), "%s/%s", from_dir, from);
    snprintf(b, sizeof(b), "%s/%s", to_dir, to);
    if ((in = fopen(a, "rb")) == NULL)
        return -1;
    if ((out = fopen(b, "wb")) == NULL) {
        fclose(in);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

static int count_certs(const char *dir, const char *name)
{
    char path[256];
    FILE *f;
    X509 *x;
    int n = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
        n++;
        X509_free(x);
    }
    fclose(f);
    return n;
}

static X509 *read_cert(const char *dir, const char *name, int index)
{
    char path[256];
    FILE *f;
    X509 *x = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "r")) == NULL)
        return NULL;
    for (int i = 0; i <= index; i++) {
        X509_free(x);
        x = PEM_read_X509(f, NULL, NULL, NULL);
    }
    fclose(f);
    return x;
}

static mode_t mode_of(const char *dir, const char *name)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

static bool file_exists(const char *dir, const char *name)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void test_names(void)
{
    CHECK(certgen_dns_ok("gpuadmit.gpuadmit-system.svc"));
    CHECK(certgen_dns_ok("localhost"));
    CHECK(certgen_dns_ok("*.example.com"));
    CHECK(certgen_dns_ok("Webhook.Example.COM"));
    CHECK(!certgen_dns_ok(""));
    CHECK(!certgen_dns_ok("a,DNS:evil.com")); /* would add a name through the SAN string */
    CHECK(!certgen_dns_ok("a..b"));
    CHECK(!certgen_dns_ok("-a.b"));
    CHECK(!certgen_dns_ok("a-.b"));
    CHECK(!certgen_dns_ok("a.b."));
    CHECK(!certgen_dns_ok("a b"));
    CHECK(!certgen_dns_ok("a.*.b"));
    char long_label[80];

    memset(long_label, 'a', 64);
    long_label[64] = '\0';
    CHECK(!certgen_dns_ok(long_label));
    long_label[63] = '\0';
    CHECK(certgen_dns_ok(long_label));
}

static void test_create_and_check(void)
{
    struct certgen_opts o;
    struct diag d;
    char dir[128];
    X509 *leaf;

    sub(dir, sizeof(dir), "new/deeper");
    opts(&o, dir);
    o.dns[o.n_dns++] = "localhost";
    o.ip[o.n_ip++] = "127.0.0.1";
    o.ip[o.n_ip++] = "::1";
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    CHECK_STR(d.msg, "");
    CHECK(mode_of(dir, "ca.key") == 0600);
    CHECK(mode_of(dir, "tls.key") == 0600);
    CHECK(mode_of(dir, "ca.crt") == 0644);
    CHECK(mode_of(dir, "tls.crt") == 0644);
    CHECK(count_certs(dir, "ca.crt") == 1);
    CHECK(check_quiet(&o) == 0);
    leaf = read_cert(dir, "tls.crt", 0);
    CHECK(leaf != NULL);
    if (leaf != NULL) {
        CHECK(X509_check_host(leaf, "gpuadmit.gpuadmit-system.svc", 0, 0, NULL) == 1);
        CHECK(X509_check_host(leaf, "gpuadmit.gpuadmit-system.svc.cluster.local", 0, 0, NULL) == 1);
        CHECK(X509_check_ip_asc(leaf, "::1", 0) == 1);
        CHECK(X509_check_host(leaf, "other.gpuadmit-system.svc", 0, 0, NULL) != 1);
        CHECK(X509_check_purpose(leaf, X509_PURPOSE_SSL_SERVER, 0) == 1);
        CHECK(X509_check_ca(leaf) == 0);
        X509_free(leaf);
    }

    /* never replaced by accident */
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == -1);
    CHECK_CONTAINS(d.msg, "ca.crt exists");
    o.force = true;
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);

    /* a bad name is refused before anything is written */
    opts(&o, dir);
    o.dns[o.n_dns++] = "a,IP:1.2.3.4";
    o.force = true;
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == -1);
    CHECK_CONTAINS(d.msg, "not a DNS name");
    opts(&o, dir);
    o.service = "Upper";
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == -1);
    CHECK_CONTAINS(d.msg, "DNS-1035");
}

static void test_check_finds_each_problem(void)
{
    struct certgen_opts o, other;
    struct diag d;
    char dir[128], dir2[128];

    sub(dir, sizeof(dir), "check");
    sub(dir2, sizeof(dir2), "check-other");
    opts(&o, dir);
    opts(&other, dir2);
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    CHECK(certgen_create(&other, &d) == 0);
    CHECK(check_quiet(&o) == 0);

    /* expiry, judged at another time */
    o.now = time(NULL) + 340 * 86400;
    CHECK(check_quiet(&o) == CERTGEN_BAD_SOON);
    o.min_days = 0;
    CHECK(check_quiet(&o) == 0);
    o.now = time(NULL) + 400 * 86400;
    CHECK(check_quiet(&o) == CERTGEN_BAD_EXPIRED);
    o.now = time(NULL) - 86400;
    CHECK(check_quiet(&o) == CERTGEN_BAD_EXPIRED); /* not yet valid */
    o.now = 0;
    o.min_days = 30;

    /* another service's name */
    o.service = "other";
    CHECK(check_quiet(&o) == CERTGEN_BAD_NAME);
    o.service = "gpuadmit";
    o.dns[o.n_dns++] = "localhost";
    CHECK(check_quiet(&o) == CERTGEN_BAD_NAME);
    o.n_dns = 0;

    /* the other set's CA */
    CHECK(copy(dir2, "ca.crt", dir, "ca.crt") == 0);
    CHECK(check_quiet(&o) == CERTGEN_BAD_CHAIN);
    CHECK(copy(dir2, "tls.crt", dir, "tls.crt") == 0); /* now tls.key is not its key */
    CHECK(check_quiet(&o) == CERTGEN_BAD_KEY);
    CHECK(copy(dir2, "tls.key", dir, "tls.key") == 0);
    CHECK(check_quiet(&o) == 0);
    CHECK(copy(dir2, "ca.key", dir, "tls.key") == 0);
    CHECK(check_quiet(&o) == CERTGEN_BAD_KEY);
    /* several at once add up */
    o.service = "other";
    CHECK(check_quiet(&o) == (CERTGEN_BAD_KEY | CERTGEN_BAD_NAME));
    o.service = "gpuadmit";

    /* unreadable */
    CHECK(copy(dir2, "tls.key", dir, "tls.crt") == 0);
    CHECK(check_quiet(&o) == 3);
    opts(&o, "/nonexistent/certs");
    CHECK(check_quiet(&o) == 3);
}

static void test_renew_keeps_names(void)
{
    struct certgen_opts o;
    struct diag d;
    char dir[128];
    X509 *before, *after;

    sub(dir, sizeof(dir), "renew");
    opts(&o, dir);
    o.key = CERTGEN_KEY_RSA2048;
    o.ip[o.n_ip++] = "10.1.2.3";
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    before = read_cert(dir, "tls.crt", 0);
    opts(&o, dir);
    o.dns[o.n_dns++] = "extra.example";
    diag_clear(&d);
    CHECK(certgen_renew(&o, &d) == 0);
    CHECK_STR(d.msg, "");
    after = read_cert(dir, "tls.crt", 0);
    CHECK(before != NULL && after != NULL);
    if (before != NULL && after != NULL) {
        CHECK(X509_cmp(before, after) != 0);
        CHECK(X509_check_ip_asc(after, "10.1.2.3", 0) == 1);
        CHECK(X509_check_host(after, "extra.example", 0, 0, NULL) == 1);
        CHECK(X509_check_host(after, "gpuadmit.gpuadmit-system.svc", 0, 0, NULL) == 1);
        /* the kind of key it replaces */
        CHECK(EVP_PKEY_get_base_id(X509_get0_pubkey(after)) == EVP_PKEY_RSA);
    }
    X509_free(before);
    X509_free(after);
    CHECK(check_quiet(&o) == 0);
}

static void test_rotation(void)
{
    struct certgen_opts o;
    struct diag d;
    char dir[128];
    X509 *ca0, *next, *leaf, *ca_now;

    sub(dir, sizeof(dir), "rotate");
    opts(&o, dir);
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    ca0 = read_cert(dir, "ca.crt", 0);

    CHECK(certgen_rotate(&o, 0, &d) == 1);
    CHECK(count_certs(dir, "ca.crt") == 2);
    CHECK(file_exists(dir, "next-ca.crt") && file_exists(dir, "next-ca.key"));
    CHECK(mode_of(dir, "next-ca.key") == 0600);
    next = read_cert(dir, "next-ca.crt", 0);
    ca_now = read_cert(dir, "ca.crt", 1);
    CHECK(next != NULL && ca_now != NULL && X509_cmp(next, ca_now) == 0);
    X509_free(ca_now);
    CHECK(check_quiet(&o) == 0); /* the old serving certificate still verifies */
    diag_clear(&d);
    CHECK(certgen_renew(&o, &d) == -1); /* not in the middle of a rotation */
    CHECK_CONTAINS(d.msg, "rotation is under way");

    /* a step 1 cut short before ca.crt was written is finished, not skipped */
    CHECK(copy(dir, "next-ca.crt", dir, "keep.crt") == 0);
    {
        char path[200];
        FILE *f;
        X509 *x = read_cert(dir, "ca.crt", 0);

        snprintf(path, sizeof(path), "%s/ca.crt", dir);
        f = fopen(path, "w");
        CHECK(f != NULL && x != NULL);
        if (f != NULL && x != NULL)
            PEM_write_X509(f, x);
        if (f != NULL)
            fclose(f);
        X509_free(x);
    }
    CHECK(count_certs(dir, "ca.crt") == 1);
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 0, &d) == 1);
    CHECK(count_certs(dir, "ca.crt") == 2);

    diag_clear(&d);
    CHECK(certgen_rotate(&o, 0, &d) == 2);
    leaf = read_cert(dir, "tls.crt", 0);
    CHECK(leaf != NULL && next != NULL && X509_verify(leaf, X509_get0_pubkey(next)) == 1);
    CHECK(leaf != NULL && ca0 != NULL && X509_verify(leaf, X509_get0_pubkey(ca0)) != 1);
    CHECK(check_quiet(&o) == 0);
    X509_free(leaf);

    diag_clear(&d);
    CHECK(certgen_rotate(&o, 0, &d) == 3);
    CHECK(count_certs(dir, "ca.crt") == 1);
    CHECK(!file_exists(dir, "next-ca.crt") && !file_exists(dir, "next-ca.key"));
    ca_now = read_cert(dir, "ca.crt", 0);
    CHECK(ca_now != NULL && next != NULL && X509_cmp(ca_now, next) == 0);
    CHECK(check_quiet(&o) == 0);
    X509_free(ca_now);

    /* and the new CA signs: renewal works again */
    diag_clear(&d);
    CHECK(certgen_renew(&o, &d) == 0);
    CHECK(check_quiet(&o) == 0);

    /* a missing directory is "unreadable", not a write failure */
    opts(&o, "/nonexistent/certs");
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 0, &d) == -2);
    X509_free(ca0);
    X509_free(next);
}

static void key_of(const char *dir, const char *from, const char *to)
{
    CHECK(copy(dir, from, dir, to) == 0);
}

/* Every place a rotation step can be cut short between two files is recovered by running the
 * step again; --rotate=N does nothing for a step that is done and refuses one not yet due. */
static void test_rotation_cut_short(void)
{
    struct certgen_opts o;
    struct diag d;
    char dir[128], path[200];

    sub(dir, sizeof(dir), "cut");
    opts(&o, dir);
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    CHECK(certgen_rotate(&o, 2, &d) == -1); /* no rotation under way */
    CHECK_CONTAINS(d.msg, "step 1 is next");
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 3, &d) == 0); /* nothing under way: nothing to drop */

    /* step 1 cut after next-ca.key (ca.crt not yet written): the orphan goes and step 1 runs
     * whole */
    CHECK(copy(dir, "ca.crt", dir, "ca.orig") == 0);
    CHECK(certgen_rotate(&o, 1, &d) == 1);
    CHECK(copy(dir, "ca.orig", dir, "ca.crt") == 0);
    snprintf(path, sizeof(path), "%s/next-ca.crt", dir);
    CHECK(unlink(path) == 0);
    CHECK(certgen_rotate(&o, 1, &d) == 1);
    CHECK(file_exists(dir, "next-ca.crt") && file_exists(dir, "next-ca.key"));
    CHECK(count_certs(dir, "ca.crt") == 2);
    CHECK(certgen_rotate(&o, 1, &d) == 0); /* repeated: nothing changes */
    CHECK(count_certs(dir, "ca.crt") == 2);
    CHECK(certgen_rotate(&o, 3, &d) == -1); /* step 2 first */
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 2, &d) == 2);
    CHECK(certgen_rotate(&o, 2, &d) == 0);
    CHECK(check_quiet(&o) == 0);

    /* step 3 cut after ca.key: ca.key is the new CA's, ca.crt still both */
    key_of(dir, "next-ca.key", "ca.key");
    CHECK(check_quiet(&o) == 0);
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 3, &d) == 3);
    CHECK_STR(d.msg, "");
    CHECK(count_certs(dir, "ca.crt") == 1);
    CHECK(!file_exists(dir, "next-ca.crt") && !file_exists(dir, "next-ca.key"));
    CHECK(certgen_rotate(&o, 3, &d) == 0);

    /* step 3 cut between removing next-ca.crt and next-ca.key */
    CHECK(certgen_rotate(&o, 0, &d) == 1);
    CHECK(certgen_rotate(&o, 0, &d) == 2);
    CHECK(copy(dir, "next-ca.crt", dir, "ca.crt") == 0);
    key_of(dir, "next-ca.key", "ca.key");
    snprintf(path, sizeof(path), "%s/next-ca.crt", dir);
    CHECK(unlink(path) == 0);
    diag_clear(&d);
    CHECK(certgen_rotate(&o, 3, &d) == 0);
    CHECK(!file_exists(dir, "next-ca.key"));
    CHECK(certgen_renew(&o, &d) == 0);
    CHECK_STR(d.msg, "");
    CHECK(check_quiet(&o) == 0);
}

static void test_long_names(void)
{
    struct certgen_opts o;
    struct diag d;
    char dir[128], svc[64], ns[64];
    X509 *leaf;

    memset(svc, 'a', 63);
    svc[63] = '\0';
    memset(ns, 'n', 63);
    ns[63] = '\0';
    sub(dir, sizeof(dir), "long");
    opts(&o, dir);
    o.service = svc;
    o.ns = ns;
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    CHECK_STR(d.msg, "");
    CHECK(check_quiet(&o) == 0);
    leaf = read_cert(dir, "tls.crt", 0);
    if (leaf != NULL) {
        char name[200];

        snprintf(name, sizeof(name), "%s.%s.svc.cluster.local", svc, ns);
        CHECK(X509_check_host(leaf, name, 0, 0, NULL) == 1);
        X509_free(leaf);
    }
    CHECK(!certgen_dns_ok("*."));
    CHECK(!certgen_dns_ok("10.0.0.1"));
    CHECK(!certgen_dns_ok("::1"));
    CHECK(certgen_dns_ok("10.0.0.1.nip.io"));

    /* --renew with --service adds that name */
    opts(&o, dir);
    o.service = "other";
    o.ns = "ns";
    o.names_given = true;
    diag_clear(&d);
    CHECK(certgen_renew(&o, &d) == 0);
    CHECK(check_quiet(&o) == 0);
    o.service = svc;
    o.ns = ns;
    CHECK(check_quiet(&o) == 0); /* and keeps the old ones */
}

static void test_bundle(void)
{
    char dir[128], line[8192];
    struct certgen_opts o;
    struct diag d;
    FILE *f = tmpfile();

    sub(dir, sizeof(dir), "bundle");
    opts(&o, dir);
    diag_clear(&d);
    CHECK(certgen_create(&o, &d) == 0);
    CHECK(certgen_print_bundle(dir, f, &d) == 0);
    rewind(f);
    CHECK(fgets(line, sizeof(line), f) != NULL);
    /* base64 of "-----BEGIN CERTIFICATE-----" */
    CHECK(strncmp(line, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", 36) == 0);
    CHECK(strchr(line, '\n') == line + strlen(line) - 1);
    fclose(f);
    CHECK(certgen_print_bundle("/nonexistent", stdout, &d) == -1);
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/gpuadmit-certgen-XXXXXX");
    if (mkdtemp(root) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_names);
    RUN(test_create_and_check);
    RUN(test_check_finds_each_problem);
    RUN(test_renew_keeps_names);
    RUN(test_rotation);
    RUN(test_rotation_cut_short);
    RUN(test_long_names);
    RUN(test_bundle);
    {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        if (system(cmd) != 0)
            printf("cannot remove %s\n", root);
    }
    TEST_MAIN_END("test_certgen");
}
