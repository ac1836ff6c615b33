/*
 * yamljson.c: YAML and JSON documents into yyjson documents (see yamljson.h).
 *
 * The reader (yamltree.h) makes a tree within the caps; one pass over its nodes, in the order of
 * the text, builds each document in a mutable document, which is frozen into an immutable one at
 * the document's end (the copy recurses, but no deeper than YAMLJSON_DEPTH_MAX). Going in the
 * order of the text, the first error is the one a reader of events would meet first. A stack of
 * open containers holds the mapping key waiting for its value and, with YAMLJSON_MARKS, the
 * length of the node's JSON Pointer in a shared buffer. Invariants: the stack never exceeds
 * YAMLJSON_DEPTH_MAX (the reader's cap); every value made here
 * belongs to the document being built (a pending key too, until its value comes), and that
 * document to the builder until it is frozen into the result. Repeated keys are found with one
 * hash set per document of (mapping, key), as yyjson's own lookups are linear.
 */
#include "yamljson.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "bounds.h"
#include "patch.h"
#include "yamltree.h"

#define CORE_TAG "tag:yaml.org,2002:"
/* Slots of a document's key set when it is first needed (a power of two). */
#define YAMLJSON_KEYSET_MIN 64u

struct frame {
    const struct yamltree_node *tnode; /* the reader's node */
    yyjson_mut_val *node;              /* in ybuild.doc */
    yyjson_mut_val *key; /* in ybuild.doc: a mapping's key waiting for its value, or NULL */
    uint64_t map;        /* a mapping's number in the document, for the key set */
    size_t ptr_len;      /* length of this node's pointer in ybuild.ptr */
    bool ptr_ok;         /* the pointer fitted; marks are kept below it */
};

/* One key of one mapping; s is NULL in a free slot. s points into ybuild.doc. */
struct kslot {
    const char *s;
    size_t len;
    uint64_t map;
};

struct ybuild {
    const char *name;
    unsigned flags;
    struct diag *d;
    struct yamljson *out;
    yyjson_mut_doc *doc;   /* owned: the document being built, or NULL */
    yyjson_mut_val *root;  /* in doc */
    yyjson_mut_doc *marks; /* owned: its marks (root {pointer: [line, column]}), or NULL */
    uint64_t maps;         /* mappings started in the document */
    uint64_t seed;         /* of the key hash */
    struct kslot *keys;    /* owned: the key set, keys_cap slots (a power of two) */
    size_t keys_cap, keys_n;
    unsigned doc_index, doc_line, doc_column;
    size_t nodes;
    struct frame stack[YAMLJSON_DEPTH_MAX];
    size_t depth;
    char ptr[YAMLJSON_POINTER_MAX];
};

