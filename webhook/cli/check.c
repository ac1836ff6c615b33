/*
 * check.c: gpuadmit check, the webhook's judgement of manifest files, offline.
 *
 * Each object of each file (multi-document YAML or JSON; a List's items one by one) is judged
 * as a CREATE by offline_admit(), i.e. by the server's own evaluator, and reported in text or
 * as one JSON document. Exit code: 0 when nothing was denied, 1 when something was (or, with
 * --fail-on, warned or patched), 2 for a usage or input error (which wins: the report is
 * incomplete then). Without manifest files it only loads the policy: a lint, 0 or 2.
 */
#include "check.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "json.h"
#include "log.h"
#include "offline.h"
#include "policy/eval.h"
#include "policy/pool.h"
#include "policy/policy.h"
#include "yamljson.h"

static const char usage_check[] =
    "usage: gpuadmit check [OPTIONS] FILE...\n"
    "       gpuadmit check -r PATH [--cluster-snapshot FILE]   (no files: only load them)\n"
    "\n"
    "Judges every object of the manifest files (multi-document YAML or JSON; - for standard\n"
    "input) as the webhook would judge its CREATE: the mutating phase, its patch applied, then\n"
    "the validating phase on the patched object. Prints per object the decision, each rule's\n"
    "outcome and message, the warnings and the patch. Without files it loads the policy and\n"
    "reports its errors, as gpuadmit serve would refuse it.\n"
    "\n"
    "  -r, --rules PATH          policy directory or file (default rules)\n"
    "  --cluster-snapshot FILE   judge capacity against this snapshot (kubectl get nodes,pods,\n"
    "                            priorityclasses,replicasets,deployments,statefulsets,jobs\n"
    "                            -A -o json); without it capacity is not checked\n"
    "  --audit-only              as gpuadmit serve --audit-only: every rule only reports\n"
    "  -o, --output text|json    the report's format (default text)\n"
    "  --show-object             include the object as patched (in JSON: \"object\")\n"
    "  --fail-on deny|warn|patch exit 1 when an object is denied (deny, the default); also\n"
    "                            when it gets a warning or an Audit rule reports \"would deny\"\n"
    "                            or \"would warn\" (warn); also when it is patched or \"would\n"
    "                            patch\" (patch)\n"
    "\n"
    "Exit code: 0 nothing denied (nor, with --fail-on, warned or patched), 1 something was,\n"
    "2 usage or input error (a policy that does not load, too).\n";

/* What --fail-on fails on, weakest first: an object that reaches the level fails. */
enum fail_level { FAIL_PATCH, FAIL_WARN, FAIL_DENY, FAIL_NONE };

struct check_opts {
    const char *rules;
    bool rules_given;
    const char *snapshot;
    bool audit_only;
    bool json;
    bool show_object;
    enum fail_level fail_on;
};

struct tally {
    size_t allowed, patched, denied, not_judged, errors;
    size_t failing; /* objects that reach --fail-on */
};

enum { OPT_SNAPSHOT = 256, OPT_AUDIT_ONLY, OPT_SHOW_OBJECT, OPT_FAIL_ON, OPT_HELP };

