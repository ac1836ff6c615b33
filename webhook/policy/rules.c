/*
 * rules.c: the GPUPolicy rule-file loader (rules/README.md) and policy_free(): files,
 * documents, spec.gpu, priority classes, scope, and each rule's common keys; a rule's own keys
 * are its kind's (kind.h), loaded by its module with the helpers of load.h.
 *
 * A file goes through two passes. The first reads it with the bounded YAML reader (yamltree.h),
 * which caps depth and node count, so the tree is at most RULES_NODES_MAX nodes and
 * RULES_DEPTH_MAX deep; then each node, in the order of the text, gets its note (what it is with
 * its tag applied), and anchors, aliases, non-core tags and NUL bytes are refused. The second
 * walks the tree against the format, filling the struct policy and recording every error with
 * its file:line:column and key path. The tree exists because some checks need a whole mapping
 * at once: required and duplicate keys, and keys whose meaning depends on a sibling that may come
 * later (a rule's "default" depends on its "type").
 *
 * Invariants: every array in the policy is allocated zeroed at its final size before it is
 * filled, so policy_free() can release a half-built policy on any error path; a load returns a
 * policy only when no error at all was recorded.
 */
#include "rules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "kind.h"
#include "load.h"
#include "names.h"
#include "yamltree.h"

#define DIGITS "0123456789"

/* ------------------------------------------------------------------------------------------ */
/* Errors */

struct name_ref {
    const char *name; /* borrowed from the policy being built */
    const char *file; /* borrowed from the policy being built */
    unsigned line, column;
};

/* One load: the policy being built, where errors go, and the names seen so far. */
struct loader {
    struct rules_errors *errs;
    struct policy *p;
    size_t docs_cap;
    const char *file; /* the file being read, for messages */
    struct name_ref rule_names[RULES_RULES_MAX];
    size_t n_rules; /* rules seen, all files together */
    bool rules_cap_reported;
    struct name_ref *policy_names;
    size_t n_policy_names, policy_names_cap;
};

void rules_errors_clear(struct rules_errors *e)
{
    memset(e, 0, sizeof(*e));
}

