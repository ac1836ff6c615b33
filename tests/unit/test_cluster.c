/*
 * test_cluster.c: the cluster view (lists, watch events, the device-plugin grace, snapshots)
 * and the capacity arithmetic on it.
 */
#include <unistd.h>

#include "capacity.h"
#include "capacity_cache.h"
#include "cluster_view.h"
#include "cluster.h"
#include "harness.h"
#include "json.h"

#define SNAPSHOT "tests/data/snapshots/stall.json"

/* The documents js() and dump_of() made, by root, until js_free(). */
static struct {
    yyjson_val *root;
    yyjson_doc *doc;
} kept[64];

static yyjson_val *keep(yyjson_doc *doc)
{
    for (size_t i = 0; doc != NULL && i < sizeof(kept) / sizeof(kept[0]); i++) {
        if (kept[i].doc == NULL) {
            kept[i].doc = doc;
            kept[i].root = yyjson_doc_get_root(doc);
            return kept[i].root;
        }
    }
    printf("test documents: none left, or out of memory\n");
    exit(2);
}

/* Frees the document whose root v is (from js() or dump_of()). */
static void js_free(yyjson_val *v)
{
    for (size_t i = 0; v != NULL && i < sizeof(kept) / sizeof(kept[0]); i++) {
        if (kept[i].root == v) {
            yyjson_doc_free(kept[i].doc);
            kept[i].doc = NULL;
            kept[i].root = NULL;
        }
    }
}

/* A JSON value from text written with single quotes, for readability; the root of a document
 * of its own (js_free()). Aborts the run on a typo in a test. */
static yyjson_val *js(const char *text)
{
    char *buf = strdup(text);
    struct diag d;
    yyjson_doc *doc;

    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    diag_clear(&d);
    doc = json_read(buf, strlen(buf), JSON_READ_ANY_ROOT, 0, NULL, &d);
    if (doc == NULL) {
        printf("bad test JSON (%s): %s\n", d.msg, text);
        exit(2);
    }
    free(buf);
    return keep(doc);
}

/* The view's dump, frozen to be read (js_free()). */
static yyjson_val *dump_of(struct cluster *c)
{
    yyjson_mut_doc *m = cluster_dump(c);
    yyjson_doc *doc = m != NULL ? json_freeze(yyjson_mut_doc_get_root(m)) : NULL;

    yyjson_mut_doc_free(m);
    return keep(doc);
}

static char *gpu_v[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"};
static const struct strlist gpus = {gpu_v, 3};

#define NODE(name, gpus, alloc, extra)                                                             \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{'nvidia.com/gpu.present':'true'}},"    \
    "'spec':{" extra "},'status':{'conditions':[{'type':'Ready','status':'True'}],"                \
    "'capacity':{'nvidia.com/gpu':'" gpus "','cpu':'8'},'allocatable':{'nvidia.com/gpu':'" alloc   \
    "','cpu':'8'}}}"
#define POD(name, node, gpus, phase)                                                               \
    "{'kind':'Pod','metadata':{'name':'" name "','namespace':'ns'},'spec':{'nodeName':'" node      \
    "','priority':5,'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'" gpus      \
    "'}}}]},'status':{'phase':'" phase "'}}"

static int64_t at(yyjson_val *dump, const char *a, const char *b, const char *c, const char *d)
{
    yyjson_val *v = yyjson_obj_get(yyjson_obj_get(dump, a), b);
    int64_t n;

    if (c != NULL)
        v = yyjson_obj_get(v, c);
    if (d != NULL)
        v = yyjson_obj_get(v, d);
    return json_int64(v, &n) ? n : -1;
}

static void apply(struct cluster *c, enum cluster_kind k, const char *type, const char *obj)
{
    yyjson_val *o = js(obj);
    struct diag d;

    diag_clear(&d);
    CHECK(cluster_apply(c, k, type, o, &d) == 0);
    js_free(o);
}

static void test_list_and_watch(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    yyjson_val *items, *dump;
    struct diag d;

    CHECK(!cluster_synced(c));
    cluster_list_begin(c, CLUSTER_NODES);
    items = js("[" NODE("a", "4", "4", "") "," NODE("b", "8", "8", "'unschedulable':true") "]");
    diag_clear(&d);
    CHECK(cluster_list_items(c, CLUSTER_NODES, items, &d) == 0);
    js_free(items);
    cluster_list_end(c, CLUSTER_NODES);
    cluster_list_begin(c, CLUSTER_PODS);
    items = js("[" POD("p1", "a", "1", "Running") "," POD("p2", "a", "2", "Running") "," POD(
        "done", "a", "1",
        "Succeeded") ",{'kind':'Pod','metadata':{'name':'cpu',"
                     "'namespace':'ns'},'spec':{'nodeName':'a','containers':[{'name':'c'}]}}]");
    CHECK(cluster_list_items(c, CLUSTER_PODS, items, &d) == 0);
    js_free(items);
    cluster_list_end(c, CLUSTER_PODS);
    CHECK(!cluster_synced(c)); /* classes and workloads not listed yet */
    for (int k = CLUSTER_PRIORITYCLASSES; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    CHECK(cluster_synced(c));

    dump = dump_of(c);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "nodes")) == 2);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "pods")) == 2); /* not the finished or CPU pod */
    CHECK(at(dump, "nodes", "a", "used", "nvidia.com/gpu") == 3);
    CHECK(at(dump, "nodes", "b", "allocatable", "nvidia.com/gpu") == 8);
    CHECK(yyjson_is_true(
        yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(dump, "nodes"), "b"), "unschedulable")));
    js_free(dump);

    /* a pod moves, one finishes, one is deleted */
    apply(c, CLUSTER_PODS, "MODIFIED", POD("p2", "b", "2", "Running"));
    apply(c, CLUSTER_PODS, "MODIFIED", POD("p1", "a", "1", "Failed"));
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "a", "used", "nvidia.com/gpu") == 0);
    CHECK(at(dump, "nodes", "b", "used", "nvidia.com/gpu") == 2);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "pods")) == 1);
    js_free(dump);
    apply(c, CLUSTER_PODS, "DELETED", POD("p2", "b", "2", "Running"));
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "b", "used", "nvidia.com/gpu") == 0);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "pods")) == 0);
    js_free(dump);

    /* a relist drops what it does not mention */
    cluster_list_begin(c, CLUSTER_NODES);
    items = js("[" NODE("b", "8", "8", "") "]");
    CHECK(cluster_list_items(c, CLUSTER_NODES, items, &d) == 0);
    js_free(items);
    cluster_list_end(c, CLUSTER_NODES);
    dump = dump_of(c);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "nodes")) == 1);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == -1);
    js_free(dump);

    /* bad events change nothing and say why */
    {
        yyjson_val *o = js("{'kind':'Node','metadata':{}}");

        diag_clear(&d);
        CHECK(cluster_apply(c, CLUSTER_NODES, "ADDED", o, &d) == -1);
        CHECK_CONTAINS(d.msg, "without metadata.name");
        diag_clear(&d);
        CHECK(cluster_apply(c, CLUSTER_NODES, "BOGUS", o, &d) == -1);
        CHECK_CONTAINS(d.msg, "unknown type");
        js_free(o);
    }
    cluster_free(c);
}

