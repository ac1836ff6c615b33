/*
 * rule_priority_class.c: the priority-class rule (rules/README.md): its settings and their
 * loading, and its judge: a GPU pod names a PriorityClass that exists and its namespace may use
 * (Mutate sets the namespace's default, with the priority and preemption policy the apiserver's
 * Priority plugin resolves from it).
 */
#include "rule_priority_class.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "json.h"
#include "kind.h"

/* ---- settings ---- */

enum { PC_DEFAULT, PC_NS_DEFAULTS, PC_ALLOWED, PC_N };
static const struct field KEYS[PC_N] = {
    {"default", false}, {"namespaceDefaults", false}, {"allowed", false}};

enum { ND_NAMESPACE, ND_CLASS, ND_N };
static const struct field NS_DEFAULT_FIELDS[ND_N] = {{"namespace", true}, {"class", true}};
enum { AL_NAMESPACE, AL_CLASSES, AL_N };
static const struct field ALLOWED_FIELDS[AL_N] = {{"namespace", true}, {"classes", true}};

static void load_ns_defaults(struct loader *L, const struct yamltree_node *n, const char *path,
                             struct priority_class_settings *r)
{
    const struct yamltree_node *v[ND_N], *k[ND_N];
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX];
    size_t i;

    if (!want_seq(L, n, path))
        return;
    r->ns_defaults = xcalloc(L, n->n, sizeof(*r->ns_defaults));
    if (r->ns_defaults == NULL)
        return;
    r->n_ns_defaults = n->n;
    for (i = 0; i < n->n; i++) {
        path_index(p, path, i);
        if (!map_fields(L, n->kids[i], p, NS_DEFAULT_FIELDS, ND_N, v, k))
            continue;
        path_key(q, p, "namespace");
        if (v[ND_NAMESPACE] != NULL)
            get_str(L, v[ND_NAMESPACE], q, &VAL_GLOB, &r->ns_defaults[i].ns_glob);
        path_key(q, p, "class");
        if (v[ND_CLASS] != NULL)
            get_str(L, v[ND_CLASS], q, &VAL_SUBDOMAIN, &r->ns_defaults[i].value);
    }
}

static void load_allowed(struct loader *L, const struct yamltree_node *n, const char *path,
                         struct priority_class_settings *r)
{
    const struct yamltree_node *v[AL_N], *k[AL_N];
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX];
    size_t i;

    if (!want_seq(L, n, path))
        return;
    r->allowed = xcalloc(L, n->n, sizeof(*r->allowed));
    if (r->allowed == NULL)
        return;
    r->n_allowed = n->n;
    for (i = 0; i < n->n; i++) {
        path_index(p, path, i);
        if (!map_fields(L, n->kids[i], p, ALLOWED_FIELDS, AL_N, v, k))
            continue;
        path_key(q, p, "namespace");
        if (v[AL_NAMESPACE] != NULL)
            get_str(L, v[AL_NAMESPACE], q, &VAL_GLOB, &r->allowed[i].ns_glob);
        path_key(q, p, "classes");
        if (v[AL_CLASSES] != NULL)
            load_strlist(L, v[AL_CLASSES], q, &VAL_GLOB, &r->allowed[i].values);
    }
}

static void *load(struct loader *L, const struct rule_input *in)
{
    const struct yamltree_node *const *v = in->v;
    const char *path = in->path;
    char p[RULES_PATH_MAX];
    struct priority_class_settings *r = xcalloc(L, 1, sizeof(*r));

    if (r == NULL)
        return NULL;

    path_key(p, path, "default");
    if (given(v[PC_DEFAULT]))
        get_str(L, v[PC_DEFAULT], p, &VAL_SUBDOMAIN, &r->default_class);
    path_key(p, path, "namespaceDefaults");
    if (given(v[PC_NS_DEFAULTS]))
        load_ns_defaults(L, v[PC_NS_DEFAULTS], p, r);
    path_key(p, path, "allowed");
    if (given(v[PC_ALLOWED]))
        load_allowed(L, v[PC_ALLOWED], p, r);
    return r;
}

/* ---- judging ---- */

/* The class called name, into *out (its strings borrowed), or NULL when unknown. A synced
 * cluster view is the truth (the apiserver's Priority plugin checks the patch against the
 * class as it is); the policy's list stands in without one. */
static const struct priority_class *find_class(const struct ctx *c, const char *name,
                                               struct priority_class *out)
{
    int64_t value;
    bool preempt;

    if (view_synced(c)) {
        if (!cluster_priority_class(c->view, name, &value, &preempt))
            return NULL;
        out->name = (char *)name;
        out->value = (int32_t)value;
        out->preemption_policy = preempt ? "PreemptLowerPriority" : "Never";
        return out;
    }
    for (size_t i = 0; i < c->doc->n_classes; i++) {
        if (strcmp(c->doc->classes[i].name, name) == 0)
            return &c->doc->classes[i];
    }
    return NULL;
}

/* Whether a class the pod names can be said not to exist: only a synced view of the cluster
 * knows every class (a globalDefault class, or any other the cluster has, is not in the
 * policy's list). */
static bool classes_known(const struct ctx *c)
{
    return view_synced(c);
}

/* What a denial that no class of a name exists adds when the view was loaded from a snapshot
 * that held no PriorityClass at all: then the class may well exist, and the snapshot is
 * incomplete (a cluster always has the system classes, cluster.h). */
static const char *classes_missing(const struct ctx *c)
{
    if (c->view != NULL && (cluster_snapshot_missing(c->view) & (1u << CLUSTER_PRIORITYCLASSES)))
        return " (the cluster view is a snapshot without PriorityClasses: list them in it too, "
               "kubectl get priorityclasses -o json)";
    return "";
}

