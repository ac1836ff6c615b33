/*
 * rule_gpu_request.c: the gpu-request rule (rules/README.md): its settings and their loading,
 * and its judges: a pod that aims at GPU nodes requests a GPU (Mutate adds the default one),
 * no more than maxPerPod, and no container reaches GPUs around the device plugin
 * (NVIDIA_VISIBLE_DEVICES, legacy CUDA env, envFrom, privileged, device hostPaths, the hook's
 * device lists, runtime sockets, CDI annotations); kubectl debug's ephemeral containers too.
 * Judged first (kind.h): its patch may make a pod a GPU pod, which the other rules then judge.
 */
#include "rule_gpu_request.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kind.h"
#include "text.h"

#define DEFAULT_RESOURCE "nvidia.com/gpu"

/* ---- settings ---- */

enum {
    GR_DEFAULT,
    GR_MAX_PER_POD,
    GR_DENY_ENV,
    GR_DENY_PRIVILEGED,
    GR_DENY_HOST_PATH,
    GR_DENY_ENV_FROM,
    GR_N
};
static const struct field KEYS[GR_N] = {
    {"default", false},        {"maxPerPod", false},       {"denyVisibleDevicesEnv", false},
    {"denyPrivileged", false}, {"denyDevHostPath", false}, {"denyEnvFrom", false},
};

static bool resource_covered(const struct strlist *globs, const char *resource)
{
    size_t i;

    for (i = 0; i < globs->n; i++)
        if (globs->v[i] != NULL && fnmatch(globs->v[i], resource, 0) == 0)
            return true;
    return false;
}

enum { GD_RESOURCE, GD_COUNT, GD_N };
static const struct field GPU_DEFAULT_FIELDS[GD_N] = {{"resource", false}, {"count", false}};

static void *load(struct loader *L, const struct rule_input *in)
{
    const struct yamltree_node *dv[GD_N] = {NULL}, *dk[GD_N], *const *v = in->v;
    const struct yamltree_node *map = in->map, *at = map;
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX], b[SHOW_BUF];
    const char *path = in->path;
    struct gpu_request_settings *r = xcalloc(L, 1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->default_count = 1;
    r->deny_visible_devices_env = r->deny_privileged = r->deny_dev_host_path = true;
    r->deny_env_from = true;
    path_key(p, path, "default");
    if (!given(v[GR_DEFAULT]) ||
        map_fields(L, v[GR_DEFAULT], p, GPU_DEFAULT_FIELDS, GD_N, dv, dk)) {
        path_key(q, p, "resource");
        if (given(dv[GD_RESOURCE])) {
            at = dv[GD_RESOURCE];
            get_str(L, at, q, &VAL_RESOURCE, &r->default_resource);
        } else {
            r->default_resource = xstrdup(L, DEFAULT_RESOURCE);
        }
        /* the default resource matters when it is given, or when the rule mutates */
        if (r->default_resource != NULL && (at != map || in->rule->action == ACTION_MUTATE) &&
            !resource_covered(&in->doc->gpu_resources, r->default_resource))
            err_node(L, at, "%s: %s is not matched by spec.gpu.resources", q,
                     show(b, r->default_resource));
        path_key(q, p, "count");
        if (given(dv[GD_COUNT]))
            get_int(L, dv[GD_COUNT], q, 1, INT64_MAX, &r->default_count);
    }
    path_key(p, path, "maxPerPod");
    if (given(v[GR_MAX_PER_POD]))
        get_int(L, v[GR_MAX_PER_POD], p, 0, INT64_MAX, &r->max_per_pod);
    path_key(p, path, "denyVisibleDevicesEnv");
    if (given(v[GR_DENY_ENV]))
        get_bool(L, v[GR_DENY_ENV], p, &r->deny_visible_devices_env);
    path_key(p, path, "denyPrivileged");
    if (given(v[GR_DENY_PRIVILEGED]))
        get_bool(L, v[GR_DENY_PRIVILEGED], p, &r->deny_privileged);
    path_key(p, path, "denyDevHostPath");
    if (given(v[GR_DENY_HOST_PATH]))
        get_bool(L, v[GR_DENY_HOST_PATH], p, &r->deny_dev_host_path);
    path_key(p, path, "denyEnvFrom");
    if (given(v[GR_DENY_ENV_FROM]))
        get_bool(L, v[GR_DENY_ENV_FROM], p, &r->deny_env_from);
    return r;
}

