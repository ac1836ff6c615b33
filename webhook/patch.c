/*
 * patch.c: JSON Patch building and application (see patch.h).
 *
 * Invariants: the object a patch starts from is never changed (the review's document is
 * immutable; edits go to a mutable copy, work); nothing recurses on input data without a depth
 * cap: the copies and comparisons yyjson makes recursively (mutable to mutable, mutable to
 * immutable, yyjson_mut_equals) run only on trees checked against PATCH_DEPTH_MAX first, or on
 * the working copy, which is the review's depth-capped object plus the shallow values eval.c
 * adds. yyjson's own yyjson_patch() is not used: 0.10 appends a second member on "add" of an
 * existing key instead of replacing it (docs/json.md §2.5, RFC 6902 §4.1).
 */
#include "patch.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "bounds.h"
#include "parse.h"

/* How deep a document patch_apply() works on may nest: the review's cap (its inputs are reviews'
 * objects and the CLI's manifests, capped lower). Deeper is refused, before yyjson's recursive
 * copy or comparison could meet it. */
#define PATCH_DEPTH_MAX REVIEW_DEPTH_MAX

int patch_init(struct patch *p, yyjson_val *doc, yyjson_mut_doc *out, const yyjson_alc *alc)
{
    memset(p, 0, sizeof(*p));
    p->doc = doc;
    p->alc = alc;
    p->out = out;
    if (p->out == NULL) {
        p->out = yyjson_mut_doc_new(alc);
        p->own_out = true;
    }
    p->ops = p->out ? yyjson_mut_arr(p->out) : NULL;
    if (p->doc == NULL || p->ops == NULL) {
        patch_release(p);
        return -1;
    }
    return 0;
}

void patch_release(struct patch *p)
{
    for (size_t i = 0; i < p->n_frozen; i++)
        yyjson_doc_free(p->frozen[i]);
    if (p->frozen != p->frozen_inline)
        free(p->frozen);
    yyjson_mut_doc_free(p->work);
    if (p->own_out)
        yyjson_mut_doc_free(p->out);
    memset(p, 0, sizeof(*p));
}

int patch_ptr_append(char *buf, size_t len, const char *token)
{
    size_t n = strlen(buf);

    if (n + 1 >= len)
        return -1;
    buf[n++] = '/';
    for (const char *t = token; *t; t++) {
        const char *rep = *t == '~' ? "~0" : *t == '/' ? "~1" : NULL;
        size_t k = rep ? 2 : 1;

        if (n + k >= len)
            return -1;
        if (rep)
            memcpy(buf + n, rep, 2);
        else
            buf[n] = *t;
        n += k;
    }
    buf[n] = '\0';
    return 0;
}

/* Decodes the next token of ptr (after a '/') into tok; returns the rest, or NULL. */
static const char *next_token(const char *ptr, char *tok, size_t len)
{
    size_t n = 0;

    if (*ptr != '/')
        return NULL;
    for (ptr++; *ptr && *ptr != '/'; ptr++) {
        char c = *ptr;

        if (c == '~') {
            if (ptr[1] == '0')
                c = '~';
            else if (ptr[1] == '1')
                c = '/';
            else
                return NULL;
            ptr++;
        }
        if (n + 1 >= len)
            return NULL;
        tok[n++] = c;
    }
    tok[n] = '\0';
    return ptr;
}

/* A member by its decoded token, byte for byte (a key "a\u0000b" is not "a"). */
static yyjson_val *child(yyjson_val *node, const char *tok)
{
    uint64_t idx;

    if (yyjson_is_obj(node))
        return yyjson_obj_getn(node, tok, strlen(tok));
    if (yyjson_is_arr(node) && parse_uint(tok, 0, SIZE_MAX, &idx) == 0)
        return yyjson_arr_get(node, (size_t)idx);
    return NULL;
}

static yyjson_mut_val *mut_child(yyjson_mut_val *node, const char *tok)
{
    uint64_t idx;

    if (yyjson_mut_is_obj(node))
        return yyjson_mut_obj_getn(node, tok, strlen(tok));
    if (yyjson_mut_is_arr(node) && parse_uint(tok, 0, SIZE_MAX, &idx) == 0)
        return yyjson_mut_arr_get(node, (size_t)idx);
    return NULL;
}

yyjson_val *patch_get(yyjson_val *doc, const char *path)
{
    char tok[PATCH_PATH_MAX];
    yyjson_val *node = doc;

    while (node != NULL && *path) {
        path = next_token(path, tok, sizeof(tok));
        if (path == NULL)
            return NULL;
        node = child(node, tok);
    }
    return node;
}

