/*
 * kubeconfig.c: where and how to connect to the apiserver (see kubeconfig.h): the current
 * context of a kubeconfig file, or the in-cluster service account; bearer token files; the
 * certificates they name, checked before anything connects.
 *
 * The kubeconfig is read into the bounded YAML tree (yamltree.h), with anchors, aliases and
 * custom tags refused (no billion laughs), nesting, node count and file size capped; the
 * current context then picks a cluster and a user from it. Keys whose meaning would be
 * silently lost (credential plugins, proxies, impersonation) are refused, not ignored.
 *
 * Secrets: every scalar of the tree, the static token, inline keys and decoded base64 are wiped
 * when released, and never logged.
 */
#include "kubeconfig.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls/x509.h"
#include "bounds.h"
#include "parse.h"
#include "yamltree.h"

/* Where the kubelet mounts the service account's token and CA (a test build may move it). */
#ifndef KUBE_SA_DIR
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#endif
#define KUBE_SA_TOKEN KUBE_SA_DIR "/token"
#define KUBE_SA_CA    KUBE_SA_DIR "/ca.crt"

void kubeconfig_secret_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s);
}

static void blob_free(unsigned char *p, size_t len)
{
    if (p == NULL)
        return;
    OPENSSL_cleanse(p, len);
    free(p);
}

/* ------------------------------------------------------------------------------------------ */
/* The target, certificates and tokens */

void kubeconfig_target_free(struct kubeconfig_target *t)
{
    free(t->server);
    free(t->ca_path);
    blob_free(t->ca, t->ca_len);
    kubeconfig_secret_free(t->token);
    free(t->token_path);
    free(t->cert_path);
    free(t->key_path);
    blob_free(t->cert, t->cert_len);
    blob_free(t->key, t->key_len);
    memset(t, 0, sizeof(*t));
}

/* Decodes standard base64 (whitespace ignored) into a new buffer. -1 when it is not base64. */
static int base64_decode(const char *in, unsigned char **out, size_t *out_len)
{
    size_t n = strlen(in), m = 0, pad = 0, i;
    char *clean = malloc(n + 1);
    unsigned char *dec = NULL;
    int got, rc = -1;

    *out = NULL;
    if (clean == NULL)
        goto out;
    for (i = 0; i < n; i++)
        if (in[i] != ' ' && in[i] != '\n' && in[i] != '\r' && in[i] != '\t')
            clean[m++] = in[i];
    clean[m] = '\0';
    if (m == 0 || m % 4 != 0 || m > (size_t)INT32_MAX)
        goto out;
    for (i = m; i > 0 && clean[i - 1] == '=' && pad < 2; i--)
        pad++;
    dec = malloc(m / 4 * 3 + 1);
    if (dec == NULL)
        goto out;
    /* EVP_DecodeBlock refuses bad characters, but counts padding as zero bytes */
    got = EVP_DecodeBlock(dec, (const unsigned char *)clean, (int)m);
    if (got < 0 || (size_t)got < pad)
        goto out;
    *out_len = (size_t)got - pad;
    dec[*out_len] = '\0';
    *out = dec;
    dec = NULL;
    rc = 0;
out:
    if (clean != NULL) {
        OPENSSL_cleanse(clean, m);
        free(clean);
    }
    blob_free(dec, m / 4 * 3 + 1);
    return rc;
}

/* Checks that pem holds at least one PEM certificate. */
static int check_ca_pem(const unsigned char *pem, size_t len, const char *file, const char *what,
                        struct diag *d)
{
    STACK_OF(X509) *chain = NULL;
    int n = x509_read_chain(pem, len, &chain);
    char err[256];

    sk_X509_pop_free(chain, X509_free);
    if (n < 0)
        diag_set(d, file, 0, 0, "%s: out of memory", what);
    else if (n == 0)
        diag_set(d, file, 0, 0, "%s: cannot read the PEM certificates (%s)", what,
                 x509_ssl_error(err, sizeof(err)));
    ERR_clear_error();
    return n > 0 ? 0 : -1;
}

