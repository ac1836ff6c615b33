/*
 * offline.c: an object judged as the apiserver would judge its CREATE (see offline.h).
 *
 * The review goes through review_decode() like a request body, so the evaluator sees exactly
 * what the server would. Invariant: the policy and the view are only read (but for the view's
 * note that what its snapshot lacks was told, cluster_snapshot_tell_gaps). The result is built
 * in one mutable document; values of the decisions' documents, of the patched object and of the
 * caller's object are copied into it, never linked.
 */
#include "offline.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "policy/decision.h"
#include "policy/eval.h"
#include "json.h"
#include "bounds.h"
#include "cluster/kube.h"
#include "patch.h"
#include "review.h"
#include "policy/rule_device_plugin.h"
#include "policy/rules.h"
#include "yamljson.h"

/* How strong an outcome is (enum rule_outcome runs from the weakest to the strongest): a rule's
 * outcome is its strongest in both phases. */
static int outcome_rank(const char *o)
{
    int rank = policy_outcome_of(o);

    return rank < 0 ? OUTCOME_SKIP : rank;
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

/* A review of obj as the apiserver sends it for a CREATE (an UPDATE from o->old_object when
 * that is set). New; NULL with d filled. */
static struct review *make_review(const struct offline_opts *o, const char *group,
                                  const char *version, const char *kind, const char *res,
                                  const char *ns, const char *name, yyjson_val *obj, struct diag *d)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *rv = NULL;
    bool update = o->old_object != NULL;
    char *body = NULL;
    size_t len = 0;
    struct review *r = NULL;

    if (m != NULL)
        rv = json_pack(m,
                       "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, "
                       "s:{s:s, s:[s, s]}, s:V, s:V?, s:b, s:{s:s, s:s}}}",
                       "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
                       "uid", "00000000-0000-0000-0000-000000000000", "kind", "group", group,
                       "version", version, "kind", kind, "resource", "group", group, "version",
                       version, "resource", res, "name", name, "namespace", ns, "operation",
                       update ? "UPDATE" : "CREATE", "userInfo", "username",
                       o->user ? o->user : OFFLINE_USER, "groups", "system:authenticated",
                       "gpuadmit:offline", "object", obj, "oldObject", o->old_object, "dryRun",
                       true, "options", "apiVersion", "meta.k8s.io/v1", "kind",
                       update ? "UpdateOptions" : "CreateOptions");
    body = rv ? json_mut_write(rv, &len) : NULL;
    if (body == NULL)
        diag_set(d, NULL, 0, 0, "out of memory");
    else
        r = review_decode(body, len, d);
    free(body);
    yyjson_mut_doc_free(m);
    return r;
}

/* Whether two strings are the same bytes (a NUL in them included). */
static bool same_str(yyjson_mut_val *a, yyjson_mut_val *b)
{
    return yyjson_mut_is_str(a) && yyjson_mut_is_str(b) &&
           yyjson_mut_get_len(a) == yyjson_mut_get_len(b) &&
           memcmp(yyjson_mut_get_str(a), yyjson_mut_get_str(b), yyjson_mut_get_len(a)) == 0;
}

