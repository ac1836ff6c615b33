/*
 * test_decision.c: decision.c, what a decision collects: the denial, warnings and audit
 * annotations as the apiserver keeps them (each rule cited from docs/protocol.md), the notes per
 * rule finding, and the lifetime of the one document they live in.
 */
#include <yyjson.h>

#include "harness.h"
#include "bounds.h"
#include "policy/decision.h"
#include "review.h"

/* The warnings, in order: the i-th, or NULL. */
static const char *warning_at(const struct decision *dec, size_t i)
{
    return yyjson_mut_get_str(yyjson_mut_arr_get(dec->warnings, i));
}

static const char *annotation(const struct decision *dec, const char *key)
{
    return yyjson_mut_get_str(yyjson_mut_obj_get(dec->annotations, key));
}

/* The number of UTF-8 code points of s (s valid). */
static size_t runes(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void test_init(void)
{
    struct decision dec;

    memset(&dec, 0xA5, sizeof(dec));
    decision_init(&dec);
    /* a review is allowed unless a rule denies it (docs/protocol.md §3: `allowed` always
     * written) */
    CHECK(dec.allowed);
    CHECK(dec.code == 0);
    CHECK(dec.reason == NULL && dec.message == NULL);
    CHECK(dec.out == NULL && dec.patch == NULL && dec.warnings == NULL && dec.annotations == NULL);
    CHECK(dec.notes == NULL && dec.n_notes == 0);
    CHECK(dec.alc == NULL);
    /* the document is made on first use, once */
    CHECK(decision_doc(&dec) != NULL);
    CHECK(decision_doc(&dec) == dec.out);
    decision_release(&dec);
}

/* docs/protocol.md §3 and §4: a denial is `allowed: false` with a status; its code reaches the
 * user only at 400 or above, so 0 stands for 403 Forbidden (what review_encode() sends). The
 * message is the decision's own copy, valid UTF-8 (docs/json.md §3: the writer fails the whole
 * response on invalid UTF-8, so a bad byte becomes '?'). */
static void test_deny(void)
{
    struct decision dec;
    char msg[] = "pod requests 9 nvidia.com/gpu";

    decision_init(&dec);
    CHECK(decision_deny(&dec, 0, msg) == 0);
    CHECK(!dec.allowed);
    CHECK(dec.code == 0);
    CHECK(dec.message != msg);
    msg[0] = 'X';
    CHECK_STR(dec.message, "pod requests 9 nvidia.com/gpu");
    /* a second denial replaces the first */
    CHECK(decision_deny(&dec, 422, "second") == 0);
    CHECK(dec.code == 422);
    CHECK_STR(dec.message, "second");
    CHECK(decision_deny(&dec, 0, "bad \xff byte, line\nkept") == 0);
    CHECK_STR(dec.message, "bad ? byte, line\nkept");
    CHECK(decision_deny(&dec, 0, NULL) == 0);
    CHECK_STR(dec.message, "");
    decision_release(&dec);
}

/* A denial of code 0 as the apiserver reads it: code 403, reason Forbidden, the message
 * (docs/protocol.md §3: "gpuadmit sends code: 403, reason: "Forbidden" and the message"). */
static void test_deny_encoded(void)
{
    static const char body[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"a\"},"
        "\"object\":{\"metadata\":{\"name\":\"p\"}}}}";
    struct decision dec;
    struct diag d;
    struct review *r;
    yyjson_doc *doc = NULL;
    yyjson_val *resp;
    char *out = NULL;
    size_t len = 0;

    diag_clear(&d);
    r = review_decode(body, sizeof(body) - 1, &d);
    CHECK(r != NULL);
    decision_init(&dec);
    CHECK(decision_deny(&dec, 0, "no GPUs here") == 0);
    CHECK(decision_warn(&dec, "a warning") == 0);
    CHECK(decision_annotate(&dec, "gpu-limit", "9") == 0);
    CHECK(r != NULL && review_encode(r, &dec, false, &out, &len) == 0);
    doc = out ? yyjson_read(out, len, 0) : NULL;
    resp = yyjson_obj_get(yyjson_doc_get_root(doc), "response");
    CHECK(yyjson_is_false(yyjson_obj_get(resp, "allowed")));
    CHECK(yyjson_get_int(yyjson_obj_get(yyjson_obj_get(resp, "status"), "code")) == 403);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(yyjson_obj_get(resp, "status"), "reason")),
              "Forbidden");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(yyjson_obj_get(resp, "status"), "message")),
              "no GPUs here");
    /* warnings and annotations go out as the decision kept them (§5) */
    CHECK_STR(yyjson_get_str(yyjson_arr_get(yyjson_obj_get(resp, "warnings"), 0)), "a warning");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(yyjson_obj_get(resp, "auditAnnotations"), "gpu-limit")),
              "9");
    yyjson_doc_free(doc);
    free(out);
    decision_release(&dec);
    review_free(r);
}

