/*
 * bench_view.c: the cluster view's benchmark (make bench; see tests/bench/README.md).
 *
 * Builds a synthetic cluster the way the apiserver would serve it (list pages of 500 items,
 * watch event lines), then measures in one run, each figure against a baseline taken in the
 * same run because the machine is shared and noisy:
 *   a. the initial list's processing rate, against yyjson's bare parse of the same bytes;
 *   b. watch events applied per second, against the bare parse of the same lines;
 *   c. the view's resident memory, with the input's size for scale;
 *   d. p50/p99 of one capacity decision, against a scan reading one label of every node.
 * It reports and does not judge itself: the exit status is 0 unless something breaks.
 *
 * Everything generated is deterministic (a fixed seed), so two runs see the same bytes.
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION /* no valgrind headers: --callgrind counts nothing */
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(what) ((void)(what))
#define RUNNING_ON_VALGRIND           0
#endif

#include "cluster/capacity.h"
#include "cluster/cluster.h"
#include "diag.h"
#include "json.h"
#include "bounds.h"
#include "policy/policy.h"

/* The cluster at --scale 1. */
#define FULL_NODES         5000
#define FULL_PODS          150000
#define FULL_WATCH_EVENTS  15000
#define GPU_NODE_EVERY     5  /* every 5th node is a GPU node: 20% */
#define GPU_POD_EVERY      10 /* every 10th pod requests a GPU: 10% */
#define GPUS_PER_NODE      8
#define GPU_FILL_EIGHTHS   7 /* bind GPU pods until 7/8 of the GPUs are in use */
#define CPU_POD_CAP        110
#define CPU_PODS_PER_OWNER 6
#define GPU_DEPLOYMENTS    50
#define CPU_DEPLOYMENTS    150
#define PAGE_ITEMS         500 /* the list page size the client asks for */
#define CHUNK_LINES        500 /* watch lines per A/B slice */

#define DEFAULT_REPS  3
#define DEFAULT_CALLS 2000
#define WARMUP_CALLS  20
#define SEED          0x67707561646d6974ull /* "gpuadmit" */
#define BASE_EPOCH    1714557600L           /* 2024-05-01T10:00:00Z */

/* Goals from the issue. */
#define GOAL_LIST_RATIO 0.7
#define GOAL_VIEW_MIB   64.0
#define GOAL_P99_US     50.0

/* ---- small helpers ---- */

static void die(const char *what)
{
    fprintf(stderr, "bench_view: %s\n", what);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), sorting v. */
static double quantile(double *v, size_t n, double q)
{
    size_t i;

    qsort(v, n, sizeof(*v), cmp_double);
    i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* The number after "prefix" in the first line of /proc/self/<file> that starts with it ("" for
 * the first line), or 0. */
static unsigned long proc_number(const char *file, const char *prefix, int field)
{
    char path[64], line[256], *p, *end;
    size_t plen = strlen(prefix);
    unsigned long v = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/%s", file);
    if ((f = fopen(path, "re")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, prefix, plen) != 0)
            continue;
        p = line + plen;
        for (int i = 0; i <= field; i++, p = end) {
            v = strtoul(p, &end, 10);
            if (end == p) {
                v = 0;
                break;
            }
        }
        break;
    }
    fclose(f);
    return v;
}

static size_t rss_bytes(void)
{
    /* statm: size resident shared ..., in pages */
    return (size_t)proc_number("statm", "", 1) * (size_t)sysconf(_SC_PAGESIZE);
}

/* VmHWM, the peak resident set. */
static size_t peak_rss_bytes(void)
{
    return (size_t)proc_number("status", "VmHWM:", 0) * 1024;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

/* splitmix64: a counter through a mixer, enough for synthetic data. */
struct rng {
    uint64_t s;
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t rnd(struct rng *r)
{
    return mix(r->s++ * 0x9e3779b97f4a7c15ull);
}

static unsigned below(struct rng *r, unsigned n)
{
    return (unsigned)(rnd(r) % n);
}

static struct rng rng_for(uint64_t salt, size_t i)
{
    struct rng r = {mix(SEED ^ salt) ^ mix((uint64_t)i)};

    return r;
}

static void hex(struct rng *r, char *out, size_t n)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++)
        out[i] = digits[rnd(r) & 15];
    out[n] = '\0';
}

static void uid(struct rng *r, char out[37])
{
    char h[33];

    hex(r, h, 32);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

/* A Kubernetes-style name suffix of n characters from the value v (unique for distinct v). */
static void suffix(uint64_t v, char *out, size_t n)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";

    for (size_t i = 0; i < n; i++) {
        out[n - 1 - i] = alpha[v % 27];
        v /= 27;
    }
    out[n] = '\0';
}

