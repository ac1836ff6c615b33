/*
 * test_x509.c: OpenSSL's reading of certificates and keys (tls/x509.c): whole files under a
 * size cap (never hanging on a FIFO), certificate chains in file order with the text around
 * them ignored, unencrypted keys only (never a passphrase prompt), a key matched to the first
 * certificate of its chain, and what the check reports of that certificate. Keys and
 * certificates are made here with OpenSSL; files live in a mkdtemp folder removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tls/x509.h"

static char dir[256];

/* ------------------------------------------------------------------------------------------ */
/* Making keys, certificates and files */

/* 2023-11-14T22:13:20Z and 2052-05-23T08:26:40Z: the second is past 2049, so it is written as
 * a GeneralizedTime, the first as a UTCTime (RFC 5280 4.1.2.5) */
#define NOT_BEFORE ((time_t)1700000000)
#define NOT_AFTER  ((time_t)2600000000)

struct cert {
    EVP_PKEY *key;
    X509 *x;
    char *pem;     /* the certificate */
    char *key_pem; /* its key, unencrypted PKCS#8 */
};

static char *bio_string(BIO *b)
{
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *s = malloc((size_t)n + 1);

    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    BIO_free(b);
    return s;
}

static char *key_to_pem(EVP_PKEY *key, const EVP_CIPHER *enc, const char *pass)
{
    BIO *b = BIO_new(BIO_s_mem());

    PEM_write_bio_PKCS8PrivateKey(b, key, enc, (char *)pass, pass ? (int)strlen(pass) : 0, NULL,
                                  NULL);
    return bio_string(b);
}

/* A certificate for CN=cn, O=gpuadmit, signed by issuer (NULL: self-signed), valid from
 * NOT_BEFORE to NOT_AFTER, with a new ECDSA P-256 or RSA-2048 key. */
static void make_cert(struct cert *c, const char *cn, const struct cert *issuer, bool rsa, bool ca)
{
    X509_NAME *name;
    BIO *b;

    c->key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    c->x = X509_new();
    X509_set_version(c->x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c->x), rand());
    ASN1_TIME_set(X509_getm_notBefore(c->x), NOT_BEFORE);
    ASN1_TIME_set(X509_getm_notAfter(c->x), NOT_AFTER);
    X509_set_pubkey(c->x, c->key);
    name = X509_get_subject_name(c->x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"gpuadmit", -1, -1,
                               0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(c->x, issuer ? X509_get_subject_name(issuer->x) : name);
    if (ca) {
        X509V3_CTX v3;
        X509_EXTENSION *bc;

        X509V3_set_ctx(&v3, issuer ? issuer->x : c->x, c->x, NULL, NULL, 0);
        bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
        X509_add_ext(c->x, bc, -1);
        X509_EXTENSION_free(bc);
    }
    X509_sign(c->x, issuer ? issuer->key : c->key, EVP_sha256());
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, c->x);
    c->pem = bio_string(b);
    c->key_pem = key_to_pem(c->key, NULL, NULL);
}

static void cert_free(struct cert *c)
{
    EVP_PKEY_free(c->key);
    X509_free(c->x);
    free(c->pem);
    free(c->key_pem);
}

/* The fixtures: a root CA, an intermediate it signed, a leaf the intermediate signed (the
 * serving chain, ECDSA), and a self-signed RSA certificate. */
static struct cert root, inter, leaf, rsa;

