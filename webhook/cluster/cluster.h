/*
 * cluster.h: the cached view of the cluster the capacity rule judges from.
 *
 * Fed either by the API client's list+watch (kube.h) or by a snapshot file; one code path after
 * loading: a list feeds cluster_list_begin/items/end, a watch feeds cluster_apply. The view keeps
 * only what decisions need: per node its readiness, labels, taints, and capacity, allocatable and
 * use per extended resource; per GPU-requesting pod its node, priority and demand; every
 * PriorityClass; the pod template of GPU-requesting workloads (for the scale subresource, which
 * carries none).
 *
 * Thread safety: writers (one background thread, or the loader) and readers (request threads)
 * share a read-write lock; a writer holds it for one event or one list page, readers for one
 * decision. Objects passed in are borrowed and not kept.
 */
#ifndef GPUADMIT_CLUSTER_H
#define GPUADMIT_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <yyjson.h>

#include "diag.h"
#include "bounds.h"

enum cluster_kind {
    CLUSTER_NODES,
    CLUSTER_PODS,
    CLUSTER_PRIORITYCLASSES,
    CLUSTER_AUTOSCALER_STATUS, /* the ConfigMap kube-system/cluster-autoscaler-status */
    CLUSTER_NODEPOOLS,         /* Karpenter's karpenter.sh/v1 NodePools */
    CLUSTER_PLUGIN_CONFIGS,    /* the NVIDIA device plugin's config ConfigMaps the policy names,
                                  read by name (cluster_plugin_configs_want) */
    CLUSTER_REPLICASETS,       /* the workload kinds, from here on */
    CLUSTER_DEPLOYMENTS,
    CLUSTER_STATEFULSETS,
    CLUSTER_JOBS,
    CLUSTER_KINDS
};

struct cluster_config {
    unsigned allocatable_grace_s; /* how long a node whose allocatable fell to 0 (capacity not)
                                     keeps its last known allocatable */
};

struct cluster;

/* A ConfigMap by namespace and name: a device plugin config the view reads. */
#define CLUSTER_PLUGIN_CONFIGS_MAX 16
struct cluster_cm_ref {
    char ns[64];
    char name[254];
};

struct cluster *cluster_new(const struct cluster_config *cfg);

/* The device plugin config ConfigMaps the view keeps (the policy's device-plugin-config rules
 * name them): those of refs[0..n), at most CLUSTER_PLUGIN_CONFIGS_MAX; n 0 keeps the default
 * policy's three (gpu-operator/time-slicing-config, kube-system/time-slicing-config,
 * kube-system/nvidia-device-plugin-config). Held ones no longer named go now; newly named ones
 * come with the next read. */
void cluster_plugin_configs_want(struct cluster *c, const struct cluster_cm_ref *refs, size_t n);
/* Those the view keeps, into out (CLUSTER_PLUGIN_CONFIGS_MAX of them); how many. */
size_t cluster_plugin_configs_wanted(struct cluster *c, struct cluster_cm_ref *out);
void cluster_free(struct cluster *c);

/* The kind's list/watch path on the apiserver, e.g. "/api/v1/pods"; its "kind" field as the
 * apiserver writes it ("Node", ...); the plural used in messages ("nodes"). */
const char *cluster_kind_path(enum cluster_kind k);
const char *cluster_kind_object(enum cluster_kind k);
const char *cluster_kind_plural(enum cluster_kind k);
/* The kind of an object by its "kind" field, or -1. */
int cluster_kind_of(const char *kind);
/* Extra query for the kind's list and watch (pods: only non-terminal ones), or "". */
const char *cluster_kind_selector(enum cluster_kind k);
/* A kind a cluster may not serve or let gpuadmit read (the node autoscalers'): its absence is
 * no error, and the view is synced without it (cluster_kind_absent). */
bool cluster_kind_optional(enum cluster_kind k);

/* A (re)list of one kind, page by page: everything of kind k not passed to _items between
 * _begin and _end is dropped at _end. items is a JSON array of objects (a page's "items"). */
void cluster_list_begin(struct cluster *c, enum cluster_kind k);
int cluster_list_items(struct cluster *c, enum cluster_kind k, yyjson_val *items, struct diag *d);
void cluster_list_end(struct cluster *c, enum cluster_kind k);

/* One watch event. type is "ADDED", "MODIFIED" or "DELETED" (DELETED carries the object's last
 * state). An object that no longer qualifies (a pod that finished, a workload whose template
 * stopped requesting GPUs) is dropped. -1 with d filled for an object without the fields an
 * event needs (metadata.name): the view is unchanged then. */
int cluster_apply(struct cluster *c, enum cluster_kind k, const char *type, yyjson_val *obj,
                  struct diag *d);

/* The apiserver does not serve optional kind k (404: no such CRD) or does not let gpuadmit read
 * it (403): it is listed as empty, and counts as listed and never stale until a list of it
 * succeeds again. */
void cluster_kind_absent(struct cluster *c, enum cluster_kind k);
/* Whether kind k has been listed (or found absent) since the view began. */
bool cluster_kind_listed(struct cluster *c, enum cluster_kind k);