static void test_device_plugin_grace(void)
{
    struct cluster_config with = {60}, without = {0};
    struct cluster *c = cluster_new(&with), *c0 = cluster_new(&without);
    yyjson_val *dump;

    apply(c, CLUSTER_NODES, "ADDED", NODE("a", "4", "4", ""));
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", ""));
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == 4); /* within the grace */
    js_free(dump);
    CHECK(!c->sums[((const struct node *)table_get(&c->kinds[CLUSTER_NODES], "a"))->res[0].sum]
               .exact); /* the grace depends on the time: decisions read the records */
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", "")); /* still 0: still in grace */
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == 4);
    js_free(dump);
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "3", ""));
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == 3);
    js_free(dump);
    /* capacity gone too: a real loss, not a plugin restart */
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "0", "0", ""));
    dump = dump_of(c);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == 0);
    js_free(dump);

    apply(c0, CLUSTER_NODES, "ADDED", NODE("a", "4", "4", ""));
    apply(c0, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", ""));
    dump = dump_of(c0);
    CHECK(at(dump, "nodes", "a", "allocatable", "nvidia.com/gpu") == 0); /* no grace */
    js_free(dump);
    cluster_free(c);
    cluster_free(c0);
}

static struct cluster *stall(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct diag d;

    diag_clear(&d);
    if (cluster_load_snapshot(c, SNAPSHOT, &d) < 0) {
        printf("cannot load %s: %s\n", SNAPSHOT, d.msg);
        exit(2);
    }
    return c;
}

static void test_snapshot(void)
{
    struct cluster *c = stall();
    yyjson_val *dump = dump_of(c);
    struct cluster_config cfg = {60};
    struct cluster *bad = cluster_new(&cfg);
    struct diag d;
    char path[] = "/tmp/gpuadmit-snap-XXXXXX";
    int fd = mkstemp(path);

    CHECK(cluster_synced(c));
    CHECK(cluster_age_s(c) == 0.0);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "nodes")) == 5);
    CHECK(yyjson_obj_size(yyjson_obj_get(dump, "pods")) == 12);
    CHECK(at(dump, "priorityClasses", "gpu-critical", "value", NULL) == 1000000);
    CHECK(at(dump, "workloads", "Deployment/ml/trainer", "replicas", NULL) == 2);
    CHECK(at(dump, "workloads", "Deployment/ml/trainer", "demand", "nvidia.com/gpu") == 1);
    CHECK(at(dump, "nodes", "gpu-0", "used", "nvidia.com/gpu") == 3);
    js_free(dump);

    /* two documents one after the other, and then garbage */
    CHECK(write(fd,
                "{\"kind\":\"List\",\"items\":[]}\n{\"kind\":\"Node\",\"metadata\":"
                "{\"name\":\"x\"}}\n{oops",
                69) == 69);
    close(fd);
    diag_clear(&d);
    CHECK(cluster_load_snapshot(bad, path, &d) == -1);
    CHECK_CONTAINS(d.file, "/tmp/gpuadmit-snap-");
    CHECK_CONTAINS(d.msg, "not kubectl's JSON output");
    diag_clear(&d);
    CHECK(cluster_load_snapshot(bad, "/nonexistent/snap.json", &d) == -1);
    CHECK_CONTAINS(d.msg, "cannot read");
    unlink(path);
    cluster_free(bad);
    cluster_free(c);
}

