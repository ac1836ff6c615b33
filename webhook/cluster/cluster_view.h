/*
 * cluster_view.h: the records of the cluster view, for its owners: cluster.c, which keeps them
 * current, and capacity.c and pending.c, which read them under the view's read lock. Nothing
 * else includes this header.
 *
 * JSON kept by a record lives in documents of its own (yyjson): never a pointer into a list page
 * or a watch event, which are freed once read.
 */
#ifndef GPUADMIT_CLUSTER_VIEW_H
#define GPUADMIT_CLUSTER_VIEW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

#include "autoscaler.h"
#include "cluster.h"
#include "bounds.h"
#include "policy/plugin_config.h"
#include "table.h"

/* One extended resource of a node. Amounts are whole units. */
struct node_res {
    const char *name; /* interned (cluster_rname): the same pointer for the same name */
    int64_t capacity;
    int64_t allocatable;
    int64_t last_allocatable; /* the last nonzero allocatable, for the device-plugin grace */
    double zero_since;        /* monotonic seconds when allocatable fell to 0 while capacity
                                 did not; 0 when it has not */
    uint32_t sum;             /* its res_sum in cluster.sums; 0 when it has none */
};

/* What a decision reads of one resource of one node, in one cache line of one array
 * (cluster.sums), so that summing ~1,000 eligible nodes reads ~1,000 lines and chases no
 * pointers: a copy, derived from the node_res and its node's binding, refreshed by cluster.c
 * whenever either changes. exact is false when the copy cannot stand for them (a
 * device-plugin grace running, more priorities than fit, amounts past 32 bits): the decision
 * reads the records then. Slot 0 is never used; a free slot has name NULL. */
#define RES_SUM_PRIO 4
struct res_sum {
    _Alignas(64) const char *name; /* interned; NULL: free */
    int64_t allocatable;
    int64_t used; /* by the bound pods, all priorities; a free slot: the next free slot */
    uint8_t n_prio;
    bool exact;
    int32_t prio[RES_SUM_PRIO];   /* the priorities of bound pods using it */
    int32_t prio_n[RES_SUM_PRIO]; /* how much each uses; 0 past n_prio */
};

/* The node advertises the resource (a key at 0 after a rename is not an offer). */
static inline bool node_res_offered(const struct node_res *r)
{
    return r->capacity > 0 || r->allocatable > 0 || r->last_allocatable > 0;
}

struct node_taint {
    char *key;
    char *value; /* "" when the taint has none */
    char *effect;
};

struct node {
    char *name;
    bool ready;
    bool unschedulable;
    yyjson_doc *labels_doc; /* owned: the labels, copied out of the event or page */
    yyjson_val *labels;     /* its root, an object (empty when the node has none) */
    struct node_taint *taints;
    size_t n_taints;
    struct node_res *res;
    size_t n_res;
    int64_t cpu_milli, memory_milli; /* status.capacity's cpu and memory (milli-units; 0 when
                                        absent): what a NodePool's limits on them count */
    struct binding *binding;         /* the pods bound to it, or NULL: kept by cluster.c */
};

struct pod_res {
    char *name;
    int64_t n;
};

/* A string shared by reference: the PodScheduled messages of the pods of one controller, which
 * are mostly the same, are kept once. */
struct vstr {
    unsigned refs;
    char s[];
};

/* What an unbound pod says of its scheduling, for the explainer (pending.c). */
struct vpending {
    struct vdoc *spec; /* one reference: its trimmed spec (shared with the pods of its waiter
                          whose trimmed spec is the same) */
    char *cond_reason; /* PodScheduled=False: its reason ("Unschedulable"), or NULL */
    struct vstr *cond_message; /* and its message, verbatim up to PENDING_MESSAGE_MAX bytes
                                  (shared with the pods of its waiter that have the same) */
    char *scheduler;           /* spec.schedulerName other than default-scheduler, or NULL */
    char *nominated;           /* status.nominatedNodeName, or NULL */
    char *gate;                /* the first of spec.schedulingGates, or NULL */
};

/* A non-terminal pod that requests an extended resource. */
struct vpod {
    const char *key; /* "NAMESPACE/NAME": its entry's key in the pods table (borrowed) */
    char *node;      /* "" while unbound */
    char *owner; /* its waiter's key (struct waiter), or NULL: a bound pod of no tracked owner */
    bool gated;  /* unbound with spec.schedulingGates: out of the scheduler's queue */
    int64_t priority;
    struct pod_res *demand;
    size_t n_demand;
    struct vpending *pend; /* unbound: what it says of its scheduling; NULL when bound */
};

/* What the pods bound to a node use of one resource, in all and per priority (a handful of
 * distinct priorities per node), kept as pods come and go so that a decision reads it in
 * O(resources + priorities) instead of walking the pods. */
struct bound_prio {
    int64_t priority;
    int64_t n;
};

struct bound_res {
    const char *name; /* interned (cluster_rname) */
    int64_t total;
    struct bound_prio *prio; /* slots with n > 0 */
    size_t n_prio, cap_prio;
};

