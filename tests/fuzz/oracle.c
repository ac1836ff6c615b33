/*
 * oracle.c: the default policy judged the simple way (see oracle.h). Its rules on GPU requests,
 * classes, tolerations and selectors come from rules/README.md. Its judgement of ways around
 * the device plugin does not: it comes from what the platform does with each container, so
 * that an engine and a reference that read the same words the same wrong way still disagree
 * with it:
 *   - the kubelet's device manager gives devices to each container that asks for them (an
 *     init container too), and the device plugin sets NVIDIA_VISIBLE_DEVICES for that
 *     container only; a GPU request in one container gives the others nothing, but brings
 *     them all onto a GPU node;
 *   - the NVIDIA container runtime hands a container the GPUs its NVIDIA_VISIBLE_DEVICES
 *     names, unprivileged containers included by default (nvidia-container-toolkit,
 *     accept-nvidia-visible-devices-envvar-when-unprivileged = true), and the pod's own env
 *     comes after the device plugin's value, so it wins; only "void" and "none" ask for none;
 *   - envFrom can set that variable from any ConfigMap or Secret key unless its prefix makes
 *     the name impossible;
 *   - a privileged container gets every device node of the host in its /dev;
 *   - a hostPath volume is the host's tree at that path, and any container of the pod (an
 *     ephemeral one added later too) may mount it: it opens every GPU device node it holds;
 *   - containerd and CRI-O inject the devices a cdi.k8s.io/ annotation names by their CDI
 *     names (nvidia.com/gpu=all);
 *   - the runtime takes a container whose CUDA_VERSION is not empty and whose
 *     NVIDIA_REQUIRE_CUDA is empty or unset for a legacy CUDA image, and gives it every GPU
 *     when NVIDIA_VISIBLE_DEVICES is unset (cuda_image.go, IsLegacy and DevicesFromEnvvars);
 *     the image's own env is unknown here, and the pod's env comes after it;
 *   - the runtime hook hands a container a device for every mount under
 *     /var/run/nvidia-container-devices, named by the rest of its path (the volume-mount
 *     device list, getDevicesFromMounts), whatever the volume;
 *   - a container runtime's socket lets a container start another, privileged one;
 *   - with a cluster view, a pod that tolerates every taint lands where its selector says, GPU
 *     nodes included; the fuzzer has no view, so that case is left to the unit tests;
 *   - a pod lands on a GPU node when it requests GPUs, tolerates the GPU taint, names its node
 *     (nodeName, matchFields: without a cluster view, any node may be a GPU node), or nothing
 *     taints GPU nodes.
 * Written without reading the engine. Where the platform leaves a choice to the policy, the
 * choice is written down at the spot, marked "Reading:".
 *
 * The default policy (rules/default.yaml):
 *   gpu.resources   nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*
 *   gpu.nodeLabels  nvidia.com/gpu.present: "true" (and the clouds' accelerator labels, with
 *                   any value, which the generator never writes)
 *   gpu.taints      nvidia.com/gpu, any value, NoSchedule
 *   runtimeClasses  nvidia*
 *   classes         gpu-standard (the default); no "allowed" list, no cluster view
 *   exclude         namespaces kube-system kube-public kube-node-lease gpuadmit-system
 *                   gpu-operator nvidia-device-plugin; ownerKinds DaemonSet
 *   gpu-request     Deny, maxPerPod 8, the three deny* switches on (ways around the device
 *                   plugin: below)
 *   priority-class  Mutate to gpu-standard
 *   tolerations     Mutate
 *   node-selector   Mutate (adds nvidia.com/gpu.present: "true")
 *   capacity        only warns without a cluster view: never refuses here
 * and the same with gpu.taints: [] (no_taints).
 */
#include "oracle.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PER_POD 8
#define GPU_LABEL   "nvidia.com/gpu.present"
#define GPU_VALUE   "true"
#define GPU_TAINT   "nvidia.com/gpu"
#define GPU_EFFECT  "NoSchedule"
#define N_RES       8 /* distinct GPU resource names one pod may carry (generator's bound) */

static const char *const gpu_globs[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared",
                                        "nvidia.com/mig-*"};
