/*
 * test_cluster.c: the cluster view (lists, watch events, the device-plugin grace, snapshots),
 * its bookkeeping (bindings, interned names, res_sum lines, waiting pods per controller) and
 * what decisions read of it. The capacity arithmetic is test_capacity.c's.
 */
#include <unistd.h>

#include "view_fixture.h"

/* The view's dump, frozen to be read (js_free()). */
static yyjson_val *dump_of(struct cluster *c)
{
    yyjson_mut_doc *m = cluster_dump(c);
    yyjson_doc *doc = m != NULL ? json_freeze(yyjson_mut_doc_get_root(m)) : NULL;

    yyjson_mut_doc_free(m);
    return keep(doc);
}

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

/* A snapshot file of text (single quotes for double), into path (a mkstemp template). */
static void write_snapshot(char *path, const char *text)
{
    int fd = mkstemp(path);
    char *buf = strdup(text);
    size_t n = strlen(buf);

    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    CHECK(fd >= 0 && write(fd, buf, n) == (ssize_t)n);
    if (fd >= 0)
        close(fd);
    free(buf);
}

/* What a snapshot held: the kinds of which it had an object, also those the view keeps none of
 * (a pod that uses no GPU); a watched view lacks nothing. */
static void test_snapshot_missing_kinds(void)
{
    struct cluster_config cfg = {60};
    struct cluster *full = stall(), *part = cluster_new(&cfg), *watched = cluster_new(&cfg);
    char path[] = "/tmp/gpuadmit-snap-XXXXXX";
    const unsigned classes = 1u << CLUSTER_PRIORITYCLASSES, pods = 1u << CLUSTER_PODS,
                   nodes = 1u << CLUSTER_NODES;
    struct diag d;

    /* stall.json: nodes, pods, classes and Deployments, no other workload kind */
    CHECK((cluster_snapshot_missing(full) & (classes | pods | nodes)) == 0);
    CHECK(cluster_snapshot_missing(full) & (1u << CLUSTER_JOBS));
    CHECK_STR(cluster_snapshot_path(full), SNAPSHOT);
    /* kubectl get nodes,pods -A -o json: one node, a pod without GPUs, no class */
    write_snapshot(path,
                   "{'kind':'List','items':[" NODE(
                       "g", "4", "4",
                       "") ",{'kind':'Pod',"
                           "'metadata':{'name':'dns','namespace':'kube-system'},'spec':{'nodeName':"
                           "'g','containers':[{'name':'c'}]},'status':{'phase':'Running'}}]}");
    diag_clear(&d);
    CHECK(cluster_load_snapshot(part, path, &d) == 0);
    CHECK((cluster_snapshot_missing(part) & (classes | pods | nodes)) == classes);
    CHECK_STR(cluster_snapshot_path(part), path);
    CHECK(cluster_synced(part)); /* a snapshot is the whole truth it has, and judged from */
    /* told once per view */
    CHECK(cluster_snapshot_tell_gaps(part));
    CHECK(!cluster_snapshot_tell_gaps(part));
    CHECK(cluster_snapshot_tell_gaps(full));
    /* a view fed by list and watch lists every kind, empty or not */
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(watched, (enum cluster_kind)k);
        cluster_list_end(watched, (enum cluster_kind)k);
    }
    CHECK(cluster_snapshot_missing(watched) == 0);
    CHECK(cluster_snapshot_path(watched) == NULL);
    unlink(path);
    cluster_free(watched);
    cluster_free(part);
    cluster_free(full);
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

/* An optional kind the apiserver does not serve counts as listed and never ages the view; a
 * required kind that is silent does. */
/* A device plugin config read again unchanged (every 30 s) keeps what capacity remembers of the
 * nodes (node_gen); a changed one, or one no longer there, drops it. */