static char *path_of(const char *name)
{
    static char buf[4][512];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

static void put(const char *name, const char *text, size_t len)
{
    harness_put(path_of(name), text, len);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The common name of a certificate, "" when it has none. */
static const char *cn_of(X509 *x)
{
    static char buf[128];

    buf[0] = '\0';
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, sizeof(buf));
    return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* x509_read_file */

static void test_read_file(void)
{
    char *buf = NULL;
    size_t len = 99;
    struct diag d;

    put("f", "0123456789", 10);
    diag_clear(&d);
    CHECK(x509_read_file(path_of("f"), 100, &buf, &len, &d) == 0);
    CHECK(len == 10 && buf != NULL && memcmp(buf, "0123456789", 10) == 0 && buf[10] == '\0');
    CHECK(!d.set);
    x509_buf_free(buf, len);

    /* exactly at the cap is allowed, one byte past it is not */
    diag_clear(&d);
    CHECK(x509_read_file(path_of("f"), 10, &buf, &len, &d) == 0 && len == 10);
    x509_buf_free(buf, len);
    buf = (char *)"left alone";
    diag_clear(&d);
    CHECK(x509_read_file(path_of("f"), 9, &buf, &len, &d) == -1);
    CHECK(buf == NULL);
    CHECK_STR(d.msg, "file is 10 bytes, more than the limit of 9");
    CHECK_STR(d.file, path_of("f"));

    /* an empty file is read as an empty, NUL-terminated buffer: its contents are judged by
     * the caller */
    put("empty", "", 0);
    diag_clear(&d);
    CHECK(x509_read_file(path_of("empty"), 100, &buf, &len, &d) == 0);
    CHECK(len == 0 && buf != NULL && buf[0] == '\0');
    x509_buf_free(buf, len);

    /* a Secret volume's file is a symbolic link: followed */
    CHECK(symlink("f", path_of("link")) == 0);
    diag_clear(&d);
    CHECK(x509_read_file(path_of("link"), 100, &buf, &len, &d) == 0 && len == 10);
    x509_buf_free(buf, len);

    diag_clear(&d);
    CHECK(x509_read_file(path_of("missing"), 100, &buf, &len, &d) == -1);
    CHECK(buf == NULL);
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    CHECK_STR(d.file, path_of("missing"));

    diag_clear(&d);
    CHECK(x509_read_file(dir, 100, &buf, &len, &d) == -1);
    CHECK_STR(d.msg, "not a regular file");
    CHECK_STR(d.file, dir);
}

/* The cap is checked before anything is read: a sparse file far past it costs nothing. */
static void test_read_file_cap_first(void)
{
    char *buf = NULL;
    size_t len = 0;
    struct diag d;
    int fd;

    fd = open(path_of("big"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)1 << 33) == 0);
    close(fd);
    diag_clear(&d);
    CHECK(x509_read_file(path_of("big"), 1024u * 1024u, &buf, &len, &d) == -1);
    CHECK(buf == NULL);
    CHECK_STR(d.msg, "file is 8589934592 bytes, more than the limit of 1048576");
    unlink(path_of("big"));
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
    (void)sig;
    alarmed = 1;
}

/* A FIFO put in a file's place, with no writer: open() without O_NONBLOCK would wait for one
 * for ever. The alarm (no SA_RESTART) turns such a wait into EINTR, so that a regression fails
 * here instead of hanging the run. */
static void test_read_file_fifo(void)
{
    struct sigaction sa, old;
    char *buf = NULL;
    size_t len = 0;
    struct diag d;
    int rc;

    CHECK(mkfifo(path_of("fifo"), 0600) == 0);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    alarmed = 0;
    alarm(5);
    diag_clear(&d);
    rc = x509_read_file(path_of("fifo"), 100, &buf, &len, &d);
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    CHECK(rc == -1);
    CHECK(!alarmed);
    CHECK(buf == NULL);
    CHECK_STR(d.msg, "not a regular file");
    unlink(path_of("fifo"));
}

/* ------------------------------------------------------------------------------------------ */
/* x509_read_chain and x509_ssl_error */

static void test_chain_order(void)
{
    STACK_OF(X509) *sk = NULL;
    char *text;
    size_t n;

    CHECK(x509_read_chain(leaf.pem, strlen(leaf.pem), &sk) == 1);
    CHECK(sk != NULL && sk_X509_num(sk) == 1);
    if (sk != NULL)
        CHECK_STR(cn_of(sk_X509_value(sk, 0)), "leaf");
    sk_X509_pop_free(sk, X509_free);

    /* the leaf first, as written; text before, between and after the blocks is ignored (a
     * bundle made with cat often carries openssl x509 -text output or comments) */
    n = strlen(leaf.pem) + strlen(inter.pem) + strlen(root.pem) + 256;
    text = malloc(n);
    snprintf(text, n,
             "Certificate chain, leaf first\n%s\nsubject=intermediate\n%s# root\n%s\n"
             "trailing words, no newline",
             leaf.pem, inter.pem, root.pem);
    sk = NULL;
    CHECK(x509_read_chain(text, strlen(text), &sk) == 3);
    CHECK(sk != NULL && sk_X509_num(sk) == 3);
    if (sk != NULL && sk_X509_num(sk) == 3) {
        CHECK_STR(cn_of(sk_X509_value(sk, 0)), "leaf");
        CHECK_STR(cn_of(sk_X509_value(sk, 1)), "intermediate");
        CHECK_STR(cn_of(sk_X509_value(sk, 2)), "root");
        /* each is the certificate it was, not merely one with its name */
        CHECK(X509_cmp(sk_X509_value(sk, 0), leaf.x) == 0);
        CHECK(X509_cmp(sk_X509_value(sk, 2), root.x) == 0);
    }
    sk_X509_pop_free(sk, X509_free);
    /* a read that succeeds leaves no error behind for a later x509_ssl_error() */
    CHECK(ERR_peek_error() == 0);

    /* other PEM blocks are passed over too: a key between the certificates (a combined file) */
    snprintf(text, n, "%s%s%s", leaf.pem, leaf.key_pem, inter.pem);
    sk = NULL;
    CHECK(x509_read_chain(text, strlen(text), &sk) == 2);
    if (sk != NULL && sk_X509_num(sk) == 2)
        CHECK_STR(cn_of(sk_X509_value(sk, 1)), "intermediate");
    sk_X509_pop_free(sk, X509_free);

    /* the length is respected: the first certificate's bytes alone hold one */
    snprintf(text, n, "Certificate chain, leaf first\n%s%s", leaf.pem, inter.pem);
    sk = NULL;
    CHECK(x509_read_chain(text, strlen("Certificate chain, leaf first\n") + strlen(leaf.pem),
                          &sk) == 1);
    sk_X509_pop_free(sk, X509_free);
    free(text);
}

static void test_chain_none(void)
{
    static int sentinel;
    STACK_OF(X509) *sk = (STACK_OF(X509) *)(void *)&sentinel; /* the call must set it */
    char err[256];

    CHECK(x509_read_chain("no certificate here\n", 20, &sk) == 0);
    CHECK(sk == NULL);
    /* OpenSSL's reason is kept for the caller's message, then cleared */
    CHECK_CONTAINS(x509_ssl_error(err, sizeof(err)), "no start line");
    CHECK_STR(x509_ssl_error(err, sizeof(err)), "no details");

    sk = (STACK_OF(X509) *)(void *)&sentinel;
    CHECK(x509_read_chain("", 0, &sk) == 0);
    CHECK(sk == NULL);
    ERR_clear_error();

    /* a key is not a certificate */
    CHECK(x509_read_chain(leaf.key_pem, strlen(leaf.key_pem), &sk) == 0);
    CHECK(sk == NULL);
    CHECK_CONTAINS(x509_ssl_error(err, sizeof(err)), "no start line");

    /* past what a BIO can address: refused before anything is read */
    sk = (STACK_OF(X509) *)(void *)&sentinel;
    CHECK(x509_read_chain("x", (size_t)INT32_MAX + 1, &sk) == -1);
    CHECK(sk == NULL);
}

/* A certificate block that does not parse is not text around the certificates: a chain or
 * bundle that holds one is refused whole, as OpenSSL's own chain file reader
 * (SSL_CTX_use_certificate_chain_file) refuses it, instead of being cut short at it. */
static void test_chain_broken_block(void)
{
    STACK_OF(X509) *sk = NULL;
    char err[256], *bad = strdup(inter.pem), *text;
    size_t n = strlen(leaf.pem) + strlen(inter.pem) + strlen(root.pem) + 64;

    bad[strlen("-----BEGIN CERTIFICATE-----\n") + 10] = '!'; /* not base64 */
    text = malloc(n);
    snprintf(text, n, "%s%s%s", leaf.pem, bad, root.pem);
    CHECK(x509_read_chain(text, strlen(text), &sk) == 0);
    CHECK(sk == NULL);
    CHECK_CONTAINS(x509_ssl_error(err, sizeof(err)), "bad base64 decode");
    sk_X509_pop_free(sk, X509_free);
    sk = NULL;

    /* a last block cut off before its end line, as a truncated copy leaves it */
    snprintf(text, n, "%s%.*s", leaf.pem, 200, inter.pem);
    CHECK(x509_read_chain(text, strlen(text), &sk) == 0);
    CHECK(sk == NULL);
    CHECK(strcmp(x509_ssl_error(err, sizeof(err)), "no details") != 0);
    sk_X509_pop_free(sk, X509_free);
    free(text);
    free(bad);
}

static void test_ssl_error(void)
{
    char err[256], small[12];
    const char *s;

    ERR_clear_error();
    s = x509_ssl_error(err, sizeof(err));
    CHECK_STR(s, "no details");
    CHECK(s != err);

    CHECK(x509_read_key("nothing", 7) == NULL);
    s = x509_ssl_error(err, sizeof(err));
    CHECK(s == err);
    CHECK(strncmp(err, "error:", 6) == 0);

    /* a short buffer gets a cut, terminated text */
    CHECK(x509_read_key("nothing", 7) == NULL);
    memset(small, 'x', sizeof(small));
    s = x509_ssl_error(small, sizeof(small));
    CHECK(s == small && strlen(small) == sizeof(small) - 1);
    CHECK(ERR_peek_error() == 0);
}

/* ------------------------------------------------------------------------------------------ */
/* x509_read_key */

static void test_key_types(void)
{
    EVP_PKEY *k;
    BIO *b;
    char *traditional;

    k = x509_read_key(leaf.key_pem, strlen(leaf.key_pem));
    CHECK(k != NULL && EVP_PKEY_base_id(k) == EVP_PKEY_EC);
    CHECK(k != NULL && EVP_PKEY_eq(k, leaf.key) == 1);
    EVP_PKEY_free(k);

    k = x509_read_key(rsa.key_pem, strlen(rsa.key_pem));
    CHECK(k != NULL && EVP_PKEY_base_id(k) == EVP_PKEY_RSA);
    EVP_PKEY_free(k);

    /* the traditional "BEGIN RSA PRIVATE KEY" form, as older tools write it */
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey_traditional(b, rsa.key, NULL, NULL, 0, NULL, NULL);
    traditional = bio_string(b);
    CHECK_CONTAINS(traditional, "BEGIN RSA PRIVATE KEY");
    k = x509_read_key(traditional, strlen(traditional));
    CHECK(k != NULL && EVP_PKEY_eq(k, rsa.key) == 1);
    EVP_PKEY_free(k);
    free(traditional);

    /* a key after a certificate in one file (a "combined" PEM) is found */
    {
        size_t n = strlen(leaf.pem) + strlen(leaf.key_pem) + 1;
        char *both = malloc(n);

        snprintf(both, n, "%s%s", leaf.pem, leaf.key_pem);
        k = x509_read_key(both, strlen(both));
        CHECK(k != NULL && EVP_PKEY_eq(k, leaf.key) == 1);
        EVP_PKEY_free(k);
        free(both);
    }

    CHECK(x509_read_key(leaf.pem, strlen(leaf.pem)) == NULL);
    ERR_clear_error();
    CHECK(x509_read_key("x", (size_t)INT32_MAX + 1) == NULL);
}

/* Set when x509_read_key asked for a passphrase: the cases after it that read encrypted keys
 * in this process are skipped, as they would wait on the terminal. */
static bool prompts;

/* Never prompted for: in a child with no controlling terminal, whose stdin holds the right
 * passphrase (OpenSSL's prompt reads stdin when /dev/tty cannot be opened), the key is still
 * refused. The alarm ends a child that would wait on a prompt. */
static void test_key_not_prompted(void)
{
    char *pem = key_to_pem(leaf.key, EVP_aes_256_cbc(), "secret");
    int fds[2], status = 0;
    pid_t pid;

    CHECK(pipe(fds) == 0);
    CHECK(write(fds[1], "secret\nsecret\n", 14) == 14);
    close(fds[1]);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        EVP_PKEY *k;
        int null = open("/dev/null", O_WRONLY);

        setsid();
        dup2(fds[0], 0);
        clearerr(stdin); /* an end of file the parent met would stick */
        dup2(null, 2);   /* a prompt would be written there */
        alarm(10);
        k = x509_read_key(pem, strlen(pem));
        _exit(k == NULL ? 0 : 1);
    }
    close(fds[0]);
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    prompts = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    free(pem);
}

