/*
 * eval.c: policy evaluation (see eval.h for what each endpoint does).
 *
 * Invariants: rules judge the pod spec as earlier patches of the same review left it (the
 * working copy in struct patch), so patches compose and the patched object sent again yields no
 * patch; a rule only patches under Mutate + Enforce on /mutate; nothing here blocks or does I/O
 * but the decision log line.
 */
#include "eval.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/capacity.h"
#include "decision.h"
#include "json.h"
#include "log.h"
#include "patch.h"
#include "pod.h"
#include "pool.h"
#include "text.h"
#include "toleration.h"
#include "workload.h"

/*
 * Reading the review (docs/json.md §2). Values are the review's immutable yyjson_val *, its depth
 * capped by review_decode() (so yyjson_equals may recurse on them). Arrays are walked once with
 * ARR_EACH (yyjson_arr_get is O(i)); integers go through json_int64(), never the unchecked
 * yyjson_get_sint. Strings may hold a NUL ("\u0000"): the string values here are compared as C
 * strings (up to the NUL), as under jansson, except where a NUL could turn a value the rules must
 * refuse into one they let pass (NVIDIA_VISIBLE_DEVICES "void\u0000all" is not "void"): those
 * compare byte for byte (json_str_is). Keys holding a NUL (jansson refused them at parse) are
 * skipped by OBJ_EACH: no label, annotation or resource name can hold one, so such a key matches
 * nothing a rule looks for.
 */
