/*
 * cluster.c: the cached cluster view (see cluster.h; records in cluster_view.h).
 *
 * Invariants: every pod record is in exactly one binding list, that of its node name (unbound
 * pods are in none); a record's key is its name (nodes, classes), "NS/NAME" (pods) or
 * "NS/NAME" in the workload kind's own table; amounts are whole units of extended resources.
 */
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "cluster_view.h"
#include "json.h"
#include "bounds.h"
#include "mono.h"
#include "parse.h"
#include "policy/pod.h"
#include "quantity.h"

static const struct {
    const char *path, *object, *plural, *selector;
    bool optional;
} kinds[CLUSTER_KINDS] = {
    [CLUSTER_NODES] = {"/api/v1/nodes", "Node", "nodes", "", false},
    [CLUSTER_PODS] = {"/api/v1/pods", "Pod", "pods",
                      "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
                      false},
    [CLUSTER_PRIORITYCLASSES] = {"/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass",
                                 "priorityclasses", "", false},
    /* RBAC lets gpuadmit read this one ConfigMap: the list names it (a list or watch with a
     * metadata.name field selector carries that name in its RequestInfo, which RBAC's
     * resourceNames match: k8s.io/apiserver pkg/endpoints/request/requestinfo.go, and
     * handlers/get.go ListResource) */
    [CLUSTER_AUTOSCALER_STATUS] = {"/api/v1/namespaces/kube-system/configmaps", "ConfigMap",
                                   "configmaps",
                                   "fieldSelector=metadata.name%3Dcluster-autoscaler-status", true},
    [CLUSTER_NODEPOOLS] = {"/apis/karpenter.sh/v1/nodepools", "NodePool", "nodepools", "", true},
    /* read ConfigMap by ConfigMap (kube.c lists each by name, which RBAC's resourceNames
     * match): the path is a namespace's, cluster_plugin_config_path() */
    [CLUSTER_PLUGIN_CONFIGS] = {"/api/v1/configmaps", "ConfigMap", "deviceplugin-configmaps", "",
                                true},
    [CLUSTER_REPLICASETS] = {"/apis/apps/v1/replicasets", "ReplicaSet", "replicasets", "", false},
    [CLUSTER_DEPLOYMENTS] = {"/apis/apps/v1/deployments", "Deployment", "deployments", "", false},
    [CLUSTER_STATEFULSETS] = {"/apis/apps/v1/statefulsets", "StatefulSet", "statefulsets", "",
                              false},
    [CLUSTER_JOBS] = {"/apis/batch/v1/jobs", "Job", "jobs", "", false},
};

const char *cluster_kind_path(enum cluster_kind k)
{
    return kinds[k].path;
}

const char *cluster_kind_object(enum cluster_kind k)
{
    return kinds[k].object;
}

const char *cluster_kind_plural(enum cluster_kind k)
{
    return kinds[k].plural;
}

const char *cluster_kind_selector(enum cluster_kind k)
{
    return kinds[k].selector;
}

static bool kind_namespaced(enum cluster_kind k)
{
    return k != CLUSTER_NODES && k != CLUSTER_PRIORITYCLASSES && k != CLUSTER_NODEPOOLS;
}

bool cluster_kind_optional(enum cluster_kind k)
{
    return kinds[k].optional;
}

int cluster_kind_of(const char *kind)
{
    for (int k = 0; kind != NULL && k < CLUSTER_KINDS; k++) {
        if (strcmp(kinds[k].object, kind) == 0)
            return k;
    }
    return -1;
}

static bool older_than(const struct table_entry *e, unsigned gen)
{
    return e->gen != gen;
}

/* ---- interned resource names ---- */

/* The interned copy of name, with one more user; NULL when out of memory. */
static const char *rname_take(struct cluster *c, const char *name)
{
    struct table_entry *e = table_entry_of(&c->rnames, name);

    if (e == NULL) {
        if (table_put(&c->rnames, name, NULL, 0) < 0)
            return NULL;
        e = table_entry_of(&c->rnames, name);
    }
    e->value = (void *)((uintptr_t)e->value + 1);
    return e->key;
}

/* One user less of an interned name (NULL: none); the last one frees it. */
static void rname_drop(struct cluster *c, const char *name)
{
    struct table_entry *e = name != NULL ? table_entry_of(&c->rnames, name) : NULL;

    if (e != NULL && (e->value = (void *)((uintptr_t)e->value - 1)) == NULL)
        table_del(&c->rnames, e->key);
}

const char *cluster_rname(const struct cluster *c, const char *name)
{
    const struct table_entry *e = table_entry_of(&c->rnames, name);

    return e != NULL ? e->key : NULL;
}

/* ---- what decisions read of a node's resource (struct res_sum) ---- */

/* A cleared slot of c->sums, or 0 when out of memory (the decisions then read the records). */
static uint32_t sum_new(struct cluster *c)
{
    uint32_t i;

    if (c->free_sum != 0) {
        i = c->free_sum;
        c->free_sum = (uint32_t)c->sums[i].used;
    } else {
        if (c->n_sums == 0)
            c->n_sums = 1; /* slot 0 means none */
        if (c->n_sums >= c->cap_sums) {
            uint32_t cap = c->cap_sums ? c->cap_sums * 2 : 64;
            struct res_sum *grown =
                cap > c->cap_sums ? aligned_alloc(64, (size_t)cap * sizeof(*grown)) : NULL;

            if (grown == NULL)
                return 0;
            if (c->sums != NULL)
                memcpy(grown, c->sums, (size_t)c->n_sums * sizeof(*grown));
            free(c->sums);
            c->sums = grown;
            c->cap_sums = cap;
        }
        i = c->n_sums++;
    }
    memset(&c->sums[i], 0, sizeof(c->sums[i]));
    return i;
}

static void sum_free(struct cluster *c, uint32_t i)
{
    if (i == 0)
        return;
    memset(&c->sums[i], 0, sizeof(c->sums[i]));
    c->sums[i].used = c->free_sum;
    c->free_sum = i;
}

static bool fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* Copies what decisions read of r, a resource of node n, into its res_sum. */
static void sum_refresh(struct cluster *c, const struct node *n, const struct node_res *r)
{
    struct res_sum *s = r->sum != 0 ? &c->sums[r->sum] : NULL;
    const struct bound_res *br = NULL;

    if (s == NULL)
        return;
    memset(s, 0, sizeof(*s)); /* prio_n past n_prio stays 0: decisions sum all slots */
    s->name = r->name;
    s->allocatable = r->allocatable;
    /* cluster_effective_allocatable would depend on the time */
    s->exact = !(r->allocatable == 0 && r->zero_since > 0 && r->last_allocatable > 0);
    for (size_t k = 0; n->binding != NULL && k < n->binding->n_res; k++) {
        if (n->binding->res[k].name == r->name)
            br = &n->binding->res[k];
    }
    if (br == NULL)
        return;
    s->used = br->total;
    if (br->n_prio > RES_SUM_PRIO) {
        s->exact = false;
        return;
    }
    for (size_t p = 0; p < br->n_prio; p++) {
        if (!fits_i32(br->prio[p].priority) || !fits_i32(br->prio[p].n))
            s->exact = false;
        s->prio[p] = (int32_t)br->prio[p].priority;
        s->prio_n[p] = (int32_t)br->prio[p].n;
    }
    s->n_prio = (uint8_t)br->n_prio;
}

static void node_sums_refresh(struct cluster *c, const struct node *n)
{
    for (size_t i = 0; i < n->n_res; i++)
        sum_refresh(c, n, &n->res[i]);
}

/* ---- records ---- */

static void node_free(void *ctx, void *p)
{
    struct node *n = p;

    if (n == NULL)
        return;
    free(n->name);
    yyjson_doc_free(n->labels_doc);
    for (size_t i = 0; i < n->n_taints; i++) {
        free(n->taints[i].key);
        free(n->taints[i].value);
        free(n->taints[i].effect);
    }
    free(n->taints);
    for (size_t i = 0; i < n->n_res; i++) {
        sum_free(ctx, n->res[i].sum);
        rname_drop(ctx, n->res[i].name);
    }
    free(n->res);
    free(n);
}

static void vdoc_unref(struct vdoc *v);

static struct vstr *vstr_new(const char *s)
{
    size_t n = strlen(s);
    struct vstr *v = malloc(sizeof(*v) + n + 1);

    if (v != NULL) {
        v->refs = 1;
        memcpy(v->s, s, n + 1);
    }
    return v;
}

static struct vstr *vstr_ref(struct vstr *v)
{
    if (v != NULL)
        v->refs++;
    return v;
}

static void vstr_unref(struct vstr *v)
{
    if (v != NULL && --v->refs == 0)
        free(v);
}

static void vpending_free(struct vpending *p)
{
    if (p == NULL)
        return;
    vdoc_unref(p->spec);
    free(p->cond_reason);
    vstr_unref(p->cond_message);
    free(p->scheduler);
    free(p->nominated);
    free(p->gate);
    free(p);
}

static void vpod_free(void *p)
{
    struct vpod *v = p;

    if (v == NULL)
        return;
    vpending_free(v->pend);
    free(v->node);
    free(v->owner);
    for (size_t i = 0; i < v->n_demand; i++)
        free(v->demand[i].name);
    free(v->demand);
    free(v);
}

static void binding_free(void *ctx, void *p)
{
    struct binding *b = p;

    if (b != NULL) {
        for (size_t i = 0; i < b->n_res; i++) {
            rname_drop(ctx, b->res[i].name);
            free(b->res[i].prio);
        }
        free(b->pods);
        free(b->res);
    }
    free(b);
}

static void waiter_update(struct cluster *c, struct waiter *w);

/* A new shared document of one reference (doc taken: freed when out of memory), or NULL. */
static struct vdoc *vdoc_new(yyjson_doc *doc)
{
    struct vdoc *v = doc != NULL ? malloc(sizeof(*v)) : NULL;

    if (v == NULL) {
        yyjson_doc_free(doc);
        return NULL;
    }
    v->doc = doc;
    v->refs = 1;
    return v;
}

static struct vdoc *vdoc_ref(struct vdoc *v)
{
    if (v != NULL)
        v->refs++;
    return v;
}

static void vdoc_unref(struct vdoc *v)
{
    if (v != NULL && --v->refs == 0) {
        yyjson_doc_free(v->doc);
        free(v);
    }
}

static void workload_free(void *ctx, void *p)
{
    struct workload *w = p;

    if (w == NULL)
        return;
    if (w->waiter != NULL && w->waiter->rec == w) { /* not replaced by a newer record */
        w->waiter->rec = NULL;
        w->waiter->wants = -1;
        waiter_update(ctx, w->waiter);
    }
    vdoc_unref(w->spec_doc);
    free(w->owner_deployment);
    free(w);
}

/* The string member key of obj, or "" when absent, not a string, or a string with a NUL byte
 * in it: names, kinds and phases are C strings here, and the apiserver allows no NUL in them
 * (jansson, before yyjson, refused "\u0000" when it read the page). */
static const char *str_at(yyjson_val *obj, const char *key)
{
    yyjson_val *v = yyjson_obj_get(obj, key);
    const char *s = yyjson_get_str(v);

    return s != NULL && strlen(s) == yyjson_get_len(v) ? s : "";
}

/* An integer member as jansson's json_integer_value read it: 0 when absent or not one (or
 * beyond int64). */
static int64_t int_at(yyjson_val *obj, const char *key)
{
    int64_t v;

    return json_int64(yyjson_obj_get(obj, key), &v) ? v : 0;
}

/* a, then "/b" and "/c" for those not NULL, into buf (len > 0 bytes), cut as snprintf cuts:
 * keys are made for every object of a list, where snprintf's cost showed. */
static void vautoscaler_free(void *ctx, void *p)
{
    struct vautoscaler *v = p;

    (void)ctx;
    if (v != NULL)
        ca_status_free(&v->st);
    free(v);
}

static void vplugin_free(void *ctx, void *p)
{
    struct vplugin_config *v = p;

    (void)ctx;
    for (size_t i = 0; v != NULL && i < v->n_keys; i++)
        free(v->keys[i].name);
    free(v);
}

/* Whether the view keeps ConfigMap ns/name as a device plugin config. The caller holds the
 * lock. */
