/*
 * oracle.h: an independent judge of the default policy (rules/default.yaml) for fuzz_bypass,
 * written from rules/README.md for the rules and from the platform's behaviour (the kubelet,
 * the NVIDIA container runtime) for the ways around the device plugin. It answers one question
 * about an object the apiserver sends on CREATE or UPDATE: after /mutate and /validate, is it
 * admitted or refused?
 *
 * It knows only the default policy's values (below, in oracle.c; optionally with gpu.taints
 * emptied, where nothing keeps pods off GPU nodes) and the quantities the
 * bypass generator writes: each GPU amount comes with the value the generator meant, so the
 * oracle never parses a quantity itself.
 */
#ifndef GPUADMIT_FUZZ_ORACLE_H
#define GPUADMIT_FUZZ_ORACLE_H

#include <stdbool.h>
#include <stdint.h>
#include <yyjson.h>

/* What the generator meant by a quantity it wrote: a whole number of units, or not a whole,
 * non-negative quantity (an error under the reference). */
#define ORACLE_QTY_INVALID (-1)

/* The generator's side table: for a JSON value it may put at a GPU resource (compared by value,
 * yyjson_equals: the generator gives equal values one meaning), what it means. */
struct oracle_qty {
    yyjson_val *value;
    int64_t units; /* ORACLE_QTY_INVALID for an error */
};

struct oracle_input {
    yyjson_val *object;     /* as sent */
    const char *kind;       /* Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob */
    const char *ns;         /* request.namespace */
    const char *user;       /* userInfo.username */
    const char *op;         /* CREATE or UPDATE */
    yyjson_val *old_object; /* UPDATE: the object before */
    bool no_taints;         /* the default policy with gpu.taints: [] */
    const struct oracle_qty *qty;
    size_t n_qty;
};

struct oracle_verdict {
    bool judged;    /* false: excluded or not a pod rule at all (admitted untouched) */
    bool gpu;       /* the pod requests GPUs */
    bool targets;   /* the pod targets GPU nodes */
    bool admit;     /* the final verdict after /mutate and /validate */
    char why[256];  /* the first reason for a refusal */
    const char *op; /* the input's, for messages */
};

void oracle_judge(const struct oracle_input *in, struct oracle_verdict *v);

/* The pod's metadata (a template's for workloads) of an object of that kind (borrowed), or NULL. */
yyjson_val *oracle_pod_meta(yyjson_val *object, const char *kind);

/* The pod spec of an object of that kind (borrowed), or NULL. */
yyjson_val *oracle_pod_spec(yyjson_val *object, const char *kind);

/* For an admitted GPU pod after the patch: does its spec satisfy the three Mutate rules (a
 * class, the GPU taint tolerated, confined to GPU nodes)? why says what is missing. */
bool oracle_gpu_pod_settled(yyjson_val *spec, bool no_taints, char *why, size_t len);

#endif
