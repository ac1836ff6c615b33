/*
 * Unit tests for autoscaler.c: Cluster Autoscaler's status ConfigMap in its YAML (CA 1.30+) and
 * text (CA 1.29 and before) formats, and Karpenter NodePools. The inputs under
 * tests/data/autoscaler/ are real ones; its README.md says where each comes from:
 * kubernetes/autoscaler's status_test.yaml, the EKS status of kubernetes/autoscaler#2287, the AKS
 * status of microsoft/tyger#59 (cut short in our copy) and two group lines of Azure/AKS#3733, and
 * the NodePool examples of aws/karpenter-provider-aws's documentation.
 */
#include <yyjson.h>

#include "cluster/autoscaler.h"
#include "harness.h"

#define DATA "tests/data/autoscaler/"

static int parse_file(const char *name, struct ca_status *s, struct diag *d)
{
    size_t len;
    char *text = harness_slurp(name, &len);
    int rc;

    diag_clear(d);
    rc = ca_status_parse(text, len, s, d);
    free(text);
    return rc;
}

static int parse_str(const char *text, struct ca_status *s, struct diag *d)
{
    diag_clear(d);
    return ca_status_parse(text, strlen(text), s, d);
}

/* kubernetes/autoscaler clusterstate/utils/status_test.yaml: every field we read. */
static void test_yaml_status_test(void)
{
    struct ca_status s;
    struct diag d;
    struct ca_group g;

    CHECK(parse_file(DATA "ca-status-yaml-status_test.yaml", &s, &d) == 0);
    CHECK(!s.text_format);
    CHECK_STR(s.autoscaler_status, "Running");
    CHECK_STR(s.time, "2023-11-24 04:28:19.546750398 +0000 UTC");
    CHECK(s.n_groups == 1);
    if (s.n_groups != 1) {
        printf("  %s\n", d.msg);
        ca_status_free(&s);
        return;
    }
    g = s.groups[0];
    CHECK_STR(g.name, "sample-node-group");
    CHECK(g.healthy);
    CHECK(g.registered == 11 && g.ready == 4 && g.not_started == 3);
    CHECK(g.unready == 2 && g.resource_unready == 1 && g.long_unregistered == 1);
    CHECK(g.target == 8 && g.min_size == 2 && g.max_size == 12);
    CHECK_STR(g.scale_up, "Backoff");
    CHECK_STR(g.backoff_code, "QUOTA_EXCEEDED");
    CHECK_STR(g.backoff_msg, "Instance 'sample-node-group-40ce0341-t28s' creation failed: Quota "
                             "'CPUS' exceeded. Limit: 57.0 in region us-central1.");
    /* in Backoff: nothing now, whatever the sizes say */
    CHECK(ca_group_headroom(&g) == 0);
    strcpy(g.scale_up, "NoActivity");
    CHECK(ca_group_headroom(&g) == 4); /* 12 - 8 */
    strcpy(g.scale_up, "Unhealthy");
    CHECK(ca_group_headroom(&g) == 0);
    strcpy(g.scale_up, "InProgress");
    g.healthy = false;
    CHECK(ca_group_headroom(&g) == 0);
    g.healthy = true;
    g.target = 13; /* above maxSize (maxSize lowered under it): none, not negative */
    CHECK(ca_group_headroom(&g) == 0);
    ca_status_free(&s);
    CHECK(s.groups == NULL && s.n_groups == 0);
}

/* kubernetes/autoscaler#2287 (EKS, before resourceUnready): one group, no ScaleUp line kept. */
static void test_text_eks(void)
{
    struct ca_status s;
    struct diag d;

    CHECK(parse_file(DATA "ca-status-text-eks-autoscaler-2287.txt", &s, &d) == 0);
    CHECK(s.text_format);
    CHECK_STR(s.autoscaler_status, "");
    CHECK_STR(s.time, "2019-09-02 14:57:47.683724023 +0000 UTC");
    CHECK(!s.cluster_unhealthy); /* its Cluster-wide: Health: Healthy */
    CHECK(s.n_groups == 1);
    if (s.n_groups == 1) {
        const struct ca_group *g = &s.groups[0];

        CHECK_STR(g->name, "work-default-eks-spot1");
        CHECK(g->healthy);
        CHECK(g->ready == 1 && g->unready == 0 && g->resource_unready == 0);
        CHECK(g->registered == 1 && g->not_started == 0 && g->long_unregistered == 0);
        CHECK(g->target == 1 && g->min_size == 1 && g->max_size == 7);
        CHECK_STR(g->scale_up, ""); /* the text format has no line for it here */
        CHECK_STR(g->backoff_msg, "");
        CHECK(ca_group_headroom(g) == 6);
    }
    ca_status_free(&s);
}

