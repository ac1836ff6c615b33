/*
 * test_pending.c: why GPU pods are Pending (cluster/pending.c), one reason code at a time, each
 * with a near miss that must not produce it.
 *
 * The oracle is kube-scheduler's own filters (kubernetes/kubernetes pkg/scheduler/framework/
 * plugins): NodeUnschedulable passes a cordoned node for a pod that tolerates
 * node.kubernetes.io/unschedulable:NoSchedule (nodeunschedulable/node_unschedulable.go);
 * TaintToleration fails only on NoSchedule and NoExecute taints (tainttoleration/
 * taint_toleration.go); NodeAffinity needs every nodeSelector label (nodeaffinity/
 * node_affinity.go); NodeResourcesFit compares a pod's request with allocatable less the
 * requests of the pods bound to the node (noderesources/fit.go); a pod lands whole on one node.
 * Preemption (defaultpreemption/default_preemption.go) evicts only pods of strictly lower
 * priority, and a pod whose preemptionPolicy is Never preempts nothing. The device plugin
 * (NVIDIA/k8s-device-plugin internal/plugin/server.go) takes an unhealthy GPU out of
 * allocatable for good; with failRequestsGreaterThanOne it refuses a container asking for more
 * than one shared GPU (internal/rm/rm.go).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/pending.h"
#include "view_fixture.h"

/* A GPU node: name, capacity and allocatable of nvidia.com/gpu, and JSON to splice into its
 * labels, spec and status (each "" or ",'k':v..." / "'k':v"). */
static void node(struct cluster *c, const char *name, int cap, int alloc, const char *labels,
                 const char *spec, const char *ready)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'kind':'Node','metadata':{'name':'%s','labels':{'nvidia.com/gpu.present':'true'%s}},"
             "'spec':{%s},'status':{'conditions':[{'type':'Ready','status':'%s'}],"
             "'capacity':{'nvidia.com/gpu':'%d','cpu':'8'},"
             "'allocatable':{'nvidia.com/gpu':'%d','cpu':'8'}}}",
             name, labels, spec, ready, cap, alloc);
    apply(c, CLUSTER_NODES, "ADDED", buf);
}

/* A Pending pod ns/name asking gpus of nvidia.com/gpu in container c, with JSON spliced into
 * its spec (",'k':v..."). */
static void waiting(struct cluster *c, const char *name, int n_gpus, const char *spec)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','metadata':{'name':'%s','namespace':'ml'},'spec':{"
             "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'%d'}}}]%s},"
             "'status':{'phase':'Pending','conditions':[{'type':'PodScheduled','status':'False',"
             "'reason':'Unschedulable','message':'0/2 nodes are available: 2 Insufficient "
             "nvidia.com/gpu.'}]}}",
             name, n_gpus, spec);
    apply(c, CLUSTER_PODS, "ADDED", buf);
}

static void cls(struct cluster *c, const char *name, long value, const char *policy)
{
    char buf[512];

    snprintf(buf, sizeof(buf),
             "{'kind':'PriorityClass','metadata':{'name':'%s'},'value':%ld,"
             "'preemptionPolicy':'%s'}",
             name, value, policy);
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED", buf);
}

static yyjson_doc *explain_doc(struct cluster *c, const char *const *names, size_t n)
{
    struct pending_query q = {NULL, names, n, 0};
    struct diag d;
    yyjson_mut_doc *m;
    yyjson_doc *doc;

    diag_clear(&d);
    m = pending_explain(c, &q, &d);
    CHECK(m != NULL);
    if (m == NULL) {
        printf("  %s\n", d.msg);
        exit(2);
    }
    doc = json_freeze(yyjson_mut_doc_get_root(m));
    yyjson_mut_doc_free(m);
    return doc;
}

/* The pod ml/name of an explanation. */
static yyjson_val *pod_of(yyjson_doc *doc, const char *name)
{
    yyjson_val *p;
    size_t i, max;

    yyjson_arr_foreach (yyjson_obj_get(yyjson_doc_get_root(doc), "pods"), i, max, p)
        if (strcmp(json_get_str(p, "name"), name) == 0)
            return p;
    return NULL;
}

/* The codes of pod ml/name's reasons, joined by ",", into a static buffer ("-" when the pod is
 * not in the explanation). */
static const char *codes(struct cluster *c, const char *name)
{
    static char buf[512];
    yyjson_doc *doc = explain_doc(c, NULL, 0);
    yyjson_val *p = pod_of(doc, name), *r;
    size_t i, max, at = 0;

    snprintf(buf, sizeof(buf), "%s", p ? "" : "-");
    yyjson_arr_foreach (yyjson_obj_get(p, "reasons"), i, max, r)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? "," : "",
                               json_get_str(r, "code"));
    yyjson_doc_free(doc);
    return buf;
}

/* The message of pod ml/name's reason of code, into a static buffer ("" when it has none). */
static const char *message(struct cluster *c, const char *name, const char *code)
{
    static char buf[2048];
    yyjson_doc *doc = explain_doc(c, NULL, 0);
    yyjson_val *r;
    size_t i, max;

    buf[0] = '\0';
    yyjson_arr_foreach (yyjson_obj_get(pod_of(doc, name), "reasons"), i, max, r)
        if (strcmp(json_get_str(r, "code"), code) == 0)
            snprintf(buf, sizeof(buf), "%s", json_get_str(r, "message"));
    yyjson_doc_free(doc);
    return buf;
}

/* How many nodes the view finds room on for pod ml/name. */
static size_t fits(struct cluster *c, const char *name)
{
    yyjson_doc *doc = explain_doc(c, NULL, 0);
    size_t n = yyjson_arr_size(yyjson_obj_get(pod_of(doc, name), "fits"));

    yyjson_doc_free(doc);
    return n;
}

