/* test_pod.c: pod.c, the effective GPU demand of a pod spec and its errors. */
#include <yyjson.h>

#include "harness.h"
#include "policy/pod.h"

/* JSON written with single quotes, for readability. New document. */
#define js harness_json

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
    RUN(test_demand);
    RUN(test_demand_errors);
    TEST_MAIN_END("test_pod");
}
