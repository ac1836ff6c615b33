/*
 * offline.h: one object judged as the apiserver would judge its CREATE (or its UPDATE from an
 * old object), through the server's
 * own code: the AdmissionReview the apiserver would send (kind and resource from the object's
 * apiVersion and kind, for the kinds of the route table, eval_routes()), the mutating
 * evaluation, its JSON Patch applied (patch_apply), a reinvocation of the mutating evaluation on
 * the patched object (docs/protocol.md §6: it must patch nothing more), then the validating
 * evaluation of the patched object. For gpuadmit check and gpuadmit test.
 *
 * The review is a dry run (request.dryRun), so judging an object reserves no capacity: every
 * object is judged against the cluster view as it is, never against the objects judged before.
 * The apiserver's own defaulting and built-in admission plugins (Priority,
 * ExtendedResourceToleration) are not emulated: the object is judged as written.
 */
#ifndef GPUADMIT_OFFLINE_H
#define GPUADMIT_OFFLINE_H

#include <stdbool.h>
#include <stdio.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "diag.h"
#include "policy/policy.h"

#define OFFLINE_USER "gpuadmit-check"

struct offline_opts {
    const struct policy *policy; /* borrowed */
    struct cluster *view;        /* borrowed; NULL: capacity is not checked */
    bool audit_only;             /* as gpuadmit serve --audit-only */
    const char *user;            /* userInfo.username; OFFLINE_USER when NULL */
    yyjson_val *old_object;      /* borrowed; set: an UPDATE from it (gpuadmit test's
                                    oldResource), else a CREATE */
};

/* The judgement of obj (borrowed), the root object of a new document (yyjson_mut_doc_free()):
 *   kind, apiVersion, namespace, name     of the object ("" for a name from generateName)
 *   decision      "allowed", "patched", "denied" or "not judged"
 *   reason        (not judged) why
 *   message       (denied) the denial, as the apiserver would show it
 *   rules         [{rule, type, enforcement, outcome, messages: [...]}] for every rule of the
 *                 policy, in policy order; outcome is the strongest of both phases: "deny",
 *                 "warn", "audit", "patch", "pass", or "skip" (not in scope, or not judged);
 *                 a capacity rule that judged the object against the view also has
 *                 capacity: {requestsGPUs, pods, fitNow, fitEver, eligibleNodes, notEligible,
 *                 explanation, verdict, why}, the judgement itself (eval.h)
 *   warnings      [...] both phases' warnings
 *   annotations   {rule: text} the audit annotations
 *   patch         [...] the mutating phase's JSON Patch ([] when none)
 *   reinvocation  (only when the patched object would be patched again) that second patch
 *   object        the object after the patch
 * NULL with d filled when obj is not a Kubernetes object (no apiVersion or kind) or on an
 * internal failure. */
yyjson_mut_doc *offline_admit(const struct offline_opts *o, yyjson_val *obj, struct diag *d);

/* Helpers the offline commands share. */

/* The policy at path: a directory (read as gpuadmit serve --rules reads it) or one policy file.
 * New (free with policy_free()); NULL after printing every error to stderr as "FILE:L:C: ...",
 * each prefixed with cmd ("gpuadmit check"). */
struct policy *offline_load_policy(const char *cmd, const char *path);
/* A view of the snapshot file (cluster_load_snapshot). New (cluster_free()); NULL with d. */
struct cluster *offline_load_snapshot(const char *path, const struct policy *p, struct diag *d);
/* A view of the live cluster through kubeconfig, listed once: the watcher runs until every kind
 * is listed, then stops. New (cluster_free()); NULL with d, also when the list takes longer
 * than timeout_s. */
struct cluster *offline_list_live(const char *kubeconfig, unsigned timeout_s,
                                  const struct policy *p, struct diag *d);
/* Warns on stderr, once per view (offline_admit() calls it too), when view (NULL: none) was
 * loaded from a snapshot that lacks a kind the rules of p read (eval_view_gaps()): "gpuadmit:
 * warning: FILE holds no PriorityClasses (read by the priority-class and capacity rules): those
 * rules judge as if the cluster had none; write it with kubectl get ...".
 * For a command, right after it loaded the snapshot. */
void offline_warn_snapshot(const struct policy *p, struct cluster *view);
/* v in YAML flow style, e.g. {key: nvidia.com/gpu, operator: Exists}: strings unquoted where
 * YAML would read them back as the same string, JSON-quoted otherwise. */
void offline_print_value(FILE *f, yyjson_val *v);
/* One patch operation for people: "+ /spec/tolerations/- {key: ...}" ("-" remove, "~"
 * replace, others by name). */
void offline_print_op(FILE *f, const char *indent, yyjson_val *op);

#endif
