/*
 * suite.c: gpuadmit test, policy test suites (the format is in rules/tests/README.md).
 *
 * A suite names a policy, an optional cluster snapshot and cases: a resource (inline or from a
 * file) and what the webhook must decide about it. Each case is judged by offline_admit(), the
 * same path as gpuadmit check, and every expectation that does not hold is printed as expected
 * versus got. A suite is checked whole before any case runs: unknown keys, wrong types and
 * rules the policy does not have are input errors with FILE:LINE:COLUMN.
 *
 * Exit code: 0 every case passed, 1 a case failed, 2 a usage or input error (which wins).
 */
#include "suite.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster/cluster.h"
#include "json.h"
#include "bounds.h"
#include "log.h"
#include "offline.h"
#include "patch.h"
#include "policy/policy.h"
#include "yamljson.h"

static const char usage_test[] =
    "usage: gpuadmit test PATH...\n"
    "\n"
    "Runs policy test suites: the suite file PATH, or every suite file (*.yaml or *.yml whose\n"
    "kind is PolicyTest) under the directory PATH and its subdirectories, so that both\n"
    "gpuadmit test rules/ and gpuadmit test rules/tests run the shipped suites; the policies,\n"
    "resources and snapshots beside them are not suites and are left alone.\n"
    "A suite (kind: PolicyTest) names a policy, an optional cluster snapshot and cases, each a\n"
    "resource and its expected decision, rule outcomes, patched fields, messages and warnings;\n"
    "rules/tests/README.md describes the format.\n"
    "\n"
    "Exit code: 0 every case passed, 1 a case failed, 2 usage or input error.\n";

struct suite_tally {
    size_t passed, failed, errors;
    size_t skipped; /* files of a directory that are not suites */
};

/* A file a suite names must be a regular file: a FIFO would hang the run. 0, or -1 with d. */
static int regular_file(const char *path, struct diag *d)
{
    struct stat st;

    if (stat(path, &st) < 0) {
        diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        diag_set(d, path, 0, 0, "not a regular file");
        return -1;
    }
    return 0;
}

/* The suite being read: where its errors point. */
struct sfile {
    const char *path;
    const struct yamljson_doc *doc;
    char dir[4096];
    bool bad;
};

static void serr(struct sfile *s, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void serr(struct sfile *s, const char *ptr, const char *fmt, ...)
{
    unsigned line = s->doc ? s->doc->line : 0, column = s->doc ? s->doc->column : 0;
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (s->doc != NULL)
        yamljson_mark(s->doc, ptr, &line, &column);
    if (line)
        fprintf(stderr, "gpuadmit test: %s:%u:%u: %s\n", s->path, line, column, msg);
    else
        fprintf(stderr, "gpuadmit test: %s: %s\n", s->path, msg);
    s->bad = true;
}

/* path, relative to the suite's directory unless absolute. New string. */
static char *relative(const struct sfile *s, const char *path)
{
    char *out = NULL;

    if (path[0] == '/')
        return strdup(path);
    if (asprintf(&out, "%s/%s", s->dir, path) < 0)
        return NULL;
    return out;
}

/* ---- reading a suite ---- */

static bool one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

/* Whether v is a string that is one of words (byte for byte: a NUL in it is none of them). */
static bool is_one_of(yyjson_val *v, const char *const *words)
{
    return yyjson_is_str(v) && strlen(yyjson_get_str(v)) == yyjson_get_len(v) &&
           one_of(yyjson_get_str(v), words);
}

/* Whether v names a rule outcome (policy_outcome_of), byte for byte. */
static bool is_outcome(yyjson_val *v)
{
    return yyjson_is_str(v) && strlen(yyjson_get_str(v)) == yyjson_get_len(v) &&
           policy_outcome_of(yyjson_get_str(v)) >= 0;
}

/* Refuses keys of obj (at ptr) not in allowed. */
static void known_keys(struct sfile *s, const char *ptr, yyjson_val *obj,
                       const char *const *allowed, const char *what)
{
    yyjson_val *k, *v;
    size_t i, max;
    char p[1024];

    yyjson_obj_foreach (obj, i, max, k, v) {
        (void)v;
        if (is_one_of(k, allowed))
            continue;
        snprintf(p, sizeof(p), "%s", ptr);
        patch_ptr_append(p, sizeof(p), yyjson_get_str(k));
        serr(s, p, "unknown key \"%.64s\" in %s", yyjson_get_str(k), what);
    }
}

/* A string, or an array of strings, at key of obj: 0 when absent, -1 on a wrong type. */
static int strings(struct sfile *s, const char *ptr, yyjson_val *v, const char *what)
{
    size_t i, max;
    yyjson_val *x;
    bool all = true;

    if (v == NULL || yyjson_is_str(v))
        return 0;
    if (yyjson_is_arr(v)) {
        yyjson_arr_foreach (v, i, max, x) {
            all = all && yyjson_is_str(x);
        }
        if (all)
            return 0;
    }
    serr(s, ptr, "%s must be a string or a list of strings", what);
    return -1;
}

/* Whether the policy has a rule named by the string k (byte for byte). */
static bool rule_known(const struct policy *p, yyjson_val *k)
{
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t r = 0; r < p->docs[i].n_rules; r++)
            if (json_str_is(k, p->docs[i].rules[r].name))
                return true;
    return false;
}

