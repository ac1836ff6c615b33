/*
 * fuzz_bypass: structured pods and workloads built from the fuzzer's bytes, judged by the real
 * engine under the default policy (/mutate, then /validate on the patched object, as the
 * apiserver does) and by the independent oracle (oracle.c, from rules/README.md). Any
 * disagreement aborts: a pod that reaches GPUs unchecked, or a legitimate pod refused. In the
 * spirit of FuzzPodBypass from Kyverno's 2023 fuzzing audit.
 *
 * Also checked: /mutate never denies under the default policy (it has no Mutate rule that cannot
 * say why at /validate); an admitted GPU pod ends with a class, the GPU toleration and the GPU
 * node selector; the patched object gets no second patch; and /validate on the object as sent
 * (the mutating webhook skipped) admits it only when /mutate had nothing to patch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/eval.h"
#include "fuzz_support.h"
#include "oracle.h"
#include "policy/rules.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct policy *policies[2]; /* the default policy, and the same with gpu.taints: [] */
static struct policy *policy;      /* the one this input uses */

/* rules/default.yaml with its taints list emptied: nothing keeps pods off GPU nodes. */
static struct policy *no_taints_policy(void)
{
    static const char taints[] = "    taints:\n      - key: nvidia.com/gpu\n        effect: "
                                 "NoSchedule\n";
    char path[4096], *text, *at;
    size_t len;
    struct rules_errors errs;
    struct policy *p;
    FILE *f = fopen(fuzz_src_path("rules/default.yaml", path, sizeof(path)), "r");

    FUZZ_ASSERT(f != NULL, "cannot open %s", path);
    text = calloc(1, 1 << 16);
    len = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    at = strstr(text, taints);
    FUZZ_ASSERT(at != NULL && len > 0, "rules/default.yaml: the taints block moved");
    memcpy(at, "    taints: []\n", 15);
    memmove(at + 15, at + strlen(taints), strlen(at + strlen(taints)) + 1);
    p = rules_load_buffer("no-taints.yaml", text, strlen(text), &errs);
    FUZZ_ASSERT(p != NULL, "the no-taints policy does not load: %s", errs.items[0].msg);
    free(text);
    return p;
}

static void quantity_table(void);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    policies[0] = fuzz_policy("rules/default.yaml");
    policies[1] = no_taints_policy();
    quantity_table();
    return 0;
}

/* ---- the bytes, as choices ----------------------------------------------------------------- */

struct bytes {
    const uint8_t *p;
    size_t n;
};

static unsigned pick(struct bytes *b, unsigned n)
{
    if (b->n == 0)
        return 0;
    b->n--;
    return *b->p++ % n;
}

#define PICK(b, table) (table)[pick((b), sizeof(table) / sizeof((table)[0]))]

/* A table's text, read as the request reader would (duplicate keys, depth, big numbers refused). */
static yyjson_doc *read_any(const char *text)
{
    struct diag d;
    yyjson_doc *doc;

    diag_clear(&d);
    doc = json_read(text, strlen(text), JSON_READ_ANY_ROOT, FUZZ_DEPTH_MAX, NULL, &d);
    if (doc == NULL)
        FUZZ_FAIL("generator table: %s: %s", text, d.msg);
    return doc;
}

/* A table's text as a new value of the generator's document. */
static yyjson_mut_val *js(yyjson_mut_doc *doc, const char *text)
{
    yyjson_doc *d = read_any(text);
    yyjson_mut_val *v = yyjson_val_mut_copy(doc, yyjson_doc_get_root(d));

    FUZZ_ASSERT(v != NULL, "out of memory");
    yyjson_doc_free(d);
    return v;
}

/* ---- the tables: what pods really carry, and the odd cases ----------------------------------- */

