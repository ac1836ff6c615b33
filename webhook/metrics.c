/*
 * metrics.c: counters, a latency histogram and the Prometheus text exposition (see metrics.h).
 *
 * Invariants: every counter is an atomic bumped with relaxed ordering (a scrape may see one
 * counter a moment ahead of another, never a torn value); the request path takes no lock and
 * allocates nothing, except the first time a rule name is seen, which copies it into a slot
 * claimed by compare-and-swap. A histogram keeps per-bucket counts and derives the cumulative
 * buckets and _count at scrape time, so _count always equals the +Inf bucket.
 *
 * Not sharded: a webhook answers hundreds of reviews a second at most, each costing tens of
 * microseconds of JSON work, against tens of nanoseconds for a contended atomic add.
 */
#include "metrics.h"

#include <fnmatch.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cluster/pending.h"

static const char *const kind_names[] = {
    "Pod",       "Deployment", "ReplicaSet", "StatefulSet",
    "Job",       "CronJob",    "Scale",      "HorizontalPodAutoscaler",
    "ConfigMap", "other",
};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))

static const char *const op_names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT", "other"};
#define N_OPS (sizeof(op_names) / sizeof(op_names[0]))

static const char *const endpoint_names[] = {"mutate", "validate"};
static const char *const outcome_names[] = {"allowed", "denied", "patched", "error"};
static const char *const tls_phase_names[] = {"before_client_hello", "after_client_hello"};

/* The statuses the server answers with; anything else is code="other". */
static const unsigned http_codes[] = {400, 403, 404, 405, 413, 415, 500, 503};
#define N_HTTP_CODES (sizeof(http_codes) / sizeof(http_codes[0]))

/* Upper bounds of the latency buckets, from a cached decision (tens of microseconds) to the
 * apiserver's own timeout (10 s at most for a webhook). */
static const uint64_t bucket_ns[] = {
    25000,     50000,     100000,     250000,     500000,     1000000,
    2500000,   5000000,   10000000,   25000000,   50000000,   100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
static const char *const bucket_le[] = {
    "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",   "0.05",  "0.1",    "0.25",    "0.5",    "1",     "2.5",    "5",     "10",
};
#define N_BUCKETS (sizeof(bucket_ns) / sizeof(bucket_ns[0]))

typedef atomic_ullong counter;

struct histogram {
    counter buckets[N_BUCKETS + 1]; /* the last one is +Inf only */
    counter sum_ns;
};

/* A rule name and its type, published together by one compare-and-swap. */
struct rule_key {
    enum rule_type type;
    char name[];
};

struct rule_slot {
    _Atomic(struct rule_key *) key; /* NULL: free; claimed once, never released */
    counter n[ENFORCEMENTS][FINDINGS];
};

struct metrics {
    char version[64];
    counter requests[METRICS_ENDPOINTS][N_KINDS][N_OPS][METRICS_OUTCOMES];
    struct histogram latency[METRICS_ENDPOINTS];
    counter http_errors[N_HTTP_CODES + 1];
    counter tls_failures[METRICS_TLS_PHASES];
    counter shed;
    counter reloads_ok, reloads_failed;
    atomic_ulong generation;
    atomic_llong loaded_at;
    counter relists[CLUSTER_KINDS];
    counter watch_restarts[CLUSTER_KINDS];
    struct rule_slot rules[METRICS_RULES_MAX];
    struct rule_slot rules_other; /* past METRICS_RULES_MAX names */
};

static void bump(counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

struct metrics *metrics_new(const char *version)
{
    struct metrics *m = calloc(1, sizeof(*m));

    if (m != NULL)
        snprintf(m->version, sizeof(m->version), "%s", version ? version : "");
    return m;
}

void metrics_free(struct metrics *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < METRICS_RULES_MAX; i++)
        free(atomic_load(&m->rules[i].key));
    free(m);
}

static unsigned index_of(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; s != NULL && i + 1 < n; i++)
        if (strcmp(names[i], s) == 0)
            return (unsigned)i;
    return (unsigned)(n - 1);
}

