/*
 * pending.h: why GPU pods are Pending, from the cluster view.
 *
 * For each unbound, non-terminal pod of the view that requests an extended resource, the
 * reasons kube-scheduler keeps it off every node, replayed node by node in the order of its
 * filter plugins (kubernetes/kubernetes pkg/scheduler/apis/config/v1/default_plugins.go:
 * NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit; RunFilterPlugins stops at
 * a node's first failure, so a node has one reason), then what the scheduler never says:
 * fragmentation, a pod larger than any node, GPUs a device plugin does not advertise or reports
 * unhealthy, shared GPUs asked for several at once, and whether a PriorityClass would let it
 * preempt. Each reason has a stable code (pending_code_name()). The scheduler's own PodScheduled
 * condition is quoted as the pod carries it.
 *
 * The view holds what gpuadmit reads of the cluster: GPU pods, nodes, PriorityClasses,
 * GPU workloads. CPU, memory, ports, volumes and pod affinity are not in it, so a node the
 * replay finds room on is reported as such ("fits"), not explained away.
 */
#ifndef GPUADMIT_PENDING_H
#define GPUADMIT_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yyjson.h>

#include "cluster.h"
#include "diag.h"

/* The reason codes, in the order a pod's reasons are listed: the first is its primary reason
 * (the one gpuadmit_pending_gpu_pods counts it under). First what keeps kube-scheduler from
 * considering the pod at all; then what no free GPU would cure; then why no node can be added
 * or freed for it (a node group at its max, a NodePool at its limit, preemption: when the nodes
 * are full, these say what would change it); then the nodes' own reasons, from the furthest
 * filter back (a node that fails on free GPUs passed every other filter: it is the nearest to
 * taking the pod). */
enum pending_code {
    PENDING_SCHEDULING_GATED,
    PENDING_OTHER_SCHEDULER,
    PENDING_LARGER_THAN_ANY_NODE,
    PENDING_SHARED_REQUEST_GT_ONE,
    PENDING_NODE_GROUP_AT_MAX,
    PENDING_AUTOSCALER_BACKOFF,
    PENDING_NODEPOOL_LIMIT,
    PENDING_PREEMPTION_POSSIBLE,
    PENDING_NO_PRIORITY_CLASS,
    /* device-plugin-config-missing: a candidate short of GPUs picks a config key its device
     * plugin's ConfigMap does not have */
    PENDING_DEVICE_PLUGIN_CONFIG_MISSING,
    PENDING_INSUFFICIENT,
    PENDING_DEVICE_PLUGIN_DOWN,
    PENDING_UNHEALTHY_GPUS,
    PENDING_SELECTOR_MISMATCH,
    PENDING_UNTOLERATED_TAINT,
    PENDING_NODE_NOT_READY,
    PENDING_NODE_UNSCHEDULABLE,
    PENDING_CODES
};

/* "insufficient", "larger-than-any-node", ...; NULL past the last. */
const char *pending_code_name(enum pending_code code);

/* Which pods to explain. Each name is POD, pod/POD, or KIND/NAME for the pods a workload owns:
 * replicaset (rs), deployment (deploy), statefulset (sts), job; plural kinds are accepted, case
 * does not matter. ns NULL: every namespace. No names: every Pending GPU pod (of ns). */
struct pending_query {
    const char *ns;
    const char *const *names;
    size_t n_names;
    size_t max_pods; /* explain at most this many (the first in the output's order); 0: all */
};

/*
 * The explanation, the root object of a new document (yyjson_mut_doc_free()):
 *   pods        [{namespace, name, owner: {kind, name, deployment?, pods} or null,
 *                 scheduler: {reason, message} or null (the PodScheduled=False condition),
 *                 nominatedNode?, resources: {NAME: per pod},
 *                 reasons: [{code, message, nodes: [...], nodeCount}], fits: [...]}]
 *               in namespace, owner and name order; fits: the nodes the view finds room on;
 *               nodes and fits list at most PENDING_NODES_LISTED_MAX names (nodeCount: all)
 *   morePods    Pending pods past q->max_pods, not explained
 *   notPending  [{name, message}] the names that matched no Pending pod but something in the
 *               view (a bound pod, a workload whose pods are all bound)
 *   notFound    [name] the names that matched nothing in the view
 * NULL with d filled when a name is malformed (an unknown kind) or out of memory. The view is
 * read-locked for the call.
 */
yyjson_mut_doc *pending_explain(struct cluster *c, const struct pending_query *q, struct diag *d);

/* The gauge's two counts past the codes: pods the view has room for (no reason), and pods not
 * replayed (past PENDING_COUNT_SPECS_MAX distinct specs). */
#define PENDING_UNEXPLAINED PENDING_CODES
#define PENDING_NOT_JUDGED  (PENDING_CODES + 1)
#define PENDING_COUNTS      (PENDING_CODES + 2)

/* How many Pending GPU pods have each primary reason, into counts[code], and into
 * counts[PENDING_UNEXPLAINED] those the view has room for. Pods whose spec, priority and
 * scheduling are the same are judged once (20,000 Pending pods of one Job template cost one
 * replay), and at most PENDING_COUNT_SPECS_MAX specs are: the pods of the others count under
 * counts[PENDING_NOT_JUDGED], so that a scrape stays bounded. 0, or -1 when out of memory
 * (counts then partial). The view is read-locked for the call. */
int pending_count(struct cluster *c, uint64_t counts[PENDING_COUNTS]);

#endif
