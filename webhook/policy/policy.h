/*
 * policy.h: the GPU policy as loaded from rule files: its types, the names of its vocabulary,
 * its snapshots and the holder of the one in force. Loading is rules.h's, evaluation eval.h's.
 *
 * A policy is an immutable, reference-counted snapshot of every GPUPolicy document in the rules
 * directory. Requests take a reference (policy_ref) to the current snapshot for their whole
 * evaluation; a reload builds a new snapshot and swaps it in, so a request never sees half a
 * policy and a broken reload leaves the last good one in force.
 *
 * Ownership: everything reachable from a struct policy is owned by it and freed with the last
 * policy_unref(). Strings are NUL-terminated UTF-8.
 */
#ifndef GPUADMIT_POLICY_H
#define GPUADMIT_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "rule_kinds.h"

/* A rule's type, one per line of rule_kinds.h; its name (policy_rule_type_name) is what rule
 * files write, and logs, traces and metrics show. RULE_TYPES counts them. */
#define RULE_TYPE_ENUM(ID, NAME, stem) RULE_##ID,
enum rule_type { RULE_KINDS(RULE_TYPE_ENUM) RULE_TYPES };
#undef RULE_TYPE_ENUM
/* What the capacity rule does while the cluster view is not synced or too old (its whenStale);
 * STALE_MODES counts them. */
enum stale_mode { STALE_ALLOW, STALE_WARN, STALE_DENY, STALE_MODES };
enum rule_action { ACTION_DENY, ACTION_MUTATE };
/* How a rule acts on what it finds; ENFORCEMENTS counts them. */
enum rule_enforcement { ENFORCE_ENFORCE, ENFORCE_WARN, ENFORCE_AUDIT, ENFORCEMENTS };

/* What one rule found about one review: one "decision" log line, one count of the metrics'
 * rule outcomes. Under Warn and Audit a rule reports what enforcing would do (would_*). */
enum finding {
    FINDING_DENY,        /* denied (Enforce) */
    FINDING_PATCH,       /* patched (Enforce) */
    FINDING_WARN,        /* warned: a note, a capacity warning */
    FINDING_WOULD_DENY,  /* enforcing would deny */
    FINDING_WOULD_PATCH, /* enforcing would patch */
    FINDING_WOULD_WARN,  /* Audit: enforcing would warn */
    FINDINGS
};

/* A rule's outcome at one or both endpoints, as gpuadmit check and test report it, from the
 * weakest to the strongest: skip (not in scope, or not judged), pass (judged, nothing found),
 * then what the rule did (an Audit finding of any kind is "audit"). OUTCOMES counts them. */
enum rule_outcome {
    OUTCOME_SKIP,
    OUTCOME_PASS,
    OUTCOME_PATCH,
    OUTCOME_AUDIT,
    OUTCOME_WARN,
    OUTCOME_DENY,
    OUTCOMES
};

/* The names of the vocabulary, each kept in one table in policy.c (static strings; NULL for a
 * value out of range): the rule type as rule files write it, the enforcement, the finding as the
 * metrics label it, the outcome as gpuadmit check and test report it. */
const char *policy_rule_type_name(enum rule_type t);
/* The rule type named name, or -1 (reading a trace back). */
int policy_rule_type_of(const char *name);
const char *policy_enforcement_name(enum rule_enforcement e);
const char *policy_stale_mode_name(enum stale_mode m);
const char *policy_finding_name(enum finding f);
/* The finding as decision logs and messages word it: "denied", "would deny", ... */
const char *policy_finding_text(enum finding f);
const char *policy_outcome_name(enum rule_outcome o);
/* The outcome named name, or -1 (reading a trace or a test's expectation back). */
int policy_outcome_of(const char *name);
/* The outcome a finding gives its rule under eff. */
enum rule_outcome policy_finding_outcome(enum finding f, enum rule_enforcement eff);

struct strlist {
    char **v;
    size_t n;
};

enum selector_op { SEL_IN, SEL_NOT_IN, SEL_EXISTS, SEL_DOES_NOT_EXIST };

/* One requirement of a Kubernetes label selector; matchLabels entries become SEL_IN with one
 * value. */
