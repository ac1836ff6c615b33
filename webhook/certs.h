/*
 * certs.h: certificate checks with OpenSSL: reading PEM files, matching a key to its
 * certificate, expiry. The serving side hands the checked bytes to GnuTLS (creds.h).
 */
#ifndef GPUADMIT_CERTS_H
#define GPUADMIT_CERTS_H

#include <stddef.h>
#include <time.h>

#include "diag.h"

struct certs_info {
    time_t not_before; /* of the leaf certificate */
    time_t not_after;
    unsigned chain_len; /* certificates in the PEM file */
    char subject[256];  /* of the leaf, one line */
};

/* Reads a whole file of at most max bytes into a new NUL-terminated buffer (free with
 * certs_buf_free(), which wipes it: it may hold a key). */
int certs_read_file(const char *path, size_t max, char **out, size_t *len, struct diag *d);
void certs_buf_free(char *buf, size_t len);

/* Checks that cert_pem holds one or more certificates, that key_pem holds one unencrypted
 * private key, and that the key belongs to the first certificate. Fills info. */
int certs_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                     struct certs_info *info, struct diag *d);

/* The last OpenSSL error as text in buf ("no details" when there is none); clears the
 * thread's error queue. Returns buf or a static string. */
const char *certs_ssl_error(char *buf, size_t len);

#endif