static const struct {
    const char *json;
    int64_t units;
} quantities[] = {
    {"\"1\"", 1},      {"1", 1},          {"\"1000m\"", 1}, {"\"01\"", 1},    {"\"0.5\"", -1},
    {"\"1e0\"", 1},    {"\"2Ki\"", 2048}, {"\"0\"", 0},     {"0", 0},         {"\"2\"", 2},
    {"4", 4},          {"\"8\"", 8},      {"\"9\"", 9},     {"\"-1\"", -1},   {"1.5", -1},
    {"\"abc\"", -1},   {"\"1500m\"", -1}, {"\"1k\"", 1000}, {"\"+1\"", 1},    {"\"\"", -1},
    {"2.0", 2},        {"\"1E0\"", 1},    {"\"3\"", 3},     {"-1", -1},       {"\"0.5Ki\"", 512},
    {"\"1e3\"", 1000}, {"\"2000m\"", 2},  {"1e0", 1},       {"\"1e-3\"", -1}, {"\"0m\"", 0},
    {"\" 1\"", -1},    {"\"5\"", 5},
};

static const char *const resources[] = {
    "nvidia.com/gpu",
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "nvidia.com/mig-1g.5gb",
    "nvidia.com/mig-3g.20gb",
    "cpu",
    "memory",
    "example.com/fpga",
    "nvidia.com/gpux",
    "amd.com/gpu",
    "nvidia.com/GPU",
};

static const char *const tolerations[] = {
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}",
    "{\"operator\":\"Exists\"}",
    "{\"key\":\"nvidia.com/"
    "gpu\",\"operator\":\"Equal\",\"value\":\"true\",\"effect\":\"NoSchedule\"}",
    "{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}",
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}",
    "{\"key\":\"dedicated\",\"operator\":\"Exists\"}",
    "{\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}",
    "{\"operator\":\"Exists\",\"effect\":\"NoExecute\"}",
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"PreferNoSchedule\"}",
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"\"}",
    ("{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":"
     "\"NoExecute\",\"tolerationSeconds\":300}"),
};

static const char *const node_selectors[] = {
    "{\"nvidia.com/gpu.present\":\"true\"}",
    "{\"nvidia.com/gpu.present\":\"false\"}",
    "{\"disktype\":\"ssd\"}",
    "{\"nvidia.com/gpu.present\":\"true\",\"disktype\":\"ssd\"}",
    "{\"nvidia.com/gpu.product\":\"A100\"}",
    "{}",
};

#define TERM(e)        "{\"matchExpressions\":[" e "]}"
#define EXPR(k, op, v) "{\"key\":\"" k "\",\"operator\":\"" op "\"" v "}"
#define GPU_LABEL      "nvidia.com/gpu.present"

static const char *const affinities[] = {
    "[" TERM(EXPR(GPU_LABEL, "In", ",\"values\":[\"true\"]")) "]",
    "[" TERM(EXPR(GPU_LABEL, "In", ",\"values\":[\"true\",\"false\"]")) "]",
    "[" TERM(EXPR(GPU_LABEL, "Exists", "")) "]",
    "[" TERM(EXPR(GPU_LABEL, "In", ",\"values\":[\"true\"]")) "," TERM(
        EXPR("zone", "In", ",\"values\":[\"a\"]")) "]",
    "[" TERM(EXPR(GPU_LABEL, "NotIn", ",\"values\":[\"true\"]")) "]",
    "[" TERM(EXPR(GPU_LABEL, "DoesNotExist", "")) "]",
    "[" TERM(EXPR(GPU_LABEL, "In", ",\"values\":[\"false\"]")) "]",
    "[" TERM(EXPR("zone", "Exists", "")) "]",
    "[" TERM(EXPR("zone", "In", ",\"values\":[\"a\"]") "," EXPR(GPU_LABEL, "In",
                                                                ",\"values\":[\"true\"]")) "]",
};

static const char *const env_values[] = {
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}",
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"0\"}",
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"void\"}",
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"none\"}",
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"\"}",
    ("{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":"
     "\"g\",\"key\":\"k\"}}}"),
    "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"GPU-0b1c\"}",
    "{\"name\":\"NVIDIA_DRIVER_CAPABILITIES\",\"value\":\"all\"}",
    /* a legacy CUDA image gets every GPU without NVIDIA_VISIBLE_DEVICES */
    "{\"name\":\"CUDA_VERSION\",\"value\":\"12.2\"}",
    "{\"name\":\"CUDA_VERSION\",\"value\":\"\"}",
    "{\"name\":\"NVIDIA_REQUIRE_CUDA\",\"value\":\"\"}",
    "{\"name\":\"NVIDIA_REQUIRE_CUDA\",\"value\":\"cuda>=12.2\"}",
};

