/*
 * test_growth.c: what node autoscalers may still add for a pod template (cluster/growth.c),
 * each case with a near miss.
 *
 * The oracles are the autoscalers' own rules. Cluster Autoscaler (kubernetes/autoscaler
 * cluster-autoscaler): a node group is skipped with "max node group size reached" when its
 * TargetSize() >= MaxSize(), "in backoff after failed scale-up" and "not ready for scale-up"
 * when it is in backoff or unhealthy (core/scaleup/orchestrator/orchestrator.go,
 * skippedreasons.go, clusterstate IsNodeGroupReadyToScaleUp); a new node is like the group's
 * template node, a Ready node of the group (processors/nodeinfosprovider/
 * mixed_nodeinfos_processor.go), and must pass the scheduler's filters for the pod. Karpenter
 * (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go) drops the
 * instance types whose capacity exceeds what the NodePool's spec.limits less status.resources
 * leave, launches whole nodes, and a node must tolerate the pool's taints. The CA status in the
 * YAML format of CA 1.30 and later is written in the shape of clusterstate/utils/
 * status_test.yaml (see tests/data/autoscaler/README.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/growth.h"
#include "view_fixture.h"

#define TAINT_GPU "'taints':[{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'}]"
#define TOLERATE  ",'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists'}]"
#define UPDATED   "2026-12-02 03:00:00.0 +0000 UTC"
#define AT_UPDATE 1796180400.0 /* UPDATED, in seconds since the epoch */

/* A GPU node of node group labels (",'k':'v'"), with cap GPUs, and spec ("'taints':..."). */
static void gpu_node(struct cluster *c, const char *name, int cap, const char *labels,
                     const char *spec)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'kind':'Node','metadata':{'name':'%s','labels':{'nvidia.com/gpu.present':'true'%s}},"
             "'spec':{%s},'status':{'conditions':[{'type':'Ready','status':'True'}],"
             "'capacity':{'nvidia.com/gpu':'%d'},'allocatable':{'nvidia.com/gpu':'%d'}}}",
             name, labels, spec, cap, cap);
    apply(c, CLUSTER_NODES, "ADDED", buf);
}

/* The CA status ConfigMap with groups, each a YAML flow mapping line ("{name: gpu, ...}"). */
static void ca_status(struct cluster *c, const char *status, const char *groups)
{
    char yaml[4096];

    snprintf(yaml, sizeof(yaml), "time: \"%s\"\nautoscalerStatus: %s\nnodeGroups:\n%s", UPDATED,
             status, groups);
    view_ca_status(c, yaml, UPDATED);
}

/* One group line: name, health, target, max, scale-up status and its backoffInfo ("" or
 * ", backoffInfo: {...}"). */
static const char *group(char *buf, size_t len, const char *name, const char *health, int target,
                         int max, const char *scale_up, const char *backoff)
{
    snprintf(buf, len,
             "  - {name: %s, health: {status: %s, cloudProviderTarget: %d, minSize: 0, "
             "maxSize: %d}, scaleUp: {status: %s%s}}\n",
             name, health, target, max, scale_up, backoff);
    return buf;
}

