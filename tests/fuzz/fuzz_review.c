/*
 * fuzz_review: the whole request path on arbitrary bytes. review_decode, then eval_review at
 * both endpoints under the default policy (enforced and --audit-only) and at /validate under a
 * capacity policy with a small snapshot view, then review_encode, and the response parsed again
 * and checked (fuzz_check_response). A patch must apply to the object, and the patched object
 * sent to /mutate again must get no patch (rules/README.md, "Patches"). A review that decodes
 * is one json_read accepts: no repeated key, no integer past 64 bits, no nesting past
 * REVIEW_DEPTH_MAX, an object root (tests/fuzz/regressions/review/trap-* hold such inputs).
 */
#include <stdint.h>
#include <stdlib.h>

#include "policy/eval.h"
#include "fuzz_support.h"

static struct policy *default_policy, *capacity_policy;
static struct cluster *view;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    default_policy = fuzz_policy("rules/default.yaml");
    capacity_policy = fuzz_policy("tests/data/policies/capacity.yaml");
    view = fuzz_view("tests/data/snapshots/stall.json");
    return 0;
}

/* One evaluation, encoded and checked; the patched object (new) when there was a patch. */
static yyjson_doc *judge(const struct policy *p, const struct review *r, bool mutating,
                         bool audit_only, struct cluster *v, struct decision *dec)
{
    char *body = NULL;
    size_t len = 0;
    yyjson_doc *patched;

    decision_init(dec);
    if (eval_review(p, r, mutating, audit_only, v, dec) < 0)
        return NULL; /* allocation failure only */
    FUZZ_ASSERT(review_encode(r, dec, mutating, &body, &len) == 0, "encode failed");
    patched = fuzz_check_response(r, dec, mutating, body, len);
    free(body);
    return patched;
}

static void idempotent(const struct review *r, yyjson_doc *patched)
{
    struct review *again = fuzz_review_with_object(r, yyjson_doc_get_root(patched));
    struct decision dec;
    yyjson_doc *twice;

    FUZZ_ASSERT(again != NULL, "the review with the patched object does not decode");
    twice = judge(default_policy, again, true, false, NULL, &dec);
    FUZZ_ASSERT(twice == NULL, "the patched object gets another patch");
    decision_release(&dec);
    review_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag d;
    struct review *r;
    struct decision dec;
    yyjson_doc *patched;

    diag_clear(&d);
    r = review_decode((const char *)data, size, &d);
    if (r == NULL) {
        FUZZ_ASSERT(d.set && d.msg[0] != '\0', "a refused review without a message");
        return 0;
    }
    /* json_read's refusals (repeated keys, integers past 64 bits, nesting past the cap) hold
     * for every review: what review_decode takes, json_read takes (fuzz_json checks those) */
    {
        struct diag jd;
        yyjson_doc *doc;

        diag_clear(&jd);
        doc = json_read((const char *)data, size, JSON_READ_ANY_ROOT, REVIEW_DEPTH_MAX, NULL, &jd);
        FUZZ_ASSERT(doc != NULL, "review_decode accepted what json_read refuses: %s", jd.msg);
        FUZZ_ASSERT(yyjson_is_obj(yyjson_doc_get_root(doc)), "a review whose root is no object");
        yyjson_doc_free(doc);
    }
    FUZZ_ASSERT(r->uid != NULL && r->uid[0] != '\0', "a review without a uid");

    patched = judge(default_policy, r, true, false, NULL, &dec);
    decision_release(&dec);
    if (patched != NULL)
        idempotent(r, patched);
    yyjson_doc_free(patched);

    patched = judge(default_policy, r, false, false, NULL, &dec);
    decision_release(&dec);
    yyjson_doc_free(patched);

    /* --audit-only: nothing is denied or patched */
    for (int mutating = 0; mutating < 2; mutating++) {
        patched = judge(default_policy, r, mutating, true, NULL, &dec);
        FUZZ_ASSERT(patched == NULL && dec.allowed, "audit-only denied or patched");
        decision_release(&dec);
    }

    patched = judge(capacity_policy, r, false, false, view, &dec);
    decision_release(&dec);
    yyjson_doc_free(patched);
    review_free(r);
    return 0;
}