static const struct option longopts[] = {
    {"rules", required_argument, NULL, 'r'},
    {"cluster-snapshot", required_argument, NULL, OPT_SNAPSHOT},
    {"audit-only", no_argument, NULL, OPT_AUDIT_ONLY},
    {"output", required_argument, NULL, 'o'},
    {"show-object", no_argument, NULL, OPT_SHOW_OBJECT},
    {"fail-on", required_argument, NULL, OPT_FAIL_ON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* 0 to go on, 1 when help was printed, -1 on a usage error (reported). */
static int parse_args(int argc, char **argv, struct check_opts *o)
{
    int ch;

    o->rules = "rules";
    o->fail_on = FAIL_DENY;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":r:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'r':
            o->rules = optarg;
            o->rules_given = true;
            break;
        case OPT_SNAPSHOT: o->snapshot = optarg; break;
        case OPT_AUDIT_ONLY: o->audit_only = true; break;
        case OPT_SHOW_OBJECT: o->show_object = true; break;
        case OPT_FAIL_ON:
            if (strcmp(optarg, "deny") == 0) {
                o->fail_on = FAIL_DENY;
            } else if (strcmp(optarg, "warn") == 0) {
                o->fail_on = FAIL_WARN;
            } else if (strcmp(optarg, "patch") == 0) {
                o->fail_on = FAIL_PATCH;
            } else {
                fprintf(stderr, "gpuadmit check: --fail-on takes deny, warn or patch, got \"%s\"\n",
                        optarg);
                return -1;
            }
            break;
        case 'o':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "gpuadmit check: -o takes text or json, got \"%s\"\n", optarg);
                return -1;
            }
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'h':
        case OPT_HELP: fputs(usage_check, stdout); return 1;
        case ':':
            fprintf(stderr, "gpuadmit check: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "gpuadmit check: unknown option \"%s\"; see gpuadmit check --help\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind >= argc && !o->rules_given) {
        fprintf(stderr, "gpuadmit check: no manifest files (to check the policy alone, give "
                        "-r PATH); see gpuadmit check --help\n");
        return -1;
    }
    return 0;
}

/* ---- text report ---- */

/* The string member key of a result object: offline_admit() always sets those read here. */
static const char *field(yyjson_val *obj, const char *key)
{
    const char *s = json_get_str(obj, key);

    return s ? s : "";
}

static const char *field_str(yyjson_val *v)
{
    return yyjson_get_str(v) ? yyjson_get_str(v) : "";
}

static void print_text(yyjson_val *res, const char *where, const struct check_opts *o)
{
    const char *decision = field(res, "decision");
    const char *ns = field(res, "namespace");
    const char *name = field(res, "name");
    yyjson_val *warnings = yyjson_obj_get(res, "warnings"), *patch, *v, *ru, *m;
    size_t i, max, k, kmax, n_warn = yyjson_arr_size(warnings);

    printf("%s: %s %s/%s: %s", where, field(res, "kind"), ns, name[0] ? name : "(generated name)",
           decision);
    if (n_warn > 0)
        printf(", with %zu warning%s", n_warn, n_warn == 1 ? "" : "s");
    putchar('\n');
    if (strcmp(decision, "not judged") == 0) {
        printf("  %s\n", field(res, "reason"));
        return;
    }
    yyjson_arr_foreach (yyjson_obj_get(res, "rules"), i, max, ru) {
        yyjson_val *msgs = yyjson_obj_get(ru, "messages");
        const char *outcome = field(ru, "outcome");

        printf("  %-16s %s", field(ru, "rule"), outcome);
        if (yyjson_arr_size(msgs) == 0)
            putchar('\n');
        yyjson_arr_foreach (msgs, k, kmax, m) {
            printf("%*s%s\n", k ? 25 : 7 - (int)strlen(outcome), "", field_str(m));
        }
    }
    yyjson_arr_foreach (warnings, i, max, v) {
        printf("  warning: %s\n", field_str(v));
    }
    if ((v = yyjson_obj_get(res, "message")) != NULL)
        printf("  denied: %s\n", field_str(v));
    patch = yyjson_obj_get(res, "patch");
    if (yyjson_arr_size(patch) > 0) {
        printf("  patch:\n");
        yyjson_arr_foreach (patch, i, max, v) {
            offline_print_op(stdout, "    ", v);
        }
    }
    if ((patch = yyjson_obj_get(res, "reinvocation")) != NULL) {
        printf("  error: the patched object would be patched again on reinvocation:\n");
        yyjson_arr_foreach (patch, i, max, v) {
            offline_print_op(stdout, "    ", v);
        }
    }
    if (o->show_object) {
        char *text = json_write_pretty(yyjson_obj_get(res, "object"), NULL);

        if (text != NULL)
            printf("  object:\n%s\n", text);
        free(text);
    }
}

/* ---- the objects ---- */