/* docs/protocol.md §5: the apiserver drops silently a warning that holds a control character,
 * newline included, or invalid UTF-8 (NewWarningHeader), so decision_warn() turns control
 * characters into spaces and a bad byte into '?'; it drops empty and repeated texts as the
 * recorder does (warning.go). */
static void test_warn_clean(void)
{
    struct decision dec;

    decision_init(&dec);
    /* nothing yet: no document, no array */
    CHECK(decision_warn(&dec, "") == 0);
    CHECK(decision_warn(&dec, NULL) == 0);
    CHECK(dec.warnings == NULL);
    CHECK(decision_warn(&dec, "only 4 of 8 more pods fit now") == 0);
    CHECK(decision_warn(&dec, "line one\nline two\ttabbed\r\x7f"
                              "end") == 0);
    CHECK(decision_warn(&dec, "c1 \xc2\x85 next") == 0);         /* U+0085, a C1 control */
    CHECK(decision_warn(&dec, "bad \xc3 byte") == 0);            /* a lead byte without its tail */
    CHECK(decision_warn(&dec, "GPU \xc3\xa9t\xc3\xa9 ok") == 0); /* valid UTF-8 is kept */
    CHECK(yyjson_mut_arr_size(dec.warnings) == 5);
    CHECK_STR(warning_at(&dec, 0), "only 4 of 8 more pods fit now");
    CHECK_STR(warning_at(&dec, 1), "line one line two tabbed  end");
    CHECK_STR(warning_at(&dec, 2), "c1   next");
    CHECK_STR(warning_at(&dec, 3), "bad ? byte");
    CHECK_STR(warning_at(&dec, 4), "GPU \xc3\xa9t\xc3\xa9 ok");
    /* repeated, and repeated once cleaned: the apiserver would show it once */
    CHECK(decision_warn(&dec, "only 4 of 8 more pods fit now") == 0);
    CHECK(decision_warn(&dec, "line one line two\ttabbed\r\x7f"
                              "end") == 0);
    CHECK(yyjson_mut_arr_size(dec.warnings) == 5);
    decision_release(&dec);
}

/* docs/protocol.md §5: once a request's warnings pass 4096 runes in total the apiserver cuts
 * each to 256 runes (truncateItemRunes), a budget other webhooks share: decision_warn() cuts
 * each to WARNING_MAX_RUNES itself, counting runes, not bytes, and never cutting a UTF-8
 * sequence in half. There is no limit on their number: every distinct one is kept, in order. */