int patch_sync(struct patch *p)
{
    yyjson_doc *f;

    if (!p->stale)
        return 0;
    if (p->frozen == NULL) {
        p->frozen = p->frozen_inline;
        p->cap_frozen = PATCH_FROZEN_INLINE;
    }
    if (p->n_frozen == p->cap_frozen) {
        size_t cap = p->cap_frozen * 2;
        yyjson_doc **grown = malloc(cap * sizeof(*grown));

        if (grown == NULL)
            return -1;
        memcpy(grown, p->frozen, p->n_frozen * sizeof(*grown));
        if (p->frozen != p->frozen_inline)
            free(p->frozen);
        p->frozen = grown;
        p->cap_frozen = cap;
    }
    /* recursive: work is the review's depth-capped object plus shallow added values */
    f = yyjson_mut_val_imut_copy(yyjson_mut_doc_get_root(p->work), p->alc);
    if (f == NULL)
        return -1;
    p->frozen[p->n_frozen++] = f;
    p->doc = yyjson_doc_get_root(f);
    p->stale = false;
    return 0;
}

int patch_add(struct patch *p, const char *path, yyjson_mut_val *value)
{
    char tok[PATCH_PATH_MAX];
    const char *rest = path, *last = strrchr(path, '/');
    yyjson_mut_val *node, *copy, *key, *op;

    if (value == NULL || last == NULL)
        return -1;
    if (p->work == NULL) {
        /* the first change: a mutable copy of the original (yyjson_val_mut_copy is iterative) */
        yyjson_mut_val *root;

        p->work = yyjson_mut_doc_new(p->alc);
        root = p->work ? yyjson_val_mut_copy(p->work, p->doc) : NULL;
        if (root == NULL) {
            yyjson_mut_doc_free(p->work);
            p->work = NULL;
            return -1;
        }
        yyjson_mut_doc_set_root(p->work, root);
    }
    node = yyjson_mut_doc_get_root(p->work);
    /* walk to the parent */
    while (node != NULL && rest < last) {
        rest = next_token(rest, tok, sizeof(tok));
        if (rest == NULL)
            return -1;
        node = mut_child(node, tok);
    }
    if (node == NULL || next_token(last, tok, sizeof(tok)) == NULL)
        return -1;
    /* the working copy gets a copy (small values, built by eval.c): later operations change it
     * in place (an append to an array this operation added), and the recorded operation must
     * stay what it was */
    copy = yyjson_mut_val_mut_copy(p->work, value);
    if (copy == NULL)
        return -1;
    if (yyjson_mut_is_obj(node)) {
        /* add replaces a member that is there (RFC 6902 §4.1): put, never a second key */
        key = yyjson_mut_strcpy(p->work, tok);
        if (key == NULL || !yyjson_mut_obj_put(node, key, copy))
            return -1;
    } else if (yyjson_mut_is_arr(node) && strcmp(tok, "-") == 0) {
        if (!yyjson_mut_arr_append(node, copy))
            return -1;
    } else {
        return -1;
    }
    op = json_pack(p->out, "{s:s, s:s, s:o}", "op", "add", "path", path, "value", value);
    if (op == NULL || !yyjson_mut_arr_append(p->ops, op))
        return -1;
    p->stale = true;
    return 0;
}

/* ---- applying (RFC 6902) ---- */

/* Whether v nests deeper than max (v itself is level 1 when it is a container), walked with
 * an explicit stack: the guard in front of yyjson's recursive functions. */
static bool mut_deeper(yyjson_mut_val *v, size_t max)
{
    struct level {
        yyjson_mut_val *c;
        bool obj;
        yyjson_mut_obj_iter o;
        yyjson_mut_arr_iter a;
    } * st;
    size_t depth = 0;
    bool deeper = false;

    if (!yyjson_mut_is_ctn(v))
        return false;
    if (max == 0)
        return true;
    st = malloc(max * sizeof(*st));
    if (st == NULL)
        return true; /* refused as if too deep: out of memory */
    for (;;) {
        if (v != NULL && yyjson_mut_is_ctn(v)) {
            if (depth == max) {
                deeper = true;
                break;
            }
            st[depth].c = v;
            st[depth].obj = yyjson_mut_is_obj(v);
            if (st[depth].obj)
                yyjson_mut_obj_iter_init(v, &st[depth].o);
            else
                yyjson_mut_arr_iter_init(v, &st[depth].a);
            depth++;
        }
        v = NULL;
        while (depth > 0) {
            struct level *l = &st[depth - 1];

            if (l->obj) {
                yyjson_mut_val *k = yyjson_mut_obj_iter_next(&l->o);

                if (k != NULL) {
                    v = yyjson_mut_obj_iter_get_val(k);
                    break;
                }
            } else if ((v = yyjson_mut_arr_iter_next(&l->a)) != NULL) {
                break;
            }
            depth--;
        }
        if (depth == 0)
            break;
    }
    free(st);
    return deeper;
}

