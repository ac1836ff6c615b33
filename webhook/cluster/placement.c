/*
 * placement.c: node labels and taints against a pod spec (see placement.h).
 */
#include "placement.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "policy/toleration.h"

/* Pod spec strings come from a review, where yyjson accepts "\u0000": they are compared with
 * the view's as (pointer, length), so that "a\u0000b" is not "a". */

/* The length of v when it is a string, else 0. */
static size_t str_len(yyjson_val *v)
{
    return yyjson_is_str(v) ? yyjson_get_len(v) : 0;
}

/* Whether a string member of the toleration holds a NUL: such a toleration matches no node's
 * taint (the scheduler compares the whole bytes, and no taint of a node holds a NUL), whereas
 * toleration_tolerates() reads its strings up to the NUL. */
static bool holds_nul(yyjson_val *tol)
{
    static const char *const keys[] = {"key", "operator", "value", "effect"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        yyjson_val *v = yyjson_obj_get(tol, keys[i]);

        if (yyjson_is_str(v) && strlen(yyjson_get_str(v)) != yyjson_get_len(v))
            return true;
    }
    return false;
}

/* The member of obj whose key is the string k, byte for byte; NULL when k is no string. */
static yyjson_val *get_by(yyjson_val *obj, yyjson_val *k)
{
    return yyjson_is_str(k) ? yyjson_obj_getn(obj, yyjson_get_str(k), yyjson_get_len(k)) : NULL;
}

/* v (s, n bytes) is one of the strings of values. */
static bool label_in(const char *s, size_t n, yyjson_val *values)
{
    size_t i, max;
    yyjson_val *x;

    yyjson_arr_foreach (values, i, max, x) {
        if (s != NULL && yyjson_is_str(x) && yyjson_get_len(x) == n &&
            memcmp(yyjson_get_str(x), s, n) == 0)
            return true;
    }
    return false;
}

/* A decimal integer, all of v's bytes (strtoll's syntax; not a string reads as "", 0). */
static bool str_ll(yyjson_val *v, long long *out)
{
    const char *s = yyjson_is_str(v) ? yyjson_get_str(v) : "";
    char *end;

    *out = strtoll(s, &end, 10);
    return end == s + str_len(v);
}

/* One node selector requirement against a node's labels. */
static bool expr_matches(yyjson_val *e, yyjson_val *labels)
{
    yyjson_val *key = yyjson_obj_get(e, "key"), *op = yyjson_obj_get(e, "operator");
    yyjson_val *values = yyjson_obj_get(e, "values");
    yyjson_val *v = get_by(labels, key);
    const char *vs = yyjson_get_str(v);
    long long have, want;

    if (!yyjson_is_str(key) || !yyjson_is_str(op))
        return false;
    if (json_str_is(op, "In"))
        return label_in(vs, str_len(v), values);
    if (json_str_is(op, "NotIn"))
        return !label_in(vs, str_len(v), values);
    if (json_str_is(op, "Exists"))
        return vs != NULL;
    if (json_str_is(op, "DoesNotExist"))
        return vs == NULL;
    if ((json_str_is(op, "Gt") || json_str_is(op, "Lt")) && vs != NULL && vs[0] != '\0' &&
        yyjson_arr_size(values) == 1) {
        if (!str_ll(v, &have) || !str_ll(yyjson_arr_get_first(values), &want))
            return false;
        return json_str_is(op, "Gt") ? have > want : have < want;
    }
    return false;
}

/* A matchFields requirement: the only field is metadata.name. */
static bool field_matches(yyjson_val *e, const char *node_name)
{
    yyjson_val *op = yyjson_obj_get(e, "operator");
    yyjson_val *values = yyjson_obj_get(e, "values");

    if (!json_str_is(yyjson_obj_get(e, "key"), "metadata.name") || !yyjson_is_str(op))
        return false;
    if (json_str_is(op, "In"))
        return label_in(node_name, strlen(node_name), values);
    if (json_str_is(op, "NotIn"))
        return !label_in(node_name, strlen(node_name), values);
    return false;
}

/* A required node selector term: all its requirements hold; a term with none matches no node
 * (as in the scheduler). */
static bool term_matches(yyjson_val *term, const char *node_name, yyjson_val *labels)
{
    yyjson_val *exprs = yyjson_obj_get(term, "matchExpressions");
    yyjson_val *fields = yyjson_obj_get(term, "matchFields"), *e;
    size_t k, max;

    if (yyjson_arr_size(exprs) == 0 && yyjson_arr_size(fields) == 0)
        return false;
    yyjson_arr_foreach (exprs, k, max, e) {
        if (!expr_matches(e, labels))
            return false;
    }
    yyjson_arr_foreach (fields, k, max, e) {
        if (!field_matches(e, node_name))
            return false;
    }
    return true;
}

/* The taints the node lifecycle controller and kubectl cordon put on a node while it is
 * NotReady, unreachable or unschedulable (kubernetes/kubernetes pkg/controller/nodelifecycle,
 * TaintNodesByCondition; k8s.io/api/core/v1 well_known_taints.go): they come and go with the
 * condition, so they make a node transiently ineligible, as the condition does. */
bool placement_lifecycle_taint(const char *key)
{
    return strcmp(key, "node.kubernetes.io/unschedulable") == 0 ||
           strcmp(key, "node.kubernetes.io/not-ready") == 0 ||
           strcmp(key, "node.kubernetes.io/unreachable") == 0;
}

bool placement_selector_miss(yyjson_val *spec, yyjson_val *labels, const char **key,
                             const char **value)
{
    yyjson_val *k, *v;
    size_t i, max;

    yyjson_obj_foreach (yyjson_obj_get(spec, "nodeSelector"), i, max, k, v) {
        yyjson_val *have = get_by(labels, k);

        if (!yyjson_is_str(have) || !yyjson_is_str(v) ||
            !yyjson_equals_strn(have, yyjson_get_str(v), yyjson_get_len(v))) {
            *key = yyjson_get_str(k);
            *value = yyjson_is_str(v) ? yyjson_get_str(v) : "";
            return true;
        }
    }
    return false;
}

bool placement_affinity_ok(yyjson_val *spec, const char *node_name, yyjson_val *labels)
{
    yyjson_val *terms = yyjson_obj_get(
        yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(spec, "affinity"), "nodeAffinity"),
                       "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    yyjson_val *term;
    size_t i, max;

    if (yyjson_arr_size(terms) == 0)
        return true;
    yyjson_arr_foreach (terms, i, max, term) {
        if (term_matches(term, node_name, labels))
            return true;
    }
    return false;
}

bool placement_tolerated(yyjson_val *tolerations, const char *key, const char *value,
                         const char *effect)
{
    yyjson_val *tol;
    size_t i, max;

    yyjson_arr_foreach (tolerations, i, max, tol) {
        if (!holds_nul(tol) && toleration_tolerates(tol, key, value, effect))
            return true;
    }
    return false;
}
