/*
 * test_kubeconfig.c: where and how the kube client connects (cluster/kubeconfig.c), called
 * directly: a kubeconfig's current context, its certificates and tokens, relative paths, the
 * YAML caps, the in-cluster environment, token files as they rotate, and the error messages
 * with file:line:column where the YAML reader knows them.
 *
 * Expected: what client-go's clientcmd does with the same file (k8s.io/client-go, cited at each
 * group), except where kubeconfig.c refuses on purpose what client-go accepts with a different
 * meaning or merges from elsewhere (kubeconfig.c's opening comment): credential plugins,
 * proxies, impersonation, basic auth, plain http, and YAML anchors and aliases. Every file lives
 * in a mkdtemp folder, removed at the end; keys and certificates are made here with OpenSSL.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/kubeconfig.h"
#include "harness.h"
#include "bounds.h"

/* as kubeconfig.c's default: a unit test build does not move it */
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static char dir[256]; /* the test's folder; the kubeconfig is dir/config */

/* ------------------------------------------------------------------------------------------ */
/* Files, certificates, and the kubeconfig under test */

static char *at(const char *name)
{
    static char buf[8][PATH_MAX];
    static int i;

    i = (i + 1) % 8;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

static void put_len(const char *name, const char *text, size_t len)
{
    harness_put(at(name), text, len);
}

static void put(const char *name, const char *text)
{
    put_len(name, text, strlen(text));
}

/* Replaces name by a new file (a new inode), as kubelet and kubectl write theirs. */
static void replace(const char *name, const char *text)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    put(tmp, text);
    CHECK(rename(at(tmp), at(name)) == 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

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

static char *base64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);

    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* A self-signed ECDSA certificate for CN=cn and its key, PEM. */
static void make_pair(const char *cn, char **cert_pem, char **key_pem)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIO *b;

    ASN1_INTEGER_set(X509_get_serialNumber(x), rand());
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_sign(x, key, EVP_sha256());
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    *cert_pem = bio_string(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    *key_pem = bio_string(b);
    X509_free(x);
    EVP_PKEY_free(key);
}

/* The fixtures: a CA certificate, a client pair, another key; PEM and base64 of PEM, as
 * kubectl config set-credentials --embed-certs writes them. */
static char *ca_pem, *ca_key, *ca_b64, *cl_pem, *cl_key, *cl_pem_b64, *cl_key_b64, *other_pem,
    *other_key, *other_key_b64;

/* A kubeconfig whose current context "dev" joins cluster "c1" (server https://api.example:6443
 * and the lines of cluster_extra) with user "u1" (the lines of user_extra, or none), each line
 * indented under its mapping ("    key: value\n"). Line numbers, for the messages: the server
 * is line 7, cluster_extra starts at line 8; user_extra starts at line 16 plus the lines of
 * cluster_extra. */
static const char *kc(const char *cluster_extra, const char *user_extra)
{
    static char buf[65536];

    snprintf(buf, sizeof(buf),
             "apiVersion: v1\n"
             "kind: Config\n"
             "current-context: dev\n"
             "clusters:\n"
             "- name: c1\n"
             "  cluster:\n"
             "    server: https://api.example:6443\n"
             "%s"
             "contexts:\n"
             "- name: dev\n"
             "  context:\n"
             "    cluster: c1\n"
             "    user: u1\n"
             "users:\n"
             "- name: u1\n"
             "  user:%s\n"
             "%s",
             cluster_extra, user_extra[0] ? "" : " {}", user_extra);
    return buf;
}

/* kubeconfig_load of text written to dir/config, into a zeroed t. */
static int load(const char *text, struct kubeconfig_target *t, struct diag *d)
{
    put("config", text);
    memset(t, 0, sizeof(*t));
    diag_clear(d);
    return kubeconfig_load(at("config"), t, d);
}

/* text must be refused, with a message holding want, at line:column of dir/config (0:0 when
 * the message names no place in it). */
static void refused_at(const char *text, const char *want, unsigned line, unsigned column,
                       int where)
{
    struct kubeconfig_target t;
    struct diag d;
    int failed = harness_failed;

    CHECK(load(text, &t, &d) == -1);
    CHECK_CONTAINS(d.msg, want);
    CHECK(d.line == line && d.column == column);
    CHECK_STR(d.file, at("config"));
    if (harness_failed != failed)
        printf("%s:%d: the case above: refused at %u:%u (want %u:%u): %s\n", __FILE__, where,
               d.line, d.column, line, column, d.msg);
    kubeconfig_target_free(&t);
}

#define REFUSED(text, want, line, column) refused_at(text, want, line, column, __LINE__)

/* text must load. */
static int loads(const char *text, struct kubeconfig_target *t)
{
    struct diag d;
    int rc = load(text, t, &d);

    if (rc != 0)
        printf("  refused: %s:%u:%u: %s\n", d.file, d.line, d.column, d.msg);
    return rc;
}

/* Where path leads, "" when nowhere. */
static const char *real(const char *path)
{
    static char buf[2][PATH_MAX];
    static int i;

    i = (i + 1) % 2;
    if (path == NULL || realpath(path, buf[i]) == NULL)
        buf[i][0] = '\0';
    return buf[i];
}

/* ------------------------------------------------------------------------------------------ */
/* The YAML reader's caps and refusals (kubeconfig.c; client-go reads YAML with
 * sigs.k8s.io/yaml, which expands aliases: refused here, so that no file can expand past the
 * caps) */

static void test_anchors_aliases_tags(void)
{
    REFUSED("current-context: &c dev\n", "YAML anchors and tags are not supported", 1, 18);
    REFUSED("a: &m {x: 1}\nb: *m\n", "YAML anchors and tags are not supported", 1, 4);
    /* libyaml does not check that an alias names an anchor: refused all the same */
    REFUSED("current-context: *c\n", "YAML aliases are not supported", 1, 18);
    REFUSED("current-context: !secret dev\n", "YAML anchors and tags are not supported", 1, 18);
    /* a core schema tag is only a type: accepted */
    {
        struct kubeconfig_target t;

        CHECK(loads("current-context: !!str dev\n"
                    "clusters: [{name: c1, cluster: {server: 'https://a'}}]\n"
                    "contexts: [{name: dev, context: {cluster: c1}}]\n",
                    &t) == 0);
        CHECK_STR(t.server, "https://a");
        kubeconfig_target_free(&t);
    }
    /* the classic billion laughs: refused at its first anchor, long before any expansion */
    REFUSED("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "YAML anchors and tags are not supported", 1, 4);
}

static void test_depth_nodes_size(void)
{
    size_t n = 0, max = KUBE_KUBECONFIG_MAX_BYTES;
    char *text = malloc(max + 2), want[128];
    struct kubeconfig_target t;
    struct diag d;
    int fd;

    /* 32 nested flow sequences are allowed, the 33rd is refused where it opens */
    for (int i = 0; i < 32; i++)
        text[n++] = '[';
    for (int i = 0; i < 32; i++)
        text[n++] = ']';
    text[n] = '\0';
    CHECK(load(text, &t, &d) == -1);
    CHECK_STR(d.msg, "the kubeconfig must be a mapping"); /* read whole, then judged */
    kubeconfig_target_free(&t);
    n = 0;
    for (int i = 0; i < 33; i++)
        text[n++] = '[';
    for (int i = 0; i < 33; i++)
        text[n++] = ']';
    text[n++] = '\n';
    text[n] = '\0';
    REFUSED(text, "nested too deeply", 1, 33);

    /* 100,001 scalars in one sequence: the sequence and 99,999 of them are the cap, the
     * 100,000th scalar (column 2 + 2 * 99,999) is refused */
    n = 0;
    text[n++] = '[';
    for (int i = 0; i < 100001; i++) {
        text[n++] = '1';
        text[n++] = ',';
    }
    text[n - 1] = ']';
    text[n] = '\0';
    snprintf(want, sizeof(want), "more than %u YAML nodes", KUBE_YAML_NODES_MAX);
    REFUSED(text, want, 1, 200000);
    free(text);

    /* one byte past the cap (a sparse file): refused before it is read */
    fd = open(at("config"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)max + 1) == 0);
    close(fd);
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load(at("config"), &t, &d) == -1);
    snprintf(want, sizeof(want), "file is %zu bytes, more than the limit of %zu", max + 1, max);
    CHECK_STR(d.msg, want);
    CHECK_STR(d.file, at("config"));
    kubeconfig_target_free(&t);
}