static void check_expect(struct sfile *s, const struct policy *p, const char *ptr, yyjson_val *e)
{
    static const char *const keys[] = {"decision", "rules",  "patched", "messages",
                                       "warnings", "denial", NULL};
    static const char *const decisions[] = {"allowed", "denied", "patched", "not judged", NULL};
    yyjson_val *v, *x, *key;
    size_t i, max;
    char p2[1024];

    if (!yyjson_is_obj(e)) {
        serr(s, ptr, "expect must be a mapping");
        return;
    }
    known_keys(s, ptr, e, keys, "expect");
    v = yyjson_obj_get(e, "decision");
    snprintf(p2, sizeof(p2), "%s/decision", ptr);
    if (v != NULL && !is_one_of(v, decisions))
        serr(s, p2, "expect.decision: expected one of allowed, denied, patched, not judged");
    for (int k = 0; k < 2; k++) {
        const char *name = k == 0 ? "rules" : "messages";

        v = yyjson_obj_get(e, name);
        snprintf(p2, sizeof(p2), "%s/%s", ptr, name);
        if (v != NULL && !yyjson_is_obj(v)) {
            serr(s, p2, "expect.%s must be a mapping of rule names", name);
            continue;
        }
        yyjson_obj_foreach (v, i, max, key, x) {
            char p3[1024];

            snprintf(p3, sizeof(p3), "%s", p2);
            patch_ptr_append(p3, sizeof(p3), yyjson_get_str(key));
            if (!rule_known(p, key))
                serr(s, p3, "expect.%s: the policy has no rule \"%.64s\"", name,
                     yyjson_get_str(key));
            else if (k == 0 && !is_outcome(x))
                serr(s, p3, "expect.rules.%s: expected one of pass, patch, deny, warn, audit, skip",
                     yyjson_get_str(key));
            else if (k == 1)
                strings(s, p3, x, "expect.messages");
        }
    }
    v = yyjson_obj_get(e, "patched");
    snprintf(p2, sizeof(p2), "%s/patched", ptr);
    if (v != NULL && !yyjson_is_obj(v))
        serr(s, p2, "expect.patched must be a mapping of JSON Pointer to value");
    yyjson_obj_foreach (v, i, max, key, x) {
        const char *k = yyjson_get_str(key);

        (void)x;
        if (k[0] != '/' && yyjson_get_len(key) != 0)
            serr(s, p2, "expect.patched: \"%.64s\" is not a JSON Pointer (starts with /)", k);
    }
    snprintf(p2, sizeof(p2), "%s/warnings", ptr);
    strings(s, p2, yyjson_obj_get(e, "warnings"), "expect.warnings");
    snprintf(p2, sizeof(p2), "%s/denial", ptr);
    strings(s, p2, yyjson_obj_get(e, "denial"), "expect.denial");
}