#define ARR_EACH(arr, i, v)                                                                        \
    for (yyjson_arr_iter i##_it = yyjson_arr_iter_with(arr);                                       \
         ((v) = yyjson_arr_iter_next(&i##_it)) != NULL &&                                          \
         ((i) = i##_it.idx - 1, (void)(i), true);)

struct obj_each {
    yyjson_obj_iter it;
    yyjson_val *k;
};

/* The next member of it whose key holds no NUL, into e->k; false at the end. */
static inline bool obj_each_next(struct obj_each *e)
{
    while ((e->k = yyjson_obj_iter_next(&e->it)) != NULL)
        if (strlen(yyjson_get_str(e->k)) == yyjson_get_len(e->k))
            return true;
    return false;
}

#define OBJ_EACH(obj, key, v)                                                                      \
    for (struct obj_each key##_e = {yyjson_obj_iter_with(obj), NULL};                              \
         obj_each_next(&key##_e) &&                                                                \
         ((key) = yyjson_get_str(key##_e.k), (v) = yyjson_obj_iter_get_val(key##_e.k), true);)

#define MSG_MAX 1024

/* Where the pod spec is, and whose pods it makes. */
struct target {
    const char *what;       /* "pod", "Deployment", ... for messages */
    const char *prefix;     /* JSON Pointer of the pod spec in the object */
    const char *meta_path;  /* JSON Pointer of the pod's (template's) metadata */
    const char *owner_kind; /* templates: the kind that will own the pods */
    bool is_pod;
    bool ephemeral; /* pods/ephemeralcontainers: only the debug containers being added */
};

/* Who is asking, about what: the inputs of match/exclude. */
struct who {
    const char *ns;
    yyjson_val *labels;
    const char *user;
    yyjson_val *groups;
    char sa[256]; /* "NAMESPACE/NAME" or "" */
    yyjson_val *owners;
    const char *owner_kind;
};

enum verdict { V_OK, V_FIXED, V_PROBLEM };

/* pod_gpu_demand() of the spec a rule judges, kept for the review: nearly every rule asks for
 * it, and computing it in each was a fifth of a /validate review (callgrind). The spec is the
 * review's object or a frozen copy of the working copy, and none of them changes or is freed
 * before the review ends (patch.h), so its address names its contents. */
struct demand_memo {
    yyjson_val *spec; /* NULL: nothing kept yet */
    const struct strlist *globs;
    int rc;
    struct pod_demand dm;
    struct diag d;
};

struct ctx {
    struct cluster *view; /* NULL without one */
    const struct policy_doc *doc;
    const struct review *r;
    const struct target *t;
    struct patch *pt;         /* working copy; NULL on /validate */
    yyjson_val *object;       /* the object judged: the working copy's latest copy on /mutate */
    yyjson_val *spec;         /* the pod spec inside object */
    struct demand_memo *memo; /* the review's, for spec_demand() */
    bool fix;                 /* this rule may patch */
    char problem[MSG_MAX];    /* problems left as they are */
    char fixable[MSG_MAX];    /* problems this rule's patch fixed */
    char fixed[MSG_MAX];      /* what the patch did */
    char note[MSG_MAX];       /* why a rule that passed patched nothing: warned at /mutate */
};

/* pod_gpu_demand(c->spec) with the policy document's GPU resources, through the review's memo. */
static int spec_demand(struct ctx *c, struct pod_demand *out, struct diag *d)
{
    struct demand_memo *m = c->memo;

    if (m == NULL)
        return pod_gpu_demand(c->spec, &c->doc->gpu_resources, out, d);
    if (m->spec != c->spec || m->globs != &c->doc->gpu_resources) {
        diag_clear(&m->d);
        m->rc = pod_gpu_demand(c->spec, &c->doc->gpu_resources, &m->dm, &m->d);
        m->spec = c->spec;
        m->globs = &c->doc->gpu_resources;
    }
    *out = m->dm;
    if (m->rc < 0 && !d->set)
        *d = m->d;
    return m->rc;
}

__attribute__((format(printf, 3, 4))) static void add_text(char *buf, size_t len, const char *fmt,
                                                           ...)
{
    size_t n = strlen(buf);
    va_list ap;

    if (n >= len - 1)
        return;
    if (n > 0 && n < len - 2) {
        memcpy(buf + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

/* Problems are kept apart by PROBLEM_SEP: a denial or an annotation joins them with "; ", a
 * warning goes out one per problem (the apiserver cuts long warnings to 256 characters). */
#define PROBLEM_SEP '\x1f'

__attribute__((format(printf, 3, 4))) static void add_problem(char *buf, size_t len,
                                                              const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;

    if (n >= len - 2)
        return;
    if (n > 0)
        buf[n++] = PROBLEM_SEP;
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

/* A copy of problems joined for reading. */
static void join_problems(const char *in, char *out, size_t len)
{
    size_t o = 0;

    for (; *in && o + 3 < len; in++) {
        if (*in == PROBLEM_SEP) {
            out[o++] = ';';
            out[o++] = ' ';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

/* ---- targets ---- */

#define OP(o) (1u << REVIEW_##o)
static const struct eval_route routes[] = {
    {"", "v1", "pods", "", OP(CREATE), true, true},
    /* a user may add tolerations to any pod, and add to or narrow nodeSelector and affinity
     * while it has scheduling gates: such an UPDATE is judged like a CREATE of the new object,
     * at /validate only (a patch of a running pod's immutable fields, priorityClassName say,
     * would make the apiserver refuse the update) */
    {"", "v1", "pods", "", OP(UPDATE), false, true},
    /* kubectl debug adds containers to a running pod through this subresource */
    {"", "v1", "pods", "ephemeralcontainers", OP(UPDATE), true, true},
    /* pod templates (autogen), and the capacity of the workloads */
    {"apps", "v1", "deployments", "", OP(CREATE) | OP(UPDATE), true, true},
    {"apps", "v1", "replicasets", "", OP(CREATE) | OP(UPDATE), true, true},
    {"apps", "v1", "statefulsets", "", OP(CREATE) | OP(UPDATE), true, true},
    {"batch", "v1", "jobs", "", OP(CREATE) | OP(UPDATE), true, true},
    {"batch", "v1", "cronjobs", "", OP(CREATE) | OP(UPDATE), true, true},
    /* kubectl scale and the HPA: capacity only */
    {"apps", "v1", "deployments", "scale", OP(UPDATE), false, true},
    {"apps", "v1", "replicasets", "scale", OP(UPDATE), false, true},
    {"apps", "v1", "statefulsets", "scale", OP(UPDATE), false, true},
    /* an HPA whose maxReplicas cannot fit: warnings only */
    {"autoscaling", "v2", "horizontalpodautoscalers", "", OP(CREATE) | OP(UPDATE), false, true},
};
#undef OP

const struct eval_route *eval_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

const struct eval_route *eval_route_of(const struct review *r, bool mutating)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct eval_route *rt = &routes[i];

        /* any version: with matchPolicy Equivalent the apiserver converts to the one
         * registered, and the evaluator reads fields that every served version has */
        if (review_gvr_is(r, rt->group, rt->resource) &&
            strcmp(r->sub_resource, rt->sub_resource) == 0 && (rt->ops & (1u << r->op)) != 0 &&
            (mutating ? rt->mutating : rt->validating))
            return rt;
    }
    return NULL;
}

static const struct target *find_target(const struct review *r, bool autogen)
{
    static const struct target pod = {"pod", "/spec", "/metadata", NULL, true, false};
    static const struct target debug = {"pod", "/spec", "/metadata", NULL, true, true};
    static const struct target workloads[] = {
        {"Deployment", "/spec/template/spec", "/spec/template/metadata", "ReplicaSet", false,
         false},
        {"ReplicaSet", "/spec/template/spec", "/spec/template/metadata", "ReplicaSet", false,
         false},
        {"StatefulSet", "/spec/template/spec", "/spec/template/metadata", "StatefulSet", false,
         false},
        {"Job", "/spec/template/spec", "/spec/template/metadata", "Job", false, false},
        {"CronJob", "/spec/jobTemplate/spec/template/spec",
         "/spec/jobTemplate/spec/template/metadata", "Job", false, false},
    };
    static const struct {
        const char *group, *resource;
    } gvr[] = {{"apps", "deployments"},
               {"apps", "replicasets"},
               {"apps", "statefulsets"},
               {"batch", "jobs"},
               {"batch", "cronjobs"}};

    if (r->object == NULL)
        return NULL;
    /* kubectl debug adds containers to a running pod through this subresource */
    if (review_gvr_is(r, "", "pods") && strcmp(r->sub_resource, "ephemeralcontainers") == 0)
        return r->op == REVIEW_UPDATE ? &debug : NULL;
    if (r->sub_resource[0] != '\0')
        return NULL;
    if (review_gvr_is(r, "", "pods"))
        return r->op == REVIEW_CREATE || r->op == REVIEW_UPDATE ? &pod : NULL;
    if (!autogen || (r->op != REVIEW_CREATE && r->op != REVIEW_UPDATE))
        return NULL;
    for (size_t i = 0; i < sizeof(gvr) / sizeof(gvr[0]); i++) {
        if (review_gvr_is(r, gvr[i].group, gvr[i].resource))
            return &workloads[i];
    }
    return NULL;
}

/* ---- scope ---- */

static bool glob_any(const struct strlist *l, const char *s)
{
    return s != NULL && pod_glob_any(l, s);
}

static bool selector_matches(const struct label_selector *sel, yyjson_val *labels)
{
    for (size_t i = 0; i < sel->n; i++) {
        const struct label_req *q = &sel->reqs[i];
        const char *v = json_str(yyjson_obj_get(labels, q->key));
        bool in = false;

        for (size_t k = 0; v != NULL && k < q->values.n; k++)
            in = in || strcmp(q->values.v[k], v) == 0;
        switch (q->op) {
        case SEL_IN:
            if (!in)
                return false;
            break;
        case SEL_NOT_IN:
            if (in)
                return false;
            break;
        case SEL_EXISTS:
            if (v == NULL)
                return false;
            break;
        case SEL_DOES_NOT_EXIST:
            if (v != NULL)
                return false;
            break;
        }
    }
    return true;
}

static bool groups_any(const struct strlist *l, yyjson_val *groups)
{
    size_t i;
    yyjson_val *g;

    ARR_EACH (groups, i, g) {
        if (glob_any(l, json_str(g)))
            return true;
    }
    return false;
}

/* Whether the request comes from a controller: the kube-controller-manager, or one of the
 * per-controller service accounts in kube-system. A user can write any ownerReferences into
 * the pod they create; only the controllers' own pods are exempt by owner. */
static bool controller_identity(const char *user)
{
    static const char sa[] = "system:serviceaccount:kube-system:";

    return strcmp(user, "system:kube-controller-manager") == 0 ||
           strncmp(user, sa, sizeof(sa) - 1) == 0;
}

static bool owners_any(const struct strlist *l, const struct who *w)
{
    size_t i;
    yyjson_val *o;

    if (w->owner_kind != NULL && glob_any(l, w->owner_kind))
        return true;
    if (!controller_identity(w->user))
        return false;
    ARR_EACH (w->owners, i, o) {
        if (yyjson_is_true(yyjson_obj_get(o, "controller")) &&
            glob_any(l, json_str(yyjson_obj_get(o, "kind"))))
            return true;
    }
    return false;
}

/* Every part that is given holds. */
static bool match_all(const struct match *m, const struct who *w)
{
    return (m->namespaces.n == 0 || glob_any(&m->namespaces, w->ns)) &&
           (!m->labels.set || selector_matches(&m->labels, w->labels)) &&
           (m->users.n == 0 || glob_any(&m->users, w->user)) &&
           (m->groups.n == 0 || groups_any(&m->groups, w->groups)) &&
           (m->service_accounts.n == 0 || glob_any(&m->service_accounts, w->sa)) &&
           (m->owner_kinds.n == 0 || owners_any(&m->owner_kinds, w));
}

/* Any part that is given holds. */
static bool match_any(const struct match *m, const struct who *w)
{
    return (m->namespaces.n > 0 && glob_any(&m->namespaces, w->ns)) ||
           (m->labels.set && selector_matches(&m->labels, w->labels)) ||
           (m->users.n > 0 && glob_any(&m->users, w->user)) ||
           (m->groups.n > 0 && groups_any(&m->groups, w->groups)) ||
           (m->service_accounts.n > 0 && w->sa[0] && glob_any(&m->service_accounts, w->sa)) ||
           (m->owner_kinds.n > 0 && owners_any(&m->owner_kinds, w));
}

static bool in_scope(const struct scope *s, const struct who *w)
{
    return (!s->has_match || match_all(&s->match, w)) &&
           !(s->has_exclude && match_any(&s->exclude, w));
}

static void who_init(struct who *w, const struct review *r, const struct target *t,
                     yyjson_val *object)
{
    static const char sa_prefix[] = "system:serviceaccount:";
    yyjson_val *meta = patch_get(object, t->meta_path);
    const char *rest, *colon;

    memset(w, 0, sizeof(*w));
    w->ns = r->ns;
    w->labels = yyjson_obj_get(meta, "labels");
    w->user = r->username;
    w->groups = r->groups;
    w->owners = t->is_pod ? yyjson_obj_get(meta, "ownerReferences") : NULL;
    w->owner_kind = t->owner_kind;
    if (strncmp(r->username, sa_prefix, sizeof(sa_prefix) - 1) == 0) {
        rest = r->username + sizeof(sa_prefix) - 1;
        colon = strchr(rest, ':');
        if (colon != NULL)
            snprintf(w->sa, sizeof(w->sa), "%.*s/%s", (int)(colon - rest), rest, colon + 1);
    }
}

/* ---- GPU facts ---- */

static const char *container_name(yyjson_val *c)
{
    const char *n = json_str(yyjson_obj_get(c, "name"));
    return n ? n : "";
}

static bool label_matches(const struct node_label *l, const char *key, const char *value)
{
    return strcmp(l->key, key) == 0 &&
           (l->value == NULL || (value && strcmp(l->value, value) == 0));
}

static bool tolerates(yyjson_val *tol, const struct taint *t)
{
    return toleration_tolerates(tol, t->key, t->value, t->effect);
}

/* Whether a toleration lets the pod onto nodes with this GPU taint: its key and effect match
 * (or an empty key with Exists). With operator Equal the value must match the taint's, but a
 * taint of any value ("value" absent in the policy) may well carry the very value the pod
 * names (GKE's "present", many installs' "true"): for "can it reach GPU nodes" that counts. */
static bool may_tolerate(yyjson_val *tol, const struct taint *t)
{
    const char *key = json_str(yyjson_obj_get(tol, "key"));
    const char *eff = json_str(yyjson_obj_get(tol, "effect"));

    if (eff != NULL && eff[0] && strcmp(eff, t->effect) != 0)
        return false;
    /* a toleration of every taint (empty key, Exists) is how operators and node agents say
     * "run anywhere": it lets the pod reach GPU nodes (reaches_gpu_nodes) but does not by
     * itself aim it at them (with a selector that picks only GPU nodes it does:
     * steered_to_gpu_nodes) */
    if (key == NULL || key[0] == '\0')
        return false;
    if (strcmp(key, t->key) != 0)
        return false;
    return t->value == NULL || tolerates(tol, t);
}

/* A toleration of every taint that keeps pods off GPU nodes (NoSchedule or NoExecute). */
static bool tolerates_all_gpu_taints(const struct policy_doc *doc, yyjson_val *spec)
{
    yyjson_val *tol;
    size_t i;

    for (size_t t = 0; t < doc->n_gpu_taints; t++) {
        if (strcmp(doc->gpu_taints[t].effect, "PreferNoSchedule") == 0)
            continue;
        ARR_EACH (yyjson_obj_get(spec, "tolerations"), i, tol) {
            const char *key = json_str(yyjson_obj_get(tol, "key"));

            if ((key == NULL || key[0] == '\0') && tolerates(tol, &doc->gpu_taints[t]))
                return true;
        }
    }
    return false;
}

/* The taints (nt of them) the pod does not tolerate, into missing (at most max); how many. */
static size_t untolerated(const struct taint *taints, size_t nt, yyjson_val *spec,
                          const struct taint **missing, size_t max)
{
    yyjson_val *tols = yyjson_obj_get(spec, "tolerations"), *tol;
    size_t i, n = 0;
    bool ok;

    for (size_t t = 0; t < nt && n < max; t++) {
        ok = false;
        ARR_EACH (tols, i, tol) {
            ok = ok || tolerates(tol, &taints[t]);
        }
        if (!ok)
            missing[n++] = &taints[t];
    }
    return n;
}

/* A required node affinity term that keeps the pod on GPU nodes (an In expression whose values
 * all match a GPU node label), or with any_value one that lets it onto them (an In expression
 * naming a GPU node label's value among others: In [true, false] reaches GPU nodes as surely as
 * a second term does). */
static bool term_on_gpu_label(const struct node_label *labels, size_t nl_n, yyjson_val *term,
                              bool any_value)
{
    yyjson_val *exprs = yyjson_obj_get(term, "matchExpressions"), *e, *vals, *v;
    size_t i, k;

    ARR_EACH (exprs, i, e) {
        const char *key = json_str(yyjson_obj_get(e, "key"));
        const char *op = json_str(yyjson_obj_get(e, "operator"));

        if (key == NULL || op == NULL)
            continue;
        for (size_t l = 0; l < nl_n; l++) {
            const struct node_label *nl = &labels[l];
            bool all = true;

            if (strcmp(nl->key, key) != 0)
                continue;
            if (strcmp(op, "Exists") == 0)
                return true;
            if (strcmp(op, "In") != 0)
                continue;
            vals = yyjson_obj_get(e, "values");
            ARR_EACH (vals, k, v) {
                if (any_value && label_matches(nl, key, json_str(v)))
                    return true;
                all = all && label_matches(nl, key, json_str(v));
            }
            if (all && yyjson_arr_size(vals) > 0)
                return true;
        }
    }
    return false;
}

static yyjson_val *required_terms(yyjson_val *spec)
{
    return yyjson_obj_get(
        yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity"),
                       "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
}

/* Whether every node the pod may land on is a GPU node; why, in words, into why. */
/* Whether the nodeSelector names one of the n GPU node labels; which, in words, into why. */
static bool selects_gpu_label(const struct node_label *labels, size_t n, yyjson_val *spec,
                              char *why, size_t len)
{
    yyjson_val *sel = yyjson_obj_get(spec, "nodeSelector"), *v;
    const char *key;

    OBJ_EACH(sel, key, v)
    {
        for (size_t l = 0; l < n; l++) {
            if (label_matches(&labels[l], key, json_str(v))) {
                snprintf(why, len, "nodeSelector %s=%s", key, json_str(v));
                return true;
            }
        }
    }
    return false;
}

/* Whether the pod is kept on nodes that carry one of the n labels. */
static bool confined(const struct node_label *labels, size_t n, yyjson_val *spec, char *why,
                     size_t len)
{
    yyjson_val *terms, *term;
    size_t i;
    bool all;

    if (selects_gpu_label(labels, n, spec, why, len))
        return true;
    terms = required_terms(spec);
    all = yyjson_arr_size(terms) > 0;
    ARR_EACH (terms, i, term) {
        all = all && term_on_gpu_label(labels, n, term, false);
    }
    if (all)
        snprintf(why, len, "required node affinity on GPU node labels");
    return all;
}

/* Why the pod targets GPU nodes, or false. */
static bool targets_gpu_nodes(const struct policy_doc *doc, yyjson_val *spec, char *why, size_t len)
{
    yyjson_val *tols, *tol, *v;
    const char *rc;
    size_t i;

    if (selects_gpu_label(doc->gpu_node_labels, doc->n_gpu_node_labels, spec, why, len))
        return true;
    ARR_EACH (required_terms(spec), i, v) {
        if (term_on_gpu_label(doc->gpu_node_labels, doc->n_gpu_node_labels, v, true)) {
            snprintf(why, len, "required node affinity on GPU node labels");
            return true;
        }
    }
    tols = yyjson_obj_get(spec, "tolerations");
    for (size_t t = 0; t < doc->n_gpu_taints; t++) {
        ARR_EACH (tols, i, tol) {
            if (may_tolerate(tol, &doc->gpu_taints[t])) {
                snprintf(why, len, "tolerates %s:%s", doc->gpu_taints[t].key,
                         doc->gpu_taints[t].effect);
                return true;
            }
        }
    }
    /* globs, as the webhook configurations' matchConditions (runtimeClassName.startsWith):
     * the GPU Operator makes nvidia, nvidia-cdi and nvidia-legacy */
    rc = json_str(yyjson_obj_get(spec, "runtimeClassName"));
    if (rc != NULL && pod_glob_any(&doc->gpu_runtime_classes, rc)) {
        snprintf(why, len, "runtimeClassName %s", rc);
        return true;
    }
    /* NVIDIA_VISIBLE_DEVICES is not a way to aim at GPU nodes but a way around the device
     * plugin: rule_gpu_request refuses it by itself, in every container */
    return false;
}

/* A cdi.k8s.io/ annotation that asks the container runtime for NVIDIA devices by their Container
 * Device Interface names ("nvidia.com/gpu=all", comma-separated): containerd and CRI-O inject
 * them into the containers without the device plugin. Its key, or NULL; the value into val. */
static const char *cdi_nvidia_annotation(const struct ctx *c, const char **val)
{
    yyjson_val *ann = yyjson_obj_get(patch_get(c->object, c->t->meta_path), "annotations");
    const char *key;
    yyjson_val *v;

    OBJ_EACH(ann, key, v)
    {
        const char *s = json_str(v);

        /* each device is VENDOR/CLASS=NAME; NVIDIA's vendors are nvidia.com and its
         * subdomains (k8s.device-plugin.nvidia.com) */
        if (strncmp(key, "cdi.k8s.io/", 11) == 0 && s != NULL && strstr(s, "nvidia.com/")) {
            *val = s;
            return key;
        }
    }
    return NULL;
}

static bool node_has_gpu_label(yyjson_val *labels, void *arg)
{
    const struct policy_doc *doc = arg;
    const char *key;
    yyjson_val *v;

    OBJ_EACH(labels, key, v)
    {
        for (size_t l = 0; l < doc->n_gpu_node_labels; l++)
            if (label_matches(&doc->gpu_node_labels[l], key, json_str(v)))
                return true;
    }
    return false;
}

static bool node_res_is_gpu(const char *res, void *arg)
{
    const struct policy_doc *doc = arg;

    return pod_glob_any(&doc->gpu_resources, res);
}

/* -1 without a view or for a node it has not seen, 0 for a known node without GPUs, 1 for a
 * known GPU node (a label of gpu.nodeLabels, or it offers a resource of gpu.resources). */
static int node_kind(const struct ctx *c, const char *node)
{
    return c->view == NULL ? -1
                           : cluster_node_is(c->view, node, node_has_gpu_label, node_res_is_gpu,
                                             (void *)c->doc);
}

/* Whether the pod is pinned to a node the view knows is a GPU node: spec.nodeName, or a required
 * node affinity term whose matchFields put metadata.name In such a node. The scheduler is
 * skipped for nodeName, and the kubelet admits a pod on its node checking only NoExecute taints
 * (pkg/kubelet/lifecycle/predicate.go, generalFilter), so such a pod lands on the GPU node
 * whatever it tolerates. */
static bool pinned_to_gpu_node(const struct ctx *c, char *why, size_t len)
{
    yyjson_val *v = yyjson_obj_get(c->spec, "nodeName"), *term, *f, *val;
    size_t i, k, m;

    if (yyjson_is_str(v) && node_kind(c, json_str(v)) == 1) {
        snprintf(why, len, "nodeName %s, a GPU node", json_str(v));
        return true;
    }
    ARR_EACH (required_terms(c->spec), i, term) {
        ARR_EACH (yyjson_obj_get(term, "matchFields"), k, f) {
            const char *key = json_str(yyjson_obj_get(f, "key"));
            const char *op = json_str(yyjson_obj_get(f, "operator"));

            if (key == NULL || op == NULL || strcmp(key, "metadata.name") != 0 ||
                strcmp(op, "In") != 0)
                continue;
            ARR_EACH (yyjson_obj_get(f, "values"), m, val) {
                if (yyjson_is_str(val) && node_kind(c, json_str(val)) == 1) {
                    snprintf(why, len, "node affinity on node %s, a GPU node", json_str(val));
                    return true;
                }
            }
        }
    }
    return false;
}

/* A pod spec and its policy, for the callbacks of cluster_nodes_matching. */
struct steer {
    const struct policy_doc *doc;
    yyjson_val *spec;
};

static bool steer_gpu_label(yyjson_val *labels, void *arg)
{
    return node_has_gpu_label(labels, (void *)((const struct steer *)arg)->doc);
}

static bool steer_gpu_res(const char *res, void *arg)
{
    return node_res_is_gpu(res, (void *)((const struct steer *)arg)->doc);
}

static bool value_in(yyjson_val *vals, const char *v)
{
    yyjson_val *x;
    size_t i;

    ARR_EACH (vals, i, x) {
        if (v != NULL && yyjson_is_str(x) && strcmp(json_str(x), v) == 0)
            return true;
    }
    return false;
}

/* One node selector requirement against a value (NULL: the label or field is absent), as the
 * scheduler reads it (k8s.io/component-helpers/scheduling/corev1/nodeaffinity): an operator it
 * does not know, or a Gt/Lt that is not an integer, matches nothing. */
static bool requirement_holds(yyjson_val *req, const char *v)
{
    const char *op = json_str(yyjson_obj_get(req, "operator"));
    yyjson_val *vals = yyjson_obj_get(req, "values");
    char *end;
    long long have, want;

    if (op == NULL)
        return false;
    if (strcmp(op, "In") == 0)
        return value_in(vals, v);
    if (strcmp(op, "NotIn") == 0)
        return !value_in(vals, v);
    if (strcmp(op, "Exists") == 0)
        return v != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return v == NULL;
    if ((strcmp(op, "Gt") != 0 && strcmp(op, "Lt") != 0) || v == NULL ||
        yyjson_arr_size(vals) != 1 || !yyjson_is_str(yyjson_arr_get(vals, 0)))
        return false;
    have = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0')
        return false;
    want = strtoll(json_str(yyjson_arr_get(vals, 0)), &end, 10);
    if (*end != '\0')
        return false;
    return op[0] == 'G' ? have > want : have < want;
}

/* Whether the node (name, labels) satisfies the pod's nodeSelector and required node affinity:
 * every nodeSelector label, and one term (all of its expressions and fields; a term with
 * neither matches no node). */
static bool node_selected(const char *name, yyjson_val *labels, void *arg)
{
    yyjson_val *spec = ((const struct steer *)arg)->spec, *v, *terms, *term, *req;
    const char *key;
    size_t i, k;
    bool any = false;

    OBJ_EACH(yyjson_obj_get(spec, "nodeSelector"), key, v)
    {
        const char *have = json_str(yyjson_obj_get(labels, key));

        if (have == NULL || !yyjson_is_str(v) || strcmp(have, json_str(v)) != 0)
            return false;
    }
    terms = required_terms(spec);
    if (!yyjson_is_arr(terms) || yyjson_arr_size(terms) == 0)
        return true;
    ARR_EACH (terms, i, term) {
        yyjson_val *exprs = yyjson_obj_get(term, "matchExpressions");
        yyjson_val *fields = yyjson_obj_get(term, "matchFields");
        bool ok = yyjson_arr_size(exprs) + yyjson_arr_size(fields) > 0;

        ARR_EACH (exprs, k, req) {
            const char *lk = json_str(yyjson_obj_get(req, "key"));

            ok = ok && lk != NULL && requirement_holds(req, json_str(yyjson_obj_get(labels, lk)));
        }
        ARR_EACH (fields, k, req) {
            const char *fk = json_str(yyjson_obj_get(req, "key"));

            ok = ok && fk != NULL && strcmp(fk, "metadata.name") == 0 &&
                 requirement_holds(req, name);
        }
        any = any || ok;
    }
    return any;
}

/* Whether a pod that tolerates every taint is steered onto GPU nodes: its nodeSelector or
 * required node affinity matches only GPU nodes of a synced view (kubernetes.io/hostname:
 * gpu-0, say). A toleration of every taint keeps nothing off the GPU taint, so such a pod lands
 * on a GPU node as surely as one that names the GPU node label, and a CUDA image's
 * NVIDIA_VISIBLE_DEVICES=all then sees every GPU of it. */
static bool steered_to_gpu_nodes(const struct ctx *c, char *why, size_t len)
{
    struct steer st = {c->doc, c->spec};
    size_t matched, gpu;

    if (c->view == NULL || !cluster_synced(c->view) || !tolerates_all_gpu_taints(c->doc, c->spec))
        return false;
    if (yyjson_obj_size(yyjson_obj_get(c->spec, "nodeSelector")) == 0 &&
        yyjson_arr_size(required_terms(c->spec)) == 0)
        return false;
    cluster_nodes_matching(c->view, node_selected, steer_gpu_label, steer_gpu_res, &st, &matched,
                           &gpu);
    if (matched == 0 || gpu != matched)
        return false;
    snprintf(why, len,
             "it tolerates every taint, and its nodeSelector and node affinity match only GPU "
             "nodes (%zu of the cluster)",
             gpu);
    return true;
}

/* Whether the pod targets GPU nodes: targets_gpu_nodes, pinned to a known GPU node, or steered
 * onto GPU nodes of the view while it tolerates every taint. */
static bool pod_targets(const struct ctx *c, char *why, size_t len)
{
    return targets_gpu_nodes(c->doc, c->spec, why, len) || pinned_to_gpu_node(c, why, len) ||
           steered_to_gpu_nodes(c, why, len);
}

/* Whether the pod can land on a GPU node at all: it targets them; it names its node
 * (spec.nodeName, which bypasses the scheduler's taint checks) and that node is a GPU node or
 * one the view does not know; a matchFields affinity; it tolerates every taint; or the policy
 * lists no NoSchedule/NoExecute GPU taint (nothing keeps pods off GPU nodes). */
static bool reaches_gpu_nodes(const struct ctx *c, char *why, size_t len)
{
    const struct policy_doc *doc = c->doc;
    yyjson_val *spec = c->spec, *term, *v;
    size_t i;
    bool keeps_off = false;

    if (pod_targets(c, why, len))
        return true;
    v = yyjson_obj_get(spec, "nodeName");
    if (yyjson_is_str(v) && yyjson_get_len(v) > 0) {
        /* kubectl debug node/NAME: pinned to a node the view knows has no GPU, it cannot reach
         * one; without a view, or a node it has not seen, assume it can */
        int gpu = node_kind(c, json_str(v));

        if (gpu == 0)
            return false;
        snprintf(why, len, "nodeName %s%s", json_str(v), gpu == 1 ? ", a GPU node" : "");
        return true;
    }
    ARR_EACH (required_terms(spec), i, term) {
        if (yyjson_arr_size(yyjson_obj_get(term, "matchFields")) > 0) {
            snprintf(why, len, "node affinity on node fields");
            return true;
        }
    }
    if (tolerates_all_gpu_taints(doc, spec)) {
        snprintf(why, len, "tolerates every taint");
        return true;
    }
    for (size_t t = 0; t < doc->n_gpu_taints; t++)
        keeps_off = keeps_off || strcmp(doc->gpu_taints[t].effect, "PreferNoSchedule") != 0;
    if (!keeps_off)
        snprintf(why, len, "no taint keeps pods off GPU nodes");
    return !keeps_off;
}

/* ---- the rules ---- */

/* The document a patch's values are built in (only while the rule may patch). */
#define PATCH_OUT(c) ((c)->pt->out)

/* Refreshes what the rule looks at after operations: a new immutable copy of the working copy
 * (patch.h). -1 when out of memory. */
static int resync(struct ctx *c)
{
    int rc = patch_sync(c->pt);

    c->object = c->pt->doc;
    c->spec = patch_get(c->object, c->t->prefix);
    return rc;
}

/* value: a value of PATCH_OUT(c), or NULL when building it failed (then -1). The rule sees the
 * operation after resync() (add_at does both); a run of operations needs one resync. */
static int add_op(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
                  yyjson_mut_val *value)
{
    char path[PATCH_PATH_MAX];

    snprintf(path, sizeof(path), "%s%s", c->t->prefix, rel);
    for (size_t i = 0; i < n; i++) {
        if (patch_ptr_append(path, sizeof(path), tokens[i]) < 0)
            return -1; /* value stays unused in PATCH_OUT(c), freed with it */
    }
    return patch_add(c->pt, path, value);
}

static int add_at(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
                  yyjson_mut_val *value)
{
    int rc = add_op(c, rel, tokens, n, value);

    return resync(c) < 0 ? -1 : rc;
}

/* Adds resources.{limits,requests}[res] = count to the first container. */
static int add_gpu_request(struct ctx *c, const char *res, long long count)
{
    yyjson_val *first = yyjson_arr_get(yyjson_obj_get(c->spec, "containers"), 0);
    yyjson_val *resources = yyjson_obj_get(first, "resources");
    static const char *const lists[] = {"limits", "requests"};
    char qty[32];

    snprintf(qty, sizeof(qty), "%lld", count);
    if (!yyjson_is_obj(resources))
        return add_at(c, "/containers/0/resources", NULL, 0,
                      json_pack(PATCH_OUT(c), "{s:{s:s}, s:{s:s}}", "limits", res, qty, "requests",
                                res, qty));
    /* resources is the object before these two operations: they add to it, it stays one */
    for (size_t i = 0; i < 2; i++) {
        const char *path[] = {lists[i], res};

        if (yyjson_is_obj(yyjson_obj_get(resources, lists[i]))) {
            if (add_op(c, "/containers/0/resources", path, 2,
                       yyjson_mut_strcpy(PATCH_OUT(c), qty)) < 0)
                return resync(c), -1;
        } else if (add_op(c, "/containers/0/resources", path, 1,
                          json_pack(PATCH_OUT(c), "{s:s}", res, qty)) < 0) {
            return resync(c), -1;
        }
    }
    return resync(c);
}

/*
 * Whether a container (or init container) asks for devices through Dynamic Resource Allocation:
 * its resources.claims name an entry of spec.resourceClaims. NVIDIA's DRA driver serves GPUs so
 * (device classes gpu.nvidia.com, mig.nvidia.com). The view holds no ResourceClaim or
 * ResourceClaimTemplate, so the claim's device class is not known here: a claim is taken as a
 * GPU request by the gpu-request rule (it asks a driver for its devices, not the node for all).
 */
static bool claims_devices(yyjson_val *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_val *c, *cl, *pc;
    size_t i, k, m;

    for (size_t l = 0; l < 2; l++) {
        ARR_EACH (yyjson_obj_get(spec, lists[l]), i, c) {
            ARR_EACH (yyjson_obj_get(yyjson_obj_get(c, "resources"), "claims"), k, cl) {
                const char *name = json_str(yyjson_obj_get(cl, "name"));

                ARR_EACH (yyjson_obj_get(spec, "resourceClaims"), m, pc) {
                    const char *n = json_str(yyjson_obj_get(pc, "name"));

                    if (name != NULL && n != NULL && strcmp(name, n) == 0)
                        return true;
                }
            }
        }
    }
    return false;
}

/*
 * Ways to reach GPUs around the device plugin, judged per container. A container gets GPUs
 * only through its own request (or, for an init container, the devices the kubelet's device
 * manager allocates to it): a GPU request in one container opens nothing for the others, and a
 * GPU pod lands on a GPU node, where each of its other containers can take every GPU by one of
 * these. So each is refused in every container (init containers too) of a pod that requests
 * GPUs or can reach GPU nodes, and a user-set NVIDIA_VISIBLE_DEVICES in every pod.
 */
static void bypasses(struct ctx *c, const struct rule *ru, const struct pod_demand *dm, bool dra)
{
    char why[300], value[64 * 6 + 32];
    yyjson_val *x;
    const char *hp, *key, *val = NULL;
    bool reachable = dm->n > 0 || dra;

    if (dm->n > 0)
        snprintf(why, sizeof(why), "it requests %s", dm->r[0].name);
    else if (dra)
        snprintf(why, sizeof(why), "it claims devices through resourceClaims");
    else
        reachable = reaches_gpu_nodes(c, why, sizeof(why));
    if (ru->deny_visible_devices_env &&
        (x = pod_find_container(c->spec, pod_sets_visible_devices))) {
        pod_visible_devices_value(x, value, sizeof(value));
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" sets NVIDIA_VISIBLE_DEVICES%s, which the NVIDIA runtime "
                    "honours around the device plugin (it can expose every GPU of the node); "
                    "remove the variable (or set it to void), and request "
                    "resources.limits[\"%s\"] where the container needs a GPU",
                    container_name(x), value, ru->default_resource);
    }
    if (!reachable)
        return;
    if (ru->deny_privileged && (x = pod_find_container(c->spec, pod_is_privileged)))
        add_problem(c->problem, sizeof(c->problem),
                    "privileged container \"%s\" can reach GPU devices (a privileged container "
                    "sees all of the node's /dev, whatever it requests) and the pod can reach GPU "
                    "nodes (%s); drop securityContext.privileged and add only the capabilities it "
                    "needs",
                    container_name(x), why);
    if (ru->deny_visible_devices_env && ru->deny_env_from &&
        (x = pod_find_container(c->spec, pod_has_env_from)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" can reach GPU nodes (%s) and takes its environment from "
                    "envFrom, which may set NVIDIA_VISIBLE_DEVICES or CUDA_VERSION unseen; give "
                    "each envFrom entry a prefix (e.g. APP_) or set its variables with env",
                    container_name(x), why);
    if (ru->deny_visible_devices_env && (x = pod_find_container(c->spec, pod_cuda_env_unsafe)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so that the "
                    "NVIDIA runtime takes it for a legacy CUDA image, which gets every GPU of the "
                    "node without NVIDIA_VISIBLE_DEVICES, and the pod can reach GPU nodes (%s); "
                    "remove CUDA_VERSION (or set NVIDIA_REQUIRE_CUDA, e.g. cuda>=12.0), or set "
                    "NVIDIA_VISIBLE_DEVICES=void in that container",
                    container_name(x), why);
    if (ru->deny_dev_host_path && (hp = pod_dev_host_path(c->spec)))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume \"%s\" exposes GPU device nodes to every container that "
                    "mounts it, around the device plugin, and the pod can reach GPU nodes (%s); "
                    "remove the volume",
                    hp, why);
    if (ru->deny_dev_host_path && (x = pod_find_container(c->spec, pod_mounts_device_list)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" mounts a volume at %s, where the NVIDIA runtime hook reads "
                    "the devices to hand over (a volume-mount device list, around the device "
                    "plugin), and the pod can reach GPU nodes (%s); mount it elsewhere",
                    container_name(x), pod_device_list_mount(x), why);
    if (ru->deny_dev_host_path && (hp = pod_runtime_socket_host_path(c->spec)))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume \"%s\" reaches the container runtime's socket, through "
                    "which a container can start a privileged container with every GPU of the "
                    "node, and the pod can reach GPU nodes (%s); remove the volume",
                    hp, why);
    if (ru->deny_dev_host_path && pod_dev_null_host_path(c->spec))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume /dev/null is the device plugin's placeholder for a "
                    "volume-mount device list entry, and the pod can reach GPU nodes (%s); "
                    "remove the volume (use an emptyDir where a container needs an empty file)",
                    why);
    if (ru->deny_dev_host_path && (key = cdi_nvidia_annotation(c, &val))) {
        char shown[64 + 4];

        text_excerpt(val, strlen(val), 64, shown, sizeof(shown));
        add_problem(c->problem, sizeof(c->problem),
                    "annotation %s: %s asks the container runtime for NVIDIA devices around the "
                    "device plugin, and the pod can reach GPU nodes (%s); remove it and request "
                    "resources.limits[\"%s\"]",
                    key, shown, why, ru->default_resource);
    }
}

/*
 * What a pod that targets GPU nodes but requests no GPU resource of the policy is told. When the
 * rule's default resource is not one of the policy's (a Deny rule of a policy for MIG or shared
 * GPUs only), the policy's resources are named instead; and when the pod asks for an NVIDIA
 * resource that the policy does not count, that is said, since the pod does request a GPU, of
 * another kind of GPU node: gpu.pools of one policy describes both.
 */
static void no_gpu_text(struct ctx *c, const struct rule *ru, const char *container,
                        const char *why, char *out, size_t len)
{
    struct pod_demand all;
    struct diag d;
    char list[256] = "";
    const char *other = NULL;

    if (pod_glob_any(&c->doc->gpu_resources, ru->default_resource)) {
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) but requests no %s; add "
                 "resources.limits[\"%s\"]",
                 container, why, ru->default_resource, ru->default_resource);
        return;
    }
    for (size_t i = 0, at = 0; i < c->doc->gpu_resources.n && at < sizeof(list); i++)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "",
                               c->doc->gpu_resources.v[i]);
    diag_clear(&d);
    if (pod_gpu_demand(c->spec, NULL, &all, &d) == 0)
        for (size_t i = 0; i < all.n && other == NULL; i++)
            if (strncmp(all.r[i].name, "nvidia.com/", 11) == 0)
                other = all.r[i].name;
    if (other != NULL)
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) and the pod requests %s, which is not "
                 "a GPU resource of policy %s (%s); describe each kind of GPU node as a pool in "
                 "gpu.pools of one policy",
                 container, why, other, c->doc->name, list);
    else
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) but requests none of this policy's "
                 "GPU resources (%s); add one to resources.limits",
                 container, why, list);
}

static enum verdict rule_gpu_request(struct ctx *c, const struct rule *ru)
{
    struct pod_demand dm;
    struct diag d;
    char why[300];
    yyjson_val *first = yyjson_arr_get(yyjson_obj_get(c->spec, "containers"), 0);
    bool fixed = false, dra = claims_devices(c->spec);

    diag_clear(&d);
    if (spec_demand(c, &dm, &d) < 0) {
        add_problem(c->problem, sizeof(c->problem), "%s", d.msg);
        return V_PROBLEM;
    }
    if (dm.n == 0 && !dra && pod_targets(c, why, sizeof(why))) {
        char desc[MSG_MAX];

        no_gpu_text(c, ru, container_name(first), why, desc, sizeof(desc));
        if (c->fix && first != NULL &&
            add_gpu_request(c, ru->default_resource, (long long)ru->default_count) == 0) {
            add_problem(c->fixable, sizeof(c->fixable), "%s", desc);
            add_text(c->fixed, sizeof(c->fixed), "added %lld %s to container \"%s\"",
                     (long long)ru->default_count, ru->default_resource, container_name(first));
            fixed = true;
            spec_demand(c, &dm, &d);
        } else {
            add_problem(c->problem, sizeof(c->problem), "%s", desc);
        }
    }
    bypasses(c, ru, &dm, dra);
    for (size_t i = 0; ru->max_per_pod > 0 && i < dm.n; i++) {
        if (dm.r[i].milli > ru->max_per_pod * 1000)
            add_problem(c->problem, sizeof(c->problem),
                        "pod requests %lld %s, more than the maximum of %lld per pod",
                        (long long)(dm.r[i].milli / 1000), dm.r[i].name,
                        (long long)ru->max_per_pod);
    }
    return c->problem[0] ? V_PROBLEM : fixed ? V_FIXED : V_OK;
}

/* Whether the old object already had an ephemeral container of this name. */
static bool ephemeral_existed(const struct review *r, const char *name)
{
    yyjson_val *old = patch_get(r->old_object, "/spec/ephemeralContainers"), *c;
    size_t i;

    ARR_EACH (old, i, c) {
        if (strcmp(container_name(c), name) == 0)
            return true;
    }
    return false;
}

/* pods/ephemeralcontainers: a debug container joins a pod already on its node; it cannot ask
 * the device plugin for anything, so one that sets NVIDIA_VISIBLE_DEVICES (or may, through
 * envFrom) or runs privileged would see every GPU of the node. */
static enum verdict rule_ephemeral(struct ctx *c, const struct rule *ru)
{
    yyjson_val *list = yyjson_obj_get(c->spec, "ephemeralContainers"), *x;
    yyjson_val *node = yyjson_obj_get(c->spec, "nodeName");
    size_t i;

    /* kubectl debug --profile=sysadmin on a node the view knows has no GPU: nothing to reach */
    if (yyjson_is_str(node) && node_kind(c, json_str(node)) == 0)
        return V_OK;
    ARR_EACH (list, i, x) {
        if (ephemeral_existed(c->r, container_name(x)))
            continue;
        if (ru->deny_visible_devices_env &&
            (pod_sets_visible_devices(x) || (ru->deny_env_from && pod_has_env_from(x)) ||
             pod_cuda_env_unsafe(x)))
            add_problem(
                c->problem, sizeof(c->problem),
                "ephemeral container \"%s\" sets NVIDIA_VISIBLE_DEVICES%s, which would "
                "expose every GPU of the node; debug without it",
                container_name(x),
                pod_sets_visible_devices(x) ? ""
                : (ru->deny_env_from && pod_has_env_from(x))
                    ? " (or may, via envFrom)"
                    : " in effect (CUDA_VERSION without NVIDIA_REQUIRE_CUDA makes a legacy CUDA "
                      "image, which gets \"all\")");
        if (ru->deny_privileged && pod_is_privileged(x))
            add_problem(c->problem, sizeof(c->problem),
                        "privileged ephemeral container \"%s\" can reach every GPU of the node; "
                        "debug without privileged (e.g. kubectl debug --profile=general)",
                        container_name(x));
    }
    return c->problem[0] ? V_PROBLEM : V_OK;
}

static bool requests_gpus(struct ctx *c)
{
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    return spec_demand(c, &dm, &d) == 0 && dm.n > 0;
}

/* The pools the pod's GPU demand draws on (pool.h); 0 without pools. */
static unsigned pod_pools(struct ctx *c)
{
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    if (c->doc->n_pools == 0 || spec_demand(c, &dm, &d) < 0)
        return 0;
    return pool_set(c->doc, &dm);
}

static bool view_synced(const struct ctx *c)
{
    return c->view != NULL && cluster_synced(c->view);
}

/* The class called name, into *out (its strings borrowed), or NULL when unknown. A synced
 * cluster view is the truth (the apiserver's Priority plugin checks the patch against the
 * class as it is); the policy's list stands in without one. */
static const struct priority_class *find_class(const struct ctx *c, const char *name,
                                               struct priority_class *out)
{
    int64_t value;
    bool preempt;

    if (view_synced(c)) {
        if (!cluster_priority_class(c->view, name, &value, &preempt))
            return NULL;
        out->name = (char *)name;
        out->value = (int32_t)value;
        out->preemption_policy = preempt ? "PreemptLowerPriority" : "Never";
        return out;
    }
    for (size_t i = 0; i < c->doc->n_classes; i++) {
        if (strcmp(c->doc->classes[i].name, name) == 0)
            return &c->doc->classes[i];
    }
    return NULL;
}

/* Whether a class the pod names can be said not to exist: only a synced view of the cluster
 * knows every class (a globalDefault class, or any other the cluster has, is not in the
 * policy's list). */
static bool classes_known(const struct ctx *c)
{
    return view_synced(c);
}

/* What a denial that no class of a name exists adds when the view was loaded from a snapshot
 * that held no PriorityClass at all: then the class may well exist, and the snapshot is
 * incomplete (a cluster always has the system classes, cluster.h). */
static const char *classes_missing(const struct ctx *c)
{
    if (c->view != NULL && (cluster_snapshot_missing(c->view) & (1u << CLUSTER_PRIORITYCLASSES)))
        return " (the cluster view is a snapshot without PriorityClasses: list them in it too, "
               "kubectl get priorityclasses -o json)";
    return "";
}

static bool is_system_class(const char *name)
{
    return strcmp(name, "system-cluster-critical") == 0 ||
           strcmp(name, "system-node-critical") == 0;
}

static const char *default_class_for(const struct rule *ru, const char *ns)
{
    for (size_t i = 0; i < ru->n_ns_defaults; i++) {
        if (fnmatch(ru->ns_defaults[i].ns_glob, ns, 0) == 0)
            return ru->ns_defaults[i].value;
    }
    return ru->default_class;
}

/* NULL when allowed; else the allowed list's entry that refuses it. */
static const struct ns_list *class_refused(const struct rule *ru, const char *ns, const char *cls)
{
    for (size_t i = 0; i < ru->n_allowed; i++) {
        if (fnmatch(ru->allowed[i].ns_glob, ns, 0) != 0)
            continue;
        return pod_glob_any(&ru->allowed[i].values, cls) ? NULL : &ru->allowed[i];
    }
    return NULL;
}

static enum verdict set_class(struct ctx *c, const struct priority_class *pc)
{
    /* The Priority plugin resolves spec.priority and spec.preemptionPolicy from the class, and
     * refuses a pod whose values disagree with it, also when the chain is reinvoked after this
     * patch. A Pod has them already (the plugin ran before the webhook), so they are set to the
     * class's; a template gets them only when it already carries them. */
    bool priority = c->t->is_pod || yyjson_obj_get(c->spec, "priority") != NULL;
    bool preemption = c->t->is_pod || yyjson_obj_get(c->spec, "preemptionPolicy") != NULL;

    if (add_op(c, "/priorityClassName", NULL, 0, yyjson_mut_strcpy(PATCH_OUT(c), pc->name)) < 0 ||
        (priority &&
         add_op(c, "/priority", NULL, 0, yyjson_mut_sint(PATCH_OUT(c), pc->value)) < 0) ||
        (preemption && add_op(c, "/preemptionPolicy", NULL, 0,
                              yyjson_mut_strcpy(PATCH_OUT(c), pc->preemption_policy)) < 0)) {
        resync(c);
        return V_PROBLEM;
    }
    if (resync(c) < 0)
        return V_PROBLEM;
    add_text(c->fixed, sizeof(c->fixed), "set priorityClassName %s (priority %d, %s)", pc->name,
             (int)pc->value, pc->preemption_policy);
    return V_FIXED;
}

static enum verdict rule_priority_class(struct ctx *c, const struct rule *ru)
{
    const char *cls = json_str(yyjson_obj_get(c->spec, "priorityClassName"));
    const char *want;
    const struct priority_class *pc;
    const struct ns_list *refused;
    struct priority_class found;
    char *target = c->problem;

    if (!requests_gpus(c))
        return V_OK;
    if (cls == NULL || cls[0] == '\0') {
        want = default_class_for(ru, c->r->ns);
        pc = want ? find_class(c, want, &found) : NULL;
        if (want == NULL) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod has no priorityClassName, so it cannot preempt anything; set "
                        "spec.priorityClassName");
            return V_PROBLEM;
        }
        if (pc == NULL) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod has no priorityClassName, and the default class \"%s\" is not a "
                        "known PriorityClass%s; set spec.priorityClassName",
                        want, classes_missing(c));
            return V_PROBLEM;
        }
        if (c->fix && !class_refused(ru, c->r->ns, pc->name) && set_class(c, pc) == V_FIXED)
            target = c->fixable;
        add_problem(target, MSG_MAX,
                    "GPU pod has no priorityClassName, so it cannot preempt anything; set "
                    "spec.priorityClassName: %s",
                    pc->name);
        return target == c->fixable ? V_FIXED : V_PROBLEM;
    }
    if (classes_known(c) && !is_system_class(cls) && find_class(c, cls, &found) == NULL) {
        add_problem(c->problem, sizeof(c->problem),
                    "priorityClassName \"%s\" is not a known PriorityClass%s", cls,
                    classes_missing(c));
        return V_PROBLEM;
    }
    refused = class_refused(ru, c->r->ns, cls);
    if (refused != NULL) {
        char list[256] = "";

        for (size_t i = 0, n = 0; i < refused->values.n && n < sizeof(list); i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
                                  refused->values.v[i]);
        add_problem(c->problem, sizeof(c->problem),
                    "priorityClassName \"%s\" is not allowed in namespace \"%s\" (allowed: %s)",
                    cls, c->r->ns, list);
        return V_PROBLEM;
    }
    return V_OK;
}

static yyjson_mut_val *toleration_for(yyjson_mut_doc *doc, const struct taint *t)
{
    if (t->value == NULL)
        return json_pack(doc, "{s:s, s:s, s:s}", "key", t->key, "operator", "Exists", "effect",
                         t->effect);
    return json_pack(doc, "{s:s, s:s, s:s, s:s}", "key", t->key, "operator", "Equal", "value",
                     t->value, "effect", t->effect);
}

static enum verdict rule_tolerations(struct ctx *c, const struct rule *ru)
{
    const struct taint *missing[32];
    struct taint taints[32];
    size_t n, nt;
    unsigned pools;
    yyjson_mut_val *arr, *tol;
    int rc = 0;
    char names[512] = "", desc[MSG_MAX];

    (void)ru;
    if (!requests_gpus(c))
        return V_OK;
    pools = pod_pools(c);
    if (pools == 0) {
        n = untolerated(c->doc->gpu_taints, c->doc->n_gpu_taints, c->spec, missing, 32);
    } else {
        nt = pool_taints(c->doc, pools, taints, 32);
        n = untolerated(taints, nt > 32 ? 32 : nt, c->spec, missing, 32);
    }
    if (n == 0)
        return V_OK;
    for (size_t i = 0; i < n; i++)
        add_text(names, sizeof(names), "%s%s%s:%s", missing[i]->key, missing[i]->value ? "=" : "",
                 missing[i]->value ? missing[i]->value : "", missing[i]->effect);
    snprintf(desc, sizeof(desc),
             "GPU pod does not tolerate the GPU node taint %s, so it cannot be scheduled on GPU "
             "nodes; add a toleration (key %s, operator %s, effect %s)",
             names, missing[0]->key, missing[0]->value ? "Equal" : "Exists", missing[0]->effect);
    if (c->fix) {
        if (!yyjson_is_arr(yyjson_obj_get(c->spec, "tolerations"))) {
            arr = yyjson_mut_arr(PATCH_OUT(c));
            for (size_t i = 0; arr != NULL && i < n; i++) {
                tol = toleration_for(PATCH_OUT(c), missing[i]);
                if (tol == NULL || !yyjson_mut_arr_append(arr, tol))
                    arr = NULL;
            }
            rc = add_at(c, "/tolerations", NULL, 0, arr);
        } else {
            for (size_t i = 0; i < n && rc == 0; i++)
                rc = add_op(c, "/tolerations/-", NULL, 0, toleration_for(PATCH_OUT(c), missing[i]));
            if (resync(c) < 0)
                rc = -1;
        }
        if (rc == 0) {
            add_problem(c->fixable, sizeof(c->fixable), "%s", desc);
            add_text(c->fixed, sizeof(c->fixed), "added tolerations for %s", names);
            return V_FIXED;
        }
    }
    add_problem(c->problem, sizeof(c->problem), "%s", desc);
    return V_PROBLEM;
}

static bool pod_offers(const char *res, void *arg)
{
    return pod_demand_get(arg, res) > 0;
}

/*
 * Which of the n labels the patch may add, into keep: with a synced view that has nodes offering
 * one of the pod's GPU resources, only the labels one of them carries (a selector no such node
 * carries would leave the pod Pending forever: GKE's and the bare device plugin's nodes have no
 * nvidia.com/gpu.present); without a view, or with none such node yet (they may come from a
 * node autoscaler), all. False, with the reason in c->note, when none is left. keep has room
 * for SELECTOR_LABELS_MAX labels: past that many, every label with a value is kept unchecked.
 */
static bool labels_carried(struct ctx *c, const struct node_label *labels, size_t n, bool *keep)
{
    struct pod_demand dm;
    struct diag d;
    char names[256] = "", want[512] = "";
    bool any = false, offered = false;

    for (size_t i = 0; i < n && i < SELECTOR_LABELS_MAX; i++)
        keep[i] = labels[i].value != NULL;
    if (!view_synced(c) || n > SELECTOR_LABELS_MAX)
        return true;
    diag_clear(&d);
    if (spec_demand(c, &dm, &d) < 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        int rc;

        if (!keep[i])
            continue;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
        rc = cluster_offering_nodes_carry(c->view, pod_offers, &dm, labels[i].key, labels[i].value);
        offered = offered || rc >= 0;
        keep[i] = rc == 1;
        any = any || keep[i];
    }
    if (!offered) {
        for (size_t i = 0; i < n; i++)
            keep[i] = labels[i].value != NULL;
        return true;
    }
    if (any || want[0] == '\0')
        return true;
    for (size_t i = 0; i < dm.n; i++)
        add_text(names, sizeof(names), "%s", dm.r[i].name);
    snprintf(c->note, sizeof(c->note),
             "no nodeSelector added: no node offering %s carries %s, so the selector would leave "
             "the pod Pending; add a label those nodes carry to gpu.nodeLabels",
             names, want);
    return false;
}

/*
 * labels_carried() for a GPU pool's labels, which select its nodes together: with a synced view
 * that has nodes offering one of the pod's GPU resources, one of them must carry every label
 * with a value, or the selector would leave the pod Pending (nothing is patched, and the note
 * says why); otherwise every label with a value is kept.
 */
static bool pool_carried(struct ctx *c, const struct node_label *labels, size_t n, const char *pool,
                         bool *keep)
{
    const char *keys[SELECTOR_LABELS_MAX], *values[SELECTOR_LABELS_MAX];
    char res[256] = "", want[512] = "";
    struct pod_demand dm;
    struct diag d;
    size_t m = 0;
    int rc;

    for (size_t i = 0; i < n && i < SELECTOR_LABELS_MAX; i++) {
        keep[i] = labels[i].value != NULL;
        if (!keep[i])
            continue;
        keys[m] = labels[i].key;
        values[m++] = labels[i].value;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
    }
    diag_clear(&d);
    if (!view_synced(c) || m == 0 || spec_demand(c, &dm, &d) < 0)
        return true;
    rc = cluster_offering_nodes_carry_all(c->view, pod_offers, &dm, keys, values, m);
    if (rc != 0)
        return true;
    for (size_t i = 0; i < dm.n; i++)
        add_text(res, sizeof(res), "%s", dm.r[i].name);
    snprintf(c->note, sizeof(c->note),
             "no nodeSelector added: no node offering %.120s carries all of GPU pool %.64s's "
             "labels %.200s (the pod would stay Pending); fix the pool's nodeLabels",
             res, pool, want);
    return false;
}

/* Whether label i goes into the patch (labels_carried). */
static bool kept(const bool *keep, const struct node_label *labels, size_t i)
{
    return i < SELECTOR_LABELS_MAX ? keep[i] : labels[i].value != NULL;
}

static enum verdict rule_node_selector(struct ctx *c, const struct rule *ru)
{
    const struct node_label *labels = ru->n_labels ? ru->labels : c->doc->gpu_node_labels;
    size_t n = ru->n_labels ? ru->n_labels : c->doc->n_gpu_node_labels;
    yyjson_val *sel = yyjson_obj_get(c->spec, "nodeSelector");
    char why[300], want[512] = "", desc[MSG_MAX], names[256] = "";
    const char *have;
    bool conflict = false, keep[SELECTOR_LABELS_MAX];
    struct node_label pool[SELECTOR_LABELS_MAX];
    unsigned pools;
    yyjson_mut_val *obj;
    int rc = 0;

    if (!requests_gpus(c))
        return V_OK;
    /* with gpu.pools: the labels of the pool whose resource the pod requests */
    pools = pod_pools(c);
    if (pools != 0) {
        pool_names(c->doc, pools, names, sizeof(names));
        if (pool_labels_clash(c->doc, pools)) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod requests resources of the GPU pools %s, whose nodeLabels differ, "
                        "so no node is in all of them; request the resources of one pool",
                        names);
            return V_PROBLEM;
        }
        n = pool_labels(c->doc, pools, pool, SELECTOR_LABELS_MAX);
        if (n > SELECTOR_LABELS_MAX)
            n = SELECTOR_LABELS_MAX;
        labels = pool;
    }
    if (confined(labels, n, c->spec, why, sizeof(why)))
        return V_OK;
    if (!(pools != 0 ? pool_carried(c, labels, n, names, keep)
                     : labels_carried(c, labels, n, keep)))
        return V_OK;
    for (size_t i = 0; i < n; i++) {
        if (!kept(keep, labels, i))
            continue;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
        have = json_str(yyjson_obj_get(sel, labels[i].key));
        conflict = conflict || (have != NULL && strcmp(have, labels[i].value) != 0);
    }
    if (want[0] == '\0') {
        add_problem(c->problem, sizeof(c->problem),
                    "GPU pod is not confined to GPU nodes; add a nodeSelector on a GPU node label");
        return V_PROBLEM;
    }
    snprintf(desc, sizeof(desc), "GPU pod is not confined to %s%s%s; add nodeSelector %s",
             pools != 0 ? "the nodes of GPU pool " : "GPU nodes", names,
             conflict ? " (its nodeSelector names other nodes)" : "", want);
    if (c->fix && !conflict) {
        if (!yyjson_is_obj(sel)) {
            obj = yyjson_mut_obj(PATCH_OUT(c));
            for (size_t i = 0; obj != NULL && i < n; i++) {
                if (kept(keep, labels, i) &&
                    json_mut_set(PATCH_OUT(c), obj, labels[i].key,
                                 yyjson_mut_strcpy(PATCH_OUT(c), labels[i].value)) < 0)
                    obj = NULL;
            }
            rc = add_at(c, "/nodeSelector", NULL, 0, obj);
        } else {
            for (size_t i = 0; i < n && rc == 0; i++) {
                if (kept(keep, labels, i))
                    rc = add_op(c, "/nodeSelector", (const char *const[]){labels[i].key}, 1,
                                yyjson_mut_strcpy(PATCH_OUT(c), labels[i].value));
            }
            if (resync(c) < 0)
                rc = -1;
        }
        if (rc == 0) {
            add_problem(c->fixable, sizeof(c->fixable), "%s", desc);
            add_text(c->fixed, sizeof(c->fixed), "added nodeSelector %s", want);
            return V_FIXED;
        }
    }
    add_problem(c->problem, sizeof(c->problem), "%s", desc);
    return V_PROBLEM;
}