/* Two 4-GPU nodes, tainted, of EKS managed node group gpu, and its CA status. */
static struct cluster *eks(int target, int max, const char *health, const char *scale_up,
                           const char *backoff)
{
    struct cluster *c = empty_view();
    char g[512];

    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", TAINT_GPU);
    gpu_node(c, "gpu-b", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", TAINT_GPU);
    ca_status(c, "Running",
              group(g, sizeof(g), "eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", health, target,
                    max, scale_up, backoff));
    return c;
}

/* What the autoscalers of c may add for spec (pods asking per_pod nvidia.com/gpu), at wall
 * clock now. */
static struct growth grow_at(struct cluster *c, const char *spec, int64_t per_pod, int64_t headroom,
                             const struct strlist *labels, double now)
{
    yyjson_val *s = js(spec);
    struct growth g;
    struct growth_ask ask = {"nvidia.com/gpu", NULL, per_pod};

    pthread_rwlock_rdlock(&c->lock);
    ask.rn = cluster_rname(c, "nvidia.com/gpu");
    struct growth_policy pol = {labels, NULL, 0};

    growth_of(c, s, &ask, 1, headroom, &pol, now, &g);
    pthread_rwlock_unlock(&c->lock);
    js_free(s);
    return g;
}

static struct growth grow(struct cluster *c, const char *spec, int64_t per_pod)
{
    return grow_at(c, spec, per_pod, 0, NULL, AT_UPDATE + 30);
}

#define POD_SPEC(extra) "{'containers':[{'name':'c'}]" extra "}"

static void test_group_grows(void)
{
    struct cluster *c = eks(2, 6, "Healthy", "NoActivity", "");
    struct growth g = grow(c, POD_SPEC(TOLERATE), 1);
    char text[1024];

    CHECK(g.readable && !g.unknown);
    CHECK(g.n == 1 && g.g[0].state == GROWTH_GROWS && !g.g[0].nodepool);
    /* 6 - 2 nodes, 4 one-GPU pods each */
    CHECK(g.g[0].nodes_now == 4 && g.g[0].per_node == 4);
    CHECK(g.pods_now == 16 && g.pods_ever == 16);
    growth_grows_text(&g, 6, false, text, sizeof(text));
    CHECK_STR(text, "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11 adds 2 nodes of 4 "
                    "pods each (2 to 4 of maxSize 6)");
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_STR(text, "");
    /* 3-GPU pods: one per 4-GPU node */
    g = grow(c, POD_SPEC(TOLERATE), 3);
    CHECK(g.g[0].per_node == 1 && g.pods_now == 4);
    /* the headroom kept free counts in pods_now only */
    g = grow_at(c, POD_SPEC(TOLERATE), 1, 1, NULL, AT_UPDATE + 30);
    CHECK(g.g[0].per_node_now == 3 && g.pods_now == 12 && g.pods_ever == 16);
    /* near miss: a pod that does not tolerate the group's taint gets nothing from it */
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.readable && g.n == 0 && g.pods_now == 0 && g.pods_ever == 0 && !g.unknown);
    /* near miss: larger than the group's nodes */
    g = grow(c, POD_SPEC(TOLERATE), 5);
    CHECK(g.n == 0 && g.pods_ever == 0);
    /* near miss: a nodeSelector the group's nodes do not carry */
    g = grow(c, POD_SPEC(TOLERATE ",'nodeSelector':{'eks.amazonaws.com/nodegroup':'other'}"), 1);
    CHECK(g.n == 0);
    cluster_free(c);
}

static void test_group_at_max(void)
{
    struct cluster *c = eks(2, 2, "Healthy", "NoActivity", "");
    struct growth g = grow(c, POD_SPEC(TOLERATE), 1);
    char text[1024];

    CHECK(g.readable && g.n == 1 && g.g[0].state == GROWTH_AT_MAX);
    CHECK(g.pods_now == 0 && g.pods_ever == 0);
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_STR(text, "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11 is at its max size "
                    "(2 of maxSize 2): Cluster Autoscaler adds no node to it (max node group size "
                    "reached)");
    cluster_free(c);
    /* near miss: at its target max, but a node still on its way (3 of max 3, 2 in the view) */
    c = eks(3, 3, "Healthy", "InProgress", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_GROWS && g.g[0].nodes_now == 1 && g.pods_now == 4);
    cluster_free(c);
}

static void test_group_backoff_and_unhealthy(void)
{
    struct cluster *c = eks(2, 6, "Healthy", "Backoff",
                            ", backoffInfo: {errorCode: InsufficientInstanceCapacity, "
                            "errorMessage: no p4d.24xlarge capacity}");
    struct growth g = grow(c, POD_SPEC(TOLERATE), 1);
    char text[1024];

    CHECK(g.n == 1 && g.g[0].state == GROWTH_BACKOFF);
    /* nothing now; once the backoff ends, up to maxSize */
    CHECK(g.pods_now == 0 && g.pods_ever == 16);
    /* what it adds once the backoff ends, and nothing now */
    growth_grows_text(&g, GROWTH_UNBOUNDED, true, text, sizeof(text));
    CHECK_STR(text, "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11 may add 4 nodes of 4 "
                    "pods each (2 to 6 of maxSize 6)");
    growth_grows_text(&g, 4, false, text, sizeof(text));
    CHECK_STR(text, "");
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_STR(text, "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11 is in backoff after "
                    "a failed scale-up (InsufficientInstanceCapacity: no p4d.24xlarge capacity): "
                    "Cluster Autoscaler adds no node to it until the backoff ends (then up to 4 "
                    "nodes)");
    cluster_free(c);
    c = eks(2, 6, "Unhealthy", "NoActivity", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.n == 1 && g.g[0].state == GROWTH_UNHEALTHY && g.pods_now == 0 && g.pods_ever == 16);
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_CONTAINS(text, "is unhealthy: Cluster Autoscaler does not scale it up (not ready for "
                         "scale-up)");
    cluster_free(c);
}