static const char *const host_paths[] = {
    "/dev/nvidia0", "/dev/nvidiactl", "/dev", "/", "/var/log", "/dev/shm", "/dev/nvidia-caps",
};

/* a second volume, chosen last (0: none): paths the host resolves to a device path, and not */
static const char *const extra_host_paths[] = {
    NULL,       "/dev/./nvidia0",  "//dev//nvidiactl", "/dev/../dev/nvidia0", "/dev/",
    "/devices", "/dev/nvidia-uvm", "/home/../",        "/var/../dev",
};

static const char *const runtime_classes[] = {NULL, "nvidia", "runc", "nvidia-legacy"};

/* chosen last (see LLVMFuzzerTestOneInput): a third volume's host path, a node the pod names, an
 * annotation, and envFrom or a GPU for one container, so that GPU and non-GPU containers mix */
static const char *const more_host_paths[] = {
    NULL,
    "/proc/1/root",
    "/proc/1/root/dev",
    "/var/run/nvidia/driver",
    "/dev/char/195:0",
    "/dev/char",
    "/run",
    "/var/run/",
    "/var/run/app/app.sock",
    "/dev/null",
    "/var/run/docker.sock",
    "/run/containerd/",
    "/var/run/crio/crio.sock",
    "/run/containerd-x",
    "/proc/sys/net",
    "/proc/self",
    "/proc/1/fd",
    "/proc/1/environ",
    "/run/nvidia/driver/dev",
    "/dev/block",
    "/dev/dri/renderD128",
    "/run/containerd",
    "/proc/1/task/1/root/dev/nvidia0",
};
static const char *const node_names[] = {NULL, NULL, "gpu-0", "cpu-0"};
static const char *const match_fields[] = {
    NULL,
    NULL,
    NULL,
    "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"gpu-0\"]}]}]",
};
static const char *const annotations[] = {
    NULL,
    NULL,
    "{\"cdi.k8s.io/gpu\":\"nvidia.com/gpu=all\"}",
    "{\"cdi.k8s.io/x\":\"k8s.device-plugin.nvidia.com/gpu=GPU-1\"}",
    "{\"cdi.k8s.io/net\":\"vendor.example/net=eth1\"}",
    "{\"note\":\"nvidia.com/gpu=all\"}",
};
static const char *const env_froms[] = {
    NULL,
    NULL,
    "[{\"configMapRef\":{\"name\":\"cfg\"}}]",
    "[{\"prefix\":\"APP_\",\"configMapRef\":{\"name\":\"cfg\"}}]",
    "[{\"prefix\":\"NVIDIA_\",\"secretRef\":{\"name\":\"s\"}}]",
    "[{\"prefix\":\"\",\"secretRef\":{\"name\":\"s\"}}]",
    "[{\"prefix\":\"APP_\",\"configMapRef\":{\"name\":\"a\"}},{\"configMapRef\":{\"name\":\"b\"}}]",
};
static const char *const classes[] = {NULL, "gpu-standard", "system-node-critical", "batch-low",
                                      ""};
static const char *const owners[] = {NULL, "DaemonSet", "ReplicaSet", "Job", "StatefulSet"};
static const char *const users[] = {"alice", "system:kube-controller-manager",
                                    "system:serviceaccount:kube-system:daemon-set-controller",
                                    "system:serviceaccount:ml:builder"};
static const char *const namespaces[] = {
    "ml", "default", "kube-system", "gpu-operator", "gpuadmit-system", "ml-kube-system", "team-a"};

/* ---- the generator ------------------------------------------------------------------------- */

/* The quantities as values, for the oracle: it looks a GPU amount up here by value. */
static struct oracle_qty qty_table[sizeof(quantities) / sizeof(quantities[0])];