static void test_yaml_errors(void)
{
    struct kubeconfig_target t;
    struct diag d;
    char buf[DIAG_MSG_MAX + 300], want[PATH_MAX + 64];

    REFUSED("current-context: dev\n---\ncurrent-context: prod\n", "more than one document", 3, 1);
    REFUSED("current-context: \"a\\0b\"\n", "a NUL character is not allowed in a value", 1, 18);
    REFUSED("- current-context\n", "the kubeconfig must be a mapping", 1, 1);
    REFUSED("current-context: a\ncurrent-context: b\n",
            "the kubeconfig: duplicate key \"current-context\"", 2, 1);
    REFUSED("current-context: dev\n[x]: 1\n", "the kubeconfig: keys must be strings", 2, 1);
    REFUSED("current-context: [dev\nusers: []\n", "YAML: did not find expected ',' or ']'", 2, 6);
    REFUSED("current-context: dev\n  users: []\n", "YAML: mapping values are not allowed", 2, 8);
    REFUSED("", "the kubeconfig is empty", 0, 0);
    REFUSED("# only a comment\n", "the kubeconfig is empty", 0, 0);

    /* diag_format() makes the file:line:column the user sees */
    CHECK(load("current-context: *c\n", &t, &d) == -1);
    snprintf(want, sizeof(want), "%s:1:18: YAML aliases are not supported in a kubeconfig",
             at("config"));
    CHECK_STR(diag_format(&d, buf, sizeof(buf)), want);
    kubeconfig_target_free(&t);

    /* a missing kubeconfig names the file (clientcmd's TestNonExistentCommandLineFile) */
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load(at("no-such-config"), &t, &d) == -1);
    CHECK_STR(d.file, at("no-such-config"));
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    kubeconfig_target_free(&t);
    /* and so does a directory (TestErrorReadingNonFile) */
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load(dir, &t, &d) == -1);
    CHECK_STR(d.file, dir);
    CHECK_STR(d.msg, "not a regular file");
    kubeconfig_target_free(&t);
}

/* ------------------------------------------------------------------------------------------ */
/* The current context (k8s.io/client-go/tools/clientcmd/client_config.go: getContext,
 * getCluster, getAuthInfo, ConfirmUsable; validation.go: validateClusterInfo; loader.go:
 * duplicate names in a list are an error) */