static void test_warn_cut(void)
{
    struct decision dec;
    char text[1200], want[32];
    size_t n = 0;

    CHECK(WARNING_MAX_RUNES == 256);
    decision_init(&dec);
    memset(text, 'a', 300);
    text[300] = '\0';
    CHECK(decision_warn(&dec, text) == 0);
    CHECK(strlen(warning_at(&dec, 0)) == 256);
    /* 300 two-byte runes: 256 of them, 512 bytes */
    for (int i = 0; i < 300; i++, n += 2)
        memcpy(text + n, "\xc3\xa9", 2);
    text[n] = '\0';
    CHECK(decision_warn(&dec, text) == 0);
    CHECK(strlen(warning_at(&dec, 1)) == 512);
    CHECK(runes(warning_at(&dec, 1)) == 256);
    /* 255 ASCII then a three-byte rune at the cut: kept whole, as the 256th */
    memset(text, 'b', 255);
    memcpy(text + 255,
           "\xe2\x82\xac"
           "zzz",
           7);
    CHECK(decision_warn(&dec, text) == 0);
    CHECK(strlen(warning_at(&dec, 2)) == 258);
    CHECK(strcmp(warning_at(&dec, 2) + 255, "\xe2\x82\xac") == 0);
    /* exactly 256 runes: unchanged */
    memset(text, 'c', 256);
    text[256] = '\0';
    CHECK(decision_warn(&dec, text) == 0);
    CHECK(strlen(warning_at(&dec, 3)) == 256);
    /* two texts alike in their first 256 runes are one warning once cut */
    memset(text, 'a', 300);
    memcpy(text + 280, "different", 9);
    text[300] = '\0';
    CHECK(decision_warn(&dec, text) == 0);
    CHECK(yyjson_mut_arr_size(dec.warnings) == 4);
    decision_release(&dec);

    decision_init(&dec);
    for (int i = 0; i < 40; i++) {
        snprintf(want, sizeof(want), "warning %d", i);
        CHECK(decision_warn(&dec, want) == 0);
    }
    CHECK(yyjson_mut_arr_size(dec.warnings) == 40);
    CHECK_STR(warning_at(&dec, 0), "warning 0");
    CHECK_STR(warning_at(&dec, 39), "warning 39");
    decision_release(&dec);
}

/* docs/protocol.md §5: the apiserver stores an audit annotation as <webhook name>/<key> and the
 * whole must be a qualified name, so the key gpuadmit sends has no '/', at most 63 characters
 * (NAMES_PART_MAX), and matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]; an invalid key would
 * be dropped by the apiserver, so decision_annotate() refuses it and keeps nothing. */
static void test_annotate_keys(void)
{
    static const char *const good[] = {
        "gpu-limit", "a",
        "9",         "GPU.Limit_2",
        "a-b.c_d",   "x23456789012345678901234567890123456789012345678901234567890123", /* 63 */
    };
    static const char *const bad[] = {
        "",
        "gpuadmit/limit",
        "x234567890123456789012345678901234567890123456789012345678901234", /* 64 */
        "-limit",
        "limit-",
        ".limit",
        "limit.",
        "_limit",
        "limit_",
        "gpu limit",
        "gpu:limit",
        "gpu\xc3\xa9",
        "gpu\nlimit",
    };
    struct decision dec;

    decision_init(&dec);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (decision_annotate(&dec, bad[i], "v") == -1) {
            harness_passed++;
        } else {
            harness_failed++;
            printf("annotation key \"%s\" was taken\n", bad[i]);
        }
    }
    CHECK(decision_annotate(&dec, NULL, "v") == -1);
    CHECK(dec.annotations == NULL || yyjson_mut_obj_size(dec.annotations) == 0);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        CHECK(decision_annotate(&dec, good[i], good[i]) == 0);
        CHECK_STR(annotation(&dec, good[i]), good[i]);
    }
    CHECK(yyjson_mut_obj_size(dec.annotations) == sizeof(good) / sizeof(good[0]));
    decision_release(&dec);
}

/* docs/protocol.md §5: the same key again with another value is dropped by the apiserver when
 * it comes from another call (a reinvocation), so a decision sends each key once: the latest
 * value. Values must be valid UTF-8 for the response to be written at all (docs/json.md §3):
 * a bad byte becomes '?' and the annotation is kept. */