/* Two 4-GPU nodes, gpu-a and gpu-b, with used GPUs taken by pods at priority prio. */
static struct cluster *two_nodes(int used_a, int used_b, long prio)
{
    struct cluster *c = empty_view();
    char name[32];

    node(c, "gpu-a", 4, 4, "", "", "True");
    node(c, "gpu-b", 4, 4, "", "", "True");
    for (int i = 0; i < used_a; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        pod_at(c, "ADDED", name, "gpu-a", prio, "nvidia.com/gpu", 1);
    }
    for (int i = 0; i < used_b; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        pod_at(c, "ADDED", name, "gpu-b", prio, "nvidia.com/gpu", 1);
    }
    return c;
}

static void test_insufficient(void)
{
    struct cluster *c = two_nodes(4, 4, 5);
    yyjson_doc *doc;

    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    CHECK_CONTAINS(message(c, "p", "insufficient"), "gpu-a 0/4 free, gpu-b 0/4 free");
    CHECK(strstr(message(c, "p", "insufficient"), "fragmented") == NULL);
    doc = explain_doc(c, NULL, 0);
    CHECK_STR(json_get_str(yyjson_obj_get(pod_of(doc, "p"), "scheduler"), "message"),
              "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
    CHECK(yyjson_arr_size(yyjson_obj_get(pod_of(doc, "p"), "fits")) == 0);
    yyjson_doc_free(doc);
    cluster_free(c);

    /* near miss: one GPU free on gpu-b, where the pod fits */
    c = two_nodes(4, 3, 5);
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient"); /* gpu-a still lacks one */
    doc = explain_doc(c, NULL, 0);
    CHECK(yyjson_arr_size(yyjson_obj_get(pod_of(doc, "p"), "fits")) == 1);
    CHECK_STR(yyjson_get_str(yyjson_arr_get_first(yyjson_obj_get(pod_of(doc, "p"), "fits"))),
              "gpu-b");
    yyjson_doc_free(doc);
    cluster_free(c);
}

static void test_fragmented(void)
{
    struct cluster *c = two_nodes(2, 2, 5);

    /* 4 free in all, 2 a node: a 4-GPU pod lands on neither */
    waiting(c, "p", 4, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    CHECK_CONTAINS(message(c, "p", "insufficient"),
                   "4 are free in all but at most 2 on one node: the free GPUs are fragmented");
    /* near miss: a 2-GPU pod fits either node: no reason, and the nodes with room */
    waiting(c, "q", 2, "");
    CHECK_STR(codes(c, "q"), "");
    CHECK(fits(c, "q") == 2);
    /* and with a third node full, that one is short, but nothing is fragmented */
    node(c, "gpu-c", 4, 4, "", "", "True");
    pod_at(c, "ADDED", "c-0", "gpu-c", 5, "nvidia.com/gpu", 4);
    CHECK_STR(codes(c, "q"), "insufficient");
    CHECK_CONTAINS(message(c, "q", "insufficient"), "gpu-c 0/4 free");
    CHECK(strstr(message(c, "q", "insufficient"), "fragmented") == NULL);
    cluster_free(c);
}

static void test_larger_than_any_node(void)
{
    struct cluster *c = two_nodes(0, 0, 5);

    waiting(c, "big", 8, "");
    CHECK_STR(codes(c, "big"), "larger-than-any-node,insufficient");
    CHECK_CONTAINS(message(c, "big", "larger-than-any-node"),
                   "one pod asks for 8 nvidia.com/gpu, more than any node it may go to has: the "
                   "largest is gpu-a (4)");
    /* near miss: 4 is as large as a node */
    waiting(c, "four", 4, "");
    CHECK(strstr(codes(c, "four"), "larger-than-any-node") == NULL);
    cluster_free(c);
}

static void test_untolerated_taint(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 4, 4, "",
         "'taints':[{'key':'dedicated','value':'a100','effect':'NoSchedule'}]", "True");
    node(c, "gpu-b", 4, 4, "", "'taints':[{'key':'spot','effect':'PreferNoSchedule'}]", "True");
    pod_at(c, "ADDED", "b-0", "gpu-b", 0, "nvidia.com/gpu", 4);
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient,untolerated-taint");
    CHECK_CONTAINS(message(c, "p", "untolerated-taint"),
                   "1 node has taint dedicated=a100:NoSchedule, which the pod does not tolerate: "
                   "gpu-a");
    /* near miss: tolerated; PreferNoSchedule never filters */
    waiting(c, "q", 1,
            ",'tolerations':[{'key':'dedicated','operator':'Equal','value':'a100',"
            "'effect':'NoSchedule'}]");
    CHECK_STR(codes(c, "q"), "insufficient"); /* gpu-b, whose taint does not filter, is full */
    CHECK(fits(c, "q") == 1);
    cluster_free(c);
}

static void test_selector_mismatch(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 4, 4, ",'pool':'a100'", "", "True");
    node(c, "gpu-b", 4, 4, ",'pool':'t4'", "", "True");
    pod_at(c, "ADDED", "a-0", "gpu-a", 0, "nvidia.com/gpu", 4);
    waiting(c, "p", 1, ",'nodeSelector':{'pool':'a100'}");
    CHECK_STR(codes(c, "p"), "insufficient,selector-mismatch");
    CHECK_CONTAINS(message(c, "p", "selector-mismatch"),
                   "1 node is not labelled pool=a100 (spec.nodeSelector): gpu-b");
    waiting(c, "aff", 1,
            ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
            "'nodeSelectorTerms':[{'matchExpressions':[{'key':'pool','operator':'In',"
            "'values':['a100']}]}]}}}");
    CHECK_CONTAINS(message(c, "aff", "selector-mismatch"), "required node affinity: gpu-b");
    /* near miss: a selector every node carries */
    waiting(c, "q", 1, ",'nodeSelector':{'nvidia.com/gpu.present':'true'}");
    CHECK(strstr(codes(c, "q"), "selector-mismatch") == NULL);
    cluster_free(c);
}

