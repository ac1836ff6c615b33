/* test_review.c: the AdmissionReview codec against real fixtures and every malformed shape. */
#include <openssl/evp.h>
#include <yyjson.h>

#include "harness.h"
#include "json.h"
#include "bounds.h"
#include "policy/decision.h"
#include "review.h"

/* Kubernetes' own objects, copied into the repository (tests/data/k8s/README.md) */
#define K8S "tests/data/k8s/"

static struct review *decode_str(const char *s, struct diag *d)
{
    diag_clear(d);
    return review_decode(s, strlen(s), d);
}

/* Wraps an object file into a v1 review with the given operation. New string. */
#define WRAP_FMT                                                                                   \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"   \
    "\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"         \
    "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\","               \
    "\"operation\":\"%s\",\"userInfo\":{\"username\":\"alice\",\"groups\":["                       \
    "\"system:authenticated\"]},\"object\":%s,\"oldObject\":null,\"dryRun\":false}}"

static char *wrap(const char *object_path, const char *op)
{
    size_t len;
    char *obj = harness_slurp(object_path, &len);
    size_t n = sizeof(WRAP_FMT) + len + strlen(op);
    char *out = malloc(n);

    snprintf(out, n, WRAP_FMT, op, obj);
    free(obj);
    return out;
}

static void test_roundtrip_fixture(void)
{
    size_t len;
    char *body = harness_slurp(K8S "testdata/admission.k8s.io.v1.AdmissionReview.json", &len);
    struct diag d;
    struct review *r;
    char *op;

    /* as generated, the fixture's operation is the placeholder "operationValue": refused */
    diag_clear(&d);
    r = review_decode(body, len, &d);
    CHECK(r == NULL);
    CHECK_CONTAINS(d.msg, "request.operation: expected CREATE, UPDATE, DELETE or CONNECT");
    CHECK_CONTAINS(d.msg, "operationValue");

    op = strstr(body, "\"operationValue\"");
    memcpy(op, "\"UPDATE\"        ", 16); /* same length, still valid JSON */
    diag_clear(&d);
    r = review_decode(body, len, &d);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK(r->version == REVIEW_V1);
        CHECK_STR(r->uid, "uidValue");
        CHECK_STR(r->kind.group, "groupValue");
        CHECK_STR(r->kind.version, "versionValue");
        CHECK_STR(r->kind.kind, "kindValue");
        CHECK_STR(r->resource.resource, "resourceValue");
        CHECK_STR(r->sub_resource, "subResourceValue");
        CHECK_STR(r->name, "nameValue");
        CHECK_STR(r->ns, "namespaceValue");
        CHECK(r->op == REVIEW_UPDATE);
        CHECK_STR(r->username, "usernameValue");
        CHECK(yyjson_arr_size(r->groups) == 1);
        CHECK(r->dry_run);
        CHECK(yyjson_is_obj(r->object));
        CHECK(yyjson_is_obj(r->old_object));
        CHECK(yyjson_is_obj(r->options));
        CHECK_STR(yyjson_get_str(yyjson_obj_get(r->object, "kind")), "CustomType");
    }
    review_free(r);
    free(body);
}

static void test_captured_pod_create(void)
{
    size_t len;
    char *body =
        harness_slurp(K8S "admission-examples/kubewarden-pod-create-admissionreview.json", &len);
    struct diag d;
    struct review *r;
    struct decision dec;
    char *out = NULL;
    size_t out_len = 0;

    diag_clear(&d);
    r = review_decode(body, len, &d);
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "  %s\n", d.msg);
        free(body);
        return;
    }
    CHECK_STR(r->uid, "1299d386-525b-4032-98ae-1949f69f9cfc");
    CHECK_STR(r->kind.kind, "Pod");
    CHECK_STR(r->kind.group, "");
    CHECK_STR(r->resource.resource, "pods");
    CHECK(r->op == REVIEW_CREATE);
    CHECK_STR(r->username, "kubernetes-admin");
    CHECK(r->object != NULL && r->old_object == NULL);
    CHECK(!r->dry_run);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(r->options, "kind")), "CreateOptions");

    decision_init(&dec);
    CHECK(review_encode(r, &dec, true, &out, &out_len) == 0);
    CHECK_STR(out, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                   "\"response\":{\"uid\":\"1299d386-525b-4032-98ae-1949f69f9cfc\","
                   "\"allowed\":true}}");
    CHECK(out != NULL && out_len == strlen(out));
    free(out);
    decision_release(&dec);
    review_free(r);
    free(body);
}