/* Folds a trace (eval_review_trace, in doc) into result's per-rule list (in doc). */
static int fold_trace(yyjson_mut_doc *doc, yyjson_mut_val *rules, yyjson_mut_val *trace)
{
    size_t i, imax, k, kmax, m, mmax;
    yyjson_mut_val *t, *ru, *v;

    yyjson_mut_arr_foreach (trace, i, imax, t) {
        yyjson_mut_val *name = yyjson_mut_obj_get(t, "rule");
        const char *out = yyjson_mut_get_str(yyjson_mut_obj_get(t, "outcome"));
        yyjson_mut_val *msg = yyjson_mut_obj_get(t, "message");
        yyjson_mut_val *cap = yyjson_mut_obj_get(t, "capacity");

        if (cap == NULL && (out == NULL || !yyjson_mut_is_str(msg)))
            continue;
        yyjson_mut_arr_foreach (rules, k, kmax, ru) {
            yyjson_mut_val *msgs = yyjson_mut_obj_get(ru, "messages");
            bool seen = false;

            if (!same_str(yyjson_mut_obj_get(ru, "rule"), name))
                continue;
            if (cap != NULL) {
                /* a capacity rule's judgement: no outcome of its own */
                if (json_mut_set(doc, ru, "capacity", yyjson_mut_val_mut_copy(doc, cap)) < 0)
                    return -1;
                break;
            }
            if (outcome_rank(out) >
                outcome_rank(yyjson_mut_get_str(yyjson_mut_obj_get(ru, "outcome")))) {
                /* both are the document's; a value sits in one container, so copy */
                if (json_mut_set(doc, ru, "outcome", yyjson_mut_strcpy(doc, out)) < 0 ||
                    json_mut_set(
                        doc, ru, "enforcement",
                        yyjson_mut_val_mut_copy(doc, yyjson_mut_obj_get(t, "enforcement"))) < 0)
                    return -1;
            }
            yyjson_mut_arr_foreach (msgs, m, mmax, v) {
                seen = seen || same_str(v, msg);
            }
            if (yyjson_mut_get_len(msg) > 0 && !seen &&
                !yyjson_mut_arr_append(msgs, yyjson_mut_val_mut_copy(doc, msg)))
                return -1;
            break;
        }
    }
    return 0;
}

/* Every rule of the policy, "skip" until the trace says otherwise; in doc. */
static yyjson_mut_val *rule_list(yyjson_mut_doc *doc, const struct policy *p)
{
    yyjson_mut_val *rules = yyjson_mut_arr(doc);

    for (size_t i = 0; rules != NULL && i < p->n_docs; i++)
        for (size_t k = 0; rules != NULL && k < p->docs[i].n_rules; k++) {
            const struct rule *ru = &p->docs[i].rules[k];

            if (!yyjson_mut_arr_append(
                    rules, json_pack(doc, "{s:s, s:s, s:s, s:s, s:[]}", "rule", ru->name, "type",
                                     policy_rule_type_name(ru->type), "enforcement",
                                     policy_enforcement_name(ru->enforcement), "outcome",
                                     policy_outcome_name(OUTCOME_SKIP), "messages")))
                rules = NULL;
        }
    return rules;
}

/* Appends copies of from's items (another document's array, or NULL) to to (in doc). */
static int add_all(yyjson_mut_doc *doc, yyjson_mut_val *to, yyjson_mut_val *from)
{
    size_t i, max;
    yyjson_mut_val *v;

    yyjson_mut_arr_foreach (from, i, max, v) {
        if (!yyjson_mut_arr_append(to, yyjson_mut_val_mut_copy(doc, v)))
            return -1;
    }
    return 0;
}

/* Sets copies of from's members (another document's object, or NULL) in to (in doc). */
static int set_all(yyjson_mut_doc *doc, yyjson_mut_val *to, yyjson_mut_val *from)
{
    size_t i, max;
    yyjson_mut_val *k, *v;

    yyjson_mut_obj_foreach (from, i, max, k, v) {
        yyjson_mut_val *key = yyjson_mut_strncpy(doc, yyjson_mut_get_str(k), yyjson_mut_get_len(k));
        yyjson_mut_val *copy = yyjson_mut_val_mut_copy(doc, v);

        if (key == NULL || copy == NULL || !yyjson_mut_obj_put(to, key, copy))
            return -1;
    }
    return 0;
}

/* The three evaluations of obj (borrowed); fills out, the root of doc. -1 with d filled on an
 * internal failure. */