static void test_key_encrypted(void)
{
    char err[256], *pkcs8, *empty, *traditional;
    EVP_PKEY *k;
    BIO *b;

    if (prompts)
        return;
    pkcs8 = key_to_pem(leaf.key, EVP_aes_256_cbc(), "secret");
    CHECK_CONTAINS(pkcs8, "BEGIN ENCRYPTED PRIVATE KEY");
    CHECK(x509_read_key(pkcs8, strlen(pkcs8)) == NULL);
    CHECK(strcmp(x509_ssl_error(err, sizeof(err)), "no details") != 0);

    /* "Proc-Type: 4,ENCRYPTED" inside the traditional form */
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey_traditional(b, leaf.key, EVP_aes_256_cbc(), (unsigned char *)"secret",
                                         6, NULL, NULL);
    traditional = bio_string(b);
    CHECK_CONTAINS(traditional, "ENCRYPTED");
    CHECK(x509_read_key(traditional, strlen(traditional)) == NULL);
    ERR_clear_error();

    /* an encrypted key is refused even when its passphrase is empty */
    empty = key_to_pem(leaf.key, EVP_aes_256_cbc(), "");
    CHECK_CONTAINS(empty, "BEGIN ENCRYPTED PRIVATE KEY");
    k = x509_read_key(empty, strlen(empty));
    CHECK(k == NULL);
    EVP_PKEY_free(k);
    ERR_clear_error();
    free(empty);
    free(traditional);
    free(pkcs8);
}

