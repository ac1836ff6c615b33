/*
 * offline.c: an object judged as the apiserver would judge its CREATE (see offline.h).
 *
 * The review goes through review_decode() like a request body, so the evaluator sees exactly
 * what the server would. Invariant: the policy and the view are only read.
 */
#include "offline.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval.h"
#include "limits.h"
#include "patch.h"
#include "review.h"
#include "rules.h"
#include "yamljson.h"

/* The outcomes from weakest to strongest: a rule's outcome is its strongest in both phases. */
static const char *const outcomes[] = {"skip", "pass", "patch", "audit", "warn", "deny"};

static int outcome_rank(const char *o)
{
    for (int i = 0; i < (int)(sizeof(outcomes) / sizeof(outcomes[0])); i++)
        if (strcmp(o, outcomes[i]) == 0)
            return i;
    return 0;
}

/* The route of kind in group for a CREATE, by the resource name the apiserver would use (the
 * lower-case plural: every kind the table handles takes a plain "s"). */
static const struct eval_route *route_for(const char *group, const char *kind, char *res,
                                          size_t len)
{
    size_t n, k;
    const struct eval_route *rt = eval_routes(&n);

    for (k = 0; kind[k] && k + 2 < len; k++)
        res[k] = (char)tolower((unsigned char)kind[k]);
    res[k++] = 's';
    res[k] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(rt[i].group, group) == 0 && strcmp(rt[i].resource, res) == 0 &&
            rt[i].sub_resource[0] == '\0' && (rt[i].ops & (1u << REVIEW_CREATE)))
            return &rt[i];
    return NULL;
}

/* A review of obj as the apiserver sends it for a CREATE. New; NULL with d filled. */
static struct review *make_review(const struct offline_opts *o, const char *group,
                                  const char *version, const char *kind, const char *res,
                                  const char *ns, const char *name, const json_t *obj,
                                  struct diag *d)
{
    json_t *rv;
    char *body;
    struct review *r = NULL;

    rv = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, "
                   "s:{s:s, s:[s, s]}, s:O, s:n, s:b, s:{s:s, s:s}}}",
                   "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
                   "00000000-0000-0000-0000-000000000000", "kind", "group", group, "version",
                   version, "kind", kind, "resource", "group", group, "version", version,
                   "resource", res, "name", name, "namespace", ns, "operation", "CREATE",
                   "userInfo", "username", o->user ? o->user : OFFLINE_USER, "groups",
                   "system:authenticated", "gpuadmit:offline", "object", obj, "oldObject", "dryRun",
                   true, "options", "apiVersion", "meta.k8s.io/v1", "kind", "CreateOptions");
    if (rv != NULL && o->old_object != NULL) {
        json_t *req = json_object_get(rv, "request");

        json_object_set_new(req, "operation", json_string("UPDATE"));
        json_object_set(req, "oldObject", (json_t *)o->old_object);
        json_object_set_new(json_object_get(req, "options"), "kind", json_string("UpdateOptions"));
    }
    body = rv ? json_dumps(rv, JSON_COMPACT) : NULL;
    if (body == NULL)
        diag_set(d, NULL, 0, 0, "out of memory");
    else
        r = review_decode(body, strlen(body), d);
    free(body);
    json_decref(rv);
    return r;
}

/* Folds a trace (eval_review_trace) into result's per-rule list. */
static void fold_trace(json_t *rules, const json_t *trace)
{
    size_t i, k;
    const json_t *t, *ru;

    json_array_foreach (trace, i, t) {
        const char *name = json_string_value(json_object_get(t, "rule"));
        const char *out = json_string_value(json_object_get(t, "outcome"));
        const char *msg = json_string_value(json_object_get(t, "message"));

        json_array_foreach (rules, k, ru) {
            json_t *msgs = json_object_get(ru, "messages");
            bool seen = false;
            size_t m;
            json_t *v;

            if (strcmp(json_string_value(json_object_get(ru, "rule")), name) != 0)
                continue;
            if (outcome_rank(out) >
                outcome_rank(json_string_value(json_object_get(ru, "outcome")))) {
                json_object_set_new((json_t *)ru, "outcome", json_string(out));
                json_object_set((json_t *)ru, "enforcement", json_object_get(t, "enforcement"));
            }
            json_array_foreach (msgs, m, v) {
                seen = seen || strcmp(json_string_value(v), msg) == 0;
            }
            if (msg[0] && !seen)
                json_array_append_new(msgs, json_string(msg));
            break;
        }
    }
}

