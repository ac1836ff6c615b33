/*
 * pending.c: why GPU pods are Pending (see pending.h).
 *
 * One pod at a time: its nodes sorted by name, each judged by the filters in kube-scheduler's
 * order until the first that fails; the failures grouped into reasons (one per distinct taint,
 * label or resource), then the reasons the scheduler never gives. Messages are built in fixed
 * buffers and cut, never grown; the node lists of the JSON are whole.
 */
#include "pending.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster_view.h"
#include "growth.h"
#include "json.h"
#include "mono.h"
#include "placement.h"
#include "policy/pod.h"

#define PENDING_REASONS_MAX 32 /* distinct reasons of one pod; more are counted, not listed */
#define NODES_NAMED         8  /* nodes a message names; the JSON lists them all */
#define HOLDERS_MAX         8  /* namespace and priority pairs a preemption message names */
#define MSG_MAX             1024

/* kube-scheduler's highest user-definable priority (k8s.io/api/scheduling/v1
 * HighestUserDefinablePriority): the system classes above it are not for workloads. */
#define USER_PRIORITY_MAX 1000000000

static const char *const code_names[PENDING_CODES] = {
    [PENDING_SCHEDULING_GATED] = "scheduling-gated",
    [PENDING_OTHER_SCHEDULER] = "other-scheduler",
    [PENDING_LARGER_THAN_ANY_NODE] = "larger-than-any-node",
    [PENDING_SHARED_REQUEST_GT_ONE] = "shared-request-gt-one",
    [PENDING_INSUFFICIENT] = "insufficient",
    [PENDING_DEVICE_PLUGIN_CONFIG_MISSING] = "device-plugin-config-missing",
    [PENDING_DEVICE_PLUGIN_DOWN] = "device-plugin-down",
    [PENDING_UNHEALTHY_GPUS] = "unhealthy-gpus",
    [PENDING_SELECTOR_MISMATCH] = "selector-mismatch",
    [PENDING_UNTOLERATED_TAINT] = "untolerated-taint",
    [PENDING_NODE_NOT_READY] = "node-not-ready",
    [PENDING_NODE_UNSCHEDULABLE] = "node-unschedulable",
    [PENDING_PREEMPTION_POSSIBLE] = "preemption-possible",
    [PENDING_NO_PRIORITY_CLASS] = "no-priority-class",
    [PENDING_NODE_GROUP_AT_MAX] = "node-group-at-max",
    [PENDING_AUTOSCALER_BACKOFF] = "autoscaler-backoff",
    [PENDING_NODEPOOL_LIMIT] = "nodepool-limit",
};

const char *pending_code_name(enum pending_code code)
{
    return (unsigned)code < PENDING_CODES ? code_names[code] : NULL;
}

/* ---- one reason ---- */

/* A reason of one pod: its code, what tells it apart from others of the code (a taint, a
 * label, a resource), its nodes and, for the fit reasons, what each has. */
struct reason {
    enum pending_code code;
    const char *a, *b, *c; /* borrowed from the view or the spec */
    yyjson_mut_val *nodes; /* names, in node order */
    size_t n_nodes;
    char named[MSG_MAX]; /* the first NODES_NAMED of them, with what each has */
    size_t at;
    char msg[MSG_MAX]; /* its message: set when it is made (preemption, shared asks), else
                          written once every node is judged */
    size_t order;      /* when it was made: reasons of one code keep it */
};