static void verr_at(struct loader *L, const char *file, unsigned line, unsigned column,
                    const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static void verr_at(struct loader *L, const char *file, unsigned line, unsigned column,
                    const char *fmt, va_list ap)
{
    char msg[DIAG_MSG_MAX];
    struct diag *d;

    if (L->errs->n >= RULES_ERRORS_MAX) {
        L->errs->dropped++;
        return;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    d = &L->errs->items[L->errs->n++];
    diag_clear(d);
    diag_set(d, file, line, column, "%s", msg);
}

static void err_at(struct loader *L, const char *file, unsigned line, unsigned column,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void err_at(struct loader *L, const char *file, unsigned line, unsigned column,
                   const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verr_at(L, file, line, column, fmt, ap);
    va_end(ap);
}

static bool has_errors(const struct loader *L)
{
    return L->errs->n > 0 || L->errs->dropped > 0;
}

static void oom(struct loader *L)
{
    err_at(L, L->file, 0, 0, "out of memory");
}

/* Orders the errors from index start on by position: a file's errors then read top to bottom
 * although the checks run in the format's order. Stable, and the count is small. */
static void sort_errors(struct rules_errors *e, size_t start)
{
    size_t i, j;
    struct diag t;

    for (i = start + 1; i < e->n; i++) {
        t = e->items[i];
        for (j = i; j > start; j--) {
            const struct diag *prev = &e->items[j - 1];
            if (prev->line < t.line || (prev->line == t.line && prev->column <= t.column))
                break;
            e->items[j] = *prev;
        }
        e->items[j] = t;
    }
}

/* Makes room for need elements. Returns the array, moved or not, or NULL (arr is then still
 * valid and unchanged). */
static void *grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *n;

    if (need <= *cap)
        return arr;
    ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    n = reallocarray(arr, ncap, elem);
    if (n != NULL)
        *cap = ncap;
    return n;
}

char *xstrdup(struct loader *L, const char *s)
{
    char *d = strdup(s);

    if (d == NULL)
        oom(L);
    return d;
}

/* Zeroed array of n elements; NULL for n == 0, or on failure (recorded). */
void *xcalloc(struct loader *L, size_t n, size_t size)
{
    void *p;

    if (n == 0)
        return NULL;
    p = calloc(n, size);
    if (p == NULL)
        oom(L);
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* First pass: the tree (yamltree.h), and what a rule file makes of its nodes */

/* A node as the second pass sees it: the reader's kind, or YN_BAD for one refused here. */
enum ynode_kind { YN_SCALAR, YN_SEQ, YN_MAP, YN_BAD /* refused alias or value: stay quiet */ };

/* A node's note (yamltree_node.note): in the low byte, what a scalar is by the core schema with
 * its tag applied (enum yamltree_type); a refused node is quiet from then on; a quoted scalar is
 * a string even when it reads "true", and a !!str one counts as quoted. */
#define NOTE_TYPE   0xffu
#define NOTE_BAD    0x100u
#define NOTE_QUOTED 0x200u

static enum ynode_kind ykind(const struct yamltree_node *n)
{
    if (n->kind == YAMLTREE_ALIAS || (n->note & NOTE_BAD))
        return YN_BAD;
    return n->kind == YAMLTREE_MAP ? YN_MAP : n->kind == YAMLTREE_SEQ ? YN_SEQ : YN_SCALAR;
}

static enum yamltree_type ysk(const struct yamltree_node *n)
{
    return (enum yamltree_type)(n->note & NOTE_TYPE);
}

static bool yquoted(const struct yamltree_node *n)
{
    return (n->note & NOTE_QUOTED) != 0;
}

#define CORE_TAG "tag:yaml.org,2002:"

/* The core tag of a node, checked against its kind. Returns 0 with *sk set for scalars
 * (YAMLTREE_STR also for "no tag"), or -1 when the tag is refused (recorded). */
static int check_tag(struct loader *L, const char *file, const struct yamltree_node *n,
                     enum yamltree_type *sk)
{
    static const char *const scalars[] = {"str", "null", "bool", "int", "float"};
    const char *tag = n->tag, *t;
    size_t i;

    *sk = YAMLTREE_STR;
    if (tag == NULL)
        return 0;
    t = strncmp(tag, CORE_TAG, strlen(CORE_TAG)) == 0 ? tag + strlen(CORE_TAG) : NULL;
    if (t != NULL && n->kind == YAMLTREE_MAP && strcmp(t, "map") == 0)
        return 0;
    if (t != NULL && n->kind == YAMLTREE_SEQ && strcmp(t, "seq") == 0)
        return 0;
    for (i = 0; t != NULL && n->kind == YAMLTREE_SCALAR && i < 5; i++) {
        if (strcmp(t, scalars[i]) == 0) {
            *sk = (enum yamltree_type)i; /* the same order */
            return 0;
        }
    }
    err_at(L, file, n->line, n->column,
           "tag \"%.64s\" is not supported on a %s (only the YAML core tags !!str, !!null, "
           "!!bool, !!int, !!float, !!map and !!seq)",
           tag,
           n->kind == YAMLTREE_MAP   ? "mapping"
           : n->kind == YAMLTREE_SEQ ? "sequence"
                                     : "scalar");
    return -1;
}

/* Sets n's note, recording what is refused: a tag, a NUL byte, a value its tag does not fit. */
static void note_node(struct loader *L, const char *file, struct yamltree_node *n)
{
    enum yamltree_type tagged, sk;
    int tag_rc;

    if (n->kind == YAMLTREE_ALIAS)
        return;
    tag_rc = check_tag(L, file, n, &tagged);
    if (n->kind != YAMLTREE_SCALAR) {
        n->note = tag_rc < 0 ? NOTE_BAD : 0; /* its children still count, and are never read */
        return;
    }
    if (memchr(n->s, '\0', n->len) != NULL) {
        err_at(L, file, n->line, n->column, "a NUL character is not allowed in a value");
        n->note = NOTE_BAD;
    } else if (tag_rc < 0) {
        n->note = NOTE_BAD;
    } else if (n->tag == NULL) {
        n->note = n->plain ? (unsigned)yamltree_resolve(n->s) : YAMLTREE_STR | NOTE_QUOTED;
    } else if (tagged == YAMLTREE_STR) {
        n->note = YAMLTREE_STR | NOTE_QUOTED;
    } else {
        /* an explicit !!int etc. types the text whatever its style; it must read as one */
        sk = yamltree_resolve(n->s);
        n->note = sk;
        if (sk != tagged && !(tagged == YAMLTREE_FLOAT && sk == YAMLTREE_INT)) {
            err_at(L, file, n->line, n->column, "\"%.64s\" is not a valid !!%s", n->s,
                   n->tag + strlen(CORE_TAG));
            n->note = NOTE_BAD;
        }
    }
}

/* Why the reader stopped, in the loader's words. */
static void read_failed(struct loader *L, const char *file, const struct yamltree_error *e)
{
    const char *problem = e->problem ? e->problem : "unknown problem";

    switch (e->code) {
    case YAMLTREE_E_NODES:
        err_at(L, file, e->line, e->column, "more than %u YAML nodes in one file", RULES_NODES_MAX);
        break;
    case YAMLTREE_E_DEPTH:
        err_at(L, file, e->line, e->column, "nesting deeper than %u levels", RULES_DEPTH_MAX);
        break;
    case YAMLTREE_E_SYNTAX:
        if (e->libyaml_error == YAML_READER_ERROR && e->problem_value != -1)
            err_at(L, file, 0, 0, "cannot read YAML: %s (#%X at byte %zu)", problem,
                   (unsigned)e->problem_value, e->problem_offset);
        else if (e->libyaml_error == YAML_READER_ERROR)
            err_at(L, file, 0, 0, "cannot read YAML: %s at byte %zu", problem, e->problem_offset);
        else if (e->context != NULL)
            err_at(L, file, e->line, e->column, "YAML syntax error: %s (%s at line %u, column %u)",
                   problem, e->context, e->context_line, e->context_column);
        else
            err_at(L, file, e->line, e->column, "YAML syntax error: %s", problem);
        break;
    case YAMLTREE_E_MEMORY:
    default: oom(L); break;
    }
}

/* Reads text into t, recording what is refused; the documents that ended before a stop are in
 * t->docs either way. Anchors and aliases are reported once, at the first. */
static void read_tree(struct loader *L, const char *file, const char *text, size_t len,
                      struct yamltree *t)
{
    static const struct yamltree_limits lim = {RULES_DEPTH_MAX, RULES_NODES_MAX, 0};
    const struct yamltree_node *first = NULL;
    size_t anchors = 0;
    int read = yamltree_read(text, len, &lim, YAMLTREE_UTF8 | YAMLTREE_KEEP_ALIASES, t);

    for (size_t i = 0; i < t->n_nodes; i++) {
        struct yamltree_node *n = t->nodes[i];

        if (n->anchored || n->kind == YAMLTREE_ALIAS) {
            first = anchors++ == 0 ? n : first;
        }
        note_node(L, file, n);
    }
    if (read < 0) {
        /* an alias refused by the node cap was noted before it was counted */
        if (t->err.at != NULL && t->err.at->kind == YAMLTREE_ALIAS)
            first = anchors++ == 0 ? t->err.at : first;
        read_failed(L, file, &t->err);
    }
    if (anchors > 1)
        err_at(L, file, first->line, first->column,
               "anchors and aliases are not supported (%zu in this file, the first here)", anchors);
    else if (anchors == 1)
        err_at(L, file, first->line, first->column, "anchors and aliases are not supported");
}

/* ------------------------------------------------------------------------------------------ */
/* Second pass: messages */

/* The text quoted for a message: escaped, cut at RULES_VALUE_SHOWN bytes. Returns buf. */
const char *show(char *buf, const char *s)
{
    size_t i, o = 0;

    buf[o++] = '"';
    for (i = 0; i < RULES_VALUE_SHOWN && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(buf + o, SHOW_BUF - o, "\\x%02x", c);
            o += 4;
        } else {
            buf[o++] = (char)c;
        }
    }
    if (s[i]) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* What a node is, for "got ..." in messages. Returns buf or a constant. */
static const char *describe(char *buf, const struct yamltree_node *n)
{
    switch (ykind(n)) {
    case YN_MAP: return "a mapping";
    case YN_SEQ: return "a sequence";
    case YN_BAD: return "an alias";
    case YN_SCALAR: break;
    }
    switch (ysk(n)) {
    case YAMLTREE_NULL: return "null";
    case YAMLTREE_STR: return show(buf, n->s);
    default:
        /* a plain true or 12 is not text: shown bare, so that it does not look quoted */
        snprintf(buf, SHOW_BUF, "%.64s", n->s);
        return buf;
    }
}

static const char *where(char *buf, const char *path)
{
    if (path[0] == '\0')
        return "at the top level";
    snprintf(buf, RULES_PATH_MAX + 4, "in %s", path);
    return buf;
}

/* A path cut to fit ends in "...": messages stay readable and say it was cut. */
static void path_fit(char *out, int written)
{
    if (written >= (int)RULES_PATH_MAX)
        memcpy(out + RULES_PATH_MAX - 4, "...", 4);
}

void path_key(char *out, const char *base, const char *key)
{
    path_fit(out, snprintf(out, RULES_PATH_MAX, "%s%s%s", base, base[0] ? "." : "", key));
}

void path_index(char *out, const char *base, size_t i)
{
    path_fit(out, snprintf(out, RULES_PATH_MAX, "%s[%zu]", base, i));
}

static void path_mapkey(char *out, const char *base, const char *key)
{
    char b[SHOW_BUF];

    path_fit(out, snprintf(out, RULES_PATH_MAX, "%s[%s]", base, show(b, key)));
}

static void join(char *buf, size_t size, const char *const *names, size_t n)
{
    size_t i, o = 0;

    buf[0] = '\0';
    for (i = 0; i < n && o < size; i++) {
        int w = snprintf(buf + o, size - o, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

void err_node(struct loader *L, const struct yamltree_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void err_node(struct loader *L, const struct yamltree_node *n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    verr_at(L, L->file, n->line, n->column, fmt, ap);
    va_end(ap);
}

/* "PATH: expected WHAT, got X". Quiet for refused nodes, which were reported already. */
static void err_type(struct loader *L, const struct yamltree_node *n, const char *path,
                     const char *what, const char *hint)
{
    char b[SHOW_BUF];

    if (ykind(n) != YN_BAD)
        err_node(L, n, "%s: expected %s, got %s%s", path, what, describe(b, n), hint);
}

/* ------------------------------------------------------------------------------------------ */
/* Second pass: values */

static bool is_null(const struct yamltree_node *n)
{
    return ykind(n) == YN_SCALAR && ysk(n) == YAMLTREE_NULL;
}

/* An optional key that is absent or null takes its default. */
bool given(const struct yamltree_node *n)
{
    return n != NULL && !is_null(n);
}

static bool want_map(struct loader *L, const struct yamltree_node *n, const char *path)
{
    if (ykind(n) == YN_MAP)
        return true;
    err_type(L, n, path, "a mapping", "");
    return false;
}

bool want_seq(struct loader *L, const struct yamltree_node *n, const char *path)
{
    if (ykind(n) == YN_SEQ)
        return true;
    err_type(L, n, path, "a sequence", "");
    return false;
}

/* Borrowed text of a string scalar, or NULL (recorded). */
static const char *get_text(struct loader *L, const struct yamltree_node *n, const char *path)
{
    const char *hint = "";

    if (ykind(n) == YN_SCALAR && ysk(n) == YAMLTREE_STR)
        return n->s;
    if (ykind(n) == YN_SCALAR && ysk(n) == YAMLTREE_BOOL)
        hint = " (a boolean; quote it to make it a string)";
    else if (ykind(n) == YN_SCALAR && (ysk(n) == YAMLTREE_INT || ysk(n) == YAMLTREE_FLOAT))
        hint = " (a number; quote it to make it a string)";
    err_type(L, n, path, "a string", hint);
    return NULL;
}

int get_bool(struct loader *L, const struct yamltree_node *n, const char *path, bool *out)
{
    if (ykind(n) == YN_SCALAR && ysk(n) == YAMLTREE_BOOL) {
        *out = n->s[0] == 't' || n->s[0] == 'T';
        return 0;
    }
    err_type(L, n, path, "a boolean (true or false)",
             ykind(n) == YN_SCALAR && yquoted(n) && yamltree_resolve(n->s) == YAMLTREE_BOOL
                 ? " (a quoted string; remove the quotes)"
                 : "");
    return -1;
}

/* A decimal integer in [min, max]. Leading zeros are refused: YAML 1.1 tools read 010 as 8. */
int get_int(struct loader *L, const struct yamltree_node *n, const char *path, int64_t min,
            int64_t max, int64_t *out)
{
    const char *s, *digits;
    char *end;
    long long v;

    if (ykind(n) != YN_SCALAR || ysk(n) != YAMLTREE_INT) {
        err_type(L, n, path, "an integer",
                 ykind(n) == YN_SCALAR && yquoted(n) && yamltree_resolve(n->s) == YAMLTREE_INT
                     ? " (a quoted string; remove the quotes)"
                     : "");
        return -1;
    }
    s = n->s;
    digits = s + (*s == '-' || *s == '+');
    if (strspn(digits, DIGITS) != strlen(digits)) {
        err_type(L, n, path, "a decimal integer", "");
        return -1;
    }
    if (digits[0] == '0' && digits[1] != '\0') {
        err_type(L, n, path, "a decimal integer without leading zeros", "");
        return -1;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < min || v > max) {
        if (max == INT64_MAX)
            err_node(L, n, "%s: integer %.40s out of range; expected at least %lld", path, s,
                     (long long)min);
        else
            err_node(L, n, "%s: integer %.40s out of range; expected %lld to %lld", path, s,
                     (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

/* The index of the string value in names, or -1 (recorded). */
int get_enum(struct loader *L, const struct yamltree_node *n, const char *path,
             const char *const *names, size_t nn)
{
    char list[LIST_BUF], b[SHOW_BUF];
    size_t i;

    if (ykind(n) == YN_SCALAR && ysk(n) == YAMLTREE_STR)
        for (i = 0; i < nn; i++)
            if (strcmp(n->s, names[i]) == 0)
                return (int)i;
    if (ykind(n) == YN_BAD)
        return -1;
    join(list, sizeof(list), names, nn);
    err_node(L, n, "%s: expected one of %s, got %s", path, list, describe(b, n));
    return -1;
}

/* Name checks: each returns NULL when s is fine, else what is wrong with it. */

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* DNS-1123 subdomain as Kubernetes checks it: dot-separated [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool subdomain_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > 253)
        return false;
    for (i = 0; i < len; i++) {
        bool edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (lower_alnum(s[i]))
            continue;
        if (edge || (s[i] != '-' && s[i] != '.'))
            return false;
    }
    return true;
}

static const char *check_glob(const char *s)
{
    size_t i, j;
    const char *close;

    if (s[0] == '\0')
        return "must not be empty";
    for (i = 0; s[i]; i++) {
        if (s[i] == '\\') {
            if (s[i + 1])
                i++;
            continue;
        }
        if (s[i] != '[')
            continue;
        j = i + 1;
        if (s[j] == '!' || s[j] == '^')
            j++;
        if (s[j] == ']')
            j++; /* a ']' first is a member, not the end */
        for (; s[j] && s[j] != ']'; j++) {
            if (s[j] == '[' && (s[j + 1] == ':' || s[j + 1] == '.' || s[j + 1] == '=')) {
                char pair[3] = {s[j + 1], ']', '\0'};
                close = strstr(s + j + 2, pair);
                if (close != NULL)
                    j = (size_t)(close - s) + 1; /* on the class's ']' */
                else
                    continue;
            } else if (s[j] == '\\' && s[j + 1]) {
                j++;
            }
        }
        if (s[j] == '\0')
            return "unterminated '[' bracket expression";
        i = j;
    }
    return NULL;
}

static const char *check_sa_glob(const char *s)
{
    const char *why = check_glob(s);

    if (why == NULL && strchr(s, '/') == NULL)
        why = "must be NAMESPACE/NAME";
    return why;
}

static const char *check_label_key(const char *s)
{
    const char *slash = strchr(s, '/'), *name = s;

    if (slash != NULL) {
        if (strchr(slash + 1, '/') != NULL)
            return "must hold at most one '/'";
        if (!subdomain_ok(s, (size_t)(slash - s)))
            return "the prefix before '/' must be a DNS subdomain (lowercase letters, digits, '-' "
                   "and '.', at most 253 characters)";
        name = slash + 1;
    }
    if (!names_part_ok(name, strlen(name)))
        return "the name must be 1-63 characters of letters, digits, '-', '_' and '.', starting "
               "and ending with a letter or digit";
    return NULL;
}

static const char *check_label_value(const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || names_part_ok(s, len))
        return NULL;
    return "must be at most 63 characters of letters, digits, '-', '_' and '.', starting and "
           "ending with a letter or digit";
}

static const char *check_subdomain(const char *s)
{
    if (subdomain_ok(s, strlen(s)))
        return NULL;
    return "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 "
           "characters, starting and ending with a letter or digit)";
}

static const char *check_dns_label(const char *s)
{
    if (subdomain_ok(s, strlen(s)) && strchr(s, '.') == NULL && strlen(s) <= 63)
        return NULL;
    return "must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters, "
           "starting and ending with a letter or digit)";
}

static const char *check_rule_name(const char *s)
{
    if (names_part_ok(s, strlen(s)))
        return NULL;
    return "must be a valid audit annotation key: 1-63 characters of letters, digits, '-', '_' "
           "and '.', starting and ending with a letter or digit";
}

const struct check VAL_GLOB = {"glob", check_glob};
static const struct check VAL_SA_GLOB = {"service account glob", check_sa_glob};
const struct check VAL_LABEL_KEY = {"label key", check_label_key};
const struct check VAL_LABEL_VALUE = {"label value", check_label_value};
const struct check VAL_SUBDOMAIN = {"name", check_subdomain};
static const struct check VAL_POLICY_NAME = {"policy name", check_dns_label};
static const struct check VAL_POOL_NAME = {"pool name", check_dns_label};
static const struct check VAL_RULE_NAME = {"rule name", check_rule_name};
const struct check VAL_RESOURCE = {"resource name", check_label_key};

static bool check_text(struct loader *L, const struct yamltree_node *n, const char *path,
                       const struct check *c, const char *s)
{
    const char *why = c->fn(s);
    char b[SHOW_BUF];

    if (why == NULL)
        return true;
    err_node(L, n, "%s: bad %s %s: %s", path, c->what, show(b, s), why);
    return false;
}

/* A checked string copied into *out. Returns 0 or -1 (recorded). */
int get_str(struct loader *L, const struct yamltree_node *n, const char *path,
            const struct check *c, char **out)
{
    const char *s = get_text(L, n, path);

    if (s == NULL || (c != NULL && !check_text(L, n, path, c, s)))
        return -1;
    *out = xstrdup(L, s);
    return *out != NULL ? 0 : -1;
}

static void set_strlist(struct loader *L, struct strlist *l, const char *const *v, size_t n)
{
    size_t i;

    l->v = xcalloc(L, n, sizeof(*l->v));
    if (l->v == NULL)
        return;
    l->n = n;
    for (i = 0; i < n; i++)
        l->v[i] = xstrdup(L, v[i]);
}

void load_strlist(struct loader *L, const struct yamltree_node *n, const char *path,
                  const struct check *c, struct strlist *out)
{
    char p[RULES_PATH_MAX];
    size_t i;

    if (!want_seq(L, n, path))
        return;
    out->v = xcalloc(L, n->n, sizeof(*out->v));
    if (out->v == NULL)
        return;
    out->n = n->n;
    for (i = 0; i < n->n; i++) {
        path_index(p, path, i);
        get_str(L, n->kids[i], p, c, &out->v[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Second pass: mappings */

static void join_fields(char *buf, size_t size, const struct field *f, size_t nf)
{
    const char *names[RULE_KEYS_MAX]; /* the widest table: a rule's keys, every kind's */
    size_t i;

    for (i = 0; i < nf && i < RULE_KEYS_MAX; i++)
        names[i] = f[i].name;
    join(buf, size, names, i);
}

/* A key of a mapping must be a string; returns its text, or NULL (recorded). */
static const char *key_text(struct loader *L, const struct yamltree_node *k, const char *path)
{
    char b[SHOW_BUF], w[RULES_PATH_MAX + 4];

    if (ykind(k) == YN_SCALAR && ysk(k) != YAMLTREE_NULL)
        return k->s; /* a plain 1 or true as a key is the text "1" or "true", as in JSON */
    if (ykind(k) != YN_BAD)
        err_node(L, k, "expected a string key %s, got %s", where(w, path), describe(b, k));
    return NULL;
}

/* Sorts the pairs of map by fields: vals[i] and keys[i] get the value and key of fields[i], or
 * NULL. Reports unknown, duplicate and missing required keys. False when map is not a mapping. */
bool map_fields(struct loader *L, const struct yamltree_node *map, const char *path,
                const struct field *fields, size_t nf, const struct yamltree_node **vals,
                const struct yamltree_node **keys)
{
    char list[LIST_BUF], w[RULES_PATH_MAX + 4], b[SHOW_BUF];
    const char *k;
    size_t i, f;

    for (f = 0; f < nf; f++)
        vals[f] = keys[f] = NULL;
    if (!want_map(L, map, path))
        return false;
    for (i = 0; i + 1 < map->n; i += 2) {
        k = key_text(L, map->kids[i], path);
        if (k == NULL)
            continue;
        for (f = 0; f < nf && strcmp(fields[f].name, k) != 0; f++)
            ;
        if (f == nf) {
            join_fields(list, sizeof(list), fields, nf);
            err_node(L, map->kids[i], "unknown key %s %s; expected one of %s", show(b, k),
                     where(w, path), list);
        } else if (keys[f] != NULL) {
            err_node(L, map->kids[i], "duplicate key %s %s (first at line %u, column %u)",
                     show(b, k), where(w, path), keys[f]->line, keys[f]->column);
        } else {
            keys[f] = map->kids[i];
            vals[f] = map->kids[i + 1];
        }
    }
    for (f = 0; f < nf; f++)
        if (fields[f].required && keys[f] == NULL)
            err_node(L, map, "missing required key \"%s\" %s", fields[f].name, where(w, path));
    return true;
}

/* For mappings with keys of the user's choosing: the text of key i, or NULL when it is not a
 * string or repeats an earlier key (recorded). */
static const char *free_key(struct loader *L, const struct yamltree_node *map, size_t i,
                            const char *path)
{
    char w[RULES_PATH_MAX + 4], b[SHOW_BUF];
    const char *k = key_text(L, map->kids[i], path);
    size_t j;

    for (j = 0; k != NULL && j < i; j += 2) {
        const struct yamltree_node *prev = map->kids[j];
        if (ykind(prev) == YN_SCALAR && ysk(prev) != YAMLTREE_NULL && strcmp(prev->s, k) == 0) {
            err_node(L, map->kids[i], "duplicate key %s %s (first at line %u, column %u)",
                     show(b, k), where(w, path), prev->line, prev->column);
            return NULL;
        }
    }
    return k;
}

/* ------------------------------------------------------------------------------------------ */
/* Second pass: the format */

static const char *const ACTIONS[] = {"Deny", "Mutate"};
static const char *const EFFECTS[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
static const char *const PREEMPTIONS[] = {"PreemptLowerPriority", "Never"};
static const char *const OPERATORS[] = {"In", "NotIn", "Exists", "DoesNotExist"};
static const char *const DEFAULT_RESOURCES[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared",
                                                "nvidia.com/mig-*"};
static const char *const DEFAULT_EXCLUDED_KINDS[] = {"DaemonSet"};

#define API_VERSION   "gpuadmit.io/v1alpha1"
#define KIND          "GPUPolicy"
#define DEFAULT_LABEL "nvidia.com/gpu.present"
#define DEFAULT_TAINT "nvidia.com/gpu"

/* Label maps: gpu.nodeLabels ("" or null: the key must exist) and a node-selector rule's labels
 * (value_required: a non-empty value). */
void load_label_map(struct loader *L, const struct yamltree_node *n, const char *path,
                    bool value_required, struct node_label **out, size_t *n_out)
{
    char p[RULES_PATH_MAX];
    const char *k, *v;
    size_t i;

    if (!want_map(L, n, path))
        return;
    *out = xcalloc(L, n->n / 2, sizeof(**out));
    if (*out == NULL)
        return;
    *n_out = n->n / 2;
    for (i = 0; i + 1 < n->n; i += 2) {
        struct node_label *nl = &(*out)[i / 2];
        const struct yamltree_node *val = n->kids[i + 1];
        k = free_key(L, n, i, path);
        if (k == NULL || !check_text(L, n->kids[i], path, &VAL_LABEL_KEY, k))
            continue;
        nl->key = xstrdup(L, k);
        path_mapkey(p, path, k);
        if (!value_required && (is_null(val) || (ykind(val) == YN_SCALAR &&
                                                 ysk(val) == YAMLTREE_STR && val->s[0] == '\0')))
            continue; /* any value */
        v = get_text(L, val, p);
        if (v == NULL)
            continue;
        if (value_required && v[0] == '\0') {
            err_node(L, val, "%s: expected a non-empty label value", p);
            continue;
        }
        if (check_text(L, val, p, &VAL_LABEL_VALUE, v))
            nl->value = xstrdup(L, v);
    }
}

void load_count_map(struct loader *L, const struct yamltree_node *n, const char *path,
                    const struct check *c, int64_t max, struct name_count **out, size_t *n_out)
{
    char p[RULES_PATH_MAX];
    const char *k;

    if (!want_map(L, n, path))
        return;
    *out = xcalloc(L, n->n / 2, sizeof(**out));
    if (*out == NULL)
        return;
    for (size_t i = 0; i + 1 < n->n; i += 2) {
        struct name_count *nc = &(*out)[*n_out];

        k = free_key(L, n, i, path);
        if (k == NULL || !check_text(L, n->kids[i], path, c, k))
            continue;
        path_mapkey(p, path, k);
        if (get_int(L, n->kids[i + 1], p, 0, max, &nc->n) == 0 &&
            (nc->name = xstrdup(L, k)) != NULL)
            (*n_out)++;
    }
}

enum { SEL_MATCH_LABELS, SEL_MATCH_EXPRESSIONS, SEL_N };
static const struct field SELECTOR_FIELDS[SEL_N] = {{"matchLabels", false},
                                                    {"matchExpressions", false}};
enum { EXPR_KEY, EXPR_OPERATOR, EXPR_VALUES, EXPR_N };
static const struct field EXPR_FIELDS[EXPR_N] = {
    {"key", true}, {"operator", true}, {"values", false}};

static void load_expression(struct loader *L, const struct yamltree_node *n, const char *path,
                            struct label_req *r)
{
    const struct yamltree_node *v[EXPR_N], *k[EXPR_N];
    char p[RULES_PATH_MAX];
    int op = -1;

    if (!map_fields(L, n, path, EXPR_FIELDS, EXPR_N, v, k))
        return;
    if (v[EXPR_KEY] != NULL) {
        path_key(p, path, "key");
        get_str(L, v[EXPR_KEY], p, &VAL_LABEL_KEY, &r->key);
    }
    if (v[EXPR_OPERATOR] != NULL) {
        path_key(p, path, "operator");
        op = get_enum(L, v[EXPR_OPERATOR], p, OPERATORS, 4);
    }
    path_key(p, path, "values");
    if (given(v[EXPR_VALUES]))
        load_strlist(L, v[EXPR_VALUES], p, &VAL_LABEL_VALUE, &r->values);
    /* a values of the wrong type was reported already */
    if (op < 0 || (given(v[EXPR_VALUES]) && ykind(v[EXPR_VALUES]) != YN_SEQ))
        return;
    r->op = (enum selector_op)op;
    if ((op == SEL_IN || op == SEL_NOT_IN) && r->values.n == 0)
        err_node(L, given(v[EXPR_VALUES]) ? v[EXPR_VALUES] : n,
                 "%s: operator %s needs at least one value", p, OPERATORS[op]);
    if ((op == SEL_EXISTS || op == SEL_DOES_NOT_EXIST) && r->values.n > 0)
        err_node(L, v[EXPR_VALUES], "%s: operator %s takes no values", p, OPERATORS[op]);
}

static void load_selector(struct loader *L, const struct yamltree_node *n, const char *path,
                          struct label_selector *sel)
{
    const struct yamltree_node *v[SEL_N], *k[SEL_N], *ml, *me;
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX];
    size_t i, n_ml = 0, n_me = 0;

    if (!map_fields(L, n, path, SELECTOR_FIELDS, SEL_N, v, k))
        return;
    sel->set = true;
    ml = v[SEL_MATCH_LABELS];
    me = v[SEL_MATCH_EXPRESSIONS];
    path_key(p, path, "matchLabels");
    if (given(ml) && want_map(L, ml, p))
        n_ml = ml->n / 2;
    path_key(q, path, "matchExpressions");
    if (given(me) && want_seq(L, me, q))
        n_me = me->n;
    sel->reqs = xcalloc(L, n_ml + n_me, sizeof(*sel->reqs));
    if (sel->reqs == NULL)
        return;
    sel->n = n_ml + n_me;
    for (i = 0; i < n_ml; i++) {
        struct label_req *r = &sel->reqs[i];
        const char *key = free_key(L, ml, 2 * i, p);
        char vp[RULES_PATH_MAX];
        r->op = SEL_IN;
        if (key == NULL || !check_text(L, ml->kids[2 * i], p, &VAL_LABEL_KEY, key))
            continue;
        r->key = xstrdup(L, key);
        path_mapkey(vp, p, key);
        r->values.v = xcalloc(L, 1, sizeof(char *));
        if (r->values.v == NULL)
            continue;
        r->values.n = 1;
        get_str(L, ml->kids[2 * i + 1], vp, &VAL_LABEL_VALUE, &r->values.v[0]);
    }
    for (i = 0; i < n_me; i++) {
        char ep[RULES_PATH_MAX];
        path_index(ep, q, i);
        load_expression(L, me->kids[i], ep, &sel->reqs[n_ml + i]);
    }
}

enum { M_NAMESPACES, M_LABELS, M_USERS, M_GROUPS, M_SAS, M_OWNERS, M_N };
static const struct field MATCH_FIELDS[M_N] = {{"namespaces", false},      {"labelSelector", false},
                                               {"users", false},           {"groups", false},
                                               {"serviceAccounts", false}, {"ownerKinds", false}};

/* A match or exclude list: an empty one would read as "anything" in a match block and as
 * "nothing" in an exclude block, so it is refused either way. */
static void load_match_list(struct loader *L, const struct yamltree_node *n, const char *path,
                            const struct check *c, struct strlist *out)
{
    if (ykind(n) == YN_SEQ && n->n == 0) {
        err_node(L, n, "%s: an empty list; leave the key out instead", path);
        return;
    }
    load_strlist(L, n, path, c, out);
}

static void load_match(struct loader *L, const struct yamltree_node *n, const char *path,
                       struct match *m)
{
    const struct yamltree_node *v[M_N], *k[M_N];
    char p[RULES_PATH_MAX];

    if (!map_fields(L, n, path, MATCH_FIELDS, M_N, v, k))
        return;
    path_key(p, path, "namespaces");
    if (given(v[M_NAMESPACES]))
        load_match_list(L, v[M_NAMESPACES], p, &VAL_GLOB, &m->namespaces);
    path_key(p, path, "labelSelector");
    if (given(v[M_LABELS]))
        load_selector(L, v[M_LABELS], p, &m->labels);
    path_key(p, path, "users");
    if (given(v[M_USERS]))
        load_match_list(L, v[M_USERS], p, &VAL_GLOB, &m->users);
    path_key(p, path, "groups");
    if (given(v[M_GROUPS]))
        load_match_list(L, v[M_GROUPS], p, &VAL_GLOB, &m->groups);
    path_key(p, path, "serviceAccounts");
    if (given(v[M_SAS]))
        load_match_list(L, v[M_SAS], p, &VAL_SA_GLOB, &m->service_accounts);
    path_key(p, path, "ownerKinds");
    if (given(v[M_OWNERS]))
        load_match_list(L, v[M_OWNERS], p, &VAL_GLOB, &m->owner_kinds);
}

/* match and exclude of a policy or a rule; with_default: a policy without exclude excludes
 * DaemonSets. */
static void load_scope(struct loader *L, const struct yamltree_node *match,
                       const struct yamltree_node *exclude, const char *path, bool with_default,
                       struct scope *s)
{
    char p[RULES_PATH_MAX];

    if (given(match)) {
        s->has_match = true;
        path_key(p, path, "match");
        load_match(L, match, p, &s->match);
    }
    if (given(exclude)) {
        s->has_exclude = true;
        path_key(p, path, "exclude");
        load_match(L, exclude, p, &s->exclude);
    } else if (with_default) {
        s->has_exclude = true;
        set_strlist(L, &s->exclude.owner_kinds, DEFAULT_EXCLUDED_KINDS, 1);
    }
}

enum { T_KEY, T_VALUE, T_EFFECT, T_N };
static const struct field TAINT_FIELDS[T_N] = {{"key", true}, {"value", false}, {"effect", false}};

static bool same_taint(const struct taint *a, const struct taint *b)
{
    return a->key != NULL && a->effect != NULL && b->key != NULL && b->effect != NULL &&
           strcmp(a->key, b->key) == 0 && strcmp(a->effect, b->effect) == 0 &&
           ((a->value == NULL && b->value == NULL) ||
            (a->value != NULL && b->value != NULL && strcmp(a->value, b->value) == 0));
}

void load_taints(struct loader *L, const struct yamltree_node *n, const char *path,
                 struct taint **out, size_t *n_out)
{
    const struct yamltree_node *v[T_N], *k[T_N];
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX];
    size_t i;
    int e;

    if (!want_seq(L, n, path))
        return;
    *out = xcalloc(L, n->n, sizeof(**out));
    if (*out == NULL)
        return;
    *n_out = n->n;
    for (i = 0; i < n->n; i++) {
        struct taint *t = &(*out)[i];
        path_index(p, path, i);
        if (!map_fields(L, n->kids[i], p, TAINT_FIELDS, T_N, v, k))
            continue;
        path_key(q, p, "key");
        if (v[T_KEY] != NULL)
            get_str(L, v[T_KEY], q, &VAL_LABEL_KEY, &t->key);
        path_key(q, p, "value");
        if (given(v[T_VALUE]))
            get_str(L, v[T_VALUE], q, &VAL_LABEL_VALUE, &t->value);
        path_key(q, p, "effect");
        e = given(v[T_EFFECT]) ? get_enum(L, v[T_EFFECT], q, EFFECTS, 3) : 0;
        if (e >= 0)
            t->effect = xstrdup(L, EFFECTS[e]);
        for (size_t j = 0; j < i; j++)
            if (same_taint(&(*out)[j], t))
                err_node(L, n->kids[i], "%s: the same taint as %s[%zu]", p, path, j);
    }
}

/* What one kind of GPU node is, as gpu: or a pool of gpu.pools writes it: resources, nodeLabels
 * and taints, each with its default when left out. */
struct gpu_kind {
    struct strlist *resources;
    struct node_label **labels;
    size_t *n_labels;
    struct taint **taints;
    size_t *n_taints;
};

static void load_gpu_kind(struct loader *L, const struct yamltree_node *resources,
                          const struct yamltree_node *labels, const struct yamltree_node *taints,
                          const char *path, const struct gpu_kind *out)
{
    char p[RULES_PATH_MAX];

    path_key(p, path, "resources");
    if (given(resources) && ykind(resources) == YN_SEQ && resources->n == 0)
        err_node(L, resources,
                 "%s: an empty list would turn every rule off; name at least "
                 "one GPU resource, or leave the key out for the defaults",
                 p);
    else if (given(resources))
        load_strlist(L, resources, p, &VAL_GLOB, out->resources);
    else
        set_strlist(L, out->resources, DEFAULT_RESOURCES, 3);
    path_key(p, path, "nodeLabels");
    if (given(labels)) {
        load_label_map(L, labels, p, false, out->labels, out->n_labels);
    } else {
        *out->labels = xcalloc(L, 1, sizeof(**out->labels));
        if (*out->labels != NULL) {
            *out->n_labels = 1;
            (*out->labels)[0].key = xstrdup(L, DEFAULT_LABEL);
            (*out->labels)[0].value = xstrdup(L, "true");
        }
    }
    path_key(p, path, "taints");
    if (given(taints)) {
        load_taints(L, taints, p, out->taints, out->n_taints);
    } else {
        *out->taints = xcalloc(L, 1, sizeof(**out->taints));
        if (*out->taints != NULL) {
            *out->n_taints = 1;
            (*out->taints)[0].key = xstrdup(L, DEFAULT_TAINT);
            (*out->taints)[0].effect = xstrdup(L, "NoSchedule");
        }
    }
}

enum { GP_NAME, GP_RESOURCES, GP_NODE_LABELS, GP_TAINTS, GP_N };
static const struct field POOL_FIELDS[GP_N] = {
    {"name", true}, {"resources", true}, {"nodeLabels", false}, {"taints", false}};

/* A later pool's resource glob that an earlier pool's glob already matches (or that equals it)
 * would never be the later pool's: a resource is the first matching pool's. */
static void check_pool_resources(struct loader *L, const struct policy_doc *doc, size_t at,
                                 const struct yamltree_node *seq, const char *path)
{
    const struct gpu_pool *pl = &doc->pools[at];
    char p[RULES_PATH_MAX], b[SHOW_BUF], c[SHOW_BUF];

    for (size_t i = 0; i < pl->resources.n; i++) {
        const char *g = pl->resources.v[i];

        for (size_t j = 0; g != NULL && j <= at; j++) {
            const struct strlist *o = &doc->pools[j].resources;

            for (size_t k = 0; k < (j == at ? i : o->n); k++) {
                if (o->v[k] == NULL || fnmatch(o->v[k], g, 0) != 0)
                    continue;
                path_index(p, path, i);
                if (j == at)
                    err_node(L, seq->kids[i], "%s: %s is matched by %s[%zu] of the same pool", p,
                             show(b, g), path, k);
                else
                    err_node(L, seq->kids[i],
                             "%s: %s is matched by %s of pool %s, so it would never be this "
                             "pool's (a resource belongs to the first pool that matches it)",
                             p, show(b, g), show(c, o->v[k]), doc->pools[j].name);
                j = at + 1;
                break;
            }
        }
    }
}

static void load_pool(struct loader *L, const struct yamltree_node *n, const char *path,
                      struct policy_doc *doc, size_t at)
{
    const struct yamltree_node *v[GP_N], *k[GP_N];
    struct gpu_pool *pl = &doc->pools[at];
    char p[RULES_PATH_MAX], b[SHOW_BUF];

    if (!map_fields(L, n, path, POOL_FIELDS, GP_N, v, k))
        return;
    path_key(p, path, "name");
    if (v[GP_NAME] != NULL && get_str(L, v[GP_NAME], p, &VAL_POOL_NAME, &pl->name) == 0)
        for (size_t j = 0; j < at; j++)
            if (doc->pools[j].name != NULL && strcmp(doc->pools[j].name, pl->name) == 0)
                err_node(L, v[GP_NAME], "%s: pool name %s is taken by an earlier pool", p,
                         show(b, pl->name));
    if (pl->name == NULL)
        pl->name = xstrdup(L, "?");
    load_gpu_kind(
        L, v[GP_RESOURCES], v[GP_NODE_LABELS], v[GP_TAINTS], path,
        &(struct gpu_kind){&pl->resources, &pl->labels, &pl->n_labels, &pl->taints, &pl->n_taints});
    /* a pod's patch gets them all (the rules' arrays have room for these many) */
    if (pl->n_labels > POOL_LABELS_MAX)
        err_node(L, v[GP_NODE_LABELS], "%s.nodeLabels: %zu labels, more than %u per pool", path,
                 pl->n_labels, POOL_LABELS_MAX);
    if (pl->n_taints > POOL_TAINTS_MAX)
        err_node(L, v[GP_TAINTS], "%s.taints: %zu taints, more than %u per pool", path,
                 pl->n_taints, POOL_TAINTS_MAX);
    path_key(p, path, "resources");
    if (v[GP_RESOURCES] != NULL && ykind(v[GP_RESOURCES]) == YN_SEQ)
        check_pool_resources(L, doc, at, v[GP_RESOURCES], p);
}

static bool has_label(const struct node_label *l, size_t n, const struct node_label *x)
{
    for (size_t i = 0; i < n; i++)
        if (l[i].key != NULL && x->key != NULL && strcmp(l[i].key, x->key) == 0 &&
            ((l[i].value == NULL && x->value == NULL) ||
             (l[i].value != NULL && x->value != NULL && strcmp(l[i].value, x->value) == 0)))
            return true;
    return false;
}

/* The policy's lists as the union of its pools': what makes a pod or a node a GPU one. */
static void pools_union(struct loader *L, struct policy_doc *doc)
{
    size_t nr = 0, nl = 0, nt = 0;

    for (size_t i = 0; i < doc->n_pools; i++) {
        nr += doc->pools[i].resources.n;
        nl += doc->pools[i].n_labels;
        nt += doc->pools[i].n_taints;
    }
    doc->gpu_resources.v = xcalloc(L, nr ? nr : 1, sizeof(char *));
    doc->gpu_node_labels = xcalloc(L, nl ? nl : 1, sizeof(struct node_label));
    doc->gpu_taints = xcalloc(L, nt ? nt : 1, sizeof(struct taint));
    if (doc->gpu_resources.v == NULL || doc->gpu_node_labels == NULL || doc->gpu_taints == NULL)
        return;
    for (size_t i = 0; i < doc->n_pools; i++) {
        const struct gpu_pool *pl = &doc->pools[i];

        for (size_t k = 0; k < pl->resources.n; k++)
            if (pl->resources.v[k] != NULL)
                doc->gpu_resources.v[doc->gpu_resources.n++] = xstrdup(L, pl->resources.v[k]);
        for (size_t k = 0; k < pl->n_labels; k++) {
            struct node_label *to = &doc->gpu_node_labels[doc->n_gpu_node_labels];

            if (pl->labels[k].key == NULL ||
                has_label(doc->gpu_node_labels, doc->n_gpu_node_labels, &pl->labels[k]))
                continue;
            to->key = xstrdup(L, pl->labels[k].key);
            to->value = pl->labels[k].value ? xstrdup(L, pl->labels[k].value) : NULL;
            doc->n_gpu_node_labels++;
        }
        for (size_t k = 0; k < pl->n_taints; k++) {
            struct taint *to = &doc->gpu_taints[doc->n_gpu_taints];
            bool seen = pl->taints[k].key == NULL || pl->taints[k].effect == NULL;

            for (size_t j = 0; j < doc->n_gpu_taints && !seen; j++)
                seen = same_taint(&doc->gpu_taints[j], &pl->taints[k]);
            if (seen)
                continue;
            to->key = xstrdup(L, pl->taints[k].key);
            to->value = pl->taints[k].value ? xstrdup(L, pl->taints[k].value) : NULL;
            to->effect = xstrdup(L, pl->taints[k].effect);
            doc->n_gpu_taints++;
        }
    }
}

static void load_pools(struct loader *L, const struct yamltree_node *n, const char *path,
                       struct policy_doc *doc)
{
    char p[RULES_PATH_MAX];

    if (!want_seq(L, n, path))
        return;
    if (n->n == 0 || n->n > POLICY_POOLS_MAX) {
        err_node(L, n, "%s: expected 1 to %d pools, got %zu", path, POLICY_POOLS_MAX, n->n);
        return;
    }
    doc->pools = xcalloc(L, n->n, sizeof(*doc->pools));
    if (doc->pools == NULL)
        return;
    doc->n_pools = n->n;
    for (size_t i = 0; i < n->n; i++) {
        path_index(p, path, i);
        load_pool(L, n->kids[i], p, doc, i);
    }
    pools_union(L, doc);
}

enum { G_RESOURCES, G_NODE_LABELS, G_TAINTS, G_RUNTIME_CLASSES, G_POOLS, G_N };
static const struct field GPU_FIELDS[G_N] = {{"resources", false},
                                             {"nodeLabels", false},
                                             {"taints", false},
                                             {"runtimeClasses", false},
                                             {"pools", false}};

static void load_gpu(struct loader *L, const struct yamltree_node *n, const char *path,
                     struct policy_doc *doc)
{
    const struct yamltree_node *v[G_N] = {NULL}, *k[G_N];
    char p[RULES_PATH_MAX];

    if (given(n) && !map_fields(L, n, path, GPU_FIELDS, G_N, v, k))
        return;
    if (given(v[G_POOLS])) {
        for (int f = G_RESOURCES; f <= G_TAINTS; f++) {
            if (!given(v[f]))
                continue;
            path_key(p, path, GPU_FIELDS[f].name);
            err_node(L, k[f], "%s: not beside gpu.pools, where each pool names its own %s", p,
                     GPU_FIELDS[f].name);
        }
        path_key(p, path, "pools");
        load_pools(L, v[G_POOLS], p, doc);
    } else {
        load_gpu_kind(L, v[G_RESOURCES], v[G_NODE_LABELS], v[G_TAINTS], path,
                      &(struct gpu_kind){&doc->gpu_resources, &doc->gpu_node_labels,
                                         &doc->n_gpu_node_labels, &doc->gpu_taints,
                                         &doc->n_gpu_taints});
    }
    path_key(p, path, "runtimeClasses");
    if (given(v[G_RUNTIME_CLASSES]))
        load_strlist(L, v[G_RUNTIME_CLASSES], p, &VAL_GLOB, &doc->gpu_runtime_classes);
}

enum { PC_NAME, PC_VALUE, PC_PREEMPTION, PC_N };
static const struct field CLASS_FIELDS[PC_N] = {
    {"name", true}, {"value", true}, {"preemptionPolicy", false}};

static void load_classes(struct loader *L, const struct yamltree_node *n, const char *path,
                         struct policy_doc *doc)
{
    const struct yamltree_node *v[PC_N], *k[PC_N];
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX], b[SHOW_BUF];
    size_t i, j;
    int64_t value;
    int e;

    if (!want_seq(L, n, path))
        return;
    doc->classes = xcalloc(L, n->n, sizeof(*doc->classes));
    if (doc->classes == NULL)
        return;
    doc->n_classes = n->n;
    for (i = 0; i < n->n; i++) {
        struct priority_class *c = &doc->classes[i];
        path_index(p, path, i);
        if (!map_fields(L, n->kids[i], p, CLASS_FIELDS, PC_N, v, k))
            continue;
        path_key(q, p, "name");
        if (v[PC_NAME] != NULL && get_str(L, v[PC_NAME], q, &VAL_SUBDOMAIN, &c->name) == 0) {
            if (strncmp(c->name, "system-", 7) == 0)
                err_node(L, v[PC_NAME],
                         "%s: names starting with system- are reserved for the "
                         "cluster's own classes",
                         q);
            for (j = 0; j < i; j++) {
                if (doc->classes[j].name != NULL && strcmp(doc->classes[j].name, c->name) == 0) {
                    err_node(L, v[PC_NAME], "%s: duplicate priority class %s (also %s[%zu])", q,
                             show(b, c->name), path, j);
                    break;
                }
            }
        }
        path_key(q, p, "value");
        /* the apiserver refuses user classes above one billion */
        if (v[PC_VALUE] != NULL && get_int(L, v[PC_VALUE], q, INT32_MIN, 1000000000, &value) == 0)
            c->value = (int32_t)value;
        path_key(q, p, "preemptionPolicy");
        e = given(v[PC_PREEMPTION]) ? get_enum(L, v[PC_PREEMPTION], q, PREEMPTIONS, 2) : 0;
        if (e >= 0)
            c->preemption_policy = xstrdup(L, PREEMPTIONS[e]);
    }
}

/* Rules */

/* The keys every rule has (R_NAME... in load.h); each kind's own follow (kind.h). */
static const struct field COMMON_FIELDS[R_COMMON] = {
    {"name", true},         {"type", true},   {"action", false},
    {"enforcement", false}, {"match", false}, {"exclude", false},
};

/* The keys of a rule of any type: the common ones, then each kind's in the kinds' order, a key
 * that several kinds share once; kinds[f] the bits (1u << type) of the types key f is valid for,
 * at[t][i] where kind t's key i is. */
struct rule_keys {
    struct field fields[RULE_KEYS_MAX];
    unsigned kinds[RULE_KEYS_MAX];
    size_t n;
    size_t at[RULE_TYPES][RULE_KEYS_MAX];
};

static void rule_keys_init(struct rule_keys *rk)
{
    size_t f;

    memset(rk, 0, sizeof(*rk));
    for (rk->n = 0; rk->n < R_COMMON; rk->n++) {
        rk->fields[rk->n] = COMMON_FIELDS[rk->n];
        rk->kinds[rk->n] = (1u << RULE_TYPES) - 1;
    }
    for (int t = 0; t < RULE_TYPES; t++) {
        const struct rule_ops *k = rule_kinds[t].ops;

        for (size_t i = 0; i < k->n_keys && i < RULE_KEYS_MAX; i++) {
            for (f = 0; f < rk->n && strcmp(rk->fields[f].name, k->keys[i].name) != 0; f++)
                ;
            if (f == RULE_KEYS_MAX)
                break; /* more keys than the table holds: a unit test fails */
            if (f == rk->n) {
                /* a kind's required key is required of its rules only: checked in load_rule() */
                rk->fields[rk->n] = k->keys[i];
                rk->fields[rk->n++].required = false;
                rk->kinds[f] = 0;
            }
            rk->kinds[f] |= 1u << t;
            rk->at[t][i] = f;
        }
    }
}

/* Refuses keys of another rule type. */
static void check_rule_keys(struct loader *L, const struct rule_keys *rk, enum rule_type type,
                            const struct yamltree_node **keys, const char *path)
{
    const char *names[RULE_TYPES];
    char list[LIST_BUF];
    size_t f, t, n;

    for (f = 0; f < rk->n; f++) {
        if (keys[f] == NULL || (rk->kinds[f] & (1u << type)))
            continue;
        for (t = 0, n = 0; t < RULE_TYPES; t++)
            if (rk->kinds[f] & (1u << t))
                names[n++] = policy_rule_type_name((enum rule_type)t);
        /* "a", "a and b", "a, b and c" */
        join(list, sizeof(list), names, n > 1 ? n - 1 : n);
        if (n > 1 && strlen(list) < sizeof(list))
            snprintf(list + strlen(list), sizeof(list) - strlen(list), " and %s", names[n - 1]);
        err_node(L, keys[f], "%s: %s is only valid for %s rules, not %s", path, rk->fields[f].name,
                 list, policy_rule_type_name(type));
    }
}

/* Records a rule name, or reports it as a duplicate of an earlier one in any file. */
static void register_rule(struct loader *L, const char *file, const struct yamltree_node *map,
                          const struct yamltree_node *name_node, const char *name)
{
    const struct name_ref *prev;
    char b[SHOW_BUF];
    size_t i;

    for (i = 0; i < L->n_rules && i < RULES_RULES_MAX; i++) {
        prev = &L->rule_names[i];
        if (prev->name != NULL && strcmp(prev->name, name) == 0) {
            err_node(L, name_node, "duplicate rule name %s (first defined at %s:%u:%u)",
                     show(b, name), prev->file, prev->line, prev->column);
            return;
        }
    }
    /* L->n_rules counts this rule already */
    L->rule_names[L->n_rules - 1] = (struct name_ref){name, file, map->line, map->column};
}

static void load_rule(struct loader *L, const struct policy_doc *doc, const struct yamltree_node *n,
                      const char *path, struct rule *r)
{
    const struct yamltree_node *v[RULE_KEYS_MAX], *k[RULE_KEYS_MAX];
    const struct yamltree_node *kv[RULE_KEYS_MAX], *kk[RULE_KEYS_MAX];
    const struct rule_ops *kind;
    struct rule_keys rk;
    char p[RULES_PATH_MAX];
    const char *types[RULE_TYPES], *enforcements[ENFORCEMENTS];
    int type = -1, e;

    rule_keys_init(&rk);
    if (!map_fields(L, n, path, rk.fields, rk.n, v, k))
        return;
    r->line = n->line;
    for (e = 0; e < RULE_TYPES; e++)
        types[e] = policy_rule_type_name((enum rule_type)e);
    for (e = 0; e < ENFORCEMENTS; e++)
        enforcements[e] = policy_enforcement_name((enum rule_enforcement)e);
    path_key(p, path, "name");
    if (v[R_NAME] != NULL && get_str(L, v[R_NAME], p, &VAL_RULE_NAME, &r->name) == 0)
        register_rule(L, doc->file, n, v[R_NAME], r->name);
    path_key(p, path, "type");
    if (v[R_TYPE] != NULL && (type = get_enum(L, v[R_TYPE], p, types, RULE_TYPES)) >= 0)
        r->type = (enum rule_type)type;
    path_key(p, path, "action");
    e = given(v[R_ACTION]) ? get_enum(L, v[R_ACTION], p, ACTIONS, 2) : ACTION_DENY;
    r->action = e >= 0 ? (enum rule_action)e : ACTION_DENY;
    path_key(p, path, "enforcement");
    e = given(v[R_ENFORCEMENT]) ? get_enum(L, v[R_ENFORCEMENT], p, enforcements, ENFORCEMENTS)
                                : ENFORCE_ENFORCE;
    r->enforcement = e >= 0 ? (enum rule_enforcement)e : ENFORCE_ENFORCE;
    load_scope(L, v[R_MATCH], v[R_EXCLUDE], path, false, &r->scope);
    /* the keys of a type mean something only once the type is known */
    if (type < 0)
        return;
    check_rule_keys(L, &rk, r->type, k, path);
    kind = rule_kinds[r->type].ops;
    for (size_t i = 0; i < kind->n_keys && i < RULE_KEYS_MAX; i++) {
        kv[i] = v[rk.at[r->type][i]];
        kk[i] = k[rk.at[r->type][i]];
        if (kind->keys[i].required && kk[i] == NULL)
            err_node(L, n, "missing required key \"%s\" in %s (a %s rule)", kind->keys[i].name,
                     path, policy_rule_type_name(r->type));
    }
    if (kind->load != NULL)
        r->settings = kind->load(L, &(const struct rule_input){doc, r, n, v, kv, kk, path});
}

static void load_rules(struct loader *L, const struct yamltree_node *n, const char *path,
                       struct policy_doc *doc)
{
    char p[RULES_PATH_MAX];
    size_t i;

    if (!want_seq(L, n, path))
        return;
    doc->rules = xcalloc(L, n->n, sizeof(*doc->rules));
    if (doc->rules == NULL)
        return;
    doc->n_rules = n->n;
    for (i = 0; i < n->n; i++) {
        if (L->n_rules >= RULES_RULES_MAX) {
            if (!L->rules_cap_reported)
                err_node(L, n->kids[i], "more than %u rules (the limit for all files together)",
                         RULES_RULES_MAX);
            L->rules_cap_reported = true;
            return;
        }
        L->n_rules++;
        path_index(p, path, i);
        load_rule(L, doc, n->kids[i], p, &doc->rules[i]);
    }
}

enum { S_AUDIT_ONLY, S_AUTOGEN, S_GPU, S_CLASSES, S_MATCH, S_EXCLUDE, S_RULES, S_N };
static const struct field SPEC_FIELDS[S_N] = {
    {"auditOnly", false}, {"autogen", false}, {"gpu", false}, {"priorityClasses", false},
    {"match", false},     {"exclude", false}, {"rules", true}};

static void load_spec(struct loader *L, const struct yamltree_node *n, struct policy_doc *doc)
{
    const struct yamltree_node *v[S_N], *k[S_N];

    if (!map_fields(L, n, "spec", SPEC_FIELDS, S_N, v, k))
        return;
    if (given(v[S_AUDIT_ONLY]))
        get_bool(L, v[S_AUDIT_ONLY], "spec.auditOnly", &doc->audit_only);
    if (given(v[S_AUTOGEN]))
        get_bool(L, v[S_AUTOGEN], "spec.autogen", &doc->autogen);
    load_gpu(L, v[S_GPU], "spec.gpu", doc); /* before the rules, which check against it */
    if (given(v[S_CLASSES]))
        load_classes(L, v[S_CLASSES], "spec.priorityClasses", doc);
    load_scope(L, v[S_MATCH], v[S_EXCLUDE], "spec", true, &doc->scope);
    if (v[S_RULES] != NULL)
        load_rules(L, v[S_RULES], "spec.rules", doc);
}

static void register_policy(struct loader *L, const struct yamltree_node *name_node,
                            const char *name, const char *file)
{
    const struct name_ref *prev;
    struct name_ref *t;
    char b[SHOW_BUF];
    size_t i;

    for (i = 0; i < L->n_policy_names; i++) {
        prev = &L->policy_names[i];
        if (strcmp(prev->name, name) == 0) {
            err_node(L, name_node, "duplicate policy name %s (first defined at %s:%u:%u)",
                     show(b, name), prev->file, prev->line, prev->column);
            return;
        }
    }
    t = grow(L->policy_names, &L->policy_names_cap, L->n_policy_names + 1, sizeof(*t));
    if (t == NULL) {
        oom(L);
        return;
    }
    L->policy_names = t;
    t[L->n_policy_names++] = (struct name_ref){name, file, name_node->line, name_node->column};
}

enum { D_API_VERSION, D_KIND, D_METADATA, D_SPEC, D_N };
static const struct field DOC_FIELDS[D_N] = {
    {"apiVersion", true}, {"kind", true}, {"metadata", true}, {"spec", true}};
enum { MD_NAME, MD_N };
static const struct field METADATA_FIELDS[MD_N] = {{"name", true}};

/* A new zeroed document at the end of the policy, or NULL (recorded). */
static struct policy_doc *add_doc(struct loader *L)
{
    struct policy *p = L->p;
    struct policy_doc *t = grow(p->docs, &L->docs_cap, p->n_docs + 1, sizeof(*t));

    if (t == NULL) {
        oom(L);
        return NULL;
    }
    p->docs = t;
    memset(&t[p->n_docs], 0, sizeof(*t));
    return &t[p->n_docs++];
}

static void load_doc(struct loader *L, const struct yamltree_node *root)
{
    const struct yamltree_node *v[D_N], *k[D_N], *mv[MD_N], *mk[MD_N];
    struct policy_doc *doc;
    char b[SHOW_BUF];
    const char *s;

    if (ykind(root) != YN_MAP) {
        err_type(L, root, "document", "a mapping (a GPUPolicy)", "");
        return;
    }
    doc = add_doc(L);
    if (doc == NULL)
        return;
    doc->autogen = true;
    doc->file = xstrdup(L, L->file);
    if (doc->file == NULL || !map_fields(L, root, "", DOC_FIELDS, D_N, v, k))
        return;
    if (v[D_API_VERSION] != NULL && (s = get_text(L, v[D_API_VERSION], "apiVersion")) != NULL &&
        strcmp(s, API_VERSION) != 0)
        err_node(L, v[D_API_VERSION], "apiVersion: expected \"%s\", got %s", API_VERSION,
                 show(b, s));
    if (v[D_KIND] != NULL && (s = get_text(L, v[D_KIND], "kind")) != NULL && strcmp(s, KIND) != 0)
        err_node(L, v[D_KIND], "kind: expected \"%s\", got %s", KIND, show(b, s));
    if (v[D_METADATA] != NULL &&
        map_fields(L, v[D_METADATA], "metadata", METADATA_FIELDS, MD_N, mv, mk) &&
        mv[MD_NAME] != NULL &&
        get_str(L, mv[MD_NAME], "metadata.name", &VAL_POLICY_NAME, &doc->name) == 0)
        register_policy(L, mv[MD_NAME], doc->name, doc->file);
    if (v[D_SPEC] != NULL)
        load_spec(L, v[D_SPEC], doc);
}

/* ------------------------------------------------------------------------------------------ */
/* Files */

static void load_text(struct loader *L, const char *file, const char *text, size_t len)
{
    struct yamltree t;
    size_t i, first_error = L->errs->n;

    L->file = file;
    if (len > RULES_FILE_MAX_BYTES) {
        err_at(L, file, 0, 0, "file of %zu bytes is over the limit of %u bytes", len,
               RULES_FILE_MAX_BYTES);
        return;
    }
    read_tree(L, file, text, len, &t);
    for (i = 0; i < t.n_docs; i++)
        if (t.docs[i].ended && t.docs[i].root != NULL &&
            !is_null(t.docs[i].root)) /* an empty document, e.g. after a trailing "---" */
            load_doc(L, t.docs[i].root);
    yamltree_free(&t);
    sort_errors(L->errs, first_error);
}

/* The whole of a regular file, NUL-terminated. NULL when it cannot be read or is too large
 * (recorded). */
static char *read_file(struct loader *L, const char *path, size_t *len)
{
    struct stat st;
    char *buf = NULL, *text = NULL;
    size_t n = 0;
    ssize_t r;
    int fd;

    /* O_NONBLOCK: a FIFO named like a rule file must not hang the load */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        err_at(L, path, 0, 0, "cannot open: %s", strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        err_at(L, path, 0, 0, "not a regular file");
        goto out;
    }
    if (st.st_size > (off_t)RULES_FILE_MAX_BYTES) {
        err_at(L, path, 0, 0, "file of %lld bytes is over the limit of %u bytes",
               (long long)st.st_size, RULES_FILE_MAX_BYTES);
        goto out;
    }
    /* room for one byte past the limit, to see a file that grew since fstat(), and the NUL */
    buf = malloc(RULES_FILE_MAX_BYTES + 2u);
    if (buf == NULL) {
        oom(L);
        goto out;
    }
    while (n <= RULES_FILE_MAX_BYTES) {
        r = read(fd, buf + n, RULES_FILE_MAX_BYTES + 1u - n);
        if (r == 0)
            break;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            err_at(L, path, 0, 0, "cannot read: %s", strerror(errno));
            goto out;
        }
        n += (size_t)r;
    }
    if (n > RULES_FILE_MAX_BYTES) {
        err_at(L, path, 0, 0, "file is over the limit of %u bytes", RULES_FILE_MAX_BYTES);
        goto out;
    }
    buf[n] = '\0';
    *len = n;
    text = buf;
    buf = NULL;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return text;
}

static void load_file(struct loader *L, const char *path)
{
    size_t len = 0;
    char *text = read_file(L, path, &len);

    if (text != NULL)
        load_text(L, path, text, len);
    free(text);
}

static int loader_init(struct loader *L, struct rules_errors *errs)
{
    memset(L, 0, sizeof(*L));
    rules_errors_clear(errs);
    L->errs = errs;
    L->p = calloc(1, sizeof(*L->p));
    if (L->p == NULL) {
        oom(L);
        return -1;
    }
    atomic_init(&L->p->refs, 1);
    L->p->generation = 0;
    return 0;
}

/* The policy when nothing went wrong, else NULL; the loader is released either way. */
static struct policy *loader_finish(struct loader *L, const char *place)
{
    struct policy *p = L->p;

    if (p != NULL && !has_errors(L) && p->n_docs == 0)
        err_at(L, NULL, 0, 0, "no GPUPolicy found in %s", place);
    if (has_errors(L)) {
        policy_free(p);
        p = NULL;
    }
    free(L->policy_names);
    return p;
}

struct policy *rules_load_buffer(const char *name, const char *text, size_t len,
                                 struct rules_errors *errs)
{
    struct rules_errors local;
    struct loader L;

    if (errs == NULL)
        errs = &local;
    if (name == NULL)
        name = "<buffer>";
    if (loader_init(&L, errs) == 0)
        load_text(&L, name, text, len);
    return loader_finish(&L, name);
}

struct policy *rules_load_files(const char *const *paths, size_t n, struct rules_errors *errs)
{
    struct rules_errors local;
    struct loader L;
    size_t i;

    if (errs == NULL)
        errs = &local;
    if (loader_init(&L, errs) == 0) {
        if (n > RULES_FILES_MAX)
            err_at(&L, NULL, 0, 0, "%zu rule files are more than the limit of %u", n,
                   RULES_FILES_MAX);
        else
            for (i = 0; i < n; i++)
                load_file(&L, paths[i]);
    }
    return loader_finish(&L, "the given files");
}

static bool rule_file_name(const char *name)
{
    size_t len = strlen(name);

    if (name[0] == '.')
        return false;
    return (len > 5 && strcmp(name + len - 5, ".yaml") == 0) ||
           (len > 4 && strcmp(name + len - 4, ".yml") == 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The paths of the rule files in dir, sorted; directories are skipped. Returns 0 or -1
 * (recorded); *out and *n are set either way, for the caller to free. */
static int list_dir(struct loader *L, const char *dir, char ***out, size_t *n_out)
{
    DIR *d = NULL;
    struct dirent *de;
    struct stat st;
    char **v = NULL, **t, *path = NULL;
    size_t n = 0, cap = 0, plen;
    bool slash = dir[0] && dir[strlen(dir) - 1] == '/';
    int rc = -1;

    d = opendir(dir);
    if (d == NULL) {
        err_at(L, dir, 0, 0, "cannot open the rules directory: %s", strerror(errno));
        goto out;
    }
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (!rule_file_name(de->d_name))
            continue;
        plen = strlen(dir) + strlen(de->d_name) + 2;
        path = malloc(plen);
        if (path == NULL) {
            oom(L);
            goto out;
        }
        snprintf(path, plen, "%s%s%s", dir, slash ? "" : "/", de->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            free(path); /* subdirectories are not read */
            path = NULL;
            continue;
        }
        t = grow(v, &cap, n + 1, sizeof(*v));
        if (t == NULL) {
            oom(L);
            goto out;
        }
        v = t;
        v[n++] = path;
        path = NULL;
    }
    if (errno != 0) {
        err_at(L, dir, 0, 0, "cannot read the rules directory: %s", strerror(errno));
        goto out;
    }
    if (n > RULES_FILES_MAX) {
        err_at(L, dir, 0, 0, "%zu rule files are more than the limit of %u", n, RULES_FILES_MAX);
        goto out;
    }
    if (n > 0)
        qsort(v, n, sizeof(*v), cmp_str);
    rc = 0;
out:
    *out = v;
    *n_out = n;
    free(path);
    if (d != NULL)
        closedir(d);
    return rc;
}

struct policy *rules_load_dir(const char *dir, struct rules_errors *errs)
{
    struct rules_errors local;
    struct loader L;
    char **paths = NULL;
    size_t n = 0, i;

    if (errs == NULL)
        errs = &local;
    if (loader_init(&L, errs) == 0 && list_dir(&L, dir, &paths, &n) == 0)
        for (i = 0; i < n; i++)
            load_file(&L, paths[i]);
    for (i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    return loader_finish(&L, dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Freeing */

void strlist_free(struct strlist *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static void selector_free(struct label_selector *s)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        free(s->reqs[i].key);
        strlist_free(&s->reqs[i].values);
    }
    free(s->reqs);
}

static void match_free(struct match *m)
{
    strlist_free(&m->namespaces);
    selector_free(&m->labels);
    strlist_free(&m->users);
    strlist_free(&m->groups);
    strlist_free(&m->service_accounts);
    strlist_free(&m->owner_kinds);
}

static void scope_free(struct scope *s)
{
    match_free(&s->match);
    match_free(&s->exclude);
}

void node_labels_free(struct node_label *l, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(l[i].key);
        free(l[i].value);
    }
    free(l);
}

void taints_free(struct taint *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].key);
        free(t[i].value);
        free(t[i].effect);
    }
    free(t);
}

static void rule_free(struct rule *r)
{
    const struct rule_ops *kind = rule_ops_of(r->type);

    free(r->name);
    scope_free(&r->scope);
    /* a rule whose type was refused has no settings */
    if (kind != NULL && kind->free != NULL)
        kind->free(r->settings);
}

static void doc_free(struct policy_doc *d)
{
    size_t i;

    free(d->name);
    free(d->file);
    strlist_free(&d->gpu_resources);
    node_labels_free(d->gpu_node_labels, d->n_gpu_node_labels);
    taints_free(d->gpu_taints, d->n_gpu_taints);
    for (i = 0; i < d->n_pools; i++) {
        free(d->pools[i].name);
        strlist_free(&d->pools[i].resources);
        node_labels_free(d->pools[i].labels, d->pools[i].n_labels);
        taints_free(d->pools[i].taints, d->pools[i].n_taints);
    }
    free(d->pools);
    strlist_free(&d->gpu_runtime_classes);
    for (i = 0; i < d->n_classes; i++) {
        free(d->classes[i].name);
        free(d->classes[i].preemption_policy);
    }
    free(d->classes);
    scope_free(&d->scope);
    for (i = 0; i < d->n_rules; i++)
        rule_free(&d->rules[i]);
    free(d->rules);
}

void policy_free(struct policy *p)
{
    size_t i;

    if (p == NULL)
        return;
    for (i = 0; i < p->n_docs; i++)
        doc_free(&p->docs[i]);
    free(p->docs);
    free(p);
}