static void test_unknown(void)
{
    struct cluster *c = empty_view();
    char g1[512], g2[512], both[1024];
    struct growth g;

    /* a group none of whose nodes the view holds (scaled to zero) cannot be sized */
    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", TAINT_GPU);
    snprintf(both, sizeof(both), "%s%s",
             group(g1, sizeof(g1), "gpu", "Healthy", 1, 2, "NoActivity", ""),
             group(g2, sizeof(g2), "gpu-zero", "Healthy", 0, 8, "NoActivity", ""));
    ca_status(c, "Running", both);
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.readable && g.unknown && g.n == 1 && g.pods_now == 4);
    CHECK_CONTAINS(g.unknown_why, "node group gpu-zero has no node in the view to show what its "
                                  "nodes hold");
    cluster_free(c);
    /* near miss: a group at zero whose maxSize is 0 can never add one */
    c = empty_view();
    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", TAINT_GPU);
    snprintf(both, sizeof(both), "%s%s",
             group(g1, sizeof(g1), "gpu", "Healthy", 1, 2, "NoActivity", ""),
             group(g2, sizeof(g2), "gpu-zero", "Healthy", 0, 0, "NoActivity", ""));
    ca_status(c, "Running", both);
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(!g.unknown && g.pods_now == 4);
    cluster_free(c);
    /* CA still initializing knows nothing yet */
    c = empty_view();
    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", TAINT_GPU);
    ca_status(c, "Initializing", group(g1, sizeof(g1), "gpu", "Healthy", 1, 2, "NoActivity", ""));
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.readable && g.unknown && g.n == 0);
    CHECK_STR(g.unknown_why, "Cluster Autoscaler is initializing");
    cluster_free(c);
}

static void test_stale_status(void)
{
    struct cluster *c = eks(2, 6, "Healthy", "NoActivity", "");
    struct growth g = grow_at(c, POD_SPEC(TOLERATE), 1, 0, NULL, AT_UPDATE + 1200);

    /* CA rewrites its status every scan (10 s): 20 minutes without is a CA that is not running */
    CHECK(!g.readable && g.n == 0 && g.pods_now == 0);
    CHECK_CONTAINS(g.stale_why, "the Cluster Autoscaler status was last updated 20 minutes ago");
    /* near miss: 9 minutes */
    g = grow_at(c, POD_SPEC(TOLERATE), 1, 0, NULL, AT_UPDATE + 540);
    CHECK(g.readable && g.pods_now == 16 && g.stale_why[0] == '\0');
    /* a snapshot is judged as it was taken, however old */
    cluster_mark_snapshot(c);
    g = grow_at(c, POD_SPEC(TOLERATE), 1, 0, NULL, AT_UPDATE + 86400);
    CHECK(g.readable && g.pods_now == 16);
    cluster_free(c);
}