/* How far an object's judgement goes: denied, warned (a rule's warning, or a Warn or Audit
 * rule found what enforcing would deny or warn about), patched (or would be), or none of these.
 * Without a snapshot, capacity's "not checked" is the report's note, not the object's fault. */
static enum fail_level reached(yyjson_val *res, bool have_view)
{
    const char *decision = field(res, "decision");
    enum fail_level level = FAIL_NONE;
    yyjson_val *ru, *m;
    size_t i, max, k, kmax;

    if (strcmp(decision, "denied") == 0)
        return FAIL_DENY;
    if (strcmp(decision, "patched") == 0)
        level = FAIL_PATCH;
    yyjson_arr_foreach (yyjson_obj_get(res, "rules"), i, max, ru) {
        const char *out = field(ru, "outcome");
        const char *type = field(ru, "type");

        int t = policy_rule_type_of(type);

        if (!have_view && t >= 0 && eval_type_judges_capacity((enum rule_type)t))
            continue;
        if (strcmp(out, "warn") == 0 || strcmp(out, "deny") == 0)
            return FAIL_WARN;
        if (strcmp(out, "audit") != 0)
            continue;
        /* the finding's label leads its message (eval.c: "would deny: ..." and so on) */
        yyjson_arr_foreach (yyjson_obj_get(ru, "messages"), k, kmax, m) {
            const char *text = field_str(m);

            if (strncmp(text, "would deny", 10) == 0 || strncmp(text, "would warn", 10) == 0)
                return FAIL_WARN;
            if (strncmp(text, "would patch", 11) == 0)
                level = FAIL_PATCH;
        }
    }
    return level;
}

static void count(struct tally *t, const char *decision)
{
    if (strcmp(decision, "allowed") == 0)
        t->allowed++;
    else if (strcmp(decision, "patched") == 0)
        t->patched++;
    else if (strcmp(decision, "denied") == 0)
        t->denied++;
    else
        t->not_judged++;
}

/* The JSON report being built: objects and errors are arrays of doc. */
struct report {
    yyjson_mut_doc *doc;
    yyjson_mut_val *objects, *errors;
};

static void input_error(const struct diag *d, struct report *rep, struct tally *t)
{
    char text[DIAG_MSG_MAX + 300];

    t->errors++;
    fprintf(stderr, "gpuadmit check: %s\n", diag_format(d, text, sizeof(text)));
    yyjson_mut_arr_append(rep->errors,
                          json_pack(rep->doc, "{s:s, s:i, s:i, s:s}", "file", d->file, "line",
                                    (int)d->line, "column", (int)d->column, "message", d->msg));
}

/* Adds result (the root of res) to the JSON report, with where it comes from. */
static void report_object(struct report *rep, yyjson_mut_doc *res, const char *file, unsigned index,
                          unsigned line, bool show_object)
{
    yyjson_mut_val *root = yyjson_mut_doc_get_root(res), *copy;

    json_mut_set(res, root, "file", yyjson_mut_strcpy(res, file));
    json_mut_set(res, root, "document", yyjson_mut_uint(res, index));
    json_mut_set(res, root, "line", yyjson_mut_uint(res, line));
    if (!show_object)
        yyjson_mut_obj_remove_key(root, "object");
    /* recursive: the object in it is as deep as yamljson let it be, the rest is shallow */
    copy = yyjson_mut_val_mut_copy(rep->doc, root);
    if (copy != NULL)
        yyjson_mut_arr_append(rep->objects, copy);
}

