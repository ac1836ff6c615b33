/* test_offline.c: offline_admit() (gpuadmit check and test's judgement: both phases, the patch
 * applied, the result document) and the YAML flow printing of values and patch operations. */
#include <stdio.h>
#include <yyjson.h>

#include "harness.h"
#include "json.h"
#include "log.h"
#include "cli/offline.h"
#include "policy/rules.h"

#define EKS "rules/examples/eks-time-sliced-t4.yaml"

static struct policy *eks(void)
{
    const char *paths[] = {EKS};
    struct policy *p = rules_load_files(paths, 1, NULL);

    if (p == NULL) {
        printf("cannot load %s\n", EKS);
        exit(2);
    }
    return p;
}

/* offline_admit of the JSON text obj (single quotes), its result frozen to be read (new). */
static yyjson_doc *admit(const struct policy *p, const char *obj, struct diag *d)
{
    struct offline_opts o = {.policy = p};
    yyjson_doc *in = harness_json(obj), *out = NULL;
    yyjson_mut_doc *res;

    diag_clear(d);
    res = offline_admit(&o, harness_val(in), d);
    if (res != NULL)
        out = yyjson_mut_doc_imut_copy(res, NULL);
    yyjson_mut_doc_free(res);
    yyjson_doc_free(in);
    return out;
}

static const char *rule_outcome(yyjson_val *res, const char *rule)
{
    size_t i, max;
    yyjson_val *ru;

    yyjson_arr_foreach (yyjson_obj_get(res, "rules"), i, max, ru) {
        if (json_str_is(yyjson_obj_get(ru, "rule"), rule))
            return json_get_str(ru, "outcome");
    }
    return "(no such rule)";
}

static void test_patched(void)
{
    struct policy *p = eks();
    struct diag d;
    yyjson_doc *res = admit(p,
                            "{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'train'},"
                            " 'spec': {'containers': [{'name': 'c', 'image': 'x', 'resources':"
                            " {'limits': {'nvidia.com/gpu': 1}}}]}}",
                            &d);
    yyjson_val *r = harness_val(res), *spec;

    CHECK(r != NULL);
    CHECK(json_str_is(yyjson_obj_get(r, "decision"), "patched"));
    CHECK(json_str_is(yyjson_obj_get(r, "namespace"), "default")); /* as the apiserver does */
    CHECK(json_str_is(yyjson_obj_get(r, "name"), "train"));
    CHECK(yyjson_arr_size(yyjson_obj_get(r, "rules")) == 4);
    CHECK_STR(rule_outcome(r, "gpu-request"), "pass");
    CHECK_STR(rule_outcome(r, "tolerations"), "patch");
    CHECK_STR(rule_outcome(r, "node-selector"), "patch");
    CHECK(yyjson_arr_size(yyjson_obj_get(r, "patch")) > 0);
    CHECK(yyjson_obj_get(r, "reinvocation") == NULL); /* the patched object needs no more */
    CHECK(yyjson_obj_get(r, "message") == NULL);
    /* the object as patched, with the namespace it was judged in */
    spec = yyjson_ptr_get(r, "/object/spec");
    CHECK(json_str_is(yyjson_ptr_get(spec, "/tolerations/0/key"), "nvidia.com/gpu"));
    CHECK(json_str_is(yyjson_ptr_get(spec, "/nodeSelector/nvidia.com~1gpu.present"), "true"));
    CHECK(json_str_is(yyjson_ptr_get(r, "/object/metadata/namespace"), "default"));
    CHECK(yyjson_is_obj(yyjson_obj_get(r, "annotations")));
    yyjson_doc_free(res);
    policy_free(p);
}