struct reasons {
    struct reason r[PENDING_REASONS_MAX];
    size_t n;
    yyjson_mut_doc *doc;
};

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static bool same(const char *x, const char *y)
{
    return x == y || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

/* The reason (code, a, b, c), added when new; NULL when too many or out of memory. */
static struct reason *reason_of(struct reasons *rs, enum pending_code code, const char *a,
                                const char *b, const char *c)
{
    struct reason *r;

    for (size_t i = 0; i < rs->n; i++) {
        r = &rs->r[i];
        if (r->code == code && same(r->a, a) && same(r->b, b) && same(r->c, c))
            return r;
    }
    if (rs->n == PENDING_REASONS_MAX || (rs->r[rs->n].nodes = yyjson_mut_arr(rs->doc)) == NULL)
        return NULL;
    r = &rs->r[rs->n++];
    r->code = code;
    r->a = a;
    r->b = b;
    r->c = c;
    r->n_nodes = 0;
    r->named[0] = '\0';
    r->at = 0;
    r->msg[0] = '\0';
    r->order = rs->n - 1;
    return r;
}

/* Appends to buf (len bytes) at *at, cut as snprintf cuts. */
static void add(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*at + 1 >= len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at = *at + (size_t)n < len ? *at + (size_t)n : len - 1;
}

/* The node joins the reason; detail (or NULL) is what it has, for the message. */
static void reason_node(struct reasons *rs, struct reason *r, const char *node, const char *detail)
{
    if (r == NULL)
        return;
    if (r->n_nodes < NODES_NAMED)
        add(r->named, sizeof(r->named), &r->at, "%s%s%s%s", r->n_nodes ? ", " : "", node,
            detail ? " " : "", detail ? detail : "");
    if (r->n_nodes++ < PENDING_NODES_LISTED_MAX)
        yyjson_mut_arr_add_strcpy(rs->doc, r->nodes, node);
}

/* ", and N more" for a reason's nodes past those named. */
static void more_nodes(const struct reason *r, char *buf, size_t len, size_t *at)
{
    if (r->n_nodes > NODES_NAMED)
        add(buf, len, at, " and %zu more", r->n_nodes - NODES_NAMED);
}

/* "node" or "nodes" by count, and "has"/"have". */
static const char *nodes_word(size_t n)
{
    return n == 1 ? "node" : "nodes";
}

static const char *has_word(size_t n)
{
    return n == 1 ? "has" : "have";
}

/* ---- what a node has ---- */

/* What the bound pods of n use of rn, in all and below priority prio. */
static void bound_use(const struct node *n, const char *rn, int64_t prio, int64_t *used,
                      int64_t *below)
{
    const struct binding *b = n->binding;

    *used = *below = 0;
    for (size_t k = 0; b != NULL && k < b->n_res; k++) {
        if (b->res[k].name != rn)
            continue;
        *used += b->res[k].total;
        for (size_t p = 0; p < b->res[k].n_prio; p++) {
            if (b->res[k].prio[p].priority < prio)
                *below += b->res[k].prio[p].n;
        }
    }
}

/* ---- one pod ---- */

/* A node that passed every filter but the fit: what it has of each resource the pod asks. */
struct cand {
    const struct node *n;
    int64_t free[POD_RESOURCES_MAX], below[POD_RESOURCES_MAX];
    bool room; /* preempting below the priority room_below() last judged makes room here */
};

/* An unbound pod nominated to a node (status.nominatedNodeName): kube-scheduler's filters count
 * it on that node for pods of no higher priority than it (framework/runtime/framework.go,
 * RunFilterPluginsWithNominatedPods: "all the existing pods on the node plus higher and equal
 * priority pods nominated to run on the node"). */
struct nom {
    const char *node;
    const struct vpod *v;
};

/* What every pod's explanation reads besides the pod: the nodes by name, the nominated pods by
 * node. */
struct scene {
    const struct node **nodes;
    size_t n_nodes;
    struct nom *nom;
    size_t n_nom;
};

struct pod_ctx {
    const struct cluster *c;
    const struct scene *sc;
    const struct vpod *v;
    yyjson_val *spec;                         /* its trimmed spec, or NULL */
    struct growth_ask ask[POD_RESOURCES_MAX]; /* name: its record's; rn: NULL when no node has it */
    size_t n_ask;
    double now;
    struct reasons *rs;
    yyjson_mut_val *fits;
    struct cand *cands;
    size_t n_cands;
    int64_t max_alloc[POD_RESOURCES_MAX]; /* over the candidates offering it */
    const char *max_node[POD_RESOURCES_MAX];
    int64_t sum_free[POD_RESOURCES_MAX], best_free[POD_RESOURCES_MAX];
    size_t no_offer[POD_RESOURCES_MAX]; /* candidates that offer none of it */
};

/* What the pods nominated to n of equal or higher priority than the pod ask of resource name. */
static int64_t nominated_use(const struct pod_ctx *p, const struct node *n, const char *name)
{
    size_t lo = 0, hi = p->sc->n_nom;
    int64_t sum = 0;

    while (lo < hi) { /* the first of n's */
        size_t mid = lo + (hi - lo) / 2;

        if (strcmp(p->sc->nom[mid].node, n->name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < p->sc->n_nom && strcmp(p->sc->nom[lo].node, n->name) == 0; lo++) {
        const struct vpod *v = p->sc->nom[lo].v;

        if (v == p->v || v->priority < p->v->priority)
            continue;
        for (size_t d = 0; d < v->n_demand; d++)
            if (strcmp(v->demand[d].name, name) == 0)
                sum += v->demand[d].n;
    }
    return sum;
}

/* The filters before the fit, in kube-scheduler's order; false with the reason added when the
 * node fails one. */
static bool node_filters(struct pod_ctx *p, const struct node *n)
{
    yyjson_val *tols = yyjson_obj_get(p->spec, "tolerations");
    const char *key, *value;
    struct reason *r;

    /* NodeUnschedulable (plugins/nodeunschedulable): spec.unschedulable, unless the pod
     * tolerates the unschedulable taint */
    if (n->unschedulable &&
        !placement_tolerated(tols, "node.kubernetes.io/unschedulable", "", "NoSchedule")) {
        reason_node(p->rs, reason_of(p->rs, PENDING_NODE_UNSCHEDULABLE, NULL, NULL, NULL), n->name,
                    NULL);
        return false;
    }
    /* TaintToleration (plugins/tainttoleration): NoSchedule and NoExecute taints; the node
     * lifecycle controller's not-ready and unreachable taints say the node is not Ready */
    for (size_t i = 0; i < n->n_taints; i++) {
        const struct node_taint *t = &n->taints[i];

        if (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
            continue;
        if (placement_tolerated(tols, t->key, t->value, t->effect))
            continue;
        if (strcmp(t->key, "node.kubernetes.io/not-ready") == 0 ||
            strcmp(t->key, "node.kubernetes.io/unreachable") == 0)
            r = reason_of(p->rs, PENDING_NODE_NOT_READY, NULL, NULL, NULL);
        else
            r = reason_of(p->rs, PENDING_UNTOLERATED_TAINT, t->key, t->value, t->effect);
        reason_node(p->rs, r, n->name, NULL);
        return false;
    }
    /* a NotReady node without its taint yet passes: kube-scheduler has no Ready filter since
     * TaintNodesByCondition (kubernetes#82703); the node lifecycle controller's taint keeps pods
     * off it, and comes within its grace */
    /* NodeAffinity (plugins/nodeaffinity): nodeSelector, then the required affinity */
    if (placement_selector_miss(p->spec, n->labels, &key, &value)) {
        reason_node(p->rs, reason_of(p->rs, PENDING_SELECTOR_MISMATCH, key, value, NULL), n->name,
                    NULL);
        return false;
    }
    if (!placement_affinity_ok(p->spec, n->name, n->labels)) {
        reason_node(p->rs, reason_of(p->rs, PENDING_SELECTOR_MISMATCH, NULL, NULL, NULL), n->name,
                    NULL);
        return false;
    }
    return true;
}

/* The device plugin config ConfigMaps in the view have a key named key. */
static bool config_has(const struct cluster *c, const char *key)
{
    const struct table *t = &c->kinds[CLUSTER_PLUGIN_CONFIGS];

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vplugin_config *v = e->value;

            for (size_t i = 0; i < v->n_keys; i++)
                if (strcmp(v->keys[i].name, key) == 0)
                    return true;
            if (v->n_more > 0)
                return true; /* past what the view keeps: it may be there */
        }
    return false;
}

/* A node whose nvidia.com/device-plugin.config label picks a config no device plugin config
 * ConfigMap in the view has: the plugin's config manager fails with "specified config KEY does
 * not exist" and exits (NVIDIA/k8s-device-plugin cmd/config-manager/main.go updateConfigName,
 * main's os.Exit(1)): its sidecar restarts in a loop, leaving the plugin on the config it had,
 * and a plugin pod started anew stops at its init container, so the node offers no GPUs. The
 * sharing the label asks for never comes. Judged only when the view holds a config. */
static void config_missing(struct pod_ctx *p, const struct node *n)
{
    const char *key = yyjson_get_str(yyjson_obj_get(n->labels, "nvidia.com/device-plugin.config"));

    if (key == NULL || p->c->kinds[CLUSTER_PLUGIN_CONFIGS].n == 0 || config_has(p->c, key))
        return;
    reason_node(p->rs, reason_of(p->rs, PENDING_DEVICE_PLUGIN_CONFIG_MISSING, key, NULL, NULL),
                n->name, NULL);
}

/* NodeResourcesFit for the GPU resources (plugins/noderesources/fit.go): the node's first
 * resource short of one pod's ask; a node that offers none of a resource it asks for but is a
 * GPU node by its labels has a device plugin that is not serving. */
static void node_fit(struct pod_ctx *p, const struct node *n)
{
    struct cand *cd = &p->cands[p->n_cands++];
    bool short_of = false;
    char detail[96];

    cd->n = n;
    for (size_t i = 0; i < p->n_ask; i++) {
        const struct node_res *nr = node_res_find(n, p->ask[i].rn);
        int64_t alloc, used, below;

        cd->free[i] = cd->below[i] = 0;
        if (nr == NULL || !node_res_offered(nr)) {
            const char *label = cluster_node_gpu_label(n);

            if (label != NULL && !cluster_node_offers_nvidia(n) &&
                strncmp(p->ask[i].name, "nvidia.com/", 11) == 0) {
                snprintf(detail, sizeof(detail), "(%s)", label);
                reason_node(
                    p->rs, reason_of(p->rs, PENDING_DEVICE_PLUGIN_DOWN, p->ask[i].name, NULL, NULL),
                    n->name, detail);
            } else {
                p->no_offer[i]++;
            }
            short_of = true;
            continue;
        }
        alloc = cluster_effective_allocatable(p->c, nr, p->now);
        bound_use(n, nr->name, p->v->priority, &used, &below);
        used += nominated_use(p, n, nr->name);
        cd->free[i] = alloc - used > 0 ? alloc - used : 0;
        cd->below[i] = below;
        p->sum_free[i] += cd->free[i];
        if (cd->free[i] > p->best_free[i])
            p->best_free[i] = cd->free[i];
        /* a node's size is what it has when its plugin serves every GPU: a plugin down or
         * unhealthy GPUs are reasons of their own, not a small node */
        if (alloc > p->max_alloc[i] || nr->capacity > p->max_alloc[i] || p->max_node[i] == NULL) {
            p->max_alloc[i] = alloc > nr->capacity ? alloc : nr->capacity;
            p->max_node[i] = n->name;
        }
        if (nr->allocatable == 0 && nr->capacity > 0) {
            snprintf(detail, sizeof(detail), "(capacity %" PRId64 ", allocatable 0)", nr->capacity);
            reason_node(p->rs,
                        reason_of(p->rs, PENDING_DEVICE_PLUGIN_DOWN, p->ask[i].name, NULL, NULL),
                        n->name, detail);
            short_of = true;
            continue;
        }
        if (nr->capacity > nr->allocatable) {
            snprintf(detail, sizeof(detail), "(%" PRId64 " of %" PRId64 ")",
                     nr->capacity - nr->allocatable, nr->capacity);
            reason_node(p->rs, reason_of(p->rs, PENDING_UNHEALTHY_GPUS, p->ask[i].name, NULL, NULL),
                        n->name, detail);
        }
        if (cd->free[i] < p->ask[i].per_pod && !short_of) {
            snprintf(detail, sizeof(detail), "%" PRId64 "/%" PRId64 " free", cd->free[i], alloc);
            reason_node(p->rs, reason_of(p->rs, PENDING_INSUFFICIENT, p->ask[i].name, NULL, NULL),
                        n->name, detail);
            short_of = true;
        }
    }
    if (short_of)
        config_missing(p, n);
    if (!short_of && yyjson_mut_arr_size(p->fits) < PENDING_NODES_LISTED_MAX)
        yyjson_mut_arr_add_strcpy(p->rs->doc, p->fits, n->name);
}

/* The keys of the device plugin config ConfigMaps in the view, "ns/name: a, b; ...". */
static void config_keys(const struct cluster *c, char *buf, size_t len, size_t *at)
{
    const struct table *t = &c->kinds[CLUSTER_PLUGIN_CONFIGS];
    bool first = true;

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vplugin_config *v = e->value;

            add(buf, len, at, "%s%s:", first ? "" : "; ", e->key);
            for (size_t i = 0; i < v->n_keys && i < 8; i++)
                add(buf, len, at, "%s %s", i ? "," : "", v->keys[i].name);
            if (v->n_keys == 0)
                add(buf, len, at, " no key");
            else if (v->n_keys > 8)
                add(buf, len, at, ", ...");
            first = false;
        }
}

/* The reasons' messages, once every node is judged. */
static void reason_text(const struct pod_ctx *p, const struct reason *r, char *buf, size_t len)
{
    size_t at = 0, i;

    buf[0] = '\0';
    for (i = 0; i < p->n_ask && !same(p->ask[i].name, r->a); i++)
        ;
    switch (r->code) {
    case PENDING_NODE_UNSCHEDULABLE:
        add(buf, len, &at, "%zu %s cordoned (spec.unschedulable): %s", r->n_nodes,
            r->n_nodes == 1 ? "node is" : "nodes are", r->named);
        break;
    case PENDING_NODE_NOT_READY:
        add(buf, len, &at, "%zu %s not Ready: %s", r->n_nodes,
            r->n_nodes == 1 ? "node is" : "nodes are", r->named);
        break;
    case PENDING_UNTOLERATED_TAINT:
        add(buf, len, &at, "%zu %s %s taint %s%s%s:%s, which the pod does not tolerate: %s",
            r->n_nodes, nodes_word(r->n_nodes), has_word(r->n_nodes), r->a, r->b[0] ? "=" : "",
            r->b, r->c, r->named);
        break;
    case PENDING_SELECTOR_MISMATCH:
        if (r->a != NULL)
            add(buf, len, &at, "%zu %s not labelled %s=%s (spec.nodeSelector): %s", r->n_nodes,
                r->n_nodes == 1 ? "node is" : "nodes are", r->a, r->b, r->named);
        else
            add(buf, len, &at, "%zu %s not match the required node affinity: %s", r->n_nodes,
                r->n_nodes == 1 ? "node does" : "nodes do", r->named);
        break;
    case PENDING_DEVICE_PLUGIN_DOWN:
        add(buf, len, &at,
            "%zu GPU %s no %s: %s; the NVIDIA device plugin is not serving there (not "
            "running, restarting, or lost its state)",
            r->n_nodes, r->n_nodes == 1 ? "node advertises" : "nodes advertise", r->a, r->named);
        break;
    case PENDING_DEVICE_PLUGIN_CONFIG_MISSING:
        add(buf, len, &at,
            "%zu %s labelled nvidia.com/device-plugin.config=%s, a config the device plugin's "
            "ConfigMap does not have (it has ",
            r->n_nodes, r->n_nodes == 1 ? "node short of GPUs is" : "nodes short of GPUs are",
            r->a);
        config_keys(p->c, buf, len, &at);
        add(buf, len, &at,
            "): the plugin's config manager exits with \"specified config %s does not exist\", "
            "so the plugin keeps the config it had or, started anew, does not start; add the key "
            "or fix the label: %s",
            r->a, r->named);
        break;
    case PENDING_UNHEALTHY_GPUS:
        add(buf, len, &at,
            "%zu %s %s unhealthy %s (capacity above allocatable): %s; the device plugin does "
            "not offer a GPU again once it marked it unhealthy, until the plugin restarts",
            r->n_nodes, nodes_word(r->n_nodes), has_word(r->n_nodes), r->a, r->named);
        break;
    case PENDING_LARGER_THAN_ANY_NODE:
        add(buf, len, &at,
            "one pod asks for %" PRId64 " %s, more than any node it may go to has: the largest "
            "is %s; a pod lands whole on one node, so it never fits",
            i < p->n_ask ? p->ask[i].per_pod : 0, r->a, r->named);
        return;
    case PENDING_INSUFFICIENT:
        add(buf, len, &at,
            "the pod asks for %" PRId64 " %s; %zu %s it may go to %s too few free: %s",
            i < p->n_ask ? p->ask[i].per_pod : 0, r->a, r->n_nodes, nodes_word(r->n_nodes),
            r->n_nodes == 1 ? "has" : "have", r->named);
        more_nodes(r, buf, len, &at);
        if (i < p->n_ask && p->sum_free[i] >= p->ask[i].per_pod &&
            p->best_free[i] < p->ask[i].per_pod)
            add(buf, len, &at,
                "; %" PRId64 " are free in all but at most %" PRId64
                " on one node: the free GPUs are fragmented",
                p->sum_free[i], p->best_free[i]);
        return;
    default: break;
    }
    if (r->code != PENDING_INSUFFICIENT)
        more_nodes(r, buf, len, &at);
}

/* The pod's asks that no candidate can ever hold: larger-than-any-node; and, when no
 * candidate offers a resource at all, an insufficient reason that says so. */
static void asks_too_large(struct pod_ctx *p)
{
    char msg[MSG_MAX];

    for (size_t i = 0; i < p->n_ask; i++) {
        struct reason *r;

        if (p->max_node[i] != NULL && p->ask[i].per_pod > p->max_alloc[i]) {
            r = reason_of(p->rs, PENDING_LARGER_THAN_ANY_NODE, p->ask[i].name, NULL, NULL);
            if (r != NULL) {
                snprintf(msg, sizeof(msg), "(%" PRId64 ")", p->max_alloc[i]);
                reason_node(p->rs, r, p->max_node[i], msg);
            }
        } else if (p->max_node[i] == NULL && p->no_offer[i] > 0) {
            r = reason_of(p->rs, PENDING_INSUFFICIENT, p->ask[i].name, "none", NULL);
            if (r != NULL)
                r->n_nodes = p->no_offer[i];
        }
    }
}

/* Which of the pod's containers ask for more than one unit of a resource that the candidates
 * offering it share (time-slicing, MPS): shared-request-gt-one. */
static void shared_asks(struct pod_ctx *p)
{
    static const char *const lists[] = {"containers", "initContainers"};
    char why[128];

    for (size_t l = 0; l < 2; l++) {
        yyjson_val *ctr;
        size_t i, max;

        yyjson_arr_foreach (yyjson_obj_get(p->spec, lists[l]), i, max, ctr) {
            struct pod_demand dm;
            struct diag d;

            diag_clear(&d);
            if (pod_container_gpus(ctr, lists[l], NULL, &dm, &d) < 0)
                continue;
            for (size_t k = 0; k < dm.n; k++) {
                const char *rn = cluster_rname(p->c, dm.r[k].name);
                struct reason *r = NULL;

                if (dm.r[k].milli <= 1000 || rn == NULL)
                    continue;
                for (size_t j = 0; j < p->n_cands; j++) {
                    const struct node_res *nr = node_res_find(p->cands[j].n, rn);

                    if (nr == NULL || !node_res_offered(nr) ||
                        !cluster_node_shares(p->cands[j].n, why, sizeof(why)))
                        continue;
                    if (r == NULL &&
                        (r = reason_of(p->rs, PENDING_SHARED_REQUEST_GT_ONE, rn,
                                       json_get_str(ctr, "name"), NULL)) != NULL &&
                        r->msg[0] == '\0')
                        snprintf(r->msg, sizeof(r->msg),
                                 "container %s asks for %" PRId64
                                 " %s, on nodes that share each GPU (%s): every unit is a slice "
                                 "of one GPU, so several give it no more GPU than one, and with "
                                 "failRequestsGreaterThanOne (the MPS default) the device plugin "
                                 "refuses it and the kubelet fails the pod "
                                 "(UnexpectedAdmissionError)",
                                 or_empty(json_get_str(ctr, "name")), (dm.r[k].milli + 999) / 1000,
                                 rn, why);
                    reason_node(p->rs, r, p->cands[j].n->name, NULL);
                }
            }
        }
    }
}

/* ---- preemption ---- */

/* What the pods bound to n below priority prio hold of resource name, those of owner (the pod's
 * own controller, NULL: none) left out: a class named in the owner's template would be theirs
 * too, so they are no victims of it. */
static int64_t held_below(const struct node *n, const char *name, int64_t prio, const char *owner)
{
    const struct binding *b = n->binding;
    int64_t sum = 0;

    for (size_t k = 0; b != NULL && k < b->n; k++) {
        const struct vpod *v = b->pods[k];

        if (v->priority >= prio || (owner != NULL && same(v->owner, owner)))
            continue;
        for (size_t d = 0; d < v->n_demand; d++)
            if (strcmp(v->demand[d].name, name) == 0)
                sum += v->demand[d].n;
    }
    return sum;
}

/* Whether, on some candidate, the free GPUs plus those held below priority prio (the pods of
 * controller spare, or NULL, left out) make room for one pod of every resource it is short of;
 * how many GPUs of the first resource those pods hold on the nodes where they do (cand.room),
 * and on how many nodes. */
static bool room_below(struct pod_ctx *p, int64_t prio, const char *spare, int64_t *held,
                       size_t *nodes, yyjson_mut_val *names)
{
    *held = 0;
    *nodes = 0;
    for (size_t j = 0; j < p->n_cands; j++) {
        struct cand *cd = &p->cands[j];
        bool room = true, short_of = false;
        int64_t below, first = 0;

        for (size_t i = 0; i < p->n_ask && room; i++) {
            const struct node_res *nr = node_res_find(cd->n, p->ask[i].rn);

            if (nr == NULL || !node_res_offered(nr)) {
                room = false;
                break;
            }
            below = held_below(cd->n, p->ask[i].name, prio, spare);
            room = cd->free[i] + below >= p->ask[i].per_pod;
            short_of = short_of || cd->free[i] < p->ask[i].per_pod;
            if (i == 0)
                first = below;
        }
        cd->room = room && short_of;
        if (cd->room) {
            *held += first;
            (*nodes)++;
            if (names != NULL && *nodes <= PENDING_NODES_LISTED_MAX)
                yyjson_mut_arr_add_strcpy(p->rs->doc, names, cd->n->name);
        }
    }
    return *nodes > 0;
}

/* The pods below prio holding the first resource on the candidates where preempting them makes
 * room, as "12 in namespace ml at priority 1000 (batch-low)" parts. */
struct holder {
    char ns[128];
    int64_t priority;
    int64_t gpus;
};

static void holders_text(const struct pod_ctx *p, int64_t prio, const char *spare, char *buf,
                         size_t len, size_t *at)
{
    struct holder h[HOLDERS_MAX];
    size_t n = 0, more = 0;

    for (size_t j = 0; j < p->n_cands; j++) {
        const struct binding *b = p->cands[j].room ? p->cands[j].n->binding : NULL;

        for (size_t k = 0; b != NULL && k < b->n; k++) {
            const struct vpod *v = b->pods[k];
            const char *slash = strchr(v->key, '/');
            size_t nl = slash ? (size_t)(slash - v->key) : 0;
            int64_t g = 0;
            size_t i;

            if (v->priority >= prio || (spare != NULL && same(v->owner, spare)))
                continue;
            for (size_t d = 0; d < v->n_demand; d++)
                if (strcmp(v->demand[d].name, p->ask[0].name) == 0)
                    g += v->demand[d].n;
            if (g == 0)
                continue;
            for (i = 0; i < n; i++)
                if (h[i].priority == v->priority && strlen(h[i].ns) == nl &&
                    strncmp(h[i].ns, v->key, nl) == 0)
                    break;
            if (i == n && n == HOLDERS_MAX) {
                more += (size_t)g;
                continue;
            }
            if (i == n) {
                snprintf(h[n].ns, sizeof(h[n].ns), "%.*s", (int)(nl < 127 ? nl : 127), v->key);
                h[n].priority = v->priority;
                h[n++].gpus = 0;
            }
            h[i].gpus += g;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const char *cls = cluster_class_name(p->c, h[i].priority);

        add(buf, len, at, "%s%" PRId64 " in namespace %s at priority %" PRId64 "%s%s%s",
            i ? ", " : "", h[i].gpus, h[i].ns, h[i].priority, cls ? " (" : "", cls ? cls : "",
            cls ? ")" : "");
    }
    if (more > 0)
        add(buf, len, at, ", %zu more", more);
}

/* preemption-possible: the pod may preempt and lower-priority pods hold what it needs;
 * no-priority-class: it names no class, and a class of the cluster would let it preempt. */
static void preemption(struct pod_ctx *p)
{
    yyjson_val *clsv = yyjson_obj_get(p->spec, "priorityClassName");
    bool named = yyjson_is_str(clsv) && yyjson_get_len(clsv) > 0;
    bool never = json_str_is(yyjson_obj_get(p->spec, "preemptionPolicy"), "Never");
    size_t at = 0, nodes;
    int64_t held;
    const struct table *t = &p->c->kinds[CLUSTER_PRIORITYCLASSES];
    const struct table_entry *best = NULL;
    struct reason *r;

    if (p->n_ask == 0 || p->n_cands == 0)
        return;
    if (!never && room_below(p, p->v->priority, NULL, &held, &nodes, NULL) &&
        (r = reason_of(p->rs, PENDING_PREEMPTION_POSSIBLE, NULL, NULL, NULL)) != NULL) {
        char *msg = r->msg;

        room_below(p, p->v->priority, NULL, &held, &nodes, r->nodes);
        r->n_nodes = nodes;
        add(msg, MSG_MAX, &at,
            "kube-scheduler may preempt pods of lower priority than its %" PRId64
            ": they hold %" PRId64 " %s on %zu %s where that makes room (",
            p->v->priority, held, p->ask[0].name, nodes, nodes_word(nodes));
        holders_text(p, p->v->priority, NULL, msg, MSG_MAX, &at);
        add(msg, MSG_MAX, &at, ")");
        if (p->v->pend->nominated != NULL)
            add(msg, MSG_MAX, &at, "; it is nominated to %s, waiting for its victims to exit",
                p->v->pend->nominated);
        return;
    }
    if (named)
        return;
    /* the least disruptive class that would do: the lowest user class above the pod that
     * may preempt and makes room */
    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
            const struct vclass *v = e->value;
            const struct vclass *b = best ? best->value : NULL;

            if (!v->preempt || v->value <= p->v->priority || v->value > USER_PRIORITY_MAX)
                continue;
            if (b != NULL &&
                (v->value > b->value || (v->value == b->value && strcmp(e->key, best->key) > 0)))
                continue;
            if (room_below(p, v->value, p->v->owner, &held, &nodes, NULL))
                best = e;
        }
    if (best == NULL || (r = reason_of(p->rs, PENDING_NO_PRIORITY_CLASS, NULL, NULL, NULL)) == NULL)
        return;
    room_below(p, ((const struct vclass *)best->value)->value, p->v->owner, &held, &nodes,
               r->nodes);
    r->n_nodes = nodes;
    add(r->msg, MSG_MAX, &at,
        "the pod names no PriorityClass (priority %" PRId64 "), so it preempts nothing; %" PRId64
        " %s on %zu %s %s held by pods below PriorityClass "
        "%s (%" PRId64 ") (",
        p->v->priority, held, p->ask[0].name, nodes, nodes_word(nodes), held == 1 ? "is" : "are",
        best->key, ((const struct vclass *)best->value)->value);
    holders_text(p, ((const struct vclass *)best->value)->value, p->v->owner, r->msg, MSG_MAX, &at);
    add(r->msg, MSG_MAX, &at, "): with priorityClassName: %s it would preempt them", best->key);
}

/* ---- node autoscalers ---- */

/* Cluster Autoscaler's node groups the pod could grow: those with a node that would admit it.
 * At its max size, or in backoff or unhealthy, such a group adds nothing now (CA's skip
 * reasons, core/scaleup/orchestrator/skippedreasons.go: "max node group size reached", "in
 * backoff after failed scale-up", "not ready for scale-up"). Returns whether such a group can
 * grow; with emit, adds the reasons of those that cannot. */
static bool ca_groups(struct pod_ctx *p, const struct node **nodes, size_t n_nodes, bool emit)
{
    const struct table *t = &p->c->kinds[CLUSTER_AUTOSCALER_STATUS];
    bool grows = false;

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vautoscaler *a = e->value;

            if (!a->ok || strcmp(a->st.autoscaler_status, "Initializing") == 0)
                continue;
            for (size_t g = 0; g < a->st.n_groups; g++) {
                const struct ca_group *grp = &a->st.groups[g];
                bool fits = false, backoff = strcmp(grp->scale_up, "Backoff") == 0;
                bool sick = !grp->healthy || strcmp(grp->scale_up, "Unhealthy") == 0;
                struct reason *r = NULL;

                for (size_t i = 0; i < n_nodes && !fits; i++)
                    /* a new node like the group's (fresh: no cordon, Ready) would admit it */
                    fits = ca_group_has_node(grp, nodes[i]->name, nodes[i]->labels) &&
                           growth_node_pods(p->spec, p->ask, p->n_ask, nodes[i], 0) > 0;
                if (fits && !backoff && !sick && grp->target < grp->max_size)
                    grows = true;
                if (!emit || !fits || (!backoff && !sick && grp->target < grp->max_size))
                    continue;
                if (backoff || sick) {
                    char why[640] = "";

                    if (grp->backoff_code[0] || grp->backoff_msg[0])
                        snprintf(why, sizeof(why), " (%s%s%s)", grp->backoff_code,
                                 grp->backoff_code[0] && grp->backoff_msg[0] ? ": " : "",
                                 grp->backoff_msg);
                    r = reason_of(p->rs, PENDING_AUTOSCALER_BACKOFF, grp->name, NULL, NULL);
                    if (r != NULL && backoff)
                        snprintf(r->msg, sizeof(r->msg),
                                 "node group %.255s, which could hold the pod, is in backoff after "
                                 "a failed scale-up%.600s: Cluster Autoscaler adds no node to it "
                                 "until the backoff ends",
                                 grp->name, why);
                    else if (r != NULL)
                        snprintf(r->msg, sizeof(r->msg),
                                 "node group %.255s, which could hold the pod, is unhealthy%.600s: "
                                 "Cluster Autoscaler does not scale it up (not ready for "
                                 "scale-up)",
                                 grp->name, why);
                } else {
                    r = reason_of(p->rs, PENDING_NODE_GROUP_AT_MAX, grp->name, NULL, NULL);
                    if (r != NULL && r->msg[0] == '\0')
                        snprintf(r->msg, sizeof(r->msg),
                                 "node group %s, which could hold the pod, is at its max size "
                                 "(%" PRId64 " of maxSize %" PRId64
                                 "): Cluster Autoscaler adds no node to it (max node group size "
                                 "reached)",
                                 grp->name, grp->target, grp->max_size);
                }
                for (size_t i = 0; r != NULL && i < n_nodes; i++)
                    if (ca_group_has_node(grp, nodes[i]->name, nodes[i]->labels))
                        reason_node(p->rs, r, nodes[i]->name, NULL);
            }
        }
    return grows;
}

/* Whether a NodePool whose template would admit the pod may still launch a node for it; with
 * emit, the reasons of those whose limits leave less than one of its nodes: Karpenter drops every
 * instance type above what is left (pkg/controllers/provisioning/scheduling/scheduler.go: "all
 * available instance types exceed limits for nodepool"), and launches whole nodes only. */
static bool nodepools(struct pod_ctx *p, bool emit)
{
    const struct table *t = &p->c->kinds[CLUSTER_NODEPOOLS];
    yyjson_val *tols = yyjson_obj_get(p->spec, "tolerations");
    yyjson_val *sel = yyjson_obj_get(p->spec, "nodeSelector"), *k, *v;
    bool grows = false;

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vnodepool *np = e->value;
            bool admits = np->ok, room = true;
            size_t i, max;

            for (size_t x = 0; admits && x < np->p.n_taints; x++) {
                const struct karpenter_taint *tt = &np->p.taints[x];

                if ((strcmp(tt->effect, "NoSchedule") == 0 ||
                     strcmp(tt->effect, "NoExecute") == 0) &&
                    !placement_tolerated(tols, tt->key, tt->value ? tt->value : "", tt->effect))
                    admits = false;
            }
            /* a selector the pool's labels, requirements or name rule out (Karpenter gives a
             * node the labels its requirements allow, and karpenter.sh/nodepool) */
            /* the macro steps past a NULL: an object only */
            if (yyjson_is_obj(sel))
                yyjson_obj_foreach (sel, i, max, k, v) {
                    if (admits && yyjson_is_str(k) && yyjson_is_str(v) &&
                        !karpenter_pool_may_label(&np->p, yyjson_get_str(k), yyjson_get_str(v)))
                        admits = false;
                }
            if (!admits)
                continue;
            /* any limit spent stops every launch: an instance type needs some of each
             * (scheduler.go drops the types whose capacity exceeds what is left) */
            for (size_t l = 0; room && l < np->p.n_limits; l++) {
                bool bounded, asked = false;
                const char *res = np->p.limits[l].name;
                struct reason *r;

                for (size_t a = 0; a < p->n_ask; a++)
                    asked = asked || strcmp(p->ask[a].name, res) == 0;
                if (asked || karpenter_pool_headroom(&np->p, res, &bounded) > 0 || !bounded)
                    continue;
                room = false;
                if (emit &&
                    (r = reason_of(p->rs, PENDING_NODEPOOL_LIMIT, np->p.name, res, NULL)) != NULL)
                    snprintf(r->msg, sizeof(r->msg),
                             "NodePool %.253s, whose nodes could hold the pod, has used all of "
                             "its limit of %" PRId64 " %.300s (spec.limits, status.resources): "
                             "Karpenter launches no node for it",
                             np->p.name, np->p.limits[l].milli / 1000, res);
            }
            for (size_t a = 0; room && a < p->n_ask; a++) {
                bool bounded;
                int64_t left = karpenter_pool_headroom(&np->p, p->ask[a].name, &bounded);
                int64_t need = p->ask[a].per_pod > np->p.gpu_count_min ? p->ask[a].per_pod
                                                                       : np->p.gpu_count_min;
                const struct karpenter_amount *lim = karpenter_pool_limit(&np->p, p->ask[a].name);
                struct reason *r;

                if (!bounded || left >= need)
                    continue;
                room = false;
                if (emit && (r = reason_of(p->rs, PENDING_NODEPOOL_LIMIT, np->p.name,
                                           p->ask[a].name, NULL)) != NULL)
                    snprintf(r->msg, sizeof(r->msg),
                             "NodePool %s, whose nodes could hold the pod, has %" PRId64
                             " %s left of its limit of %" PRId64
                             " (spec.limits less status.resources), and a node of it needs "
                             "%" PRId64 ": Karpenter launches none (all available instance "
                             "types exceed limits for nodepool)",
                             np->p.name, left, p->ask[a].name, lim ? lim->milli / 1000 : 0, need);
            }
            grows = grows || room;
        }
    return grows;
}