/* Every rule of the policy, "skip" until the trace says otherwise. */
static json_t *rule_list(const struct policy *p)
{
    static const char *const types[] = {"gpu-request", "priority-class", "tolerations",
                                        "node-selector", "capacity"};
    static const char *const enf[] = {"Enforce", "Warn", "Audit"};
    json_t *rules = json_array();

    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++) {
            const struct rule *ru = &p->docs[i].rules[k];

            json_array_append_new(rules,
                                  json_pack("{s:s, s:s, s:s, s:s, s:[]}", "rule", ru->name, "type",
                                            types[ru->type], "enforcement", enf[ru->enforcement],
                                            "outcome", "skip", "messages"));
        }
    return rules;
}

static void add_all(json_t *to, const json_t *from)
{
    if (from != NULL)
        json_array_extend(to, (json_t *)from);
}

/* The three evaluations; fills out. -1 with d filled on an internal failure. */
static int judge(const struct offline_opts *o, const char *gvk[4], const char *ns, const char *name,
                 const json_t *obj, json_t *out, struct diag *d)
{
    struct review *r = NULL;
    struct decision dm, dv, again;
    json_t *trace = json_array(), *patched = NULL, *warnings = json_array();
    json_t *annotations = json_object();
    int rc = -1;

    decision_init(&dm);
    decision_init(&dv);
    decision_init(&again);
    /* mutating phase */
    if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, obj, d)) == NULL ||
        eval_review_trace(o->policy, r, true, o->audit_only, o->view, &dm, trace) < 0)
        goto fail;
    review_free(r);
    r = NULL;
    patched = dm.patch ? patch_apply(obj, dm.patch, d) : json_deep_copy(obj);
    if (patched == NULL)
        goto fail;
    /* reinvocation: the patched object must come back unchanged */
    if (dm.patch != NULL) {
        if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, patched, d)) == NULL ||
            eval_review(o->policy, r, true, o->audit_only, o->view, &again) < 0)
            goto fail;
        review_free(r);
        r = NULL;
        if (again.patch != NULL)
            json_object_set(out, "reinvocation", again.patch);
    }
    /* validating phase, on the patched object */
    if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, patched, d)) == NULL ||
        eval_review_trace(o->policy, r, false, o->audit_only, o->view, &dv, trace) < 0)
        goto fail;
    fold_trace(json_object_get(out, "rules"), trace);
    add_all(warnings, dm.warnings);
    add_all(warnings, dv.warnings);
    if (dm.annotations)
        json_object_update(annotations, dm.annotations);
    if (dv.annotations)
        json_object_update(annotations, dv.annotations);
    json_object_set_new(out, "decision",
                        json_string(!dv.allowed || !dm.allowed ? "denied"
                                    : dm.patch != NULL         ? "patched"
                                                               : "allowed"));
    if (!dv.allowed || !dm.allowed)
        json_object_set_new(out, "message",
                            json_string(!dm.allowed  ? dm.message
                                        : dv.message ? dv.message
                                                     : ""));
    json_object_set(out, "warnings", warnings);
    json_object_set(out, "annotations", annotations);
    json_object_set_new(out, "patch", dm.patch ? json_incref(dm.patch) : json_array());
    json_object_set(out, "object", patched);
    rc = 0;
fail:
    review_free(r);
    decision_release(&dm);
    decision_release(&dv);
    decision_release(&again);
    json_decref(trace);
    json_decref(patched);
    json_decref(warnings);
    json_decref(annotations);
    return rc;
}

json_t *offline_admit(const struct offline_opts *o, const json_t *obj, struct diag *d)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *slash, *gvk[4];
    char group[256], res[128];
    json_t *out = NULL, *copy = NULL;

    if (!json_is_object(obj) || api == NULL || kind == NULL || api[0] == '\0' || kind[0] == '\0') {
        diag_set(d, NULL, 0, 0, "not a Kubernetes object: apiVersion and kind must be strings");
        return NULL;
    }
    if (meta != NULL && !json_is_object(meta)) {
        diag_set(d, NULL, 0, 0, "metadata: expected an object");
        return NULL;
    }
    slash = strchr(api, '/');
    snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - api) : 0, api);
    /* as the apiserver does: a namespaced object without a namespace lands in the request's */
    ns = ns && ns[0] ? ns : "default";
    name = name ? name : "";
    out = json_pack("{s:s, s:s, s:s, s:s, s:o}", "kind", kind, "apiVersion", api, "namespace", ns,
                    "name", name, "rules", rule_list(o->policy));
    if (out == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    gvk[0] = group;
    gvk[1] = slash ? slash + 1 : api;
    gvk[2] = kind;
    gvk[3] = res;
    if (route_for(group, kind, res, sizeof(res)) == NULL) {
        json_object_set_new(out, "decision", json_string("not judged"));
        json_object_set_new(out, "reason",
                            json_string("the webhook is not sent this kind (see gpuadmit routes)"));
        return out;
    }
    copy = json_deep_copy(obj);
    if (copy == NULL ||
        (json_object_get(copy, "metadata") == NULL &&
         json_object_set_new(copy, "metadata", json_object()) < 0) ||
        json_object_set_new(json_object_get(copy, "metadata"), "namespace", json_string(ns)) < 0 ||
        judge(o, gvk, ns, name, copy, out, d) < 0) {
        diag_set(d, NULL, 0, 0, "out of memory");
        json_decref(out);
        out = NULL;
    }
    json_decref(copy);
    return out;
}