/* ---- judging ---- */

/* Whether a toleration lets the pod onto nodes with this GPU taint: its key and effect match
 * (or an empty key with Exists). With operator Equal the value must match the taint's, but a
 * taint of any value ("value" absent in the policy) may well carry the very value the pod
 * names (GKE's "present", many installs' "true"): for "can it reach GPU nodes" that counts. */
static bool may_tolerate(yyjson_val *tol, const struct taint *t)
{
    const char *key = json_str(yyjson_obj_get(tol, "key"));
    const char *eff = json_str(yyjson_obj_get(tol, "effect"));

    if (eff != NULL && eff[0] && strcmp(eff, t->effect) != 0)
        return false;
    /* a toleration of every taint (empty key, Exists) is how operators and node agents say
     * "run anywhere": it lets the pod reach GPU nodes (reaches_gpu_nodes) but does not by
     * itself aim it at them (with a selector that picks only GPU nodes it does:
     * steered_to_gpu_nodes) */
    if (key == NULL || key[0] == '\0')
        return false;
    if (strcmp(key, t->key) != 0)
        return false;
    return t->value == NULL || tolerates(tol, t);
}

/* A toleration of every taint that keeps pods off GPU nodes (NoSchedule or NoExecute). */
static bool tolerates_all_gpu_taints(const struct policy_doc *doc, yyjson_val *spec)
{
    yyjson_val *tol;
    size_t i;

    for (size_t t = 0; t < doc->n_gpu_taints; t++) {
        if (strcmp(doc->gpu_taints[t].effect, "PreferNoSchedule") == 0)
            continue;
        ARR_EACH (yyjson_obj_get(spec, "tolerations"), i, tol) {
            const char *key = json_str(yyjson_obj_get(tol, "key"));

            if ((key == NULL || key[0] == '\0') && tolerates(tol, &doc->gpu_taints[t]))
                return true;
        }
    }
    return false;
}

/* With gpu.pools: whether the tolerations let the pod onto the nodes of pool pl, which takes one
 * of its taints tolerated and every NoSchedule and NoExecute one (kube-scheduler's
 * TaintToleration filter); the first tolerated, in words, into why. */
static bool tolerates_pool(const struct gpu_pool *pl, yyjson_val *tols, char *why, size_t len)
{
    const struct taint *first = NULL;
    yyjson_val *tol;
    size_t i;

    for (size_t t = 0; t < pl->n_taints; t++) {
        bool ok = false;

        ARR_EACH (tols, i, tol) {
            ok = ok || may_tolerate(tol, &pl->taints[t]);
        }
        if (ok && first == NULL)
            first = &pl->taints[t];
        if (!ok && strcmp(pl->taints[t].effect, "PreferNoSchedule") != 0)
            return false;
    }
    if (first == NULL)
        return false;
    snprintf(why, len, "tolerates %s:%s", first->key, first->effect);
    return true;
}

/* Why the pod targets GPU nodes, or false. With pools, a toleration targets GPU nodes only
 * where it lets the pod onto some pool's nodes: one of two taints of a pool keeps it off. */
static bool targets_gpu_nodes(const struct policy_doc *doc, yyjson_val *spec, char *why, size_t len)
{
    yyjson_val *tols, *tol, *v;
    const char *rc;
    size_t i;

    if (selects_gpu_label(doc->gpu_node_labels, doc->n_gpu_node_labels, spec, why, len))
        return true;
    ARR_EACH (required_terms(spec), i, v) {
        if (term_on_gpu_label(doc->gpu_node_labels, doc->n_gpu_node_labels, v, true)) {
            snprintf(why, len, "required node affinity on GPU node labels");
            return true;
        }
    }
    tols = yyjson_obj_get(spec, "tolerations");
    for (size_t p = 0; p < doc->n_pools; p++)
        if (tolerates_pool(&doc->pools[p], tols, why, len))
            return true;
    for (size_t t = 0; doc->n_pools == 0 && t < doc->n_gpu_taints; t++) {
        ARR_EACH (tols, i, tol) {
            if (may_tolerate(tol, &doc->gpu_taints[t])) {
                snprintf(why, len, "tolerates %s:%s", doc->gpu_taints[t].key,
                         doc->gpu_taints[t].effect);
                return true;
            }
        }
    }
    /* globs, as the webhook configurations' matchConditions (runtimeClassName.startsWith):
     * the GPU Operator makes nvidia, nvidia-cdi and nvidia-legacy */
    rc = json_str(yyjson_obj_get(spec, "runtimeClassName"));
    if (rc != NULL && pod_glob_any(&doc->gpu_runtime_classes, rc)) {
        snprintf(why, len, "runtimeClassName %s", rc);
        return true;
    }
    /* NVIDIA_VISIBLE_DEVICES is not a way to aim at GPU nodes but a way around the device
     * plugin: rule_gpu_request refuses it by itself, in every container */
    return false;
}