static void test_current_context(void)
{
    struct kubeconfig_target t;

    /* the context current-context names, not the first one */
    CHECK(loads("current-context: prod\n"
                "contexts:\n"
                "- name: dev\n"
                "  context: {cluster: c1, user: u1}\n"
                "- name: prod\n"
                "  context: {cluster: c2, user: u2}\n"
                "clusters:\n"
                "- name: c1\n"
                "  cluster: {server: 'https://dev.example'}\n"
                "- name: c2\n"
                "  cluster: {server: 'https://prod.example:8443'}\n"
                "users:\n"
                "- name: u1\n"
                "  user: {token: dev-token}\n"
                "- name: u2\n"
                "  user: {token: prod-token}\n",
                &t) == 0);
    CHECK_STR(t.server, "https://prod.example:8443");
    CHECK_STR(t.token, "prod-token");
    CHECK_STR(t.source, at("config"));
    CHECK(t.ca_path == NULL && t.ca == NULL && !t.insecure); /* the system's CAs */
    kubeconfig_target_free(&t);
    /* kubeconfig_target_free() zeroes what it freed */
    CHECK(t.server == NULL && t.token == NULL && t.source == NULL);

    CHECK(loads(kc("", "    token: abc\n"), &t) == 0);
    CHECK_STR(t.server, "https://api.example:6443");
    CHECK_STR(t.token, "abc");
    CHECK(t.token_path == NULL && t.cert == NULL && t.cert_path == NULL);
    kubeconfig_target_free(&t);

    /* a context without a user connects anonymously (ConfirmUsable checks the user's
     * settings, not that there is one) */
    CHECK(loads("current-context: dev\n"
                "contexts: [{name: dev, context: {cluster: c1}}]\n"
                "clusters: [{name: c1, cluster: {server: 'https://a'}}]\n",
                &t) == 0);
    CHECK(t.token == NULL && t.token_path == NULL && t.cert == NULL && t.cert_path == NULL &&
          t.key == NULL && t.key_path == NULL);
    kubeconfig_target_free(&t);

    /* the server's trailing slashes are dropped, its path kept */
    CHECK(loads("current-context: dev\n"
                "contexts: [{name: dev, context: {cluster: c1}}]\n"
                "clusters: [{name: c1, cluster: {server: 'https://a.example/k8s/api//'}}]\n",
                &t) == 0);
    CHECK_STR(t.server, "https://a.example/k8s/api");
    kubeconfig_target_free(&t);
}

static void test_context_errors(void)
{
    /* no current-context: client-go has no context to use (validation.go ConfirmUsable:
     * ErrNoContext); none is guessed */
    REFUSED("contexts: []\n", "no current-context", 1, 1);
    REFUSED("current-context: ''\ncontexts: []\n", "no current-context", 1, 1);
    /* errContextNotFound: "context was not found for specified context" */
    REFUSED("current-context: prod\n"
            "contexts:\n"
            "- name: dev\n"
            "  context: {cluster: c1}\n",
            "no context called \"prod\" in contexts", 3, 1);
    REFUSED("current-context: prod\n", "contexts must be a sequence holding context \"prod\"", 0,
            0);
    REFUSED("current-context: prod\ncontexts: {prod: {}}\n",
            "contexts must be a sequence holding context \"prod\"", 2, 11);
    /* validateContext: "cluster %q was not found for context %q" (and ClientConfig() fails
     * on the empty cluster it gets, ErrEmptyCluster) */
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: {cluster: c9}}]\n"
            "clusters: [{name: c1, cluster: {server: 'https://a'}}]\n",
            "no cluster called \"c9\" in clusters", 3, 11);
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: {user: u1}}]\n",
            "context \"dev\" names no cluster", 2, 33);
    /* validateContext: "user %q was not found for context %q"; ClientConfig() itself would go
     * on with an empty user, anonymously: refused here, a misspelt user name must not connect
     * as nobody */
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: {cluster: c1, user: u9}}]\n"
            "clusters: [{name: c1, cluster: {server: 'https://a'}}]\n"
            "users: [{name: u1, user: {token: x}}]\n",
            "no user called \"u9\" in users", 4, 8);
    /* loader.go (TestDuplicateContextName): "duplicate name %q in list"; here only a name in
     * use is looked for, and found twice */
    REFUSED("current-context: dev\n"
            "contexts:\n"
            "- name: dev\n"
            "  context: {cluster: c1}\n"
            "- name: dev\n"
            "  context: {cluster: c2}\n",
            "two contexts are called \"dev\"", 5, 3);
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: {cluster: c1}}]\n"
            "clusters:\n"
            "- {name: c1, cluster: {server: 'https://a'}}\n"
            "- {name: c1, cluster: {server: 'https://b'}}\n",
            "two clusters are called \"c1\"", 5, 3);
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: [c1]}]\n",
            "context must be a mapping", 2, 33);
    REFUSED("current-context: dev\n"
            "contexts: [{name: dev, context: {cluster: c1, cluster: c2}}]\n",
            "context: duplicate key \"cluster\"", 2, 47);
}

/* One context "dev" on cluster "c1", no user; the cluster's keys go from line 6, column 5. */
#define ONE_CLUSTER                                                                                \
    "current-context: dev\n"                                                                       \
    "contexts: [{name: dev, context: {cluster: c1}}]\n"                                            \
    "clusters:\n"                                                                                  \
    "- name: c1\n"                                                                                 \
    "  cluster:\n"

/* validation.go: "no server found for cluster %q"; only https:// is gpuadmit's own rule (the
 * client sends a bearer token, and kube.c speaks TLS only) */
static void test_server(void)
{
    REFUSED(ONE_CLUSTER "    insecure-skip-tls-verify: true\n", "cluster.server is missing", 6, 5);
    REFUSED(ONE_CLUSTER "    server: http://api.example\n",
            "cluster.server must be an https:// URL, not \"http://api.example\"", 6, 13);
    REFUSED(ONE_CLUSTER "    server: https://\n", "cluster.server must be an https:// URL", 6, 13);
    REFUSED(ONE_CLUSTER "    server: https:///api\n", "cluster.server must be an https:// URL", 6,
            13);
    REFUSED(ONE_CLUSTER "    server: https://api.example?watch=1\n",
            "cluster.server must not hold spaces, '?' or '#'", 6, 13);
    REFUSED(ONE_CLUSTER "    server: https://api example\n",
            "cluster.server must not hold spaces, '?' or '#'", 6, 13);
    REFUSED(ONE_CLUSTER "    server: [https://a]\n", "cluster.server must be a string", 6, 13);
}