unsigned metrics_kind_index(const char *kind)
{
    return index_of(kind_names, N_KINDS, kind);
}

unsigned metrics_op_index(const char *op)
{
    return index_of(op_names, N_OPS, op);
}

void metrics_request(struct metrics *m, enum metrics_endpoint ep, unsigned kind, unsigned op,
                     enum metrics_outcome outcome, uint64_t ns)
{
    size_t b = 0;

    if (m == NULL || ep >= METRICS_ENDPOINTS || outcome >= METRICS_OUTCOMES)
        return;
    bump(
        &m->requests[ep][kind < N_KINDS ? kind : N_KINDS - 1][op < N_OPS ? op : N_OPS - 1][outcome],
        1);
    while (b < N_BUCKETS && ns > bucket_ns[b])
        b++;
    bump(&m->latency[ep].buckets[b], 1);
    bump(&m->latency[ep].sum_ns, ns);
}

void metrics_http_error(struct metrics *m, unsigned status)
{
    size_t i = 0;

    if (m == NULL)
        return;
    while (i < N_HTTP_CODES && http_codes[i] != status)
        i++;
    bump(&m->http_errors[i], 1);
}

static size_t name_hash(const char *s)
{
    size_t h = 5381;

    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

/* The slot of a rule name, claimed on first sight; the overflow slot when the table is full. */
static struct rule_slot *rule_slot(struct metrics *m, const char *rule, enum rule_type type)
{
    size_t h = name_hash(rule), len = strlen(rule);
    struct rule_key *mine = NULL;

    for (size_t probe = 0; probe < METRICS_RULES_MAX; probe++) {
        struct rule_slot *s = &m->rules[(h + probe) % METRICS_RULES_MAX];
        struct rule_key *k = atomic_load(&s->key);

        if (k == NULL) {
            if (mine == NULL && (mine = malloc(sizeof(*mine) + len + 1)) == NULL)
                break;
            mine->type = type;
            memcpy(mine->name, rule, len + 1);
            if (atomic_compare_exchange_strong(&s->key, &k, mine))
                return s;
            /* another thread claimed it first: k now holds its key */
        }
        if (strcmp(k->name, rule) == 0 && k->type == type) {
            free(mine);
            return s;
        }
    }
    free(mine);
    return &m->rules_other;
}

void metrics_rule_outcome(struct metrics *m, const char *rule, enum rule_type type,
                          enum rule_enforcement enforcement, enum finding finding)
{
    if (m == NULL || rule == NULL || (unsigned)finding >= FINDINGS ||
        (unsigned)enforcement >= ENFORCEMENTS)
        return;
    bump(&rule_slot(m, rule, type)->n[enforcement][finding], 1);
}

void metrics_rules_declare(struct metrics *m, const struct policy *p)
{
    for (size_t d = 0; m != NULL && p != NULL && d < p->n_docs; d++)
        for (size_t i = 0; i < p->docs[d].n_rules; i++)
            (void)rule_slot(m, p->docs[d].rules[i].name, p->docs[d].rules[i].type);
}

void metrics_tls_failure(struct metrics *m, enum metrics_tls_phase phase)
{
    if (m != NULL && phase < METRICS_TLS_PHASES)
        bump(&m->tls_failures[phase], 1);
}

void metrics_shed(struct metrics *m)
{
    if (m != NULL)
        bump(&m->shed, 1);
}

void metrics_policy_reload(struct metrics *m, bool ok)
{
    if (m != NULL)
        bump(ok ? &m->reloads_ok : &m->reloads_failed, 1);
}

void metrics_policy_loaded(struct metrics *m, unsigned long generation, time_t when)
{
    if (m == NULL)
        return;
    atomic_store(&m->generation, generation);
    atomic_store(&m->loaded_at, (long long)when);
}

void metrics_cluster_relist(struct metrics *m, enum cluster_kind k)
{
    if (m != NULL && k < CLUSTER_KINDS)
        bump(&m->relists[k], 1);
}

void metrics_cluster_watch_restart(struct metrics *m, enum cluster_kind k)
{
    if (m != NULL && k < CLUSTER_KINDS)
        bump(&m->watch_restarts[k], 1);
}

/* ---- exposition ---- */

void metrics_write_label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '"')
            fputs("\\\"", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_requests(FILE *f, struct metrics *m)
{
    family(f, "gpuadmit_admission_requests_total", "counter",
           "Admission review requests answered, by endpoint, object kind, operation and "
           "outcome (error: an HTTP error answer).");
    for (size_t e = 0; e < METRICS_ENDPOINTS; e++)
        for (size_t k = 0; k < N_KINDS; k++)
            for (size_t o = 0; o < N_OPS; o++)
                for (size_t r = 0; r < METRICS_OUTCOMES; r++) {
                    uint64_t v = get(&m->requests[e][k][o][r]);

                    /* every combination, zeros too (a fixed set): see render_rule_slot */
                    fprintf(f,
                            "gpuadmit_admission_requests_total{endpoint=\"%s\",kind=\"%s\","
                            "operation=\"%s\",outcome=\"%s\"} %llu\n",
                            endpoint_names[e], kind_names[k], op_names[o], outcome_names[r],
                            (unsigned long long)v);
                }
    family(f, "gpuadmit_admission_request_duration_seconds", "histogram",
           "Time from a review request's headers to its answer being queued, by endpoint.");
    for (size_t e = 0; e < METRICS_ENDPOINTS; e++) {
        uint64_t cum = 0;

        for (size_t b = 0; b <= N_BUCKETS; b++) {
            cum += get(&m->latency[e].buckets[b]);
            fprintf(f,
                    "gpuadmit_admission_request_duration_seconds_bucket{endpoint=\"%s\","
                    "le=\"%s\"} %llu\n",
                    endpoint_names[e], b < N_BUCKETS ? bucket_le[b] : "+Inf",
                    (unsigned long long)cum);
        }
        fprintf(f, "gpuadmit_admission_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n",
                endpoint_names[e], (double)get(&m->latency[e].sum_ns) / 1e9);
        fprintf(f, "gpuadmit_admission_request_duration_seconds_count{endpoint=\"%s\"} %llu\n",
                endpoint_names[e], (unsigned long long)cum);
    }
}

/* type -1: the overflow slot, whose zero series are left out; a rule's are all shown from
 * its first load, so that increase() sees its first finding (a series born at 1 is not) */
static void render_rule_slot(FILE *f, struct rule_slot *s, const char *name, int type)
{
    for (int e = 0; e < ENFORCEMENTS; e++)
        for (int o = 0; o < FINDINGS; o++) {
            uint64_t v = get(&s->n[e][o]);

            if (v == 0 && type < 0)
                continue;
            fputs("gpuadmit_rule_outcomes_total{rule=\"", f);
            metrics_write_label_value(f, name);
            fprintf(f, "\",type=\"%s\",enforcement=\"%s\",outcome=\"%s\"} %llu\n",
                    type >= 0 && type < RULE_TYPES ? policy_rule_type_name(type) : "other",
                    policy_enforcement_name(e), policy_finding_name(o), (unsigned long long)v);
        }
}

static void render_rules(FILE *f, struct metrics *m)
{
    family(f, "gpuadmit_rule_outcomes_total", "counter",
           "Rule findings, one per decision log line: what the rule did (deny, patch, warn) "
           "or, under Warn and Audit, would have done (would_deny, would_patch, would_warn).");
    for (size_t i = 0; i < METRICS_RULES_MAX; i++) {
        struct rule_key *k = atomic_load(&m->rules[i].key);

        if (k != NULL)
            render_rule_slot(f, &m->rules[i], k->name, (int)k->type);
    }
    render_rule_slot(f, &m->rules_other, "other", -1);
}

static void render_server(FILE *f, struct metrics *m)
{
    family(f, "gpuadmit_http_errors_total", "counter",
           "HTTP error answers on any path, by status code.");
    for (size_t i = 0; i <= N_HTTP_CODES; i++) {
        uint64_t v = get(&m->http_errors[i]);

        if (v == 0)
            continue;
        if (i < N_HTTP_CODES)
            fprintf(f, "gpuadmit_http_errors_total{code=\"%u\"} %llu\n", http_codes[i],
                    (unsigned long long)v);
        else
            fprintf(f, "gpuadmit_http_errors_total{code=\"other\"} %llu\n", (unsigned long long)v);
    }
    family(f, "gpuadmit_tls_handshake_failures_total", "counter",
           "Connections closed before their TLS handshake completed and before any request, "
           "by whether a ClientHello had been received.");
    for (size_t i = 0; i < METRICS_TLS_PHASES; i++)
        fprintf(f, "gpuadmit_tls_handshake_failures_total{phase=\"%s\"} %llu\n", tls_phase_names[i],
                (unsigned long long)get(&m->tls_failures[i]));
    family(f, "gpuadmit_connections_shed_total", "counter",
           "Connections closed unserved under overload, before any costly TLS work: their "
           "ClientHello had waited more than --max-queue-ms.");
    fprintf(f, "gpuadmit_connections_shed_total %llu\n", (unsigned long long)get(&m->shed));
    family(f, "gpuadmit_policy_reloads_total", "counter",
           "Policy reloads after the start, by result (a failed one keeps the last good policy).");
    fprintf(f, "gpuadmit_policy_reloads_total{result=\"success\"} %llu\n",
            (unsigned long long)get(&m->reloads_ok));
    fprintf(f, "gpuadmit_policy_reloads_total{result=\"failure\"} %llu\n",
            (unsigned long long)get(&m->reloads_failed));
    family(f, "gpuadmit_policy_generation", "gauge", "Generation of the policy in force.");
    fprintf(f, "gpuadmit_policy_generation %lu\n", atomic_load(&m->generation));
    family(f, "gpuadmit_policy_loaded_timestamp_seconds", "gauge",
           "When the policy in force was loaded, in seconds since the epoch.");
    fprintf(f, "gpuadmit_policy_loaded_timestamp_seconds %lld\n", atomic_load(&m->loaded_at));
    family(f, "gpuadmit_build_info", "gauge", "Always 1; the version of the running binary.");
    fputs("gpuadmit_build_info{version=\"", f);
    metrics_write_label_value(f, m->version);
    fputs("\"} 1\n", f);
}

/* Whether a resource name is a GPU resource of any document of the policy. */
static bool is_gpu_resource(const char *name, void *arg)
{
    const struct policy *p = arg;

    for (size_t i = 0; p != NULL && i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].gpu_resources.n; k++)
            if (fnmatch(p->docs[i].gpu_resources.v[k], name, 0) == 0)
                return true;
    return false;
}