static void test_node_unschedulable(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 4, 4, "", "'unschedulable':true", "True");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "node-unschedulable");
    CHECK_CONTAINS(message(c, "p", "node-unschedulable"), "1 node is cordoned");
    /* near miss: NodeUnschedulable lets a pod that tolerates the cordon's taint through */
    waiting(c, "q", 1,
            ",'tolerations':[{'key':'node.kubernetes.io/unschedulable','operator':'Exists',"
            "'effect':'NoSchedule'}]");
    CHECK_STR(codes(c, "q"), "");
    CHECK(fits(c, "q") == 1);
    cluster_free(c);
}

static void test_node_not_ready(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 4, 4, "",
         "'taints':[{'key':'node.kubernetes.io/not-ready','effect':'NoSchedule'}]", "False");
    node(c, "gpu-b", 4, 4, "",
         "'taints':[{'key':'node.kubernetes.io/unreachable','effect':'NoExecute'}]", "Unknown");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "node-not-ready");
    CHECK_CONTAINS(message(c, "p", "node-not-ready"), "2 nodes are not Ready: gpu-a, gpu-b");
    /* near misses: a pod that tolerates the not-ready taint may go to gpu-a; a NotReady node
     * whose taint has not come yet passes too (kube-scheduler has no Ready filter) */
    waiting(c, "q", 1,
            ",'tolerations':[{'key':'node.kubernetes.io/not-ready','operator':'Exists'}]");
    CHECK_STR(codes(c, "q"), "node-not-ready");
    CHECK_CONTAINS(message(c, "q", "node-not-ready"), "1 node is not Ready: gpu-b");
    CHECK(fits(c, "q") == 1);
    node(c, "gpu-c", 4, 4, "", "", "False");
    CHECK(fits(c, "p") == 1);
    cluster_free(c);
}

static void test_device_plugin_down(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 4, 0, "", "", "True");
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'gpu-b','labels':{'nvidia.com/gpu.present':'true'}},"
          "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'cpu':'8'},"
          "'allocatable':{'cpu':'8'}}}");
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'cpu-0'},"
          "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'cpu':'8'},"
          "'allocatable':{'cpu':'8'}}}");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "device-plugin-down");
    CHECK_CONTAINS(message(c, "p", "device-plugin-down"),
                   "gpu-a (capacity 4, allocatable 0), gpu-b (nvidia.com/gpu.present)");
    CHECK(strstr(message(c, "p", "device-plugin-down"), "cpu-0") == NULL);
    cluster_free(c);
    /* near miss: allocatable back at 4 */
    c = empty_view();
    node(c, "gpu-a", 4, 4, "", "", "True");
    pod_at(c, "ADDED", "a-0", "gpu-a", 0, "nvidia.com/gpu", 4);
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

static void test_no_gpu_anywhere(void)
{
    struct cluster *c = empty_view();

    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'cpu-0'},"
          "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'cpu':'8'},"
          "'allocatable':{'cpu':'8'}}}");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    CHECK_CONTAINS(message(c, "p", "insufficient"),
                   "asks for nvidia.com/gpu, and none of the 1 node it may go to offers it");
    cluster_free(c);
}