static void test_ca_age(void)
{
    CHECK(growth_ca_age_s("2026-12-02 03:00:00.0 +0000 UTC", AT_UPDATE + 60) == 60);
    CHECK(growth_ca_age_s("2026-12-02 04:00:00.123456789 +0100 CET", AT_UPDATE + 60) == 60);
    CHECK(growth_ca_age_s("2026-12-02T03:00:00Z", AT_UPDATE) == 0);
    CHECK(growth_ca_age_s("2026-12-01 22:00:00 -0500 EST", AT_UPDATE) == 0);
    /* half-hour zones: Go writes -0700 without a colon */
    CHECK(growth_ca_age_s("2026-12-02 08:30:00 +0530 IST", AT_UPDATE) == 0);
    CHECK(growth_ca_age_s("2026-12-01 23:30:00 -0330 NST", AT_UPDATE) == 0);
    CHECK(growth_ca_age_s("2026-12-02 03:00:00 +05:45", AT_UPDATE) == 20700);
    CHECK(growth_ca_age_s("2026-12-02 03:00:00 +5", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s("2026-12-02 03:00:00 +05", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s("2026-12-02 03:00:00 +05:", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s("yesterday", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s("2026-13-02 03:00:00", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s("", AT_UPDATE) < 0);
    CHECK(growth_ca_age_s(NULL, AT_UPDATE) < 0);
}

static void test_group_labels(void)
{
    struct cluster *c = empty_view();
    char g1[512];
    char *keys[] = {"example.com/pool"};
    struct strlist labels = {keys, 1};
    struct growth g;

    gpu_node(c, "n-0", 8, ",'example.com/pool':'big'", "");
    ca_status(
        c, "Running",
        group(g1, sizeof(g1), "MachineDeployment/capi/big", "Healthy", 1, 3, "NoActivity", ""));
    /* without the label named, the group's nodes are not found: it cannot be sized */
    g = grow_at(c, POD_SPEC(""), 2, 0, NULL, AT_UPDATE);
    CHECK(g.unknown && g.n == 0);
    /* named: the label's value is the Id()'s last segment */
    g = grow_at(c, POD_SPEC(""), 2, 0, &labels, AT_UPDATE);
    CHECK(!g.unknown && g.n == 1 && g.g[0].in_view == 1 && g.g[0].per_node == 4);
    CHECK(g.pods_now == 8);
    cluster_free(c);
    /* near miss: another value */
    c = empty_view();
    gpu_node(c, "n-0", 8, ",'example.com/pool':'bigger'", "");
    ca_status(
        c, "Running",
        group(g1, sizeof(g1), "MachineDeployment/capi/big", "Healthy", 1, 3, "NoActivity", ""));
    g = grow_at(c, POD_SPEC(""), 2, 0, &labels, AT_UPDATE);
    CHECK(g.unknown && g.n == 0);
    cluster_free(c);
}

/* A NodePool gpu: limits and used ("'nvidia.com/gpu':'16'"), requirements, taints. */
static void pool(struct cluster *c, const char *name, const char *limits, const char *used,
                 const char *reqs)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'%s'},"
             "'spec':{'limits':{%s},'template':{'spec':{'nodeClassRef':{'group':"
             "'karpenter.k8s.aws','kind':'EC2NodeClass','name':'default'},'requirements':[%s],"
             "" TAINT_GPU "}}},'status':{'resources':{%s}}}",
             name, limits, reqs, used);
    apply(c, CLUSTER_NODEPOOLS, "ADDED", buf);
}

static void test_nodepools(void)
{
    struct cluster *c = empty_view();
    struct growth g;
    char text[1024];

    /* 8 GPUs left, the pool's nodes in the view have 4: 2 whole nodes */
    gpu_node(c, "k-0", 4, ",'karpenter.sh/nodepool':'gpu'", TAINT_GPU);
    pool(c, "gpu", "'nvidia.com/gpu':'12'", "'nvidia.com/gpu':'4'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.readable && g.n == 1 && g.g[0].nodepool && g.g[0].state == GROWTH_GROWS);
    CHECK(g.g[0].nodes_now == 2 && g.g[0].per_node == 4 && g.pods_now == 8);
    growth_grows_text(&g, 5, false, text, sizeof(text));
    CHECK_STR(text, "NodePool gpu launches 2 nodes of 4 pods each (8 nvidia.com/gpu left of its "
                    "limit of 12)");
    /* 3-GPU pods: one per 4-GPU node, still 2 nodes */
    g = grow(c, POD_SPEC(TOLERATE), 3);
    CHECK(g.pods_now == 2);
    /* near miss: a pod that does not tolerate the pool's taint */
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.readable && g.n == 0 && g.pods_now == 0);
    cluster_free(c);

    /* 6 left, and the pool's instance types have 8 GPUs: no whole node fits the limit */
    c = empty_view();
    pool(c, "gpu", "'nvidia.com/gpu':'14'", "'nvidia.com/gpu':'8'",
         "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Gte','values':['8']}");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.n == 1 && g.g[0].state == GROWTH_LIMIT && g.pods_now == 0 && g.pods_ever == 0);
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_STR(text, "NodePool gpu has 6 nvidia.com/gpu left of its limit of 14 (spec.limits less "
                    "status.resources), less than a node: Karpenter launches none (all available "
                    "instance types exceed limits for nodepool)");
    cluster_free(c);
    /* near miss: 8 left: one node of 8 */
    c = empty_view();
    pool(c, "gpu", "'nvidia.com/gpu':'16'", "'nvidia.com/gpu':'8'",
         "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Gte','values':['8']}");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_GROWS && g.g[0].nodes_now == 1 && g.pods_now == 8);
    cluster_free(c);

    /* no limit on GPUs: no bound */
    c = empty_view();
    pool(c, "gpu", "'cpu':'1000'", "'cpu':'10'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_GROWS && g.pods_now == GROWTH_UNBOUNDED &&
          g.pods_ever == GROWTH_UNBOUNDED);
    growth_grows_text(&g, 3, false, text, sizeof(text));
    CHECK_STR(text, "NodePool gpu launches 3 nodes of 1 pod each (no limit bounds it)");
    growth_grows_text(&g, GROWTH_UNBOUNDED, true, text, sizeof(text));
    CHECK_STR(text, "NodePool gpu may launch any number of nodes of 1 pod each");
    cluster_free(c);
    /* a spent cpu limit stops every launch */
    c = empty_view();
    pool(c, "gpu", "'cpu':'100'", "'cpu':'100'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_LIMIT && g.pods_now == 0);
    cluster_free(c);
    /* a nodes limit: 2 more nodes */
    c = empty_view();
    pool(c, "gpu", "'nodes':'3'", "", "");
    apply(c, CLUSTER_NODEPOOLS, "MODIFIED",
          "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu'},"
          "'spec':{'limits':{'nodes':'3'},'template':{'spec':{'requirements':[]," TAINT_GPU
          "}}},'status':{'nodes':1}}");
    g = grow(c, POD_SPEC(TOLERATE), 2);
    CHECK(g.g[0].nodes_now == 2 && g.pods_now == 2);
    /* a selector on a label the pool can never carry */
    g = grow(c, POD_SPEC(TOLERATE ",'nodeSelector':{'example.com/team':'ml'}"), 1);
    CHECK(g.n == 0);
    /* a pool whose instance types have too few GPUs */
    pool(c, "small", "", "",
         "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Lte','values':['2']}");
    g = grow(c, POD_SPEC(TOLERATE), 4);
    CHECK(g.n == 1 && strcmp(g.g[0].name, "gpu") == 0);
    cluster_free(c);
}

/* What the template node drops, and a node that says nothing yet of its GPUs. */
/* What CA group name (maxSize max, 1 node, Healthy) adds for a one-GPU pod, its one node the
 * Node node (JSON), beside a GPU node of no group. */
static struct growth lone_group(const char *node, const char *name, int max)
{
    struct cluster *c = empty_view();
    char g1[512];
    struct growth g;

    apply(c, CLUSTER_NODES, "ADDED", node);
    gpu_node(c, "elsewhere", 1, "", "");
    ca_status(c, "Running", group(g1, sizeof(g1), name, "Healthy", 1, max, "NoActivity", ""));
    g = grow(c, POD_SPEC(""), 1);
    cluster_free(c);
    return g;
}

static void test_template_node(void)
{
    struct cluster *c = empty_view();
    char g1[512];
    struct growth g;

    /* CA is removing this node: its template drops the taint (SanitizeTaints) */
    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'",
             "'taints':[{'key':'ToBeDeletedByClusterAutoscaler','value':'1','effect':"
             "'NoSchedule'}]");
    ca_status(c, "Running", group(g1, sizeof(g1), "gpu", "Healthy", 1, 3, "NoActivity", ""));
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.n == 1 && g.pods_now == 8 && !g.unknown);
    cluster_free(c);
    /* near miss: a taint of the user's own is kept */
    c = empty_view();
    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'",
             "'taints':[{'key':'dedicated','value':'a100','effect':'NoSchedule'}]");
    ca_status(c, "Running", group(g1, sizeof(g1), "gpu", "Healthy", 1, 3, "NoActivity", ""));
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.n == 0 && !g.unknown);
    cluster_free(c);
    /* the group's only node has no nvidia.com/gpu yet while CA's AWS GPU label marks it as a
     * GPU node (its device plugin is starting): CA does not take it as the template
     * (NodeHasGpu), and the group cannot be sized, which is not "it does not admit the pods" */
    g = lone_group(
        "{'kind':'Node','metadata':{'name':'fresh','labels':{'eks.amazonaws.com/nodegroup':"
        "'gpu','k8s.amazonaws.com/accelerator':'nvidia-tesla-t4'}},'spec':{},'status':{"
        "'conditions':[{'type':'Ready','status':'True'}],"
        "'capacity':{'cpu':'8','example.com/other':'1'},'allocatable':{'cpu':'8',"
        "'example.com/other':'1'}}}",
        "gpu", 3);
    CHECK(g.unknown && g.n == 0);
    CHECK_CONTAINS(g.unknown_why, "or GPU nodes whose device plugin is not up");
    /* AKS: Azure's GPU label (CA's azure GPULabel() "accelerator") says the same */
    g = lone_group(
        "{'kind':'Node','metadata':{'name':'aks-gpu-0','labels':{'kubernetes.azure.com/agentpool':"
        "'gpu','accelerator':'nvidia'}},'spec':{},'status':{'conditions':[{'type':'Ready',"
        "'status':'True'}],'capacity':{'cpu':'8'},'allocatable':{'cpu':'8'}}}",
        "aks-gpu-12345678-vmss", 3);
    CHECK(g.unknown && g.n == 0);
    /* near miss: the same node without a GPU label is a CPU node, of a group whose nodes hold
     * no GPU: known to add none */
    g = lone_group(
        "{'kind':'Node','metadata':{'name':'cpu-a','labels':{'eks.amazonaws.com/nodegroup':"
        "'cpu'}},'spec':{},'status':{'conditions':[{'type':'Ready','status':'True'}],"
        "'capacity':{'cpu':'8','example.com/other':'1'},'allocatable':{'cpu':'8',"
        "'example.com/other':'1'}}}",
        "cpu", 30);
    CHECK(g.readable && !g.unknown && g.n == 0 && g.pods_ever == 0);
    /* near miss: a GPU-labelled node whose device plugin is up and serves MIG slices only:
     * its group's nodes hold no whole GPU */
    g = lone_group(
        "{'kind':'Node','metadata':{'name':'mig-a','labels':{'eks.amazonaws.com/nodegroup':"
        "'mig','nvidia.com/gpu.present':'true'}},'spec':{},'status':{'conditions':[{'type':"
        "'Ready','status':'True'}],'capacity':{'nvidia.com/mig-1g.10gb':'7'},"
        "'allocatable':{'nvidia.com/mig-1g.10gb':'7'}}}",
        "mig", 4);
    CHECK(!g.unknown && g.n == 0);
}