/* A one-GPU pod template with the stall scenario's toleration and selector. */
#define TEMPLATE(cls)                                                                              \
    "{'priorityClassName':'" cls "','tolerations':[{'key':'nvidia.com/gpu','operator':'Exists',"   \
    "'effect':'NoSchedule'}],'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"       \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"

static struct capacity_result judge(struct cluster *c, const char *tmpl, int64_t inc,
                                    int64_t headroom)
{
    yyjson_val *spec = js(tmpl);
    struct capacity_request rq = {spec, &gpus, inc, inc, headroom, 0, 0};
    struct capacity_result res;

    CHECK(capacity_judge(c, &rq, &res) == 0);
    js_free(spec);
    return res;
}

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

/* A pod on node with priority prio asking n of res. */
static void pod_at(struct cluster *c, const char *type, const char *name, const char *node,
                   long prio, const char *res, int n)
{
    char buf[1024];

    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','metadata':{'name':'%s','namespace':'ns'},'spec':{'nodeName':'%s',"
             "'priority':%ld,'containers':[{'name':'c','resources':{'limits':{'%s':'%d'}}}]},"
             "'status':{'phase':'Running'}}",
             name, node, prio, res, n);
    apply(c, CLUSTER_PODS, type, buf);
}

static struct cluster *empty_view(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    return c;
}

/* Every node record points at the binding of its name, or at none when it has none. */
static bool links_ok(const struct cluster *c)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];

    for (size_t i = 0; i < t->n_buckets; i++) {
        for (const struct table_entry *e = t->buckets[i]; e; e = e->next) {
            const struct node *n = e->value;

            if (n->binding != cluster_binding(c, n->name))
                return false;
        }
    }
    return true;
}

/* Interned names: every record's name is the view's one copy, counted once per record that
 * holds it, and a name no record holds is gone. */
static bool names_ok(const struct cluster *c)
{
    const struct table *t = &c->kinds[CLUSTER_NODES], *bs = &c->bindings;
    size_t users = 0, counted = 0;

    for (size_t i = 0; i < t->n_buckets; i++) {
        for (const struct table_entry *e = t->buckets[i]; e; e = e->next) {
            const struct node *n = e->value;

            for (size_t k = 0; k < n->n_res; k++, users++) {
                if (n->res[k].name != cluster_rname(c, n->res[k].name))
                    return false;
            }
        }
    }
    for (size_t i = 0; i < bs->n_buckets; i++) {
        for (const struct table_entry *e = bs->buckets[i]; e; e = e->next) {
            const struct binding *b = e->value;

            for (size_t k = 0; k < b->n_res; k++, users++) {
                if (b->res[k].name != cluster_rname(c, b->res[k].name))
                    return false;
            }
        }
    }
    for (size_t i = 0; i < c->rnames.n_buckets; i++) {
        for (const struct table_entry *e = c->rnames.buckets[i]; e; e = e->next) {
            if ((uintptr_t)e->value == 0)
                return false;
            counted += (uintptr_t)e->value;
        }
    }
    return users == counted;
}

/* Every node resource has its own res_sum slot, holding what its records say (or marked
 * inexact when it cannot), and the free slots are free. */
static bool sums_ok(const struct cluster *c)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];
    size_t live = 0, free_slots = 0;

    for (size_t i = 0; i < t->n_buckets; i++) {
        for (const struct table_entry *e = t->buckets[i]; e; e = e->next) {
            const struct node *n = e->value;

            for (size_t k = 0; k < n->n_res; k++) {
                const struct node_res *r = &n->res[k];
                const struct res_sum *s = &c->sums[r->sum];
                const struct bound_res *br = NULL;
                bool grace = r->allocatable == 0 && r->zero_since > 0 && r->last_allocatable > 0;
                int64_t lower_all = 0, lower_sum = 0;

                if (r->sum == 0 || r->sum >= c->n_sums || s->name != r->name ||
                    s->allocatable != r->allocatable)
                    return false;
                live++;
                for (size_t b = 0; n->binding != NULL && b < n->binding->n_res; b++)
                    if (n->binding->res[b].name == r->name)
                        br = &n->binding->res[b];
                if (s->used != (br ? br->total : 0))
                    return false;
                if (grace || (br != NULL && br->n_prio > RES_SUM_PRIO)) {
                    if (s->exact)
                        return false;
                    continue;
                }
                if (!s->exact || s->n_prio != (br ? br->n_prio : 0))
                    return false;
                for (size_t p = 0; br != NULL && p < br->n_prio; p++) /* one cut, both ways */
                    lower_all += br->prio[p].priority < 100 ? br->prio[p].n : 0;
                for (size_t p = 0; p < s->n_prio; p++)
                    lower_sum += s->prio[p] < 100 ? s->prio_n[p] : 0;
                if (lower_all != lower_sum)
                    return false;
            }
        }
    }
    for (uint32_t i = c->free_sum; i != 0; i = (uint32_t)c->sums[i].used, free_slots++) {
        if (c->sums[i].name != NULL || free_slots > c->n_sums)
            return false;
    }
    /* slot 0 is never used: live and free ones account for the rest, so none is shared */
    return c->n_sums == 0 || live + free_slots == c->n_sums - 1;
}