static void stamp(long offset_s, char out[32])
{
    time_t t = BASE_EPOCH + offset_s;
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- a growable string, and a mapping for the input (so that its memory is its own) ---- */

struct sb {
    char *p;
    size_t len, cap;
};

static void sb_reserve(struct sb *b, size_t more)
{
    char *grown;
    size_t cap = b->cap ? b->cap : 4096;

    if (b->len + more + 1 <= b->cap)
        return;
    while (cap < b->len + more + 1)
        cap *= 2;
    if ((grown = realloc(b->p, cap)) == NULL)
        die("out of memory");
    b->p = grown;
    b->cap = cap;
}

static void sb_add(struct sb *b, const char *s)
{
    size_t n = strlen(s);

    sb_reserve(b, n);
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sb *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    sb_reserve(b, 256);
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("vsnprintf failed");
    if ((size_t)n >= b->cap - b->len) {
        sb_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* Input bytes live in an anonymous mapping of their own: resident before and after the view is
 * loaded, so they cancel out of the view's RSS, and unmapping returns them exactly. */
struct arena {
    char *p;
    size_t len, cap;
};

static size_t arena_add(struct arena *a, const char *s, size_t n)
{
    size_t off = a->len, cap = a->cap ? a->cap : (size_t)64 << 20;
    void *m;

    while (cap < a->len + n)
        cap *= 2;
    if (cap != a->cap) {
        m = a->p == NULL
                ? mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                : mremap(a->p, a->cap, cap, MREMAP_MAYMOVE);
        if (m == MAP_FAILED)
            die("out of memory for the input");
        a->p = m;
        a->cap = cap;
    }
    memcpy(a->p + a->len, s, n);
    a->len += n;
    return off;
}

static void arena_free(struct arena *a)
{
    if (a->p != NULL)
        munmap(a->p, a->cap);
    a->p = NULL;
    a->len = a->cap = 0;
}

/* ---- the synthetic cluster ---- */

struct gnode {
    bool gpu, cordoned, not_ready;
    unsigned gpus_used, pods, label_gen, beats;
};

struct gpod {
    int node;           /* -1: Pending */
    unsigned owner;     /* CPU workload, or GPU Deployment */
    unsigned label_gen; /* bumped by relabeling watch events */
};

struct model {
    size_t n_nodes, n_pods, n_gpu_nodes;
    struct gnode *nodes;
    struct gpod *pods;
    size_t *gpu_nodes; /* indices of the GPU nodes */
    size_t *gpu_deploy_replicas;
    size_t gpu_bound, gpu_pending;
    unsigned long long rv; /* the next resourceVersion */
};

static const char *const apps[] = {"checkout",  "cart",    "payments",      "search",  "catalog",
                                   "recommend", "auth",    "gateway",       "orders",  "inventory",
                                   "shipping",  "pricing", "notifications", "profile", "reviews",
                                   "ads",       "metrics", "billing",       "ledger",  "media"};
static const char *const comps[] = {"api",       "worker", "frontend", "consumer",
                                    "scheduler", "cache",  "sync",     "indexer"};
static const char *const gpu_apps[] = {"llm-serving", "embeddings", "vision-infer", "asr",
                                       "train-bert",  "train-vit",  "rl-sim",       "diffusion"};
static const char *const gpu_ns[] = {"ml-serving", "ml-research", "ml-training", "ml-platform"};
static const char *const zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
static const char *const cpu_types[] = {"m6i.4xlarge", "c6i.8xlarge", "r6i.4xlarge"};
static const char *const gpu_types[] = {"p4d.24xlarge", "p5.48xlarge"};
static const char *const gpu_products[] = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool is_gpu_pod(size_t i)
{
    return i % GPU_POD_EVERY == 0;
}

static void node_name(size_t i, char out[64])
{
    snprintf(out, 64, "ip-10-%zu-%zu-%zu.ec2.internal", 64 + (i >> 16), (i >> 8) & 255, i & 255);
}

static void owner_name(bool gpu, unsigned w, char out[64])
{
    if (gpu)
        snprintf(out, 64, "%s-%u", gpu_apps[w % COUNT(gpu_apps)], w / (unsigned)COUNT(gpu_apps));
    else
        snprintf(out, 64, "%s-%s-%u", apps[w % COUNT(apps)], comps[(w / COUNT(apps)) % 8],
                 w / (unsigned)(COUNT(apps) * 8));
}

static const char *owner_ns(bool gpu, unsigned w, char buf[64])
{
    if (gpu)
        return gpu_ns[w % COUNT(gpu_ns)];
    snprintf(buf, 64, "team-%s", apps[w % COUNT(apps)]);
    return buf;
}

/* Places the pods: CPU pods on CPU nodes, GPU pods on GPU nodes with a free GPU until the fill
 * target, the rest of the GPU pods Pending (there are more GPU pods than GPUs: 15,000 pods of
 * one GPU for 8,000 GPUs). */
static void model_build(struct model *m, double scale)
{
    struct rng r = rng_for(1, 0);
    size_t fill, cpu_nodes = 0, *cpu = NULL, g = 0;

    m->n_nodes = (size_t)(FULL_NODES * scale + 0.5);
    m->n_pods = (size_t)(FULL_PODS * scale + 0.5);
    if (m->n_nodes < 2 * GPU_NODE_EVERY)
        m->n_nodes = 2 * GPU_NODE_EVERY;
    if (m->n_pods < 100)
        m->n_pods = 100;
    m->nodes = calloc(m->n_nodes, sizeof(*m->nodes));
    m->pods = calloc(m->n_pods, sizeof(*m->pods));
    m->gpu_nodes = calloc(m->n_nodes, sizeof(*m->gpu_nodes));
    m->gpu_deploy_replicas = calloc(GPU_DEPLOYMENTS, sizeof(*m->gpu_deploy_replicas));
    cpu = calloc(m->n_nodes, sizeof(*cpu));
    if (!m->nodes || !m->pods || !m->gpu_nodes || !m->gpu_deploy_replicas || !cpu)
        die("out of memory");
    for (size_t i = 0; i < m->n_nodes; i++) {
        struct gnode *n = &m->nodes[i];

        n->gpu = i % GPU_NODE_EVERY == 0;
        n->cordoned = i % 97 == 3;
        n->not_ready = i % 211 == 7;
        if (n->gpu)
            m->gpu_nodes[m->n_gpu_nodes++] = i;
        else
            cpu[cpu_nodes++] = i;
    }
    fill = m->n_gpu_nodes * GPUS_PER_NODE * GPU_FILL_EIGHTHS / 8;
    for (size_t i = 0; i < m->n_pods; i++) {
        struct gpod *p = &m->pods[i];
        size_t n;

        if (!is_gpu_pod(i)) {
            p->owner = (unsigned)((i - i / GPU_POD_EVERY) / CPU_PODS_PER_OWNER);
            do
                n = cpu[below(&r, (unsigned)cpu_nodes)];
            while (m->nodes[n].pods >= CPU_POD_CAP);
            p->node = (int)n;
            m->nodes[n].pods++;
            continue;
        }
        p->owner = (unsigned)(g++ % GPU_DEPLOYMENTS);
        m->gpu_deploy_replicas[p->owner]++;
        p->node = -1;
        for (unsigned tries = 0; m->gpu_bound < fill && tries < 64; tries++) {
            n = m->gpu_nodes[below(&r, (unsigned)m->n_gpu_nodes)];
            if (m->nodes[n].gpus_used < GPUS_PER_NODE) {
                m->nodes[n].gpus_used++;
                m->nodes[n].pods++;
                p->node = (int)n;
                m->gpu_bound++;
                break;
            }
        }
        if (p->node < 0)
            m->gpu_pending++;
    }
    m->rv = 100000000ull;
    free(cpu);
}

static void model_free(struct model *m)
{
    free(m->nodes);
    free(m->pods);
    free(m->gpu_nodes);
    free(m->gpu_deploy_replicas);
}

/* ---- JSON as the apiserver writes it ---- */

static void emit_node_labels(struct sb *b, const struct model *m, size_t i, struct rng *r)
{
    const struct gnode *n = &m->nodes[i];
    const char *zone = zones[i % 3];
    const char *type = n->gpu ? gpu_types[i % 2] : cpu_types[i % 3];
    char name[64], h[17];

    node_name(i, name);
    hex(r, h, 16);
    sb_printf(b,
              "\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/"
              "instance-type\":\"%s\",\"beta.kubernetes.io/os\":\"linux\",\"eks.amazonaws.com/"
              "capacityType\":\"ON_DEMAND\",\"eks.amazonaws.com/nodegroup\":\"%s-%s\","
              "\"eks.amazonaws.com/nodegroup-image\":\"ami-0%.16s\",\"eks.amazonaws.com/"
              "sourceLaunchTemplateId\":\"lt-0%.16s\",\"eks.amazonaws.com/"
              "sourceLaunchTemplateVersion\":\"%zu\",\"failure-domain.beta.kubernetes.io/region\":"
              "\"us-east-1\",\"failure-domain.beta.kubernetes.io/zone\":\"%s\",\"k8s.io/"
              "cloud-provider-aws\":\"%.16s\",\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/"
              "hostname\":\"%s\",\"kubernetes.io/os\":\"linux\",\"node.kubernetes.io/"
              "instance-type\":\"%s\",\"node-role.kubernetes.io/worker\":\"\","
              "\"node.kubernetes.io/lifecycle\":\"on-demand\",\"topology.ebs.csi.aws.com/zone\":"
              "\"%s\",\"topology.k8s.aws/zone-id\":\"use1-az%zu\",\"topology.kubernetes.io/"
              "region\":\"us-east-1\",\"topology.kubernetes.io/zone\":\"%s\",\"vpc.amazonaws.com/"
              "has-trunk-attached\":\"false\",\"alpha.eksctl.io/cluster-name\":\"prod-use1\","
              "\"alpha.eksctl.io/nodegroup-name\":\"%s-%s\",\"team\":\"platform\",\"env\":\"prod\","
              "\"cost-center\":\"cc-%zu\",\"feature.node.kubernetes.io/cpu-model.vendor_id\":"
              "\"Intel\",\"feature.node.kubernetes.io/kernel-version.full\":\"5.10.%u-%u."
              "amzn2.x86_64\",\"feature.node.kubernetes.io/system-os_release.ID\":\"amzn\"",
              type, n->gpu ? "gpu" : "general", zone, h, h, 1 + i % 7, zone, h, name, type, zone,
              1 + i % 3, zone, n->gpu ? "gpu" : "general", zone, 1000 + i % 40,
              210 + n->label_gen % 40, 200 + n->label_gen);
    if (n->gpu)
        sb_printf(b,
                  ",\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.product\":\"%s\","
                  "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/gpu.memory\":\"81920\","
                  "\"nvidia.com/gpu.deploy.device-plugin\":\"true\",\"nvidia.com/cuda.driver."
                  "major\":\"535\",\"nvidia.com/gpu.sharing-strategy\":\"none\","
                  "\"nvidia.com/mig.capable\":\"true\"",
                  gpu_products[i % 2]);
    sb_add(b, "}");
}

static void emit_node_status(struct sb *b, const struct model *m, size_t i, struct rng *r)
{
    const struct gnode *n = &m->nodes[i];
    const char *gpu = n->gpu ? ",\"nvidia.com/gpu\":\"8\"" : "";
    char beat[32], since[32], boot[37], sys[37], h[65];
    static const char *const conds[][3] = {
        {"MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
        {"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
        {"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"}};

    stamp(86400 + (long)n->beats * 40 + (long)(i % 40), beat);
    stamp((long)(i % 86400), since);
    uid(r, boot);
    uid(r, sys);
    sb_printf(
        b,
        ",\"status\":{\"capacity\":{\"cpu\":\"%s\",\"ephemeral-storage\":\"104845292Ki\","
        "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"%s\",\"pods\":\"%s\"%s},"
        "\"allocatable\":{\"cpu\":\"%s\",\"ephemeral-storage\":\"95551679124\","
        "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"%s\",\"pods\":\"%s\"%s},"
        "\"conditions\":[",
        n->gpu ? "96" : "16", n->gpu ? "1176570268Ki" : "65023664Ki", n->gpu ? "737" : "110", gpu,
        n->gpu ? "95690m" : "15890m", n->gpu ? "1165232028Ki" : "64006832Ki",
        n->gpu ? "737" : "110", gpu);
    for (size_t k = 0; k < COUNT(conds); k++)
        sb_printf(b,
                  "{\"type\":\"%s\",\"status\":\"False\",\"lastHeartbeatTime\":\"%s\","
                  "\"lastTransitionTime\":\"%s\",\"reason\":\"%s\",\"message\":\"%s\"},",
                  conds[k][0], beat, since, conds[k][1], conds[k][2]);
    sb_printf(b,
              "{\"type\":\"Ready\",\"status\":\"%s\",\"lastHeartbeatTime\":\"%s\","
              "\"lastTransitionTime\":\"%s\",\"reason\":\"%s\",\"message\":\"%s\"}],"
              "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.%zu.%zu.%zu\"},"
              "{\"type\":\"InternalDNS\",\"address\":\"ip-10-%zu-%zu-%zu.ec2.internal\"},"
              "{\"type\":\"Hostname\",\"address\":\"ip-10-%zu-%zu-%zu.ec2.internal\"}],"
              "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},\"nodeInfo\":{"
              "\"machineID\":\"%.32s\",\"systemUUID\":\"%s\",\"bootID\":\"%s\",\"kernelVersion\":"
              "\"5.10.219-208.866.amzn2.x86_64\",\"osImage\":\"Amazon Linux 2\","
              "\"containerRuntimeVersion\":\"containerd://1.7.11\",\"kubeletVersion\":"
              "\"v1.29.3-eks-ae9a62a\",\"kubeProxyVersion\":\"v1.29.3-eks-ae9a62a\","
              "\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"},\"images\":[",
              n->not_ready ? "Unknown" : "True", beat, since,
              n->not_ready ? "NodeStatusUnknown" : "KubeletReady",
              n->not_ready ? "Kubelet stopped posting node status."
                           : "kubelet is posting ready status",
              64 + (i >> 16), (i >> 8) & 255, i & 255, 64 + (i >> 16), (i >> 8) & 255, i & 255,
              64 + (i >> 16), (i >> 8) & 255, i & 255, boot, sys, boot);
    for (unsigned k = 0; k < 12; k++) {
        hex(r, h, 64);
        sb_printf(b,
                  "%s{\"names\":[\"registry.example.com/%s/%s@sha256:%s\","
                  "\"registry.example.com/%s/%s:v1.%u.%u\"],\"sizeBytes\":%llu}",
                  k ? "," : "", apps[(i + k) % COUNT(apps)], comps[k % 8], h,
                  apps[(i + k) % COUNT(apps)], comps[k % 8], k, (unsigned)(i % 9),
                  (unsigned long long)(20000000 + rnd(r) % 900000000));
    }
    sb_add(b, "]}}");
}

static void emit_node(struct sb *b, const struct model *m, size_t i, bool watch)
{
    const struct gnode *n = &m->nodes[i];
    struct rng r = rng_for(2, i);
    char name[64], id[37], created[32];

    node_name(i, name);
    uid(&r, id);
    stamp(-(long)(i % 5000) * 600, created);
    sb_printf(b,
              "{%s\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"%llu\","
              "\"creationTimestamp\":\"%s\",",
              watch ? "\"kind\":\"Node\",\"apiVersion\":\"v1\"," : "", name, id,
              watch ? (unsigned long long)m->rv : 1000000ull + i, created);
    emit_node_labels(b, m, i, &r);
    sb_printf(b,
              ",\"annotations\":{\"alpha.kubernetes.io/provided-node-ip\":\"10.%zu.%zu.%zu\","
              "\"csi.volume.kubernetes.io/nodeid\":\"{\\\"ebs.csi.aws.com\\\":\\\"i-0%zx\\\"}\","
              "\"node.alpha.kubernetes.io/ttl\":\"0\",\"volumes.kubernetes.io/"
              "controller-managed-attach-detach\":\"true\"}},\"spec\":{\"podCIDR\":\"10.%zu.%zu.0/"
              "24\",\"podCIDRs\":[\"10.%zu.%zu.0/24\"],\"providerID\":\"aws:///%s/i-0%zx\"",
              64 + (i >> 16), (i >> 8) & 255, i & 255, 0x5a0000 + i, 128 + (i >> 8), i & 255,
              128 + (i >> 8), i & 255, zones[i % 3], 0x5a0000 + i);
    if (n->cordoned)
        sb_add(b, ",\"unschedulable\":true");
    if (n->gpu || n->cordoned || n->not_ready) {
        const char *sep = "";

        sb_add(b, ",\"taints\":[");
        if (n->gpu) {
            sb_add(b, "{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":"
                      "\"NoSchedule\"}");
            sep = ",";
        }
        if (n->cordoned) {
            sb_printf(b,
                      "%s{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":"
                      "\"NoSchedule\",\"timeAdded\":\"2024-05-01T09:00:00Z\"}",
                      sep);
            sep = ",";
        }
        if (n->not_ready)
            sb_printf(b,
                      "%s{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoSchedule\","
                      "\"timeAdded\":\"2024-05-01T09:30:00Z\"},{\"key\":\"node.kubernetes.io/"
                      "unreachable\",\"effect\":\"NoExecute\",\"timeAdded\":"
                      "\"2024-05-01T09:30:05Z\"}",
                      sep);
        sb_add(b, "]");
    }
    sb_add(b, "}");
    emit_node_status(b, m, i, &r);
}

/* Three variables; a rich container (every third) has five more. */
static void emit_env(struct sb *b, const char *app, bool gpu, bool rich)
{
    sb_add(b, "\"env\":[{\"name\":\"APP_ENV\",\"value\":\"production\"},{\"name\":\"POD_NAME\","
              "\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
              "\"metadata.name\"}}},{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{"
              "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}}");
    if (rich)
        sb_printf(b,
                  ",{\"name\":\"DB_PASSWORD\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
                  "\"%s-db\",\"key\":\"password\"}}},{\"name\":\"LOG_LEVEL\",\"value\":\"info\"},"
                  "{\"name\":\"POD_IP\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
                  "\"fieldPath\":\"status.podIP\"}}},{\"name\":\"OTEL_EXPORTER_OTLP_ENDPOINT\","
                  "\"value\":\"http://otel-collector.observability:4317\"},{\"name\":"
                  "\"GOMAXPROCS\",\"value\":\"2\"}",
                  app);
    sb_add(b, gpu ? ",{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"}]" : "]");
}

/* The main container of a pod or pod template; a rich one has ports, probes, a config volume,
 * a security context and more variables. */
static void emit_container(struct sb *b, const char *app, const char *image, bool gpu, bool rich,
                           const char *api_volume)
{
    const char *g = gpu ? ",\"nvidia.com/gpu\":\"1\"" : "";

    sb_printf(b, "{\"name\":\"%s\",\"image\":\"%s\",%s", app, image,
              rich ? "\"args\":[\"--port=8080\"],\"ports\":[{\"name\":\"http\",\"containerPort\":"
                     "8080,\"protocol\":\"TCP\"}],"
                   : "");
    emit_env(b, app, gpu, rich);
    sb_printf(b,
              ",\"resources\":{\"limits\":{\"cpu\":\"%s\",\"memory\":\"%s\"%s},\"requests\":{"
              "\"cpu\":\"%s\",\"memory\":\"%s\"%s}},\"volumeMounts\":[%s%s%s%s%s],%s"
              "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":"
              "\"File\",\"imagePullPolicy\":\"IfNotPresent\"}",
              gpu ? "8" : "2", gpu ? "64Gi" : "4Gi", g, gpu ? "4" : "500m", gpu ? "48Gi" : "1Gi", g,
              rich ? "{\"name\":\"config\",\"readOnly\":true,\"mountPath\":\"/etc/app\"}" : "",
              rich && api_volume ? "," : "", api_volume ? "{\"name\":\"" : "",
              api_volume ? api_volume : "",
              api_volume ? "\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/"
                           "serviceaccount\"}"
                         : "",
              rich ? "\"livenessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":8080,"
                     "\"scheme\":\"HTTP\"},\"initialDelaySeconds\":10,\"timeoutSeconds\":1,"
                     "\"periodSeconds\":10,\"successThreshold\":1,\"failureThreshold\":3},"
                     "\"readinessProbe\":{\"httpGet\":{\"path\":\"/ready\",\"port\":8080,"
                     "\"scheme\":\"HTTP\"},\"timeoutSeconds\":1,\"periodSeconds\":5,"
                     "\"successThreshold\":1,\"failureThreshold\":3},\"securityContext\":{"
                     "\"capabilities\":{\"drop\":[\"ALL\"]},\"readOnlyRootFilesystem\":true,"
                     "\"allowPrivilegeEscalation\":false},"
                   : "");
}

static const char *const sidecar =
    "{\"name\":\"log-shipper\",\"image\":\"fluent/fluent-bit:3.0.4\",\"resources\":{\"limits\":{"
    "\"cpu\":\"100m\",\"memory\":\"128Mi\"},\"requests\":{\"cpu\":\"20m\",\"memory\":\"64Mi\"}},"
    "\"volumeMounts\":[{\"name\":\"varlog\",\"mountPath\":\"/var/log/app\"}],"
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\","
    "\"imagePullPolicy\":\"IfNotPresent\"}";

static const char *const base_tolerations =
    "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
    "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}";

static const char *const gpu_toleration =
    "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}";

/* A rich pod (every third) carries the full set of recommended labels and some annotations. */
static void emit_pod_meta(struct sb *b, const struct model *m, size_t i, bool watch, struct rng *r,
                          char app[64])
{
    const struct gpod *p = &m->pods[i];
    bool gpu = is_gpu_pod(i), rich = i % 3 == 0;
    char id[37], owner_id[37], created[32], rs[11], sfx[6], sum[65], ns[64];

    owner_name(gpu, p->owner, app);
    suffix(mix(p->owner + (gpu ? 1000000u : 0u)), rs, 10);
    suffix(i, sfx, 5);
    uid(r, id);
    uid(r, owner_id);
    hex(r, sum, 64);
    stamp(-(long)(i % 100000) * 7, created);
    sb_printf(b,
              "{%s\"metadata\":{\"name\":\"%s-%s-%s\",\"generateName\":\"%s-%s-\",\"namespace\":"
              "\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"%llu\",\"creationTimestamp\":\"%s\","
              "\"labels\":{\"app.kubernetes.io/name\":\"%s\",\"pod-template-hash\":\"%s\","
              "\"team\":\"%s\",\"release\":\"r%u\"",
              watch ? "\"kind\":\"Pod\",\"apiVersion\":\"v1\"," : "", app, rs, sfx, app, rs,
              owner_ns(gpu, p->owner, ns), id, watch ? m->rv : 20000000ull + i, created, app, rs,
              gpu ? "ml" : apps[p->owner % COUNT(apps)], p->label_gen);
    if (rich)
        sb_printf(b,
                  ",\"app.kubernetes.io/instance\":\"%s-prod\",\"app.kubernetes.io/component\":"
                  "\"%s\",\"app.kubernetes.io/part-of\":\"%s\",\"app.kubernetes.io/managed-by\":"
                  "\"Helm\",\"app.kubernetes.io/version\":\"1.%u.%u\",\"env\":\"prod\"},"
                  "\"annotations\":{\"kubectl.kubernetes.io/restartedAt\":"
                  "\"2024-04-30T08:00:00Z\",\"prometheus.io/scrape\":\"true\",\"prometheus.io/"
                  "port\":\"9090\",\"checksum/config\":\"%s\"",
                  app, gpu ? "inference" : comps[(p->owner / COUNT(apps)) % 8],
                  gpu ? "ml-platform" : apps[p->owner % COUNT(apps)], p->owner % 30,
                  p->label_gen % 10, sum);
    sb_printf(b,
              "},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
              "\"name\":\"%s-%s\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":"
              "true}]},",
              app, rs, owner_id);
}

static void emit_pod_status(struct sb *b, const struct model *m, size_t i, struct rng *r,
                            const char *app, const char *image)
{
    const struct gpod *p = &m->pods[i];
    static const char *const conds[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                        "ContainersReady", "PodScheduled"};
    char t[32], h[65], h2[65];
    size_t n = (size_t)p->node;

    stamp(-(long)(i % 100000) * 7 + 5, t);
    if (p->node < 0) {
        sb_printf(b,
                  "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                  "\"status\":\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":\"%s\","
                  "\"reason\":\"Unschedulable\",\"message\":\"0/%zu nodes are available: %zu "
                  "Insufficient nvidia.com/gpu, %zu node(s) didn't match Pod's node "
                  "affinity/selector. preemption: 0/%zu nodes are available: %zu No preemption "
                  "victims found for incoming pod, %zu Preemption is not helpful for "
                  "scheduling.\"}],\"qosClass\":\"Burstable\"}}",
                  t, m->n_nodes, m->n_gpu_nodes, m->n_nodes - m->n_gpu_nodes, m->n_nodes,
                  m->n_gpu_nodes, m->n_nodes - m->n_gpu_nodes);
        return;
    }
    hex(r, h, 64);
    hex(r, h2, 64);
    sb_add(b, "\"status\":{\"phase\":\"Running\",\"conditions\":[");
    for (size_t k = 0; k < COUNT(conds); k++)
        sb_printf(b,
                  "%s{\"type\":\"%s\",\"status\":\"True\",\"lastProbeTime\":null,"
                  "\"lastTransitionTime\":\"%s\"}",
                  k ? "," : "", conds[k], t);
    sb_printf(b,
              "],\"hostIP\":\"10.%zu.%zu.%zu\",\"hostIPs\":[{\"ip\":\"10.%zu.%zu.%zu\"}],"
              "\"podIP\":\"10.%zu.%zu.%zu\",\"podIPs\":[{\"ip\":\"10.%zu.%zu.%zu\"}],"
              "\"startTime\":\"%s\",\"containerStatuses\":[{\"name\":\"%s\",\"state\":{"
              "\"running\":{\"startedAt\":\"%s\"}},\"lastState\":{},\"ready\":true,"
              "\"restartCount\":%u,\"image\":\"%s\",\"imageID\":\"%s@sha256:%s\","
              "\"containerID\":\"containerd://%s\",\"started\":true}],\"qosClass\":"
              "\"Burstable\"}}",
              64 + (n >> 16), (n >> 8) & 255, n & 255, 64 + (n >> 16), (n >> 8) & 255, n & 255,
              128 + (i >> 16), (i >> 8) & 255, i & 255, 128 + (i >> 16), (i >> 8) & 255, i & 255, t,
              app, t, p->label_gen % 3, image, image, h, h2);
}

static void emit_pod(struct sb *b, const struct model *m, size_t i, bool watch)
{
    const struct gpod *p = &m->pods[i];
    struct rng r = rng_for(3, i);
    bool gpu = is_gpu_pod(i), side = !gpu && i % 5 == 1, rich = i % 3 == 0;
    char app[64], image[160], vol[40], sfx[6], node[64], config[160] = "";

    emit_pod_meta(b, m, i, watch, &r, app);
    suffix(rnd(&r), sfx, 5);
    snprintf(vol, sizeof(vol), "kube-api-access-%s", sfx);
    if (gpu)
        snprintf(image, sizeof(image), "nvcr.io/nvidia/%s:24.03-py3",
                 p->owner % 2 ? "tritonserver" : "pytorch");
    else
        snprintf(image, sizeof(image), "registry.example.com/%s/%s:v1.%u.%u",
                 apps[p->owner % COUNT(apps)], comps[(p->owner / COUNT(apps)) % 8], p->owner % 30,
                 (unsigned)(i % 7));
    if (rich)
        snprintf(config, sizeof(config),
                 "{\"name\":\"config\",\"configMap\":{\"name\":\"%s-config\",\"defaultMode\":"
                 "420}},",
                 app);
    sb_printf(b,
              "\"spec\":{\"volumes\":[%s%s{\"name\":\"%s\",\"projected\":{\"sources\":[{"
              "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{"
              "\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\","
              "\"path\":\"ca.crt\"}]}},{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\","
              "\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}]}}],"
              "\"defaultMode\":420}}],\"containers\":[",
              config, side ? "{\"name\":\"varlog\",\"emptyDir\":{}}," : "", vol);
    emit_container(b, app, image, gpu, rich, vol);
    if (side)
        sb_printf(b, ",%s", sidecar);
    sb_printf(b,
              "],\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,"
              "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"%s\",\"serviceAccount\":"
              "\"%s\",",
              app, app);
    if (p->node >= 0) {
        node_name((size_t)p->node, node);
        sb_printf(b, "\"nodeName\":\"%s\",", node);
    }
    if (gpu)
        sb_add(b, "\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\"},");
    if (rich)
        sb_add(b, "\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":1000,\"fsGroup\":"
                  "2000},");
    sb_printf(b,
              "\"schedulerName\":\"default-scheduler\",\"tolerations\":[%s%s%s],"
              "\"priorityClassName\":\"%s\",\"priority\":%d,\"enableServiceLinks\":true,"
              "\"preemptionPolicy\":\"%s\"},",
              base_tolerations, gpu ? "," : "", gpu ? gpu_toleration : "",
              gpu ? (p->owner % 3 ? "gpu-training" : "gpu-inference") : "default",
              gpu ? (p->owner % 3 ? 10000 : 100000) : 0,
              gpu && p->owner % 3 ? "Never" : "PreemptLowerPriority");
    emit_pod_status(b, m, i, &r, app, image);
}

static void emit_class(struct sb *b, const struct model *m, size_t i, bool watch)
{
    static const struct {
        const char *name;
        long value;
        bool never, dflt;
    } classes[] = {{"system-cluster-critical", 2000000000, false, false},
                   {"system-node-critical", 2000001000, false, false},
                   {"gpu-inference", 100000, false, false},
                   {"gpu-training", 10000, true, false},
                   {"batch-low", -10, true, false},
                   {"default", 0, false, true}};
    struct rng r = rng_for(4, i);
    char id[37];

    (void)m;
    (void)watch;
    uid(&r, id);
    sb_printf(b,
              "{\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"%zu\","
              "\"creationTimestamp\":\"2024-01-10T08:00:00Z\"},\"value\":%ld,\"globalDefault\":"
              "%s,\"description\":\"%s priority\",\"preemptionPolicy\":\"%s\"}",
              classes[i].name, id, 300 + i, classes[i].value, classes[i].dflt ? "true" : "false",
              classes[i].name, classes[i].never ? "Never" : "PreemptLowerPriority");
}

#define N_CLASSES 6

static void emit_deployment(struct sb *b, const struct model *m, size_t i, bool watch)
{
    bool gpu = i < GPU_DEPLOYMENTS;
    unsigned w = (unsigned)(gpu ? i : i - GPU_DEPLOYMENTS);
    size_t replicas = gpu ? m->gpu_deploy_replicas[w] : CPU_PODS_PER_OWNER;
    struct rng r = rng_for(5, i);
    char app[64], id[37], image[160], ns[64];

    (void)watch;
    owner_name(gpu, w, app);
    uid(&r, id);
    if (gpu)
        snprintf(image, sizeof(image), "nvcr.io/nvidia/%s:24.03-py3",
                 w % 2 ? "tritonserver" : "pytorch");
    else
        snprintf(image, sizeof(image), "registry.example.com/%s/%s:v1.%u.0", apps[w % COUNT(apps)],
                 comps[(w / COUNT(apps)) % 8], w % 30);
    sb_printf(b,
              "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
              "\"resourceVersion\":\"%zu\",\"generation\":4,\"creationTimestamp\":"
              "\"2024-03-01T08:00:00Z\",\"labels\":{\"app.kubernetes.io/name\":\"%s\"},"
              "\"annotations\":{\"deployment.kubernetes.io/revision\":\"4\"}},\"spec\":{"
              "\"replicas\":%zu,\"selector\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"%s\"}},"
              "\"template\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"%s\"}},"
              "\"spec\":{\"containers\":[",
              app, owner_ns(gpu, w, ns), id, 5000000 + i, app, replicas, app, app);
    emit_container(b, app, image, gpu, true, NULL);
    sb_printf(b,
              "],\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,"
              "\"dnsPolicy\":\"ClusterFirst\",%s\"schedulerName\":\"default-scheduler\","
              "\"tolerations\":[%s],\"priorityClassName\":\"%s\"}},\"strategy\":{\"type\":"
              "\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":\"25%%\",\"maxSurge\":"
              "\"25%%\"}},\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600},"
              "\"status\":{\"observedGeneration\":4,\"replicas\":%zu,\"updatedReplicas\":%zu,"
              "\"readyReplicas\":%zu,\"availableReplicas\":%zu}}",
              gpu ? "\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\"}," : "",
              gpu ? gpu_toleration : "",
              gpu ? (w % 3 ? "gpu-training" : "gpu-inference") : "default", replicas, replicas,
              replicas, replicas);
}

/* ---- list pages and watch lines ---- */

struct span {
    size_t off, len;
    enum cluster_kind kind;
};

struct spans {
    struct arena buf;
    struct span *v;
    size_t n, cap;
    char *scratch; /* the longest span plus YYJSON_PADDING_SIZE: a page copied to be read in place,
                      as kube.c reads its body buffer; allocated before anything is measured */
};

static void spans_add(struct spans *s, const struct sb *b, enum cluster_kind k)
{
    struct span *grown;

    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        if ((grown = realloc(s->v, s->cap * sizeof(*s->v))) == NULL)
            die("out of memory");
        s->v = grown;
    }
    s->v[s->n].off = arena_add(&s->buf, b->p, b->len);
    s->v[s->n].len = b->len;
    s->v[s->n++].kind = k;
}

/* Allocates s->scratch (touched, so that it is resident before the RSS readings). */
static void spans_scratch(struct spans *s)
{
    size_t max = 0;

    for (size_t i = 0; i < s->n; i++)
        max = s->v[i].len > max ? s->v[i].len : max;
    if ((s->scratch = malloc(max + YYJSON_PADDING_SIZE)) == NULL)
        die("out of memory");
    memset(s->scratch, 0, max + YYJSON_PADDING_SIZE);
}

static void spans_free(struct spans *s)
{
    arena_free(&s->buf);
    free(s->scratch);
    s->scratch = NULL;
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

typedef void (*emit_fn)(struct sb *, const struct model *, size_t, bool);

/* n items of kind k as list pages: metadata.continue on every page but the last. */
static void add_list(struct spans *pages, struct sb *b, const struct model *m, enum cluster_kind k,
                     const char *list_kind, const char *api, size_t n, emit_fn emit)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    struct rng r = rng_for(6, (size_t)k);
    char cont[121];

    for (size_t start = 0; start == 0 || start < n; start += PAGE_ITEMS) {
        b->len = 0;
        for (size_t c = 0; c < sizeof(cont) - 1; c++)
            cont[c] = b64[below(&r, sizeof(b64) - 1)];
        cont[sizeof(cont) - 1] = '\0';
        sb_printf(b,
                  "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":"
                  "\"%llu\"%s%s%s},\"items\":[",
                  list_kind, api, m->rv, start + PAGE_ITEMS < n ? ",\"continue\":\"" : "",
                  start + PAGE_ITEMS < n ? cont : "", start + PAGE_ITEMS < n ? "\"" : "");
        for (size_t i = start; i < n && i < start + PAGE_ITEMS; i++) {
            if (i > start)
                sb_add(b, ",");
            emit(b, m, i, false);
        }
        sb_add(b, "]}\n");
        spans_add(pages, b, k);
    }
}

static void make_pages(struct spans *pages, struct model *m)
{
    struct sb b = {NULL, 0, 0};

    add_list(pages, &b, m, CLUSTER_NODES, "NodeList", "v1", m->n_nodes, emit_node);
    add_list(pages, &b, m, CLUSTER_PODS, "PodList", "v1", m->n_pods, emit_pod);
    add_list(pages, &b, m, CLUSTER_PRIORITYCLASSES, "PriorityClassList", "scheduling.k8s.io/v1",
             N_CLASSES, emit_class);
    add_list(pages, &b, m, CLUSTER_DEPLOYMENTS, "DeploymentList", "apps/v1",
             GPU_DEPLOYMENTS + CPU_DEPLOYMENTS, emit_deployment);
    free(b.p);
}

/* A GPU node with a free GPU other than not_this, or -1. */
static int free_gpu_node(const struct model *m, struct rng *r, int not_this)
{
    for (unsigned tries = 0; tries < 256; tries++) {
        size_t n = m->gpu_nodes[below(r, (unsigned)m->n_gpu_nodes)];

        if ((int)n != not_this && m->nodes[n].gpus_used < GPUS_PER_NODE)
            return (int)n;
    }
    return -1;
}

/* Watch events as the stream delivers them, one line each: 45% CPU pods updated (the view skips
 * them), 25% GPU pods relabeled, 10% GPU pods bound or moved to another GPU node, 20% nodes
 * updated (status heartbeats; one in five also changes a label). */
static void make_events(struct spans *lines, struct model *m, size_t count)
{
    struct sb b = {NULL, 0, 0};
    struct rng r = rng_for(7, 0);
    size_t n_gpu_pods = (m->n_pods + GPU_POD_EVERY - 1) / GPU_POD_EVERY;

    for (size_t e = 0; e < count; e++) {
        unsigned what = below(&r, 100);
        enum cluster_kind k = CLUSTER_PODS;
        size_t i;

        m->rv++;
        b.len = 0;
        sb_add(&b, "{\"type\":\"MODIFIED\",\"object\":");
        if (what < 45) {
            do
                i = below(&r, (unsigned)m->n_pods);
            while (is_gpu_pod(i));
            m->pods[i].label_gen++;
            emit_pod(&b, m, i, true);
        } else if (what < 80) {
            struct gpod *p;

            i = below(&r, (unsigned)n_gpu_pods) * GPU_POD_EVERY;
            p = &m->pods[i];
            if (what < 70) {
                p->label_gen++;
            } else {
                int to = free_gpu_node(m, &r, p->node);

                if (to >= 0) {
                    if (p->node >= 0)
                        m->nodes[p->node].gpus_used--;
                    m->nodes[to].gpus_used++;
                    p->node = to;
                }
            }
            emit_pod(&b, m, i, true);
        } else {
            k = CLUSTER_NODES;
            i = below(&r, (unsigned)m->n_nodes);
            m->nodes[i].beats++;
            if (below(&r, 5) == 0)
                m->nodes[i].label_gen++;
            emit_node(&b, m, i, true);
        }
        sb_add(&b, "}\n");
        spans_add(lines, &b, k);
    }
    free(b.p);
}

/* ---- measurements ---- */

struct bench {
    double scale;
    int reps, calls;
    bool callgrind; /* --callgrind: count instructions of the decisions, measure nothing else */
    struct model m;
    struct spans pages, events;
    size_t page_bytes;
    struct cluster_config cfg;
};

/* Span i read as kube.c reads it: a list page copied into a padded buffer and read in place
 * (insitu; the copy stands for curl's write into kube.c's body buffer), a watch line read from
 * where it lies. Depth capped as kube.c caps it. */
static yyjson_doc *parse(const struct spans *s, size_t i, bool insitu)
{
    struct diag d;
    yyjson_doc *doc;
    const char *p = s->buf.p + s->v[i].off;

    if (insitu) {
        memcpy(s->scratch, p, s->v[i].len);
        memset(s->scratch + s->v[i].len, 0, YYJSON_PADDING_SIZE);
        p = s->scratch;
    }
    diag_clear(&d);
    doc = json_read(p, s->v[i].len, insitu ? JSON_READ_INSITU : 0, REVIEW_DEPTH_MAX, NULL, &d);
    if (doc == NULL) {
        fprintf(stderr, "bench_view: generated JSON does not parse: %s\n", d.msg);
        exit(1);
    }
    return doc;
}

/* The baseline: yyjson's bare parse of the span (yyjson_read_opts, with its own copy of the
 * bytes: no checks, not in place), then freeing it. Seconds. */
static double time_bare(const struct spans *s, size_t i)
{
    double t0 = now_s();
    yyjson_doc *doc = yyjson_read_opts(s->buf.p + s->v[i].off, s->v[i].len, 0, NULL, NULL);

    if (doc == NULL)
        die("generated JSON does not parse");
    yyjson_doc_free(doc);
    return now_s() - t0;
}

/* The view's path for one list page, as kube.c takes it: copy, read in place (with json_read's
 * checks), the items into the view, the page freed. */
static double time_list_page(struct cluster *c, const struct spans *s, size_t i)
{
    double t0 = now_s();
    yyjson_doc *root = parse(s, i, true);
    struct diag d;

    diag_clear(&d);
    if (cluster_list_items(c, s->v[i].kind, yyjson_obj_get(yyjson_doc_get_root(root), "items"),
                           &d) < 0) {
        fprintf(stderr, "bench_view: list page %zu: %s\n", i, d.msg);
        exit(1);
    }
    yyjson_doc_free(root);
    return now_s() - t0;
}

/* The view's path for one watch line, as kube.c takes it (a whole line in curl's chunk: read
 * where it lies). */
static double time_event(struct cluster *c, const struct spans *s, size_t i)
{
    double t0 = now_s();
    yyjson_doc *ev = parse(s, i, false);
    const char *type = json_get_str(yyjson_doc_get_root(ev), "type");
    struct diag d;

    diag_clear(&d);
    if (type == NULL || cluster_apply(c, s->v[i].kind, type,
                                      yyjson_obj_get(yyjson_doc_get_root(ev), "object"), &d) < 0) {
        fprintf(stderr, "bench_view: watch line %zu: %s\n", i, d.msg);
        exit(1);
    }
    yyjson_doc_free(ev);
    return now_s() - t0;
}

struct list_result {
    double view_rate, bare_rate, ratio; /* all kinds: bytes/s, medians */
    double kind_ratio[CLUSTER_KINDS];   /* per kind, median of per-rep ratios */
    double kind_view_rate[CLUSTER_KINDS], kind_bare_rate[CLUSTER_KINDS], kind_bytes[CLUSTER_KINDS];
    double first_s; /* the view's time in the first rep, the one that loads the kept view */
};

struct memory_result {
    size_t rss_delta, trimmed_delta, heap_delta, input_bytes;
};

/* One rep of (a): a whole list of every kind into view c, each page parsed bare and taken by the
 * view back to back, in an order that alternates, so both see the same caches and the same
 * noise. Adds seconds per kind to tv (the view) and tb (the bare parse). */
static void list_rep(const struct bench *B, struct cluster *c, int rep, double *tv, double *tb)
{
    double t0 = now_s();

    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_begin(c, (enum cluster_kind)k);
    tv[CLUSTER_NODES] += now_s() - t0;
    for (size_t i = 0; i < B->pages.n; i++) {
        enum cluster_kind k = B->pages.v[i].kind;

        if ((i + (size_t)rep) % 2) {
            tb[k] += time_bare(&B->pages, i);
            tv[k] += time_list_page(c, &B->pages, i);
        } else {
            tv[k] += time_list_page(c, &B->pages, i);
            tb[k] += time_bare(&B->pages, i);
        }
    }
    t0 = now_s();
    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_end(c, (enum cluster_kind)k);
    tv[CLUSTER_PODS] += now_s() - t0;
}

static double sum(const double *v, size_t n)
{
    double s = 0;

    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* (a) and (c). The first rep loads keep, the view the later measurements use, with RSS read
 * before and after (c): the pages live in a mapping of their own, resident at both readings, so
 * they cancel out as if they had been freed; the bare parses free all they allocate. The other
 * reps each list into a new, empty view. The ratio of a rep pairs times taken milliseconds
 * apart; the median over reps is the figure. */
static void measure_list(const struct bench *B, struct cluster *keep, struct list_result *out,
                         struct memory_result *mem)
{
    int reps = B->reps;
    double *view = calloc((size_t)reps, sizeof(double));
    double *bare = calloc((size_t)reps, sizeof(double));
    double *ratio = calloc((size_t)reps, sizeof(double));
    double *kr = calloc((size_t)reps * CLUSTER_KINDS, sizeof(double));
    double *kv = calloc((size_t)reps * CLUSTER_KINDS, sizeof(double));
    double *kb = calloc((size_t)reps * CLUSTER_KINDS, sizeof(double));
    size_t rss0 = 0, rss1, rss2, heap0 = 0, heap1;

    if (!view || !bare || !ratio || !kr || !kv || !kb)
        die("out of memory");
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < B->pages.n; i++)
        out->kind_bytes[B->pages.v[i].kind] += (double)B->pages.v[i].len;
    for (int rep = 0; rep < reps; rep++) {
        struct cluster *c = rep == 0 ? keep : cluster_new(&B->cfg);
        double tv[CLUSTER_KINDS] = {0}, tb[CLUSTER_KINDS] = {0}, v, b;

        if (c == NULL)
            die("cluster_new failed");
        if (rep == 0) {
            malloc_trim(0);
            rss0 = rss_bytes();
            heap0 = heap_in_use();
        }
        list_rep(B, c, rep, tv, tb);
        if (rep == 0) {
            rss1 = rss_bytes();
            heap1 = heap_in_use();
            malloc_trim(0);
            rss2 = rss_bytes();
            mem->rss_delta = rss1 > rss0 ? rss1 - rss0 : 0;
            mem->trimmed_delta = rss2 > rss0 ? rss2 - rss0 : 0;
            mem->heap_delta = heap1 > heap0 ? heap1 - heap0 : 0;
            mem->input_bytes = B->page_bytes;
        } else {
            cluster_free(c);
        }
        v = sum(tv, CLUSTER_KINDS);
        b = sum(tb, CLUSTER_KINDS);
        if (rep == 0)
            out->first_s = v;
        view[rep] = (double)B->page_bytes / v;
        bare[rep] = (double)B->page_bytes / b;
        ratio[rep] = b / v;
        for (int k = 0; k < CLUSTER_KINDS; k++) {
            kr[k * reps + rep] = tv[k] > 0 ? tb[k] / tv[k] : 0;
            kv[k * reps + rep] = tv[k] > 0 ? out->kind_bytes[k] / tv[k] : 0;
            kb[k * reps + rep] = tb[k] > 0 ? out->kind_bytes[k] / tb[k] : 0;
        }
        fprintf(stderr, "  list rep %d/%d: view %.1f MB/s, bare parse %.1f MB/s, ratio %.3f\n",
                rep + 1, reps, view[rep] / 1e6, bare[rep] / 1e6, ratio[rep]);
    }
    out->view_rate = quantile(view, (size_t)reps, 0.5);
    out->bare_rate = quantile(bare, (size_t)reps, 0.5);
    out->ratio = quantile(ratio, (size_t)reps, 0.5);
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        out->kind_ratio[k] = quantile(kr + k * reps, (size_t)reps, 0.5);
        out->kind_view_rate[k] = quantile(kv + k * reps, (size_t)reps, 0.5);
        out->kind_bare_rate[k] = quantile(kb + k * reps, (size_t)reps, 0.5);
    }
    free(view);
    free(bare);
    free(ratio);
    free(kr);
    free(kv);
    free(kb);
}