static void test_denied_and_not_judged(void)
{
    struct policy *p = eks();
    struct diag d;
    yyjson_doc *res = admit(p,
                            "{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'big',"
                            " 'namespace': 'ml'}, 'spec': {'containers': [{'name': 'c', 'image':"
                            " 'x', 'resources': {'limits': {'nvidia.com/gpu': 2}}}]}}",
                            &d);
    yyjson_val *r = harness_val(res);

    CHECK(json_str_is(yyjson_obj_get(r, "decision"), "denied"));
    CHECK_STR(rule_outcome(r, "gpu-request"), "deny");
    CHECK(json_get_str(r, "message") != NULL &&
          strstr(json_get_str(r, "message"), "gpu-request") != NULL);
    yyjson_doc_free(res);

    res = admit(p, "{'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': 'svc'}}", &d);
    r = harness_val(res);
    CHECK(json_str_is(yyjson_obj_get(r, "decision"), "not judged"));
    CHECK_CONTAINS(json_get_str(r, "reason"), "not sent this kind");
    CHECK_STR(rule_outcome(r, "gpu-request"), "skip");
    CHECK(yyjson_obj_get(r, "object") == NULL);
    yyjson_doc_free(res);

    CHECK(admit(p, "{'kind': 'Pod'}", &d) == NULL);
    CHECK_CONTAINS(d.msg, "not a Kubernetes object");
    CHECK(admit(p, "{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': []}", &d) == NULL);
    CHECK_CONTAINS(d.msg, "metadata: expected an object");
    policy_free(p);
}

/* The capacity judgement of the rule "capacity" in an offline_admit() result, or NULL. */
static yyjson_val *capacity_of(yyjson_val *res)
{
    size_t i, max;
    yyjson_val *ru;

    yyjson_arr_foreach (yyjson_obj_get(res, "rules"), i, max, ru) {
        if (json_str_is(yyjson_obj_get(ru, "rule"), "capacity"))
            return yyjson_obj_get(ru, "capacity");
    }
    return NULL;
}

/* offline_admit of a Deployment (replicas, GPUs per pod) under policy p against view. */
static yyjson_doc *admit_deployment(const struct policy *p, struct cluster *view, int replicas,
                                    int gpus)
{
    struct offline_opts o = {.policy = p, .view = view};
    char text[600];
    yyjson_doc *in, *out = NULL;
    yyjson_mut_doc *res;
    struct diag d;

    snprintf(text, sizeof(text),
             "{'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'w',"
             " 'namespace': 'ml'}, 'spec': {'replicas': %d, 'template': {'spec': {'containers':"
             " [{'name': 'c', 'image': 'x', 'resources': {'limits': {'nvidia.com/gpu': %d}}}]}}}}",
             replicas, gpus);
    in = harness_json(text);
    diag_clear(&d);
    res = offline_admit(&o, harness_val(in), &d);
    if (res != NULL)
        out = yyjson_mut_doc_imut_copy(res, NULL);
    yyjson_mut_doc_free(res);
    yyjson_doc_free(in);
    return out;
}

/* The capacity rule's own judgement rides along in its rule entry (what gpuadmit capacity
 * reports): the stall view has 16 GPUs on 4 tainted nodes, 4 free; the time-sliced one 8 slices,
 * 7 free (eks-t4-sliced.json). */
