/*
 * growth.c: what the node autoscalers the view reads may still add for a pod template (see
 * growth.h). Judged only when a decision needs it (a workload that does not fit the nodes
 * there are): it reads every node once per CA node group and NodePool.
 */
#include "growth.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "placement.h"

static int64_t sat_add(int64_t a, int64_t b)
{
    return a >= GROWTH_UNBOUNDED - b ? GROWTH_UNBOUNDED : a + b;
}

static int64_t sat_mul(int64_t nodes, int64_t per)
{
    if (nodes <= 0 || per <= 0)
        return 0;
    return nodes >= GROWTH_UNBOUNDED / per ? GROWTH_UNBOUNDED : nodes * per;
}

static const char *label_of(yyjson_val *labels, const char *key)
{
    return yyjson_get_str(yyjson_obj_get(labels, key));
}

/* Taints a template node does not keep: Cluster Autoscaler's own, which its template node
 * drops (simulator SanitizeTaints: ToBeDeleted, DeletionCandidate, and its startup-, status-
 * and ignore-taint prefixes), Karpenter's while it starts or disrupts a node
 * (pkg/apis/v1/taints.go), and the cloud controller's until it initialises one. */
static bool passing_taint(const char *key)
{
    static const char *const exact[] = {"ToBeDeletedByClusterAutoscaler",
                                        "DeletionCandidateOfClusterAutoscaler",
                                        "karpenter.sh/disrupted", "karpenter.sh/unregistered",
                                        "node.cloudprovider.kubernetes.io/uninitialized"};
    static const char *const prefix[] = {"startup-taint.cluster-autoscaler.kubernetes.io/",
                                         "status-taint.cluster-autoscaler.kubernetes.io/",
                                         "ignore-taint.cluster-autoscaler.kubernetes.io/"};

    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strcmp(key, exact[i]) == 0)
            return true;
    for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
        if (strncmp(key, prefix[i], strlen(prefix[i])) == 0)
            return true;
    return false;
}

/* Whether n advertises the first GPU resource asked (capacity or allocatable). */
static bool sized(const struct node *n, const struct growth_ask *ask)
{
    const struct node_res *nr = node_res_find(n, ask[0].rn);

    return nr != NULL && (nr->capacity > 0 || nr->allocatable > 0);
}

/* Whether n is a GPU node whose GPUs are still to come: it advertises no NVIDIA resource while
 * a label says it has GPUs (cluster_node_gpu_label). Cluster Autoscaler does not take such a
 * node as its group's template (utils/gpu NodeHasGpu, processors/customresources
 * FilterOutNodesWithUnreadyResources, with the cloud's GPULabel()). A node without either, and
 * without GPUs, is one of a group whose nodes hold none. (A GPU node whose plugin is up and
 * serves other resources, renamed or MIG, is taken as it is: what a new node of it offers the
 * scheduler.) */
static bool gpus_to_come(const struct node *n, const struct growth_ask *ask)
{
    return !sized(n, ask) && cluster_node_gpu_label(n) != NULL && !cluster_node_offers_nvidia(n);
}

/* Whether a new node like n admits pods of spec: its taints but the lifecycle ones, its labels
 * (nodeSelector and required node affinity). */
static bool admits(yyjson_val *spec, const struct node *n)
{
    yyjson_val *tols = yyjson_obj_get(spec, "tolerations");
    const char *key, *value;

    for (size_t i = 0; i < n->n_taints; i++) {
        const struct node_taint *t = &n->taints[i];

        /* a new node is Ready and not cordoned: the lifecycle taints are not its own, nor
         * those the autoscalers and the cloud put on a node while they start or remove it */
        if ((strcmp(t->effect, "NoSchedule") == 0 || strcmp(t->effect, "NoExecute") == 0) &&
            !placement_lifecycle_taint(t->key) && !passing_taint(t->key) &&
            !placement_tolerated(tols, t->key, t->value, t->effect))
            return false;
    }
    return !placement_selector_miss(spec, n->labels, &key, &value) &&
           placement_affinity_ok(spec, n->name, n->labels);
}