/* A cdi.k8s.io/ annotation that asks the container runtime for NVIDIA devices by their Container
 * Device Interface names ("nvidia.com/gpu=all", comma-separated): containerd and CRI-O inject
 * them into the containers without the device plugin. Its key, or NULL; the value into val. */
static const char *cdi_nvidia_annotation(const struct ctx *c, const char **val)
{
    yyjson_val *ann = yyjson_obj_get(patch_get(c->object, c->t->meta_path), "annotations");
    const char *key;
    yyjson_val *v;

    OBJ_EACH(ann, key, v)
    {
        const char *s = json_str(v);

        /* each device is VENDOR/CLASS=NAME; NVIDIA's vendors are nvidia.com and its
         * subdomains (k8s.device-plugin.nvidia.com) */
        if (strncmp(key, "cdi.k8s.io/", 11) == 0 && s != NULL && strstr(s, "nvidia.com/")) {
            *val = s;
            return key;
        }
    }
    return NULL;
}

static bool node_has_gpu_label(yyjson_val *labels, void *arg)
{
    const struct policy_doc *doc = arg;
    const char *key;
    yyjson_val *v;

    OBJ_EACH(labels, key, v)
    {
        for (size_t l = 0; l < doc->n_gpu_node_labels; l++)
            if (label_matches(&doc->gpu_node_labels[l], key, json_str(v)))
                return true;
    }
    return false;
}

static bool node_res_is_gpu(const char *res, void *arg)
{
    const struct policy_doc *doc = arg;

    return pod_glob_any(&doc->gpu_resources, res);
}

/* -1 without a view or for a node it has not seen, 0 for a known node without GPUs, 1 for a
 * known GPU node (a label of gpu.nodeLabels, or it offers a resource of gpu.resources). */
static int node_kind(const struct ctx *c, const char *node)
{
    return c->view == NULL ? -1
                           : cluster_node_is(c->view, node, node_has_gpu_label, node_res_is_gpu,
                                             (void *)c->doc);
}

/* Whether the pod is pinned to a node the view knows is a GPU node: spec.nodeName, or a required
 * node affinity term whose matchFields put metadata.name In such a node. The scheduler is
 * skipped for nodeName, and the kubelet admits a pod on its node checking only NoExecute taints
 * (pkg/kubelet/lifecycle/predicate.go, generalFilter), so such a pod lands on the GPU node
 * whatever it tolerates. */
static bool pinned_to_gpu_node(const struct ctx *c, char *why, size_t len)
{
    yyjson_val *v = yyjson_obj_get(c->spec, "nodeName"), *term, *f, *val;
    size_t i, k, m;

    if (yyjson_is_str(v) && node_kind(c, json_str(v)) == 1) {
        snprintf(why, len, "nodeName %s, a GPU node", json_str(v));
        return true;
    }
    ARR_EACH (required_terms(c->spec), i, term) {
        ARR_EACH (yyjson_obj_get(term, "matchFields"), k, f) {
            const char *key = json_str(yyjson_obj_get(f, "key"));
            const char *op = json_str(yyjson_obj_get(f, "operator"));

            if (key == NULL || op == NULL || strcmp(key, "metadata.name") != 0 ||
                strcmp(op, "In") != 0)
                continue;
            ARR_EACH (yyjson_obj_get(f, "values"), m, val) {
                if (yyjson_is_str(val) && node_kind(c, json_str(val)) == 1) {
                    snprintf(why, len, "node affinity on node %s, a GPU node", json_str(val));
                    return true;
                }
            }
        }
    }
    return false;
}