static const char *const excluded_ns[] = {"kube-system",     "kube-public",
                                          "kube-node-lease", "gpuadmit-system",
                                          "gpu-operator",    "nvidia-device-plugin"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static bool is_gpu_resource(const char *name)
{
    for (size_t i = 0; i < sizeof(gpu_globs) / sizeof(gpu_globs[0]); i++)
        if (fnmatch(gpu_globs[i], name, 0) == 0)
            return true;
    return false;
}

static const char *str(yyjson_val *obj, const char *key)
{
    return yyjson_get_str(yyjson_obj_get(obj, key));
}

static void refuse(struct oracle_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void refuse(struct oracle_verdict *v, const char *fmt, ...)
{
    va_list ap;

    if (!v->admit)
        return; /* the first reason wins */
    v->admit = false;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof(v->why), fmt, ap);
    va_end(ap);
}

/* A workload's pod template (metadata and spec). */
static yyjson_val *pod_template(yyjson_val *object, const char *kind)
{
    yyjson_val *spec = yyjson_obj_get(object, "spec");

    if (strcmp(kind, "CronJob") == 0)
        spec = yyjson_obj_get(yyjson_obj_get(spec, "jobTemplate"), "spec");
    return yyjson_obj_get(spec, "template");
}

yyjson_val *oracle_pod_meta(yyjson_val *object, const char *kind)
{
    if (strcmp(kind, "Pod") == 0)
        return yyjson_obj_get(object, "metadata");
    return yyjson_obj_get(pod_template(object, kind), "metadata");
}

yyjson_val *oracle_pod_spec(yyjson_val *object, const char *kind)
{
    if (strcmp(kind, "Pod") == 0)
        return yyjson_obj_get(object, "spec");
    return yyjson_obj_get(pod_template(object, kind), "spec");
}

/* ---- what a GPU pod is ------------------------------------------------------------------- */

static int64_t qty_units(const struct oracle_input *in, yyjson_val *value)
{
    /* by value: the generator's table gives equal values one meaning (fuzz_bypass checks it) */
    for (size_t i = 0; i < in->n_qty; i++)
        if (yyjson_equals(in->qty[i].value, value))
            return in->qty[i].units;
    abort(); /* the generator wrote a GPU amount it did not record */
}

/* Per resource name: the pod's demand, the scheduler's way. */
struct demand {
    const char *name[N_RES];
    int64_t app;      /* app containers and sidecars */
    int64_t init_max; /* the init phase's peak */
    int64_t sidecars; /* sidecars started so far (while walking the init containers) */
    int64_t v_app[N_RES], v_init_max[N_RES], v_sidecars[N_RES];
    size_t n;
};

static size_t demand_slot(struct demand *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->name[i], name) == 0)
            return i;
    if (d->n == N_RES)
        abort(); /* the generator uses fewer names */
    d->name[d->n] = name;
    d->v_app[d->n] = d->v_init_max[d->n] = d->v_sidecars[d->n] = 0;
    return d->n++;
}

/*
 * One container's request of every GPU resource: requests[r], or limits[r] where requests lack
 * it. Sets *gpu when any request or limit of a GPU resource is above 0, *error when a GPU
 * amount is not a whole, non-negative quantity. Calls add(slot, units) per resource.
 */
static void container_gpus(const struct oracle_input *in, yyjson_val *c, struct demand *d,
                           int64_t *req, bool *gpu, bool *error)
{
    yyjson_val *res = yyjson_obj_get(c, "resources");
    yyjson_val *requests = yyjson_obj_get(res, "requests"), *limits = yyjson_obj_get(res, "limits");
    yyjson_val *k, *val;
    yyjson_val *maps[2] = {requests, limits};
    size_t i, max;

    for (i = 0; i < N_RES; i++)
        req[i] = 0;
    for (int m = 0; m < 2; m++) {
        /* yyjson_obj_foreach computes NULL + 1 on a NULL object: undefined, and UBSan says so */
        if (!yyjson_is_obj(maps[m]))
            continue;
        yyjson_obj_foreach (maps[m], i, max, k, val) {
            const char *key = yyjson_get_str(k);
            int64_t u;
            size_t slot;

            if (!is_gpu_resource(key))
                continue;
            u = qty_units(in, val);
            if (u == ORACLE_QTY_INVALID) {
                *error = true;
                continue;
            }
            if (u > 0)
                *gpu = true;
            slot = demand_slot(d, key);
            /* requests first; limits only where requests lack the resource */
            if (m == 0 || yyjson_obj_get(requests, key) == NULL)
                req[slot] = u;
        }
    }
}