/* Every all-fields object fixture decodes as the object of a review. */
static void test_object_fixtures(void)
{
    static const char *const files[] = {
        "core.v1.Pod.json",        "apps.v1.Deployment.json",
        "apps.v1.ReplicaSet.json", "apps.v1.StatefulSet.json",
        "batch.v1.Job.json",       "autoscaling.v1.Scale.json",
        "core.v1.Node.json",       "scheduling.k8s.io.v1.PriorityClass.json",
    };
    char path[256], *body;
    struct diag d;
    struct review *r;
    yyjson_doc *fixture;
    char *text;
    size_t len;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), K8S "testdata/%s", files[i]);
        body = wrap(path, "CREATE");
        r = decode_str(body, &d);
        CHECK(r != NULL);
        text = harness_slurp(path, &len);
        fixture = yyjson_read(text, len, 0);
        free(text);
        /* the decoded object is the fixture, every field kept */
        CHECK(r != NULL && fixture != NULL &&
              yyjson_equals(r->object, yyjson_doc_get_root(fixture)));
        yyjson_doc_free(fixture);
        review_free(r);
        free(body);
    }
}

static void test_v1beta1(void)
{
    const char *body =
        "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":"
        "{\"uid\":\"b-1\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"
        "\"resource\":"
        "\"pods\"},\"operation\":\"CREATE\",\"object\":{}}}";
    struct diag d;
    struct review *r = decode_str(body, &d);
    struct decision dec;
    char *out = NULL;
    size_t len;

    CHECK(r != NULL);
    if (r == NULL)
        return;
    CHECK(r->version == REVIEW_V1BETA1);
    CHECK(!r->dry_run); /* v1beta1 may omit dryRun */
    CHECK_STR(r->username, "");
    decision_init(&dec);
    CHECK(review_encode(r, &dec, false, &out, &len) == 0);
    CHECK_STR(out, "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
                   "\"response\":{\"uid\":\"b-1\",\"allowed\":true}}");
    free(out);
    decision_release(&dec);
    review_free(r);
}

static struct review *minimal_review(void)
{
    struct diag d;
    return decode_str("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"abc\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                      "\"kind\":\"Pod\"},\"resource\":{\"resource\":\"pods\"},"
                      "\"operation\":\"CREATE\",\"object\":{\"kind\":\"Pod\"}}}",
                      &d);
}

/* The response, read back with the webhook's own checks (a repeated key fails). New document. */
static yyjson_doc *encode_json(const struct review *r, const struct decision *dec, bool mutating)
{
    char *out = NULL;
    size_t len;
    yyjson_doc *j;
    struct diag d;

    if (review_encode(r, dec, mutating, &out, &len) < 0)
        return NULL;
    diag_clear(&d);
    j = json_read(out, len, 0, 16, NULL, &d);
    free(out);
    return j;
}

/* member key of the response of j */
static yyjson_val *resp_get(yyjson_doc *j, const char *key)
{
    return yyjson_obj_get(yyjson_obj_get(yyjson_doc_get_root(j), "response"), key);
}

static int64_t ival(yyjson_val *v)
{
    int64_t n = -1;

    json_int64(v, &n);
    return n;
}

