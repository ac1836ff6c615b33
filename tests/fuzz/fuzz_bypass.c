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

#include "eval.h"
#include "fuzz_support.h"
#include "oracle.h"
#include "rules.h"

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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_object_seed(1);
    fuzz_quiet_logs();
    policies[0] = fuzz_policy("rules/default.yaml");
    policies[1] = no_taints_policy();
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

static json_t *js(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &err);

    if (v == NULL)
        FUZZ_FAIL("generator table: %s: %s", text, err.text);
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

struct gen {
    struct bytes b;
    struct oracle_qty qty[64];
    size_t n_qty;
};

static json_t *quantity(struct gen *g, const char *resource)
{
    unsigned i = pick(&g->b, sizeof(quantities) / sizeof(quantities[0]));
    json_t *v;

    /* other resources get valid amounts: the reference says nothing of theirs */
    if (strncmp(resource, "nvidia.com/", 11) != 0 && quantities[i].units < 0)
        i = 0;
    v = js(quantities[i].json);
    FUZZ_ASSERT(g->n_qty < sizeof(g->qty) / sizeof(g->qty[0]), "quantity table full");
    g->qty[g->n_qty].value = v;
    g->qty[g->n_qty].units = quantities[i].units;
    g->n_qty++;
    return v;
}

static json_t *container(struct gen *g, const char *name, bool init)
{
    json_t *c = json_pack("{s:s, s:s}", "name", name, "image", "cuda:12");
    json_t *requests = json_object(), *limits = json_object(), *res = json_object();
    unsigned n = pick(&g->b, 3);

    for (unsigned i = 0; i < n; i++) {
        const char *r = PICK(&g->b, resources);
        json_t *q;

        if (json_object_get(requests, r) || json_object_get(limits, r))
            continue;
        q = quantity(g, r);
        switch (pick(&g->b, 3)) {
        case 0: json_object_set(limits, r, q); break;
        case 1: json_object_set(requests, r, q); break;
        default: json_object_set(limits, r, q); json_object_set(requests, r, q);
        }
        json_decref(q);
    }
    if (json_object_size(requests))
        json_object_set(res, "requests", requests);
    if (json_object_size(limits))
        json_object_set(res, "limits", limits);
    json_decref(requests);
    json_decref(limits);
    json_object_set_new(c, "resources", res);
    if (pick(&g->b, 4) == 0)
        json_object_set_new(c, "env", json_pack("[o]", js(PICK(&g->b, env_values))));
    switch (pick(&g->b, 5)) {
    case 0: json_object_set_new(c, "securityContext", json_pack("{s:b}", "privileged", 1)); break;
    case 1: json_object_set_new(c, "securityContext", json_pack("{s:b}", "privileged", 0)); break;
    default: break;
    }
    if (init && pick(&g->b, 2) == 0)
        json_object_set_new(c, "restartPolicy", json_string("Always")); /* a sidecar */
    return c;
}