static bool is_sidecar(yyjson_val *c)
{
    const char *rp = str(c, "restartPolicy");

    return rp != NULL && strcmp(rp, "Always") == 0;
}

/* The pod's GPU demand and whether it requests GPUs. */
static void pod_gpus(const struct oracle_input *in, yyjson_val *spec, struct demand *d, bool *gpu,
                     bool *error)
{
    int64_t req[N_RES];
    size_t i, s, max;
    yyjson_val *c;

    memset(d, 0, sizeof(*d));
    yyjson_arr_foreach (yyjson_obj_get(spec, "initContainers"), i, max, c) {
        container_gpus(in, c, d, req, gpu, error);
        for (s = 0; s < d->n; s++) {
            int64_t need;

            if (is_sidecar(c)) {
                d->v_sidecars[s] += req[s];
                need = d->v_sidecars[s];
            } else {
                need = req[s] + d->v_sidecars[s]; /* plus the sidecars started before it */
            }
            if (need > d->v_init_max[s])
                d->v_init_max[s] = need;
        }
    }
    for (s = 0; s < d->n; s++)
        d->v_app[s] = d->v_sidecars[s];
    yyjson_arr_foreach (yyjson_obj_get(spec, "containers"), i, max, c) {
        container_gpus(in, c, d, req, gpu, error);
        for (s = 0; s < d->n; s++)
            d->v_app[s] += req[s];
    }
    /* Reading: spec.overhead is part of the demand; the generator writes none. */
}

/* ---- what targeting GPU nodes is ---------------------------------------------------------- */

/* Does this toleration tolerate the GPU taint (nvidia.com/gpu, any value, NoSchedule)?
 * strict: only a toleration good for every value of the taint counts (operator Exists). */
static bool tolerates_gpu_taint(yyjson_val *t, bool strict)
{
    const char *key = str(t, "key"), *op = str(t, "operator"), *effect = str(t, "effect");
    bool exists = op != NULL && strcmp(op, "Exists") == 0;
    bool equal = op == NULL || op[0] == '\0' || strcmp(op, "Equal") == 0;

    if (effect != NULL && effect[0] != '\0' && strcmp(effect, GPU_EFFECT) != 0)
        return false; /* a toleration for another effect does not count */
    if (key == NULL || key[0] == '\0')
        return exists; /* empty key with Exists tolerates everything */
    if (strcmp(key, GPU_TAINT) != 0)
        return false;
    /* Reading: the taint's value is "any", so only Exists tolerates all of them; an Equal
     * toleration still lets the pod onto the GPU nodes whose taint has that value, so it
     * counts as targeting them (strict = false) but not as satisfying the tolerations rule. */
    return exists || (!strict && equal);
}

static bool tolerates(yyjson_val *spec, bool strict)
{
    size_t i, max;
    yyjson_val *t;

    yyjson_arr_foreach (yyjson_obj_get(spec, "tolerations"), i, max, t)
        if (tolerates_gpu_taint(t, strict))
            return true;
    return false;
}

/* "it tolerates a taint of gpu.taints by its key": the toleration names the key */
static bool names_gpu_taint(yyjson_val *spec)
{
    size_t i, max;
    yyjson_val *t;

    yyjson_arr_foreach (yyjson_obj_get(spec, "tolerations"), i, max, t) {
        const char *key = str(t, "key");

        if (key != NULL && key[0] != '\0' && tolerates_gpu_taint(t, false))
            return true;
    }
    return false;
}

static bool values_have(yyjson_val *values, const char *want)
{
    size_t i, max;
    yyjson_val *v;

    yyjson_arr_foreach (values, i, max, v)
        if (yyjson_is_str(v) && strcmp(yyjson_get_str(v), want) == 0)
            return true;
    return false;
}

static bool values_all(yyjson_val *values, const char *want)
{
    size_t i, max;
    yyjson_val *v;

    if (yyjson_arr_size(values) == 0)
        return false;
    yyjson_arr_foreach (values, i, max, v)
        if (!yyjson_is_str(v) || strcmp(yyjson_get_str(v), want) != 0)
            return false;
    return true;
}

static yyjson_val *required_terms(yyjson_val *spec)
{
    yyjson_val *a = yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity");

    return yyjson_obj_get(yyjson_obj_get(a, "requiredDuringSchedulingIgnoredDuringExecution"),
                          "nodeSelectorTerms");
}

