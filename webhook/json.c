/*
 * json.c: reading with the project's checks, and building values, on yyjson (see json.h).
 *
 * Invariants: nothing here recurses on input data. json_validate() walks with an explicit stack
 * no deeper than its cap; json_pack() recurses on its format string only, which is a literal.
 */
#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"

/* The walk's explicit stack: on the C stack up to this depth, allocated beyond it. */
#define JSON_WALK_STACK 160u
/* Deeper caps are clamped to this. */
#define JSON_WALK_MAX 65536u
/* Objects with more members than this are checked for repeated keys by sorting, not pairwise. */
#define JSON_DUP_PAIRWISE_MAX 16u
#define JSON_DUP_STACK        256u
/* A repeated key is named in the error, cut to this many bytes: it is a name, not a value, but
 * it is still the caller's text. */
#define JSON_KEY_SHOWN 64

static const yyjson_read_flag READ_FLAGS = YYJSON_READ_BIGNUM_AS_RAW;

/* A number json_int64() could not hold and a Kubernetes integer field cannot either: past 64
 * bits (raw, BIGNUM_AS_RAW) or a uint64 past INT64_MAX. jansson refused both at parse; Go's
 * encoding/json refuses them for the int64 and int32 fields of the API, and free-form JSON
 * holds no number a webhook reads. */
static bool out_of_range(yyjson_val *v)
{
    return unsafe_yyjson_is_raw(v) ||
           (unsafe_yyjson_get_tag(v) == (YYJSON_TYPE_NUM | YYJSON_SUBTYPE_UINT) &&
            v->uni.u64 > (uint64_t)INT64_MAX);
}

struct key_ref {
    const char *p;
    size_t len;
};

static int key_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);

    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* The first key of obj that repeats an earlier one, or NULL; *oom set when out of memory.
 * Small objects are checked pairwise, wider ones by sorting references to their keys, on the
 * stack up to JSON_DUP_STACK members: a review's widest objects (labels, annotations, a
 * container's env as a map) stay well under it, so the check costs no malloc. */
static yyjson_val *repeated_key(yyjson_val *obj, bool *oom)
{
    struct key_ref local[JSON_DUP_STACK], *refs = local;
    size_t n = yyjson_obj_size(obj), i, j;
    yyjson_val *k, *v, *found = NULL;
    yyjson_obj_iter it;

    *oom = false;
    if (n < 2)
        return NULL;
    if (n <= JSON_DUP_PAIRWISE_MAX) {
        yyjson_val *keys[JSON_DUP_PAIRWISE_MAX];

        i = 0;
        yyjson_obj_iter_init(obj, &it);
        while ((k = yyjson_obj_iter_next(&it)) != NULL) {
            for (j = 0; j < i; j++)
                if (yyjson_get_len(keys[j]) == yyjson_get_len(k) &&
                    memcmp(yyjson_get_str(keys[j]), yyjson_get_str(k), yyjson_get_len(k)) == 0)
                    return k;
            keys[i++] = k;
        }
        return NULL;
    }
    if (n > JSON_DUP_STACK) {
        refs = malloc(n * sizeof(*refs));
        if (refs == NULL) {
            *oom = true;
            return NULL;
        }
    }
    i = 0;
    yyjson_obj_foreach (obj, j, n, k, v) {
        (void)v;
        refs[i].p = yyjson_get_str(k);
        refs[i].len = yyjson_get_len(k);
        i++;
    }
    qsort(refs, n, sizeof(*refs), key_cmp);
    for (i = 1; i < n && found == NULL; i++) {
        if (key_cmp(&refs[i - 1], &refs[i]) == 0) {
            /* report it by name: find the key object again */
            yyjson_obj_iter_init(obj, &it);
            while ((k = yyjson_obj_iter_next(&it)) != NULL)
                if (yyjson_get_len(k) == refs[i].len &&
                    memcmp(yyjson_get_str(k), refs[i].p, refs[i].len) == 0)
                    found = k;
        }
    }
    if (refs != local)
        free(refs);
    return found;
}

