/*
 * test_capacity.c: capacity.c, the fit of a template's pods on the cluster view: eligible
 * nodes and the reasons for the others, free GPUs now and at most, preemption, headroom,
 * reservations, the pods already waiting, and what the cache remembers between decisions.
 */
#include "cluster/capacity_cache.h"
#include "view_fixture.h"

/* A one-GPU pod template with the stall scenario's toleration and selector. */
#define TEMPLATE(cls)                                                                              \
    "{'priorityClassName':'" cls "','tolerations':[{'key':'nvidia.com/gpu','operator':'Exists',"   \
    "'effect':'NoSchedule'}],'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"       \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"

static void test_capacity_stall(void)
{
    struct cluster *c = stall();
    struct capacity_result r;
    char text[2048];
    yyjson_val *spec = js(TEMPLATE("batch-low"));
    struct capacity_request rq = {spec, &gpus, 8, 8, 0, 0, 0};

    /* equal priority: nothing to preempt; 4 GPUs free of 16 */
    r = judge(c, TEMPLATE("batch-low"), 8, 0);
    CHECK(r.judged && r.eligible == 4);
    CHECK(r.fit_now == 4);
    CHECK(r.fit_ever == 16);
    CHECK(r.total_gpus[0] == 16);
    CHECK_STR(r.reasons, "1 node has no nvidia.com/gpu");
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "8 more pods × 1 nvidia.com/gpu = 8 requested");
    CHECK_CONTAINS(text, "4 eligible nodes (");
    CHECK_CONTAINS(text, "1/4 free");
    CHECK_CONTAINS(text, "4 more fit now");
    CHECK_CONTAINS(text, "16 at most");
    CHECK_CONTAINS(text, "not eligible: 1 node has no nvidia.com/gpu");

    /* a preempting class counts the 12 lower-priority GPUs */
    r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
    CHECK(r.fit_now == 16 && r.preempts && r.priority == 1000000);
    /* headroom keeps one GPU free per node now; at most is the allocatable alone, as the
     * README says (the headroom is the policy's, the scheduler knows nothing of it) */
    r = judge(c, TEMPLATE("gpu-critical"), 8, 1);
    CHECK(r.fit_now == 12 && r.fit_ever == 16);
    capacity_explain(&(struct capacity_request){spec, &gpus, 8, 8, 1, 0, 0}, &r, text,
                     sizeof(text));
    CHECK_CONTAINS(text, "12 more fit now (it may preempt lower-priority pods) keeping the "
                         "headroom of 1 free on each node, 16 at most");
    /* without the toleration the taint keeps it off every GPU node */
    r = judge(c, "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}", 1,
              0);
    CHECK(r.eligible == 0 && r.fit_ever == 0);
    CHECK_CONTAINS(r.reasons, "4 nodes have untolerated taint nvidia.com/gpu=true:NoSchedule");
    CHECK_CONTAINS(r.reasons, "1 node has no nvidia.com/gpu");
    /* two GPUs a pod: whole pods per node */
    r = judge(c,
              "{'priorityClassName':'gpu-critical','tolerations':[{'operator':'Exists'}],"
              "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'3'}}}]}",
              1, 0);
    CHECK(r.fit_ever == 4 && r.fit_now == 4); /* 4 nodes × floor(4/3) */
    /* a template with no GPU is not judged */
    r = judge(c, "{'containers':[{'name':'t'}]}", 1, 0);
    CHECK(!r.judged);

    /* an admitted increase is held back for a while */
    capacity_reserve(c, &rq, 3, 60);
    r = judge(c, TEMPLATE("batch-low"), 8, 0);
    CHECK(r.fit_now == 1);
    js_free(spec);
    cluster_free(c);
}

/* "(it may preempt lower-priority pods)" only when a pod on the eligible nodes' GPUs has a
 * strictly lower priority and the class does not say preemptionPolicy: Never: kube-scheduler's
 * DefaultPreemption evicts only strictly lower priorities (default_preemption.go,
 * isPreemptionAllowed), and never for a pod of preemptionPolicy Never
 * (PodEligibleToPreemptOthers). stall.json: 12 GPUs held by pods at batch-low (1000). */
static void test_preemption_hint(void)
{
    struct cluster *c = stall();
    struct capacity_result r;
    char text[2048];
    yyjson_val *spec = js(TEMPLATE("batch-low"));
    struct capacity_request rq = {spec, &gpus, 8, 8, 0, 0, 0};

    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'urgent-never'},'value':1000000,"
          "'preemptionPolicy':'Never'}");
    /* equal priority: nothing it may preempt */
    r = judge(c, TEMPLATE("batch-low"), 8, 0);
    CHECK(r.preempts && r.priority == 1000 && r.lower == 0 && r.fit_now == 4);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "; 4 more fit now, 16 at most");
    CHECK(strstr(text, "preempt") == NULL);
    /* a higher class: the 12 GPUs of batch-low pods are its to take */
    r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
    CHECK(r.preempts && r.lower == 12 && r.fit_now == 16);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "; 16 more fit now (it may preempt lower-priority pods), 16 at most");
    /* as high, but preemptionPolicy: Never: it waits for free GPUs like anyone */
    r = judge(c, TEMPLATE("urgent-never"), 8, 0);
    CHECK(!r.preempts && r.priority == 1000000 && r.lower == 0 && r.fit_now == 4);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "; 4 more fit now, 16 at most");
    CHECK(strstr(text, "preempt") == NULL);
    /* the node-by-node way (a reservation held) counts the same */
    capacity_reserve(c, &rq, 1, 60);
    r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
    CHECK(r.lower == 12 && r.fit_now == 15);
    r = judge(c, TEMPLATE("batch-low"), 8, 0);
    CHECK(r.lower == 0 && r.fit_now == 3);
    cluster_free(c);
    /* and the way with pods waiting: a Pending pod at gpu-critical waits first */
    c = stall();
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'first','namespace':'ml'},'spec':{'priority':1000000,"
          "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoSchedule'}],"
          "'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{'name':'t',"
          "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':'Pending'}}");
    r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
    CHECK(r.waiting_pods == 1 && r.lower == 12 && r.fit_now == 15);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "; 15 more fit now (it may preempt lower-priority pods)");
    cluster_free(c);
    /* and so does the way with pods waiting: pending.json, 12 GPUs bound and 4 pods Pending,
     * all at gpu-standard (100000) */
    c = cluster_new(&(struct cluster_config){60});
    CHECK(cluster_load_snapshot(c, "tests/data/snapshots/pending.json", &(struct diag){0}) == 0);
    r = judge(c, TEMPLATE("gpu-standard"), 1, 0);
    CHECK(r.waiting_pods == 4 && r.lower == 0);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK(strstr(text, "preempt") == NULL);
    r = judge(c, TEMPLATE("gpu-critical"), 1, 0);
    CHECK(r.lower == 12);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "(it may preempt lower-priority pods)");
    js_free(spec);
    cluster_free(c);
}

