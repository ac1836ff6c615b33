/*
 * fuzz_json: json_read (webhook/json.c), the one way bytes become a document, on arbitrary
 * bytes, judged against yyjson's own reader and a walk of this file's own: what yyjson accepts
 * but gpuadmit must refuse (docs/json.md §2) must be refused with json.h's messages, and
 * what passes must be what yyjson read, write back, and read again the same.
 *
 * Input: byte 0 picks the flags (bit 0 JSON_READ_ANY_ROOT, bit 1 JSON_READ_PREFIX, bit 2
 * JSON_READ_INSITU, bit 3 a depth cap of 3 instead of REVIEW_DEPTH_MAX); the rest is the text.
 * Seeds start with ' ' (strict, the review's cap) or '!' (any root).
 *
 * The verdict, from yyjson_read_opts with BIGNUM_AS_RAW and a walk that stops one level below
 * the cap:
 *   - yyjson refuses the text: json_read refuses it, "invalid JSON..." (or out of memory);
 *   - a root that is not an object without ANY_ROOT: "expected a JSON object, got ...";
 *   - a repeated key, an integer past 64 bits (RAW), or nesting past the cap: refused, naming
 *     one of the offences the walk found ("duplicate key", "number out of range", "nested
 *     deeper than N levels");
 *   - otherwise accepted: the same value (yyjson_equals), the same read size under PREFIX,
 *     json_int64 in range and exact, json_str_is byte-exact on strings that hold a NUL, and
 *     json_write's text read again gives the same value.
 * LLVMFuzzerInitialize also checks the traps by name (and that review_decode refuses them, 400
 * at the server), so that fuzz-check asserts each message even before the fuzzer finds them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SMALL_CAP 3u

struct offences {
    bool raw, dup, deep;
};

/* Whether obj has two keys with the same bytes: pairwise, written apart from json.c's. */
static bool has_dup(yyjson_val *obj)
{
    size_t i, j, n_i, n_j;
    yyjson_val *a, *va, *b, *vb;

    yyjson_obj_foreach (obj, i, n_i, a, va) {
        yyjson_obj_foreach (obj, j, n_j, b, vb) {
            if (j >= i)
                break;
            if (yyjson_get_len(a) == yyjson_get_len(b) &&
                memcmp(yyjson_get_str(a), yyjson_get_str(b), yyjson_get_len(a)) == 0)
                return true;
        }
    }
    return false;
}

/* The checks of one accepted value that is not a container. */
static void check_scalar(yyjson_val *v)
{
    int64_t n;

    if (yyjson_is_num(v)) {
        bool fits =
            yyjson_is_sint(v) || (yyjson_is_uint(v) && yyjson_get_uint(v) <= (uint64_t)INT64_MAX);

        FUZZ_ASSERT(json_int64(v, &n) == fits, "json_int64 on %s",
                    yyjson_is_real(v)   ? "a real"
                    : yyjson_is_uint(v) ? "a uint"
                                        : "a sint");
        FUZZ_ASSERT(!fits || (yyjson_is_sint(v) ? n == yyjson_get_sint(v)
                                                : (uint64_t)n == yyjson_get_uint(v)),
                    "json_int64 changed the value");
    }
    if (yyjson_is_str(v)) {
        const char *s = yyjson_get_str(v);
        bool nul = strlen(s) != yyjson_get_len(v);

        /* the C string stops at the NUL: json_str_is must not take the string for it */
        FUZZ_ASSERT(json_str_is(v, s) == !nul, "json_str_is on a string %s a NUL",
                    nul ? "with" : "without");
    }
}

/* Walks root with an explicit stack, no deeper than cap + 1 levels (the root is level 1),
 * noting every offence; with check set, also checks each scalar. */