/* ---- the decision ---- */

typedef enum verdict (*rule_fn)(struct ctx *c, const struct rule *ru);

/* Sized by the enum: a type added without its function is a NULL here, never past the end;
 * run_rule() refuses a NULL for any type but capacity, which capacity_pass() judges. */
static const rule_fn rule_fns[RULE_TYPES] = {
    [RULE_GPU_REQUEST] = rule_gpu_request,
    [RULE_PRIORITY_CLASS] = rule_priority_class,
    [RULE_TOLERATIONS] = rule_tolerations,
    [RULE_NODE_SELECTOR] = rule_node_selector,
    [RULE_CAPACITY] = NULL, /* judged by its own pass: capacity_pass() */
};

/* One review's evaluation. On /mutate two working copies are kept: "real" carries only what
 * enforcing rules patch (the patch that is sent), "pred" what every Mutate rule would patch if it
 * were enforced, so that Warn and Audit report what enforcing would really do, each rule seeing
 * the earlier rules' would-be patches. pred is made only when a rule needs it. On /validate
 * there is no real (nothing is patched there), and pred is made by predict() for the capacity
 * rules that report rather than enforce. */
struct run {
    const struct review *r;
    const struct target *t;
    const struct target *found; /* the object's pod spec, also when t is NULL because the rules
                                   have nothing to judge in this review (an unchanged template) */
    bool mutating;
    bool audit_only;
    struct patch real;
    struct patch pred;
    struct cluster *view; /* NULL: no cluster configured */
    char subject[320];    /* what a denial names when no pod target does ("deployments ml/x") */
    /* the capacity reservation to make once the review is known to be allowed */
    int64_t reserve_pods;
    int64_t reserve_s;
    int64_t reserve_headroom;
    const struct strlist *reserve_globs;
    yyjson_val *reserve_spec; /* the template the reservation is placed for */
    struct decision *dec;
    char deny[4 * MSG_MAX]; /* the joined denial message */
    int n_deny;
    yyjson_mut_doc *tdoc;  /* borrowed: the document of trace */
    yyjson_mut_val *trace; /* borrowed: the caller's per-rule trace, or NULL */
    unsigned findings;     /* decision lines so far: a rule that adds none passed */
    struct demand_memo memo;
    /* the capacity rule being judged: its strongest finding (enum cap_severity, -1 none) and
     * that finding's first sentence, for the trace */
    int cap_worst;
    char cap_why[MSG_MAX];
};