/* ------------------------------------------------------------------------------------------ */
/* x509_check_pair */

static void test_pair(void)
{
    struct x509_info info;
    struct diag d;

    diag_clear(&d);
    CHECK(x509_check_pair(leaf.pem, strlen(leaf.pem), leaf.key_pem, strlen(leaf.key_pem), &info,
                          &d) == 0);
    CHECK(!d.set);
    CHECK(info.chain_len == 1);
    CHECK(info.not_before == NOT_BEFORE);
    CHECK(info.not_after == NOT_AFTER);
    CHECK_STR(info.subject, "/O=gpuadmit/CN=leaf");

    diag_clear(&d);
    CHECK(x509_check_pair(rsa.pem, strlen(rsa.pem), rsa.key_pem, strlen(rsa.key_pem), &info, &d) ==
          0);
    CHECK(info.chain_len == 1);
    CHECK_STR(info.subject, "/O=gpuadmit/CN=rsa");
    CHECK(info.not_after == NOT_AFTER);
}

static void test_pair_mismatch(void)
{
    struct x509_info info;
    struct diag d;

    /* another key of the same type */
    diag_clear(&d);
    CHECK(x509_check_pair(leaf.pem, strlen(leaf.pem), inter.key_pem, strlen(inter.key_pem), &info,
                          &d) == -1);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");
    /* the check knows bytes, not files: the caller names them */
    CHECK_STR(d.file, "");

    /* an RSA key for an ECDSA certificate, and the other way round */
    diag_clear(&d);
    CHECK(x509_check_pair(leaf.pem, strlen(leaf.pem), rsa.key_pem, strlen(rsa.key_pem), &info,
                          &d) == -1);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");
    diag_clear(&d);
    CHECK(x509_check_pair(rsa.pem, strlen(rsa.pem), leaf.key_pem, strlen(leaf.key_pem), &info,
                          &d) == -1);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");
    /* nothing is left in OpenSSL's queue for the next caller */
    CHECK(ERR_peek_error() == 0);
}