static bool plugin_wanted(const struct cluster *c, const char *ns, const char *name)
{
    for (size_t i = 0; i < c->n_plugin_refs; i++)
        if (strcmp(c->plugin_refs[i].ns, ns) == 0 && strcmp(c->plugin_refs[i].name, name) == 0)
            return true;
    return false;
}

/* A device plugin config ConfigMap: its data keys and what each shares; NULL with *skip for one
 * the policy does not name. */
static struct vplugin_config *vplugin_from_json(const struct cluster *c, yyjson_val *obj,
                                                bool *skip)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata"), *key, *val;
    yyjson_val *data = yyjson_obj_get(obj, "data");
    struct vplugin_config *v;
    size_t i, max;

    *skip = !plugin_wanted(c, str_at(meta, "namespace"), str_at(meta, "name"));
    if (*skip || (v = calloc(1, sizeof(*v))) == NULL)
        return NULL;
    yyjson_obj_foreach (data, i, max, key, val) {
        struct vplugin_key *k;

        if (!yyjson_is_str(val))
            continue;
        if (v->n_keys == VPLUGIN_KEYS_MAX) {
            v->n_more++;
            continue;
        }
        k = &v->keys[v->n_keys];
        if ((k->name = strndup(yyjson_get_str(key), yyjson_get_len(key))) == NULL) {
            vplugin_free(NULL, v);
            return NULL;
        }
        plugin_config_sharing(yyjson_get_str(val), yyjson_get_len(val), &k->sh);
        v->n_keys++;
    }
    return v;
}

/* Whether device plugin configs a and b (a may be NULL) say the same. */
static bool vplugin_same(const struct vplugin_config *a, const struct vplugin_config *b)
{
    if (a == NULL || a->n_keys != b->n_keys || a->n_more != b->n_more)
        return false;
    for (size_t i = 0; i < a->n_keys; i++)
        if (strcmp(a->keys[i].name, b->keys[i].name) != 0 ||
            memcmp(&a->keys[i].sh, &b->keys[i].sh, sizeof(a->keys[i].sh)) != 0)
            return false;
    return true;
}

void cluster_plugin_configs_want(struct cluster *c, const struct cluster_cm_ref *refs, size_t n)
{
    static const struct cluster_cm_ref defaults[] = {
        {"gpu-operator", "time-slicing-config"},
        {"kube-system", "time-slicing-config"},
        {"kube-system", "nvidia-device-plugin-config"}};
    struct table *t = &c->kinds[CLUSTER_PLUGIN_CONFIGS];
    char gone[CLUSTER_PLUGIN_CONFIGS_MAX][320];
    size_t n_gone = 0;

    if (n == 0) {
        refs = defaults;
        n = sizeof(defaults) / sizeof(defaults[0]);
    }
    if (n > CLUSTER_PLUGIN_CONFIGS_MAX)
        n = CLUSTER_PLUGIN_CONFIGS_MAX;
    pthread_rwlock_wrlock(&c->lock);
    memcpy(c->plugin_refs, refs, n * sizeof(*refs));
    c->n_plugin_refs = n;
    for (size_t b = 0; b < t->n_buckets; b++)
        for (struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const char *slash = strchr(e->key, '/');
            char ns[64];

            snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - e->key) : 0, e->key);
            if (slash != NULL && !plugin_wanted(c, ns, slash + 1) &&
                n_gone < CLUSTER_PLUGIN_CONFIGS_MAX)
                snprintf(gone[n_gone++], sizeof(gone[0]), "%s", e->key);
        }
    for (size_t i = 0; i < n_gone; i++)
        table_del(t, gone[i]);
    if (n_gone > 0)
        c->node_gen++;
    pthread_rwlock_unlock(&c->lock);
}

size_t cluster_plugin_configs_wanted(struct cluster *c, struct cluster_cm_ref *out)
{
    size_t n;

    pthread_rwlock_rdlock(&c->lock);
    n = c->n_plugin_refs;
    memcpy(out, c->plugin_refs, n * sizeof(*out));
    pthread_rwlock_unlock(&c->lock);
    return n;
}

static void vnodepool_free(void *ctx, void *p)
{
    struct vnodepool *v = p;

    (void)ctx;
    if (v != NULL)
        karpenter_pool_free(&v->p);
    free(v);
}

/* The Cluster Autoscaler's status, or NULL (with *skip) for another ConfigMap. A status that
 * does not parse is kept with its error: the autoscaler's headroom is then unknown, and said
 * so. */
static struct vautoscaler *vautoscaler_from_json(yyjson_val *obj, bool *skip)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata");
    yyjson_val *status = yyjson_obj_get(yyjson_obj_get(obj, "data"), "status");
    struct vautoscaler *v;
    struct diag d;
    char where[DIAG_MSG_MAX + 64];

    *skip = strcmp(str_at(meta, "namespace"), "kube-system") != 0 ||
            strcmp(str_at(meta, "name"), "cluster-autoscaler-status") != 0;
    if (*skip || (v = calloc(1, sizeof(*v))) == NULL)
        return NULL;
    snprintf(v->updated, sizeof(v->updated), "%s",
             str_at(yyjson_obj_get(meta, "annotations"),
                    "cluster-autoscaler.kubernetes.io/last-updated"));
    diag_clear(&d);
    if (!yyjson_is_str(status))
        diag_set(&d, NULL, 0, 0, "no data.status string");
    else if (ca_status_parse(yyjson_get_str(status), yyjson_get_len(status), &v->st, &d) == 0)
        v->ok = true;
    if (!v->ok) {
        ca_status_free(&v->st);
        memset(&v->st, 0, sizeof(v->st));
        snprintf(v->error, sizeof(v->error), "data.status:%s",
                 diag_format(&d, where, sizeof(where)));
    }
    return v;
}

/* A NodePool of karpenter.sh, or NULL (with *skip) for a NodePool of another API group. */
static struct vnodepool *vnodepool_from_json(yyjson_val *obj, bool *skip)
{
    struct vnodepool *v;
    struct diag d;

    *skip = strncmp(str_at(obj, "apiVersion"), "karpenter.sh/", 13) != 0;
    if (*skip || (v = calloc(1, sizeof(*v))) == NULL)
        return NULL;
    diag_clear(&d);
    if (karpenter_pool_parse(obj, &v->p, &d) == 0) {
        v->ok = true;
    } else {
        karpenter_pool_free(&v->p);
        memset(&v->p, 0, sizeof(v->p));
        snprintf(v->error, sizeof(v->error), "%s", d.msg);
    }
    return v;
}

static void key_join(char *buf, size_t len, const char *a, const char *b, const char *c)
{
    const char *part[3] = {a, b, c};
    size_t at = 0;

    for (int i = 0; i < 3 && part[i] != NULL; i++) {
        size_t n = strlen(part[i]);

        if (i > 0 && at + 1 < len)
            buf[at++] = '/';
        if (n > len - 1 - at)
            n = len - 1 - at;
        memcpy(buf + at, part[i], n);
        at += n;
    }
    buf[at] = '\0';
}

/* "NS/NAME" of an object, or "NAME" for a cluster-scoped one; -1 without a name. */
static int object_key(yyjson_val *obj, bool namespaced, char *buf, size_t len)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata");
    const char *name = str_at(meta, "name");

    if (name[0] == '\0')
        return -1;
    if (namespaced)
        key_join(buf, len, str_at(meta, "namespace"), name, NULL);
    else
        key_join(buf, len, name, NULL, NULL);
    return 0;
}

static struct node_res *node_res_slot(struct cluster *c, struct node *n, const char *name)
{
    struct node_res *grown;

    for (size_t i = 0; i < n->n_res; i++) {
        if (strcmp(n->res[i].name, name) == 0)
            return &n->res[i];
    }
    grown = realloc(n->res, (n->n_res + 1) * sizeof(*n->res));
    if (grown == NULL)
        return NULL;
    n->res = grown;
    memset(&n->res[n->n_res], 0, sizeof(*n->res));
    n->res[n->n_res].name = rname_take(c, name);
    if (n->res[n->n_res].name == NULL)
        return NULL;
    return &n->res[n->n_res++];
}

/* capacity/allocatable maps into the node's resources, whole units. */
static int node_read_amounts(struct cluster *c, struct node *n, yyjson_val *map, bool alloc)
{
    const char *name;
    yyjson_val *k, *v;
    size_t i, max;
    int64_t milli;
    struct node_res *r;

    yyjson_obj_foreach (map, i, max, k, v) {
        name = yyjson_get_str(k);
        if (!alloc && (strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0) &&
            quantity_json_milli(v, &milli) == 0 && milli > 0)
            *(name[0] == 'c' ? &n->cpu_milli : &n->memory_milli) = milli;
        if (strlen(name) != yyjson_get_len(k) || !pod_is_extended(name) ||
            quantity_json_milli(v, &milli) < 0 || milli < 0)
            continue;
        if ((r = node_res_slot(c, n, name)) == NULL)
            return -1;
        if (alloc)
            r->allocatable = milli / 1000;
        else
            r->capacity = milli / 1000;
    }
    return 0;
}

static bool node_ready(yyjson_val *status)
{
    yyjson_val *conds = yyjson_obj_get(status, "conditions"), *cnd;
    size_t i, max;

    yyjson_arr_foreach (conds, i, max, cnd) {
        if (strcmp(str_at(cnd, "type"), "Ready") == 0)
            return strcmp(str_at(cnd, "status"), "True") == 0;
    }
    return false;
}

static struct node *node_from_json(struct cluster *c, yyjson_val *obj)
{
    yyjson_val *spec = yyjson_obj_get(obj, "spec"), *status = yyjson_obj_get(obj, "status");
    yyjson_val *labels = yyjson_obj_get(yyjson_obj_get(obj, "metadata"), "labels");
    yyjson_val *taints = yyjson_obj_get(spec, "taints"), *t;
    struct node *n = calloc(1, sizeof(*n));
    size_t i, max;

    if (n == NULL)
        return NULL;
    n->name = strdup(str_at(yyjson_obj_get(obj, "metadata"), "name"));
    n->ready = node_ready(status);
    n->unschedulable = yyjson_is_true(yyjson_obj_get(spec, "unschedulable"));
    /* a copy: the page or event the labels come from is freed once read */
    n->labels_doc = yyjson_is_obj(labels) ? json_keep(labels) : yyjson_read("{}", 2, 0);
    n->labels = yyjson_doc_get_root(n->labels_doc);
    n->taints = calloc(yyjson_arr_size(taints) + 1, sizeof(*n->taints));
    if (n->name == NULL || n->labels == NULL || n->taints == NULL)
        goto fail;
    yyjson_arr_foreach (taints, i, max, t) {
        struct node_taint *nt = &n->taints[n->n_taints++];

        nt->key = strdup(str_at(t, "key"));
        nt->value = strdup(str_at(t, "value"));
        nt->effect = strdup(str_at(t, "effect"));
        if (nt->key == NULL || nt->value == NULL || nt->effect == NULL)
            goto fail;
    }
    if (node_read_amounts(c, n, yyjson_obj_get(status, "capacity"), false) < 0 ||
        node_read_amounts(c, n, yyjson_obj_get(status, "allocatable"), true) < 0)
        goto fail;
    return n;
fail:
    node_free(c, n);
    return NULL;
}

/* Carries the device-plugin grace over from the node's previous state. */
static size_t node_offered(const struct node *n)
{
    size_t k = 0;

    for (size_t i = 0; i < n->n_res; i++)
        k += node_res_offered(&n->res[i]);
    return k;
}

/* Whether b decides where pods can go exactly as a does: same labels, taints, readiness,
 * cordon and offered resources (amounts may differ). */
static bool node_same_place(const struct node *a, const struct node *b)
{
    if (a->ready != b->ready || a->unschedulable != b->unschedulable ||
        a->n_taints != b->n_taints || !yyjson_equals(a->labels, b->labels) ||
        node_offered(a) != node_offered(b))
        return false;
    for (size_t i = 0; i < a->n_taints; i++) {
        if (strcmp(a->taints[i].key, b->taints[i].key) != 0 ||
            strcmp(a->taints[i].value, b->taints[i].value) != 0 ||
            strcmp(a->taints[i].effect, b->taints[i].effect) != 0)
            return false;
    }
    for (size_t i = 0; i < b->n_res; i++) {
        bool found = false;

        if (!node_res_offered(&b->res[i]))
            continue;
        for (size_t k = 0; !found && k < a->n_res; k++)
            found = node_res_offered(&a->res[k]) && a->res[k].name == b->res[i].name;
        if (!found)
            return false;
    }
    return true;
}