struct label_req {
    char *key;
    enum selector_op op;
    struct strlist values; /* empty for Exists and DoesNotExist */
};

struct label_selector {
    bool set; /* false: the selector was not given (matches everything) */
    struct label_req *reqs;
    size_t n;
};

/* Who an object is: a "match" block needs every part that is given to hold; an "exclude" block
 * removes the object when any part that is given holds. Lists hold globs (fnmatch, no flags). */
struct match {
    struct strlist namespaces;
    struct label_selector labels;    /* on the pod's labels (the template's for workloads) */
    struct strlist users;            /* userInfo.username */
    struct strlist groups;           /* userInfo.groups */
    struct strlist service_accounts; /* "NAMESPACE/NAME" of a system:serviceaccount: user */
    struct strlist owner_kinds;      /* kinds in the pod's ownerReferences, e.g. DaemonSet */
};

struct scope {
    bool has_match, has_exclude;
    struct match match;
    struct match exclude;
};

struct node_label {
    char *key;
    char *value; /* NULL: any value (the key must exist) */
};

struct taint {
    char *key;
    char *value;  /* NULL: any value (tolerated with operator Exists) */
    char *effect; /* NoSchedule, PreferNoSchedule or NoExecute */
};

struct priority_class {
    char *name;
    int32_t value;
    char *preemption_policy; /* PreemptLowerPriority or Never */
};

struct rule {
    char *name; /* unique across the directory; a valid audit-annotation key */
    enum rule_type type;
    enum rule_action action;
    enum rule_enforcement enforcement;
    struct scope scope; /* narrows the policy's scope */
    unsigned line;      /* where the rule starts in its file */

    /* the type's own settings, made by its loader and freed by its kind (kind.h): read through
     * the module's header (rule_gpu_request.h, ...); NULL for a type without any */
    void *settings;
};

/* A GPU pool (gpu.pools): one kind of GPU node, the GPU resources it serves, the labels that
 * select its nodes (all of them: node-selector adds every one that has a value) and its taints.
 * A resource belongs to the first pool whose globs match it. */
struct gpu_pool {
    char *name;
    struct strlist resources; /* globs */
    struct node_label *labels;
    size_t n_labels;
    struct taint *taints;
    size_t n_taints;
};

/* Most pools in one policy: a pod's pools are a bit set (unsigned). Most node labels and
 * taints of one pool: a pod's patch gets them all, into arrays of these sizes. */
#define POLICY_POOLS_MAX 16
#define POOL_LABELS_MAX  32u
#define POOL_TAINTS_MAX  32u

struct policy_doc {
    char *name;
    char *file;
    bool audit_only;
    bool autogen; /* apply the rules to pod templates of workloads too */
    /* gpu.pools, or none: then the lists below are the policy's one kind of GPU node; with
     * pools they are the union of the pools' (what makes a pod or node a GPU one) */
    struct gpu_pool *pools;
    size_t n_pools;
    struct strlist gpu_resources;
    struct node_label *gpu_node_labels;
    size_t n_gpu_node_labels;
    struct taint *gpu_taints;
    size_t n_gpu_taints;
    struct strlist gpu_runtime_classes;
    struct priority_class *classes;
    size_t n_classes;
    struct scope scope;
    struct rule *rules;
    size_t n_rules;
};

struct policy {
    atomic_long refs;
    unsigned long generation;
    struct policy_doc *docs;
    size_t n_docs;
};

struct policy *policy_ref(struct policy *p);
void policy_unref(struct policy *p);
/* Frees a policy that was never shared (the loader's error path). */
void policy_free(struct policy *p);

/* The policy in force: readers take a reference, a reload swaps in a new snapshot. */
struct policy_holder;

/* New holder serving p (the holder takes over the caller's reference). */
struct policy_holder *policy_holder_new(struct policy *p);
void policy_holder_free(struct policy_holder *h);
/* A new reference to the current policy: release with policy_unref(). Thread-safe. */
struct policy *policy_holder_get(struct policy_holder *h);
/* Puts p in force (taking over the caller's reference) with the next generation number, and
 * drops the holder's reference to the old one; requests still using it keep it alive. */
void policy_holder_swap(struct policy_holder *h, struct policy *p);

#endif