/* Pods of the asks n's resources hold, headroom kept free on each; a template's resources are
 * found by name (they are not interned), a node's by the interned name. */
static int64_t res_pods(const struct growth_ask *ask, size_t n_ask, const struct node *n,
                        int64_t headroom, bool by_name)
{
    int64_t pods = INT64_MAX;

    for (size_t i = 0; i < n_ask; i++) {
        const struct node_res *nr = NULL;
        int64_t has;

        if (by_name) {
            for (size_t r = 0; r < n->n_res && nr == NULL; r++)
                if (strcmp(n->res[r].name, ask[i].name) == 0)
                    nr = &n->res[r];
        } else {
            nr = node_res_find(n, ask[i].rn);
        }
        if (nr == NULL || ask[i].per_pod <= 0)
            return 0;
        /* a new node's device plugin advertises all its GPUs: an unhealthy one of this node,
         * or a plugin not up yet, is not the template's */
        has = (nr->allocatable > nr->capacity ? nr->allocatable : nr->capacity) - headroom;
        if (has < ask[i].per_pod)
            return 0;
        if (has / ask[i].per_pod < pods)
            pods = has / ask[i].per_pod;
    }
    return n_ask > 0 ? pods : 0;
}

int64_t growth_node_pods(yyjson_val *spec, const struct growth_ask *ask, size_t n_ask,
                         const struct node *n, int64_t headroom)
{
    return admits(spec, n) ? res_pods(ask, n_ask, n, headroom, false) : 0;
}

/* The policy's template for CA node group name, or NULL. */
static const struct growth_template *template_for(const struct growth_policy *pol, const char *name)
{
    for (size_t i = 0; pol != NULL && i < pol->n_templates; i++)
        if (pol->templates[i].glob != NULL && fnmatch(pol->templates[i].glob, name, 0) == 0)
            return &pol->templates[i];
    return NULL;
}

void growth_templates_free(struct growth_template *t, size_t n)
{
    for (size_t i = 0; t != NULL && i < n; i++) {
        free(t[i].glob);
        yyjson_doc_free(t[i].node.labels_doc);
        for (size_t k = 0; k < t[i].node.n_taints; k++) {
            free(t[i].node.taints[k].key);
            free(t[i].node.taints[k].value);
            free(t[i].node.taints[k].effect);
        }
        free(t[i].node.taints);
        for (size_t r = 0; r < t[i].node.n_res; r++)
            free((char *)t[i].node.res[r].name);
        free(t[i].node.res);
    }
    free(t);
}

/* Whether node n is CA node group g's: autoscaler.h's provider labels, or one of the labels
 * the policy names, whose value is g's Id() or its last path segment. */
static bool group_node(const struct ca_group *g, const struct node *n,
                       const struct strlist *group_labels)
{
    const char *seg = strrchr(g->name, '/');

    if (ca_group_has_node(g, n->name, n->labels))
        return true;
    if (group_labels == NULL || label_of(n->labels, "karpenter.sh/nodepool") != NULL)
        return false;
    for (size_t i = 0; i < group_labels->n; i++) {
        const char *v = label_of(n->labels, group_labels->v[i]);

        if (v != NULL && v[0] != '\0' &&
            (strcmp(v, g->name) == 0 || (seg != NULL && strcmp(v, seg + 1) == 0)))
            return true;
    }
    return false;
}

/* Keeps gg among the GROWTH_GROUPS_MAX named, growing first, then by state and name. */
static void keep(struct growth *out, const struct growth_group *gg)
{
    size_t at = out->n;

    while (at > 0 &&
           (out->g[at - 1].state > gg->state ||
            (out->g[at - 1].state == gg->state && strcmp(out->g[at - 1].name, gg->name) > 0)))
        at--;
    if (at == GROWTH_GROUPS_MAX) {
        out->n_more++;
        return;
    }
    if (out->n == GROWTH_GROUPS_MAX)
        out->n_more++; /* the last named makes room */
    else
        out->n++;
    memmove(&out->g[at + 1], &out->g[at], (out->n - 1 - at) * sizeof(out->g[0]));
    out->g[at] = *gg;
}