static int check_ca_file(const char *path, struct diag *d)
{
    char *pem = NULL;
    size_t len = 0;
    int rc = -1;

    if (x509_read_file(path, CERT_FILE_MAX_BYTES, &pem, &len, d) < 0)
        goto out;
    rc = check_ca_pem((const unsigned char *)pem, len, path, "the CA bundle", d);
out:
    x509_buf_free(pem, len);
    return rc;
}

/* Checks a client certificate and key (files or inline) as a matching pair. */
static int check_client_pair(const struct kubeconfig_target *t, struct diag *d)
{
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    struct x509_info info;
    struct diag pair;
    int rc = -1;

    if (t->cert_path != NULL &&
        x509_read_file(t->cert_path, CERT_FILE_MAX_BYTES, &cert, &cert_len, d) < 0)
        goto out;
    if (t->key_path != NULL &&
        x509_read_file(t->key_path, CERT_FILE_MAX_BYTES, &key, &key_len, d) < 0)
        goto out;
    diag_clear(&pair);
    if (x509_check_pair(cert ? cert : (const char *)t->cert, cert ? cert_len : t->cert_len,
                        key ? key : (const char *)t->key, key ? key_len : t->key_len, &info,
                        &pair) < 0) {
        diag_set(d, t->source, 0, 0, "client certificate: %s", pair.msg);
        goto out;
    }
    rc = 0;
out:
    x509_buf_free(cert, cert_len);
    x509_buf_free(key, key_len);
    return rc;
}

/* A bearer token goes into the Authorization header as it is: a space would end it there, a
 * control character (a newline above all) split the header. */
static bool token_chars_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x21 || s[i] == 0x7f)
            return false;
    return true;
}

char *kubeconfig_token_read(const char *path, struct diag *d)
{
    char *raw = NULL, *tok = NULL;
    size_t len = 0, a = 0, b;

    if (x509_read_file(path, KUBE_TOKEN_MAX_BYTES, &raw, &len, d) < 0)
        goto out;
    b = len;
    while (a < b && strchr(" \t\r\n", raw[a]) != NULL)
        a++;
    while (b > a && strchr(" \t\r\n", raw[b - 1]) != NULL)
        b--;
    if (a == b) {
        diag_set(d, path, 0, 0, "the token file is empty");
        goto out;
    }
    if (!token_chars_ok(raw + a, b - a)) {
        diag_set(d, path, 0, 0, "the token holds a space or control character");
        goto out;
    }
    tok = strndup(raw + a, b - a);
    if (tok == NULL)
        diag_set(d, path, 0, 0, "out of memory");
out:
    x509_buf_free(raw, len);
    return tok;
}

/* ------------------------------------------------------------------------------------------ */
/* The kubeconfig: the bounded YAML tree (yamltree.h), then the current context */

static bool core_tag(const char *tag)
{
    return tag == NULL || strncmp(tag, "tag:yaml.org,2002:", 18) == 0;
}

static int yerr(const char *path, const struct yamltree_node *n, struct diag *d, const char *msg)
{
    diag_set(d, path, n->line, n->column, "%s", msg);
    return -1;
}

/* The checks on a node that come before it is counted. */
static int node_checks(const char *path, const struct yamltree_node *n, struct diag *d)
{
    if (n->anchored || !core_tag(n->tag))
        return yerr(path, n, d, "YAML anchors and tags are not supported in a kubeconfig");
    if (n->kind == YAMLTREE_SCALAR && memchr(n->s, '\0', n->len) != NULL)
        return yerr(path, n, d, "a NUL character is not allowed in a value");
    return 0;
}