/* ------------------------------------------------------------------------------------------ */
/* The server's certificate authority (validation.go validateClusterInfo: certificate-authority
 * and certificate-authority-data both set is an error; k8s.io/client-go/transport/transport.go
 * loadTLSFiles: a file is read whole, TLSConfigFor: "specifying a root certificates file with
 * the insecure flag is not allowed"; no CA at all means the system's) */

static void test_certificate_authority(void)
{
    struct kubeconfig_target t;
    char cluster[8192];

    put("ca.crt", ca_pem);
    CHECK(loads(kc("    certificate-authority: ca.crt\n", ""), &t) == 0);
    CHECK_STR(t.ca_path, at("ca.crt"));
    CHECK(t.ca == NULL && t.ca_len == 0 && !t.insecure);
    kubeconfig_target_free(&t);

    snprintf(cluster, sizeof(cluster), "    certificate-authority-data: %s\n", ca_b64);
    CHECK(loads(kc(cluster, ""), &t) == 0);
    CHECK(t.ca_path == NULL);
    CHECK(t.ca != NULL && t.ca_len == strlen(ca_pem) && memcmp(t.ca, ca_pem, t.ca_len) == 0);
    kubeconfig_target_free(&t);

    /* base64 over several lines (a block scalar): line breaks are not part of it, as Go's
     * base64 decoder skips them */
    snprintf(cluster, sizeof(cluster), "    certificate-authority-data: |\n      %.64s\n      %s\n",
             ca_b64, ca_b64 + 64);
    CHECK(loads(kc(cluster, ""), &t) == 0);
    CHECK(t.ca != NULL && t.ca_len == strlen(ca_pem) && memcmp(t.ca, ca_pem, t.ca_len) == 0);
    kubeconfig_target_free(&t);

    snprintf(cluster, sizeof(cluster),
             "    certificate-authority: ca.crt\n    certificate-authority-data: %s\n", ca_b64);
    REFUSED(kc(cluster, ""),
            "cluster: certificate-authority and certificate-authority-data are both set; keep "
            "one",
            9, 33);
    REFUSED(kc("    certificate-authority-data: not-base64!\n", ""),
            "cluster.certificate-authority-data is not valid base64", 8, 33);
    /* unpadded: Go's StdEncoding refuses it too */
    REFUSED(kc("    certificate-authority-data: YWI\n", ""),
            "cluster.certificate-authority-data is not valid base64", 8, 33);
    /* a bundle of two CAs; and one whose second certificate is damaged, refused whole */
    {
        size_t n = strlen(ca_pem) + strlen(other_pem) + 1;
        char *bundle = malloc(n), *b64;

        snprintf(bundle, n, "%s%s", ca_pem, other_pem);
        put("bundle.crt", bundle);
        CHECK(loads(kc("    certificate-authority: bundle.crt\n", ""), &t) == 0);
        kubeconfig_target_free(&t);
        bundle[strlen(ca_pem) + 40] = '!';
        b64 = base64(bundle);
        snprintf(cluster, sizeof(cluster), "    certificate-authority-data: %s\n", b64);
        REFUSED(kc(cluster, ""),
                "cluster.certificate-authority-data: cannot read the PEM certificates", 0, 0);
        free(b64);
        free(bundle);
    }
    /* base64 of something that is not a certificate: checked before anything connects */
    REFUSED(kc("    certificate-authority-data: aGVsbG8K\n", ""),
            "cluster.certificate-authority-data: cannot read the PEM certificates", 0, 0);
}

/* A CA file that cannot be used names the file, not the kubeconfig. */
static void test_certificate_authority_file_errors(void)
{
    struct kubeconfig_target t;
    struct diag d;

    CHECK(load(kc("    certificate-authority: no-such-ca.crt\n", ""), &t, &d) == -1);
    CHECK_STR(d.file, at("no-such-ca.crt"));
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    kubeconfig_target_free(&t);

    put("not-a-ca.crt", "hello\n");
    CHECK(load(kc("    certificate-authority: not-a-ca.crt\n", ""), &t, &d) == -1);
    CHECK_STR(d.file, at("not-a-ca.crt"));
    CHECK_CONTAINS(d.msg, "the CA bundle: cannot read the PEM certificates");
    kubeconfig_target_free(&t);
}

static void test_insecure(void)
{
    struct kubeconfig_target t;
    char cluster[8192];

    CHECK(loads(kc("    insecure-skip-tls-verify: true\n", ""), &t) == 0);
    CHECK(t.insecure);
    CHECK(t.ca == NULL && t.ca_path == NULL);
    kubeconfig_target_free(&t);

    put("ca.crt", ca_pem);
    CHECK(loads(kc("    insecure-skip-tls-verify: false\n    certificate-authority: ca.crt\n", ""),
                &t) == 0);
    CHECK(!t.insecure);
    CHECK_STR(t.ca_path, at("ca.crt"));
    kubeconfig_target_free(&t);

    REFUSED(kc("    insecure-skip-tls-verify: true\n    certificate-authority: ca.crt\n", ""),
            "cluster: insecure-skip-tls-verify together with a certificate authority", 8, 31);
    snprintf(cluster, sizeof(cluster),
             "    certificate-authority-data: %s\n    insecure-skip-tls-verify: true\n", ca_b64);
    REFUSED(kc(cluster, ""),
            "cluster: insecure-skip-tls-verify together with a certificate authority", 9, 31);
    /* a string is not a boolean (a JSON string does not decode into client-go's bool) */
    REFUSED(kc("    insecure-skip-tls-verify: 'true'\n", ""),
            "cluster.insecure-skip-tls-verify must be true or false", 8, 31);
    /* YAML 1.1's yes, which sigs.k8s.io/yaml would read as true: refused, not guessed */
    REFUSED(kc("    insecure-skip-tls-verify: yes\n", ""),
            "cluster.insecure-skip-tls-verify must be true or false", 8, 31);
}