static void test_deny(void)
{
    struct review *r = minimal_review();
    struct decision dec;
    yyjson_doc *j;
    yyjson_val *resp, *st;

    decision_init(&dec);
    CHECK(decision_deny(&dec, 0, "container \"trainer\" requests no nvidia.com/gpu") == 0);
    j = encode_json(r, &dec, false);
    resp = yyjson_obj_get(yyjson_doc_get_root(j), "response");
    CHECK(yyjson_is_false(yyjson_obj_get(resp, "allowed")));
    CHECK_STR(yyjson_get_str(yyjson_obj_get(resp, "uid")), "abc");
    st = yyjson_obj_get(resp, "status");
    CHECK(ival(yyjson_obj_get(st, "code")) == 403);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(st, "reason")), "Forbidden");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(st, "status")), "Failure");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(st, "message")),
              "container \"trainer\" requests no nvidia.com/gpu");
    CHECK(yyjson_obj_get(resp, "patch") == NULL && yyjson_obj_get(resp, "patchType") == NULL);
    yyjson_doc_free(j);

    /* an explicit code keeps its own reason */
    CHECK(decision_deny(&dec, 422, "bad") == 0);
    j = encode_json(r, &dec, false);
    st = resp_get(j, "status");
    CHECK(ival(yyjson_obj_get(st, "code")) == 422);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(st, "reason")), "Invalid");
    yyjson_doc_free(j);

    /* invalid UTF-8 in a message is repaired, never lost */
    CHECK(decision_deny(&dec, 0, "bad \xff byte") == 0);
    j = encode_json(r, &dec, false);
    st = resp_get(j, "status");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(st, "message")), "bad ? byte");
    yyjson_doc_free(j);
    /* and so is an audit annotation cut in the middle of a character ("%.2s" of "aé") */
    CHECK(decision_annotate(&dec, "gpu-request", "would deny: a\xc3") == 0);
    j = encode_json(r, &dec, false);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(resp_get(j, "auditAnnotations"), "gpu-request")),
              "would deny: a?");
    yyjson_doc_free(j);
    decision_release(&dec);
    review_free(r);
}

static void test_patch(void)
{
    struct review *r = minimal_review();
    struct decision dec;
    yyjson_doc *j;
    yyjson_val *resp;
    const char *b64;
    unsigned char raw[512];
    int n;

    decision_init(&dec);
    dec.patch = json_pack(decision_doc(&dec), "[{s:s, s:s, s:[{s:s, s:s, s:s}]}]", "op", "add",
                          "path", "/spec/tolerations", "value", "key", "nvidia.com/gpu", "operator",
                          "Exists", "effect", "NoSchedule");
    j = encode_json(r, &dec, true);
    resp = yyjson_obj_get(yyjson_doc_get_root(j), "response");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(resp, "patchType")), "JSONPatch");
    b64 = yyjson_get_str(yyjson_obj_get(resp, "patch"));
    CHECK(b64 != NULL && strlen(b64) % 4 == 0 && strchr(b64, '\n') == NULL);
    if (b64 != NULL) {
        n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)strlen(b64));
        /* EVP_DecodeBlock keeps the padding's zero bytes: cut at the real length */
        while (n > 0 && raw[n - 1] == '\0')
            n--;
        raw[n < 0 ? 0 : n] = '\0';
        CHECK_STR((char *)raw,
                  "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[{\"key\":"
                  "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
                  "\"NoSchedule\"}]}]");
    }
    yyjson_doc_free(j);

    /* never on the validating route */
    j = encode_json(r, &dec, false);
    resp = yyjson_obj_get(yyjson_doc_get_root(j), "response");
    CHECK(yyjson_obj_get(resp, "patch") == NULL && yyjson_obj_get(resp, "patchType") == NULL);
    CHECK(yyjson_is_true(yyjson_obj_get(resp, "allowed")));
    yyjson_doc_free(j);

    /* an empty patch is no patch */
    yyjson_mut_arr_clear(dec.patch);
    j = encode_json(r, &dec, true);
    resp = yyjson_obj_get(yyjson_doc_get_root(j), "response");
    CHECK(yyjson_obj_get(resp, "patch") == NULL && yyjson_obj_get(resp, "patchType") == NULL);
    yyjson_doc_free(j);
    decision_release(&dec);
    review_free(r);
}