/* A template of the policy's (rule_capacity.c's nodeGroups): labels as a JSON object. */
static struct growth_template tmpl(const char *glob, const char *labels, struct node_taint *taint,
                                   struct node_res *res)
{
    struct growth_template t;

    memset(&t, 0, sizeof(t));
    t.glob = (char *)glob;
    t.node.name = (char *)glob;
    t.node.labels = js(labels);
    t.node.taints = taint;
    t.node.n_taints = taint != NULL;
    t.node.res = res;
    t.node.n_res = res != NULL;
    return t;
}

/* A group with no node in the view is sized from the policy's template for it, as CA sizes it
 * from the cloud's (an ASG's node-template tags, the instance type's GPUs). */
static void test_group_templates(void)
{
    struct cluster *c = empty_view();
    char g1[512], g2[512], both[1024];
    struct node_taint taint = {"nvidia.com/gpu", "true", "NoSchedule"};
    struct node_res a100 = {"nvidia.com/gpu", 8, 8, 0, 0, 0};
    struct growth_template t[2] = {
        tmpl("eks-a100-*", "{'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB'}", &taint, &a100),
        tmpl("*", "{}", NULL, NULL)};
    struct growth_policy pol = {NULL, t, 2}, none = {NULL, t + 1, 1};
    struct growth g;
    char text[1024];
    const char *sel_a100 = POD_SPEC(TOLERATE ",'nodeSelector':{'nvidia.com/gpu.product':"
                                             "'NVIDIA-A100-SXM4-80GB'}");

    gpu_node(c, "t4-a", 1, ",'eks.amazonaws.com/nodegroup':'t4'", TAINT_GPU);
    snprintf(both, sizeof(both), "%s%s",
             group(g1, sizeof(g1), "eks-t4-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", "Healthy", 1, 1,
                   "NoActivity", ""),
             group(g2, sizeof(g2), "eks-a100-2", "Healthy", 0, 3, "NoActivity", ""));
    ca_status(c, "Running", both);
    /* without a template the group at zero cannot be sized */
    g = grow(c, sel_a100, 2);
    CHECK(g.unknown && g.n == 0);
    CHECK_CONTAINS(g.unknown_why, "node group eks-a100-2 has no node in the view");
    CHECK_CONTAINS(g.unknown_why, "describe it in the capacity rule's nodeGroups");
    /* with one: 3 new nodes of 8 GPUs, 4 two-GPU pods each */
    pthread_rwlock_rdlock(&c->lock);
    {
        yyjson_val *s = js(sel_a100);
        struct growth_ask ask = {"nvidia.com/gpu", cluster_rname(c, "nvidia.com/gpu"), 2};

        growth_of(c, s, &ask, 1, 0, &pol, AT_UPDATE + 30, &g);
        CHECK(!g.unknown && g.n == 1 && g.g[0].per_node == 4 && g.g[0].nodes_now == 3);
        CHECK(g.pods_now == 12 && g.pods_ever == 12);
        growth_grows_text(&g, 5, false, text, sizeof(text));
        CHECK_STR(text, "node group eks-a100-2 adds 2 nodes of 4 pods each (0 to 2 of maxSize 3)");
        /* the headroom kept free: 6 of the 8 GPUs, 3 pods a node now */
        growth_of(c, s, &ask, 1, 2, &pol, AT_UPDATE + 30, &g);
        CHECK(g.g[0].per_node_now == 3 && g.pods_now == 9 && g.pods_ever == 12);
        /* a template matched by the catch-all without resources holds no GPU: known, none */
        growth_of(c, s, &ask, 1, 0, &none, AT_UPDATE + 30, &g);
        CHECK(!g.unknown && g.n == 0 && g.pods_ever == 0);
        js_free(s);
        /* near miss: a pod that does not tolerate the template's taint */
        s = js(POD_SPEC(",'nodeSelector':{'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB'}"));
        growth_of(c, s, &ask, 1, 0, &pol, AT_UPDATE + 30, &g);
        CHECK(!g.unknown && g.n == 0);
        js_free(s);
        /* near miss: a nodeSelector the template's labels do not carry */
        s = js(POD_SPEC(TOLERATE ",'nodeSelector':{'nvidia.com/gpu.product':'Tesla-T4'}"));
        growth_of(c, s, &ask, 1, 0, &pol, AT_UPDATE + 30, &g);
        CHECK(!g.unknown && g.n == 0);
        js_free(s);
        /* near miss: larger than the template's node */
        s = js(sel_a100);
        ask.per_pod = 9;
        growth_of(c, s, &ask, 1, 0, &pol, AT_UPDATE + 30, &g);
        CHECK(!g.unknown && g.n == 0);
        js_free(s);
    }
    pthread_rwlock_unlock(&c->lock);
    js_free(t[0].node.labels);
    js_free(t[1].node.labels);
    cluster_free(c);
}