/* ------------------------------------------------------------------------------------------ */
/* Client certificates (validation.go validateAuthInfo: client-certificate and its -data both
 * set is an error, as are client-key and its -data, and a certificate without a key;
 * transport.go loadTLSFiles: each of the two from its data or its file) */

static void test_client_certificate(void)
{
    struct kubeconfig_target t;
    char user[16384];

    put("client.crt", cl_pem);
    put("client.key", cl_key);
    CHECK(loads(kc("", "    client-certificate: client.crt\n    client-key: client.key\n"), &t) ==
          0);
    CHECK_STR(t.cert_path, at("client.crt"));
    CHECK_STR(t.key_path, at("client.key"));
    CHECK(t.cert == NULL && t.key == NULL && t.token == NULL);
    kubeconfig_target_free(&t);

    snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
             cl_pem_b64, cl_key_b64);
    CHECK(loads(kc("", user), &t) == 0);
    CHECK(t.cert_path == NULL && t.key_path == NULL);
    CHECK(t.cert != NULL && t.cert_len == strlen(cl_pem) &&
          memcmp(t.cert, cl_pem, t.cert_len) == 0);
    CHECK(t.key != NULL && t.key_len == strlen(cl_key) && memcmp(t.key, cl_key, t.key_len) == 0);
    kubeconfig_target_free(&t);

    /* a file for one, data for the other */
    snprintf(user, sizeof(user), "    client-certificate: client.crt\n    client-key-data: %s\n",
             cl_key_b64);
    CHECK(loads(kc("", user), &t) == 0);
    CHECK_STR(t.cert_path, at("client.crt"));
    CHECK(t.key != NULL && t.key_len == strlen(cl_key));
    kubeconfig_target_free(&t);
}

static void test_client_certificate_errors(void)
{
    struct kubeconfig_target t;
    struct diag d;
    char user[16384];

    snprintf(user, sizeof(user),
             "    client-certificate: client.crt\n    client-certificate-data: %s\n"
             "    client-key: client.key\n",
             cl_pem_b64);
    REFUSED(kc("", user),
            "user: client-certificate and client-certificate-data are both set; keep one", 17, 30);
    snprintf(user, sizeof(user),
             "    client-certificate: client.crt\n    client-key: client.key\n"
             "    client-key-data: %s\n",
             cl_key_b64);
    REFUSED(kc("", user), "user: client-key and client-key-data are both set; keep one", 18, 22);
    REFUSED(kc("", "    client-certificate: client.crt\n"),
            "user: a client certificate needs its key, and a key its certificate", 16, 5);
    /* client-go ignores a key without a certificate; refused here, as a slip worth knowing */
    REFUSED(kc("", "    client-key: client.key\n"),
            "user: a client certificate needs its key, and a key its certificate", 16, 5);
    REFUSED(kc("", "    client-certificate-data: '%%%'\n    client-key: client.key\n"),
            "user.client-certificate-data is not valid base64", 16, 30);

    /* the pair is checked before anything connects */
    snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
             cl_pem_b64, other_key_b64);
    CHECK(load(kc("", user), &t, &d) == -1);
    CHECK_CONTAINS(d.msg, "client certificate: key does not match the certificate");
    CHECK_STR(d.file, at("config"));
    kubeconfig_target_free(&t);

    put("client.key", cl_key);
    CHECK(load(kc("", "    client-certificate: missing.crt\n    client-key: client.key\n"), &t,
               &d) == -1);
    CHECK_STR(d.file, at("missing.crt"));
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    kubeconfig_target_free(&t);

    put("client.crt", cl_pem);
    put("other.crt", other_pem);
    CHECK(load(kc("", "    client-certificate: other.crt\n    client-key: client.key\n"), &t, &d) ==
          -1);
    CHECK_CONTAINS(d.msg, "client certificate: key does not match the certificate");
    kubeconfig_target_free(&t);
}

/* ------------------------------------------------------------------------------------------ */
/* Bearer tokens (client_config.go getUserIdentificationPartialConfig: token, and tokenFile as
 * BearerTokenFile; k8s.io/client-go/transport/round_trippers.go
 * NewBearerAuthWithRefreshRoundTripper: a token file is read at once when there is no static
 * token, then "periodically read, and the last successfully read content is used";
 * transport/token_source.go fileTokenSource: the content trimmed, "read empty token from
 * file" an error) */