/* ---- helpers of the offline commands ---- */

struct policy *offline_load_policy(const char *cmd, const char *path)
{
    struct rules_errors *errs = calloc(1, sizeof(*errs));
    struct policy *p = NULL;
    struct stat st;
    char text[DIAG_MSG_MAX + 300];

    if (errs == NULL)
        return NULL;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "%s: %s: cannot read the policy: %s\n", cmd, path, strerror(errno));
        goto out;
    }
    p = S_ISDIR(st.st_mode) ? rules_load_dir(path, errs) : rules_load_files(&path, 1, errs);
    for (size_t i = 0; p == NULL && i < errs->n; i++)
        fprintf(stderr, "%s: %s\n", cmd, diag_format(&errs->items[i], text, sizeof(text)));
    if (p == NULL && errs->dropped > 0)
        fprintf(stderr, "%s: ... and %zu more errors\n", cmd, errs->dropped);
out:
    free(errs);
    return p;
}

struct cluster *offline_load_snapshot(const char *path, struct diag *d)
{
    struct cluster_config cc = {DEFAULT_ALLOCATABLE_GRACE_S};
    struct cluster *c = cluster_new(&cc);

    if (c == NULL) {
        diag_set(d, path, 0, 0, "out of memory");
        return NULL;
    }
    if (cluster_load_snapshot(c, path, d) < 0) {
        cluster_free(c);
        return NULL;
    }
    return c;
}

/* A string YAML reads back as the same string without quotes. */
static bool plain_safe(const char *s, size_t len)
{
    json_t *v = NULL;
    const char *why;
    bool ok;

    if (len == 0 || strlen(s) != len || s[0] == '-' || s[0] == '.' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("._/-", s[i]) == NULL)
            return false;
    /* "true", "12", "1.5" would come back as something else */
    ok = yamljson_resolve_plain(s, len, &v, &why) == 0 && json_is_string(v);
    json_decref(v);
    return ok;
}

void offline_print_value(FILE *f, const json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;
    char *text;

    if (json_is_object(v)) {
        fputc('{', f);
        i = 0;
        json_object_foreach ((json_t *)v, key, item) {
            fputs(i++ ? ", " : "", f);
            if (plain_safe(key, strlen(key))) {
                fputs(key, f);
            } else {
                json_t *k = json_string(key);

                offline_print_value(f, k);
                json_decref(k);
            }
            fputs(": ", f);
            offline_print_value(f, item);
        }
        fputc('}', f);
    } else if (json_is_array(v)) {
        fputc('[', f);
        json_array_foreach (v, i, item) {
            fputs(i ? ", " : "", f);
            offline_print_value(f, item);
        }
        fputc(']', f);
    } else if (json_is_string(v) && plain_safe(json_string_value(v), json_string_length(v))) {
        fputs(json_string_value(v), f);
    } else if ((text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)) != NULL) {
        fputs(text, f);
        free(text);
    }
}

void offline_print_op(FILE *f, const char *indent, const json_t *op)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from = json_string_value(json_object_get(op, "from"));
    const json_t *value = json_object_get(op, "value");

    name = name ? name : "?";
    fprintf(f, "%s%s %s", indent,
            strcmp(name, "add") == 0       ? "+"
            : strcmp(name, "remove") == 0  ? "-"
            : strcmp(name, "replace") == 0 ? "~"
                                           : name,
            path ? path : "?");
    if (from != NULL)
        fprintf(f, " from %s", from);
    if (value != NULL) {
        fputc(' ', f);
        offline_print_value(f, value);
    }
    fputc('\n', f);
}
