/*
 * fuzz_rules: the rule-file loader (rules_load_buffer, which the file loader uses too) on
 * arbitrary bytes. A load is all or nothing: a policy and no error, or no policy and at least
 * one error with a message. A policy that loads is then used: a few fixed reviews (a GPU pod, a
 * pod aimed at GPU nodes without GPUs, a Deployment) go to both endpoints, and each response is
 * checked as in fuzz_review, patches included; a patched object must get no second patch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/eval.h"
#include "fuzz_support.h"
#include "policy/rules.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REVIEW_HEAD                                                                                \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"           \
    "\"uid\":\"u1\",\"namespace\":\"ml\",\"operation\":\"CREATE\","                                \
    "\"userInfo\":{\"username\":\"system:serviceaccount:ml-ops:deployer\",\"groups\":[\"a\"]},"

static const char *const reviews[] = {
    REVIEW_HEAD
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"team\":\"ml\","
    "\"tier\":\"gpu\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"2\",\"nvidia.com/mig-1g.5gb\":1}}}]}}}}",

    REVIEW_HEAD
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
    "\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\",\"a/b~c\":\"x\"},\"runtimeClassName\":"
    "\"nvidia\",\"tolerations\":[{\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\","
    "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}],\"securityContext\":{"
    "\"privileged\":true}}]}}}}",

    REVIEW_HEAD
    "\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},"
    "\"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":\"deployments\"},"
    "\"object\":{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3,"
    "\"template\":{\"metadata\":{\"labels\":{\"team\":\"ml\"}},\"spec\":{\"priorityClassName\":"
    "\"batch\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":"
    "\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}}}",
};

static struct review *decoded[3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    for (size_t i = 0; i < 3; i++)
        decoded[i] = fuzz_fixed_review(reviews[i]);
    return 0;
}

/* The patched object sent again gets no patch (rules/README.md, "Patches"), whatever the
 * policy. */
static void again(const struct policy *p, const struct review *r, yyjson_doc *patched)
{
    struct review *r2 = fuzz_review_with_object(r, yyjson_doc_get_root(patched));
    struct decision dec;

    FUZZ_ASSERT(r2 != NULL, "the review with the patched object does not decode");
    decision_init(&dec);
    if (eval_review(p, r2, true, false, NULL, &dec) == 0 && yyjson_mut_arr_size(dec.patch) > 0) {
        char *ops = json_mut_write(dec.patch, NULL);

        FUZZ_FAIL("the patched object gets another patch: %s", ops ? ops : "?");
    }
    decision_release(&dec);
    review_free(r2);
}

static void use(const struct policy *p)
{
    for (size_t i = 0; i < 3; i++) {
        for (int mutating = 0; mutating < 2; mutating++) {
            struct decision dec;
            char *body = NULL;
            size_t len = 0;
            yyjson_doc *patched;

            decision_init(&dec);
            if (eval_review(p, decoded[i], mutating, false, NULL, &dec) == 0) {
                FUZZ_ASSERT(review_encode(decoded[i], &dec, mutating, &body, &len) == 0,
                            "encode failed");
                patched = fuzz_check_response(decoded[i], &dec, mutating, body, len);
                if (patched != NULL)
                    again(p, decoded[i], patched);
                yyjson_doc_free(patched);
                free(body);
            }
            decision_release(&dec);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rules_errors errs;
    struct policy *p;

    p = rules_load_buffer("fuzz.yaml", (const char *)data, size, &errs);
    if (p == NULL) {
        FUZZ_ASSERT(errs.n > 0, "a refused policy without an error");
        for (size_t i = 0; i < errs.n; i++)
            FUZZ_ASSERT(errs.items[i].msg[0] != '\0', "an error without a message");
        return 0;
    }
    FUZZ_ASSERT(errs.n == 0 && errs.dropped == 0, "a policy loaded with errors");
    use(p);
    policy_free(p);
    return 0;
}
