/*
 * x509.h: certificates with OpenSSL: reading PEM files and certificate chains, matching a key
 * to its certificate, expiry. The serving side hands the checked bytes to GnuTLS (creds.h).
 */
#ifndef GPUADMIT_X509_H
#define GPUADMIT_X509_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <time.h>

#include "diag.h"

struct x509_info {
    time_t not_before; /* of the leaf certificate */
    time_t not_after;
    unsigned chain_len; /* certificates in the PEM file */
    char subject[256];  /* of the leaf, one line */
};

/* Reads a whole file of at most max bytes into a new NUL-terminated buffer (free with
 * x509_buf_free(), which wipes it: it may hold a key). */
int x509_read_file(const char *path, size_t max, char **out, size_t *len, struct diag *d);
void x509_buf_free(char *buf, size_t len);

/* Checks that cert_pem holds one or more certificates, that key_pem holds one unencrypted
 * private key, and that the key belongs to the first certificate. Fills info. */
int x509_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                    struct x509_info *info, struct diag *d);

/* The certificates of a PEM text, in order, as a new stack in *out (free with
 * sk_X509_pop_free(*out, X509_free)). Returns how many: 0 (none, or a certificate block that
 * does not parse) leaves *out NULL and OpenSSL's error for x509_ssl_error(); -1 is out of
 * memory (or a text past INT_MAX bytes). Text and other PEM blocks between and after the
 * certificates are ignored, as OpenSSL's PEM reader ignores them. */
int x509_read_chain(const void *pem, size_t len, STACK_OF(X509) * *out);

/* The one unencrypted private key of a PEM text (free with EVP_PKEY_free()), or NULL with
 * OpenSSL's error kept for x509_ssl_error(). An encrypted key is refused, never prompted for. */
EVP_PKEY *x509_read_key(const void *pem, size_t len);

/* The last OpenSSL error as text in buf ("no details" when there is none); clears the
 * thread's error queue. Returns buf or a static string. */
const char *x509_ssl_error(char *buf, size_t len);

#endif