/* The source of kind k is known good now (listed, or a watch delivered an event or bookmark or
 * ended cleanly). */
void cluster_heartbeat(struct cluster *c, enum cluster_kind k);
/* Every kind has been listed at least once. */
bool cluster_synced(struct cluster *c);
/* Seconds since the stalest kind's last heartbeat; 0 for a view loaded from a snapshot. */
double cluster_age_s(struct cluster *c);
/* Marks the view as a snapshot: synced, and never stale. */
void cluster_mark_snapshot(struct cluster *c);

/* Loads `kubectl get nodes,pods,priorityclasses,replicasets,deployments,statefulsets,jobs -A
 * -o json` output (a List; also accepts several Lists or objects concatenated). Unknown kinds
 * are skipped. */
int cluster_load_snapshot(struct cluster *c, const char *path, struct diag *d);

/* For a view loaded from a snapshot: the kinds of which it held no object, as bits
 * (1u << kind); 0 for a view that is watched, which lists every kind. A snapshot without
 * PriorityClasses or Pods is one kubectl was not asked for them: every cluster has the system
 * classes, which kube-apiserver creates at start (pkg/registry/scheduling/rest/
 * storage_scheduling.go, AddSystemPriorityClasses), and the pods of kube-system. */
unsigned cluster_snapshot_missing(struct cluster *c);
/* The snapshot file the view was loaded from (borrowed: valid while c lives), or NULL. */
const char *cluster_snapshot_path(struct cluster *c);
/* true the first time it is called on c, false after: for a caller that tells what a snapshot
 * lacks once per view, however many objects it then judges against it. */
bool cluster_snapshot_tell_gaps(struct cluster *c);

/* A copy of the pod template spec of the GPU-requesting workload NS/NAME of kind k (a workload
 * kind), and its replicas; NULL when the view holds no such workload (it does not exist, or
 * its template requests no extended resource). A new document (yyjson_doc_free()) whose root
 * is the spec. */
yyjson_doc *cluster_workload_template(struct cluster *c, enum cluster_kind k, const char *ns,
                                      const char *name, int64_t *replicas);

/* The key an admission's reservation is made under, from "resource/namespace/name"
 * ("deployments", "ml", "trainer"); never 0. */
uint64_t cluster_workload_key(const char *resource, const char *ns, const char *name);

/* The PriorityClass name in the view: its value and whether it may preempt. */
bool cluster_priority_class(struct cluster *c, const char *name, int64_t *value, bool *preempt);

/* Whether node name is a GPU node: 1 when gpu_labels(its labels, arg) holds or it advertises
 * an extended resource for which gpu_res(name, arg) holds, 0 when neither, -1 when the view
 * has no such node. The callbacks run under the view's read lock. */
int cluster_node_is(struct cluster *c, const char *name,
                    bool (*gpu_labels)(yyjson_val *labels, void *arg),
                    bool (*gpu_res)(const char *res, void *arg), void *arg);

/* Over the view's nodes for which match(node name, its labels, arg) holds: how many, into
 * *matched, and how many of them are GPU nodes (as cluster_node_is), into *gpu. The callbacks
 * run under the view's read lock. */
void cluster_nodes_matching(struct cluster *c,
                            bool (*match)(const char *name, yyjson_val *labels, void *arg),
                            bool (*gpu_labels)(yyjson_val *labels, void *arg),
                            bool (*gpu_res)(const char *res, void *arg), void *arg, size_t *matched,
                            size_t *gpu);

/* Among the nodes that advertise an extended resource for which offers(name, arg) holds:
 * 1 when one of them carries the label key=value, 0 when none does, -1 when there is no such
 * node. The callback runs under the view's read lock. */
int cluster_offering_nodes_carry(struct cluster *c, bool (*offers)(const char *res, void *arg),
                                 void *arg, const char *key, const char *value);
/* The same for n labels: 1 when one of those nodes carries every keys[i]=values[i]. */
int cluster_offering_nodes_carry_all(struct cluster *c, bool (*offers)(const char *res, void *arg),
                                     void *arg, const char *const *keys, const char *const *values,
                                     size_t n);

/* Sums over the view's nodes, for the metrics: one extended resource. */
struct cluster_resource_total {
    char name[RESOURCE_NAME_MAX];
    int64_t capacity;
    int64_t allocatable; /* as decisions use it (the device-plugin grace applies) */
    int64_t used;        /* requests of the non-terminal pods bound to the nodes */
};

/* The number of nodes in *nodes, and, for each extended resource whose name keep() accepts,
 * its totals over the nodes (at most max of them, in out). Returns how many such resources
 * there are, which may be more than max. */
size_t cluster_totals(struct cluster *c, size_t *nodes, bool (*keep)(const char *name, void *arg),
                      void *arg, struct cluster_resource_total *out, size_t max);

/* The whole view as JSON, for tests and debugging: the root of a new document of its own
 * (free with yyjson_mut_doc_free(), which the value's doc, yyjson_mut_val's owner, is). */
yyjson_mut_doc *cluster_dump(struct cluster *c);

#endif