static void render_gauge_per_resource(FILE *f, const char *name, const char *help,
                                      const struct cluster_resource_total *t, size_t n,
                                      size_t which)
{
    family(f, name, "gauge", help);
    for (size_t i = 0; i < n; i++) {
        int64_t v = which == 0 ? t[i].capacity : which == 1 ? t[i].allocatable : t[i].used;

        fprintf(f, "%s{resource=\"", name);
        metrics_write_label_value(f, t[i].name);
        fprintf(f, "\"} %lld\n", (long long)v);
    }
}

/* The Pending GPU pods by their first reason, every code from the start. */
static int render_pending(FILE *f, struct cluster *view)
{
    uint64_t n[PENDING_COUNTS];

    if (pending_count(view, n) < 0)
        return -1;
    family(f, "gpuadmit_pending_gpu_pods", "gauge",
           "Pending pods that request GPUs, by their first reason (the codes of gpuadmit "
           "explain; unexplained: the view finds room for them; not-judged: past the distinct "
           "pod specs one scrape replays).");
    for (int i = 0; i < PENDING_COUNTS; i++)
        fprintf(f, "gpuadmit_pending_gpu_pods{reason=\"%s\"} %llu\n",
                i < PENDING_CODES          ? pending_code_name((enum pending_code)i)
                : i == PENDING_UNEXPLAINED ? "unexplained"
                                           : "not-judged",
                (unsigned long long)n[i]);
    return 0;
}