#define PRIO150                                                                                    \
    "{'priority':150,'tolerations':[{'operator':'Exists'}],'containers':[{'name':'t',"             \
    "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"

/* Many distinct priorities on one node, pods coming and going: the per-priority totals must
 * equal those of the same pods loaded fresh, or preemptible GPUs are over-counted. */
static void test_priority_churn(void)
{
    struct cluster *c = empty_view(), *ref = empty_view();
    const struct binding *b;
    struct capacity_result r;
    char name[32];
    int64_t lower = 0;

    apply(c, CLUSTER_NODES, "ADDED", NODE("n1", "20", "20", ""));
    apply(ref, CLUSTER_NODES, "ADDED", NODE("n1", "20", "20", ""));
    for (int i = 1; i <= 18; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        pod_at(c, "ADDED", name, "n1", i, "nvidia.com/gpu", 1);
        if (i > 2)
            pod_at(ref, "ADDED", name, "n1", i, "nvidia.com/gpu", 1);
    }
    pod_at(c, "ADDED", "x", "n1", 100, "nvidia.com/gpu", 1);
    pod_at(c, "DELETED", "p1", "n1", 1, "nvidia.com/gpu", 1);
    pod_at(c, "DELETED", "p2", "n1", 2, "nvidia.com/gpu", 1);
    pod_at(c, "ADDED", "z", "n1", 200, "nvidia.com/gpu", 1);
    pod_at(ref, "ADDED", "x", "n1", 100, "nvidia.com/gpu", 1);
    pod_at(ref, "ADDED", "z", "n1", 200, "nvidia.com/gpu", 1);
    b = cluster_binding(c, "n1");
    CHECK(b != NULL && b->n == 18 && b->n_res == 1 && b->res[0].total == 18);
    CHECK(b != NULL && b->res[0].n_prio == 18); /* 3..18, 100, 200: p1 and p2's slots went */
    for (size_t p = 0; b != NULL && p < b->res[0].n_prio; p++) {
        CHECK(b->res[0].prio[p].n == 1);
        lower += b->res[0].prio[p].priority < 150 ? b->res[0].prio[p].n : 0;
    }
    CHECK(lower == 17);
    /* 20 GPUs, 18 in use, 17 of them below 150: 2 free + 17 preemptible */
    r = judge(c, PRIO150, 20, 0);
    CHECK(r.fit_now == 19);
    CHECK(r.fit_now == judge(ref, PRIO150, 20, 0).fit_now);
    for (int i = 3; i <= 18; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        pod_at(c, "DELETED", name, "n1", i, "nvidia.com/gpu", 1);
    }
    b = cluster_binding(c, "n1");
    CHECK(b != NULL && b->res[0].total == 2 && b->res[0].n_prio == 2);
    CHECK(judge(c, PRIO150, 20, 0).fit_now == 19); /* 18 free, x preemptible */
    CHECK(links_ok(c) && names_ok(c) && sums_ok(c) && sums_ok(ref));
    cluster_free(c);
    cluster_free(ref);
}

/* Resource names are kept whole: a name that shares its first 63 characters with another is
 * a different resource, and churn of pods asking for it leaves nothing behind. */
#define NAME63 "nvidia.com/mig-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONGER NAME63 "-and-a-longer-variant"
static void test_long_resource_names(void)
{
    struct cluster *c = empty_view();
    struct capacity_result r;
    char name[32];
    const char *tmpl =
        "{'tolerations':[{'operator':'Exists'}],'containers':[{'name':'t','resources':{'limits':"
        "{'" LONGER "':'1'}}}]}";

    CHECK(strlen(NAME63) == 63);
    apply(c, CLUSTER_NODES, "ADDED",
          "{'kind':'Node','metadata':{'name':'n1'},'status':{'conditions':[{'type':'Ready',"
          "'status':'True'}],'capacity':{'" NAME63 "':'4','" LONGER "':'2'},'allocatable':{'" NAME63
          "':'4','" LONGER "':'2'}}}");
    pod_at(c, "ADDED", "b", "n1", 0, NAME63, 3);
    pod_at(c, "ADDED", "a", "n1", 0, LONGER, 1);
    r = judge(c, tmpl, 1, 0);
    CHECK(r.eligible == 1 && r.fit_now == 1 && r.fit_ever == 2);
    CHECK_STR(r.res[0].name, LONGER);
    r = judge(c,
              "{'tolerations':[{'operator':'Exists'}],'containers':[{'name':'t','resources':{"
              "'limits':{'" NAME63 "':'1'}}}]}",
              1, 0);
    CHECK(r.fit_now == 1 && r.fit_ever == 4);
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "churn%d", i);
        pod_at(c, "ADDED", name, "n1", i, LONGER, 1);
        pod_at(c, "DELETED", name, "n1", i, LONGER, 1);
    }
    CHECK(cluster_binding(c, "n1") != NULL && cluster_binding(c, "n1")->n_res == 2);
    CHECK(cluster_binding(c, "n1")->res[0].n_prio == 1 &&
          cluster_binding(c, "n1")->res[1].n_prio == 1);
    CHECK(names_ok(c) && sums_ok(c));
    cluster_free(c);
}