/* Preemption frees a node for a pod only when the pod then fits there (kube-scheduler's
 * DefaultPreemption picks victims on a node until the preemptor fits, and a node where it
 * cannot is no candidate): the hint and r.lower count only nodes where preempting makes room.
 * One node of 4: 1 GPU held at priority 5, 2 at 100, so 1 free. */
static void test_preemption_only_where_it_makes_room(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct capacity_result r;
    char text[2048];
    static const char need4[] = "{'priorityClassName':'hi','containers':[{'name':'t','resources':"
                                "{'limits':{'nvidia.com/gpu':'4'}}}]}";
    static const char need2[] = "{'priorityClassName':'hi','containers':[{'name':'t','resources':"
                                "{'limits':{'nvidia.com/gpu':'2'}}}]}";
    yyjson_val *spec = js(need4);
    struct capacity_request rq = {spec, &gpus, 1, 1, 0, 0, 0};

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'hi'},'value':100}");
    apply(c, CLUSTER_NODES, "ADDED", NODE("n", "4", "4", ""));
    apply(c, CLUSTER_PODS, "ADDED", POD("low", "n", "1", "Running"));
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'high','namespace':'ns'},'spec':{'nodeName':'n',"
          "'priority':100,'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':"
          "'2'}}}]},'status':{'phase':'Running'}}");
    /* 4 a pod: preempting the low pod frees 2, not 4; no room made, no hint */
    r = judge(c, need4, 1, 0);
    CHECK(r.preempts && r.lower == 0 && r.fit_now == 0);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK(strstr(text, "preempt") == NULL);
    /* 2 a pod: the 1 free and the low pod's 1 make room for one */
    r = judge(c, need2, 1, 0);
    CHECK(r.preempts && r.lower == 1 && r.fit_now == 1);
    capacity_explain(&rq, &r, text, sizeof(text));
    CHECK_CONTAINS(text, "1 more fit now (it may preempt lower-priority pods)");
    js_free(spec);
    cluster_free(c);
}

/* An increase that fits only by preempting says what it takes and from whom; one that fits
 * the free GPUs, whose class says preemptionPolicy: Never, or whose holders are of its own
 * priority does not. stall.json: 4 nodes of 4 GPUs, 3 each held by pods of namespace batch at
 * batch-low (1000), so 4 free. */
static void test_fits_only_by_preempting(void)
{
    struct cluster *c = stall();
    struct capacity_result r;

    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'urgent-never'},'value':1000000,"
          "'preemptionPolicy':'Never'}");
    /* 8: 4 land on the free GPUs, the other 4 each evict one pod */
    r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
    CHECK(r.fit_now == 16 && r.fit_alone == 4);
    CHECK(r.preempt_only && r.preempt_gpus == 4 && r.preempt_held == 12);
    CHECK_STR(r.preempt_who, "4 in namespace batch at priority 1000 (batch-low)");
    /* 16: every GPU, the 12 of the lower pods too */
    r = judge(c, TEMPLATE("gpu-critical"), 16, 0);
    CHECK(r.preempt_only && r.preempt_gpus == 12);
    CHECK_STR(r.preempt_who, "12 in namespace batch at priority 1000 (batch-low)");
    /* 4 fit the free GPUs: nobody is evicted */
    r = judge(c, TEMPLATE("gpu-critical"), 4, 0);
    CHECK(r.fit_alone == 4 && !r.preempt_only && r.preempt_gpus == 0 && r.preempt_who[0] == 0);
    /* 17 do not fit at all: not "only by preempting" */
    r = judge(c, TEMPLATE("gpu-critical"), 17, 0);
    CHECK(!r.preempt_only);
    /* the headroom is the policy's: 4 fit now only by preempting as it counts, but the
     * scheduler puts them on the free GPUs the headroom keeps, and evicts nobody */
    r = judge(c, TEMPLATE("gpu-critical"), 4, 1);
    CHECK(r.fit_alone == 0 && r.fit_now == 12 && !r.preempt_only);
    /* with it, 8 still take 4 (the scheduler knows no headroom) */
    r = judge(c, TEMPLATE("gpu-critical"), 8, 1);
    CHECK(r.preempt_only && r.preempt_gpus == 4);
    /* preemptionPolicy: Never, and a class of the holders' own priority: only the free 4 */
    r = judge(c, TEMPLATE("urgent-never"), 4, 0);
    CHECK(!r.preempt_only && r.fit_now == 4);
    r = judge(c, TEMPLATE("urgent-never"), 8, 0);
    CHECK(!r.preempt_only && r.fit_now == 4);
    r = judge(c, TEMPLATE("batch-low"), 8, 0);
    CHECK(!r.preempt_only && r.lower == 0 && r.fit_now == 4);
    /* a Pending pod at gpu-critical takes a free GPU first: 4 then evict one */
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'first','namespace':'ml'},'spec':{'priority':1000000,"
          "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoSchedule'}],"
          "'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{'name':'t',"
          "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':'Pending'}}");
    r = judge(c, TEMPLATE("gpu-critical"), 4, 0);
    CHECK(r.fit_alone == 3 && r.fit_now == 15 && r.preempt_only && r.preempt_gpus == 1);
    apply(c, CLUSTER_PODS, "DELETED",
          "{'kind':'Pod','metadata':{'name':'first','namespace':'ml'},'spec':{'priority':1000000,"
          "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
          "'status':{'phase':'Pending'}}");
    r = judge(c, TEMPLATE("gpu-critical"), 4, 0);
    CHECK(r.fit_alone == 4 && !r.preempt_only);
    /* a reservation takes one free GPU: 8 then take 5 (the node-by-node way) */
    {
        yyjson_val *spec = js(TEMPLATE("batch-low"));
        struct capacity_request rq = {spec, &gpus, 1, 1, 0, 0, 0};

        capacity_reserve(c, &rq, 1, 60);
        r = judge(c, TEMPLATE("gpu-critical"), 8, 0);
        CHECK(r.fit_now == 15 && r.fit_alone == 3 && r.preempt_only && r.preempt_gpus == 5);
        js_free(spec);
    }
    cluster_free(c);
}

/* What is taken and from whom on two nodes of 4 GPUs, for pods of 4 at priority 100: a holds
 * 2 at 5 (ml) and 2 at 50 (batch), b 1 at 5 (batch) with 3 free; 100 on b holds nothing it
 * may take. */
