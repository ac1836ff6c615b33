/*
 * rule_node_selector.c: the node-selector rule (rules/README.md): its settings and their
 * loading, and its judge: a GPU pod is confined to GPU nodes by its nodeSelector or required
 * node affinity (Mutate adds the rule's labels, or the policy's GPU node labels, that the nodes
 * offering its GPUs carry).
 */
#include "rule_node_selector.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cluster/cluster.h"
#include "json.h"
#include "kind.h"
#include "pool.h"

/* ---- settings ---- */

enum { NS_LABELS, NS_N };
static const struct field KEYS[NS_N] = {{"labels", false}};

/*
 * With gpu.pools, a pod gets the labels of the pool its resource is in: a rule's own labels
 * would go to every pool's pods alike, a selector no node of some pool carries: refused.
 * (Without pools, two gpu.nodeLabels with a value may be two kinds of node or two labels every
 * GPU node carries, which only the cluster can tell: labels_carried() asks a synced view.)
 */
static void check_selector_labels(struct loader *L, const struct policy_doc *doc,
                                  const struct yamltree_node *labels_key, const char *path)
{
    char p[RULES_PATH_MAX];

    if (doc->n_pools > 0 && labels_key != NULL) {
        path_key(p, path, "labels");
        err_node(L, labels_key,
                 "%s: not with gpu.pools: node-selector adds the nodeLabels of the pool "
                 "whose resource the pod requests; put the labels in the pools",
                 p);
    }
}

static void *load(struct loader *L, const struct rule_input *in)
{
    char p[RULES_PATH_MAX];
    struct node_selector_settings *s = xcalloc(L, 1, sizeof(*s));

    if (s == NULL)
        return NULL;
    path_key(p, in->path, "labels");
    if (given(in->v[NS_LABELS]))
        load_label_map(L, in->v[NS_LABELS], p, true, &s->labels, &s->n_labels);
    check_selector_labels(L, in->doc, in->k[NS_LABELS], in->path);
    return s;
}

static void settings_free(void *settings)
{
    struct node_selector_settings *s = settings;

    if (s != NULL)
        node_labels_free(s->labels, s->n_labels);
    free(s);
}

/* ---- judging ---- */

/* Whether the pod is kept on nodes that carry one of the n labels. */
static bool confined(const struct node_label *labels, size_t n, yyjson_val *spec, char *why,
                     size_t len)
{
    yyjson_val *terms, *term;
    size_t i;
    bool all;

    if (selects_gpu_label(labels, n, spec, why, len))
        return true;
    terms = required_terms(spec);
    all = yyjson_arr_size(terms) > 0;
    ARR_EACH (terms, i, term) {
        all = all && term_on_gpu_label(labels, n, term, false);
    }
    if (all)
        snprintf(why, len, "required node affinity on GPU node labels");
    return all;
}

static bool pod_offers(const char *res, void *arg)
{
    return pod_demand_get(arg, res) > 0;
}

/* Whether one node offering the demand's resources carries every label kept (keep[i]). */
static bool all_carried(struct ctx *c, struct pod_demand *dm, const struct node_label *labels,
                        size_t n, const bool *keep)
{
    const char *keys[SELECTOR_LABELS_MAX], *values[SELECTOR_LABELS_MAX];
    size_t m = 0;

    for (size_t i = 0; i < n && i < SELECTOR_LABELS_MAX; i++) {
        if (!keep[i])
            continue;
        keys[m] = labels[i].key;
        values[m++] = labels[i].value;
    }
    return m < 2 || cluster_offering_nodes_carry_all(c->view, pod_offers, dm, keys, values, m) == 1;
}

/*
 * Which of the n labels the patch may add, into keep: with a synced view that has nodes offering
 * one of the pod's GPU resources, only the labels one of them carries (a selector no such node
 * carries would leave the pod Pending forever: GKE's and the bare device plugin's nodes have no
 * nvidia.com/gpu.present); without a view, or with none such node yet (they may come from a
 * node autoscaler), all. False, with the reason in c->note, when none is left. keep has room
 * for SELECTOR_LABELS_MAX labels: past that many, every label with a value is kept unchecked.
 */