struct frame {
    yyjson_val *c; /* the container */
    bool obj;
    union {
        yyjson_obj_iter o;
        yyjson_arr_iter a;
    } it;
    size_t idx;
    yyjson_val *key; /* objects: the key of the member being visited */
};

/* The JSON Pointer of the member the walk stands at, into buf. */
static void walk_path(const struct frame *st, size_t depth, char *buf, size_t len)
{
    size_t o = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < depth && o + 1 < len; i++) {
        buf[o++] = '/';
        if (st[i].obj && st[i].key != NULL) {
            const char *s = yyjson_get_str(st[i].key);
            size_t n = yyjson_get_len(st[i].key);

            for (size_t j = 0; j < n && o + 3 < len; j++) {
                if (s[j] == '~' || s[j] == '/') {
                    buf[o++] = '~';
                    buf[o++] = s[j] == '~' ? '0' : '1';
                } else {
                    buf[o++] = s[j] != '\0' ? s[j] : '?';
                }
            }
        } else {
            o += (size_t)snprintf(buf + o, len - o, "%zu", st[i].idx > 0 ? st[i].idx - 1 : 0);
            if (o >= len)
                o = len - 1;
        }
    }
    buf[o < len ? o : len - 1] = '\0';
}

/* *at: the value at fault where it has text in the document (a repeated key, a raw number), so
 * that json_read() can say where it is. */
static int walk(yyjson_val *root, unsigned max_depth, struct frame *st, struct diag *d,
                yyjson_val **at)
{
    size_t depth = 0;
    char where[256];
    yyjson_val *v = root;
    bool oom;

    for (;;) {
        if (v != NULL) {
            if (out_of_range(v)) {
                if (yyjson_is_raw(v))
                    *at = v;
                walk_path(st, depth, where, sizeof(where));
                diag_set(d, NULL, 0, 0, "%s: number out of range", where[0] ? where : "(root)");
                return -1;
            }
            if (yyjson_is_ctn(v)) {
                if (depth >= max_depth) {
                    diag_set(d, NULL, 0, 0, "arrays and objects nested deeper than %u levels",
                             max_depth);
                    return -1;
                }
                if (yyjson_is_obj(v)) {
                    yyjson_val *k = repeated_key(v, &oom);

                    if (oom) {
                        diag_set(d, NULL, 0, 0, "out of memory");
                        return -1;
                    }
                    if (k != NULL) {
                        char shown[JSON_KEY_SHOWN * 6 + 4];

                        *at = k;
                        walk_path(st, depth, where, sizeof(where));
                        text_excerpt(yyjson_get_str(k), yyjson_get_len(k), JSON_KEY_SHOWN, shown,
                                     sizeof(shown));
                        diag_set(d, NULL, 0, 0, "%s: duplicate key \"%s\"",
                                 where[0] ? where : "(root)", shown);
                        return -1;
                    }
                    st[depth].obj = true;
                    yyjson_obj_iter_init(v, &st[depth].it.o);
                } else {
                    st[depth].obj = false;
                    yyjson_arr_iter_init(v, &st[depth].it.a);
                }
                st[depth].c = v;
                st[depth].idx = 0;
                st[depth].key = NULL;
                depth++;
            }
        }
        /* the next value: the current container's next child, or pop */
        v = NULL;
        while (depth > 0) {
            struct frame *f = &st[depth - 1];

            if (f->obj) {
                yyjson_val *k = yyjson_obj_iter_next(&f->it.o);

                if (k != NULL) {
                    f->key = k;
                    f->idx++;
                    v = yyjson_obj_iter_get_val(k);
                    break;
                }
            } else {
                v = yyjson_arr_iter_next(&f->it.a);
                if (v != NULL) {
                    f->idx++;
                    break;
                }
            }
            depth--;
        }
        if (v == NULL)
            return 0;
    }
}