static void quantity_table(void)
{
    const size_t n = sizeof(quantities) / sizeof(quantities[0]);

    for (size_t i = 0; i < n; i++) {
        qty_table[i].value = yyjson_doc_get_root(read_any(quantities[i].json)); /* kept */
        qty_table[i].units = quantities[i].units;
    }
    /* the oracle compares by value: two entries that are the same JSON value must mean the
     * same ("2.0" and "2" are not: yyjson_equals tells 2 from 2.0, as does the engine's type
     * check) */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            FUZZ_ASSERT(!yyjson_equals(qty_table[i].value, qty_table[j].value) ||
                            qty_table[i].units == qty_table[j].units,
                        "quantities %s and %s are one value with two meanings", quantities[i].json,
                        quantities[j].json);
}

struct gen {
    struct bytes b;
    yyjson_mut_doc *doc; /* every generated value */
};

/* obj[key] = v, replacing any member of that name (the key is copied) */
static void put(struct gen *g, yyjson_mut_val *obj, const char *key, yyjson_mut_val *v)
{
    FUZZ_ASSERT(v != NULL && json_mut_set(g->doc, obj, key, v) == 0, "generator: %s", key);
}

static yyjson_mut_val *quantity(struct gen *g, const char *resource)
{
    unsigned i = pick(&g->b, sizeof(quantities) / sizeof(quantities[0]));

    /* other resources get valid amounts: the reference says nothing of theirs */
    if (strncmp(resource, "nvidia.com/", 11) != 0 && quantities[i].units < 0)
        i = 0;
    return js(g->doc, quantities[i].json);
}

static yyjson_mut_val *container(struct gen *g, const char *name, bool init)
{
    yyjson_mut_val *c = json_pack(g->doc, "{s:s, s:s}", "name", name, "image", "cuda:12");
    yyjson_mut_val *requests = yyjson_mut_obj(g->doc), *limits = yyjson_mut_obj(g->doc),
                   *res = yyjson_mut_obj(g->doc);
    unsigned n = pick(&g->b, 3);

    FUZZ_ASSERT(c && requests && limits && res, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        const char *r = PICK(&g->b, resources);
        yyjson_mut_val *q;

        if (yyjson_mut_obj_get(requests, r) || yyjson_mut_obj_get(limits, r))
            continue;
        q = quantity(g, r);
        switch (pick(&g->b, 3)) {
        case 0: put(g, limits, r, q); break;
        case 1: put(g, requests, r, q); break;
        default:
            put(g, limits, r, q);
            /* a value sits in one container: the same amount again */
            put(g, requests, r, yyjson_mut_val_mut_copy(g->doc, q));
        }
    }
    if (yyjson_mut_obj_size(requests))
        put(g, res, "requests", requests);
    if (yyjson_mut_obj_size(limits))
        put(g, res, "limits", limits);
    put(g, c, "resources", res);
    if (pick(&g->b, 4) == 0)
        put(g, c, "env", json_pack(g->doc, "[o]", js(g->doc, PICK(&g->b, env_values))));
    switch (pick(&g->b, 5)) {
    case 0: put(g, c, "securityContext", json_pack(g->doc, "{s:b}", "privileged", 1)); break;
    case 1: put(g, c, "securityContext", json_pack(g->doc, "{s:b}", "privileged", 0)); break;
    default: break;
    }
    if (init && pick(&g->b, 2) == 0)
        put(g, c, "restartPolicy", yyjson_mut_strcpy(g->doc, "Always")); /* a sidecar */
    return c;
}

