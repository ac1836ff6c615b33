/*
 * view_fixture.h: what test_cluster.c and test_capacity.c both build views with: JSON written
 * with single quotes, watch events applied, the stall snapshot, a judged template, pods of
 * every kind, and checks of the view's bookkeeping (interned names, res_sum lines, waiting
 * groups) that hold after any sequence of events. Helpers are static inline, so that a test
 * file may leave some unused.
 */
#ifndef GPUADMIT_VIEW_FIXTURE_H
#define GPUADMIT_VIEW_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/capacity.h"
#include "cluster/cluster.h"
#include "cluster/cluster_view.h"
#include "harness.h"
#include "json.h"

#define SNAPSHOT "tests/data/snapshots/stall.json"

/* The documents js() (and test_cluster.c's dump_of()) made, by root, until js_free(). */
static struct {
    yyjson_val *root;
    yyjson_doc *doc;
} kept[64];

static inline yyjson_val *keep(yyjson_doc *doc)
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

/* Frees the document whose root v is (from js() or keep()). */
static inline void js_free(yyjson_val *v)
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
static inline yyjson_val *js(const char *text)
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

static inline void apply(struct cluster *c, enum cluster_kind k, const char *type, const char *obj)
{
    yyjson_val *o = js(obj);
    struct diag d;

    diag_clear(&d);
    CHECK(cluster_apply(c, k, type, o, &d) == 0);
    js_free(o);
}

static inline struct cluster *stall(void)
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

static inline struct capacity_result judge(struct cluster *c, const char *tmpl, int64_t inc,
                                           int64_t headroom)
{
    yyjson_val *spec = js(tmpl);
    struct capacity_request rq = {spec, &gpus, inc, inc, headroom, 0, 0};
    struct capacity_result res;

    CHECK(capacity_judge(c, &rq, &res) == 0);
    js_free(spec);
    return res;
}

/* A pod on node with priority prio asking n of res. */
static inline void pod_at(struct cluster *c, const char *type, const char *name, const char *node,
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

/* Cluster Autoscaler's status ConfigMap kube-system/cluster-autoscaler-status with data.status
 * yaml, and its last-updated annotation when updated is not NULL, applied to c. */
static inline void view_ca_status(struct cluster *c, const char *yaml, const char *updated)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *o = json_pack(
        m, "{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
        "name", "cluster-autoscaler-status", "namespace", "kube-system", "data", "status", yaml);
    yyjson_doc *doc;
    struct diag d;

    if (updated != NULL)
        json_mut_set(
            m, yyjson_mut_obj_get(o, "metadata"), "annotations",
            json_pack(m, "{s:s}", "cluster-autoscaler.kubernetes.io/last-updated", updated));
    doc = json_freeze(o);
    diag_clear(&d);
    CHECK(cluster_apply(c, CLUSTER_AUTOSCALER_STATUS, "ADDED", yyjson_doc_get_root(doc), &d) == 0);
    yyjson_doc_free(doc);
    yyjson_mut_doc_free(m);
}

static inline struct cluster *empty_view(void)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);

    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    return c;
}

/* Interned names: every record's name is the view's one copy, counted once per record that
 * holds it, and a name no record holds is gone. */
static inline bool names_ok(const struct cluster *c)
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
static inline bool sums_ok(const struct cluster *c)
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

#define GPU_NODE(name, label, alloc, spec)                                                         \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{" label "}},'spec':{" spec "},"        \
    "'status':{'conditions':[{'type':'Ready','status':'True'}],'capacity':{'nvidia.com/gpu':'4'}," \
    "'allocatable':{'nvidia.com/gpu':'" alloc "'}}}"
#define PRESENT "'nvidia.com/gpu.present':'true'"
#define ON_GPU_NODES                                                                               \
    "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':[{'name':'t','resources':"     \
    "{'limits':{'nvidia.com/gpu':'1'}}}]}"
#define ANYWHERE "{'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"

#define MIG "nvidia.com/mig-1g.10gb"
#define MIG_NODE(name, alloc, extra)                                                               \
    "{'kind':'Node','metadata':{'name':'" name "','labels':{" PRESENT "}},'status':{"              \
    "'conditions':[{'type':'Ready','status':'True'}],'capacity':{'" MIG "':'7'" extra "},"         \
    "'allocatable':{'" MIG "':'" alloc "'" extra "}}}"
#define ON_MIG                                                                                     \
    "{'nodeSelector':{'nvidia.com/gpu.present':'true'},'priority':50,'containers':[{'name':'t',"   \
    "'resources':{'limits':{'" MIG "':'1'}}}]}"
/* A one-GPU pod of ns controlled by an owner (kind, name), or of none when kind is NULL. */
static inline void owned_pod(struct cluster *c, const char *type, const char *name,
                             const char *node, long prio, const char *kind, const char *owner)
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
static inline bool groups_agree(const struct cluster *c)
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

#endif