/* One rule's outcome in the caller's trace (gpuadmit check and test), when it asked for one. */
static void trace_rule(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                       enum rule_outcome outcome, const char *message)
{
    yyjson_mut_val *e;

    if (rn->trace == NULL)
        return;
    e = json_pack(rn->tdoc, "{s:s, s:s, s:s, s:s, s:s, s:s}", "stage",
                  rn->mutating ? "mutate" : "validate", "rule", ru->name, "type",
                  policy_rule_type_name(ru->type), "enforcement", policy_enforcement_name(eff),
                  "outcome", policy_outcome_name(outcome), "message", message);
    /* a trace entry that cannot be made is left out (out of memory), as before */
    if (e != NULL)
        yyjson_mut_arr_append(rn->trace, e);
}

/* The decision log line of one finding f, its note for the metrics (counted means the same as
 * logged) and its trace entry. The line's outcome is the finding's words ("denied", "would
 * patch", ...), "warned" for any finding under Warn, or label when given (an Audit report's
 * own). The kind is the review's (Pod, Deployment, Scale, HorizontalPodAutoscaler). */
static void log_decision(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                         enum finding f, const char *label, const char *message)
{
    const struct review *r = rn->r;
    const char *outcome = label                 ? label
                          : eff == ENFORCE_WARN ? policy_finding_text(FINDING_WARN)
                                                : policy_finding_text(f);
    char text[MSG_MAX + 200];

    /* a note that cannot be kept costs a count, never the decision */
    (void)decision_note(rn->dec, ru, eff, f);
    rn->findings++;
    if (rn->trace != NULL) {
        if (eff == ENFORCE_AUDIT)
            snprintf(text, sizeof(text), "%s: %s", outcome, message);
        trace_rule(rn, ru, eff, policy_finding_outcome(f, eff),
                   eff == ENFORCE_AUDIT ? text : message);
    }
    log_event(LOG_INFO, "decision", "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "uid",
              r->uid, "kind", r->kind.kind, "namespace", r->ns, "name", r->name, "operation",
              review_op_name(r->op), "user", r->username, "rule", ru->name, "enforcement",
              policy_enforcement_name(eff), "outcome", outcome, "message", message);
}

