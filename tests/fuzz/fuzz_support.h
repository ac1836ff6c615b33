/*
 * fuzz_support.h: what the libFuzzer targets in tests/fuzz/ share: loading the policies and
 * the view once, an RFC 6902 "add" applier written from the RFC (independent of patch.c), the
 * AdmissionReview response checker, and a consistency check of the cluster view.
 *
 * Every check that fails calls FUZZ_FAIL, which prints why and abort()s, so that libFuzzer keeps
 * the input as a crash.
 */
#ifndef GPUADMIT_FUZZ_SUPPORT_H
#define GPUADMIT_FUZZ_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "json.h"
#include "bounds.h"
#include "policy/policy.h"
#include "review.h"

#define FUZZ_FAIL(...) fuzz_fail(__FILE__, __LINE__, __VA_ARGS__)
#define FUZZ_ASSERT(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FUZZ_FAIL(__VA_ARGS__);                                                                \
    } while (0)

void fuzz_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Logs go to /dev/null (every level, so that their formatting is exercised too). */
void fuzz_quiet_logs(void);

/* A file of the source tree (relative to it), whichever folder the fuzzer runs from: the tree
 * is the current folder or the one named at build time. Returns buf. */
const char *fuzz_src_path(const char *rel, char *buf, size_t len);

/* Loads a policy file of the source tree; exits when it does not load. New reference. */
struct policy *fuzz_policy(const char *rel);
/* A review the target's own source holds, decoded once at start; exits 2 if it does not decode
 * (the target is broken, not the input). */
struct review *fuzz_fixed_review(const char *json);
/* Loads a snapshot of the source tree into a new view; exits when it does not load. */
struct cluster *fuzz_view(const char *rel);

/* How deep a response, a patch or a generated object may nest when the checks read it again:
 * a patch's values come from the request (REVIEW_DEPTH_MAX), under an operation in an array. */
#define FUZZ_DEPTH_MAX (2u * REVIEW_DEPTH_MAX)

/* Applies a JSON Patch of "add" operations to the root of doc in place, as the apiserver's
 * json-patch would: -1 (doc then undefined) when an operation is malformed or does not apply. */
int fuzz_apply_patch(yyjson_mut_doc *doc, yyjson_val *ops, char *why, size_t len);

/* Decodes strict standard padded base64 of len bytes; new buffer (free()) or NULL. */
unsigned char *fuzz_base64_decode(const char *in, size_t len, size_t *out_len);

/*
 * Checks an encoded response against the request it answers (docs/protocol.md §3): same
 * apiVersion, kind AdmissionReview, the uid byte for byte, allowed present and equal to the
 * decision, a status for a denial, patch and patchType together and only when mutating, the
 * patch standard base64 of a non-empty JSON array of operations that apply cleanly to the
 * object and leave an object, warnings strings without control characters and within
 * WARNING_MAX_RUNES runes, audit annotations strings. Returns the patched object when there was
 * a patch, as the root of a new document (yyjson_doc_free()), else NULL.
 */
yyjson_doc *fuzz_check_response(const struct review *r, const struct decision *dec, bool mutating,
                                const char *body, size_t len);

/* The request root of r with its object replaced by (a copy of) obj, decoded again; NULL when
 * it does not decode. New review. */
struct review *fuzz_review_with_object(const struct review *r, yyjson_val *obj);

/* Walks the view's records and aborts on any inconsistency: every bound pod in its node's
 * binding once, every binding pod a live record, per-resource totals equal to the sum of the
 * pods' demand and to the sum over priorities. Returns the number of records of every kind. */
size_t fuzz_view_check(struct cluster *c);

#endif