/* ---- the pods ---- */

static int reason_cmp(const void *a, const void *b)
{
    const struct reason *x = a, *y = b;

    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int node_cmp(const void *a, const void *b)
{
    const struct node *const *x = a, *const *y = b;

    return strcmp((*x)->name, (*y)->name);
}

/* The view's nodes sorted by name: a new array (free()), NULL with *n 0 when there are none. */
static const struct node **sorted_nodes(const struct cluster *c, size_t *n)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];
    const struct node **v = t->n ? malloc(t->n * sizeof(*v)) : NULL;

    *n = 0;
    for (size_t i = 0; v != NULL && i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next)
            v[(*n)++] = e->value;
    if (v != NULL)
        qsort(v, *n, sizeof(*v), node_cmp);
    return v;
}

static int nom_cmp(const void *a, const void *b)
{
    const struct nom *x = a, *y = b;

    return strcmp(x->node, y->node);
}

/* The scene of the view (read-locked): 0, or -1 when out of memory (sc then empty). Free with
 * scene_free(). */
static int scene_build(const struct cluster *c, struct scene *sc)
{
    const struct table *t = &c->kinds[CLUSTER_PODS];

    memset(sc, 0, sizeof(*sc));
    sc->nodes = sorted_nodes(c, &sc->n_nodes);
    if (c->kinds[CLUSTER_NODES].n > 0 && sc->nodes == NULL)
        return -1;
    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
            const struct vpod *v = e->value;

            if (v->pend == NULL || v->pend->nominated == NULL)
                continue;
            if (sc->n_nom % 64 == 0) {
                struct nom *m = realloc(sc->nom, (sc->n_nom + 64) * sizeof(*m));

                if (m == NULL)
                    return -1;
                sc->nom = m;
            }
            sc->nom[sc->n_nom++] = (struct nom){v->pend->nominated, v};
        }
    if (sc->n_nom > 1)
        qsort(sc->nom, sc->n_nom, sizeof(*sc->nom), nom_cmp);
    return 0;
}

