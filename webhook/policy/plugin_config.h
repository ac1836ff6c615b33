/*
 * plugin_config.h: the NVIDIA device plugin's config file (`version: v1`, its flags and its
 * sharing: time-slicing or MPS), read strictly: every key the plugin does not know, every value
 * it refuses when it restarts on a node, and every field it accepts and then ignores, each with
 * its line and column in the file. The device-plugin-config rule (rule_device_plugin.c) runs it
 * on each data key of the ConfigMaps it names; the schema and the plugin's own checks follow
 * NVIDIA/k8s-device-plugin v0.20.0 api/config/v1/ (plugin_config.c cites each file).
 *
 * Ownership: a struct plugin_report is the caller's, filled in place; nothing is allocated
 * that outlives plugin_config_check().
 */
#ifndef GPUADMIT_PLUGIN_CONFIG_H
#define GPUADMIT_PLUGIN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "bounds.h"

/* One finding: "WHERE:LINE:COLUMN: text" (or "WHERE: text" for the file as a whole). */
struct plugin_finding {
    bool warn; /* the plugin accepts it and then ignores or misreads it; else it is refused */
    unsigned line, column;
    char text[PLUGIN_CONFIG_TEXT_MAX];
};

struct plugin_report {
    struct plugin_finding f[PLUGIN_CONFIG_FINDINGS_MAX]; /* in the order found */
    size_t n;
    size_t refused, warned; /* all of them, those past the array too */
};

/* Checks len bytes of text, one config file, into r (zeroed here). where names the file in
 * messages ("data[tesla-t4]"). Returns r->refused. */
size_t plugin_config_check(const char *where, const char *text, size_t len,
                           struct plugin_report *r);

/* What a config shares, as the plugin will read it, for the cluster view: its strategy (MPS
 * wins over time-slicing: sharing.go SharingStrategy), whether a container asking for more
 * than one shared device is failed (failRequestsGreaterThanOne; MPS's default is true:
 * replicas.go), and its first resource's name ("nvidia.com/gpu"). */
enum plugin_strategy { PLUGIN_SHARES_NONE, PLUGIN_TIME_SLICING, PLUGIN_MPS };

struct plugin_sharing {
    bool readable; /* the file is a mapping the reader took (not judged: plugin_config_check) */
    enum plugin_strategy strategy;
    bool fail_gt_one;
    char resource[72];
};

/* Reads len bytes of text, one config file, into out (zeroed here). */
void plugin_config_sharing(const char *text, size_t len, struct plugin_sharing *out);

#endif