static void test_tokens(void)
{
    struct kubeconfig_target t;
    struct diag d;

    CHECK(loads(kc("", "    token: static-token\n"), &t) == 0);
    CHECK_STR(t.token, "static-token");
    CHECK(t.token_path == NULL);
    kubeconfig_target_free(&t);

    put("token", "file-token\n");
    CHECK(loads(kc("", "    tokenFile: token\n"), &t) == 0);
    CHECK_STR(t.token_path, at("token"));
    CHECK(t.token == NULL);
    kubeconfig_target_free(&t);

    /* both: kept both, the file wins when kube.c sends a request (kubeconfig.h) */
    CHECK(loads(kc("", "    token: static-token\n    tokenFile: token\n"), &t) == 0);
    CHECK_STR(t.token, "static-token");
    CHECK_STR(t.token_path, at("token"));
    kubeconfig_target_free(&t);

    /* the token file is read before anything connects */
    CHECK(load(kc("", "    tokenFile: no-such-token\n"), &t, &d) == -1);
    CHECK_STR(d.file, at("no-such-token"));
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    kubeconfig_target_free(&t);
    /* even with a static token beside it (client-go would start on the static one and keep
     * trying the file): a file that cannot be read now is a mistake to say at start */
    CHECK(load(kc("", "    token: static-token\n    tokenFile: no-such-token\n"), &t, &d) == -1);
    CHECK_STR(d.file, at("no-such-token"));
    kubeconfig_target_free(&t);
    put("empty-token", " \n");
    CHECK(load(kc("", "    tokenFile: empty-token\n"), &t, &d) == -1);
    CHECK_STR(d.file, at("empty-token"));
    CHECK_STR(d.msg, "the token file is empty");
    kubeconfig_target_free(&t);

    REFUSED(kc("", "    token: [a, b]\n"), "user.token must be a string", 16, 12);
    /* a static token goes into the Authorization header as it is, like a token file's: a
     * newline would split the header (Go's net/http refuses such a header value), a space end
     * the token */
    REFUSED(kc("", "    token: \"zq\\r\\nX-Injected: 1\"\n"),
            "user.token holds a space or control character", 16, 12);
    REFUSED(kc("", "    token: zq\n      folded\n"),
            "user.token holds a space or control character", 16, 12);
    CHECK(load(kc("", "    token: \"zq\\tb\"\n"), &t, &d) == -1);
    CHECK(strstr(d.msg, "zq") == NULL); /* never quoted */
    kubeconfig_target_free(&t);
    REFUSED(kc("", "    tokenFile: {path: token}\n"), "user.tokenFile must be a string", 16, 16);
}

/* Keys whose meaning would be lost if ignored (kubeconfig.c): refused where they stand. */
static void test_refused_keys(void)
{
    REFUSED(kc("", "    exec:\n      command: aws\n"),
            "user.exec is not supported: credential plugins cannot run here", 17, 7);
    REFUSED(kc("", "    auth-provider: {name: gcp}\n"), "user.auth-provider is not supported", 16,
            20);
    REFUSED(kc("", "    username: admin\n    password: secret\n"),
            "user.username is not supported: use token, tokenFile or a client certificate", 16, 15);
    REFUSED(kc("", "    token: t\n    as: someone\n"), "user.as is not supported", 17, 9);
    REFUSED(kc("", "    as-groups: [admins]\n"), "user.as-groups is not supported", 16, 16);
    REFUSED(kc("    proxy-url: http://proxy:3128\n", ""),
            "cluster.proxy-url is not supported: connect to the server directly", 8, 16);
    REFUSED(kc("    tls-server-name: api.internal\n", ""),
            "cluster.tls-server-name is not supported", 8, 22);
    /* and nothing of a refused key is quoted back: it may hold a secret */
    {
        struct kubeconfig_target t;
        struct diag d;

        CHECK(load(kc("", "    password: hunter2\n"), &t, &d) == -1);
        CHECK(strstr(d.msg, "hunter2") == NULL);
        kubeconfig_target_free(&t);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Relative paths (k8s.io/client-go/tools/clientcmd/loader.go ResolveLocalPaths: the
 * certificate-authority of a cluster, and client-certificate, client-key and tokenFile of a
 * user, relative to the directory of the kubeconfig that holds them; absolute ones as
 * written). client-go also makes them absolute (filepath.Abs); here a kubeconfig given by a
 * relative path gives paths relative to the working directory, which gpuadmit never changes,
 * so the tests compare where the paths lead. */

static void test_relative_paths(void)
{
    struct kubeconfig_target t;
    struct diag d;
    char text[4096];
    int cwd;

    CHECK(mkdir(at("sub"), 0700) == 0);
    CHECK(mkdir(at("sub/keys"), 0700) == 0);
    put("ca.crt", ca_pem);
    put("sub/keys/client.crt", cl_pem);
    put("client.key", cl_key);
    put("token", "tok\n");
    snprintf(text, sizeof(text),
             "current-context: dev\n"
             "contexts: [{name: dev, context: {cluster: c1, user: u1}}]\n"
             "clusters:\n"
             "- name: c1\n"
             "  cluster:\n"
             "    server: https://a\n"
             "    certificate-authority: ../ca.crt\n"
             "users:\n"
             "- name: u1\n"
             "  user:\n"
             "    client-certificate: keys/client.crt\n"
             "    client-key: %s\n"
             "    tokenFile: ./../token\n",
             at("client.key"));
    put("sub/config", text);

    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load(at("sub/config"), &t, &d) == 0);
    CHECK_STR(real(t.ca_path), real(at("ca.crt")));
    CHECK_STR(real(t.cert_path), real(at("sub/keys/client.crt")));
    CHECK_STR(t.key_path, at("client.key")); /* absolute: as written */
    CHECK_STR(real(t.token_path), real(at("token")));
    kubeconfig_target_free(&t);

    /* the kubeconfig given relative to the working directory, with and without a folder */
    cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(cwd >= 0 && chdir(dir) == 0);
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load("sub/config", &t, &d) == 0);
    CHECK_STR(real(t.ca_path), real(at("ca.crt")));
    CHECK_STR(real(t.cert_path), real(at("sub/keys/client.crt")));
    CHECK_STR(real(t.token_path), real(at("token")));
    kubeconfig_target_free(&t);
    CHECK(chdir("sub") == 0);
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    CHECK(kubeconfig_load("config", &t, &d) == 0);
    CHECK_STR(real(t.ca_path), real(at("ca.crt")));
    CHECK_STR(real(t.token_path), real(at("token")));
    CHECK_STR(t.source, "config");
    kubeconfig_target_free(&t);
    CHECK(fchdir(cwd) == 0);
    close(cwd);
}

