/*
 * pod.h: GPU facts of a pod spec (a Pod's spec, or the pod template spec of a workload).
 *
 * A container's GPU request is requests[r], or limits[r] where requests lack it: Pods arrive
 * defaulted, templates do not (docs/protocol.md §6). The pod's demand per resource follows the
 * scheduler: the larger of (app containers + sidecars) and the largest init-phase need, plus
 * spec.overhead (docs/protocol.md §8). Every pointer is borrowed from the
 * spec's document.
 */
#ifndef GPUADMIT_POD_H
#define GPUADMIT_POD_H

#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

#include "diag.h"
#include "bounds.h"
#include "policy.h"

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

/* Ways a container reaches GPUs around the device plugin, for gpu-request's bypass checks (the
 * reasons, with their upstream sources, are at each function in pod.c). c is one element of
 * containers, initContainers or ephemeralContainers; spec the pod spec. */

/* Whether env sets NVIDIA_VISIBLE_DEVICES to a value that asks for GPUs (not void, none, ""). */
bool pod_sets_visible_devices(yyjson_val *c);
/* How it is set, for messages: "=\"all\"" or " from valueFrom", into out (len bytes). */
void pod_visible_devices_value(yyjson_val *c, char *out, size_t len);
/* The first container or init container for which fn is true, or NULL. */
yyjson_val *pod_find_container(yyjson_val *spec, bool (*fn)(yyjson_val *));
bool pod_is_privileged(yyjson_val *c);
/* A hostPath volume's path that exposes GPU device nodes (judged normalised), or NULL. */
const char *pod_dev_host_path(yyjson_val *spec);
/* The mountPath of a volumeMount under the runtime hook's device list, or NULL. */
const char *pod_device_list_mount(yyjson_val *c);
bool pod_mounts_device_list(yyjson_val *c);
/* Whether a hostPath volume is /dev/null (the device plugin's volume-mount placeholder). */
bool pod_dev_null_host_path(yyjson_val *spec);
/* A hostPath volume's path that reaches a container runtime's socket, or NULL. */
const char *pod_runtime_socket_host_path(yyjson_val *spec);
/* Whether an envFrom entry may set NVIDIA_VISIBLE_DEVICES, CUDA_VERSION or NVIDIA_REQUIRE_CUDA. */
bool pod_has_env_from(yyjson_val *c);
/* Whether the env makes the NVIDIA runtime read the image as a legacy CUDA one (every GPU). */
bool pod_cuda_env_unsafe(yyjson_val *c);

#endif
