/*
 * rule_capacity.h: the settings of a capacity rule (rule_capacity.c), for the tests.
 */
#ifndef GPUADMIT_RULE_CAPACITY_H
#define GPUADMIT_RULE_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/growth.h"
#include "policy.h"

struct capacity_settings {
    bool deny_unavailable;  /* more than fits now: deny (else warn) */
    int64_t headroom;       /* GPUs kept free on each node */
    int64_t reserve_s;      /* how long an admitted increase is held back */
    bool owned_replicasets; /* judge ReplicaSets a Deployment controls (else at the Deployment) */
    enum stale_mode when_stale;
    int64_t max_view_age_s;
    bool deny_shared_multiple;   /* more than one shared GPU per container where all are shared */
    bool autoscaling;            /* nodes can be added: "can never fit" is only a warning */
    bool autoscaling_set;        /* autoscaling written in the rule: false then says no node
                                    autoscaler runs, so no matching node at all is "never" */
    struct strlist group_labels; /* nodeGroupLabels: node label keys naming a Cluster Autoscaler
                                    node group, beyond the providers' (cluster/growth.h) */
    struct growth_template *templates; /* nodeGroups: what a new node of a CA node group holds,
                                          for one with no node in the view to show it */
    size_t n_templates;
};

/* r's settings; NULL when r is not a capacity rule. */
const struct capacity_settings *capacity_settings(const struct rule *r);

#endif
