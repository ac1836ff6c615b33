/*
 * growth.h: what the node autoscalers the view reads may still add for a pod template, in
 * nodes and in pods of the template.
 *
 * Cluster Autoscaler (CA) adds nodes to a node group up to its maxSize, one like the group's
 * nodes (its template node is a Ready node of the group: processors/nodeinfosprovider/
 * mixed_nodeinfos_processor.go), and none while the group is in backoff or unhealthy
 * (IsNodeGroupReadyToScaleUp; core/scaleup/orchestrator/skippedreasons.go). Karpenter launches
 * whole nodes of a NodePool while its spec.limits, less status.resources, leave room for one
 * (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go drops the
 * instance types whose capacity exceeds what is left). autoscaler.h reads both.
 *
 * A group counts for a template when a new node of it would admit a pod of it: its taints
 * (NoSchedule, NoExecute) are tolerated, its labels match the nodeSelector and required node
 * affinity (a NodePool: the labels its template and requirements allow; required affinity is
 * not judged against them), and it holds the pod's GPUs. A new node holds what the group's
 * nodes in the view hold (allocatable, or capacity when the device plugin has not advertised
 * it yet); a node without GPUs, which no GPU label marks as one whose GPUs are still to come
 * (CA's NodeHasGpu: its cloud's GPU label), shows a group whose nodes hold none. A CA group with
 * no such node in the view (at zero, nodes no label maps to it, only GPU nodes whose device
 * plugin is not up) is sized from the policy's template for it (struct growth_template), and
 * without one cannot be sized: it makes the answer unknown rather than zero. A NodePool without
 * nodes in the view is sized from its karpenter.k8s.aws/instance-gpu-count requirement, else as the
 * smallest node that holds one pod.
 *
 * The caller holds the view's read lock.
 */
#ifndef GPUADMIT_GROWTH_H
#define GPUADMIT_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yyjson.h>

#include "autoscaler.h"
#include "cluster_view.h"
#include "policy/policy.h"

#define GROWTH_GROUPS_MAX 8                  /* the groups named, growing ones first */
#define GROWTH_UNBOUNDED  (INT64_C(1) << 40) /* pods or nodes: no limit bounds them */
#define GROWTH_STALE_S    600.0 /* a CA status older than this (last-updated): CA is not running */

enum growth_state {
    GROWTH_GROWS,     /* it may add nodes now */
    GROWTH_AT_MAX,    /* a CA group at its maxSize */
    GROWTH_LIMIT,     /* a NodePool whose limits leave less than one node */
    GROWTH_BACKOFF,   /* a CA group in backoff after a failed scale-up: nothing until it ends */
    GROWTH_UNHEALTHY, /* a CA group CA does not scale up (not ready for scale-up) */
    GROWTH_PAUSED,    /* a CA group while CA's cluster-wide health is Unhealthy: CA scales
                         nothing up (static_autoscaler.go: "Cluster is not ready for
                         autoscaling") */
};

/* A node group or NodePool that would admit the template. */
struct growth_group {
    char name[CA_NAME_MAX];
    bool nodepool; /* a Karpenter NodePool, else a CA node group */
    enum growth_state state;
    int64_t per_node;         /* pods of the template a new node holds */
    int64_t per_node_now;     /* of them, with the rule's headroom kept free */
    int64_t nodes_now;        /* nodes it may add now (GROWTH_UNBOUNDED: no limit) */
    int64_t nodes_ever;       /* and once a backoff ends or its health returns */
    int64_t in_view;          /* its nodes in the view */
    int64_t target, max_size; /* CA: cloudProviderTarget and maxSize */
    /* NodePool: the limit that bounds it ("nvidia.com/gpu", "nodes", "cpu"), what is left of it
     * and the limit itself, in whole units; bound "" when nothing does */
    char bound[RESOURCE_NAME_MAX];
    int64_t left, limit;
    char why[640]; /* CA backoff: " (CODE: MESSAGE)"; "" otherwise */
};