/* An array index token: "0" or digits without a leading zero; -1 otherwise. */
static long array_index(const char *tok)
{
    uint64_t v;

    if (tok[0] == '0' && tok[1] != '\0')
        return -1;
    return parse_uint(tok, 0, ((uint64_t)1 << 30) - 1, &v) == 0 ? (long)v : -1;
}

/* The parent of path in root and path's last token (decoded into tok); NULL when the parent
 * does not exist or path is the root (""), which the callers handle first. */
static yyjson_mut_val *parent_of(yyjson_mut_val *root, const char *path, char *tok, size_t len)
{
    const char *last = strrchr(path, '/'), *rest = path;
    yyjson_mut_val *node = root;
    long idx;

    if (last == NULL)
        return NULL;
    while (node != NULL && rest < last) {
        rest = next_token(rest, tok, len);
        if (rest == NULL)
            return NULL;
        if (yyjson_mut_is_arr(node))
            node = (idx = array_index(tok)) < 0 ? NULL : yyjson_mut_arr_get(node, (size_t)idx);
        else
            node = mut_child(node, tok);
    }
    if (node == NULL || next_token(last, tok, len) == NULL)
        return NULL;
    return node;
}

struct apply {
    yyjson_mut_doc *doc;
    yyjson_mut_val *root;
    const char *why;
};

/* value (of a->doc, in no container) added at path; -1 with why set. */
static int apply_add(struct apply *a, const char *path, yyjson_mut_val *value)
{
    char tok[PATCH_PATH_MAX];
    yyjson_mut_val *parent, *key;
    long idx;

    if (value == NULL) {
        a->why = "out of memory";
        return -1;
    }
    if (path[0] == '\0') { /* the whole document */
        a->root = value;
        return 0;
    }
    parent = parent_of(a->root, path, tok, sizeof(tok));
    a->why = "the parent does not exist";
    if (yyjson_mut_is_obj(parent)) {
        key = yyjson_mut_strcpy(a->doc, tok);
        if (key == NULL) {
            a->why = "out of memory";
            return -1;
        }
        /* an existing member is replaced where it stands (RFC 6902 §4.1), never doubled */
        if (yyjson_mut_obj_getn(parent, tok, strlen(tok)) != NULL)
            return yyjson_mut_obj_replace(parent, key, value) ? 0 : -1;
        return yyjson_mut_obj_add(parent, key, value) ? 0 : -1;
    }
    if (yyjson_mut_is_arr(parent)) {
        idx = strcmp(tok, "-") == 0 ? (long)yyjson_mut_arr_size(parent) : array_index(tok);
        a->why = "the index is out of range";
        if (idx >= 0 && (size_t)idx <= yyjson_mut_arr_size(parent))
            return yyjson_mut_arr_insert(parent, value, (size_t)idx) ? 0 : -1;
    }
    return -1;
}

/* Removes the value at path; *out (when not NULL) gets it, detached. */
static int apply_remove(struct apply *a, const char *path, yyjson_mut_val **out)
{
    char tok[PATCH_PATH_MAX];
    yyjson_mut_val *parent = parent_of(a->root, path, tok, sizeof(tok)), *v = NULL;
    long idx;

    a->why = "the value does not exist";
    if (yyjson_mut_is_obj(parent))
        v = yyjson_mut_obj_remove_keyn(parent, tok, strlen(tok));
    else if (yyjson_mut_is_arr(parent) && (idx = array_index(tok)) >= 0 &&
             (size_t)idx < yyjson_mut_arr_size(parent))
        v = yyjson_mut_arr_remove(parent, (size_t)idx); /* by index: never the iterator (#194) */
    if (v == NULL)
        return -1;
    if (out != NULL)
        *out = v;
    return 0;
}

static yyjson_mut_val *lookup(yyjson_mut_val *root, const char *path)
{
    char tok[PATCH_PATH_MAX];
    yyjson_mut_val *parent;
    long idx;

    if (path[0] == '\0')
        return root;
    parent = parent_of(root, path, tok, sizeof(tok));
    if (yyjson_mut_is_arr(parent))
        return (idx = array_index(tok)) < 0 ? NULL : yyjson_mut_arr_get(parent, (size_t)idx);
    return yyjson_mut_is_obj(parent) ? yyjson_mut_obj_getn(parent, tok, strlen(tok)) : NULL;
}

/* A string member of an operation, or NULL; a NUL inside would cut the pointer short, so such
 * a member counts as not a string. */
static const char *op_str(yyjson_val *op, const char *key)
{
    yyjson_val *v = yyjson_obj_get(op, key);
    const char *s = yyjson_get_str(v);

    return s != NULL && strlen(s) == yyjson_get_len(v) ? s : NULL;
}