/* A pod spec and its policy, for the callbacks of cluster_nodes_matching. */
struct steer {
    const struct policy_doc *doc;
    yyjson_val *spec;
};

static bool steer_gpu_label(yyjson_val *labels, void *arg)
{
    return node_has_gpu_label(labels, (void *)((const struct steer *)arg)->doc);
}

static bool steer_gpu_res(const char *res, void *arg)
{
    return node_res_is_gpu(res, (void *)((const struct steer *)arg)->doc);
}

static bool value_in(yyjson_val *vals, const char *v)
{
    yyjson_val *x;
    size_t i;

    ARR_EACH (vals, i, x) {
        if (v != NULL && yyjson_is_str(x) && strcmp(json_str(x), v) == 0)
            return true;
    }
    return false;
}

/* One node selector requirement against a value (NULL: the label or field is absent), as the
 * scheduler reads it (k8s.io/component-helpers/scheduling/corev1/nodeaffinity): an operator it
 * does not know, or a Gt/Lt that is not an integer, matches nothing. */
static bool requirement_holds(yyjson_val *req, const char *v)
{
    const char *op = json_str(yyjson_obj_get(req, "operator"));
    yyjson_val *vals = yyjson_obj_get(req, "values");
    char *end;
    long long have, want;

    if (op == NULL)
        return false;
    if (strcmp(op, "In") == 0)
        return value_in(vals, v);
    if (strcmp(op, "NotIn") == 0)
        return !value_in(vals, v);
    if (strcmp(op, "Exists") == 0)
        return v != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return v == NULL;
    if ((strcmp(op, "Gt") != 0 && strcmp(op, "Lt") != 0) || v == NULL ||
        yyjson_arr_size(vals) != 1 || !yyjson_is_str(yyjson_arr_get(vals, 0)))
        return false;
    have = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0')
        return false;
    want = strtoll(json_str(yyjson_arr_get(vals, 0)), &end, 10);
    if (*end != '\0')
        return false;
    return op[0] == 'G' ? have > want : have < want;
}

/* Whether the node (name, labels) satisfies the pod's nodeSelector and required node affinity:
 * every nodeSelector label, and one term (all of its expressions and fields; a term with
 * neither matches no node). */
static bool node_selected(const char *name, yyjson_val *labels, void *arg)
{
    yyjson_val *spec = ((const struct steer *)arg)->spec, *v, *terms, *term, *req;
    const char *key;
    size_t i, k;
    bool any = false;

    OBJ_EACH(yyjson_obj_get(spec, "nodeSelector"), key, v)
    {
        const char *have = json_str(yyjson_obj_get(labels, key));

        if (have == NULL || !yyjson_is_str(v) || strcmp(have, json_str(v)) != 0)
            return false;
    }
    terms = required_terms(spec);
    if (!yyjson_is_arr(terms) || yyjson_arr_size(terms) == 0)
        return true;
    ARR_EACH (terms, i, term) {
        yyjson_val *exprs = yyjson_obj_get(term, "matchExpressions");
        yyjson_val *fields = yyjson_obj_get(term, "matchFields");
        bool ok = yyjson_arr_size(exprs) + yyjson_arr_size(fields) > 0;

        ARR_EACH (exprs, k, req) {
            const char *lk = json_str(yyjson_obj_get(req, "key"));

            ok = ok && lk != NULL && requirement_holds(req, json_str(yyjson_obj_get(labels, lk)));
        }
        ARR_EACH (fields, k, req) {
            const char *fk = json_str(yyjson_obj_get(req, "key"));

            ok = ok && fk != NULL && strcmp(fk, "metadata.name") == 0 &&
                 requirement_holds(req, name);
        }
        any = any || ok;
    }
    return any;
}

/* Whether a pod that tolerates every taint is steered onto GPU nodes: its nodeSelector or
 * required node affinity matches only GPU nodes of a synced view (kubernetes.io/hostname:
 * gpu-0, say). A toleration of every taint keeps nothing off the GPU taint, so such a pod lands
 * on a GPU node as surely as one that names the GPU node label, and a CUDA image's
 * NVIDIA_VISIBLE_DEVICES=all then sees every GPU of it. */
