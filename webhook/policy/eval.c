/*
 * eval.c: policy evaluation (see eval.h for what each endpoint does): the routes, the pod spec of
 * each kind of object, scope, and each rule run through its kind's operations (kind.h), whose
 * judges are in the kinds' modules (rule_gpu_request.c, ...); what the judges share (judge.h);
 * what each endpoint does with a finding.
 *
 * Invariants: rules judge the pod spec as earlier patches of the same review left it (the
 * working copy in struct patch), so patches compose and the patched object sent again yields no
 * patch; a rule only patches under Mutate + Enforce on /mutate; nothing here blocks or does I/O
 * but the decision log line.
 */
#include "eval.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decision.h"
#include "json.h"
#include "kind.h"
#include "log.h"
#include "patch.h"
#include "pod.h"
#include "pool.h"
#include "toleration.h"

/* pod_gpu_demand(c->spec) with the policy document's GPU resources, through the review's memo. */
int spec_demand(struct ctx *c, struct pod_demand *out, struct diag *d)
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

void add_text(char *buf, size_t len, const char *fmt, ...)
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

void add_problem(char *buf, size_t len, const char *fmt, ...)
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

enum verdict fixed_or_problem(struct ctx *c, bool patched, const char *desc, const char *did)
{
    if (!patched) {
        add_problem(c->problem, sizeof(c->problem), "%s", desc);
        return V_PROBLEM;
    }
    add_problem(c->fixable, sizeof(c->fixable), "%s", desc);
    add_text(c->fixed, sizeof(c->fixed), "%s", did);
    return V_FIXED;
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
    /* the device plugin's sharing config: only the ConfigMaps a device-plugin-config rule
     * names (the webhook configuration's matchConditions send no other) */
    {"", "v1", "configmaps", "", OP(CREATE) | OP(UPDATE), false, true},
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
bool controller_identity(const char *user)
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

bool in_scope(const struct scope *s, const struct who *w)
{
    return (!s->has_match || match_all(&s->match, w)) &&
           !(s->has_exclude && match_any(&s->exclude, w));
}

void who_init(struct who *w, const struct review *r, const struct target *t, yyjson_val *object)
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

const char *container_name(yyjson_val *c)
{
    const char *n = json_str(yyjson_obj_get(c, "name"));
    return n ? n : "";
}

bool label_matches(const struct node_label *l, const char *key, const char *value)
{
    return strcmp(l->key, key) == 0 &&
           (l->value == NULL || (value && strcmp(l->value, value) == 0));
}

bool tolerates(yyjson_val *tol, const struct taint *t)
{
    return toleration_tolerates(tol, t->key, t->value, t->effect);
}

/* A required node affinity term that keeps the pod on GPU nodes (an In expression whose values
 * all match a GPU node label), or with any_value one that lets it onto them (an In expression
 * naming a GPU node label's value among others: In [true, false] reaches GPU nodes as surely as
 * a second term does). */
bool term_on_gpu_label(const struct node_label *labels, size_t nl_n, yyjson_val *term,
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

yyjson_val *required_terms(yyjson_val *spec)
{
    return yyjson_obj_get(
        yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity"),
                       "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
}

/* Whether the nodeSelector names one of the n GPU node labels; which, in words, into why. */
bool selects_gpu_label(const struct node_label *labels, size_t n, yyjson_val *spec, char *why,
                       size_t len)
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

/* ---- the rules ---- */

/* Refreshes what the rule looks at after operations: a new immutable copy of the working copy
 * (patch.h). -1 when out of memory. */
int resync(struct ctx *c)
{
    int rc = patch_sync(c->pt);

    c->object = c->pt->doc;
    c->spec = patch_get(c->object, c->t->prefix);
    return rc;
}

/* value: a value of PATCH_OUT(c), or NULL when building it failed (then -1). The rule sees the
 * operation after resync() (add_at does both); a run of operations needs one resync. */
int add_op(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
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

int add_at(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
           yyjson_mut_val *value)
{
    int rc = add_op(c, rel, tokens, n, value);

    return resync(c) < 0 ? -1 : rc;
}

bool requests_gpus(struct ctx *c)
{
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    return spec_demand(c, &dm, &d) == 0 && dm.n > 0;
}

/* The pools the pod's GPU demand draws on (pool.h); 0 without pools. */
unsigned pod_pools(struct ctx *c)
{
    struct pod_demand dm;
    struct diag d;

    if (c->doc->n_pools == 0)
        return 0;
    diag_clear(&d);
    if (spec_demand(c, &dm, &d) < 0)
        return 0;
    return pool_set(c->doc, &dm);
}
bool view_synced(const struct ctx *c)
{
    return c->view != NULL && cluster_synced(c->view);
}

/* ---- the decision ---- */

/* One rule's outcome in the caller's trace (gpuadmit check and test), when it asked for one. */
void trace_rule(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
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
void log_decision(struct run *rn, const struct rule *ru, enum rule_enforcement eff, enum finding f,
                  const char *label, const char *message)
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

void record_deny(struct run *rn, const struct rule *ru, const char *problems)
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
void record_report(struct run *rn, const struct rule *ru, enum rule_enforcement eff, enum finding f,
                   const char *label, const char *problems)
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
    const struct rule_ops *kind = rule_ops_of(ru->type);

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
        return kind != NULL && kind->ephemeral != NULL ? kind->ephemeral(c, ru) : V_OK;
    /* a kind without judge is judged by its own pass, never here */
    if (kind == NULL || kind->judge == NULL) {
        add_problem(c->problem, sizeof(c->problem), "rule type %d has no judge", (int)ru->type);
        return V_PROBLEM;
    }
    return kind->judge(c, ru);
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

/* Whether ru is judged in phase (0 or 1): phase 0 judges the rules of the kinds judged first,
 * phase 1 the others. gpu-request may make a pod a GPU pod (it adds the GPU a pod aimed at GPU
 * nodes forgot), and every other rule judges GPU pods only, so it goes first whatever the order
 * of the policy: otherwise a policy listing it last would patch in two rounds, and the patched
 * object would get a second patch. */
static bool in_phase(const struct rule *ru, int phase)
{
    const struct rule_ops *kind = rule_ops_of(ru->type);

    return (kind != NULL && kind->first) == (phase == 0);
}

/* Whether ru is judged by its kind's own pass (capacity), not by eval_doc(). */
static bool own_pass(const struct rule *ru)
{
    const struct rule_ops *kind = rule_ops_of(ru->type);

    return kind != NULL && kind->pass != NULL;
}

/* The rules of doc of one phase (in_phase()). */
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

        if (!in_phase(ru, phase))
            continue;
        if (own_pass(ru) || !in_scope(&ru->scope, &w))
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

/* /validate: into rn->pred, the object as the Mutate rules in scope patch its pods once the
 * rollout switches (--audit-only, spec.auditOnly) are off: the rules eval_doc() runs at /mutate,
 * in its order, each seeing the earlier ones' patches, but only those whose own enforcement is
 * Enforce. A rule written Warn or Audit never patches, switches or not, so its would-be patch
 * is never counted. A template is patched as its pods are at their own CREATE, whether or not
 * the policy patches templates (autogen): the scheduler places the pods. A patch already in the
 * object is applied again to no effect (patches converge). The spec at rn->found's prefix of
 * rn->pred.doc is then what the scheduler will get. -1 when out of memory. */
/* eval_predict() of object, whose pod spec is where target says, into pt. */
/* Whether a scope reads what a template from the view does not tell: its pods' labels (the view
 * keeps a template's spec only), who creates them (a controller, not the user who scales), and,
 * when owner_known is false, the kind that owns them. */
static bool scope_blind(const struct scope *s, bool owner_known)
{
    const struct match *m[2] = {s->has_match ? &s->match : NULL,
                                s->has_exclude ? &s->exclude : NULL};

    for (int i = 0; i < 2; i++)
        if (m[i] != NULL &&
            (m[i]->labels.set || m[i]->users.n > 0 || m[i]->groups.n > 0 ||
             m[i]->service_accounts.n > 0 || (!owner_known && m[i]->owner_kinds.n > 0)))
            return true;
    return false;
}

/* eval_predict() of object, whose pod spec is where target says, into pt. blind: object is a
 * template from the view, so a rule or policy whose scope reads what the view does not keep
 * (scope_blind()) is left out: the prediction then patches less, never more, than the pods'
 * own CREATE will (the verdict before predictions, at worst). */
static int predict_into(struct run *rn, const struct policy *p, yyjson_val *object,
                        const struct target *target, struct patch *pt, bool blind)
{
    const struct target *t = rn->t;
    struct who w;
    struct ctx c;
    int rc = 0;

    if (patch_init(pt, object, NULL, rn->dec->alc) < 0)
        return -1;
    rn->t = target; /* run_rule() reads the pod spec where rn->t says */
    who_init(&w, rn->r, target, object);
    for (int phase = 0; phase < 2; phase++) {
        for (size_t i = 0; i < p->n_docs; i++) {
            const struct policy_doc *doc = &p->docs[i];

            if (!in_scope(&doc->scope, &w) ||
                (blind && scope_blind(&doc->scope, target->owner_kind != NULL)))
                continue;
            for (size_t k = 0; k < doc->n_rules; k++) {
                const struct rule *ru = &doc->rules[k];

                if (ru->action != ACTION_MUTATE || ru->enforcement != ENFORCE_ENFORCE ||
                    own_pass(ru) || !in_phase(ru, phase) || !in_scope(&ru->scope, &w) ||
                    (blind && scope_blind(&ru->scope, target->owner_kind != NULL)))
                    continue;
                run_rule(rn, doc, ru, pt, &c);
            }
        }
    }
    rn->t = t;
    if (patch_sync(pt) < 0)
        rc = -1;
    return rc;
}

int eval_predict(struct run *rn, const struct policy *p)
{
    return predict_into(rn, p, rn->r->object, rn->found, &rn->pred, false);
}

yyjson_val *eval_predict_template(struct run *rn, const struct policy *p, yyjson_val *spec)
{
    /* the kind that will own the pods: a Deployment's and a ReplicaSet's pods are owned by a
     * ReplicaSet, a StatefulSet's by it (the scale's resource, or the HPA's scaleTargetRef) */
    static const struct target by[] = {
        {"template", "/spec/template/spec", "/spec/template/metadata", "ReplicaSet", false, false},
        {"template", "/spec/template/spec", "/spec/template/metadata", "StatefulSet", false, false},
        {"template", "/spec/template/spec", "/spec/template/metadata", NULL, false, false},
    };
    const char *ref = json_get_str(
        yyjson_obj_get(yyjson_obj_get(rn->r->object, "spec"), "scaleTargetRef"), "kind");
    const struct target *tmpl = &by[2];
    yyjson_mut_doc *m;
    yyjson_mut_val *root;

    if (review_gvr_is(rn->r, "apps", "deployments") ||
        review_gvr_is(rn->r, "apps", "replicasets") ||
        (ref != NULL && (strcmp(ref, "Deployment") == 0 || strcmp(ref, "ReplicaSet") == 0)))
        tmpl = &by[0];
    else if (review_gvr_is(rn->r, "apps", "statefulsets") ||
             (ref != NULL && strcmp(ref, "StatefulSet") == 0))
        tmpl = &by[1];

    if (rn->tmpl_doc != NULL)
        return patch_get(rn->tmpl_pred.doc, tmpl->prefix);
    m = yyjson_mut_doc_new(NULL);
    root = m ? json_pack(m, "{s:{s:{s:V}}}", "spec", "template", "spec", spec) : NULL;
    if (root != NULL)
        yyjson_mut_doc_set_root(m, root);
    /* the copy is as deep as the view let the template be */
    rn->tmpl_doc = root ? yyjson_mut_doc_imut_copy(m, NULL) : NULL;
    yyjson_mut_doc_free(m);
    if (rn->tmpl_doc == NULL ||
        predict_into(rn, p, yyjson_doc_get_root(rn->tmpl_doc), tmpl, &rn->tmpl_pred, true) < 0)
        return NULL;
    return patch_get(rn->tmpl_pred.doc, tmpl->prefix);
}

int eval_view_gaps(const struct policy *p, struct cluster *view, char *buf, size_t len)
{
    static const struct {
        enum cluster_kind k;
        const char *kinds; /* as the API's kinds, in the plural */
    } needs[] = {
        {CLUSTER_PRIORITYCLASSES, "PriorityClasses"},
        {CLUSTER_NODES, "Nodes"},
        {CLUSTER_PODS, "Pods"},
    };
    unsigned missing = view != NULL ? cluster_snapshot_missing(view) : 0, types = 0;
    size_t at = 0;
    int n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            types |= 1u << p->docs[i].rules[k].type;
    for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
        unsigned readers = 0;
        int m = 0;

        /* the types whose kind reads it (bits 1u << rule type) */
        for (int t = 0; t < RULE_TYPES; t++)
            if (rule_kinds[t].ops->reads & (1u << needs[i].k))
                readers |= 1u << t;
        readers &= types;

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

bool eval_type_judges_capacity(enum rule_type t)
{
    const struct rule_ops *kind = rule_ops_of(t);

    return kind != NULL && kind->judges_fit;
}

bool eval_type_adds_pool_labels(enum rule_type t)
{
    const struct rule_ops *kind = rule_ops_of(t);

    return kind != NULL && kind->adds_pool_labels;
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
    for (int t = 0, passes = !mutating && !is_mirror_pod(r); passes && t < RULE_TYPES; t++) {
        const struct target *judged = rn.t;

        /* a pass may aim rn.t at the object (a scale has no pod spec, and it names the object
         * in rn.subject then): each pass starts as the judges left it */
        if (rule_kinds[t].ops->pass != NULL)
            rule_kinds[t].ops->pass(&rn, p, (enum rule_type)t);
        rn.t = judged;
    }
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
    patch_release(&rn.tmpl_pred);
    yyjson_doc_free(rn.tmpl_doc);
    return rc;
}
