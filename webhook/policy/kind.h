/*
 * kind.h: what the policy's engine knows of a rule type, internal to policy/: the operations
 * of one kind (struct rule_ops), and the table rule_kinds[] (kind.c), one entry per line of
 * rule_kinds.h, indexed by enum rule_type: its name and its operations.
 *
 * Each module rule_<stem>.c defines const struct rule_ops rule_<stem>_ops (declared below from
 * rule_kinds.h, so that a module missing is a link error) with designated initializers: what
 * it leaves out is NULL or false, and means "nothing of that" (no settings, no judge of
 * ephemeral containers, ...). The loader (rules.c) and the evaluator (eval.c) test these
 * members, never a type's enum value.
 */
#ifndef GPUADMIT_KIND_H
#define GPUADMIT_KIND_H

#include <stdbool.h>
#include <stddef.h>

#include "load.h"
#include "judge.h"
#include "policy.h"

struct rule_ops {
    /* The keys of its rules beyond the common ones (R_NAME... in load.h), in the order its
     * documentation lists them, all optional; a key several kinds share ("default") is one
     * key of the rule format, which only the kinds listing it accept. */
    const struct field *keys;
    size_t n_keys;
    /* Its settings from in->v (the values of keys, NULL where absent), or NULL: none, or out of
     * memory (recorded). Errors are recorded through L. NULL: a kind without settings. */
    void *(*load)(struct loader *L, const struct rule_input *in);
    /* Frees what load made (NULL included). NULL: load makes nothing. */
    void (*free)(void *settings);
    /* Judges one rule on the pod spec in c. NULL: the kind is judged by its own pass. */
    enum verdict (*judge)(struct ctx *c, const struct rule *ru);
    /* Judges the ephemeral containers kubectl debug adds (pods/ephemeralcontainers). NULL: the
     * kind does not judge them. */
    enum verdict (*ephemeral)(struct ctx *c, const struct rule *ru);
    /* Judged before every other rule of every document, whatever the order of the policy: its
     * patch may make a pod one the other rules judge (gpu-request adds the GPU). */
    bool first;
    /* /validate, after every judge: judges the rules of this kind (type t) in p, on its own,
     * for a kind without judge. */
    void (*pass)(struct run *rn, const struct policy *p, enum rule_type t);
    /* The kinds of the cluster view its rules read (bits 1u << CLUSTER_*), for
     * eval_view_gaps(). */
    unsigned reads;
    /* Patches a pod with the node labels of its GPU pool (pool.h): what gpuadmit check's lint
     * of the pools against a snapshot is about. */
    bool adds_pool_labels;
    /* Its findings say whether workloads fit the cluster (the trace's "capacity" judgement):
     * what gpuadmit capacity reports, and what check cannot judge without a snapshot. Not
     * implied by pass: another kind may have a pass of its own. */
    bool judges_fit;
};

#define RULE_OPS_DECLARE(ID, NAME, stem) extern const struct rule_ops rule_##stem##_ops;
RULE_KINDS(RULE_OPS_DECLARE)
#undef RULE_OPS_DECLARE

struct rule_kind {
    const char *name; /* rule_kinds.h's NAME */
    const struct rule_ops *ops;
};

/* The kinds, indexed by enum rule_type. */
extern const struct rule_kind rule_kinds[RULE_TYPES];

/* The operations of type t; NULL for a value out of range. */
const struct rule_ops *rule_ops_of(enum rule_type t);

/* r's settings when r is a rule of the kind whose operations are ops, else NULL: the body of
 * each kind's checked accessor (capacity_settings() and the like). */
const void *rule_settings_of(const struct rule *r, const struct rule_ops *ops);

#endif