/* One container open in scan_ok(). */
struct span {
    yyjson_val *end;       /* the value past the container */
    yyjson_val *first_key; /* objects: their first key */
    uint64_t seen;         /* objects: a bit per class of the keys so far (see key_class) */
    bool obj, key_next, wide;
};

static uint64_t key_class(const unsigned char *s, size_t n)
{
    return 1ull << ((n * 31u + (n ? s[0] * 7u + s[n - 1] : 0u)) & 63u);
}

/* The checks of walk() in one pass over the values as yyjson lays them out, the fast path: an
 * immutable document keeps every value in one array in document order, a container's subtree
 * right after it, and an object's members as key, value, key, value (unsafe_yyjson_get_next()
 * is the value past a subtree). A key whose class (length, first and last byte) no earlier key
 * of its object had repeats none, so most keys are compared with nothing; objects wider than
 * JSON_DUP_PAIRWISE_MAX are checked by repeated_key() instead. No path is kept: true when the
 * document passes, and walk() runs only to name an offence. st holds max_depth entries. */
static bool scan_ok(yyjson_val *root, unsigned max_depth, struct span *st, bool *oom)
{
    yyjson_val *v = root, *end = unsafe_yyjson_get_next(root);
    size_t depth = 0;

    *oom = false;
    while (v < end) {
        while (depth > 0 && v >= st[depth - 1].end)
            depth--;
        if (depth > 0 && st[depth - 1].obj) {
            struct span *f = &st[depth - 1];

            if (f->key_next) {
                const unsigned char *ks = (const unsigned char *)unsafe_yyjson_get_str(v);
                size_t kl = unsafe_yyjson_get_len(v);
                uint64_t bit = key_class(ks, kl);

                if (!f->wide && (f->seen & bit)) {
                    for (yyjson_val *k = f->first_key; k < v; k = unsafe_yyjson_get_next(k + 1))
                        if (unsafe_yyjson_get_len(k) == kl &&
                            memcmp(unsafe_yyjson_get_str(k), ks, kl) == 0)
                            return false;
                }
                f->seen |= bit;
                f->key_next = false;
                v++; /* a key is a string: one value */
                continue;
            }
            f->key_next = true;
        }
        if (out_of_range(v))
            return false;
        if (unsafe_yyjson_is_ctn(v)) {
            struct span *f = &st[depth];

            if (depth >= max_depth)
                return false;
            f->end = unsafe_yyjson_get_next(v);
            f->obj = unsafe_yyjson_is_obj(v);
            f->first_key = v + 1;
            f->seen = 0;
            f->key_next = true;
            f->wide = f->obj && unsafe_yyjson_get_len(v) > JSON_DUP_PAIRWISE_MAX;
            if (f->wide && repeated_key(v, oom) != NULL)
                return false;
            if (*oom)
                return false;
            depth++;
        }
        v++;
    }
    return true;
}

static int validate_at(yyjson_val *root, unsigned max_depth, struct diag *d, yyjson_val **at)
{
    struct frame local[JSON_WALK_STACK], *st = local;
    struct span spans_local[JSON_WALK_STACK], *spans = spans_local;
    bool oom = false;
    int rc;

    if (root == NULL)
        return 0;
    if (max_depth == 0 || max_depth > JSON_WALK_MAX)
        max_depth = JSON_WALK_MAX;
    if (max_depth > JSON_WALK_STACK) {
        spans = malloc(max_depth * sizeof(*spans));
        if (spans == NULL) {
            diag_set(d, NULL, 0, 0, "out of memory");
            return -1;
        }
    }
    rc = scan_ok(root, max_depth, spans, &oom) ? 0 : -1;
    if (spans != spans_local)
        free(spans);
    if (rc == 0)
        return 0;
    if (oom) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return -1;
    }
    if (max_depth > JSON_WALK_STACK) {
        st = malloc(max_depth * sizeof(*st));
        if (st == NULL) {
            diag_set(d, NULL, 0, 0, "out of memory");
            return -1;
        }
    }
    rc = walk(root, max_depth, st, d, at);
    if (st != local)
        free(st);
    if (rc == 0) /* the two passes disagree: refuse rather than guess */
        diag_set(d, NULL, 0, 0, "unreadable JSON (internal: the checks disagree)");
    return -1;
}