/* The cluster-wide health in both formats: Unhealthy stops every scale-up. */
static void test_cluster_wide_health(void)
{
    static const char text[] =
        "Cluster-autoscaler status at 2019-09-02 14:57:47.683724023 +0000 UTC:\n"
        "Cluster-wide:\n"
        "  Health:      Unhealthy (ready=2 unready=8 notStarted=0 longNotStarted=0 registered=10 "
        "longUnregistered=0)\n"
        "NodeGroups:\n"
        "  Name:        ng\n"
        "  Health:      Healthy (ready=2 unready=8 notStarted=0 longNotStarted=0 registered=10 "
        "longUnregistered=0 cloudProviderTarget=10 (minSize=1, maxSize=20))\n";
    static const char yaml[] = "autoscalerStatus: Running\nclusterWide:\n  health:\n"
                               "    status: Unhealthy\nnodeGroups: []\n";
    static const char healthy[] = "autoscalerStatus: Running\nclusterWide:\n  health:\n"
                                  "    status: Healthy\n";
    struct ca_status s;
    struct diag d;

    diag_clear(&d);
    CHECK(ca_status_parse(text, sizeof(text) - 1, &s, &d) == 0 && s.cluster_unhealthy);
    CHECK(s.n_groups == 1 && s.groups[0].healthy); /* the group's own Health is apart */
    ca_status_free(&s);
    CHECK(ca_status_parse(yaml, sizeof(yaml) - 1, &s, &d) == 0 && s.cluster_unhealthy);
    ca_status_free(&s);
    CHECK(ca_status_parse(healthy, sizeof(healthy) - 1, &s, &d) == 0 && !s.cluster_unhealthy);
    ca_status_free(&s);
}

/* microsoft/tyger#59 (AKS) as our copy has it, cut inside "(resourceUnready=": an error that
 * names the line and the column where the Health line stops making sense. */
static void test_text_aks_cut(void)
{
    struct ca_status s;
    struct diag d;

    CHECK(parse_file(DATA "ca-status-text-aks-tyger-59-cut.txt", &s, &d) == -1);
    CHECK(d.line == 15 && d.column == 42);
    CHECK_CONTAINS(d.msg, "aks-cpunp-38371103-vmss");
    CHECK_CONTAINS(d.msg, "expected \" notStarted=\"");
    CHECK_STR(d.file, "");
    ca_status_free(&s);
}

/* tyger#59's header with Azure/AKS#3733's group: the resourceUnready form, notStarted=1. */
static void test_text_aks_resource_unready(void)
{
    struct ca_status s;
    struct diag d;
    char *text;
    size_t len;

    CHECK(parse_file(DATA "ca-status-text-aks-composed.txt", &s, &d) == 0);
    CHECK(s.text_format && s.n_groups == 1);
    if (s.n_groups == 1) {
        CHECK_STR(s.groups[0].name, "aks-worker-17816125-vmss");
        CHECK(s.groups[0].not_started == 1 && s.groups[0].registered == 1);
        CHECK(s.groups[0].target == 1 && s.groups[0].max_size == 3);
        CHECK(ca_group_headroom(&s.groups[0]) == 2);
    }
    ca_status_free(&s);

    /* the same with a GPU node waiting for its device plugin, and in Backoff */
    text = harness_slurp(DATA "ca-status-text-aks-composed.txt", &len);
    {
        char *more = realloc(text, len + 128); /* room for the ScaleUp line added below */

        if (more == NULL)
            exit(2);
        text = more;
    }
    {
        char *at = strstr(text, "(resourceUnready=0) notStarted=1");

        CHECK(at != NULL);
        if (at != NULL) {
            at[17] = '2';
            strcat(text, "  ScaleUp:     Backoff (ready=0 cloudProviderTarget=1)\n");
            diag_clear(&d);
            CHECK(ca_status_parse(text, strlen(text), &s, &d) == 0);
            CHECK(s.n_groups == 1 && s.groups[0].resource_unready == 2);
            CHECK(s.n_groups == 1 && strcmp(s.groups[0].scale_up, "Backoff") == 0);
            CHECK(s.n_groups == 1 && ca_group_headroom(&s.groups[0]) == 0);
            ca_status_free(&s);
        }
    }
    free(text);
}