static bool is_system_class(const char *name)
{
    return strcmp(name, "system-cluster-critical") == 0 ||
           strcmp(name, "system-node-critical") == 0;
}

static const char *default_class_for(const struct priority_class_settings *s, const char *ns)
{
    for (size_t i = 0; i < s->n_ns_defaults; i++) {
        if (fnmatch(s->ns_defaults[i].ns_glob, ns, 0) == 0)
            return s->ns_defaults[i].value;
    }
    return s->default_class;
}

/* NULL when allowed; else the allowed list's entry that refuses it. */
static const struct ns_list *class_refused(const struct priority_class_settings *s, const char *ns,
                                           const char *cls)
{
    for (size_t i = 0; i < s->n_allowed; i++) {
        if (fnmatch(s->allowed[i].ns_glob, ns, 0) != 0)
            continue;
        return pod_glob_any(&s->allowed[i].values, cls) ? NULL : &s->allowed[i];
    }
    return NULL;
}

static enum verdict set_class(struct ctx *c, const struct priority_class *pc)
{
    /* The Priority plugin resolves spec.priority and spec.preemptionPolicy from the class, and
     * refuses a pod whose values disagree with it, also when the chain is reinvoked after this
     * patch. A Pod has them already (the plugin ran before the webhook), so they are set to the
     * class's; a template gets them only when it already carries them. */
    bool priority = c->t->is_pod || yyjson_obj_get(c->spec, "priority") != NULL;
    bool preemption = c->t->is_pod || yyjson_obj_get(c->spec, "preemptionPolicy") != NULL;

    if (add_op(c, "/priorityClassName", NULL, 0, yyjson_mut_strcpy(PATCH_OUT(c), pc->name)) < 0 ||
        (priority &&
         add_op(c, "/priority", NULL, 0, yyjson_mut_sint(PATCH_OUT(c), pc->value)) < 0) ||
        (preemption && add_op(c, "/preemptionPolicy", NULL, 0,
                              yyjson_mut_strcpy(PATCH_OUT(c), pc->preemption_policy)) < 0)) {
        resync(c);
        return V_PROBLEM;
    }
    if (resync(c) < 0)
        return V_PROBLEM;
    add_text(c->fixed, sizeof(c->fixed), "set priorityClassName %s (priority %d, %s)", pc->name,
             (int)pc->value, pc->preemption_policy);
    return V_FIXED;
}

static enum verdict judge(struct ctx *c, const struct rule *ru)
{
    const struct priority_class_settings *s = ru->settings;
    const char *cls = json_str(yyjson_obj_get(c->spec, "priorityClassName"));
    const char *want;
    const struct priority_class *pc;
    const struct ns_list *refused;
    struct priority_class found;
    char *target = c->problem;

    if (!requests_gpus(c))
        return V_OK;
    if (cls == NULL || cls[0] == '\0') {
        want = default_class_for(s, c->r->ns);
        pc = want ? find_class(c, want, &found) : NULL;
        if (want == NULL) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod has no priorityClassName, so it cannot preempt anything; set "
                        "spec.priorityClassName");
            return V_PROBLEM;
        }
        if (pc == NULL) {
            add_problem(c->problem, sizeof(c->problem),
                        "GPU pod has no priorityClassName, and the default class \"%s\" is not a "
                        "known PriorityClass%s; set spec.priorityClassName",
                        want, classes_missing(c));
            return V_PROBLEM;
        }
        if (c->fix && !class_refused(s, c->r->ns, pc->name) && set_class(c, pc) == V_FIXED)
            target = c->fixable;
        add_problem(target, MSG_MAX,
                    "GPU pod has no priorityClassName, so it cannot preempt anything; set "
                    "spec.priorityClassName: %s",
                    pc->name);
        return target == c->fixable ? V_FIXED : V_PROBLEM;
    }
    if (classes_known(c) && !is_system_class(cls) && find_class(c, cls, &found) == NULL) {
        add_problem(c->problem, sizeof(c->problem),
                    "priorityClassName \"%s\" is not a known PriorityClass%s", cls,
                    classes_missing(c));
        return V_PROBLEM;
    }
    refused = class_refused(s, c->r->ns, cls);
    if (refused != NULL) {
        char list[256] = "";

        for (size_t i = 0, n = 0; i < refused->values.n && n < sizeof(list); i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
                                  refused->values.v[i]);
        add_problem(c->problem, sizeof(c->problem),
                    "priorityClassName \"%s\" is not allowed in namespace \"%s\" (allowed: %s)",
                    cls, c->r->ns, list);
        return V_PROBLEM;
    }
    return V_OK;
}

static void settings_free(void *settings)
{
    struct priority_class_settings *s = settings;

    if (s == NULL)
        return;
    free(s->default_class);
    for (size_t i = 0; i < s->n_ns_defaults; i++) {
        free(s->ns_defaults[i].ns_glob);
        free(s->ns_defaults[i].value);
    }
    free(s->ns_defaults);
    for (size_t i = 0; i < s->n_allowed; i++) {
        free(s->allowed[i].ns_glob);
        strlist_free(&s->allowed[i].values);
    }
    free(s->allowed);
    free(s);
}

const struct rule_ops rule_priority_class_ops = {
    .keys = KEYS,
    .n_keys = PC_N,
    .load = load,
    .free = settings_free,
    .judge = judge,
    .reads = 1u << CLUSTER_PRIORITYCLASSES,
};

const struct priority_class_settings *priority_class_settings(const struct rule *r)
{
    return rule_settings_of(r, &rule_priority_class_ops);
}