/* An expression that lets the pod onto GPU nodes (any), or keeps it on them (all). */
static bool expr_on_gpu_label(yyjson_val *e, bool all)
{
    const char *key = str(e, "key"), *op = str(e, "operator");

    if (key == NULL || op == NULL || strcmp(key, GPU_LABEL) != 0)
        return false;
    if (strcmp(op, "Exists") == 0)
        return true;
    if (strcmp(op, "In") == 0)
        return all ? values_all(yyjson_obj_get(e, "values"), GPU_VALUE)
                   : values_have(yyjson_obj_get(e, "values"), GPU_VALUE);
    return false;
}

static bool term_has(yyjson_val *term, bool all)
{
    size_t i, max;
    yyjson_val *e;

    yyjson_arr_foreach (yyjson_obj_get(term, "matchExpressions"), i, max, e)
        if (expr_on_gpu_label(e, all))
            return true;
    return false;
}

static bool selector_names_gpu_label(yyjson_val *spec)
{
    const char *v = str(yyjson_obj_get(spec, "nodeSelector"), GPU_LABEL);

    /* Reading: "names a label of gpu.nodeLabels" means the label with its value (a label is
     * key=value; the policy gives the value "true"): nodeSelector gpu.present=false aims away
     * from GPU nodes. */
    return v != NULL && strcmp(v, GPU_VALUE) == 0;
}

/* A user-set NVIDIA_VISIBLE_DEVICES that can name GPUs: anything but "void", "none" and "".
 * The runtime reads an empty value as no device (unset, empty or void), so "" can only narrow
 * what the plugin allocated; a value from valueFrom is not known here. */
static bool visible_devices(yyjson_val *c)
{
    size_t i, max;
    yyjson_val *e;

    yyjson_arr_foreach (yyjson_obj_get(c, "env"), i, max, e) {
        const char *name = str(e, "name"), *value = str(e, "value");

        if (name == NULL || strcmp(name, "NVIDIA_VISIBLE_DEVICES") != 0)
            continue;
        if (yyjson_obj_get(e, "valueFrom") != NULL)
            return true;
        /* Reading: an entry with neither value nor valueFrom is the empty string */
        if (value != NULL && value[0] != '\0' && strcmp(value, "void") != 0 &&
            strcmp(value, "none") != 0)
            return true;
    }
    return false;
}

/* Whether an envFrom entry can produce the name NVIDIA_VISIBLE_DEVICES: PREFIX+KEY is it for
 * some key exactly when the prefix is a prefix of it ("" included). */
static bool env_from_may_set(yyjson_val *c)
{
    /* and the two names that make a legacy CUDA image (legacy_cuda) */
    static const char *const vars[] = {"NVIDIA_VISIBLE_DEVICES", "CUDA_VERSION",
                                       "NVIDIA_REQUIRE_CUDA"};
    size_t i, max;
    yyjson_val *e;

    yyjson_arr_foreach (yyjson_obj_get(c, "envFrom"), i, max, e) {
        const char *prefix = str(e, "prefix");
        size_t n = prefix ? strlen(prefix) : 0;

        for (size_t k = 0; k < 3; k++)
            if (n <= strlen(vars[k]) && (n == 0 || memcmp(vars[k], prefix, n) == 0))
                return true;
    }
    return false;
}

/* What the container's env makes of a variable, the last entry winning: 0 unset, 1 empty, 2 a
 * value that is not empty, 3 unknown (valueFrom: empty or not). */
static int env_state(yyjson_val *c, const char *name)
{
    size_t i, max;
    yyjson_val *e;
    int state = 0;

    yyjson_arr_foreach (yyjson_obj_get(c, "env"), i, max, e) {
        const char *n = str(e, "name"), *value = str(e, "value");

        if (n == NULL || strcmp(n, name) != 0)
            continue;
        state = yyjson_obj_get(e, "valueFrom") != NULL ? 3
                : value == NULL || value[0] == '\0'    ? 1
                                                       : 2;
    }
    return state;
}

/* Whether the runtime may take the container for a legacy CUDA image and give it every GPU:
 * NVIDIA_VISIBLE_DEVICES unset, and CUDA_VERSION not empty with NVIDIA_REQUIRE_CUDA empty or
 * unset, where what the pod leaves unset may come from the image. Reading: only what the pod
 * sets is judged: CUDA_VERSION that may be set, or NVIDIA_REQUIRE_CUDA that may be empty (the
 * image's CUDA_VERSION then counts); a CUDA image's own legacy env is no pod's doing. */