static bool steered_to_gpu_nodes(const struct ctx *c, char *why, size_t len)
{
    struct steer st = {c->doc, c->spec};
    size_t matched, gpu;

    if (c->view == NULL || !cluster_synced(c->view) || !tolerates_all_gpu_taints(c->doc, c->spec))
        return false;
    if (yyjson_obj_size(yyjson_obj_get(c->spec, "nodeSelector")) == 0 &&
        yyjson_arr_size(required_terms(c->spec)) == 0)
        return false;
    cluster_nodes_matching(c->view, node_selected, steer_gpu_label, steer_gpu_res, &st, &matched,
                           &gpu);
    if (matched == 0 || gpu != matched)
        return false;
    snprintf(why, len,
             "it tolerates every taint, and its nodeSelector and node affinity match only GPU "
             "nodes (%zu of the cluster)",
             gpu);
    return true;
}

/* Whether the pod targets GPU nodes: targets_gpu_nodes, pinned to a known GPU node, or steered
 * onto GPU nodes of the view while it tolerates every taint. */
static bool pod_targets(const struct ctx *c, char *why, size_t len)
{
    return targets_gpu_nodes(c->doc, c->spec, why, len) || pinned_to_gpu_node(c, why, len) ||
           steered_to_gpu_nodes(c, why, len);
}

/* Whether the pod can land on a GPU node at all: it targets them; it names its node
 * (spec.nodeName, which bypasses the scheduler's taint checks) and that node is a GPU node or
 * one the view does not know; a matchFields affinity; it tolerates every taint; or the policy
 * lists no NoSchedule/NoExecute GPU taint (nothing keeps pods off GPU nodes). */
static bool reaches_gpu_nodes(const struct ctx *c, char *why, size_t len)
{
    const struct policy_doc *doc = c->doc;
    yyjson_val *spec = c->spec, *term, *v;
    size_t i;
    bool keeps_off = false;

    if (pod_targets(c, why, len))
        return true;
    v = yyjson_obj_get(spec, "nodeName");
    if (yyjson_is_str(v) && yyjson_get_len(v) > 0) {
        /* kubectl debug node/NAME: pinned to a node the view knows has no GPU, it cannot reach
         * one; without a view, or a node it has not seen, assume it can */
        int gpu = node_kind(c, json_str(v));

        if (gpu == 0)
            return false;
        snprintf(why, len, "nodeName %s%s", json_str(v), gpu == 1 ? ", a GPU node" : "");
        return true;
    }
    ARR_EACH (required_terms(spec), i, term) {
        if (yyjson_arr_size(yyjson_obj_get(term, "matchFields")) > 0) {
            snprintf(why, len, "node affinity on node fields");
            return true;
        }
    }
    if (tolerates_all_gpu_taints(doc, spec)) {
        snprintf(why, len, "tolerates every taint");
        return true;
    }
    for (size_t t = 0; t < doc->n_gpu_taints; t++)
        keeps_off = keeps_off || strcmp(doc->gpu_taints[t].effect, "PreferNoSchedule") != 0;
    if (!keeps_off)
        snprintf(why, len, "no taint keeps pods off GPU nodes");
    return !keeps_off;
}

/* Adds resources.{limits,requests}[res] = count to the first container. */
static int add_gpu_request(struct ctx *c, const char *res, long long count)
{
    yyjson_val *first = yyjson_arr_get(yyjson_obj_get(c->spec, "containers"), 0);
    yyjson_val *resources = yyjson_obj_get(first, "resources");
    static const char *const lists[] = {"limits", "requests"};
    char qty[32];

    snprintf(qty, sizeof(qty), "%lld", count);
    if (!yyjson_is_obj(resources))
        return add_at(c, "/containers/0/resources", NULL, 0,
                      json_pack(PATCH_OUT(c), "{s:{s:s}, s:{s:s}}", "limits", res, qty, "requests",
                                res, qty));
    /* resources is the object before these two operations: they add to it, it stays one */
    for (size_t i = 0; i < 2; i++) {
        const char *path[] = {lists[i], res};

        if (yyjson_is_obj(yyjson_obj_get(resources, lists[i]))) {
            if (add_op(c, "/containers/0/resources", path, 2,
                       yyjson_mut_strcpy(PATCH_OUT(c), qty)) < 0)
                return resync(c), -1;
        } else if (add_op(c, "/containers/0/resources", path, 1,
                          json_pack(PATCH_OUT(c), "{s:s}", res, qty)) < 0) {
            return resync(c), -1;
        }
    }
    return resync(c);
}