#define GPU_NODE(name, label, alloc, spec)                                                         \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{" label "}},'spec':{" spec "},"        \
    "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':'4'}," \
    "'allocatable':{'nvidia.com/gpu':'" alloc "'}}}"
#define PRESENT "'nvidia.com/gpu.present':'true'"
#define ON_GPU_NODES                                                                               \
    "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{'name':'t','resources':"     \
    "{'limits':{'nvidia.com/gpu':'1'}}}]}"
#define ANYWHERE "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"

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

/* Pods may name a node before it is in the view, and outlive it. */
static void test_node_binding_links(void)
{
    struct cluster *c = empty_view();

    pod_at(c, "ADDED", "early", "n9", 0, "nvidia.com/gpu", 1);
    CHECK(cluster_binding(c, "n9") != NULL && links_ok(c));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n9", PRESENT, "4", ""));
    CHECK(links_ok(c));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 3);
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n9", PRESENT, "2", "")); /* in place */
    CHECK(links_ok(c) && judge(c, ON_GPU_NODES, 1, 0).fit_now == 1);
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n9", "", "2", "")); /* a new record */
    apply(c, CLUSTER_NODES, "MODIFIED", GPU_NODE("n9", PRESENT, "2", ""));
    CHECK(links_ok(c) && judge(c, ON_GPU_NODES, 1, 0).fit_now == 1);
    apply(c, CLUSTER_NODES, "DELETED", GPU_NODE("n9", PRESENT, "2", ""));
    CHECK(cluster_binding(c, "n9") != NULL && links_ok(c));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n9", PRESENT, "4", ""));
    pod_at(c, "ADDED", "late", "n9", 0, "nvidia.com/gpu", 2);
    CHECK(links_ok(c) && judge(c, ON_GPU_NODES, 1, 0).fit_now == 1);
    pod_at(c, "DELETED", "early", "n9", 0, "nvidia.com/gpu", 1);
    pod_at(c, "DELETED", "late", "n9", 0, "nvidia.com/gpu", 2);
    CHECK(cluster_binding(c, "n9") == NULL && links_ok(c));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 4);
    pod_at(c, "ADDED", "again", "n9", 0, "nvidia.com/gpu", 1);
    CHECK(links_ok(c) && judge(c, ON_GPU_NODES, 1, 0).fit_now == 3);
    /* a relist of the pods that no longer has it */
    cluster_list_begin(c, CLUSTER_PODS);
    cluster_list_end(c, CLUSTER_PODS);
    CHECK(cluster_binding(c, "n9") == NULL && links_ok(c));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 4);
    CHECK(names_ok(c) && sums_ok(c));
    cluster_free(c);
}

/* A resource name first seen after startup, on a pod before any node offers it; amounts
 * changed in place keep the node's res_sum slot (remembered eligible sets point at it); the
 * copies follow pods, nodes and relists; a name nothing holds any more is gone. */
#define MIG "nvidia.com/mig-1g.10gb"
#define MIG_NODE(name, alloc, extra)                                                               \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{" PRESENT "}},'status':{"              \
    "'conditions':[{'type':'Ready','status':'True'}],'capacity':{'" MIG "':'7'" extra "},"         \
    "'allocatable':{'" MIG "':'" alloc "'" extra "}}}"
#define ON_MIG                                                                                     \
    "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'priority':50,'containers':[{'name':'t',"   \
    "'resources':{'limits':{'" MIG "':'1'}}}]}"