/* Why the reader stopped; a node a cap refused is checked first, as it was before its count. */
static int read_failed(const char *path, const struct yamltree_error *e, struct diag *d)
{
    if (e->at != NULL && node_checks(path, e->at, d) < 0)
        return -1;
    switch (e->code) {
    case YAMLTREE_E_ALIAS:
        diag_set(d, path, e->line, e->column, "YAML aliases are not supported in a kubeconfig");
        break;
    case YAMLTREE_E_DEPTH: diag_set(d, path, e->line, e->column, "nested too deeply"); break;
    case YAMLTREE_E_NODES:
        diag_set(d, path, e->line, e->column, "more than %u YAML nodes", KUBE_YAML_NODES_MAX);
        break;
    case YAMLTREE_E_SYNTAX:
        diag_set(d, path, e->line, e->column, "YAML: %s", e->problem ? e->problem : "syntax error");
        break;
    default: diag_set(d, path, e->line, e->column, "out of memory"); break;
    }
    return -1;
}

/* Reads a kubeconfig file into t (its scalars wiped when freed): one document, no anchors,
 * aliases or other than core tags. The root, or NULL with d filled; free t either way. */
static const struct yamltree_node *yload_file(const char *path, struct yamltree *t, struct diag *d)
{
    static const struct yamltree_limits lim = {KUBE_YAML_DEPTH_MAX, KUBE_YAML_NODES_MAX, 0};
    const struct yamltree_node *root = NULL;
    char *text = NULL;
    size_t len = 0;
    int read;

    memset(t, 0, sizeof(*t));
    if (x509_read_file(path, KUBE_KUBECONFIG_MAX_BYTES, &text, &len, d) < 0)
        return NULL;
    read = yamltree_read(text, len, &lim, YAMLTREE_WIPE, t);
    x509_buf_free(text, len);
    /* in the order of the text, so that the first error is the one met first */
    for (size_t i = 0; i < t->n_nodes; i++) {
        const struct yamltree_node *n = t->nodes[i];

        if (node_checks(path, n, d) < 0)
            return NULL;
        if (n->parent == NULL && root != NULL) {
            yerr(path, n, d, "more than one document");
            return NULL;
        }
        if (n->parent == NULL)
            root = n;
    }
    if (read < 0) {
        read_failed(path, &t->err, d);
        return NULL;
    }
    if (root == NULL)
        diag_set(d, path, 0, 0, "the kubeconfig is empty");
    return root;
}

/* The reading of one kubeconfig. */
struct kcfg {
    const char *file;
    char *dir; /* relative paths in the file are relative to its directory */
    struct diag *d;
};