static void test_plugin_config_generation(void)
{
    struct cluster *c = empty_view();
    const char *a = "{'kind':'ConfigMap','metadata':{'name':'time-slicing-config','namespace':"
                    "'gpu-operator'},'data':{'t4':'sharing: {mps: {resources: [{name: gpu, "
                    "replicas: 2}]}}'}}";
    const char *b = "{'kind':'ConfigMap','metadata':{'name':'time-slicing-config','namespace':"
                    "'gpu-operator'},'data':{'t4':'version: v1'}}";
    unsigned long gen;

    apply(c, CLUSTER_PLUGIN_CONFIGS, "ADDED", a);
    gen = c->node_gen;
    apply(c, CLUSTER_PLUGIN_CONFIGS, "MODIFIED", a);
    CHECK(c->node_gen == gen);
    cluster_list_begin(c, CLUSTER_PLUGIN_CONFIGS);
    apply(c, CLUSTER_PLUGIN_CONFIGS, "MODIFIED", a);
    cluster_list_end(c, CLUSTER_PLUGIN_CONFIGS);
    CHECK(c->node_gen == gen); /* a round that read the same */
    apply(c, CLUSTER_PLUGIN_CONFIGS, "MODIFIED", b);
    CHECK(c->node_gen != gen);
    gen = c->node_gen;
    cluster_list_begin(c, CLUSTER_PLUGIN_CONFIGS);
    cluster_list_end(c, CLUSTER_PLUGIN_CONFIGS); /* a round that read none */
    CHECK(c->node_gen != gen && c->kinds[CLUSTER_PLUGIN_CONFIGS].n == 0);
    cluster_free(c);
}

static void test_absent_optional_kinds(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        if (cluster_kind_optional((enum cluster_kind)k))
            continue;
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    CHECK(!cluster_synced(c));
    CHECK(cluster_kind_optional(CLUSTER_NODEPOOLS) &&
          cluster_kind_optional(CLUSTER_AUTOSCALER_STATUS));
    CHECK(!cluster_kind_optional(CLUSTER_PODS));
    cluster_kind_absent(c, CLUSTER_NODEPOOLS);
    cluster_kind_absent(c, CLUSTER_AUTOSCALER_STATUS);
    cluster_kind_absent(c, CLUSTER_PODS); /* a required kind is never absent */
    CHECK(!cluster_synced(c));            /* the device plugin's configs are not read yet */
    CHECK(cluster_kind_optional(CLUSTER_PLUGIN_CONFIGS));
    cluster_kind_absent(c, CLUSTER_PLUGIN_CONFIGS);
    CHECK(cluster_synced(c));
    CHECK(!c->absent[CLUSTER_PODS]);
    c->heartbeat[CLUSTER_NODEPOOLS] = c->heartbeat[CLUSTER_AUTOSCALER_STATUS] = -1e6;
    CHECK(cluster_age_s(c) < 60);
    /* served again: it ages as any kind does */
    cluster_list_begin(c, CLUSTER_NODEPOOLS);
    cluster_list_end(c, CLUSTER_NODEPOOLS);
    c->heartbeat[CLUSTER_NODEPOOLS] = -1e6;
    CHECK(cluster_age_s(c) > 1e5);
    cluster_free(c);
}

int main(void)
{
    RUN(test_list_and_watch);
    RUN(test_plugin_config_generation);
    RUN(test_device_plugin_grace);
    RUN(test_snapshot);
    RUN(test_snapshot_size_limit);
    RUN(test_snapshot_missing_kinds);
    RUN(test_priority_churn);
    RUN(test_long_resource_names);
    RUN(test_node_binding_links);
    RUN(test_interned_names_and_sums);
    RUN(test_grace_runs_from_the_first_zero);
    RUN(test_finished_jobs_owe_nothing);
    RUN(test_gated_pods_wait_for_their_gate);
    RUN(test_owed_priority_follows_the_classes);
    RUN(test_absent_optional_kinds);
    TEST_MAIN_END("test_cluster");
}