/*
 * Whether a container (or init container) asks for devices through Dynamic Resource Allocation:
 * its resources.claims name an entry of spec.resourceClaims. NVIDIA's DRA driver serves GPUs so
 * (device classes gpu.nvidia.com, mig.nvidia.com). The view holds no ResourceClaim or
 * ResourceClaimTemplate, so the claim's device class is not known here: a claim is taken as a
 * GPU request by the gpu-request rule (it asks a driver for its devices, not the node for all).
 */
static bool claims_devices(yyjson_val *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_val *c, *cl, *pc;
    size_t i, k, m;

    for (size_t l = 0; l < 2; l++) {
        ARR_EACH (yyjson_obj_get(spec, lists[l]), i, c) {
            ARR_EACH (yyjson_obj_get(yyjson_obj_get(c, "resources"), "claims"), k, cl) {
                const char *name = json_str(yyjson_obj_get(cl, "name"));

                ARR_EACH (yyjson_obj_get(spec, "resourceClaims"), m, pc) {
                    const char *n = json_str(yyjson_obj_get(pc, "name"));

                    if (name != NULL && n != NULL && strcmp(name, n) == 0)
                        return true;
                }
            }
        }
    }
    return false;
}

/*
 * Ways to reach GPUs around the device plugin, judged per container. A container gets GPUs
 * only through its own request (or, for an init container, the devices the kubelet's device
 * manager allocates to it): a GPU request in one container opens nothing for the others, and a
 * GPU pod lands on a GPU node, where each of its other containers can take every GPU by one of
 * these. So each is refused in every container (init containers too) of a pod that requests
 * GPUs or can reach GPU nodes, and a user-set NVIDIA_VISIBLE_DEVICES in every pod.
 */
static void bypasses(struct ctx *c, const struct gpu_request_settings *g,
                     const struct pod_demand *dm, bool dra)
{
    char why[300], value[64 * 6 + 32];
    yyjson_val *x;
    const char *hp, *key, *val = NULL;
    bool reachable = dm->n > 0 || dra;

    if (dm->n > 0)
        snprintf(why, sizeof(why), "it requests %s", dm->r[0].name);
    else if (dra)
        snprintf(why, sizeof(why), "it claims devices through resourceClaims");
    else
        reachable = reaches_gpu_nodes(c, why, sizeof(why));
    if (g->deny_visible_devices_env &&
        (x = pod_find_container(c->spec, pod_sets_visible_devices))) {
        pod_visible_devices_value(x, value, sizeof(value));
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" sets NVIDIA_VISIBLE_DEVICES%s, which the NVIDIA runtime "
                    "honours around the device plugin (it can expose every GPU of the node); "
                    "remove the variable (or set it to void), and request "
                    "resources.limits[\"%s\"] where the container needs a GPU",
                    container_name(x), value, g->default_resource);
    }
    if (!reachable)
        return;
    if (g->deny_privileged && (x = pod_find_container(c->spec, pod_is_privileged)))
        add_problem(c->problem, sizeof(c->problem),
                    "privileged container \"%s\" can reach GPU devices (a privileged container "
                    "sees all of the node's /dev, whatever it requests) and the pod can reach GPU "
                    "nodes (%s); drop securityContext.privileged and add only the capabilities it "
                    "needs",
                    container_name(x), why);
    if (g->deny_visible_devices_env && g->deny_env_from &&
        (x = pod_find_container(c->spec, pod_has_env_from)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" can reach GPU nodes (%s) and takes its environment from "
                    "envFrom, which may set NVIDIA_VISIBLE_DEVICES or CUDA_VERSION unseen; give "
                    "each envFrom entry a prefix (e.g. APP_) or set its variables with env",
                    container_name(x), why);
    if (g->deny_visible_devices_env && (x = pod_find_container(c->spec, pod_cuda_env_unsafe)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so that the "
                    "NVIDIA runtime takes it for a legacy CUDA image, which gets every GPU of the "
                    "node without NVIDIA_VISIBLE_DEVICES, and the pod can reach GPU nodes (%s); "
                    "remove CUDA_VERSION (or set NVIDIA_REQUIRE_CUDA, e.g. cuda>=12.0), or set "
                    "NVIDIA_VISIBLE_DEVICES=void in that container",
                    container_name(x), why);
    if (g->deny_dev_host_path && (hp = pod_dev_host_path(c->spec)))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume \"%s\" exposes GPU device nodes to every container that "
                    "mounts it, around the device plugin, and the pod can reach GPU nodes (%s); "
                    "remove the volume",
                    hp, why);
    if (g->deny_dev_host_path && (x = pod_find_container(c->spec, pod_mounts_device_list)))
        add_problem(c->problem, sizeof(c->problem),
                    "container \"%s\" mounts a volume at %s, where the NVIDIA runtime hook reads "
                    "the devices to hand over (a volume-mount device list, around the device "
                    "plugin), and the pod can reach GPU nodes (%s); mount it elsewhere",
                    container_name(x), pod_device_list_mount(x), why);
    if (g->deny_dev_host_path && (hp = pod_runtime_socket_host_path(c->spec)))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume \"%s\" reaches the container runtime's socket, through "
                    "which a container can start a privileged container with every GPU of the "
                    "node, and the pod can reach GPU nodes (%s); remove the volume",
                    hp, why);
    if (g->deny_dev_host_path && pod_dev_null_host_path(c->spec))
        add_problem(c->problem, sizeof(c->problem),
                    "hostPath volume /dev/null is the device plugin's placeholder for a "
                    "volume-mount device list entry, and the pod can reach GPU nodes (%s); "
                    "remove the volume (use an emptyDir where a container needs an empty file)",
                    why);
    if (g->deny_dev_host_path && (key = cdi_nvidia_annotation(c, &val))) {
        char shown[64 + 4];

        text_excerpt(val, strlen(val), 64, shown, sizeof(shown));
        add_problem(c->problem, sizeof(c->problem),
                    "annotation %s: %s asks the container runtime for NVIDIA devices around the "
                    "device plugin, and the pod can reach GPU nodes (%s); remove it and request "
                    "resources.limits[\"%s\"]",
                    key, shown, why, g->default_resource);
    }
}