struct watch_result {
    double view_rate, bare_rate, ratio; /* events/s, medians */
    double bytes;
};

/* (b) Slices of CHUNK_LINES lines, parsed bare and applied in alternating order; the view is the
 * full one (c), so an event costs what it costs against 5,000 nodes and 150,000 pods. */
static void measure_watch(const struct bench *B, struct cluster *c, struct watch_result *out)
{
    int reps = B->reps;
    double *view = calloc((size_t)reps, sizeof(double)),
           *bare = calloc((size_t)reps, sizeof(double));
    double *ratio = calloc((size_t)reps, sizeof(double));
    const struct spans *s = &B->events;

    if (!view || !bare || !ratio)
        die("out of memory");
    out->bytes = (double)s->buf.len;
    for (int rep = 0; rep < reps; rep++) {
        double tv = 0, tb = 0;

        for (size_t start = 0; start < s->n; start += CHUNK_LINES) {
            size_t end = start + CHUNK_LINES < s->n ? start + CHUNK_LINES : s->n;
            bool bare_first = (start / CHUNK_LINES + (size_t)rep) % 2;

            for (int pass = 0; pass < 2; pass++) {
                bool do_bare = (pass == 0) == bare_first;

                for (size_t i = start; i < end; i++) {
                    if (do_bare)
                        tb += time_bare(s, i);
                    else
                        tv += time_event(c, s, i);
                }
            }
        }
        view[rep] = (double)s->n / tv;
        bare[rep] = (double)s->n / tb;
        ratio[rep] = tb / tv;
        fprintf(stderr, "  watch rep %d/%d: view %.0f events/s, bare parse %.0f/s, ratio %.3f\n",
                rep + 1, reps, view[rep], bare[rep], ratio[rep]);
    }
    out->view_rate = quantile(view, (size_t)reps, 0.5);
    out->bare_rate = quantile(bare, (size_t)reps, 0.5);
    out->ratio = quantile(ratio, (size_t)reps, 0.5);
    free(view);
    free(bare);
    free(ratio);
}