/* CA scales nothing up while the cluster-wide health is Unhealthy (static_autoscaler.go). */
static void test_cluster_unhealthy(void)
{
    struct cluster *c = empty_view();
    char yaml[1024], g1[512];
    struct growth g;

    gpu_node(c, "gpu-a", 4, ",'eks.amazonaws.com/nodegroup':'gpu'", "");
    snprintf(yaml, sizeof(yaml),
             "autoscalerStatus: Running\nclusterWide:\n  health:\n    status: Unhealthy\n"
             "nodeGroups:\n%s",
             group(g1, sizeof(g1), "gpu", "Healthy", 1, 3, "NoActivity", ""));
    view_ca_status(c, yaml, NULL);
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.n == 1 && g.g[0].state == GROWTH_PAUSED && g.pods_now == 0 && g.pods_ever == 8);
    {
        char text[1024];

        growth_stuck_text(&g, text, sizeof(text));
        CHECK_CONTAINS(text, "node group gpu adds no node while Cluster Autoscaler's cluster-wide "
                             "health is Unhealthy");
    }
    cluster_free(c);
    /* near miss: Healthy */
    c = eks(1, 3, "Healthy", "NoActivity", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_GROWS);
    cluster_free(c);
}

/* A NodePool's cpu limit counts whole nodes as its nodes in the view are; required node
 * affinity is judged as a nodeSelector is (Karpenter reads both as requirements). */