static json_t *pod_spec(struct gen *g)
{
    json_t *spec = json_object(), *list;
    const char *s;
    unsigned n;
    char name[16];

    list = json_array();
    n = 1 + pick(&g->b, 3);
    for (unsigned i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "c%u", i);
        json_array_append_new(list, container(g, name, false));
    }
    json_object_set_new(spec, "containers", list);
    if ((n = pick(&g->b, 4)) > 1) {
        list = json_array();
        for (unsigned i = 0; i < n - 1; i++) {
            snprintf(name, sizeof(name), "i%u", i);
            json_array_append_new(list, container(g, name, true));
        }
        json_object_set_new(spec, "initContainers", list);
    }
    if ((n = pick(&g->b, 4)) > 1) {
        list = json_array();
        for (unsigned i = 0; i < n - 1; i++)
            json_array_append_new(list, js(PICK(&g->b, tolerations)));
        json_object_set_new(spec, "tolerations", list);
    }
    if (pick(&g->b, 2) == 0)
        json_object_set_new(spec, "nodeSelector", js(PICK(&g->b, node_selectors)));
    if (pick(&g->b, 3) == 0)
        json_object_set_new(spec, "affinity",
                            json_pack("{s:{s:{s:o}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", js(PICK(&g->b, affinities))));
    if ((s = PICK(&g->b, runtime_classes)) != NULL)
        json_object_set_new(spec, "runtimeClassName", json_string(s));
    if ((s = PICK(&g->b, classes)) != NULL)
        json_object_set_new(spec, "priorityClassName", json_string(s));
    if (pick(&g->b, 4) == 0)
        json_object_set_new(spec, "volumes",
                            json_pack("[{s:s, s:{s:s}}]", "name", "dev", "hostPath", "path",
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

static json_t *object(struct gen *g, unsigned k, const char *ns)
{
    json_t *meta = json_pack("{s:s, s:s, s:{s:s}}", "generateName", "w-", "namespace", ns, "labels",
                             "app", "train");
    json_t *spec = pod_spec(g), *obj;
    const char *owner = PICK(&g->b, owners);

    if (strcmp(kinds[k].kind, "Pod") == 0) {
        if (owner != NULL)
            json_object_set_new(meta, "ownerReferences",
                                json_pack("[{s:s, s:s, s:s, s:b}]", "apiVersion", "apps/v1", "kind",
                                          owner, "name", "o", "controller", pick(&g->b, 4) != 0));
        if (pick(&g->b, 16) == 0)
            json_object_set_new(meta, "annotations",
                                json_pack("{s:s}", "kubernetes.io/config.mirror", "abc"));
        return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                         meta, "spec", spec);
    }
    spec = json_pack("{s:i, s:{s:{s:{s:s}}, s:o}}", "replicas", 1 + (int)pick(&g->b, 3), "template",
                     "metadata", "labels", "app", "train", "spec", spec);
    if (strcmp(kinds[k].kind, "CronJob") == 0)
        spec = json_pack("{s:s, s:{s:o}}", "schedule", "* * * * *", "jobTemplate", "spec", spec);
    obj = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion",
                    strcmp(kinds[k].group, "apps") == 0 ? "apps/v1" : "batch/v1", "kind",
                    kinds[k].kind, "metadata", meta, "spec", spec);
    return obj;
}

static struct review *review_of(unsigned k, const char *ns, const char *user, json_t *obj,
                                const char *op, json_t *old)
{
    json_t *root = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:[s]}, "
        "s:O, s:b}}",
        "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
        "bypass-uid", "kind", "group", kinds[k].group, "version", "v1", "kind", kinds[k].kind,
        "resource", "group", kinds[k].group, "version", "v1", "resource", kinds[k].resource, "name",
        "", "namespace", ns, "operation", op, "userInfo", "username", user, "groups",
        "system:authenticated", "object", obj, "dryRun", 0);
    char *text;
    struct diag d;
    struct review *r;

    if (old != NULL)
        json_object_set(json_object_get(root, "request"), "oldObject", old);
    text = json_dumps(root, JSON_COMPACT);
    diag_clear(&d);
    r = review_decode(text, strlen(text), &d);
    FUZZ_ASSERT(r != NULL, "generated review does not decode: %s", d.msg);
    free(text);
    json_decref(root);
    return r;
}

static void add_host_path(json_t *obj, const char *kind, const char *name, const char *path)
{
    json_t *spec = (json_t *)oracle_pod_spec(obj, kind);

    if (path == NULL || spec == NULL)
        return;
    if (json_object_get(spec, "volumes") == NULL)
        json_object_set_new(spec, "volumes", json_array());
    json_array_append_new(json_object_get(spec, "volumes"),
                          json_pack("{s:s, s:{s:s}}", "name", name, "hostPath", "path", path));
}

/* The choices made last: more host paths, a node named, CDI annotations, envFrom, and a GPU
 * container beside the others (or a GPU only in an init container). */