static void test_unhealthy_gpus(void)
{
    struct cluster *c = empty_view();

    node(c, "gpu-a", 8, 6, "", "", "True");
    for (int i = 0; i < 6; i++) {
        char name[16];

        snprintf(name, sizeof(name), "a-%d", i);
        pod_at(c, "ADDED", name, "gpu-a", 0, "nvidia.com/gpu", 1);
    }
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient,unhealthy-gpus");
    CHECK_CONTAINS(message(c, "p", "unhealthy-gpus"),
                   "1 node has unhealthy nvidia.com/gpu (capacity above allocatable): gpu-a (2 of "
                   "8)");
    cluster_free(c);
    /* near miss: capacity equals allocatable */
    c = empty_view();
    node(c, "gpu-a", 6, 6, "", "", "True");
    for (int i = 0; i < 6; i++) {
        char name[16];

        snprintf(name, sizeof(name), "a-%d", i);
        pod_at(c, "ADDED", name, "gpu-a", 0, "nvidia.com/gpu", 1);
    }
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

static void test_shared_request_gt_one(void)
{
    struct cluster *c = empty_view();

    node(c, "t4-a", 4, 4,
         ",'nvidia.com/gpu.sharing-strategy':'time-slicing','nvidia.com/gpu.replicas':'4'", "",
         "True");
    pod_at(c, "ADDED", "a-0", "t4-a", 0, "nvidia.com/gpu", 3);
    waiting(c, "p", 2, "");
    CHECK_STR(codes(c, "p"), "shared-request-gt-one,insufficient");
    CHECK_CONTAINS(message(c, "p", "shared-request-gt-one"),
                   "container c asks for 2 nvidia.com/gpu, on nodes that share each GPU "
                   "(time-slicing, nvidia.com/gpu.replicas=4)");
    /* near misses: one slice; two GPUs on a node that does not share them */
    waiting(c, "one", 1, "");
    CHECK_STR(codes(c, "one"), "");
    CHECK(fits(c, "one") == 1);
    cluster_free(c);
    c = empty_view();
    node(c, "a100", 4, 4, ",'nvidia.com/gpu.sharing-strategy':'none','nvidia.com/gpu.replicas':'1'",
         "", "True");
    pod_at(c, "ADDED", "a-0", "a100", 0, "nvidia.com/gpu", 3);
    waiting(c, "p", 2, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

static void test_preemption_possible(void)
{
    struct cluster *c = two_nodes(4, 4, 5);

    cls(c, "hi", 100, "PreemptLowerPriority");
    waiting(c, "p", 1, ",'priorityClassName':'hi','priority':100");
    CHECK_STR(codes(c, "p"), "preemption-possible,insufficient");
    CHECK_CONTAINS(message(c, "p", "preemption-possible"),
                   "pods of lower priority than its 100: they hold 8 nvidia.com/gpu on 2 nodes "
                   "where that makes room (8 in namespace ns at priority 5)");
    /* near misses: preemptionPolicy Never; holders of equal priority */
    waiting(c, "never", 1, ",'priorityClassName':'hi','priority':100,'preemptionPolicy':'Never'");
    CHECK_STR(codes(c, "never"), "insufficient");
    waiting(c, "equal", 1, ",'priorityClassName':'hi','priority':5");
    CHECK_STR(codes(c, "equal"), "insufficient");
    cluster_free(c);
}

static void test_no_priority_class(void)
{
    struct cluster *c = two_nodes(4, 4, 5);

    cls(c, "low", 5, "PreemptLowerPriority");
    cls(c, "hi", 100, "PreemptLowerPriority");
    cls(c, "top", 1000, "PreemptLowerPriority");
    cls(c, "system-cluster-critical", 2000000000, "PreemptLowerPriority");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "no-priority-class,insufficient");
    /* the least disruptive class that makes room: hi, not top, not a system class */
    CHECK_CONTAINS(message(c, "p", "no-priority-class"),
                   "names no PriorityClass (priority 0), so it preempts nothing; 8 nvidia.com/gpu "
                   "on 2 nodes are held by pods below PriorityClass hi (100) (8 in namespace ns at "
                   "priority 5 (low)): with priorityClassName: hi it would preempt them");
    cluster_free(c);

    /* near misses: the holders are above every user class; the only class never preempts */
    c = two_nodes(4, 4, 5000);
    cls(c, "hi", 100, "PreemptLowerPriority");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
    c = two_nodes(4, 4, 5);
    cls(c, "hi", 100, "Never");
    cls(c, "system-node-critical", 2000001000, "PreemptLowerPriority");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    /* a pod that names a class is not told to name one */
    waiting(c, "named", 1, ",'priorityClassName':'hi','priority':100,'preemptionPolicy':'Never'");
    CHECK_STR(codes(c, "named"), "insufficient");
    cluster_free(c);
}

/* A pod's own siblings are no victims of a class its template would name: they would carry it
 * too. */
static void test_no_priority_class_spares_siblings(void)
{
    struct cluster *c = empty_view();
    char buf[1024];

    node(c, "gpu-a", 4, 4, "", "", "True");
    node(c, "gpu-b", 4, 4, "", "", "True");
    for (int i = 0; i < 5; i++) {
        snprintf(buf, sizeof(buf),
                 "{'kind':'Pod','metadata':{'name':'r-%d','namespace':'ml','ownerReferences':[{"
                 "'kind':'ReplicaSet','name':'r','controller':true}]},'spec':{%s"
                 "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
                 "'status':{'phase':'%s'}}",
                 i, i < 4 ? "'nodeName':'gpu-a'," : "", i < 4 ? "Running" : "Pending");
        apply(c, CLUSTER_PODS, "ADDED", buf);
    }
    for (int i = 0; i < 4; i++) {
        char name[16];

        snprintf(name, sizeof(name), "b-%d", i);
        pod_at(c, "ADDED", name, "gpu-b", 5, "nvidia.com/gpu", 1);
    }
    cls(c, "three", 3, "PreemptLowerPriority");
    cls(c, "hi", 100, "PreemptLowerPriority");
    CHECK_STR(codes(c, "r-4"), "no-priority-class,insufficient");
    CHECK_CONTAINS(message(c, "r-4", "no-priority-class"),
                   "4 nvidia.com/gpu on 1 node are held by pods below PriorityClass hi (100) (4 in "
                   "namespace ns at priority 5)");
    cluster_free(c);
}

static void test_scheduling_gated(void)
{
    struct cluster *c = two_nodes(4, 4, 5);

    waiting(c, "p", 1, ",'schedulingGates':[{'name':'kueue.x-k8s.io/admission'}]");
    CHECK_STR(codes(c, "p"), "scheduling-gated");
    CHECK_CONTAINS(message(c, "p", "scheduling-gated"),
                   "gate kueue.x-k8s.io/admission: kube-scheduler does not consider it until "
                   "every gate is removed (Kueue removes this one");
    /* near miss: no gate */
    waiting(c, "q", 1, ",'schedulingGates':[]");
    CHECK_STR(codes(c, "q"), "insufficient");
    cluster_free(c);
}

static void test_other_scheduler(void)
{
    struct cluster *c = two_nodes(4, 4, 5);

    waiting(c, "p", 1, ",'schedulerName':'volcano'");
    CHECK_STR(codes(c, "p"), "other-scheduler");
    CHECK_CONTAINS(message(c, "p", "other-scheduler"), "scheduler volcano");
    /* near miss: the default scheduler named */
    waiting(c, "q", 1, ",'schedulerName':'default-scheduler'");
    CHECK_STR(codes(c, "q"), "insufficient");
    cluster_free(c);
}

/* Cluster Autoscaler's status ConfigMap (the YAML format of CA 1.30 and later,
 * clusterstate/api/types.go, in the shape of its clusterstate/utils/status_test.yaml) with one
 * node group. */
static void ca_status(struct cluster *c, const char *group, int target, int max,
                      const char *scale_up, const char *backoff)
{
    char yaml[2048];

    snprintf(yaml, sizeof(yaml),
             "time: \"2026-12-02 03:00:00.0 +0000 UTC\"\nautoscalerStatus: \"Running\"\n"
             "nodeGroups:\n  - name: \"%s\"\n    health:\n      status: \"Healthy\"\n"
             "      nodeCounts:\n        registered:\n          total: %d\n          ready: %d\n"
             "          notStarted: 0\n          unready:\n            total: 0\n"
             "            resourceUnready: 0\n        longUnregistered: 0\n"
             "        unregistered: 0\n      cloudProviderTarget: %d\n      minSize: 1\n"
             "      maxSize: %d\n    scaleUp:\n      status: \"%s\"\n%s",
             group, target, target, target, max, scale_up, backoff);
    view_ca_status(c, yaml, "2026-12-02 03:00:00.0 +0000 UTC");
}

/* Two full 4-GPU nodes of the EKS managed node group gpu (ASG eks-gpu-UUID), tainted. */
static struct cluster *eks_group(void)
{
    struct cluster *c = empty_view();
    char name[16];

    for (int n = 0; n < 2; n++) {
        snprintf(name, sizeof(name), "gpu-%d", n);
        node(c, name, 4, 4, ",'eks.amazonaws.com/nodegroup':'gpu'",
             "'taints':[{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'}]", "True");
        for (int i = 0; i < 4; i++) {
            char pod[32];

            snprintf(pod, sizeof(pod), "u%d-%d", n, i);
            pod_at(c, "ADDED", pod, name, 0, "nvidia.com/gpu", 1);
        }
    }
    return c;
}

#define TOLERATES_GPU ",'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists'}]"

static void test_node_group_at_max(void)
{
    struct cluster *c = eks_group();

    ca_status(c, "eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", 2, 2, "NoActivity", "");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "node-group-at-max,insufficient");
    CHECK_CONTAINS(message(c, "p", "node-group-at-max"),
                   "node group eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11, which could hold the "
                   "pod, is at its max size (2 of maxSize 2): Cluster Autoscaler adds no node to "
                   "it (max node group size reached)");
    /* near misses: a pod that does not tolerate the group's taint could never use it; a pod
     * of 8 GPUs is too large for its nodes */
    waiting(c, "q", 1, "");
    CHECK_STR(codes(c, "q"), "untolerated-taint");
    waiting(c, "big", 8, TOLERATES_GPU);
    CHECK(strstr(codes(c, "big"), "node-group-at-max") == NULL);
    cluster_free(c);
    /* near miss: room to grow */
    c = eks_group();
    ca_status(c, "eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", 2, 3, "NoActivity", "");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
    /* near miss: another group's name (eks-gpux-..., not eks-gpu-...) */
    c = eks_group();
    ca_status(c, "eks-gpux-3ec8e5b6", 2, 2, "NoActivity", "");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

/* Cluster Autoscaler expands any group it can: a group at its max says nothing while another
 * group that would hold the pod can grow. */
static void test_other_group_grows(void)
{
    struct cluster *c = eks_group();
    char yaml_two[2048];

    node(c, "gpu2-0", 4, 4, ",'eks.amazonaws.com/nodegroup':'gpu2'",
         "'taints':[{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'}]", "True");
    pod_at(c, "ADDED", "v0", "gpu2-0", 0, "nvidia.com/gpu", 4);
    snprintf(yaml_two, sizeof(yaml_two), "%s",
             "autoscalerStatus: Running\nnodeGroups:\n"
             "  - {name: gpu, health: {status: Healthy, cloudProviderTarget: 2, minSize: 1, "
             "maxSize: 2}, scaleUp: {status: NoActivity}}\n"
             "  - {name: gpu2, health: {status: Healthy, cloudProviderTarget: 1, minSize: 1, "
             "maxSize: 10}, scaleUp: {status: NoActivity}}\n");
    view_ca_status(c, yaml_two, NULL);
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    /* a pod gpu2's nodes cannot take (it selects gpu's): gpu at its max is the reason */
    waiting(c, "q", 1, TOLERATES_GPU ",'nodeSelector':{'eks.amazonaws.com/nodegroup':'gpu'}");
    CHECK_STR(codes(c, "q"), "node-group-at-max,insufficient,selector-mismatch");
    cluster_free(c);
}

static void test_autoscaler_backoff(void)
{
    struct cluster *c = eks_group();

    ca_status(c, "gpu", 2, 6, "Backoff",
              "      backoffInfo:\n        errorCode: \"InsufficientInstanceCapacity\"\n"
              "        errorMessage: \"We currently do not have sufficient p4d.24xlarge "
              "capacity\"\n");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "autoscaler-backoff,insufficient");
    CHECK_CONTAINS(message(c, "p", "autoscaler-backoff"),
                   "node group gpu, which could hold the pod, is in backoff after a failed "
                   "scale-up (InsufficientInstanceCapacity: We currently do not have sufficient "
                   "p4d.24xlarge capacity): Cluster Autoscaler adds no node to it");
    cluster_free(c);
    /* near miss: the same group scaling */
    c = eks_group();
    ca_status(c, "gpu", 2, 6, "InProgress", "");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

/* A Karpenter NodePool as the apiserver returns it (karpenter.sh/v1), with limit and used GPUs
 * and the GPU counts of its instance types. */
static void nodepool(struct cluster *c, const char *limit, const char *used, const char *counts)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu'},"
             "'spec':{'limits':{'nvidia.com/gpu':'%s'},'template':{'metadata':{'labels':{"
             "'team':'ml'}},'spec':{'nodeClassRef':{'group':'karpenter.k8s.aws','kind':"
             "'EC2NodeClass','name':'default'},'requirements':[{'key':"
             "'karpenter.k8s.aws/instance-gpu-count','operator':'In','values':[%s]}],"
             "'taints':[{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'}]}}},"
             "'status':{'resources':{'nvidia.com/gpu':'%s'}}}",
             limit, counts, used);
    apply(c, CLUSTER_NODEPOOLS, "ADDED", buf);
}