static void test_warnings(void)
{
    struct review *r = minimal_review();
    struct decision dec;
    yyjson_doc *j;
    yyjson_val *w;
    char longtext[1200];

    decision_init(&dec);
    CHECK(decision_warn(&dec, "line one\nline two\ttab") == 0);
    CHECK(decision_warn(&dec, "line one\nline two\ttab") == 0); /* duplicate: skipped */
    CHECK(decision_warn(&dec, "") == 0);                        /* empty: skipped */
    CHECK(decision_warn(&dec, "c1 \xc2\x85 control") == 0);
    /* 300 two-byte runes: cut to 256 runes, 512 bytes, on a character boundary */
    for (int i = 0; i < 300; i++)
        memcpy(longtext + 2 * i, "\xc3\xa9", 2);
    longtext[600] = '\0';
    CHECK(decision_warn(&dec, longtext) == 0);
    j = encode_json(r, &dec, false);
    w = resp_get(j, "warnings");
    CHECK(yyjson_arr_size(w) == 3);
    CHECK_STR(yyjson_get_str(yyjson_arr_get(w, 0)), "line one line two tab");
    CHECK_STR(yyjson_get_str(yyjson_arr_get(w, 1)), "c1   control");
    CHECK(yyjson_get_len(yyjson_arr_get(w, 2)) == 512);
    yyjson_doc_free(j);
    decision_release(&dec);
    review_free(r);
}

static void test_annotations(void)
{
    struct review *r = minimal_review();
    struct decision dec;
    yyjson_doc *j;
    yyjson_val *a;
    char key64[65];

    memset(key64, 'k', 64);
    key64[64] = '\0';
    decision_init(&dec);
    CHECK(decision_annotate(&dec, "gpu-request.would-deny", "no nvidia.com/gpu") == 0);
    CHECK(decision_annotate(&dec, "a", "x") == 0);
    CHECK(decision_annotate(&dec, "a/b", "x") == -1);
    CHECK(decision_annotate(&dec, "-a", "x") == -1);
    CHECK(decision_annotate(&dec, "a-", "x") == -1);
    CHECK(decision_annotate(&dec, "", "x") == -1);
    CHECK(decision_annotate(&dec, "a b", "x") == -1);
    CHECK(decision_annotate(&dec, key64, "x") == -1);
    key64[63] = '\0';
    CHECK(decision_annotate(&dec, key64, "x") == 0);
    j = encode_json(r, &dec, false);
    a = resp_get(j, "auditAnnotations");
    CHECK(yyjson_obj_size(a) == 3);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(a, "gpu-request.would-deny")), "no nvidia.com/gpu");
    yyjson_doc_free(j);
    decision_release(&dec);
    review_free(r);
}

struct bad_case {
    const char *body;
    const char *want; /* substring of the error */
};

#define ENV          "\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\""
#define KINDS        "\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"resource\":\"pods\"}"
#define REQ(fields)  "{" ENV ",\"request\":{" fields "}}"
#define OKREQ(extra) REQ("\"uid\":\"u\"," KINDS ",\"operation\":\"CREATE\"" extra)