static void scene_free(struct scene *sc)
{
    free((void *)sc->nodes);
    free(sc->nom);
    memset(sc, 0, sizeof(*sc));
}

/* The reasons of one Pending pod into arr (reasons of doc), and the nodes with room into fits. */
static int explain_pod(const struct cluster *c, const struct vpod *v, const struct scene *sc,
                       yyjson_mut_doc *doc, yyjson_mut_val *arr, yyjson_mut_val *fits, int *primary)
{
    struct reasons *rs = calloc(1, sizeof(*rs));
    struct pod_ctx p = {.c = c, .sc = sc, .v = v, .now = mono_s(), .rs = rs, .fits = fits};
    const struct node **nodes = sc->nodes;
    size_t n_nodes = sc->n_nodes;
    int rc = -1;

    if (rs == NULL)
        return -1;
    rs->doc = doc;
    p.spec = v->pend->spec != NULL ? yyjson_doc_get_root(v->pend->spec->doc) : NULL;
    for (size_t i = 0; i < v->n_demand && p.n_ask < POD_RESOURCES_MAX; i++) {
        p.ask[p.n_ask].name = v->demand[i].name;
        p.ask[p.n_ask].rn = cluster_rname(c, v->demand[i].name);
        p.ask[p.n_ask++].per_pod = v->demand[i].n;
    }
    if (v->gated) {
        struct reason *r = reason_of(rs, PENDING_SCHEDULING_GATED, NULL, NULL, NULL);

        if (r != NULL)
            snprintf(r->msg, sizeof(r->msg),
                     "the pod waits on its scheduling gate %s: kube-scheduler does not consider "
                     "it until every gate is removed%s",
                     or_empty(v->pend->gate),
                     same(v->pend->gate, "kueue.x-k8s.io/admission")
                         ? " (Kueue removes this one when it admits the workload)"
                         : "");
    } else if (v->pend->scheduler != NULL) {
        struct reason *r = reason_of(rs, PENDING_OTHER_SCHEDULER, NULL, NULL, NULL);

        if (r != NULL)
            snprintf(r->msg, sizeof(r->msg),
                     "the pod is for the scheduler %.300s (spec.schedulerName), which places it, "
                     "not kube-scheduler: ask that scheduler why it waits",
                     v->pend->scheduler);
    } else {
        if ((p.cands = calloc(n_nodes ? n_nodes : 1, sizeof(*p.cands))) == NULL)
            goto out;
        for (size_t i = 0; i < n_nodes; i++) {
            if (node_filters(&p, nodes[i]))
                node_fit(&p, nodes[i]);
        }
        if (n_nodes == 0) {
            struct reason *r = reason_of(rs, PENDING_INSUFFICIENT, NULL, NULL, NULL);

            if (r != NULL)
                snprintf(r->msg, sizeof(r->msg), "the view holds no node to place it on");
        }
        asks_too_large(&p);
        shared_asks(&p);
        preemption(&p);
        /* why no node can be added, only where the pod fits nowhere and no node group or
         * NodePool that would hold it can grow: Cluster Autoscaler expands any group it can
         * (a group at its max is a skip reason for that group alone), Karpenter tries every
         * NodePool */
        if (yyjson_mut_arr_size(fits) == 0 && !ca_groups(&p, nodes, n_nodes, false) &&
            !nodepools(&p, false)) {
            ca_groups(&p, nodes, n_nodes, true);
            nodepools(&p, true);
        }
    }
    qsort(rs->r, rs->n, sizeof(rs->r[0]), reason_cmp);
    /* a pod the view has room for waits for none of its nodes' reasons */
    *primary = rs->n > 0 && yyjson_mut_arr_size(fits) == 0 ? (int)rs->r[0].code : PENDING_CODES;
    for (size_t i = 0; i < rs->n; i++) {
        struct reason *r = &rs->r[i];
        yyjson_mut_val *o;

        if (r->code == PENDING_INSUFFICIENT && same(r->b, "none"))
            snprintf(r->msg, sizeof(r->msg),
                     "the pod asks for %s, and none of the %zu %s it may go to offers it", r->a,
                     r->n_nodes, nodes_word(r->n_nodes));
        else if (r->msg[0] == '\0')
            reason_text(&p, r, r->msg, sizeof(r->msg));
        o = json_pack(doc, "{s:s, s:s, s:o, s:I}", "code", code_names[r->code], "message", r->msg,
                      "nodes", r->nodes, "nodeCount", (int64_t)r->n_nodes);
        if (o == NULL || !yyjson_mut_arr_append(arr, o))
            goto out;
    }
    rc = 0;
out:
    free(p.cands);
    free(rs);
    return rc;
}