static void test_detection(void)
{
    struct ca_status s;
    struct diag d;

    /* a CA still starting, text format (Azure/AKS#4365 quotes this one) */
    CHECK(parse_str("Cluster-autoscaler status at 2024-06-26 05:17:03.13712722 +0000 UTC:\n"
                    "Initializing",
                    &s, &d) == 0);
    CHECK(s.text_format);
    CHECK_STR(s.autoscaler_status, "Initializing");
    CHECK_STR(s.time, "2024-06-26 05:17:03.13712722 +0000 UTC");
    CHECK(s.n_groups == 0);
    ca_status_free(&s);
    /* the same in YAML */
    CHECK(parse_str("time: \"2024-06-26 05:17:03.13712722 +0000 UTC\"\n"
                    "autoscalerStatus: Initializing\n",
                    &s, &d) == 0);
    CHECK(!s.text_format);
    CHECK_STR(s.autoscaler_status, "Initializing");
    CHECK(s.n_groups == 0);
    ca_status_free(&s);
    /* the prefix only counts at the very start */
    CHECK(parse_str("\nCluster-autoscaler status at x:\nInitializing\n", &s, &d) == -1);
    CHECK(!s.text_format);
    ca_status_free(&s);
    /* unknown keys (suspended since CA 1.36, a future field) are ignored */
    CHECK(
        parse_str("autoscalerStatus: Running\nfuture: {a: [1, 2]}\nnodeGroups:\n"
                  "- name: g\n  newField: x\n  health: {status: Healthy, cloudProviderTarget: 1,"
                  " minSize: 0, maxSize: 5, nodeCounts: {registered: {total: 1, suspended: 1}}}\n",
                  &s, &d) == 0);
    CHECK(s.n_groups == 1 && s.groups[0].max_size == 5 && s.groups[0].registered == 1);
    CHECK(s.n_groups == 1 && ca_group_headroom(&s.groups[0]) == 4);
    ca_status_free(&s);
}

/* A copy of status_test.yaml with one string replaced. */
static char *yaml_with(const char *from, const char *to)
{
    size_t len;
    char *text = harness_slurp(DATA "ca-status-yaml-status_test.yaml", &len);
    char *at = strstr(text, from), *out;

    if (at == NULL) {
        printf("no \"%s\" in status_test.yaml\n", from);
        exit(2);
    }
    out = malloc(len + strlen(to) + 1);
    memcpy(out, text, (size_t)(at - text));
    strcpy(out + (at - text), to);
    strcat(out, at + strlen(from));
    free(text);
    return out;
}

static void expect_yaml_error(const char *from, const char *to, unsigned line, unsigned column,
                              const char *msg)
{
    char *text = yaml_with(from, to);
    struct ca_status s;
    struct diag d;

    CHECK(parse_str(text, &s, &d) == -1);
    if (d.line != line || d.column != column || strstr(d.msg, msg) == NULL)
        printf("  %s -> %s: got %u:%u: %s\n", from, to, d.line, d.column, d.msg);
    CHECK(d.line == line && d.column == column);
    CHECK_CONTAINS(d.msg, msg);
    ca_status_free(&s);
    free(text);
}

static void test_yaml_wrong_types(void)
{
    expect_yaml_error("maxSize: 12", "maxSize: \"12\"", 49, 16,
                      "nodeGroups[0].health.maxSize must be a whole number");
    expect_yaml_error("maxSize: 12", "maxSize: -3", 49, 16, "must be a whole number");
    expect_yaml_error("maxSize: 12", "maxSize: 1.5", 49, 16, "must be a whole number");
    expect_yaml_error("maxSize: 12", "maxSizes: 12", 34, 7,
                      "nodeGroups[0].health.maxSize is missing");
    expect_yaml_error("  -\n    name: \"sample-node-group\"", "  -\n    name: [a]", 32, 11,
                      "nodeGroups[0].name must be a string");
    expect_yaml_error("      status: \"Healthy\"", "      status: Fine", 34, 15,
                      "must be Healthy or Unhealthy");
    expect_yaml_error("          ready: 4\n          notStarted",
                      "          ready: {a: 1}\n          notStarted", 38, 18,
                      "nodeGroups[0].health.nodeCounts.registered.ready must be a whole number");
    expect_yaml_error("errorCode: \"QUOTA_EXCEEDED\"", "errorCode: [1]", 55, 20,
                      "nodeGroups[0].scaleUp.backoffInfo.errorCode must be a string");
    expect_yaml_error("errorCode: \"QUOTA_EXCEEDED\"", "errorCode: 403", 55, 20,
                      "errorCode must be a string");
    expect_yaml_error("      minSize: 2\n", "      minSize: 2\n      minSize: 3\n", 49, 7,
                      "duplicate key \"minSize\"");
    expect_yaml_error("status: \"Backoff\"", "status: \"BackoffBackoffBackoff\"", 53, 15,
                      "is not a status");
}