static void record_deny(struct run *rn, const struct rule *ru, const char *problems)
{
    char what[MSG_MAX + 64], text[MSG_MAX + 160];

    join_problems(problems, what, sizeof(what));
    snprintf(text, sizeof(text), "%s[%s] %s", rn->n_deny ? "; " : "", ru->name, what);
    strncat(rn->deny, text, sizeof(rn->deny) - strlen(rn->deny) - 1);
    rn->n_deny++;
    log_decision(rn, ru, ENFORCE_ENFORCE, FINDING_DENY, NULL, what);
}

/* A Warn or Audit finding f (would_patch, would_deny, or for capacity under Audit would_warn)
 * and the problems; label words it (the finding's own words when NULL). */
static void record_report(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                          enum finding f, const char *label, const char *problems)
{
    char what[MSG_MAX + 64], body[MSG_MAX + 96], text[MSG_MAX + 160];
    const char *p = problems, *end;

    if (label == NULL)
        label = policy_finding_text(f);
    join_problems(problems, what, sizeof(what));
    snprintf(body, sizeof(body), "%s: %s", label, what);
    if (eff != ENFORCE_WARN) {
        decision_annotate(rn->dec, ru->name, body);
        log_decision(rn, ru, eff, f, label, what);
        return;
    }
    for (; *p; p = *end ? end + 1 : end) {
        end = strchr(p, PROBLEM_SEP);
        if (end == NULL)
            end = p + strlen(p);
        snprintf(text, sizeof(text), "gpuadmit [%s]: %s: %.*s", ru->name, label, (int)(end - p), p);
        decision_warn(rn->dec, text);
    }
    log_decision(rn, ru, eff, f, NULL, body);
}