struct judge_result {
    double p50, p99, base_p50, base_p99, max;
    struct capacity_result last;
    size_t nodes, labels_bytes;
};

/* Labels of every node, copied as the view keeps them (json_keep: a document each), for the
 * baseline scan; *bytes is what the copies take from malloc, to show how much of the view's
 * memory is node labels. */
static yyjson_doc **node_labels(const struct bench *B, size_t *n, size_t *bytes)
{
    yyjson_doc **out = calloc(B->m.n_nodes, sizeof(*out)), *root;
    yyjson_val *it;
    size_t i, max, k = 0, before;

    if (out == NULL)
        die("out of memory");
    for (size_t p = 0; p < B->pages.n; p++) {
        if (B->pages.v[p].kind != CLUSTER_NODES)
            continue;
        root = parse(&B->pages, p, true);
        yyjson_arr_foreach (yyjson_obj_get(yyjson_doc_get_root(root), "items"), i, max, it) {
            if (k == B->m.n_nodes)
                break;
            before = heap_in_use();
            out[k++] = json_keep(yyjson_obj_get(yyjson_obj_get(it, "metadata"), "labels"));
            *bytes += heap_in_use() - before;
        }
        yyjson_doc_free(root);
    }
    *n = k;
    return out;
}

/* The template of (d) as a document (yyjson_doc_free()). */
static yyjson_doc *template_doc(const char *text)
{
    struct diag d;
    yyjson_doc *doc;

    diag_clear(&d);
    if ((doc = json_read(text, strlen(text), 0, REVIEW_DEPTH_MAX, NULL, &d)) == NULL)
        die("a template does not parse");
    return doc;
}

