/*
 * capacity.c: workload fit against the cluster view (see capacity.h).
 */
#include "capacity.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capacity_cache.h"
#include "cluster_view.h"
#include "json.h"
#include "mono.h"
#include "parse.h"
#include "policy/pod.h"
#include "placement.h"

#define REASONS_MAX  16
#define NODES_LISTED 6

/* Why a node cannot take the pod: kept as pointers into the node and the template (valid for
 * the decision), turned into words only for the reasons shown. */
enum why_kind {
    WHY_NODE_NAME,
    WHY_LABEL,
    WHY_AFFINITY,
    WHY_TAINT,
    WHY_CORDONED,
    WHY_NOT_READY,
    WHY_NO_RES
};

struct why {
    enum why_kind k;
    const char *a, *b, *c;
};

struct reasons {
    struct why w[REASONS_MAX];
    int count[REASONS_MAX];
    int n;
};

static bool same_str(const char *x, const char *y)
{
    return x == y || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

static void reason_add(struct reasons *r, const struct why *w)
{
    for (int i = 0; i < r->n; i++) {
        if (r->w[i].k == w->k && same_str(r->w[i].a, w->a) && same_str(r->w[i].b, w->b) &&
            same_str(r->w[i].c, w->c)) {
            r->count[i]++;
            return;
        }
    }
    if (r->n < REASONS_MAX) {
        r->w[r->n] = *w;
        r->count[r->n++] = 1;
    }
}

/* The reason in words, for one node or several: "lacks X"/"lack X", "is cordoned"/"are ...". */
static void why_text(const struct why *w, bool one, char *buf, size_t len)
{
    switch (w->k) {
    case WHY_NODE_NAME: snprintf(buf, len, "%s not node %s", one ? "is" : "are", w->a); break;
    case WHY_LABEL: snprintf(buf, len, "%s %s=%s", one ? "lacks" : "lack", w->a, w->b); break;
    case WHY_AFFINITY:
        snprintf(buf, len, "%s not match the required node affinity", one ? "does" : "do");
        break;
    case WHY_TAINT:
        snprintf(buf, len, "%s untolerated taint %s%s%s:%s", one ? "has" : "have", w->a,
                 w->b[0] ? "=" : "", w->b, w->c);
        break;
    case WHY_CORDONED: snprintf(buf, len, "%s cordoned", one ? "is" : "are"); break;
    case WHY_NOT_READY: snprintf(buf, len, "%s not Ready", one ? "is" : "are"); break;
    case WHY_NO_RES: snprintf(buf, len, "%s no %s", one ? "has" : "have", w->a); break;
    }
}

/* The length of v when it is a string, else 0. */
static size_t str_len(yyjson_val *v)
{
    return yyjson_is_str(v) ? yyjson_get_len(v) : 0;
}

/*
 * Whether the node cannot take the pod; why into *w. WHY_CORDONED and WHY_NOT_READY are the
 * transient reasons: the node matches the template otherwise.
 *
 * A pod that names its node (spec.nodeName) skips the scheduler: the kubelet of that node admits
 * it with its own checks (pkg/kubelet/lifecycle/predicate.go: the node's name, resources,
 * nodeSelector and required affinity, and of the taints only NoExecute ones), so no other node
 * is eligible, and a cordon or a NoSchedule taint does not keep it off that one.
 */
static bool ineligible(const struct node *n, yyjson_val *spec, struct why *w)
{
    yyjson_val *named = yyjson_obj_get(spec, "nodeName"), *tols;
    const char *lkey, *lvalue;
    bool transient = false, kubelet = str_len(named) > 0;

    memset(w, 0, sizeof(*w));
    if (kubelet && !yyjson_equals_strn(named, n->name, strlen(n->name))) {
        *w = (struct why){WHY_NODE_NAME, yyjson_get_str(named), NULL, NULL};
        return true;
    }
    if (placement_selector_miss(spec, n->labels, &lkey, &lvalue)) {
        *w = (struct why){WHY_LABEL, lkey, lvalue, NULL};
        return true;
    }
    if (!placement_affinity_ok(spec, n->name, n->labels)) {
        w->k = WHY_AFFINITY;
        return true;
    }
    tols = yyjson_obj_get(spec, "tolerations");
    for (size_t i = 0; i < n->n_taints; i++) {
        const struct node_taint *t = &n->taints[i];

        if (strcmp(t->effect, "NoExecute") != 0 &&
            (kubelet || strcmp(t->effect, "NoSchedule") != 0))
            continue;
        if (placement_lifecycle_taint(t->key)) {
            transient = true; /* a cordon or a NotReady condition, judged below */
            continue;
        }
        if (!placement_tolerated(tols, t->key, t->value, t->effect)) {
            *w = (struct why){WHY_TAINT, t->key, t->value, t->effect};
            return true;
        }
    }
    if ((n->unschedulable && !kubelet) || !n->ready || transient) {
        w->k = (n->unschedulable && !kubelet) || (n->ready && transient) ? WHY_CORDONED
                                                                         : WHY_NOT_READY;
        return true;
    }
    return false;
}

/* The node advertises the resource (a key at 0 after a rename is not an offer). */
static bool offers(const struct node *n, const char *name)
{
    const struct node_res *r = node_res_find(n, name);

    return r != NULL && node_res_offered(r);
}

/* The template's resource names as the view interns them: records are matched by pointer. */
static void intern_names(const struct cluster *c, const struct capacity_result *out,
                         const char **rn)
{
    for (size_t r = 0; r < out->n_res; r++)
        rn[r] = cluster_rname(c, out->res[r].name);
}

/* The template's priority and whether it may preempt, from its class in the view. */
static void template_priority(const struct cluster *c, yyjson_val *spec, int64_t *prio,
                              bool *preempt)
{
    yyjson_val *clsv = yyjson_obj_get(spec, "priorityClassName");
    const char *cls = yyjson_get_str(clsv);
    const struct vclass *v = NULL;
    const struct table *t = &c->kinds[CLUSTER_PRIORITYCLASSES];
    bool named = str_len(clsv) > 0;
    int64_t p;

    *prio = 0;
    *preempt = true;                                  /* PreemptLowerPriority is the default */
    if (named && strlen(cls) == yyjson_get_len(clsv)) /* no class name holds a NUL */
        v = table_get(t, cls);
    for (size_t i = 0; v == NULL && !named && i < t->n_buckets; i++) {
        for (struct table_entry *e = t->buckets[i]; e; e = e->next) {
            if (((const struct vclass *)e->value)->global_default)
                v = e->value;
        }
    }
    if (v != NULL) {
        *prio = v->value;
        *preempt = v->preempt;
    } else if (json_int64(yyjson_obj_get(spec, "priority"), &p)) {
        *prio = p;
    }
    if (yyjson_is_str(yyjson_obj_get(spec, "preemptionPolicy")))
        *preempt = !json_str_is(yyjson_obj_get(spec, "preemptionPolicy"), "Never");
    /* a pod that names its node skips the scheduler, so nothing preempts for it; its kubelet
     * evicts for a critical pod only (pkg/kubelet/preemption: CriticalPodAdmissionHandler,
     * IsCriticalPod: priority 2000000000 and up) */
    if (str_len(yyjson_obj_get(spec, "nodeName")) > 0 && *prio < 2000000000)
        *preempt = false;
}

/* The reservations still running, copied out so that the node loop takes no lock (usually
 * none: nothing is allocated then). */
struct held {
    struct reservation *r;
    const struct reservation **by_node; /* r sorted by node and resource (held_sort) */
    size_t n;
};

/* A reservation rq would replace: the same workload's, from the same base (a retry). */
static bool own_reservation(const struct reservation *r, const struct capacity_request *rq)
{
    return rq->key != 0 && r->key == rq->key && r->base == rq->base;
}

static bool held_counts(const struct reservation *r, const struct capacity_request *rq, double now)
{
    return r->until > now && !own_reservation(r, rq);
}

static int held_cmp(const void *a, const void *b)
{
    const struct reservation *x = *(const struct reservation *const *)a,
                             *y = *(const struct reservation *const *)b;
    int d = strcmp(x->node, y->node);

    return d ? d : strcmp(x->name, y->name);
}

/* The reservations that count against rq, in the order they were made (held_sort them for
 * held_on). -1 when out of memory: the decision then fails rather than forget what is held. */
static int held_load(struct capacity_cache *cache, struct held *h,
                     const struct capacity_request *rq, double now)
{
    size_t live = 0;

    h->r = NULL;
    h->by_node = NULL;
    h->n = 0;
    pthread_mutex_lock(&cache->reserve_lock);
    for (size_t i = 0; i < cache->n_reservations; i++)
        live += held_counts(&cache->reservations[i], rq, now);
    if (live > 0 && ((h->r = malloc(live * sizeof(*h->r))) == NULL ||
                     (h->by_node = malloc(live * sizeof(*h->by_node))) == NULL)) {
        free(h->r);
        h->r = NULL;
        pthread_mutex_unlock(&cache->reserve_lock);
        return -1;
    }
    for (size_t i = 0; live > 0 && i < cache->n_reservations; i++) {
        if (held_counts(&cache->reservations[i], rq, now))
            h->r[h->n++] = cache->reservations[i];
    }
    pthread_mutex_unlock(&cache->reserve_lock);
    return 0;
}

/* Sorts what held_load copied by node and resource into by_node, for held_on: pointers, so
 * that the sort moves 8 bytes a step, not a reservation. */
static void held_sort(struct held *h)
{
    for (size_t i = 0; i < h->n; i++)
        h->by_node[i] = &h->r[i];
    if (h->n > 1)
        qsort(h->by_node, h->n, sizeof(*h->by_node), held_cmp);
}

static void held_free(struct held *h)
{
    free(h->r);
    free(h->by_node);
}

/* GPUs of res still held on node: a reservation shrinks as the node's use grows (its pods
 * arriving in the view) and ends with its window. */
static int64_t held_on(const struct held *h, const char *node, const char *res, int64_t used)
{
    int64_t sum = 0, left;

    size_t lo = 0, hi = h->n, mid;

    if (h->n == 0) /* the usual case: no names to compare */
        return 0;
    while (lo < hi) { /* the first of node's, in the sorted copy */
        mid = lo + (hi - lo) / 2;
        if (strcmp(h->by_node[mid]->node, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < h->n && strcmp(h->by_node[i]->node, node) == 0; i++) {
        if (strcmp(h->by_node[i]->name, res) != 0)
            continue;
        left = h->by_node[i]->gpus - (used - h->by_node[i]->used_at);
        if (left > 0)
            sum += left;
    }
    return sum;
}

/* Appends s to the text in buf (len bytes), cut as snprintf would cut it. */
static void text_add(char *buf, size_t len, size_t *at, const char *s)
{
    while (*s != '\0' && *at + 1 < len)
        buf[(*at)++] = *s++;
    buf[*at] = '\0';
}

static void text_add_int(char *buf, size_t len, size_t *at, int64_t v)
{
    char digits[24], *p = digits + sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    *--p = '\0';
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--p = '-';
    text_add(buf, len, at, p);
}

/* "NAME FREE/TOTAL free" of the eligible node listed at position i, as
 * snprintf("%s%s %lld/%lld free") would write it, without its cost per call. */
static void list_node(struct capacity_result *out, size_t i, const char *name, int64_t shown,
                      int64_t alloc)
{
    size_t at = strlen(out->nodes);

    text_add(out->nodes, sizeof(out->nodes), &at, i > 0 ? ", " : "");
    text_add(out->nodes, sizeof(out->nodes), &at, name);
    text_add(out->nodes, sizeof(out->nodes), &at, " ");
    text_add_int(out->nodes, sizeof(out->nodes), &at, shown);
    text_add(out->nodes, sizeof(out->nodes), &at, "/");
    text_add_int(out->nodes, sizeof(out->nodes), &at, alloc);
    text_add(out->nodes, sizeof(out->nodes), &at, " free");
}

/* What a decision needs of one resource of one eligible node. */
struct amounts {
    int64_t alloc; /* effective allocatable */
    int64_t used;  /* by bound pods */
    int64_t lower; /* by bound pods of lower priority, when the template may preempt */
};

/* The amounts of resource rn (interned) on node n, from its records. */
static void amounts_of_records(const struct cluster *c, const struct node *n, const char *rn,
                               const struct capacity_result *out, double now, struct amounts *a)
{
    const struct node_res *nr = node_res_find(n, rn);
    const struct binding *b = n->binding;

    a->alloc = nr ? cluster_effective_allocatable(c, nr, now) : 0;
    a->used = a->lower = 0;
    for (size_t k = 0; b != NULL && k < b->n_res; k++) {
        const struct bound_res *br = &b->res[k];

        if (br->name != rn)
            continue;
        a->used += br->total;
        for (size_t p = 0; out->preempts && p < br->n_prio; p++) {
            if (br->prio[p].priority < out->priority)
                a->lower += br->prio[p].n;
        }
    }
}

/* The amounts from a res_sum line; false when it cannot stand for the records. Inline: it is
 * the body of the loop over ~1,000 eligible nodes. */
static inline bool amounts_of_sum(const struct cluster *c, uint32_t slot, bool preempts,
                                  int64_t priority, struct amounts *a)
{
    const struct res_sum *s = &c->sums[slot];
    int64_t lower = 0;

    if (slot == 0 || !s->exact)
        return false;
    a->alloc = s->allocatable;
    a->used = s->used;
    for (size_t p = 0; preempts && p < s->n_prio; p++)
        lower += s->prio[p] < priority ? s->prio_n[p] : 0;
    a->lower = lower;
    return true;
}

/* The amounts of the template's resource r on node i of an eligible set. */
static void amounts_at(const struct cluster *c, const struct elig_set *set, size_t i, size_t r,
                       const char *const *rn, const struct capacity_result *out, double now,
                       struct amounts *a)
{
    if (!amounts_of_sum(c, set->sums[i * set->n_res + r], out->preempts, out->priority, a))
        amounts_of_records(c, set->nodes[i], rn[r], out, now, a);
}

/* Pods that fit now and ever in free GPUs, per_pod each (whole pods only). */
static void fit_free(const struct capacity_request *rq, const struct amounts *a, int64_t held,
                     int64_t per_pod, int64_t *now_fit, int64_t *ever_fit)
{
    int64_t free_ever = a->alloc; /* the headroom is kept free now; it is not lost forever */
    int64_t free_now = a->alloc - a->used - rq->headroom + a->lower - held;

    if (free_now > free_ever)
        free_now = free_ever;
    if (free_now < 0)
        free_now = 0;
    if (free_ever < 0)
        free_ever = 0;
    *now_fit = per_pod == 1 ? free_now : free_now / per_pod;
    *ever_fit = per_pod == 1 ? free_ever : free_ever / per_pod;
}

/* Pods that fit a node now without preempting, given now_fit with it: the same unless
 * lower-priority pods hold some of it (a->lower). The lower-priority pods make room only where
 * this is less than now_fit: only then does the explanation say the template may preempt
 * (kube-scheduler's preemption frees a node only for a pod that then fits there). */
static inline int64_t fit_alone(const struct capacity_request *rq, const struct amounts *a,
                                int64_t held, int64_t per_pod, int64_t now_fit)
{
    struct amounts b = *a;
    int64_t fn, fe;

    if (a->lower <= 0)
        return now_fit;
    b.lower = 0;
    fit_free(rq, &b, held, per_pod, &fn, &fe);
    return fn;
}

/* Fits of one eligible node, now and ever: the fewest over the template's resources, whose
 * allocatable adds to the totals. amounts(r, a) reads resource r of the node. */
static void node_fit_with(const struct capacity_request *rq, struct capacity_result *out,
                          const struct held *h, const char *node, const struct amounts *per_res,
                          int64_t *now_fit, int64_t *ever_fit)
{
    *now_fit = *ever_fit = INT64_MAX;
    for (size_t r = 0; r < out->n_res; r++) {
        const struct amounts *a = &per_res[r];
        int64_t fn, fe;

        fit_free(rq, a, held_on(h, node, out->res[r].name, a->used), out->res[r].per_pod, &fn, &fe);
        out->total_gpus[r] += a->alloc;
        if (fn < *now_fit)
            *now_fit = fn;
        if (fe < *ever_fit)
            *ever_fit = fe;
    }
}

/* Fits of one eligible node from its records, and what it uses of each resource (used_out),
 * for the reservations. */
static void node_fit(struct cluster *c, const struct node *n, const struct capacity_request *rq,
                     struct capacity_result *out, const char *const *rn, double now,
                     const struct held *h, int64_t *now_fit, int64_t *ever_fit, int64_t *used_out)
{
    struct amounts a[CAPACITY_RESOURCES_MAX];

    for (size_t r = 0; r < out->n_res; r++) {
        amounts_of_records(c, n, rn[r], out, now, &a[r]);
        used_out[r] = a[r].used;
    }
    node_fit_with(rq, out, h, n->name, a, now_fit, ever_fit);
}

/* The nodes of the set that a cordon or NotReady keeps out now: into fit_ever and the totals
 * only, the pods they can hold once the drain or the outage ends. */
static void fit_transient(const struct cluster *c, const struct elig_set *set,
                          struct capacity_result *out, const char *const *rn, double now)
{
    struct amounts a;

    for (size_t i = set->n; i < set->n + set->n_transient; i++) {
        int64_t fe = INT64_MAX;

        for (size_t r = 0; r < out->n_res; r++) {
            amounts_at(c, set, i, r, rn, out, now, &a);
            out->total_gpus[r] += a.alloc;
            if (a.alloc / out->res[r].per_pod < fe)
                fe = a.alloc / out->res[r].per_pod;
        }
        out->fit_ever += fe;
        out->fit_transient += fe;
    }
    out->transient = (int)set->n_transient;
}

/* Every node of the set into out's fits and totals, in any template's case. */
static void fit_all(const struct cluster *c, const struct elig_set *set,
                    const struct capacity_request *rq, struct capacity_result *out,
                    const char *const *rn, double now, const struct held *h)
{
    struct amounts a[CAPACITY_RESOURCES_MAX];
    int64_t fn, fe, lower, f0;

    for (size_t i = 0; i < set->n; i++) {
        lower = 0;
        for (size_t r = 0; r < out->n_res; r++) {
            amounts_at(c, set, i, r, rn, out, now, &a[r]);
            lower += a[r].lower;
        }
        node_fit_with(rq, out, h, set->nodes[i]->name, a, &fn, &fe);
        /* the node's fit without preempting: the fewest over its resources */
        f0 = INT64_MAX;
        for (size_t r = 0; lower > 0 && r < out->n_res; r++) {
            struct amounts b = a[r];
            int64_t bn, be;

            b.lower = 0;
            fit_free(rq, &b, held_on(h, set->nodes[i]->name, out->res[r].name, b.used),
                     out->res[r].per_pod, &bn, &be);
            f0 = bn < f0 ? bn : f0;
        }
        if (lower > 0 && fn > f0)
            out->lower += lower;
        out->fit_alone += lower > 0 && f0 < fn ? f0 : fn;
        out->fit_now += fn;
        out->fit_ever += fe;
    }
}

/* fit_all for the usual template (one resource) while nothing is reserved: one tight pass
 * over the res_sum lines in the order they lie in memory (set->by_slot), the totals kept in
 * registers; a node whose line is inexact is read from its records. */
static void fit_all_one(const struct cluster *c, const struct elig_set *set,
                        const struct capacity_request *rq, struct capacity_result *out,
                        const char *const *rn, double now)
{
    const int64_t per_pod = out->res[0].per_pod, priority = out->priority;
    const bool preempts = out->preempts;
    int64_t fit_now = 0, fit_ever = 0, total = 0, lower = 0, alone = 0, fn, fe, f0;
    struct amounts a;

    for (size_t k = 0; k < set->n; k++) {
        if (!amounts_of_sum(c, set->by_slot[k].slot, preempts, priority, &a))
            amounts_of_records(c, set->nodes[set->by_slot[k].i], rn[0], out, now, &a);
        fit_free(rq, &a, 0, per_pod, &fn, &fe);
        total += a.alloc;
        f0 = fit_alone(rq, &a, 0, per_pod, fn);
        lower += fn > f0 ? a.lower : 0;
        alone += f0;
        fit_now += fn;
        fit_ever += fe;
    }
    out->total_gpus[0] += total;
    out->lower += lower;
    out->fit_alone += alone;
    out->fit_now += fit_now;
    out->fit_ever += fit_ever;
}

/* Waiters whose pods go to the same nodes (one place hash) and ask as much each, with those
 * nodes (gset) and the free GPUs of the ones the template's pods can use too that their pods
 * can take, whole pods per node (both). */
#define WAIT_GROUPS_MAX 16
#define WAIT_PLACES_MAX 64 /* places looked at per decision; the rest count as "rest" */
struct wait_group {
    uint64_t place;
    int64_t per_pod; /* of each of its pods (1 for the rest: the most it can take) */
    const struct waiter *first;
    int64_t gpus, pending, owed;
    struct elig_set *gset; /* NULL: not known (out of memory), not counted */
    int64_t both;
};

/* Up to WAIT_GROUPS_MAX groups whose nodes overlap the eligible ones, then one more: the
 * waiting pods past that (or whose nodes are not known), counted against every eligible node
 * (its gset the decision's own set), so that none is left out. */
struct waiting {
    struct wait_group g[WAIT_GROUPS_MAX + 1];
    size_t n;
};

/* Of a node's free GPUs, those whole pods of per_pod each take: a pod lands whole on one
 * node, so 2 free GPUs hold no pod of 4. */
static inline int64_t whole(int64_t free, int64_t per_pod)
{
    return per_pod <= 1 ? free : free / per_pod * per_pod;
}

/* fit_all_one while pods wait: the same pass, which also adds each node's free GPUs to the
 * groups whose nodes include it. Both sets' by_slot lists are sorted by slot, so a cursor per
 * group moves forward only: a few sequential reads per node more, no search. */
static void fit_all_one_waiting(const struct cluster *c, const struct elig_set *set,
                                const struct capacity_request *rq, struct capacity_result *out,
                                const char *const *rn, double now, struct waiting *wt)
{
    const int64_t per_pod = out->res[0].per_pod, priority = out->priority;
    const bool preempts = out->preempts;
    int64_t fit_now = 0, fit_ever = 0, total = 0, lower = 0, alone = 0, fn, fe, f0, both = 0;
    size_t cur[WAIT_GROUPS_MAX + 1] = {0}, at = 0;
    /* the usual case, one group, with its cursor in registers */
    const struct elig_set *one = wt->n == 1 ? wt->g[0].gset : NULL;
    const struct elig_slot *gs = one ? one->by_slot : NULL;
    const size_t gn = one ? one->n : 0;
    const int64_t gpp = one ? wt->g[0].per_pod : 1;
    struct amounts a;

    for (size_t k = 0; k < set->n; k++) {
        const uint32_t slot = set->by_slot[k].slot;

        if (!amounts_of_sum(c, slot, preempts, priority, &a))
            amounts_of_records(c, set->nodes[set->by_slot[k].i], rn[0], out, now, &a);
        fit_free(rq, &a, 0, per_pod, &fn, &fe);
        total += a.alloc;
        f0 = fit_alone(rq, &a, 0, per_pod, fn);
        lower += fn > f0 ? a.lower : 0;
        alone += f0;
        fit_now += fn;
        fit_ever += fe;
        if (one != NULL) {
            while (at < gn && gs[at].slot < slot)
                at++;
            if (at < gn && gs[at].slot == slot && a.alloc > a.used)
                both += whole(a.alloc - a.used, gpp);
            continue;
        }
        for (size_t j = 0; j < wt->n; j++) {
            const struct elig_set *g = wt->g[j].gset;

            if (g == NULL)
                continue;
            while (cur[j] < g->n && g->by_slot[cur[j]].slot < slot)
                cur[j]++;
            if (cur[j] < g->n && g->by_slot[cur[j]].slot == slot && a.alloc > a.used)
                wt->g[j].both += whole(a.alloc - a.used, wt->g[j].per_pod);
        }
    }
    if (one != NULL)
        wt->g[0].both = both;
    out->total_gpus[0] += total;
    out->lower += lower;
    out->fit_alone += alone;
    out->fit_now += fit_now;
    out->fit_ever += fit_ever;
}

/* The first eligible nodes in the order of the scan, with their free/total GPUs of the first
 * resource. */
static void list_nodes(const struct cluster *c, const struct elig_set *set,
                       struct capacity_result *out, const char *const *rn, double now,
                       const struct held *h)
{
    struct amounts a;

    for (size_t i = 0; i < set->n && i < NODES_LISTED; i++) {
        const char *name = set->nodes[i]->name;
        int64_t shown;

        amounts_at(c, set, i, 0, rn, out, now, &a);
        shown = a.alloc - a.used - held_on(h, name, out->res[0].name, a.used);
        list_node(out, i, name, shown > 0 ? shown : 0, a.alloc);
    }
}

static int read_demand(const struct capacity_request *rq, struct capacity_result *out)
{
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    if (pod_gpu_demand(rq->pod_spec, rq->gpu_globs, &dm, &d) < 0) {
        snprintf(out->reasons, sizeof(out->reasons), "%s", d.msg);
        return -1;
    }
    for (size_t i = 0; i < dm.n && out->n_res < CAPACITY_RESOURCES_MAX; i++) {
        snprintf(out->res[out->n_res].name, sizeof(out->res[0].name), "%s", dm.r[i].name);
        out->res[out->n_res++].per_pod = (dm.r[i].milli + 999) / 1000;
    }
    out->judged = out->n_res > 0;
    return 0;
}

/* A key being written: what fits of len bytes at p, and the length it needs in all. */
struct key {
    char *p;
    size_t len, at;
    bool too_deep;
};

static void key_put(struct key *k, const char *s, size_t n)
{
    if (k->at < k->len)
        memcpy(k->p + k->at, s, n < k->len - k->at ? n : k->len - k->at);
    k->at += n;
}

/* A tag, then bytes whose length is written first: no escaping, and no two different values
 * write the same bytes. */
static void key_bytes(struct key *k, char tag, const char *s, size_t n)
{
    char head[32], *h = head + sizeof(head);
    size_t v = n;

    *--h = ':';
    do
        *--h = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    *--h = tag;
    key_put(k, h, (size_t)(head + sizeof(head) - h));
    key_put(k, s, n);
}

/* A JSON value, in the order its objects keep their keys (the reasons name the first missing
 * label in the template's order, so the same selector in another order is another key). Not
 * a JSON writer: that would cost a malloc and escaping for a selector and a toleration. The
 * bytes are those of the jansson version: integers in int64 decimal (a uint64 past INT64_MAX,
 * which jansson never read, in uint64 decimal), reals as %.17g. */
static void key_json(struct key *k, yyjson_val *v, unsigned depth)
{
    char num[40];
    size_t i, max;
    yyjson_val *key, *x;

    if (depth > PLACE_KEY_DEPTH_MAX) {
        k->too_deep = true;
        return;
    }
    switch (yyjson_get_type(v)) {
    case YYJSON_TYPE_OBJ:
        key_put(k, "{", 1);
        yyjson_obj_foreach (v, i, max, key, x) {
            key_bytes(k, 'k', yyjson_get_str(key), yyjson_get_len(key));
            key_json(k, x, depth + 1);
        }
        key_put(k, "}", 1);
        break;
    case YYJSON_TYPE_ARR:
        key_put(k, "[", 1);
        yyjson_arr_foreach (v, i, max, x)
            key_json(k, x, depth + 1);
        key_put(k, "]", 1);
        break;
    case YYJSON_TYPE_STR: key_bytes(k, 's', yyjson_get_str(v), yyjson_get_len(v)); break;
    case YYJSON_TYPE_NUM:
        if (yyjson_is_real(v))
            key_bytes(k, 'r', num, (size_t)snprintf(num, sizeof(num), "%.17g", yyjson_get_real(v)));
        else if (yyjson_is_sint(v))
            key_bytes(k, 'i', num,
                      (size_t)snprintf(num, sizeof(num), "%" PRId64, yyjson_get_sint(v)));
        else
            key_bytes(k, 'i', num,
                      (size_t)snprintf(num, sizeof(num), "%" PRIu64, yyjson_get_uint(v)));
        break;
    case YYJSON_TYPE_BOOL: key_put(k, yyjson_is_true(v) ? "t" : "f", 1); break;
    case YYJSON_TYPE_NULL: key_put(k, "n", 1); break;
    default: k->too_deep = true; break; /* raw numbers: json_read refuses them */
    }
}

/* The template's constraints on where its pods go and the resources it needs, as one key into
 * buf (len bytes): what its eligible nodes are remembered under. Returns the length the key
 * needs (whole in buf when less than len), or 0 for a template too deep to remember. */
static size_t place_key(yyjson_val *spec, const struct capacity_result *out, char *buf, size_t len)
{
    yyjson_val *aff = yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity");
    const char *const part[4] = {"nodeSelector", NULL, "tolerations", "nodeName"};
    struct key k = {buf, len, 0, false};

    for (size_t r = 0; r < out->n_res; r++)
        key_bytes(&k, 'R', out->res[r].name, strlen(out->res[r].name));
    for (int i = 0; i < 4; i++) { /* each part tagged by where it is, absent ones left out */
        yyjson_val *v = part[i] ? yyjson_obj_get(spec, part[i]) : aff;

        if (v != NULL) {
            key_put(&k, i == 0 ? "S" : i == 1 ? "A" : i == 2 ? "T" : "N", 1);
            key_json(&k, v, 0);
        }
    }
    key_put(&k, "", 1); /* the terminating NUL, counted */
    return k.too_deep ? 0 : k.at;
}

static void format_reasons(struct reasons *rs, struct capacity_result *out)
{
    char verb[220];

    /* the most common reasons first */
    for (int shown = 0; shown < 3 && rs->n > 0; shown++) {
        int best = 0;
        size_t l = strlen(out->reasons);

        for (int i = 1; i < rs->n; i++)
            if (rs->count[i] > rs->count[best])
                best = i;
        if (rs->count[best] == 0)
            break;
        why_text(&rs->w[best], rs->count[best] == 1, verb, sizeof(verb));
        snprintf(out->reasons + l, sizeof(out->reasons) - l, "%s%d node%s %s", shown ? "; " : "",
                 rs->count[best], rs->count[best] == 1 ? "" : "s", verb);
        rs->count[best] = 0;
    }
}

static int by_slot_cmp(const void *a, const void *b)
{
    const struct elig_slot *x = a, *y = b;

    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Every node, for the nodes where the template's pods can go; the reasons for the others are
 * formatted here, while the read lock keeps the node records they point into alive. */
static int scan_nodes(const struct cluster *c, const struct capacity_request *rq,
                      struct capacity_result *out, const char *const *rn, struct elig_set **set)
{
    const struct table *nodes = &c->kinds[CLUSTER_NODES];
    struct reasons rs = {.n = 0};
    char share[128], fail[160];
    bool all_shared = true, all_fail = true;
    struct why w;
    struct elig_set *s;
    const struct node **later = NULL; /* the transient nodes, appended after the eligible */
    size_t n_later = 0;

    if (nodes->n > 0 && (later = malloc(nodes->n * sizeof(*later))) == NULL)
        return -1;
    s = malloc(sizeof(*s) + (nodes->n + 1) * (sizeof(s->nodes[0]) + sizeof(*s->by_slot) +
                                              out->n_res * sizeof(*s->sums)));
    if (s == NULL) {
        free(later);
        return -1;
    }
    s->refs = 1;
    s->n = 0;
    s->n_transient = 0;
    s->n_res = out->n_res;
    s->by_slot = (struct elig_slot *)&s->nodes[nodes->n + 1];
    s->sums = (uint32_t *)&s->by_slot[nodes->n + 1];
    for (size_t i = 0; i < nodes->n_buckets; i++) {
        for (struct table_entry *e = nodes->buckets[i]; e; e = e->next) {
            const struct node *nd = e->value;
            bool bad = false;

            /* it must offer every GPU resource the pod asks for: checked first, as most nodes
             * of a cluster offer none and this is the cheap test */
            for (size_t r = 0; !bad && r < out->n_res; r++) {
                if (!offers(nd, rn[r])) {
                    w = (struct why){WHY_NO_RES, out->res[r].name, NULL, NULL};
                    bad = true;
                }
            }
            if (bad || ineligible(nd, rq->pod_spec, &w)) {
                reason_add(&rs, &w);
                if (!bad && (w.k == WHY_CORDONED || w.k == WHY_NOT_READY))
                    later[n_later++] = nd;
                continue;
            }
            for (size_t r = 0; r < out->n_res; r++) /* it offers each: node_res_of finds it */
                s->sums[s->n * s->n_res + r] = node_res_find(nd, rn[r])->sum;
            s->by_slot[s->n] = (struct elig_slot){s->sums[s->n * s->n_res], (uint32_t)s->n};
            s->nodes[s->n++] = nd;
            if (!cluster_node_shares(nd, share, sizeof(share)))
                all_shared = all_fail = false;
            else
                snprintf(out->shared_why, sizeof(out->shared_why), "%s", share);
            if (all_fail && !cluster_node_fails_gt_one(c, nd, fail, sizeof(fail)))
                all_fail = false;
            else if (all_fail)
                snprintf(out->fail_why, sizeof(out->fail_why), "%s", fail);
        }
    }
    out->all_shared = s->n > 0 && all_shared;
    out->all_fail_gt_one = s->n > 0 && all_fail;
    format_reasons(&rs, out);
    qsort(s->by_slot, s->n, sizeof(*s->by_slot), by_slot_cmp);
    for (size_t i = 0; i < n_later; i++, s->n_transient++) {
        size_t at = s->n + s->n_transient;

        for (size_t r = 0; r < out->n_res; r++)
            s->sums[at * s->n_res + r] = node_res_find(later[i], rn[r])->sum;
        s->nodes[at] = later[i];
    }
    free(later);
    *set = s;
    return 0;
}

/* Drops one reference to a set; under elig_lock when the set is in the cache. */
static void elig_unref(struct elig_set *s)
{
    if (s != NULL && --s->refs == 0)
        free(s);
}

/* A decision is done with the set it read. */
static void elig_release(struct capacity_cache *cache, struct elig_set *s)
{
    pthread_mutex_lock(&cache->elig_lock);
    elig_unref(s);
    pthread_mutex_unlock(&cache->elig_lock);
}

static void elig_clear(struct elig_entry *e)
{
    free(e->key);
    elig_unref(e->set);
    free(e->reasons);
    free(e->shared_why);
    free(e->fail_why);
    memset(e, 0, sizeof(*e));
}

struct capacity_cache *capacity_cache_new(void)
{
    struct capacity_cache *cache = calloc(1, sizeof(*cache));

    if (cache == NULL)
        return NULL;
    pthread_mutex_init(&cache->elig_lock, NULL);
    pthread_mutex_init(&cache->reserve_lock, NULL);
    return cache;
}

void capacity_cache_free(struct capacity_cache *cache)
{
    if (cache == NULL)
        return;
    /* no decision runs any more: the entries hold the only references, a set shared by an
     * eligible-set entry and a waiting-set entry two of them */
    for (int i = 0; i < ELIG_CACHE_MAX; i++) {
        elig_clear(&cache->elig[i]);
        elig_unref(cache->wait_sets[i].set);
    }
    pthread_mutex_destroy(&cache->elig_lock);
    pthread_mutex_destroy(&cache->reserve_lock);
    free(cache);
}

static bool key_is(const struct elig_entry *e, const char *key, size_t len)
{
    return e->key != NULL && e->key_len == len && memcmp(e->key, key, len) == 0;
}

/* Remembers a scan's outcome under key (len bytes, copied), sharing set; out of memory, it is
 * simply not remembered. */
static void elig_store(struct capacity_cache *cache, unsigned long gen, const char *key, size_t len,
                       struct elig_set *set, const struct capacity_result *out)
{
    struct elig_entry *slot = &cache->elig[0];

    pthread_mutex_lock(&cache->elig_lock);
    for (int i = 0; i < ELIG_CACHE_MAX; i++) {
        struct elig_entry *e = &cache->elig[i];

        if (e->key == NULL || key_is(e, key, len) || e->gen != gen) {
            slot = e;
            break;
        }
        if (e->used < slot->used)
            slot = e;
    }
    elig_clear(slot);
    if ((slot->key = malloc(len)) != NULL)
        memcpy(slot->key, key, len);
    slot->key_len = len;
    slot->gen = gen;
    slot->used = ++cache->elig_tick;
    slot->set = set;
    set->refs++;
    slot->reasons = strdup(out->reasons);
    slot->shared_why = strdup(out->shared_why);
    slot->all_shared = out->all_shared;
    slot->fail_why = strdup(out->fail_why);
    slot->all_fail_gt_one = out->all_fail_gt_one;
    if (slot->key == NULL || slot->reasons == NULL || slot->shared_why == NULL ||
        slot->fail_why == NULL)
        elig_clear(slot);
    pthread_mutex_unlock(&cache->elig_lock);
}

/* Copies s into buf (len bytes, as snprintf("%s") would). */
static void copy_text(char *buf, size_t len, const char *s)
{
    size_t at = 0;

    text_add(buf, len, &at, s);
}

/* What is remembered under key while no node has changed where pods can go, its set shared
 * (release it with elig_release); false when nothing is. */
static bool elig_lookup(struct capacity_cache *cache, unsigned long gen, const char *key,
                        size_t len, struct capacity_result *out, struct elig_set **set)
{
    bool hit = false;

    pthread_mutex_lock(&cache->elig_lock);
    for (int i = 0; !hit && i < ELIG_CACHE_MAX; i++) {
        struct elig_entry *e = &cache->elig[i];

        if (e->gen != gen || !key_is(e, key, len))
            continue;
        e->set->refs++;
        *set = e->set;
        e->used = ++cache->elig_tick;
        copy_text(out->reasons, sizeof(out->reasons), e->reasons);
        copy_text(out->shared_why, sizeof(out->shared_why), e->shared_why);
        out->all_shared = e->all_shared;
        copy_text(out->fail_why, sizeof(out->fail_why), e->fail_why);
        out->all_fail_gt_one = e->all_fail_gt_one;
        hit = true;
    }
    pthread_mutex_unlock(&cache->elig_lock);
    return hit;
}

/* The nodes where the template's pods can go (in the order of a scan; release the set with
 * elig_release), with the reasons for the others and whether all of them share their GPUs,
 * into out. Called under the read lock. -1 when out of memory. */
static int eligible_nodes(struct cluster *c, const struct capacity_request *rq,
                          struct capacity_result *out, const char *const *rn, struct elig_set **set)
{
    char inline_key[PLACE_KEY_INLINE_BYTES], *key = inline_key;
    size_t need = place_key(rq->pod_spec, out, inline_key, sizeof(inline_key));
    int rc = -1;

    if (need == 0) /* too deep to remember */
        key = NULL;
    else if (need > sizeof(inline_key) && (key = malloc(need)) != NULL)
        place_key(rq->pod_spec, out, key, need); /* a long template: the key on the heap */
    if (key != NULL && elig_lookup(c->cap, c->node_gen, key, need, out, set)) {
        rc = 0;
        goto out;
    }
    if (scan_nodes(c, rq, out, rn, set) < 0)
        goto out;
    if (key != NULL)
        elig_store(c->cap, c->node_gen, key, need, *set, out);
    rc = 0;
out:
    if (key != inline_key)
        free(key);
    return rc;
}

/* Free GPUs (of the template's first resource) on the nodes of gset that are in set too, up
 * to want: one merge of the two sets' by_slot lists, both sorted by res_sum slot, and a slot
 * names one resource of one node. Sequential reads of two arrays of ~1,000 entries. */
static int64_t free_on_both(const struct cluster *c, const struct elig_set *set,
                            const struct elig_set *gset, const char *const *rn,
                            const struct capacity_result *out, double now, int64_t per_pod,
                            int64_t want)
{
    struct amounts a;
    int64_t sum = 0;
    size_t i = 0, k = 0;

    while (i < set->n && k < gset->n && sum < want) {
        uint32_t x = set->by_slot[i].slot, y = gset->by_slot[k].slot;

        if (x != y) {
            i += x < y;
            k += y < x;
            continue;
        }
        if (!amounts_of_sum(c, x, false, 0, &a))
            amounts_of_records(c, set->nodes[set->by_slot[i].i], rn[0], out, now, &a);
        sum += a.alloc > a.used ? whole(a.alloc - a.used, per_pod) : 0;
        i++;
        k++;
    }
    return sum;
}

static int eligible_nodes(struct cluster *c, const struct capacity_request *rq,
                          struct capacity_result *out, const char *const *rn,
                          struct elig_set **set);

/* The eligible set of waiting pods of place for resource res (interned), while no node has
 * changed where pods go; shared (release it with elig_release), or NULL. */
static struct elig_set *wait_set_lookup(struct capacity_cache *cache, unsigned long gen,
                                        uint64_t place, const char *res)
{
    struct elig_set *set = NULL;

    pthread_mutex_lock(&cache->elig_lock);
    for (int i = 0; set == NULL && i < ELIG_CACHE_MAX; i++) {
        if (cache->wait_sets[i].set != NULL && cache->wait_sets[i].place == place &&
            cache->wait_sets[i].res == res && cache->wait_sets[i].gen == gen) {
            set = cache->wait_sets[i].set;
            set->refs++;
        }
    }
    pthread_mutex_unlock(&cache->elig_lock);
    return set;
}

/* Remembers set (shared) as the eligible set of waiting pods of place, in turn. */
static void wait_set_store(struct capacity_cache *cache, unsigned long gen, uint64_t place,
                           const char *res, struct elig_set *set)
{
    unsigned i;

    pthread_mutex_lock(&cache->elig_lock);
    i = cache->wait_sets_next++ % ELIG_CACHE_MAX;
    elig_unref(cache->wait_sets[i].set);
    cache->wait_sets[i].place = place;
    cache->wait_sets[i].res = res;
    cache->wait_sets[i].gen = gen;
    cache->wait_sets[i].set = set;
    set->refs++;
    pthread_mutex_unlock(&cache->elig_lock);
}

/* Whether two eligible sets share a node: one merge of their by_slot lists, sorted by slot
 * (a slot names one resource of one node). */
static bool sets_overlap(const struct elig_set *a, const struct elig_set *b)
{
    size_t i = 0, k = 0;

    while (i < a->n && k < b->n) {
        uint32_t x = a->by_slot[i].slot, y = b->by_slot[k].slot;

        if (x == y)
            return true;
        i += x < y;
        k += y < x;
    }
    return false;
}

static void group_add(struct wait_group *g, const struct wgroup *w)
{
    if (g->first == NULL)
        g->first = w->head;
    g->gpus += w->count * w->per_pod;
    g->pending += w->pending;
    g->owed += w->count - w->pending;
}

static void group_merge(struct wait_group *into, const struct wait_group *g)
{
    if (into->first == NULL)
        into->first = g->first;
    into->gpus += g->gpus;
    into->pending += g->pending;
    into->owed += g->owed;
}

/* The eligible set of the waiting pods of group g, or NULL when out of memory. */
static struct elig_set *group_set(struct cluster *c, const struct capacity_request *rq,
                                  const struct capacity_result *out, const char *const *rn,
                                  const struct wait_group *g, struct capacity_result **gout)
{
    struct capacity_request grq = {g->first->spec, rq->gpu_globs, 0, 0, 0, 0, 0};
    struct elig_set *gset = wait_set_lookup(c->cap, c->node_gen, g->place, rn[0]);

    if (gset != NULL)
        return gset;
    if (*gout == NULL && (*gout = malloc(sizeof(**gout))) == NULL)
        return NULL;
    (*gout)->n_res = 1;
    (*gout)->res[0] = out->res[0];
    (*gout)->reasons[0] = (*gout)->shared_why[0] = (*gout)->fail_why[0] = '\0';
    if (eligible_nodes(c, &grq, *gout, rn, &gset) < 0)
        return NULL;
    wait_set_store(c->cap, c->node_gen, g->place, rn[0], gset);
    return gset;
}

/* The pods already waiting for the GPUs the template's pods would take, grouped by where they
 * can go: unbound Pending pods and replicas owed, of equal or higher priority (the scheduler's
 * queue pops them first; a lower-priority one waits behind the template's pods). Called under
 * the read lock, before the fit pass that sums what they can take; reads the few waiting
 * entries, never the pods. Groups whose nodes share none with set are left out before the
 * cap on groups; past the cap, or when a group's nodes cannot be known (out of memory), its
 * pods count against every eligible node: more than they take, never fewer. Release with
 * waiting_done(). */
static void waiting_groups(struct cluster *c, const struct capacity_request *rq,
                           const struct capacity_result *out, const char *const *rn,
                           struct elig_set *set, struct waiting *wt)
{
    struct capacity_result *gout = NULL;
    struct wait_group *places = NULL, rest = {0, 1, NULL, 0, 0, 0, NULL, 0};
    size_t n_places = 0;

    wt->n = 0;
    for (size_t i = 0; i < c->n_groups; i++) { /* the groups kept by the view, not waiters */
        const struct wgroup *w = c->live_groups[i];
        size_t k = 0;

        if (w->priority < out->priority || w->res[0] != out->res[0].name[0] ||
            strcmp(w->res, out->res[0].name) != 0)
            continue;
        while (k < n_places && (places[k].place != w->place || places[k].per_pod != w->per_pod))
            k++;
        if (k == n_places) {
            if (places == NULL && (places = calloc(WAIT_PLACES_MAX, sizeof(*places))) == NULL) {
                group_add(&rest, w); /* out of memory: against every eligible node */
                continue;
            }
            if (n_places == WAIT_PLACES_MAX) {
                group_add(&rest, w); /* so many kinds of placement: against every node */
                continue;
            }
            places[n_places++] = (struct wait_group){w->place, w->per_pod, NULL, 0, 0, 0, NULL, 0};
        }
        group_add(&places[k], w);
    }
    for (size_t k = 0; k < n_places; k++) {
        struct elig_set *gset = group_set(c, rq, out, rn, &places[k], &gout);

        if (gset == NULL) {
            group_merge(&rest, &places[k]);
        } else if (!sets_overlap(set, gset)) {
            elig_release(c->cap, gset); /* they go elsewhere: they take none of these GPUs */
        } else if (wt->n == WAIT_GROUPS_MAX) {
            group_merge(&rest, &places[k]);
            elig_release(c->cap, gset);
        } else {
            wt->g[wt->n] = places[k];
            wt->g[wt->n++].gset = gset;
        }
    }
    if (rest.first != NULL) {
        pthread_mutex_lock(&c->cap->elig_lock);
        set->refs++; /* released in waiting_done, as every group's */
        pthread_mutex_unlock(&c->cap->elig_lock);
        rest.gset = set;
        wt->g[wt->n++] = rest;
    }
    free(places);
    free(gout);
}

/* What the waiting groups take of the free GPUs into out (fit_now, waiting_*), and the sets
 * released. */
static void waiting_done(struct cluster *c, struct capacity_result *out, struct waiting *wt)
{
    size_t used_groups = 0;
    int64_t pending = 0, owed = 0, lost, take;
    const struct waiter *named = NULL;

    for (size_t k = 0; k < wt->n; k++) {
        struct wait_group *g = &wt->g[k];

        if (g->gset == NULL)
            continue;
        elig_release(c->cap, g->gset);
        take = g->gpus < g->both ? g->gpus : g->both;
        out->waiting_beyond += g->gpus - (take > 0 ? take : 0);
        if (take <= 0)
            continue;
        out->waiting_gpus += take;
        pending += g->pending;
        owed += g->owed;
        named = named ? named : g->first;
        used_groups++;
    }
    if (named == NULL)
        return;
    out->waiting_pods = pending + owed;
    out->waiting_pending = pending;
    out->waiting_owed = owed;
    out->waiting_more = used_groups > 1;
    copy_text(out->waiting_who, sizeof(out->waiting_who), named->key);
    lost = (out->waiting_gpus + out->res[0].per_pod - 1) / out->res[0].per_pod;
    out->fit_now = out->fit_now > lost ? out->fit_now - lost : 0;
    out->fit_alone = out->fit_alone > lost ? out->fit_alone - lost : 0;
}

/* ---- fitting only by preempting (the slow path: judged only when the verdict is that) ---- */

#define PREEMPT_HOLDERS_MAX   8 /* namespace and priority pairs counted; the rest are "others" */
#define PREEMPT_HOLDERS_SHOWN 3

/* The bound pods of one namespace at one priority below the template's, on the nodes where
 * preempting makes room, and the GPUs of the first resource they hold. */
struct holder {
    const char *ns; /* into a pod's key, ns_len bytes (borrowed: valid under the read lock) */
    size_t ns_len;
    int64_t priority, gpus;
};

/* The lowest priority first (the scheduler evicts those first), then the largest holder. */
static int holder_cmp(const void *a, const void *b)
{
    const struct holder *x = a, *y = b;
    size_t n = x->ns_len < y->ns_len ? x->ns_len : y->ns_len;
    int d;

    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    if (x->gpus != y->gpus)
        return x->gpus > y->gpus ? -1 : 1;
    d = memcmp(x->ns, y->ns, n);
    return d ? d : (x->ns_len > y->ns_len) - (x->ns_len < y->ns_len);
}

static int left_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x < y) - (x > y); /* the most left first */
}

/* The sum of the must largest of left's n values, each in [0, pp0]: by counting them when pp0 is
 * small (a decision of this slow path runs per admission), else by sorting (left reordered). */
static int64_t most_left(int64_t *left, size_t n, int64_t must, int64_t pp0)
{
    int64_t sum = 0;

    if (pp0 <= 64) {
        size_t count[65] = {0};

        for (size_t k = 0; k < n; k++)
            count[left[k] < 0 ? 0 : left[k]]++;
        for (int64_t v = pp0; v >= 0 && must > 0; v--) {
            int64_t takes = (int64_t)count[v] < must ? (int64_t)count[v] : must;

            sum += takes * v;
            must -= takes;
        }
        return sum;
    }
    qsort(left, n, sizeof(*left), left_cmp);
    for (size_t k = 0; k < n && (int64_t)k < must; k++)
        sum += left[k];
    return sum;
}

/* Adds the GPUs of the first resource that pods of node n below the template's priority hold
 * to hs (n_hs of PREEMPT_HOLDERS_MAX; past them into *others); *ones false when one holds more
 * than one. */
static void holders_add(const struct node *n, const struct capacity_result *out, struct holder *hs,
                        size_t *n_hs, int64_t *others, bool *ones)
{
    const struct binding *b = n->binding;

    for (size_t k = 0; b != NULL && k < b->n; k++) {
        const struct vpod *v = b->pods[k];
        const char *slash;
        size_t nl, i;
        int64_t g = 0;

        if (v->priority >= out->priority)
            continue;
        for (size_t d = 0; d < v->n_demand; d++)
            if (strcmp(v->demand[d].name, out->res[0].name) == 0)
                g += v->demand[d].n;
        if (g == 0)
            continue;
        slash = strchr(v->key, '/');
        nl = slash ? (size_t)(slash - v->key) : strlen(v->key);
        *ones = *ones && g == 1;
        for (i = 0; i < *n_hs; i++)
            if (hs[i].priority == v->priority && hs[i].ns_len == nl &&
                memcmp(hs[i].ns, v->key, nl) == 0)
                break;
        if (i == PREEMPT_HOLDERS_MAX) {
            *others += g;
            continue;
        }
        if (i == *n_hs)
            hs[(*n_hs)++] = (struct holder){v->key, nl, v->priority, 0};
        hs[i].gpus += g;
    }
}

/* Who the taken GPUs come from, into out->preempt_who: the holders from the lowest priority
 * up, each its share of take. Where take runs out inside a priority that several namespaces
 * hold, which of them lose their pods is the scheduler's choice of nodes: each is "up to". */
static void holders_text(const struct cluster *c, struct holder *hs, size_t n_hs, int64_t others,
                         int64_t take, struct capacity_result *out)
{
    char *buf = out->preempt_who;
    size_t len = sizeof(out->preempt_who), at = 0, shown = 0;
    int64_t left = take;

    qsort(hs, n_hs, sizeof(*hs), holder_cmp);
    for (size_t i = 0; i < n_hs && left > 0; i++) {
        int64_t level = 0, share;
        size_t same = 0;
        const char *cls;

        for (size_t k = 0; k < n_hs; k++)
            if (hs[k].priority == hs[i].priority) {
                level += hs[k].gpus;
                same++;
            }
        share = hs[i].gpus < left ? hs[i].gpus : left;
        if (shown == PREEMPT_HOLDERS_SHOWN) {
            text_add(buf, len, &at, ", and others");
            return;
        }
        cls = cluster_class_name(c, hs[i].priority);
        text_add(buf, len, &at, shown++ ? ", " : "");
        text_add(buf, len, &at, left < level && same > 1 ? "up to " : "");
        text_add_int(buf, len, &at, share);
        text_add(buf, len, &at, " in namespace ");
        for (size_t k = 0; k < hs[i].ns_len && at + 1 < len; k++) /* not NUL-terminated */
            buf[at++] = hs[i].ns[k];
        buf[at] = '\0';
        text_add(buf, len, &at, " at priority ");
        text_add_int(buf, len, &at, hs[i].priority);
        if (cls != NULL) {
            text_add(buf, len, &at, " (");
            text_add(buf, len, &at, cls);
            text_add(buf, len, &at, ")");
        }
        /* a whole priority taken leaves less for the next; a part of one leaves none */
        if (i + 1 == n_hs || hs[i + 1].priority != hs[i].priority)
            left -= level < left ? level : left;
    }
    if (left > 0 && others > 0)
        text_add(buf, len, &at, ", and others");
}

/*
 * Whether the increase fits only by preempting, what it takes and from whom (capacity.h), once
 * fit_now and fit_alone say it fits, but not without the lower-priority pods' GPUs. Called under
 * the read lock. What kube-scheduler does (kubernetes/kubernetes pkg/scheduler/framework/
 * preemption/preemption.go and plugins/defaultpreemption/default_preemption.go): it preempts for
 * a pod only when no node has room for it in free resources (PostFilter, after every Filter
 * failed), one pod at a time; on each node it removes every pod of strictly lower priority, and
 * is a candidate only if the pod then fits, and puts back as many of them as still leave room,
 * the most important first (SelectVictimsOnNode); of the candidates it picks the node with the
 * fewest PodDisruptionBudget violations, then the lowest highest victim priority, the lowest sum
 * of priorities, the fewest victims (pickOneNodeForPreemption). Victims are whole pods.
 *
 * What is estimated, and why it is a bound: the scheduler knows no headroom, so the pods that
 * must preempt are those the free GPUs (reservations and waiting pods taken off) leave without
 * room; each of them lacks per_pod less the free GPUs left on the node it takes, and the nodes
 * with the most left are used first, so their sum is the least it takes. It takes more when a
 * victim holds more than is lacking (a 2-GPU pod evicted for 1), and where PDBs, pods of several
 * resources or the order of arrival steer it to other nodes; it is at most what lower-priority
 * pods hold on the candidate nodes (preempt_held). It is exact (preempt_exact), as far as the
 * view tells, only for pods of one GPU of one resource where every victim holds one: then each
 * pod that preempts evicts one pod, whichever node it takes. Who loses pods is the lowest
 * priorities first, as SelectVictimsOnNode and the node order both prefer them; which namespaces of
 * one priority lose them is not known here.
 */
static void preemption(const struct cluster *c, const struct elig_set *set,
                       const struct capacity_request *rq, struct capacity_result *out,
                       const char *const *rn, double now, const struct held *h)
{
    const int64_t pp0 = out->res[0].per_pod;
    struct holder hs[PREEMPT_HOLDERS_MAX];
    size_t n_hs = 0, n_left = 0;
    int64_t *left = NULL, alone = 0, must, take, others = 0, lost;
    bool ones = true;

    if (set->n == 0 || (left = malloc(set->n * sizeof(*left))) == NULL)
        return; /* out of memory: not said, rather than said wrong */
    for (size_t i = 0; i < set->n; i++) {
        const struct node *n = set->nodes[i];
        int64_t fn = INT64_MAX, f0 = INT64_MAX, fs = INT64_MAX, free0 = 0, lower0 = 0;

        for (size_t r = 0; r < out->n_res; r++) {
            struct amounts a, b;
            int64_t hd, x, y, fr;

            amounts_at(c, set, i, r, rn, out, now, &a);
            hd = held_on(h, n->name, out->res[r].name, a.used);
            fit_free(rq, &a, hd, out->res[r].per_pod, &x, &y);
            fn = x < fn ? x : fn;
            b = a;
            b.lower = 0;
            fit_free(rq, &b, hd, out->res[r].per_pod, &x, &y);
            f0 = x < f0 ? x : f0;
            fr = a.alloc - a.used - hd; /* the scheduler's free: no headroom */
            fr = fr > 0 ? fr : 0;
            fs = fr / out->res[r].per_pod < fs ? fr / out->res[r].per_pod : fs;
            if (r == 0) {
                free0 = fr;
                lower0 = a.lower;
            }
        }
        alone += fs;
        if (fn <= f0) /* preempting makes no room here: no candidate */
            continue;
        /* what stays free of the first resource once the pods that fit free took theirs */
        left[n_left] = free0 - fs * pp0;
        left[n_left] = left[n_left] < pp0 ? left[n_left] : pp0;
        n_left++;
        out->preempt_held += lower0;
        holders_add(n, out, hs, &n_hs, &others, &ones);
    }
    lost = out->waiting_gpus > 0 ? (out->waiting_gpus + pp0 - 1) / pp0 : 0;
    alone = alone > lost ? alone - lost : 0;
    must = rq->increase - alone;
    if (must > 0 && n_left > 0) {
        take = must * pp0 - most_left(left, n_left, must, pp0);
        take = take < out->preempt_held ? take : out->preempt_held;
        if (take > 0) { /* else: they fit what the headroom keeps free, and evict nobody */
            out->preempt_only = true;
            out->preempt_gpus = take;
            /* each pod lacks one GPU wherever it goes, and one victim holds just that */
            out->preempt_exact = ones && pp0 == 1 && out->n_res == 1;
            holders_text(c, hs, n_hs, others, take, out);
        }
    }
    free(left);
}

/* Drops the reservations the view has caught up with: a workload's reservation stands for
 * pods not yet in the view, and once the view shows its replicas at the reservation's target
 * (its ReplicaSets' or its own spec.replicas, or its pods), they count instead, as owed,
 * Pending or bound. Not before: a Pending pod of the replicas it had does not stand for the
 * ones just admitted. One lookup per reservation, none per waiting pod. */
static void held_drop_shown(const struct cluster *c, struct held *h)
{
    size_t w = 0;
    uint64_t last = 0;
    int64_t shown = 0;

    for (size_t i = 0; i < h->n; i++) {
        if (i == 0 || h->r[i].key != last) /* one admission's are side by side, unsorted */
            shown = cluster_shown(c, last = h->r[i].key);
        if (shown < h->r[i].target)
            h->r[w++] = h->r[i];
    }
    h->n = w;
}

int capacity_judge(struct cluster *c, const struct capacity_request *rq,
                   struct capacity_result *out)
{
    double now = mono_s();
    const char *rn[CAPACITY_RESOURCES_MAX];
    struct elig_set *set;
    struct held held;
    struct waiting wt;

    /* all but the preemption's text, which only preemption() writes */
    memset(out, 0, offsetof(struct capacity_result, preempt_who));
    out->preempt_who[0] = '\0';
    if (read_demand(rq, out) < 0)
        return -1;
    if (!out->judged)
        return 0;
    if (held_load(c->cap, &held, rq, now) < 0) {
        snprintf(out->reasons, sizeof(out->reasons), "out of memory reading reservations");
        return -1;
    }
    pthread_rwlock_rdlock(&c->lock);
    template_priority(c, rq->pod_spec, &out->priority, &out->preempts);
    intern_names(c, out, rn);
    if (eligible_nodes(c, rq, out, rn, &set) < 0) {
        pthread_rwlock_unlock(&c->lock);
        held_free(&held);
        snprintf(out->reasons, sizeof(out->reasons), "out of memory listing the eligible nodes");
        return -1;
    }
    if (held.n > 0)
        held_drop_shown(c, &held);
    held_sort(&held);
    out->eligible = (int)set->n;
    wt.n = 0;
    if (c->n_groups > 0 && set->n > 0)
        waiting_groups(c, rq, out, rn, set, &wt);
    if (out->n_res == 1 && held.n == 0 && wt.n == 0) {
        fit_all_one(c, set, rq, out, rn, now);
    } else if (out->n_res == 1 && held.n == 0) {
        fit_all_one_waiting(c, set, rq, out, rn, now, &wt);
    } else {
        fit_all(c, set, rq, out, rn, now, &held);
        for (size_t k = 0; k < wt.n; k++)
            if (wt.g[k].gset != NULL)
                wt.g[k].both =
                    free_on_both(c, set, wt.g[k].gset, rn, out, now, wt.g[k].per_pod, wt.g[k].gpus);
    }
    fit_transient(c, set, out, rn, now);
    if (wt.n > 0)
        waiting_done(c, out, &wt);
    if (out->lower > 0 && rq->increase > out->fit_alone && rq->increase <= out->fit_now)
        preemption(c, set, rq, out, rn, now, &held);
    list_nodes(c, set, out, rn, now, &held);
    pthread_rwlock_unlock(&c->lock);
    elig_release(c->cap, set);
    held_free(&held);
    if (out->eligible > NODES_LISTED) {
        size_t l = strlen(out->nodes);

        snprintf(out->nodes + l, sizeof(out->nodes) - l, " and %d more",
                 out->eligible - NODES_LISTED);
    }
    return 0;
}

bool capacity_autoscalers(struct cluster *c)
{
    bool any;

    pthread_rwlock_rdlock(&c->lock);
    any = c->kinds[CLUSTER_AUTOSCALER_STATUS].n > 0 || c->kinds[CLUSTER_NODEPOOLS].n > 0;
    pthread_rwlock_unlock(&c->lock);
    return any;
}

void capacity_growth(struct cluster *c, const struct capacity_request *rq,
                     const struct capacity_result *res, const struct growth_policy *pol,
                     struct growth *out)
{
    struct growth_ask ask[CAPACITY_RESOURCES_MAX];
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_rwlock_rdlock(&c->lock);
    for (size_t r = 0; r < res->n_res; r++)
        ask[r] = (struct growth_ask){res->res[r].name, cluster_rname(c, res->res[r].name),
                                     res->res[r].per_pod};
    growth_of(c, rq->pod_spec, ask, res->n_res, rq->headroom, pol,
              (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, out);
    pthread_rwlock_unlock(&c->lock);
}

void capacity_waiting_text(const struct capacity_result *res, char *buf, size_t len)
{
    const char *slash = strchr(res->waiting_who, '/');
    int kind_len = slash ? (int)(slash - res->waiting_who) : 0;
    int64_t pending = res->waiting_pending, owed = res->waiting_owed;
    char who[160];

    snprintf(who, sizeof(who), "%.*s %s%s", kind_len, res->waiting_who, slash ? slash + 1 : "",
             res->waiting_more ? ", ..." : "");
    if (pending > 0 && owed > 0)
        snprintf(buf, len, "%lld Pending pod%s and %lld replica%s their controllers still owe (%s)",
                 (long long)pending, pending == 1 ? "" : "s", (long long)owed, owed == 1 ? "" : "s",
                 who);
    else if (pending > 0)
        snprintf(buf, len, "%lld Pending pod%s (%s)", (long long)pending, pending == 1 ? "" : "s",
                 who);
    else
        snprintf(buf, len, "%lld replica%s a controller still owes (%s)", (long long)owed,
                 owed == 1 ? "" : "s", who);
}

void capacity_explain(const struct capacity_request *rq, const struct capacity_result *res,
                      char *buf, size_t len)
{
    size_t l;

    snprintf(buf, len, "%lld more pod%s × %lld %s = %lld requested", (long long)rq->increase,
             rq->increase == 1 ? "" : "s", (long long)res->res[0].per_pod, res->res[0].name,
             (long long)(rq->increase * res->res[0].per_pod));
    for (size_t r = 1; r < res->n_res; r++) {
        l = strlen(buf);
        snprintf(buf + l, len - l, " (and %lld %s each)", (long long)res->res[r].per_pod,
                 res->res[r].name);
    }
    l = strlen(buf);
    snprintf(buf + l, len - l, "; %d eligible node%s (%s) with %lld %s in all", res->eligible,
             res->eligible == 1 ? "" : "s", res->eligible ? res->nodes : "none",
             (long long)res->total_gpus[0], res->res[0].name);
    /* kube-scheduler's DefaultPreemption evicts only pods of strictly lower priority
     * (kubernetes/kubernetes pkg/scheduler/framework/plugins/defaultpreemption/
     * default_preemption.go: isPreemptionAllowed, PodPriority(victim) < PodPriority(preemptor),
     * the test SelectVictimsOnNode makes of every pod on a node), and none for a pod of
     * preemptionPolicy Never (PodEligibleToPreemptOthers, "not eligible due to
     * preemptionPolicy=Never"): the hint only when such a pod holds GPUs it could use */
    l = strlen(buf);
    snprintf(buf + l, len - l, "; %lld more fit now%s", (long long)res->fit_now,
             res->preempts && res->lower > 0 ? " (it may preempt lower-priority pods)" : "");
    if (rq->headroom > 0) {
        l = strlen(buf);
        snprintf(buf + l, len - l, " keeping the headroom of %lld free on each node",
                 (long long)rq->headroom);
    }
    l = strlen(buf);
    snprintf(buf + l, len - l, ", %lld at most", (long long)res->fit_ever);
    if (res->transient > 0) {
        l = strlen(buf);
        snprintf(buf + l, len - l, " (%lld of them on %d cordoned or not Ready node%s)",
                 (long long)res->fit_transient, res->transient, res->transient == 1 ? "" : "s");
    }
    if (res->shared_why[0]) {
        l = strlen(buf);
        snprintf(buf + l, len - l, "; GPUs are shared (%s)", res->shared_why);
    }
    if (res->reasons[0]) {
        l = strlen(buf);
        snprintf(buf + l, len - l, "; not eligible: %s", res->reasons);
    }
}

void capacity_reserve(struct cluster *c, const struct capacity_request *rq, int64_t pods,
                      double window_s)
{
    struct capacity_cache *cache = c->cap;
    struct capacity_result out;
    const char *rn[CAPACITY_RESOURCES_MAX];
    struct elig_set *set;
    double now = mono_s();
    int64_t fn, fe, used[CAPACITY_RESOURCES_MAX], take, target = rq->base + pods;
    struct held held;
    size_t w;

    memset(&out, 0, sizeof(out));
    if (pods <= 0 || read_demand(rq, &out) < 0 || !out.judged)
        return;
    if (held_load(c->cap, &held, rq, now) < 0)
        return; /* out of memory: nothing is reserved, as if the window were 0 */
    held_sort(&held);
    pthread_rwlock_rdlock(&c->lock);
    intern_names(c, &out, rn);
    if (eligible_nodes(c, rq, &out, rn, &set) < 0) {
        pthread_rwlock_unlock(&c->lock);
        held_free(&held);
        return; /* out of memory: nothing is reserved, as if the window were 0 */
    }
    pthread_mutex_lock(&cache->reserve_lock);
    for (size_t i = w = 0; i < cache->n_reservations; i++) { /* drop the expired and replaced */
        if (held_counts(&cache->reservations[i], rq, now))
            cache->reservations[w++] = cache->reservations[i];
    }
    cache->n_reservations = w;
    template_priority(c, rq->pod_spec, &out.priority, &out.preempts);
    /* where the scheduler would put them, roughly: the eligible nodes with room, in turn */
    for (size_t i = 0; i < set->n && pods > 0; i++) {
        const struct node *n = set->nodes[i];

        node_fit(c, n, rq, &out, rn, now, &held, &fn, &fe, used);
        take = fn < pods ? fn : pods;
        for (size_t r = 0; take > 0 && r < out.n_res; r++) {
            struct reservation *rv;

            if (cache->n_reservations == CAPACITY_RESERVATIONS_MAX) { /* the oldest goes */
                memmove(cache->reservations, cache->reservations + 1,
                        (CAPACITY_RESERVATIONS_MAX - 1) * sizeof(*cache->reservations));
                cache->n_reservations--;
            }
            rv = &cache->reservations[cache->n_reservations++];
            rv->until = now + window_s;
            rv->key = rq->key;
            rv->base = rq->base;
            rv->target = target;
            snprintf(rv->node, sizeof(rv->node), "%s", n->name);
            snprintf(rv->name, sizeof(rv->name), "%s", out.res[r].name);
            rv->gpus = take * out.res[r].per_pod;
            rv->pods = take;
            rv->used_at = used[r];
        }
        if (take > 0)
            pods -= take;
    }
    pthread_mutex_unlock(&cache->reserve_lock);
    pthread_rwlock_unlock(&c->lock);
    elig_release(c->cap, set);
    held_free(&held);
}

void capacity_shrink(struct cluster *c, uint64_t key, int64_t replicas)
{
    double now = mono_s();
    uint64_t base_seen[CAPACITY_RESERVATIONS_MAX];
    size_t n_bases = 0;
    struct capacity_cache *cache;

    if (c == NULL || key == 0)
        return;
    cache = c->cap;
    pthread_mutex_lock(&cache->reserve_lock);
    /* each admission of key (one base) in turn: its entries lie side by side, a node's
     * resources together, in the order the pods were placed */
    for (size_t i = 0; i < cache->n_reservations; i++) {
        const struct reservation *first = &cache->reservations[i];
        int64_t keep, placed = 0;
        const char *node = NULL;
        int64_t node_keep = 0;
        bool seen = false;

        if (first->key != key || first->until <= now)
            continue;
        for (size_t b = 0; b < n_bases && !seen; b++)
            seen = base_seen[b] == (uint64_t)first->base;
        if (seen)
            continue;
        base_seen[n_bases++] = (uint64_t)first->base;
        keep = replicas > first->base ? replicas - first->base : 0;
        for (size_t k = i; k < cache->n_reservations; k++) {
            struct reservation *r = &cache->reservations[k];

            if (r->key != key || r->base != first->base || r->until <= now)
                continue;
            if (node == NULL || strcmp(node, r->node) != 0) { /* the next node's pods */
                node = r->node;
                node_keep = keep - placed > 0 ? keep - placed : 0;
                if (node_keep > r->pods)
                    node_keep = r->pods;
                placed += r->pods;
            }
            if (node_keep < r->pods) {
                r->gpus = r->pods > 0 ? r->gpus / r->pods * node_keep : 0;
                r->pods = node_keep;
            }
        }
        if (first->target > first->base + keep)
            for (size_t k = i; k < cache->n_reservations; k++)
                if (cache->reservations[k].key == key && cache->reservations[k].base == first->base)
                    cache->reservations[k].target = first->base + keep;
    }
    pthread_mutex_unlock(&cache->reserve_lock);
}