static void test_preemption_holders(void)
{
    struct cluster *c = empty_view();
    struct capacity_result r;
    static const char need4[] = "{'priorityClassName':'hi','containers':[{'name':'t','resources':"
                                "{'limits':{'nvidia.com/gpu':'4'}}}]}";
    static const char same[] = "{'priorityClassName':'lo','containers':[{'name':'t','resources':"
                               "{'limits':{'nvidia.com/gpu':'1'}}}]}";
#define AT(ns, name, node, prio, n)                                                                \
    "{'kind':'Pod','metadata':{'name':'" name "','namespace':'" ns "'},'spec':{'nodeName':'" node  \
    "','priority':" prio ",'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'" n  \
    "'}}}]},'status':{'phase':'Running'}}"

    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'hi'},'value':100}");
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'lo'},'value':5}");
    apply(c, CLUSTER_NODES, "ADDED", NODE("a", "4", "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", NODE("b", "8", "8", ""));
    apply(c, CLUSTER_PODS, "ADDED", AT("ml", "a1", "a", "5", "2"));
    apply(c, CLUSTER_PODS, "ADDED", AT("batch", "a2", "a", "50", "2"));
    apply(c, CLUSTER_PODS, "ADDED", AT("batch", "b1", "b", "5", "1"));
    apply(c, CLUSTER_PODS, "ADDED", AT("ml", "b2", "b", "100", "4"));
    /* 2: neither fits free; the one on b uses b's 3 free, so at least 4 + 1 */
    r = judge(c, need4, 2, 0);
    CHECK(r.fit_alone == 0 && r.fit_now == 2);
    CHECK(r.preempt_only && r.preempt_gpus == 5 && r.preempt_held == 5 && !r.preempt_exact);
    CHECK_STR(r.preempt_who, "2 in namespace ml at priority 5 (lo), 1 in namespace batch at "
                             "priority 5 (lo), 2 in namespace batch at priority 50");
    /* 1: at least the 1 b lacks; which namespace at 5 loses it is the scheduler's choice */
    r = judge(c, need4, 1, 0);
    CHECK(r.preempt_only && r.preempt_gpus == 1);
    CHECK_STR(r.preempt_who, "up to 1 in namespace ml at priority 5 (lo), up to 1 in namespace "
                             "batch at priority 5 (lo)");
    /* at the holders' own priority nothing is taken: 3 fit b's free GPUs, the fourth none */
    r = judge(c, same, 3, 0);
    CHECK(r.fit_now == 3 && !r.preempt_only);
    r = judge(c, same, 4, 0);
    CHECK(r.fit_now == 3 && !r.preempt_only);
    cluster_free(c);

    /* one node of 4: 2 held at the template's own 100, 1 at 5, 1 free; pods of one GPU, 2 of
     * them: one evicts the pod at 5, exactly, and the pod at 100 is nobody's to take */
    c = empty_view();
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'hi'},'value':100}");
    apply(c, CLUSTER_NODES, "ADDED", NODE("e", "4", "4", ""));
    apply(c, CLUSTER_PODS, "ADDED", AT("ml", "eq", "e", "100", "2"));
    apply(c, CLUSTER_PODS, "ADDED", AT("batch", "lo", "e", "5", "1"));
    r = judge(c,
              "{'priorityClassName':'hi','containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'1'}}}]}",
              2, 0);
    CHECK(r.fit_alone == 1 && r.fit_now == 2 && r.preempt_only && r.preempt_gpus == 1);
    CHECK(r.preempt_exact && r.preempt_held == 1);
    CHECK_STR(r.preempt_who, "1 in namespace batch at priority 5");
    /* pods of 4: the free one and the pod at 5 make no room for one; nothing is taken */
    r = judge(c, need4, 1, 0);
    CHECK(r.fit_now == 0 && !r.preempt_only);
#undef AT
    cluster_free(c);
}

/* Reservations sit on the nodes the workload can use, and shrink as its pods arrive. */
static void test_reservations(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct capacity_result r;
    yyjson_val *a = js("{'nodeSelector':{'pool':'a'},'containers':[{'name':'t','resources':"
                       "{'limits':{'nvidia.com/gpu':'1'}}}]}");
    struct capacity_request rqa = {a, &gpus, 4, 4, 0, 0, 0};

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'a1','labels':{'pool':'a'}},'status':{'conditions':"
          "[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':'4'},'allocatable':"
          "{'nvidia.com/gpu':'4'}}}");
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'b1','labels':{'pool':'b'}},'status':{'conditions':"
          "[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':'4'},'allocatable':"
          "{'nvidia.com/gpu':'4'}}}");
    capacity_reserve(c, &rqa, 2, 60);
    r = judge(c,
              "{'nodeSelector':{'pool':'a'},'containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'1'}}}]}",
              4, 0);
    CHECK(r.fit_now == 2);
    /* pool b is untouched by pool a's reservation */
    r = judge(c,
              "{'nodeSelector':{'pool':'b'},'containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'1'}}}]}",
              4, 0);
    CHECK(r.fit_now == 4);
    /* the two pods show up on a1: the reservation is spent, not counted again */
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'x1','namespace':'ns'},'spec':{'nodeName':'a1',"
          "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}");
    r = judge(c,
              "{'nodeSelector':{'pool':'a'},'containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'1'}}}]}",
              4, 0);
    CHECK(r.fit_now == 2); /* one arrived, one still reserved */
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'x2','namespace':'ns'},'spec':{'nodeName':'a1',"
          "'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}");
    r = judge(c,
              "{'nodeSelector':{'pool':'a'},'containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'1'}}}]}",
              4, 0);
    CHECK(r.fit_now == 2); /* both arrived: 4 - 2 used, nothing held */
    CHECK_CONTAINS(r.nodes, "a1 2/4 free");
    js_free(a);
    cluster_free(c);
}

/* The scheduler's node affinity: matchFields on the node's name, an empty term matches
 * nothing, Gt on an empty value does not match. */
static void test_affinity_rules(void)
{
    struct cluster *c = stall();
    struct capacity_result r;

    r = judge(c,
              "{'tolerations':[{'operator':'Exists'}],'affinity':{'nodeAffinity':{"
              "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{"
              "'matchFields':[{'key':'metadata.name','operator':'In','values':['gpu-1']}]}]}}},"
              "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
              1, 0);
    CHECK(r.eligible == 1 && r.fit_ever == 4);
    r = judge(c,
              "{'tolerations':[{'operator':'Exists'}],'affinity':{'nodeAffinity':{"
              "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{}]}}},"
              "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
              1, 0);
    CHECK(r.eligible == 0);
    r = judge(c,
              "{'tolerations':[{'operator':'Exists'}],'affinity':{'nodeAffinity':{"
              "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{"
              "'matchExpressions':[{'key':'kubernetes.io/hostname','operator':'Gt','values':"
              "['0']}]}]}}},'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':"
              "'1'}}}]}",
              1, 0);
    CHECK(r.eligible == 0); /* hostnames are not integers */
    cluster_free(c);
}