static int judge(const struct offline_opts *o, const char *gvk[4], const char *ns, const char *name,
                 yyjson_val *obj, yyjson_mut_doc *doc, yyjson_mut_val *out, struct diag *d)
{
    struct review *r = NULL;
    struct decision dm, dv, again;
    yyjson_mut_val *trace = yyjson_mut_arr(doc), *warnings = yyjson_mut_arr(doc);
    yyjson_mut_val *annotations = yyjson_mut_obj(doc);
    yyjson_doc *ops = NULL, *patched = NULL;
    yyjson_val *pobj = obj; /* the object after the patch: obj, or patched's root */
    int rc = -1;

    decision_init(&dm);
    decision_init(&dv);
    decision_init(&again);
    if (trace == NULL || warnings == NULL || annotations == NULL)
        goto oom;
    /* mutating phase */
    if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, obj, d)) == NULL ||
        eval_review_trace(o->policy, r, true, o->audit_only, o->view, &dm, doc, trace) < 0)
        goto fail;
    review_free(r);
    r = NULL;
    if (dm.patch != NULL) {
        /* the patch as an immutable value for patch_apply(): operations are shallow */
        if ((ops = json_freeze(dm.patch)) == NULL)
            goto oom;
        if ((patched = patch_apply(obj, yyjson_doc_get_root(ops), d)) == NULL)
            goto fail;
        pobj = yyjson_doc_get_root(patched);
        /* reinvocation: the patched object must come back unchanged */
        if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, pobj, d)) == NULL ||
            eval_review(o->policy, r, true, o->audit_only, o->view, &again) < 0)
            goto fail;
        review_free(r);
        r = NULL;
        if (again.patch != NULL &&
            json_mut_set(doc, out, "reinvocation", yyjson_mut_val_mut_copy(doc, again.patch)) < 0)
            goto oom;
    }
    /* validating phase, on the patched object */
    if ((r = make_review(o, gvk[0], gvk[1], gvk[2], gvk[3], ns, name, pobj, d)) == NULL ||
        eval_review_trace(o->policy, r, false, o->audit_only, o->view, &dv, doc, trace) < 0)
        goto fail;
    if (fold_trace(doc, yyjson_mut_obj_get(out, "rules"), trace) < 0 ||
        add_all(doc, warnings, dm.warnings) < 0 || add_all(doc, warnings, dv.warnings) < 0 ||
        set_all(doc, annotations, dm.annotations) < 0 ||
        set_all(doc, annotations, dv.annotations) < 0)
        goto oom;
    /* literals: they outlive the document */
    if (json_mut_set(doc, out, "decision",
                     yyjson_mut_str(doc, !dv.allowed || !dm.allowed ? "denied"
                                         : dm.patch != NULL         ? "patched"
                                                                    : "allowed")) < 0)
        goto oom;
    if ((!dv.allowed || !dm.allowed) &&
        json_mut_set(doc, out, "message",
                     yyjson_mut_strcpy(doc, !dm.allowed  ? (dm.message ? dm.message : "")
                                            : dv.message ? dv.message
                                                         : "")) < 0)
        goto oom;
    if (json_mut_set(doc, out, "warnings", warnings) < 0 ||
        json_mut_set(doc, out, "annotations", annotations) < 0 ||
        json_mut_set(doc, out, "patch",
                     dm.patch ? yyjson_mut_val_mut_copy(doc, dm.patch) : yyjson_mut_arr(doc)) < 0 ||
        json_mut_set(doc, out, "object", yyjson_val_mut_copy(doc, pobj)) < 0)
        goto oom;
    rc = 0;
    goto fail;
oom:
    diag_set(d, NULL, 0, 0, "out of memory");
fail:
    review_free(r);
    decision_release(&dm);
    decision_release(&dv);
    decision_release(&again);
    yyjson_doc_free(ops);
    yyjson_doc_free(patched);
    return rc;
}

/* obj with metadata.namespace set to ns, as a document of its own; NULL when out of memory. */
static yyjson_doc *with_namespace(yyjson_val *obj, const char *ns)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *copy = m ? yyjson_val_mut_copy(m, obj) : NULL, *meta;
    yyjson_doc *out = NULL;

    meta = yyjson_mut_obj_get(copy, "metadata");
    if (copy != NULL && meta == NULL) {
        meta = yyjson_mut_obj(m);
        if (json_mut_set(m, copy, "metadata", meta) < 0)
            meta = NULL;
    }
    /* the depth of obj is capped by whoever read it (yamljson, a suite): the copy's recursion */
    if (meta != NULL && json_mut_set(m, meta, "namespace", yyjson_mut_strcpy(m, ns)) == 0)
        out = json_freeze(copy);
    yyjson_mut_doc_free(m);
    return out;
}