int json_validate(yyjson_val *root, unsigned max_depth, struct diag *d)
{
    yyjson_val *at = NULL;

    return validate_at(root, max_depth, d, &at);
}

/* Where the text of v is in buf, if v's text is in the document's string pool (a copy of buf
 * with the same offsets, or buf itself in situ). */
static void locate(yyjson_doc *doc, const char *buf, size_t len, yyjson_val *v, struct diag *d)
{
    const char *s = unsafe_yyjson_get_str(v);
    const char *pool = doc->str_pool ? doc->str_pool : buf;
    size_t line = 0, col = 0, chr = 0, pos;

    if (s == NULL || s < pool || (size_t)(s - pool) >= len)
        return;
    pos = (size_t)(s - pool);
    if (yyjson_is_str(v) && pos > 0)
        pos--; /* the opening quote */
    if (yyjson_locate_pos(buf, len, pos, &line, &col, &chr)) {
        d->line = (unsigned)line;
        d->column = (unsigned)col;
    }
}

yyjson_doc *json_read(const char *buf, size_t len, unsigned flags, unsigned max_depth,
                      const yyjson_alc *alc, struct diag *d)
{
    yyjson_read_flag rf = READ_FLAGS;
    yyjson_read_err err;
    yyjson_val *at = NULL;
    yyjson_doc *doc;
    bool was_set = d->set;

    if (len == 0) {
        diag_set(d, NULL, 0, 0, "invalid JSON: empty");
        return NULL;
    }
    if (flags & JSON_READ_INSITU)
        rf |= YYJSON_READ_INSITU;
    if (flags & JSON_READ_PREFIX)
        rf |= YYJSON_READ_STOP_WHEN_DONE;
    doc = yyjson_read_opts((char *)buf, len, rf, alc, &err);
    if (doc == NULL) {
        size_t line = 0, col = 0, chr = 0;

        if (err.code == YYJSON_READ_ERROR_MEMORY_ALLOCATION) {
            diag_set(d, NULL, 0, 0, "out of memory reading JSON");
            return NULL;
        }
        if (err.code == YYJSON_READ_ERROR_EMPTY_CONTENT) { /* blanks only */
            diag_set(d, NULL, 0, 0, "invalid JSON: empty");
            return NULL;
        }
        if (!yyjson_locate_pos(buf, len, err.pos, &line, &col, &chr)) {
            line = 0;
            col = 0;
        }
        diag_set(d, NULL, (unsigned)line, (unsigned)col, "invalid JSON at %zu:%zu: %s", line, col,
                 err.msg ? err.msg : "unreadable");
        return NULL;
    }
    if (!(flags & JSON_READ_ANY_ROOT) && !yyjson_is_obj(yyjson_doc_get_root(doc))) {
        diag_set(d, NULL, 0, 0, "expected a JSON object, got %s",
                 json_type_desc(yyjson_doc_get_root(doc)));
        yyjson_doc_free(doc);
        return NULL;
    }
    if (validate_at(yyjson_doc_get_root(doc), max_depth, d, &at) < 0) {
        if (at != NULL && !was_set)
            locate(doc, buf, len, at, d);
        yyjson_doc_free(doc);
        return NULL;
    }
    return doc;
}

bool json_str_is(yyjson_val *v, const char *s)
{
    size_t n = strlen(s);

    return yyjson_is_str(v) && yyjson_get_len(v) == n && memcmp(yyjson_get_str(v), s, n) == 0;
}

bool json_mut_str_is(yyjson_mut_val *v, const char *s)
{
    size_t n = strlen(s);

    return yyjson_mut_is_str(v) && yyjson_mut_get_len(v) == n &&
           memcmp(yyjson_mut_get_str(v), s, n) == 0;
}

