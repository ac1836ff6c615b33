/*
 * fuzz_support.c: see fuzz_support.h. The applier and the base64 decoder are written from RFC
 * 6902/6901 and RFC 4648, not from patch.c, so that they check it rather than repeat it. The view
 * check reads cluster_view.h, the records' own header: it is a test of cluster.c's bookkeeping.
 */
#include "fuzz_support.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_view.h"
#include "limits.h"
#include "log.h"
#include "rules.h"

#ifndef FUZZ_SRCDIR
#define FUZZ_SRCDIR "."
#endif

void fuzz_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: fuzz invariant violated: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void fuzz_quiet_logs(void)
{
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

    if (fd >= 0)
        log_set_fd(fd);
    log_set_level(LOG_DEBUG);
}

const char *fuzz_src_path(const char *rel, char *buf, size_t len)
{
    snprintf(buf, len, "%s", rel);
    if (access(buf, R_OK) != 0)
        snprintf(buf, len, "%s/%s", FUZZ_SRCDIR, rel);
    return buf;
}

struct policy *fuzz_policy(const char *rel)
{
    char path[4096], msg[600];
    const char *paths[1] = {path};
    struct rules_errors errs;
    struct policy *p;

    fuzz_src_path(rel, path, sizeof(path));
    p = rules_load_files(paths, 1, &errs);
    if (p == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path,
                errs.n ? diag_format(&errs.items[0], msg, sizeof(msg)) : "?");
        exit(2);
    }
    return p;
}

struct review *fuzz_fixed_review(const char *json)
{
    struct diag d;
    struct review *r;

    diag_clear(&d);
    r = review_decode(json, strlen(json), &d);
    if (r == NULL) {
        fprintf(stderr, "fixed review does not decode: %s\n", d.msg);
        exit(2);
    }
    return r;
}

struct cluster *fuzz_view(const char *rel)
{
    struct cluster_config cfg = {60};
    struct cluster *v = cluster_new(&cfg);
    char path[4096];
    struct diag d;

    fuzz_src_path(rel, path, sizeof(path));
    diag_clear(&d);
    if (v == NULL || cluster_load_snapshot(v, path, &d) < 0) {
        fprintf(stderr, "cannot load %s: %s\n", path, d.msg);
        exit(2);
    }
    return v;
}

/* ---- RFC 6902 "add", RFC 6901 pointers ------------------------------------------------------ */

/* The next reference token of a pointer, unescaped into tok. -1 on a bad escape or a token too
 * long. */
static int next_token(const char **p, char *tok, size_t len)
{
    size_t n = 0;

    for (; **p != '\0' && **p != '/'; (*p)++) {
        char c = **p;

        if (c == '~') {
            (*p)++;
            if (**p != '0' && **p != '1')
                return -1; /* RFC 6901: "~" is followed by 0 or 1 */
            c = **p == '0' ? '~' : '/';
        }
        if (n + 1 >= len)
            return -1;
        tok[n++] = c;
    }
    tok[n] = '\0';
    return 0;
}