/* The template of (d), a typical GPU workload: nodeSelector, GPU toleration, 1 GPU. */
static const char judge_tmpl[] =
    "{\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\"},\"tolerations\":[{\"key\":"
    "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
    "\"priorityClassName\":\"gpu-inference\",\"containers\":[{\"name\":\"server\","
    "\"image\":\"nvcr.io/nvidia/tritonserver:24.03-py3\",\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"1\",\"cpu\":\"8\",\"memory\":\"64Gi\"},\"requests\":{\"cpu\":\"4\","
    "\"memory\":\"48Gi\"}}}]}";

/* (d) One decision for a typical GPU workload; the baseline reads one label of every node (the
 * least any scan of the nodes does), timed next to it in alternating order. */
static void measure_judge(const struct bench *B, struct cluster *c, struct judge_result *out)
{
    char glob[] = "nvidia.com/gpu";
    char *globs_v[] = {glob};
    struct strlist globs = {globs_v, 1};
    yyjson_doc *spec = template_doc(judge_tmpl), **labels;
    struct capacity_request rq = {yyjson_doc_get_root(spec), &globs, 8, 16, 0, 0, 0};
    double *tj = calloc((size_t)B->calls, sizeof(double));
    double *tb = calloc((size_t)B->calls, sizeof(double));
    volatile size_t sink = 0;
    size_t n_labels;

    if (spec == NULL || tj == NULL || tb == NULL)
        die("out of memory");
    out->labels_bytes = 0;
    labels = node_labels(B, &n_labels, &out->labels_bytes);
    out->nodes = n_labels;
    for (int i = 0; i < WARMUP_CALLS; i++)
        capacity_judge(c, &rq, &out->last);
    for (int i = 0; i < B->calls; i++) {
        for (int pass = 0; pass < 2; pass++) {
            double t0 = now_s();

            if ((pass == 0) == (i % 2 == 0)) {
                if (capacity_judge(c, &rq, &out->last) < 0)
                    die("capacity_judge failed");
                tj[i] = now_s() - t0;
            } else {
                size_t hits = 0;

                for (size_t k = 0; k < n_labels; k++)
                    hits += yyjson_obj_get(yyjson_doc_get_root(labels[k]),
                                           "nvidia.com/gpu.present") != NULL;
                sink += hits;
                tb[i] = now_s() - t0;
            }
        }
    }
    (void)sink;
    out->p50 = quantile(tj, (size_t)B->calls, 0.5) * 1e6;
    out->p99 = quantile(tj, (size_t)B->calls, 0.99) * 1e6;
    out->max = tj[B->calls - 1] * 1e6;
    out->base_p50 = quantile(tb, (size_t)B->calls, 0.5) * 1e6;
    out->base_p99 = quantile(tb, (size_t)B->calls, 0.99) * 1e6;
    for (size_t k = 0; k < n_labels; k++)
        yyjson_doc_free(labels[k]);
    free(labels);
    free(tj);
    free(tb);
    yyjson_doc_free(spec);
}

