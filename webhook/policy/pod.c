/*
 * pod.c: GPU demand of a pod spec, and the ways its containers could reach GPUs around the
 * device plugin (see pod.h). Only reads the spec.
 */
#include "pod.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "quantity.h"
#include "text.h"

bool pod_glob_any(const struct strlist *globs, const char *name)
{
    for (size_t i = 0; i < globs->n; i++) {
        if (fnmatch(globs->v[i], name, 0) == 0)
            return true;
    }
    return false;
}

bool pod_is_extended(const char *name)
{
    const char *slash = strchr(name, '/');
    size_t dlen;

    if (slash == NULL || slash == name)
        return false;
    dlen = (size_t)(slash - name);
    /* the kubernetes.io domain (and its subdomains) is the API's own, not an extended resource */
    if (dlen == 13 && strncmp(name, "kubernetes.io", 13) == 0)
        return false;
    return !(dlen > 14 && strncmp(slash - 14, ".kubernetes.io", 14) == 0);
}

/* A NULL glob list counts every extended resource (the cluster view keeps them all; the
 * policy's globs choose among them at decision time). */
static bool counted(const struct strlist *globs, const char *name)
{
    return globs != NULL ? pod_glob_any(globs, name) : pod_is_extended(name);
}

int64_t pod_demand_get(const struct pod_demand *dm, const char *name)
{
    for (size_t i = 0; i < dm->n; i++) {
        if (strcmp(dm->r[i].name, name) == 0)
            return dm->r[i].milli;
    }
    return 0;
}

static int64_t *demand_slot(struct pod_demand *dm, const char *name, struct diag *d)
{
    for (size_t i = 0; i < dm->n; i++) {
        if (strcmp(dm->r[i].name, name) == 0)
            return &dm->r[i].milli;
    }
    if (dm->n == POD_RESOURCES_MAX) {
        diag_set(d, NULL, 0, 0, "more than %d distinct GPU resources in one pod",
                 POD_RESOURCES_MAX);
        return NULL;
    }
    dm->r[dm->n].name = name;
    dm->r[dm->n].milli = 0;
    return &dm->r[dm->n++].milli;
}

/* Which container an error names: base, or base[idx]. Formatted only for an error: a pod's
 * demand is computed for every rule and every listed pod, and errors are rare. */
struct where {
    const char *base; /* "spec.containers", or a caller's whole text */
    size_t idx;       /* WHERE_WHOLE: base alone */
};
#define WHERE_WHOLE ((size_t)-1)

/* One GPU amount from a resource list entry; an error names where. */
static int gpu_amount(yyjson_val *v, const struct where *w, const char *list, const char *name,
                      int64_t *milli, struct diag *d)
{
    const char *why = NULL;
    char at[64];

    if (quantity_json_milli(v, milli) < 0)
        why = "not a valid quantity";
    else if (*milli < 0 || *milli % 1000 != 0)
        why = "must be a whole, non-negative number";
    if (why == NULL)
        return 0;
    if (w->idx == WHERE_WHOLE)
        snprintf(at, sizeof(at), "%s", w->base);
    else
        snprintf(at, sizeof(at), "%s[%zu]", w->base, w->idx);
    diag_set(d, NULL, 0, 0, "%s.resources.%s[\"%s\"]: %s", at, list, name, why);
    return -1;
}

/* Resource names are keys: a key with a NUL ("nvidia.com/gpu\u0000x") names no resource the
 * scheduler knows, so it is not counted (its C string would read as the resource). */
static const char *key_name(yyjson_val *k)
{
    const char *s = yyjson_get_str(k);

    return s != NULL && strlen(s) == yyjson_get_len(k) ? s : NULL;
}

static int container_gpus(yyjson_val *container, const struct where *where,
                          const struct strlist *gpu_globs, struct pod_demand *out, struct diag *d)
{
    yyjson_val *res = yyjson_obj_get(container, "resources");
    yyjson_val *req = yyjson_obj_get(res, "requests");
    yyjson_val *lim = yyjson_obj_get(res, "limits");
    const char *name;
    yyjson_val *k, *v;
    size_t i, max;
    int64_t milli, *slot;

    out->n = 0;
    /* requests first; limits stand in only where requests lack the resource */
    yyjson_obj_foreach (req, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name))
            continue;
        if (gpu_amount(v, where, "requests", name, &milli, d) < 0)
            return -1;
        if (milli > 0) {
            if ((slot = demand_slot(out, name, d)) == NULL)
                return -1;
            *slot = milli;
        }
    }
    yyjson_obj_foreach (lim, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name) ||
            yyjson_obj_get(req, name) != NULL)
            continue;
        if (gpu_amount(v, where, "limits", name, &milli, d) < 0)
            return -1;
        if (milli > 0) {
            if ((slot = demand_slot(out, name, d)) == NULL)
                return -1;
            *slot = milli;
        }
    }
    return 0;
}