/* A case's resource: v, borrowed from own when that is set (a copy of a file's document, owned),
 * else from the suite's document. */
struct resource {
    yyjson_doc *own;
    yyjson_val *v;
};

/* The resource of case c, from "resource" or "file" + "document"; r->v NULL on an error
 * (reported). */
static void case_resource(struct sfile *s, const char *ptr, yyjson_val *c, struct resource *r)
{
    yyjson_val *inline_obj = yyjson_obj_get(c, "resource"), *docn = yyjson_obj_get(c, "document");
    const char *file = json_get_str(c, "file");
    int64_t want = 0;
    struct yamljson y;
    struct diag d;
    char p2[1024], text[DIAG_MSG_MAX + 300], *path;
    bool found = false;
    size_t i;

    r->own = NULL;
    r->v = NULL;
    if ((inline_obj != NULL) == (file != NULL) ||
        (yyjson_obj_get(c, "file") != NULL && file == NULL)) {
        serr(s, ptr, "a case needs resource (an object) or file (a path), and not both");
        return;
    }
    if (inline_obj != NULL) {
        snprintf(p2, sizeof(p2), "%s/resource", ptr);
        if (!yyjson_is_obj(inline_obj)) {
            serr(s, p2, "resource must be a mapping (a Kubernetes object)");
            return;
        }
        r->v = inline_obj;
        return;
    }
    snprintf(p2, sizeof(p2), "%s/document", ptr);
    if (docn != NULL && (!json_int64(docn, &want) || want < 1)) {
        serr(s, p2, "document must be a whole number from 1");
        return;
    }
    path = relative(s, file);
    diag_clear(&d);
    if (path == NULL || regular_file(path, &d) < 0 || yamljson_read_file(path, 0, &y, &d) < 0) {
        fprintf(stderr, "gpuadmit test: %s\n", diag_format(&d, text, sizeof(text)));
        s->bad = true;
        free(path);
        return;
    }
    for (i = 0; i < y.n && !found; i++)
        found = want == 0 || y.docs[i].index == (uint64_t)want;
    if (!found) {
        serr(s, ptr, "%s has no document %lld", path, (long long)(want ? want : 1));
    } else {
        /* the file's documents go with y: keep a copy of this one */
        r->own = json_keep(y.docs[i - 1].value);
        r->v = yyjson_doc_get_root(r->own);
        if (r->v == NULL)
            serr(s, ptr, "out of memory");
    }
    yamljson_free(&y);
    free(path);
}

/* ---- comparing ---- */

static char *show(yyjson_val *v)
{
    return v ? json_write(v, NULL) : strdup("(absent)");
}

static bool contains_any(yyjson_val *list, const char *want)
{
    size_t i, max;
    yyjson_val *v;

    yyjson_arr_foreach (list, i, max, v) {
        if (yyjson_is_str(v) && strstr(yyjson_get_str(v), want) != NULL)
            return true;
    }
    return false;
}

/* The strings of v, a string or an array of strings (check_expect made sure), one by one. */
struct each {
    yyjson_val *one; /* v itself while it is a string not yet visited */
    yyjson_arr_iter it;
};

static const char *each_next(struct each *e)
{
    yyjson_val *x = e->one ? e->one : yyjson_arr_iter_next(&e->it);

    e->one = NULL;
    return yyjson_get_str(x);
}

static const char *each_first(struct each *e, yyjson_val *v)
{
    e->one = yyjson_is_str(v) ? v : NULL;
    yyjson_arr_iter_init(v, &e->it); /* emptied when v is not an array */
    return each_next(e);
}

static yyjson_val *find_rule(yyjson_val *rules, yyjson_val *name)
{
    size_t i, max;
    yyjson_val *ru, *n;

    yyjson_arr_foreach (rules, i, max, ru) {
        n = yyjson_obj_get(ru, "rule");
        if (yyjson_get_len(n) == yyjson_get_len(name) &&
            memcmp(yyjson_get_str(n), yyjson_get_str(name), yyjson_get_len(name)) == 0)
            return ru;
    }
    return NULL;
}