/* (e) The decision of (d) while FULL_JOBS single-pod Jobs (at scale 1) wait Pending, each
 * with its Job record and its Pending pod, and JOB_RESERVATIONS admissions are reserved: the
 * decision reads the view's groups of waiters (one here: one template) and looks each
 * reservation's workload up once, instead of walking the waiters (the cost was 399 us with
 * 20,000 Jobs, 11.9 ms with 120 reservations). Printed as a line of its own. */
#define FULL_JOBS        20000
#define JOB_RESERVATIONS 120
static void measure_jobs(const struct bench *B, struct cluster *c)
{
    char glob[] = "nvidia.com/gpu";
    char *globs_v[] = {glob};
    struct strlist globs = {globs_v, 1};
    yyjson_doc *spec = template_doc(judge_tmpl), *o;
    struct capacity_request rq = {yyjson_doc_get_root(spec), &globs, 8, 16, 0, 0, 0};
    struct capacity_result res;
    size_t n = (size_t)(FULL_JOBS * B->scale + 0.5);
    double *tj = calloc((size_t)B->calls, sizeof(double)), t0;
    struct sb b = {0};
    struct diag d;

    if (spec == NULL || tj == NULL)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        for (int pod = 0; pod < 2; pod++) {
            b.len = 0;
            if (pod == 0)
                sb_printf(&b,
                          "{\"kind\":\"Job\",\"metadata\":{\"name\":\"sweep-%zu\",\"namespace\":"
                          "\"ml-batch\"},\"spec\":{\"parallelism\":1,\"completions\":1,"
                          "\"template\":{\"spec\":%s}}}",
                          i, judge_tmpl);
            else
                sb_printf(&b,
                          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"sweep-%zu-0\",\"namespace\""
                          ":\"ml-batch\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":"
                          "\"sweep-%zu\",\"controller\":true}]},\"spec\":%s,\"status\":{"
                          "\"phase\":\"Pending\"}}",
                          i, i, judge_tmpl);
            o = template_doc(b.p);
            diag_clear(&d);
            if (cluster_apply(c, pod ? CLUSTER_PODS : CLUSTER_JOBS, "ADDED", yyjson_doc_get_root(o),
                              &d) < 0)
                die("cluster_apply failed");
            yyjson_doc_free(o);
        }
    }
    for (int k = 0; k < JOB_RESERVATIONS; k++) {
        struct capacity_request one = {yyjson_doc_get_root(spec), &globs, 1, 1, 0,
                                       (uint64_t)k + 1,           0};

        capacity_reserve(c, &one, 1, 3600);
    }
    for (int i = 0; i < WARMUP_CALLS; i++)
        capacity_judge(c, &rq, &res);
    for (int i = 0; i < B->calls; i++) {
        t0 = now_s();
        if (capacity_judge(c, &rq, &res) < 0)
            die("capacity_judge failed");
        tj[i] = now_s() - t0;
    }
    printf("(e) %zu Pending single-pod Jobs, %d reservations: decision p50 %.1f us, p99 %.1f us "
           "(%lld pods waiting, %lld fit now)\n",
           n, JOB_RESERVATIONS, quantile(tj, (size_t)B->calls, 0.5) * 1e6,
           quantile(tj, (size_t)B->calls, 0.99) * 1e6, (long long)res.waiting_pods,
           (long long)res.fit_now);
    free(b.p);
    free(tj);
    yyjson_doc_free(spec);
}