static void walk(yyjson_val *root, unsigned cap, bool check, struct offences *o)
{
    static struct frame {
        bool obj;
        yyjson_obj_iter oi;
        yyjson_arr_iter ai;
    } st[REVIEW_DEPTH_MAX + 2];
    size_t depth = 0;
    yyjson_val *v = root;

    memset(o, 0, sizeof(*o));
    while (v != NULL) {
        /* past 64 bits (raw), or a uint64 no int64 holds: json_read refuses both */
        if (yyjson_is_raw(v) || (yyjson_is_uint(v) && yyjson_get_uint(v) > (uint64_t)INT64_MAX))
            o->raw = true;
        else if (!yyjson_is_ctn(v) && check)
            check_scalar(v);
        if (yyjson_is_ctn(v)) {
            if (depth + 1 > cap) {
                o->deep = true; /* and not looked into, as json_read does not */
            } else {
                st[depth].obj = yyjson_is_obj(v);
                if (st[depth].obj) {
                    o->dup |= has_dup(v);
                    yyjson_obj_iter_init(v, &st[depth].oi);
                } else {
                    yyjson_arr_iter_init(v, &st[depth].ai);
                }
                depth++;
            }
        }
        /* the next value: the top container's next child, or pop */
        for (v = NULL; depth > 0 && v == NULL;) {
            struct frame *f = &st[depth - 1];

            if (f->obj) {
                yyjson_val *k = yyjson_obj_iter_next(&f->oi);

                v = k ? yyjson_obj_iter_get_val(k) : NULL;
            } else {
                v = yyjson_arr_iter_next(&f->ai);
            }
            if (v == NULL)
                depth--;
        }
    }
}

static bool has(const char *msg, const char *part)
{
    return strstr(msg, part) != NULL;
}

/* The whole judgement of one text under one set of flags. */
static void judge(const char *text, size_t len, unsigned flags, unsigned cap)
{
    char *plain_buf = malloc(len + YYJSON_PADDING_SIZE), *buf = NULL;
    yyjson_read_flag rf = YYJSON_READ_BIGNUM_AS_RAW;
    yyjson_read_err err;
    yyjson_doc *plain, *doc, *again;
    struct offences o = {0};
    struct diag d;
    char deep_msg[64];

    FUZZ_ASSERT(plain_buf != NULL, "out of memory");
    memcpy(plain_buf, text, len);
    memset(plain_buf + len, 0, YYJSON_PADDING_SIZE);
    if (flags & JSON_READ_PREFIX)
        rf |= YYJSON_READ_STOP_WHEN_DONE;
    plain = len > 0 ? yyjson_read_opts(plain_buf, len, rf, NULL, &err) : NULL;

    /* in situ, the text goes into a padded buffer that outlives the document */
    if (flags & JSON_READ_INSITU) {
        buf = malloc(len + YYJSON_PADDING_SIZE);
        FUZZ_ASSERT(buf != NULL, "out of memory");
        memcpy(buf, text, len);
        memset(buf + len, 0, YYJSON_PADDING_SIZE);
    }
    diag_clear(&d);
    doc = json_read(buf ? buf : text, len, flags, cap, NULL, &d);
    snprintf(deep_msg, sizeof(deep_msg), "arrays and objects nested deeper than %u levels", cap);

    if (plain == NULL) {
        FUZZ_ASSERT(doc == NULL, "json_read accepted what yyjson refuses");
        FUZZ_ASSERT(strncmp(d.msg, "invalid JSON", 12) == 0 || has(d.msg, "out of memory"),
                    "refused with \"%s\", not \"invalid JSON...\"", d.msg);
        goto done;
    }
    if (!(flags & JSON_READ_ANY_ROOT) && !yyjson_is_obj(yyjson_doc_get_root(plain))) {
        FUZZ_ASSERT(doc == NULL, "json_read accepted a %s root",
                    json_type_desc(yyjson_doc_get_root(plain)));
        FUZZ_ASSERT(strncmp(d.msg, "expected a JSON object, got ", 28) == 0,
                    "a scalar or array root refused with \"%s\"", d.msg);
        goto done;
    }
    walk(yyjson_doc_get_root(plain), cap, false, &o);
    if (o.raw || o.dup || o.deep) {
        FUZZ_ASSERT(doc == NULL, "json_read accepted%s%s%s", o.raw ? " a number past 64 bits" : "",
                    o.dup ? " a repeated key" : "", o.deep ? " nesting past the cap" : "");
        FUZZ_ASSERT((o.raw && has(d.msg, ": number out of range")) ||
                        (o.dup && has(d.msg, ": duplicate key \"")) ||
                        (o.deep && strcmp(d.msg, deep_msg) == 0) || has(d.msg, "out of memory"),
                    "refused with \"%s\", which names none of the offences", d.msg);
        goto done;
    }
    if (doc == NULL && has(d.msg, "out of memory"))
        goto done;
    FUZZ_ASSERT(doc != NULL, "json_read refused a clean document: %s", d.msg);
    FUZZ_ASSERT(yyjson_equals(yyjson_doc_get_root(doc), yyjson_doc_get_root(plain)),
                "json_read read another value than yyjson");
    FUZZ_ASSERT(!(flags & JSON_READ_PREFIX) ||
                    yyjson_doc_get_read_size(doc) == yyjson_doc_get_read_size(plain),
                "the read size differs");
    walk(yyjson_doc_get_root(doc), cap, true, &o);
    {
        size_t out_len = 0;
        char *out = json_write(yyjson_doc_get_root(doc), &out_len);

        FUZZ_ASSERT(out != NULL, "an accepted document does not write");
        diag_clear(&d);
        again = json_read(out, out_len, flags & JSON_READ_ANY_ROOT, cap, NULL, &d);
        FUZZ_ASSERT(again != NULL, "json_write's output does not read again: %s", d.msg);
        FUZZ_ASSERT(yyjson_equals(yyjson_doc_get_root(again), yyjson_doc_get_root(doc)),
                    "json_write's output reads as another value");
        yyjson_doc_free(again);
        free(out);
    }
done:
    yyjson_doc_free(doc);
    yyjson_doc_free(plain);
    free(buf);
    free(plain_buf);
}

