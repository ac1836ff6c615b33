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

#include "cluster/cluster_view.h"
#include "policy/decision.h"
#include "bounds.h"
#include "log.h"
#include "names.h"
#include "policy/rules.h"

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

/* The next reference token of a pointer (*p up to end), unescaped into tok, *n its length (a
 * token may hold a NUL: keys may). -1 on a bad escape or a token too long. */
static int next_token(const char **p, const char *end, char *tok, size_t len, size_t *n)
{
    *n = 0;
    for (; *p < end && **p != '/'; (*p)++) {
        char c = **p;

        if (c == '~') {
            (*p)++;
            if (*p == end || (**p != '0' && **p != '1'))
                return -1; /* RFC 6901: "~" is followed by 0 or 1 */
            c = **p == '0' ? '~' : '/';
        }
        if (*n + 1 >= len)
            return -1;
        tok[(*n)++] = c;
    }
    tok[*n] = '\0';
    return 0;
}

/* An array index of RFC 6901: "0" or digits without a leading zero, at most max. */
static int array_index(const char *tok, size_t n, size_t max, size_t *out)
{
    size_t v = 0;

    if (n == 0 || (tok[0] == '0' && n != 1))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (tok[i] < '0' || tok[i] > '9' || v > max)
            return -1;
        v = v * 10 + (size_t)(tok[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* The member of a mutable object by (key, length): the first; the applier never makes two. */
static yyjson_mut_val *member(yyjson_mut_val *obj, const char *key, size_t n)
{
    size_t i, max;
    yyjson_mut_val *k, *v;

    yyjson_mut_obj_foreach (obj, i, max, k, v)
        if (yyjson_mut_get_len(k) == n && memcmp(yyjson_mut_get_str(k), key, n) == 0)
            return v;
    return NULL;
}

static int apply_add(yyjson_mut_doc *doc, yyjson_val *path_v, yyjson_mut_val *value, char *why,
                     size_t len)
{
    static char tok[65536];
    const char *path = yyjson_get_str(path_v), *p = path, *end = path + yyjson_get_len(path_v);
    yyjson_mut_val *node = yyjson_mut_doc_get_root(doc);
    size_t idx, n;

    if (p == end) {
        snprintf(why, len, "add at the root replaces the whole object");
        return -1;
    }
    for (;;) {
        if (p == end || *p != '/' || (p++, next_token(&p, end, tok, sizeof(tok), &n) < 0)) {
            snprintf(why, len, "bad pointer %.200s", path);
            return -1;
        }
        if (p == end)
            break;
        if (yyjson_mut_is_obj(node))
            node = member(node, tok, n);
        else if (yyjson_mut_is_arr(node) && yyjson_mut_arr_size(node) > 0 &&
                 array_index(tok, n, yyjson_mut_arr_size(node) - 1, &idx) == 0)
            node = yyjson_mut_arr_get(node, idx);
        else
            node = NULL;
        if (node == NULL) {
            snprintf(why, len, "missing parent in %.200s", path);
            return -1;
        }
    }
    if (yyjson_mut_is_obj(node)) {
        /* RFC 6902 4.1: an existing member is replaced */
        yyjson_mut_val *key = yyjson_mut_strncpy(doc, tok, n);

        return key != NULL && yyjson_mut_obj_put(node, key, value) ? 0 : -1;
    }
    if (yyjson_mut_is_arr(node)) {
        if (n == 1 && tok[0] == '-')
            return yyjson_mut_arr_append(node, value) ? 0 : -1;
        if (array_index(tok, n, yyjson_mut_arr_size(node), &idx) == 0)
            return yyjson_mut_arr_insert(node, value, idx) ? 0 : -1;
    }
    snprintf(why, len, "no place to add %.200s", path);
    return -1;
}

int fuzz_apply_patch(yyjson_mut_doc *doc, yyjson_val *ops, char *why, size_t len)
{
    size_t i, max;
    yyjson_val *op;

    if (!yyjson_is_arr(ops)) {
        snprintf(why, len, "the patch is not an array");
        return -1;
    }
    yyjson_arr_foreach (ops, i, max, op) {
        yyjson_val *o = yyjson_obj_get(op, "op"), *path = yyjson_obj_get(op, "path");
        yyjson_val *value = yyjson_obj_get(op, "value");
        yyjson_mut_val *copy;

        if (!yyjson_is_obj(op) || !yyjson_is_str(o) || !yyjson_is_str(path) || value == NULL) {
            snprintf(why, len, "operation %zu is malformed", i);
            return -1;
        }
        if (!json_str_is(o, "add")) {
            snprintf(why, len, "operation %zu is %.32s, not add", i, yyjson_get_str(o));
            return -1;
        }
        /* a copy, as the apiserver's decoder makes one value per operation */
        copy = yyjson_val_mut_copy(doc, value);
        if (copy == NULL || apply_add(doc, path, copy, why, len) < 0)
            return -1;
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

unsigned char *fuzz_base64_decode(const char *in, size_t n, size_t *out_len)
{
    size_t o = 0;
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

static size_t utf8_runes(const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static void check_warnings(yyjson_val *w)
{
    size_t i, max;
    yyjson_val *s;

    if (w == NULL)
        return;
    FUZZ_ASSERT(yyjson_is_arr(w) && yyjson_arr_size(w) > 0, "warnings: not a non-empty array");
    yyjson_arr_foreach (w, i, max, s) {
        const char *t = yyjson_get_str(s);
        size_t n = yyjson_get_len(s);

        FUZZ_ASSERT(t != NULL && n > 0, "warning %zu: not a non-empty string", i);
        FUZZ_ASSERT(strlen(t) == n, "warning %zu holds a NUL", i);
        FUZZ_ASSERT(utf8_runes(t, n) <= WARNING_MAX_RUNES, "warning %zu: %zu runes", i,
                    utf8_runes(t, n));
        for (size_t c = 0; c < n; c++)
            FUZZ_ASSERT((unsigned char)t[c] >= 0x20 && t[c] != 0x7f,
                        "warning %zu holds a control character", i);
    }
}

static void check_annotations(yyjson_val *a)
{
    size_t i, max;
    yyjson_val *k, *v;

    if (a == NULL)
        return;
    FUZZ_ASSERT(yyjson_is_obj(a), "auditAnnotations: not an object");
    yyjson_obj_foreach (a, i, max, k, v) {
        const char *key = yyjson_get_str(k);

        FUZZ_ASSERT(yyjson_is_str(v), "auditAnnotations.%.64s: not a string", key);
        FUZZ_ASSERT(strlen(key) == yyjson_get_len(k), "auditAnnotations: a key holds a NUL");
        FUZZ_ASSERT(names_part_ok(key, strlen(key)), "auditAnnotations: bad key %.64s", key);
    }
}

static yyjson_doc *check_patch(const struct review *r, yyjson_val *resp, bool mutating)
{
    yyjson_val *patch = yyjson_obj_get(resp, "patch"), *type = yyjson_obj_get(resp, "patchType");
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    yyjson_doc *ops, *out;
    yyjson_mut_doc *doc;
    yyjson_mut_val *obj;
    struct diag d;
    char why[300];

    if (patch == NULL) {
        FUZZ_ASSERT(type == NULL, "patchType without a patch");
        return NULL;
    }
    FUZZ_ASSERT(mutating, "a patch on the validating route");
    FUZZ_ASSERT(json_str_is(type, "JSONPatch"), "a patch without patchType JSONPatch");
    FUZZ_ASSERT(yyjson_is_str(patch), "patch is not a string");
    raw = fuzz_base64_decode(yyjson_get_str(patch), yyjson_get_len(patch), &raw_len);
    FUZZ_ASSERT(raw != NULL, "patch is not standard padded base64");
    diag_clear(&d);
    ops = json_read((const char *)raw, raw_len, JSON_READ_ANY_ROOT, FUZZ_DEPTH_MAX, NULL, &d);
    free(raw);
    FUZZ_ASSERT(ops != NULL, "patch is not JSON: %s", d.msg);
    FUZZ_ASSERT(yyjson_is_arr(yyjson_doc_get_root(ops)) &&
                    yyjson_arr_size(yyjson_doc_get_root(ops)) > 0,
                "patch is not a non-empty JSON array");
    FUZZ_ASSERT(r->object != NULL && yyjson_is_obj(r->object), "a patch for no object");
    doc = yyjson_mut_doc_new(NULL);
    obj = yyjson_val_mut_copy(doc, r->object);
    FUZZ_ASSERT(doc != NULL && obj != NULL, "out of memory");
    yyjson_mut_doc_set_root(doc, obj);
    if (fuzz_apply_patch(doc, yyjson_doc_get_root(ops), why, sizeof(why)) < 0)
        FUZZ_FAIL("the patch does not apply: %s", why);
    FUZZ_ASSERT(yyjson_mut_is_obj(yyjson_mut_doc_get_root(doc)),
                "the patched object is not an object");
    yyjson_doc_free(ops);
    out = yyjson_mut_doc_imut_copy(doc, NULL);
    FUZZ_ASSERT(out != NULL, "out of memory");
    yyjson_mut_doc_free(doc);
    return out;
}

yyjson_doc *fuzz_check_response(const struct review *r, const struct decision *dec, bool mutating,
                                const char *body, size_t len)
{
    yyjson_doc *doc, *patched;
    yyjson_val *root, *resp, *allowed, *status;
    const char *api = r->version == REVIEW_V1 ? "admission.k8s.io/v1" : "admission.k8s.io/v1beta1";
    struct diag d;
    int64_t code = 0;

    /* json_read refuses repeated keys and a root that is not an object */
    diag_clear(&d);
    doc = json_read(body, len, 0, FUZZ_DEPTH_MAX, NULL, &d);
    FUZZ_ASSERT(doc != NULL, "response is not a JSON object: %s", d.msg);
    root = yyjson_doc_get_root(doc);
    FUZZ_ASSERT(json_str_is(yyjson_obj_get(root, "apiVersion"), api), "apiVersion is not %s", api);
    FUZZ_ASSERT(json_str_is(yyjson_obj_get(root, "kind"), "AdmissionReview"),
                "kind is not AdmissionReview");
    resp = yyjson_obj_get(root, "response");
    FUZZ_ASSERT(yyjson_is_obj(resp), "no response object");
    FUZZ_ASSERT(yyjson_equals(yyjson_obj_get(resp, "uid"), r->uid_json), "uid not echoed");
    allowed = yyjson_obj_get(resp, "allowed");
    FUZZ_ASSERT(yyjson_is_bool(allowed), "allowed missing or not a boolean");
    FUZZ_ASSERT(yyjson_is_true(allowed) == dec->allowed, "allowed differs from the decision");
    status = yyjson_obj_get(resp, "status");
    if (!dec->allowed) {
        FUZZ_ASSERT(yyjson_is_obj(status), "a denial without status");
        FUZZ_ASSERT(json_int64(yyjson_obj_get(status, "code"), &code) && code >= 400,
                    "a denial without an error code");
        FUZZ_ASSERT(yyjson_is_str(yyjson_obj_get(status, "message")), "a denial without a message");
    }
    check_warnings(yyjson_obj_get(resp, "warnings"));
    check_annotations(yyjson_obj_get(resp, "auditAnnotations"));
    patched = check_patch(r, resp, mutating);
    yyjson_doc_free(doc);
    return patched;
}

struct review *fuzz_review_with_object(const struct review *r, yyjson_val *obj)
{
    yyjson_mut_doc *doc = yyjson_doc_mut_copy(r->doc, NULL);
    yyjson_mut_val *req = yyjson_mut_obj_get(yyjson_mut_doc_get_root(doc), "request");
    yyjson_mut_val *copy = yyjson_val_mut_copy(doc, obj);
    char *text = NULL;
    size_t len = 0;
    struct review *out = NULL;
    struct diag d;

    if (req == NULL || copy == NULL || json_mut_set(doc, req, "object", copy) < 0)
        goto done;
    text = json_mut_write(yyjson_mut_doc_get_root(doc), &len);
    if (text == NULL)
        goto done;
    diag_clear(&d);
    out = review_decode(text, len, &d);
done:
    free(text);
    yyjson_mut_doc_free(doc);
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
