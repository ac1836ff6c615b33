/*
 * autoscaler.h: what node autoscalers may still add to the cluster, as they say it themselves.
 *
 * Cluster Autoscaler (CA) writes its state into the ConfigMap
 * kube-system/cluster-autoscaler-status, key data.status: YAML since CA 1.30
 * (clusterstate/api/types.go), a readable text before (GetReadableString). ca_status_parse() reads
 * either; text that starts with "Cluster-autoscaler status at " is the text format, anything else
 * YAML. Per node group it keeps the sizes, health and scale-up state; a group's headroom is maxSize
 * - cloudProviderTarget, and none while the group is Unhealthy or in Backoff (CA's
 * IsNodeGroupReadyToScaleUp). A group the status does not list is unknown, not absent: CA drops
 * groups to keep the ConfigMap under 1 MB.
 *
 * Karpenter (karpenter.sh/v1) bounds each NodePool by spec.limits against status.resources (what
 * its Nodes and NodeClaims hold, in-flight claims included); karpenter_pool_parse() reads a
 * NodePool object as the apiserver returns it. Headroom = limit - used; no limit, no bound.
 *
 * Errors: -1 with d filled; in the ConfigMap text, line and column (1-based, bytes) are those of
 * data.status itself (d->file is empty). Unknown keys are ignored (both APIs add fields over
 * releases); a field read here with the wrong type is an error.
 *
 * Ownership: a struct ca_status and a struct karpenter_pool own everything in them (copies, never
 * borrowed from the text or the document) until ca_status_free() / karpenter_pool_free(), which
 * also take a struct that a failed parse left half filled.
 */
#ifndef GPUADMIT_AUTOSCALER_H
#define GPUADMIT_AUTOSCALER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yyjson.h>

#include "bounds.h"
#include "diag.h"

#define CA_NAME_MAX 256 /* a group's Id() with its NUL; a longer one is refused, not cut */

struct ca_group {
    char name[CA_NAME_MAX]; /* nodeGroup.Id() as CA writes it */
    bool healthy;           /* health.status Healthy */
    int64_t ready, unready, resource_unready, not_started, registered, long_unregistered;
    int64_t target, min_size, max_size; /* cloudProviderTarget, minSize, maxSize */
    /* Needed|NotNeeded|InProgress|NoActivity|Backoff|Unhealthy as written; "" in the text
     * format when the group has no ScaleUp line */
    char scale_up[16];
    /* YAML scaleUp.backoffInfo, cut to fit (UTF-8 kept whole, "..." when cut); "" otherwise */
    char backoff_code[64], backoff_msg[512];
};

struct ca_status {
    char autoscaler_status[16]; /* Initializing|Running; "" when the text format says neither */
    char time[64];              /* as written (cut to fit) */
    bool text_format;
    bool cluster_unhealthy; /* clusterWide.health (text: Cluster-wide: Health:) is Unhealthy: CA
                               then scales nothing up (static_autoscaler.go, IsClusterHealthy) */
    struct ca_group *groups;
    size_t n_groups; /* at most AUTOSCALER_GROUPS_MAX */
};

/* Reads len bytes of data.status (NUL bytes are refused) into out, which it zeroes. 0, or -1 with
 * d filled; free out with ca_status_free() either way. */
int ca_status_parse(const char *text, size_t len, struct ca_status *out, struct diag *d);
void ca_status_free(struct ca_status *s);

/* Nodes CA may still add to g now: max(0, maxSize - cloudProviderTarget); 0 when g is Unhealthy
 * or its scale-up is Backoff or Unhealthy. */
int64_t ca_group_headroom(const struct ca_group *g);

/* Whether a node (its name and labels) belongs to CA's node group g. CA maps nodes to groups
 * through spec.providerID and the cloud's API, which gpuadmit cannot call; the node labels the
 * providers and installers set name the group instead (AUTOSCALER.md §1.5), and Id() holds that
 * name in a form of its provider's:
 *   eks.amazonaws.com/nodegroup=NG          Id() NG, or the managed group's ASG eks-NG-UUID
 *   alpha.eksctl.io/nodegroup-name=NG       eksctl's ASG eksctl-CLUSTER-nodegroup-NG-...
 *   kops.k8s.io/instancegroup=IG            kops' ASG IG.CLUSTER
 *   cloud.google.com/gke-nodepool=POOL      the MIG URL
 * .../instanceGroups/gke-CLUSTER-POOL-HASH-grp kubernetes.azure.com/agentpool=POOL     the VMSS
 * aks-POOL-NUMBER-vmss (also agentpool=POOL) cluster.x-k8s.io/deployment-name=MD    Id()
 * KIND/NAMESPACE/MD The ASG, MIG and VMSS name forms are the providers' conventions, not an API: a
 * group whose Id() is the label's value always matches. A node Karpenter made
 * (karpenter.sh/nodepool) is never a CA group's. */
