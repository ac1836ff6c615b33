/*
 * toleration.h: whether a pod's toleration tolerates a taint, as the scheduler decides it
 * (k8s.io/api/core/v1 toleration.go, ToleratesTaint): the toleration's effect is empty or the
 * taint's; an empty key with operator Exists tolerates every taint; otherwise the keys match,
 * and with Exists any value is tolerated, with Equal (the default operator) only the same value.
 *
 * Strings compare as C strings, up to a NUL (the apiserver refuses a NUL in a toleration's key
 * or value, so no admitted pod holds one). The toleration is borrowed, and only read.
 */
#ifndef GPUADMIT_TOLERATION_H
#define GPUADMIT_TOLERATION_H

#include <stdbool.h>
#include <yyjson.h>

/* Whether tol (an element of a pod spec's tolerations) tolerates the taint key=value:effect.
 * value NULL stands for a taint of any value (a policy's GPU taint written without one): only
 * Exists tolerates all of those. */
bool toleration_tolerates(yyjson_val *tol, const char *key, const char *value, const char *effect);

#endif