/* --callgrind: the view as (d) sees it (one list, the watch lines applied once), then --calls
 * decisions with callgrind's instrumentation on around them alone, dumped as "decisions", and
 * as many baseline scans, dumped as "baseline". Instruction counts repeat where wall time does
 * not; tests/bench/callgrind-view.sh runs it and divides. */
static void count_judge(const struct bench *B)
{
    char glob[] = "nvidia.com/gpu";
    char *globs_v[] = {glob};
    struct strlist globs = {globs_v, 1};
    yyjson_doc *spec = template_doc(judge_tmpl), **labels;
    struct capacity_request rq = {yyjson_doc_get_root(spec), &globs, 8, 16, 0, 0, 0};
    struct capacity_result res;
    struct cluster *c = cluster_new(&B->cfg);
    volatile size_t sink = 0;
    size_t n_labels, labels_bytes = 0;

    if (spec == NULL || c == NULL)
        die("out of memory");
    fprintf(stderr, "bench_view: listing the view once, applying the watch lines once...\n");
    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_begin(c, (enum cluster_kind)k);
    for (size_t i = 0; i < B->pages.n; i++)
        time_list_page(c, &B->pages, i);
    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_end(c, (enum cluster_kind)k);
    for (size_t i = 0; i < B->events.n; i++)
        time_event(c, &B->events, i);
    labels = node_labels(B, &n_labels, &labels_bytes);
    for (int i = 0; i < WARMUP_CALLS; i++)
        capacity_judge(c, &rq, &res);
    fprintf(stderr, "bench_view: %d decisions under callgrind%s...\n", B->calls,
            RUNNING_ON_VALGRIND ? "" : " (not running under valgrind: nothing is counted)");
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    for (int i = 0; i < B->calls; i++) {
        if (capacity_judge(c, &rq, &res) < 0)
            die("capacity_judge failed");
    }
    CALLGRIND_DUMP_STATS_AT("decisions");
    for (int i = 0; i < B->calls; i++) {
        size_t hits = 0;

        for (size_t k = 0; k < n_labels; k++)
            hits +=
                yyjson_obj_get(yyjson_doc_get_root(labels[k]), "nvidia.com/gpu.present") != NULL;
        sink += hits;
    }
    CALLGRIND_DUMP_STATS_AT("baseline");
    CALLGRIND_STOP_INSTRUMENTATION;
    (void)sink;
    printf("callgrind: %d decisions, %d baseline scans of %zu nodes; decision: %d eligible nodes, "
           "%lld fit now, %lld fit ever, %lld GPUs\n",
           B->calls, B->calls, n_labels, res.eligible, (long long)res.fit_now,
           (long long)res.fit_ever, (long long)res.total_gpus[0]);
    for (size_t k = 0; k < n_labels; k++)
        yyjson_doc_free(labels[k]);
    free(labels);
    yyjson_doc_free(spec);
    cluster_free(c);
}

/* ---- report ---- */

static void row(const char *metric, const char *value, const char *base, double ratio,
                const char *goal, const char *met)
{
    char r[32] = "-";

    if (ratio >= 0)
        snprintf(r, sizeof(r), "%.3f", ratio);
    printf("%-40s %14s %14s %8s  %-16s %s\n", metric, value, base, r, goal, met);
}

/* v with the given number of decimals, into buf. */
static const char *num(char *buf, size_t len, int decimals, double v)
{
    snprintf(buf, len, "%.*f", decimals, v);
    return buf;
}