static void test_capacity_nodes(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct capacity_result r;

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    apply(c, CLUSTER_NODES, "ADDED", NODE("ok", "4", "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", NODE("cordoned", "4", "4", "'unschedulable':true"));
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'down','labels':{'nvidia.com/gpu.present':'true'}},"
          "'status':{'conditions':[{'type':'Ready','status':'False'}],'capacity':{'nvidia.com/gpu':"
          "'4'},'allocatable':{'nvidia.com/gpu':'4'}}}");
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'sliced','labels':{'nvidia.com/gpu.present':'true',"
          "'nvidia.com/gpu.sharing-strategy':'time-slicing','nvidia.com/gpu.replicas':'4',"
          "'zone':'b'}},'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':"
          "{'nvidia.com/gpu':'16'},'allocatable':{'nvidia.com/gpu':'16'}}}");
    r = judge(c, "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}", 1,
              0);
    CHECK(r.eligible == 2 && r.fit_now == 20);
    CHECK_CONTAINS(r.reasons, "1 node is cordoned");
    CHECK_CONTAINS(r.reasons, "1 node is not Ready");
    CHECK(!r.all_shared);
    /* required node affinity: only the time-sliced node, which shares its GPUs */
    r = judge(c,
              "{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
              "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone','operator':'In',"
              "'values':['b']}]}]}}},'containers':[{'name':'t','resources':{'limits':"
              "{'nvidia.com/gpu':'2'}}}]}",
              1, 0);
    CHECK(r.eligible == 1 && r.fit_now == 8 && r.all_shared);
    CHECK_STR(r.shared_why, "time-slicing, nvidia.com/gpu.replicas=4");
    CHECK_CONTAINS(r.reasons, "do not match the required node affinity");
    cluster_free(c);
}

/* A pod that names its node skips the scheduler: its kubelet admits it checking only the
 * node's name, resources, selector and required affinity, and NoExecute taints
 * (pkg/kubelet/lifecycle/predicate.go), so only that node counts, cordoned or with a NoSchedule
 * taint the pod does not tolerate, but not with an untolerated NoExecute one. */
static void test_node_name(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct capacity_result r;
    static const char gpu2[] = "'containers':[{'name':'t','resources':{'limits':"
                               "{'nvidia.com/gpu':'2'}}}]}";
    char tmpl[512];

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    apply(c, CLUSTER_NODES, "ADDED", NODE("free", "8", "8", ""));
    apply(c, CLUSTER_NODES, "ADDED",
          NODE("tainted", "4", "4",
               "'unschedulable':true,'taints':[{'key':'nvidia.com/gpu','effect':'NoSchedule'}]"));
    apply(c, CLUSTER_NODES, "ADDED",
          NODE("evicting", "4", "4", "'taints':[{'key':'drain','effect':'NoExecute'}]"));
    snprintf(tmpl, sizeof(tmpl), "{'nodeName':'tainted',%s", gpu2);
    r = judge(c, tmpl, 3, 0);
    CHECK(r.eligible == 1 && r.fit_now == 2 && r.fit_ever == 2);
    CHECK_CONTAINS(r.reasons, "2 nodes are not node tainted");
    snprintf(tmpl, sizeof(tmpl), "{'nodeName':'evicting',%s", gpu2);
    r = judge(c, tmpl, 1, 0);
    CHECK(r.eligible == 0);
    CHECK_CONTAINS(r.reasons, "has untolerated taint drain:NoExecute");
    snprintf(tmpl, sizeof(tmpl), "{'nodeName':'gone',%s", gpu2);
    r = judge(c, tmpl, 1, 0);
    CHECK(r.eligible == 0 && r.fit_ever == 0);
    /* without nodeName the scheduler's rules: the cordon and the NoSchedule taint count */
    snprintf(tmpl, sizeof(tmpl), "{%s", gpu2);
    r = judge(c, tmpl, 1, 0);
    CHECK(r.eligible == 1 && r.fit_now == 4);
    /* no scheduler, no preemption: a lower pod's 2 GPUs on the named node stay taken (its
     * kubelet evicts for critical pods only) */
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'hi'},'value':100}");
    apply(c, CLUSTER_PODS, "ADDED", POD("low", "tainted", "2", "Running"));
    snprintf(tmpl, sizeof(tmpl), "{'nodeName':'tainted','priorityClassName':'hi',%s", gpu2);
    r = judge(c, tmpl, 2, 0);
    CHECK(!r.preempts && r.lower == 0 && r.fit_now == 1);
    snprintf(tmpl, sizeof(tmpl), "{'nodeName':'tainted','priority':2000001000,%s", gpu2);
    r = judge(c, tmpl, 2, 0);
    CHECK(r.preempts && r.fit_now == 2); /* system-node-critical: the kubelet makes room */
    cluster_free(c);
}

/* Decisions remember where a template can go; every change to where pods can go must be seen
 * at once, and a change of amounts alone must not cost the memory nor be missed. */
static void test_eligible_nodes_follow_the_view(void)
{
    struct cluster *c = empty_view();
    struct capacity_result r;
    unsigned long gen;

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", "", "4", ""));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 1 && r.fit_ever == 4);
    CHECK_STR(r.reasons, "1 node lacks nvidia.com/gpu.present=true");
    CHECK(judge(c, ANYWHERE, 1, 0).eligible == 2); /* a second template, remembered apart */
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 1 && r.fit_ever == 4);
    CHECK_STR(r.reasons, "1 node lacks nvidia.com/gpu.present=true");

    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n2", PRESENT, "4", ""));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 2 && r.fit_ever == 8 && r.reasons[0] == '\0');

    /* only an amount: the record stays (no new generation), and the amount counts */
    gen = c->node_gen;
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", PRESENT, "2", ""));
    CHECK(c->node_gen == gen);
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 2 && r.fit_ever == 6);
    pod_at(c, "ADDED", "p", "n1", 0, "nvidia.com/gpu", 2);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 4);

    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", PRESENT, "2", "'unschedulable':true"));
    CHECK(c->node_gen != gen);
    r = judge(c, ON_GPU_NODES, 1, 0);
    /* a cordon ends with the drain: n1's 2 GPUs count at most, not now */
    CHECK(r.eligible == 1 && r.fit_ever == 6 && r.fit_now == 4);
    CHECK(r.transient == 1 && r.fit_transient == 2);
    CHECK_STR(r.reasons, "1 node is cordoned");

    apply(c, CLUSTER_NODES, "MODIFIED",
          GPU_NODE("n2", PRESENT, "4",
                   "'taints':[{'key':'nvidia.com/gpu','value':'present','effect':'NoSchedule'}]"));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 0);
    CHECK_CONTAINS(r.reasons, "1 node has untolerated taint nvidia.com/gpu=present:NoSchedule");

    apply(c, CLUSTER_NODES, "DELETED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", PRESENT, "2", ""));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 1 && r.fit_ever == 2 && r.fit_now == 0 && r.reasons[0] == '\0');

    /* the same selector in another order: the reason names its own first missing label */
    CHECK_STR(judge(c,
                    "{'nodeSelector':{'a':'1','b':'2'},'containers':[{'name':'t','resources':"
                    "{'limits':{'nvidia.com/gpu':'1'}}}]}",
                    1, 0)
                  .reasons,
              "1 node lacks a=1");
    CHECK_STR(judge(c,
                    "{'nodeSelector':{'b':'2','a':'1'},'containers':[{'name':'t','resources':"
                    "{'limits':{'nvidia.com/gpu':'1'}}}]}",
                    1, 0)
                  .reasons,
              "1 node lacks b=2");

    /* a relist that no longer has n1 */
    cluster_list_begin(c, CLUSTER_NODES);
    cluster_list_end(c, CLUSTER_NODES);
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.eligible == 0 && r.fit_ever == 0);

    /* more templates than are remembered: each still judged right */
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n3", PRESENT, "4", ""));
    for (int i = 0; i < 3 * ELIG_CACHE_MAX; i++) {
        char tmpl[512];

        snprintf(tmpl, sizeof(tmpl),
                 "{'nodeSelector':{'nvidia.com/gpu.present':'%s'},'containers':[{'name':'t',"
                 "'resources':{'limits':{'nvidia.com/gpu':'1'}}}],'tolerations':[{'key':'k%d',"
                 "'operator':'Exists'}]}",
                 i % 2 ? "true" : "false", i); /* each its own key */
        r = judge(c, tmpl, 1, 0);
        CHECK(r.eligible == (i % 2 ? 1 : 0));
    }
    cluster_free(c);
}

