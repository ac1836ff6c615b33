/*
 * pool.h: a policy's GPU pools (gpu.pools) as the rules use them: which pools a pod's GPU demand
 * draws on, and the taints and node labels of those pools.
 *
 * A resource belongs to the first pool whose globs match it (the loader refuses a later glob an
 * earlier pool already matches). A policy without pools is one kind of GPU node: its lists are
 * what every function here returns. Returned pointers are borrowed from the policy.
 */
#ifndef GPUADMIT_POOL_H
#define GPUADMIT_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster/cluster.h"
#include "pod.h"
#include "policy.h"

/* The index of the pool that res belongs to, or -1 (none, or a policy without pools). */
int pool_of(const struct policy_doc *doc, const char *res);

/* The pools the demand draws on, one bit per index of doc->pools; 0 when it draws on none (it
 * requests no GPU resource of the policy, or the policy has no pools). */
unsigned pool_set(const struct policy_doc *doc, const struct pod_demand *dm);

/* The taints of the pools in set (set != 0), each once, as shallow copies (the strings borrowed
 * from the policy) into out, which has room for max; how many, or max + 1 when they do not fit. */
size_t pool_taints(const struct policy_doc *doc, unsigned set, struct taint *out, size_t max);

/* The node labels of the pools in set (set != 0), each key=value once, as pool_taints(). */
size_t pool_labels(const struct policy_doc *doc, unsigned set, struct node_label *out, size_t max);

/* Whether two pools of set give one label key different values (no node is in both). */
bool pool_labels_clash(const struct policy_doc *doc, unsigned set);

/* Against a view (a snapshot, or synced): 1 when a node that offers one of pool i's resources
 * carries every one of its labels that has a value, 0 when none does (node-selector would patch
 * its pods to stay Pending, so it adds nothing and warns), -1 when no node offers them or the
 * pool has no label with a value. */
int pool_nodes_carry(const struct policy_doc *doc, size_t i, struct cluster *view);

/* The pools' names, "a and b" or "a, b and c", into buf; "" for set 0. */
void pool_names(const struct policy_doc *doc, unsigned set, char *buf, size_t len);

#endif