int pod_container_gpus(yyjson_val *container, const char *where, const struct strlist *gpu_globs,
                       struct pod_demand *out, struct diag *d)
{
    struct where w = {where, WHERE_WHOLE};

    return container_gpus(container, &w, gpu_globs, out, d);
}

static bool is_sidecar(yyjson_val *init)
{
    return json_str_is(yyjson_obj_get(init, "restartPolicy"), "Always");
}

/* acc[r] = op(acc[r], add[r]) for every r in add: op 0 sums, op 1 takes the maximum. */
static int demand_merge(struct pod_demand *acc, const struct pod_demand *add, int take_max,
                        struct diag *d)
{
    int64_t *slot;

    for (size_t i = 0; i < add->n; i++) {
        if ((slot = demand_slot(acc, add->r[i].name, d)) == NULL)
            return -1;
        if (take_max) {
            if (add->r[i].milli > *slot)
                *slot = add->r[i].milli;
        } else if (__builtin_add_overflow(*slot, add->r[i].milli, slot)) {
            diag_set(d, NULL, 0, 0, "%s: GPU amounts overflow", add->r[i].name);
            return -1;
        }
    }
    return 0;
}

int pod_gpu_demand(yyjson_val *spec, const struct strlist *gpu_globs, struct pod_demand *out,
                   struct diag *d)
{
    struct pod_demand app = {.n = 0}, sidecars = {.n = 0}, init_peak = {.n = 0}, one, need;
    yyjson_val *list, *c, *overhead, *k, *v;
    struct where w;
    size_t i, max;
    const char *name;
    int64_t milli, *slot;

    out->n = 0;
    list = yyjson_obj_get(spec, "containers");
    yyjson_arr_foreach (list, i, max, c) {
        w = (struct where){"spec.containers", i};
        if (container_gpus(c, &w, gpu_globs, &one, d) < 0 || demand_merge(&app, &one, 0, d) < 0)
            return -1;
    }
    list = yyjson_obj_get(spec, "initContainers");
    yyjson_arr_foreach (list, i, max, c) {
        w = (struct where){"spec.initContainers", i};
        if (container_gpus(c, &w, gpu_globs, &one, d) < 0)
            return -1;
        if (is_sidecar(c)) {
            /* a sidecar keeps running: it adds to everything after it */
            if (demand_merge(&sidecars, &one, 0, d) < 0 ||
                demand_merge(&init_peak, &sidecars, 1, d) < 0)
                return -1;
            continue;
        }
        /* a regular init container runs alone, next to the sidecars started before it */
        need = sidecars;
        if (demand_merge(&need, &one, 0, d) < 0 || demand_merge(&init_peak, &need, 1, d) < 0)
            return -1;
    }
    if (demand_merge(&app, &sidecars, 0, d) < 0 || demand_merge(out, &app, 1, d) < 0 ||
        demand_merge(out, &init_peak, 1, d) < 0)
        return -1;
    overhead = yyjson_obj_get(spec, "overhead");
    yyjson_obj_foreach (overhead, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name))
            continue;
        if (quantity_json_milli(v, &milli) < 0 || milli < 0) {
            diag_set(d, NULL, 0, 0, "spec.overhead[\"%s\"]: not a valid quantity", name);
            return -1;
        }
        if (milli == 0)
            continue;
        if ((slot = demand_slot(out, name, d)) == NULL ||
            __builtin_add_overflow(*slot, milli, slot))
            return -1;
    }
    return 0;
}

/* ---- how a container could reach GPUs around the device plugin ---- */

/* The NVIDIA_VISIBLE_DEVICES entry of a container's env that can widen what the NVIDIA runtime
 * exposes, or NULL. The runtime hands a container the GPUs its NVIDIA_VISIBLE_DEVICES names, for
 * unprivileged containers too by default (nvidia-container-toolkit, internal/config/config.go:
 * accept-nvidia-visible-devices-envvar-when-unprivileged = true; internal/config/image/
 * cuda_image.go reads the variable). The kubelet puts the device plugin's value first and the
 * pod's env after it (pkg/kubelet/kubelet_pods.go, GenerateRunContainerOptions), so a user value
 * overrides the plugin's. "void", "none" and "" ask for no GPU, and can only narrow what the
 * plugin allocated: the wording ("anything but void or none") left "" out, but upstream
 * reads an empty value as no device (cuda_image.go DevicesFromEnvvars: "unset or empty or
 * void"), and a set variable, empty or not, also stops the legacy CUDA_VERSION default of
 * "all". An entry with neither value nor valueFrom is the empty string. valueFrom is unknown
 * here and is counted with every other value. */
