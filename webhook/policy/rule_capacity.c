/*
 * rule_capacity.c: the capacity rule (rules/README.md, docs/architecture.md §4.3): its
 * settings and their loading, and its own pass at /validate, after every other rule: whether
 * the pods a change asks for fit the cluster view now and ever (cluster/capacity.h), judged on
 * the pod template as the scheduler will get it (eval_predict()), the findings with their
 * hints, whenStale while the view is not synced or too old, the reservation of what it admits,
 * and for the offline CLI the "capacity" entry of the trace (eval.h).
 */
#include "rule_capacity.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/capacity.h"
#include "json.h"
#include "kind.h"
#include "log.h"
#include "workload.h"

/* ---- settings ---- */

static const char *const AVAILABLE[] = {"Warn", "Deny"};

enum {
    CAP_AVAILABLE,
    CAP_HEADROOM,
    CAP_RESERVE,
    CAP_OWNED_RS,
    CAP_WHEN_STALE,
    CAP_MAX_AGE,
    CAP_SHARED,
    CAP_AUTOSCALING,
    CAP_GROUP_LABELS,
    CAP_GROUPS,
    CAP_N
};
static const struct field KEYS[CAP_N] = {
    {"available", false},          {"headroom", false},    {"reserveSeconds", false},
    {"ownedReplicaSets", false},   {"whenStale", false},   {"maxViewAge", false},
    {"denySharedMultiple", false}, {"autoscaling", false}, {"nodeGroupLabels", false},
    {"nodeGroups", false},
};

enum { NG_NAME, NG_LABELS, NG_TAINTS, NG_RESOURCES, NG_N };
static const struct field NODE_GROUP_KEYS[NG_N] = {
    {"name", true}, {"labels", false}, {"taints", false}, {"resources", false}};

/* nodeGroups[i] at n (path p) into t: the node CA would add to the groups its name matches. */
static void load_node_group(struct loader *L, const struct yamltree_node *n, const char *path,
                            struct growth_template *t)
{
    const struct yamltree_node *v[NG_N], *k[NG_N];
    char p[RULES_PATH_MAX];
    struct node_label *labels = NULL;
    struct taint *taints = NULL;
    struct name_count *res = NULL;
    size_t n_labels = 0, n_taints = 0, n_res = 0;
    yyjson_mut_doc *md;
    yyjson_mut_val *obj;

    if (!map_fields(L, n, path, NODE_GROUP_KEYS, NG_N, v, k))
        return;
    path_key(p, path, "name");
    if (v[NG_NAME] != NULL)
        get_str(L, v[NG_NAME], p, &VAL_GLOB, &t->glob);
    path_key(p, path, "labels");
    if (given(v[NG_LABELS]))
        load_label_map(L, v[NG_LABELS], p, false, &labels, &n_labels);
    path_key(p, path, "taints");
    if (given(v[NG_TAINTS]))
        load_taints(L, v[NG_TAINTS], p, &taints, &n_taints);
    path_key(p, path, "resources");
    if (given(v[NG_RESOURCES]))
        load_count_map(L, v[NG_RESOURCES], p, &VAL_RESOURCE, 1000000, &res, &n_res);

    /* the node: its labels as a view's node holds them, its taints, its resources */
    t->node.name = t->glob;
    md = yyjson_mut_doc_new(NULL);
    obj = md ? yyjson_mut_obj(md) : NULL;
    if (obj != NULL) {
        yyjson_mut_doc_set_root(md, obj);
        bool os = false;

        for (size_t i = 0; i < n_labels; i++)
            if (labels[i].key != NULL) {
                yyjson_mut_obj_add_strcpy(md, obj, labels[i].key,
                                          labels[i].value ? labels[i].value : "");
                os = os || strcmp(labels[i].key, "kubernetes.io/os") == 0;
            }
        /* CA's template node carries the generic labels too (aws_manager.go
         * buildGenericLabels: kubernetes.io/os linux, arch, instance type, zone) */
        if (!os)
            yyjson_mut_obj_add_str(md, obj, "kubernetes.io/os", "linux");
        t->node.labels_doc = yyjson_mut_doc_imut_copy(md, NULL);
    }
    yyjson_mut_doc_free(md);
    if (t->node.labels_doc == NULL)
        err_node(L, n, "%s: out of memory", path);
    else
        t->node.labels = yyjson_doc_get_root(t->node.labels_doc);
    /* the loaded taints and resources move into the node (a view's node has "" for no value) */
    if (n_taints > 0 && (t->node.taints = xcalloc(L, n_taints, sizeof(*t->node.taints)))) {
        for (size_t i = 0; i < n_taints; i++) {
            struct node_taint *nt = &t->node.taints[t->node.n_taints];

            if (taints[i].key == NULL || taints[i].effect == NULL ||
                (taints[i].value == NULL && (taints[i].value = xstrdup(L, "")) == NULL))
                continue;
            *nt = (struct node_taint){taints[i].key, taints[i].value, taints[i].effect};
            taints[i] = (struct taint){NULL, NULL, NULL};
            t->node.n_taints++;
        }
    }
    if (n_res > 0 && (t->node.res = xcalloc(L, n_res, sizeof(*t->node.res)))) {
        for (size_t i = 0; i < n_res; i++) {
            t->node.res[i].name = res[i].name;
            t->node.res[i].capacity = t->node.res[i].allocatable = res[i].n;
            res[i].name = NULL;
        }
        t->node.n_res = n_res;
    }
    node_labels_free(labels, n_labels);
    taints_free(taints, n_taints);
    for (size_t i = 0; i < n_res; i++)
        free(res[i].name);
    free(res);
}