static yyjson_mut_val *pod_spec(struct gen *g)
{
    yyjson_mut_val *spec = yyjson_mut_obj(g->doc), *list;
    const char *s;
    unsigned n;
    char name[16];

    FUZZ_ASSERT(spec != NULL, "out of memory");
    list = yyjson_mut_arr(g->doc);
    n = 1 + pick(&g->b, 3);
    for (unsigned i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "c%u", i);
        yyjson_mut_arr_append(list, container(g, name, false));
    }
    put(g, spec, "containers", list);
    if ((n = pick(&g->b, 4)) > 1) {
        list = yyjson_mut_arr(g->doc);
        for (unsigned i = 0; i < n - 1; i++) {
            snprintf(name, sizeof(name), "i%u", i);
            yyjson_mut_arr_append(list, container(g, name, true));
        }
        put(g, spec, "initContainers", list);
    }
    if ((n = pick(&g->b, 4)) > 1) {
        list = yyjson_mut_arr(g->doc);
        for (unsigned i = 0; i < n - 1; i++)
            yyjson_mut_arr_append(list, js(g->doc, PICK(&g->b, tolerations)));
        put(g, spec, "tolerations", list);
    }
    if (pick(&g->b, 2) == 0)
        put(g, spec, "nodeSelector", js(g->doc, PICK(&g->b, node_selectors)));
    if (pick(&g->b, 3) == 0)
        put(g, spec, "affinity",
            json_pack(g->doc, "{s:{s:{s:o}}}", "nodeAffinity",
                      "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                      js(g->doc, PICK(&g->b, affinities))));
    if ((s = PICK(&g->b, runtime_classes)) != NULL)
        put(g, spec, "runtimeClassName", yyjson_mut_strcpy(g->doc, s));
    if ((s = PICK(&g->b, classes)) != NULL)
        put(g, spec, "priorityClassName", yyjson_mut_strcpy(g->doc, s));
    if (pick(&g->b, 4) == 0)
        put(g, spec, "volumes",
            json_pack(g->doc, "[{s:s, s:{s:s}}]", "name", "dev", "hostPath", "path",
                      PICK(&g->b, host_paths)));
    return spec;
}

static const struct {
    const char *kind, *group, *resource;
} kinds[] = {
    {"Pod", "", "pods"},
    {"Pod", "", "pods"},
    {"Pod", "", "pods"},
    {"Deployment", "apps", "deployments"},
    {"ReplicaSet", "apps", "replicasets"},
    {"StatefulSet", "apps", "statefulsets"},
    {"Job", "batch", "jobs"},
    {"CronJob", "batch", "cronjobs"},
};

static yyjson_mut_val *object(struct gen *g, unsigned k, const char *ns)
{
    yyjson_mut_val *meta = json_pack(g->doc, "{s:s, s:s, s:{s:s}}", "generateName", "w-",
                                     "namespace", ns, "labels", "app", "train");
    yyjson_mut_val *spec = pod_spec(g), *obj;
    const char *owner = PICK(&g->b, owners);

    FUZZ_ASSERT(meta != NULL, "out of memory");
    if (strcmp(kinds[k].kind, "Pod") == 0) {
        if (owner != NULL)
            put(g, meta, "ownerReferences",
                json_pack(g->doc, "[{s:s, s:s, s:s, s:b}]", "apiVersion", "apps/v1", "kind", owner,
                          "name", "o", "controller", pick(&g->b, 4) != 0));
        if (pick(&g->b, 16) == 0)
            put(g, meta, "annotations",
                json_pack(g->doc, "{s:s}", "kubernetes.io/config.mirror", "abc"));
        obj = json_pack(g->doc, "{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod",
                        "metadata", meta, "spec", spec);
        FUZZ_ASSERT(obj != NULL, "out of memory");
        return obj;
    }
    spec = json_pack(g->doc, "{s:i, s:{s:{s:{s:s}}, s:o}}", "replicas", 1 + (int)pick(&g->b, 3),
                     "template", "metadata", "labels", "app", "train", "spec", spec);
    if (strcmp(kinds[k].kind, "CronJob") == 0)
        spec = json_pack(g->doc, "{s:s, s:{s:o}}", "schedule", "* * * * *", "jobTemplate", "spec",
                         spec);
    obj = json_pack(g->doc, "{s:s, s:s, s:o, s:o}", "apiVersion",
                    strcmp(kinds[k].group, "apps") == 0 ? "apps/v1" : "batch/v1", "kind",
                    kinds[k].kind, "metadata", meta, "spec", spec);
    FUZZ_ASSERT(obj != NULL, "out of memory");
    return obj;
}

static struct review *review_of(unsigned k, const char *ns, const char *user, yyjson_mut_val *obj,
                                const char *op, yyjson_mut_val *old)
{
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *root = json_pack(
        doc,
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:[s]}, "
        "s:O, s:O*, s:b}}",
        "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
        "bypass-uid", "kind", "group", kinds[k].group, "version", "v1", "kind", kinds[k].kind,
        "resource", "group", kinds[k].group, "version", "v1", "resource", kinds[k].resource, "name",
        "", "namespace", ns, "operation", op, "userInfo", "username", user, "groups",
        "system:authenticated", "object", obj, "oldObject", old, "dryRun", 0);
    char *text;
    size_t len = 0;
    struct diag d;
    struct review *r;

    FUZZ_ASSERT(root != NULL, "out of memory");
    text = json_mut_write(root, &len);
    FUZZ_ASSERT(text != NULL, "the generated review does not encode");
    diag_clear(&d);
    r = review_decode(text, len, &d);
    FUZZ_ASSERT(r != NULL, "generated review does not decode: %s", d.msg);
    free(text);
    yyjson_mut_doc_free(doc);
    return r;
}