static int render_cluster(FILE *f, struct metrics *m, const struct metrics_sources *src)
{
    struct cluster_resource_total *t = NULL;
    struct policy *p = NULL;
    size_t nodes = 0, n;

    family(f, "gpuadmit_cluster_relists_total", "counter",
           "Lists of a kind after its first (410 Gone, ERROR events, broken streams), by "
           "resource.");
    for (size_t k = 0; k < CLUSTER_KINDS; k++)
        fprintf(f, "gpuadmit_cluster_relists_total{resource=\"%s\"} %llu\n",
                cluster_kind_plural((enum cluster_kind)k), (unsigned long long)get(&m->relists[k]));
    family(f, "gpuadmit_cluster_watch_restarts_total", "counter",
           "Watches started again from the last resourceVersion (after a clean end, a failure "
           "or silence), by resource.");
    for (size_t k = 0; k < CLUSTER_KINDS; k++)
        fprintf(f, "gpuadmit_cluster_watch_restarts_total{resource=\"%s\"} %llu\n",
                cluster_kind_plural((enum cluster_kind)k),
                (unsigned long long)get(&m->watch_restarts[k]));
    if (src->view == NULL)
        return 0;
    family(f, "gpuadmit_cluster_view_synced", "gauge",
           "1 when every kind of the cluster view has been listed, else 0.");
    fprintf(f, "gpuadmit_cluster_view_synced %d\n", cluster_synced(src->view) ? 1 : 0);
    family(f, "gpuadmit_cluster_view_age_seconds", "gauge",
           "Seconds since the stalest kind of the view last heard from the API server (a list, "
           "an event, a bookmark or a clean watch end); 0 for a snapshot.");
    fprintf(f, "gpuadmit_cluster_view_age_seconds %.3f\n", cluster_age_s(src->view));
    t = calloc(METRICS_GPU_RESOURCES_MAX, sizeof(*t));
    if (t == NULL)
        return -1;
    p = src->policies != NULL ? policy_holder_get(src->policies) : NULL;
    n = cluster_totals(src->view, &nodes, is_gpu_resource, p, t, METRICS_GPU_RESOURCES_MAX);
    if (p != NULL)
        policy_unref(p);
    if (n > METRICS_GPU_RESOURCES_MAX)
        n = METRICS_GPU_RESOURCES_MAX;
    family(f, "gpuadmit_cluster_nodes", "gauge", "Nodes in the cluster view.");
    fprintf(f, "gpuadmit_cluster_nodes %zu\n", nodes);
    render_gauge_per_resource(f, "gpuadmit_cluster_gpu_capacity",
                              "GPU capacity of the nodes in the view, by resource.", t, n, 0);
    render_gauge_per_resource(f, "gpuadmit_cluster_gpu_allocatable",
                              "GPU allocatable of the nodes in the view, by resource.", t, n, 1);
    render_gauge_per_resource(f, "gpuadmit_cluster_gpu_in_use",
                              "GPUs requested by the non-terminal pods bound to the nodes in "
                              "the view, by resource.",
                              t, n, 2);
    free(t);
    return render_pending(f, src->view);
}

char *metrics_render(struct metrics *m, const struct metrics_sources *src, size_t *len)
{
    static const struct metrics_sources none = {NULL, NULL, NULL};
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    int rc = 0;

    if (f == NULL)
        return NULL;
    if (src == NULL)
        src = &none;
    render_requests(f, m);
    render_rules(f, m);
    render_server(f, m);
    if (src->creds != NULL) {
        family(f, "gpuadmit_serving_certificate_expiry_timestamp_seconds", "gauge",
               "notAfter of the serving certificate in use, in seconds since the epoch.");
        fprintf(f, "gpuadmit_serving_certificate_expiry_timestamp_seconds %lld\n",
                (long long)creds_not_after(src->creds));
    }
    rc = render_cluster(f, m, src);
    if (fclose(f) != 0 || rc < 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}