bool ca_group_has_node(const struct ca_group *g, const char *node, yyjson_val *labels);

/* Karpenter NodePool */

struct karpenter_amount {
    char name[RESOURCE_NAME_MAX]; /* "nvidia.com/gpu", "cpu", "nodes" */
    int64_t milli;                /* the quantity in milli-units, rounded up (quantity.h) */
};

struct karpenter_taint {
    char *key, *value, *effect; /* value NULL when the taint has none */
};

struct karpenter_label {
    char *key, *value;
};

/* A requirement of spec.template.spec.requirements (a NodeSelectorRequirement: what labels the
 * pool's nodes may carry). */
struct karpenter_req {
    char *key, *op;
    char **values;
    size_t n_values;
};

struct karpenter_pool {
    char name[254];                         /* metadata.name (a DNS subdomain) */
    struct karpenter_amount *limits, *used; /* spec.limits, status.resources */
    size_t n_limits, n_used;                /* each at most KARPENTER_RESOURCES_MAX */
    bool limits_extended;           /* a limit on an extended resource (a name with a '/', e.g.
                                       nvidia.com/gpu, outside kubernetes.io/ and requests.) */
    bool limits_nodes;              /* a limit on "nodes" */
    int64_t status_nodes;           /* status.nodes; -1 when absent */
    struct karpenter_taint *taints; /* spec.template.spec.taints (not startupTaints) */
    size_t n_taints;
    struct karpenter_label *labels; /* spec.template.metadata.labels */
    size_t n_labels;
    struct karpenter_req *reqs; /* spec.template.spec.requirements, at most KARPENTER_REQS_MAX */
    size_t n_reqs;
    /* From the spec.template.spec.requirements on karpenter.k8s.aws/instance-gpu-count: the
     * fewest and most GPUs a node of the pool may have. In: its smallest and largest value;
     * Gt v: min v + 1; Gte v: min v; Lt v: max v - 1; Lte v: max v. min 0 and max -1 when
     * nothing bounds them. */
    int64_t gpu_count_min, gpu_count_max;
};

/* Reads the NodePool object obj into out, which it zeroes. 0, or -1 with d filled (naming the
 * field); free out with karpenter_pool_free() either way. */
int karpenter_pool_parse(yyjson_val *obj, struct karpenter_pool *out, struct diag *d);
void karpenter_pool_free(struct karpenter_pool *p);

/* The limit on resource, in milli-units, or NULL when the pool has none (borrowed from p). */
const struct karpenter_amount *karpenter_pool_limit(const struct karpenter_pool *p,
                                                    const char *resource);

/* What p may still add of resource, in whole units rounded down: limit - status.resources (at
 * least 0; used 0 when status.resources lacks it, status.nodes for "nodes"). *bounded is false,
 * and the result 0, when the pool has no limit on resource. */
int64_t karpenter_pool_headroom(const struct karpenter_pool *p, const char *resource,
                                bool *bounded);

/* Whether a node of p may carry label key with some value: its template's labels or a
 * requirement other than DoesNotExist name it, it is karpenter.sh/nodepool, or one of the
 * well-known labels. */
bool karpenter_pool_may_have(const struct karpenter_pool *p, const char *key);

/* Whether a node of p may carry label key=value: its template's labels and requirements (In,
 * NotIn, Exists, DoesNotExist; Gt and Lt are not judged) and karpenter.sh/nodepool=NAME, the label
 * Karpenter gives its nodes. A key the pool neither sets nor requires may only be one of
 * Karpenter's well-known labels (zone, region, instance type, architecture, OS, capacity type,
 * a provider's instance labels): a pod that selects any other is incompatible with the pool
 * ("label ... does not have known values", pkg/scheduling/requirements.go). */
bool karpenter_pool_may_label(const struct karpenter_pool *p, const char *key, const char *value);

/* Whether a node (its labels) is one of p's: karpenter.sh/nodepool=NAME. */
bool karpenter_pool_has_node(const struct karpenter_pool *p, yyjson_val *labels);

#endif