/* Judges one object; items of a List one by one. */
static void judge_object(const struct offline_opts *oo, const struct check_opts *o,
                         const struct yamljson_doc *doc, const char *file, const char *ptr,
                         yyjson_val *obj, struct report *rep, struct tally *t)
{
    unsigned line = doc->line, column = doc->column;
    yyjson_val *items = yyjson_obj_get(obj, "items"), *it;
    const char *kind = json_get_str(obj, "kind");
    char where[1200], sub[YAMLJSON_POINTER_MAX];
    struct diag d;
    yyjson_mut_doc *res;
    yyjson_doc *frozen;
    yyjson_val *r;
    size_t i, max;

    yamljson_mark(doc, ptr, &line, &column);
    if (yyjson_is_arr(items) && kind != NULL && strlen(kind) >= 4 &&
        strcmp(kind + strlen(kind) - 4, "List") == 0) {
        yyjson_arr_foreach (items, i, max, it) {
            /* a nested List's items are where they are, not at the outer item's line */
            yamljson_item_pointer(sub, sizeof(sub), ptr, i);
            judge_object(oo, o, doc, file, sub, it, rep, t);
        }
        return;
    }
    diag_clear(&d);
    res = offline_admit(oo, obj, &d);
    /* read as an immutable document (recursive: as deep as yamljson let the object be) */
    frozen = res ? yyjson_mut_doc_imut_copy(res, NULL) : NULL;
    if (res != NULL && frozen == NULL)
        diag_set(&d, file, line, column, "document %u: out of memory", doc->index);
    if (frozen == NULL) {
        if (d.line == 0) {
            char msg[DIAG_MSG_MAX];

            snprintf(msg, sizeof(msg), "%s", d.msg);
            diag_clear(&d);
            diag_set(&d, file, line, column, "document %u: %s", doc->index, msg);
        }
        input_error(&d, rep, t);
        yyjson_mut_doc_free(res);
        return;
    }
    r = yyjson_doc_get_root(frozen);
    count(t, field(r, "decision"));
    if (reached(r, oo->view != NULL) >= o->fail_on && reached(r, oo->view != NULL) != FAIL_NONE)
        t->failing++;
    snprintf(where, sizeof(where), "%s:%u", file, line);
    if (!o->json)
        print_text(r, where, o);
    else
        report_object(rep, res, file, doc->index, line, o->show_object);
    yyjson_doc_free(frozen);
    yyjson_mut_doc_free(res);
}

static void check_file(const struct offline_opts *oo, const struct check_opts *o, const char *path,
                       struct report *rep, struct tally *t)
{
    struct yamljson y;
    struct diag d;

    diag_clear(&d);
    if (yamljson_read_file(path, YAMLJSON_MARKS, &y, &d) < 0) {
        input_error(&d, rep, t);
        return;
    }
    for (size_t i = 0; i < y.n; i++)
        judge_object(oo, o, &y.docs[i], strcmp(path, "-") == 0 ? "<stdin>" : path, "",
                     y.docs[i].value, rep, t);
    yamljson_free(&y);
}

/* Linting against a snapshot: a GPU pool whose labels no node offering its resources carries
 * all of gets nothing from node-selector (a selector that would keep its pods Pending): said
 * before a pod meets it. */
static void warn_pools(const struct policy *p, struct cluster *view)
{
    for (size_t d = 0; view != NULL && d < p->n_docs; d++) {
        const struct policy_doc *doc = &p->docs[d];
        bool selects = false;

        for (size_t k = 0; k < doc->n_rules; k++)
            selects = selects || eval_type_adds_pool_labels(doc->rules[k].type);
        for (size_t i = 0; selects && i < doc->n_pools; i++)
            if (pool_nodes_carry(doc, i, view) == 0)
                fprintf(stderr,
                        "gpuadmit: warning: policy %s, GPU pool %s: no node of %s that offers "
                        "its resources carries all of its nodeLabels, so node-selector adds "
                        "none to its pods (and warns)\n",
                        doc->name, doc->pools[i].name,
                        cluster_snapshot_path(view) ? cluster_snapshot_path(view) : "the cluster");
    }
}