static void count(struct growth *out, const struct growth_group *gg)
{
    out->pods_now = sat_add(out->pods_now, sat_mul(gg->nodes_now, gg->per_node_now));
    out->pods_ever = sat_add(out->pods_ever, sat_mul(gg->nodes_ever, gg->per_node));
    keep(out, gg);
}

/* Whether this is the first group that cannot be sized: the one named in unknown_why. */
static bool first_unknown(struct growth *out)
{
    bool first = !out->unknown;

    out->unknown = true;
    return first;
}

double growth_ca_age_s(const char *s, double now)
{
    struct tm tm;
    int y, mo, d, h, mi, sec, n = 0;
    long off = 0;
    const char *z;

    if (s == NULL ||
        sscanf(s, "%4d-%2d-%2d%*[ T]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0)
        return -1;
    /* fractional seconds, then " +HHMM" (Go's String()) or "Z" (RFC 3339) */
    z = s + n;
    if (*z == '.')
        while (*++z >= '0' && *z <= '9')
            ;
    while (*z == ' ')
        z++;
    if (z[0] == '+' || z[0] == '-') {
        /* [+-]HHMM (Go's -0700) or [+-]HH:MM */
        const char *m;

        /* each byte read only once the one before it is a digit: never past the NUL */
        if (!(z[1] >= '0' && z[1] <= '9' && z[2] >= '0' && z[2] <= '9'))
            return -1;
        m = z + 3 + (z[3] == ':');
        if (!(m[0] >= '0' && m[0] <= '9' && m[1] >= '0' && m[1] <= '9'))
            return -1;
        off = (((z[1] - '0') * 10L + (z[2] - '0')) * 60L + (m[0] - '0') * 10L + (m[1] - '0')) *
              60L * (z[0] == '-' ? -1 : 1);
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    return now - ((double)timegm(&tm) - (double)off);
}

/* Cluster Autoscaler's node groups. */
static void ca_groups(const struct cluster *c, yyjson_val *spec, const struct growth_ask *ask,
                      size_t n_ask, int64_t headroom, const struct growth_policy *pol, double now,
                      struct growth *out)
{
    const struct table *t = &c->kinds[CLUSTER_AUTOSCALER_STATUS];
    const struct table *nodes = &c->kinds[CLUSTER_NODES];

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vautoscaler *a = e->value;
            double age = growth_ca_age_s(a->updated, now);

            if (!c->snapshot && age > GROWTH_STALE_S) {
                snprintf(out->stale_why, sizeof(out->stale_why),
                         "the Cluster Autoscaler status was last updated %.0f minutes ago (%.64s): "
                         "Cluster Autoscaler is not running, and its node groups are not counted",
                         age / 60, a->updated);
                continue;
            }
            out->readable = true;
            if (!a->ok) {
                if (first_unknown(out))
                    snprintf(out->unknown_why, sizeof(out->unknown_why),
                             "the Cluster Autoscaler status does not parse (%.300s)", a->error);
                continue;
            }
            if (strcmp(a->st.autoscaler_status, "Initializing") == 0) {
                if (first_unknown(out))
                    snprintf(out->unknown_why, sizeof(out->unknown_why),
                             "Cluster Autoscaler is initializing");
                continue;
            }
            for (size_t g = 0; g < a->st.n_groups; g++) {
                const struct ca_group *grp = &a->st.groups[g];
                struct growth_group gg;
                int64_t left;

                size_t n_sized = 0;

                memset(&gg, 0, sizeof(gg));
                for (size_t i = 0; i < nodes->n_buckets; i++)
                    for (const struct table_entry *ne = nodes->buckets[i]; ne; ne = ne->next) {
                        const struct node *n = ne->value;
                        int64_t p;

                        if (!group_node(grp, n, pol ? pol->group_labels : NULL))
                            continue;
                        gg.in_view++;
                        if (gpus_to_come(n, ask))
                            continue; /* its device plugin is not up: no template */
                        n_sized++;
                        if ((p = growth_node_pods(spec, ask, n_ask, n, 0)) > gg.per_node)
                            gg.per_node = p;
                        if ((p = growth_node_pods(spec, ask, n_ask, n, headroom)) > gg.per_node_now)
                            gg.per_node_now = p;
                    }
                if (n_sized == 0) {
                    /* scaled to zero, nodes no label names it by, or GPU nodes whose device
                     * plugin is not up: CA sizes it from the cloud's template, which gpuadmit
                     * reads only as the policy writes it */
                    const struct growth_template *tp = template_for(pol, grp->name);

                    if (tp == NULL) {
                        if (grp->max_size > 0 && first_unknown(out))
                            snprintf(out->unknown_why, sizeof(out->unknown_why),
                                     "node group %.255s has no node in the view to show what "
                                     "its nodes hold (a group at zero, nodes no label maps to "
                                     "it, or GPU nodes whose device plugin is not up); describe "
                                     "it in the capacity rule's nodeGroups",
                                     grp->name);
                        continue;
                    }
                    if (admits(spec, &tp->node)) {
                        gg.per_node = res_pods(ask, n_ask, &tp->node, 0, true);
                        gg.per_node_now = res_pods(ask, n_ask, &tp->node, headroom, true);
                    }
                }
                if (gg.per_node == 0)
                    continue; /* its nodes would not take the pods */
                snprintf(gg.name, sizeof(gg.name), "%s", grp->name);
                gg.target = grp->target;
                gg.max_size = grp->max_size;
                /* CA grows a group to maxSize; its nodes on their way (target above what the
                 * view holds) come too */
                left = grp->max_size > gg.in_view ? grp->max_size - gg.in_view : 0;
                gg.nodes_ever = left;
                if (a->st.cluster_unhealthy) {
                    gg.state = GROWTH_PAUSED;
                } else if (!grp->healthy || strcmp(grp->scale_up, "Unhealthy") == 0) {
                    gg.state = GROWTH_UNHEALTHY;
                } else if (strcmp(grp->scale_up, "Backoff") == 0) {
                    gg.state = GROWTH_BACKOFF;
                } else {
                    gg.state = grp->target >= grp->max_size ? GROWTH_AT_MAX : GROWTH_GROWS;
                    gg.nodes_now = left;
                }
                if (gg.state == GROWTH_AT_MAX && left > 0)
                    gg.state = GROWTH_GROWS; /* at its target max, its last nodes on the way */
                if (gg.state == GROWTH_GROWS && left == 0)
                    gg.state = GROWTH_AT_MAX;
                if (gg.target < gg.in_view) /* scaling down: its nodes are what it has */
                    gg.target = gg.in_view;
                if ((gg.state == GROWTH_BACKOFF || gg.state == GROWTH_UNHEALTHY) &&
                    (grp->backoff_code[0] || grp->backoff_msg[0]))
                    snprintf(gg.why, sizeof(gg.why), " (%.63s%s%.511s)", grp->backoff_code,
                             grp->backoff_code[0] && grp->backoff_msg[0] ? ": " : "",
                             grp->backoff_msg);
                count(out, &gg);
            }
        }
}

/* Whether every node of p carries label key: its template labels set it, or it is
 * karpenter.sh/nodepool; with value, to that value. */
static bool pool_sets(const struct karpenter_pool *p, const char *key, const char *value)
{
    if (strcmp(key, "karpenter.sh/nodepool") == 0)
        return value == NULL || strcmp(value, p->name) == 0;
    for (size_t i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].key, key) == 0)
            return value == NULL || strcmp(p->labels[i].value, value) == 0;
    return false;
}