static yyjson_val *visible_devices_entry(yyjson_val *c)
{
    yyjson_val *env = yyjson_obj_get(c, "env"), *e;
    size_t i, max;

    yyjson_arr_foreach (env, i, max, e) {
        yyjson_val *v = yyjson_obj_get(e, "value");

        /* byte for byte: "void\u0000all" is a value other than void */
        if (!json_str_is(yyjson_obj_get(e, "name"), "NVIDIA_VISIBLE_DEVICES"))
            continue;
        if (yyjson_obj_get(e, "valueFrom") == NULL &&
            (!yyjson_is_str(v) || json_str_is(v, "") || json_str_is(v, "void") ||
             json_str_is(v, "none")))
            continue;
        return e;
    }
    return NULL;
}

bool pod_sets_visible_devices(yyjson_val *c)
{
    return visible_devices_entry(c) != NULL;
}

/* How a container's NVIDIA_VISIBLE_DEVICES is set, for messages: "=\"all\"", " from valueFrom"
 * (an entry with neither value nor valueFrom is the empty string). */
void pod_visible_devices_value(yyjson_val *c, char *out, size_t len)
{
    yyjson_val *e = visible_devices_entry(c);
    yyjson_val *v = yyjson_obj_get(e, "value");
    char shown[64 * 6 + 4];

    if (yyjson_obj_get(e, "valueFrom") != NULL) {
        snprintf(out, len, " from valueFrom");
        return;
    }
    text_excerpt(yyjson_is_str(v) ? yyjson_get_str(v) : "", yyjson_get_len(v), 64, shown,
                 sizeof(shown));
    snprintf(out, len, "=\"%s\"", shown);
}

/* Calls fn on every container and init container until it returns true; that container. */
yyjson_val *pod_find_container(yyjson_val *spec, bool (*fn)(yyjson_val *))
{
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_val *c;
    size_t i, max;

    for (size_t l = 0; l < 2; l++) {
        yyjson_arr_foreach (yyjson_obj_get(spec, lists[l]), i, max, c) {
            if (fn(c))
                return c;
        }
    }
    return NULL;
}

bool pod_is_privileged(yyjson_val *c)
{
    return yyjson_is_true(yyjson_obj_get(yyjson_obj_get(c, "securityContext"), "privileged"));
}