static void node_carry_grace(struct node *n, const struct node *old, double now)
{
    for (size_t i = 0; i < n->n_res; i++) {
        struct node_res *r = &n->res[i];
        const struct node_res *o = NULL;

        for (size_t k = 0; old != NULL && k < old->n_res; k++) {
            if (old->res[k].name == r->name)
                o = &old->res[k];
        }
        if (r->allocatable > 0) {
            r->last_allocatable = r->allocatable;
            continue;
        }
        if (o == NULL || r->capacity == 0)
            continue;
        r->last_allocatable = o->allocatable > 0 ? o->allocatable : o->last_allocatable;
        r->zero_since = o->zero_since > 0 ? o->zero_since : now;
    }
}

/* nvidia.com/gpu.replicas of 2 or more: a number, however long (a label may hold more digits
 * than 64 bits do; the device plugin's labeller writes a small one). */
static bool replicas_shared(const char *s)
{
    uint64_t count;
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || strspn(s, "0123456789") != n)
        return false;
    return parse_uint(s, 2, UINT64_MAX, &count) == 0 || parse_uint(s, 0, 1, &count) != 0;
}

bool cluster_node_shares(const struct node *n, char *why, size_t len)
{
    /* node labels: from the apiserver, which allows no NUL in them */
    const char *strategy = json_get_str(n->labels, "nvidia.com/gpu.sharing-strategy");
    const char *replicas = json_get_str(n->labels, "nvidia.com/gpu.replicas");
    bool shared = (strategy != NULL && strcmp(strategy, "none") != 0) || replicas_shared(replicas);

    if (shared)
        snprintf(why, len, "%s%s%s", strategy ? strategy : "shared",
                 replicas ? ", nvidia.com/gpu.replicas=" : "", replicas ? replicas : "");
    return shared;
}

const char *cluster_node_gpu_label(const struct node *n)
{
    static const char *const keys[] = {
        "nvidia.com/gpu.present",           "feature.node.kubernetes.io/pci-10de.present",
        "k8s.amazonaws.com/accelerator",    "cloud.google.com/gke-accelerator",
        "kubernetes.azure.com/accelerator", "accelerator",
        "aliyun.accelerator/nvidia_name"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = json_get_str(n->labels, keys[i]);

        /* the first two are booleans; a cloud's label holds the GPU's type */
        if (v != NULL && (i > 1 || strcmp(v, "true") == 0))
            return keys[i];
    }
    return NULL;
}

bool cluster_node_offers_nvidia(const struct node *n)
{
    for (size_t i = 0; i < n->n_res; i++)
        if (strncmp(n->res[i].name, "nvidia.com/", 11) == 0 && node_res_offered(&n->res[i]))
            return true;
    return false;
}

bool cluster_node_fails_gt_one(const struct cluster *c, const struct node *n, char *why, size_t len)
{
    const struct table *t = &c->kinds[CLUSTER_PLUGIN_CONFIGS];
    const char *key = json_get_str(n->labels, "nvidia.com/device-plugin.config");
    bool found = false;

    /* the plugin reads one of them (its config.name), which the view cannot tell: every one
     * that has the key must agree */
    for (size_t b = 0; b < t->n_buckets; b++)
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct vplugin_config *v = e->value;
            const struct vplugin_key *k = NULL;

            for (size_t i = 0; key != NULL && k == NULL && i < v->n_keys; i++)
                if (strcmp(v->keys[i].name, key) == 0)
                    k = &v->keys[i];
            /* no label: the config manager's DEFAULT_CONFIG (config.default, which the view
             * cannot see), else its fallbacks (Helm: named "default", then single); only a
             * config's one key is certain (cmd/config-manager/main.go updateConfigName) */
            if (k == NULL && key == NULL && v->n_keys == 1 && v->n_more == 0)
                k = &v->keys[0];
            if (k == NULL)
                continue;
            if (k->sh.strategy == PLUGIN_SHARES_NONE || !k->sh.fail_gt_one)
                return false;
            if (!found)
                snprintf(why, len, "%s in %.120s, key %.60s",
                         k->sh.strategy == PLUGIN_MPS ? "MPS, which sets failRequestsGreaterThanOne"
                                                      : "failRequestsGreaterThanOne",
                         e->key, k->name);
            found = true;
        }
    return found;
}

const char *cluster_class_name(const struct cluster *c, int64_t value)
{
    const struct table *t = &c->kinds[CLUSTER_PRIORITYCLASSES];
    const char *best = NULL;

    for (size_t i = 0; i < t->n_buckets; i++)
        for (const struct table_entry *e = t->buckets[i]; e != NULL; e = e->next)
            if (((const struct vclass *)e->value)->value == value &&
                (best == NULL || strcmp(e->key, best) < 0))
                best = e->key;
    return best;
}

int64_t cluster_effective_allocatable(const struct cluster *c, const struct node_res *r, double now)
{
    if (r->allocatable == 0 && r->zero_since > 0 && r->last_allocatable > 0 &&
        now - r->zero_since < (double)c->cfg.allocatable_grace_s)
        return r->last_allocatable;
    return r->allocatable;
}

static bool pod_terminal(yyjson_val *obj)
{
    const char *phase = str_at(yyjson_obj_get(obj, "status"), "phase");

    return strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
}

/* A copy of s cut to max bytes at a UTF-8 rune's start, or NULL for "" (and out of memory). */
static char *str_keep(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0)
        return NULL;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return strndup(s, n);
}

/* What an unbound pod says of its scheduling (its spec comes with its waiter), or NULL when out
 * of memory. */
static struct vpending *vpending_from_json(yyjson_val *obj)
{
    yyjson_val *spec = yyjson_obj_get(obj, "spec"), *status = yyjson_obj_get(obj, "status");
    yyjson_val *cond;
    struct vpending *p = calloc(1, sizeof(*p));
    const char *sched = str_at(spec, "schedulerName");
    size_t i, max;

    if (p == NULL)
        return NULL;
    yyjson_arr_foreach (yyjson_obj_get(status, "conditions"), i, max, cond) {
        if (strcmp(str_at(cond, "type"), "PodScheduled") == 0 &&
            strcmp(str_at(cond, "status"), "False") == 0) {
            p->cond_reason = str_keep(str_at(cond, "reason"), 256);
            char *msg = str_keep(str_at(cond, "message"), PENDING_MESSAGE_MAX);

            p->cond_message = msg != NULL ? vstr_new(msg) : NULL;
            free(msg);
            break;
        }
    }
    if (strcmp(sched, "default-scheduler") != 0)
        p->scheduler = str_keep(sched, 256);
    p->nominated = str_keep(str_at(status, "nominatedNodeName"), 256);
    p->gate = str_keep(
        str_at(yyjson_arr_get_first(yyjson_obj_get(spec, "schedulingGates")), "name"), 320);
    return p;
}

/* A pod record, or NULL (with *skip set) for a pod the view does not keep. */
static struct vpod *vpod_from_json(yyjson_val *obj, bool *skip)
{
    yyjson_val *spec = yyjson_obj_get(obj, "spec");
    struct pod_demand dm;
    struct diag d;
    struct vpod *v;

    *skip = true;
    diag_clear(&d);
    /* the demand first: most pods ask for no GPU, and the phase is at the object's end */
    if (pod_gpu_demand(spec, NULL, &dm, &d) < 0 || dm.n == 0 || pod_terminal(obj))
        return NULL;
    *skip = false;
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        return NULL;
    v->node = strdup(str_at(spec, "nodeName"));
    if (v->node != NULL && v->node[0] == '\0' && (v->pend = vpending_from_json(obj)) == NULL)
        goto fail;
    /* the SchedulingGates PreEnqueue plugin keeps a gated pod out of the active queue
     * (pkg/scheduler/framework/plugins/schedulinggates): it takes no GPUs until the gate
     * goes (Kueue removes its gate on admission), a MODIFIED event */
    v->gated = yyjson_arr_size(yyjson_obj_get(spec, "schedulingGates")) > 0;
    v->priority = int_at(spec, "priority");
    v->demand = calloc(dm.n, sizeof(*v->demand));
    if (v->node == NULL || v->demand == NULL)
        goto fail;
    for (size_t i = 0; i < dm.n; i++) {
        v->demand[i].name = strdup(dm.r[i].name);
        v->demand[i].n = (dm.r[i].milli + 999) / 1000;
        v->n_demand++;
        if (v->demand[i].name == NULL)
            goto fail;
    }
    return v;
fail:
    vpod_free(v);
    return NULL;
}

static struct vclass *vclass_from_json(yyjson_val *obj)
{
    struct vclass *v = calloc(1, sizeof(*v));

    if (v == NULL)
        return NULL;
    v->value = int_at(obj, "value");
    v->preempt = strcmp(str_at(obj, "preemptionPolicy"), "Never") != 0;
    v->global_default = yyjson_is_true(yyjson_obj_get(obj, "globalDefault"));
    return v;
}

/* The pod template's spec, trimmed to what decisions read: a new object in doc (copied), or
 * NULL when out of memory. */
static yyjson_mut_val *trim_pod_spec(yyjson_mut_doc *doc, yyjson_val *spec)
{
    static const char *const keep[] = {
        "nodeSelector",     "affinity", "tolerations",      "priorityClassName", "priority",
        "preemptionPolicy", "overhead", "runtimeClassName", "schedulingGates",   "nodeName"};
    static const char *const lists[] = {"containers", "initContainers"};
    yyjson_mut_val *out = yyjson_mut_obj(doc), *arr, *slim;
    yyjson_val *c;
    size_t i, max;

    if (out == NULL)
        return NULL;
    for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
        yyjson_val *v = yyjson_obj_get(spec, keep[k]);

        /* keep[] are literals, each once: _add needs no copy of the key and adds no duplicate */
        if (v != NULL && !yyjson_mut_obj_add_val(doc, out, keep[k], yyjson_val_mut_copy(doc, v)))
            return NULL;
    }
    for (size_t l = 0; l < 2; l++) {
        if ((arr = yyjson_mut_arr(doc)) == NULL)
            return NULL;
        yyjson_arr_foreach (yyjson_obj_get(spec, lists[l]), i, max, c) {
            slim = json_pack(doc, "{s:V*, s:V*, s:V*}", "name", yyjson_obj_get(c, "name"),
                             "resources", yyjson_obj_get(c, "resources"), "restartPolicy",
                             yyjson_obj_get(c, "restartPolicy"));
            if (slim == NULL || !yyjson_mut_arr_append(arr, slim))
                return NULL;
        }
        if (!yyjson_mut_obj_add_val(doc, out, lists[l], arr))
            return NULL;
    }
    return out;
}

/* A trimmed pod spec in a shared document of its own (root: the spec), or NULL. */
static struct vdoc *trimmed_spec_doc(yyjson_val *spec)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *t = m != NULL ? trim_pod_spec(m, spec) : NULL;
    /* depth capped: the document spec comes from was read with a cap */
    struct vdoc *v = t != NULL ? vdoc_new(json_freeze(t)) : NULL;

    yyjson_mut_doc_free(m);
    return v;
}

static const char *controlling_deployment(yyjson_val *obj)
{
    yyjson_val *owners = yyjson_obj_get(yyjson_obj_get(obj, "metadata"), "ownerReferences");
    yyjson_val *o;
    size_t i, max;

    yyjson_arr_foreach (owners, i, max, o) {
        if (yyjson_is_true(yyjson_obj_get(o, "controller")) &&
            strcmp(str_at(o, "kind"), "Deployment") == 0)
            return str_at(o, "name");
    }
    return NULL;
}

/* A finished Job: a Complete or Failed condition that is True, or a completionTime
 * (pkg/controller/job/job_controller.go, syncJob returns early when IsJobFinished). */