/* Whether every node of p has label key with one of values: its template fixes it to one, or
 * a requirement In lists only values among them. */
static bool pool_fixed_in(const struct karpenter_pool *p, const char *key, yyjson_val *values)
{
    yyjson_val *v;
    size_t i, max;

    yyjson_arr_foreach (values, i, max, v) {
        if (pool_sets(p, key, yyjson_get_str(v)))
            return true;
    }
    for (size_t r = 0; r < p->n_reqs; r++) {
        const struct karpenter_req *q = &p->reqs[r];
        bool inside = q->n_values > 0;

        if (strcmp(q->key, key) != 0 || strcmp(q->op, "In") != 0)
            continue;
        for (size_t k = 0; inside && k < q->n_values; k++) {
            bool found = false;

            yyjson_arr_foreach (values, i, max, v) {
                found = found || (yyjson_is_str(v) && strcmp(yyjson_get_str(v), q->values[k]) == 0);
            }
            inside = found;
        }
        if (inside)
            return true;
    }
    return false;
}

/* Whether a node of p may satisfy one term of a required node affinity (a
 * NodeSelectorTerm): each expression, In by one of its values, Exists by a label the pool may
 * carry, the others taken as satisfiable; a term with matchFields names existing nodes, never a
 * new one, and a term with no expression matches no node (the scheduler's own reading). */
