/*
 * pod.c: GPU demand of a pod spec (see pod.h).
 */
#include "pod.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "quantity.h"

bool pod_glob_any(const struct strlist *globs, const char *name)
{
    for (size_t i = 0; i < globs->n; i++) {
        if (fnmatch(globs->v[i], name, 0) == 0)
            return true;
    }
    return false;
}

bool pod_is_extended(const char *name)
{
    const char *slash = strchr(name, '/');
    size_t dlen;

    if (slash == NULL || slash == name)
        return false;
    dlen = (size_t)(slash - name);
    /* the kubernetes.io domain (and its subdomains) is the API's own, not an extended resource */
    if (dlen == 13 && strncmp(name, "kubernetes.io", 13) == 0)
        return false;
    return !(dlen > 14 && strncmp(slash - 14, ".kubernetes.io", 14) == 0);
}

/* A NULL glob list counts every extended resource (the cluster view keeps them all; the
 * policy's globs choose among them at decision time). */
static bool counted(const struct strlist *globs, const char *name)
{
    return globs != NULL ? pod_glob_any(globs, name) : pod_is_extended(name);
}

int64_t pod_demand_get(const struct pod_demand *dm, const char *name)
{
    for (size_t i = 0; i < dm->n; i++) {
        if (strcmp(dm->r[i].name, name) == 0)
            return dm->r[i].milli;
    }
    return 0;
}

static int64_t *demand_slot(struct pod_demand *dm, const char *name, struct diag *d)
{
    for (size_t i = 0; i < dm->n; i++) {
        if (strcmp(dm->r[i].name, name) == 0)
            return &dm->r[i].milli;
    }
    if (dm->n == POD_RESOURCES_MAX) {
        diag_set(d, NULL, 0, 0, "more than %d distinct GPU resources in one pod",
                 POD_RESOURCES_MAX);
        return NULL;
    }
    dm->r[dm->n].name = name;
    dm->r[dm->n].milli = 0;
    return &dm->r[dm->n++].milli;
}

/* Which container an error names: base, or base[idx]. Formatted only for an error: a pod's
 * demand is computed for every rule and every listed pod, and errors are rare. */
struct where {
    const char *base; /* "spec.containers", or a caller's whole text */
    size_t idx;       /* WHERE_WHOLE: base alone */
};
#define WHERE_WHOLE ((size_t)-1)

/* One GPU amount from a resource list entry; an error names where. */
static int gpu_amount(yyjson_val *v, const struct where *w, const char *list, const char *name,
                      int64_t *milli, struct diag *d)
{
    const char *why = NULL;
    char at[64];

    if (quantity_json_milli(v, milli) < 0)
        why = "not a valid quantity";
    else if (*milli < 0 || *milli % 1000 != 0)
        why = "must be a whole, non-negative number";
    if (why == NULL)
        return 0;
    if (w->idx == WHERE_WHOLE)
        snprintf(at, sizeof(at), "%s", w->base);
    else
        snprintf(at, sizeof(at), "%s[%zu]", w->base, w->idx);
    diag_set(d, NULL, 0, 0, "%s.resources.%s[\"%s\"]: %s", at, list, name, why);
    return -1;
}

/* Resource names are keys: a key with a NUL ("nvidia.com/gpu\u0000x") names no resource the
 * scheduler knows, so it is not counted (its C string would read as the resource). */
static const char *key_name(yyjson_val *k)
{
    const char *s = yyjson_get_str(k);

    return s != NULL && strlen(s) == yyjson_get_len(k) ? s : NULL;
}

static int container_gpus(yyjson_val *container, const struct where *where,
                          const struct strlist *gpu_globs, struct pod_demand *out, struct diag *d)
{
    yyjson_val *res = yyjson_obj_get(container, "resources");
    yyjson_val *req = yyjson_obj_get(res, "requests");
    yyjson_val *lim = yyjson_obj_get(res, "limits");
    const char *name;
    yyjson_val *k, *v;
    size_t i, max;
    int64_t milli, *slot;

    out->n = 0;
    /* requests first; limits stand in only where requests lack the resource */
    yyjson_obj_foreach (req, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name))
            continue;
        if (gpu_amount(v, where, "requests", name, &milli, d) < 0)
            return -1;
        if (milli > 0) {
            if ((slot = demand_slot(out, name, d)) == NULL)
                return -1;
            *slot = milli;
        }
    }
    yyjson_obj_foreach (lim, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name) ||
            yyjson_obj_get(req, name) != NULL)
            continue;
        if (gpu_amount(v, where, "limits", name, &milli, d) < 0)
            return -1;
        if (milli > 0) {
            if ((slot = demand_slot(out, name, d)) == NULL)
                return -1;
            *slot = milli;
        }
    }
    return 0;
}