static enum verdict run_rule(struct run *rn, const struct policy_doc *doc, const struct rule *ru,
                             struct patch *pt, struct ctx *c)
{
    memset(c, 0, sizeof(*c));
    c->view = rn->view;
    c->doc = doc;
    c->r = rn->r;
    c->t = rn->t;
    c->pt = pt;
    c->memo = &rn->memo;
    c->fix = pt != NULL;
    /* a rule that stopped half way through a run of operations left them unsynced */
    if (pt != NULL && patch_sync(pt) < 0)
        return V_PROBLEM;
    c->object = pt ? pt->doc : rn->r->object;
    c->spec = patch_get(c->object, rn->t->prefix);
    if (!yyjson_is_obj(c->spec))
        return V_OK;
    if (rn->t->ephemeral)
        return ru->type == RULE_GPU_REQUEST ? rule_ephemeral(c, ru) : V_OK;
    if ((unsigned)ru->type >= RULE_TYPES || rule_fns[ru->type] == NULL) {
        add_problem(c->problem, sizeof(c->problem), "rule type %d has no judge", (int)ru->type);
        return V_PROBLEM;
    }
    return rule_fns[ru->type](c, ru);
}

/* Why a rule that passed patched nothing (node-selector with no label the GPU nodes carry): a
 * warning under Enforce and Warn, an audit annotation under Audit. */
static void note(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                 const struct ctx *c)
{
    char text[MSG_MAX + 64];

    if (c->note[0] == '\0')
        return;
    if (eff == ENFORCE_AUDIT) {
        decision_annotate(rn->dec, ru->name, c->note);
        log_decision(rn, ru, eff, FINDING_WOULD_WARN, NULL, c->note);
        return;
    }
    snprintf(text, sizeof(text), "gpuadmit [%s]: %s", ru->name, c->note);
    decision_warn(rn->dec, text);
    log_decision(rn, ru, eff, FINDING_WARN, NULL, c->note);
}

/* /mutate: Mutate rules patch (Enforce) or report what they would do (Warn, Audit). */
static int mutate_rule(struct run *rn, const struct policy_doc *doc, const struct rule *ru,
                       enum rule_enforcement eff)
{
    struct ctx c;
    char text[MSG_MAX + 16];
    enum verdict v;

    if (eff == ENFORCE_ENFORCE) {
        v = run_rule(rn, doc, ru, &rn->real, &c);
        /* a patch that is sent is recorded, also when the rule found a problem it could not
         * patch beside it (gpu-request: a GPU added, a privileged sidecar refused) */
        if (v == V_FIXED || (v == V_PROBLEM && c.fixed[0] != '\0')) {
            snprintf(text, sizeof(text), "patched: %s", c.fixed);
            decision_annotate(rn->dec, ru->name, text);
            log_decision(rn, ru, eff, FINDING_PATCH, NULL, c.fixed);
        }
        note(rn, ru, eff, &c);
        /* a problem it cannot patch is denied at /validate */
        if (rn->pred.doc != NULL)
            run_rule(rn, doc, ru, &rn->pred, &c);
        return 0;
    }
    if (rn->pred.doc == NULL &&
        (patch_sync(&rn->real) < 0 || patch_init(&rn->pred, rn->real.doc, NULL, rn->dec->alc) < 0))
        return -1;
    v = run_rule(rn, doc, ru, &rn->pred, &c);
    note(rn, ru, eff, &c);
    if (v == V_FIXED)
        record_report(rn, ru, eff, FINDING_WOULD_PATCH, NULL, c.fixable);
    else if (v == V_PROBLEM)
        record_report(rn, ru, eff, FINDING_WOULD_DENY, NULL, c.problem);
    return 0;
}

/* Whether the review is a pod UPDATE (not kubectl debug): it is judged at /validate only. */
static bool is_pod_update(const struct run *rn)
{
    return rn->t != NULL && rn->t->is_pod && !rn->t->ephemeral && rn->r->op == REVIEW_UPDATE;
}

/* /validate: Deny rules, and Mutate rules that enforce (their patch may not have happened). On a
 * pod UPDATE only Deny rules are enforced: what a Mutate rule would patch (priorityClassName,
 * say) is immutable on a running pod (pkg/apis/core/validation, ValidatePodUpdate), so its
 * findings are warnings that point at what creates the pod, never a denial that asks for a
 * field the update cannot change. */
static void validate_rule(struct run *rn, const struct policy_doc *doc, const struct rule *ru,
                          enum rule_enforcement eff)
{
    struct ctx c;
    bool update = ru->action == ACTION_MUTATE && is_pod_update(rn);

    if (ru->action == ACTION_MUTATE && eff != ENFORCE_ENFORCE && !update)
        return; /* reported at /mutate */
    if (run_rule(rn, doc, ru, NULL, &c) != V_PROBLEM)
        return;
    if (update)
        record_report(rn, ru, eff == ENFORCE_AUDIT ? ENFORCE_AUDIT : ENFORCE_WARN,
                      FINDING_WOULD_DENY,
                      "not enforced on a pod update (the pod's fields cannot change now; fix "
                      "what creates the pod)",
                      c.problem);
    else if (eff == ENFORCE_ENFORCE)
        record_deny(rn, ru, c.problem);
    else
        record_report(rn, ru, eff, FINDING_WOULD_DENY, NULL, c.problem);
}

/* Whether the value at path differs between object and oldObject. Absent from oldObject: a change
 * when absent_is_change, or when the object has it. */
static bool changed_at(const struct review *r, const char *path, bool absent_is_change)
{
    yyjson_val *now = patch_get(r->object, path);
    yyjson_val *before = r->old_object ? patch_get(r->old_object, path) : NULL;

    if (before == NULL)
        return absent_is_change || r->old_object == NULL || now != NULL;
    return !yyjson_equals(now, before);
}

/* For a workload UPDATE: whether the pod template changed. The whole template counts, its
 * metadata too: labels decide a rule's scope (labelSelector), and any template change rolls new
 * pods out (whose ReplicaSet would then be patched where the Deployment was not). */
static bool template_changed(const struct review *r, const struct target *t)
{
    return changed_at(r, t->prefix, true) || (!t->is_pod && changed_at(r, t->meta_path, false));
}

/* For a pod UPDATE: whether what decides where it may run changed (pkg/apis/core/validation:
 * ValidatePodUpdate lets tolerations be added to any pod, and nodeSelector and node affinity
 * be added to or narrowed, and scheduling gates removed, while the pod is gated). */
static bool scheduling_changed(const struct review *r)
{
    static const char *const fields[] = {"/spec/tolerations", "/spec/nodeSelector",
                                         "/spec/affinity", "/spec/schedulingGates"};

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (changed_at(r, fields[i], false))
            return true;
    return false;
}

static bool is_mirror_pod(const struct review *r)
{
    return yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(r->object, "metadata"), "annotations"),
                          "kubernetes.io/config.mirror") != NULL;
}

/* The rules of doc of one phase: 0 the gpu-request rules, 1 the others. gpu-request may make a
 * pod a GPU pod (it adds the GPU a pod aimed at GPU nodes forgot), and every other rule judges
 * GPU pods only, so it goes first whatever the order of the policy: otherwise a policy listing
 * it last would patch in two rounds, and the patched object would get a second patch. */
static int eval_doc(struct run *rn, const struct policy_doc *doc, int phase)
{
    struct who w;
    enum rule_enforcement eff;
    unsigned before;

    who_init(&w, rn->r, rn->t, rn->r->object);
    if (!in_scope(&doc->scope, &w))
        return 0;
    for (size_t i = 0; i < doc->n_rules; i++) {
        const struct rule *ru = &doc->rules[i];

        if ((ru->type == RULE_GPU_REQUEST) != (phase == 0))
            continue;
        if (ru->type == RULE_CAPACITY || !in_scope(&ru->scope, &w))
            continue;
        eff = rn->audit_only || doc->audit_only ? ENFORCE_AUDIT : ru->enforcement;
        before = rn->findings;
        if (!rn->mutating)
            validate_rule(rn, doc, ru, eff);
        else if (ru->action == ACTION_MUTATE && mutate_rule(rn, doc, ru, eff) < 0)
            return -1;
        /* a rule judged at this endpoint that found nothing passed */
        if (rn->findings == before &&
            (rn->mutating ? ru->action == ACTION_MUTATE
                          : ru->action == ACTION_DENY || eff == ENFORCE_ENFORCE))
            trace_rule(rn, ru, eff, OUTCOME_PASS, "");
    }
    return 0;
}

/* ---- capacity ---- */

/* Containers asking for more than one GPU of a resource, when every eligible node shares its
 * GPUs: a time slice is not a faster GPU, and the plugin may refuse the request on the node. */
static void shared_multiple(const struct workload_demand *ct, const struct capacity_result *res,
                            const struct strlist *globs, char *out, size_t len)
{
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_val *c;
    struct pod_demand dm;
    struct diag d;
    size_t i;

    for (size_t l = 0; l < 2; l++) {
        ARR_EACH (yyjson_obj_get(ct->spec, lists[l]), i, c) {
            diag_clear(&d);
            if (pod_container_gpus(c, "container", globs, &dm, &d) < 0)
                continue;
            for (size_t k = 0; k < dm.n; k++) {
                if (dm.r[k].milli <= 1000 || strncmp(dm.r[k].name, "nvidia.com/mig-", 15) == 0)
                    continue;
                snprintf(out, len,
                         "container \"%s\" asks for %lld %s, but every eligible node shares its "
                         "GPUs (%s): more than one slice gains nothing, and a device plugin "
                         "running with failRequestsGreaterThanOne fails the pod on the node "
                         "(UnexpectedAdmissionError); ask for 1",
                         container_name(c), (long long)(dm.r[k].milli / 1000), dm.r[k].name,
                         res->shared_why);
                return;
            }
        }
    }
}

/* How strong a capacity finding is: CAP_NEVER is denied under Enforce whatever `available`
 * says; CAP_NOT_NOW is denied only with `available: Deny`; CAP_NOTE is only ever a warning. */
enum cap_severity { CAP_NOTE, CAP_NOT_NOW, CAP_NEVER };

/* What an operator can do about a finding, one fix each: a warning of its own, since the
 * apiserver cuts each warning to 256 characters (WARNING_MAX_RUNES). */
#define CAP_HINTS_MAX 4
struct cap_hints {
    const char *subject; /* "deployments ml/trainer" */
    char h[CAP_HINTS_MAX][480];
    int n;
};

/* A capacity finding: what (the whole arithmetic) goes into denials, annotations and the log;
 * a warning carries brief (the first sentence), then each hint as its own warning. */