/* ---- which pods ---- */

enum want_kind { WANT_POD, WANT_RS, WANT_DEPLOY, WANT_STS, WANT_JOB };

struct want {
    enum want_kind kind;
    const char *name; /* in arg */
    const char *arg;
    bool hit;
};

static const struct {
    const char *word;
    enum want_kind kind;
} want_words[] = {
    {"pod", WANT_POD},           {"pods", WANT_POD},           {"po", WANT_POD},
    {"replicaset", WANT_RS},     {"replicasets", WANT_RS},     {"rs", WANT_RS},
    {"deployment", WANT_DEPLOY}, {"deployments", WANT_DEPLOY}, {"deploy", WANT_DEPLOY},
    {"statefulset", WANT_STS},   {"statefulsets", WANT_STS},   {"sts", WANT_STS},
    {"job", WANT_JOB},           {"jobs", WANT_JOB},
};

/* The owner kinds of waiter keys, by want_kind (pods have none). */
static const char *const owner_kind[] = {[WANT_POD] = "Pod",
                                         [WANT_RS] = "ReplicaSet",
                                         [WANT_DEPLOY] = "Deployment",
                                         [WANT_STS] = "StatefulSet",
                                         [WANT_JOB] = "Job"};

static int want_parse(const char *arg, struct want *w, struct diag *d)
{
    const char *slash = strchr(arg, '/');
    size_t n = slash ? (size_t)(slash - arg) : 0;

    w->arg = arg;
    w->hit = false;
    w->kind = WANT_POD;
    w->name = slash ? slash + 1 : arg;
    if (slash != NULL) {
        size_t i;

        for (i = 0; i < sizeof(want_words) / sizeof(want_words[0]); i++) {
            if (strlen(want_words[i].word) == n && strncasecmp(want_words[i].word, arg, n) == 0)
                break;
        }
        if (i == sizeof(want_words) / sizeof(want_words[0])) {
            diag_set(d, NULL, 0, 0,
                     "%.200s: not a kind gpuadmit explains (pod, replicaset, deployment, "
                     "statefulset, job)",
                     arg);
            return -1;
        }
        w->kind = want_words[i].kind;
    }
    if (w->name[0] == '\0' || strchr(w->name, '/') != NULL) {
        diag_set(d, NULL, 0, 0, "%.200s: give NAME or KIND/NAME", arg);
        return -1;
    }
    return 0;
}