int pod_container_gpus(yyjson_val *container, const char *where, const struct strlist *gpu_globs,
                       struct pod_demand *out, struct diag *d)
{
    struct where w = {where, WHERE_WHOLE};

    return container_gpus(container, &w, gpu_globs, out, d);
}

static bool is_sidecar(yyjson_val *init)
{
    return json_str_is(yyjson_obj_get(init, "restartPolicy"), "Always");
}

/* acc[r] = op(acc[r], add[r]) for every r in add: op 0 sums, op 1 takes the maximum. */
static int demand_merge(struct pod_demand *acc, const struct pod_demand *add, int take_max,
                        struct diag *d)
{
    int64_t *slot;

    for (size_t i = 0; i < add->n; i++) {
        if ((slot = demand_slot(acc, add->r[i].name, d)) == NULL)
            return -1;
        if (take_max) {
            if (add->r[i].milli > *slot)
                *slot = add->r[i].milli;
        } else if (__builtin_add_overflow(*slot, add->r[i].milli, slot)) {
            diag_set(d, NULL, 0, 0, "%s: GPU amounts overflow", add->r[i].name);
            return -1;
        }
    }
    return 0;
}

int pod_gpu_demand(yyjson_val *spec, const struct strlist *gpu_globs, struct pod_demand *out,
                   struct diag *d)
{
    struct pod_demand app = {.n = 0}, sidecars = {.n = 0}, init_peak = {.n = 0}, one, need;
    yyjson_val *list, *c, *overhead, *k, *v;
    struct where w;
    size_t i, max;
    const char *name;
    int64_t milli, *slot;

    out->n = 0;
    list = yyjson_obj_get(spec, "containers");
    yyjson_arr_foreach (list, i, max, c) {
        w = (struct where){"spec.containers", i};
        if (container_gpus(c, &w, gpu_globs, &one, d) < 0 || demand_merge(&app, &one, 0, d) < 0)
            return -1;
    }
    list = yyjson_obj_get(spec, "initContainers");
    yyjson_arr_foreach (list, i, max, c) {
        w = (struct where){"spec.initContainers", i};
        if (container_gpus(c, &w, gpu_globs, &one, d) < 0)
            return -1;
        if (is_sidecar(c)) {
            /* a sidecar keeps running: it adds to everything after it */
            if (demand_merge(&sidecars, &one, 0, d) < 0 ||
                demand_merge(&init_peak, &sidecars, 1, d) < 0)
                return -1;
            continue;
        }
        /* a regular init container runs alone, next to the sidecars started before it */
        need = sidecars;
        if (demand_merge(&need, &one, 0, d) < 0 || demand_merge(&init_peak, &need, 1, d) < 0)
            return -1;
    }
    if (demand_merge(&app, &sidecars, 0, d) < 0 || demand_merge(out, &app, 1, d) < 0 ||
        demand_merge(out, &init_peak, 1, d) < 0)
        return -1;
    overhead = yyjson_obj_get(spec, "overhead");
    yyjson_obj_foreach (overhead, i, max, k, v) {
        if ((name = key_name(k)) == NULL || !counted(gpu_globs, name))
            continue;
        if (quantity_json_milli(v, &milli) < 0 || milli < 0) {
            diag_set(d, NULL, 0, 0, "spec.overhead[\"%s\"]: not a valid quantity", name);
            return -1;
        }
        if (milli == 0)
            continue;
        if ((slot = demand_slot(out, name, d)) == NULL ||
            __builtin_add_overflow(*slot, milli, slot))
            return -1;
    }
    return 0;
}