static void capacity_report(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                            enum cap_severity sev, const char *what, const char *brief,
                            const struct cap_hints *hints)
{
    char text[MSG_MAX + 160];
    bool denies = sev == CAP_NEVER || (sev == CAP_NOT_NOW && ru->deny_unavailable);

    if ((int)sev > rn->cap_worst) {
        rn->cap_worst = (int)sev;
        snprintf(rn->cap_why, sizeof(rn->cap_why), "%s", brief);
    }

    if (eff == ENFORCE_ENFORCE && denies) {
        record_deny(rn, ru, what);
    } else if (eff == ENFORCE_WARN || eff == ENFORCE_ENFORCE) {
        snprintf(text, sizeof(text), "gpuadmit [%s]: %s", ru->name, brief);
        decision_warn(rn->dec, text);
        for (int i = 0; hints != NULL && i < hints->n; i++) {
            snprintf(text, sizeof(text), "gpuadmit [%s]: %s: %s", ru->name, hints->subject,
                     hints->h[i]);
            decision_warn(rn->dec, text);
        }
        snprintf(text, sizeof(text), "warned: %s", what);
        decision_annotate(rn->dec, ru->name, text);
        /* under Warn, a finding that enforcing would deny counts as would_deny */
        log_decision(rn, ru, eff, eff == ENFORCE_WARN && denies ? FINDING_WOULD_DENY : FINDING_WARN,
                     NULL, what);
    } else {
        /* Audit reports what enforcing would do: deny, or only warn */
        record_report(rn, ru, eff, denies ? FINDING_WOULD_DENY : FINDING_WOULD_WARN, NULL, what);
    }
}

/* Notes the pods to reserve once the review is known to be allowed (several capacity rules in
 * scope reserve once, the most any of them admits). */
static void hold(struct run *rn, const struct rule *ru, const struct capacity_request *rq,
                 int64_t pods)
{
    if (pods <= rn->reserve_pods)
        return;
    rn->reserve_pods = pods;
    rn->reserve_s = ru->reserve_s;
    rn->reserve_headroom = rq->headroom;
    rn->reserve_globs = rq->gpu_globs;
    rn->reserve_spec = rq->pod_spec;
}

/* The rule's answer while the view is not synced or too old: its whenStale, logged. */
static void capacity_stale(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                           const struct workload_demand *ct)
{
    char text[400];

    snprintf(text, sizeof(text), "GPU capacity not checked: %s",
             rn->view == NULL            ? "no cluster view is configured"
             : !cluster_synced(rn->view) ? "the cluster view is not synced yet"
                                         : "the cluster view is stale");
    log_event(LOG_WARN, "capacity not checked", "{s:s, s:s, s:s, s:s}", "uid", rn->r->uid, "object",
              ct->what, "reason", text, "whenStale", policy_stale_mode_name(ru->when_stale));
    if (ru->when_stale == STALE_ALLOW)
        return;
    if (ru->when_stale == STALE_DENY && eff == ENFORCE_ENFORCE)
        record_deny(rn, ru, text);
    else
        capacity_report(rn, ru, eff == ENFORCE_ENFORCE ? ENFORCE_WARN : eff, CAP_NOT_NOW, text,
                        text, NULL);
}

/* Where the template asks its pods to go, for a message: "nodeSelector pool=c" (the first
 * pairs), "required node affinity", or both. */
static void placement_text(yyjson_val *spec, char *buf, size_t len)
{
    yyjson_val *sel = yyjson_obj_get(spec, "nodeSelector"), *v;
    const char *key;
    size_t at = 0;
    int n = 0;

    buf[0] = '\0';
    OBJ_EACH(sel, key, v)
    {
        if (at + 1 >= len || n == 4)
            break;
        at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", n++ ? "," : "nodeSelector ", key,
                               yyjson_is_str(v) ? json_str(v) : "?");
    }
    if (at < len && patch_get(spec, "/affinity/nodeAffinity/"
                                    "requiredDuringSchedulingIgnoredDuringExecution") != NULL)
        snprintf(buf + at, len - at, "%srequired node affinity", n ? " and " : "");
    if (buf[0] == '\0')
        snprintf(buf, len, "its GPU resources and tolerations");
}

/* What an operator can do about an increase that does not fit now: the reasons that are
 * transient or of the operator's making, each with its fix. */
static void not_now_hints(const struct rule *ru, const struct workload_demand *ct,
                          const struct capacity_result *res, struct cap_hints *hs)
{
    hs->subject = ct->what;
    hs->n = 0;
    if (ct->surge > 0)
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]),
                 "the rollout stalls: with maxUnavailable 0 the old pods keep their GPUs until "
                 "%lld surge pod%s run, so set maxSurge: 0 (or maxUnavailable above 0)",
                 (long long)ct->surge, ct->surge == 1 ? "" : "s");
    if (res->waiting_pods > 0) {
        char who[320];

        capacity_waiting_text(res, who, sizeof(who));
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]),
                 "%lld of the free GPUs go first to %s of equal or higher priority, already "
                 "waiting: let them run first",
                 (long long)res->waiting_gpus, who);
    }
    if (res->transient > 0)
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]),
                 "%d matching node%s cordoned or not Ready (%lld pods' worth of GPUs): wait for "
                 "the drain or the node%s to return",
                 res->transient, res->transient == 1 ? " is" : "s are",
                 (long long)res->fit_transient, res->transient == 1 ? "" : "s");
    if (ru->headroom > 0)
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]),
                 "the capacity rule's headroom keeps %lld GPU%s free on each node: lower it to "
                 "admit more",
                 (long long)ru->headroom, ru->headroom == 1 ? "" : "s");
}

/* brief, then each hint after "; ", into buf (len bytes). */
static void with_hints(const char *brief, const struct cap_hints *hs, char *buf, size_t len)
{
    size_t l = (size_t)snprintf(buf, len, "%s", brief);

    for (int i = 0; i < hs->n && l < len; i++)
        l += (size_t)snprintf(buf + l, len - l, "; %s", hs->h[i]);
}

/* One capacity rule's findings on one judged object, from rq (ct's request, which a Job's
 * clamped width changes) into res (zeroed by the caller). 1 when res holds the judgement
 * (res->judged false: not a GPU workload), 0 when nothing was judged against the view (none,
 * not synced, stale: whenStale's answer), -1 when the template's GPU amounts do not parse
 * (res->reasons says why). */
static int capacity_findings(struct run *rn, const struct policy_doc *doc, const struct rule *ru,
                             enum rule_enforcement eff, struct workload_demand *ct,
                             struct capacity_request *rq, struct capacity_result *res)
{
    char text[3 * MSG_MAX + 8], expl[MSG_MAX], shared[MSG_MAX] = "", brief[MSG_MAX], where[200];
    char full[2 * MSG_MAX];
    struct cap_hints hs;
    enum rule_enforcement as = ct->hpa ? ENFORCE_WARN : eff;
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    if (pod_gpu_demand(ct->spec, &doc->gpu_resources, &dm, &d) == 0 && dm.n == 0)
        return 1; /* not a GPU workload: nothing to judge, nothing to say */
    if (ct->pod && (rn->view == NULL || !cluster_synced(rn->view)))
        return 0; /* a pod gets only the sharing check, which needs the view */
    if (rn->view == NULL || !cluster_synced(rn->view) ||
        cluster_age_s(rn->view) > (double)ru->max_view_age_s) {
        /* only a change that adds GPU demand meets whenStale: a scale-down, a metadata-only
         * UPDATE or the garbage collector's finalizer removal adds none */
        if (ct->increase > 0)
            capacity_stale(rn, ru, eff, ct);
        return 0;
    }
    if (capacity_judge(rn->view, rq, res) < 0) {
        capacity_report(rn, ru, eff, CAP_NEVER, res->reasons, res->reasons, NULL);
        return -1;
    }
    if (!res->judged)
        return 1;
    if (ru->deny_shared_multiple && res->all_shared)
        shared_multiple(ct, res, &doc->gpu_resources, shared, sizeof(shared));
    if (shared[0])
        capacity_report(rn, ru, as, CAP_NEVER, shared, shared, NULL);
    if (ct->pod || (ct->increase == 0 && !ct->grew))
        return 1; /* nothing new: a changed template is judged against at most below */
    capacity_explain(rq, res, expl, sizeof(expl));
    if (res->eligible == 0 && res->transient == 0) {
        /* no node matches; only a node autoscaler can add one (a pool scaled to zero). With
         * `autoscaling: false` written in the rule none will, and the pods would wait
         * forever: a typo in a selector is caught here */
        bool never = ru->autoscaling_set && !ru->autoscaling && ct->grew;

        placement_text(ct->spec, where, sizeof(where));
        if (never)
            snprintf(brief, sizeof(brief),
                     "%s can never run: no node matches %s, and the capacity rule says no node "
                     "autoscaler adds nodes (autoscaling: false): fix the typo or the labels",
                     ct->what, where);
        else
            snprintf(brief, sizeof(brief),
                     "%s: no node matches %s now: check it for a typo; its pods wait Pending "
                     "unless a node autoscaler adds a matching node (autoscaling: false in the "
                     "rule says none runs)",
                     ct->what, where);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        capacity_report(rn, ru, as, never ? CAP_NEVER : CAP_NOTE, text, brief, NULL);
        return 1;
    }
    if (ct->job && ct->total > res->fit_ever && res->fit_ever > 0) {
        /* a Job's pods run as others finish: its width is clamped to what the eligible nodes
         * hold at most, and that is what must fit now */
        snprintf(brief, sizeof(brief),
                 "%s runs at most %lld of its %lld pods at once on the eligible nodes (%lld %s "
                 "in all); the others run as those finish: lower parallelism to %lld to say so",
                 ct->what, (long long)res->fit_ever, (long long)ct->total,
                 (long long)res->total_gpus[0], res->res[0].name, (long long)res->fit_ever);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        capacity_report(rn, ru, as, CAP_NOTE, text, brief, NULL);
        /* of the pods it runs at once, clamped, those it did not run before */
        ct->increase = res->fit_ever > ct->before ? res->fit_ever - ct->before : 0;
        ct->total = res->fit_ever;
        rq->increase = ct->increase; /* the arithmetic of what is judged now */
        rq->total = ct->total;
        capacity_explain(rq, res, expl, sizeof(expl));
    } else if (ct->grew && ct->total > res->fit_ever) {
        char fix[160];

        if (res->fit_ever == 0)
            snprintf(fix, sizeof(fix),
                     "no eligible node holds one pod: ask for fewer GPUs per pod or add larger "
                     "nodes");
        else
            snprintf(fix, sizeof(fix), "lower %s to %lld or add nodes",
                     ct->job ? "parallelism" : "replicas", (long long)res->fit_ever);
        snprintf(brief, sizeof(brief),
                 "%s can never fit: %lld pod%s at once, at most %lld fit the eligible nodes "
                 "(%lld %s in all, cordoned and not Ready nodes included); %s",
                 ct->what, (long long)ct->total, ct->total == 1 ? "" : "s",
                 (long long)res->fit_ever, (long long)res->total_gpus[0], res->res[0].name, fix);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        /* an autoscaled cluster can grow: a warning; a Job none of whose pods fits any node
         * never runs */
        capacity_report(rn, ru, as, !ru->autoscaling ? CAP_NEVER : CAP_NOT_NOW, text, brief, NULL);
        return 1;
    }
    if (ct->increase > res->fit_now) {
        /* the scheduler keeps no headroom: pods that fit once it is spent start, and eat it */
        struct capacity_request bare = *rq;
        struct capacity_result nohr;
        bool eats = false;

        bare.headroom = 0;
        if (rq->headroom > 0 && capacity_judge(rn->view, &bare, &nohr) == 0)
            eats = ct->increase <= nohr.fit_now;
        snprintf(brief, sizeof(brief), "%s: only %lld of %lld more pods fit now, the rest %s",
                 ct->what, (long long)res->fit_now, (long long)ct->increase,
                 ct->cron ? "of each Job's pods will wait Pending (or, with available: Deny, "
                            "the Job is refused) unless GPUs are free when the schedule fires"
                 : eats   ? "eat into the headroom the capacity rule keeps free (the scheduler "
                            "keeps none: they would start)"
                          : "will wait Pending");
        not_now_hints(ru, ct, res, &hs);
        with_hints(brief, &hs, full, sizeof(full));
        snprintf(text, sizeof(text), "%s; %s", full, expl);
        /* a CronJob's Jobs come later, and are judged when they do */
        capacity_report(rn, ru, as, ct->cron ? CAP_NOTE : CAP_NOT_NOW, text, brief, &hs);
        if (!ct->cron)
            hold(rn, ru, rq, res->fit_now);
    } else if (!ct->hpa && !ct->cron) {
        hold(rn, ru, rq, ct->increase);
    }
    return 1;
}

/* Whether a pod of the template could never run: what capacity_findings finds "never" in a new
 * workload of one replica. A pod itself gets no such finding (the scheduler keeps it Pending,
 * and the webhook admits it), but the offline report's verdict is the same for both. */
static bool pod_never(const struct rule *ru, const struct capacity_result *res)
{
    if (res->eligible == 0 && res->transient == 0)
        return ru->autoscaling_set && !ru->autoscaling;
    return !ru->autoscaling && res->fit_ever < 1;
}

/* The judgement of one capacity rule in the caller's trace, for gpuadmit capacity: an entry
 * {"stage", "rule", "type", "capacity": {...}} with no outcome (eval.h). asked is the pods the
 * change asks for, before a Job's width is clamped to what the nodes hold at most: all of them
 * fit now or some wait. The verdict is "never" when the rule found what it denies whatever
 * `available` says (CAP_NEVER), else "notNow" when fewer than asked fit now, else "fits";
 * "invalid" when the template's GPU amounts do not parse. */
