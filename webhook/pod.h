/*
 * pod.h: GPU facts of a pod spec (a Pod's spec, or the pod template spec of a workload).
 *
 * A container's GPU request is requests[r], or limits[r] where requests lack it: Pods arrive
 * defaulted, templates do not (PROTOCOL.md §6). The pod's demand per resource follows the
 * scheduler: the larger of (app containers + sidecars) and the largest init-phase need, plus
 * spec.overhead (GPU.md §4). Every pointer is borrowed from the
 * spec's document.
 */
#ifndef GPUADMIT_POD_H
#define GPUADMIT_POD_H

#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

#include "diag.h"
#include "policy.h"

#define POD_RESOURCES_MAX 16

struct pod_amount {
    const char *name; /* borrowed from the spec */
    int64_t milli;
};

struct pod_demand {
    struct pod_amount r[POD_RESOURCES_MAX];
    size_t n;
};

/* An extended resource: domain-prefixed, outside the kubernetes.io domain. */
bool pod_is_extended(const char *name);

/* True when name matches one of the globs. */
bool pod_glob_any(const struct strlist *globs, const char *name);

/* The GPU amounts one container asks for (resources matching gpu_globs, amount > 0; with
 * gpu_globs NULL, every extended resource). */
int pod_container_gpus(yyjson_val *container, const char *where, const struct strlist *gpu_globs,
                       struct pod_demand *out, struct diag *d);

/* The pod's effective GPU demand per resource. A quantity that does not parse, or a GPU amount
 * that is not a whole number, is an error naming the field. */
int pod_gpu_demand(yyjson_val *spec, const struct strlist *gpu_globs, struct pod_demand *out,
                   struct diag *d);

int64_t pod_demand_get(const struct pod_demand *dm, const char *name);

#endif