static bool legacy_cuda(yyjson_val *c)
{
    int ver = env_state(c, "CUDA_VERSION"), req = env_state(c, "NVIDIA_REQUIRE_CUDA");

    if (env_state(c, "NVIDIA_VISIBLE_DEVICES") != 0)
        return false; /* set: no default (and its value is judged by visible_devices) */
    if (req == 2)
        return false;
    return ver >= 2 || req == 1 || req == 3;
}

static bool any_container(yyjson_val *spec, bool (*f)(yyjson_val *))
{
    static const char *const lists[] = {"initContainers", "containers"};
    size_t i, max;
    yyjson_val *c;

    for (int l = 0; l < 2; l++)
        yyjson_arr_foreach (yyjson_obj_get(spec, lists[l]), i, max, c)
            if (f(c))
                return true;
    return false;
}

static bool targets_gpu_nodes(yyjson_val *spec, bool no_taints)
{
    const char *rc = str(spec, "runtimeClassName");
    size_t i, max;
    yyjson_val *term;

    /* NVIDIA_VISIBLE_DEVICES reaches GPUs around the device plugin; it is judged by itself
     * (oracle_judge), not as a way of aiming at GPU nodes */
    if (selector_names_gpu_label(spec) || (!no_taints && names_gpu_taint(spec)))
        return true;
    /* the default policy's runtimeClasses: ["nvidia*"] */
    if (rc != NULL && fnmatch("nvidia*", rc, 0) == 0)
        return true;
    yyjson_arr_foreach (required_terms(spec), i, max, term)
        if (term_has(term, false))
            return true;
    return false;
}

static bool privileged(yyjson_val *c)
{
    return yyjson_is_true(yyjson_obj_get(yyjson_obj_get(c, "securityContext"), "privileged"));
}