/* The generator's own walk to a pod's spec and metadata (mutable; the oracle has its own). */
static yyjson_mut_val *gen_template(yyjson_mut_val *obj, const char *kind)
{
    yyjson_mut_val *spec = yyjson_mut_obj_get(obj, "spec");

    if (strcmp(kind, "CronJob") == 0)
        spec = yyjson_mut_obj_get(yyjson_mut_obj_get(spec, "jobTemplate"), "spec");
    return yyjson_mut_obj_get(spec, "template");
}

static yyjson_mut_val *gen_pod_spec(yyjson_mut_val *obj, const char *kind)
{
    return yyjson_mut_obj_get(strcmp(kind, "Pod") == 0 ? obj : gen_template(obj, kind), "spec");
}

static yyjson_mut_val *gen_pod_meta(yyjson_mut_val *obj, const char *kind)
{
    return yyjson_mut_obj_get(strcmp(kind, "Pod") == 0 ? obj : gen_template(obj, kind), "metadata");
}

/* spec[key], made an empty array when absent */
static yyjson_mut_val *list_of(struct gen *g, yyjson_mut_val *spec, const char *key)
{
    if (yyjson_mut_obj_get(spec, key) == NULL)
        put(g, spec, key, yyjson_mut_arr(g->doc));
    return yyjson_mut_obj_get(spec, key);
}

static void add_host_path(struct gen *g, yyjson_mut_val *obj, const char *kind, const char *name,
                          const char *path)
{
    yyjson_mut_val *spec = gen_pod_spec(obj, kind);

    if (path == NULL || spec == NULL)
        return;
    yyjson_mut_arr_append(list_of(g, spec, "volumes"), json_pack(g->doc, "{s:s, s:{s:s}}", "name",
                                                                 name, "hostPath", "path", path));
}

/* The choices made last: more host paths, a node named, CDI annotations, envFrom, and a GPU
 * container beside the others (or a GPU only in an init container). */