static bool job_finished(yyjson_val *status)
{
    yyjson_val *cond;
    size_t i, max;

    if (yyjson_is_str(yyjson_obj_get(status, "completionTime")))
        return true;
    yyjson_arr_foreach (yyjson_obj_get(status, "conditions"), i, max, cond) {
        const char *type = str_at(cond, "type");

        if ((strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0) &&
            strcmp(str_at(cond, "status"), "True") == 0)
            return true;
    }
    return false;
}

/* The pods a Job's controller keeps running now: none while suspended or once finished, else
 * parallelism capped by the completions still to go (pkg/controller/job/job_controller.go,
 * manageJob). Without completions, the Job is done once any pod has succeeded (a work queue:
 * manageJob creates no pod after the first success), so it owes none. */
static int64_t job_wants(yyjson_val *obj)
{
    yyjson_val *spec = yyjson_obj_get(obj, "spec"), *status = yyjson_obj_get(obj, "status");
    int64_t want, comp, left;
    int64_t succeeded = int_at(status, "succeeded");

    if (!json_int64(yyjson_obj_get(spec, "parallelism"), &want))
        want = 1;
    if (yyjson_is_true(yyjson_obj_get(spec, "suspend")) || job_finished(status))
        return 0;
    if (json_int64(yyjson_obj_get(spec, "completions"), &comp)) {
        left = comp - succeeded;
        if (left < want)
            want = left > 0 ? left : 0;
    } else if (succeeded > 0) {
        want = 0;
    }
    return want;
}

static struct workload *workload_from_json(enum cluster_kind k, yyjson_val *obj, bool *skip)
{
    yyjson_val *spec = yyjson_obj_get(obj, "spec");
    yyjson_val *tspec = yyjson_obj_get(yyjson_obj_get(spec, "template"), "spec");
    yyjson_val *replicas;
    yyjson_mut_doc *m = NULL;
    yyjson_mut_val *t, *root = NULL;
    struct pod_demand dm;
    struct diag d;
    struct workload *w;
    const char *owner;

    *skip = true;
    diag_clear(&d);
    if (pod_gpu_demand(tspec, NULL, &dm, &d) < 0 || dm.n == 0)
        return NULL;
    *skip = false;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    replicas = yyjson_obj_get(spec, k == CLUSTER_JOBS ? "parallelism" : "replicas");
    if (replicas == NULL)
        w->replicas = 1;
    else if (!json_int64(replicas, &w->replicas))
        w->replicas = 0; /* as jansson's json_integer_value read a value of another type */
    w->wants = k == CLUSTER_DEPLOYMENTS ? -1 : k == CLUSTER_JOBS ? job_wants(obj) : w->replicas;
    /* built, then frozen into a document of the record's own (depth capped when read) */
    if ((m = yyjson_mut_doc_new(NULL)) != NULL && (t = trim_pod_spec(m, tspec)) != NULL)
        root = json_pack(m, "{s:o, s:V*, s:V*, s:V*}", "template", t, "strategy",
                         yyjson_obj_get(spec, "strategy"), "completions",
                         yyjson_obj_get(spec, "completions"), "parallelism",
                         yyjson_obj_get(spec, "parallelism"));
    w->spec_doc = root != NULL ? vdoc_new(json_freeze(root)) : NULL;
    w->spec = w->spec_doc != NULL ? yyjson_doc_get_root(w->spec_doc->doc) : NULL;
    yyjson_mut_doc_free(m);
    owner = k == CLUSTER_REPLICASETS ? controlling_deployment(obj) : NULL;
    if (owner != NULL)
        w->owner_deployment = strdup(owner);
    if (w->spec == NULL || (owner != NULL && w->owner_deployment == NULL)) {
        workload_free(NULL, w);
        return NULL;
    }
    return w;
}

/* ---- waiters ---- */

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ '/') * 1099511628211ull;
}

uint64_t cluster_workload_key(const char *resource, const char *ns, const char *name)
{
    uint64_t h = fnv(fnv(fnv(1469598103934665603ull, resource), ns), name);

    return h ? h : 1;
}

static uint64_t fnv_bytes(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* A tag, then bytes whose length is hashed first: no escaping, and no two different values
 * hash the same bytes. */
static uint64_t fnv_tagged(uint64_t h, char tag, const char *s, size_t n)
{
    char head[32];
    int k = snprintf(head, sizeof(head), "%c%zu:", tag, n);

    return fnv_bytes(fnv_bytes(h, head, (size_t)k), s, n);
}

/* Orders object members by key bytes (shorter first on a common prefix). */
static int key_cmp(const void *a, const void *b)
{
    yyjson_val *ka = *(yyjson_val *const *)a, *kb = *(yyjson_val *const *)b;
    size_t la = yyjson_get_len(ka), lb = yyjson_get_len(kb);
    int c = memcmp(yyjson_get_str(ka), yyjson_get_str(kb), la < lb ? la : lb);

    return c != 0 ? c : la < lb ? -1 : la > lb;
}

/* v hashed in a canonical form: objects' members in key order (as JSON_SORT_KEYS dumped them
 * before yyjson), so that the same selector written in another order hashes the same. Depth is
 * capped at VIEW_DEPTH_MAX, as the documents it reads were when read; deeper values (or
 * an object too large to sort when out of memory) hash as their compact text. */
static uint64_t canon_hash(uint64_t h, yyjson_val *v, unsigned depth)
{
    yyjson_val *local[32], **keys = local, *k, *x;
    size_t i, max, n;
    char num[40];

    if (depth >= VIEW_DEPTH_MAX && yyjson_is_ctn(v)) {
        size_t len;
        char *text = json_write(v, &len);

        h = fnv_tagged(h, 'J', text ? text : "", text ? len : 0);
        free(text);
        return h;
    }
    switch (yyjson_get_type(v)) {
    case YYJSON_TYPE_OBJ:
        n = yyjson_obj_size(v);
        if (n > sizeof(local) / sizeof(local[0]) && (keys = malloc(n * sizeof(*keys))) == NULL)
            return canon_hash(h, v, VIEW_DEPTH_MAX);
        i = 0;
        yyjson_obj_foreach (v, i, max, k, x)
            keys[i] = k;
        qsort(keys, n, sizeof(*keys), key_cmp);
        h = fnv_bytes(h, "{", 1);
        for (i = 0; i < n; i++) {
            h = fnv_tagged(h, 'k', yyjson_get_str(keys[i]), yyjson_get_len(keys[i]));
            h = canon_hash(h, yyjson_obj_iter_get_val(keys[i]), depth + 1);
        }
        if (keys != local)
            free(keys);
        return fnv_bytes(h, "}", 1);
    case YYJSON_TYPE_ARR:
        h = fnv_bytes(h, "[", 1);
        yyjson_arr_foreach (v, i, max, x)
            h = canon_hash(h, x, depth + 1);
        return fnv_bytes(h, "]", 1);
    case YYJSON_TYPE_STR: return fnv_tagged(h, 's', yyjson_get_str(v), yyjson_get_len(v));
    case YYJSON_TYPE_NUM:
        if (yyjson_is_real(v))
            n = (size_t)snprintf(num, sizeof(num), "%.17g", yyjson_get_real(v));
        else if (yyjson_is_sint(v))
            n = (size_t)snprintf(num, sizeof(num), "%" PRId64, yyjson_get_sint(v));
        else
            n = (size_t)snprintf(num, sizeof(num), "%" PRIu64, yyjson_get_uint(v));
        return fnv_tagged(h, yyjson_is_real(v) ? 'r' : 'i', num, n);
    case YYJSON_TYPE_BOOL: return fnv_bytes(h, yyjson_is_true(v) ? "t" : "f", 1);
    case YYJSON_TYPE_NULL: return fnv_bytes(h, "n", 1);
    default: return fnv_bytes(h, "?", 1);
    }
}

/* Where a spec's pods may go, as a hash: waiters with the same one share eligible nodes. */
static uint64_t place_hash(yyjson_val *spec)
{
    static const char *const keys[] = {"nodeSelector", "affinity", "tolerations"};
    uint64_t h = 1469598103934665603ull;

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        yyjson_val *v = yyjson_obj_get(spec, keys[k]);

        h = fnv(h, keys[k]);
        if (v != NULL)
            h = canon_hash(h, v, 0);
    }
    return h;
}

static void waiter_free(void *ctx, void *p)
{
    struct waiter *w = p;

    (void)ctx;
    if (w != NULL) {
        free(w->key);
        vdoc_unref(w->spec_doc);
        vdoc_unref(w->pod_spec);
        vstr_unref(w->pod_message);
    }
    free(w);
}

/* The waiter of key, created when create is set (NULL when absent or out of memory). */
static struct waiter *waiter_get(struct cluster *c, const char *key, bool create)
{
    struct waiter *w = table_get(&c->waiters, key);

    if (w != NULL || !create)
        return w;
    if ((w = calloc(1, sizeof(*w))) == NULL || (w->key = strdup(key)) == NULL) {
        free(w);
        return NULL;
    }
    w->wants = -1;
    w->at = SIZE_MAX;
    if (table_put(&c->waiters, key, w, 0) < 0)
        return NULL; /* table_put freed it */
    return w;
}

/* The pods of w have spec (trimmed), a value of doc (w takes a reference of its own): where they
 * go and what they ask for. */
static void waiter_set_spec(struct waiter *w, struct vdoc *doc, yyjson_val *spec, int64_t priority)
{
    struct pod_demand dm;
    struct diag d;

    diag_clear(&d);
    if (spec == NULL || pod_gpu_demand(spec, NULL, &dm, &d) < 0 || dm.n == 0)
        return;
    vdoc_ref(doc);
    vdoc_unref(w->spec_doc);
    w->spec_doc = doc;
    w->spec = spec;
    w->place = place_hash(spec);
    snprintf(w->res, sizeof(w->res), "%s", dm.r[0].name);
    w->per_pod = (dm.r[0].milli + 999) / 1000;
    w->priority = priority;
}

/* key in 16 hex digits (buf: 17 bytes at least); not snprintf, which a decision pays per
 * reservation. */
static void shown_name(uint64_t key, char *buf, size_t len)
{
    static const char digits[] = "0123456789abcdef";

    (void)len;
    for (int i = 15; i >= 0; i--, key >>= 4)
        buf[i] = digits[key & 15];
    buf[16] = '\0';
}

int64_t cluster_shown(const struct cluster *c, uint64_t key)
{
    char name[20];
    const int64_t *v;

    shown_name(key, name, sizeof(name));
    v = table_get(&c->shown, name);
    return v ? *v : 0;
}

/* Adds n to the replicas shown of key; false when out of memory (nothing added). */
static bool shown_add(struct cluster *c, uint64_t key, int64_t n)
{
    char name[20];
    int64_t *v;

    if (n == 0 || key == 0)
        return true;
    shown_name(key, name, sizeof(name));
    if ((v = table_get(&c->shown, name)) == NULL) {
        if ((v = calloc(1, sizeof(*v))) == NULL || table_put(&c->shown, name, v, 0) < 0)
            return false; /* table_put freed it */
    }
    *v += n;
    if (*v <= 0)
        table_del(&c->shown, name);
    return true;
}

/* Keeps w's part of cluster.shown current: max(pods, wants) under its reserve_key. Out of
 * memory it counts none, so a reservation lasts its window: GPUs are never promised twice. */
static void waiter_show(struct cluster *c, struct waiter *w)
{
    int64_t n = w->pods > w->wants ? w->pods : w->wants;

    if (n < 0)
        n = 0;
    if (w->shown_key == w->reserve_key && w->shown == n)
        return;
    shown_add(c, w->shown_key, -w->shown);
    w->shown = shown_add(c, w->reserve_key, n) ? n : 0;
    w->shown_key = w->reserve_key;
}

static void group_name(const struct waiter *w, char *buf, size_t len)
{
    snprintf(buf, len, "%016" PRIx64 "/%" PRId64 "/%" PRId64 "/%s", w->place, w->per_pod,
             w->priority, w->res);
}

static bool group_fits(const struct wgroup *g, const struct waiter *w)
{
    return g->place == w->place && g->per_pod == w->per_pod && g->priority == w->priority &&
           strcmp(g->res, w->res) == 0;
}