static int kerr(struct kcfg *K, const struct yamltree_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int kerr(struct kcfg *K, const struct yamltree_node *n, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_set(K->d, K->file, n ? n->line : 0, n ? n->column : 0, "%s", msg);
    return -1;
}

static bool is_null(const struct yamltree_node *n)
{
    return n == NULL ||
           (n->kind == YAMLTREE_SCALAR && n->plain && yamltree_resolve(n->s) == YAMLTREE_NULL);
}

/* Checks that n is a mapping with distinct scalar keys. */
static int check_map(struct kcfg *K, const struct yamltree_node *n, const char *what)
{
    if (n == NULL || n->kind != YAMLTREE_MAP)
        return kerr(K, n, "%s must be a mapping", what);
    for (size_t i = 0; i < n->n; i += 2) {
        if (n->kids[i]->kind != YAMLTREE_SCALAR)
            return kerr(K, n->kids[i], "%s: keys must be strings", what);
        for (size_t j = 0; j < i; j += 2)
            if (strcmp(n->kids[i]->s, n->kids[j]->s) == 0)
                return kerr(K, n->kids[i], "%s: duplicate key \"%.64s\"", what, n->kids[i]->s);
    }
    return 0;
}

/* The value of key in a checked mapping; NULL when absent or null. */
static const struct yamltree_node *get(const struct yamltree_node *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (strcmp(map->kids[i]->s, key) == 0)
            return is_null(map->kids[i + 1]) ? NULL : map->kids[i + 1];
    return NULL;
}

/* A string value, or NULL when absent; -1 when not a scalar. */
static int get_str(struct kcfg *K, const struct yamltree_node *map, const char *key,
                   const char *what, const char **out)
{
    const struct yamltree_node *v = get(map, key);

    *out = NULL;
    if (v == NULL)
        return 0;
    if (v->kind != YAMLTREE_SCALAR)
        return kerr(K, v, "%s.%s must be a string", what, key);
    *out = v->s;
    return 0;
}

static int get_bool(struct kcfg *K, const struct yamltree_node *map, const char *key,
                    const char *what, bool *out)
{
    const struct yamltree_node *v = get(map, key);

    *out = false;
    if (v == NULL)
        return 0;
    if (v->kind == YAMLTREE_SCALAR && v->plain && yamltree_resolve(v->s) == YAMLTREE_BOOL) {
        *out = v->s[0] == 't' || v->s[0] == 'T';
        return 0;
    }
    return kerr(K, v, "%s.%s must be true or false", what, key);
}

/* In root[list] (a sequence of {name, item: {...}}), the mapping `item` of the entry called
 * name. NULL (recorded) when absent or malformed. */
static const struct yamltree_node *find_named(struct kcfg *K, const struct yamltree_node *root,
                                              const char *list, const char *item, const char *name)
{
    const struct yamltree_node *seq = get(root, list), *found = NULL, *e, *v;
    const char *n;

    if (seq == NULL || seq->kind != YAMLTREE_SEQ) {
        kerr(K, seq, "%s must be a sequence holding %s \"%.64s\"", list, item, name);
        return NULL;
    }
    for (size_t i = 0; i < seq->n; i++) {
        e = seq->kids[i];
        if (check_map(K, e, list) < 0 || get_str(K, e, "name", list, &n) < 0)
            return NULL;
        if (n == NULL || strcmp(n, name) != 0)
            continue;
        if (found != NULL) {
            kerr(K, e, "two %s are called \"%.64s\"", list, name);
            return NULL;
        }
        v = get(e, item);
        if (check_map(K, v, item) < 0)
            return NULL;
        found = v;
    }
    if (found == NULL)
        kerr(K, seq, "no %s called \"%.64s\" in %s", item, name, list);
    return found;
}

/* A path from the file, made absolute against the file's directory. */
static char *resolve(struct kcfg *K, const char *path)
{
    char *p = NULL;

    if (path[0] == '/')
        p = strdup(path);
    else if (asprintf(&p, "%s/%s", K->dir, path) < 0)
        p = NULL;
    if (p == NULL)
        kerr(K, NULL, "out of memory");
    return p;
}

/* Refuses keys whose meaning we would silently get wrong by ignoring them. */
static int refuse_keys(struct kcfg *K, const struct yamltree_node *map, const char *what,
                       const char *const *keys, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        const struct yamltree_node *v = get(map, keys[i]);
        if (v != NULL)
            return kerr(K, v, "%s.%s is not supported: %s", what, keys[i], why);
    }
    return 0;
}

/* One of a path key and a base64 data key: a resolved path, or decoded bytes. */
static int path_or_data(struct kcfg *K, const struct yamltree_node *map, const char *what,
                        const char *path_key, const char *data_key, char **path,
                        unsigned char **data, size_t *len)
{
    const char *p, *b64;

    if (get_str(K, map, path_key, what, &p) < 0 || get_str(K, map, data_key, what, &b64) < 0)
        return -1;
    if (p != NULL && b64 != NULL)
        return kerr(K, get(map, data_key), "%s: %s and %s are both set; keep one", what, path_key,
                    data_key);
    if (p != NULL && (*path = resolve(K, p)) == NULL)
        return -1;
    if (b64 != NULL && base64_decode(b64, data, len) < 0)
        return kerr(K, get(map, data_key), "%s.%s is not valid base64", what, data_key);
    return 0;
}

