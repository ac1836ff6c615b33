/*
 * yamljson.c: YAML and JSON documents into jansson values (see yamljson.h).
 *
 * One pass over libyaml's events builds each document's tree; a stack of open containers holds
 * the mapping key waiting for its value and, with YAMLJSON_MARKS, the length of the node's JSON
 * Pointer in a shared buffer. Invariants: the stack never exceeds YAMLJSON_DEPTH_MAX (checked
 * before a push); every json_t made here is owned by exactly one of: the tree being built, a
 * stack frame's pending key, or the result.
 */
#include "yamljson.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "limits.h"
#include "patch.h"

#define CORE_TAG "tag:yaml.org,2002:"

struct frame {
    json_t *node;   /* borrowed from the tree */
    json_t *key;    /* owned: a mapping's key waiting for its value (a string), or NULL */
    size_t ptr_len; /* length of this node's pointer in ybuild.ptr */
    bool ptr_ok;    /* the pointer fitted; marks are kept below it */
};

struct ybuild {
    const char *name;
    unsigned flags;
    struct diag *d;
    struct yamljson *out;
    json_t *root;  /* owned: the document being built */
    json_t *marks; /* owned: its marks */
    unsigned doc_index, doc_line, doc_column;
    size_t nodes;
    struct frame stack[YAMLJSON_DEPTH_MAX];
    size_t depth;
    char ptr[YAMLJSON_POINTER_MAX];
};

static int yerr(struct ybuild *b, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int yerr(struct ybuild *b, const yaml_mark_t *m, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_set(b->d, b->name, (unsigned)m->line + 1, (unsigned)m->column + 1, "document %u: %s",
             b->doc_index, msg);
    return -1;
}

void yamljson_free(struct yamljson *y)
{
    for (size_t i = 0; i < y->n; i++) {
        json_decref(y->docs[i].value);
        json_decref(y->docs[i].marks);
    }
    free(y->docs);
    y->docs = NULL;
    y->n = 0;
}

/* ---- scalars ---- */

static bool all_in(const char *s, size_t len, const char *set)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return false;
    return true;
}