/* ---- the traps by name ---------------------------------------------------------------------- */

static void expect(const char *text, unsigned flags, const char *msg)
{
    struct diag d;
    yyjson_doc *doc;

    diag_clear(&d);
    doc = json_read(text, strlen(text), flags, REVIEW_DEPTH_MAX, NULL, &d);
    if (msg == NULL) {
        FUZZ_ASSERT(doc != NULL, "json_read refused %s: %s", text, d.msg);
    } else {
        FUZZ_ASSERT(doc == NULL, "json_read accepted %s", text);
        FUZZ_ASSERT(strcmp(d.msg, msg) == 0, "json_read on %s: \"%s\", not \"%s\"", text, d.msg,
                    msg);
    }
    yyjson_doc_free(doc);
    judge(text, strlen(text), flags, REVIEW_DEPTH_MAX);
}

#define REVIEW_HEAD                                                                                \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"           \
    "\"uid\":\"u1\",\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{},"                \
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"                               \
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"

/* A review that must be refused (400), its message naming the offence. */
static void review_refused(const char *body, const char *part)
{
    struct diag d;
    struct review *r;

    diag_clear(&d);
    r = review_decode(body, strlen(body), &d);
    FUZZ_ASSERT(r == NULL, "review_decode accepted %.200s", body);
    FUZZ_ASSERT(d.set && d.msg[0] != '\0', "a refused review without a message");
    FUZZ_ASSERT(part == NULL || has(d.msg, part), "review_decode: \"%s\" does not say \"%s\"",
                d.msg, part);
}