static void test_nodepool_limit(void)
{
    struct cluster *c = two_nodes(4, 4, 0);

    nodepool(c, "16", "16", "'1'");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "nodepool-limit,insufficient");
    CHECK_CONTAINS(message(c, "p", "nodepool-limit"),
                   "NodePool gpu, whose nodes could hold the pod, has 0 nvidia.com/gpu left of its "
                   "limit of 16 (spec.limits less status.resources), and a node of it needs 1");
    /* near misses: the pod does not tolerate the pool's taint; its selector contradicts the
     * pool's labels */
    waiting(c, "q", 1, "");
    CHECK_STR(codes(c, "q"), "insufficient");
    waiting(c, "r", 1, TOLERATES_GPU ",'nodeSelector':{'team':'web'}");
    CHECK_STR(codes(c, "r"), "selector-mismatch");
    cluster_free(c);
    /* whole instances: 4 GPUs left, and the pool's smallest node has 8 */
    c = two_nodes(4, 4, 0);
    nodepool(c, "16", "12", "'8'");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_CONTAINS(message(c, "p", "nodepool-limit"), "has 4 nvidia.com/gpu left of its limit of "
                                                      "16 (spec.limits less status.resources), "
                                                      "and a node of it needs 8");
    cluster_free(c);
    /* a pool the pod selects away from, by name or by a requirement; and a cpu limit spent */
    c = two_nodes(4, 4, 0);
    nodepool(c, "16", "16", "'1'");
    waiting(c, "byname", 1, TOLERATES_GPU ",'nodeSelector':{'karpenter.sh/nodepool':'other'}");
    CHECK(strstr(codes(c, "byname"), "nodepool-limit") == NULL);
    waiting(c, "bygpus", 1,
            TOLERATES_GPU ",'nodeSelector':{'karpenter.k8s.aws/instance-gpu-count':'8'}");
    CHECK(strstr(codes(c, "bygpus"), "nodepool-limit") == NULL);
    waiting(c, "same", 1, TOLERATES_GPU ",'nodeSelector':{'karpenter.sh/nodepool':'gpu'}");
    CHECK(strstr(codes(c, "same"), "nodepool-limit") != NULL);
    apply(c, CLUSTER_NODEPOOLS, "MODIFIED",
          "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu'},"
          "'spec':{'limits':{'cpu':'64'},'template':{'spec':{'nodeClassRef':{'group':"
          "'karpenter.k8s.aws','kind':'EC2NodeClass','name':'default'}}}},"
          "'status':{'resources':{'cpu':'64'}}}");
    waiting(c, "cpu", 1, "");
    CHECK_CONTAINS(message(c, "cpu", "nodepool-limit"),
                   "has used all of its limit of 64 cpu (spec.limits, status.resources)");
    cluster_free(c);
    /* Karpenter tries every NodePool: another that admits the pod and has room */
    c = two_nodes(4, 4, 0);
    nodepool(c, "16", "16", "'1'");
    apply(c, CLUSTER_NODEPOOLS, "ADDED",
          "{'apiVersion':'karpenter.sh/v1','kind':'NodePool','metadata':{'name':'gpu-b'},"
          "'spec':{'limits':{'nvidia.com/gpu':'100'},'template':{'spec':{'nodeClassRef':{"
          "'group':'karpenter.k8s.aws','kind':'EC2NodeClass','name':'default'}}}},"
          "'status':{'resources':{'nvidia.com/gpu':'0'}}}");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    /* a label neither pool sets, requires or knows: no pool launches for it, none is blamed */
    waiting(c, "gfd", 1, TOLERATES_GPU ",'nodeSelector':{'nvidia.com/gpu.present':'true'}");
    CHECK_STR(codes(c, "gfd"), "insufficient");
    /* a well-known label any instance carries */
    waiting(c, "arch", 1, TOLERATES_GPU ",'nodeSelector':{'kubernetes.io/arch':'amd64'}");
    CHECK_STR(codes(c, "arch"), "selector-mismatch"); /* the view's nodes lack the label */
    cluster_free(c);
    /* near miss: 4 left, nodes of 1 to 4 */
    c = two_nodes(4, 4, 0);
    nodepool(c, "16", "12", "'1','4'");
    waiting(c, "p", 1, TOLERATES_GPU);
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