bool json_int64(yyjson_val *v, int64_t *out)
{
    if (yyjson_is_sint(v)) {
        *out = yyjson_get_sint(v);
        return true;
    }
    if (yyjson_is_uint(v) && yyjson_get_uint(v) <= (uint64_t)INT64_MAX) {
        *out = (int64_t)yyjson_get_uint(v);
        return true;
    }
    return false;
}

bool json_mut_int64(yyjson_mut_val *v, int64_t *out)
{
    if (yyjson_mut_is_sint(v)) {
        *out = yyjson_mut_get_sint(v);
        return true;
    }
    if (yyjson_mut_is_uint(v) && yyjson_mut_get_uint(v) <= (uint64_t)INT64_MAX) {
        *out = (int64_t)yyjson_mut_get_uint(v);
        return true;
    }
    return false;
}

static const char *type_desc(yyjson_type t)
{
    switch (t) {
    case YYJSON_TYPE_OBJ: return "an object";
    case YYJSON_TYPE_ARR: return "an array";
    case YYJSON_TYPE_STR: return "a string";
    case YYJSON_TYPE_NUM:
    case YYJSON_TYPE_RAW: return "a number";
    case YYJSON_TYPE_BOOL: return "a boolean";
    case YYJSON_TYPE_NULL: return "null";
    default: return "nothing";
    }
}

const char *json_type_desc(yyjson_val *v)
{
    return type_desc(yyjson_get_type(v));
}

const char *json_mut_type_desc(yyjson_mut_val *v)
{
    return type_desc(yyjson_mut_get_type(v));
}

yyjson_doc *json_keep(yyjson_val *v)
{
    yyjson_mut_doc *m;
    yyjson_mut_val *c;
    yyjson_doc *out;

    if (v == NULL)
        return NULL;
    m = yyjson_mut_doc_new(NULL);
    if (m == NULL)
        return NULL;
    c = yyjson_val_mut_copy(m, v);
    out = c ? yyjson_mut_val_imut_copy(c, NULL) : NULL;
    yyjson_mut_doc_free(m);
    return out;
}

yyjson_doc *json_freeze(yyjson_mut_val *v)
{
    return v ? yyjson_mut_val_imut_copy(v, NULL) : NULL;
}

/* ---- json_pack ---- */

struct pack {
    yyjson_mut_doc *doc;
    const char *f;
    va_list *ap;
    bool failed;
};

static void skip_blanks(struct pack *p)
{
    while (*p->f == ' ' || *p->f == '\t' || *p->f == '\n' || *p->f == ',' || *p->f == ':')
        p->f++;
}

/* One value from the format. *absent set for a '*' member that is left out. */
static yyjson_mut_val *pack_value(struct pack *p, bool *absent);

static yyjson_mut_val *pack_object(struct pack *p)
{
    yyjson_mut_val *obj = yyjson_mut_obj(p->doc);

    if (obj == NULL)
        return NULL;
    for (;;) {
        const char *key;
        yyjson_mut_val *k, *v;
        bool absent = false;

        skip_blanks(p);
        if (*p->f == '}') {
            p->f++;
            return obj;
        }
        if (*p->f != 's')
            return NULL;
        p->f++;
        key = va_arg(*p->ap, const char *);
        if (key == NULL)
            return NULL;
        skip_blanks(p);
        v = pack_value(p, &absent);
        if (absent)
            continue;
        if (v == NULL)
            return NULL;
        k = yyjson_mut_strcpy(p->doc, key);
        if (k == NULL || !yyjson_mut_obj_put(obj, k, v))
            return NULL;
    }
}

static yyjson_mut_val *pack_array(struct pack *p)
{
    yyjson_mut_val *arr = yyjson_mut_arr(p->doc);

    if (arr == NULL)
        return NULL;
    for (;;) {
        yyjson_mut_val *v;
        bool absent = false;

        skip_blanks(p);
        if (*p->f == ']') {
            p->f++;
            return arr;
        }
        v = pack_value(p, &absent);
        if (absent)
            continue;
        if (v == NULL || !yyjson_mut_arr_append(arr, v))
            return NULL;
    }
}