static int apply_one(struct apply *a, yyjson_val *op)
{
    const char *name = op_str(op, "op");
    const char *path = op_str(op, "path");
    const char *from = op_str(op, "from");
    yyjson_val *value = yyjson_obj_get(op, "value");
    yyjson_mut_val *v, *w;
    size_t n;

    a->why = "\"op\" and \"path\" must be strings";
    if (name == NULL || path == NULL)
        return -1;
    a->why = "a path must be empty or start with '/'";
    if ((path[0] != '\0' && path[0] != '/') || (from != NULL && from[0] != '\0' && from[0] != '/'))
        return -1;
    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0 || strcmp(name, "test") == 0) {
        a->why = "\"value\" is missing";
        if (value == NULL)
            return -1;
    } else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
        a->why = "\"from\" is missing";
        if (from == NULL)
            return -1;
    }
    /* values from ops come from an immutable document: yyjson_val_mut_copy is iterative */
    if (strcmp(name, "add") == 0)
        return apply_add(a, path, yyjson_val_mut_copy(a->doc, value));
    if (strcmp(name, "remove") == 0) {
        a->why = "the whole document cannot be removed";
        return path[0] == '\0' ? -1 : apply_remove(a, path, NULL);
    }
    if (strcmp(name, "replace") == 0) {
        a->why = "the value does not exist";
        if (lookup(a->root, path) == NULL)
            return -1;
        if (path[0] != '\0' && apply_remove(a, path, NULL) < 0)
            return -1;
        return apply_add(a, path, yyjson_val_mut_copy(a->doc, value));
    }
    if (strcmp(name, "test") == 0) {
        v = lookup(a->root, path);
        w = yyjson_val_mut_copy(a->doc, value);
        a->why = "the value is nested too deeply to compare";
        if (mut_deeper(v, PATCH_DEPTH_MAX) || mut_deeper(w, PATCH_DEPTH_MAX))
            return -1;
        /* 1 is not 1.0, as in jansson's json_equal */
        a->why = "the test failed: the value differs";
        return v != NULL && w != NULL && yyjson_mut_equals(v, w) ? 0 : -1;
    }
    if (strcmp(name, "copy") == 0) {
        a->why = "\"from\" does not exist";
        v = lookup(a->root, from);
        if (v == NULL)
            return -1;
        a->why = "the value is nested too deeply to copy";
        if (mut_deeper(v, PATCH_DEPTH_MAX))
            return -1;
        return apply_add(a, path, yyjson_mut_val_mut_copy(a->doc, v));
    }
    if (strcmp(name, "move") == 0) {
        n = strlen(from);
        a->why = "\"from\" is a proper prefix of \"path\"";
        if (strncmp(path, from, n) == 0 && path[n] == '/')
            return -1;
        if (strcmp(path, from) == 0)
            return lookup(a->root, from) ? 0 : -1;
        a->why = "\"from\" does not exist";
        if (from[0] == '\0' || apply_remove(a, from, &v) < 0)
            return -1;
        return apply_add(a, path, v);
    }
    a->why = "unknown operation";
    return -1;
}

yyjson_doc *patch_apply(yyjson_val *doc, yyjson_val *ops, struct diag *d)
{
    struct apply a = {yyjson_mut_doc_new(NULL), NULL, "out of memory"};
    yyjson_doc *out = NULL;
    yyjson_val *op;
    size_t i, max;

    if (a.doc == NULL || (a.root = yyjson_val_mut_copy(a.doc, doc)) == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto done;
    }
    if (!yyjson_is_arr(ops)) {
        diag_set(d, NULL, 0, 0, "a JSON Patch must be an array of operations");
        goto done;
    }
    yyjson_arr_foreach (ops, i, max, op) {
        if (!yyjson_is_obj(op) || apply_one(&a, op) < 0) {
            const char *name = yyjson_is_obj(op) ? op_str(op, "op") : NULL;
            const char *path = yyjson_is_obj(op) ? op_str(op, "path") : NULL;

            diag_set(d, NULL, 0, 0, "operation %zu (%s %s): %s", i + 1, name ? name : "?",
                     path ? path : "?", yyjson_is_obj(op) ? a.why : "not an object");
            goto done;
        }
    }
    if (mut_deeper(a.root, PATCH_DEPTH_MAX)) {
        diag_set(d, NULL, 0, 0, "the patched document nests deeper than %u levels",
                 (unsigned)PATCH_DEPTH_MAX);
        goto done;
    }
    /* recursive, on a tree just checked to be no deeper than the cap */
    out = yyjson_mut_val_imut_copy(a.root, NULL);
    if (out == NULL)
        diag_set(d, NULL, 0, 0, "out of memory");
done:
    yyjson_mut_doc_free(a.doc);
    return out;
}