static void test_capacity_judgement(void)
{
    const char *paths[] = {"rules/default.yaml"};
    struct policy *p = rules_load_files(paths, 1, NULL);
    struct diag d;
    struct cluster *stall = offline_load_snapshot("tests/data/snapshots/stall.json", NULL, &d);
    struct cluster *sliced =
        offline_load_snapshot("tests/data/snapshots/eks-t4-sliced.json", NULL, &d);
    static const struct {
        bool sliced;
        int replicas, gpus;
        const char *verdict, *outcome;
        int64_t fit_now, fit_ever;
    } cases[] = {
        {false, 2, 1, "fits", "pass", 16, 16},   /* gpu-standard preempts the batch-low pods */
        {false, 20, 1, "never", "deny", 16, 16}, /* 20 one-GPU pods on 16 GPUs */
        {false, 1, 8, "never", "deny", 0, 0},    /* no node has 8 */
        {true, 2, 1, "fits", "pass", 7, 8},
        {true, 1, 2, "never", "deny", 3, 4}, /* two slices of a time-sliced GPU */
    };

    CHECK(p != NULL && stall != NULL && sliced != NULL);
    for (size_t i = 0;
         p != NULL && stall != NULL && sliced != NULL && i < sizeof(cases) / sizeof(cases[0]);
         i++) {
        yyjson_doc *res =
            admit_deployment(p, cases[i].sliced ? sliced : stall, cases[i].replicas, cases[i].gpus);
        yyjson_val *cap = capacity_of(harness_val(res));
        int64_t v = -1;

        CHECK(cap != NULL);
        CHECK_STR(json_get_str(cap, "verdict"), cases[i].verdict);
        CHECK_STR(rule_outcome(harness_val(res), "capacity"), cases[i].outcome);
        CHECK(json_int64(yyjson_obj_get(cap, "pods"), &v) && v == cases[i].replicas);
        CHECK(json_int64(yyjson_obj_get(cap, "fitNow"), &v) && v == cases[i].fit_now);
        CHECK(json_int64(yyjson_obj_get(cap, "fitEver"), &v) && v == cases[i].fit_ever);
        yyjson_doc_free(res);
    }
    /* a pod gets no capacity finding (the scheduler keeps it Pending), but the verdict a
     * workload of one would get: 8 GPUs on nodes of 4 never fit */
    {
        struct offline_opts o = {.policy = p, .view = stall};
        yyjson_doc *in = harness_json("{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': "
                                      "'big', 'namespace': 'ml'}, 'spec': {'containers': [{'name':"
                                      " 'c', 'image': 'x', 'resources': {'limits': "
                                      "{'nvidia.com/gpu': 8}}}]}}");
        yyjson_mut_doc *m = offline_admit(&o, harness_val(in), &d);
        yyjson_doc *res = m != NULL ? yyjson_mut_doc_imut_copy(m, NULL) : NULL;
        yyjson_val *cap = capacity_of(harness_val(res));

        CHECK_STR(rule_outcome(harness_val(res), "capacity"), "pass");
        CHECK_STR(json_get_str(cap, "verdict"), "never");
        CHECK_CONTAINS(json_get_str(cap, "why"), "no eligible node holds one pod");
        yyjson_doc_free(res);
        yyjson_mut_doc_free(m);
        yyjson_doc_free(in);
    }
    /* without a view the rule judges nothing: no judgement, only whenStale's warning */
    {
        yyjson_doc *res = admit_deployment(p, NULL, 2, 1);

        CHECK(capacity_of(harness_val(res)) == NULL);
        CHECK_STR(rule_outcome(harness_val(res), "capacity"), "warn");
        yyjson_doc_free(res);
    }
    cluster_free(stall);
    cluster_free(sliced);
    policy_free(p);
}

/* What f printed, as a string (new). */
static char *printed(void (*fn)(FILE *, yyjson_val *), const char *json)
{
    yyjson_doc *doc = harness_json(json);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    fn(f, harness_val(doc));
    fclose(f);
    yyjson_doc_free(doc);
    return buf;
}

static void print_op(FILE *f, yyjson_val *op)
{
    offline_print_op(f, "  ", op);
}

static void test_print(void)
{
    char *s;

    s = printed(offline_print_value,
                "{'key': 'nvidia.com/gpu', 'b': 'true', 'a b': 12, 'n': '12', 'x': 1.5, 'z': null,"
                " 'l': [true, 'x\\u0000y', '-', 'Exists'], 'e': {}}");
    CHECK_STR(s, "{key: nvidia.com/gpu, b: \"true\", \"a b\": 12, n: \"12\", x: 1.5, z: null, "
                 "l: [true, \"x\\u0000y\", \"-\", Exists], e: {}}");
    free(s);
    s = printed(print_op, "{'op': 'add', 'path': '/spec/tolerations/-', 'value': {'key': 'k'}}");
    CHECK_STR(s, "  + /spec/tolerations/- {key: k}\n");
    free(s);
    s = printed(print_op, "{'op': 'move', 'from': '/a', 'path': '/b'}");
    CHECK_STR(s, "  move /b from /a\n");
    free(s);
    s = printed(print_op, "{'op': 'replace', 'path': '/a', 'value': 0.1}");
    CHECK_STR(s, "  ~ /a 0.1\n");
    free(s);
}

int main(void)
{
    log_set_level(LOG_ERROR); /* decisions are the result here, as in gpuadmit check */
    RUN(test_patched);
    RUN(test_denied_and_not_judged);
    RUN(test_capacity_judgement);
    RUN(test_print);
    TEST_MAIN_END("test_offline");
}
