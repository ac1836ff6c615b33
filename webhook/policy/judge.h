/*
 * judge.h: what the judges of the rule kinds share with the evaluator, internal to policy/
 * (eval.c defines it; the kinds' modules, through kind.h, use it): the review being judged
 * (struct run), one rule's view of it (struct ctx) and its verdict, the pod spec's facts the
 * kinds share, and the ways a finding is recorded (eval.h says what each endpoint does with it).
 */
#ifndef GPUADMIT_JUDGE_H
#define GPUADMIT_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "decision.h"
#include "diag.h"
#include "patch.h"
#include "pod.h"
#include "policy.h"
#include "review.h"

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

/* One review's evaluation. On /mutate two working copies are kept: "real" carries only what
 * enforcing rules patch (the patch that is sent), "pred" what every Mutate rule would patch if it
 * were enforced, so that Warn and Audit report what enforcing would really do, each rule seeing
 * the earlier rules' would-be patches. pred is made only when a rule needs it. On /validate
 * there is no real (nothing is patched there), and pred is made by eval_predict() for a kind
 * judged in its own pass (capacity). */
struct run {
    const struct review *r;
    const struct target *t;
    const struct target *found; /* the object's pod spec, also when t is NULL because the rules
                                   have nothing to judge in this review (an unchanged template) */
    bool mutating;
    bool audit_only;
    struct patch real;
    struct patch pred;
    /* a scale's or HPA's template from the view, and its prediction (eval_predict_template()) */
    yyjson_doc *tmpl_doc;
    struct patch tmpl_pred;
    struct cluster *view; /* NULL: no cluster configured */
    char subject[320];    /* what a denial names when no pod target does ("deployments ml/x") */
    struct decision *dec;
    char deny[4 * MSG_MAX]; /* the joined denial message */
    int n_deny;
    yyjson_mut_doc *tdoc;  /* borrowed: the document of trace */
    yyjson_mut_val *trace; /* borrowed: the caller's per-rule trace, or NULL */
    unsigned findings;     /* decision lines so far: a rule that adds none passed */
    struct demand_memo memo;
};

/* The document a patch's values are built in (only while the rule may patch). */
#define PATCH_OUT(c) ((c)->pt->out)

/* pod_gpu_demand(c->spec) with the policy document's GPU resources, through the review's memo. */
int spec_demand(struct ctx *c, struct pod_demand *out, struct diag *d);
/* Whether the spec judged requests GPUs. */
bool requests_gpus(struct ctx *c);
bool view_synced(const struct ctx *c);
/* The pools the pod's GPU demand draws on (pool.h); 0 without pools. */
unsigned pod_pools(struct ctx *c);

/* Appends to buf (len bytes), after "; " when it holds text already. */
void add_text(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Appends one problem to buf (c->problem, c->fixable): a denial joins them with "; ", a
 * warning goes out one per problem. */
void add_problem(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* How a Mutate rule that found desc ends: patched, desc is a fixed problem and did what the
 * patch did (V_FIXED); not, desc is a problem left as it is (V_PROBLEM). */
enum verdict fixed_or_problem(struct ctx *c, bool patched, const char *desc, const char *did);

/* Refreshes what the rule looks at after operations: a new immutable copy of the working copy
 * (patch.h). -1 when out of memory. */
int resync(struct ctx *c);
/* An add operation at the pod spec's rel + tokens of value (a value of PATCH_OUT(c), or NULL
 * when building it failed: then -1). The rule sees it after resync(); add_at does both. */
int add_op(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
           yyjson_mut_val *value);
int add_at(struct ctx *c, const char *rel, const char *const *tokens, size_t n,
           yyjson_mut_val *value);

/* A container's name, "" when it has none. */
const char *container_name(yyjson_val *c);
bool label_matches(const struct node_label *l, const char *key, const char *value);
/* Whether the toleration tol tolerates the taint t. */
bool tolerates(yyjson_val *tol, const struct taint *t);
/* The spec's required node affinity terms. */
yyjson_val *required_terms(yyjson_val *spec);
/* Whether the nodeSelector names one of the n GPU node labels; which, in words, into why. */
bool selects_gpu_label(const struct node_label *labels, size_t n, yyjson_val *spec, char *why,
                       size_t len);
/* A required node affinity term that keeps the pod on nodes of one of the nl_n labels (an In
 * expression whose values all match one), or with any_value one that lets it onto them. */
bool term_on_gpu_label(const struct node_label *labels, size_t nl_n, yyjson_val *term,
                       bool any_value);

/* Scope: whether the request's who is in s. */
bool in_scope(const struct scope *s, const struct who *w);
void who_init(struct who *w, const struct review *r, const struct target *t, yyjson_val *object);
/* Whether the request comes from a controller (kube-controller-manager, kube-system's service
 * accounts). */
bool controller_identity(const char *user);

/* One rule's outcome in the caller's trace, when it asked for one. */
void trace_rule(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                enum rule_outcome outcome, const char *message);
/* The decision log line of one finding, its note for the metrics and its trace entry; label
 * words the outcome when given. */
void log_decision(struct run *rn, const struct rule *ru, enum rule_enforcement eff, enum finding f,
                  const char *label, const char *message);
/* An Enforce denial of the problems. */
void record_deny(struct run *rn, const struct rule *ru, const char *problems);
/* A Warn or Audit finding f and its problems; label words it (the finding's words when NULL). */
void record_report(struct run *rn, const struct rule *ru, enum rule_enforcement eff, enum finding f,
                   const char *label, const char *problems);
/* /validate: into rn->pred, the object as the enforced Mutate rules in scope patch it (what the
 * scheduler gets). -1 when out of memory. */
int eval_predict(struct run *rn, const struct policy *p);
/* The same for a pod template spec from the view (a scale's, an HPA's target): the spec as its
 * pods will be patched, kept by rn until the evaluation ends; NULL when it cannot be made. */
yyjson_val *eval_predict_template(struct run *rn, const struct policy *p, yyjson_val *spec);

#endif