static void mix(struct gen *g, json_t *obj, const char *kind)
{
    json_t *spec = (json_t *)oracle_pod_spec(obj, kind);
    json_t *meta = (json_t *)oracle_pod_meta(obj, kind), *list, *c;
    const char *s;
    size_t n;

    if (spec == NULL || meta == NULL)
        return;
    add_host_path(obj, kind, "more", PICK(&g->b, more_host_paths));
    if ((s = PICK(&g->b, node_names)) != NULL)
        json_object_set_new(spec, "nodeName", json_string(s));
    if ((s = PICK(&g->b, match_fields)) != NULL && json_object_get(spec, "affinity") == NULL)
        json_object_set_new(spec, "affinity",
                            json_pack("{s:{s:{s:o}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", js(s)));
    if ((s = PICK(&g->b, annotations)) != NULL)
        json_object_set_new(meta, "annotations", js(s));
    list = json_object_get(spec, pick(&g->b, 3) == 0 ? "initContainers" : "containers");
    n = json_array_size(list);
    if (n > 0 && (s = PICK(&g->b, env_froms)) != NULL)
        json_object_set_new(json_array_get(list, pick(&g->b, (unsigned)n)), "envFrom", js(s));
    /* a DRA claim of the pod, and a container that uses it (or, at times, none) */
    if (pick(&g->b, 6) == 0) {
        json_object_set_new(spec, "resourceClaims",
                            js("[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one\"}]"));
        list = json_object_get(spec, "containers");
        n = json_array_size(list);
        if (n > 0 && pick(&g->b, 4) != 0)
            json_object_set_new(json_array_get(list, pick(&g->b, (unsigned)n)), "resources",
                                js("{\"claims\":[{\"name\":\"gpu\"}]}"));
    }
    /* one more container that asks for a GPU resource, beside whatever the others do */
    if (pick(&g->b, 3) == 0) {
        bool init = pick(&g->b, 2) == 0;
        const char *r = PICK(&g->b, resources);

        if (strncmp(r, "nvidia.com/", 11) != 0)
            r = "nvidia.com/gpu";
        c = json_pack("{s:s, s:s}", "name", init ? "gpu-init" : "gpu", "image", "cuda:12");
        json_object_set_new(c, "resources", json_pack("{s:{s:o}}", "limits", r, quantity(g, "x")));
        if (json_object_get(spec, init ? "initContainers" : "containers") == NULL)
            json_object_set_new(spec, init ? "initContainers" : "containers", json_array());
        json_array_append_new(json_object_get(spec, init ? "initContainers" : "containers"), c);
    }
}

/* ---- the run ------------------------------------------------------------------------------- */

static json_t *judge(const struct review *r, bool mutating, struct decision *dec)
{
    char *body = NULL;
    size_t len = 0;
    json_t *patched;

    decision_init(dec);
    FUZZ_ASSERT(eval_review(policy, r, mutating, false, NULL, dec) == 0, "eval failed");
    FUZZ_ASSERT(review_encode(r, dec, mutating, &body, &len) == 0, "encode failed");
    patched = fuzz_check_response(r, dec, mutating, body, len);
    free(body);
    return patched;
}

