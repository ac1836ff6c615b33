/*
 * rule_device_plugin.c: the device-plugin-config rule (rules/README.md): the ConfigMaps it
 * names (configMaps: namespace and name) hold the NVIDIA device plugin's config files, one per
 * data key, and each is read strictly (plugin_config.c) at their CREATE and UPDATE on
 * /validate, in its own pass: a ConfigMap has no pod spec for the judges of eval.c.
 *
 * What it refuses is denied (Enforce), warned (Warn) or annotated (Audit) like any Deny rule;
 * what the plugin would accept and then ignore is a warning (an annotation under Audit). Only the
 * named ConfigMaps are judged, whatever the policy's own scope says: that scope is about
 * workloads, and its default exclusions (kube-system, gpu-operator) are where these ConfigMaps
 * live. The rule's own match and exclude still apply.
 */
#include "rule_device_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kind.h"
#include "log.h"
#include "plugin_config.h"

/* ---- settings ---- */

enum { DP_CONFIGMAPS, DP_N };
static const struct field KEYS[DP_N] = {{"configMaps", true}};

enum { CM_NAMESPACE, CM_NAME, CM_N };
static const struct field CM_FIELDS[CM_N] = {{"namespace", true}, {"name", true}};

static void *load(struct loader *L, const struct rule_input *in)
{
    const struct yamltree_node *n = in->v[DP_CONFIGMAPS], *v[CM_N], *k[CM_N];
    char p[RULES_PATH_MAX], q[RULES_PATH_MAX];
    struct device_plugin_settings *r = xcalloc(L, 1, sizeof(*r));

    if (r == NULL)
        return NULL;
    if (in->rule->action != ACTION_DENY) {
        path_key(p, in->path, "action");
        err_node(L, in->common[R_ACTION],
                 "%s: device-plugin-config rules judge ConfigMaps at /validate and cannot "
                 "patch; expected Deny",
                 p);
    }
    path_key(p, in->path, "configMaps");
    if (!given(n) || !want_seq(L, n, p))
        return r;
    if (n->n == 0) {
        err_node(L, n, "%s: name at least one ConfigMap", p);
        return r;
    }
    r->refs = xcalloc(L, n->n, sizeof(*r->refs));
    if (r->refs == NULL)
        return r;
    r->n_refs = n->n;
    for (size_t i = 0; i < n->n; i++) {
        path_index(q, p, i);
        if (!map_fields(L, n->kids[i], q, CM_FIELDS, CM_N, v, k))
            continue;
        path_key(p, q, "namespace");
        if (v[CM_NAMESPACE] != NULL)
            get_str(L, v[CM_NAMESPACE], p, &VAL_SUBDOMAIN, &r->refs[i].ns);
        path_key(p, q, "name");
        if (v[CM_NAME] != NULL)
            get_str(L, v[CM_NAME], p, &VAL_SUBDOMAIN, &r->refs[i].name);
        path_key(p, in->path, "configMaps");
    }
    return r;
}

static void settings_free(void *settings)
{
    struct device_plugin_settings *s = settings;

    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_refs; i++) {
        free(s->refs[i].ns);
        free(s->refs[i].name);
    }
    free(s->refs);
    free(s);
}

/* ---- the pass ---- */

static bool names(const struct device_plugin_settings *s, const char *ns, const char *name)
{
    for (size_t i = 0; s != NULL && i < s->n_refs; i++)
        if (s->refs[i].ns != NULL && s->refs[i].name != NULL && strcmp(s->refs[i].ns, ns) == 0 &&
            strcmp(s->refs[i].name, name) == 0)
            return true;
    return false;
}

/* What one rule found in one ConfigMap: problems as add_problem() keeps them. */
struct found {
    char refused[MSG_MAX];
    char warned[MSG_MAX];
    size_t n_refused, n_warned, left_refused, left_warned;
};