static int read_cluster(struct kcfg *K, const struct yamltree_node *c, struct kubeconfig_target *t)
{
    static const char *const unsupported[] = {"proxy-url", "tls-server-name"};
    const char *server;
    size_t len;

    if (refuse_keys(K, c, "cluster", unsupported, 2, "connect to the server directly") < 0 ||
        get_str(K, c, "server", "cluster", &server) < 0 ||
        get_bool(K, c, "insecure-skip-tls-verify", "cluster", &t->insecure) < 0 ||
        path_or_data(K, c, "cluster", "certificate-authority", "certificate-authority-data",
                     &t->ca_path, &t->ca, &t->ca_len) < 0)
        return -1;
    if (server == NULL)
        return kerr(K, c, "cluster.server is missing");
    if (strncmp(server, "https://", 8) != 0 || server[8] == '\0' || server[8] == '/')
        return kerr(K, get(c, "server"), "cluster.server must be an https:// URL, not \"%.64s\"",
                    server);
    if (strpbrk(server, " \t\r\n?#") != NULL)
        return kerr(K, get(c, "server"), "cluster.server must not hold spaces, '?' or '#'");
    if (t->insecure && (t->ca_path != NULL || t->ca != NULL))
        return kerr(K, get(c, "insecure-skip-tls-verify"),
                    "cluster: insecure-skip-tls-verify together with a certificate authority");
    t->server = strdup(server);
    if (t->server == NULL)
        return kerr(K, NULL, "out of memory");
    len = strlen(t->server);
    while (len > 8 && t->server[len - 1] == '/')
        t->server[--len] = '\0';
    if (t->ca_path != NULL)
        return check_ca_file(t->ca_path, K->d);
    if (t->ca != NULL)
        return check_ca_pem(t->ca, t->ca_len, K->file, "cluster.certificate-authority-data", K->d);
    return 0;
}

static int read_user(struct kcfg *K, const struct yamltree_node *u, struct kubeconfig_target *t)
{
    static const char *const plugins[] = {"exec", "auth-provider"};
    static const char *const other[] = {"username", "password",  "as",
                                        "as-uid",   "as-groups", "as-user-extra"};
    const char *token, *token_file;

    if (refuse_keys(K, u, "user", plugins, 2,
                    "credential plugins cannot run here; use token, tokenFile or a client "
                    "certificate (e.g. a ServiceAccount token)") < 0 ||
        refuse_keys(K, u, "user", other, 6, "use token, tokenFile or a client certificate") < 0 ||
        get_str(K, u, "token", "user", &token) < 0 ||
        get_str(K, u, "tokenFile", "user", &token_file) < 0 ||
        path_or_data(K, u, "user", "client-certificate", "client-certificate-data", &t->cert_path,
                     &t->cert, &t->cert_len) < 0 ||
        path_or_data(K, u, "user", "client-key", "client-key-data", &t->key_path, &t->key,
                     &t->key_len) < 0)
        return -1;
    if ((t->cert_path || t->cert) != (t->key_path || t->key))
        return kerr(K, u, "user: a client certificate needs its key, and a key its certificate");
    if (token != NULL && !token_chars_ok(token, strlen(token)))
        return kerr(K, get(u, "token"), "user.token holds a space or control character");
    if (token != NULL && (t->token = strdup(token)) == NULL)
        return kerr(K, NULL, "out of memory");
    if (token_file != NULL && (t->token_path = resolve(K, token_file)) == NULL)
        return -1;
    return 0;
}