/* A decision sums the eligible nodes one of two ways: a tight pass over the res_sum lines for
 * a one-resource template while nothing is reserved, or node by node otherwise (several
 * resources, reservations). Both must say the same, with the headroom, per-pod amounts and
 * inexact lines (more priorities than a line holds) in play; a two-resource template fits
 * the fewer pods of its two resources. */
static void test_fit_paths_agree(void)
{
    struct cluster *c = empty_view();
    struct capacity_result one[2], all[2], both;
    const char *tmpl[2] = {
        "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'priority':50,'containers':[{'name':"
        "'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
        "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'priority':50,'containers':[{'name':"
        "'t','resources':{'limits':{'nvidia.com/gpu':'3'}}}]}"};
    yyjson_val *mig = js(ON_MIG);
    struct capacity_request rq_mig = {mig, &gpus, 1, 1, 0, 0, 0};
    char name[32], node[32];

    for (int n = 0; n < 8; n++) {
        char buf[1024];

        snprintf(buf, sizeof(buf),
                 "{'kind':'Node','metadata':{'name':'g%d','labels':{" PRESENT "}},'status':{"
                 "'conditions':[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':"
                 "'%d'},'allocatable':{'nvidia.com/gpu':'%d'}}}",
                 n, 4 + n, 4 + n);
        apply(c, CLUSTER_NODES, "ADDED", buf);
        snprintf(node, sizeof(node), "g%d", n);
        for (int p = 0; p < n; p++) { /* node gn: n pods of n priorities, around 50 */
            snprintf(name, sizeof(name), "g%d-%d", n, p);
            pod_at(c, "ADDED", name, node, 20 * p, "nvidia.com/gpu", 1);
        }
    }
    apply(c, CLUSTER_NODES, "ADDED", MIG_NODE("m1", "7", ",'nvidia.com/gpu':'8'"));
    pod_at(c, "ADDED", "m1-a", "m1", 10, "nvidia.com/gpu", 3);
    pod_at(c, "ADDED", "m1-b", "m1", 10, MIG, 5);
    CHECK(sums_ok(c));
    for (int t = 0; t < 2; t++)
        one[t] = judge(c, tmpl[t], 1, 1);
    capacity_reserve(c, &rq_mig, 1, 60); /* held elsewhere: the node-by-node way */
    for (int t = 0; t < 2; t++) {
        all[t] = judge(c, tmpl[t], 1, 1);
        CHECK(one[t].eligible == 9 && all[t].eligible == 9);
        CHECK(one[t].fit_now == all[t].fit_now && one[t].fit_ever == all[t].fit_ever);
        CHECK(one[t].total_gpus[0] == all[t].total_gpus[0] && one[t].total_gpus[0] == 68);
        CHECK_STR(one[t].nodes, all[t].nodes);
    }
    /* 1 GPU each, headroom 1 (now only): ever = sum(4..11) + 8 = 68; now = sum(3..10) + 7,
     * less the pods at or above 50 (priorities 60..120 on g4..g7: 1+2+3+4 = 10); m1's are
     * below, preemptible */
    CHECK(one[0].fit_ever == 68 && one[0].fit_now == 49);
    /* 3 GPUs each: ever 1+1+2+2+2+3+3+3 + 2 = 19; now per node 3+min(n,3) -> 1,1,1,2,2,2,2,2,
     * and m1 7 -> 2 */
    CHECK(one[1].fit_ever == 19 && one[1].fit_now == 15);
    both = judge(c,
                 "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{'name':'t',"
                 "'resources':{'limits':{'nvidia.com/gpu':'1','" MIG "':'1'}}}]}",
                 1, 0);
    /* only m1 offers both; priority 0, so nothing to preempt: MIG 7 - 5 used - 1 reserved = 1,
     * GPU 8 - 3 = 5: the fewer */
    CHECK(both.eligible == 1 && both.fit_ever == 7 && both.fit_now == 1);
    CHECK(sums_ok(c) && names_ok(c));
    js_free(mig);
    cluster_free(c);
}

static int remembered(const struct cluster *c, size_t *longest)
{
    int n = 0;

    *longest = 0;
    for (int i = 0; i < ELIG_CACHE_MAX; i++) {
        if (c->cap->elig[i].key != NULL && c->cap->elig[i].gen == c->node_gen) {
            n++;
            if (c->cap->elig[i].key_len > *longest)
                *longest = c->cap->elig[i].key_len;
        }
    }
    return n;
}

/* The key a template's eligible nodes are remembered under: values that would run into each
 * other written plainly stay apart, a key past the stack buffer lives on the heap, and a
 * template nested deeper than the key goes is judged by a scan, every time. */