/* w leaves its group; the group goes with its last waiter. */
static void group_leave(struct cluster *c, struct waiter *w)
{
    struct wgroup *g = w->group;
    char name[RESOURCE_NAME_MAX + 64];

    if (g == NULL)
        return;
    g->count -= w->g_count;
    g->pending -= w->g_pending;
    *(w->gprev ? &w->gprev->gnext : &g->head) = w->gnext;
    *(w->gnext ? &w->gnext->gprev : &g->tail) = w->gprev;
    w->group = NULL;
    w->gprev = w->gnext = NULL;
    w->g_count = w->g_pending = 0;
    if (g->head != NULL)
        return;
    c->live_groups[g->at] = c->live_groups[--c->n_groups];
    c->live_groups[g->at]->at = g->at;
    snprintf(name, sizeof(name), "%016" PRIx64 "/%" PRId64 "/%" PRId64 "/%s", g->place, g->per_pod,
             g->priority, g->res);
    table_del(&c->groups, name); /* frees g */
}

/* w joins the group of its place, resource, amount and priority. Out of memory it joins none
 * and its pods are not counted, as when cluster.waiting cannot grow. */
static void group_join(struct cluster *c, struct waiter *w)
{
    char name[RESOURCE_NAME_MAX + 64];
    struct wgroup *g, **grown;

    group_name(w, name, sizeof(name));
    if ((g = table_get(&c->groups, name)) == NULL) {
        if (c->n_groups == c->cap_groups) {
            size_t cap = c->cap_groups ? 2 * c->cap_groups : 16;

            if ((grown = realloc(c->live_groups, cap * sizeof(*grown))) == NULL)
                return;
            c->live_groups = grown;
            c->cap_groups = cap;
        }
        if ((g = calloc(1, sizeof(*g))) == NULL || table_put(&c->groups, name, g, 0) < 0)
            return; /* table_put freed it */
        g->place = w->place;
        snprintf(g->res, sizeof(g->res), "%s", w->res);
        g->per_pod = w->per_pod;
        g->priority = w->priority;
        g->at = c->n_groups;
        c->live_groups[c->n_groups++] = g;
    }
    w->group = g;
    w->gprev = g->tail;
    w->gnext = NULL;
    *(g->tail ? &g->tail->gnext : &g->head) = w;
    g->tail = w;
}

/* Keeps w's part of its group's sums current, moving it when its place, resource, amount or
 * priority changed, and out of any when it waits for nothing. */
static void waiter_group(struct cluster *c, struct waiter *w, bool waits)
{
    if (w->group != NULL && (!waits || !group_fits(w->group, w)))
        group_leave(c, w);
    if (waits && w->group == NULL)
        group_join(c, w);
    if (w->group == NULL)
        return;
    w->group->count += waiter_count(w) - w->g_count;
    w->group->pending += w->pending - w->g_pending;
    w->g_count = waiter_count(w);
    w->g_pending = w->pending;
}

/* Keeps cluster.waiting to the waiters with pods to wait for, and drops a waiter that has
 * neither pods nor a workload. Out of memory, a waiter is simply not counted. */
static void waiter_update(struct cluster *c, struct waiter *w)
{
    bool waits = waiter_count(w) > 0 && w->spec != NULL;
    struct waiter **grown;

    waiter_show(c, w);
    waiter_group(c, w, waits);

    if (waits && w->at == SIZE_MAX) {
        if (c->n_waiting == c->cap_waiting) {
            size_t cap = c->cap_waiting ? 2 * c->cap_waiting : 16;

            if ((grown = realloc(c->waiting, cap * sizeof(*grown))) == NULL)
                return;
            c->waiting = grown;
            c->cap_waiting = cap;
        }
        w->at = c->n_waiting;
        c->waiting[c->n_waiting++] = w;
    } else if (!waits && w->at != SIZE_MAX) {
        c->waiting[w->at] = c->waiting[--c->n_waiting];
        c->waiting[w->at]->at = w->at;
        w->at = SIZE_MAX;
    }
    if (w->pods <= 0 && w->rec == NULL)
        table_del(&c->waiters, w->key);
}

static const char *const owner_kinds[] = {"ReplicaSet", "StatefulSet", "Job"};

/* The waiter key of a pod: its controller's when that is a kind whose replicas the view
 * counts, else its own while unbound; "" for neither. */
static void pod_waiter_key(yyjson_val *obj, bool unbound, char *buf, size_t len)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata"), *o;
    const char *ns = str_at(meta, "namespace");
    size_t i, max;

    buf[0] = '\0';
    yyjson_arr_foreach (yyjson_obj_get(meta, "ownerReferences"), i, max, o) {
        if (!yyjson_is_true(yyjson_obj_get(o, "controller")))
            continue;
        for (size_t k = 0; k < sizeof(owner_kinds) / sizeof(owner_kinds[0]); k++) {
            if (strcmp(str_at(o, "kind"), owner_kinds[k]) == 0) {
                key_join(buf, len, owner_kinds[k], ns, str_at(o, "name"));
                return;
            }
        }
    }
    if (unbound)
        key_join(buf, len, "Pod", ns, str_at(meta, "name"));
}

/* A pod record joins its waiter (obj: the pod). */
static void waiter_add_pod(struct cluster *c, struct vpod *v, yyjson_val *obj)
{
    char key[600];
    bool unbound = v->node[0] == '\0' && !v->gated; /* waits in the scheduler's queue */
    struct waiter *w;
    struct vdoc *spec;

    pod_waiter_key(obj, unbound, key, sizeof(key));
    w = key[0] != '\0' ? waiter_get(c, key, true) : NULL;
    if (v->pend != NULL && (spec = trimmed_spec_doc(yyjson_obj_get(obj, "spec"))) != NULL) {
        /* the pods of one controller mostly share one spec: one document for them all */
        if (w != NULL && w->pod_spec != NULL &&
            yyjson_equals(yyjson_doc_get_root(w->pod_spec->doc), yyjson_doc_get_root(spec->doc))) {
            vdoc_unref(spec);
            spec = vdoc_ref(w->pod_spec);
        } else if (w != NULL) {
            vdoc_unref(w->pod_spec);
            w->pod_spec = vdoc_ref(spec);
        }
        v->pend->spec = spec;
    }
    if (w != NULL && v->pend != NULL && v->pend->cond_message != NULL) {
        struct vstr *m = v->pend->cond_message;

        if (w->pod_message != NULL && strcmp(w->pod_message->s, m->s) == 0) {
            v->pend->cond_message = vstr_ref(w->pod_message);
            vstr_unref(m);
        } else {
            vstr_unref(w->pod_message);
            w->pod_message = vstr_ref(m);
        }
    }
    if (w == NULL || (v->owner = strdup(key)) == NULL)
        return;
    w->pods++;
    w->pending += unbound;
    if (w->rec == NULL)
        w->reserve_key = cluster_workload_key("pods", "", key);
    if (unbound && w->spec == NULL && v->pend != NULL && (spec = v->pend->spec) != NULL)
        waiter_set_spec(w, spec, yyjson_doc_get_root(spec->doc), v->priority);
    waiter_update(c, w);
}

static void waiter_drop_pod(struct cluster *c, const struct vpod *v)
{
    struct waiter *w = v->owner ? table_get(&c->waiters, v->owner) : NULL;

    if (w == NULL)
        return;
    w->pods--;
    w->pending -= v->node[0] == '\0' && !v->gated;
    waiter_update(c, w);
}

/* The priority a template's pods get from the Priority admission plugin
 * (plugin/pkg/admission/priority): the value of the class it names, or of the globalDefault
 * class when it names none; else its spec.priority, else 0. */
static int64_t template_class_value(struct cluster *c, yyjson_val *spec)
{
    const struct table *t = &c->kinds[CLUSTER_PRIORITYCLASSES];
    const char *cls = str_at(spec, "priorityClassName");
    const struct vclass *v = cls[0] ? table_get(t, cls) : NULL;

    for (size_t i = 0; v == NULL && !cls[0] && i < t->n_buckets; i++) {
        for (const struct table_entry *e = t->buckets[i]; e; e = e->next) {
            if (((const struct vclass *)e->value)->global_default)
                v = e->value;
        }
    }
    return v ? v->value : int_at(spec, "priority");
}

/* The PriorityClasses changed: the replicas workloads owe take their templates' priority
 * anew, whichever came first into the view (a class event is rare; a decision reads the
 * priority it finds). */
static void waiters_reprioritize(struct cluster *c)
{
    for (size_t i = 0; i < c->waiters.n_buckets; i++) {
        for (struct table_entry *e = c->waiters.buckets[i]; e; e = e->next) {
            struct waiter *w = e->value;

            if (w->rec != NULL && w->spec != NULL) {
                w->priority = template_class_value(c, w->spec);
                waiter_group(c, w, w->group != NULL); /* to the group of that priority */
            }
        }
    }
}

/* A workload record of kind k under key ("NS/NAME") sets its waiter's wants. */
static void waiter_set_workload(struct cluster *c, enum cluster_kind k, const char *key,
                                struct workload *rec)
{
    char wkey[600];
    struct waiter *w;
    const char *slash = strchr(key, '/');

    if (rec->wants < 0 || slash == NULL)
        return;
    snprintf(wkey, sizeof(wkey), "%s/%s", kinds[k].object, key);
    if ((w = waiter_get(c, wkey, true)) == NULL)
        return;
    rec->waiter = w;
    w->rec = rec;
    w->wants = rec->wants;
    waiter_set_spec(w, rec->spec_doc, yyjson_obj_get(rec->spec, "template"),
                    template_class_value(c, yyjson_obj_get(rec->spec, "template")));
    {
        char ns[256];

        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
        /* an admission reserves for the workload it judged: a Deployment's ReplicaSet is
         * the Deployment's pods */
        w->reserve_key = rec->owner_deployment
                             ? cluster_workload_key("deployments", ns, rec->owner_deployment)
                             : cluster_workload_key(kinds[k].plural, ns, slash + 1);
    }
    waiter_update(c, w);
}

/* ---- bindings ---- */

/* The totals of resource name on b, created when create is set (NULL when absent or out of
 * memory). */
static struct bound_res *bound_res_of(struct cluster *c, struct binding *b, const char *name,
                                      bool create)
{
    struct bound_res *grown;
    const char *copy;

    for (size_t k = 0; k < b->n_res; k++)
        if (strcmp(b->res[k].name, name) == 0)
            return &b->res[k];
    if (!create || (copy = rname_take(c, name)) == NULL)
        return NULL;
    grown = realloc(b->res, (b->n_res + 1) * sizeof(*b->res));
    if (grown == NULL) {
        rname_drop(c, copy);
        return NULL;
    }
    b->res = grown;
    memset(&b->res[b->n_res], 0, sizeof(*b->res));
    b->res[b->n_res].name = copy;
    return &b->res[b->n_res++];
}

/* The slot of one priority in r, created when create is set (NULL when absent or out of
 * memory). */
static struct bound_prio *bound_prio_of(struct bound_res *r, int64_t priority, bool create)
{
    struct bound_prio *grown;
    size_t cap;

    for (size_t k = 0; k < r->n_prio; k++)
        if (r->prio[k].priority == priority)
            return &r->prio[k];
    if (!create)
        return NULL;
    if (r->n_prio == r->cap_prio) {
        cap = r->cap_prio ? r->cap_prio * 2 : 4;
        if ((grown = realloc(r->prio, cap * sizeof(*r->prio))) == NULL)
            return NULL;
        r->prio = grown;
        r->cap_prio = cap;
    }
    r->prio[r->n_prio] = (struct bound_prio){priority, 0};
    return &r->prio[r->n_prio++];
}

/* Adds (sign 1) or removes (sign -1) a pod's demand to its node's totals. Adding first makes
 * room for every resource and priority, so that a failure leaves the totals as they were. */
static int binding_count(struct cluster *c, struct binding *b, const struct vpod *v, int sign)
{
    struct bound_res *r;
    struct bound_prio *p;

    for (size_t d = 0; sign > 0 && d < v->n_demand; d++) {
        if ((r = bound_res_of(c, b, v->demand[d].name, true)) == NULL ||
            bound_prio_of(r, v->priority, true) == NULL)
            return -1;
    }
    for (size_t d = 0; d < v->n_demand; d++) {
        if ((r = bound_res_of(c, b, v->demand[d].name, false)) == NULL ||
            (p = bound_prio_of(r, v->priority, false)) == NULL)
            continue; /* removing what was never added */
        r->total += sign * v->demand[d].n;
        p->n += sign * v->demand[d].n;
        if (p->n == 0) /* a priority no pod has any more: its slot goes */
            *p = r->prio[--r->n_prio];
    }
    return 0;
}

