/*
 * capacity_cache.h: what capacity.c remembers between decisions on one cluster view, for
 * capacity.c and its unit test (which reads what is remembered); nothing else includes this
 * header. Others see struct capacity_cache through capacity.h only, as an opaque pointer.
 *
 * The view owns its cache (cluster_new makes it with capacity_cache_new, cluster_free frees
 * it): the eligible sets point at the view's node records and res_sum slots, valid while its
 * node_gen is unchanged, so a cache serves the one view it was made for.
 *
 * Locking: elig_lock guards the eligible-set entries, the waiting sets and every set's refs;
 * reserve_lock guards the reservations. Each is taken alone or under the view's read lock,
 * never the other way round, and neither under the other.
 */
#ifndef GPUADMIT_CAPACITY_CACHE_H
#define GPUADMIT_CAPACITY_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster_view.h"
#include "bounds.h"

/* GPUs of an admitted increase on one node, held back from "fits now" until its pods show up
 * in the view (the node's use grows past used_at + gpus) or the window ends. At most
 * CAPACITY_RESERVATIONS_MAX (bounds.h). */
struct reservation {
    double until;   /* monotonic seconds */
    uint64_t key;   /* the workload's (cluster_workload_key) */
    int64_t base;   /* its replicas before the admitted change */
    int64_t target; /* base + the pods admitted: the view's replicas that end it (shown) */
    char node[254];
    char name[RESOURCE_NAME_MAX];
    int64_t gpus;
    int64_t pods;    /* the pods those stand for (every resource's entry of a node the same) */
    int64_t used_at; /* the node's use of name when reserved */
};

/* Where a pod template can go, remembered per template: the eligible nodes in the order of a
 * scan, and the words for the others. Valid while the view's node_gen is unchanged. */
#define ELIG_CACHE_MAX 16
struct elig_slot {
    uint32_t slot; /* of the template's first resource */
    uint32_t i;    /* the node's place in the scan */
};

struct elig_set {
    unsigned refs; /* the entry's, and one per decision reading it; changed under elig_lock */
    size_t n, n_res;
    size_t n_transient; /* nodes[n..n+n_transient): eligible but for a cordon or NotReady */
    uint32_t *sums;     /* n * n_res: node i's res_sum of the template's resource r at i*n_res+r;
                           stable, like the node pointers, while node_gen is unchanged */
    struct elig_slot *by_slot; /* n, sorted by slot: the order the lines lie in memory (the
                                  eligible nodes only) */
    const struct node *nodes[];
};

struct elig_entry {
    char *key; /* NULL: unused; key_len bytes, NULs among them */
    size_t key_len;
    unsigned long gen, used;
    struct elig_set *set; /* shared with the decisions that found it, not copied */
    char *reasons, *shared_why, *fail_why;
    bool all_fail_gt_one;
    bool all_shared;
};

struct capacity_cache {
    pthread_mutex_t elig_lock;
    struct elig_entry elig[ELIG_CACHE_MAX];
    unsigned long elig_tick;
    /* the eligible sets of waiting pods by their place hash (struct waiter), so that a decision
     * does not rebuild their keys: each holding one reference to its set */
    struct {
        uint64_t place;
        const char *res; /* interned */
        unsigned long gen;
        struct elig_set *set; /* NULL: unused */
    } wait_sets[ELIG_CACHE_MAX];
    unsigned wait_sets_next;
    pthread_mutex_t reserve_lock;
    struct reservation reservations[CAPACITY_RESERVATIONS_MAX];
    size_t n_reservations;
};

#endif