static void test_place_keys(void)
{
    struct cluster *c = empty_view();
    char tmpl[8192], deep[2048] = "";
    size_t longest, at = 0;
    int before;

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    CHECK_STR(judge(c,
                    "{'nodeSelector':{'ab':'c'},'containers':[{'name':'t','resources':{"
                    "'limits':{'nvidia.com/gpu':'1'}}}]}",
                    1, 0)
                  .reasons,
              "1 node lacks ab=c");
    CHECK_STR(judge(c,
                    "{'nodeSelector':{'a':'bc'},'containers':[{'name':'t','resources':{"
                    "'limits':{'nvidia.com/gpu':'1'}}}]}",
                    1, 0)
                  .reasons,
              "1 node lacks a=bc");
    CHECK(remembered(c, &longest) == 2);

    /* a selector of 40 long labels, all on the node: a key of more than 2 KiB */
    at = (size_t)snprintf(tmpl, sizeof(tmpl), "{'nodeSelector':{" PRESENT);
    for (int i = 0; i < 40; i++)
        at += (size_t)snprintf(tmpl + at, sizeof(tmpl) - at,
                               ",'example.com/a-rather-long-label-name-%02d':'present'", i);
    snprintf(tmpl + at, sizeof(tmpl) - at,
             "},'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}");
    CHECK_STR(judge(c, tmpl, 1, 0).reasons,
              "1 node lacks example.com/a-rather-long-label-name-00=present");
    CHECK(remembered(c, &longest) == 3 && longest > PLACE_KEY_INLINE_BYTES);
    CHECK_STR(judge(c, tmpl, 1, 0).reasons, /* found again, from the heap key */
              "1 node lacks example.com/a-rather-long-label-name-00=present");
    CHECK(remembered(c, &longest) == 3);

    /* an affinity term nested past PLACE_KEY_DEPTH_MAX (in a value the view ignores) */
    at = 0;
    for (unsigned i = 0; i < PLACE_KEY_DEPTH_MAX + 2; i++)
        deep[at++] = '[';
    for (unsigned i = 0; i < PLACE_KEY_DEPTH_MAX + 2; i++)
        deep[at++] = ']';
    deep[at] = '\0';
    snprintf(tmpl, sizeof(tmpl),
             "{'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':%s}},"
             "'nodeSelector':{" PRESENT "},'tolerations':[{'operator':'Exists'}],'containers':[{"
             "'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}",
             deep);
    before = remembered(c, &longest);
    CHECK(judge(c, tmpl, 1, 0).eligible == 1);
    CHECK(judge(c, tmpl, 1, 0).fit_now == 4);
    CHECK(remembered(c, &longest) == before); /* not remembered */
    cluster_free(c);
}

/* A template whose class says preemptionPolicy: Never can use only free GPUs: the scheduler
 * does not preempt for it (k8s.io/kubernetes pkg/scheduler/framework/plugins/
 * defaultpreemption/default_preemption.go, PodEligibleToPreemptOthers: "if pod.Spec.
 * PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever { return false }"),
 * and the Priority admission plugin copies the class's policy into the pod. Both ways of
 * summing a node are checked: node "few" (one priority) is read from its res_sum line, node
 * "many" (more priorities than a line holds) from its records. Every GPU is in use by pods of
 * lower priority. */
#define POOL_NODE(name, n)                                                                         \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{'pool':'" name "'}},'status':{"        \
    "'conditions':[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':'" n "'},"       \
    "'allocatable':{'nvidia.com/gpu':'" n "'}}}"
#define IN_POOL(pool, extra)                                                                       \
    "{'nodeSelector':{'pool':'" pool "'}" extra ",'containers':[{'name':'t','resources':{"         \
    "'limits':{'nvidia.com/gpu':'1'}}}]}"
static void test_never_preempts(void)
{
    struct cluster *c = empty_view();
    char name[32];
    const struct node *many;

    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'never'},'value':100,"
          "'preemptionPolicy':'Never'}");
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'preempts'},'value':100}");
    apply(c, CLUSTER_NODES, "ADDED", POOL_NODE("few", "4"));
    apply(c, CLUSTER_NODES, "ADDED", POOL_NODE("many", "6"));
    for (int p = 0; p < 4; p++) {
        snprintf(name, sizeof(name), "few-%d", p);
        pod_at(c, "ADDED", name, "few", 5, "nvidia.com/gpu", 1);
    }
    for (int p = 0; p < 6; p++) { /* six priorities: past RES_SUM_PRIO */
        snprintf(name, sizeof(name), "many-%d", p);
        pod_at(c, "ADDED", name, "many", 10 + p, "nvidia.com/gpu", 1);
    }
    many = table_get(&c->kinds[CLUSTER_NODES], "many");
    CHECK(many != NULL && many->n_res == 1 && !c->sums[many->res[0].sum].exact);

    CHECK(judge(c, IN_POOL("few", ",'priorityClassName':'preempts'"), 1, 0).fit_now == 4);
    CHECK(judge(c, IN_POOL("many", ",'priorityClassName':'preempts'"), 1, 0).fit_now == 6);
    CHECK(judge(c, IN_POOL("few", ",'priorityClassName':'never'"), 1, 0).fit_now == 0);
    CHECK(judge(c, IN_POOL("many", ",'priorityClassName':'never'"), 1, 0).fit_now == 0);
    /* no case of a pod whose own preemptionPolicy differs from its class's: the apiserver's
     * Priority admission plugin refuses such a pod (plugin/pkg/admission/priority/admission.go,
     * "must not be provided in pod spec"), so the class decides, as above */
    /* ever: what the nodes hold, whoever runs there now */
    CHECK(judge(c, IN_POOL("many", ",'priorityClassName':'never'"), 1, 0).fit_ever == 6);
    cluster_free(c);
}

/* Pods that wait for GPUs (Pending, or owed by their StatefulSet) follow pod and workload
 * events, and take free GPUs from a decision (2 nodes of 4 GPUs, a template of priority 0). */
static void test_waiting_follows_the_view(void)
{
    struct cluster *c = empty_view();
    struct capacity_result r;
    char text[400];

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8);
    CHECK(groups_agree(c));
    /* db owes 3 replicas: they come before anything admitted now */
    apply(c, CLUSTER_STATEFULSETS, "ADDED", DB_STS(3));
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 5 && r.waiting_pods == 3 && r.waiting_gpus == 3);
    capacity_waiting_text(&r, text, sizeof(text));
    CHECK_STR(text, "3 replicas a controller still owes (StatefulSet ns/db)");
    /* db-0 bound: it uses a GPU and is owed no more */
    owned_pod(c, "ADDED", "db-0", "n1", 0, "StatefulSet", "db");
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 5 && r.waiting_pods == 2);
    /* db-1 created, Pending: still waiting, now in the scheduler's queue */
    owned_pod(c, "ADDED", "db-1", "", 0, "StatefulSet", "db");
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 5 && r.waiting_pods == 2);
    capacity_waiting_text(&r, text, sizeof(text));
    CHECK_STR(text, "1 Pending pod and 1 replica their controllers still owe (StatefulSet ns/db)");
    /* db-1 bound */
    owned_pod(c, "MODIFIED", "db-1", "n2", 0, "StatefulSet", "db");
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 5 && r.waiting_pods == 1);
    /* scaled down to 2: nothing owed */
    apply(c, CLUSTER_STATEFULSETS, "MODIFIED", DB_STS(2));
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 6 && r.waiting_pods == 0 && c->n_waiting == 0);
    /* a Pending pod of lower priority waits behind the template's pods; one of higher before */
    owned_pod(c, "ADDED", "low", "", -5, NULL, NULL);
    CHECK(c->n_waiting == 1 && judge(c, ON_GPU_NODES, 1, 0).fit_now == 6);
    owned_pod(c, "ADDED", "high", "", 5, NULL, NULL);
    CHECK(groups_agree(c));
    r = judge(c, ON_GPU_NODES, 1, 0);
    CHECK(r.fit_now == 5 && r.waiting_pods == 1);
    capacity_waiting_text(&r, text, sizeof(text));
    CHECK_STR(text, "1 Pending pod (Pod ns/high)");
    /* the StatefulSet deleted while its pods remain, then a relist that no longer has them */
    apply(c, CLUSTER_STATEFULSETS, "DELETED", DB_STS(2));
    cluster_list_begin(c, CLUSTER_PODS);
    cluster_list_end(c, CLUSTER_PODS);
    CHECK(c->n_waiting == 0 && c->waiters.n == 0);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8);
    CHECK(groups_agree(c));
    CHECK(groups_agree(c));
    cluster_free(c);
}