static void test_interned_names_and_sums(void)
{
    struct cluster *c = empty_view();
    const struct node *n;
    uint32_t slot;
    char name[32];

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("g1", PRESENT, "4", ""));
    CHECK(cluster_rname(c, MIG) == NULL && names_ok(c) && sums_ok(c));
    CHECK(judge(c, ON_MIG, 1, 0).eligible == 0);
    pod_at(c, "ADDED", "early", "m1", 10, MIG, 2); /* the name, first on a pod */
    CHECK(cluster_rname(c, MIG) != NULL && names_ok(c) && sums_ok(c));
    apply(c, CLUSTER_NODES, "ADDED", MIG_NODE("m1", "7", ""));
    CHECK(names_ok(c) && sums_ok(c));
    CHECK(judge(c, ON_MIG, 1, 0).fit_now == 7); /* 5 free, 2 below priority 50 */
    n = table_get(&c->kinds[CLUSTER_NODES], "m1");
    slot = n->res[0].sum;
    CHECK(slot != 0 && c->sums[slot].exact && c->sums[slot].used == 2);

    /* amounts alone, and a resource added at 0 (not offered): in place, same slot */
    apply(c, CLUSTER_NODES, "MODIFIED", MIG_NODE("m1", "5", ",'example.com/fpga':'0'"));
    CHECK(table_get(&c->kinds[CLUSTER_NODES], "m1") == n && n->res[0].sum == slot);
    CHECK(n->n_res == 2 && names_ok(c) && sums_ok(c));
    CHECK(judge(c, ON_MIG, 1, 0).fit_now == 5);
    pod_at(c, "ADDED", "high", "m1", 100, MIG, 3);
    CHECK(sums_ok(c) && c->sums[slot].used == 5 && c->sums[slot].n_prio == 2);
    CHECK(judge(c, ON_MIG, 1, 0).fit_now == 2); /* 0 free, 2 below 50; 3 above are not */

    /* more priorities than a slot holds: the records are read, with the same answer */
    for (int i = 0; i < RES_SUM_PRIO + 1; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        pod_at(c, "ADDED", name, "m1", i, MIG, 1);
    }
    CHECK(!c->sums[slot].exact && sums_ok(c));
    CHECK(judge(c, ON_MIG, 1, 0).fit_now == 2); /* 10 used of 5: 0 free, 7 below 50 */
    for (int i = 0; i < RES_SUM_PRIO + 1; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        pod_at(c, "DELETED", name, "m1", i, MIG, 1);
    }
    CHECK(c->sums[slot].exact && sums_ok(c) && judge(c, ON_MIG, 1, 0).fit_now == 2);

    /* a new record (a label change): new slots, the old ones free */
    apply(c, CLUSTER_NODES, "MODIFIED",
          "{'kind':'Node','metadata':{'name':'m1','labels':{" PRESENT ",'x':'y'}},'status':{"
          "'conditions':[{'type':'Ready','status':'True'}],'capacity':{'" MIG "':'7'},"
          "'allocatable':{'" MIG "':'5'}}}");
    CHECK(names_ok(c) && sums_ok(c) && judge(c, ON_MIG, 1, 0).fit_now == 2);
    apply(c, CLUSTER_NODES, "DELETED", MIG_NODE("m1", "5", ""));
    CHECK(names_ok(c) && sums_ok(c) && cluster_rname(c, MIG) != NULL); /* pods still hold it */
    cluster_list_begin(c, CLUSTER_PODS);
    cluster_list_end(c, CLUSTER_PODS);
    CHECK(names_ok(c) && sums_ok(c) && cluster_rname(c, MIG) == NULL);
    CHECK(cluster_rname(c, "nvidia.com/gpu") != NULL);
    apply(c, CLUSTER_NODES, "DELETED", GPU_NODE("g1", PRESENT, "4", ""));
    CHECK(names_ok(c) && sums_ok(c) && cluster_rname(c, "nvidia.com/gpu") == NULL);
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

/* A snapshot past CLUSTER_SNAPSHOT_MAX_BYTES (a sparse file) is refused before it is read, with
 * the size and the limit in the message. */
static void test_snapshot_size_limit(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    struct diag d;
    char path[] = "/tmp/gpuadmit-snap-XXXXXX", want[128];
    int fd = mkstemp(path);

    CHECK(fd >= 0 && ftruncate(fd, (off_t)CLUSTER_SNAPSHOT_MAX_BYTES + 1) == 0);
    close(fd);
    diag_clear(&d);
    CHECK(cluster_load_snapshot(c, path, &d) == -1);
    snprintf(want, sizeof(want), "file is %lu bytes, more than the limit of %lu",
             (unsigned long)CLUSTER_SNAPSHOT_MAX_BYTES + 1,
             (unsigned long)CLUSTER_SNAPSHOT_MAX_BYTES);
    CHECK_STR(d.msg, want);
    CHECK(!cluster_synced(c));
    unlink(path);
    cluster_free(c);
}

/* The device-plugin grace runs from when allocatable first fell to 0: a kubelet that keeps
 * updating its node (status every 10 s or so, or on any change) while the plugin stays away
 * does not stretch it, or a dead plugin's GPUs would be counted for ever. */
