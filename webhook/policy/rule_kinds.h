/*
 * rule_kinds.h: the rule types, one line each: the one place a rule type is named.
 *
 * RULE_KIND(ID, NAME, stem): RULE_ID is its enum rule_type value (policy.h), NAME what rule
 * files, logs, traces and metrics call it (policy_rule_type_name()), and stem names its module,
 * rule_<stem>.c, which holds its settings, loader and judges and defines its operations,
 * rule_<stem>_ops (kind.h). A new rule type is a line here and its module; the loader and the
 * evaluator learn everything else about it from its operations (docs/architecture.md §2.2).
 */
#ifndef GPUADMIT_RULE_KINDS_H
#define GPUADMIT_RULE_KINDS_H

/* In the order the rule files' documentation lists them; the order of metrics and messages. */
#define RULE_KINDS(RULE_KIND)                                                                      \
    RULE_KIND(GPU_REQUEST, "gpu-request", gpu_request)                                             \
    RULE_KIND(PRIORITY_CLASS, "priority-class", priority_class)                                    \
    RULE_KIND(TOLERATIONS, "tolerations", tolerations)                                             \
    RULE_KIND(NODE_SELECTOR, "node-selector", node_selector)                                       \
    RULE_KIND(CAPACITY, "capacity", capacity)                                                      \
    RULE_KIND(DEVICE_PLUGIN_CONFIG, "device-plugin-config", device_plugin)

#endif