/* ------------------------------------------------------------------------------------------ */
/* Token files as they rotate: kubeconfig_token_read, which kube.c calls again every
 * KUBE_TOKEN_REFRESH_S (fileTokenSource: read whole, trimmed, an empty one refused) */

static char *token_of(const char *name, struct diag *d)
{
    diag_clear(d);
    return kubeconfig_token_read(at(name), d);
}

static void test_token_read(void)
{
    struct diag d;
    char *tok;

    put("t", "tok-1\n");
    tok = token_of("t", &d);
    CHECK_STR(tok, "tok-1");
    kubeconfig_secret_free(tok);

    /* a new file in its place is read anew */
    replace("t", " \t tok-2 \r\n\n");
    tok = token_of("t", &d);
    CHECK_STR(tok, "tok-2");
    kubeconfig_secret_free(tok);

    /* a token of KUBE_TOKEN_MAX_BYTES is read whole, one more byte is refused */
    {
        char *big = malloc(KUBE_TOKEN_MAX_BYTES + 2), want[128];

        memset(big, 'a', KUBE_TOKEN_MAX_BYTES + 1);
        put_len("t", big, KUBE_TOKEN_MAX_BYTES);
        tok = token_of("t", &d);
        CHECK(tok != NULL && strlen(tok) == KUBE_TOKEN_MAX_BYTES);
        kubeconfig_secret_free(tok);
        put_len("t", big, KUBE_TOKEN_MAX_BYTES + 1);
        CHECK(token_of("t", &d) == NULL);
        snprintf(want, sizeof(want), "file is %u bytes, more than the limit of %u",
                 KUBE_TOKEN_MAX_BYTES + 1, KUBE_TOKEN_MAX_BYTES);
        CHECK_STR(d.msg, want);
        free(big);
    }
}

/* The kubelet's projected service account volume: token -> ..data/token, ..data -> a
 * timestamped folder; a new token is a new folder and ..data renamed over to it. */
static void test_token_projected_volume(void)
{
    struct diag d;
    char *tok;

    CHECK(mkdir(at("sa"), 0700) == 0);
    CHECK(mkdir(at("sa/..2024_01_01"), 0700) == 0);
    put("sa/..2024_01_01/token", "first-token");
    CHECK(symlink("..2024_01_01", at("sa/..data")) == 0);
    CHECK(symlink("..data/token", at("sa/token")) == 0);
    tok = token_of("sa/token", &d);
    CHECK_STR(tok, "first-token");
    kubeconfig_secret_free(tok);

    CHECK(mkdir(at("sa/..2024_01_02"), 0700) == 0);
    put("sa/..2024_01_02/token", "second-token\n");
    CHECK(symlink("..2024_01_02", at("sa/..data_tmp")) == 0);
    CHECK(rename(at("sa/..data_tmp"), at("sa/..data")) == 0);
    tok = token_of("sa/token", &d);
    CHECK_STR(tok, "second-token");
    kubeconfig_secret_free(tok);
}

static void test_token_read_errors(void)
{
    static const char *const bad[] = {"zq b\n", "zq\tb", "zq\nb\n", "zq\rb", "zq\x7f", "\x01zq"};
    struct diag d;

    put("t", "");
    CHECK(token_of("t", &d) == NULL);
    CHECK_STR(d.msg, "the token file is empty");
    CHECK_STR(d.file, at("t"));
    put("t", " \r\n\t\n");
    CHECK(token_of("t", &d) == NULL);
    CHECK_STR(d.msg, "the token file is empty");

    /* inside the token, a space or a control character would split or end the header */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        put("t", bad[i]);
        CHECK(token_of("t", &d) == NULL);
        CHECK_STR(d.msg, "the token holds a space or control character");
        /* and is never quoted */
        CHECK(strstr(d.msg, "zq") == NULL);
    }

    CHECK(token_of("no-such-token", &d) == NULL);
    CHECK_STR(d.msg, "cannot read: No such file or directory");
    CHECK_STR(d.file, at("no-such-token"));
    CHECK(token_of("", &d) == NULL); /* the folder itself */
    CHECK_STR(d.msg, "not a regular file");
}

/* ------------------------------------------------------------------------------------------ */
/* In-cluster (k8s.io/client-go/rest/config.go InClusterConfig: KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT both set, the server "https://" + net.JoinHostPort(host, port), the
 * token and ca.crt of /var/run/secrets/kubernetes.io/serviceaccount).
 *
 * The service account folder is a compile-time constant (KUBE_SA_DIR), and the unit tests link
 * the objects the binary is made of, so no test can point it at a folder of its own: what is
 * tested is the environment's reading, the server URL, and the two paths; the reading of the
 * token file is kubeconfig_token_read's (above), the CA check certificate-authority's. */

static int in_cluster(const char *host, const char *port, struct kubeconfig_target *t,
                      struct diag *d)
{
    if (host != NULL)
        setenv("KUBERNETES_SERVICE_HOST", host, 1);
    else
        unsetenv("KUBERNETES_SERVICE_HOST");
    if (port != NULL)
        setenv("KUBERNETES_SERVICE_PORT", port, 1);
    else
        unsetenv("KUBERNETES_SERVICE_PORT");
    memset(t, 0, sizeof(*t));
    diag_clear(d);
    return kubeconfig_load_in_cluster(t, d);
}

