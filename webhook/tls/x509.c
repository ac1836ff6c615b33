/*
 * x509.c: OpenSSL's reading of certificates and keys (see x509.h). Key bytes are wiped before
 * release.
 */
#include "x509.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/asn1.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int x509_read_file(const char *path, size_t max, char **out, size_t *len, struct diag *d)
{
    int fd = -1, rc = -1;
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    ssize_t n;

    *out = NULL;
    /* O_NONBLOCK: a FIFO put in the file's place must not hang the caller in open() */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) < 0) {
        diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        diag_set(d, path, 0, 0, "not a regular file");
        goto out;
    }
    if ((size_t)st.st_size > max) {
        diag_set(d, path, 0, 0, "file is %lld bytes, more than the limit of %zu",
                 (long long)st.st_size, max);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        diag_set(d, path, 0, 0, "out of memory");
        goto out;
    }
    while (got < (size_t)st.st_size) {
        n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            diag_set(d, path, 0, 0, "read failed: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break; /* shrank while reading: take what is there, the checks will judge it */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
    rc = 0;
out:
    if (buf != NULL)
        x509_buf_free(buf, (size_t)st.st_size);
    if (fd >= 0)
        close(fd);
    return rc;
}

void x509_buf_free(char *buf, size_t len)
{
    if (buf == NULL)
        return;
    OPENSSL_cleanse(buf, len);
    free(buf);
}

const char *x509_ssl_error(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        return "no details";
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

int x509_read_chain(const void *pem, size_t len, STACK_OF(X509) * *out)
{
    BIO *bio;
    X509 *x;
    STACK_OF(X509) *sk = NULL;
    unsigned long e;
    int n;

    *out = NULL;
    ERR_clear_error();
    if (len > (size_t)INT32_MAX || (bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
        return -1;
    if ((sk = sk_X509_new_null()) == NULL)
        goto oom;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
        if (!sk_X509_push(sk, x)) {
            X509_free(x);
            goto oom;
        }
    BIO_free(bio);
    /* the text ends with "no start line" (as SSL_CTX_use_certificate_chain_file judges it);
     * any other error is a certificate block that does not parse, and stopping there would
     * silently drop it and every certificate after it */
    e = ERR_peek_last_error();
    n = sk_X509_num(sk);
    if (n == 0 || ERR_GET_LIB(e) != ERR_LIB_PEM || ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
        sk_X509_pop_free(sk, X509_free);
        return 0; /* the error says why */
    }
    ERR_clear_error();
    *out = sk;
    return n;
oom:
    BIO_free(bio);
    sk_X509_pop_free(sk, X509_free);
    return -1;
}

/* The passphrase callback: there is none to give. OpenSSL's default would prompt on the
 * terminal; an empty passphrase (u = "") would still open a key encrypted with one. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

EVP_PKEY *x509_read_key(const void *pem, size_t len)
{
    BIO *bio;
    EVP_PKEY *key;

    ERR_clear_error();
    if (len > (size_t)INT32_MAX || (bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
        return NULL;
    key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    BIO_free(bio);
    return key;
}

static time_t asn1_to_time(const ASN1_TIME *t)
{
    struct tm tm;

    if (ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return timegm(&tm);
}

int x509_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                    struct x509_info *info, struct diag *d)
{
    STACK_OF(X509) *chain = NULL;
    X509 *leaf;
    EVP_PKEY *key = NULL;
    char err[256];
    int rc = -1, n;

    memset(info, 0, sizeof(*info));
    if ((n = x509_read_chain(cert_pem, cert_len, &chain)) <= 0) {
        diag_set(d, NULL, 0, 0, "certificate: %s (%s)",
                 n < 0 ? "out of memory" : "cannot read the PEM certificates",
                 x509_ssl_error(err, sizeof(err)));
        goto out;
    }
    leaf = sk_X509_value(chain, 0);
    info->chain_len = (unsigned)n;
    if ((key = x509_read_key(key_pem, key_len)) == NULL) {
        diag_set(d, NULL, 0, 0, "key: no unencrypted PEM private key found (%s)",
                 x509_ssl_error(err, sizeof(err)));
        goto out;
    }
    if (X509_check_private_key(leaf, key) != 1) {
        diag_set(d, NULL, 0, 0, "key does not match the certificate (%s)",
                 x509_ssl_error(err, sizeof(err)));
        goto out;
    }
    info->not_before = asn1_to_time(X509_get0_notBefore(leaf));
    info->not_after = asn1_to_time(X509_get0_notAfter(leaf));
    X509_NAME_oneline(X509_get_subject_name(leaf), info->subject, sizeof(info->subject));
    rc = 0;
out:
    ERR_clear_error();
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    return rc;
}