/*
 * What a pod that targets GPU nodes but requests no GPU resource of the policy is told. When the
 * rule's default resource is not one of the policy's (a Deny rule of a policy for MIG or shared
 * GPUs only), the policy's resources are named instead; and when the pod asks for an NVIDIA
 * resource that the policy does not count, that is said, since the pod does request a GPU, of
 * another kind of GPU node: gpu.pools of one policy describes both.
 */
static void no_gpu_text(struct ctx *c, const struct gpu_request_settings *g, const char *container,
                        const char *why, char *out, size_t len)
{
    struct pod_demand all;
    struct diag d;
    char list[256] = "";
    const char *other = NULL;

    for (size_t i = 0, at = 0; i < c->doc->gpu_resources.n && at < sizeof(list); i++)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "",
                               c->doc->gpu_resources.v[i]);
    diag_clear(&d);
    if (pod_gpu_demand(c->spec, NULL, &all, &d) == 0)
        for (size_t i = 0; i < all.n && other == NULL; i++)
            if (strncmp(all.r[i].name, "nvidia.com/", 11) == 0)
                other = all.r[i].name;
    if (other == NULL && pod_glob_any(&c->doc->gpu_resources, g->default_resource))
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) but requests no %s; add "
                 "resources.limits[\"%s\"]",
                 container, why, g->default_resource, g->default_resource);
    else if (other != NULL)
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) and the pod requests %s, which is not "
                 "a GPU resource of policy %s (%s); describe each kind of GPU node as a pool in "
                 "gpu.pools of one policy",
                 container, why, other, c->doc->name, list);
    else
        snprintf(out, len,
                 "container \"%s\" targets GPU nodes (%s) but requests none of this policy's "
                 "GPU resources (%s); add one to resources.limits",
                 container, why, list);
}
static enum verdict judge(struct ctx *c, const struct rule *ru)
{
    const struct gpu_request_settings *g = ru->settings;
    struct pod_demand dm;
    struct diag d;
    char why[300];
    yyjson_val *first = yyjson_arr_get(yyjson_obj_get(c->spec, "containers"), 0);
    bool fixed = false, dra = claims_devices(c->spec);