static bool pool_term(const struct karpenter_pool *p, yyjson_val *term)
{
    yyjson_val *exprs = yyjson_obj_get(term, "matchExpressions"), *x, *v;
    size_t i, max, j, vmax;

    if (yyjson_arr_size(yyjson_obj_get(term, "matchFields")) > 0 || yyjson_arr_size(exprs) == 0)
        return false;
    yyjson_arr_foreach (exprs, i, max, x) {
        const char *key = yyjson_get_str(yyjson_obj_get(x, "key"));
        yyjson_val *op = yyjson_obj_get(x, "operator");
        bool any = false;

        if (key == NULL)
            return false;
        if (json_str_is(op, "Exists") && !karpenter_pool_may_have(p, key))
            return false;
        /* a label every node of the pool carries: its template's, karpenter.sh/nodepool */
        if (json_str_is(op, "DoesNotExist") && pool_sets(p, key, NULL))
            return false;
        if (json_str_is(op, "NotIn")) {
            bool all = yyjson_arr_size(yyjson_obj_get(x, "values")) > 0;

            /* only when the pool fixes the label to one of the values */
            yyjson_arr_foreach (yyjson_obj_get(x, "values"), j, vmax, v)
                all = all && yyjson_is_str(v);
            if (all && pool_fixed_in(p, key, yyjson_obj_get(x, "values")))
                return false;
            continue;
        }
        if (!json_str_is(op, "In"))
            continue;
        yyjson_arr_foreach (yyjson_obj_get(x, "values"), j, vmax, v) {
            any = any || (yyjson_is_str(v) && karpenter_pool_may_label(p, key, yyjson_get_str(v)));
        }
        if (!any)
            return false;
    }
    return true;
}

/* Whether a node of p may satisfy spec's required node affinity (one of its terms). */
static bool pool_affinity(const struct karpenter_pool *p, yyjson_val *spec)
{
    yyjson_val *na = yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity");
    yyjson_val *req = yyjson_obj_get(na, "requiredDuringSchedulingIgnoredDuringExecution"), *t;
    size_t i, max;

    if (req == NULL || yyjson_is_null(req))
        return true;
    yyjson_arr_foreach (yyjson_obj_get(req, "nodeSelectorTerms"), i, max, t) {
        if (pool_term(p, t))
            return true;
    }
    return false;
}

/* Whether a node of NodePool p would take pods of spec: its taints and the labels its
 * nodeSelector asks for (growth.h); why not, into why (len bytes), when it would not. */