static void mix(struct gen *g, yyjson_mut_val *obj, const char *kind)
{
    yyjson_mut_val *spec = gen_pod_spec(obj, kind);
    yyjson_mut_val *meta = gen_pod_meta(obj, kind), *list, *c;
    const char *s;
    size_t n;

    if (spec == NULL || meta == NULL)
        return;
    add_host_path(g, obj, kind, "more", PICK(&g->b, more_host_paths));
    if ((s = PICK(&g->b, node_names)) != NULL)
        put(g, spec, "nodeName", yyjson_mut_strcpy(g->doc, s));
    if ((s = PICK(&g->b, match_fields)) != NULL && yyjson_mut_obj_get(spec, "affinity") == NULL)
        put(g, spec, "affinity",
            json_pack(g->doc, "{s:{s:{s:o}}}", "nodeAffinity",
                      "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                      js(g->doc, s)));
    if ((s = PICK(&g->b, annotations)) != NULL)
        put(g, meta, "annotations", js(g->doc, s));
    list = yyjson_mut_obj_get(spec, pick(&g->b, 3) == 0 ? "initContainers" : "containers");
    n = yyjson_mut_arr_size(list);
    if (n > 0 && (s = PICK(&g->b, env_froms)) != NULL)
        put(g, yyjson_mut_arr_get(list, pick(&g->b, (unsigned)n)), "envFrom", js(g->doc, s));
    /* a DRA claim of the pod, and a container that uses it (or, at times, none) */
    if (pick(&g->b, 6) == 0) {
        put(g, spec, "resourceClaims",
            js(g->doc, "[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one\"}]"));
        list = yyjson_mut_obj_get(spec, "containers");
        n = yyjson_mut_arr_size(list);
        if (n > 0 && pick(&g->b, 4) != 0)
            put(g, yyjson_mut_arr_get(list, pick(&g->b, (unsigned)n)), "resources",
                js(g->doc, "{\"claims\":[{\"name\":\"gpu\"}]}"));
    }
    /* one more container that asks for a GPU resource, beside whatever the others do */
    if (pick(&g->b, 3) == 0) {
        bool init = pick(&g->b, 2) == 0;
        const char *r = PICK(&g->b, resources);

        if (strncmp(r, "nvidia.com/", 11) != 0)
            r = "nvidia.com/gpu";
        c = json_pack(g->doc, "{s:s, s:s}", "name", init ? "gpu-init" : "gpu", "image", "cuda:12");
        FUZZ_ASSERT(c != NULL, "out of memory");
        put(g, c, "resources", json_pack(g->doc, "{s:{s:o}}", "limits", r, quantity(g, "x")));
        yyjson_mut_arr_append(list_of(g, spec, init ? "initContainers" : "containers"), c);
    }
}

/* ---- the run ------------------------------------------------------------------------------- */

static yyjson_doc *judge(const struct review *r, bool mutating, struct decision *dec)
{
    char *body = NULL;
    size_t len = 0;
    yyjson_doc *patched;

    decision_init(dec);
    FUZZ_ASSERT(eval_review(policy, r, mutating, false, NULL, dec) == 0, "eval failed");
    FUZZ_ASSERT(review_encode(r, dec, mutating, &body, &len) == 0, "encode failed");
    patched = fuzz_check_response(r, dec, mutating, body, len);
    free(body);
    return patched;
}

static void disagree(const char *what, yyjson_val *obj, const struct decision *dec,
                     const struct oracle_verdict *v)
{
    char *text = yyjson_val_write(obj, 0, NULL);

    fprintf(stderr, "%s object: %s\nengine: %s\noracle: %s%s\n", v->op, text ? text : "?",
            dec->message ? dec->message : "(allowed)", v->admit ? "admit" : "refuse: ", v->why);
    free(text);
    FUZZ_FAIL("%s", what);
}

/* UPDATE: the object before had other template labels (1), or only other replicas (2) */
static yyjson_mut_val *old_object(struct gen *g, yyjson_mut_val *obj, unsigned k, unsigned update)
{
    const char *kind = kinds[k].kind;
    yyjson_mut_val *old = yyjson_mut_val_mut_copy(g->doc, obj), *spec;

    FUZZ_ASSERT(old != NULL, "out of memory");
    spec = yyjson_mut_obj_get(old, "spec");
    if (strcmp(kind, "Pod") == 0 || update == 1)
        put(g, yyjson_mut_obj_get(old, "metadata"), "labels",
            json_pack(g->doc, "{s:s}", "app", "old"));
    if (strcmp(kind, "Pod") != 0 && update == 1 && gen_pod_spec(old, kind) != NULL)
        put(g, gen_pod_meta(old, kind), "labels", json_pack(g->doc, "{s:s}", "app", "old"));
    /* a pod UPDATE that adds tolerations, a selector or affinity, or lifts gates */
    if (strcmp(kind, "Pod") == 0 && update == 2) {
        yyjson_mut_obj_remove_key(spec, "tolerations");
        yyjson_mut_obj_remove_key(spec, "nodeSelector");
        if (pick(&g->b, 2) == 0)
            yyjson_mut_obj_remove_key(spec, "affinity");
        put(g, spec, "schedulingGates", json_pack(g->doc, "[{s:s}]", "name", "wait"));
    }
    if (strcmp(kind, "Pod") != 0 && update == 2) {
        if (strcmp(kind, "CronJob") == 0)
            put(g, spec, "schedule", yyjson_mut_strcpy(g->doc, "0 * * * *"));
        else
            put(g, spec, "replicas", yyjson_mut_sint(g->doc, 7));
    }
    return old;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gen g = {.b = {data, size}, .doc = yyjson_mut_doc_new(NULL)};
    unsigned k = pick(&g.b, sizeof(kinds) / sizeof(kinds[0]));
    const char *ns = PICK(&g.b, namespaces), *user = PICK(&g.b, users);
    yyjson_mut_val *obj, *old = NULL;
    unsigned update;
    const char *extra_path;
    bool no_taints;
    yyjson_doc *sent, *sent_old = NULL, *patched, *again;
    struct review *r, *r2;
    struct decision mut, val, raw, dec2;
    struct oracle_input in = {.kind = kinds[k].kind,
                              .ns = ns,
                              .user = user,
                              .qty = qty_table,
                              .n_qty = sizeof(qty_table) / sizeof(qty_table[0])};
    struct oracle_verdict v;
    char why[256];

    FUZZ_ASSERT(g.doc != NULL, "out of memory");
    obj = object(&g, k, ns);
    /* chosen last, so that inputs written before these choices existed still mean a CREATE
     * under the default policy */
    update = pick(&g.b, 3);
    extra_path = PICK(&g.b, extra_host_paths);
    no_taints = pick(&g.b, 2) == 1;
    in.op = update ? "UPDATE" : "CREATE";
    in.no_taints = no_taints;
    policy = policies[no_taints];
    add_host_path(&g, obj, kinds[k].kind, "extra", extra_path);
    mix(&g, obj, kinds[k].kind);
    if (update)
        old = old_object(&g, obj, k, update);
    r = review_of(k, ns, user, obj, in.op, old);

    /* the oracle reads the object as generated (a copy of its own), not the engine's decoding */
    sent = yyjson_mut_val_imut_copy(obj, NULL);
    FUZZ_ASSERT(sent != NULL, "out of memory");
    in.object = yyjson_doc_get_root(sent);
    if (old != NULL) {
        sent_old = yyjson_mut_val_imut_copy(old, NULL);
        FUZZ_ASSERT(sent_old != NULL, "out of memory");
        in.old_object = yyjson_doc_get_root(sent_old);
    }
    oracle_judge(&in, &v);

    patched = judge(r, true, &mut);
    if (!mut.allowed)
        disagree("/mutate denied", in.object, &mut, &v);
    r2 = fuzz_review_with_object(r, patched ? yyjson_doc_get_root(patched) : r->object);
    FUZZ_ASSERT(r2 != NULL, "the patched review does not decode");
    yyjson_doc_free(judge(r2, false, &val));
    if (val.allowed && !v.admit)
        disagree("admitted, but the reference refuses it", in.object, &val, &v);
    if (!val.allowed && v.admit)
        disagree("refused, but the reference admits it", in.object, &val, &v);
    /* a pod UPDATE is never patched: what the Mutate rules find there is only warned about */
    if (val.allowed && v.judged && v.gpu &&
        !(strcmp(kinds[k].kind, "Pod") == 0 && strcmp(in.op, "CREATE") != 0) &&
        !oracle_gpu_pod_settled(oracle_pod_spec(r2->object, kinds[k].kind), no_taints, why,
                                sizeof(why)))
        disagree(why, r2->object, &val, &v);

    again = judge(r2, true, &dec2);
    if (again != NULL)
        disagree("the patched object gets another patch", r2->object, &dec2, &v);

    yyjson_doc_free(judge(r, false, &raw));
    if (raw.allowed && patched != NULL)
        disagree("/validate admits the unpatched object that /mutate patches", in.object, &raw, &v);

    decision_release(&mut);
    decision_release(&val);
    decision_release(&raw);
    decision_release(&dec2);
    yyjson_doc_free(patched);
    review_free(r2);
    review_free(r);
    yyjson_doc_free(sent);
    yyjson_doc_free(sent_old);
    yyjson_mut_doc_free(g.doc);
    return 0;
}