static void test_nodepool_cpu_and_affinity(void)
{
    struct cluster *c = empty_view();
    struct growth g;
    char text[1024];

    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'k-0','labels':{'karpenter.sh/nodepool':'gpu'}},"
          "'spec':{},'status':{'conditions':[{'type':'Ready','status':'True'}],"
          "'capacity':{'cpu':'48','memory':'192Gi','nvidia.com/gpu':'4'},"
          "'allocatable':{'cpu':'47','nvidia.com/gpu':'4'}}}");
    pool(c, "gpu", "'cpu':'52'", "'cpu':'48'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    /* 4 cpu left, and a node has 48: Karpenter launches none */
    CHECK(g.n == 1 && g.g[0].state == GROWTH_LIMIT && g.pods_now == 0 && g.pods_ever == 0);
    growth_stuck_text(&g, text, sizeof(text));
    CHECK_CONTAINS(text, "NodePool gpu has 4 cpu left of its limit of 52");
    /* near miss: 100 cpu left, 2 nodes */
    apply(c, CLUSTER_NODEPOOLS, "DELETED",
          "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu'}}");
    pool(c, "gpu", "'cpu':'148'", "'cpu':'48'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_GROWS && g.g[0].nodes_now == 2 && g.pods_now == 8);
    /* a memory limit the same way: 200Gi less 192Gi is no node of 192Gi */
    apply(c, CLUSTER_NODEPOOLS, "DELETED",
          "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu'}}");
    pool(c, "gpu", "'memory':'200Gi'", "'memory':'192Gi'", "");
    g = grow(c, POD_SPEC(TOLERATE), 1);
    CHECK(g.g[0].state == GROWTH_LIMIT && g.pods_now == 0);
    cluster_free(c);

    c = empty_view();
    pool(c, "gpu", "'nvidia.com/gpu':'16'", "'nvidia.com/gpu':'0'",
         "{'key':'node.kubernetes.io/instance-type','operator':'In','values':['g5.12xlarge']}");
    /* required affinity on an instance type the pool never launches */
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'node.kubernetes.io/instance-type','operator':'In',"
                               "'values':['p4d.24xlarge']}]}]}}}"),
             1);
    CHECK(g.n == 0 && g.pods_now == 0);
    CHECK_CONTAINS(g.miss_why, "NodePool gpu's nodes would not match the pods' required node "
                               "affinity");
    /* near miss: one of the values is the pool's */
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'node.kubernetes.io/instance-type','operator':'In',"
                               "'values':['p4d.24xlarge','g5.12xlarge']}]}]}}}"),
             1);
    CHECK(g.n == 1 && g.pods_now == 16);
    /* NotIn the one instance type the pool launches, DoesNotExist on its own name label */
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'node.kubernetes.io/instance-type','operator':'NotIn',"
                               "'values':['g5.12xlarge']}]}]}}}"),
             1);
    CHECK(g.n == 0);
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'karpenter.sh/nodepool','operator':'DoesNotExist'}]}]}}}"),
             1);
    CHECK(g.n == 0);
    /* near miss: NotIn another type */
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'node.kubernetes.io/instance-type','operator':'NotIn',"
                               "'values':['p4d.24xlarge']}]}]}}}"),
             1);
    CHECK(g.n == 1);
    /* Exists on a label the pool never gives */
    g = grow(c,
             POD_SPEC(TOLERATE ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnored"
                               "DuringExecution':{'nodeSelectorTerms':[{'matchExpressions':[{"
                               "'key':'example.com/team','operator':'Exists'}]}]}}}"),
             1);
    CHECK(g.n == 0);
    cluster_free(c);
}