/* Prints every difference between the expectations e and the result got to out; returns how
 * many there were. */
static int compare(FILE *out, yyjson_val *e, yyjson_val *got)
{
    yyjson_val *v, *want, *rules = yyjson_obj_get(got, "rules"), *ru, *m, *key;
    const char *str, *gd = json_get_str(got, "decision");
    struct each it;
    char *a, *b;
    int diffs = 0;
    size_t i, max, k, kmax;

    if ((v = yyjson_obj_get(e, "decision")) && strcmp(yyjson_get_str(v), gd) != 0) {
        fprintf(out, "       decision: expected %s, got %s\n", yyjson_get_str(v), gd);
        if (yyjson_obj_get(got, "message"))
            fprintf(out, "         (%s)\n", json_get_str(got, "message"));
        diffs++;
    }
    yyjson_obj_foreach (yyjson_obj_get(e, "rules"), i, max, key, want) {
        ru = find_rule(rules, key);
        str = json_get_str(ru, "outcome");
        if (ru != NULL && strcmp(str, yyjson_get_str(want)) != 0) {
            fprintf(out, "       rule %s: expected %s, got %s\n", yyjson_get_str(key),
                    yyjson_get_str(want), str);
            yyjson_arr_foreach (yyjson_obj_get(ru, "messages"), k, kmax, m) {
                fprintf(out, "         (%s)\n", yyjson_get_str(m));
            }
            diffs++;
        }
    }
    yyjson_obj_foreach (yyjson_obj_get(e, "messages"), i, max, key, want) {
        ru = find_rule(rules, key);
        for (str = each_first(&it, want); str != NULL; str = each_next(&it)) {
            if (ru != NULL && contains_any(yyjson_obj_get(ru, "messages"), str))
                continue;
            a = show(yyjson_obj_get(ru, "messages"));
            fprintf(out, "       rule %s message: expected one containing \"%s\", got %s\n",
                    yyjson_get_str(key), str, a);
            free(a);
            diffs++;
        }
    }
    yyjson_obj_foreach (yyjson_obj_get(e, "patched"), i, max, key, want) {
        v = yyjson_ptr_getn(yyjson_obj_get(got, "object"), yyjson_get_str(key),
                            yyjson_get_len(key));
        /* null expects the field absent: Kubernetes drops null fields anyway. yyjson_equals
         * recurses: both sides are capped (the suite by yamljson, the object by its reader) */
        if (yyjson_equals(v, want) || (yyjson_is_null(want) && (v == NULL || yyjson_is_null(v))))
            continue;
        a = show(want);
        b = show(v);
        fprintf(out, "       patched %s: expected %s, got %s\n", yyjson_get_str(key), a, b);
        free(a);
        free(b);
        diffs++;
    }
    v = yyjson_obj_get(e, "warnings");
    for (str = each_first(&it, v); str != NULL; str = each_next(&it)) {
        if (contains_any(yyjson_obj_get(got, "warnings"), str))
            continue;
        a = show(yyjson_obj_get(got, "warnings"));
        fprintf(out, "       warnings: expected one containing \"%s\", got %s\n", str, a);
        free(a);
        diffs++;
    }
    v = yyjson_obj_get(e, "denial");
    for (str = each_first(&it, v); str != NULL; str = each_next(&it)) {
        const char *msg = json_get_str(got, "message");

        if (msg != NULL && strstr(msg, str) != NULL)
            continue;
        fprintf(out, "       denial: expected one containing \"%s\", got %s%s%s\n", str,
                msg ? "\"" : "", msg ? msg : "none (", msg ? "\"" : "not denied)");
        diffs++;
    }
    return diffs;
}

/* ---- running ---- */

struct loaded {
    struct policy *policy;
    struct cluster *view;
    bool audit_only;
};