static bool labels_carried(struct ctx *c, const struct node_label *labels, size_t n, bool *keep)
{
    struct pod_demand dm;
    struct diag d;
    char names[256] = "", want[512] = "";
    bool any = false, offered = false;

    for (size_t i = 0; i < n && i < SELECTOR_LABELS_MAX; i++)
        keep[i] = labels[i].value != NULL;
    if (!view_synced(c) || n > SELECTOR_LABELS_MAX)
        return true;
    diag_clear(&d);
    if (spec_demand(c, &dm, &d) < 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        int rc;

        if (!keep[i])
            continue;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
        rc = cluster_offering_nodes_carry(c->view, pod_offers, &dm, labels[i].key, labels[i].value);
        offered = offered || rc >= 0;
        keep[i] = rc == 1;
        any = any || keep[i];
    }
    if (!offered) {
        for (size_t i = 0; i < n; i++)
            keep[i] = labels[i].value != NULL;
        return true;
    }
    for (size_t i = 0; i < dm.n; i++)
        add_text(names, sizeof(names), "%s", dm.r[i].name);
    if (any && !all_carried(c, &dm, labels, n, keep)) {
        /* each is carried by some node, but no node carries them all: two kinds of node */
        want[0] = '\0';
        for (size_t i = 0; i < n; i++)
            if (keep[i])
                add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
        snprintf(c->note, sizeof(c->note),
                 "no nodeSelector added: no node offering %.120s carries all of %.200s, so the "
                 "selector would leave the pod Pending; describe each kind of GPU node as a pool "
                 "in gpu.pools",
                 names, want);
        return false;
    }
    if (any || want[0] == '\0')
        return true;
    snprintf(c->note, sizeof(c->note),
             "no nodeSelector added: no node offering %s carries %s, so the selector would leave "
             "the pod Pending; add a label those nodes carry to gpu.nodeLabels",
             names, want);
    return false;
}

/*
 * labels_carried() for a GPU pool's labels, which select its nodes together: with a synced view
 * that has nodes offering one of the pod's GPU resources, one of them must carry every label
 * with a value, or the selector would leave the pod Pending (nothing is patched, and the note
 * says why); otherwise every label with a value is kept.
 */
static bool pool_carried(struct ctx *c, const struct node_label *labels, size_t n, const char *pool,
                         bool *keep)
{
    const char *keys[SELECTOR_LABELS_MAX], *values[SELECTOR_LABELS_MAX];
    char res[256] = "", want[512] = "";
    struct pod_demand dm;
    struct diag d;
    size_t m = 0;
    int rc;

    for (size_t i = 0; i < n && i < SELECTOR_LABELS_MAX; i++) {
        keep[i] = labels[i].value != NULL;
        if (!keep[i])
            continue;
        keys[m] = labels[i].key;
        values[m++] = labels[i].value;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
    }
    diag_clear(&d);
    if (!view_synced(c) || m == 0 || spec_demand(c, &dm, &d) < 0)
        return true;
    rc = cluster_offering_nodes_carry_all(c->view, pod_offers, &dm, keys, values, m);
    if (rc != 0)
        return true;
    for (size_t i = 0; i < dm.n; i++)
        add_text(res, sizeof(res), "%s", dm.r[i].name);
    snprintf(c->note, sizeof(c->note),
             "no nodeSelector added: no node offering %.120s carries all of GPU pool %.64s's "
             "labels %.200s (the pod would stay Pending); fix the pool's nodeLabels",
             res, pool, want);
    return false;
}
/* Whether label i goes into the patch (labels_carried). */
static bool kept(const bool *keep, const struct node_label *labels, size_t i)
{
    return i < SELECTOR_LABELS_MAX ? keep[i] : labels[i].value != NULL;
}

/* With pools: whether the pod's nodeSelector has a key=value that a pool outside set selects its
 * nodes by and no pool of set does (into kv, len bytes). Such a selector and the pool's labels
 * would ask for a node in two pools. */
static bool other_pools_label(const struct policy_doc *doc, unsigned set, yyjson_val *sel, char *kv,
                              size_t len)
{
    yyjson_val *k, *v;
    size_t i, max;

    yyjson_obj_foreach (sel, i, max, k, v) {
        bool mine = false, theirs = false;

        if (!yyjson_is_str(v))
            continue;
        for (size_t p = 0; p < doc->n_pools && p < POLICY_POOLS_MAX; p++)
            for (size_t l = 0; l < doc->pools[p].n_labels; l++) {
                const struct node_label *nl = &doc->pools[p].labels[l];
                bool hit = nl->value != NULL && json_str_is(k, nl->key) &&
                           strcmp(nl->value, yyjson_get_str(v)) == 0;

                if (hit && (set & (1u << p)))
                    mine = true;
                else if (hit)
                    theirs = true;
            }
        if (theirs && !mine) {
            snprintf(kv, len, "%.140s=%.140s", yyjson_get_str(k), yyjson_get_str(v));
            return true;
        }
    }
    return false;
}

