/*
 * yamltree.c: libyaml's events into a bounded tree (see yamltree.h).
 *
 * Invariants: the stack of open containers never exceeds the caller's max_depth (checked before
 * a push), so nothing here or in a caller's walk recurses deeper than that; every node is in
 * t->nodes (or is t->err.at) and is freed from there, never through its parent; a node is
 * counted against max_nodes before it is attached.
 */
#include "yamltree.h"

#include <openssl/crypto.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* What one reading needs besides the tree. */
struct yread {
    struct yamltree *t;
    const struct yamltree_limits *lim;
    struct yamltree_node **stack; /* lim->max_depth open containers */
    size_t depth;
    size_t counted; /* nodes counted against max_nodes */
    size_t skipped; /* bytes dropped before libyaml saw the text (a byte order mark) */
};

static void node_free(const struct yamltree *t, struct yamltree_node *n)
{
    if (n == NULL)
        return;
    if (n->s != NULL && (t->flags & YAMLTREE_WIPE))
        OPENSSL_cleanse(n->s, n->len);
    free(n->s);
    free(n->tag);
    free(n->kids);
    free(n);
}

void yamltree_free(struct yamltree *t)
{
    for (size_t i = 0; i < t->n_nodes; i++)
        node_free(t, t->nodes[i]);
    node_free(t, t->err.at);
    free(t->nodes);
    free(t->docs);
    memset(t, 0, sizeof(*t));
}

/* Makes room for one more element past n: the array, moved or not, or NULL when out of memory
 * (arr is then unchanged). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return arr;
    ncap = *cap ? *cap * 2 : 8;
    p = reallocarray(arr, ncap, elem);
    if (p != NULL)
        *cap = ncap;
    return p;
}

static int fail(struct yread *r, enum yamltree_fail code, const yaml_mark_t *m)
{
    struct yamltree_error *e = &r->t->err;

    e->code = code;
    e->line = m ? (unsigned)m->line + 1 : 0;
    e->column = m ? (unsigned)m->column + 1 : 0;
    e->doc = (unsigned)r->t->n_docs;
    return -1;
}

static char *dup_tag(const yaml_char_t *tag, bool *oom)
{
    char *s = tag ? strdup((const char *)tag) : NULL;

    *oom = tag != NULL && s == NULL;
    return s;
}

/* A new node from an event, not yet attached. NULL when out of memory. */
static struct yamltree_node *node_new(struct yread *r, const yaml_event_t *ev)
{
    struct yamltree_node *n = calloc(1, sizeof(*n));
    const yaml_char_t *tag = NULL, *anchor = NULL;
    bool oom = false;

    if (n == NULL)
        return NULL;
    n->line = (unsigned)ev->start_mark.line + 1;
    n->column = (unsigned)ev->start_mark.column + 1;
    n->doc = (unsigned)r->t->n_docs;
    n->parent = r->depth ? r->stack[r->depth - 1] : NULL;
    n->is_key = n->parent != NULL && n->parent->kind == YAMLTREE_MAP && n->parent->n % 2 == 0;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n->kind = YAMLTREE_SCALAR;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        tag = ev->data.scalar.tag;
        anchor = ev->data.scalar.anchor;
        n->len = ev->data.scalar.length;
        n->s = malloc(n->len + 1);
        if (n->s != NULL) {
            memcpy(n->s, ev->data.scalar.value, n->len);
            n->s[n->len] = '\0';
        }
        oom = n->s == NULL;
        break;
    case YAML_SEQUENCE_START_EVENT:
        n->kind = YAMLTREE_SEQ;
        tag = ev->data.sequence_start.tag;
        anchor = ev->data.sequence_start.anchor;
        break;
    case YAML_MAPPING_START_EVENT:
        n->kind = YAMLTREE_MAP;
        tag = ev->data.mapping_start.tag;
        anchor = ev->data.mapping_start.anchor;
        break;
    default: n->kind = YAMLTREE_ALIAS; break;
    }
    n->anchored = anchor != NULL;
    if (!oom)
        n->tag = dup_tag(tag, &oom);
    if (oom) {
        node_free(r->t, n);
        return NULL;
    }
    return n;
}

/* Counts n against the caps and attaches it (to its parent, and as its document's root). */
static int attach(struct yread *r, struct yamltree_node *n, const yaml_event_t *ev)
{
    struct yamltree *t = r->t;
    struct yamltree_node *p = n->parent;
    struct yamltree_doc *doc = t->n_docs ? &t->docs[t->n_docs - 1] : NULL;
    struct yamltree_node **nodes, **kids;
    bool container = n->kind == YAMLTREE_SEQ || n->kind == YAMLTREE_MAP;
    bool deep = container && r->depth >= r->lim->max_depth;

    if (deep || ++r->counted > r->lim->max_nodes) {
        t->err.at = n;
        return fail(r, deep ? YAMLTREE_E_DEPTH : YAMLTREE_E_NODES, &ev->start_mark);
    }
    nodes = grow(t->nodes, &t->cap_nodes, t->n_nodes, sizeof(*t->nodes));
    if (nodes != NULL)
        t->nodes = nodes;
    kids = nodes != NULL && p != NULL ? grow(p->kids, &p->cap, p->n, sizeof(*p->kids)) : NULL;
    if (kids != NULL)
        p->kids = kids;
    if (nodes == NULL || (p != NULL && kids == NULL)) {
        node_free(t, n);
        return fail(r, YAMLTREE_E_MEMORY, &ev->start_mark);
    }
    t->nodes[t->n_nodes++] = n;
    if (p != NULL) {
        p->kids[p->n++] = n;
    } else if (doc != NULL) {
        doc->root = n;
        doc->line = n->line;
        doc->column = n->column;
    }
    if (container)
        r->stack[r->depth++] = n;
    return 0;
}