/* Keeps text in buf unless the rest would not fit the message, then only counts it. */
static void keep(char *buf, size_t *n, size_t *left, const char *text)
{
    /* room for the last "; and N more" */
    if (strlen(buf) + strlen(text) + 2 >= MSG_MAX - 40) {
        (*left)++;
        return;
    }
    add_problem(buf, MSG_MAX, "%s", text);
    (*n)++;
}

static void judge_file(struct found *fd, const char *key, const char *text, size_t len)
{
    struct plugin_report rep;
    char where[160], more[224];

    snprintf(where, sizeof(where), "data[%.128s]", key);
    plugin_config_check(where, text, len, &rep);
    for (size_t i = 0; i < rep.n; i++) {
        if (rep.f[i].warn)
            keep(fd->warned, &fd->n_warned, &fd->left_warned, rep.f[i].text);
        else
            keep(fd->refused, &fd->n_refused, &fd->left_refused, rep.f[i].text);
    }
    /* findings past the report's array */
    if (rep.refused + rep.warned > rep.n) {
        snprintf(more, sizeof(more), "%s: %zu more findings", where,
                 rep.refused + rep.warned - rep.n);
        keep(rep.refused > 0 ? fd->refused : fd->warned,
             rep.refused > 0 ? &fd->n_refused : &fd->n_warned,
             rep.refused > 0 ? &fd->left_refused : &fd->left_warned, more);
    }
}

/* Every data key of the ConfigMap obj, and what the plugin makes of the whole. */
static void judge_configmap(struct found *fd, yyjson_val *obj)
{
    yyjson_val *data = yyjson_obj_get(obj, "data"), *bin = yyjson_obj_get(obj, "binaryData"), *v;
    const char *key;
    size_t n = 0;
    bool has_default = false;
    char text[PLUGIN_CONFIG_TEXT_MAX];

    OBJ_EACH(data, key, v)
    {
        n++;
        has_default = has_default || strcmp(key, "default") == 0;
        if (yyjson_is_str(v))
            judge_file(fd, key, yyjson_get_str(v), yyjson_get_len(v));
    }
    /* a ConfigMap volume projects binaryData keys as files too: the plugin would read one
     * as a config, unchecked */
    OBJ_EACH(bin, key, v)
    {
        snprintf(text, sizeof(text),
                 "binaryData[%.128s] is not checked: write the device plugin's configs under data",
                 key);
        keep(fd->warned, &fd->n_warned, &fd->left_warned, text);
    }
    if (n == 0 && yyjson_obj_size(bin) == 0)
        keep(fd->warned, &fd->n_warned, &fd->left_warned,
             "the ConfigMap has no data: the device plugin finds no config in it");
    /* the plugin's config manager takes config.default, else the key default, else the only
     * key; with several keys and none of them default it fails to start */
    if (n > 1 && !has_default)
        keep(fd->warned, &fd->n_warned, &fd->left_warned,
             "several configs and none named default: the device plugin fails to start unless "
             "its config.default (Helm, or the GPU Operator's devicePlugin.config.default) names "
             "one");
}

static void report(struct run *rn, const struct rule *ru, enum rule_enforcement eff,
                   struct found *fd)
{
    char text[MSG_MAX + 64];
    const char *p, *end;

    if (fd->left_refused > 0)
        add_problem(fd->refused, MSG_MAX, "and %zu more", fd->left_refused);
    if (fd->left_warned > 0)
        add_problem(fd->warned, MSG_MAX, "and %zu more", fd->left_warned);
    if (fd->refused[0] != '\0') {
        if (eff == ENFORCE_ENFORCE)
            record_deny(rn, ru, fd->refused);
        else
            record_report(rn, ru, eff, FINDING_WOULD_DENY, NULL, fd->refused);
    }
    if (fd->warned[0] == '\0')
        return;
    if (eff == ENFORCE_AUDIT) {
        record_report(rn, ru, eff, FINDING_WOULD_WARN, NULL, fd->warned);
        return;
    }
    /* one warning per finding, as the apiserver shows each on its own line (add_problem()
     * keeps them apart with a unit separator, eval.c's PROBLEM_SEP) */
    for (p = fd->warned; *p; p = *end ? end + 1 : end) {
        for (end = p; *end && *end != '\x1f'; end++)
            ;
        snprintf(text, sizeof(text), "gpuadmit [%s]: %.*s", ru->name, (int)(end - p), p);
        decision_warn(rn->dec, text);
        snprintf(text, sizeof(text), "%.*s", (int)(end - p), p);
        log_decision(rn, ru, eff, FINDING_WARN, NULL, text);
    }
}