static void *load(struct loader *L, const struct rule_input *in)
{
    const struct yamltree_node *const *v = in->v;
    const char *path = in->path;
    char p[RULES_PATH_MAX];
    const char *stale[STALE_MODES];
    int e;
    struct capacity_settings *r = xcalloc(L, 1, sizeof(*r));

    if (r == NULL)
        return NULL;

    for (e = 0; e < STALE_MODES; e++)
        stale[e] = policy_stale_mode_name((enum stale_mode)e);
    r->reserve_s = 10;
    r->when_stale = STALE_WARN;
    r->max_view_age_s = 300;
    r->deny_shared_multiple = true;
    if (in->rule->action != ACTION_DENY) {
        path_key(p, path, "action");
        err_node(L, in->common[R_ACTION],
                 "%s: capacity rules judge the final object at /validate and "
                 "cannot patch; expected Deny",
                 p);
    }
    path_key(p, path, "available");
    if (given(v[CAP_AVAILABLE]) && (e = get_enum(L, v[CAP_AVAILABLE], p, AVAILABLE, 2)) >= 0)
        r->deny_unavailable = e == 1;
    path_key(p, path, "headroom");
    if (given(v[CAP_HEADROOM]))
        get_int(L, v[CAP_HEADROOM], p, 0, 1024, &r->headroom);
    path_key(p, path, "reserveSeconds");
    if (given(v[CAP_RESERVE]))
        get_int(L, v[CAP_RESERVE], p, 0, 3600, &r->reserve_s);
    path_key(p, path, "ownedReplicaSets");
    if (given(v[CAP_OWNED_RS]))
        get_bool(L, v[CAP_OWNED_RS], p, &r->owned_replicasets);
    path_key(p, path, "whenStale");
    if (given(v[CAP_WHEN_STALE]) &&
        (e = get_enum(L, v[CAP_WHEN_STALE], p, stale, STALE_MODES)) >= 0)
        r->when_stale = (enum stale_mode)e;
    path_key(p, path, "maxViewAge");
    if (given(v[CAP_MAX_AGE]))
        get_int(L, v[CAP_MAX_AGE], p, 1, 86400, &r->max_view_age_s);
    path_key(p, path, "denySharedMultiple");
    if (given(v[CAP_SHARED]))
        get_bool(L, v[CAP_SHARED], p, &r->deny_shared_multiple);
    path_key(p, path, "autoscaling");
    if (given(v[CAP_AUTOSCALING])) {
        get_bool(L, v[CAP_AUTOSCALING], p, &r->autoscaling);
        r->autoscaling_set = true;
    }
    path_key(p, path, "nodeGroupLabels");
    if (given(v[CAP_GROUP_LABELS]))
        load_strlist(L, v[CAP_GROUP_LABELS], p, &VAL_LABEL_KEY, &r->group_labels);
    path_key(p, path, "nodeGroups");
    if (given(v[CAP_GROUPS]) && want_seq(L, v[CAP_GROUPS], p) && v[CAP_GROUPS]->n > 0 &&
        (r->templates = xcalloc(L, v[CAP_GROUPS]->n, sizeof(*r->templates))) != NULL) {
        r->n_templates = v[CAP_GROUPS]->n;
        for (size_t i = 0; i < r->n_templates; i++) {
            char q[RULES_PATH_MAX];

            path_index(q, p, i);
            load_node_group(L, v[CAP_GROUPS]->kids[i], q, &r->templates[i]);
            if (r->templates[i].glob == NULL) /* refused: never matches */
                r->templates[i].glob = xstrdup(L, "");
        }
    }
    return r;
}

/* ---- the pass ---- */

/* Containers asking for more than one GPU of a resource, when every eligible node shares its
 * GPUs: a time slice is not a faster GPU, and the plugin may refuse the request on the node;
 * with fails (every eligible node's device plugin config fails such a request: internal/rm
 * "maximum request size for shared resources is 1"), it will. */