/* Counts in the view, from its dump: what the generated data meant to it. */
static void describe_view(struct cluster *c)
{
    yyjson_mut_doc *doc = cluster_dump(c);
    yyjson_mut_val *dump = yyjson_mut_doc_get_root(doc), *pods = yyjson_mut_obj_get(dump, "pods");
    yyjson_mut_val *key, *v;
    size_t i, max, bound = 0;

    if (doc == NULL)
        die("cluster_dump failed");
    yyjson_mut_obj_foreach (pods, i, max, key, v) {
        const char *node = yyjson_mut_get_str(yyjson_mut_obj_get(v, "node"));

        bound += node != NULL && node[0] != '\0';
    }
    printf("view: %zu nodes, %zu GPU pods (%zu bound, %zu pending), %zu priority classes, %zu "
           "GPU workloads\n",
           yyjson_mut_obj_size(yyjson_mut_obj_get(dump, "nodes")), yyjson_mut_obj_size(pods), bound,
           yyjson_mut_obj_size(pods) - bound,
           yyjson_mut_obj_size(yyjson_mut_obj_get(dump, "priorityClasses")),
           yyjson_mut_obj_size(yyjson_mut_obj_get(dump, "workloads")));
    yyjson_mut_doc_free(doc);
}

#define MIB (1024.0 * 1024.0)

static void report(const struct bench *B, const struct list_result *L, const struct watch_result *W,
                   const struct memory_result *M, const struct judge_result *J)
{
    char v[32], b[32];
    static const char *const kind_rows[CLUSTER_KINDS] = {
        [CLUSTER_NODES] = "  nodes only (MB/s)", [CLUSTER_PODS] = "  pods only (MB/s)"};

    printf("\n%-40s %14s %14s %8s  %-16s %s\n", "metric", "value", "baseline", "ratio", "goal",
           "met?");
    row("initial list rate (MB/s)", num(v, sizeof(v), 1, L->view_rate / 1e6),
        num(b, sizeof(b), 1, L->bare_rate / 1e6), L->ratio, "ratio >= 0.70",
        L->ratio >= GOAL_LIST_RATIO ? "yes" : "NO");
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        if (kind_rows[k] != NULL && L->kind_bytes[k] > 0)
            row(kind_rows[k], num(v, sizeof(v), 1, L->kind_view_rate[k] / 1e6),
                num(b, sizeof(b), 1, L->kind_bare_rate[k] / 1e6), L->kind_ratio[k], "-", "");
    }
    row("watch events applied (/s)", num(v, sizeof(v), 0, W->view_rate),
        num(b, sizeof(b), 0, W->bare_rate), W->ratio, "(none set)", "");
    row("view RSS (MiB; baseline: input MiB)", num(v, sizeof(v), 1, M->rss_delta / MIB),
        num(b, sizeof(b), 1, M->input_bytes / MIB), (double)M->rss_delta / M->input_bytes,
        "< 64 MiB", M->rss_delta / MIB < GOAL_VIEW_MIB ? "yes" : "NO");
    row("  after malloc_trim (MiB)", num(v, sizeof(v), 1, M->trimmed_delta / MIB), "-", -1, "-",
        "");
    row("  malloc'd in use (MiB)", num(v, sizeof(v), 1, M->heap_delta / MIB), "-", -1, "-", "");
    row("  node labels' share, est. (MiB)", num(v, sizeof(v), 1, J->labels_bytes / MIB), "-", -1,
        "-", "");
    row("capacity decision p50 (us)", num(v, sizeof(v), 1, J->p50),
        num(b, sizeof(b), 1, J->base_p50), J->p50 / J->base_p50, "-", "");
    row("capacity decision p99 (us)", num(v, sizeof(v), 1, J->p99),
        num(b, sizeof(b), 1, J->base_p99), J->p99 / J->base_p99, "< 50 us",
        J->p99 < GOAL_P99_US ? "yes" : "NO");
    printf("\nscale %.3g: %zu nodes (%zu GPU), %zu pods (%zu GPU: %zu bound, %zu pending, more GPU "
           "pods than GPUs), %zu list pages, %.1f MiB; %zu watch lines, %.1f MiB; %d reps; "
           "%d decisions\n",
           B->scale, B->m.n_nodes, B->m.n_gpu_nodes, B->m.n_pods, B->m.gpu_bound + B->m.gpu_pending,
           B->m.gpu_bound, B->m.gpu_pending, B->pages.n, B->page_bytes / MIB, B->events.n,
           W->bytes / MIB, B->reps, B->calls);
    printf("ratios: list and watch = bare-parse time / view time for the same bytes (1.0: the view "
           "costs nothing over parsing; medians of per-rep ratios); RSS = view RSS / input bytes; "
           "decision = decision time / time to read one label of each of %zu nodes\n",
           J->nodes);
    printf("decision: %d eligible nodes, %lld fit now, %lld fit ever, %lld GPUs; slowest %.1f us; "
           "first load of the view took %.2f s\n",
           J->last.eligible, (long long)J->last.fit_now, (long long)J->last.fit_ever,
           (long long)J->last.total_gpus[0], J->max, L->first_s);
    if (J->base_p50 >= GOAL_P99_US)
        printf("note: the baseline alone (one label lookup per node, %zu nodes) takes %.0f us at "
               "p50, above the %.0f us goal: no decision that visits every node can meet it\n",
               J->nodes, J->base_p50, GOAL_P99_US);
}

/* ---- main ---- */

static void describe_input(struct bench *B, double took_s)
{
    double bytes[CLUSTER_KINDS] = {0};

    for (size_t i = 0; i < B->pages.n; i++) {
        B->page_bytes += B->pages.v[i].len;
        bytes[B->pages.v[i].kind] += (double)B->pages.v[i].len;
    }
    fprintf(stderr,
            "  %zu pages, %.1f MiB in %.1f s: a node averages %.0f bytes, a pod %.0f (with the "
            "list's framing)\n",
            B->pages.n, B->page_bytes / MIB, took_s, bytes[CLUSTER_NODES] / (double)B->m.n_nodes,
            bytes[CLUSTER_PODS] / (double)B->m.n_pods);
}

static int parse_args(struct bench *B, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        const char *opt = argv[i];

        if (strcmp(opt, "--callgrind") == 0) {
            B->callgrind = true;
            continue;
        }
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0 || i + 1 >= argc)
            return -1;
        if (strcmp(opt, "--scale") == 0) {
            B->scale = strtod(argv[++i], &end);
            if (*end != '\0' || !(B->scale > 0 && B->scale <= 4))
                return -1;
        } else if (strcmp(opt, "--reps") == 0 || strcmp(opt, "--calls") == 0) {
            long v = strtol(argv[++i], &end, 10);

            if (*end != '\0' || v < 1 || v > 1000000)
                return -1;
            *(strcmp(opt, "--reps") == 0 ? &B->reps : &B->calls) = (int)v;
        } else {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct bench B = {.scale = 1.0, .reps = DEFAULT_REPS, .calls = DEFAULT_CALLS};
    struct list_result L;
    struct watch_result W;
    struct memory_result M = {0, 0, 0, 0};
    struct judge_result J;
    struct cluster *view;
    double t_start = now_s(), t0;
    size_t n_events;

    if (parse_args(&B, argc, argv) < 0) {
        fprintf(stderr,
                "usage: bench_view [--scale F (0-4, default 1)] [--reps N (default %d)] "
                "[--calls N (default %d)] [--callgrind]\n",
                DEFAULT_REPS, DEFAULT_CALLS);
        return 2;
    }
    B.cfg.allocatable_grace_s = 120;
    setvbuf(stdout, NULL, _IOLBF, 0);
    fprintf(stderr, "bench_view: generating the cluster (scale %g)...\n", B.scale);
    t0 = now_s();
    model_build(&B.m, B.scale);
    make_pages(&B.pages, &B.m);
    spans_scratch(&B.pages);
    describe_input(&B, now_s() - t0);

    if (B.callgrind) {
        n_events = (size_t)(FULL_WATCH_EVENTS * B.scale + 0.5);
        make_events(&B.events, &B.m, n_events < 200 ? 200 : n_events);
        spans_scratch(&B.events);
        count_judge(&B);
        spans_free(&B.pages);
        spans_free(&B.events);
        model_free(&B.m);
        return 0;
    }
    if ((view = cluster_new(&B.cfg)) == NULL)
        die("cluster_new failed");
    fprintf(stderr, "bench_view: (a, c) initial list, view vs bare parse, %d reps...\n", B.reps);
    measure_list(&B, view, &L, &M);
    describe_view(view);

    n_events = (size_t)(FULL_WATCH_EVENTS * B.scale + 0.5);
    make_events(&B.events, &B.m, n_events < 200 ? 200 : n_events);
    spans_scratch(&B.events);
    fprintf(stderr, "bench_view: (b) %zu watch events, view vs bare parse, %d reps...\n",
            B.events.n, B.reps);
    measure_watch(&B, view, &W);

    fprintf(stderr, "bench_view: (d) %d capacity decisions...\n", B.calls);
    measure_judge(&B, view, &J);

    report(&B, &L, &W, &M, &J);
    fprintf(stderr, "bench_view: (e) the decision with many Pending Jobs and reservations...\n");
    measure_jobs(&B, view);
    cluster_free(view);
    spans_free(&B.pages);
    spans_free(&B.events);
    model_free(&B.m);
    printf("run time %.1f s, peak RSS %.1f MiB\n", now_s() - t_start, peak_rss_bytes() / MIB);
    return 0;
}