/* An array index of RFC 6901: "0" or digits without a leading zero, at most max. */
static int array_index(const char *tok, size_t max, size_t *out)
{
    size_t v = 0;

    if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0'))
        return -1;
    for (const char *s = tok; *s; s++) {
        if (*s < '0' || *s > '9' || v > max)
            return -1;
        v = v * 10 + (size_t)(*s - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

static int apply_add(json_t *doc, const char *path, json_t *value, char *why, size_t len)
{
    static char tok[65536];
    json_t *node = doc;
    const char *p = path;
    size_t idx;

    if (path[0] == '\0') {
        snprintf(why, len, "add at the root replaces the whole object");
        return -1;
    }
    for (;;) {
        if (*p != '/' || (p++, next_token(&p, tok, sizeof(tok)) < 0)) {
            snprintf(why, len, "bad pointer %.200s", path);
            return -1;
        }
        if (*p == '\0')
            break;
        if (json_is_object(node))
            node = json_object_get(node, tok);
        else if (json_is_array(node) && json_array_size(node) > 0 &&
                 array_index(tok, json_array_size(node) - 1, &idx) == 0)
            node = json_array_get(node, idx);
        else
            node = NULL;
        if (node == NULL) {
            snprintf(why, len, "missing parent in %.200s", path);
            return -1;
        }
    }
    if (json_is_object(node))
        return json_object_set(node, tok, value);
    if (json_is_array(node)) {
        if (strcmp(tok, "-") == 0)
            return json_array_append(node, value);
        if (array_index(tok, json_array_size(node), &idx) == 0)
            return json_array_insert(node, idx, value);
    }
    snprintf(why, len, "no place to add %.200s", path);
    return -1;
}

int fuzz_apply_patch(json_t *doc, const json_t *ops, char *why, size_t len)
{
    size_t i;
    const json_t *op;

    if (!json_is_array(ops)) {
        snprintf(why, len, "the patch is not an array");
        return -1;
    }
    json_array_foreach (ops, i, op) {
        const char *o = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        json_t *value = json_object_get(op, "value");

        if (!json_is_object(op) || o == NULL || path == NULL || value == NULL) {
            snprintf(why, len, "operation %zu is malformed", i);
            return -1;
        }
        if (strcmp(o, "add") != 0) {
            snprintf(why, len, "operation %zu is %.32s, not add", i, o);
            return -1;
        }
        /* a copy, as the apiserver's decoder makes one value per operation */
        value = json_deep_copy(value);
        if (value == NULL || apply_add(doc, path, value, why, len) < 0) {
            json_decref(value);
            return -1;
        }
        json_decref(value);
    }
    return 0;
}

/* ---- RFC 4648 base64 ------------------------------------------------------------------------ */

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

unsigned char *fuzz_base64_decode(const char *in, size_t *out_len)
{
    size_t n = strlen(in), o = 0;
    unsigned char *out;

    if (n % 4 != 0)
        return NULL;
    out = malloc(n / 4 * 3 + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        size_t pad = 0;

        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad > 0 || (v[k] = b64_value(in[i + k])) < 0)
                goto bad;
        }
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (pad < 2)
            out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        if (pad < 1)
            out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    out[o] = '\0';
    *out_len = o;
    return out;
bad:
    free(out);
    return NULL;
}

/* ---- the response -------------------------------------------------------------------------- */

static size_t utf8_runes(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void check_warnings(const json_t *w)
{
    size_t i;
    const json_t *s;

    if (w == NULL)
        return;
    FUZZ_ASSERT(json_is_array(w) && json_array_size(w) > 0, "warnings: not a non-empty array");
    json_array_foreach (w, i, s) {
        const char *t = json_string_value(s);

        FUZZ_ASSERT(t != NULL && t[0] != '\0', "warning %zu: not a non-empty string", i);
        FUZZ_ASSERT(strlen(t) == json_string_length(s), "warning %zu holds a NUL", i);
        FUZZ_ASSERT(utf8_runes(t) <= WARNING_MAX_RUNES, "warning %zu: %zu runes", i, utf8_runes(t));
        for (const unsigned char *c = (const unsigned char *)t; *c; c++)
            FUZZ_ASSERT(*c >= 0x20 && *c != 0x7f, "warning %zu holds a control character", i);
    }
}

static void check_annotations(const json_t *a)
{
    const char *k;
    const json_t *v;

    if (a == NULL)
        return;
    FUZZ_ASSERT(json_is_object(a), "auditAnnotations: not an object");
    json_object_foreach ((json_t *)a, k, v) {
        FUZZ_ASSERT(json_is_string(v), "auditAnnotations.%.64s: not a string", k);
        FUZZ_ASSERT(review_audit_key_valid(k), "auditAnnotations: bad key %.64s", k);
    }
}

static json_t *check_patch(const struct review *r, const json_t *resp, bool mutating)
{
    const json_t *patch = json_object_get(resp, "patch"),
                 *type = json_object_get(resp, "patchType");
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    json_t *ops, *doc;
    json_error_t err;
    char why[300];

    if (patch == NULL) {
        FUZZ_ASSERT(type == NULL, "patchType without a patch");
        return NULL;
    }
    FUZZ_ASSERT(mutating, "a patch on the validating route");
    FUZZ_ASSERT(type != NULL && json_is_string(type) &&
                    strcmp(json_string_value(type), "JSONPatch") == 0,
                "a patch without patchType JSONPatch");
    FUZZ_ASSERT(json_is_string(patch), "patch is not a string");
    raw = fuzz_base64_decode(json_string_value(patch), &raw_len);
    FUZZ_ASSERT(raw != NULL, "patch is not standard padded base64");
    ops = json_loadb((const char *)raw, raw_len, JSON_REJECT_DUPLICATES, &err);
    free(raw);
    FUZZ_ASSERT(json_is_array(ops) && json_array_size(ops) > 0,
                "patch is not a non-empty JSON array: %s", ops ? "" : err.text);
    FUZZ_ASSERT(r->object != NULL && json_is_object(r->object), "a patch for no object");
    doc = json_deep_copy(r->object);
    FUZZ_ASSERT(doc != NULL, "out of memory");
    if (fuzz_apply_patch(doc, ops, why, sizeof(why)) < 0)
        FUZZ_FAIL("the patch does not apply: %s", why);
    FUZZ_ASSERT(json_is_object(doc), "the patched object is not an object");
    json_decref(ops);
    return doc;
}

json_t *fuzz_check_response(const struct review *r, const struct decision *dec, bool mutating,
                            const char *body, size_t len)
{
    json_t *root, *resp, *allowed, *status;
    json_error_t err;
    const char *api = r->version == REVIEW_V1 ? "admission.k8s.io/v1" : "admission.k8s.io/v1beta1";
    json_t *patched;

    root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    FUZZ_ASSERT(root != NULL, "response is not JSON: %s", err.text);
    FUZZ_ASSERT(json_is_object(root), "response is not an object");
    FUZZ_ASSERT(json_is_string(json_object_get(root, "apiVersion")) &&
                    strcmp(json_string_value(json_object_get(root, "apiVersion")), api) == 0,
                "apiVersion is not %s", api);
    FUZZ_ASSERT(json_is_string(json_object_get(root, "kind")) &&
                    strcmp(json_string_value(json_object_get(root, "kind")), "AdmissionReview") ==
                        0,
                "kind is not AdmissionReview");
    resp = json_object_get(root, "response");
    FUZZ_ASSERT(json_is_object(resp), "no response object");
    FUZZ_ASSERT(json_equal(json_object_get(resp, "uid"), r->uid_json), "uid not echoed");
    allowed = json_object_get(resp, "allowed");
    FUZZ_ASSERT(json_is_boolean(allowed), "allowed missing or not a boolean");
    FUZZ_ASSERT(json_is_true(allowed) == dec->allowed, "allowed differs from the decision");
    status = json_object_get(resp, "status");
    if (!dec->allowed) {
        FUZZ_ASSERT(json_is_object(status), "a denial without status");
        FUZZ_ASSERT(json_integer_value(json_object_get(status, "code")) >= 400,
                    "a denial without an error code");
        FUZZ_ASSERT(json_is_string(json_object_get(status, "message")),
                    "a denial without a message");
    }
    check_warnings(json_object_get(resp, "warnings"));
    check_annotations(json_object_get(resp, "auditAnnotations"));
    patched = check_patch(r, resp, mutating);
    json_decref(root);
    return patched;
}

struct review *fuzz_review_with_object(const struct review *r, const json_t *obj)
{
    json_t *root = json_deep_copy(r->root);
    json_t *req = json_object_get(root, "request");
    char *text = NULL;
    struct review *out = NULL;
    struct diag d;

    if (req == NULL || json_object_set(req, "object", (json_t *)obj) < 0)
        goto done;
    text = json_dumps(root, JSON_COMPACT | JSON_ALLOW_NUL);
    if (text == NULL)
        goto done;
    diag_clear(&d);
    out = review_decode(text, strlen(text), &d);
done:
    free(text);
    json_decref(root);
    return out;
}

/* ---- the cluster view ---------------------------------------------------------------------- */

static void check_binding(const char *node, const struct binding *b, const struct table *pods)
{
    for (size_t r = 0; r < b->n_res; r++) {
        const struct bound_res *br = &b->res[r];
        int64_t sum = 0, prio_sum = 0;

        for (size_t i = 0; i < b->n; i++)
            for (size_t k = 0; k < b->pods[i]->n_demand; k++)
                if (strcmp(b->pods[i]->demand[k].name, br->name) == 0)
                    sum += b->pods[i]->demand[k].n;
        for (size_t p = 0; p < br->n_prio; p++) {
            FUZZ_ASSERT(br->prio[p].n > 0, "binding %s %s: an empty priority slot", node, br->name);
            prio_sum += br->prio[p].n;
        }
        FUZZ_ASSERT(sum == br->total, "binding %s %s: total %lld, pods sum to %lld", node, br->name,
                    (long long)br->total, (long long)sum);
        FUZZ_ASSERT(prio_sum == br->total, "binding %s %s: total %lld, priorities sum to %lld",
                    node, br->name, (long long)br->total, (long long)prio_sum);
    }
    for (size_t i = 0; i < b->n; i++) {
        bool live = false;

        FUZZ_ASSERT(strcmp(b->pods[i]->node, node) == 0, "pod bound to %s in the binding of %s",
                    b->pods[i]->node, node);
        for (size_t j = 0; j < pods->n_buckets && !live; j++)
            for (struct table_entry *e = pods->buckets[j]; e && !live; e = e->next)
                live = e->value == b->pods[i];
        FUZZ_ASSERT(live, "binding %s holds a pod that is not in the view", node);
        for (size_t j = 0; j < i; j++)
            FUZZ_ASSERT(b->pods[j] != b->pods[i], "binding %s holds a pod twice", node);
    }
    for (size_t k = 0; k < b->n; k++)
        for (size_t d = 0; d < b->pods[k]->n_demand; d++) {
            bool found = false;

            for (size_t r = 0; r < b->n_res; r++)
                found |= strcmp(b->res[r].name, b->pods[k]->demand[d].name) == 0;
            FUZZ_ASSERT(found || b->pods[k]->demand[d].n == 0,
                        "binding %s lacks the resource %s of a pod", node,
                        b->pods[k]->demand[d].name);
        }
}

size_t fuzz_view_check(struct cluster *c)
{
    size_t total = 0, bound = 0, in_bindings = 0;
    const struct table *pods = &c->kinds[CLUSTER_PODS];

    pthread_rwlock_rdlock(&c->lock);
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        size_t n = 0;

        for (size_t i = 0; i < c->kinds[k].n_buckets; i++)
            for (struct table_entry *e = c->kinds[k].buckets[i]; e; e = e->next)
                n++;
        FUZZ_ASSERT(n == c->kinds[k].n, "kind %d: %zu records, count says %zu", k, n,
                    c->kinds[k].n);
        total += n;
    }
    for (size_t i = 0; i < pods->n_buckets; i++)
        for (struct table_entry *e = pods->buckets[i]; e; e = e->next) {
            const struct vpod *v = e->value;

            if (v->node[0] == '\0')
                continue;
            bound++;
            FUZZ_ASSERT(table_get(&c->bindings, v->node) != NULL, "pod %s: no binding for %s",
                        e->key, v->node);
        }
    for (size_t i = 0; i < c->bindings.n_buckets; i++)
        for (struct table_entry *e = c->bindings.buckets[i]; e; e = e->next) {
            const struct binding *b = e->value;

            check_binding(e->key, b, pods);
            in_bindings += b->n;
        }
    FUZZ_ASSERT(bound == in_bindings, "%zu bound pods, %zu in bindings", bound, in_bindings);
    pthread_rwlock_unlock(&c->lock);
    return total;
}