/* The pods bound to one node name (the node may be unknown yet). */
struct binding {
    struct vpod **pods;
    size_t n, cap;
    struct bound_res *res;
    size_t n_res;
};

/* The Cluster Autoscaler's status ConfigMap: its data.status as read, or why it was not. */
struct vautoscaler {
    struct ca_status st; /* empty when !ok */
    bool ok;
    char error[DIAG_MSG_MAX]; /* when !ok: "data.status:L:C: ..." */
    char updated[64];         /* the cluster-autoscaler.kubernetes.io/last-updated annotation */
};

/* A ConfigMap of the device plugin's configs: each data key is one config, which a node picks
 * with its nvidia.com/device-plugin.config label. */
#define VPLUGIN_KEYS_MAX 64
struct vplugin_key {
    char *name;
    struct plugin_sharing sh;
};
struct vplugin_config {
    size_t n_keys, n_more; /* kept, and the data keys past VPLUGIN_KEYS_MAX */
    struct vplugin_key keys[VPLUGIN_KEYS_MAX];
};

/* A Karpenter NodePool, or why it could not be read. */
struct vnodepool {
    struct karpenter_pool p; /* empty when !ok */
    bool ok;
    char error[DIAG_MSG_MAX];
};

struct vclass {
    int64_t value;
    bool preempt; /* preemptionPolicy PreemptLowerPriority */
    bool global_default;
};

/* An immutable document that records share (a workload record and its waiter), freed with its
 * last reference; references change under the write lock only. */
struct vdoc {
    yyjson_doc *doc;
    unsigned refs;
};

/* Pods that wait for GPUs, per controller: the scheduler's queue gives free GPUs to the
 * Pending pods already in it (ordered by priority, kubernetes/kubernetes
 * pkg/scheduler/backend/queue/scheduling_queue.go), and a controller creates the replicas it
 * still owes (a StatefulSet's OrderedReady one by one, pkg/controller/statefulset) before
 * anything admitted later. Kept as pods and workloads come and go, so that a decision reads
 * the few waiting entries, never the pods. */
struct waiter {
    char *key;                   /* "ReplicaSet/NS/NAME" (StatefulSet, Job) of the controller, or
                                    "Pod/NS/NAME" of an unbound pod of none */
    yyjson_val *spec;            /* the trimmed pod template spec of its pods (in spec_doc);
                                    NULL until known */
    struct vdoc *spec_doc;       /* one reference to the document spec lies in */
    uint64_t place;              /* a hash of the spec's nodeSelector, affinity and tolerations */
    char res[RESOURCE_NAME_MAX]; /* the first GPU resource its pods ask for */
    int64_t per_pod;             /* how much of it */
    int64_t priority;            /* of its pods (their spec.priority, else the class value) */
    int64_t pods;                /* its non-terminal GPU pods in the view */
    int64_t pending;             /* of them, unbound */
    int64_t wants;               /* pods its controller wants now; -1: no workload record */
    uint64_t reserve_key; /* cluster_workload_key of the workload a reservation is made for */
    struct wgroup *group; /* the group it waits in (cluster.groups), or NULL */
    struct waiter *gprev, *gnext; /* its neighbours there, in the order they joined */
    int64_t g_count, g_pending;   /* what it adds to the group's sums */
    uint64_t shown_key;           /* the key its replicas count under in cluster.shown, and */
    int64_t shown;                /* how many: max(pods, wants) when it was last updated */
    const struct workload *rec;   /* the workload record that sets wants, or NULL */
    struct vdoc *pod_spec;        /* the trimmed spec of its last unbound pod, which the next
                                     of the same spec shares (struct vpending) */
    struct vstr *pod_message;     /* the same for its PodScheduled message */
    size_t at;                    /* its place in cluster.waiting, or SIZE_MAX: not waiting */
};

/* The waiters that wait in one place (place hash), for one resource, as much each, at one
 * priority, with their sums kept as they change: a decision reads the few groups, never the
 * waiters (20,000 Pending single-pod Jobs of one template are one group). */
struct wgroup {
    uint64_t place;
    char res[RESOURCE_NAME_MAX];
    int64_t per_pod, priority;
    int64_t count, pending;     /* the sums of its waiters' waiter_count() and pending */
    struct waiter *head, *tail; /* its waiters, the first to join first; never empty */
    size_t at;                  /* its place in cluster.live_groups */
};

/* Pods a waiter waits for: the unbound ones and those its controller has yet to create. */
static inline int64_t waiter_count(const struct waiter *w)
{
    return w->pending + (w->wants > w->pods ? w->wants - w->pods : 0);
}

/* A workload whose pod template requests an extended resource. */
struct workload {
    int64_t replicas;
    int64_t wants;          /* pods its controller wants now (a Job: min(parallelism, the
                               completions to go), 0 suspended); -1 for a Deployment, whose
                               ReplicaSets own its pods */
    struct waiter *waiter;  /* the entry it sets wants on, or NULL */
    struct vdoc *spec_doc;  /* one reference: the parts of the workload's spec a decision needs,
                               the pod template spec under "template" */
    yyjson_val *spec;       /* its root */
    char *owner_deployment; /* a ReplicaSet's controlling Deployment, or NULL */
};

