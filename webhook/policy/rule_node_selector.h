/*
 * rule_node_selector.h: the settings of a node-selector rule (rule_node_selector.c), for the
 * tests.
 */
#ifndef GPUADMIT_RULE_NODE_SELECTOR_H
#define GPUADMIT_RULE_NODE_SELECTOR_H

#include <stddef.h>

#include "policy.h"

/* The labels added (Mutate); empty means every GPU node label of the policy that has a value. */
struct node_selector_settings {
    struct node_label *labels;
    size_t n_labels;
};

/* r's settings; NULL when r is not a node-selector rule. */
const struct node_selector_settings *node_selector_settings(const struct rule *r);

#endif