static void test_annotate_values(void)
{
    struct decision dec;

    decision_init(&dec);
    CHECK(decision_annotate(&dec, "gpu-limit", "8") == 0);
    CHECK(decision_annotate(&dec, "gpu-limit", "9") == 0);
    CHECK(yyjson_mut_obj_size(dec.annotations) == 1);
    CHECK_STR(annotation(&dec, "gpu-limit"), "9");
    CHECK(decision_annotate(&dec, "empty", NULL) == 0);
    CHECK_STR(annotation(&dec, "empty"), "");
    CHECK(decision_annotate(&dec, "cut", "na\xc3\xafve \xc3") == 0);
    CHECK_STR(annotation(&dec, "cut"), "na\xc3\xafve ?");
    CHECK(decision_annotate(&dec, "lines", "a\nb") == 0);
    CHECK_STR(annotation(&dec, "lines"), "a\nb");
    CHECK(yyjson_mut_obj_size(dec.annotations) == 4);
    decision_release(&dec);
}

/* One note per rule finding (decision.h), for the metrics: the first DECISION_NOTES_INLINE in
 * the decision itself, the rest on the heap, all kept in order. */
static void test_notes(void)
{
    static struct rule rules[20];
    struct decision dec;
    bool ordered = true;

    decision_init(&dec);
    for (size_t i = 0; i < DECISION_NOTES_INLINE; i++)
        CHECK(decision_note(&dec, &rules[i], ENFORCE_WARN, FINDING_WOULD_DENY) == 0);
    CHECK(dec.n_notes == DECISION_NOTES_INLINE);
    CHECK(dec.notes == dec.notes_inline);
    for (size_t i = DECISION_NOTES_INLINE; i < 20; i++)
        CHECK(decision_note(&dec, &rules[i], (enum rule_enforcement)(i % ENFORCEMENTS),
                            (enum finding)(i % FINDINGS)) == 0);
    CHECK(dec.n_notes == 20);
    CHECK(dec.notes != dec.notes_inline);
    for (size_t i = 0; i < 20; i++) {
        enum rule_enforcement e =
            i < DECISION_NOTES_INLINE ? ENFORCE_WARN : (enum rule_enforcement)(i % ENFORCEMENTS);
        enum finding f =
            i < DECISION_NOTES_INLINE ? FINDING_WOULD_DENY : (enum finding)(i % FINDINGS);

        ordered = ordered && dec.notes[i].rule == &rules[i] && dec.notes[i].enforcement == e &&
                  dec.notes[i].finding == f;
    }
    CHECK(ordered);
    decision_release(&dec);
    CHECK(dec.notes == NULL && dec.n_notes == 0);
}

/* A counting allocator: the decision's document comes from the caller's (decision.h:
 * decision_init_alc), which outlives it. */
static size_t alc_calls;

static void *count_malloc(void *ctx, size_t size)
{
    (void)ctx;
    alc_calls++;
    return malloc(size);
}

static void *count_realloc(void *ctx, void *ptr, size_t old_size, size_t size)
{
    (void)ctx;
    (void)old_size;
    alc_calls++;
    return realloc(ptr, size);
}

static void count_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static void test_release(void)
{
    const yyjson_alc alc = {count_malloc, count_realloc, count_free, NULL};
    struct decision dec;

    decision_init_alc(&dec, &alc);
    CHECK(dec.allowed && dec.alc == &alc);
    CHECK(decision_warn(&dec, "w") == 0);
    CHECK(decision_annotate(&dec, "k", "v") == 0);
    CHECK(decision_deny(&dec, 0, "no") == 0);
    CHECK(alc_calls > 0);
    decision_release(&dec);
    /* everything is gone but the allocator, kept for the next decision */
    CHECK(dec.out == NULL && dec.warnings == NULL && dec.annotations == NULL);
    CHECK(dec.message == NULL && dec.n_notes == 0);
    CHECK(dec.alc == &alc);
    alc_calls = 0;
    decision_init_alc(&dec, dec.alc);
    CHECK(decision_warn(&dec, "again") == 0);
    CHECK(alc_calls > 0);
    CHECK_STR(warning_at(&dec, 0), "again");
    decision_release(&dec);
}

int main(void)
{
    RUN(test_init);
    RUN(test_deny);
    RUN(test_deny_encoded);
    RUN(test_warn_clean);
    RUN(test_warn_cut);
    RUN(test_annotate_keys);
    RUN(test_annotate_values);
    RUN(test_notes);
    RUN(test_release);
    TEST_MAIN_END("test_decision");
}