static void test_names(void)
{
    struct cluster *c = two_nodes(4, 3, 5);
    const char *const names[] = {"replicaset/train", "pod/p", "rs/gone", "job/nothing"};
    const char *const bad[] = {"cronjob/x"};
    struct pending_query q = {NULL, bad, 1, 0};
    struct diag d;
    yyjson_doc *doc;
    yyjson_val *root;

    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'train-x','namespace':'ml','ownerReferences':[{"
          "'kind':'ReplicaSet','name':'train','controller':true}]},'spec':{'containers':[{"
          "'name':'c','resources':{'limits':{'nvidia.com/"
          "gpu':'2'}}}]},'status':{'phase':'Pending'}}");
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'p','namespace':'ml'},'spec':{'nodeName':'gpu-b',"
          "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
          "'status':{'phase':'Running'}}");
    apply(c, CLUSTER_REPLICASETS, "ADDED",
          "{'kind':'ReplicaSet','metadata':{'name':'gone','namespace':'ml'},'spec':{'replicas':0,"
          "'template':{'spec':{'containers':[{'name':'c','resources':{'limits':{"
          "'nvidia.com/gpu':'1'}}}]}}}}");
    doc = explain_doc(c, names, 4);
    root = yyjson_doc_get_root(doc);
    CHECK(yyjson_arr_size(yyjson_obj_get(root, "pods")) == 1);
    CHECK_STR(json_get_str(yyjson_obj_get(pod_of(doc, "train-x"), "owner"), "kind"), "ReplicaSet");
    CHECK(yyjson_get_sint(
              yyjson_obj_get(yyjson_obj_get(pod_of(doc, "train-x"), "owner"), "pods")) == 1);
    CHECK(yyjson_arr_size(yyjson_obj_get(root, "notPending")) == 2);
    CHECK_STR(json_get_str(yyjson_arr_get(yyjson_obj_get(root, "notPending"), 0), "message"),
              "pod ml/p is bound to node gpu-b");
    CHECK_STR(json_get_str(yyjson_arr_get(yyjson_obj_get(root, "notPending"), 1), "message"),
              "ReplicaSet ml/gone: none of its GPU pods is Pending");
    CHECK(yyjson_arr_size(yyjson_obj_get(root, "notFound")) == 1);
    CHECK_STR(yyjson_get_str(yyjson_arr_get(yyjson_obj_get(root, "notFound"), 0)), "job/nothing");
    yyjson_doc_free(doc);
    diag_clear(&d);
    CHECK(pending_explain(c, &q, &d) == NULL);
    CHECK_CONTAINS(d.msg, "cronjob/x: not a kind gpuadmit explains");
    cluster_free(c);
}