static bool one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? : YAML 1.2 core schema floats */
static bool is_float(const char *s)
{
    size_t digits = 0;

    if (*s == '-' || *s == '+')
        s++;
    for (; *s >= '0' && *s <= '9'; s++)
        digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            digits++;
    if (digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

int yamljson_resolve_plain(const char *s, size_t len, json_t **out, const char **why)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    static const char *const specials[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                           "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                           ".NaN",  ".NAN",  NULL};
    const char *digits = s + (s[0] == '-' || s[0] == '+');
    char *end;
    long long v;
    double f;
    int base = 10;

    *out = NULL;
    if (memchr(s, '\0', len) != NULL) /* "\0" can only come from a quoted scalar, but be sure */
        return (*out = json_stringn(s, len)) ? 0 : -1;
    if (one_of(s, nulls))
        return (*out = json_null()) ? 0 : -1;
    if (one_of(s, trues) || one_of(s, falses))
        return (*out = json_boolean(one_of(s, trues))) ? 0 : -1;
    if (one_of(s, specials)) {
        *why = "infinity and NaN have no JSON form; quote the value for a string";
        return -1;
    }
    if (strncmp(s, "0o", 2) == 0 && all_in(s + 2, len - 2, "01234567"))
        base = 8;
    else if (strncmp(s, "0x", 2) == 0 && all_in(s + 2, len - 2, "0123456789abcdefABCDEF"))
        base = 16;
    if (base != 10 || all_in(digits, len - (size_t)(digits - s), "0123456789")) {
        errno = 0;
        v = strtoll(base == 10 ? s : s + 2, &end, base);
        if (errno != 0 || *end != '\0') {
            *why = "integer out of range (64 bits); quote it for a string";
            return -1;
        }
        return (*out = json_integer(v)) ? 0 : -1;
    }
    if (is_float(s)) {
        errno = 0;
        f = strtod(s, &end);
        if (errno == ERANGE && (f > 1 || f < -1)) {
            *why = "number out of range; quote it for a string";
            return -1;
        }
        return (*out = json_real(f)) ? 0 : -1;
    }
    return (*out = json_stringn(s, len)) ? 0 : -1;
}

/* The value of a scalar event, or NULL with the error recorded. */
static json_t *scalar_value(struct ybuild *b, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value, *tag = (const char *)ev->data.scalar.tag;
    const char *why = "out of memory", *t;
    size_t len = ev->data.scalar.length;
    json_t *v = NULL;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;

    if (tag == NULL) {
        if (!plain)
            v = json_stringn(s, len);
        else if (yamljson_resolve_plain(s, len, &v, &why) < 0)
            v = NULL;
    } else if (strcmp(tag, "!") == 0 || strcmp(tag, CORE_TAG "str") == 0 ||
               strcmp(tag, CORE_TAG "timestamp") == 0 || strcmp(tag, CORE_TAG "binary") == 0) {
        v = json_stringn(s, len);
    } else if (strncmp(tag, CORE_TAG, strlen(CORE_TAG)) == 0 &&
               one_of(t = tag + strlen(CORE_TAG),
                      (const char *const[]){"int", "float", "bool", "null", NULL})) {
        if (yamljson_resolve_plain(s, len, &v, &why) == 0 &&
            !(strcmp(t, "int") == 0     ? json_is_integer(v)
              : strcmp(t, "float") == 0 ? json_is_number(v)
              : strcmp(t, "bool") == 0  ? json_is_boolean(v)
                                        : json_is_null(v))) {
            json_decref(v);
            v = NULL;
            yerr(b, &ev->start_mark, "\"%.64s\" is not a valid !!%s", s, t);
            return NULL;
        }
    } else {
        yerr(b, &ev->start_mark, "unsupported YAML tag %.64s", tag);
        return NULL;
    }
    if (v == NULL)
        yerr(b, &ev->start_mark, "%s", why);
    return v;
}

/* ---- the tree ---- */

static void mark(struct ybuild *b, const yaml_mark_t *m)
{
    if (b->marks != NULL)
        json_object_set_new(
            b->marks, b->ptr,
            json_pack("[I, I]", (json_int_t)m->line + 1, (json_int_t)m->column + 1));
}

/* Attaches v (stolen) to the open container, or makes it the root; leaves b->ptr at v's
 * pointer. *ptr_ok is false when that pointer did not fit (v's marks are not kept). */
static int attach(struct ybuild *b, json_t *v, const yaml_mark_t *m, bool *ptr_ok)
{
    struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    char idx[32];
    int rc;

    *ptr_ok = f == NULL || f->ptr_ok;
    if (++b->nodes > YAMLJSON_NODES_MAX) {
        json_decref(v);
        return yerr(b, m, "more than %u YAML nodes", YAMLJSON_NODES_MAX);
    }
    if (f == NULL) {
        b->root = v;
        b->ptr[0] = '\0';
        mark(b, m);
        return 0;
    }
    b->ptr[f->ptr_len] = '\0';
    if (json_is_array(f->node)) {
        snprintf(idx, sizeof(idx), "%zu", json_array_size(f->node));
        rc = json_array_append_new(f->node, v);
        if (*ptr_ok && patch_ptr_append(b->ptr, sizeof(b->ptr), idx) < 0)
            *ptr_ok = false;
    } else {
        if (*ptr_ok && patch_ptr_append(b->ptr, sizeof(b->ptr), json_string_value(f->key)) < 0)
            *ptr_ok = false;
        rc =
            json_object_setn_new(f->node, json_string_value(f->key), json_string_length(f->key), v);
        json_decref(f->key);
        f->key = NULL;
    }
    if (rc < 0)
        return yerr(b, m, "out of memory");
    if (*ptr_ok)
        mark(b, m);
    return 0;
}

static bool awaiting_key(const struct ybuild *b)
{
    const struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;

    return f != NULL && json_is_object(f->node) && f->key == NULL;
}

static int on_scalar(struct ybuild *b, const yaml_event_t *ev)
{
    struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    json_t *v;
    bool ok;

    if (ev->data.scalar.anchor != NULL)
        return yerr(b, &ev->start_mark, "YAML anchors are not supported");
    if (awaiting_key(b)) {
        if (++b->nodes > YAMLJSON_NODES_MAX)
            return yerr(b, &ev->start_mark, "more than %u YAML nodes", YAMLJSON_NODES_MAX);
        /* a key is its text, as sigs.k8s.io/yaml makes it: "1: x" has the key "1" */
        if (json_object_getn(f->node, s, len) != NULL)
            return yerr(b, &ev->start_mark, "duplicate key \"%.64s\"", s);
        f->key = json_stringn(s, len);
        return f->key ? 0 : yerr(b, &ev->start_mark, "out of memory");
    }
    v = scalar_value(b, ev);
    return v == NULL ? -1 : attach(b, v, &ev->start_mark, &ok);
}

static int on_start(struct ybuild *b, const yaml_event_t *ev)
{
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    const char *anchor =
        (const char *)(map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
    const char *tag =
        (const char *)(map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
    json_t *v;
    bool ok;

    if (anchor != NULL)
        return yerr(b, &ev->start_mark, "YAML anchors are not supported");
    if (tag != NULL && strcmp(tag, map ? CORE_TAG "map" : CORE_TAG "seq") != 0)
        return yerr(b, &ev->start_mark, "unsupported YAML tag %.64s", tag);
    if (awaiting_key(b))
        return yerr(b, &ev->start_mark, "a key must be a string, not a %s",
                    map ? "mapping" : "sequence");
    if (b->depth >= YAMLJSON_DEPTH_MAX)
        return yerr(b, &ev->start_mark, "nested deeper than %u", YAMLJSON_DEPTH_MAX);
    v = map ? json_object() : json_array();
    if (v == NULL)
        return yerr(b, &ev->start_mark, "out of memory");
    if (attach(b, v, &ev->start_mark, &ok) < 0)
        return -1;
    b->stack[b->depth].node = v;
    b->stack[b->depth].key = NULL;
    b->stack[b->depth].ptr_len = strlen(b->ptr);
    b->stack[b->depth].ptr_ok = ok;
    b->depth++;
    return 0;
}

static int on_doc_end(struct ybuild *b)
{
    struct yamljson_doc *docs;

    if (b->root != NULL && !json_is_null(b->root)) {
        docs = reallocarray(b->out->docs, b->out->n + 1, sizeof(*docs));
        if (docs == NULL) {
            diag_set(b->d, b->name, 0, 0, "out of memory");
            return -1;
        }
        b->out->docs = docs;
        docs[b->out->n++] =
            (struct yamljson_doc){b->root, b->doc_index, b->doc_line, b->doc_column, b->marks};
        b->root = b->marks = NULL;
    }
    json_decref(b->root);
    json_decref(b->marks);
    b->root = b->marks = NULL;
    return 0;
}

static int on_event(struct ybuild *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->doc_index > YAMLJSON_DOCS_MAX)
            return yerr(b, &ev->start_mark, "more than %u documents", YAMLJSON_DOCS_MAX);
        b->doc_line = (unsigned)ev->start_mark.line + 1;
        b->doc_column = (unsigned)ev->start_mark.column + 1;
        b->marks = (b->flags & YAMLJSON_MARKS) ? json_object() : NULL;
        return 0;
    case YAML_DOCUMENT_END_EVENT: return on_doc_end(b);
    case YAML_ALIAS_EVENT: return yerr(b, &ev->start_mark, "YAML aliases are not supported");
    case YAML_SCALAR_EVENT:
        if (b->depth == 0) { /* the content starts here, not at an implicit document start */
            b->doc_line = (unsigned)ev->start_mark.line + 1;
            b->doc_column = (unsigned)ev->start_mark.column + 1;
        }
        return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (b->depth == 0) {
            b->doc_line = (unsigned)ev->start_mark.line + 1;
            b->doc_column = (unsigned)ev->start_mark.column + 1;
        }
        return on_start(b, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        b->depth--; /* libyaml guarantees the nesting; a pending key cannot be left over */
        return 0;
    default: return 0;
    }
}

static int parse_yaml(struct ybuild *b, const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    bool done = false;
    int rc = -1;

    if (!yaml_parser_initialize(&parser)) {
        diag_set(b->d, b->name, 0, 0, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            char ctx[160] = "";

            if (parser.context != NULL)
                snprintf(ctx, sizeof(ctx), " (%s that starts at %u:%u)", parser.context,
                         (unsigned)parser.context_mark.line + 1,
                         (unsigned)parser.context_mark.column + 1);
            diag_set(b->d, b->name, (unsigned)parser.problem_mark.line + 1,
                     (unsigned)parser.problem_mark.column + 1, "document %u: YAML: %s%s",
                     b->doc_index ? b->doc_index : 1, parser.problem ? parser.problem : "error",
                     ctx);
            rc = -1;
            goto out;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(b, &ev);
        yaml_event_delete(&ev);
        if (rc < 0)
            goto out;
    }
    rc = 0;
out:
    while (b->depth > 0)
        json_decref(b->stack[--b->depth].key);
    json_decref(b->root);
    json_decref(b->marks);
    b->root = b->marks = NULL;
    yaml_parser_delete(&parser);
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

/* Whether v nests at most limit containers deep; counts its nodes into *nodes. The recursion is
 * bounded by jansson's own parse depth limit (2048). */
static bool within(const json_t *v, unsigned limit, size_t *nodes)
{
    const char *key;
    json_t *x;
    size_t i;

    (*nodes)++;
    if (!json_is_object(v) && !json_is_array(v))
        return true;
    if (limit == 0)
        return false;
    if (json_is_array(v)) {
        json_array_foreach (v, i, x) {
            if (!within(x, limit - 1, nodes))
                return false;
        }
    } else {
        json_object_foreach ((json_t *)v, key, x) {
            if (!within(x, limit - 1, nodes))
                return false;
        }
    }
    return true;
}

/* JSON text: one or more values one after another, as kubectl prints them. */
static int parse_json(struct ybuild *b, const char *text, size_t len)
{
    size_t off = 0;
    json_error_t jerr;
    json_t *v;
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
        v = json_loadb(text + off, len - off,
                       JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (v == NULL) {
            position(text, off + (size_t)(jerr.position > 0 ? jerr.position - 1 : 0), &line,
                     &column);
            diag_set(b->d, b->name, line, column, "document %u: JSON: %s", b->doc_index, jerr.text);
            return -1;
        }
        position(text, off, &b->doc_line, &b->doc_column);
        off += (size_t)jerr.position;
        b->root = v;
        if (!within(v, YAMLJSON_DEPTH_MAX, &b->nodes) || b->nodes > YAMLJSON_NODES_MAX) {
            diag_set(b->d, b->name, b->doc_line, b->doc_column,
                     b->nodes > YAMLJSON_NODES_MAX ? "document %u: more than %u nodes"
                                                   : "document %u: nested deeper than %u",
                     b->doc_index,
                     b->nodes > YAMLJSON_NODES_MAX ? YAMLJSON_NODES_MAX : YAMLJSON_DEPTH_MAX);
            json_decref(b->root);
            b->root = NULL;
            return -1;
        }
        if (on_doc_end(b) < 0)
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
        rc = parse_json(b, text, len);
    else
        rc = parse_yaml(b, text, len);
out:
    free(b);
    if (rc < 0)
        yamljson_free(out);
    return rc;
}

/* Reads all of f, at most max bytes. New buffer in *buf. */
static int read_all(FILE *f, const char *name, size_t max, char **buf, size_t *len, struct diag *d)
{
    size_t cap = 64 * 1024, n = 0, got;
    char *p = malloc(cap), *q;

    while (p != NULL && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n > max) {
            free(p);
            diag_set(d, name, 0, 0, "more than %zu bytes", max);
            return -1;
        }
        if (n == cap) {
            q = realloc(p, cap * 2);
            if (q == NULL)
                free(p);
            p = q;
            cap *= 2;
        }
    }
    if (p == NULL) {
        diag_set(d, name, 0, 0, "out of memory");
        return -1;
    }
    if (ferror(f)) {
        free(p);
        diag_set(d, name, 0, 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    *buf = p;
    *len = n;
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

bool yamljson_mark(const struct yamljson_doc *doc, const char *ptr, unsigned *line,
                   unsigned *column)
{
    json_t *m = doc->marks ? json_object_get(doc->marks, ptr) : NULL;

    if (m == NULL)
        return false;
    *line = (unsigned)json_integer_value(json_array_get(m, 0));
    *column = (unsigned)json_integer_value(json_array_get(m, 1));
    return true;
}
