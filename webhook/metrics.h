/*
 * metrics.h: the process's Prometheus metrics and their text exposition (format 0.0.4).
 *
 * Counters are relaxed atomics in one struct metrics, bumped on the request path without a
 * lock; labels come from fixed sets (endpoints, kinds, operations, outcomes, HTTP codes,
 * enforcements, cluster kinds) or are bounded by the policy (rule names, METRICS_RULES_MAX) and
 * the cluster's GPU resources (METRICS_GPU_RESOURCES_MAX). Gauges that describe other modules
 * (the cluster view, the serving certificate) are read from them at scrape time.
 *
 * Ownership: metrics_new() returns a new store, freed with metrics_free() once nothing uses it;
 * every other function borrows its arguments. All functions but metrics_new/metrics_free are
 * thread-safe.
 */
#ifndef GPUADMIT_METRICS_H
#define GPUADMIT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cluster/cluster.h"
#include "tls/creds.h"
#include "policy/policy.h"

enum metrics_endpoint { METRICS_EP_MUTATE, METRICS_EP_VALIDATE, METRICS_ENDPOINTS };

/* How a review request ended: allowed (possibly with warnings), denied, allowed with a patch,
 * or answered with an HTTP error (400, 413, 415, 500, 503, ...). */
enum metrics_outcome {
    METRICS_ALLOWED,
    METRICS_DENIED,
    METRICS_PATCHED,
    METRICS_ERROR,
    METRICS_OUTCOMES
};

/* Where a TLS handshake stopped: before a ClientHello was processed (nothing, or not TLS, was
 * received: garbage, plain HTTP, a TCP connect and close), or after it (the client gave up or
 * refused the certificate, an unsupported version or cipher, ...). */
enum metrics_tls_phase { METRICS_TLS_BEFORE_HELLO, METRICS_TLS_AFTER_HELLO, METRICS_TLS_PHASES };

struct metrics;

/* New store (free with metrics_free()); version is copied into gpuadmit_build_info. NULL when
 * out of memory. */
struct metrics *metrics_new(const char *version);
void metrics_free(struct metrics *m);

/* Label indices of the fixed sets: an object kind ("Pod", "Scale", ...) and an operation
 * ("CREATE", ...); anything else, or NULL, is "other". */
unsigned metrics_kind_index(const char *kind);
unsigned metrics_op_index(const char *op);

/* One answered review request: its endpoint, labels, outcome and how long it took (from its
 * headers being read to its answer being queued), in nanoseconds. */
void metrics_request(struct metrics *m, enum metrics_endpoint ep, unsigned kind, unsigned op,
                     enum metrics_outcome outcome, uint64_t ns);
/* One HTTP error answer (any status >= 400) on any route. */
void metrics_http_error(struct metrics *m, unsigned status);
/* One rule finding, as logged in a "decision" line; the series' outcome label is
 * policy_finding_name(finding). Values out of range are ignored. */
void metrics_rule_outcome(struct metrics *m, const char *rule, enum rule_type type,
                          enum rule_enforcement enforcement, enum finding finding);
/* Shows every rule of p (all its outcome series, at 0) from now on. */
void metrics_rules_declare(struct metrics *m, const struct policy *p);
void metrics_tls_failure(struct metrics *m, enum metrics_tls_phase phase);
/* A connection closed unserved under overload (its handshake would have begun more than
 * --max-queue-ms after it arrived). */
void metrics_shed(struct metrics *m);
/* A policy reload attempt; on success, the generation now in force and when it was loaded. */
void metrics_policy_reload(struct metrics *m, bool ok);
void metrics_policy_loaded(struct metrics *m, unsigned long generation, time_t when);
/* The list+watch client: a relist (any list after the first) and a watch started again. */
void metrics_cluster_relist(struct metrics *m, enum cluster_kind k);
void metrics_cluster_watch_restart(struct metrics *m, enum cluster_kind k);

/* What a scrape reads besides the counters; any may be NULL. */
struct metrics_sources {
    struct cluster *view;
    struct creds *creds;
    struct policy_holder *policies; /* its GPU resource globs pick the view's resources */
};

/* The exposition text: new NUL-terminated buffer (free with free()), *len without the NUL;
 * NULL when out of memory. */
char *metrics_render(struct metrics *m, const struct metrics_sources *src, size_t *len);

/* Writes s as a label value: backslash, double quote and newline escaped. */
void metrics_write_label_value(FILE *f, const char *s);

#endif
