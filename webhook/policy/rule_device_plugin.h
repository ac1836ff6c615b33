/*
 * rule_device_plugin.h: the settings of a device-plugin-config rule (rule_device_plugin.c), for
 * the tests.
 */
#ifndef GPUADMIT_RULE_DEVICE_PLUGIN_H
#define GPUADMIT_RULE_DEVICE_PLUGIN_H

#include <stddef.h>

#include "cluster/cluster.h"
#include "policy.h"

/* One ConfigMap the rule judges. */
struct configmap_ref {
    char *ns;
    char *name;
};

struct device_plugin_settings {
    struct configmap_ref *refs; /* configMaps, in the rule's order; at least one */
    size_t n_refs;
};

/* r's settings; NULL when r is not a device-plugin-config rule. */
const struct device_plugin_settings *device_plugin_settings(const struct rule *r);

/* The ConfigMaps p's device-plugin-config rules name, each once, into out (at most
 * CLUSTER_PLUGIN_CONFIGS_MAX): what the cluster view reads (cluster_plugin_configs_want). How
 * many. */
size_t device_plugin_refs(const struct policy *p, struct cluster_cm_ref *out);

/* Tells view c to read the ConfigMaps p names (the default policy's three when p is NULL or
 * names none); warns when p names more than the view reads. */
void device_plugin_view_wants(struct cluster *c, const struct policy *p);

#endif
