/*
 * rule_priority_class.h: the settings of a priority-class rule (rule_priority_class.c), for the
 * tests.
 */
#ifndef GPUADMIT_RULE_PRIORITY_CLASS_H
#define GPUADMIT_RULE_PRIORITY_CLASS_H

#include <stddef.h>

#include "policy.h"

/* A value chosen per namespace: the first entry whose glob matches the namespace wins. */
struct ns_value {
    char *ns_glob;
    char *value;
};

struct ns_list {
    char *ns_glob;
    struct strlist values; /* globs */
};

struct priority_class_settings {
    char *default_class; /* NULL: no default (Mutate then cannot fix, and denies) */
    struct ns_value *ns_defaults;
    size_t n_ns_defaults;
    struct ns_list *allowed; /* empty: any existing class is allowed */
    size_t n_allowed;
};

/* r's settings; NULL when r is not a priority-class rule. */
const struct priority_class_settings *priority_class_settings(const struct rule *r);

#endif
