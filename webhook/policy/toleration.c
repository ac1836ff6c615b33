/*
 * toleration.c: one toleration against one taint (see toleration.h). The one matcher both the
 * rules (judge.h's tolerates(), the kinds' judges) and the capacity judgement (capacity.c) use,
 * so that "the pod tolerates the GPU taint" means the same in both.
 */
#include "toleration.h"

#include <string.h>

#include "json.h"

bool toleration_tolerates(yyjson_val *tol, const char *key, const char *value, const char *effect)
{
    const char *k = json_str(yyjson_obj_get(tol, "key"));
    const char *op = json_str(yyjson_obj_get(tol, "operator"));
    const char *val = json_str(yyjson_obj_get(tol, "value"));
    const char *eff = json_str(yyjson_obj_get(tol, "effect"));
    bool exists = op != NULL && strcmp(op, "Exists") == 0;

    if (eff != NULL && eff[0] && strcmp(eff, effect) != 0)
        return false;
    if (k == NULL || k[0] == '\0')
        return exists; /* an empty key with Exists tolerates every taint */
    if (strcmp(k, key) != 0)
        return false;
    if (exists)
        return true;
    /* Equal (the default): the values must be equal; a taint of any value needs Exists */
    return value != NULL && strcmp(val ? val : "", value) == 0;
}