struct growth {
    bool readable; /* the view holds the state of an autoscaler it can read */
    bool unknown;  /* one may add what gpuadmit cannot size (in unknown_why) */
    char unknown_why[512];
    char stale_why[256]; /* a CA status left out as stale: why; "" otherwise */
    char miss_why[1024]; /* the first NodePool whose nodes would hold the pods but for a taint or
                            a label of the nodeSelector: why; "" otherwise */
    int64_t pods_now;    /* pods of the template the growing groups may add (at most
                            GROWTH_UNBOUNDED) */
    int64_t pods_ever;   /* and the groups in backoff or unhealthy once that ends */
    struct growth_group g[GROWTH_GROUPS_MAX];
    size_t n, n_more; /* g holds n; n_more more admit the template */
};

/* A GPU resource of the template: its name, the view's interned name (cluster_rname, or NULL:
 * no node offers it), and how much one pod asks. */
struct growth_ask {
    const char *name;
    const char *rn;
    int64_t per_pod;
};

/* A CA node group's new node as the policy describes it (the capacity rule's nodeGroups), for a
 * group with no node in the view to show it: what CA itself reads from the cloud (an ASG's
 * k8s.io/cluster-autoscaler/node-template/{label,taint,resources}/ tags, a managed node group's
 * labels and taints, the instance type's GPUs) and gpuadmit cannot. */
struct growth_template {
    char *glob;       /* the node group names it describes (fnmatch, no flags) */
    struct node node; /* its labels, taints and resources (res[].name not interned: matched by
                         name); name is the glob */
};

/* What the policy says of CA node groups. */
struct growth_policy {
    const struct strlist *group_labels;      /* node label keys that name a CA node group beyond
                                                those autoscaler.h knows (the label's value is the
                                                group's Id(), or its last path segment); may be NULL */
    const struct growth_template *templates; /* the first whose glob matches a group's name */
    size_t n_templates;
};

/* What the autoscalers in view c may still add for pods of spec asking ask[0..n_ask) into out.
 * headroom: GPUs kept free on each node (counted in pods_now only). pol may be NULL. now:
 * wall-clock seconds, for the CA status's age (not judged in a view loaded from a snapshot). */
void growth_of(const struct cluster *c, yyjson_val *spec, const struct growth_ask *ask,
               size_t n_ask, int64_t headroom, const struct growth_policy *pol, double now,
               struct growth *out);

/* Frees the templates t[0..n) and t. */
void growth_templates_free(struct growth_template *t, size_t n);

/* Pods of spec a new node like n holds (its taints but the lifecycle ones, its labels, its
 * GPUs, headroom kept free), 0 when it admits none. */
int64_t growth_node_pods(yyjson_val *spec, const struct growth_ask *ask, size_t n_ask,
                         const struct node *n, int64_t headroom);

/* The groups that would grow for need more pods, in words: "node group G adds 2 nodes of 4 pods
 * each (4 to 6 of maxSize 6)", "NodePool P launches 1 node of 8 pods each (8 nvidia.com/gpu left
 * of its limit of 16)", joined by ", ", in the order of g. With ever, what each may add at most
 * ("may add", "may launch"), those in backoff or unhealthy included; need GROWTH_UNBOUNDED names
 * every group that may add a node. */
void growth_grows_text(const struct growth *g, int64_t need, bool ever, char *buf, size_t len);

/* The groups that admit the template and add nothing now, in words: at its max size, out of
 * NodePool limits, in backoff (with CA's error), unhealthy; joined by "; ". "" when none. */
void growth_stuck_text(const struct growth *g, char *buf, size_t len);

/* The seconds since CA wrote the status whose last-updated annotation is s
 * ("2026-12-02 03:00:00.123 +0000 UTC", Go's time.Time.String()), at wall-clock now; -1 when s
 * does not parse. */
double growth_ca_age_s(const char *s, double now);

#endif
