/*
 * kubeconfig.h: where and how the kube client (kube.h) connects to the apiserver: read from a
 * kubeconfig file's current context, or from the in-cluster service account, and checked
 * (certificates parse, a client certificate matches its key, a token file is readable) before
 * anything connects.
 *
 * Ownership: the strings and buffers of a struct kubeconfig_target are its own, freed (secrets
 * wiped) by kubeconfig_target_free(); a token from kubeconfig_token_read() is new, freed with
 * kubeconfig_secret_free(). Nothing here logs a secret.
 */
#ifndef GPUADMIT_KUBECONFIG_H
#define GPUADMIT_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* Read once by kube_start(), read-only afterwards. */
struct kubeconfig_target {
    char *server;        /* "https://host:port[/prefix]", no trailing '/' */
    char *ca_path;       /* CA bundle file, or */
    unsigned char *ca;   /* inline PEM CA bundle; neither: the system's CAs */
    size_t ca_len;       /**/
    bool insecure;       /* insecure-skip-tls-verify */
    char *token;         /* a static bearer token (wiped), or */
    char *token_path;    /* a file holding it, re-read as it rotates (wins over token) */
    char *cert_path;     /* client certificate: files, or */
    char *key_path;      /**/
    unsigned char *cert; /* inline PEM */
    size_t cert_len;     /**/
    unsigned char *key;  /* inline PEM (wiped) */
    size_t key_len;      /**/
    const char *source;  /* "in-cluster" or the kubeconfig path: borrowed from the caller */
};

/* Fills t (zeroed by the caller) from the current context of the kubeconfig at path (borrowed:
 * t->source points to it). -1 with d filled (file:line:column where the file is at fault);
 * t may then hold part of the configuration: free it all the same. */
int kubeconfig_load(const char *path, struct kubeconfig_target *t, struct diag *d);

/* True when this process runs in a pod (KUBERNETES_SERVICE_HOST and _PORT are set). */
bool kubeconfig_in_cluster(void);

/* Fills t (zeroed by the caller) from the in-cluster environment and service account files.
 * -1 with d filled; free t all the same. */
int kubeconfig_load_in_cluster(struct kubeconfig_target *t, struct diag *d);

/* Frees what t holds, wiping the secrets, and zeroes it. */
void kubeconfig_target_free(struct kubeconfig_target *t);

/* A bearer token file's content without surrounding whitespace; an empty token and control
 * characters (a newline inside would split the header) are refused. New (wiped on free). */
char *kubeconfig_token_read(const char *path, struct diag *d);

/* Frees a string that may hold a secret, wiping it first; NULL is fine. */
void kubeconfig_secret_free(char *s);

#endif
