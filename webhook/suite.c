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

#include "cluster.h"
#include "log.h"
#include "offline.h"
#include "patch.h"
#include "policy.h"
#include "yamljson.h"

#define SUITE_FILES_MAX 1000u
#define SUITE_DIR_DEPTH 4u /* subdirectory levels gpuadmit test DIR looks into */

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

struct run {
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

/* Refuses keys of obj (at ptr) not in allowed. */
static void known_keys(struct sfile *s, const char *ptr, const json_t *obj,
                       const char *const *allowed, const char *what)
{
    const char *key;
    json_t *v;
    char p[1024];

    json_object_foreach ((json_t *)obj, key, v) {
        if (one_of(key, allowed))
            continue;
        snprintf(p, sizeof(p), "%s", ptr);
        patch_ptr_append(p, sizeof(p), key);
        serr(s, p, "unknown key \"%.64s\" in %s", key, what);
    }
}

/* A string, or an array of strings, at key of obj: 0 when absent, -1 on a wrong type. */
static int strings(struct sfile *s, const char *ptr, const json_t *v, const char *what)
{
    size_t i;
    json_t *x;

    if (v == NULL || json_is_string(v))
        return 0;
    if (json_is_array(v)) {
        json_array_foreach (v, i, x) {
            if (!json_is_string(x))
                break;
        }
        if (i == json_array_size(v))
            return 0;
    }
    serr(s, ptr, "%s must be a string or a list of strings", what);
    return -1;
}

static bool rule_known(const struct policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            if (strcmp(p->docs[i].rules[k].name, name) == 0)
                return true;
    return false;
}

static void check_expect(struct sfile *s, const struct policy *p, const char *ptr, const json_t *e)
{
    static const char *const keys[] = {"decision", "rules",  "patched", "messages",
                                       "warnings", "denial", NULL};
    static const char *const decisions[] = {"allowed", "denied", "patched", "not judged", NULL};
    static const char *const outcomes[] = {"pass", "patch", "deny", "warn", "audit", "skip", NULL};
    const json_t *v, *x;
    const char *key;
    char p2[1024];

    if (!json_is_object(e)) {
        serr(s, ptr, "expect must be a mapping");
        return;
    }
    known_keys(s, ptr, e, keys, "expect");
    v = json_object_get(e, "decision");
    snprintf(p2, sizeof(p2), "%s/decision", ptr);
    if (v != NULL && (!json_is_string(v) || !one_of(json_string_value(v), decisions)))
        serr(s, p2, "expect.decision: expected one of allowed, denied, patched, not judged");
    for (int k = 0; k < 2; k++) {
        const char *name = k == 0 ? "rules" : "messages";

        v = json_object_get(e, name);
        snprintf(p2, sizeof(p2), "%s/%s", ptr, name);
        if (v != NULL && !json_is_object(v)) {
            serr(s, p2, "expect.%s must be a mapping of rule names", name);
            continue;
        }
        json_object_foreach ((json_t *)v, key, x) {
            char p3[1024];

            snprintf(p3, sizeof(p3), "%s", p2);
            patch_ptr_append(p3, sizeof(p3), key);
            if (!rule_known(p, key))
                serr(s, p3, "expect.%s: the policy has no rule \"%.64s\"", name, key);
            else if (k == 0 && (!json_is_string(x) || !one_of(json_string_value(x), outcomes)))
                serr(s, p3, "expect.rules.%s: expected one of pass, patch, deny, warn, audit, skip",
                     key);
            else if (k == 1)
                strings(s, p3, x, "expect.messages");
        }
    }
    v = json_object_get(e, "patched");
    snprintf(p2, sizeof(p2), "%s/patched", ptr);
    if (v != NULL && !json_is_object(v))
        serr(s, p2, "expect.patched must be a mapping of JSON Pointer to value");
    json_object_foreach ((json_t *)v, key, x) {
        if (key[0] != '/' && key[0] != '\0')
            serr(s, p2, "expect.patched: \"%.64s\" is not a JSON Pointer (starts with /)", key);
    }
    snprintf(p2, sizeof(p2), "%s/warnings", ptr);
    strings(s, p2, json_object_get(e, "warnings"), "expect.warnings");
    snprintf(p2, sizeof(p2), "%s/denial", ptr);
    strings(s, p2, json_object_get(e, "denial"), "expect.denial");
}

/* The resource of case c (new reference), from "resource" or "file" + "document". */
static json_t *case_resource(struct sfile *s, const char *ptr, const json_t *c)
{
    const json_t *inline_obj = json_object_get(c, "resource"),
                 *docn = json_object_get(c, "document");
    const char *file = json_string_value(json_object_get(c, "file"));
    json_int_t want = docn ? json_integer_value(docn) : 0;
    struct yamljson y;
    struct diag d;
    char p2[1024], text[DIAG_MSG_MAX + 300], *path;
    json_t *out = NULL;

    if ((inline_obj != NULL) == (file != NULL) ||
        (json_object_get(c, "file") != NULL && file == NULL)) {
        serr(s, ptr, "a case needs resource (an object) or file (a path), and not both");
        return NULL;
    }
    if (inline_obj != NULL) {
        snprintf(p2, sizeof(p2), "%s/resource", ptr);
        if (!json_is_object(inline_obj)) {
            serr(s, p2, "resource must be a mapping (a Kubernetes object)");
            return NULL;
        }
        return json_incref((json_t *)inline_obj);
    }
    snprintf(p2, sizeof(p2), "%s/document", ptr);
    if (docn != NULL && (!json_is_integer(docn) || want < 1)) {
        serr(s, p2, "document must be a whole number from 1");
        return NULL;
    }
    path = relative(s, file);
    diag_clear(&d);
    if (path == NULL || regular_file(path, &d) < 0 || yamljson_read_file(path, 0, &y, &d) < 0) {
        fprintf(stderr, "gpuadmit test: %s\n", diag_format(&d, text, sizeof(text)));
        s->bad = true;
        free(path);
        return NULL;
    }
    for (size_t i = 0; i < y.n && out == NULL; i++)
        if (want == 0 || y.docs[i].index == (unsigned)want)
            out = json_incref(y.docs[i].value);
    if (out == NULL)
        serr(s, ptr, "%s has no document %lld", path, (long long)(want ? want : 1));
    yamljson_free(&y);
    free(path);
    return out;
}

/* ---- comparing ---- */

static char *show(const json_t *v)
{
    return v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("(absent)");
}

static bool contains_any(const json_t *list, const char *want)
{
    size_t i;
    const json_t *v;

    json_array_foreach (list, i, v) {
        if (strstr(json_string_value(v), want) != NULL)
            return true;
    }
    return false;
}

/* Loops over the strings of v (a string or an array of strings): x the value, s its text. */
#define EACH_STRING(v, i, x, s)                                                                    \
    for (i = 0; (json_is_string(v) ? i < 1 : i < json_array_size(v)) &&                            \
                ((x = json_is_string(v) ? v : json_array_get(v, i)), s = json_string_value(x), 1); \
         i++)

static const json_t *find_rule(const json_t *rules, const char *name)
{
    size_t i;
    const json_t *ru;

    json_array_foreach (rules, i, ru) {
        if (strcmp(json_string_value(json_object_get(ru, "rule")), name) == 0)
            return ru;
    }
    return NULL;
}

/* Prints every difference to out; returns how many there were. */
static int compare(FILE *out, const json_t *e, const json_t *got)
{
    const json_t *v, *x, *want, *rules = json_object_get(got, "rules"), *ru, *m;
    const char *key, *str, *gd = json_string_value(json_object_get(got, "decision"));
    char *a, *b;
    int diffs = 0;
    size_t k;

    if ((v = json_object_get(e, "decision")) && strcmp(json_string_value(v), gd) != 0) {
        fprintf(out, "       decision: expected %s, got %s\n", json_string_value(v), gd);
        if (json_object_get(got, "message"))
            fprintf(out, "         (%s)\n", json_string_value(json_object_get(got, "message")));
        diffs++;
    }
    json_object_foreach ((json_t *)json_object_get(e, "rules"), key, want) {
        ru = find_rule(rules, key);
        str = json_string_value(json_object_get(ru, "outcome"));
        if (ru != NULL && strcmp(str, json_string_value(want)) != 0) {
            fprintf(out, "       rule %s: expected %s, got %s\n", key, json_string_value(want),
                    str);
            json_array_foreach (json_object_get(ru, "messages"), k, m) {
                fprintf(out, "         (%s)\n", json_string_value(m));
            }
            diffs++;
        }
    }
    json_object_foreach ((json_t *)json_object_get(e, "messages"), key, want) {
        ru = find_rule(rules, key);
        EACH_STRING(want, k, x, str)
        {
            if (ru != NULL && contains_any(json_object_get(ru, "messages"), str))
                continue;
            a = show(json_object_get(ru, "messages"));
            fprintf(out, "       rule %s message: expected one containing \"%s\", got %s\n", key,
                    str, a);
            free(a);
            diffs++;
        }
    }
    json_object_foreach ((json_t *)json_object_get(e, "patched"), key, want) {
        v = patch_get(json_object_get(got, "object"), key);
        /* null expects the field absent: Kubernetes drops null fields anyway */
        if (json_equal(v, want) || (json_is_null(want) && (v == NULL || json_is_null(v))))
            continue;
        a = show(want);
        b = show(v);
        fprintf(out, "       patched %s: expected %s, got %s\n", key, a, b);
        free(a);
        free(b);
        diffs++;
    }
    v = json_object_get(e, "warnings");
    EACH_STRING(v, k, x, str)
    {
        if (contains_any(json_object_get(got, "warnings"), str))
            continue;
        a = show(json_object_get(got, "warnings"));
        fprintf(out, "       warnings: expected one containing \"%s\", got %s\n", str, a);
        free(a);
        diffs++;
    }
    v = json_object_get(e, "denial");
    EACH_STRING(v, k, x, str)
    {
        const char *msg = json_string_value(json_object_get(got, "message"));

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
static void load_spec(struct sfile *s, const json_t *root, struct loaded *L)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    static const char *const keys[] = {"policy", "clusterSnapshot", "auditOnly", "cases", NULL};
    const json_t *spec = json_object_get(root, "spec"), *v;
    const char *api = json_string_value(json_object_get(root, "apiVersion"));
    const char *kind = json_string_value(json_object_get(root, "kind"));
    char *path;
    struct diag d;
    char text[DIAG_MSG_MAX + 300];

    known_keys(s, "", root, top, "a PolicyTest");
    if (api == NULL || strcmp(api, "gpuadmit.io/v1alpha1") != 0)
        serr(s, "/apiVersion", "apiVersion must be gpuadmit.io/v1alpha1");
    if (kind == NULL || strcmp(kind, "PolicyTest") != 0)
        serr(s, "/kind", "kind must be PolicyTest");
    if (!json_is_object(spec)) {
        serr(s, "", "spec must be a mapping");
        return;
    }
    known_keys(s, "/spec", spec, keys, "spec");
    v = json_object_get(spec, "auditOnly");
    if (v != NULL && !json_is_boolean(v))
        serr(s, "/spec/auditOnly", "spec.auditOnly must be true or false");
    L->audit_only = json_is_true(v);
    if (!json_is_array(json_object_get(spec, "cases")) ||
        json_array_size(json_object_get(spec, "cases")) == 0)
        serr(s, "/spec", "spec.cases must be a list of at least one case");
    v = json_object_get(spec, "clusterSnapshot");
    if (v != NULL && !json_is_string(v))
        serr(s, "/spec/clusterSnapshot", "spec.clusterSnapshot must be a path");
    if (!json_is_string(json_object_get(spec, "policy"))) {
        serr(s, "/spec", "spec.policy (a policy directory or file) is required");
        return;
    }
    if (s->bad)
        return;
    path = relative(s, json_string_value(json_object_get(spec, "policy")));
    if (path == NULL || (L->policy = offline_load_policy("gpuadmit test", path)) == NULL) {
        serr(s, "/spec/policy", "the policy does not load");
        free(path);
        return;
    }
    free(path);
    if (v == NULL)
        return;
    path = relative(s, json_string_value(v));
    diag_clear(&d);
    if (path == NULL || regular_file(path, &d) < 0 ||
        (L->view = offline_load_snapshot(path, &d)) == NULL)
        serr(s, "/spec/clusterSnapshot", "%s", diag_format(&d, text, sizeof(text)));
    free(path);
}

static void run_suite(const char *path, struct run *R)
{
    static const char *const case_keys[] = {"name",        "resource", "file", "document",
                                            "oldResource", "expect",   NULL};
    struct sfile s = {.path = path};
    struct loaded L = {0};
    struct offline_opts oo = {0};
    struct yamljson y = {0};
    struct diag d;
    json_t *cases, *c, **objs = NULL, *got;
    char text[DIAG_MSG_MAX + 300], ptr[64], tmp[4096];
    size_t i, n = 0;
    unsigned line, column;
    const char *name;

    snprintf(tmp, sizeof(tmp), "%s", path);
    snprintf(s.dir, sizeof(s.dir), "%s", dirname(tmp));
    diag_clear(&d);
    if (yamljson_read_file(path, YAMLJSON_MARKS, &y, &d) < 0) {
        fprintf(stderr, "gpuadmit test: %s\n", diag_format(&d, text, sizeof(text)));
        R->errors++;
        return;
    }
    if (y.n != 1 || !json_is_object(y.docs[0].value)) {
        serr(&s, "", "a suite file holds one PolicyTest document (a mapping)");
        goto out;
    }
    s.doc = &y.docs[0];
    load_spec(&s, s.doc->value, &L);
    cases = json_object_get(json_object_get(s.doc->value, "spec"), "cases");
    n = json_array_size(cases);
    objs = calloc(n ? n : 1, sizeof(*objs));
    /* check every case before running any */
    json_array_foreach (cases, i, c) {
        snprintf(ptr, sizeof(ptr), "/spec/cases/%zu", i);
        if (!json_is_object(c) || !json_is_string(json_object_get(c, "name"))) {
            serr(&s, ptr, "a case is a mapping with a name");
            continue;
        }
        known_keys(&s, ptr, c, case_keys, "a case");
        if (!json_is_object(json_object_get(c, "expect")))
            serr(&s, ptr, "case \"%.64s\": expect (a mapping) is required",
                 json_string_value(json_object_get(c, "name")));
        else if (L.policy != NULL) {
            char p2[80];

            snprintf(p2, sizeof(p2), "%s/expect", ptr);
            check_expect(&s, L.policy, p2, json_object_get(c, "expect"));
        }
        if (objs != NULL)
            objs[i] = case_resource(&s, ptr, c);
        if (json_object_get(c, "oldResource") != NULL &&
            !json_is_object(json_object_get(c, "oldResource"))) {
            char p2[80];

            snprintf(p2, sizeof(p2), "%s/oldResource", ptr);
            serr(&s, p2, "oldResource must be a mapping (the object before an UPDATE)");
        }
    }
    if (s.bad || L.policy == NULL || objs == NULL)
        goto out;
    name = json_string_value(json_object_get(json_object_get(s.doc->value, "metadata"), "name"));
    printf("%s: %s\n", path, name ? name : "(unnamed)");
    oo.policy = L.policy;
    oo.view = L.view;
    oo.audit_only = L.audit_only;
    json_array_foreach (cases, i, c) {
        name = json_string_value(json_object_get(c, "name"));
        snprintf(ptr, sizeof(ptr), "/spec/cases/%zu", i);
        line = column = 0;
        yamljson_mark(s.doc, ptr, &line, &column);
        diag_clear(&d);
        oo.old_object = json_object_get(c, "oldResource"); /* an UPDATE from it, if given */
        got = offline_admit(&oo, objs[i], &d);
        if (got == NULL) {
            serr(&s, ptr, "case \"%.64s\": %s", name, d.msg);
            continue;
        }
        if (json_object_get(json_object_get(c, "expect"), "decision") == NULL &&
            json_object_size(json_object_get(c, "expect")) == 0) {
            printf("  ok   %s (nothing expected)\n", name);
            R->passed++;
        } else {
            FILE *mem;
            char *buf = NULL;
            size_t len = 0;
            int diffs;

            /* the differences are collected, so that the verdict line comes first */
            mem = open_memstream(&buf, &len);
            if (mem == NULL) {
                json_decref(got);
                R->errors++;
                continue;
            }
            diffs = compare(mem, json_object_get(c, "expect"), got);
            fclose(mem);
            if (diffs == 0) {
                printf("  ok   %s\n", name);
                R->passed++;
            } else {
                printf("  FAIL %s (%s:%u, %s %s/%s)\n%s", name, path, line,
                       json_string_value(json_object_get(got, "kind")),
                       json_string_value(json_object_get(got, "namespace")),
                       json_string_value(json_object_get(got, "name")), buf);
                R->failed++;
            }
            free(buf);
        }
        json_decref(got);
    }
out:
    if (s.bad)
        R->errors++;
    for (i = 0; objs != NULL && i < n; i++)
        json_decref(objs[i]);
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
    yes = y.n > 0 && json_is_string(json_object_get(y.docs[0].value, "kind")) &&
          strcmp(json_string_value(json_object_get(y.docs[0].value, "kind")), "PolicyTest") == 0;
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
static void run_path(const char *path, struct run *R)
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
    struct run R = {0};

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