    diag_clear(&d);
    if (spec_demand(c, &dm, &d) < 0) {
        add_problem(c->problem, sizeof(c->problem), "%s", d.msg);
        return V_PROBLEM;
    }
    if (dm.n == 0 && !dra && pod_targets(c, why, sizeof(why))) {
        char desc[MSG_MAX];

        no_gpu_text(c, g, container_name(first), why, desc, sizeof(desc));
        if (c->fix && first != NULL &&
            add_gpu_request(c, g->default_resource, (long long)g->default_count) == 0) {
            add_problem(c->fixable, sizeof(c->fixable), "%s", desc);
            add_text(c->fixed, sizeof(c->fixed), "added %lld %s to container \"%s\"",
                     (long long)g->default_count, g->default_resource, container_name(first));
            fixed = true;
            spec_demand(c, &dm, &d);
        } else {
            add_problem(c->problem, sizeof(c->problem), "%s", desc);
        }
    }
    bypasses(c, g, &dm, dra);
    for (size_t i = 0; g->max_per_pod > 0 && i < dm.n; i++) {
        if (dm.r[i].milli > g->max_per_pod * 1000)
            add_problem(c->problem, sizeof(c->problem),
                        "pod requests %lld %s, more than the maximum of %lld per pod",
                        (long long)(dm.r[i].milli / 1000), dm.r[i].name, (long long)g->max_per_pod);
    }
    return c->problem[0] ? V_PROBLEM : fixed ? V_FIXED : V_OK;
}

/* Whether the old object already had an ephemeral container of this name. */
static bool ephemeral_existed(const struct review *r, const char *name)
{
    yyjson_val *old = patch_get(r->old_object, "/spec/ephemeralContainers"), *c;
    size_t i;

    ARR_EACH (old, i, c) {
        if (strcmp(container_name(c), name) == 0)
            return true;
    }
    return false;
}

/* pods/ephemeralcontainers: a debug container joins a pod already on its node; it cannot ask
 * the device plugin for anything, so one that sets NVIDIA_VISIBLE_DEVICES (or may, through
 * envFrom) or runs privileged would see every GPU of the node. */
static enum verdict judge_ephemeral(struct ctx *c, const struct rule *ru)
{
    const struct gpu_request_settings *g = ru->settings;
    yyjson_val *list = yyjson_obj_get(c->spec, "ephemeralContainers"), *x;
    yyjson_val *node = yyjson_obj_get(c->spec, "nodeName");
    size_t i;

    /* kubectl debug --profile=sysadmin on a node the view knows has no GPU: nothing to reach */
    if (yyjson_is_str(node) && node_kind(c, json_str(node)) == 0)
        return V_OK;
    ARR_EACH (list, i, x) {
        if (ephemeral_existed(c->r, container_name(x)))
            continue;
        if (g->deny_visible_devices_env &&
            (pod_sets_visible_devices(x) || (g->deny_env_from && pod_has_env_from(x)) ||
             pod_cuda_env_unsafe(x)))
            add_problem(
                c->problem, sizeof(c->problem),
                "ephemeral container \"%s\" sets NVIDIA_VISIBLE_DEVICES%s, which would "
                "expose every GPU of the node; debug without it",
                container_name(x),
                pod_sets_visible_devices(x) ? ""
                : (g->deny_env_from && pod_has_env_from(x))
                    ? " (or may, via envFrom)"
                    : " in effect (CUDA_VERSION without NVIDIA_REQUIRE_CUDA makes a legacy CUDA "
                      "image, which gets \"all\")");
        if (g->deny_privileged && pod_is_privileged(x))
            add_problem(c->problem, sizeof(c->problem),
                        "privileged ephemeral container \"%s\" can reach every GPU of the node; "
                        "debug without privileged (e.g. kubectl debug --profile=general)",
                        container_name(x));
    }
    return c->problem[0] ? V_PROBLEM : V_OK;
}

static void settings_free(void *settings)
{
    struct gpu_request_settings *g = settings;

    if (g != NULL)
        free(g->default_resource);
    free(g);
}

const struct rule_ops rule_gpu_request_ops = {
    .keys = KEYS,
    .n_keys = GR_N,
    .load = load,
    .free = settings_free,
    .judge = judge,
    .ephemeral = judge_ephemeral,
    .first = true,
};

const struct gpu_request_settings *gpu_request_settings(const struct rule *r)
{
    return rule_settings_of(r, &rule_gpu_request_ops);
}