static void traps(void)
{
    char deep[2 * (REVIEW_DEPTH_MAX + 10) + 64], body[4096];
    size_t n = 0;
    struct diag d;
    yyjson_doc *doc;
    int64_t i64;

    /* duplicate keys: yyjson keeps both and a lookup finds the first */
    expect("{\"a\":1,\"a\":2}", 0, "(root): duplicate key \"a\"");
    expect("{\"m\":{\"l\":{\"x\":\"1\",\"y\":\"2\",\"x\":\"3\"}}}", 0, "/m/l: duplicate key \"x\"");
    expect("{\"a\":[{},{\"k~/\":1,\"k~/\":2}]}", 0, "/a/1: duplicate key \"k~/\"");
    expect("{\"a\\u0000\":1,\"a\":2}", 0, NULL); /* two keys: they differ after the NUL */
    /* integers past 64 bits: yyjson would make doubles of them */
    expect("{\"n\":18446744073709551616}", 0, "/n: number out of range");
    expect("{\"n\":[-9223372036854775809]}", 0, "/n/0: number out of range");
    expect("{\"n\":18446744073709551615}", 0, "/n: number out of range"); /* a uint64, no int64 */
    /* scalar and array roots */
    expect("12", 0, "expected a JSON object, got a number");
    expect("\"x\"", 0, "expected a JSON object, got a string");
    expect("[]", 0, "expected a JSON object, got an array");
    expect("null", 0, "expected a JSON object, got null");
    expect("true", 0, "expected a JSON object, got a boolean");
    expect("12", JSON_READ_ANY_ROOT, NULL);
    /* nesting past the cap; exactly at it is fine */
    n += (size_t)snprintf(deep + n, sizeof(deep) - n, "{\"a\":");
    for (unsigned k = 0; k < REVIEW_DEPTH_MAX; k++)
        deep[n++] = '[';
    for (unsigned k = 0; k < REVIEW_DEPTH_MAX; k++)
        deep[n++] = ']';
    snprintf(deep + n, sizeof(deep) - n, "}");
    snprintf(body, sizeof(body), "arrays and objects nested deeper than %u levels",
             REVIEW_DEPTH_MAX);
    expect(deep, 0, body);
    memmove(deep + 5, deep + 6, strlen(deep + 6) + 1); /* one '[' fewer */
    memmove(deep + 5 + REVIEW_DEPTH_MAX - 1, deep + 5 + REVIEW_DEPTH_MAX,
            strlen(deep + 5 + REVIEW_DEPTH_MAX) + 1); /* and one ']' */
    expect(deep, 0, NULL);
    /* the text after the value, an empty body, what yyjson's strict reader refuses */
    expect("", 0, "invalid JSON: empty");
    expect("{} x", 0, "invalid JSON at 1:4: unexpected content after document");
    expect("{} x", JSON_READ_PREFIX, NULL);

    /* \u0000: accepted, and never equal to the string it would end in C */
    diag_clear(&d);
    doc = json_read("{\"s\":\"x\\u0000y\"}", 16, 0, REVIEW_DEPTH_MAX, NULL, &d);
    FUZZ_ASSERT(doc != NULL, "a string with \\u0000 refused: %s", d.msg);
    FUZZ_ASSERT(yyjson_get_len(yyjson_obj_get(yyjson_doc_get_root(doc), "s")) == 3 &&
                    !json_str_is(yyjson_obj_get(yyjson_doc_get_root(doc), "s"), "x"),
                "json_str_is takes \"x\\u0000y\" for \"x\"");
    yyjson_doc_free(doc);
    /* read past json_read's checks, json_int64 still refuses a uint64 past INT64_MAX */
    doc = yyjson_read("{\"n\":18446744073709551615}", 26, 0);
    FUZZ_ASSERT(doc != NULL && !json_int64(yyjson_obj_get(yyjson_doc_get_root(doc), "n"), &i64),
                "json_int64 took 2^64-1 for an int64");
    yyjson_doc_free(doc);

    /* the same traps in a review: each is a 400, never a crash */
    snprintf(body, sizeof(body), "%s\"uid\":\"u2\",\"object\":{}}}", REVIEW_HEAD);
    review_refused(body, "duplicate key");
    snprintf(
        body, sizeof(body),
        "%s\"object\":{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"a\":\"1\",\"a\":\"2\"}}}}}",
        REVIEW_HEAD);
    review_refused(body, "duplicate key");
    snprintf(body, sizeof(body),
             "%s\"object\":{\"kind\":\"Pod\",\"spec\":{\"priority\":99999999999999999999}}}}",
             REVIEW_HEAD);
    review_refused(body, "number out of range");
    snprintf(body, sizeof(body), "%s\"object\":{\"kind\":\"Pod\",\"x\":%.*s}}}", REVIEW_HEAD,
             (int)(2 * (REVIEW_DEPTH_MAX - 1)), deep + 5);
    review_refused(body, "nested deeper than");
    review_refused("12", NULL);
    review_refused("[{}]", NULL);
    review_refused("\"AdmissionReview\"", NULL);
    review_refused("null", NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    traps();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned mode, flags = 0;

    if (size < 1)
        return 0;
    mode = data[0];
    if (mode & 1)
        flags |= JSON_READ_ANY_ROOT;
    if (mode & 2)
        flags |= JSON_READ_PREFIX;
    if (mode & 4)
        flags |= JSON_READ_INSITU;
    judge((const char *)data + 1, size - 1, flags, mode & 8 ? SMALL_CAP : REVIEW_DEPTH_MAX);
    return 0;
}