/* path with empty and "." segments dropped and ".." applied, into out. */
static void normalize_path(const char *path, char *out, size_t len)
{
    size_t n = 0, seg;
    const char *p = path, *end;

    out[0] = '\0';
    while (*p) {
        while (*p == '/')
            p++;
        end = strchr(p, '/');
        seg = end ? (size_t)(end - p) : strlen(p);
        if (seg == 0 || (seg == 1 && p[0] == '.')) {
            /* nothing */
        } else if (seg == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else if (n + 1 + seg < len) {
            out[n++] = '/';
            memcpy(out + n, p, seg);
            n += seg;
        }
        p += seg;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
}

/* Whether a /proc path leads to a process's view of the host: /proc itself, a process's
 * directory, or its root, cwd, fd, map_files or task entries (/proc/1/root is the host's /). */
static bool proc_host_root(const char *norm)
{
    const char *pid, *rest;
    size_t seg;

    if (strcmp(norm, "/proc") == 0)
        return true;
    if (strncmp(norm, "/proc/", 6) != 0)
        return false;
    pid = norm + 6;
    rest = strchr(pid, '/');
    if (rest == NULL)
        return true;
    rest++;
    seg = strcspn(rest, "/");
    return (seg == 4 && (strncmp(rest, "root", 4) == 0 || strncmp(rest, "task", 4) == 0)) ||
           (seg == 3 && strncmp(rest, "cwd", 3) == 0) ||
           (seg == 2 && strncmp(rest, "fd", 2) == 0) ||
           (seg == 9 && strncmp(rest, "map_files", 9) == 0);
}

/* Whether a normalised host path exposes GPU device nodes: the root or /run (which hold them),
 * any .../dev directory (the host's, or a driver root's such as the GPU Operator's
 * /run/nvidia/driver/dev), /dev/nvidia*, /dev/dri (DRM render nodes), /dev/char and /dev/block
 * (their links name every device by number: /dev/char/195:0 is /dev/nvidia0), the driver root,
 * or a process's root under /proc. */
static bool exposes_devices(const char *norm)
{
    static const char *const globs[] = {"*/dev/nvidia*", "*/dev/dri",    "*/dev/dri/*",
                                        "*/dev/char",    "*/dev/char/*", "*/dev/block",
                                        "*/dev/block/*", "/run/nvidia",  "/run/nvidia/driver*"};
    size_t n = strlen(norm);

    if (strcmp(norm, "/") == 0 || strcmp(norm, "/run") == 0 ||
        (n >= 4 && strcmp(norm + n - 4, "/dev") == 0) || proc_host_root(norm))
        return true;
    for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++)
        if (fnmatch(globs[i], norm, 0) == 0)
            return true;
    return false;
}

/* A hostPath that exposes GPU device nodes (exposes_devices), judged as the host resolves it:
 * ".", ".." and repeated slashes applied, and /var/run read as /run, which it links to on
 * every distribution the kubelet runs on. */
const char *pod_dev_host_path(yyjson_val *spec)
{
    yyjson_val *vols = yyjson_obj_get(spec, "volumes"), *vol;
    size_t i, max;
    char norm[512], alias[512];

    yyjson_arr_foreach (vols, i, max, vol) {
        const char *p = json_str(yyjson_obj_get(yyjson_obj_get(vol, "hostPath"), "path"));

        if (p == NULL)
            continue;
        normalize_path(p, norm, sizeof(norm));
        if (strcmp(norm, "/var/run") == 0 || strncmp(norm, "/var/run/", 9) == 0) {
            snprintf(alias, sizeof(alias), "%s", norm + 4);
            snprintf(norm, sizeof(norm), "%s", alias);
        }
        if (exposes_devices(norm))
            return p;
    }
    return NULL;
}

/* path normalised (normalize_path) with /var/run read as /run, into out. */
static void host_view_path(const char *path, char *out, size_t len)
{
    char alias[512];

    normalize_path(path, out, len);
    if (strcmp(out, "/var/run") == 0 || strncmp(out, "/var/run/", 9) == 0) {
        snprintf(alias, sizeof(alias), "%s", out + 4);
        snprintf(out, len, "%s", alias);
    }
}

/* The mountPath of a volumeMount of the container under the runtime hook's volume-mount device
 * list, or NULL: with accept-nvidia-visible-devices-as-volume-mounts (the device plugin's
 * DEVICE_LIST_STRATEGY=volume-mounts), the NVIDIA hook takes every mount under
 * /var/run/nvidia-container-devices as a device to hand over, named by the rest of its path
 * (nvidia-container-toolkit, the hook's getDevicesFromMounts): a mount at
 * .../nvidia-container-devices/all, of any volume, asks for every GPU. Judged normalised, and
 * /run/nvidia-container-devices too. */
const char *pod_device_list_mount(yyjson_val *c)
{
    yyjson_val *m;
    size_t i, max;
    char norm[512];

    yyjson_arr_foreach (yyjson_obj_get(c, "volumeMounts"), i, max, m) {
        const char *p = json_str(yyjson_obj_get(m, "mountPath"));

        if (p == NULL)
            continue;
        host_view_path(p, norm, sizeof(norm));
        if (strcmp(norm, "/run/nvidia-container-devices") == 0 ||
            strncmp(norm, "/run/nvidia-container-devices/", 30) == 0)
            return p;
    }
    return NULL;
}

bool pod_mounts_device_list(yyjson_val *c)
{
    return pod_device_list_mount(c) != NULL;
}

/* The first hostPath volume whose path, normalised with /var/run read as /run, is one of paths
 * (n of them), or NULL. */
static const char *listed_host_path(yyjson_val *spec, const char *const *paths, size_t n)
{
    yyjson_val *vol;
    size_t i, max;
    char norm[512];

    yyjson_arr_foreach (yyjson_obj_get(spec, "volumes"), i, max, vol) {
        const char *p = json_str(yyjson_obj_get(yyjson_obj_get(vol, "hostPath"), "path"));

        if (p == NULL)
            continue;
        host_view_path(p, norm, sizeof(norm));
        for (size_t k = 0; k < n; k++)
            if (strcmp(norm, paths[k]) == 0)
                return p;
    }
    return NULL;
}

/* Whether a hostPath volume is /dev/null, the device plugin's placeholder for a volume-mount
 * device list entry. */
bool pod_dev_null_host_path(yyjson_val *spec)
{
    static const char *const paths[] = {"/dev/null"};

    return listed_host_path(spec, paths, sizeof(paths) / sizeof(paths[0])) != NULL;
}

/* A hostPath that reaches a container runtime's socket, or NULL: with it a container asks the
 * runtime for a privileged container with every GPU of the node, around the kubelet and this
 * webhook. The sockets of containerd, Docker and CRI-O, and their folders (the ones that hold
 * nothing else: /run, which holds docker.sock, is judged by pod_dev_host_path). */
const char *pod_runtime_socket_host_path(yyjson_val *spec)
{
    static const char *const paths[] = {"/run/containerd", "/run/containerd/containerd.sock",
                                        "/run/docker.sock", "/run/crio", "/run/crio/crio.sock"};

    return listed_host_path(spec, paths, sizeof(paths) / sizeof(paths[0]));
}

/* Whether an envFrom entry of the container may set NVIDIA_VISIBLE_DEVICES, CUDA_VERSION or
 * NVIDIA_REQUIRE_CUDA unseen (the last two make a legacy CUDA image: pod_cuda_env_unsafe): every
 * key of the ConfigMap or Secret becomes PREFIX+KEY, so an entry is safe only with a prefix
 * that none of them starts with (APP_, say). */
bool pod_has_env_from(yyjson_val *c)
{
    static const char *const vars[] = {"NVIDIA_VISIBLE_DEVICES", "CUDA_VERSION",
                                       "NVIDIA_REQUIRE_CUDA"};
    yyjson_val *e;
    size_t i, max;

    yyjson_arr_foreach (yyjson_obj_get(c, "envFrom"), i, max, e) {
        const char *prefix = json_str(yyjson_obj_get(e, "prefix"));

        if (prefix == NULL)
            return true;
        for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++)
            if (strncmp(vars[v], prefix, strlen(prefix)) == 0)
                return true;
    }
    return false;
}