static void disagree(const char *what, const json_t *obj, const struct decision *dec,
                     const struct oracle_verdict *v)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);

    fprintf(stderr, "%s object: %s\nengine: %s\noracle: %s%s\n", v->op, text ? text : "?",
            dec->message ? dec->message : "(allowed)", v->admit ? "admit" : "refuse: ", v->why);
    free(text);
    FUZZ_FAIL("%s", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gen g = {.b = {data, size}};
    unsigned k = pick(&g.b, sizeof(kinds) / sizeof(kinds[0]));
    const char *ns = PICK(&g.b, namespaces), *user = PICK(&g.b, users);
    json_t *obj = object(&g, k, ns), *patched, *again;
    json_t *old = NULL;
    /* chosen last, so that inputs written before these choices existed still mean a CREATE
     * under the default policy */
    unsigned update = pick(&g.b, 3);
    const char *extra_path = PICK(&g.b, extra_host_paths);
    bool no_taints = pick(&g.b, 2) == 1;
    struct review *r, *r2;
    struct decision mut, val, raw, dec2;
    struct oracle_input in = {.object = obj,
                              .kind = kinds[k].kind,
                              .ns = ns,
                              .user = user,
                              .op = update ? "UPDATE" : "CREATE",
                              .no_taints = no_taints,
                              .qty = g.qty,
                              .n_qty = g.n_qty};
    struct oracle_verdict v;
    char why[256];

    policy = policies[no_taints];
    add_host_path(obj, kinds[k].kind, "extra", extra_path);
    mix(&g, obj, kinds[k].kind);
    in.n_qty = g.n_qty; /* mix() may add a GPU amount */
    /* UPDATE: the object before had other template labels (1), or only other replicas (2) */
    if (update) {
        json_t *tpl;

        old = json_deep_copy(obj);
        tpl = (json_t *)oracle_pod_spec(old, kinds[k].kind);
        if (strcmp(kinds[k].kind, "Pod") == 0 || update == 1)
            json_object_set_new(json_object_get(old, "metadata"), "labels",
                                json_pack("{s:s}", "app", "old"));
        if (strcmp(kinds[k].kind, "Pod") != 0 && update == 1 && tpl != NULL) {
            const char *kind = kinds[k].kind;
            json_t *spec = json_object_get(old, "spec");

            if (strcmp(kind, "CronJob") == 0)
                spec = json_object_get(json_object_get(spec, "jobTemplate"), "spec");
            json_object_set_new(json_object_get(json_object_get(spec, "template"), "metadata"),
                                "labels", json_pack("{s:s}", "app", "old"));
        }
        /* a pod UPDATE that adds tolerations, a selector or affinity, or lifts gates */
        if (strcmp(kinds[k].kind, "Pod") == 0 && update == 2) {
            json_t *spec = json_object_get(old, "spec");

            json_object_del(spec, "tolerations");
            json_object_del(spec, "nodeSelector");
            if (pick(&g.b, 2) == 0)
                json_object_del(spec, "affinity");
            json_object_set_new(spec, "schedulingGates", json_pack("[{s:s}]", "name", "wait"));
        }
        if (strcmp(kinds[k].kind, "Pod") != 0 && update == 2) {
            json_t *spec = json_object_get(old, "spec");

            if (strcmp(kinds[k].kind, "CronJob") == 0)
                json_object_set_new(spec, "schedule", json_string("0 * * * *"));
            else
                json_object_set_new(spec, "replicas", json_integer(7));
        }
        in.old_object = old;
    }
    r = review_of(k, ns, user, obj, in.op, old);

    /* the oracle reads the object as generated: the side table points into it */
    oracle_judge(&in, &v);

    patched = judge(r, true, &mut);
    if (!mut.allowed)
        disagree("/mutate denied", obj, &mut, &v);
    r2 = fuzz_review_with_object(r, patched ? patched : r->object);
    FUZZ_ASSERT(r2 != NULL, "the patched review does not decode");
    json_decref(judge(r2, false, &val));
    if (val.allowed && !v.admit)
        disagree("admitted, but the reference refuses it", obj, &val, &v);
    if (!val.allowed && v.admit)
        disagree("refused, but the reference admits it", obj, &val, &v);
    /* a pod UPDATE is never patched: what the Mutate rules find there is only warned about */
    if (val.allowed && v.judged && v.gpu &&
        !(strcmp(kinds[k].kind, "Pod") == 0 && strcmp(in.op, "CREATE") != 0) &&
        !oracle_gpu_pod_settled(oracle_pod_spec(r2->object, kinds[k].kind), no_taints, why,
                                sizeof(why)))
        disagree(why, r2->object, &val, &v);

    again = judge(r2, true, &dec2);
    if (again != NULL)
        disagree("the patched object gets another patch", r2->object, &dec2, &v);

    json_decref(judge(r, false, &raw));
    if (raw.allowed && patched != NULL)
        disagree("/validate admits the unpatched object that /mutate patches", obj, &raw, &v);

    decision_release(&mut);
    decision_release(&val);
    decision_release(&raw);
    decision_release(&dec2);
    json_decref(patched);
    review_free(r2);
    review_free(r);
    json_decref(obj);
    json_decref(old);
    return 0;
}