static void test_malformed(void)
{
    static const struct bad_case cases[] = {
        {"", "invalid JSON"},
        {"{", "invalid JSON at line 1"},
        {"not json", "invalid JSON"},
        {"{\"a\":1} trailing", "invalid JSON"},
        {"[]", "body: expected an AdmissionReview object, got an array"},
        /* a scalar root: yyjson reads it as a document, the codec refuses it */
        {"\"review\"", "body: expected an AdmissionReview object, got a string"},
        {"12", "body: expected an AdmissionReview object, got a number"},
        {"{\"kind\":\"AdmissionReview\",\"request\":{}}", "review.apiVersion: missing"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\"}",
         "review.apiVersion: expected admission.k8s.io/v1 or admission.k8s.io/v1beta1, got \"v1\""},
        {"{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\"}",
         "got \"admission.k8s.io/v2\""},
        {"{\"apiVersion\":7,\"kind\":\"AdmissionReview\"}",
         "review.apiVersion: expected a string, got a number"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}",
         "review.kind: expected AdmissionReview, got \"Pod\""},
        {"{\"apiVersion\":\"admission.k8s.io/v1\"}", "review.kind: missing"},
        {"{" ENV "}", "review.request: missing"},
        {"{" ENV ",\"request\":null}", "review.request: missing"},
        {"{" ENV ",\"request\":[1]}", "review.request: expected an object, got an array"},
        {REQ(KINDS ",\"operation\":\"CREATE\""), "request.uid: missing"},
        {REQ("\"uid\":\"\"," KINDS ",\"operation\":\"CREATE\""), "request.uid: empty"},
        {REQ("\"uid\":42," KINDS ",\"operation\":\"CREATE\""),
         "request.uid: expected a string, got a number"},
        {REQ("\"uid\":\"u\",\"resource\":{\"resource\":\"pods\"},\"operation\":\"CREATE\""),
         "request.kind: missing"},
        {REQ("\"uid\":\"u\",\"kind\":\"Pod\",\"resource\":{\"resource\":\"pods\"},\"operation\":"
             "\"CREATE\""),
         "request.kind: expected an object, got a string"},
        {REQ("\"uid\":\"u\",\"kind\":{\"version\":\"v1\"},\"resource\":{\"resource\":\"pods\"},"
             "\"operation\":\"CREATE\""),
         "request.kind.kind: missing"},
        {REQ("\"uid\":\"u\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":"
             "\"CREATE\""),
         "request.resource: missing"},
        {REQ("\"uid\":\"u\"," KINDS), "request.operation: missing"},
        {REQ("\"uid\":\"u\"," KINDS ",\"operation\":\"PATCH\""),
         "request.operation: expected CREATE, UPDATE, DELETE or CONNECT, got \"PATCH\""},
        {REQ("\"uid\":\"u\"," KINDS ",\"operation\":\"create\""), "got \"create\""},
        {OKREQ(",\"object\":[1,2]"), "request.object: expected an object or null, got an array"},
        {OKREQ(",\"oldObject\":\"x\""),
         "request.oldObject: expected an object or null, got a string"},
        {OKREQ(",\"options\":5"), "request.options: expected an object or null, got a number"},
        {OKREQ(",\"dryRun\":\"true\""), "request.dryRun: expected a boolean, got a string"},
        {OKREQ(",\"userInfo\":[]"), "request.userInfo: expected an object, got an array"},
        {OKREQ(",\"userInfo\":{\"username\":1}"), "request.userInfo.username: expected a string"},
        {OKREQ(",\"userInfo\":{\"groups\":\"admins\"}"),
         "request.userInfo.groups: expected an array"},
        {OKREQ(",\"userInfo\":{\"groups\":[\"a\",3]}"),
         "request.userInfo.groups[1]: expected a string"},
        {OKREQ(",\"namespace\":{}"), "request.namespace: expected a string, got an object"},
        {OKREQ(",\"name\":null"), "request.name: expected a string, got null"},
        {OKREQ(",\"subResource\":[]"), "request.subResource: expected a string"},
        /* refused after parsing (yyjson keeps both; json.c names the key, never a value) */
        {"{" ENV ",\"request\":{},\"request\":{}}", "review: (root): duplicate key \"request\""},
        {OKREQ(",\"object\":{\"spec\":{\"a\":1,\"a\":2}}"),
         "review: /request/object/spec: duplicate key \"a\""},
        /* past 64 bits: jansson refused it; yyjson would read a double */
        {OKREQ(",\"object\":{\"n\":18446744073709551616}"),
         "review: /request/object/n: number out of range"},
        {OKREQ(",\"object\":{\"n\":-9223372036854775809}"), "number out of range"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\xff\",\"kind\":\"AdmissionReview\"}",
         "invalid JSON"},
    };
    struct diag d;
    struct review *r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = decode_str(cases[i].body, &d);
        CHECK(r == NULL);
        CHECK(d.set);
        /* a wrong message is a failure (it only printed before) */
        CHECK_CONTAINS(d.msg, cases[i].want);
        if (r != NULL || strstr(d.msg, cases[i].want) == NULL)
            fprintf(stderr, "  case %zu: body %.80s\n", i, cases[i].body);
        review_free(r);
    }
}

static void test_accepts_nulls_and_unknown_fields(void)
{
    struct diag d;
    struct review *r = decode_str(OKREQ(",\"object\":null,\"oldObject\":null,\"options\":null,"
                                        "\"dryRun\":null,\"userInfo\":null,"
                                        "\"futureField\":{\"x\":[1]}"),
                                  &d);

    CHECK(r != NULL);
    if (r != NULL) {
        CHECK(r->object == NULL && r->old_object == NULL && r->options == NULL);
        CHECK(!r->dry_run);
        CHECK_STR(r->ns, "");
        CHECK_STR(r->name, "");
    }
    review_free(r);
}