/* A node record points at its binding, kept so here: set when either appears, cleared when
 * the binding goes. */
static void binding_link(struct cluster *c, const char *node, struct binding *b)
{
    struct node *n = table_get(&c->kinds[CLUSTER_NODES], node);

    if (n != NULL) {
        n->binding = b;
        node_sums_refresh(c, n);
    }
}

/* The bound totals of node changed: its res_sum copies follow. */
static void binding_changed(struct cluster *c, const char *node)
{
    const struct node *n = table_get(&c->kinds[CLUSTER_NODES], node);

    if (n != NULL)
        node_sums_refresh(c, n);
}

static void binding_drop(struct cluster *c, const char *node)
{
    binding_link(c, node, NULL);
    table_del(&c->bindings, node);
}

static int bind_pod(struct cluster *c, struct vpod *v)
{
    struct binding *b;
    struct vpod **grown;

    if (v->node[0] == '\0')
        return 0;
    b = table_get(&c->bindings, v->node);
    if (b == NULL) {
        b = calloc(1, sizeof(*b));
        if (b == NULL || table_put(&c->bindings, v->node, b, 0) < 0)
            return -1; /* table_put frees b */
        binding_link(c, v->node, b);
    }
    if (b->n == b->cap) {
        grown = realloc(b->pods, (b->cap ? b->cap * 2 : 4) * sizeof(*b->pods));
        if (grown == NULL)
            goto fail;
        b->pods = grown;
        b->cap = b->cap ? b->cap * 2 : 4;
    }
    if (binding_count(c, b, v, 1) < 0)
        goto fail;
    b->pods[b->n++] = v;
    binding_changed(c, v->node);
    return 0;
fail:
    if (b->n == 0)
        binding_drop(c, v->node);
    return -1;
}

static void unbind_pod(struct cluster *c, const struct vpod *v)
{
    struct binding *b;

    if (v->node[0] == '\0' || (b = table_get(&c->bindings, v->node)) == NULL)
        return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->pods[i] == v) {
            b->pods[i] = b->pods[--b->n];
            binding_count(c, b, v, -1);
            binding_changed(c, v->node);
            break;
        }
    }
    if (b->n == 0)
        binding_drop(c, v->node);
}

const struct binding *cluster_binding(const struct cluster *c, const char *node)
{
    return table_get(&c->bindings, node);
}

/* ---- the view ---- */

static void noop_free(void *ctx, void *p)
{
    (void)ctx;
    (void)p;
}

static void plain_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

struct cluster *cluster_new(const struct cluster_config *cfg)
{
    struct cluster *c = calloc(1, sizeof(*c));
    int rc = 0;

    if (c == NULL)
        return NULL;
    c->cfg = *cfg;
    /* writers first: glibc's default prefers readers, and a steady stream of decisions would
     * keep list and watch from ever applying a change (a view that stops following the
     * cluster). No reader takes the lock twice, so a waiting writer cannot deadlock one. */
    pthread_rwlockattr_t attr;

    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if ((c->cap = capacity_cache_new()) == NULL)
        rc = -1;
    /* the names first: node and binding records drop theirs when freed */
    rc |= table_init(&c->rnames, noop_free, c);
    rc |= table_init(&c->kinds[CLUSTER_NODES], node_free, c);
    /* pods are freed by remove_pod, which unbinds them first */
    rc |= table_init(&c->kinds[CLUSTER_PODS], noop_free, c);
    rc |= table_init(&c->kinds[CLUSTER_PRIORITYCLASSES], plain_free, c);
    rc |= table_init(&c->kinds[CLUSTER_AUTOSCALER_STATUS], vautoscaler_free, c);
    rc |= table_init(&c->kinds[CLUSTER_NODEPOOLS], vnodepool_free, c);
    rc |= table_init(&c->kinds[CLUSTER_PLUGIN_CONFIGS], vplugin_free, c);
    for (int k = CLUSTER_REPLICASETS; k < CLUSTER_KINDS; k++)
        rc |= table_init(&c->kinds[k], workload_free, c);
    rc |= table_init(&c->bindings, binding_free, c);
    rc |= table_init(&c->waiters, waiter_free, c);
    rc |= table_init(&c->shown, plain_free, c);
    rc |= table_init(&c->groups, plain_free, c);
    if (rc != 0) {
        cluster_free(c);
        return NULL;
    }
    cluster_plugin_configs_want(c, NULL, 0);
    return c;
}

static void free_all_pods(struct table *pods)
{
    for (size_t i = 0; i < pods->n_buckets; i++) {
        for (struct table_entry *e = pods->buckets[i]; e; e = e->next)
            vpod_free(e->value);
    }
}

void cluster_free(struct cluster *c)
{
    if (c == NULL)
        return;
    if (c->kinds[CLUSTER_PODS].buckets != NULL)
        free_all_pods(&c->kinds[CLUSTER_PODS]);
    for (int k = 0; k < CLUSTER_KINDS; k++)
        table_free(&c->kinds[k]);
    table_free(&c->bindings);
    table_free(&c->waiters); /* after the workloads, which point at theirs */
    table_free(&c->shown);   /* after both, which count in it */
    table_free(&c->groups);
    free(c->live_groups);
    free(c->waiting);
    table_free(&c->rnames); /* empty by now: every user is gone */
    free(c->sums);
    capacity_cache_free(c->cap); /* no decision runs any more */
    free(c->snapshot_path);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

static void remove_pod(struct cluster *c, const char *key)
{
    struct vpod *old = table_get(&c->kinds[CLUSTER_PODS], key);

    if (old == NULL)
        return;
    unbind_pod(c, old);
    waiter_drop_pod(c, old);
    table_del(&c->kinds[CLUSTER_PODS], key);
    vpod_free(old);
}

/* The amounts of n into old, a record that decides where pods go as n does: each resource
 * keeps its res_sum slot (remembered eligible sets point at it), those n adds get one, and
 * old's former resources go with n. */
static void node_take_amounts(struct cluster *c, struct node *old, struct node *n)
{
    struct node_res *r = old->res;
    size_t nr = old->n_res;

    for (size_t i = 0; i < n->n_res; i++) {
        for (size_t k = 0; n->res[i].sum == 0 && k < old->n_res; k++) {
            if (old->res[k].name == n->res[i].name) {
                n->res[i].sum = old->res[k].sum;
                old->res[k].sum = 0;
            }
        }
        if (n->res[i].sum == 0)
            n->res[i].sum = sum_new(c);
    }
    old->res = n->res;
    old->n_res = n->n_res;
    n->res = r;
    n->n_res = nr;
    node_sums_refresh(c, old);
}

/* Inserts or replaces the record of obj; a record for an object the view does not keep is
 * removed. Called with the write lock held. */
static int upsert(struct cluster *c, enum cluster_kind k, yyjson_val *obj, struct diag *d)
{
    char key[512];
    bool skip = false;
    void *rec = NULL;
    struct table *t = &c->kinds[k];

    if (object_key(obj, kind_namespaced(k), key, sizeof(key)) < 0) {
        diag_set(d, NULL, 0, 0, "%s: an object without metadata.name", kinds[k].plural);
        return -1;
    }
    switch (k) {
    case CLUSTER_NODES: {
        struct node *n = node_from_json(c, obj), *old = table_get(t, key);

        if (n != NULL)
            node_carry_grace(n, old, mono_s());
        if (n != NULL && old != NULL && node_same_place(old, n)) {
            /* only amounts changed: the record stays, and with it what decisions remember */
            node_take_amounts(c, old, n);
            node_free(c, n);
            return table_put(t, key, old, c->list_gen[k]); /* an update: cannot fail */
        }
        c->node_gen++;
        if (n != NULL) {
            n->binding = table_get(&c->bindings, key);
            for (size_t i = 0; i < n->n_res; i++)
                n->res[i].sum = sum_new(c);
            node_sums_refresh(c, n);
        }
        rec = n;
        break;
    }
    case CLUSTER_PODS: {
        struct vpod *v = vpod_from_json(obj, &skip);

        remove_pod(c, key);
        if (skip)
            return 0;
        if (v == NULL || table_put(t, key, v, c->list_gen[k]) < 0) {
            vpod_free(v);
            goto oom;
        }
        v->key = table_entry_of(t, key)->key;
        if (bind_pod(c, v) < 0) {
            table_del(t, key);
            vpod_free(v);
            goto oom;
        }
        waiter_add_pod(c, v, obj);
        return 0;
    }
    case CLUSTER_PRIORITYCLASSES: rec = vclass_from_json(obj); break;
    case CLUSTER_AUTOSCALER_STATUS:
    case CLUSTER_NODEPOOLS:
        rec = k == CLUSTER_NODEPOOLS ? (void *)vnodepool_from_json(obj, &skip)
                                     : (void *)vautoscaler_from_json(obj, &skip);
        if (skip) {
            table_del(t, key);
            return 0;
        }
        break;
    case CLUSTER_PLUGIN_CONFIGS:
        rec = vplugin_from_json(c, obj, &skip);
        /* what capacity remembers of the nodes reads the configs they pick too: dropped when
         * one changes, not at every read of the same */
        if (skip || rec == NULL || !vplugin_same(table_get(t, key), rec))
            c->node_gen++;
        if (skip) {
            table_del(t, key);
            return 0;
        }
        break;
    default:
        rec = workload_from_json(k, obj, &skip);
        if (skip) {
            table_del(t, key);
            return 0;
        }
        break;
    }
    if (rec != NULL && k >= CLUSTER_REPLICASETS)
        waiter_set_workload(c, k, key, rec); /* before the old record goes */
    if (rec == NULL || table_put(t, key, rec, c->list_gen[k]) < 0)
        goto oom;
    return 0;
oom:
    diag_set(d, NULL, 0, 0, "out of memory keeping %s %s", kinds[k].plural, key);
    return -1;
}

static void remove_object(struct cluster *c, enum cluster_kind k, yyjson_val *obj)
{
    char key[512];

    if (object_key(obj, kind_namespaced(k), key, sizeof(key)) < 0)
        return;
    if (k == CLUSTER_PODS)
        remove_pod(c, key);
    else
        table_del(&c->kinds[k], key);
    if (k == CLUSTER_NODES || k == CLUSTER_PLUGIN_CONFIGS)
        c->node_gen++;
}

void cluster_list_begin(struct cluster *c, enum cluster_kind k)
{
    pthread_rwlock_wrlock(&c->lock);
    c->list_gen[k]++;
    c->absent[k] = false;
    pthread_rwlock_unlock(&c->lock);
}

int cluster_list_items(struct cluster *c, enum cluster_kind k, yyjson_val *items, struct diag *d)
{
    size_t i, max;
    yyjson_val *obj;
    int rc = 0;

    pthread_rwlock_wrlock(&c->lock);
    yyjson_arr_foreach (items, i, max, obj) {
        struct diag one;

        /* one bad item does not lose the page */
        diag_clear(&one);
        if (upsert(c, k, obj, &one) < 0) {
            diag_set(d, NULL, 0, 0, "%s", one.msg);
            rc = -1;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return rc;
}

void cluster_list_end(struct cluster *c, enum cluster_kind k)
{
    struct table *t = &c->kinds[k];
    size_t held;

    pthread_rwlock_wrlock(&c->lock);
    if (k == CLUSTER_PODS) {
        /* unbind and free the pods the list did not mention */
        for (size_t i = 0; i < t->n_buckets; i++) {
            for (struct table_entry *e = t->buckets[i]; e; e = e->next) {
                if (e->gen != c->list_gen[k]) {
                    unbind_pod(c, e->value);
                    waiter_drop_pod(c, e->value);
                    vpod_free(e->value);
                }
            }
        }
    }
    held = t->n;
    table_sweep(t, older_than, c->list_gen[k]);
    if (k == CLUSTER_NODES || (k == CLUSTER_PLUGIN_CONFIGS && t->n != held))
        c->node_gen++;
    if (k == CLUSTER_PRIORITYCLASSES)
        waiters_reprioritize(c);
    c->listed[k] = true;
    c->heartbeat[k] = mono_s();
    pthread_rwlock_unlock(&c->lock);
}

int cluster_apply(struct cluster *c, enum cluster_kind k, const char *type, yyjson_val *obj,
                  struct diag *d)
{
    int rc = 0;

    if (!yyjson_is_obj(obj)) {
        diag_set(d, NULL, 0, 0, "%s watch event without an object", kinds[k].plural);
        return -1;
    }
    pthread_rwlock_wrlock(&c->lock);
    if (strcmp(type, "DELETED") == 0)
        remove_object(c, k, obj);
    else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
        rc = upsert(c, k, obj, d);
    else {
        diag_set(d, NULL, 0, 0, "%s watch event of unknown type \"%.32s\"", kinds[k].plural, type);
        rc = -1;
    }
    if (k == CLUSTER_PRIORITYCLASSES)
        waiters_reprioritize(c);
    c->heartbeat[k] = mono_s();
    pthread_rwlock_unlock(&c->lock);
    return rc;
}

void cluster_kind_absent(struct cluster *c, enum cluster_kind k)
{
    if (!kinds[k].optional)
        return;
    cluster_list_begin(c, k);
    cluster_list_end(c, k);
    pthread_rwlock_wrlock(&c->lock);
    c->listed[k] = true;
    c->absent[k] = true;
    pthread_rwlock_unlock(&c->lock);
}

bool cluster_kind_listed(struct cluster *c, enum cluster_kind k)
{
    bool listed;

    pthread_rwlock_rdlock(&c->lock);
    listed = c->listed[k];
    pthread_rwlock_unlock(&c->lock);
    return listed;
}

void cluster_heartbeat(struct cluster *c, enum cluster_kind k)
{
    pthread_rwlock_wrlock(&c->lock);
    c->heartbeat[k] = mono_s();
    pthread_rwlock_unlock(&c->lock);
}

bool cluster_synced(struct cluster *c)
{
    bool all = true;

    pthread_rwlock_rdlock(&c->lock);
    for (int k = 0; k < CLUSTER_KINDS; k++)
        all = all && c->listed[k];
    pthread_rwlock_unlock(&c->lock);
    return all;
}

double cluster_age_s(struct cluster *c)
{
    double oldest, now = mono_s();

    pthread_rwlock_rdlock(&c->lock);
    oldest = now;
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        /* the device plugin's configs are read every 30 s, not watched: not what the view's
         * age says (a round that fails keeps the last ones read) */
        if (!c->absent[k] && k != CLUSTER_PLUGIN_CONFIGS && c->heartbeat[k] < oldest)
            oldest = c->heartbeat[k];
    }
    if (c->snapshot)
        oldest = now;
    pthread_rwlock_unlock(&c->lock);
    return now - oldest;
}

void cluster_mark_snapshot(struct cluster *c)
{
    pthread_rwlock_wrlock(&c->lock);
    c->snapshot = true;
    for (int k = 0; k < CLUSTER_KINDS; k++)
        c->listed[k] = true;
    pthread_rwlock_unlock(&c->lock);
}

/* ---- dump ---- */

/* key: value appended to obj of doc, the key copied (-1 when out of memory). Every key of the
 * dump is unique where it goes (a table's key, a node's resource, a pod's demanded resource,
 * "Kind/NS/NAME"), so nothing is searched: json_mut_set's search for a key already there made
 * a dump of 150,000 pods quadratic. */
static int dump_put(yyjson_mut_doc *doc, yyjson_mut_val *obj, const char *key, yyjson_mut_val *v)
{
    yyjson_mut_val *k = yyjson_mut_strcpy(doc, key);

    return v != NULL && k != NULL && yyjson_mut_obj_add(obj, k, v) ? 0 : -1;
}

static yyjson_mut_val *amounts_json(yyjson_mut_doc *doc, const struct node *n, int which,
                                    const struct cluster *c, double now)
{
    yyjson_mut_val *o = yyjson_mut_obj(doc);
    const struct binding *b = cluster_binding(c, n->name);

    for (size_t i = 0; o != NULL && i < n->n_res; i++) {
        const struct node_res *r = &n->res[i];
        int64_t v = 0;

        if (which == 0)
            v = r->capacity;
        else if (which == 1)
            v = cluster_effective_allocatable(c, r, now);
        else
            for (size_t p = 0; b != NULL && p < b->n; p++)
                for (size_t k = 0; k < b->pods[p]->n_demand; k++)
                    if (strcmp(b->pods[p]->demand[k].name, r->name) == 0)
                        v += b->pods[p]->demand[k].n;
        if (dump_put(doc, o, r->name, yyjson_mut_sint(doc, v)) < 0)
            return NULL;
    }
    return o;
}

static yyjson_mut_val *demand_json(yyjson_mut_doc *doc, const struct pod_res *d, size_t n)
{
    yyjson_mut_val *o = yyjson_mut_obj(doc);

    for (size_t i = 0; o != NULL && i < n; i++) {
        if (dump_put(doc, o, d[i].name, yyjson_mut_sint(doc, d[i].n)) < 0)
            return NULL;
    }
    return o;
}

static int dump_nodes(struct cluster *c, yyjson_mut_doc *doc, yyjson_mut_val *out, double now)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];

    for (size_t i = 0; i < t->n_buckets; i++) {
        for (struct table_entry *e = t->buckets[i]; e; e = e->next) {
            const struct node *n = e->value;
            yyjson_mut_val *taints = yyjson_mut_arr(doc), *tv, *cap, *alloc, *used;

            for (size_t k = 0; taints != NULL && k < n->n_taints; k++) {
                tv = json_pack(doc, "{s:s, s:s, s:s}", "key", n->taints[k].key, "value",
                               n->taints[k].value, "effect", n->taints[k].effect);
                if (tv == NULL || !yyjson_mut_arr_append(taints, tv))
                    return -1;
            }
            cap = amounts_json(doc, n, 0, c, now);
            alloc = amounts_json(doc, n, 1, c, now);
            used = amounts_json(doc, n, 2, c, now);
            if (taints == NULL || cap == NULL || alloc == NULL || used == NULL ||
                dump_put(doc, out, e->key,
                         json_pack(doc, "{s:b, s:b, s:V, s:o, s:o, s:o, s:o}", "ready", n->ready,
                                   "unschedulable", n->unschedulable, "labels", n->labels, "taints",
                                   taints, "capacity", cap, "allocatable", alloc, "used", used)) <
                    0)
                return -1;
        }
    }
    return 0;
}