/* Growing groups are named first, and at most GROWTH_GROUPS_MAX of them. */
static void test_many_groups(void)
{
    struct cluster *c = empty_view();
    char lines[8192] = "", g1[512], name[32], labels[96];
    struct growth g;
    size_t at = 0;

    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "g%02d", i);
        snprintf(labels, sizeof(labels), ",'eks.amazonaws.com/nodegroup':'%s'", name);
        gpu_node(c, name, 1, labels, "");
        /* the even ones at their max */
        at += (size_t)snprintf(
            lines + at, sizeof(lines) - at, "%s",
            group(g1, sizeof(g1), name, "Healthy", 1, i % 2 ? 3 : 1, "NoActivity", ""));
    }
    ca_status(c, "Running", lines);
    g = grow(c, POD_SPEC(""), 1);
    CHECK(g.n == GROWTH_GROUPS_MAX && g.n_more == 4);
    CHECK(g.pods_now == 12); /* 6 groups of 2 more nodes, named or not */
    for (size_t i = 0; i < 6; i++)
        CHECK(g.g[i].state == GROWTH_GROWS);
    CHECK_STR(g.g[0].name, "g01");
    CHECK(g.g[6].state == GROWTH_AT_MAX);
    /* 12 pods need the 6 growing groups; 6 are named, the other 4 named groups are at max, and
     * 4 groups are past the list */
    {
        char text[2048];

        growth_grows_text(&g, 100, false, text, sizeof(text));
        CHECK_CONTAINS(text, "node group g11 adds 2 nodes of 1 pod each (1 to 3 of maxSize 3), and "
                             "4 more groups");
    }
    cluster_free(c);
}

int main(void)
{
    RUN(test_group_grows);
    RUN(test_group_at_max);
    RUN(test_group_backoff_and_unhealthy);
    RUN(test_unknown);
    RUN(test_stale_status);
    RUN(test_ca_age);
    RUN(test_group_labels);
    RUN(test_nodepools);
    RUN(test_template_node);
    RUN(test_group_templates);
    RUN(test_cluster_unhealthy);
    RUN(test_nodepool_cpu_and_affinity);
    RUN(test_many_groups);
    TEST_MAIN_END("test_growth");
}