static yyjson_mut_val *pack_value(struct pack *p, bool *absent)
{
    char c = *p->f++;
    char mod = (*p->f == '?' || *p->f == '*') ? *p->f++ : '\0';
    yyjson_mut_val *out;

    switch (c) {
    case '{': return pack_object(p);
    case '[': return pack_array(p);
    case 's': {
        const char *s = va_arg(*p->ap, const char *);
        int n = -1;

        if (*p->f == '#') {
            p->f++;
            n = va_arg(*p->ap, int);
        }
        if (s == NULL) {
            if (mod == '*') {
                *absent = true;
                return NULL;
            }
            return mod == '?' ? yyjson_mut_null(p->doc) : NULL;
        }
        return n >= 0 ? yyjson_mut_strncpy(p->doc, s, (size_t)n) : yyjson_mut_strcpy(p->doc, s);
    }
    case 'i': return yyjson_mut_sint(p->doc, va_arg(*p->ap, int));
    case 'I': return yyjson_mut_sint(p->doc, va_arg(*p->ap, int64_t));
    case 'f': return yyjson_mut_real(p->doc, va_arg(*p->ap, double));
    case 'b': return yyjson_mut_bool(p->doc, va_arg(*p->ap, int) != 0);
    case 'n': return yyjson_mut_null(p->doc);
    case 'o':
    case 'O':
    case 'V': {
        void *v = va_arg(*p->ap, void *);

        if (v == NULL) {
            if (mod == '*') {
                *absent = true;
                return NULL;
            }
            return mod == '?' ? yyjson_mut_null(p->doc) : NULL;
        }
        if (c == 'o')
            out = v;
        else if (c == 'O')
            out = yyjson_mut_val_mut_copy(p->doc, v);
        else
            out = yyjson_val_mut_copy(p->doc, v);
        return out;
    }
    default: return NULL;
    }
}

yyjson_mut_val *json_vpack(yyjson_mut_doc *doc, const char *fmt, va_list *ap)
{
    struct pack p = {.doc = doc, .f = fmt, .ap = ap};
    bool absent = false;
    yyjson_mut_val *v;

    if (doc == NULL || fmt == NULL)
        return NULL;
    skip_blanks(&p);
    v = pack_value(&p, &absent);
    if (v == NULL)
        return NULL;
    skip_blanks(&p);
    return *p.f == '\0' ? v : NULL;
}

yyjson_mut_val *json_pack(yyjson_mut_doc *doc, const char *fmt, ...)
{
    va_list ap;
    yyjson_mut_val *v;

    va_start(ap, fmt);
    v = json_vpack(doc, fmt, &ap);
    va_end(ap);
    return v;
}

int json_mut_set(yyjson_mut_doc *doc, yyjson_mut_val *obj, const char *key, yyjson_mut_val *val)
{
    yyjson_mut_val *k = yyjson_mut_strcpy(doc, key);

    return k != NULL && val != NULL && yyjson_mut_obj_put(obj, k, val) ? 0 : -1;
}

char *json_write(yyjson_val *v, size_t *len)
{
    return v ? yyjson_val_write(v, YYJSON_WRITE_NOFLAG, len) : NULL;
}

char *json_mut_write(yyjson_mut_val *v, size_t *len)
{
    return v ? yyjson_mut_val_write(v, YYJSON_WRITE_NOFLAG, len) : NULL;
}

char *json_write_pretty(yyjson_val *v, size_t *len)
{
    return v ? yyjson_val_write(v, YYJSON_WRITE_PRETTY_TWO_SPACES, len) : NULL;
}

char *json_mut_write_pretty(yyjson_mut_val *v, size_t *len)
{
    return v ? yyjson_mut_val_write(v, YYJSON_WRITE_PRETTY_TWO_SPACES, len) : NULL;
}