/* The key belongs to the first certificate of the file, the leaf; the rest is its chain. */
static void test_pair_chain(void)
{
    struct x509_info info;
    struct diag d;
    size_t n = strlen(leaf.pem) + strlen(inter.pem) + strlen(root.pem) + 1;
    char *chain = malloc(n), *upside = malloc(n);

    snprintf(chain, n, "%s%s%s", leaf.pem, inter.pem, root.pem);
    diag_clear(&d);
    CHECK(x509_check_pair(chain, strlen(chain), leaf.key_pem, strlen(leaf.key_pem), &info, &d) ==
          0);
    CHECK(info.chain_len == 3);
    CHECK_STR(info.subject, "/O=gpuadmit/CN=leaf");

    /* the intermediate's key matches a certificate of the file, but not the first */
    diag_clear(&d);
    CHECK(x509_check_pair(chain, strlen(chain), inter.key_pem, strlen(inter.key_pem), &info, &d) ==
          -1);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");

    /* a chain written root first does not serve the leaf's key */
    snprintf(upside, n, "%s%s%s", root.pem, inter.pem, leaf.pem);
    diag_clear(&d);
    CHECK(x509_check_pair(upside, strlen(upside), leaf.key_pem, strlen(leaf.key_pem), &info, &d) ==
          -1);
    CHECK_CONTAINS(d.msg, "key does not match the certificate");
    free(chain);
    free(upside);
}