/* Reads spec; NULL policy on an input error (reported). */
static void load_spec(struct sfile *s, yyjson_val *root, struct loaded *L)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    static const char *const keys[] = {"policy", "clusterSnapshot", "auditOnly", "cases", NULL};
    yyjson_val *spec = yyjson_obj_get(root, "spec"), *v;
    char *path;
    struct diag d;
    char text[DIAG_MSG_MAX + 300];

    known_keys(s, "", root, top, "a PolicyTest");
    if (!json_str_is(yyjson_obj_get(root, "apiVersion"), "gpuadmit.io/v1alpha1"))
        serr(s, "/apiVersion", "apiVersion must be gpuadmit.io/v1alpha1");
    if (!json_str_is(yyjson_obj_get(root, "kind"), "PolicyTest"))
        serr(s, "/kind", "kind must be PolicyTest");
    if (!yyjson_is_obj(spec)) {
        serr(s, "", "spec must be a mapping");
        return;
    }
    known_keys(s, "/spec", spec, keys, "spec");
    v = yyjson_obj_get(spec, "auditOnly");
    if (v != NULL && !yyjson_is_bool(v))
        serr(s, "/spec/auditOnly", "spec.auditOnly must be true or false");
    L->audit_only = yyjson_is_true(v);
    if (!yyjson_is_arr(yyjson_obj_get(spec, "cases")) ||
        yyjson_arr_size(yyjson_obj_get(spec, "cases")) == 0)
        serr(s, "/spec", "spec.cases must be a list of at least one case");
    v = yyjson_obj_get(spec, "clusterSnapshot");
    if (v != NULL && !yyjson_is_str(v))
        serr(s, "/spec/clusterSnapshot", "spec.clusterSnapshot must be a path");
    if (!yyjson_is_str(yyjson_obj_get(spec, "policy"))) {
        serr(s, "/spec", "spec.policy (a policy directory or file) is required");
        return;
    }
    if (s->bad)
        return;
    path = relative(s, json_get_str(spec, "policy"));
    if (path == NULL || (L->policy = offline_load_policy("gpuadmit test", path)) == NULL) {
        serr(s, "/spec/policy", "the policy does not load");
        free(path);
        return;
    }
    free(path);
    if (v == NULL)
        return;
    path = relative(s, yyjson_get_str(v));
    diag_clear(&d);
    if (path == NULL || regular_file(path, &d) < 0 ||
        (L->view = offline_load_snapshot(path, L->policy, &d)) == NULL)
        serr(s, "/spec/clusterSnapshot", "%s", diag_format(&d, text, sizeof(text)));
    else
        offline_warn_snapshot(L->policy, L->view);
    free(path);
}

/* Runs case c (checked) on its resource; counts the verdict into R. */
static void run_case(struct sfile *s, struct offline_opts *oo, yyjson_val *c, size_t i,
                     yyjson_val *obj, struct suite_tally *R)
{
    const char *name = json_get_str(c, "name");
    yyjson_val *expect = yyjson_obj_get(c, "expect"), *g;
    yyjson_mut_doc *got;
    yyjson_doc *frozen;
    struct diag d;
    char ptr[64];
    unsigned line = 0, column = 0;
    FILE *mem;
    char *buf = NULL;
    size_t len = 0;
    int diffs;

    snprintf(ptr, sizeof(ptr), "/spec/cases/%zu", i);
    yamljson_mark(s->doc, ptr, &line, &column);
    diag_clear(&d);
    oo->old_object = yyjson_obj_get(c, "oldResource"); /* an UPDATE from it, if given */
    got = offline_admit(oo, obj, &d);
    if (got == NULL) {
        serr(s, ptr, "case \"%.64s\": %s", name, d.msg);
        return;
    }
    if (yyjson_obj_get(expect, "decision") == NULL && yyjson_obj_size(expect) == 0) {
        printf("  ok   %s (nothing expected)\n", name);
        R->passed++;
        yyjson_mut_doc_free(got);
        return;
    }
    /* read as an immutable document, to compare with the suite's values; the copy recurses,
     * but the object in it is as deep as yamljson let it be, and the rest is shallow */
    frozen = yyjson_mut_doc_imut_copy(got, NULL);
    yyjson_mut_doc_free(got);
    g = yyjson_doc_get_root(frozen);
    /* the differences are collected, so that the verdict line comes first */
    mem = g ? open_memstream(&buf, &len) : NULL;
    if (mem == NULL) {
        yyjson_doc_free(frozen);
        R->errors++;
        return;
    }
    diffs = compare(mem, expect, g);
    fclose(mem);
    if (diffs == 0) {
        printf("  ok   %s\n", name);
        R->passed++;
    } else {
        printf("  FAIL %s (%s:%u, %s %s/%s)\n%s", name, s->path, line, json_get_str(g, "kind"),
               json_get_str(g, "namespace"), json_get_str(g, "name"), buf);
        R->failed++;
    }
    free(buf);
    yyjson_doc_free(frozen);
}