/* A key's parts: "NS/NAME" (pods, workloads) and "Kind/NS/NAME" (waiters). */
static bool key_ns_is(const char *key, const char *ns)
{
    size_t n = ns != NULL ? strlen(ns) : 0;

    return ns == NULL || (strncmp(key, ns, n) == 0 && key[n] == '/');
}

static const char *key_name(const char *key)
{
    const char *slash = strrchr(key, '/');

    return slash ? slash + 1 : key;
}

/* The Deployment that controls ReplicaSet NS/NAME (key), or NULL. */
static const char *rs_deployment(const struct cluster *c, const char *key)
{
    const struct workload *w = table_get(&c->kinds[CLUSTER_REPLICASETS], key);

    return w != NULL ? w->owner_deployment : NULL;
}

/* The owner of a pod: its waiter key's kind and "NS/NAME", or false for none. */
static bool owner_of(const struct vpod *v, char *kind, size_t klen, const char **nsname)
{
    const char *slash = v->owner ? strchr(v->owner, '/') : NULL;

    if (slash == NULL || strncmp(v->owner, "Pod/", 4) == 0)
        return false;
    snprintf(kind, klen, "%.*s", (int)(slash - v->owner), v->owner);
    *nsname = slash + 1;
    return true;
}

static bool want_matches(const struct cluster *c, const struct want *w, const struct vpod *v)
{
    char kind[32];
    const char *nsname, *dep;

    if (w->kind == WANT_POD)
        return strcmp(key_name(v->key), w->name) == 0;
    if (!owner_of(v, kind, sizeof(kind), &nsname))
        return false;
    if (w->kind == WANT_DEPLOY)
        return strcmp(kind, "ReplicaSet") == 0 && (dep = rs_deployment(c, nsname)) != NULL &&
               strcmp(dep, w->name) == 0;
    return strcmp(kind, owner_kind[w->kind]) == 0 && strcmp(key_name(nsname), w->name) == 0;
}

