/*
 * patch.c: JSON Patch building and application (see patch.h).
 */
#include "patch.h"

#include <stdlib.h>
#include <string.h>

int patch_init(struct patch *p, const json_t *doc)
{
    p->ops = json_array();
    p->doc = json_incref((json_t *)doc);
    if (p->ops == NULL || p->doc == NULL) {
        patch_release(p);
        return -1;
    }
    return 0;
}

void patch_release(struct patch *p)
{
    json_decref(p->ops);
    json_decref(p->doc);
    p->ops = NULL;
    p->doc = NULL;
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

static json_t *child(json_t *node, const char *tok)
{
    char *end;
    unsigned long idx;

    if (json_is_object(node))
        return json_object_get(node, tok);
    if (json_is_array(node) && tok[0] >= '0' && tok[0] <= '9') {
        idx = strtoul(tok, &end, 10);
        return *end == '\0' ? json_array_get(node, idx) : NULL;
    }
    return NULL;
}

json_t *patch_get(json_t *doc, const char *path)
{
    char tok[PATCH_PATH_MAX];
    json_t *node = doc;

    while (node != NULL && *path) {
        path = next_token(path, tok, sizeof(tok));
        if (path == NULL)
            return NULL;
        node = child(node, tok);
    }
    return node;
}

/* Makes p->doc private before it is changed: copied when anyone else holds a reference (the
 * review's root, or another patch that started from this one's working copy). */
static int own_doc(struct patch *p)
{
    json_t *copy;

    if (p->doc->refcount == 1)
        return 0;
    copy = json_deep_copy(p->doc);
    if (copy == NULL)
        return -1;
    json_decref(p->doc);
    p->doc = copy;
    return 0;
}

int patch_add(struct patch *p, const char *path, json_t *value)
{
    char tok[PATCH_PATH_MAX];
    const char *rest = path, *last = strrchr(path, '/');
    json_t *node, *op;
    int rc = -1;

    if (value == NULL || last == NULL || own_doc(p) < 0)
        goto out;
    node = p->doc;
    /* walk to the parent */
    while (node != NULL && rest < last) {
        rest = next_token(rest, tok, sizeof(tok));
        if (rest == NULL)
            goto out;
        node = child(node, tok);
    }
    if (node == NULL || next_token(last, tok, sizeof(tok)) == NULL)
        goto out;
    if (json_is_object(node)) {
        if (json_object_set(node, tok, value) < 0)
            goto out;
    } else if (json_is_array(node) && strcmp(tok, "-") == 0) {
        if (json_array_append(node, value) < 0)
            goto out;
    } else {
        goto out;
    }
    /* a copy: later operations change the working copy in place (an append to an array this
     * operation added), and the recorded operation must stay what it was */
    op = json_pack("{s:s, s:s, s:o}", "op", "add", "path", path, "value", json_deep_copy(value));
    if (op == NULL || json_array_append_new(p->ops, op) < 0)
        goto out;
    rc = 0;
out:
    json_decref(value);
    return rc;
}

/* ---- applying (RFC 6902) ---- */

/* An array index token: "0" or digits without a leading zero; -1 otherwise. */
static long array_index(const char *tok)
{
    char *end;
    unsigned long v;

    if (tok[0] < '0' || tok[0] > '9' || (tok[0] == '0' && tok[1] != '\0'))
        return -1;
    v = strtoul(tok, &end, 10);
    return *end == '\0' && v < (unsigned long)1 << 30 ? (long)v : -1;
}

/* The parent of path in *root and path's last token (decoded into tok); NULL when the parent
 * does not exist or path is the root (""), which the callers handle first. */
static json_t *parent_of(json_t *root, const char *path, char *tok, size_t len)
{
    const char *last = strrchr(path, '/'), *rest = path;
    json_t *node = root;

    if (last == NULL)
        return NULL;
    while (node != NULL && rest < last) {
        rest = next_token(rest, tok, len);
        if (rest == NULL)
            return NULL;
        node =
            json_is_array(node) ? json_array_get(node, (size_t)array_index(tok)) : child(node, tok);
    }
    if (node == NULL || next_token(last, tok, len) == NULL)
        return NULL;
    return node;
}

/* Value (stolen) added at path; -1 with why set. */
static int apply_add(json_t **root, const char *path, json_t *value, const char **why)
{
    char tok[PATCH_PATH_MAX];
    json_t *parent;
    long idx;
    int rc = -1;

    if (path[0] == '\0') { /* the whole document */
        json_decref(*root);
        *root = value;
        return 0;
    }
    parent = parent_of(*root, path, tok, sizeof(tok));
    *why = "the parent does not exist";
    if (json_is_object(parent)) {
        rc = json_object_set(parent, tok, value);
    } else if (json_is_array(parent)) {
        idx = strcmp(tok, "-") == 0 ? (long)json_array_size(parent) : array_index(tok);
        *why = "the index is out of range";
        if (idx >= 0 && (size_t)idx <= json_array_size(parent))
            rc = json_array_insert(parent, (size_t)idx, value);
    }
    json_decref(value);
    return rc;
}

/* Removes the value at path; *out (when not NULL) gets it (new reference). */
static int apply_remove(json_t *root, const char *path, json_t **out, const char **why)
{
    char tok[PATCH_PATH_MAX];
    json_t *parent = parent_of(root, path, tok, sizeof(tok)), *v = NULL;
    long idx;

    *why = "the value does not exist";
    if (json_is_object(parent) && (v = json_object_get(parent, tok)) != NULL) {
        json_incref(v);
        json_object_del(parent, tok);
    } else if (json_is_array(parent) && (idx = array_index(tok)) >= 0 &&
               (v = json_array_get(parent, (size_t)idx)) != NULL) {
        json_incref(v);
        json_array_remove(parent, (size_t)idx);
    }
    if (v == NULL)
        return -1;
    if (out != NULL)
        *out = v;
    else
        json_decref(v);
    return 0;
}

static json_t *lookup(json_t *root, const char *path)
{
    char tok[PATCH_PATH_MAX];
    json_t *parent;
    long idx;

    if (path[0] == '\0')
        return root;
    parent = parent_of(root, path, tok, sizeof(tok));
    if (json_is_array(parent))
        return (idx = array_index(tok)) < 0 ? NULL : json_array_get(parent, (size_t)idx);
    return json_is_object(parent) ? json_object_get(parent, tok) : NULL;
}

static int apply_one(json_t **root, const json_t *op, const char **why)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from = json_string_value(json_object_get(op, "from"));
    json_t *value = json_object_get(op, "value"), *v;
    size_t n;

    *why = "\"op\" and \"path\" must be strings";
    if (name == NULL || path == NULL)
        return -1;
    *why = "a path must be empty or start with '/'";
    if ((path[0] != '\0' && path[0] != '/') || (from != NULL && from[0] != '\0' && from[0] != '/'))
        return -1;
    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0 || strcmp(name, "test") == 0) {
        *why = "\"value\" is missing";
        if (value == NULL)
            return -1;
    } else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
        *why = "\"from\" is missing";
        if (from == NULL)
            return -1;
    }
    if (strcmp(name, "add") == 0)
        return apply_add(root, path, json_deep_copy(value), why);
    if (strcmp(name, "remove") == 0) {
        *why = "the whole document cannot be removed";
        return path[0] == '\0' ? -1 : apply_remove(*root, path, NULL, why);
    }
    if (strcmp(name, "replace") == 0) {
        *why = "the value does not exist";
        if (lookup(*root, path) == NULL)
            return -1;
        if (path[0] != '\0' && apply_remove(*root, path, NULL, why) < 0)
            return -1;
        return apply_add(root, path, json_deep_copy(value), why);
    }
    if (strcmp(name, "test") == 0) {
        *why = "the test failed: the value differs";
        return json_equal(lookup(*root, path), value) ? 0 : -1;
    }
    if (strcmp(name, "copy") == 0) {
        *why = "\"from\" does not exist";
        v = lookup(*root, from);
        return v == NULL ? -1 : apply_add(root, path, json_deep_copy(v), why);
    }
    if (strcmp(name, "move") == 0) {
        n = strlen(from);
        *why = "\"from\" is a proper prefix of \"path\"";
        if (strncmp(path, from, n) == 0 && path[n] == '/')
            return -1;
        if (strcmp(path, from) == 0)
            return lookup(*root, from) ? 0 : -1;
        *why = "\"from\" does not exist";
        if (from[0] == '\0' || apply_remove(*root, from, &v, why) < 0)
            return -1;
        return apply_add(root, path, v, why);
    }
    *why = "unknown operation";
    return -1;
}

json_t *patch_apply(const json_t *doc, const json_t *ops, struct diag *d)
{
    json_t *root = json_deep_copy(doc);
    const json_t *op;
    const char *why = "out of memory";
    size_t i;

    if (root == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    if (!json_is_array(ops)) {
        diag_set(d, NULL, 0, 0, "a JSON Patch must be an array of operations");
        json_decref(root);
        return NULL;
    }
    json_array_foreach (ops, i, op) {
        if (!json_is_object(op) || apply_one(&root, op, &why) < 0) {
            diag_set(d, NULL, 0, 0, "operation %zu (%s %s): %s", i + 1,
                     json_is_object(op) && json_is_string(json_object_get(op, "op"))
                         ? json_string_value(json_object_get(op, "op"))
                         : "?",
                     json_is_object(op) && json_is_string(json_object_get(op, "path"))
                         ? json_string_value(json_object_get(op, "path"))
                         : "?",
                     json_is_object(op) ? why : "not an object");
            json_decref(root);
            return NULL;
        }
    }
    return root;
}