static void test_in_cluster_environment(void)
{
    static const char *const ports[] = {"0", "65536", "443x", "-1", " 443", "99999999999999999999"};
    static const char *const hosts[] = {"a/b",      "[fd00::1]", "api server",
                                        "user@api", "api?x",     "api#x"};
    struct kubeconfig_target t;
    struct diag d;
    char host[256];

    CHECK(in_cluster(NULL, NULL, &t, &d) == -1);
    CHECK(!kubeconfig_in_cluster());
    CHECK_CONTAINS(d.msg, "not running in a cluster (KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT are unset)");
    CHECK_STR(t.source, "in-cluster");
    CHECK(t.server == NULL);
    kubeconfig_target_free(&t);
    /* both are needed, and empty is unset (InClusterConfig: len(host) == 0 || len(port) == 0) */
    CHECK(in_cluster("10.96.0.1", NULL, &t, &d) == -1 && !kubeconfig_in_cluster());
    kubeconfig_target_free(&t);
    CHECK(in_cluster(NULL, "443", &t, &d) == -1 && !kubeconfig_in_cluster());
    kubeconfig_target_free(&t);
    CHECK(in_cluster("", "443", &t, &d) == -1 && !kubeconfig_in_cluster());
    CHECK_CONTAINS(d.msg, "not running in a cluster");
    kubeconfig_target_free(&t);
    CHECK(in_cluster("10.96.0.1", "", &t, &d) == -1 && !kubeconfig_in_cluster());
    kubeconfig_target_free(&t);

    for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
        CHECK(in_cluster("10.96.0.1", ports[i], &t, &d) == -1);
        CHECK(kubeconfig_in_cluster());
        CHECK_CONTAINS(d.msg, "KUBERNETES_SERVICE_PORT is not a port number");
        CHECK(t.server == NULL);
        kubeconfig_target_free(&t);
    }
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        CHECK(in_cluster(hosts[i], "443", &t, &d) == -1);
        CHECK_CONTAINS(d.msg, "KUBERNETES_SERVICE_HOST is not a host");
        CHECK(t.server == NULL);
        kubeconfig_target_free(&t);
    }
    memset(host, 'h', 201);
    host[201] = '\0';
    CHECK(in_cluster(host, "443", &t, &d) == -1);
    CHECK_CONTAINS(d.msg, "KUBERNETES_SERVICE_HOST is not a host");
    kubeconfig_target_free(&t);
    host[200] = '\0'; /* 200 bytes: a host, and the URL is made */
    in_cluster(host, "443", &t, &d);
    CHECK(t.server != NULL && strlen(t.server) == strlen("https://:443") + 200);
    kubeconfig_target_free(&t);
}

/* The server URL and the service account's files. Past the environment, the load reads the
 * token: on a machine without the folder (any but a pod) that fails, naming the file. */
static void test_in_cluster_server(void)
{
    static const struct {
        const char *host, *port, *server;
    } cases[] = {
        {"10.96.0.1", "443", "https://10.96.0.1:443"},
        {"kubernetes.default.svc", "6443", "https://kubernetes.default.svc:6443"},
        /* an IPv6 literal goes in brackets, as net.JoinHostPort puts it */
        {"fd00:10:96::1", "443", "https://[fd00:10:96::1]:443"},
        /* a zone's '%' is escaped in a URL (RFC 6874) */
        {"fe80::1%eth0", "443", "https://[fe80::1%25eth0]:443"},
        {"10.96.0.1", "00443", "https://10.96.0.1:443"},
    };
    bool sa = access(SA_DIR "/token", F_OK) == 0;
    struct kubeconfig_target t;
    struct diag d;
    int rc;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = in_cluster(cases[i].host, cases[i].port, &t, &d);
        CHECK(kubeconfig_in_cluster());
        CHECK_STR(t.server, cases[i].server);
        CHECK_STR(t.token_path, SA_DIR "/token");
        CHECK_STR(t.ca_path, SA_DIR "/ca.crt");
        CHECK(t.token == NULL && t.ca == NULL && t.cert == NULL && !t.insecure);
        CHECK_STR(t.source, "in-cluster");
        if (!sa) {
            CHECK(rc == -1);
            CHECK_STR(d.file, SA_DIR "/token");
            CHECK_CONTAINS(d.msg, "cannot read: ");
        }
        kubeconfig_target_free(&t);
    }
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ------------------------------------------------------------------------------------------ */

int main(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/gpuadmit-test-kubeconfig-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    srand((unsigned)getpid());
    make_pair("test ca", &ca_pem, &ca_key);
    make_pair("client", &cl_pem, &cl_key);
    make_pair("other", &other_pem, &other_key);
    ca_b64 = base64(ca_pem);
    cl_pem_b64 = base64(cl_pem);
    cl_key_b64 = base64(cl_key);
    other_key_b64 = base64(other_key);

    RUN(test_anchors_aliases_tags);
    RUN(test_depth_nodes_size);
    RUN(test_yaml_errors);
    RUN(test_current_context);
    RUN(test_context_errors);
    RUN(test_server);
    RUN(test_certificate_authority);
    RUN(test_certificate_authority_file_errors);
    RUN(test_insecure);
    RUN(test_client_certificate);
    RUN(test_client_certificate_errors);
    RUN(test_tokens);
    RUN(test_refused_keys);
    RUN(test_relative_paths);
    RUN(test_token_read);
    RUN(test_token_projected_volume);
    RUN(test_token_read_errors);
    RUN(test_in_cluster_environment);
    RUN(test_in_cluster_server);

    nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    free(ca_pem);
    free(ca_key);
    free(ca_b64);
    free(cl_pem);
    free(cl_key);
    free(cl_pem_b64);
    free(cl_key_b64);
    free(other_pem);
    free(other_key);
    free(other_key_b64);
    TEST_MAIN_END("test_kubeconfig");
}