static void test_refused(void)
{
    struct ca_status s;
    struct diag d;
    char big[300];

    CHECK(parse_str("", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "empty");
    CHECK(parse_str("# nothing\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "empty");
    CHECK(parse_str("- a\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "must be a mapping");
    CHECK(parse_str("autoscalerStatus: Running\nnodeGroups: 3\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "nodeGroups must be a sequence");
    CHECK(d.line == 2 && d.column == 13);
    CHECK(parse_str("a: &x [1]\nnodeGroups: *x\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "aliases");
    CHECK(d.line == 2 && d.column == 13);
    CHECK(parse_str("a: 1\n---\nb: 2\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "more than one YAML document");
    CHECK(parse_str("a: [1\n", &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "YAML:");
    CHECK(d.line == 2);
    diag_clear(&d);
    CHECK(ca_status_parse("time: x\0y", 9, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "NUL");
    /* a Health line outside a group, a group without one */
    CHECK(parse_str("Cluster-autoscaler status at t:\nNodeGroups:\n  Health:      Healthy (ready=0 "
                    "unready=0 notStarted=0 longNotStarted=0 registered=0 longUnregistered=0 "
                    "cloudProviderTarget=0 (minSize=0, maxSize=1))\n",
                    &s, &d) == -1);
    CHECK(d.line == 3 && d.column == 3);
    ca_status_free(&s);
    CHECK(parse_str("Cluster-autoscaler status at t:\nNodeGroups:\n  Name:        a\n"
                    "  Name:        b\n",
                    &s, &d) == -1);
    CHECK(d.line == 3);
    CHECK_CONTAINS(d.msg, "node group \"a\" has no Health line");
    ca_status_free(&s);
    CHECK(parse_str("Cluster-autoscaler status at t:\nNodeGroups:\n  Name:        a\n"
                    "  Health:      Sick (ready=0",
                    &s, &d) == -1);
    CHECK(d.line == 4 && d.column == 16);
    ca_status_free(&s);
    /* a number past int64 */
    CHECK(parse_str("Cluster-autoscaler status at t:\nNodeGroups:\n  Name:        a\n"
                    "  Health:      Healthy (ready=99999999999999999999 unready=0",
                    &s, &d) == -1);
    CHECK(d.line == 4 && d.column == 31);
    CHECK_CONTAINS(d.msg, "expected a number");
    ca_status_free(&s);

    /* names: 255 bytes are kept whole, 256 refused (never cut: a cut name matches nothing) */
    memset(big, 'n', sizeof(big));
    big[255] = '\0';
    {
        char text[600];

        snprintf(text, sizeof(text),
                 "nodeGroups:\n- name: %s\n  health: {status: Healthy, cloudProviderTarget: 0, "
                 "minSize: 0, maxSize: 1}\n",
                 big);
        CHECK(parse_str(text, &s, &d) == 0);
        CHECK(s.n_groups == 1 && strlen(s.groups[0].name) == 255);
        ca_status_free(&s);
        big[255] = 'n';
        big[256] = '\0';
        snprintf(text, sizeof(text),
                 "nodeGroups:\n- name: %s\n  health: {status: Healthy, cloudProviderTarget: 0, "
                 "minSize: 0, maxSize: 1}\n",
                 big);
        CHECK(parse_str(text, &s, &d) == -1);
        CHECK(d.line == 2 && d.column == 9);
        CHECK_CONTAINS(d.msg, "256 bytes");
        ca_status_free(&s);
        snprintf(text, sizeof(text), "Cluster-autoscaler status at t:\nNodeGroups:\n  Name: %s\n",
                 big);
        CHECK(parse_str(text, &s, &d) == -1);
        CHECK(d.line == 3 && d.column == 9);
        CHECK_CONTAINS(d.msg, "256 bytes");
        ca_status_free(&s);
    }
    /* a long backoff message is cut at a character, with "..." */
    {
        char msg[700], *text;

        memset(msg, 'x', 600);
        memcpy(msg + 505, "\xc3\xa9", 2); /* é across the cut */
        msg[600] = '\0';
        text = yaml_with("\"Instance 'sample-node-group-40ce0341-t28s' creation failed: Quota "
                         "'CPUS' exceeded. Limit: 57.0 in region us-central1.\"",
                         "PLACEHOLDER");
        {
            size_t n = strlen(text) + sizeof(msg) + 4;
            char *full = malloc(n), *ph = strstr(text, "PLACEHOLDER");

            memcpy(full, text, (size_t)(ph - text));
            snprintf(full + (ph - text), n - (size_t)(ph - text), "\"%s\"%s", msg,
                     ph + strlen("PLACEHOLDER"));
            CHECK(parse_str(full, &s, &d) == 0);
            CHECK(s.n_groups == 1 && strlen(s.groups[0].backoff_msg) == 505 + 3);
            CHECK(s.n_groups == 1 && strcmp(s.groups[0].backoff_msg + 505, "...") == 0);
            ca_status_free(&s);
            free(full);
        }
        free(text);
    }
}

/* Past AUTOSCALER_GROUPS_MAX node groups, in both formats; exactly that many is fine. */
static void test_caps(void)
{
    size_t cap = 200u * (AUTOSCALER_GROUPS_MAX + 1) + 64, at;
    char *yaml = malloc(cap), *text = malloc(cap), *huge;
    struct ca_status s;
    struct diag d;

    at = (size_t)snprintf(yaml, cap, "nodeGroups:\n");
    for (unsigned i = 0; i < AUTOSCALER_GROUPS_MAX; i++)
        at += (size_t)snprintf(yaml + at, cap - at,
                               "- {name: g%u, health: {status: Healthy, cloudProviderTarget: %u, "
                               "minSize: 0, maxSize: 5000}}\n",
                               i, i);
    CHECK(parse_str(yaml, &s, &d) == 0);
    CHECK(s.n_groups == AUTOSCALER_GROUPS_MAX);
    CHECK(s.n_groups == AUTOSCALER_GROUPS_MAX &&
          ca_group_headroom(&s.groups[AUTOSCALER_GROUPS_MAX - 1]) ==
              5000 - (AUTOSCALER_GROUPS_MAX - 1));
    ca_status_free(&s);
    snprintf(yaml + at, cap - at,
             "- {name: one-more, health: {status: Healthy, cloudProviderTarget: 0, "
             "minSize: 0, maxSize: 1}}\n");
    CHECK(parse_str(yaml, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "more than 4096 node groups");
    CHECK(d.line == AUTOSCALER_GROUPS_MAX + 2 && d.column == 3);
    ca_status_free(&s);

    at = (size_t)snprintf(text, cap, "Cluster-autoscaler status at t:\nNodeGroups:\n");
    for (unsigned i = 0; i <= AUTOSCALER_GROUPS_MAX; i++)
        at += (size_t)snprintf(text + at, cap - at,
                               "  Name:        g%u\n  Health:      Healthy (ready=0 unready=0 "
                               "notStarted=0 longNotStarted=0 registered=0 longUnregistered=0 "
                               "cloudProviderTarget=0 (minSize=0, maxSize=1))\n",
                               i);
    CHECK(parse_str(text, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "more than 4096 node groups");
    CHECK(d.line == 3 + 2 * AUTOSCALER_GROUPS_MAX);
    ca_status_free(&s);

    /* a mapping of many keys (the check of distinct keys is quadratic in them) */
    at = 0;
    for (unsigned i = 0; i <= AUTOSCALER_MAP_KEYS_MAX; i++)
        at += (size_t)snprintf(yaml + at, cap - at, "k%u: 1\n", i);
    CHECK(parse_str(yaml, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "more than 64 keys");
    CHECK(d.line == 1 && d.column == 1);
    ca_status_free(&s);
    yaml[at - strlen("k64: 1\n")] = '\0';
    CHECK(parse_str(yaml, &s, &d) == 0); /* 64 unknown keys: ignored */
    ca_status_free(&s);

    /* a status larger than a ConfigMap holds is refused before it is read */
    huge = malloc(AUTOSCALER_STATUS_MAX_BYTES + 2);
    memset(huge, '#', AUTOSCALER_STATUS_MAX_BYTES + 1);
    huge[AUTOSCALER_STATUS_MAX_BYTES + 1] = '\0';
    CHECK(parse_str(huge, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "bytes (at most 1048576)");
    ca_status_free(&s);
    /* deep nesting stops at the cap */
    memset(huge, '[', 4000);
    huge[4000] = '\0';
    CHECK(parse_str(huge, &s, &d) == -1);
    CHECK_CONTAINS(d.msg, "nested too deeply");
    ca_status_free(&s);
    free(huge);
    free(yaml);
    free(text);
}

/* Every prefix of every sample, and samples with bytes changed: an answer, never a crash (the
 * sanitizer build and valgrind judge the memory). */
static void test_garbage(void)
{
    static const char *const files[] = {
        DATA "ca-status-yaml-status_test.yaml", DATA "ca-status-text-eks-autoscaler-2287.txt",
        DATA "ca-status-text-aks-tyger-59-cut.txt", DATA "ca-status-text-aks-composed.txt"};
    static const char junk[] = {'\0', '\n', ' ', ':', '(', ')', '=', '9',
                                '-',  '{',  '[', '"', '&', '*', '!', '\xff'};
    unsigned seed = 12345, ok = 0, failed = 0, silent = 0;

    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        size_t len;
        char *text = harness_slurp(files[f], &len), *copy = malloc(len + 1);

        for (size_t n = 0; n <= len; n++) {
            struct ca_status s;
            struct diag d;

            diag_clear(&d);
            if (ca_status_parse(text, n, &s, &d) == 0)
                ok++;
            else if (d.set)
                failed++;
            else
                silent++;
            ca_status_free(&s);
        }
        for (int round = 0; round < 300; round++) {
            struct ca_status s;
            struct diag d;

            memcpy(copy, text, len + 1);
            for (int k = 0; k < 3; k++) {
                seed = seed * 1103515245u + 12345u;
                copy[(seed >> 8) % len] = junk[(seed >> 20) % sizeof(junk)];
            }
            diag_clear(&d);
            if (ca_status_parse(copy, len, &s, &d) == 0)
                ok++;
            else if (d.set)
                failed++;
            else
                silent++;
            ca_status_free(&s);
        }
        free(copy);
        free(text);
    }
    CHECK(ok > 0 && failed > 0); /* some of each */
    CHECK(silent == 0);          /* every failure said why */
}

/* ---------------------------------------------------------------------------------------- */
/* Karpenter */

static yyjson_doc *nodepool_doc(void)
{
    size_t len;
    char *text = harness_slurp(DATA "karpenter-nodepool-gpu.json", &len);
    yyjson_doc *doc = yyjson_read(text, len, 0);

    free(text);
    if (doc == NULL) {
        printf("cannot read the NodePool\n");
        exit(2);
    }
    return doc;
}

static void test_karpenter_nodepool(void)
{
    yyjson_doc *doc = nodepool_doc();
    struct karpenter_pool p;
    struct diag d;
    bool bounded = false;
    const struct karpenter_amount *a;

    diag_clear(&d);
    CHECK(karpenter_pool_parse(yyjson_doc_get_root(doc), &p, &d) == 0);
    yyjson_doc_free(doc); /* the pool keeps copies */
    CHECK_STR(p.name, "gpu");
    CHECK(p.n_limits == 3 && p.n_used == 5);
    a = karpenter_pool_limit(&p, "nvidia.com/gpu");
    CHECK(a != NULL && a->milli == 2000);
    a = karpenter_pool_limit(&p, "cpu");
    CHECK(a != NULL && a->milli == 1000000); /* "1k" */
    a = karpenter_pool_limit(&p, "memory");
    CHECK(a != NULL && a->milli == 1000LL * 1024 * 1024 * 1024 * 1000);
    CHECK(p.limits_extended && !p.limits_nodes);
    CHECK(p.status_nodes == 0);
    CHECK(p.n_taints == 1);
    if (p.n_taints == 1) {
        CHECK_STR(p.taints[0].key, "nvidia.com/gpu");
        CHECK_STR(p.taints[0].value, "true");
        CHECK_STR(p.taints[0].effect, "NoSchedule");
    }
    CHECK(p.n_labels == 1);
    if (p.n_labels == 1) {
        CHECK_STR(p.labels[0].key, "billing-team");
        CHECK_STR(p.labels[0].value, "my-team");
    }
    CHECK(p.gpu_count_min == 4 && p.gpu_count_max == 8); /* p3.8xlarge, p3.16xlarge */
    CHECK(karpenter_pool_headroom(&p, "nvidia.com/gpu", &bounded) == 2 && bounded);
    CHECK(karpenter_pool_headroom(&p, "cpu", &bounded) == 1000 && bounded);
    CHECK(karpenter_pool_headroom(&p, "amd.com/gpu", &bounded) == 0 && !bounded);
    CHECK(karpenter_pool_headroom(&p, "nodes", &bounded) == 0 && !bounded);
    karpenter_pool_free(&p);
    CHECK(p.limits == NULL && p.n_taints == 0);
}

static int pool_from(const char *json, struct karpenter_pool *p, struct diag *d)
{
    yyjson_doc *doc = harness_json(json);
    int rc;

    diag_clear(d);
    rc = karpenter_pool_parse(harness_val(doc), p, d);
    yyjson_doc_free(doc);
    return rc;
}

static void test_karpenter_headroom(void)
{
    struct karpenter_pool p;
    struct diag d;
    bool bounded;

    /* in use: 1 of 2; past the limit (limits are eventually consistent): none, not negative */
    CHECK(pool_from("{'metadata':{'name':'a'},'spec':{'limits':{'nvidia.com/gpu':2,'nodes':'10'}},"
                    "'status':{'resources':{'nvidia.com/gpu':'1'},'nodes':4}}",
                    &p, &d) == 0);
    CHECK(karpenter_pool_headroom(&p, "nvidia.com/gpu", &bounded) == 1 && bounded);
    CHECK(karpenter_pool_headroom(&p, "nodes", &bounded) == 6 && bounded); /* status.nodes */
    CHECK(p.limits_nodes && p.limits_extended);
    karpenter_pool_free(&p);
    CHECK(pool_from("{'metadata':{'name':'a'},'spec':{'limits':{'nvidia.com/gpu':'2'}},"
                    "'status':{'resources':{'nvidia.com/gpu':'3'}}}",
                    &p, &d) == 0);
    CHECK(karpenter_pool_headroom(&p, "nvidia.com/gpu", &bounded) == 0 && bounded);
    karpenter_pool_free(&p);
    /* no status yet: nothing used */
    CHECK(pool_from("{'metadata':{'name':'a'},'spec':{'limits':{'cpu':'1500m'}}}", &p, &d) == 0);
    CHECK(karpenter_pool_headroom(&p, "cpu", &bounded) == 1 && bounded); /* whole units, down */
    CHECK(!p.limits_extended && !p.limits_nodes && p.status_nodes == -1);
    CHECK(p.gpu_count_min == 0 && p.gpu_count_max == -1);
    karpenter_pool_free(&p);
    /* Gt 3 and Lte 8: 4 to 8 GPUs; kubernetes.io resources are not extended ones */
    CHECK(
        pool_from("{'metadata':{'name':'a'},'spec':{'limits':{'example.kubernetes.io/x':'1'},"
                  "'template':{'spec':{'requirements':["
                  "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Gt','values':['3']},"
                  "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Lte','values':['8']},"
                  "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'Exists'}]}}}}",
                  &p, &d) == 0);
    CHECK(p.gpu_count_min == 4 && p.gpu_count_max == 8);
    CHECK(!p.limits_extended);
    karpenter_pool_free(&p);
}

static void expect_pool_error(const char *json, const char *msg)
{
    struct karpenter_pool p;
    struct diag d;

    CHECK(pool_from(json, &p, &d) == -1);
    CHECK_CONTAINS(d.msg, msg);
    karpenter_pool_free(&p);
}

static void test_karpenter_errors(void)
{
    expect_pool_error("[]", "must be an object");
    expect_pool_error("{'apiVersion':'karpenter.sh/v1beta1','metadata':{'name':'a'}}",
                      "karpenter.sh/v1");
    expect_pool_error("{'kind':'Provisioner','metadata':{'name':'a'}}", "kind must be NodePool");
    expect_pool_error("{'metadata':{}}", "metadata.name");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'limits':{'nvidia.com/gpu':true}}}",
                      "NodePool a: spec.limits[\"nvidia.com/gpu\"] is not a quantity");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'limits':{'nvidia.com/gpu':'-1'}}}",
                      "is not a quantity of 0 or more");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'limits':[1]}}",
                      "spec.limits must be an object, not an array");
    expect_pool_error("{'metadata':{'name':'a'},'status':{'resources':{'cpu':'x'}}}",
                      "status.resources[\"cpu\"]");
    expect_pool_error("{'metadata':{'name':'a'},'status':{'nodes':'3'}}",
                      "status.nodes must be a whole number");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'template':{'spec':{'taints':{}}}}}",
                      "taints must be an array");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'template':{'spec':{'taints':[{'key':"
                      "'k'}]}}}}",
                      "taints[0] must be an object");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'template':{'metadata':{'labels':{'a':1}}"
                      "}}}",
                      "labels[\"a\"] must be a string");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'template':{'spec':{'requirements':["
                      "{'key':'karpenter.k8s.aws/instance-gpu-count','operator':'In',"
                      "'values':['x']}]}}}}",
                      "requirements[0].values[0] must be a whole number");
    expect_pool_error("{'metadata':{'name':'a'},'spec':{'template':{'spec':{'requirements':["
                      "{'key':3}]}}}}",
                      "requirements[0] must be an object with a string key");
}

/* Whether a node (its name and labels, JSON with single quotes) is group id's. */
static bool in_group_named(const char *id, const char *node, const char *labels_json);

static bool in_group(const char *id, const char *labels_json)
{
    return in_group_named(id, "node-1", labels_json);
}

static bool in_group_named(const char *id, const char *node, const char *labels_json)
{
    struct ca_group g;
    char buf[512];
    yyjson_doc *doc;
    bool r;

    memset(&g, 0, sizeof(g));
    snprintf(g.name, sizeof(g.name), "%s", id);
    snprintf(buf, sizeof(buf), "%s", labels_json);
    for (char *q = buf; *q; q++)
        if (*q == '\'')
            *q = '"';
    doc = yyjson_read(buf, strlen(buf), 0);
    r = ca_group_has_node(&g, node, yyjson_doc_get_root(doc));
    yyjson_doc_free(doc);
    return r;
}

/* Node groups to nodes, per provider, with the near misses a substring match would take
 * (AUTOSCALER.md 1.5: the ASG, MIG and VMSS name forms). */
static void test_group_nodes(void)
{
    const char *eks = "{'eks.amazonaws.com/nodegroup':'gpu'}";

    CHECK(in_group("gpu", eks));
    CHECK(in_group("eks-gpu-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", eks));
    CHECK(!in_group("eks-gpu-large-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", eks));
    CHECK(!in_group("eks-gpu-3ec8e5b6", eks));
    CHECK(!in_group("eks-gpux-3ec8e5b6-24f7-8d73-4f5e-aa6e0c3f8d11", eks));
    CHECK(in_group("eksctl-ml-nodegroup-gpu-NodeGroup-1A2B3C",
                   "{'alpha.eksctl.io/nodegroup-name':'gpu'}"));
    CHECK(!in_group("eksctl-ml-nodegroup-gpu-large-NodeGroup-1A2B3C",
                    "{'alpha.eksctl.io/nodegroup-name':'gpu'}"));
    CHECK(in_group("gpu.ml.example.com", "{'kops.k8s.io/instancegroup':'gpu'}"));
    CHECK(!in_group("gpu-large.ml.example.com", "{'kops.k8s.io/instancegroup':'gpu'}"));
    /* GKE: a MIG's nodes are named after it (gke-CLUSTER-POOL-HASH-XXXX) */
    CHECK(in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                         "instanceGroups/gke-ml-gpu-5e6f7a8b-grp",
                         "gke-ml-gpu-5e6f7a8b-x7k9", "{'cloud.google.com/gke-nodepool':'gpu'}"));
    CHECK(!in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                          "instanceGroups/gke-ml-big-gpu-5e6f7a8b-grp",
                          "gke-ml-gpu-0a1b2c3d-x7k9", "{'cloud.google.com/gke-nodepool':'gpu'}"));
    CHECK(!in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                          "instanceGroups/gke-ml-gpu-prod-default-pool-5e6f7a8b-grp",
                          "gke-ml-gpu-0a1b2c3d-x7k9", "{'cloud.google.com/gke-nodepool':'gpu'}"));
    CHECK(in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                         "instanceGroups/gke-ml-gpu-prod-default-pool-5e6f7a8b-grp",
                         "gke-ml-gpu-prod-default-pool-5e6f7a8b-qq01",
                         "{'cloud.google.com/gke-nodepool':'default-pool'}"));
    /* a node of another MIG of the same length */
    CHECK(!in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                          "instanceGroups/gke-ml-big-gpu-5e6f7a8b-grp",
                          "gke-ml-xyz-gpu-0a1b2c3d-x7k9",
                          "{'cloud.google.com/gke-nodepool':'gpu'}"));
    /* a node of another MIG whose name extends this one's */
    CHECK(!in_group_named("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                          "instanceGroups/gke-ml-gpu-5e6f7a8b-grp",
                          "gke-ml-gpu-5e6f7a8b-x7k9-y", "{'cloud.google.com/gke-nodepool':'gpu'}"));
    CHECK(in_group("aks-gpu-17816125-vmss", "{'kubernetes.azure.com/agentpool':'gpu'}"));
    CHECK(in_group("aks-gpu-17816125-vmss", "{'agentpool':'gpu'}"));
    CHECK(!in_group("aks-gpu2-17816125-vmss", "{'kubernetes.azure.com/agentpool':'gpu'}"));
    CHECK(!in_group("aks-gpu-x-vmss", "{'kubernetes.azure.com/agentpool':'gpu'}"));
    CHECK(in_group("MachineDeployment/default/gpu-md",
                   "{'cluster.x-k8s.io/deployment-name':'gpu-md'}"));
    CHECK(!in_group("MachineDeployment/default/gpu-md-2",
                    "{'cluster.x-k8s.io/deployment-name':'gpu-md'}"));
    /* a Karpenter node is no CA group's, whatever else it carries */
    CHECK(!in_group("gpu", "{'eks.amazonaws.com/nodegroup':'gpu','karpenter.sh/nodepool':'gpu'}"));
    CHECK(!in_group("gpu", "{}"));
}

int main(void)
{
    RUN(test_group_nodes);
    RUN(test_yaml_status_test);
    RUN(test_text_eks);
    RUN(test_cluster_wide_health);
    RUN(test_text_aks_cut);
    RUN(test_text_aks_resource_unready);
    RUN(test_detection);
    RUN(test_yaml_wrong_types);
    RUN(test_refused);
    RUN(test_caps);
    RUN(test_garbage);
    RUN(test_karpenter_nodepool);
    RUN(test_karpenter_headroom);
    RUN(test_karpenter_errors);
    TEST_MAIN_END("test_autoscaler");
}