/* The container's last env entry called name (the kubelet keeps the last of duplicates), or
 * NULL. */
static yyjson_val *env_entry(yyjson_val *c, const char *name)
{
    yyjson_val *env = yyjson_obj_get(c, "env"), *e, *found = NULL;
    size_t i, max;

    yyjson_arr_foreach (env, i, max, e) {
        if (json_str_is(yyjson_obj_get(e, "name"), name))
            found = e;
    }
    return found;
}

/* Whether an env entry is empty: neither a value nor valueFrom, or the value "". */
static bool env_empty(yyjson_val *e)
{
    yyjson_val *v = yyjson_obj_get(e, "value");

    return yyjson_obj_get(e, "valueFrom") == NULL && (!yyjson_is_str(v) || json_str_is(v, ""));
}

/*
 * Whether the container's env makes the NVIDIA runtime read it as a legacy CUDA image, which
 * gets every GPU of the node when NVIDIA_VISIBLE_DEVICES is unset: a CUDA_VERSION that is not
 * empty (or from valueFrom) with NVIDIA_REQUIRE_CUDA empty or unset, or an empty
 * NVIDIA_REQUIRE_CUDA over an image whose CUDA_VERSION the pod spec does not show
 * (nvidia-container-toolkit internal/config/image/cuda_image.go: IsLegacy, and
 * DevicesFromEnvvars, "Environment variable unset with legacy image: default to all"). Safe
 * when the same container sets NVIDIA_VISIBLE_DEVICES to void, none or "" (set, so no
 * default), or a NVIDIA_REQUIRE_CUDA value that is not empty beside its CUDA_VERSION.
 */
bool pod_cuda_env_unsafe(yyjson_val *c)
{
    yyjson_val *ver = env_entry(c, "CUDA_VERSION"), *req = env_entry(c, "NVIDIA_REQUIRE_CUDA");
    yyjson_val *vis = env_entry(c, "NVIDIA_VISIBLE_DEVICES");

    if (vis != NULL && yyjson_obj_get(vis, "valueFrom") == NULL && visible_devices_entry(c) == NULL)
        return false;
    if (req != NULL && yyjson_obj_get(req, "valueFrom") == NULL && !env_empty(req))
        return false; /* a valueFrom may well be empty */
    return (ver != NULL && !env_empty(ver)) || req != NULL;
}