int check_main(int argc, char **argv)
{
    struct check_opts o = {0};
    struct offline_opts oo = {0};
    struct tally t = {0};
    struct policy *p = NULL;
    struct cluster *view = NULL;
    struct report rep = {yyjson_mut_doc_new(NULL), NULL, NULL};
    yyjson_mut_val *report;
    struct diag d;
    char text[DIAG_MSG_MAX + 300], *dump;
    int rc = 2;

    switch (parse_args(argc, argv, &o)) {
    case 1: rc = 0; goto out;
    case -1: goto out;
    }
    rep.objects = yyjson_mut_arr(rep.doc);
    rep.errors = yyjson_mut_arr(rep.doc);
    if (rep.objects == NULL || rep.errors == NULL) {
        fprintf(stderr, "gpuadmit check: out of memory\n");
        goto out;
    }
    log_set_level(LOG_ERROR); /* decisions are the report here, not log lines */
    if ((p = offline_load_policy("gpuadmit check", o.rules)) == NULL)
        goto out;
    diag_clear(&d);
    if (o.snapshot != NULL && (view = offline_load_snapshot(o.snapshot, p, &d)) == NULL) {
        fprintf(stderr, "gpuadmit check: %s\n", diag_format(&d, text, sizeof(text)));
        goto out;
    }
    if (optind >= argc) {
        size_t n = 0;

        offline_warn_snapshot(p, view); /* linting the policy against an incomplete snapshot */
        warn_pools(p, view);

        for (size_t i = 0; i < p->n_docs; i++)
            n += p->docs[i].n_rules;
        if (o.json)
            printf("{\"policies\": %zu, \"rules\": %zu}\n", p->n_docs, n);
        else
            printf("%s: the policy loads: %zu polic%s, %zu rule%s (no manifest files to judge)\n",
                   o.rules, p->n_docs, p->n_docs == 1 ? "y" : "ies", n, n == 1 ? "" : "s");
        rc = 0;
        goto out;
    }
    oo.policy = p;
    oo.view = view;
    oo.audit_only = o.audit_only;
    if (!o.json && view == NULL)
        printf("note: no --cluster-snapshot: GPU capacity is not checked\n");
    for (int i = optind; i < argc; i++)
        check_file(&oo, &o, argv[i], &rep, &t);
    if (t.allowed + t.patched + t.denied + t.not_judged + t.errors == 0) {
        /* an empty manifest (a render that failed into a file) must not pass a CI gate;
         * kubectl apply refuses one too ("no objects passed to apply") */
        diag_clear(&d);
        diag_set(&d, argc - optind == 1 ? argv[optind] : "-", 0, 0,
                 "no Kubernetes objects in the %s given (empty, only comments, or empty Lists)",
                 argc - optind == 1 ? "file" : "files");
        input_error(&d, &rep, &t);
    }
    if (o.json) {
        report =
            json_pack(rep.doc, "{s:b, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
                      "capacityChecked", view != NULL, "objects", rep.objects, "errors", rep.errors,
                      "summary", "allowed", (int64_t)t.allowed, "patched", (int64_t)t.patched,
                      "denied", (int64_t)t.denied, "notJudged", (int64_t)t.not_judged, "errors",
                      (int64_t)t.errors, "failing", (int64_t)t.failing);
        dump = json_mut_write_pretty(report, NULL);
        if (dump != NULL)
            puts(dump);
        else
            fprintf(stderr, "gpuadmit check: cannot write the report (out of memory)\n");
        free(dump);
    } else {
        printf("%zu object%s: %zu allowed, %zu patched, %zu denied, %zu not judged",
               t.allowed + t.patched + t.denied + t.not_judged,
               t.allowed + t.patched + t.denied + t.not_judged == 1 ? "" : "s", t.allowed,
               t.patched, t.denied, t.not_judged);
        if (t.errors > 0)
            printf("; %zu input error%s", t.errors, t.errors == 1 ? "" : "s");
        if (o.fail_on != FAIL_DENY && t.failing > 0)
            printf("; %zu fail --fail-on %s", t.failing, o.fail_on == FAIL_WARN ? "warn" : "patch");
        putchar('\n');
    }
    rc = t.errors > 0 ? 2 : t.failing > 0 ? 1 : 0;
out:
    yyjson_mut_doc_free(rep.doc);
    cluster_free(view);
    policy_free(p);
    return rc;
}