/* The current context's server and credentials from a kubeconfig file. */
int kubeconfig_load(const char *path, struct kubeconfig_target *t, struct diag *d)
{
    struct kcfg K = {.file = path, .d = d};
    struct yamltree tree = {0};
    const struct yamltree_node *root = NULL, *ctx, *cluster, *user = NULL;
    const char *current, *cluster_name, *user_name, *slash = strrchr(path, '/');
    char *tok = NULL;
    int rc = -1;

    t->source = path;
    K.dir = slash == NULL   ? strdup(".")
            : slash == path ? strdup("/")
                            : strndup(path, (size_t)(slash - path));
    if (K.dir == NULL) {
        diag_set(d, path, 0, 0, "out of memory");
        goto out;
    }
    root = yload_file(path, &tree, d);
    if (root == NULL || check_map(&K, root, "the kubeconfig") < 0 ||
        get_str(&K, root, "current-context", "kubeconfig", &current) < 0)
        goto out;
    if (current == NULL || current[0] == '\0') {
        kerr(&K, root, "no current-context");
        goto out;
    }
    if ((ctx = find_named(&K, root, "contexts", "context", current)) == NULL ||
        get_str(&K, ctx, "cluster", "context", &cluster_name) < 0 ||
        get_str(&K, ctx, "user", "context", &user_name) < 0)
        goto out;
    if (cluster_name == NULL || cluster_name[0] == '\0') {
        kerr(&K, ctx, "context \"%.64s\" names no cluster", current);
        goto out;
    }
    if ((cluster = find_named(&K, root, "clusters", "cluster", cluster_name)) == NULL ||
        read_cluster(&K, cluster, t) < 0)
        goto out;
    /* a context without a user connects anonymously, as kubectl does */
    if (user_name != NULL && user_name[0] != '\0' &&
        ((user = find_named(&K, root, "users", "user", user_name)) == NULL ||
         read_user(&K, user, t) < 0))
        goto out;
    if ((t->cert_path || t->cert) && check_client_pair(t, d) < 0)
        goto out;
    if (t->token_path != NULL && (tok = kubeconfig_token_read(t->token_path, d)) == NULL)
        goto out;
    rc = 0;
out:
    kubeconfig_secret_free(tok);
    yamltree_free(&tree);
    free(K.dir);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* In-cluster configuration */

bool kubeconfig_in_cluster(void)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");

    return host != NULL && host[0] != '\0' && port != NULL && port[0] != '\0';
}

int kubeconfig_load_in_cluster(struct kubeconfig_target *t, struct diag *d)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    char *tok = NULL, hostbuf[3 * 200 + 1]; /* every byte may become "%25" */
    uint64_t p;
    size_t i, j = 0;
    int rc = -1;

    t->source = "in-cluster";
    if (!kubeconfig_in_cluster()) {
        diag_set(d, NULL, 0, 0,
                 "not running in a cluster (KUBERNETES_SERVICE_HOST and "
                 "KUBERNETES_SERVICE_PORT are unset) and no --kubeconfig given");
        goto out;
    }
    if (parse_uint(port, 1, 65535, &p) < 0) {
        diag_set(d, NULL, 0, 0, "KUBERNETES_SERVICE_PORT is not a port number: \"%.32s\"", port);
        goto out;
    }
    if (strpbrk(host, "/?#@[] \t\r\n") != NULL || strlen(host) > 200) {
        diag_set(d, NULL, 0, 0, "KUBERNETES_SERVICE_HOST is not a host: \"%.64s\"", host);
        goto out;
    }
    /* an IPv6 literal goes in brackets (net.JoinHostPort), its zone's '%' escaped for the URL */
    for (i = 0; host[i] != '\0'; i++) {
        if (j + 4 > sizeof(hostbuf))
            break; /* cannot happen: the host is at most 200 bytes */
        if (host[i] == '%') {
            memcpy(hostbuf + j, "%25", 3);
            j += 3;
        } else {
            hostbuf[j++] = host[i];
        }
    }
    hostbuf[j] = '\0';
    if ((strchr(host, ':') != NULL
             ? asprintf(&t->server, "https://[%s]:%lld", hostbuf, (long long)p)
             : asprintf(&t->server, "https://%s:%lld", hostbuf, (long long)p)) < 0)
        t->server = NULL;
    t->token_path = strdup(KUBE_SA_TOKEN);
    t->ca_path = strdup(KUBE_SA_CA);
    if (t->server == NULL || t->token_path == NULL || t->ca_path == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto out;
    }
    if ((tok = kubeconfig_token_read(t->token_path, d)) == NULL || check_ca_file(t->ca_path, d) < 0)
        goto out;
    rc = 0;
out:
    kubeconfig_secret_free(tok);
    return rc;
}
