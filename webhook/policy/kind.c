/*
 * kind.c: the table of the rule kinds (kind.h), made from rule_kinds.h: each line's name and
 * its module's operations.
 */
#include "kind.h"

#define RULE_KIND_ENTRY(ID, NAME, stem) [RULE_##ID] = {NAME, &rule_##stem##_ops},
const struct rule_kind rule_kinds[RULE_TYPES] = {RULE_KINDS(RULE_KIND_ENTRY)};
#undef RULE_KIND_ENTRY

const struct rule_ops *rule_ops_of(enum rule_type t)
{
    return (unsigned)t < RULE_TYPES ? rule_kinds[t].ops : NULL;
}

const void *rule_settings_of(const struct rule *r, const struct rule_ops *ops)
{
    return r != NULL && rule_ops_of(r->type) == ops ? r->settings : NULL;
}