static void test_grace_runs_from_the_first_zero(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    const struct node *n;
    double first;
    struct timespec ms = {0, 2000000};

    apply(c, CLUSTER_NODES, "ADDED", NODE("a", "4", "4", ""));
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", ""));
    n = table_get(&c->kinds[CLUSTER_NODES], "a");
    CHECK(n != NULL && n->n_res == 1 && n->res[0].zero_since > 0);
    if (n == NULL || n->n_res != 1)
        goto out;
    first = n->res[0].zero_since;
    for (int i = 0; i < 3; i++) { /* the kubelet updates the node again, later */
        nanosleep(&ms, NULL);
        apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", ""));
    }
    n = table_get(&c->kinds[CLUSTER_NODES], "a");
    CHECK(n != NULL && n->res[0].zero_since == first);
    if (n == NULL)
        goto out;
    /* within the grace from the first zero the last allocatable stands; a millisecond past
     * its end (less than the updates above came after the first zero), 0 */
    CHECK(cluster_effective_allocatable(c, &n->res[0], first + 59.5) == 4);
    CHECK(cluster_effective_allocatable(c, &n->res[0], first + 60.001) == 0);
    /* back, then gone again: a new grace, from the new zero */
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "4", ""));
    nanosleep(&ms, NULL);
    apply(c, CLUSTER_NODES, "MODIFIED", NODE("a", "4", "0", ""));
    n = table_get(&c->kinds[CLUSTER_NODES], "a");
    CHECK(n != NULL && n->res[0].zero_since > first);
out:
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

/* A one-GPU pod of ns controlled by an owner (kind, name), or of none when kind is NULL. */
static void owned_pod(struct cluster *c, const char *type, const char *name, const char *node,
                      long prio, const char *kind, const char *owner)
{
    char buf[1024], refs[256] = "";

    if (kind != NULL)
        snprintf(refs, sizeof(refs),
                 ",'ownerReferences':[{'kind':'%s','name':'%s','controller':true}]", kind, owner);
    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','metadata':{'name':'%s','namespace':'ns'%s},'spec':{'nodeName':'%s',"
             "'priority':%ld,'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"
             "[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':"
             "'%s'}}",
             name, refs, node, prio, node[0] ? "Running" : "Pending");
    apply(c, CLUSTER_PODS, type, buf);
}

#define DB_STS(replicas)                                                                           \
    "{'kind':'StatefulSet','metadata':{'name':'db','namespace':'ns'},'spec':{'replicas'"           \
    ":" #replicas ",'template':{'spec':" ON_GPU_NODES "}}}"

/* The view's groups of waiters agree with its waiters: the same pods, each waiter in the
 * group of its place, resource, amount and priority (decisions read the groups alone). */
static bool groups_agree(const struct cluster *c)
{
    int64_t waiting = 0, grouped = 0, pending = 0, gpending = 0;
    size_t members = 0;

    for (size_t i = 0; i < c->n_waiting; i++) {
        const struct waiter *w = c->waiting[i];

        waiting += waiter_count(w);
        pending += w->pending;
        if (w->group == NULL || w->group->place != w->place || w->group->priority != w->priority ||
            w->group->per_pod != w->per_pod)
            return false;
    }
    for (size_t i = 0; i < c->n_groups; i++) {
        const struct wgroup *g = c->live_groups[i];
        int64_t n = 0;

        if (g->head == NULL || g->at != i)
            return false;
        for (const struct waiter *w = g->head; w != NULL; w = w->gnext, members++)
            n += waiter_count(w);
        if (n != g->count)
            return false;
        grouped += g->count;
        gpending += g->pending;
    }
    return waiting == grouped && pending == gpending && members == c->n_waiting &&
           c->groups.n == c->n_groups;
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

#define JOB(spec, status)                                                                          \
    "{'kind':'Job','metadata':{'name':'j','namespace':'ns'},'spec':{" spec                         \
    ",'template':{'spec':" ON_GPU_NODES "}},'status':{" status "}}"

/* A finished Job owes no pods: the job controller does nothing for it
 * (pkg/controller/job/job_controller.go, syncJob: IsJobFinished, a Complete or Failed
 * condition True), and a Job without completions creates none after its first success. */
static void test_finished_jobs_owe_nothing(void)
{
    struct cluster *c = empty_view();

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_JOBS, "ADDED", JOB("'parallelism':3,'completions':6", "'succeeded':1"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 5);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_JOBS, "MODIFIED",
          JOB("'parallelism':3,'completions':6",
              "'succeeded':2,'conditions':[{'type':'Failed','status':'True'}]"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_JOBS, "MODIFIED",
          JOB("'parallelism':3,'completions':6",
              "'succeeded':2,'conditions':[{'type':'Complete','status':'False'}]"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 5);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_JOBS, "MODIFIED",
          JOB("'parallelism':3,'completions':6",
              "'succeeded':6,'conditions':[{'type':'Complete','status':'True'}]"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_JOBS, "MODIFIED",
          JOB("'parallelism':3", "'succeeded':0,'completionTime':'2026-12-01T10:00:00Z'"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    /* no completions: a work queue, done once one pod succeeds */
    apply(c, CLUSTER_JOBS, "MODIFIED", JOB("'parallelism':3", "'succeeded':0"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 5);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_JOBS, "MODIFIED", JOB("'parallelism':3", "'succeeded':1"));
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
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

/* A Pending pod with scheduling gates is out of the scheduler's queue (the SchedulingGates
 * PreEnqueue plugin; Kueue gates pods so): it takes no GPUs until its gate goes, and it is
 * one of its controller's replicas all the same (2 nodes of 4 GPUs). */
static void test_gated_pods_wait_for_their_gate(void)
{
    struct cluster *c = empty_view();
    const char *gated = "{'kind':'Pod','metadata':{'name':'g','namespace':'ns'},'spec':{"
                        "'schedulingGates':[{'name':'kueue.x-k8s.io/admission'}],'nodeSelector':"
                        "{'nvidia.com/gpu.present':'true'},'containers':[{'name':'c','resources':"
                        "{'limits':{'nvidia.com/gpu':'1'}}}]},'status':{'phase':'Pending'}}";
    const char *ungated = "{'kind':'Pod','metadata':{'name':'g','namespace':'ns'},'spec':{"
                          "'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{"
                          "'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
                          "'status':{'phase':'Pending'}}";

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_PODS, "ADDED", gated);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PODS, "MODIFIED", ungated); /* admitted: the gate removed */
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 7 && c->n_waiting == 1);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PODS, "MODIFIED", gated);
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 8 && c->n_waiting == 0);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PODS, "DELETED", gated);
    CHECK(c->waiters.n == 0);
    /* a gated replica of db is one of its 3: db owes 2, and the gated one takes nothing */
    apply(c, CLUSTER_STATEFULSETS, "ADDED", DB_STS(3));
    apply(c, CLUSTER_PODS, "ADDED",
          "{'kind':'Pod','metadata':{'name':'db-0','namespace':'ns','ownerReferences':[{'kind':"
          "'StatefulSet','name':'db','controller':true}]},'spec':{'schedulingGates':[{'name':"
          "'x'}],'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]},"
          "'status':{'phase':'Pending'}}");
    CHECK(judge(c, ON_GPU_NODES, 1, 0).fit_now == 6);
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