/* The gauge's counts: each Pending pod once, under its first reason; pods of one spec judged
 * together still count one each. */
static void test_count(void)
{
    struct cluster *c = two_nodes(4, 4, 5);
    uint64_t n[PENDING_COUNTS];
    char buf[1024];

    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof(buf),
                 "{'kind':'Pod','metadata':{'name':'r-%d','namespace':'ml','ownerReferences':[{"
                 "'kind':'ReplicaSet','name':'r','controller':true}]},'spec':{'containers':[{"
                 "'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
                 "'status':{'phase':'Pending'}}",
                 i);
        apply(c, CLUSTER_PODS, "ADDED", buf);
    }
    waiting(c, "big", 8, "");
    waiting(c, "gated", 1, ",'schedulingGates':[{'name':'x'}]");
    /* room, for the one pod that tolerates it */
    node(c, "gpu-c", 4, 4, ",'pool':'c'",
         "'taints':[{'key':'pool','value':'c','effect':'NoSchedule'}]", "True");
    waiting(c, "fits", 1,
            ",'nodeSelector':{'pool':'c'},'tolerations':[{'key':'pool','operator':'Exists'}]");
    CHECK(pending_count(c, n) == 0);
    CHECK(n[PENDING_INSUFFICIENT] == 3);
    CHECK(n[PENDING_LARGER_THAN_ANY_NODE] == 1);
    CHECK(n[PENDING_SCHEDULING_GATED] == 1);
    CHECK(n[PENDING_CODES] == 1);             /* the view has room for "fits" */
    CHECK(n[PENDING_SELECTOR_MISMATCH] == 0); /* its other nodes' reason is not why it waits */
    {
        uint64_t sum = 0;

        for (int i = 0; i < PENDING_COUNTS; i++)
            sum += n[i];
        CHECK(sum == 6);
    }
    cluster_free(c);
}

/* Review findings: kube-scheduler counts pods nominated to a node, of equal or higher
 * priority, as if they were there (framework/runtime/framework.go,
 * RunFilterPluginsWithNominatedPods); a view without nodes; an AMD request on an NVIDIA node;
 * a workload's replicas in the owner's count; the caps on what is listed. */
static void test_review_findings(void)
{
    struct cluster *c = two_nodes(4, 0, 5);
    const char *const one[] = {"rs/r"};
    struct pending_query q = {NULL, NULL, 0, 1};
    struct diag d;
    yyjson_mut_doc *m;
    yyjson_doc *doc;

    waiting(c, "hi", 4, ",'priority':1000");
    apply(c, CLUSTER_PODS, "MODIFIED",
          "{'kind':'Pod','metadata':{'name':'hi','namespace':'ml'},'spec':{'priority':1000,"
          "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'4'}}}]},"
          "'status':{'phase':'Pending','nominatedNodeName':'gpu-b'}}");
    waiting(c, "lo", 1, "");
    CHECK_STR(codes(c, "lo"), "insufficient"); /* gpu-b is the nominated pod's */
    CHECK_CONTAINS(message(c, "lo", "insufficient"), "gpu-b 0/4 free");
    CHECK(fits(c, "hi") == 1); /* a pod's own nomination is no obstacle to itself */
    waiting(c, "top", 1, ",'priority':2000");
    CHECK(fits(c, "top") == 1); /* nor to a pod of higher priority */
    /* the debug endpoint's cap */
    diag_clear(&d);
    m = pending_explain(c, &q, &d);
    doc = json_freeze(yyjson_mut_doc_get_root(m));
    CHECK(yyjson_arr_size(yyjson_obj_get(yyjson_doc_get_root(doc), "pods")) == 1);
    CHECK(yyjson_get_sint(yyjson_obj_get(yyjson_doc_get_root(doc), "morePods")) == 2);
    yyjson_doc_free(doc);
    yyjson_mut_doc_free(m);
    cluster_free(c);

    c = empty_view();
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    CHECK_STR(message(c, "p", "insufficient"), "the view holds no node to place it on");
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'amd','namespace':'ml'},'spec':{'containers':[{"
          "'name':'c','resources':{'limits':{'amd.com/gpu':'1'}}}]},'status':{'phase':'Pending'}}");
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'gpu-x','labels':{'nvidia.com/gpu.present':'true'}},"
          "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'cpu':'8'},"
          "'allocatable':{'cpu':'8'}}}");
    CHECK_STR(codes(c, "amd"), "insufficient"); /* not NVIDIA's plugin to blame */
    CHECK_STR(codes(c, "p"), "device-plugin-down");
    cluster_free(c);

    /* 60 full nodes: 50 names listed, 60 counted; a ReplicaSet of 3 replicas with 1 pod seen */
    c = empty_view();
    for (int i = 0; i < 60; i++) {
        char name[16], pod[16];

        snprintf(name, sizeof(name), "n-%02d", i);
        snprintf(pod, sizeof(pod), "u-%02d", i);
        node(c, name, 1, 1, "", "", "True");
        pod_at(c, "ADDED", pod, name, 0, "nvidia.com/gpu", 1);
    }
    apply(c, CLUSTER_REPLICASETS, "ADDED",
          "{'kind':'ReplicaSet','metadata':{'name':'r','namespace':'ml'},'spec':{'replicas':3,"
          "'template':{'spec':{'containers':[{'name':'c','resources':{'limits':{"
          "'nvidia.com/gpu':'1'}}}]}}}}");
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'r-0','namespace':'ml','ownerReferences':[{"
          "'kind':'ReplicaSet','name':'r','controller':true}]},'spec':{'containers':[{'name':'c',"
          "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':'Pending'}}");
    doc = explain_doc(c, one, 1);
    {
        yyjson_val *pod = pod_of(doc, "r-0"),
                   *r = yyjson_arr_get_first(yyjson_obj_get(pod, "reasons"));

        CHECK(yyjson_get_sint(yyjson_obj_get(yyjson_obj_get(pod, "owner"), "pods")) == 3);
        CHECK(yyjson_arr_size(yyjson_obj_get(r, "nodes")) == PENDING_NODES_LISTED_MAX);
        CHECK(yyjson_get_sint(yyjson_obj_get(r, "nodeCount")) == 60);
        CHECK_CONTAINS(yyjson_get_str(yyjson_obj_get(r, "message")), "and 52 more");
    }
    yyjson_doc_free(doc);
    cluster_free(c);
}

