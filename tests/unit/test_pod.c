/* test_pod.c: quantities and the effective GPU demand of a pod spec. */
#include <yyjson.h>

#include "harness.h"
#include "policy/pod.h"
#include "quantity.h"

/* JSON written with single quotes, for readability. New document. */
#define js harness_json

static void test_quantity(void)
{
    static const struct {
        const char *s;
        int ok;
        int64_t milli;
    } cases[] = {
        {"1", 1, 1000},      {"0", 1, 0},         {"1000m", 1, 1000},
        {"1500m", 1, 1500},  {"2k", 1, 2000000},  {"1Ki", 1, 1024000},
        {"1e3", 1, 1000000}, {"1E3", 1, 1000000}, {"1P", 1, 1000000000000000000LL},
        {"1E", 0, 0},        {"01", 1, 1000},     {"+2", 1, 2000},
        {"-1", 1, -1000},    {"0.5", 1, 500},     {".5", 1, 500},
        {"1.", 1, 1000},     {"1.0001", 1, 1001}, {"1n", 1, 1},
        {"100u", 1, 1},      {"1e-3", 1, 1},      {"2Mi", 1, 2097152000},
        {"", 0, 0},          {"abc", 0, 0},       {"1x", 0, 0},
        {"1 ", 0, 0},        {"1e", 0, 0},        {"--1", 0, 0},
        {"1.2.3", 0, 0},     {"9Ei", 0, 0},       {"99999999999999999999", 0, 0},
        {"1e99", 0, 0},      {".", 0, 0},         {"e3", 0, 0},
    };
    int64_t m;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = quantity_parse_milli(cases[i].s, &m);

        if (cases[i].ok ? (rc == 0 && m == cases[i].milli) : rc < 0) {
            harness_passed++;
        } else {
            harness_failed++;
            printf("quantity \"%s\": rc %d milli %lld, want ok=%d milli %lld\n", cases[i].s, rc,
                   (long long)m, cases[i].ok, (long long)cases[i].milli);
        }
    }
    {
        yyjson_doc *doc = js("[3, 2.0, '4', true, 18446744073709551615, -3, '1\\u00002']");
        yyjson_val *a = harness_val(doc);

        CHECK(quantity_json_milli(yyjson_arr_get(a, 0), &m) == 0 && m == 3000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 1), &m) == 0 && m == 2000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 2), &m) == 0 && m == 4000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 3), &m) == -1);
        /* a uint64 past INT64_MAX is out of range, never wrapped to -1 */
        CHECK(quantity_json_milli(yyjson_arr_get(a, 4), &m) == -1);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 5), &m) == 0 && m == -3000);
        /* a NUL inside is no quantity ("1" would be its part before the NUL) */
        CHECK(quantity_json_milli(yyjson_arr_get(a, 6), &m) == -1);
        yyjson_doc_free(doc);
    }
}

/* Every suffix of the grammar, as k8s.io/apimachinery/pkg/api/resource/suffix.go defines it:
 * decimal n u m "" k M G T P E (10^-9 .. 10^18), binary Ki Mi Gi Ti Pi Ei (2^10 .. 2^60); and
 * MilliValue() rounding up (quantity.go). Values in milli-units; int64 holds up to about
 * 9.2e18 of them, so 1Ei (2^60 units) does not fit. */
static void test_quantity_suffixes(void)
{
    static const struct {
        const char *s;
        int ok;
        int64_t milli;
    } cases[] = {
        {"1M", 1, 1000000000LL},
        {"1G", 1, 1000000000000LL},
        {"1T", 1, 1000000000000000LL},
        {"2P", 1, 2000000000000000000LL},
        {"1Mi", 1, 1048576000LL},
        {"1Gi", 1, 1073741824000LL},
        {"1.5Gi", 1, 1610612736000LL},
        {"1Ti", 1, 1099511627776000LL},
        {"1Pi", 1, 1125899906842624000LL},
        {"8Pi", 1, 9007199254740992000LL},
        {"1Ei", 0, 0},
        {"16Pi", 0, 0},
        {"10E", 0, 0},
        {"1m", 1, 1},
        {"1u", 1, 1},
        {"1500u", 1, 2},
        {"1000000n", 1, 1},
        {"1000000u", 1, 1000},
        {"1500000n", 1, 2},
        {"0.001E", 1, 1000000000000000000LL},
        {"3k", 1, 3000000LL},
        {"1K", 0, 0}, /* the kilo suffix is lower case only */
        {"1gi", 0, 0},
        {"1GI", 0, 0},
    };
    int64_t m;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = quantity_parse_milli(cases[i].s, &m);

        if (cases[i].ok ? (rc == 0 && m == cases[i].milli) : rc < 0) {
            harness_passed++;
        } else {
            harness_failed++;
            printf("quantity \"%s\": rc %d milli %lld, want ok=%d milli %lld\n", cases[i].s, rc,
                   (long long)m, cases[i].ok, (long long)cases[i].milli);
        }
    }
}