void offline_warn_snapshot(const struct policy *p, struct cluster *view)
{
    char gaps[512];
    const char *path;

    if (view == NULL || eval_view_gaps(p, view, gaps, sizeof(gaps)) == 0 ||
        !cluster_snapshot_tell_gaps(view))
        return;
    path = cluster_snapshot_path(view);
    fprintf(stderr,
            "gpuadmit: warning: %s holds %s: those rules judge as if the cluster had none; "
            "write it with kubectl get "
            "nodes,pods,priorityclasses,replicasets,deployments,statefulsets,jobs -A -o json\n",
            path ? path : "the cluster snapshot", gaps);
}

yyjson_mut_doc *offline_admit(const struct offline_opts *o, yyjson_val *obj, struct diag *d)
{
    const char *api = json_get_str(obj, "apiVersion");
    const char *kind = json_get_str(obj, "kind");
    yyjson_val *meta = yyjson_obj_get(obj, "metadata");
    const char *ns = json_get_str(meta, "namespace");
    const char *name = json_get_str(meta, "name");
    const char *slash, *gvk[4];
    char group[256], res[128];
    yyjson_mut_doc *doc = NULL;
    yyjson_mut_val *out = NULL;
    yyjson_doc *copy = NULL;

    /* once per view: check and capacity judge through here, the first object tells */
    offline_warn_snapshot(o->policy, o->view);
    if (!yyjson_is_obj(obj) || api == NULL || kind == NULL || api[0] == '\0' || kind[0] == '\0') {
        diag_set(d, NULL, 0, 0, "not a Kubernetes object: apiVersion and kind must be strings");
        return NULL;
    }
    if (meta != NULL && !yyjson_is_obj(meta)) {
        diag_set(d, NULL, 0, 0, "metadata: expected an object");
        return NULL;
    }
    slash = strchr(api, '/');
    snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - api) : 0, api);
    /* as the apiserver does: a namespaced object without a namespace lands in the request's */
    ns = ns && ns[0] ? ns : "default";
    name = name ? name : "";
    doc = yyjson_mut_doc_new(NULL);
    if (doc != NULL)
        out = json_pack(doc, "{s:s, s:s, s:s, s:s, s:o}", "kind", kind, "apiVersion", api,
                        "namespace", ns, "name", name, "rules", rule_list(doc, o->policy));
    if (out == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        yyjson_mut_doc_free(doc);
        return NULL;
    }
    yyjson_mut_doc_set_root(doc, out);
    gvk[0] = group;
    gvk[1] = slash ? slash + 1 : api;
    gvk[2] = kind;
    gvk[3] = res;
    if (route_for(group, kind, res, sizeof(res)) == NULL) {
        /* literals: they outlive the document */
        if (json_mut_set(doc, out, "decision", yyjson_mut_str(doc, "not judged")) < 0 ||
            json_mut_set(doc, out, "reason",
                         yyjson_mut_str(
                             doc, "the webhook is not sent this kind (see gpuadmit routes)")) < 0) {
            diag_set(d, NULL, 0, 0, "out of memory");
            yyjson_mut_doc_free(doc);
            return NULL;
        }
        return doc;
    }
    copy = with_namespace(obj, ns);
    if (copy == NULL)
        diag_set(d, NULL, 0, 0, "out of memory");
    if (copy == NULL || judge(o, gvk, ns, name, yyjson_doc_get_root(copy), doc, out, d) < 0) {
        yyjson_mut_doc_free(doc);
        doc = NULL;
    }
    yyjson_doc_free(copy);
    return doc;
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

struct cluster *offline_load_snapshot(const char *path, const struct policy *p, struct diag *d)
{
    struct cluster_config cc = {DEFAULT_ALLOCATABLE_GRACE_S};
    struct cluster *c = cluster_new(&cc);

