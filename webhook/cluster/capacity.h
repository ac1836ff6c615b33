/*
 * capacity.h: whether N more pods of a template fit the cluster view, and why not.
 *
 * Fit as the scheduler would place them (docs/architecture.md §4.3): eligible nodes are Ready,
 * schedulable, match the template's nodeSelector and required node affinity, and tolerate its
 * NoSchedule and NoExecute taints; each pod lands whole on one node, so a node holds
 * floor(free / per-pod) of them per GPU resource. "Now" counts a node's effective allocatable minus
 * what bound pods use and the headroom, plus what pods of lower priority use when the template's
 * class may preempt; Pods already waiting for GPUs (unbound Pending pods, replicas a controller
 * still owes) of equal or higher priority take the free GPUs of the nodes they can go to first.
 * "ever" counts the eligible nodes' allocatable alone (no headroom), and also the nodes that would
 * be eligible but for a cordon or a NotReady condition, which a drain or a reboot ends. Recent
 * admissions are reserved for a short window, so a burst cannot overcommit; they are keyed by the
 * workload, so that a retried request is not charged its own reservation.
 */
#ifndef GPUADMIT_CAPACITY_H
#define GPUADMIT_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

#include "cluster.h"
#include "bounds.h"
#include "growth.h"
#include "policy/policy.h"

#define CAPACITY_TEXT_MAX 1024
#define CAPACITY_WHO_MAX  256

struct capacity_request {
    yyjson_val *pod_spec;            /* the pod template's spec (borrowed) */
    const struct strlist *gpu_globs; /* which extended resources are GPUs */
    int64_t increase;                /* how many more pods (surge included) */
    int64_t total;                   /* replicas after the change */
    int64_t headroom;                /* GPUs kept free on each node (free now only) */
    uint64_t key;                    /* the workload's (cluster_workload_key()); 0: none */
    int64_t base;                    /* its replicas before the change */
};

struct capacity_result {
    bool judged; /* the template requests GPUs */
    struct {
        char name[RESOURCE_NAME_MAX];
        int64_t per_pod;
    } res[CAPACITY_RESOURCES_MAX];
    size_t n_res;
    int64_t priority;
    bool preempts;     /* its class lets it preempt (not preemptionPolicy: Never) */
    int64_t lower;     /* GPUs the bound pods of strictly lower priority hold on the eligible nodes
                          where preempting them makes room for more of its pods than the free
                          GPUs do, of every resource the template asks for (0 unless it
                          preempts) */
    int64_t fit_now;   /* more pods that fit now */
    int64_t fit_alone; /* of them, those that fit without preempting (fit_now when it cannot) */
    int64_t fit_ever;  /* pods that fit the eligible nodes' allocatable */
    int64_t total_gpus[CAPACITY_RESOURCES_MAX]; /* allocatable of the eligible nodes */
    int eligible;
    int transient;          /* nodes eligible but for a cordon or NotReady: in fit_ever only */
    int64_t fit_transient;  /* of fit_ever, the pods those nodes hold */
    int64_t waiting_pods;   /* pods already waiting (Pending, or owed by their controller) at
                               equal or higher priority that can go to the eligible nodes */
    int64_t waiting_gpus;   /* of the free GPUs of the first resource, those they take */
    int64_t waiting_beyond; /* and what they ask beyond the free ones: GPUs a node autoscaler
                               adds for them first (they are waiting already) */
    int64_t waiting_pending, waiting_owed; /* of waiting_pods, unbound / not created yet */
    bool waiting_more;                     /* more than one kind of placement waits */
    char waiting_who[128];                 /* the first waiting workload, "StatefulSet/ml/db" */
    bool all_shared;      /* every eligible node shares its GPUs (time-slicing, MPS) */
    char shared_why[128]; /* e.g. "time-slicing, nvidia.com/gpu.replicas=4" */
    bool all_fail_gt_one; /* and the device plugin config each picks (in the view) fails a
                             container asking for more than one shared GPU */
    char fail_why[160];   /* "failRequestsGreaterThanOne in gpu-operator/time-slicing-config,
                             key tesla-t4" */
    char nodes[CAPACITY_TEXT_MAX];   /* eligible nodes and their free/total GPUs */
    char reasons[CAPACITY_TEXT_MAX]; /* why other nodes are not eligible */
    /* Whether the increase fits only by preempting: all of it fits now, not without the GPUs of
     * lower-priority pods, and kube-scheduler would evict some for it. Judged only then (a slow
     * path, never in the usual decision), with preempt_gpus, the least it takes of the first
     * resource from those pods (capacity.c, preemption(): an estimate, exact when preempt_exact);
     * preempt_held, what they hold on the eligible nodes where preempting makes room (the most
     * it can take); and preempt_who, who holds what it takes, the lowest priority first, as
     * "4 in namespace ml at priority 1000 (batch-low)" (the words of gpuadmit explain). */
    bool preempt_only;
    int64_t preempt_gpus;
    int64_t preempt_held;
    bool preempt_exact; /* preempt_gpus is what it takes, not the least: pods of one GPU of one
                           resource, whose victims each hold one */
    char preempt_who[CAPACITY_WHO_MAX]; /* last: capacity_judge zeroes the fields before it */
};

/* What decisions remember of one view between calls: the eligible nodes of recent templates
 * and the admitted increases held back. The view owns it: cluster_new makes it and
 * cluster_free frees it, as what it remembers points into the view's records.
 * capacity_cache_new: new (capacity_cache_free()), or NULL when out of memory. */
struct capacity_cache;
struct capacity_cache *capacity_cache_new(void);
void capacity_cache_free(struct capacity_cache *cache);

/* Judges rq against the view (read-locked for the call). Returns 0, or -1 when the template's
 * GPU amounts do not parse (msg in out->reasons). */
int capacity_judge(struct cluster *c, const struct capacity_request *rq,
                   struct capacity_result *out);

/* What the node autoscalers in the view may still add for rq's template (growth.h), res being
 * capacity_judge()'s judgement of it; pol as growth_of() takes it (may be NULL). The
 * view is read-locked for the call. A slow path: for a decision that does not fit the nodes
 * there are. */
bool capacity_autoscalers(struct cluster *c); /* the view holds a CA status or a NodePool */
void capacity_growth(struct cluster *c, const struct capacity_request *rq,
                     const struct capacity_result *res, const struct growth_policy *pol,
                     struct growth *out);

/* The pods that wait first in words, "4 Pending pods (ReplicaSet ml/trainer-7f9)", into buf:
 * formatted only for a message, not in every decision. */
void capacity_waiting_text(const struct capacity_result *res, char *buf, size_t len);

/* "8 replicas × 1 nvidia.com/gpu = 8 requested; ..." into buf. */
void capacity_explain(const struct capacity_request *rq, const struct capacity_result *res,
                      char *buf, size_t len);

/* Reserves an admitted increase of pods of rq's template for window seconds on the eligible
 * nodes that have room, where the scheduler would put them; a node's reservation shrinks as
 * its use grows in the view (the pods arriving). It replaces what rq->key holds from the same
 * base (a retry, a resync, a request another webhook refused): capacity_judge does not count
 * those against rq either. */
void capacity_reserve(struct cluster *c, const struct capacity_request *rq, int64_t pods,
                      double window_s);

/* A scale of the workload of key down to replicas: each of its reservations shrinks to the
 * pods it still stands for, max(0, replicas - its base), the last placed going first. */
void capacity_shrink(struct cluster *c, uint64_t key, int64_t replicas);

#endif