static char *gpu_globs_v[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"};
static const struct strlist gpu_globs = {gpu_globs_v, 3};

static int64_t demand(const char *spec_json, const char *res, int *rc, char *err)
{
    yyjson_doc *spec = js(spec_json);
    struct pod_demand dm;
    struct diag d;
    int64_t v;

    diag_clear(&d);
    *rc = pod_gpu_demand(harness_val(spec), &gpu_globs, &dm, &d);
    snprintf(err, DIAG_MSG_MAX, "%s", d.msg);
    v = pod_demand_get(&dm, res);
    /* dm's names are borrowed from spec: read before it is freed */
    yyjson_doc_free(spec);
    return v;
}

static void test_demand(void)
{
    static const struct {
        const char *name, *spec, *res;
        int64_t milli;
    } cases[] = {
        {"limits only (templates are not defaulted)",
         "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}",
         "nvidia.com/gpu", 2000},
        {"requests win over limits",
         "{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/"
         "gpu':2},'requests':{'nvidia.com/gpu':'2'}}}]}",
         "nvidia.com/gpu", 2000},
        {"app containers add up",
         "{'containers':[{'resources':{'limits':{'nvidia.com/"
         "gpu':1}}},{'resources':{'limits':{'nvidia.com/gpu':'3'}}}]}",
         "nvidia.com/gpu", 4000},
        {"init container larger than the apps",
         "{'initContainers':[{'resources':{'limits':{'nvidia.com/"
         "gpu':4}}}],'containers':[{'resources':{'limits':{'nvidia.com/gpu':1}}}]}",
         "nvidia.com/gpu", 4000},
        {"init container smaller than the apps",
         "{'initContainers':[{'resources':{'limits':{'nvidia.com/"
         "gpu':1}}}],'containers':[{'resources':{'limits':{'nvidia.com/gpu':3}}}]}",
         "nvidia.com/gpu", 3000},
        {"sidecars add to the apps",
         "{'initContainers':[{'restartPolicy':'Always','resources':{'limits':{'nvidia.com/"
         "gpu':1}}}],'containers':[{'resources':{'limits':{'nvidia.com/gpu':2}}}]}",
         "nvidia.com/gpu", 3000},
        {"an init container runs next to the sidecars before it",
         "{'initContainers':[{'restartPolicy':'Always','resources':{'limits':{'nvidia.com/"
         "gpu':1}}},{'resources':{'limits':{'nvidia.com/"
         "gpu':4}}},{'restartPolicy':'Always','resources':{'limits':{'nvidia.com/"
         "gpu':1}}}],'containers':[{'resources':{'limits':{'nvidia.com/gpu':1}}}]}",
         "nvidia.com/gpu", 5000},
        {"overhead adds",
         "{'overhead':{'nvidia.com/gpu':'1'},'containers':[{'resources':{'limits':{'nvidia.com/"
         "gpu':1}}}]}",
         "nvidia.com/gpu", 2000},
        {"MIG profiles are counted apart, by their own names",
         "{'containers':[{'resources':{'limits':{'nvidia.com/mig-1g.5gb':2,'nvidia.com/gpu':1}}}]}",
         "nvidia.com/mig-1g.5gb", 2000},
        {"resources that are not GPUs are ignored",
         "{'containers':[{'resources':{'limits':{'amd.com/gpu':2,'cpu':'500m'}}}]}", "amd.com/gpu",
         0},
        {"zero is no request", "{'containers':[{'resources':{'limits':{'nvidia.com/gpu':0}}}]}",
         "nvidia.com/gpu", 0},
        {"1000m is one GPU", "{'containers':[{'resources':{'limits':{'nvidia.com/gpu':'1000m'}}}]}",
         "nvidia.com/gpu", 1000},
        {"no containers at all", "{}", "nvidia.com/gpu", 0},
    };
    char err[DIAG_MSG_MAX];
    int rc;
    int64_t got;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        got = demand(cases[i].spec, cases[i].res, &rc, err);
        if (rc == 0 && got == cases[i].milli) {
            harness_passed++;
        } else {
            harness_failed++;
            printf("demand \"%s\": rc %d (%s), %lld milli, want %lld\n", cases[i].name, rc, err,
                   (long long)got, (long long)cases[i].milli);
        }
    }
}

static void test_demand_errors(void)
{
    char err[DIAG_MSG_MAX];
    int rc;

    demand("{'containers':[{'resources':{'limits':{'nvidia.com/gpu':'half'}}}]}", "nvidia.com/gpu",
           &rc, err);
    CHECK(rc == -1);
    CHECK_STR(err, "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: not a valid quantity");
    demand("{'containers':[{},{'resources':{'requests':{'nvidia.com/gpu':'500m'}}}]}",
           "nvidia.com/gpu", &rc, err);
    CHECK(rc == -1);
    CHECK_STR(err, "spec.containers[1].resources.requests[\"nvidia.com/gpu\"]: must be a whole, "
                   "non-negative number");
    demand("{'initContainers':[{'resources':{'limits':{'nvidia.com/gpu':-1}}}]}", "nvidia.com/gpu",
           &rc, err);
    CHECK(rc == -1);
    CHECK_CONTAINS(err, "spec.initContainers[0]");
}

int main(void)
{
    RUN(test_quantity);
    RUN(test_quantity_suffixes);
    RUN(test_demand);
    RUN(test_demand_errors);
    TEST_MAIN_END("test_pod");
}