    if (c == NULL) {
        diag_set(d, path, 0, 0, "out of memory");
        return NULL;
    }
    device_plugin_view_wants(c, p);
    if (cluster_load_snapshot(c, path, d) < 0) {
        cluster_free(c);
        return NULL;
    }
    return c;
}

/* A string YAML reads back as the same string without quotes. */
static bool plain_safe(const char *s, size_t len)
{
    yyjson_mut_doc *doc;
    yyjson_mut_val *v = NULL;
    const char *why;
    bool ok;

    if (len == 0 || strlen(s) != len || s[0] == '-' || s[0] == '.' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("._/-", s[i]) == NULL)
            return false;
    /* "true", "12", "1.5" would come back as something else */
    doc = yyjson_mut_doc_new(NULL);
    ok = doc != NULL && yamljson_resolve_plain(doc, s, len, &v, &why) == 0 && yyjson_mut_is_str(v);
    yyjson_mut_doc_free(doc);
    return ok;
}

/* s (len bytes) as a JSON string. */
static void print_quoted(FILE *f, const char *s, size_t len)
{
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    char *text = doc ? json_mut_write(yyjson_mut_strncpy(doc, s, len), NULL) : NULL;

    if (text != NULL)
        fputs(text, f);
    free(text);
    yyjson_mut_doc_free(doc);
}

/* Recursive: v comes from a document whose depth is capped (yamljson, a patch of one). */
void offline_print_value(FILE *f, yyjson_val *v)
{
    yyjson_val *key, *item;
    size_t i, max;
    char *text;

    if (yyjson_is_obj(v)) {
        fputc('{', f);
        yyjson_obj_foreach (v, i, max, key, item) {
            fputs(i ? ", " : "", f);
            if (plain_safe(yyjson_get_str(key), yyjson_get_len(key)))
                fputs(yyjson_get_str(key), f);
            else
                print_quoted(f, yyjson_get_str(key), yyjson_get_len(key));
            fputs(": ", f);
            offline_print_value(f, item);
        }
        fputc('}', f);
    } else if (yyjson_is_arr(v)) {
        fputc('[', f);
        yyjson_arr_foreach (v, i, max, item) {
            fputs(i ? ", " : "", f);
            offline_print_value(f, item);
        }
        fputc(']', f);
    } else if (yyjson_is_str(v) && plain_safe(yyjson_get_str(v), yyjson_get_len(v))) {
        fputs(yyjson_get_str(v), f);
    } else if ((text = json_write(v, NULL)) != NULL) {
        fputs(text, f);
        free(text);
    }
}

void offline_print_op(FILE *f, const char *indent, yyjson_val *op)
{
    const char *name = json_get_str(op, "op");
    const char *path = json_get_str(op, "path");
    const char *from = json_get_str(op, "from");
    yyjson_val *value = yyjson_obj_get(op, "value");

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

/* The live cluster, listed once: the watcher runs until the view is synced, then stops. */
struct cluster *offline_list_live(const char *kubeconfig, unsigned timeout_s,
                                  const struct policy *p, struct diag *d)
{
    struct cluster_config cc = {DEFAULT_ALLOCATABLE_GRACE_S};
    struct kube_config kc = {kubeconfig, 0, 0, NULL};
    struct cluster *view = cluster_new(&cc);
    struct kube *k = NULL;
    struct timespec step = {0, 50 * 1000 * 1000};

    if (view != NULL)
        device_plugin_view_wants(view, p);
    if (view == NULL || (k = kube_start(&kc, view, d)) == NULL) {
        cluster_free(view);
        return NULL;
    }
    for (unsigned i = 0; i < timeout_s * 20 && !cluster_synced(view); i++)
        nanosleep(&step, NULL);
    kube_stop(k);
    if (!cluster_synced(view)) {
        diag_set(d, kubeconfig, 0, 0,
                 "the cluster was not listed within %u s (run gpuadmit serve --kubeconfig "
                 "for the reason in its log)",
                 timeout_s);
        cluster_free(view);
        return NULL;
    }
    return view;
}