/* A reservation lasts until the view shows the workload's replicas at its target (base +
 * the pods admitted), as owed, Pending or bound pods: a Pending pod of the replicas it had
 * does not end it, and once the view has caught up the reservation is not counted on top. */
static void test_reservation_ends_at_its_target(void)
{
    struct cluster *c = empty_view();
    yyjson_val *spec = js(ON_GPU_NODES);
    struct capacity_request rq = {
        spec, &gpus, 3, 5, 0, cluster_workload_key("statefulsets", "ns", "db"), 2};

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_STATEFULSETS, "ADDED", DB_STS(2));
    owned_pod(c, "ADDED", "db-0", "n1", 0, "StatefulSet", "db");
    owned_pod(c, "ADDED", "db-1", "", 0, "StatefulSet", "db");
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 6); /* 8 - db-0 - db-1 waiting */
    CHECK(groups_agree(c));
    capacity_reserve(c, &rq, 3, 60); /* db scaled 2 -> 5 admitted */
    CHECK(cluster_shown(c, rq.key) == 2);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 3); /* db-1 is not one of the 3 */
    CHECK(groups_agree(c));
    /* the view sees the StatefulSet at 5: its 3 owed replicas count instead */
    apply(c, CLUSTER_STATEFULSETS, "MODIFIED", DB_STS(5));
    CHECK(cluster_shown(c, rq.key) == 5);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 3);
    CHECK(groups_agree(c));
    /* all five bound */
    owned_pod(c, "MODIFIED", "db-1", "n1", 0, "StatefulSet", "db");
    owned_pod(c, "ADDED", "db-2", "n1", 0, "StatefulSet", "db");
    owned_pod(c, "ADDED", "db-3", "n2", 0, "StatefulSet", "db");
    owned_pod(c, "ADDED", "db-4", "n2", 0, "StatefulSet", "db");
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 3 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_STATEFULSETS, "DELETED", DB_STS(5));
    for (int i = 0; i < 5; i++) {
        char name[16];

        snprintf(name, sizeof(name), "db-%d", i);
        owned_pod(c, "DELETED", name, "n1", 0, "StatefulSet", "db");
    }
    CHECK(cluster_shown(c, rq.key) == 0 && c->shown.n == 0);
    js_free(spec);
    CHECK(groups_agree(c));
    cluster_free(c);
}

/* An unbound pod of no controller whose spec adds extra (a nodeSelector, tolerations). */
static void pending_pod(struct cluster *c, const char *name, const char *extra)
{
    char buf[1024];

    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','metadata':{'name':'%s','namespace':'ns'},'spec':{%s,'containers':"
             "[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':"
             "'Pending'}}",
             name, extra);
    apply(c, CLUSTER_PODS, "ADDED", buf);
}

/* Pods waiting in many places: those whose nodes are not the template's are left out before
 * the cap on groups (WAIT_GROUPS_MAX), and the groups past the cap count against every
 * eligible node rather than not at all (2 nodes of 16 GPUs). */
static void test_many_waiting_places(void)
{
    struct cluster *c = empty_view();
    char name[32], extra[200];

    apply(c, CLUSTER_NODES, "ADDED", NODE("n1", "16", "16", ""));
    apply(c, CLUSTER_NODES, "ADDED", NODE("n2", "16", "16", ""));
    for (int i = 0; i < 20; i++) { /* 20 places no node matches, first in the queue */
        snprintf(name, sizeof(name), "elsewhere-%d", i);
        snprintf(extra, sizeof(extra), "'nodeSelector':{'pool':'p%d'}", i);
        pending_pod(c, name, extra);
    }
    pending_pod(c, "here", "'nodeSelector':{'nvidia.com/gpu.present':'true'}");
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 31);
    CHECK(groups_agree(c));
    for (int i = 0; i < 20; i++) { /* 20 more places, all on these nodes: 21 pods in all */
        snprintf(name, sizeof(name), "here-%d", i);
        snprintf(extra, sizeof(extra),
                 "'nodeSelector':{'nvidia.com/gpu.present':'true'},'tolerations':[{'key':'k%d',"
                 "'operator':'Exists'}]",
                 i);
        pending_pod(c, name, extra);
    }
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 11);
    CHECK(groups_agree(c));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).waiting_pods == 21);
    CHECK(groups_agree(c));
    CHECK(groups_agree(c));
    cluster_free(c);
}

/* A waiting pod takes only the GPUs it can land on, whole on one node: a Pending pod of 4 GPUs
 * takes nothing of 2 nodes with 2 free each (the scheduler's NodeResourcesFit filters both
 * out), and one of 2 takes 2 of them. */
static void test_waiting_pods_land_whole(void)
{
    struct cluster *c = empty_view();

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_PODS, "ADDED", POD("b1", "n1", "2", "Running"));
    apply(c, CLUSTER_PODS, "ADDED", POD("b2", "n2", "2", "Running"));
    apply(c, CLUSTER_PODS, "ADDED", POD("big", "", "4", "Pending"));
    CHECK(judge(c, ANYWHERE, 1, 0).fit_now == 4 && judge(c, ANYWHERE, 1, 0).waiting_gpus == 0);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 4);
    apply(c, CLUSTER_PODS, "ADDED", POD("two", "", "2", "Pending"));
    CHECK(judge(c, ANYWHERE, 1, 0).fit_now == 2 && judge(c, ANYWHERE, 1, 0).waiting_gpus == 2);
    /* the same with a reservation held (the other pass over the nodes) */
    {
        yyjson_val *spec = js(ANYWHERE);
        struct capacity_request rq = {spec, &gpus, 1, 1, 0, 0, 0};

        capacity_reserve(c, &rq, 1, 60);
        CHECK(judge(c, ANYWHERE, 1, 0).fit_now == 1);
        js_free(spec);
    }
    cluster_free(c);
}

/* The device plugin config a shared node picks (its nvidia.com/device-plugin.config label, else
 * the key default, else the only key: NVIDIA/k8s-device-plugin's config manager) decides whether
 * a container asking for more than one shared GPU fails on it (failRequestsGreaterThanOne, MPS's
 * default: replicas.go). A config's change is seen at once: what capacity remembers of the
 * nodes is dropped with it. */