static void run_suite(const char *path, struct suite_tally *R)
{
    static const char *const case_keys[] = {"name",        "resource", "file", "document",
                                            "oldResource", "expect",   NULL};
    struct sfile s = {.path = path};
    struct loaded L = {0};
    struct offline_opts oo = {0};
    struct yamljson y = {0};
    struct diag d;
    struct resource *objs = NULL;
    yyjson_val *cases, *c;
    char text[DIAG_MSG_MAX + 300], ptr[64], tmp[4096];
    size_t i, max, n = 0;
    const char *name;

    snprintf(tmp, sizeof(tmp), "%s", path);
    snprintf(s.dir, sizeof(s.dir), "%s", dirname(tmp));
    diag_clear(&d);
    if (yamljson_read_file(path, YAMLJSON_MARKS, &y, &d) < 0) {
        fprintf(stderr, "gpuadmit test: %s\n", diag_format(&d, text, sizeof(text)));
        R->errors++;
        return;
    }
    if (y.n != 1 || !yyjson_is_obj(y.docs[0].value)) {
        serr(&s, "", "a suite file holds one PolicyTest document (a mapping)");
        goto out;
    }
    s.doc = &y.docs[0];
    load_spec(&s, s.doc->value, &L);
    cases = yyjson_obj_get(yyjson_obj_get(s.doc->value, "spec"), "cases");
    n = yyjson_arr_size(cases);
    objs = calloc(n ? n : 1, sizeof(*objs));
    /* check every case before running any */
    yyjson_arr_foreach (cases, i, max, c) {
        snprintf(ptr, sizeof(ptr), "/spec/cases/%zu", i);
        if (!yyjson_is_obj(c) || !yyjson_is_str(yyjson_obj_get(c, "name"))) {
            serr(&s, ptr, "a case is a mapping with a name");
            continue;
        }
        known_keys(&s, ptr, c, case_keys, "a case");
        if (!yyjson_is_obj(yyjson_obj_get(c, "expect")))
            serr(&s, ptr, "case \"%.64s\": expect (a mapping) is required",
                 json_get_str(c, "name"));
        else if (L.policy != NULL) {
            char p2[80];

            snprintf(p2, sizeof(p2), "%s/expect", ptr);
            check_expect(&s, L.policy, p2, yyjson_obj_get(c, "expect"));
        }
        if (objs != NULL)
            case_resource(&s, ptr, c, &objs[i]);
        if (yyjson_obj_get(c, "oldResource") != NULL &&
            !yyjson_is_obj(yyjson_obj_get(c, "oldResource"))) {
            char p2[80];

            snprintf(p2, sizeof(p2), "%s/oldResource", ptr);
            serr(&s, p2, "oldResource must be a mapping (the object before an UPDATE)");
        }
    }
    if (s.bad || L.policy == NULL || objs == NULL)
        goto out;
    name = json_get_str(yyjson_obj_get(s.doc->value, "metadata"), "name");
    printf("%s: %s\n", path, name ? name : "(unnamed)");
    oo.policy = L.policy;
    oo.view = L.view;
    oo.audit_only = L.audit_only;
    yyjson_arr_foreach (cases, i, max, c) {
        run_case(&s, &oo, c, i, objs[i].v, R);
    }
out:
    if (s.bad)
        R->errors++;
    for (i = 0; objs != NULL && i < n; i++)
        yyjson_doc_free(objs[i].own);
    free(objs);
    yamljson_free(&y);
    cluster_free(L.view);
    policy_free(L.policy);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_suite_name(const char *n)
{
    size_t len = strlen(n);

    return n[0] != '.' && ((len > 5 && strcmp(n + len - 5, ".yaml") == 0) ||
                           (len > 4 && strcmp(n + len - 4, ".yml") == 0));
}

/* Whether the file's first document says kind: PolicyTest (a directory also holds policies,
 * resources and snapshots: those are not suites). */
static bool is_suite_file(const char *path)
{
    struct yamljson y;
    struct diag d;
    bool yes;

    diag_clear(&d);
    if (yamljson_read_file(path, 0, &y, &d) < 0)
        return true; /* let the suite reader report what is wrong with it */
    yes = y.n > 0 && json_str_is(yyjson_obj_get(y.docs[0].value, "kind"), "PolicyTest");
    yamljson_free(&y);
    return yes;
}

/* The *.yaml and *.yml files under dir (depth levels of subdirectories at most), into names. */
static void collect(const char *dir, unsigned depth, char ***names, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    char **grown;

    while (d != NULL && (e = readdir(d)) != NULL && *n < SUITE_FILES_MAX) {
        char *full = NULL;

        if (e->d_name[0] == '.' || asprintf(&full, "%s/%s", dir, e->d_name) < 0)
            continue;
        if (stat(full, &st) == 0 && S_ISDIR(st.st_mode) && depth > 0) {
            collect(full, depth - 1, names, n);
        } else if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && is_suite_name(e->d_name) &&
                   (grown = reallocarray(*names, *n + 1, sizeof(**names))) != NULL) {
            *names = grown;
            (*names)[(*n)++] = full;
            full = NULL;
        }
        free(full);
    }
    if (d != NULL)
        closedir(d);
}