static void trace_capacity(struct run *rn, const struct rule *ru, const struct workload_demand *ct,
                           const struct capacity_request *rq, const struct capacity_result *res,
                           int64_t asked, int judged)
{
    struct capacity_request as = *rq;
    char expl[MSG_MAX] = "";
    bool pod_nv = rn->cap_worst != CAP_NEVER && ct->pod && res->judged && pod_never(ru, res);
    const char *verdict = judged < 0                             ? "invalid"
                          : rn->cap_worst == CAP_NEVER || pod_nv ? "never"
                          : res->judged && asked > res->fit_now  ? "notNow"
                                                                 : "fits";
    const char *why = judged < 0 ? res->reasons : rn->cap_why;
    yyjson_mut_val *e;

    as.increase = asked;
    if (res->judged)
        capacity_explain(&as, res, expl, sizeof(expl));
    if (pod_nv) /* the words of capacity_findings' findings, which a pod does not get */
        why = res->eligible == 0 && res->transient == 0
                  ? "no node matches it, and the capacity rule says no node autoscaler adds "
                    "nodes (autoscaling: false)"
                  : "no eligible node holds one pod, cordoned and not Ready nodes included: ask "
                    "for fewer GPUs per pod or add larger nodes";
    e = json_pack(rn->tdoc, "{s:s, s:s, s:s, s:{s:b, s:I, s:I, s:I, s:i, s:s, s:s, s:s, s:s}}",
                  "stage", rn->mutating ? "mutate" : "validate", "rule", ru->name, "type",
                  policy_rule_type_name(ru->type), "capacity", "requestsGPUs", res->judged, "pods",
                  asked, "fitNow", res->fit_now, "fitEver", res->fit_ever, "eligibleNodes",
                  res->eligible, "notEligible", res->reasons, "explanation", expl, "verdict",
                  verdict, "why", why);
    /* left out when it cannot be made (out of memory), as trace_rule's entries are */
    if (e != NULL)
        yyjson_mut_arr_append(rn->trace, e);
}

/* One capacity rule on one judged object: its findings, and for the offline CLI its judgement. */
static void capacity_rule(struct run *rn, const struct policy_doc *doc, const struct rule *ru,
                          enum rule_enforcement eff, struct workload_demand *ct)
{
    struct capacity_request rq = {
        ct->spec, &doc->gpu_resources, ct->increase, ct->total, ru->headroom, ct->key, ct->before};
    struct capacity_request asked = rq;
    struct capacity_result res;
    int judged;

    memset(&res, 0, sizeof(res));
    rn->cap_worst = -1;
    rn->cap_why[0] = '\0';
    /* a pod is one pod; a Job's clamped width changes rq, not what it asked for */
    asked.increase = ct->pod ? 1 : ct->increase;
    judged = capacity_findings(rn, doc, ru, eff, ct, &rq, &res);
    if (judged != 0 && rn->trace != NULL)
        trace_capacity(rn, ru, ct, &asked, &res, asked.increase, judged);
}

/* /validate: into rn->pred, the object as the Mutate rules in scope patch its pods once the
 * rollout switches (--audit-only, spec.auditOnly) are off: the rules eval_doc() runs at /mutate,
 * in its order, each seeing the earlier ones' patches, but only those whose own enforcement is
 * Enforce. A rule written Warn or Audit never patches, switches or not, so its would-be patch
 * is never counted. A template is patched as its pods are at their own CREATE, whether or not
 * the policy patches templates (autogen): the scheduler places the pods. A patch already in the
 * object is applied again to no effect (patches converge). The spec at rn->found's prefix of
 * rn->pred.doc is then what the scheduler will get. -1 when out of memory. */
static int predict(struct run *rn, const struct policy *p)
{
    const struct target *t = rn->t;
    struct who w;
    struct ctx c;
    int rc = 0;

    if (patch_init(&rn->pred, rn->r->object, NULL, rn->dec->alc) < 0)
        return -1;
    rn->t = rn->found; /* run_rule() reads the pod spec where rn->t says */
    who_init(&w, rn->r, rn->found, rn->r->object);
    for (int phase = 0; phase < 2; phase++) {
        for (size_t i = 0; i < p->n_docs; i++) {
            const struct policy_doc *doc = &p->docs[i];

            if (!in_scope(&doc->scope, &w))
                continue;
            for (size_t k = 0; k < doc->n_rules; k++) {
                const struct rule *ru = &doc->rules[k];

                if (ru->action != ACTION_MUTATE || ru->enforcement != ENFORCE_ENFORCE ||
                    ru->type == RULE_CAPACITY || (ru->type == RULE_GPU_REQUEST) != (phase == 0) ||
                    !in_scope(&ru->scope, &w))
                    continue;
                run_rule(rn, doc, ru, &rn->pred, &c);
            }
        }
    }
    rn->t = t;
    if (patch_sync(&rn->pred) < 0)
        rc = -1;
    return rc;
}

/* The pod spec a capacity rule judges: what the scheduler will get (predict()). A template's
 * pods are patched at their own CREATE, so a template is judged as predict() patches it, in
 * every mode: a Deployment made before gpuadmit patched templates, or under autogen: false,
 * still gets pods with the toleration. A pod reached /validate patched by /mutate unless a
 * rollout switch (rollout: --audit-only or spec.auditOnly) held the patches back; only then is
 * it predicted. Left as it is: the scale subresource's and the HPA's template, which comes from
 * the view, and a prediction that cannot be made (out of memory). */
static yyjson_val *judged_spec(struct run *rn, const struct policy *p, bool rollout,
                               const struct workload_demand *ct, yyjson_val *spec)
{
    if (ct->spec_doc != NULL || rn->found == NULL || rn->found->ephemeral ||
        patch_get(rn->r->object, rn->found->prefix) != spec || (rn->found->is_pod && !rollout))
        return spec;
    if (rn->pred.doc == NULL && predict(rn, p) < 0)
        return spec;
    return yyjson_is_obj(patch_get(rn->pred.doc, rn->found->prefix))
               ? patch_get(rn->pred.doc, rn->found->prefix)
               : spec;
}

/* /validate: every capacity rule in scope judges the workload, scale or HPA request. */
static void capacity_pass(struct run *rn, const struct policy *p)
{
    struct workload_demand ct;
    struct who w;
    static const struct target none = {"object", "/spec", "/metadata", NULL, false, false};
    const struct rule *first = NULL;
    yyjson_val *spec;

    memset(&ct, 0, sizeof(ct));
    for (size_t i = 0; i < p->n_docs && first == NULL; i++)
        for (size_t k = 0; k < p->docs[i].n_rules && first == NULL; k++)
            if (p->docs[i].rules[k].type == RULE_CAPACITY)
                first = &p->docs[i].rules[k];
    if (first == NULL)
        return;
    /* a user writing the owner reference into a ReplicaSet of their own does not skip the
     * check: only the controllers' ReplicaSets are judged at their Deployment */
    if (!workload_demand_of(rn->r,
                            first->owned_replicasets || !controller_identity(rn->r->username),
                            rn->view, &ct)) {
        if (!review_gvr_is(rn->r, "", "pods") || rn->r->op != REVIEW_CREATE ||
            rn->r->sub_resource[0] || !yyjson_is_obj(patch_get(rn->r->object, "/spec")))
            return;
        ct.spec = patch_get(rn->r->object, "/spec");
        ct.pod = true;
        snprintf(ct.what, sizeof(ct.what), "pod");
    }
    spec = ct.spec;
    if (rn->t == NULL) {
        rn->t = &none;
        snprintf(rn->subject, sizeof(rn->subject), "%s", ct.what);
    }
    who_init(&w, rn->r, rn->t, rn->r->object);
    for (size_t i = 0; i < p->n_docs; i++) {
        const struct policy_doc *doc = &p->docs[i];

        if (!in_scope(&doc->scope, &w))
            continue;
        for (size_t k = 0; k < doc->n_rules; k++) {
            const struct rule *ru = &doc->rules[k];

            enum rule_enforcement eff =
                rn->audit_only || doc->audit_only ? ENFORCE_AUDIT : ru->enforcement;
            unsigned before = rn->findings;

            if (ru->type != RULE_CAPACITY || !in_scope(&ru->scope, &w))
                continue;
            ct.spec = judged_spec(rn, p, rn->audit_only || doc->audit_only, &ct, spec);
            capacity_rule(rn, doc, ru, eff, &ct);
            if (rn->findings == before)
                trace_rule(rn, ru, eff, OUTCOME_PASS, "");
        }
    }
    /* reserve only what is admitted for real: not a dry run, and nothing denied it here */
    if (rn->reserve_pods > 0 && rn->n_deny == 0 && !rn->r->dry_run && !ct.hpa && !ct.pod &&
        !ct.cron) {
        struct capacity_request rq = {rn->reserve_spec, rn->reserve_globs,    rn->reserve_pods,
                                      rn->reserve_pods, rn->reserve_headroom, ct.key,
                                      ct.before};

        capacity_reserve(rn->view, &rq, rn->reserve_pods, (double)rn->reserve_s);
    }
    /* a scale-down takes back what its earlier admissions still hold past the new replicas */
    if (rn->view != NULL && ct.key != 0 && ct.total < ct.before && rn->n_deny == 0 &&
        !rn->r->dry_run && !ct.hpa && !ct.pod && !ct.cron)
        capacity_shrink(rn->view, ct.key, ct.total);
    workload_demand_release(&ct);
}
int eval_view_gaps(const struct policy *p, struct cluster *view, char *buf, size_t len)
{
    static const struct {
        enum cluster_kind k;
        const char *kinds; /* as the API's kinds, in the plural */
        unsigned rules;    /* bits (1u << rule type) of the rules that read it */
    } needs[] = {
        {CLUSTER_PRIORITYCLASSES, "PriorityClasses",
         (1u << RULE_PRIORITY_CLASS) | (1u << RULE_CAPACITY)},
        {CLUSTER_NODES, "Nodes", 1u << RULE_CAPACITY},
        {CLUSTER_PODS, "Pods", 1u << RULE_CAPACITY},
    };
    unsigned missing = view != NULL ? cluster_snapshot_missing(view) : 0, types = 0;
    size_t at = 0;
    int n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            types |= 1u << p->docs[i].rules[k].type;
    for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
        unsigned readers = needs[i].rules & types;
        int m = 0;

        if (!(missing & (1u << needs[i].k)) || readers == 0)
            continue;
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%sno %s (read by the ", n ? ", " : "",
                                   needs[i].kinds);
        for (int t = 0; t < RULE_TYPES; t++) {
            if (!(readers & (1u << t)) || at >= len)
                continue;
            at += (size_t)snprintf(buf + at, len - at, "%s%s", m++ ? " and " : "",
                                   policy_rule_type_name((enum rule_type)t));
        }
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, " rules)");
        n++;
    }
    return n;
}

int eval_review(const struct policy *p, const struct review *r, bool mutating, bool audit_only,
                struct cluster *view, struct decision *dec)
{
    return eval_review_trace(p, r, mutating, audit_only, view, dec, NULL, NULL);
}

int eval_review_trace(const struct policy *p, const struct review *r, bool mutating,
                      bool audit_only, struct cluster *view, struct decision *dec,
                      yyjson_mut_doc *tdoc, yyjson_mut_val *trace)
{
    struct run rn;
    bool any_autogen = false;
    int rc = -1;

    if (eval_route_of(r, mutating) == NULL)
        return 0; /* not a request the webhook configurations send: allowed untouched */
    memset(&rn, 0, sizeof(rn));
    rn.r = r;
    rn.mutating = mutating;
    rn.audit_only = audit_only;
    rn.view = view;
    rn.dec = dec;
    rn.tdoc = tdoc;
    rn.trace = tdoc != NULL ? trace : NULL;
    for (size_t i = 0; i < p->n_docs; i++)
        any_autogen = any_autogen || p->docs[i].autogen;
    /* found: the pod spec whatever autogen says, for the capacity pass's prediction */
    rn.found = find_target(r, true);
    rn.t = find_target(r, any_autogen);
    if (is_mirror_pod(r) || (rn.t != NULL && r->op == REVIEW_UPDATE && !template_changed(r, rn.t)))
        rn.t = NULL;
    if (rn.t != NULL && rn.t->is_pod && !rn.t->ephemeral && r->op == REVIEW_UPDATE &&
        !scheduling_changed(r))
        rn.t = NULL;
    /* the operations that are sent go straight into the decision's document */
    if (rn.t != NULL && mutating &&
        (decision_doc(dec) == NULL || patch_init(&rn.real, r->object, dec->out, dec->alc) < 0))
        goto out;
    for (int phase = 0; phase < 2; phase++) {
        for (size_t i = 0; rn.t != NULL && i < p->n_docs; i++) {
            if (!rn.t->is_pod && !p->docs[i].autogen)
                continue;
            if (eval_doc(&rn, &p->docs[i], phase) < 0)
                goto out;
        }
    }
    if (!mutating && !is_mirror_pod(r))
        capacity_pass(&rn, p);
    if (rn.n_deny > 0) {
        char msg[sizeof(rn.deny) + 420];

        char who[400];

        /* name the object: "pod ml/trainer-x2k9q", "Deployment ml/trainer" (a pod being created
         * from a generateName has no name yet at the mutating stage; the validating one has) */
        if (rn.subject[0] != '\0')
            snprintf(who, sizeof(who), "%s", rn.subject);
        else if (review_object_name(r)[0] == '\0')
            snprintf(who, sizeof(who), "%s in namespace %s", rn.t->is_pod ? "pod" : rn.t->what,
                     r->ns);
        else
            snprintf(who, sizeof(who), "%s %s%s%s", rn.t->is_pod ? "pod" : rn.t->what, r->ns,
                     r->ns[0] ? "/" : "", review_object_name(r));
        snprintf(msg, sizeof(msg), "gpuadmit: %s %s", who, rn.deny);
        if (decision_deny(dec, 403, msg) < 0)
            goto out;
    }
    /* ops is in dec->out already: the decision owns it */
    if (mutating && yyjson_mut_arr_size(rn.real.ops) > 0)
        dec->patch = rn.real.ops;
    rc = 0;
out:
    patch_release(&rn.real);
    patch_release(&rn.pred);
    return rc;
}