/* path as the host resolves it: repeated '/' and "." dropped, ".." applied. */
static void normalize(const char *path, char *out, size_t len)
{
    size_t n = 0;
    const char *p = path;

    while (*p != '\0') {
        size_t seg;

        while (*p == '/')
            p++;
        seg = strcspn(p, "/");
        if (seg == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* the '/' before the dropped segment */
        } else if (seg > 0 && !(seg == 1 && p[0] == '.') && n + seg + 2 < len) {
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

/* The host paths through which a process opens a GPU: its device nodes (and the links by
 * device number to them, 195 being the NVIDIA character major), the GPU Operator's driver root
 * with its own dev/, and a process's view of the host's tree under /proc. A "*" segment is any
 * name (a pid, a task, a descriptor). */
static const char *const gpu_device_paths[] = {
    "/dev/nvidia0",
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-caps/nvidia-cap1",
    "/dev/dri/renderD128",
    "/dev/char/195:0",
    "/run/nvidia/driver/dev/nvidia0",
    "/proc/*/root/dev/nvidia0",
    "/proc/*/cwd/dev/nvidia0",
    "/proc/*/task/*/root/dev/nvidia0",
    "/proc/*/fd/*",
    "/proc/*/map_files/*",
};

/* Whether the host tree at norm holds path (norm is path, or one of its ancestors). */
static bool holds(const char *norm, const char *path)
{
    char a[512], b[512];
    const char *pa = norm, *pb = path;

    for (;;) {
        size_t na, nb;

        while (*pa == '/')
            pa++;
        while (*pb == '/')
            pb++;
        if (*pa == '\0')
            return true;
        if (*pb == '\0')
            return false;
        na = strcspn(pa, "/");
        nb = strcspn(pb, "/");
        snprintf(a, sizeof(a), "%.*s", (int)na, pa);
        snprintf(b, sizeof(b), "%.*s", (int)nb, pb);
        if (fnmatch(b, a, 0) != 0)
            return false;
        pa += na;
        pb += nb;
    }
}

/* A hostPath volume through which a container of the pod can open a GPU. */
static bool device_host_path(yyjson_val *spec)
{
    size_t i, max;
    yyjson_val *vol;
    char norm[512];

    yyjson_arr_foreach (yyjson_obj_get(spec, "volumes"), i, max, vol) {
        const char *p = str(yyjson_obj_get(vol, "hostPath"), "path");

        if (p == NULL)
            continue;
        /* the path as the host resolves it: "/dev/./nvidia0" is /dev/nvidia0, and /var/run is
         * a link to /run (the kubelet's bind mount follows it) */
        normalize(p, norm, sizeof(norm));
        if (strcmp(norm, "/var/run") == 0 || strncmp(norm, "/var/run/", 9) == 0)
            memmove(norm, norm + 4, strlen(norm + 4) + 1);
        for (size_t d = 0; d < sizeof(gpu_device_paths) / sizeof(gpu_device_paths[0]); d++)
            if (holds(norm, gpu_device_paths[d]))
                return true;
        /* Reading: the driver root as a whole, and the links by number of block devices beside
         * the character ones, are refused with them: they are no way to a GPU on their own,
         * but nothing a pod beside GPUs needs either (rules/README.md lists both) */
        if (strncmp(norm, "/run/nvidia/driver", 18) == 0 || strcmp(norm, "/dev/block") == 0 ||
            strncmp(norm, "/dev/block/", 11) == 0)
            return true;
    }
    return false;
}

/* Whether a volumeMount of the container lands under the hook's device list folder (or is it),
 * as the runtime cleans the destination; /run too, which /var/run links to on the host (and in
 * most images). */
static bool device_list_mount(yyjson_val *c)
{
    size_t i, max;
    yyjson_val *m;
    char norm[512];

    yyjson_arr_foreach (yyjson_obj_get(c, "volumeMounts"), i, max, m) {
        const char *p = str(m, "mountPath");

        if (p == NULL)
            continue;
        normalize(p, norm, sizeof(norm));
        if (holds("/var/run/nvidia-container-devices", norm) ||
            holds("/run/nvidia-container-devices", norm))
            return true;
    }
    return false;
}

/* A hostPath volume that holds a container runtime's socket, or is /dev/null (Reading: the
 * device plugin's placeholder for a device list entry, which nothing else beside GPUs needs). */
static bool runtime_host_path(yyjson_val *spec)
{
    static const char *const sockets[] = {"/run/containerd/containerd.sock", "/run/docker.sock",
                                          "/run/crio/crio.sock"};
    size_t i, max;
    yyjson_val *vol;
    char norm[512];

    yyjson_arr_foreach (yyjson_obj_get(spec, "volumes"), i, max, vol) {
        const char *p = str(yyjson_obj_get(vol, "hostPath"), "path");

        if (p == NULL)
            continue;
        normalize(p, norm, sizeof(norm));
        if (strcmp(norm, "/dev/null") == 0)
            return true;
        if (strcmp(norm, "/var/run") == 0 || strncmp(norm, "/var/run/", 9) == 0)
            memmove(norm, norm + 4, strlen(norm + 4) + 1);
        for (size_t k = 0; k < sizeof(sockets) / sizeof(sockets[0]); k++)
            if (holds(norm, sockets[k]))
                return true;
    }
    return false;
}

/* A cdi.k8s.io/ annotation whose value names an NVIDIA device by its CDI name. */
static bool cdi_nvidia(yyjson_val *meta)
{
    yyjson_val *annotations = yyjson_obj_get(meta, "annotations"), *k, *v;
    size_t i, max;

    if (!yyjson_is_obj(annotations))
        return false; /* yyjson_obj_foreach is undefined on NULL (see container_gpus) */
    yyjson_obj_foreach (annotations, i, max, k, v) {
        if (strncmp(yyjson_get_str(k), "cdi.k8s.io/", 11) == 0 && yyjson_is_str(v) &&
            strstr(yyjson_get_str(v), "nvidia.com/") != NULL)
            return true;
    }
    return false;
}

/* Whether a container asks a DRA driver for devices: its resources.claims name a claim of the
 * pod. Reading: without the ResourceClaim (the fuzzer has no cluster view) its device class is
 * not known, and a claim is taken as a GPU request, as rules/README.md says. */
static bool claims_devices(yyjson_val *spec)
{
    static const char *const lists[] = {"initContainers", "containers"};
    size_t i, k, m, n_c, n_cl, n_pc;
    yyjson_val *c, *cl, *pc;

    for (int l = 0; l < 2; l++)
        yyjson_arr_foreach (yyjson_obj_get(spec, lists[l]), i, n_c, c)
            yyjson_arr_foreach (yyjson_obj_get(yyjson_obj_get(c, "resources"), "claims"), k, n_cl,
                                cl)
                yyjson_arr_foreach (yyjson_obj_get(spec, "resourceClaims"), m, n_pc, pc)
                    if (str(cl, "name") != NULL && str(pc, "name") != NULL &&
                        strcmp(str(cl, "name"), str(pc, "name")) == 0)
                        return true;
    return false;
}

/* Whether the pod may run on a GPU node: it requests GPUs, tolerates the GPU taint (any form
 * the scheduler honours, an empty key with Exists included), names its node, or nothing
 * taints GPU nodes. */
static bool may_land_on_gpu_node(yyjson_val *spec, bool gpu, bool no_taints)
{
    size_t i, max;
    yyjson_val *term;

    if (gpu || no_taints || tolerates(spec, false))
        return true;
    if (yyjson_get_len(yyjson_obj_get(spec, "nodeName")) > 0)
        return true;
    yyjson_arr_foreach (required_terms(spec), i, max, term)
        if (yyjson_arr_size(yyjson_obj_get(term, "matchFields")) > 0)
            return true;
    return false;
}

/* ---- the Mutate rules' end state ---------------------------------------------------------- */

static bool has_class(yyjson_val *spec, char *why, size_t len)
{
    const char *pc = str(spec, "priorityClassName");

    /* Reading: an empty priorityClassName is no class. */
    if (pc == NULL || pc[0] == '\0') {
        snprintf(why, len, "no priorityClassName");
        return false;
    }
    /* Reading (the reference was outdated here, and now says so): without a cluster view a
     * named class is taken as existing, since the apiserver's Priority plugin has already
     * refused a pod naming one that does not; the default policy has no "allowed" list. */
    return true;
}

static bool confined(yyjson_val *spec)
{
    yyjson_val *terms = required_terms(spec), *term;
    size_t i, max;

    if (selector_names_gpu_label(spec))
        return true;
    if (yyjson_arr_size(terms) == 0)
        return false;
    yyjson_arr_foreach (terms, i, max, term)
        if (!term_has(term, true))
            return false;
    return true;
}

bool oracle_gpu_pod_settled(yyjson_val *spec, bool no_taints, char *why, size_t len)
{
    if (!has_class(spec, why, len))
        return false;
    if (!no_taints && !tolerates(spec, true)) {
        snprintf(why, len, "does not tolerate %s:%s", GPU_TAINT, GPU_EFFECT);
        return false;
    }
    if (!confined(spec)) {
        snprintf(why, len, "not confined to %s=%s", GPU_LABEL, GPU_VALUE);
        return false;
    }
    return true;
}

/* ---- the verdict -------------------------------------------------------------------------- */

static bool scheduling_changed(yyjson_val *object, yyjson_val *old)
{
    static const char *const fields[] = {"tolerations", "nodeSelector", "affinity",
                                         "schedulingGates"};
    yyjson_val *a = yyjson_obj_get(object, "spec"), *b = yyjson_obj_get(old, "spec");

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        yyjson_val *x = yyjson_obj_get(a, fields[i]), *y = yyjson_obj_get(b, fields[i]);

        if ((x == NULL) != (y == NULL) || (x != NULL && !yyjson_equals(x, y)))
            return true;
    }
    return false;
}

static bool excluded(const struct oracle_input *in)
{
    yyjson_val *meta = yyjson_obj_get(in->object, "metadata");
    size_t i, max;
    yyjson_val *ref;

    if (in_list(in->ns, excluded_ns, sizeof(excluded_ns) / sizeof(excluded_ns[0])))
        return true;
    if (strcmp(in->kind, "Pod") != 0)
        return false; /* no workload kind owns its pods through a DaemonSet */
    if (yyjson_obj_get(yyjson_obj_get(meta, "annotations"), "kubernetes.io/config.mirror"))
        return true; /* mirror pods are never judged */
    /* Reading (the reference is incomplete here): "kinds in the pod's ownerReferences", taken
     * literally, lets anyone exempt a pod by writing a DaemonSet owner into it. Only a pod a
     * controller creates (the kube-controller-manager, or a kube-system service account) with
     * a controlling (controller: true) DaemonSet reference is a DaemonSet's pod. */
    if (strcmp(in->user, "system:kube-controller-manager") != 0 &&
        strncmp(in->user, "system:serviceaccount:kube-system:", 34) != 0)
        return false;
    yyjson_arr_foreach (yyjson_obj_get(meta, "ownerReferences"), i, max, ref) {
        const char *k = str(ref, "kind");
        if (k != NULL && strcmp(k, "DaemonSet") == 0 &&
            yyjson_is_true(yyjson_obj_get(ref, "controller")))
            return true;
    }
    return false;
}

void oracle_judge(const struct oracle_input *in, struct oracle_verdict *v)
{
    yyjson_val *spec = oracle_pod_spec(in->object, in->kind);
    struct demand d;
    bool error = false, dra, pod_update;
    const char *sel;

    memset(v, 0, sizeof(*v));
    v->admit = true;
    v->op = in->op;
    if (spec == NULL || excluded(in))
        return;
    /* Workloads are judged on CREATE, and on UPDATE when the pod template changed
     * (rules/README.md, "Pod templates"). A pod UPDATE can change where the pod may run only
     * through tolerations (any pod), nodeSelector, affinity and scheduling gates (a gated pod:
     * Kubernetes' ValidatePodUpdate): such an UPDATE is judged like a CREATE of the new
     * object, any other is not. */
    pod_update = strcmp(in->op, "CREATE") != 0 && strcmp(in->kind, "Pod") == 0;
    if (pod_update && !scheduling_changed(in->object, in->old_object))
        return;
    if (strcmp(in->op, "CREATE") != 0 && !pod_update &&
        yyjson_equals(pod_template(in->object, in->kind), pod_template(in->old_object, in->kind)))
        return;
    v->judged = true;
    pod_gpus(in, spec, &d, &v->gpu, &error);
    v->targets = targets_gpu_nodes(spec, in->no_taints);

    /* "A GPU amount that is not a whole, non-negative quantity is an error." */
    if (error)
        refuse(v, "a GPU amount is not a whole, non-negative quantity");

    /* gpu-request (Deny): targets GPU nodes but requests none (a DRA claim is a request). */
    dra = claims_devices(spec);
    if (v->targets && !v->gpu && !dra)
        refuse(v, "gpu-request: targets GPU nodes but requests no GPU");
    /* Every container on its own: does the runtime let it open a GPU it was not given?
     * Reading: a user-set NVIDIA_VISIBLE_DEVICES is refused wherever the pod may run, as only
     * the device plugin has cause to set it. */
    if (any_container(spec, visible_devices))
        refuse(v, "gpu-request: a container sets NVIDIA_VISIBLE_DEVICES");
    if (may_land_on_gpu_node(spec, v->gpu || dra, in->no_taints)) {
        if (any_container(spec, privileged))
            refuse(v, "gpu-request: a privileged container may run on a GPU node");
        if (any_container(spec, env_from_may_set))
            refuse(v, "gpu-request: envFrom may set NVIDIA_VISIBLE_DEVICES on a GPU node");
        if (device_host_path(spec))
            refuse(v, "gpu-request: a hostPath holds GPU device nodes");
        if (cdi_nvidia(oracle_pod_meta(in->object, in->kind)))
            refuse(v, "gpu-request: a CDI annotation names NVIDIA devices");
        if (any_container(spec, legacy_cuda))
            refuse(v, "gpu-request: a legacy CUDA env gets every GPU on a GPU node");
        if (any_container(spec, device_list_mount))
            refuse(v, "gpu-request: a mount under the hook's device list on a GPU node");
        if (runtime_host_path(spec))
            refuse(v, "gpu-request: a hostPath of a runtime socket or /dev/null on a GPU node");
    }
    for (size_t s = 0; s < d.n; s++) {
        int64_t need = d.v_app[s] > d.v_init_max[s] ? d.v_app[s] : d.v_init_max[s];

        if (need > MAX_PER_POD)
            refuse(v, "gpu-request: %lld %s > maxPerPod", (long long)need, d.name[s]);
    }
    if (!v->gpu)
        return; /* the other rules judge GPU pods only */

    /* priority-class (Mutate): a missing class is patched with gpu-standard; a named one is
     * kept (see has_class). */
    /* tolerations (Mutate): always patchable (nothing to add without taints). node-selector
     * (Mutate): patchable unless the nodeSelector sets the label to another value. */
    /* A pod UPDATE is never patched, and a running pod's class and priority cannot change
     * (ValidatePodUpdate): the Mutate rules only warn there, whatever they find. */
    if (pod_update)
        return;
    sel = str(yyjson_obj_get(spec, "nodeSelector"), GPU_LABEL);
    if (!confined(spec) && sel != NULL && strcmp(sel, GPU_VALUE) != 0)
        refuse(v, "node-selector: nodeSelector %s=%.32s", GPU_LABEL, sel);
}