/* /validate: every device-plugin-config rule (type t) that names the ConfigMap judges it. */
static void device_plugin_pass(struct run *rn, const struct policy *p, enum rule_type t)
{
    static const struct target configmap = {"ConfigMap", "", "/metadata", NULL, false, false};
    const struct review *r = rn->r;
    const char *name;
    struct who w;

    if (!review_gvr_is(r, "", "configmaps") || r->sub_resource[0] != '\0' || r->object == NULL ||
        (r->op != REVIEW_CREATE && r->op != REVIEW_UPDATE))
        return;
    name = json_get_str(yyjson_obj_get(r->object, "metadata"), "name");
    if (name == NULL || name[0] == '\0')
        name = r->name;
    who_init(&w, r, &configmap, r->object);
    for (size_t i = 0; i < p->n_docs; i++) {
        const struct policy_doc *doc = &p->docs[i];

        for (size_t k = 0; k < doc->n_rules; k++) {
            const struct rule *ru = &doc->rules[k];
            enum rule_enforcement eff =
                rn->audit_only || doc->audit_only ? ENFORCE_AUDIT : ru->enforcement;
            unsigned before = rn->findings;
            struct found fd;

            if (ru->type != t || !names(ru->settings, r->ns, name) || !in_scope(&ru->scope, &w))
                continue;
            snprintf(rn->subject, sizeof(rn->subject), "ConfigMap %.120s/%.120s", r->ns, name);
            memset(&fd, 0, sizeof(fd));
            judge_configmap(&fd, r->object);
            report(rn, ru, eff, &fd);
            if (rn->findings == before)
                trace_rule(rn, ru, eff, OUTCOME_PASS, "");
        }
    }
}

const struct rule_ops rule_device_plugin_ops = {
    .keys = KEYS,
    .n_keys = DP_N,
    .load = load,
    .free = settings_free,
    .pass = device_plugin_pass,
};

const struct device_plugin_settings *device_plugin_settings(const struct rule *r)
{
    return rule_settings_of(r, &rule_device_plugin_ops);
}

size_t device_plugin_refs(const struct policy *p, struct cluster_cm_ref *out)
{
    size_t n = 0;

    for (size_t d = 0; p != NULL && d < p->n_docs; d++)
        for (size_t r = 0; r < p->docs[d].n_rules; r++) {
            const struct device_plugin_settings *s = device_plugin_settings(&p->docs[d].rules[r]);

            for (size_t i = 0; s != NULL && i < s->n_refs && n < CLUSTER_PLUGIN_CONFIGS_MAX; i++) {
                size_t k;

                for (k = 0; k < n && !(strcmp(out[k].ns, s->refs[i].ns) == 0 &&
                                       strcmp(out[k].name, s->refs[i].name) == 0);
                     k++)
                    ;
                if (k < n)
                    continue;
                snprintf(out[n].ns, sizeof(out[n].ns), "%s", s->refs[i].ns);
                snprintf(out[n].name, sizeof(out[n].name), "%s", s->refs[i].name);
                n++;
            }
        }
    return n;
}

void device_plugin_view_wants(struct cluster *c, const struct policy *p)
{
    struct cluster_cm_ref refs[CLUSTER_PLUGIN_CONFIGS_MAX];
    size_t n = device_plugin_refs(p, refs);

    if (n == CLUSTER_PLUGIN_CONFIGS_MAX)
        log_event(LOG_WARN, "the cluster view reads at most this many device plugin configs",
                  "{s:i}", "configmaps", (int)CLUSTER_PLUGIN_CONFIGS_MAX);
    cluster_plugin_configs_want(c, refs, n);
}