struct capacity_cache;

struct cluster {
    struct cluster_config cfg;
    struct capacity_cache *cap; /* what decisions remember of this view (capacity.h) */
    /* bumped under the write lock whenever a node record is replaced, added or removed; an
     * update that leaves its labels, taints, readiness, cordon and offered resources alone (a
     * heartbeat, a new allocatable) changes the record in place instead. What capacity
     * remembers of the nodes (pointers, res_sum slots) is valid while it is unchanged. */
    unsigned long node_gen;
    pthread_rwlock_t lock;
    struct table kinds[CLUSTER_KINDS]; /* nodes, pods, classes, autoscalers, then the workload
                                          kinds */
    struct table bindings;             /* node name -> struct binding */
    struct res_sum *sums;              /* 64-byte aligned; grows under the write lock */
    uint32_t n_sums, cap_sums, free_sum;
    struct table rnames;         /* interned resource names: the key is the name every node_res and
                                    bound_res points to, the value counts them; gone at 0 */
    struct table waiters;        /* key -> struct waiter; freed last */
    struct table shown;          /* cluster_workload_key (hex) -> int64_t: the replicas the view
                                    shows of each workload (its waiters' max(pods, wants)), so that
                                    a reservation ends once they reach its target */
    struct waiter **waiting;     /* the waiters with waiter_count() > 0, in any order */
    struct table groups;         /* group key -> struct wgroup: the waiting ones, grouped */
    struct wgroup **live_groups; /* the same, in the order they were made */
    size_t n_groups, cap_groups;
    size_t n_waiting, cap_waiting;
    unsigned list_gen[CLUSTER_KINDS];
    bool listed[CLUSTER_KINDS];
    bool absent[CLUSTER_KINDS]; /* an optional kind not served or not readable (cluster_kind_absent)
                                 */
    double heartbeat[CLUSTER_KINDS]; /* monotonic seconds */
    bool snapshot;
    unsigned snapshot_held; /* the kinds a snapshot held objects of, bits (1u << kind) */
    char *snapshot_path;    /* the file it was loaded from (owned), or NULL */
    bool gaps_told;         /* cluster_snapshot_tell_gaps() answered true once */
    struct cluster_cm_ref plugin_refs[CLUSTER_PLUGIN_CONFIGS_MAX]; /* cluster_plugin_configs_want */
    size_t n_plugin_refs;
};

/* The record of resource rn on node n, or NULL; rn is interned (cluster_rname), or NULL for a
 * name no node has. */
static inline const struct node_res *node_res_find(const struct node *n, const char *rn)
{
    for (size_t i = 0; rn != NULL && i < n->n_res; i++) {
        if (n->res[i].name == rn)
            return &n->res[i];
    }
    return NULL;
}

/* The label that says node n has NVIDIA GPUs whatever it advertises, or NULL: the GPU
 * Operator's nvidia.com/gpu.present=true, NFD's PCI vendor label (10de: NVIDIA) =true, and the
 * clouds' accelerator labels, which Cluster Autoscaler reads as GPULabel() (AWS
 * k8s.amazonaws.com/accelerator, GCE cloud.google.com/gke-accelerator, Azure accelerator and
 * AKS's kubernetes.azure.com/accelerator, Alibaba aliyun.accelerator/nvidia_name; GPU.md,
 * AUTOSCALER.md §1.6). */
const char *cluster_node_gpu_label(const struct node *n);
/* Whether n advertises any nvidia.com/ resource. */
bool cluster_node_offers_nvidia(const struct node *n);
/* Whether node n shares its GPUs (time-slicing or MPS, by GPU feature discovery's labels
 * nvidia.com/gpu.sharing-strategy and nvidia.com/gpu.replicas), with those labels in why. */
bool cluster_node_shares(const struct node *n, char *why, size_t len);
/* Whether the device plugin config node n picks (its nvidia.com/device-plugin.config label,
 * else the key default, else a config's only key), found in a config ConfigMap of the view,
 * shares GPUs and fails a container asking for more than one (failRequestsGreaterThanOne;
 * MPS's default), with where it says so in why. False when the view holds no such config. */
bool cluster_node_fails_gt_one(const struct cluster *c, const struct node *n, char *why,
                               size_t len);
/* The name of a PriorityClass of value in the view (the first by name), or NULL. The caller
 * holds the view's lock. */
const char *cluster_class_name(const struct cluster *c, int64_t value);

/* The allocatable a decision uses: the last nonzero one during the grace after a drop to 0. */
int64_t cluster_effective_allocatable(const struct cluster *c, const struct node_res *r,
                                      double now);
const struct binding *cluster_binding(const struct cluster *c, const char *node);
/* The interned copy of resource name, or NULL when no node offers it and no bound pod uses it
 * (then no node_res or bound_res can have it): records compare names by pointer. */
const char *cluster_rname(const struct cluster *c, const char *name);
/* The replicas the view shows of the workload of key (cluster_workload_key): 0 for none. */
int64_t cluster_shown(const struct cluster *c, uint64_t key);

#endif
