/*
 * creds.h: the serving certificate and key as GnuTLS offers them in handshakes, reloaded when
 * their files change.
 *
 * A credential set is immutable once published. creds_poll() builds a new set from the files,
 * checks it (x509.h) and swaps it in; a broken or mismatched pair is refused with a log line
 * and the old set stays. Replaced sets are kept for CERT_RETIRE_S so that a handshake that
 * picked one up just before the swap can finish with it.
 */
#ifndef GPUADMIT_CREDS_H
#define GPUADMIT_CREDS_H

#include <gnutls/abstract.h>
#include <stdbool.h>
#include <time.h>

#include "diag.h"

struct creds;

/* New store with the pair loaded (free with creds_free()); NULL with d filled when the pair
 * cannot be used. */
struct creds *creds_new(const char *cert_path, const char *key_path, struct diag *d);
void creds_free(struct creds *c);

/* Reloads when either file changed since the last attempt (always, when force). Returns 1 when
 * a new pair is now served, 0 when nothing changed, -1 when a changed pair was refused. */
int creds_poll(struct creds *c, bool force);

/* For the GnuTLS certificate callback: the current chain and key, borrowed; valid for at least
 * CERT_RETIRE_S after a later swap. Thread-safe. */
void creds_current(struct creds *c, gnutls_pcert_st **chain, unsigned *chain_len,
                   gnutls_privkey_t *key);

/* notAfter of the served certificate. */
time_t creds_not_after(struct creds *c);

/* ---- client certificates (--client-ca, --client-name) ----
 *
 * The CA bundle is reloaded by creds_poll() like the pair: a changed file that cannot be used
 * (unreadable, no certificate, a certificate that is not a CA) is refused with a log line and
 * the previous bundle stays. */

/* Verifies clients against the CA certificates in path from now on; names (n of them, may be 0)
 * are the only client identities accepted (the leaf's subject CN or a DNS name), when any.
 * -1 with d filled when the bundle cannot be used. Call before serving. */
int creds_set_client_ca(struct creds *c, const char *path, const char *const *names, size_t n,
                        struct diag *d);
bool creds_client_ca_enabled(const struct creds *c);
/* Goes up by one with every bundle put in force. Thread-safe. */
unsigned long creds_client_ca_generation(struct creds *c);

/* 0 when the session's peer presented a chain that verifies, now, against the client CA bundle
 * for TLS client authentication, with an accepted name, and *not_after set to the earliest
 * notAfter of the chain presented; -1 with why (a sentence) filled otherwise. Thread-safe. */
int creds_verify_client(struct creds *c, gnutls_session_t session, time_t *not_after, char *why,
                        size_t why_len);

#endif