/* The replicas a workload owes have its template's priority as the Priority admission plugin
 * will give its pods: the class it names, or the globalDefault class when it names none,
 * whether the class came into the view before the workload or after (2 nodes of 4 GPUs, a
 * template of class mid, 50). */
#define STS_CLASS(name, cls)                                                                       \
    "{'kind':'StatefulSet','metadata':{'name':'" name "','namespace':'ns'},'spec':{'replicas':3,"  \
    "'template':{'spec':{" cls "'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"    \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}}}"
#define MID_TEMPLATE                                                                               \
    "{'priorityClassName':'mid','nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"    \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"
static void test_owed_priority_follows_the_classes(void)
{
    struct cluster *c = empty_view();

    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n1", PRESENT, "4", ""));
    apply(c, CLUSTER_NODES, "ADDED", GPU_NODE("n2", PRESENT, "4", ""));
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'mid'},'value':50}");
    apply(c, CLUSTER_STATEFULSETS, "ADDED", STS_CLASS("db", "'priorityClassName':'high',"));
    CHECK(judge(c, MID_TEMPLATE, 1, 0).fit_now == 8); /* high unknown yet: priority 0 */
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'high'},'value':100}");
    CHECK(judge(c, MID_TEMPLATE, 1, 0).fit_now == 5);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PRIORITYCLASSES, "DELETED",
          "{'kind':'PriorityClass','metadata':{'name':'high'},'value':100}");
    CHECK(judge(c, MID_TEMPLATE, 1, 0).fit_now == 8);
    CHECK(groups_agree(c));
    /* a template naming no class gets the globalDefault one */
    apply(c, CLUSTER_STATEFULSETS, "ADDED", STS_CLASS("web", ""));
    CHECK(judge(c, MID_TEMPLATE, 1, 0).fit_now == 8);
    CHECK(groups_agree(c));
    apply(c, CLUSTER_PRIORITYCLASSES, "ADDED",
          "{'kind':'PriorityClass','metadata':{'name':'dflt'},'value':100,'globalDefault':true}");
    CHECK(judge(c, MID_TEMPLATE, 1, 0).fit_now == 5);
    CHECK(groups_agree(c));
    CHECK(groups_agree(c));
    cluster_free(c);
}

int main(void)
{
    RUN(test_list_and_watch);
    RUN(test_device_plugin_grace);
    RUN(test_snapshot);
    RUN(test_snapshot_size_limit);
    RUN(test_capacity_stall);
    RUN(test_capacity_nodes);
    RUN(test_reservations);
    RUN(test_affinity_rules);
    RUN(test_priority_churn);
    RUN(test_long_resource_names);
    RUN(test_eligible_nodes_follow_the_view);
    RUN(test_node_binding_links);
    RUN(test_interned_names_and_sums);
    RUN(test_fit_paths_agree);
    RUN(test_place_keys);
    RUN(test_grace_runs_from_the_first_zero);
    RUN(test_never_preempts);
    RUN(test_waiting_follows_the_view);
    RUN(test_finished_jobs_owe_nothing);
    RUN(test_reservation_ends_at_its_target);
    RUN(test_many_waiting_places);
    RUN(test_gated_pods_wait_for_their_gate);
    RUN(test_waiting_pods_land_whole);
    RUN(test_owed_priority_follows_the_classes);
    TEST_MAIN_END("test_cluster");
}
