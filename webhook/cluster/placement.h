/*
 * placement.h: whether a node admits a pod spec by its labels and taints, as kube-scheduler's
 * NodeAffinity and TaintToleration filters judge (kubernetes/kubernetes
 * pkg/scheduler/framework/plugins/nodeaffinity, tainttoleration; the matching itself is
 * k8s.io/component-helpers/scheduling/corev1). For capacity.c, which counts the nodes a template
 * can go to, and pending.c, which replays why a Pending pod goes to none.
 *
 * spec is a pod spec (a review's, or the view's trimmed copy), labels a node's labels (an
 * object). Strings of spec may hold "\u0000": they are compared as (pointer, length), so that
 * "a\u0000b" is not "a"; a node's come from the apiserver, which allows no NUL in them.
 */
#ifndef GPUADMIT_PLACEMENT_H
#define GPUADMIT_PLACEMENT_H

#include <stdbool.h>
#include <yyjson.h>

/* The first label of spec.nodeSelector that labels lack or hold another value of: true with
 * its key and value (borrowed from spec; "" for a value that is no string), false when the
 * node carries them all. */
bool placement_selector_miss(yyjson_val *spec, yyjson_val *labels, const char **key,
                             const char **value);
/* The node (name, labels) matches spec's required node affinity: one of its nodeSelectorTerms
 * holds, each term's requirements all (a term with none matches no node); true when spec has
 * none. */
bool placement_affinity_ok(yyjson_val *spec, const char *node_name, yyjson_val *labels);
/* One of tolerations (an array, or NULL) tolerates the taint key=value:effect. */
bool placement_tolerated(yyjson_val *tolerations, const char *key, const char *value,
                         const char *effect);
/* The taints the node lifecycle controller and kubectl cordon put on a node while it is
 * NotReady, unreachable or unschedulable. */
bool placement_lifecycle_taint(const char *key);

#endif