/* The suites at path: the file itself, or every suite file (kind: PolicyTest) under the
 * directory, run in name order. */
static void run_path(const char *path, struct suite_tally *R)
{
    struct stat st;
    char **names = NULL;
    size_t n = 0, ran = 0;

    if (stat(path, &st) < 0) {
        fprintf(stderr, "gpuadmit test: %s: %s\n", path, strerror(errno));
        R->errors++;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        run_suite(path, R);
        return;
    }
    collect(path, SUITE_DIR_DEPTH, &names, &n);
    if (n > 0)
        qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        if (is_suite_file(names[i])) {
            run_suite(names[i], R);
            ran++;
        } else {
            R->skipped++;
        }
        free(names[i]);
    }
    free(names);
    if (ran == 0) {
        fprintf(stderr, "gpuadmit test: %s: no suite files (kind: PolicyTest)\n", path);
        R->errors++;
    }
}

int suite_main(int argc, char **argv)
{
    struct suite_tally R = {0};

    if (argc < 2) {
        fputs(usage_test, stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_test, stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "gpuadmit test: unknown option \"%s\"; see gpuadmit test --help\n",
                    argv[i]);
            return 2;
        }
    }
    log_set_level(LOG_ERROR);
    for (int i = 1; i < argc; i++)
        run_path(argv[i], &R);
    if (R.skipped > 0)
        fprintf(stderr,
                "gpuadmit test: %zu file%s that %s not a suite (kind: PolicyTest) not run\n",
                R.skipped, R.skipped == 1 ? "" : "s", R.skipped == 1 ? "is" : "are");
    printf("gpuadmit-test: %zu passed, %zu failed", R.passed, R.failed);
    if (R.errors > 0)
        printf(" (%zu suite%s with input errors)", R.errors, R.errors == 1 ? "" : "s");
    putchar('\n');
    return R.errors > 0 ? 2 : R.failed > 0 ? 1 : 0;
}