static enum verdict judge(struct ctx *c, const struct rule *ru)
{
    const struct node_selector_settings *s = ru->settings;
    const struct node_label *labels = s->n_labels ? s->labels : c->doc->gpu_node_labels;
    size_t n = s->n_labels ? s->n_labels : c->doc->n_gpu_node_labels;
    yyjson_val *sel = yyjson_obj_get(c->spec, "nodeSelector");
    char why[300], want[512] = "", desc[MSG_MAX], names[256] = "", did[560];
    const char *have;
    bool conflict = false, keep[SELECTOR_LABELS_MAX];
    struct node_label pool[SELECTOR_LABELS_MAX];
    unsigned pools;
    yyjson_mut_val *obj;
    int rc = 0;

    if (!requests_gpus(c))
        return V_OK;
    /* with gpu.pools: the labels of the pool whose resource the pod requests */
    pools = pod_pools(c);
    if (pools != 0) {
        pool_names(c->doc, pools, names, sizeof(names));
        if (pool_labels_clash(c->doc, pools)) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod requests resources of the GPU pools %s, whose nodeLabels differ, "
                        "so no node is in all of them; request the resources of one pool",
                        names);
            return V_PROBLEM;
        }
        n = pool_labels(c->doc, pools, pool, SELECTOR_LABELS_MAX);
        if (n > SELECTOR_LABELS_MAX)
            n = SELECTOR_LABELS_MAX;
        labels = pool;
        if (other_pools_label(c->doc, pools, sel, why, sizeof(why))) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod requests the resources of GPU pool %s, but its nodeSelector "
                        "names %s, a label of another pool's nodes, which do not offer them; "
                        "remove it",
                        names, why);
            return V_PROBLEM;
        }
    }
    if (confined(labels, n, c->spec, why, sizeof(why)))
        return V_OK;
    if (!(pools != 0 ? pool_carried(c, labels, n, names, keep)
                     : labels_carried(c, labels, n, keep)))
        return V_OK;
    for (size_t i = 0; i < n; i++) {
        if (!kept(keep, labels, i))
            continue;
        add_text(want, sizeof(want), "%s=%s", labels[i].key, labels[i].value);
        have = json_str(yyjson_obj_get(sel, labels[i].key));
        conflict = conflict || (have != NULL && strcmp(have, labels[i].value) != 0);
    }
    if (want[0] == '\0' && pools != 0) {
        add_problem(c->problem, sizeof(c->problem),
                    "GPU pod is not confined to the nodes of GPU pool %s, which has no nodeLabels "
                    "entry with a value to add; give the pool one",
                    names);
        return V_PROBLEM;
    }
    if (want[0] == '\0') {
        add_problem(c->problem, sizeof(c->problem),
                    "GPU pod is not confined to GPU nodes; add a nodeSelector on a GPU node label");
        return V_PROBLEM;
    }
    snprintf(desc, sizeof(desc), "GPU pod is not confined to %s%s%s; add nodeSelector %s",
             pools != 0 ? "the nodes of GPU pool " : "GPU nodes", names,
             conflict ? " (its nodeSelector names other nodes)" : "", want);
    if (c->fix && !conflict) {
        if (!yyjson_is_obj(sel)) {
            obj = yyjson_mut_obj(PATCH_OUT(c));
            for (size_t i = 0; obj != NULL && i < n; i++) {
                if (kept(keep, labels, i) &&
                    json_mut_set(PATCH_OUT(c), obj, labels[i].key,
                                 yyjson_mut_strcpy(PATCH_OUT(c), labels[i].value)) < 0)
                    obj = NULL;
            }
            rc = add_at(c, "/nodeSelector", NULL, 0, obj);
        } else {
            for (size_t i = 0; i < n && rc == 0; i++) {
                if (kept(keep, labels, i))
                    rc = add_op(c, "/nodeSelector", (const char *const[]){labels[i].key}, 1,
                                yyjson_mut_strcpy(PATCH_OUT(c), labels[i].value));
            }
            if (resync(c) < 0)
                rc = -1;
        }
        if (rc == 0) {
            snprintf(did, sizeof(did), "added nodeSelector %s", want);
            return fixed_or_problem(c, true, desc, did);
        }
    }
    return fixed_or_problem(c, false, desc, NULL);
}

const struct rule_ops rule_node_selector_ops = {
    .keys = KEYS,
    .n_keys = NS_N,
    .load = load,
    .free = settings_free,
    .judge = judge,
    .adds_pool_labels = true,
};

const struct node_selector_settings *node_selector_settings(const struct rule *r)
{
    return rule_settings_of(r, &rule_node_selector_ops);
}