/* An event of type for the device plugin config ConfigMap ns/name whose data keys k1 and k2
 * (NULL: none) hold v1 and v2, each a quoted JSON string. */
static void put_config(struct cluster *c, const char *type, const char *ns_name, const char *k1,
                       const char *v1, const char *k2, const char *v2)
{
    char cm[1024];
    const char *slash = strchr(ns_name, '/');

    snprintf(
        cm, sizeof(cm),
        "{'kind':'ConfigMap','metadata':{'name':'%s','namespace':'%.*s'},'data':{'%s':%s%s%s%s%s"
        "}}",
        slash + 1, (int)(slash - ns_name), ns_name, k1, v1, k2 ? ",'" : "", k2 ? k2 : "",
        k2 ? "':" : "", k2 ? v2 : "");
    apply(c, CLUSTER_PLUGIN_CONFIGS, type, cm);
}

static void test_fail_requests_greater_than_one(void)
{
    struct cluster *c = empty_view();
    const char *two = "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}";
    const char *ts = "'version: v1\\nsharing:\\n  timeSlicing:\\n    failRequestsGreaterThanOne: "
                     "true\\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\\n'";
    const char *mps = "'sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}'";
    const char *plain =
        "'sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}'";
    struct capacity_result r;

    apply(c, CLUSTER_NODES, "ADDED",
          GPU_NODE("n1", "'nvidia.com/gpu.sharing-strategy':'time-slicing'", "4", ""));
    r = judge(c, two, 1, 0);
    CHECK(r.all_shared && !r.all_fail_gt_one); /* no config in the view */
    put_config(c, "ADDED", "gpu-operator/time-slicing-config", "default", ts, NULL, NULL);
    r = judge(c, two, 1, 0);
    CHECK(r.all_fail_gt_one);
    CHECK_STR(r.fail_why,
              "failRequestsGreaterThanOne in gpu-operator/time-slicing-config, key default");
    /* near miss: without the flag, time-slicing allocates two replicas */
    put_config(c, "MODIFIED", "gpu-operator/time-slicing-config", "default", plain, NULL, NULL);
    CHECK(!judge(c, two, 1, 0).all_fail_gt_one);
    /* the label picks another key: MPS, whose default fails them */
    put_config(c, "MODIFIED", "gpu-operator/time-slicing-config", "default", plain, "mps", mps);
    apply(
        c, CLUSTER_NODES, "MODIFIED",
        GPU_NODE("n1",
                 "'nvidia.com/gpu.sharing-strategy':'mps','nvidia.com/device-plugin.config':'mps'",
                 "4", ""));
    r = judge(c, two, 1, 0);
    CHECK(r.all_fail_gt_one);
    CHECK_STR(r.fail_why, "MPS, which sets failRequestsGreaterThanOne in "
                          "gpu-operator/time-slicing-config, key mps");
    /* the plugin reads one ConfigMap, which the view cannot tell: a second one whose key mps
     * does not fail them leaves it unsure */
    put_config(c, "ADDED", "kube-system/nvidia-device-plugin-config", "mps", plain, NULL, NULL);
    CHECK(!judge(c, two, 1, 0).all_fail_gt_one);
    put_config(c, "DELETED", "kube-system/nvidia-device-plugin-config", "mps", plain, NULL, NULL);
    CHECK(judge(c, two, 1, 0).all_fail_gt_one);
    /* no label, two keys: the config manager's DEFAULT_CONFIG decides, which the view cannot
     * see; near miss of the one-key config above */
    apply(c, CLUSTER_NODES, "MODIFIED",
          GPU_NODE("n1", "'nvidia.com/gpu.sharing-strategy':'mps'", "4", ""));
    CHECK(!judge(c, two, 1, 0).all_fail_gt_one);
    put_config(c, "MODIFIED", "gpu-operator/time-slicing-config", "any", mps, NULL, NULL);
    CHECK(judge(c, two, 1, 0).all_fail_gt_one);
    /* near miss: a second eligible node that does not share: the pod may go there */
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", "'x':'y'", "4", ""));
    CHECK(!judge(c, two, 1, 0).all_fail_gt_one);
    cluster_free(c);
}

/* A node shares its GPUs when gpu-feature-discovery labels a sharing strategy, or a replica
 * count past 1: a count that is not a number ("4x") says nothing, as a strategy of "none". */
static void test_replicas_label_is_a_number(void)
{
    struct cluster *c = empty_view();
    const char *two = "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}";

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", "'nvidia.com/gpu.replicas':'4'", "4", ""));
    CHECK(judge(c, two, 1, 0).all_shared);
    CHECK_STR(judge(c, two, 1, 0).shared_why, "shared, nvidia.com/gpu.replicas=4");
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", "'nvidia.com/gpu.replicas':'4x'", "4", ""));
    CHECK(!judge(c, two, 1, 0).all_shared);
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", "'nvidia.com/gpu.replicas':'1'", "4", ""));
    CHECK(!judge(c, two, 1, 0).all_shared);
    /* more digits than 64 bits hold is still a number of replicas */
    apply(c, CLUSTER_NODES, "MODIFIED",
          GPU_NODE("n1", "'nvidia.com/gpu.replicas':'99999999999999999999'", "4", ""));
    CHECK(judge(c, two, 1, 0).all_shared);
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n1", "'nvidia.com/gpu.replicas':'01'", "4", ""));
    CHECK(!judge(c, two, 1, 0).all_shared);
    apply(c, CLUSTER_NODES, "MODIFIED",
          GPU_NODE("n1", "'nvidia.com/gpu.replicas':'4x','nvidia.com/gpu.sharing-strategy':'mps'",
                   "4", ""));
    CHECK(judge(c, two, 1, 0).all_shared);
    CHECK_STR(judge(c, two, 1, 0).shared_why, "mps, nvidia.com/gpu.replicas=4x");
    cluster_free(c);
}

int main(void)
{
    RUN(test_capacity_stall);
    RUN(test_preemption_hint);
    RUN(test_preemption_only_where_it_makes_room);
    RUN(test_fits_only_by_preempting);
    RUN(test_preemption_holders);
    RUN(test_capacity_nodes);
    RUN(test_node_name);
    RUN(test_reservations);
    RUN(test_affinity_rules);
    RUN(test_eligible_nodes_follow_the_view);
    RUN(test_fit_paths_agree);
    RUN(test_place_keys);
    RUN(test_never_preempts);
    RUN(test_waiting_follows_the_view);
    RUN(test_reservation_ends_at_its_target);
    RUN(test_many_waiting_places);
    RUN(test_waiting_pods_land_whole);
    RUN(test_replicas_label_is_a_number);
    RUN(test_fail_requests_greater_than_one);
    TEST_MAIN_END("test_capacity");
}