static int on_doc_start(struct yread *r, const yaml_event_t *ev)
{
    struct yamltree *t = r->t;

    struct yamltree_doc *docs;
    unsigned index = (unsigned)t->n_docs + 1;

    if (r->lim->max_docs && t->n_docs >= r->lim->max_docs) {
        fail(r, YAMLTREE_E_DOCS, &ev->start_mark);
        t->err.doc = index; /* the document refused */
        return -1;
    }
    docs = grow(t->docs, &t->cap_docs, t->n_docs, sizeof(*t->docs));
    if (docs == NULL)
        return fail(r, YAMLTREE_E_MEMORY, &ev->start_mark);
    t->docs = docs;
    t->docs[t->n_docs++] = (struct yamltree_doc){NULL, index, (unsigned)ev->start_mark.line + 1,
                                                 (unsigned)ev->start_mark.column + 1, false};
    return 0;
}

/* 1 at the end of the stream, 0 to go on, -1 to stop. */
static int on_event(struct yread *r, const yaml_event_t *ev)
{
    struct yamltree_node *n;

    switch (ev->type) {
    case YAML_STREAM_END_EVENT: return 1;
    case YAML_DOCUMENT_START_EVENT: return on_doc_start(r, ev);
    case YAML_DOCUMENT_END_EVENT:
        if (r->t->n_docs > 0)
            r->t->docs[r->t->n_docs - 1].ended = true;
        return 0;
    case YAML_ALIAS_EVENT:
        if (!(r->t->flags & YAMLTREE_KEEP_ALIASES))
            return fail(r, YAMLTREE_E_ALIAS, &ev->start_mark);
        /* fall through */
    case YAML_SCALAR_EVENT:
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        n = node_new(r, ev);
        if (n == NULL)
            return fail(r, YAMLTREE_E_MEMORY, &ev->start_mark);
        return attach(r, n, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (r->depth > 0) /* libyaml guarantees the nesting */
            r->depth--;
        return 0;
    default: return 0;
    }
}

static void syntax_failed(struct yread *r, const yaml_parser_t *p)
{
    struct yamltree_error *e = &r->t->err;

    fail(r, p->error == YAML_MEMORY_ERROR ? YAMLTREE_E_MEMORY : YAMLTREE_E_SYNTAX,
         &p->problem_mark);
    e->libyaml_error = (int)p->error;
    e->problem = p->problem;
    e->context = p->context;
    e->context_line = (unsigned)p->context_mark.line + 1;
    e->context_column = (unsigned)p->context_mark.column + 1;
    e->problem_value = p->problem_value;
    e->problem_offset = p->problem_offset + r->skipped;
}

int yamltree_read(const char *text, size_t len, const struct yamltree_limits *lim, unsigned flags,
                  struct yamltree *t)
{
    struct yread r = {.t = t, .lim = lim};
    yaml_parser_t parser;
    yaml_event_t ev;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    t->flags = flags;
    r.stack = calloc(lim->max_depth ? lim->max_depth : 1, sizeof(*r.stack));
    if (r.stack == NULL || !yaml_parser_initialize(&parser)) {
        free(r.stack);
        return fail(&r, YAMLTREE_E_MEMORY, NULL);
    }
    /* Kubernetes manifests are UTF-8: a UTF-16 byte order mark is an error, not a hint. A UTF-8
     * one is dropped here, as libyaml would count it as a column once the encoding is set. */
    if ((flags & YAMLTREE_UTF8) && len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
        text += 3;
        len -= 3;
        r.skipped = 3;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (flags & YAMLTREE_UTF8)
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    while (rc == 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_failed(&r, &parser);
            rc = -1;
            break;
        }
        rc = on_event(&r, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    free(r.stack);
    return rc < 0 ? -1 : 0;
}

static bool word_in(const char *s, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

#define DIGITS "0123456789"

static bool looks_int(const char *s)
{
    if (s[0] == '0' && s[1] == 'o' && s[2])
        return strspn(s + 2, "01234567") == strlen(s + 2);
    if (s[0] == '0' && s[1] == 'x' && s[2])
        return strspn(s + 2, DIGITS "abcdefABCDEF") == strlen(s + 2);
    if (*s == '-' || *s == '+')
        s++;
    return *s && strspn(s, DIGITS) == strlen(s);
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, .nan, [-+]?.inf, in their casings */
static bool looks_float(const char *s)
{
    static const char *const nan[] = {".nan", ".NaN", ".NAN", NULL};
    static const char *const inf[] = {".inf", ".Inf", ".INF", NULL};
    size_t digits, n;

    if (word_in(s, nan))
        return true;
    if (*s == '-' || *s == '+')
        s++;
    if (word_in(s, inf))
        return true;
    digits = strspn(s, DIGITS);
    s += digits;
    if (*s == '.') {
        n = strspn(s + 1, DIGITS);
        digits += n;
        s += 1 + n;
    }
    if (digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        n = strspn(s, DIGITS);
        if (n == 0)
            return false;
        s += n;
    }
    return *s == '\0';
}

enum yamltree_type yamltree_resolve(const char *s)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE", NULL};

    if (word_in(s, nulls))
        return YAMLTREE_NULL;
    if (word_in(s, bools))
        return YAMLTREE_BOOL;
    if (looks_int(s))
        return YAMLTREE_INT;
    if (looks_float(s))
        return YAMLTREE_FLOAT;
    return YAMLTREE_STR;
}