static bool pool_admits(const struct karpenter_pool *p, yyjson_val *spec, char *why, size_t len)
{
    yyjson_val *tols = yyjson_obj_get(spec, "tolerations");
    yyjson_val *sel = yyjson_obj_get(spec, "nodeSelector"), *k, *v;
    size_t i, max;

    for (size_t x = 0; x < p->n_taints; x++) {
        const struct karpenter_taint *tt = &p->taints[x];

        if ((strcmp(tt->effect, "NoSchedule") == 0 || strcmp(tt->effect, "NoExecute") == 0) &&
            !placement_tolerated(tols, tt->key, tt->value ? tt->value : "", tt->effect)) {
            snprintf(why, len,
                     "NodePool %.253s taints its nodes %.100s%s%.100s:%.20s, which the pods do "
                     "not tolerate",
                     p->name, tt->key, tt->value ? "=" : "", tt->value ? tt->value : "",
                     tt->effect);
            return false;
        }
    }
    /* the macro steps past a NULL: an object only */
    if (yyjson_is_obj(sel))
        yyjson_obj_foreach (sel, i, max, k, v) {
            if (yyjson_is_str(k) && yyjson_is_str(v) &&
                !karpenter_pool_may_label(p, yyjson_get_str(k), yyjson_get_str(v))) {
                /* Karpenter: "label ... does not have known values"
                 * (pkg/scheduling/requirements.go) */
                snprintf(
                    why, len,
                    "NodePool %.253s does not give its nodes the label %.150s=%.63s that the "
                    "pods' nodeSelector (as the policy patches it) asks for: add it to the pool's "
                    "spec.template.metadata.labels, or its requirements for a well-known label; "
                    "Karpenter launches no node for the pods",
                    p->name, yyjson_get_str(k), yyjson_get_str(v));
                return false;
            }
        }
    if (!pool_affinity(p, spec)) {
        /* Karpenter reads required node affinity as requirements, as it does the selector */
        snprintf(why, len,
                 "NodePool %.253s's nodes would not match the pods' required node affinity (its "
                 "labels and spec.template.spec.requirements allow no such node): Karpenter "
                 "launches no node for the pods",
                 p->name);
        return false;
    }
    return true;
}

