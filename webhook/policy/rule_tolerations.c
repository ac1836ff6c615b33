/*
 * rule_tolerations.c: the tolerations rule (rules/README.md): a GPU pod tolerates every GPU
 * node taint of its policy (Mutate adds the tolerations it lacks). It has no settings of its
 * own.
 */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "kind.h"
#include "pool.h"

/* The taints (nt of them) the pod does not tolerate, into missing (at most max); how many. */
static size_t untolerated(const struct taint *taints, size_t nt, yyjson_val *spec,
                          const struct taint **missing, size_t max)
{
    yyjson_val *tols = yyjson_obj_get(spec, "tolerations"), *tol;
    size_t i, n = 0;
    bool ok;

    for (size_t t = 0; t < nt && n < max; t++) {
        ok = false;
        ARR_EACH (tols, i, tol) {
            ok = ok || tolerates(tol, &taints[t]);
        }
        if (!ok)
            missing[n++] = &taints[t];
    }
    return n;
}

static yyjson_mut_val *toleration_for(yyjson_mut_doc *doc, const struct taint *t)
{
    if (t->value == NULL)
        return json_pack(doc, "{s:s, s:s, s:s}", "key", t->key, "operator", "Exists", "effect",
                         t->effect);
    return json_pack(doc, "{s:s, s:s, s:s, s:s}", "key", t->key, "operator", "Equal", "value",
                     t->value, "effect", t->effect);
}

static enum verdict judge(struct ctx *c, const struct rule *ru)
{
    const struct taint *missing[32];
    struct taint taints[32];
    size_t n, nt;
    unsigned pools;
    yyjson_mut_val *arr, *tol;
    int rc = 0;
    char names[512] = "", desc[MSG_MAX], did[560];

    (void)ru;
    if (!requests_gpus(c))
        return V_OK;
    pools = pod_pools(c);
    if (pools == 0) {
        n = untolerated(c->doc->gpu_taints, c->doc->n_gpu_taints, c->spec, missing, 32);
    } else {
        nt = pool_taints(c->doc, pools, taints, 32);
        n = untolerated(taints, nt > 32 ? 32 : nt, c->spec, missing, 32);
    }
    if (n == 0)
        return V_OK;
    for (size_t i = 0; i < n; i++)
        add_text(names, sizeof(names), "%s%s%s:%s", missing[i]->key, missing[i]->value ? "=" : "",
                 missing[i]->value ? missing[i]->value : "", missing[i]->effect);
    snprintf(desc, sizeof(desc),
             "GPU pod does not tolerate the GPU node taint %s, so it cannot be scheduled on GPU "
             "nodes; add a toleration (key %s, operator %s, effect %s)",
             names, missing[0]->key, missing[0]->value ? "Equal" : "Exists", missing[0]->effect);
    if (c->fix) {
        if (!yyjson_is_arr(yyjson_obj_get(c->spec, "tolerations"))) {
            arr = yyjson_mut_arr(PATCH_OUT(c));
            for (size_t i = 0; arr != NULL && i < n; i++) {
                tol = toleration_for(PATCH_OUT(c), missing[i]);
                if (tol == NULL || !yyjson_mut_arr_append(arr, tol))
                    arr = NULL;
            }
            rc = add_at(c, "/tolerations", NULL, 0, arr);
        } else {
            for (size_t i = 0; i < n && rc == 0; i++)
                rc = add_op(c, "/tolerations/-", NULL, 0, toleration_for(PATCH_OUT(c), missing[i]));
            if (resync(c) < 0)
                rc = -1;
        }
        if (rc == 0) {
            snprintf(did, sizeof(did), "added tolerations for %s", names);
            return fixed_or_problem(c, true, desc, did);
        }
    }
    return fixed_or_problem(c, false, desc, NULL);
}

const struct rule_ops rule_tolerations_ops = {
    .judge = judge,
};