/* A review whose request carries "x": depth brackets deep (the envelope adds 2 levels), and
 * brackets inside the uid that must not count. */
static struct review *nested(size_t depth, struct diag *d)
{
    size_t n = 0, cap = depth * 2 + 512;
    char *body = malloc(cap);
    struct review *r;

    n += (size_t)snprintf(body, cap,
                          "{" ENV ",\"request\":{\"uid\":\"[[[[[[{{{{{{\\\"\",\"operation\":"
                          "\"CREATE\"," KINDS ",\"x\":");
    for (size_t i = 0; i < depth; i++)
        body[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        body[n++] = ']';
    memcpy(body + n, "}}", 3);
    diag_clear(d);
    r = review_decode(body, strlen(body), d);
    free(body);
    return r;
}

static void test_depth_bound(void)
{
    struct diag d;
    struct review *r;

    /* REVIEW_DEPTH_MAX levels in all are taken (the "kind" object is one level, as deep as x's
     * first array); one more is refused before parsing, with the bound named */
    r = nested(REVIEW_DEPTH_MAX - 2, &d);
    CHECK(r != NULL);
    if (r == NULL)
        printf("refused: %s\n", d.msg);
    review_free(r);
    r = nested(REVIEW_DEPTH_MAX - 1, &d);
    CHECK(r == NULL);
    CHECK_STR(d.msg, "review: arrays and objects nested deeper than 128 levels");
    review_free(r);
}

static void test_deep_nesting(void)
{
    /* far past the cap: refused with a message, no stack overflow */
    size_t depth = 100000, n = 0;
    char *body = malloc(depth * 2 + 128);
    struct diag d;
    struct review *r;

    n += (size_t)sprintf(body, "{" ENV ",\"request\":{\"uid\":\"u\",\"x\":");
    for (size_t i = 0; i < depth; i++)
        body[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        body[n++] = ']';
    memcpy(body + n, "}}", 3);
    diag_clear(&d);
    r = review_decode(body, strlen(body), &d);
    CHECK(r == NULL);
    CHECK_CONTAINS(d.msg, "nested deeper than");
    review_free(r);
    free(body);
}

static void test_status_body(void)
{
    char *out = NULL;
    size_t len = 0;
    yyjson_doc *doc;
    yyjson_val *j;

    CHECK(review_status_body(413, NULL, "body of 9 bytes is over the limit", &out, &len) == 0);
    doc = yyjson_read(out, len, 0);
    j = yyjson_doc_get_root(doc);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "kind")), "Status");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "apiVersion")), "v1");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "status")), "Failure");
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "reason")), "RequestEntityTooLarge");
    CHECK(ival(yyjson_obj_get(j, "code")) == 413);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "message")), "body of 9 bytes is over the limit");
    yyjson_doc_free(doc);
    free(out);

    CHECK(review_status_body(400, NULL, "cut \xe2\x82", &out, &len) == 0);
    doc = yyjson_read(out, len, 0);
    j = yyjson_doc_get_root(doc);
    CHECK_STR(yyjson_get_str(yyjson_obj_get(j, "message")), "cut ??");
    yyjson_doc_free(doc);
    free(out);
}

static void test_nul_in_strings(void)
{
    /* the apiserver writes NUL as \u0000; any annotation may carry one */
    const char *body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"request\":{\"uid\":\"a\\u0000b\",\"kind\":{\"version\":\"v1\",\"kind\":"
                       "\"Pod\"},\"resource\":{\"resource\":\"pods\"},\"operation\":\"CREATE\","
                       "\"object\":{\"metadata\":{\"annotations\":{\"x\":\"a\\u0000b\"}}}}}";
    struct diag d;
    struct review *r = decode_str(body, &d);
    struct decision dec;
    char *out = NULL;
    size_t len = 0;

    CHECK(r != NULL);
    if (r == NULL) {
        printf("  %s\n", d.msg);
        return;
    }
    CHECK(yyjson_get_len(r->uid_json) == 3);
    decision_init(&dec);
    CHECK(review_encode(r, &dec, false, &out, &len) == 0);
    /* echoed byte for byte, NUL included */
    CHECK_CONTAINS(out, "\"uid\":\"a\\u0000b\"");
    free(out);
    review_free(r);
}