static void test_pair_refusals(void)
{
    struct x509_info info;
    struct diag d;
    char *enc = key_to_pem(leaf.key, EVP_aes_256_cbc(), "secret");

    diag_clear(&d);
    CHECK(x509_check_pair("garbage", 7, leaf.key_pem, strlen(leaf.key_pem), &info, &d) == -1);
    CHECK_CONTAINS(d.msg, "certificate: ");
    CHECK_CONTAINS(d.msg, "no start line");

    diag_clear(&d);
    CHECK(x509_check_pair(leaf.pem, strlen(leaf.pem), leaf.pem, strlen(leaf.pem), &info, &d) == -1);
    CHECK_CONTAINS(d.msg, "key: no unencrypted PEM private key found");

    diag_clear(&d);
    CHECK(!prompts &&
          x509_check_pair(leaf.pem, strlen(leaf.pem), enc, strlen(enc), &info, &d) == -1);
    CHECK_CONTAINS(d.msg, "key: no unencrypted PEM private key found");

    diag_clear(&d);
    CHECK(x509_check_pair(leaf.pem, strlen(leaf.pem), "", 0, &info, &d) == -1);
    CHECK_CONTAINS(d.msg, "key: no unencrypted PEM private key found");
    CHECK(ERR_peek_error() == 0);
    free(enc);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/gpuadmit-test-x509-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    srand((unsigned)getpid());
    make_cert(&root, "root", NULL, false, true);
    make_cert(&inter, "intermediate", &root, false, true);
    make_cert(&leaf, "leaf", &inter, false, false);
    make_cert(&rsa, "rsa", NULL, true, false);

    RUN(test_read_file);
    RUN(test_read_file_cap_first);
    RUN(test_read_file_fifo);
    RUN(test_chain_order);
    RUN(test_chain_none);
    RUN(test_chain_broken_block);
    RUN(test_ssl_error);
    RUN(test_key_types);
    RUN(test_key_not_prompted);
    RUN(test_key_encrypted);
    RUN(test_pair);
    RUN(test_pair_mismatch);
    RUN(test_pair_chain);
    RUN(test_pair_refusals);

    cert_free(&root);
    cert_free(&inter);
    cert_free(&leaf);
    cert_free(&rsa);
    nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    TEST_MAIN_END("test_x509");
}
