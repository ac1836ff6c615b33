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
