/*
 * eval.h: judging one AdmissionReview against a policy.
 *
 * Pods are judged on CREATE; Deployments, ReplicaSets, StatefulSets, Jobs and CronJobs on CREATE
 * and on UPDATEs that change their pod template, through the template (when autogen is on);
 * the ConfigMaps a device-plugin-config rule names on CREATE and UPDATE, at /validate.
 * Everything else is allowed untouched.
 *
 * What each endpoint does with a rule that finds a problem:
 *
 *   action  enforcement  /mutate                                /validate
 *   Mutate  Enforce      patch; annotation "patched: ..."       deny if the problem is still there
 *   Mutate  Warn         warning "would patch: ..."             -
 *   Mutate  Audit        annotation + log "would patch: ..."    -
 *   Deny    Enforce      -                                      deny
 *   Deny    Warn         -                                      warning "would deny: ..."
 *   Deny    Audit        -                                      annotation + log "would deny: ..."
 *
 * A Mutate rule under Warn or Audit reports "would deny" for a problem it could not patch, and
 * judges the object as the earlier Mutate rules would have patched it, so that its report is
 * what enforcing would really do. So does a capacity rule under Warn or Audit at /validate: it
 * judges the pod template as every Mutate rule would have patched it, since /validate sees the
 * object as the mutating webhooks left it, which in audit-only mode is unpatched. A capacity
 * rule that enforces judges the object as it is: that is what the scheduler will place.
 *
 * audit_only (the --audit-only flag) and a policy's spec.auditOnly turn every rule into Audit.
 */
#ifndef GPUADMIT_EVAL_H
#define GPUADMIT_EVAL_H

#include <stdbool.h>

#include "cluster/cluster.h"
#include "decision.h"
#include "policy.h"
#include "review.h"

/* The requests the webhook acts on, the one list both the evaluator and the webhook
 * configurations (through "gpuadmit routes") follow: anything else is allowed untouched. */
struct eval_route {
    const char *group; /* "" for the core group */
    const char *version;
    const char *resource;
    const char *sub_resource; /* "" for the object itself */
    unsigned ops;             /* bits (1u << REVIEW_CREATE) etc. */
    bool mutating;            /* sent to /mutate */
    bool validating;          /* sent to /validate */
};

/* borrowed: the static table, n entries */
const struct eval_route *eval_routes(size_t *n);

/* The route r takes at that endpoint, or NULL. */
const struct eval_route *eval_route_of(const struct review *r, bool mutating);

/* Fills dec (initialised by the caller). Returns 0, or -1 on allocation failure. */
/* view is the cluster view the capacity rule judges from, or NULL when none is configured. */
int eval_review(const struct policy *p, const struct review *r, bool mutating, bool audit_only,
                struct cluster *view, struct decision *dec);

/* eval_review, also appending to trace (an array of tdoc, borrowed) one object per rule judged at
 * this endpoint: {"stage": "mutate"|"validate", "rule", "type", "enforcement", "outcome",
 * "message"}, outcome one of "pass", "patch", "deny", "warn", "audit" (a rule may add several,
 * e.g. capacity). Rules out of scope add nothing. A capacity rule that judged a workload against
 * the view also adds one entry without outcome and message, {"stage", "rule", "type",
 * "capacity": {...}}, what gpuadmit capacity reports:
 *   requestsGPUs   the template requests GPUs (the rest is 0 and "" when not)
 *   pods           the pods the change asks for (a pod: 1; a Job: its width, before it is
 *                  clamped to what the eligible nodes hold at most)
 *   fitNow         how many pods of the template fit now, fitEver at most (capacity_judge)
 *   eligibleNodes, notEligible, explanation   capacity_judge's nodes and capacity_explain
 *   verdict        "never" when the rule found what it denies whatever `available` says (a
 *                  pod: what it would find in a workload of one replica), "notNow" when fewer
 *                  than pods fit now, "fits" otherwise; "invalid" when the template's GPU
 *                  amounts do not parse
 *   why            the first sentence of the rule's strongest finding ("" when none)
 * For the offline CLI; the server passes none. */
int eval_review_trace(const struct policy *p, const struct review *r, bool mutating,
                      bool audit_only, struct cluster *view, struct decision *dec,
                      yyjson_mut_doc *tdoc, yyjson_mut_val *trace);

/* Whether rules of type t judge whether workloads fit the cluster, and report the "capacity"
 * judgement of the trace (the kind's judges_fit): the capacity rule. gpuadmit capacity and
 * check ask it, never the type's name. */
bool eval_type_judges_capacity(enum rule_type t);

/* Whether rules of type t patch a pod with the node labels of its GPU pool (node-selector), so
 * that a pool whose labels no node carries together gets nothing from them: gpuadmit check's
 * lint against a snapshot asks it. */
bool eval_type_adds_pool_labels(enum rule_type t);

/* What a view loaded from a snapshot lacks of what the rules of p read from it: PriorityClasses
 * (priority-class rules, and capacity rules, which take a workload's priority and preemption
 * policy from its class), Nodes and Pods (capacity rules). Into buf (len bytes), e.g. "no
 * PriorityClasses (read by the priority-class and capacity rules), no Pods (read by the
 * capacity rules)", "" when nothing is missing; returns how many kinds are missing. */
int eval_view_gaps(const struct policy *p, struct cluster *view, char *buf, size_t len);

#endif
