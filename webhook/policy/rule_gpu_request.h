/*
 * rule_gpu_request.h: the settings of a gpu-request rule (rule_gpu_request.c), for the tests.
 */
#ifndef GPUADMIT_RULE_GPU_REQUEST_H
#define GPUADMIT_RULE_GPU_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

struct gpu_request_settings {
    char *default_resource; /* Mutate: the resource added to the first container */
    int64_t default_count;  /* Mutate: how many */
    int64_t max_per_pod;    /* 0: no maximum */
    bool deny_visible_devices_env;
    bool deny_privileged;
    bool deny_dev_host_path;
    bool deny_env_from; /* envFrom without a safe prefix; only with deny_visible_devices_env */
};

/* r's settings; NULL when r is not a gpu-request rule. */
const struct gpu_request_settings *gpu_request_settings(const struct rule *r);

#endif
