/* test_metrics.c: the text exposition: escaping, label sets, histogram arithmetic, bounds. */
#include <yyjson.h>

#include "harness.h"
#include "bounds.h"
#include "metrics.h"

/* s written as a label value, in a new string. */
static char *escaped(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    metrics_write_label_value(f, s);
    fclose(f);
    return buf;
}

static void test_label_escaping(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "plain"},
        {"", ""},
        {"back\\slash", "back\\\\slash"},
        {"a \"quoted\" word", "a \\\"quoted\\\" word"},
        {"two\nlines", "two\\nlines"},
        {"\\\"\n", "\\\\\\\"\\n"},
        {"tab\tand ünïcode", "tab\tand ünïcode"}, /* only \, " and newline are escaped */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = escaped(cases[i].in);

        CHECK_STR(got, cases[i].want);
        free(got);
    }
}

static char *render(struct metrics *m)
{
    size_t len = 0;
    char *text = metrics_render(m, NULL, &len);

    CHECK(text != NULL && strlen(text) == len);
    CHECK(text != NULL && len > 0 && text[len - 1] == '\n');
    return text;
}

static void test_fixed_label_sets(void)
{
    CHECK(metrics_kind_index("Pod") == 0);
    CHECK(metrics_kind_index("Scale") == metrics_kind_index("Scale"));
    CHECK(metrics_kind_index("ConfigMap") != metrics_kind_index(NULL)); /* device-plugin-config */
    CHECK(metrics_kind_index("Secret") == metrics_kind_index(NULL));
    CHECK(metrics_kind_index("pod") == metrics_kind_index("Secret")); /* case matters */
    CHECK(metrics_op_index("CREATE") == 0);
    CHECK(metrics_op_index("PATCH") == metrics_op_index(NULL));
}

static void test_requests_and_histogram(void)
{
    struct metrics *m = metrics_new("1.2.3");
    char *text;

    metrics_request(m, METRICS_EP_MUTATE, metrics_kind_index("Pod"), metrics_op_index("CREATE"),
                    METRICS_PATCHED, 30000); /* 30 us: the 50 us bucket */
    metrics_request(m, METRICS_EP_MUTATE, metrics_kind_index("Pod"), metrics_op_index("CREATE"),
                    METRICS_PATCHED, 25000); /* exactly 25 us: le is inclusive */
    metrics_request(m, METRICS_EP_VALIDATE, metrics_kind_index("Widget"), metrics_op_index("X"),
                    METRICS_ERROR, 20000000000ull); /* 20 s: +Inf only */
    text = render(m);
    CHECK_CONTAINS(text, "gpuadmit_admission_requests_total{endpoint=\"mutate\",kind=\"Pod\","
                         "operation=\"CREATE\",outcome=\"patched\"} 2\n");
    CHECK_CONTAINS(text, "gpuadmit_admission_requests_total{endpoint=\"validate\",kind=\"other\","
                         "operation=\"other\",outcome=\"error\"} 1\n");
    CHECK_CONTAINS(text, "_bucket{endpoint=\"mutate\",le=\"2.5e-05\"} 1\n");
    CHECK_CONTAINS(text, "_bucket{endpoint=\"mutate\",le=\"5e-05\"} 2\n");
    CHECK_CONTAINS(text, "_bucket{endpoint=\"mutate\",le=\"+Inf\"} 2\n");
    CHECK_CONTAINS(text, "_sum{endpoint=\"mutate\"} 0.000055000\n");
    CHECK_CONTAINS(text, "_count{endpoint=\"mutate\"} 2\n");
    CHECK_CONTAINS(text, "_bucket{endpoint=\"validate\",le=\"10\"} 0\n");
    CHECK_CONTAINS(text, "_bucket{endpoint=\"validate\",le=\"+Inf\"} 1\n");
    CHECK_CONTAINS(text, "_count{endpoint=\"validate\"} 1\n");
    /* the fixed label sets are all there from the start, at 0, so that an alert's increase()
     * sees the first error or denial (a series born at 1 counts as its own baseline) */
    CHECK_CONTAINS(text, "gpuadmit_admission_requests_total{endpoint=\"validate\",kind=\"Pod\","
                         "operation=\"CREATE\",outcome=\"allowed\"} 0\n");
    CHECK_CONTAINS(text, "gpuadmit_admission_requests_total{endpoint=\"mutate\",kind=\"Pod\","
                         "operation=\"CREATE\",outcome=\"error\"} 0\n");
    CHECK_CONTAINS(text, "# TYPE gpuadmit_admission_request_duration_seconds histogram\n");
    CHECK_CONTAINS(text, "gpuadmit_build_info{version=\"1.2.3\"} 1\n");
    /* no cluster view, no certificate: their gauges are absent, the counters are not */
    CHECK(strstr(text, "gpuadmit_cluster_view_synced") == NULL);
    CHECK(strstr(text, "gpuadmit_serving_certificate") == NULL);
    CHECK_CONTAINS(text, "gpuadmit_cluster_relists_total{resource=\"nodes\"} 0\n");
    free(text);
    metrics_free(m);
}