/* Karpenter's NodePools. */
static void nodepools(const struct cluster *c, yyjson_val *spec, const struct growth_ask *ask,
                      size_t n_ask, int64_t headroom, struct growth *out)
{
    const struct table *t = &c->kinds[CLUSTER_NODEPOOLS];
    const struct table *nodes = &c->kinds[CLUSTER_NODES];

    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vnodepool *np = e->value;
            const struct karpenter_pool *p = &np->p;
            int64_t gpn[CAPACITY_RESOURCES_MAX] = {0}, nodes_max = GROWTH_UNBOUNDED;
            struct growth_group gg;
            bool known = false, fits = true;
            size_t na = n_ask < CAPACITY_RESOURCES_MAX ? n_ask : CAPACITY_RESOURCES_MAX;
            size_t n_sized = 0;
            int64_t cpu = 0, mem = 0; /* the largest of its nodes', milli-units */

            out->readable = true;
            if (!np->ok) {
                if (first_unknown(out))
                    snprintf(out->unknown_why, sizeof(out->unknown_why),
                             "NodePool %.150s does not parse (%.300s)", e->key, np->error);
                continue;
            }
            if (!pool_admits(p, spec, out->miss_why[0] ? NULL : out->miss_why,
                             out->miss_why[0] ? 0 : sizeof(out->miss_why)))
                continue;
            memset(&gg, 0, sizeof(gg));
            gg.nodepool = true;
            snprintf(gg.name, sizeof(gg.name), "%s", p->name);
            /* a new node holds what the pool's nodes hold */
            for (size_t i = 0; i < nodes->n_buckets; i++)
                for (const struct table_entry *ne = nodes->buckets[i]; ne; ne = ne->next) {
                    const struct node *n = ne->value;

                    if (!karpenter_pool_has_node(p, n->labels))
                        continue;
                    gg.in_view++;
                    if (!sized(n, ask))
                        continue; /* its device plugin is not up: no template */
                    n_sized++;
                    cpu = n->cpu_milli > cpu ? n->cpu_milli : cpu;
                    mem = n->memory_milli > mem ? n->memory_milli : mem;
                    for (size_t r = 0; r < na; r++) {
                        const struct node_res *nr = node_res_find(n, ask[r].rn);
                        int64_t has = nr == NULL                       ? 0
                                      : nr->allocatable > nr->capacity ? nr->allocatable
                                                                       : nr->capacity;

                        if (has > gpn[r])
                            gpn[r] = has;
                    }
                }
            known = n_sized > 0;
            for (size_t r = 0; r < na; r++) {
                if (!known) /* the smallest node that holds one pod, or what the pool asks */
                    gpn[r] = r == 0 && p->gpu_count_min > ask[r].per_pod ? p->gpu_count_min
                                                                         : ask[r].per_pod;
                if (r == 0 && p->gpu_count_max >= 0 && p->gpu_count_max < ask[r].per_pod)
                    fits = false;
                if (gpn[r] < ask[r].per_pod)
                    fits = false;
            }
            if (!fits)
                continue;
            gg.per_node = INT64_MAX;
            gg.per_node_now = INT64_MAX;
            for (size_t r = 0; r < na; r++) {
                int64_t k = gpn[r] / ask[r].per_pod;
                int64_t kn = gpn[r] > headroom ? (gpn[r] - headroom) / ask[r].per_pod : 0;

                gg.per_node = k < gg.per_node ? k : gg.per_node;
                gg.per_node_now = kn < gg.per_node_now ? kn : gg.per_node_now;
            }
            /* every limit bounds a launch: one spent stops it; GPUs and nodes count whole nodes */
            for (size_t l = 0; l < p->n_limits; l++) {
                const char *res = p->limits[l].name;
                bool bounded;
                int64_t left = karpenter_pool_headroom(p, res, &bounded), n = GROWTH_UNBOUNDED;

                if (!bounded)
                    continue;
                if (strcmp(res, "nodes") == 0)
                    n = left;
                /* a node takes as much cpu and memory as the pool's nodes in the view have;
                 * with none in the view, only a spent limit is judged */
                if (strcmp(res, "cpu") == 0 && cpu > 0)
                    n = left / (cpu < 1000 ? 1 : cpu / 1000);
                if (strcmp(res, "memory") == 0 && mem >= 1000)
                    n = left / (mem / 1000);
                for (size_t r = 0; r < na; r++)
                    if (strcmp(ask[r].name, res) == 0)
                        n = left / gpn[r];
                if (left == 0)
                    n = 0;
                if (n < nodes_max) {
                    nodes_max = n;
                    snprintf(gg.bound, sizeof(gg.bound), "%s", res);
                    gg.left = left;
                    gg.limit = p->limits[l].milli / 1000;
                }
            }
            gg.nodes_now = gg.nodes_ever = nodes_max;
            gg.state = nodes_max > 0 ? GROWTH_GROWS : GROWTH_LIMIT;
            count(out, &gg);
        }
}

void growth_of(const struct cluster *c, yyjson_val *spec, const struct growth_ask *ask,
               size_t n_ask, int64_t headroom, const struct growth_policy *pol, double now,
               struct growth *out)
{
    memset(out, 0, sizeof(*out));
    if (n_ask == 0)
        return;
    ca_groups(c, spec, ask, n_ask, headroom, pol, now, out);
    nodepools(c, spec, ask, n_ask, headroom, out);
}

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t put(char *buf, size_t len, size_t at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (at >= len)
        return at;
    va_start(ap, fmt);
    n = vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
    return n < 0 ? at : at + (size_t)n;
}

static const char *plural(int64_t n)
{
    return n == 1 ? "" : "s";
}