static void shared_multiple(const struct workload_demand *ct, const struct capacity_result *res,
                            const struct strlist *globs, bool fails, char *out, size_t len)
{
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_val *c;
    struct pod_demand dm;
    struct diag d;
    size_t i;
    char why[320];

    for (size_t l = 0; l < 2; l++) {
        ARR_EACH (yyjson_obj_get(ct->spec, lists[l]), i, c) {
            diag_clear(&d);
            if (pod_container_gpus(c, "container", globs, &dm, &d) < 0)
                continue;
            for (size_t k = 0; k < dm.n; k++) {
                if (dm.r[k].milli <= 1000 || strncmp(dm.r[k].name, "nvidia.com/mig-", 15) == 0)
                    continue;
                if (fails)
                    snprintf(why, sizeof(why),
                             " with a device plugin that fails such a pod on the node (%s: "
                             "UnexpectedAdmissionError, maximum request size for shared "
                             "resources is 1)",
                             res->fail_why);
                else
                    snprintf(why, sizeof(why),
                             ": more than one slice gains nothing, and a device plugin running "
                             "with failRequestsGreaterThanOne fails the pod on the node "
                             "(UnexpectedAdmissionError)");
                snprintf(out, len,
                         "container \"%s\" asks for %lld %s, but every eligible node shares its "
                         "GPUs (%s)%s; ask for 1",
                         container_name(c), (long long)(dm.r[k].milli / 1000), dm.r[k].name,
                         res->shared_why, why);
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
#define CAP_HINTS_MAX 6
struct cap_hints {
    const char *subject; /* "deployments ml/trainer" */
    char h[CAP_HINTS_MAX][480];
    int n;
};

/* One capacity pass over one review: what the rules found, and what to reserve. */
struct cap_pass {
    struct run *rn;
    /* the capacity reservation to make once the review is known to be allowed */
    int64_t reserve_pods;
    int64_t reserve_s;
    int64_t reserve_headroom;
    const struct strlist *reserve_globs;
    yyjson_val *reserve_spec; /* the template the reservation is placed for */
    /* the capacity rule being judged: its strongest finding (enum cap_severity, -1 none) and
     * that finding's first sentence, for the trace */
    int worst;
    char why[MSG_MAX];
};

/* A capacity finding: what (the whole arithmetic) goes into denials, annotations and the log;
 * a warning carries brief (the first sentence), then each hint as its own warning. */
static void capacity_report(struct cap_pass *cp, const struct rule *ru, enum rule_enforcement eff,
                            enum cap_severity sev, const char *what, const char *brief,
                            const struct cap_hints *hints)
{
    struct run *rn = cp->rn;
    const struct capacity_settings *s = ru->settings;
    char text[MSG_MAX + 160];
    bool denies = sev == CAP_NEVER || (sev == CAP_NOT_NOW && s->deny_unavailable);

    if ((int)sev > cp->worst) {
        cp->worst = (int)sev;
        snprintf(cp->why, sizeof(cp->why), "%s", brief);
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
static void hold(struct cap_pass *cp, const struct rule *ru, const struct capacity_request *rq,
                 int64_t pods)
{
    const struct capacity_settings *s = ru->settings;
    if (pods <= cp->reserve_pods)
        return;
    cp->reserve_pods = pods;
    cp->reserve_s = s->reserve_s;
    cp->reserve_headroom = rq->headroom;
    cp->reserve_globs = rq->gpu_globs;
    cp->reserve_spec = rq->pod_spec;
}

/* The rule's answer while the view is not synced or too old: its whenStale, logged. */
static void capacity_stale(struct cap_pass *cp, const struct rule *ru, enum rule_enforcement eff,
                           const struct workload_demand *ct)
{
    struct run *rn = cp->rn;
    const struct capacity_settings *s = ru->settings;
    char text[400];

    snprintf(text, sizeof(text), "GPU capacity not checked: %s",
             rn->view == NULL            ? "no cluster view is configured"
             : !cluster_synced(rn->view) ? "the cluster view is not synced yet"
                                         : "the cluster view is stale");
    log_event(LOG_WARN, "capacity not checked", "{s:s, s:s, s:s, s:s}", "uid", rn->r->uid, "object",
              ct->what, "reason", text, "whenStale", policy_stale_mode_name(s->when_stale));
    if (s->when_stale == STALE_ALLOW)
        return;
    if (s->when_stale == STALE_DENY && eff == ENFORCE_ENFORCE)
        record_deny(rn, ru, text);
    else
        capacity_report(cp, ru, eff == ENFORCE_ENFORCE ? ENFORCE_WARN : eff, CAP_NOT_NOW, text,
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
    const struct capacity_settings *s = ru->settings;
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
    if (s->headroom > 0)
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]),
                 "the capacity rule's headroom keeps %lld GPU%s free on each node: lower it to "
                 "admit more",
                 (long long)s->headroom, s->headroom == 1 ? "" : "s");
}

/* brief, then each hint after "; ", into buf (len bytes). */
static void with_hints(const char *brief, const struct cap_hints *hs, char *buf, size_t len)
{
    size_t l = (size_t)snprintf(buf, len, "%s", brief);

    for (int i = 0; i < hs->n && l < len; i++)
        l += (size_t)snprintf(buf + l, len - l, "; %s", hs->h[i]);
}

/* An increase that fits now only because kube-scheduler will evict lower-priority pods for it:
 * their owners are told nothing by the scheduler, so the rule says how much it takes and whose
 * (capacity.h, preempt_*): only ever a warning, as preempting is what the class is for. */
static void preempt_note(struct cap_pass *cp, const struct rule *ru, enum rule_enforcement as,
                         const struct workload_demand *ct, const struct capacity_result *res,
                         const char *expl)
{
    char brief[MSG_MAX], text[2 * MSG_MAX + 8];
    long long inc = (long long)ct->increase;

    snprintf(brief, sizeof(brief),
             "%s fits only by preempting: its %lld %spod%s%s take%s %s%lld %s from "
             "lower-priority pods, which will be evicted: %s",
             ct->what, inc, ct->before > 0 ? "more " : "", inc == 1 ? "" : "s",
             ct->job ? " at once" : "", inc == 1 ? "s" : "", res->preempt_exact ? "" : "at least ",
             (long long)res->preempt_gpus, res->res[0].name, res->preempt_who);
    snprintf(text, sizeof(text), "%s; %s", brief, expl);
    capacity_report(cp, ru, as, CAP_NOTE, text, brief, NULL);
}

/* snprintf for messages that are cut to fit: buf always ends in a NUL. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* What the node autoscalers may add for rq's template (cluster/growth.h), judged only for a
 * change that does not fit the nodes there are: NULL when the rule says none runs
 * (autoscaling: false), when the view reads none and left none out as stale, or out of memory.
 * The caller frees it. */
static struct growth *growth_for(struct cap_pass *cp, const struct rule *ru,
                                 const struct capacity_request *rq,
                                 const struct capacity_result *res)
{
    const struct capacity_settings *s = ru->settings;
    struct growth_policy pol = {&s->group_labels, s->templates, s->n_templates};
    struct growth *g;

    if ((s->autoscaling_set && !s->autoscaling) || !capacity_autoscalers(cp->rn->view) ||
        (g = malloc(sizeof(*g))) == NULL)
        return NULL;
    capacity_growth(cp->rn->view, rq, res, &pol, g);
    if (!g->readable && g->stale_why[0] == '\0') {
        free(g);
        return NULL;
    }
    return g;
}

/* Pods of the template the growing groups add room for now, after the pods already waiting at
 * equal or higher priority beyond the free GPUs, which they add nodes for first: *owed, in pods
 * of the template. */
static int64_t growth_now(const struct growth *gr, const struct capacity_result *res, int64_t *owed)
{
    int64_t per = res->res[0].per_pod > 0 ? res->res[0].per_pod : 1;

    *owed = (res->waiting_beyond + per - 1) / per;
    if (gr == NULL || !gr->readable)
        return 0;
    if (gr->pods_now >= GROWTH_UNBOUNDED)
        return GROWTH_UNBOUNDED;
    return gr->pods_now > *owed ? gr->pods_now - *owed : 0;
}

/* What the autoscalers add to the arithmetic, after expl (len bytes): "; the node autoscalers
 * may add 8 more pods now, 12 at most". */
static void growth_explain(const struct growth *gr, int64_t grow_now, char *expl, size_t len)
{
    size_t l = strlen(expl);

    if (gr == NULL || l >= len)
        return;
    if (gr->readable && gr->pods_ever >= GROWTH_UNBOUNDED)
        snprintf(expl + l, len - l,
                 "; the node autoscalers may add %s pods now, with no limit on them",
                 grow_now >= GROWTH_UNBOUNDED ? "any number of" : "more");
    else if (gr->readable)
        snprintf(expl + l, len - l,
                 "; the node autoscalers may add %lld more pod%s now, %lld at most",
                 (long long)grow_now, grow_now == 1 ? "" : "s", (long long)gr->pods_ever);
    l = strlen(expl);
    if (gr->stale_why[0] && l < len)
        snprintf(expl + l, len - l, "; %s", gr->stale_why);
}

/* The groups that add nothing now, and the one gpuadmit cannot size, as hints. */
static void growth_hints(const struct growth *gr, struct cap_hints *hs)
{
    if (gr == NULL || !gr->readable)
        return;
    if (hs->n < CAP_HINTS_MAX) {
        growth_stuck_text(gr, hs->h[hs->n], sizeof(hs->h[0]));
        if (hs->h[hs->n][0])
            hs->n++;
    }
    if (gr->unknown && hs->n < CAP_HINTS_MAX)
        snprintf(hs->h[hs->n++], sizeof(hs->h[0]), "%.400s: it may hold more", gr->unknown_why);
}

/* One capacity rule's findings on one judged object, from rq (ct's request, which a Job's
 * clamped width changes) into res (zeroed by the caller). 1 when res holds the judgement
 * (res->judged false: not a GPU workload), 0 when nothing was judged against the view (none,
 * not synced, stale: whenStale's answer), -1 when the template's GPU amounts do not parse
 * (res->reasons says why). What the node autoscalers may add, when it was judged, into *grp
 * (the caller frees it). */
static int capacity_findings(struct cap_pass *cp, const struct policy_doc *doc,
                             const struct rule *ru, enum rule_enforcement eff,
                             struct workload_demand *ct, struct capacity_request *rq,
                             struct capacity_result *res, struct growth **grp)
{
    struct run *rn = cp->rn;
    const struct capacity_settings *s = ru->settings;
    char text[3 * MSG_MAX + 8], expl[MSG_MAX], shared[MSG_MAX] = "", brief[MSG_MAX], where[200];
    char full[2 * MSG_MAX], grows[MSG_MAX], stuck[MSG_MAX];
    struct cap_hints hs;
    enum rule_enforcement as = ct->hpa ? ENFORCE_WARN : eff;
    struct pod_demand dm;
    struct diag d;
    const struct growth *gr;
    bool scales; /* an autoscaler the view reads may add nodes */
    int64_t ever, soon, grow_now, owed;

    diag_clear(&d);
    if (pod_gpu_demand(ct->spec, &doc->gpu_resources, &dm, &d) == 0 && dm.n == 0)
        return 1; /* not a GPU workload: nothing to judge, nothing to say */
    if (ct->pod && (rn->view == NULL || !cluster_synced(rn->view)))
        return 0; /* a pod gets only the sharing check, which needs the view */
    if (rn->view == NULL || !cluster_synced(rn->view) ||
        cluster_age_s(rn->view) > (double)s->max_view_age_s) {
        /* only a change that adds GPU demand meets whenStale: a scale-down, a metadata-only
         * UPDATE or the garbage collector's finalizer removal adds none */
        if (ct->increase > 0)
            capacity_stale(cp, ru, eff, ct);
        return 0;
    }
    if (capacity_judge(rn->view, rq, res) < 0) {
        capacity_report(cp, ru, eff, CAP_NEVER, res->reasons, res->reasons, NULL);
        return -1;
    }
    if (!res->judged)
        return 1;
    /* the plugin's config fails it on every node it may go to: refused whatever
     * denySharedMultiple says; else that setting decides */
    if (res->all_fail_gt_one || (s->deny_shared_multiple && res->all_shared))
        shared_multiple(ct, res, &doc->gpu_resources, res->all_fail_gt_one, shared, sizeof(shared));
    if (shared[0])
        capacity_report(cp, ru, as, CAP_NEVER, shared, shared, NULL);
    if (ct->pod || (ct->increase == 0 && !ct->grew))
        return 1; /* nothing new: a changed template is judged against at most below */
    capacity_explain(rq, res, expl, sizeof(expl));
    /* the autoscalers, only for what the nodes there are do not hold */
    if ((res->eligible == 0 && res->transient == 0) || (ct->grew && ct->total > res->fit_ever) ||
        ct->increase > res->fit_now)
        *grp = growth_for(cp, ru, rq, res);
    gr = *grp;
    scales = gr != NULL && gr->readable;
    ever = res->fit_ever + (scales ? gr->pods_ever : 0);
    grow_now = growth_now(gr, res, &owed);
    soon = res->fit_now + grow_now;
    growth_explain(gr, grow_now, expl, sizeof(expl));
    if (res->eligible == 0 && res->transient == 0) {
        /* no node matches; only a node autoscaler can add one (a pool scaled to zero). With
         * `autoscaling: false` written in the rule none will, and the pods would wait
         * forever: a typo in a selector is caught here. So is a template no node group or
         * NodePool the autoscalers read would take */
        bool never = ct->grew && ((s->autoscaling_set && !s->autoscaling) ||
                                  (scales && ct->total > ever && !gr->unknown && !s->autoscaling));
        enum cap_severity sev = never ? CAP_NEVER : CAP_NOTE;

        placement_text(ct->spec, where, sizeof(where));
        stuck[0] = '\0';
        if (scales)
            growth_stuck_text(gr, stuck, sizeof(stuck));
        if (never && scales)
            say(brief, sizeof(brief),
                "%s can never run: no node matches %s, and no node group or NodePool the "
                "node autoscalers may grow would hold its pods%s%.700s: fix the typo or the "
                "labels",
                ct->what, where, stuck[0] ? ": " : "", stuck);
        else if (never)
            say(brief, sizeof(brief),
                "%s can never run: no node matches %s, and the capacity rule says no node "
                "autoscaler adds nodes (autoscaling: false): fix the typo or the labels",
                ct->what, where);
        else if (scales && ct->increase <= grow_now) {
            growth_grows_text(gr, owed + ct->increase, false, grows, sizeof(grows));
            say(brief, sizeof(brief),
                "%s fits after scale-up: %.800s; no node matches %s now, so its pods wait "
                "Pending until the nodes come",
                ct->what, grows, where);
        } else if (scales && !gr->unknown) {
            say(brief, sizeof(brief),
                "%s: no node matches %s now, and the node autoscalers may add room for only "
                "%lld of its %lld pods now%s%.700s: the rest will wait Pending",
                ct->what, where, (long long)grow_now, (long long)ct->increase, stuck[0] ? ": " : "",
                stuck);
            sev = CAP_NOT_NOW;
        } else
            say(brief, sizeof(brief),
                "%s: no node matches %s now: check it for a typo; its pods wait Pending "
                "unless a node autoscaler adds a matching node (where none runs, autoscaling: "
                "false in the rule makes this a refusal)",
                ct->what, where);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        capacity_report(cp, ru, as, sev, text, brief, NULL);
        return 1;
    }
    if (ct->job && ct->total > ever && ever > 0) {
        /* a Job's pods run as others finish: its width is clamped to what the eligible nodes
         * (and those the autoscalers may add) hold at most, and that is what must fit now */
        char more[96] = "";

        if (scales && gr->pods_ever > 0)
            say(more, sizeof(more), ", and %lld on the nodes the node autoscalers may add",
                (long long)gr->pods_ever);
        say(brief, sizeof(brief),
            "%s runs at most %lld of its %lld pods at once on the eligible nodes (%lld %s "
            "in all)%s; the others run as those finish: lower parallelism to %lld to say so",
            ct->what, (long long)ever, (long long)ct->total, (long long)res->total_gpus[0],
            res->res[0].name, more, (long long)ever);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        capacity_report(cp, ru, as, CAP_NOTE, text, brief, NULL);
        /* of the pods it runs at once, clamped, those it did not run before */
        ct->increase = ever > ct->before ? ever - ct->before : 0;
        ct->total = ever;
        rq->increase = ct->increase; /* the arithmetic of what is judged now */
        rq->total = ct->total;
        if (res->lower > 0 && ct->increase > res->fit_alone && ct->increase <= res->fit_now) {
            /* the clamped width may fit only by preempting: judged again for it */
            struct capacity_result *again = malloc(sizeof(*again));

            if (again != NULL && capacity_judge(rn->view, rq, again) == 0)
                *res = *again;
            free(again);
        }
        capacity_explain(rq, res, expl, sizeof(expl));
        grow_now = growth_now(gr, res, &owed);
        soon = res->fit_now + grow_now;
        growth_explain(gr, grow_now, expl, sizeof(expl));
    } else if (ct->grew && ct->total > ever) {
        char fix[200], held[800] = "";
        /* autoscaling: true says an autoscaler gpuadmit cannot read may add more; so does a
         * group it cannot size */
        bool may_grow = s->autoscaling || (scales && gr->unknown);

        if (ever == 0)
            say(fix, sizeof(fix),
                "no eligible node holds one pod: ask for fewer GPUs per pod or add larger "
                "nodes");
        else
            say(fix, sizeof(fix), "lower %s to %lld or add nodes%s",
                ct->job ? "parallelism" : "replicas", (long long)ever,
                scales ? " (raise a node group's maxSize or a NodePool's limits)" : "");
        stuck[0] = '\0';
        if (scales) {
            growth_stuck_text(gr, stuck, sizeof(stuck));
            if (gr->pods_ever == 0)
                say(held, sizeof(held), "none on new ones");
            else {
                growth_grows_text(gr, GROWTH_UNBOUNDED, true, grows, sizeof(grows));
                say(held, sizeof(held), "%lld on the nodes the node autoscalers may add: %.600s",
                    (long long)gr->pods_ever, grows);
            }
        }
        if (!scales)
            say(brief, sizeof(brief),
                "%s can never fit: %lld pod%s at once, at most %lld fit the eligible nodes "
                "(%lld %s in all, cordoned and not Ready nodes included); %s",
                ct->what, (long long)ct->total, ct->total == 1 ? "" : "s", (long long)ever,
                (long long)res->total_gpus[0], res->res[0].name, fix);
        else if (gr->unknown)
            /* not "never": a group gpuadmit cannot size may hold the rest */
            say(brief, sizeof(brief),
                "%s may never fit: %lld pod%s at once, at most %lld fit what gpuadmit can see "
                "(%lld on the eligible nodes, %.700s), but %.400s%s%.600s",
                ct->what, (long long)ct->total, ct->total == 1 ? "" : "s", (long long)ever,
                (long long)res->fit_ever, held, gr->unknown_why, stuck[0] ? "; " : "", stuck);
        else
            say(brief, sizeof(brief),
                "%s can never fit: %lld pod%s at once, at most %lld fit (%lld on the eligible "
                "nodes, %.700s)%s%.600s; %s",
                ct->what, (long long)ct->total, ct->total == 1 ? "" : "s", (long long)ever,
                (long long)res->fit_ever, held, stuck[0] ? ": " : "", stuck, fix);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        /* an autoscaled cluster can grow: a warning; a Job none of whose pods fits any node
         * never runs */
        capacity_report(cp, ru, as, !may_grow ? CAP_NEVER : CAP_NOT_NOW, text, brief, NULL);
        return 1;
    }
    if (ct->increase > res->fit_now && scales && ct->increase <= soon) {
        /* Cluster Autoscaler and Karpenter add nodes for the pods the scheduler cannot place:
         * they wait minutes, not for good */
        char first[96] = "";

        growth_grows_text(gr, owed + ct->increase - res->fit_now, false, grows, sizeof(grows));
        if (owed > 0)
            say(first, sizeof(first), ", after the %lld pod%s already waiting for them",
                (long long)owed, owed == 1 ? "" : "s");
        /* the growth first: the apiserver cuts a warning to 256 characters */
        say(brief, sizeof(brief),
            "%s fits after scale-up: %.800s; %lld of its %lld more pods fit now, the other %lld "
            "wait Pending until the nodes come%s",
            ct->what, grows, (long long)res->fit_now, (long long)ct->increase,
            (long long)(ct->increase - res->fit_now), first);
        snprintf(text, sizeof(text), "%s; %s", brief, expl);
        capacity_report(cp, ru, as, CAP_NOTE, text, brief, NULL);
        if (!ct->cron)
            hold(cp, ru, rq, res->fit_now);
    } else if (ct->increase > res->fit_now) {
        /* the scheduler keeps no headroom: pods that fit once it is spent start, and eat it */
        struct capacity_request bare = *rq;
        struct capacity_result nohr;
        bool eats = false;
        char room[128] = "";

        bare.headroom = 0;
        if (rq->headroom > 0 && capacity_judge(rn->view, &bare, &nohr) == 0)
            eats = ct->increase <= nohr.fit_now;
        if (scales)
            say(room, sizeof(room), ", and the node autoscalers may add room for %lld more now",
                (long long)grow_now);
        say(brief, sizeof(brief), "%s: only %lld of %lld more pods fit now%s, the rest %s",
            ct->what, (long long)res->fit_now, (long long)ct->increase, room,
            ct->cron ? "of each Job's pods will wait Pending (or, with available: Deny, "
                       "the Job is refused) unless GPUs are free when the schedule fires"
            : eats   ? "eat into the headroom the capacity rule keeps free (the scheduler "
                       "keeps none: they would start)"
                     : "will wait Pending");
        not_now_hints(ru, ct, res, &hs);
        growth_hints(gr, &hs);
        with_hints(brief, &hs, full, sizeof(full));
        snprintf(text, sizeof(text), "%s; %s", full, expl);
        /* a CronJob's Jobs come later, and are judged when they do */
        capacity_report(cp, ru, as, ct->cron ? CAP_NOTE : CAP_NOT_NOW, text, brief, &hs);
        if (!ct->cron)
            hold(cp, ru, rq, res->fit_now);
    } else {
        /* a CronJob's Jobs preempt when they come, and are judged then */
        if (res->preempt_only && !ct->cron)
            preempt_note(cp, ru, as, ct, res, expl);
        if (!ct->hpa && !ct->cron)
            hold(cp, ru, rq, ct->increase);
    }
    return 1;
}

/* Whether a pod of the template could never run: what capacity_findings finds "never" in a new
 * workload of one replica. A pod itself gets no such finding (the scheduler keeps it Pending,
 * and the webhook admits it), but the offline report's verdict is the same for both. */
static bool pod_never(const struct rule *ru, const struct capacity_result *res)
{
    const struct capacity_settings *s = ru->settings;
    if (res->eligible == 0 && res->transient == 0)
        return s->autoscaling_set && !s->autoscaling;
    return !s->autoscaling && res->fit_ever < 1;
}

/* The judgement of one capacity rule in the caller's trace, for gpuadmit capacity: an entry
 * {"stage", "rule", "type", "capacity": {...}} with no outcome (eval.h). asked is the pods the
 * change asks for, before a Job's width is clamped to what the nodes hold at most: all of them
 * fit now or some wait. The verdict is "never" when the rule found what it denies whatever
 * `available` says (CAP_NEVER), else "notNow" when fewer than asked fit now, else "fits";
 * "invalid" when the template's GPU amounts do not parse. */
static void trace_capacity(struct cap_pass *cp, const struct rule *ru,
                           const struct workload_demand *ct, const struct capacity_request *rq,
                           const struct capacity_result *res, int64_t asked, int judged,
                           struct growth **grp)
{
    struct run *rn = cp->rn;
    struct capacity_request as = *rq;
    char expl[MSG_MAX] = "";
    bool pod_nv = cp->worst != CAP_NEVER && ct->pod && res->judged && pod_never(ru, res);
    const struct growth *gr;
    bool scales;
    const char *verdict, *why = judged < 0 ? res->reasons : cp->why;
    yyjson_mut_val *e, *up = NULL;

    /* a pod no node there is holds, that a node autoscaler may add one for */
    if (pod_nv && *grp == NULL && rn->view != NULL)
        *grp = growth_for(cp, ru, rq, res);
    int64_t owed, grow_now;

    gr = *grp;
    scales = gr != NULL && gr->readable;
    grow_now = growth_now(gr, res, &owed);
    if (pod_nv && scales && (gr->pods_ever > 0 || gr->unknown))
        pod_nv = false;
    /* pods that wait for the nodes an autoscaler adds for them wait minutes: they fit */
    verdict = judged < 0                                       ? "invalid"
              : cp->worst == CAP_NEVER || pod_nv               ? "never"
              : res->judged && asked > res->fit_now + grow_now ? "notNow"
                                                               : "fits";
    as.increase = asked;
    if (res->judged)
        capacity_explain(&as, res, expl, sizeof(expl));
    growth_explain(gr, grow_now, expl, sizeof(expl));
    if (pod_nv) /* the words of capacity_findings' findings, which a pod does not get */
        why = res->eligible == 0 && res->transient == 0
                  ? "no node matches it, and the capacity rule says no node autoscaler adds "
                    "nodes (autoscaling: false)"
                  : "no eligible node holds one pod, cordoned and not Ready nodes included: ask "
                    "for fewer GPUs per pod or add larger nodes";
    if (scales)
        up = json_pack(rn->tdoc, "{s:I, s:I, s:I, s:b}", "podsNow", grow_now, "podsEver",
                       gr->pods_ever, "waitingFirst", owed, "unknown", gr->unknown);
    e = json_pack(rn->tdoc,
                  "{s:s, s:s, s:s, s:{s:b, s:I, s:I, s:I, s:i, s:s, s:s, s:s, s:s, s:o*}}", "stage",
                  rn->mutating ? "mutate" : "validate", "rule", ru->name, "type",
                  policy_rule_type_name(ru->type), "capacity", "requestsGPUs", res->judged, "pods",
                  asked, "fitNow", res->fit_now, "fitEver", res->fit_ever, "eligibleNodes",
                  res->eligible, "notEligible", res->reasons, "explanation", expl, "verdict",
                  verdict, "why", why, "autoscalers", up);
    /* left out when it cannot be made (out of memory), as trace_rule's entries are */
    if (e != NULL)
        yyjson_mut_arr_append(rn->trace, e);
}

/* One capacity rule on one judged object: its findings, and for the offline CLI its judgement. */
static void capacity_rule(struct cap_pass *cp, const struct policy_doc *doc, const struct rule *ru,
                          enum rule_enforcement eff, struct workload_demand *ct)
{
    struct run *rn = cp->rn;
    const struct capacity_settings *s = ru->settings;
    struct capacity_request rq = {
        ct->spec, &doc->gpu_resources, ct->increase, ct->total, s->headroom, ct->key, ct->before};
    struct capacity_request asked = rq;
    struct capacity_result res;
    struct growth *gr = NULL;
    int judged;

    /* all but the preemption's text, as capacity_judge() does */
    memset(&res, 0, offsetof(struct capacity_result, preempt_who));
    res.preempt_who[0] = '\0';
    cp->worst = -1;
    cp->why[0] = '\0';
    /* a pod is one pod; a Job's clamped width changes rq, not what it asked for */
    asked.increase = ct->pod ? 1 : ct->increase;
    judged = capacity_findings(cp, doc, ru, eff, ct, &rq, &res, &gr);
    if (judged != 0 && rn->trace != NULL)
        trace_capacity(cp, ru, ct, &asked, &res, asked.increase, judged, &gr);
    free(gr);
}

/* The pod spec a capacity rule judges: what the scheduler will get (eval_predict()). A template's
 * pods are patched at their own CREATE, so a template is judged as eval_predict() patches it, in
 * every mode: a Deployment made before gpuadmit patched templates, or under autogen: false,
 * still gets pods with the toleration. A pod reached /validate patched by /mutate unless a
 * rollout switch (rollout: --audit-only or spec.auditOnly) held the patches back; only then is
 * it predicted. The scale subresource's and the HPA's template comes from the view: as stored,
 * it has what gpuadmit patched into it when it was written, or nothing under --audit-only, so it
 * is predicted as well. Left as it is: a prediction that cannot be made (out of memory). */
static yyjson_val *judged_spec(struct run *rn, const struct policy *p, bool rollout,
                               const struct workload_demand *ct, yyjson_val *spec)
{
    yyjson_val *v;

    if (ct->spec_doc != NULL)
        return (v = eval_predict_template(rn, p, spec)) != NULL && yyjson_is_obj(v) ? v : spec;
    if (rn->found == NULL || rn->found->ephemeral ||
        patch_get(rn->r->object, rn->found->prefix) != spec || (rn->found->is_pod && !rollout))
        return spec;
    if (rn->pred.doc == NULL && eval_predict(rn, p) < 0)
        return spec;
    return yyjson_is_obj(patch_get(rn->pred.doc, rn->found->prefix))
               ? patch_get(rn->pred.doc, rn->found->prefix)
               : spec;
}

/* /validate: every capacity rule (type t) in scope judges the workload, scale or HPA request. */
static void capacity_pass(struct run *rn, const struct policy *p, enum rule_type t)
{
    struct cap_pass pass, *cp = &pass;
    struct workload_demand ct;
    struct who w;
    static const struct target none = {"object", "/spec", "/metadata", NULL, false, false};
    const struct rule *first = NULL;
    yyjson_val *spec;

    /* not = {0}: that zeroes why[] too, for every review */
    memset(&pass, 0, offsetof(struct cap_pass, why));
    pass.rn = rn;
    pass.why[0] = '\0';
    memset(&ct, 0, sizeof(ct));
    for (size_t i = 0; i < p->n_docs && first == NULL; i++)
        for (size_t k = 0; k < p->docs[i].n_rules && first == NULL; k++)
            if (p->docs[i].rules[k].type == t)
                first = &p->docs[i].rules[k];
    if (first == NULL)
        return;
    /* a user writing the owner reference into a ReplicaSet of their own does not skip the
     * check: only the controllers' ReplicaSets are judged at their Deployment */
    if (!workload_demand_of(
            rn->r,
            ((const struct capacity_settings *)first->settings)->owned_replicasets ||
                !controller_identity(rn->r->username),
            rn->view, &ct)) {
        if (!review_gvr_is(rn->r, "", "pods") || rn->r->op != REVIEW_CREATE ||
            rn->r->sub_resource[0] || !yyjson_is_obj(spec = patch_get(rn->r->object, "/spec")))
            return;
        ct.spec = spec;
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

            if (ru->type != t || !in_scope(&ru->scope, &w))
                continue;
            ct.spec = judged_spec(rn, p, rn->audit_only || doc->audit_only, &ct, spec);
            capacity_rule(cp, doc, ru, eff, &ct);
            if (rn->findings == before)
                trace_rule(rn, ru, eff, OUTCOME_PASS, "");
        }
    }
    /* reserve only what is admitted for real: not a dry run, and nothing denied it here */
    if (cp->reserve_pods > 0 && rn->n_deny == 0 && !rn->r->dry_run && !ct.hpa && !ct.pod &&
        !ct.cron) {
        struct capacity_request rq = {cp->reserve_spec, cp->reserve_globs,    cp->reserve_pods,
                                      cp->reserve_pods, cp->reserve_headroom, ct.key,
                                      ct.before};

        capacity_reserve(rn->view, &rq, cp->reserve_pods, (double)cp->reserve_s);
    }
    /* a scale-down takes back what its earlier admissions still hold past the new replicas */
    if (rn->view != NULL && ct.key != 0 && ct.total < ct.before && rn->n_deny == 0 &&
        !rn->r->dry_run && !ct.hpa && !ct.pod && !ct.cron)
        capacity_shrink(rn->view, ct.key, ct.total);
    workload_demand_release(&ct);
}

static void settings_free(void *settings)
{
    struct capacity_settings *s = settings;

    if (s != NULL) {
        strlist_free(&s->group_labels);
        growth_templates_free(s->templates, s->n_templates);
    }
    free(settings);
}

const struct rule_ops rule_capacity_ops = {
    .keys = KEYS,
    .n_keys = CAP_N,
    .load = load,
    .free = settings_free,
    .pass = capacity_pass,
    .reads = (1u << CLUSTER_PRIORITYCLASSES) | (1u << CLUSTER_NODES) | (1u << CLUSTER_PODS),
    .judges_fit = true,
};

const struct capacity_settings *capacity_settings(const struct rule *r)
{
    return rule_settings_of(r, &rule_capacity_ops);
}
