/*
 * workload.h: the GPU pods a change to a workload asks for, as its controller will create them,
 * for capacity_judge() to weigh: a Deployment's, ReplicaSet's, StatefulSet's or Job's CREATE or
 * UPDATE (replicas, a Job's width, a rollout's surge), a CronJob's Jobs, an UPDATE of the scale
 * subresource, a HorizontalPodAutoscaler's maxReplicas. The arithmetic follows the controllers'
 * own (kubernetes/kubernetes pkg/controller), cited where it is done.
 *
 * Ownership: spec borrows from the review's document, or from spec_doc, which the demand owns
 * (workload_demand_release()).
 */
#ifndef GPUADMIT_WORKLOAD_H
#define GPUADMIT_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "review.h"

/* What a capacity judgement is about. */
struct workload_demand {
    yyjson_val *spec;     /* the pod template spec: in the review's document, or in spec_doc */
    yyjson_doc *spec_doc; /* owned: the view's copy of a template (a scale, an HPA), or NULL */
    int64_t increase;
    int64_t total;
    int64_t surge;  /* of increase, the rollout's surge pods (maxUnavailable 0): a stall, never
                       "never" */
    bool grew;      /* the replicas (a Job's width) grow, it is new, or its template changes: only
                       then can it be "never" */
    bool hpa;       /* a HorizontalPodAutoscaler: warnings only */
    bool pod;       /* a bare pod: the sharing check only */
    bool job;       /* a Job: its pods run as others finish, so its width is clamped to at most */
    bool cron;      /* a CronJob's jobTemplate: its Jobs come later, so "not now" only warns */
    uint64_t key;   /* its reservations' (cluster_workload_key) */
    int64_t before; /* replicas (a Job's width) before the change */
    char what[300];
};

/* Fills wd (zeroed by the caller) when r is one of the changes above; false (wd untouched but
 * for spec_doc, which may need releasing) when it is none, or when a scale or HPA target is no
 * GPU workload of view (NULL: none configured, so no template to judge). owned_replicasets:
 * judge a ReplicaSet a Deployment controls (else it is judged at its Deployment). */
bool workload_demand_of(const struct review *r, bool owned_replicasets, struct cluster *view,
                        struct workload_demand *wd);
void workload_demand_release(struct workload_demand *wd);

#endif