void growth_grows_text(const struct growth *g, int64_t need, bool ever, char *buf, size_t len)
{
    size_t at = 0;
    int64_t rest = need;
    const char *verb;

    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < g->n && rest > 0; i++) {
        const struct growth_group *gg = &g->g[i];
        int64_t per = ever ? gg->per_node : gg->per_node_now;
        int64_t nodes = ever ? gg->nodes_ever : gg->nodes_now, k;

        if ((!ever && gg->state != GROWTH_GROWS) || per <= 0 || nodes <= 0)
            continue;
        k = rest >= GROWTH_UNBOUNDED ? nodes : (rest + per - 1) / per;
        k = k < nodes ? k : nodes;
        rest = rest >= GROWTH_UNBOUNDED ? rest : rest - sat_mul(k, per);
        at = put(buf, len, at, "%s", at > 0 ? ", " : "");
        verb =
            ever ? (gg->nodepool ? "may launch" : "may add") : (gg->nodepool ? "launches" : "adds");
        if (k >= GROWTH_UNBOUNDED)
            at = put(buf, len, at, "NodePool %s %s any number of nodes of %" PRId64 " pod%s each",
                     gg->name, verb, per, plural(per));
        else if (!gg->nodepool)
            at = put(buf, len, at,
                     "node group %s %s %" PRId64 " node%s of %" PRId64 " pod%s each (%" PRId64
                     " to %" PRId64 " of maxSize %" PRId64 ")",
                     gg->name, verb, k, plural(k), per, plural(per), gg->in_view, gg->in_view + k,
                     gg->max_size);
        else if (gg->bound[0])
            at =
                put(buf, len, at,
                    "NodePool %s %s %" PRId64 " node%s of %" PRId64 " pod%s each (%" PRId64
                    " %s left of its limit of %" PRId64 ")",
                    gg->name, verb, k, plural(k), per, plural(per), gg->left, gg->bound, gg->limit);
        else
            at = put(buf, len, at,
                     "NodePool %s %s %" PRId64 " node%s of %" PRId64 " pod%s each (no limit "
                     "bounds it)",
                     gg->name, verb, k, plural(k), per, plural(per));
    }
    /* the groups past the named ones add the rest (counted in pods_now and pods_ever) */
    if (rest > 0 && g->n_more > 0)
        put(buf, len, at, "%sand %zu more group%s", at > 0 ? ", " : "", g->n_more,
            g->n_more == 1 ? "" : "s");
}

void growth_stuck_text(const struct growth *g, char *buf, size_t len)
{
    size_t at = 0;

    if (len > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < g->n; i++) {
        const struct growth_group *gg = &g->g[i];

        if (gg->state == GROWTH_GROWS)
            continue;
        at = put(buf, len, at, "%s", at > 0 ? "; " : "");
        switch (gg->state) {
        case GROWTH_AT_MAX:
            at = put(buf, len, at,
                     "node group %s is at its max size (%" PRId64 " of maxSize %" PRId64
                     "): Cluster Autoscaler adds no node to it (max node group size reached)",
                     gg->name, gg->target, gg->max_size);
            break;
        case GROWTH_LIMIT:
            at = put(buf, len, at,
                     "NodePool %s has %" PRId64 " %s left of its limit of %" PRId64
                     " (spec.limits less status.resources), less than a node: Karpenter launches "
                     "none (all available instance types exceed limits for nodepool)",
                     gg->name, gg->left, gg->bound, gg->limit);
            break;
        case GROWTH_BACKOFF:
            at = put(buf, len, at,
                     "node group %s is in backoff after a failed scale-up%s: Cluster Autoscaler "
                     "adds no node to it until the backoff ends (then up to %" PRId64 " node%s)",
                     gg->name, gg->why, gg->nodes_ever, plural(gg->nodes_ever));
            break;
        case GROWTH_UNHEALTHY:
            at = put(buf, len, at,
                     "node group %s is unhealthy%s: Cluster Autoscaler does not scale it up (not "
                     "ready for scale-up)",
                     gg->name, gg->why);
            break;
        case GROWTH_PAUSED:
            at = put(buf, len, at,
                     "node group %s adds no node while Cluster Autoscaler's cluster-wide health "
                     "is Unhealthy (too many unready nodes: it scales nothing up until it is "
                     "Healthy; then up to %" PRId64 " node%s)",
                     gg->name, gg->nodes_ever, plural(gg->nodes_ever));
            break;
        case GROWTH_GROWS: break;
        }
    }
    if (g->n_more > 0 && at > 0)
        at = put(buf, len, at, "; and %zu more group%s", g->n_more, g->n_more == 1 ? "" : "s");
    if (g->miss_why[0] && g->pods_ever == 0)
        put(buf, len, at, "%s%s", at > 0 ? "; " : "", g->miss_why);
}