/* One record of kind k (not a node) into the dump's object of its kind. */
/* The Cluster Autoscaler's node groups ("ConfigMap/kube-system/cluster-autoscaler-status") or a
 * NodePool ("NodePool/NAME"), as read. */
static int dump_autoscaler(yyjson_mut_doc *doc, yyjson_mut_val *out, int k,
                           const struct table_entry *e)
{
    char key[600];
    yyjson_mut_val *v, *groups;

    snprintf(key, sizeof(key), "%s/%s", kinds[k].object, e->key);
    if (k == CLUSTER_NODEPOOLS) {
        const struct vnodepool *p = e->value;
        bool bounded;
        int64_t left = karpenter_pool_headroom(&p->p, "nvidia.com/gpu", &bounded);

        v = p->ok ? json_pack(doc, "{s:o?}", "gpuHeadroom",
                              bounded ? yyjson_mut_sint(doc, left) : NULL)
                  : json_pack(doc, "{s:s}", "error", p->error);
        return dump_put(doc, out, key, v);
    }
    {
        const struct vautoscaler *a = e->value;

        if (!a->ok)
            return dump_put(doc, out, key, json_pack(doc, "{s:s}", "error", a->error));
        if ((groups = yyjson_mut_obj(doc)) == NULL)
            return -1;
        for (size_t i = 0; i < a->st.n_groups; i++) {
            const struct ca_group *g = &a->st.groups[i];

            if (dump_put(doc, groups, g->name,
                         json_pack(doc, "{s:b, s:s, s:I, s:I, s:I}", "healthy", g->healthy,
                                   "scaleUp", g->scale_up, "target", g->target, "maxSize",
                                   g->max_size, "headroom", ca_group_headroom(g))) < 0)
                return -1;
        }
        return dump_put(doc, out, key,
                        json_pack(doc, "{s:s, s:s, s:o}", "status", a->st.autoscaler_status,
                                  "updated", a->updated, "groups", groups));
    }
}

static int dump_record(yyjson_mut_doc *doc, yyjson_mut_val *pods, yyjson_mut_val *classes,
                       yyjson_mut_val *workloads, int k, const struct table_entry *e)
{
    char key[600];

    if (k == CLUSTER_PODS) {
        const struct vpod *v = e->value;
        yyjson_mut_val *dj = demand_json(doc, v->demand, v->n_demand);

        return dj == NULL ? -1
                          : dump_put(doc, pods, e->key,
                                     json_pack(doc, "{s:s, s:I, s:o}", "node", v->node, "priority",
                                               (int64_t)v->priority, "demand", dj));
    }
    if (k == CLUSTER_PRIORITYCLASSES) {
        const struct vclass *v = e->value;

        return dump_put(doc, classes, e->key,
                        json_pack(doc, "{s:I, s:s, s:b}", "value", (int64_t)v->value,
                                  "preemptionPolicy", v->preempt ? "PreemptLowerPriority" : "Never",
                                  "globalDefault", v->global_default));
    }
    {
        const struct workload *w = e->value;
        struct pod_demand dm;
        struct diag d;
        yyjson_mut_val *dj = yyjson_mut_obj(doc);

        if (dj == NULL)
            return -1;
        diag_clear(&d);
        if (pod_gpu_demand(yyjson_obj_get(w->spec, "template"), NULL, &dm, &d) == 0)
            for (size_t r = 0; r < dm.n; r++)
                if (dump_put(doc, dj, dm.r[r].name,
                             yyjson_mut_sint(doc, (dm.r[r].milli + 999) / 1000)) < 0)
                    return -1;
        snprintf(key, sizeof(key), "%s/%s", kinds[k].object, e->key);
        return dump_put(
            doc, workloads, key,
            json_pack(doc, "{s:I, s:o}", "replicas", (int64_t)w->replicas, "demand", dj));
    }
}

yyjson_mut_doc *cluster_dump(struct cluster *c)
{
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *nodes, *pods, *classes, *workloads, *autoscalers, *out = NULL;
    double now = mono_s();
    int rc = -1;

    if (doc == NULL)
        return NULL;
    nodes = yyjson_mut_obj(doc);
    pods = yyjson_mut_obj(doc);
    classes = yyjson_mut_obj(doc);
    workloads = yyjson_mut_obj(doc);
    autoscalers = yyjson_mut_obj(doc);
    pthread_rwlock_rdlock(&c->lock);
    if (nodes != NULL && pods != NULL && classes != NULL && workloads != NULL &&
        autoscalers != NULL && dump_nodes(c, doc, nodes, now) == 0) {
        rc = 0;
        for (int k = CLUSTER_PODS; rc == 0 && k < CLUSTER_KINDS; k++) {
            const struct table *t = &c->kinds[k];

            if (k == CLUSTER_PLUGIN_CONFIGS)
                continue; /* configs, not cluster state */
            for (size_t i = 0; rc == 0 && i < t->n_buckets; i++)
                for (struct table_entry *e = t->buckets[i]; rc == 0 && e; e = e->next)
                    rc = k == CLUSTER_AUTOSCALER_STATUS || k == CLUSTER_NODEPOOLS
                             ? dump_autoscaler(doc, autoscalers, k, e)
                             : dump_record(doc, pods, classes, workloads, k, e);
        }
    }
    pthread_rwlock_unlock(&c->lock);
    /* synced and age_s take the lock themselves */
    if (rc == 0)
        out = json_pack(doc, "{s:b, s:f, s:o, s:o, s:o, s:o, s:o}", "synced", cluster_synced(c),
                        "age_s", cluster_age_s(c), "nodes", nodes, "pods", pods, "priorityClasses",
                        classes, "workloads", workloads, "autoscalers", autoscalers);
    if (out == NULL) {
        yyjson_mut_doc_free(doc);
        return NULL;
    }
    yyjson_mut_doc_set_root(doc, out);
    return doc;
}