/* What the view holds of a name that matched no Pending pod: a message into buf, or false when
 * it holds nothing of it. */
static bool not_pending(const struct cluster *c, const char *ns, const struct want *w, char *buf,
                        size_t len)
{
    const struct table *t;
    enum cluster_kind k;

    if (w->kind == WANT_POD) {
        t = &c->kinds[CLUSTER_PODS];
        for (size_t i = 0; i < t->n_buckets; i++)
            for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
                const struct vpod *v = e->value;

                if (key_ns_is(e->key, ns) && strcmp(key_name(e->key), w->name) == 0) {
                    snprintf(buf, len, "pod %.300s is bound to node %.300s", e->key, v->node);
                    return true;
                }
            }
        return false;
    }
    k = w->kind == WANT_RS       ? CLUSTER_REPLICASETS
        : w->kind == WANT_DEPLOY ? CLUSTER_DEPLOYMENTS
        : w->kind == WANT_STS    ? CLUSTER_STATEFULSETS
                                 : CLUSTER_JOBS;
    t = &c->kinds[k];
    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
            if (key_ns_is(e->key, ns) && strcmp(key_name(e->key), w->name) == 0) {
                snprintf(buf, len, "%s %.300s: none of its GPU pods is Pending",
                         owner_kind[w->kind], e->key);
                return true;
            }
        }
    return false;
}

static int pod_cmp(const void *a, const void *b)
{
    const struct vpod *const *x = a, *const *y = b;
    int r = strcmp((*x)->owner ? (*x)->owner : "", (*y)->owner ? (*y)->owner : "");
    const char *sx = strchr((*x)->key, '/'), *sy = strchr((*y)->key, '/');
    size_t nx = sx ? (size_t)(sx - (*x)->key) : 0, ny = sy ? (size_t)(sy - (*y)->key) : 0;
    int n = strncmp((*x)->key, (*y)->key, nx < ny ? nx : ny);

    if (n != 0 || nx != ny)
        return n != 0 ? n : (nx < ny ? -1 : 1);
    return r != 0 ? r : strcmp((*x)->key, (*y)->key);
}

/* The JSON of one Pending pod. */
static yyjson_mut_val *pod_json(const struct cluster *c, const struct vpod *v,
                                const struct scene *sc, yyjson_mut_doc *doc)
{
    const char *slash = strchr(v->key, '/'), *nsname;
    yyjson_mut_val *reasons = yyjson_mut_arr(doc), *fits = yyjson_mut_arr(doc);
    yyjson_mut_val *res = yyjson_mut_obj(doc), *owner = NULL, *sched = NULL, *o;
    char kind[32], ns[256];
    const struct waiter *w;

    int primary;

    if (reasons == NULL || fits == NULL || res == NULL ||
        explain_pod(c, v, sc, doc, reasons, fits, &primary) < 0)
        return NULL;
    for (size_t i = 0; i < v->n_demand; i++)
        if (!yyjson_mut_obj_add(res, yyjson_mut_strcpy(doc, v->demand[i].name),
                                yyjson_mut_sint(doc, v->demand[i].n)))
            return NULL;
    if (owner_of(v, kind, sizeof(kind), &nsname)) {
        w = table_get(&c->waiters, v->owner);
        owner = json_pack(doc, "{s:s, s:s, s:s*, s:I}", "kind", kind, "name", key_name(nsname),
                          "deployment",
                          strcmp(kind, "ReplicaSet") == 0 ? rs_deployment(c, nsname) : NULL, "pods",
                          w == NULL            ? (int64_t)0
                          : w->wants > w->pods ? w->wants
                                               : w->pods);
        if (owner == NULL)
            return NULL;
    }
    if (v->pend->cond_reason != NULL || v->pend->cond_message != NULL)
        if ((sched = json_pack(doc, "{s:s, s:s}", "reason", or_empty(v->pend->cond_reason),
                               "message", v->pend->cond_message ? v->pend->cond_message->s : "")) ==
            NULL)
            return NULL;
    snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - v->key) : 0, v->key);
    o = json_pack(doc, "{s:s, s:s, s:o?, s:o?, s:s*, s:o, s:o, s:o}", "namespace", ns, "name",
                  slash ? slash + 1 : v->key, "owner", owner, "scheduler", sched, "nominatedNode",
                  v->pend->nominated, "resources", res, "reasons", reasons, "fits", fits);
    return o;
}

