/*
 * certs.c: OpenSSL certificate checks (see certs.h). Key bytes are wiped before release.
 */
#include "certs.h"

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

int certs_read_file(const char *path, size_t max, char **out, size_t *len, struct diag *d)
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
        certs_buf_free(buf, (size_t)st.st_size);
    if (fd >= 0)
        close(fd);
    return rc;
}

void certs_buf_free(char *buf, size_t len)
{
    if (buf == NULL)
        return;
    OPENSSL_cleanse(buf, len);
    free(buf);
}

const char *certs_ssl_error(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        return "no details";
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static time_t asn1_to_time(const ASN1_TIME *t)
{
    struct tm tm;

    if (ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return timegm(&tm);
}

int certs_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                     struct certs_info *info, struct diag *d)
{
    BIO *bio = NULL;
    X509 *leaf = NULL, *extra = NULL;
    EVP_PKEY *key = NULL;
    char err[256];
    int rc = -1;

    memset(info, 0, sizeof(*info));
    ERR_clear_error();
    bio = BIO_new_mem_buf(cert_pem, (int)cert_len);
    if (bio == NULL || (leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL)) == NULL) {
        diag_set(d, NULL, 0, 0, "certificate: no PEM certificate found (%s)",
                 certs_ssl_error(err, sizeof(err)));
        goto out;
    }
    info->chain_len = 1;
    while ((extra = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        info->chain_len++;
        X509_free(extra);
    }
    ERR_clear_error(); /* the loop ends on "no start line" */
    BIO_free(bio);
    bio = BIO_new_mem_buf(key_pem, (int)key_len);
    /* an empty passphrase callback refuses encrypted keys instead of prompting on a tty */
    if (bio == NULL || (key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"")) == NULL) {
        diag_set(d, NULL, 0, 0, "key: no unencrypted PEM private key found (%s)",
                 certs_ssl_error(err, sizeof(err)));
        goto out;
    }
    if (X509_check_private_key(leaf, key) != 1) {
        diag_set(d, NULL, 0, 0, "key does not match the certificate (%s)",
                 certs_ssl_error(err, sizeof(err)));
        goto out;
    }
    info->not_before = asn1_to_time(X509_get0_notBefore(leaf));
    info->not_after = asn1_to_time(X509_get0_notAfter(leaf));
    X509_NAME_oneline(X509_get_subject_name(leaf), info->subject, sizeof(info->subject));
    rc = 0;
out:
    ERR_clear_error();
    BIO_free(bio);
    X509_free(leaf);
    EVP_PKEY_free(key);
    return rc;
}