static int yerr(struct ybuild *b, const struct yamltree_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int yerr(struct ybuild *b, const struct yamltree_node *n, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_set(b->d, b->name, n->line, n->column, "document %u: %s", b->doc_index, msg);
    return -1;
}

void yamljson_free(struct yamljson *y)
{
    for (size_t i = 0; i < y->n; i++) {
        yyjson_doc_free(y->docs[i].doc);
        yyjson_doc_free(y->docs[i].marks);
        free(y->docs[i].mark_keys);
    }
    free(y->docs);
    y->docs = NULL;
    y->n = 0;
}

/* ---- the key set ---- */

static uint64_t key_hash(uint64_t seed, uint64_t map, const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull ^ seed ^ (map * 0x9E3779B97F4A7C15ull);

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

/* Adds (map, s) to the set: 1 when added, 0 when it was there already, -1 when out of memory.
 * s must live as long as the set (it is in the document being built). */
static int key_add(struct ybuild *b, uint64_t map, const char *s, size_t len)
{
    size_t mask, i;

    if ((b->keys_n + 1) * 2 > b->keys_cap) {
        size_t cap = b->keys_cap ? b->keys_cap * 2 : YAMLJSON_KEYSET_MIN;
        struct kslot *grown = calloc(cap, sizeof(*grown));

        if (grown == NULL)
            return -1;
        for (size_t k = 0; k < b->keys_cap; k++) {
            const struct kslot *o = &b->keys[k];

            if (o->s == NULL)
                continue;
            for (i = key_hash(b->seed, o->map, o->s, o->len) & (cap - 1); grown[i].s != NULL;
                 i = (i + 1) & (cap - 1))
                ;
            grown[i] = *o;
        }
        free(b->keys);
        b->keys = grown;
        b->keys_cap = cap;
    }
    mask = b->keys_cap - 1;
    for (i = key_hash(b->seed, map, s, len) & mask; b->keys[i].s != NULL; i = (i + 1) & mask)
        if (b->keys[i].map == map && b->keys[i].len == len && memcmp(b->keys[i].s, s, len) == 0)
            return 0;
    b->keys[i] = (struct kslot){s, len, map};
    b->keys_n++;
    return 1;
}

/* Drops the document being built, its marks and its key set. */
static void drop_doc(struct ybuild *b)
{
    yyjson_mut_doc_free(b->doc);
    yyjson_mut_doc_free(b->marks);
    free(b->keys);
    b->doc = b->marks = NULL;
    b->root = NULL;
    b->keys = NULL;
    b->keys_cap = b->keys_n = 0;
    b->maps = 0;
}

/* ---- scalars ---- */

static bool one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

int yamljson_resolve_plain(yyjson_mut_doc *doc, const char *s, size_t len, yyjson_mut_val **out,
                           const char **why)
{
    char *end;
    long long v;
    double f;
    int base = 10;

    *out = NULL;
    if (memchr(s, '\0', len) != NULL) /* "\0" can only come from a quoted scalar, but be sure */
        return (*out = yyjson_mut_strncpy(doc, s, len)) ? 0 : -1;
    switch (yamltree_resolve(s)) {
    case YAMLTREE_NULL: return (*out = yyjson_mut_null(doc)) ? 0 : -1;
    case YAMLTREE_BOOL: return (*out = yyjson_mut_bool(doc, s[0] == 't' || s[0] == 'T')) ? 0 : -1;
    case YAMLTREE_INT:
        if (strncmp(s, "0o", 2) == 0)
            base = 8;
        else if (strncmp(s, "0x", 2) == 0)
            base = 16;
        errno = 0;
        v = strtoll(base == 10 ? s : s + 2, &end, base);
        if (errno != 0 || *end != '\0') {
            *why = "integer out of range (64 bits); quote it for a string";
            return -1;
        }
        /* as json_read() makes them: unsigned when not negative */
        *out = v >= 0 ? yyjson_mut_uint(doc, (uint64_t)v) : yyjson_mut_sint(doc, (int64_t)v);
        return *out ? 0 : -1;
    case YAMLTREE_FLOAT:
        if (strpbrk(s, "0123456789") == NULL) { /* .inf, .nan */
            *why = "infinity and NaN have no JSON form; quote the value for a string";
            return -1;
        }
        errno = 0;
        f = strtod(s, &end);
        if (errno == ERANGE && (f > 1 || f < -1)) {
            *why = "number out of range; quote it for a string";
            return -1;
        }
        return (*out = yyjson_mut_real(doc, f)) ? 0 : -1;
    case YAMLTREE_STR: break;
    }
    return (*out = yyjson_mut_strncpy(doc, s, len)) ? 0 : -1;
}

/* The value of a scalar, in b->doc, or NULL with the error recorded. */
static yyjson_mut_val *scalar_value(struct ybuild *b, const struct yamltree_node *n)
{
    const char *s = n->s, *tag = n->tag;
    const char *why = "out of memory", *t;
    size_t len = n->len;
    yyjson_mut_val *v = NULL;
    bool plain = n->plain;

    if (tag == NULL) {
        if (!plain)
            v = yyjson_mut_strncpy(b->doc, s, len);
        else if (yamljson_resolve_plain(b->doc, s, len, &v, &why) < 0)
            v = NULL;
    } else if (strcmp(tag, "!") == 0 || strcmp(tag, CORE_TAG "str") == 0 ||
               strcmp(tag, CORE_TAG "timestamp") == 0 || strcmp(tag, CORE_TAG "binary") == 0) {
        v = yyjson_mut_strncpy(b->doc, s, len);
    } else if (strncmp(tag, CORE_TAG, strlen(CORE_TAG)) == 0 &&
               one_of(t = tag + strlen(CORE_TAG),
                      (const char *const[]){"int", "float", "bool", "null", NULL})) {
        if (yamljson_resolve_plain(b->doc, s, len, &v, &why) == 0 &&
            !(strcmp(t, "int") == 0     ? yyjson_mut_is_int(v)
              : strcmp(t, "float") == 0 ? yyjson_mut_is_num(v)
              : strcmp(t, "bool") == 0  ? yyjson_mut_is_bool(v)
                                        : yyjson_mut_is_null(v))) {
            yerr(b, n, "\"%.64s\" is not a valid !!%s", s, t);
            return NULL; /* v stays in b->doc, unattached, until the document is dropped */
        }
    } else {
        yerr(b, n, "unsupported YAML tag %.64s", tag);
        return NULL;
    }
    if (v == NULL)
        yerr(b, n, "%s", why);
    return v;
}

/* ---- the tree ---- */

static void mark(struct ybuild *b, const struct yamltree_node *n)
{
    yyjson_mut_val *k, *at;

    if (b->marks == NULL)
        return;
    /* every pointer is marked once (keys are unique, and keys whose pointer would be ambiguous
     * are not marked), so adding never makes a duplicate; out of memory only loses marks */
    k = yyjson_mut_strcpy(b->marks, b->ptr);
    at = json_pack(b->marks, "[I, I]", (int64_t)n->line, (int64_t)n->column);
    if (k != NULL && at != NULL)
        yyjson_mut_obj_add(yyjson_mut_doc_get_root(b->marks), k, at);
}

/* Attaches v (in b->doc) to the open container, or makes it the root; leaves b->ptr at v's
 * pointer. *ptr_ok is false when that pointer did not fit (v's marks are not kept). The reader
 * counted the node against YAMLJSON_NODES_MAX. */
static int attach(struct ybuild *b, yyjson_mut_val *v, const struct yamltree_node *n, bool *ptr_ok)
{
    struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    char idx[32];
    bool ok;

    *ptr_ok = f == NULL || f->ptr_ok;
    if (f == NULL) {
        b->root = v;
        yyjson_mut_doc_set_root(b->doc, v);
        b->ptr[0] = '\0';
        mark(b, n);
        return 0;
    }
    b->ptr[f->ptr_len] = '\0';
    if (yyjson_mut_is_arr(f->node)) {
        snprintf(idx, sizeof(idx), "%zu", yyjson_mut_arr_size(f->node));
        ok = yyjson_mut_arr_append(f->node, v);
        if (*ptr_ok && patch_ptr_append(b->ptr, sizeof(b->ptr), idx) < 0)
            *ptr_ok = false;
    } else {
        const char *k = yyjson_mut_get_str(f->key);

        /* a key with a NUL byte has no pointer of its own: "a\0b" would mark "/a" */
        if (*ptr_ok && (strlen(k) != yyjson_mut_get_len(f->key) ||
                        patch_ptr_append(b->ptr, sizeof(b->ptr), k) < 0))
            *ptr_ok = false;
        ok = yyjson_mut_obj_add(f->node, f->key, v); /* on_scalar refused a repeated key */
        f->key = NULL;
    }
    if (!ok)
        return yerr(b, n, "out of memory");
    if (*ptr_ok)
        mark(b, n);
    return 0;
}

/* The checks on a scalar that come before it is counted; its value in *v (NULL for a key). */
static int scalar_checks(struct ybuild *b, const struct yamltree_node *n, yyjson_mut_val **v)
{
    *v = NULL;
    if (n->anchored)
        return yerr(b, n, "YAML anchors are not supported");
    if (!n->is_key && (*v = scalar_value(b, n)) == NULL)
        return -1;
    return 0;
}

static int on_scalar(struct ybuild *b, const struct yamltree_node *n)
{
    struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    yyjson_mut_val *v;
    bool ok;
    int added;

    if (scalar_checks(b, n, &v) < 0)
        return -1;
    if (n->is_key) {
        /* a key is its text, as sigs.k8s.io/yaml makes it: "1: x" has the key "1" */
        f->key = yyjson_mut_strncpy(b->doc, n->s, n->len);
        if (f->key == NULL)
            return yerr(b, n, "out of memory");
        added = key_add(b, f->map, yyjson_mut_get_str(f->key), n->len);
        if (added < 0)
            return yerr(b, n, "out of memory");
        if (added == 0)
            return yerr(b, n, "duplicate key \"%.64s\"", n->s);
        return 0;
    }
    return attach(b, v, n, &ok);
}

/* The checks on a mapping or sequence that come before its depth and its count. */
static int container_checks(struct ybuild *b, const struct yamltree_node *n)
{
    bool map = n->kind == YAMLTREE_MAP;

    if (n->anchored)
        return yerr(b, n, "YAML anchors are not supported");
    if (n->tag != NULL && strcmp(n->tag, map ? CORE_TAG "map" : CORE_TAG "seq") != 0)
        return yerr(b, n, "unsupported YAML tag %.64s", n->tag);
    if (n->is_key)
        return yerr(b, n, "a key must be a string, not a %s", map ? "mapping" : "sequence");
    return 0;
}

static int on_container(struct ybuild *b, const struct yamltree_node *n)
{
    bool map = n->kind == YAMLTREE_MAP;
    yyjson_mut_val *v;
    bool ok;

    if (container_checks(b, n) < 0)
        return -1;
    v = map ? yyjson_mut_obj(b->doc) : yyjson_mut_arr(b->doc);
    if (v == NULL)
        return yerr(b, n, "out of memory");
    if (attach(b, v, n, &ok) < 0)
        return -1;
    /* the reader kept the depth within YAMLJSON_DEPTH_MAX */
    b->stack[b->depth].tnode = n;
    b->stack[b->depth].node = v;
    b->stack[b->depth].key = NULL;
    b->stack[b->depth].map = map ? ++b->maps : 0;
    b->stack[b->depth].ptr_len = strlen(b->ptr);
    b->stack[b->depth].ptr_ok = ok;
    b->depth++;
    return 0;
}

/* One node, in the order of the text: the containers that ended before it are closed first. */
static int on_node(struct ybuild *b, const struct yamltree_node *n)
{
    while (b->depth > 0 && b->stack[b->depth - 1].tnode != n->parent)
        b->depth--;
    if (n->kind == YAMLTREE_SCALAR)
        return on_scalar(b, n);
    return on_container(b, n);
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(yyjson_get_str(*(yyjson_val *const *)a), yyjson_get_str(*(yyjson_val *const *)b));
}

/* The sorted keys of a document's marks, for yamljson_mark(). 0, or -1 when out of memory. */
static int index_marks(struct yamljson_doc *doc)
{
    yyjson_val *root = yyjson_doc_get_root(doc->marks), *k, *v;
    size_t i, max, n = 0;

    doc->n_marks = yyjson_obj_size(root);
    doc->mark_keys = calloc(doc->n_marks ? doc->n_marks : 1, sizeof(*doc->mark_keys));
    if (doc->mark_keys == NULL)
        return -1;
    yyjson_obj_foreach (root, i, max, k, v) {
        (void)v;
        doc->mark_keys[n++] = k;
    }
    qsort(doc->mark_keys, n, sizeof(*doc->mark_keys), key_cmp);
    return 0;
}

/* Appends the document (taking over doc and marks) to the result. */
static int add_doc(struct ybuild *b, yyjson_doc *doc, yyjson_doc *marks)
{
    struct yamljson_doc *docs = reallocarray(b->out->docs, b->out->n + 1, sizeof(*docs));
    struct yamljson_doc *nd;

    if (docs == NULL) {
        yyjson_doc_free(doc);
        yyjson_doc_free(marks);
        diag_set(b->d, b->name, 0, 0, "out of memory");
        return -1;
    }
    b->out->docs = docs;
    nd = &docs[b->out->n++];
    *nd = (struct yamljson_doc){
        doc, yyjson_doc_get_root(doc), b->doc_index, b->doc_line, b->doc_column, marks, NULL, 0};
    if (marks != NULL && index_marks(nd) < 0) {
        diag_set(b->d, b->name, 0, 0, "out of memory");
        return -1;
    }
    return 0;
}

static int on_doc_end(struct ybuild *b)
{
    yyjson_doc *doc = NULL, *marks = NULL;
    int rc = 0;

    if (b->root != NULL && !yyjson_mut_is_null(b->root)) {
        /* recursive copies, bounded by YAMLJSON_DEPTH_MAX (and 2 for the marks) */
        doc = json_freeze(b->root);
        marks = b->marks ? json_freeze(yyjson_mut_doc_get_root(b->marks)) : NULL;
        if (doc == NULL || (b->marks != NULL && marks == NULL)) {
            yyjson_doc_free(doc);
            yyjson_doc_free(marks);
            diag_set(b->d, b->name, 0, 0, "out of memory");
            rc = -1;
        } else {
            rc = add_doc(b, doc, marks);
        }
    }
    drop_doc(b);
    b->depth = 0;
    return rc;
}

/* A new document to build into (and its marks). */
static int on_doc_start(struct ybuild *b, const struct yamltree_doc *doc)
{
    drop_doc(b);
    b->doc_index = doc->index;
    b->doc_line = doc->line;
    b->doc_column = doc->column;
    b->doc = yyjson_mut_doc_new(NULL);
    if (b->doc != NULL && (b->flags & YAMLJSON_MARKS)) {
        b->marks = yyjson_mut_doc_new(NULL);
        if (b->marks != NULL)
            yyjson_mut_doc_set_root(b->marks, yyjson_mut_obj(b->marks));
    }
    if (b->doc == NULL ||
        ((b->flags & YAMLJSON_MARKS) && yyjson_mut_doc_get_root(b->marks) == NULL)) {
        diag_set(b->d, b->name, doc->line, doc->column, "document %u: out of memory", doc->index);
        return -1;
    }
    return 0;
}

/* Why the reader stopped, in yamljson's words; a node a cap refused is checked first, as it
 * would have been before its count. */
static int read_failed(struct ybuild *b, const struct yamltree_error *e)
{
    const struct yamltree_node *at = e->at;
    yyjson_mut_val *v;
    char ctx[160] = "";

    b->doc_index = e->doc;
    if (at != NULL && b->doc != NULL &&
        (at->kind == YAMLTREE_SCALAR ? scalar_checks(b, at, &v) : container_checks(b, at)) < 0)
        return -1;
    switch (e->code) {
    case YAMLTREE_E_DEPTH: return yerr(b, at, "nested deeper than %u", YAMLJSON_DEPTH_MAX);
    case YAMLTREE_E_NODES: return yerr(b, at, "more than %u YAML nodes", YAMLJSON_NODES_MAX);
    case YAMLTREE_E_DOCS:
        diag_set(b->d, b->name, e->line, e->column, "document %u: more than %u documents", e->doc,
                 YAMLJSON_DOCS_MAX);
        return -1;
    case YAMLTREE_E_ALIAS:
        diag_set(b->d, b->name, e->line, e->column, "document %u: YAML aliases are not supported",
                 e->doc);
        return -1;
    case YAMLTREE_E_SYNTAX:
        if (e->context != NULL)
            snprintf(ctx, sizeof(ctx), " (%s that starts at %u:%u)", e->context, e->context_line,
                     e->context_column);
        diag_set(b->d, b->name, e->line, e->column, "document %u: YAML: %s%s", e->doc ? e->doc : 1,
                 e->problem ? e->problem : "error", ctx);
        return -1;
    case YAMLTREE_E_MEMORY:
    case YAMLTREE_OK: break;
    }
    diag_set(b->d, b->name, e->line, e->column, "out of memory");
    return -1;
}

static int parse_yaml(struct ybuild *b, const char *text, size_t len)
{
    static const struct yamltree_limits lim = {YAMLJSON_DEPTH_MAX, YAMLJSON_NODES_MAX,
                                               YAMLJSON_DOCS_MAX};
    struct yamltree t;
    int read = yamltree_read(text, len, &lim, 0, &t), rc = 0;
    size_t i = 0;

    /* the documents in turn, each node in the order of the text: the first error is the one a
     * reader of events would meet first */
    for (size_t k = 0; rc == 0 && k < t.n_docs; k++) {
        rc = on_doc_start(b, &t.docs[k]);
        for (; rc == 0 && i < t.n_nodes && t.nodes[i]->doc == t.docs[k].index; i++)
            rc = on_node(b, t.nodes[i]);
        if (rc == 0 && t.docs[k].ended)
            rc = on_doc_end(b);
    }
    if (rc == 0 && read < 0)
        rc = read_failed(b, &t.err);
    b->depth = 0;
    drop_doc(b);
    yamltree_free(&t);
    return rc;
}

/* 1-based line and column of byte off in text. */
static void position(const char *text, size_t off, unsigned *line, unsigned *column)
{
    const char *nl;

    *line = 1;
    *column = 1;
    for (const char *p = text; p < text + off && (nl = memchr(p, '\n', off - (size_t)(p - text)));
         p = nl + 1) {
        (*line)++;
        *column = (unsigned)(off - (size_t)(nl + 1 - text)) + 1;
    }
    if (*line == 1)
        *column = (unsigned)off + 1;
}

/* One JSON value of the text, starting at byte off: its error in b->d, positioned in the whole
 * text. json_read() positions a syntax error within the bytes it was given (from off on), and
 * reports the others (a repeated key, a number out of range, nesting) without a position: those
 * point at the value's start. */
static void json_error(struct ybuild *b, const char *text, size_t off, const struct diag *jd)
{
    static const char prefix[] = "invalid JSON at ";
    unsigned line, column;
    const char *msg = jd->msg, *colon;

    position(text, off, &line, &column);
    if (jd->line > 0) {
        column = jd->line == 1 ? column + jd->column - 1 : jd->column;
        line += jd->line - 1;
    }
    /* the position is the message's own: drop json_read()'s relative one */
    if (strncmp(msg, prefix, sizeof(prefix) - 1) == 0 &&
        (colon = strstr(msg + sizeof(prefix) - 1, ": ")) != NULL)
        msg = colon + 2;
    diag_set(b->d, b->name, line, column, "document %u: JSON: %s", b->doc_index, msg);
}

/* JSON text: one or more values one after another, as kubectl prints them. */
static int parse_json(struct ybuild *b, const char *text, size_t len, size_t off)
{
    yyjson_doc *doc;
    struct diag jd;
    unsigned line, column;

    for (;;) {
        while (off < len && strchr(" \t\r\n", text[off]) != NULL)
            off++;
        if (off == len)
            return 0;
        if (++b->doc_index > YAMLJSON_DOCS_MAX) {
            position(text, off, &line, &column);
            diag_set(b->d, b->name, line, column, "more than %u documents", YAMLJSON_DOCS_MAX);
            return -1;
        }
        /* any root, to say "an object or an array" here; duplicate keys, integers beyond 64
         * bits and nesting past YAMLJSON_DEPTH_MAX are refused by json_read() */
        diag_clear(&jd);
        doc = json_read(text + off, len - off, JSON_READ_PREFIX | JSON_READ_ANY_ROOT,
                        YAMLJSON_DEPTH_MAX, NULL, &jd);
        if (doc == NULL) {
            json_error(b, text, off, &jd);
            return -1;
        }
        position(text, off, &b->doc_line, &b->doc_column);
        off += yyjson_doc_get_read_size(doc);
        if (!yyjson_is_ctn(yyjson_doc_get_root(doc))) {
            yyjson_doc_free(doc);
            diag_set(b->d, b->name, b->doc_line, b->doc_column,
                     "document %u: JSON: expected an object or an array", b->doc_index);
            return -1;
        }
        /* the values and the keys, as the YAML reader counts them */
        b->nodes += yyjson_doc_get_val_count(doc);
        if (b->nodes > YAMLJSON_NODES_MAX) {
            yyjson_doc_free(doc);
            diag_set(b->d, b->name, b->doc_line, b->doc_column, "document %u: more than %u nodes",
                     b->doc_index, YAMLJSON_NODES_MAX);
            return -1;
        }
        if (add_doc(b, doc, NULL) < 0)
            return -1;
    }
}

int yamljson_parse(const char *name, const char *text, size_t len, unsigned flags,
                   struct yamljson *out, struct diag *d)
{
    struct ybuild *b = calloc(1, sizeof(*b));
    const char *nul = memchr(text, '\0', len);
    size_t i = 0;
    unsigned line, column;
    int rc = -1;

    out->docs = NULL;
    out->n = 0;
    if (b == NULL) {
        diag_set(d, name, 0, 0, "out of memory");
        return -1;
    }
    b->name = name;
    b->flags = flags;
    b->d = d;
    b->out = out;
    b->seed = (uint64_t)(uintptr_t)b; /* varies from run to run (ASLR): keys cannot be chosen to
                                         collide */
    if (nul != NULL) {
        position(text, (size_t)(nul - text), &line, &column);
        diag_set(d, name, line, column, "a NUL byte: not a text file");
        goto out;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        i = 3; /* a UTF-8 byte order mark */
    while (i < len && strchr(" \t\r\n", text[i]) != NULL)
        i++;
    if (i < len && (text[i] == '{' || text[i] == '['))
        rc = parse_json(b, text, len, i); /* from past the mark: JSON has none */
    else
        rc = parse_yaml(b, text, len);
out:
    drop_doc(b);
    free(b);
    if (rc < 0)
        yamljson_free(out);
    return rc;
}

/* Reads all of f, at most max bytes. New buffer in *buf (free()), NUL-terminated. */
static int read_all(FILE *f, const char *name, size_t max, char **buf, size_t *len, struct diag *d)
{
    struct buf b = {0};
    char chunk[16 * 1024];
    size_t got;

    do { /* once more at the end of f: an empty file is an empty buffer, not NULL */
        got = fread(chunk, 1, sizeof(chunk), f);
        if (got > max - b.len) {
            buf_free(&b);
            diag_set(d, name, 0, 0, "more than %zu bytes", max);
            return -1;
        }
        if (buf_add(&b, chunk, got, max) < 0) {
            buf_free(&b);
            diag_set(d, name, 0, 0, "out of memory");
            return -1;
        }
    } while (got > 0);
    if (ferror(f)) {
        buf_free(&b);
        diag_set(d, name, 0, 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    *buf = b.p;
    *len = b.len;
    return 0;
}

int yamljson_read_file(const char *path, unsigned flags, struct yamljson *out, struct diag *d)
{
    bool in = strcmp(path, "-") == 0;
    const char *name = in ? "<stdin>" : path;
    FILE *f = in ? stdin : fopen(path, "re");
    char *buf = NULL;
    size_t len = 0;
    int rc = -1;

    out->docs = NULL;
    out->n = 0;
    if (f == NULL) {
        diag_set(d, name, 0, 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    if (read_all(f, name, YAMLJSON_FILE_MAX_BYTES, &buf, &len, d) == 0)
        rc = yamljson_parse(name, buf, len, flags, out, d);
    free(buf);
    if (!in)
        fclose(f);
    return rc;
}

void yamljson_item_pointer(char *out, size_t len, const char *ptr, size_t i)
{
    int n = snprintf(out, len, "%s/items/%zu", ptr, i);

    if (n < 0 || (size_t)n >= len)
        out[0] = '\0';
}

bool yamljson_mark(const struct yamljson_doc *doc, const char *ptr, unsigned *line,
                   unsigned *column)
{
    size_t lo = 0, hi = doc->mark_keys ? doc->n_marks : 0, mid;
    int64_t l, c;
    int cmp;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        cmp = strcmp(ptr, yyjson_get_str(doc->mark_keys[mid]));
        if (cmp == 0) {
            yyjson_val *at = yyjson_obj_iter_get_val(doc->mark_keys[mid]);

            if (!json_int64(yyjson_arr_get(at, 0), &l) || !json_int64(yyjson_arr_get(at, 1), &c))
                return false;
            *line = (unsigned)l;
            *column = (unsigned)c;
            return true;
        }
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}