yyjson_mut_doc *pending_explain(struct cluster *c, const struct pending_query *q, struct diag *d)
{
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *pods, *notp, *notf, *root;
    struct want *wants = NULL;
    const struct vpod **sel = NULL;
    struct scene sc = {0};
    size_t n_sel = 0;
    const struct table *t;
    int rc = -1;

    if (doc == NULL || (q->n_names > 0 && (wants = calloc(q->n_names, sizeof(*wants))) == NULL)) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < q->n_names; i++)
        if (want_parse(q->names[i], &wants[i], d) < 0)
            goto fail;
    pods = yyjson_mut_arr(doc);
    notp = yyjson_mut_arr(doc);
    notf = yyjson_mut_arr(doc);
    pthread_rwlock_rdlock(&c->lock);
    t = &c->kinds[CLUSTER_PODS];
    sel = t->n ? malloc(t->n * sizeof(*sel)) : NULL;
    if (pods == NULL || notp == NULL || notf == NULL || (t->n > 0 && sel == NULL) ||
        scene_build(c, &sc) < 0)
        goto unlock;
    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
            const struct vpod *v = e->value;
            bool hit = q->n_names == 0;

            if (v->pend == NULL || !key_ns_is(e->key, q->ns))
                continue;
            for (size_t k = 0; k < q->n_names; k++)
                if (want_matches(c, &wants[k], v))
                    hit = wants[k].hit = true;
            if (hit)
                sel[n_sel++] = v;
        }
    if (n_sel > 1)
        qsort(sel, n_sel, sizeof(*sel), pod_cmp);
    for (size_t i = 0; i < n_sel && (q->max_pods == 0 || i < q->max_pods); i++) {
        yyjson_mut_val *o = pod_json(c, sel[i], &sc, doc);

        if (o == NULL || !yyjson_mut_arr_append(pods, o))
            goto unlock;
    }
    for (size_t k = 0; k < q->n_names; k++) {
        char msg[MSG_MAX];

        if (wants[k].hit)
            continue;
        if (not_pending(c, q->ns, &wants[k], msg, sizeof(msg))) {
            if (!yyjson_mut_arr_append(
                    notp, json_pack(doc, "{s:s, s:s}", "name", wants[k].arg, "message", msg)))
                goto unlock;
        } else if (!yyjson_mut_arr_add_strcpy(doc, notf, wants[k].arg)) {
            goto unlock;
        }
    }
    rc = 0;
unlock:
    pthread_rwlock_unlock(&c->lock);
    if (rc == 0 && (root = json_pack(
                        doc, "{s:o, s:I, s:o, s:o}", "pods", pods, "morePods",
                        (int64_t)(q->max_pods > 0 && n_sel > q->max_pods ? n_sel - q->max_pods : 0),
                        "notPending", notp, "notFound", notf)) != NULL)
        yyjson_mut_doc_set_root(doc, root);
    else if (rc == 0)
        rc = -1;
    if (rc < 0)
        diag_set(d, NULL, 0, 0, "out of memory explaining the Pending pods");
fail:
    free(wants);
    free(sel);
    scene_free(&sc);
    if (rc < 0) {
        yyjson_mut_doc_free(doc);
        return NULL;
    }
    return doc;
}

/* ---- counting ---- */

/* A hash of a JSON value, in its document's order (the pods of one template keep one order). */
static uint64_t val_hash(uint64_t h, yyjson_val *v, unsigned depth)
{
    yyjson_val *k, *x;
    size_t i, max;
    const char *str;

    h = (h ^ yyjson_get_type(v)) * 1099511628211ull;
    if (depth > VIEW_DEPTH_MAX)
        return h;
    switch (yyjson_get_type(v)) {
    case YYJSON_TYPE_OBJ:
        yyjson_obj_foreach (v, i, max, k, x)
            h = val_hash(val_hash(h, k, depth + 1), x, depth + 1);
        break;
    case YYJSON_TYPE_ARR:
        yyjson_arr_foreach (v, i, max, x)
            h = val_hash(h, x, depth + 1);
        break;
    case YYJSON_TYPE_STR:
        str = yyjson_get_str(v);
        for (i = 0; i < yyjson_get_len(v); i++)
            h = (h ^ (unsigned char)str[i]) * 1099511628211ull;
        break;
    case YYJSON_TYPE_NUM:
    case YYJSON_TYPE_BOOL: h = (h ^ (uint64_t)yyjson_get_uint(v)) * 1099511628211ull; break;
    default: break;
    }
    return h;
}

/* What a pod's explanation depends on besides the view: its spec, priority and scheduling. */
struct said {
    uint64_t hash;
    const struct vpod *v; /* the first pod of that key, whose explanation stands for it */
    int primary;
};

static bool says_same(const struct vpod *a, const struct vpod *b)
{
    yyjson_val *sa = a->pend->spec ? yyjson_doc_get_root(a->pend->spec->doc) : NULL;
    yyjson_val *sb = b->pend->spec ? yyjson_doc_get_root(b->pend->spec->doc) : NULL;

    /* a nominated pod's replay leaves itself out of its node's nominated pods: told alone */
    return a->pend->nominated == NULL && b->pend->nominated == NULL && a->priority == b->priority &&
           a->gated == b->gated && same(a->pend->scheduler, b->pend->scheduler) &&
           same(a->pend->gate, b->pend->gate) && a->n_demand == b->n_demand &&
           (sa == sb || (sa && sb && yyjson_equals(sa, sb)));
}

static uint64_t pod_hash(const struct vpod *v)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)v->priority;

    if (v->pend->spec != NULL)
        h = val_hash(h, yyjson_doc_get_root(v->pend->spec->doc), 0);
    return h ^ ((uint64_t)v->gated << 1) ^ (v->pend->scheduler ? 4u : 0u);
}

int pending_count(struct cluster *c, uint64_t counts[PENDING_COUNTS])
{
    const struct table *t = &c->kinds[CLUSTER_PODS];
    struct scene sc = {0};
    struct said *memo = NULL;
    size_t cap = 0, used = 0;
    int rc = -1;

    memset(counts, 0, sizeof(counts[0]) * PENDING_COUNTS);
    pthread_rwlock_rdlock(&c->lock);
    if (scene_build(c, &sc) < 0)
        goto out;
    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next) {
            const struct vpod *v = e->value;
            uint64_t h;
            size_t at;

            if (v->pend == NULL)
                continue;
            if (used * 2 >= cap) { /* grow, keeping the load at most half */
                size_t ncap = cap ? cap * 2 : 64;
                struct said *nm = calloc(ncap, sizeof(*nm));

                if (nm == NULL)
                    goto out;
                for (size_t k = 0; k < cap; k++) {
                    if (memo[k].v == NULL)
                        continue;
                    for (at = memo[k].hash & (ncap - 1); nm[at].v != NULL;
                         at = (at + 1) & (ncap - 1))
                        ;
                    nm[at] = memo[k];
                }
                free(memo);
                memo = nm;
                cap = ncap;
            }
            h = pod_hash(v);
            for (at = h & (cap - 1); memo[at].v != NULL; at = (at + 1) & (cap - 1))
                if (memo[at].hash == h && says_same(memo[at].v, v))
                    break;
            if (memo[at].v == NULL && used >= PENDING_COUNT_SPECS_MAX) {
                counts[PENDING_NOT_JUDGED]++; /* past the bound of one scrape */
                continue;
            }
            if (memo[at].v == NULL) {
                yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
                yyjson_mut_val *arr = doc ? yyjson_mut_arr(doc) : NULL;
                yyjson_mut_val *fits = doc ? yyjson_mut_arr(doc) : NULL;
                int primary = PENDING_CODES;
                int r = arr && fits ? explain_pod(c, v, &sc, doc, arr, fits, &primary) : -1;

                yyjson_mut_doc_free(doc);
                if (r < 0)
                    goto out;
                memo[at] = (struct said){h, v, primary};
                used++;
            }
            counts[memo[at].primary]++;
        }
    rc = 0;
out:
    pthread_rwlock_unlock(&c->lock);
    free(memo);
    scene_free(&sc);
    return rc;
}