/* ---- snapshot ---- */

/* One object of a snapshot, or a List of them (recursion bounded: the document's depth is
 * capped). */
static int load_object(struct cluster *c, yyjson_val *obj, struct diag *d)
{
    yyjson_val *items;
    size_t i, max;
    yyjson_val *it;
    const char *kind;
    int k;
    struct diag one;

    if (strcmp(str_at(obj, "kind"), "List") == 0 || yyjson_obj_get(obj, "items") != NULL) {
        items = yyjson_obj_get(obj, "items");
        yyjson_arr_foreach (items, i, max, it) {
            if (load_object(c, it, d) < 0)
                return -1;
        }
        return 0;
    }
    kind = str_at(obj, "kind");
    /* every kind of that object (ConfigMap: the CA status, the device plugin's configs) takes
     * it or skips it, as a list of that kind's path would give it them */
    for (k = 0; k < CLUSTER_KINDS; k++) {
        if (strcmp(kinds[k].object, kind) != 0)
            continue;
        diag_clear(&one);
        pthread_rwlock_wrlock(&c->lock);
        /* held, also when the view keeps none of it (a pod that uses no GPU) */
        c->snapshot_held |= 1u << k;
        if (upsert(c, (enum cluster_kind)k, obj, &one) < 0) {
            pthread_rwlock_unlock(&c->lock);
            diag_set(d, NULL, 0, 0, "%s", one.msg);
            return -1;
        }
        pthread_rwlock_unlock(&c->lock);
    }
    return 0; /* or something the view does not need, e.g. a Service */
}

/* A read error of the document at off of buf, placed in the whole file: line and column
 * counted from the file's start, in d and in the message. */
static void snapshot_error(const char *path, const char *buf, size_t off, const struct diag *e,
                           struct diag *d)
{
    unsigned line = e->line, col = e->column;
    const char *rest = NULL;
    size_t bol = 0;

    if (line > 0) {
        unsigned before = 0;

        for (size_t i = 0; i < off; i++) {
            if (buf[i] == '\n') {
                before++;
                bol = i + 1;
            }
        }
        if (line == 1)
            col += (unsigned)(off - bol); /* the document starts mid-line */
        line += before;
        /* "invalid JSON at L:C: what": the position again, now the file's */
        if (strncmp(e->msg, "invalid JSON at ", 16) == 0 && (rest = strstr(e->msg + 16, ": ")))
            rest += 2;
    }
    if (rest != NULL)
        diag_set(d, path, line, col, "not kubectl's JSON output: invalid JSON at %u:%u: %s", line,
                 col, rest);
    else
        diag_set(d, path, line, col, "not kubectl's JSON output: %s", e->msg);
}

int cluster_load_snapshot(struct cluster *c, const char *path, struct diag *d)
{
    FILE *f = NULL;
    char *buf = NULL;
    long size;
    size_t off = 0;
    yyjson_doc *doc;
    yyjson_val *root;
    struct diag one;
    int rc = -1;

    f = fopen(path, "re");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
        goto out;
    }
    if ((unsigned long)size > CLUSTER_SNAPSHOT_MAX_BYTES) {
        diag_set(d, path, 0, 0, "file is %ld bytes, more than the limit of %lu", size,
                 (unsigned long)CLUSTER_SNAPSHOT_MAX_BYTES);
        goto out;
    }
    /* zero padding after the data: the documents are read in place */
    buf = malloc((size_t)size + YYJSON_PADDING_SIZE);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        diag_set(d, path, 0, 0, "cannot read the whole file");
        goto out;
    }
    memset(buf + size, 0, YYJSON_PADDING_SIZE);
    pthread_rwlock_wrlock(&c->lock);
    c->snapshot_held = 0;
    free(c->snapshot_path);
    c->snapshot_path = strdup(path);
    pthread_rwlock_unlock(&c->lock);
    if (c->snapshot_path == NULL) {
        diag_set(d, path, 0, 0, "out of memory");
        goto out;
    }
    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_begin(c, (enum cluster_kind)k);
    /* one List, or several documents one after another (kubectl output appended) */
    while (off < (size_t)size) {
        while (off < (size_t)size && strchr(" \t\r\n", buf[off]) != NULL)
            off++;
        if (off == (size_t)size)
            break;
        diag_clear(&one);
        /* arrays are read and skipped (as before yyjson); a scalar is no kubectl output */
        doc = json_read(buf + off, (size_t)size - off,
                        JSON_READ_PREFIX | JSON_READ_INSITU | JSON_READ_ANY_ROOT, VIEW_DEPTH_MAX,
                        NULL, &one);
        root = yyjson_doc_get_root(doc);
        if (doc != NULL && !yyjson_is_ctn(root)) {
            diag_set(&one, NULL, 0, 0, "expected an object, got %s", json_type_desc(root));
            yyjson_doc_free(doc);
            doc = NULL;
        }
        if (doc == NULL) {
            snapshot_error(path, buf, off, &one, d);
            goto out;
        }
        off += yyjson_doc_get_read_size(doc);
        diag_clear(&one);
        rc = load_object(c, root, &one);
        yyjson_doc_free(doc);
        if (rc < 0) {
            diag_set(d, path, 0, 0, "%s", one.msg);
            goto out;
        }
        rc = -1;
    }
    for (int k = 0; k < CLUSTER_KINDS; k++)
        cluster_list_end(c, (enum cluster_kind)k);
    cluster_mark_snapshot(c);
    rc = 0;
out:
    free(buf);
    if (f != NULL)
        fclose(f);
    return rc;
}

unsigned cluster_snapshot_missing(struct cluster *c)
{
    unsigned missing;

    pthread_rwlock_rdlock(&c->lock);
    missing = c->snapshot_path != NULL ? ((1u << CLUSTER_KINDS) - 1) & ~c->snapshot_held : 0;
    for (int k = 0; k < CLUSTER_KINDS; k++)
        if (kinds[k].optional)
            missing &= ~(1u << k); /* most clusters have no node autoscaler gpuadmit reads */
    pthread_rwlock_unlock(&c->lock);
    return missing;
}

const char *cluster_snapshot_path(struct cluster *c)
{
    const char *path;

    pthread_rwlock_rdlock(&c->lock);
    path = c->snapshot_path;
    pthread_rwlock_unlock(&c->lock);
    return path;
}

bool cluster_snapshot_tell_gaps(struct cluster *c)
{
    bool first;

    pthread_rwlock_wrlock(&c->lock);
    first = !c->gaps_told;
    c->gaps_told = true;
    pthread_rwlock_unlock(&c->lock);
    return first;
}

yyjson_doc *cluster_workload_template(struct cluster *c, enum cluster_kind k, const char *ns,
                                      const char *name, int64_t *replicas)
{
    char key[512];
    const struct workload *w;
    yyjson_doc *out = NULL;

    if (k < CLUSTER_REPLICASETS || k >= CLUSTER_KINDS)
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    pthread_rwlock_rdlock(&c->lock);
    w = table_get(&c->kinds[k], key);
    if (w != NULL) {
        out = json_keep(yyjson_obj_get(w->spec, "template"));
        *replicas = w->replicas;
    }
    pthread_rwlock_unlock(&c->lock);
    return out;
}

int cluster_node_is(struct cluster *c, const char *name,
                    bool (*gpu_labels)(yyjson_val *labels, void *arg),
                    bool (*gpu_res)(const char *res, void *arg), void *arg)
{
    const struct node *n;
    int rc = -1;

    pthread_rwlock_rdlock(&c->lock);
    n = table_get(&c->kinds[CLUSTER_NODES], name);
    if (n != NULL) {
        rc = gpu_labels(n->labels, arg) ? 1 : 0;
        for (size_t i = 0; rc == 0 && i < n->n_res; i++)
            if (node_res_offered(&n->res[i]) && gpu_res(n->res[i].name, arg))
                rc = 1;
    }
    pthread_rwlock_unlock(&c->lock);
    return rc;
}

void cluster_nodes_matching(struct cluster *c,
                            bool (*match)(const char *name, yyjson_val *labels, void *arg),
                            bool (*gpu_labels)(yyjson_val *labels, void *arg),
                            bool (*gpu_res)(const char *res, void *arg), void *arg, size_t *matched,
                            size_t *gpu)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];

    *matched = *gpu = 0;
    pthread_rwlock_rdlock(&c->lock);
    for (size_t b = 0; b < t->n_buckets; b++) {
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct node *nd = e->value;
            bool is_gpu;

            if (!match(e->key, nd->labels, arg))
                continue;
            (*matched)++;
            is_gpu = gpu_labels(nd->labels, arg);
            for (size_t i = 0; !is_gpu && i < nd->n_res; i++)
                is_gpu = node_res_offered(&nd->res[i]) && gpu_res(nd->res[i].name, arg);
            *gpu += is_gpu;
        }
    }
    pthread_rwlock_unlock(&c->lock);
}

int cluster_offering_nodes_carry(struct cluster *c, bool (*offers)(const char *res, void *arg),
                                 void *arg, const char *key, const char *value)
{
    return cluster_offering_nodes_carry_all(c, offers, arg, &key, &value, 1);
}

int cluster_offering_nodes_carry_all(struct cluster *c, bool (*offers)(const char *res, void *arg),
                                     void *arg, const char *const *keys, const char *const *values,
                                     size_t n)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];
    int rc = -1;

    pthread_rwlock_rdlock(&c->lock);
    for (size_t b = 0; b < t->n_buckets && rc != 1; b++) {
        for (const struct table_entry *e = t->buckets[b]; e != NULL && rc != 1; e = e->next) {
            const struct node *nd = e->value;
            yyjson_val *v;
            bool offered = false;

            for (size_t i = 0; i < nd->n_res && !offered; i++)
                offered = node_res_offered(&nd->res[i]) && offers(nd->res[i].name, arg);
            if (!offered)
                continue;
            rc = 1;
            for (size_t l = 0; l < n && rc == 1; l++) {
                v = yyjson_obj_get(nd->labels, keys[l]);
                rc = json_str_is(v, values[l]) ? 1 : 0;
            }
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return rc;
}

bool cluster_priority_class(struct cluster *c, const char *name, int64_t *value, bool *preempt)
{
    const struct vclass *v;

    pthread_rwlock_rdlock(&c->lock);
    v = table_get(&c->kinds[CLUSTER_PRIORITYCLASSES], name);
    if (v != NULL) {
        *value = v->value;
        *preempt = v->preempt;
    }
    pthread_rwlock_unlock(&c->lock);
    return v != NULL;
}

size_t cluster_totals(struct cluster *c, size_t *nodes, bool (*keep)(const char *name, void *arg),
                      void *arg, struct cluster_resource_total *out, size_t max)
{
    const struct table *t = &c->kinds[CLUSTER_NODES];
    double now = mono_s();
    size_t n = 0;

    pthread_rwlock_rdlock(&c->lock);
    *nodes = t->n;
    for (size_t b = 0; b < t->n_buckets; b++) {
        for (const struct table_entry *e = t->buckets[b]; e != NULL; e = e->next) {
            const struct node *nd = e->value;

            for (size_t i = 0; i < nd->n_res; i++) {
                const struct node_res *r = &nd->res[i];
                const struct bound_res *used = NULL;
                size_t j;

                if (!keep(r->name, arg))
                    continue;
                for (j = 0; j < n && j < max && strcmp(out[j].name, r->name) != 0; j++) {
                }
                if (j == n) {
                    n++;
                    if (j >= max)
                        continue;
                    snprintf(out[j].name, sizeof(out[j].name), "%s", r->name);
                    out[j].capacity = out[j].allocatable = out[j].used = 0;
                }
                if (j >= max)
                    continue;
                for (size_t k = 0; nd->binding != NULL && k < nd->binding->n_res; k++)
                    if (strcmp(nd->binding->res[k].name, r->name) == 0)
                        used = &nd->binding->res[k];
                out[j].capacity += r->capacity;
                out[j].allocatable += cluster_effective_allocatable(c, r, now);
                out[j].used += used != NULL ? used->total : 0;
            }
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return n;
}