static void test_rules_and_escaped_names(void)
{
    struct metrics *m = metrics_new("v\"1\\\n");
    char *text, name[32];

    metrics_rule_outcome(m, "gpu-request", RULE_GPU_REQUEST, ENFORCE_AUDIT, FINDING_WOULD_DENY);
    metrics_rule_outcome(m, "gpu-request", RULE_GPU_REQUEST, ENFORCE_AUDIT, FINDING_WOULD_DENY);
    metrics_rule_outcome(m, "cap", RULE_CAPACITY, ENFORCE_ENFORCE, FINDING_DENY);
    metrics_rule_outcome(m, "a\"b", RULE_TOLERATIONS, ENFORCE_WARN, FINDING_WOULD_PATCH);
    metrics_rule_outcome(m, "cap", RULE_CAPACITY, ENFORCE_ENFORCE, FINDINGS); /* ignored */
    text = render(m);
    CHECK_CONTAINS(text, "gpuadmit_rule_outcomes_total{rule=\"gpu-request\",type=\"gpu-request\","
                         "enforcement=\"Audit\",outcome=\"would_deny\"} 2\n");
    CHECK_CONTAINS(text, "{rule=\"cap\",type=\"capacity\",enforcement=\"Enforce\","
                         "outcome=\"deny\"} 1\n");
    CHECK_CONTAINS(text, "{rule=\"a\\\"b\",type=\"tolerations\",enforcement=\"Warn\","
                         "outcome=\"would_patch\"} 1\n");
    CHECK_CONTAINS(text, "gpuadmit_build_info{version=\"v\\\"1\\\\\\n\"} 1\n");
    free(text);
    /* a rule seen once shows all its series, zeros too; the same name with another type is
     * another series, not the old type's */
    text = render(m);
    CHECK_CONTAINS(text, "{rule=\"cap\",type=\"capacity\",enforcement=\"Audit\","
                         "outcome=\"would_warn\"} 0\n");
    metrics_rule_outcome(m, "cap", RULE_GPU_REQUEST, ENFORCE_AUDIT, FINDING_WOULD_WARN);
    free(text);
    text = render(m);
    CHECK_CONTAINS(text, "{rule=\"cap\",type=\"gpu-request\",enforcement=\"Audit\","
                         "outcome=\"would_warn\"} 1\n");
    CHECK_CONTAINS(text, "{rule=\"cap\",type=\"capacity\",enforcement=\"Audit\","
                         "outcome=\"would_warn\"} 0\n");
    free(text);
    /* past METRICS_RULES_MAX names, the rest count as rule="other" */
    for (unsigned i = 0; i < METRICS_RULES_MAX + 5; i++) {
        snprintf(name, sizeof(name), "r%u", i);
        metrics_rule_outcome(m, name, RULE_GPU_REQUEST, ENFORCE_ENFORCE, FINDING_DENY);
    }
    text = render(m);
    CHECK_CONTAINS(text, "{rule=\"other\",type=\"other\",enforcement=\"Enforce\","
                         "outcome=\"deny\"} 9\n"); /* 4 slots were already taken */
    free(text);
    metrics_free(m);
}

static void test_server_counters(void)
{
    struct metrics *m = metrics_new("x");
    char *text;

    metrics_http_error(m, 413);
    metrics_http_error(m, 413);
    metrics_http_error(m, 418);
    metrics_tls_failure(m, METRICS_TLS_AFTER_HELLO);
    metrics_policy_reload(m, true);
    metrics_policy_reload(m, false);
    metrics_policy_reload(m, false);
    metrics_policy_loaded(m, 7, 1700000000);
    metrics_cluster_relist(m, CLUSTER_PODS);
    metrics_cluster_watch_restart(m, CLUSTER_NODES);
    metrics_cluster_watch_restart(m, CLUSTER_NODES);
    text = render(m);
    CHECK_CONTAINS(text, "gpuadmit_http_errors_total{code=\"413\"} 2\n");
    CHECK_CONTAINS(text, "gpuadmit_http_errors_total{code=\"other\"} 1\n");
    CHECK_CONTAINS(text, "gpuadmit_tls_handshake_failures_total{phase=\"after_client_hello\"} 1\n");
    CHECK_CONTAINS(text,
                   "gpuadmit_tls_handshake_failures_total{phase=\"before_client_hello\"} 0\n");
    CHECK_CONTAINS(text, "gpuadmit_policy_reloads_total{result=\"success\"} 1\n");
    CHECK_CONTAINS(text, "gpuadmit_policy_reloads_total{result=\"failure\"} 2\n");
    CHECK_CONTAINS(text, "gpuadmit_policy_generation 7\n");
    CHECK_CONTAINS(text, "gpuadmit_policy_loaded_timestamp_seconds 1700000000\n");
    CHECK_CONTAINS(text, "gpuadmit_cluster_relists_total{resource=\"pods\"} 1\n");
    CHECK_CONTAINS(text, "gpuadmit_cluster_watch_restarts_total{resource=\"nodes\"} 2\n");
    /* every family has HELP and TYPE, in that order, once */
    for (const char *p = text; (p = strstr(p, "# TYPE ")) != NULL; p++) {
        const char *name = p + 7, *sp = strchr(name, ' ');
        char help[128];

        snprintf(help, sizeof(help), "# HELP %.*s ", (int)(sp - name), name);
        CHECK(strstr(text, help) != NULL && strstr(text, help) < p);
    }
    free(text);
    metrics_free(m);
}

int main(void)
{
    RUN(test_label_escaping);
    RUN(test_fixed_label_sets);
    RUN(test_requests_and_histogram);
    RUN(test_rules_and_escaped_names);
    RUN(test_server_counters);
    TEST_MAIN_END("test_metrics");
}