static void test_parse_error_hides_the_body(void)
{
    struct diag d;
    struct review *r = decode_str("{\"data\":{\"password\":hunter2}}", &d);

    CHECK(r == NULL);
    CHECK_CONTAINS(d.msg, "invalid JSON at line 1, column");
    CHECK(strstr(d.msg, "hunter2") == NULL);
    CHECK(strstr(d.msg, "near") == NULL);
}

/* The server's way: in situ, into the thread's pool, the struct on the stack; escapes are
 * undone in the body's own bytes, and a body past the pool's size is read with libc. */
static void test_decode_in_situ(void)
{
    static const char text[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
        "\"a\\u0000b\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"
        "\"resource\":\"pods\"},\"operation\":\"CREATE\",\"name\":\"p\\u00e9\",\"object\":"
        "{\"x\":\"%s\"}}}";
    size_t pad = 70000, n;
    char *fill = malloc(pad + 1), *body = malloc(sizeof(text) + pad + YYJSON_PADDING_SIZE);
    struct review_arena *a = review_thread_arena();
    struct review r;
    struct decision dec;
    struct diag d;
    char *out = NULL;
    size_t len;

    CHECK(a != NULL);
    for (int big = 0; big < 2; big++) {
        memset(fill, 'y', pad);
        fill[big ? pad : 10] = '\0';
        n = (size_t)snprintf(body, sizeof(text) + pad, text, fill);
        memset(body + n, 0, YYJSON_PADDING_SIZE);
        CHECK(review_arena_reader(a, n) == (big ? NULL : &a->pool));
        diag_clear(&d);
        CHECK(review_decode_in(&r, body, n, JSON_READ_INSITU, review_arena_reader(a, n), &d) == 0);
        CHECK(yyjson_get_len(r.uid_json) == 3 && memcmp(r.uid, "a\0b", 3) == 0);
        CHECK_STR(r.name, "p\xc3\xa9");
        CHECK(yyjson_get_len(yyjson_obj_get(r.object, "x")) == (big ? pad : 10));
        decision_init_alc(&dec, a ? a->dyn : NULL);
        CHECK(decision_annotate(&dec, "k", "v") == 0);
        CHECK(review_encode(&r, &dec, true, &out, &len) == 0);
        CHECK_CONTAINS(out, "\"uid\":\"a\\u0000b\"");
        CHECK_CONTAINS(out, "\"auditAnnotations\":{\"k\":\"v\"}");
        free(out);
        decision_release(&dec);
        review_release(&r);
        CHECK(r.doc == NULL);
    }
    /* a refused body leaves nothing to release */
    n = (size_t)snprintf(body, 64, "{\"a\":1,\"a\":2}");
    memset(body + n, 0, YYJSON_PADDING_SIZE);
    diag_clear(&d);
    CHECK(review_decode_in(&r, body, n, JSON_READ_INSITU, review_arena_reader(a, n), &d) < 0);
    CHECK_CONTAINS(d.msg, "duplicate key");
    CHECK(r.doc == NULL);
    free(fill);
    free(body);
}

int main(void)
{
    RUN(test_decode_in_situ);
    RUN(test_nul_in_strings);
    RUN(test_parse_error_hides_the_body);
    RUN(test_roundtrip_fixture);
    RUN(test_captured_pod_create);
    RUN(test_object_fixtures);
    RUN(test_v1beta1);
    RUN(test_deny);
    RUN(test_patch);
    RUN(test_warnings);
    RUN(test_annotations);
    RUN(test_malformed);
    RUN(test_accepts_nulls_and_unknown_fields);
    RUN(test_deep_nesting);
    RUN(test_depth_bound);
    RUN(test_status_body);
    TEST_MAIN_END("test_review");
}
