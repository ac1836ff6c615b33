/*
 * pool.c: which GPU pools a pod draws on, and their taints and labels (pool.h).
 */
#include "pool.h"

#include <stdio.h>
#include <string.h>

int pool_of(const struct policy_doc *doc, const char *res)
{
    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX; i++)
        if (pod_glob_any(&doc->pools[i].resources, res))
            return (int)i;
    return -1;
}

unsigned pool_set(const struct policy_doc *doc, const struct pod_demand *dm)
{
    unsigned set = 0;

    for (size_t i = 0; i < dm->n; i++) {
        int p = dm->r[i].milli > 0 ? pool_of(doc, dm->r[i].name) : -1;

        if (p >= 0)
            set |= 1u << p;
    }
    return set;
}

static bool str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

size_t pool_taints(const struct policy_doc *doc, unsigned set, struct taint *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX; i++) {
        if (!(set & (1u << i)))
            continue;
        for (size_t t = 0; t < doc->pools[i].n_taints; t++) {
            const struct taint *x = &doc->pools[i].taints[t];
            bool seen = false;

            for (size_t k = 0; k < n && !seen; k++)
                seen = strcmp(out[k].key, x->key) == 0 && str_eq(out[k].value, x->value) &&
                       strcmp(out[k].effect, x->effect) == 0;
            if (seen)
                continue;
            if (n == max)
                return max + 1;
            out[n++] = *x;
        }
    }
    return n;
}

size_t pool_labels(const struct policy_doc *doc, unsigned set, struct node_label *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX; i++) {
        if (!(set & (1u << i)))
            continue;
        for (size_t l = 0; l < doc->pools[i].n_labels; l++) {
            const struct node_label *x = &doc->pools[i].labels[l];
            bool seen = false;

            for (size_t k = 0; k < n && !seen; k++)
                seen = strcmp(out[k].key, x->key) == 0 && str_eq(out[k].value, x->value);
            if (seen)
                continue;
            if (n == max)
                return max + 1;
            out[n++] = *x;
        }
    }
    return n;
}

bool pool_labels_clash(const struct policy_doc *doc, unsigned set)
{
    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX; i++) {
        if (!(set & (1u << i)))
            continue;
        for (size_t j = i + 1; j < doc->n_pools && j < POLICY_POOLS_MAX; j++) {
            if (!(set & (1u << j)))
                continue;
            for (size_t a = 0; a < doc->pools[i].n_labels; a++)
                for (size_t b = 0; b < doc->pools[j].n_labels; b++) {
                    const struct node_label *x = &doc->pools[i].labels[a];
                    const struct node_label *y = &doc->pools[j].labels[b];

                    if (x->value != NULL && y->value != NULL && strcmp(x->key, y->key) == 0 &&
                        strcmp(x->value, y->value) != 0)
                        return true;
                }
        }
    }
    return false;
}

void pool_names(const struct policy_doc *doc, unsigned set, char *buf, size_t len)
{
    size_t at = 0, left = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX; i++)
        left += (set >> i) & 1u;
    for (size_t i = 0; i < doc->n_pools && i < POLICY_POOLS_MAX && at < len; i++) {
        if (!(set & (1u << i)))
            continue;
        left--;
        at += (size_t)snprintf(buf + at, len - at, "%s%s", doc->pools[i].name,
                               left == 0   ? ""
                               : left == 1 ? " and "
                                           : ", ");
    }
}

static bool pool_offers(const char *res, void *arg)
{
    return pod_glob_any(&((const struct gpu_pool *)arg)->resources, res);
}

int pool_nodes_carry(const struct policy_doc *doc, size_t i, struct cluster *view)
{
    const char *keys[POOL_LABELS_MAX], *values[POOL_LABELS_MAX];
    const struct gpu_pool *pl;
    size_t m = 0;

    if (i >= doc->n_pools)
        return -1;
    pl = &doc->pools[i];
    for (size_t l = 0; l < pl->n_labels && m < POOL_LABELS_MAX; l++) {
        if (pl->labels[l].value == NULL)
            continue;
        keys[m] = pl->labels[l].key;
        values[m++] = pl->labels[l].value;
    }
    if (m == 0)
        return -1;
    return cluster_offering_nodes_carry_all(view, pool_offers, (void *)pl, keys, values, m);
}