/* A device plugin config ConfigMap ns/name with data keys, each holding a time-slicing config. */
static void plugin_config(struct cluster *c, const char *ns, const char *name, const char *keys)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{'kind':'ConfigMap','metadata':{'name':'%s','namespace':'%s'},'data':{%s}}", name, ns,
             keys);
    apply(c, CLUSTER_PLUGIN_CONFIGS, "ADDED", buf);
}

#define TS4                                                                                        \
    "'version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n    - {name: nvidia.com/gpu, "    \
    "replicas: 4}\\n'"

/* A node labelled nvidia.com/device-plugin.config=KEY with a KEY its plugin's ConfigMap lacks:
 * the config manager exits with "specified config KEY does not exist" (NVIDIA/k8s-device-plugin
 * cmd/config-manager/main.go), so the 4 replicas never come. */
static void test_device_plugin_config_missing(void)
{
    struct cluster *c = two_nodes(1, 1, 5);
    const char *msg;

    node(c, "gpu-a", 1, 1, ",'nvidia.com/device-plugin.config':'tesla-t4'", "", "True");
    node(c, "gpu-b", 1, 1, ",'nvidia.com/device-plugin.config':'a100'", "", "True");
    plugin_config(c, "gpu-operator", "time-slicing-config", "'a100':" TS4);
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "device-plugin-config-missing,insufficient");
    msg = message(c, "p", "device-plugin-config-missing");
    CHECK_STR(msg, "1 node short of GPUs is labelled nvidia.com/device-plugin.config=tesla-t4, a "
                   "config the device plugin's ConfigMap does not have (it has "
                   "gpu-operator/time-slicing-config: a100): the plugin's config manager exits "
                   "with \"specified config tesla-t4 does not exist\", so the plugin keeps the "
                   "config it had or, started anew, does not start; add the key or fix the "
                   "label: gpu-a");
    /* near miss: with the key there, the nodes are only full */
    plugin_config(c, "gpu-operator", "time-slicing-config", "'a100':" TS4 ",'tesla-t4':" TS4);
    CHECK_STR(codes(c, "p"), "insufficient");
    /* near miss: a ConfigMap the policy does not name is not kept, so nothing is judged */
    plugin_config(c, "gpu-operator", "time-slicing-config", "'a100':" TS4);
    CHECK_STR(codes(c, "p"), "device-plugin-config-missing,insufficient");
    {
        struct cluster_cm_ref other = {"ml", "mine"};

        cluster_plugin_configs_want(c, &other, 1);
        CHECK_STR(codes(c, "p"), "insufficient"); /* the held one is no longer named: gone */
        plugin_config(c, "gpu-operator", "time-slicing-config", "'a100':" TS4);
        CHECK_STR(codes(c, "p"), "insufficient");
        plugin_config(c, "ml", "mine", "'a100':" TS4);
        CHECK_STR(codes(c, "p"), "device-plugin-config-missing,insufficient");
    }
    cluster_free(c);
    /* near miss: no config in the view, nothing to judge the label by */
    c = two_nodes(1, 1, 5);
    node(c, "gpu-a", 1, 1, ",'nvidia.com/device-plugin.config':'tesla-t4'", "", "True");
    waiting(c, "p", 1, "");
    CHECK_STR(codes(c, "p"), "insufficient");
    cluster_free(c);
}

static void test_codes_named(void)
{
    CHECK_STR(pending_code_name(PENDING_INSUFFICIENT), "insufficient");
    CHECK_STR(pending_code_name(PENDING_NODEPOOL_LIMIT), "nodepool-limit");
    CHECK(pending_code_name(PENDING_CODES) == NULL);
    for (int i = 0; i < PENDING_CODES; i++)
        CHECK(pending_code_name((enum pending_code)i) != NULL);
}

int main(void)
{
    RUN(test_insufficient);
    RUN(test_fragmented);
    RUN(test_larger_than_any_node);
    RUN(test_untolerated_taint);
    RUN(test_selector_mismatch);
    RUN(test_node_unschedulable);
    RUN(test_node_not_ready);
    RUN(test_device_plugin_down);
    RUN(test_device_plugin_config_missing);
    RUN(test_no_gpu_anywhere);
    RUN(test_unhealthy_gpus);
    RUN(test_shared_request_gt_one);
    RUN(test_preemption_possible);
    RUN(test_no_priority_class);
    RUN(test_no_priority_class_spares_siblings);
    RUN(test_scheduling_gated);
    RUN(test_other_scheduler);
    RUN(test_node_group_at_max);
    RUN(test_other_group_grows);
    RUN(test_autoscaler_backoff);
    RUN(test_nodepool_limit);
    RUN(test_names);
    RUN(test_count);
    RUN(test_review_findings);
    RUN(test_codes_named);
    TEST_MAIN_END("test_pending");
}
