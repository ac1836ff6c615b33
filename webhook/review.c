/*
 * review.c: AdmissionReview decoding and response encoding (docs/protocol.md §2-§5).
 *
 * Invariants: a decoded review has a non-empty uid, a known operation and a request kind; every
 * pointer in it is borrowed from the yyjson document it owns. A response always carries the
 * request's apiVersion, kind AdmissionReview, the uid byte for byte and an explicit "allowed";
 * a patch and patchType travel together and only on the mutating route.
 */
#include "review.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/decision.h"
#include "json.h"
#include "bounds.h"
#include "text.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"

static const char *const op_names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};

const char *review_op_name(enum review_op op)
{
    return op_names[op];
}

bool review_gvr_is(const struct review *r, const char *group, const char *resource)
{
    return strcmp(r->resource.group, group) == 0 && strcmp(r->resource.resource, resource) == 0;
}

const char *review_object_name(const struct review *r)
{
    const char *n = json_str(yyjson_obj_get(yyjson_obj_get(r->object, "metadata"), "name"));

    return n ? n : r->name;
}

/* A string member. Absent: *out = def, or an error when def is NULL. A string may hold a NUL
 * ("\u0000"): *out then reads as its part before the NUL wherever a C string is compared, which
 * is how the apiserver's own names cannot look (its validation refuses NUL in them); the uid,
 * the one string echoed, goes back byte for byte from uid_json. */
static int get_string(yyjson_val *obj, const char *key, const char *path, const char *def,
                      const char **out, struct diag *d)
{
    yyjson_val *v = yyjson_obj_get(obj, key);

    if (v == NULL) {
        if (def == NULL) {
            diag_set(d, NULL, 0, 0, "%s.%s: missing", path, key);
            return -1;
        }
        *out = def;
        return 0;
    }
    if (!yyjson_is_str(v)) {
        diag_set(d, NULL, 0, 0, "%s.%s: expected a string, got %s", path, key, json_type_desc(v));
        return -1;
    }
    *out = yyjson_get_str(v);
    return 0;
}

/* An object member that may be absent or null (*out = NULL then). */
static int get_object_or_null(yyjson_val *obj, const char *key, const char *path, yyjson_val **out,
                              struct diag *d)
{
    yyjson_val *v = yyjson_obj_get(obj, key);

    *out = NULL;
    if (v == NULL || yyjson_is_null(v))
        return 0;
    if (!yyjson_is_obj(v)) {
        diag_set(d, NULL, 0, 0, "%s.%s: expected an object or null, got %s", path, key,
                 json_type_desc(v));
        return -1;
    }
    *out = v;
    return 0;
}

static int decode_gvk(yyjson_val *req, struct review_gvk *gvk, struct diag *d)
{
    yyjson_val *k = yyjson_obj_get(req, "kind");

    if (k == NULL) {
        diag_set(d, NULL, 0, 0, "request.kind: missing");
        return -1;
    }
    if (!yyjson_is_obj(k)) {
        diag_set(d, NULL, 0, 0, "request.kind: expected an object, got %s", json_type_desc(k));
        return -1;
    }
    if (get_string(k, "group", "request.kind", "", &gvk->group, d) < 0 ||
        get_string(k, "version", "request.kind", NULL, &gvk->version, d) < 0 ||
        get_string(k, "kind", "request.kind", NULL, &gvk->kind, d) < 0)
        return -1;
    return 0;
}

static int decode_gvr(yyjson_val *req, struct review_gvr *gvr, struct diag *d)
{
    yyjson_val *r = yyjson_obj_get(req, "resource");

    if (r == NULL) {
        diag_set(d, NULL, 0, 0, "request.resource: missing");
        return -1;
    }
    if (!yyjson_is_obj(r)) {
        diag_set(d, NULL, 0, 0, "request.resource: expected an object, got %s", json_type_desc(r));
        return -1;
    }
    if (get_string(r, "group", "request.resource", "", &gvr->group, d) < 0 ||
        get_string(r, "version", "request.resource", "", &gvr->version, d) < 0 ||
        get_string(r, "resource", "request.resource", NULL, &gvr->resource, d) < 0)
        return -1;
    return 0;
}

static int decode_op(yyjson_val *req, enum review_op *op, struct diag *d)
{
    const char *s;

    if (get_string(req, "operation", "request", NULL, &s, d) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
        /* byte for byte: "CREATE\u0000x" is no operation */
        if (json_str_is(yyjson_obj_get(req, "operation"), op_names[i])) {
            *op = (enum review_op)i;
            return 0;
        }
    }
    diag_set(d, NULL, 0, 0,
             "request.operation: expected CREATE, UPDATE, DELETE or CONNECT, got \"%.64s\"", s);
    return -1;
}

static int decode_user(yyjson_val *req, struct review *r, struct diag *d)
{
    yyjson_val *u = yyjson_obj_get(req, "userInfo");
    yyjson_val *groups, *g;
    size_t i, max;

    r->username = "";
    r->groups = NULL;
    if (u == NULL || yyjson_is_null(u))
        return 0;
    if (!yyjson_is_obj(u)) {
        diag_set(d, NULL, 0, 0, "request.userInfo: expected an object, got %s", json_type_desc(u));
        return -1;
    }
    if (get_string(u, "username", "request.userInfo", "", &r->username, d) < 0)
        return -1;
    groups = yyjson_obj_get(u, "groups");
    if (groups == NULL || yyjson_is_null(groups))
        return 0;
    if (!yyjson_is_arr(groups)) {
        diag_set(d, NULL, 0, 0, "request.userInfo.groups: expected an array, got %s",
                 json_type_desc(groups));
        return -1;
    }
    yyjson_arr_foreach (groups, i, max, g) {
        if (!yyjson_is_str(g)) {
            diag_set(d, NULL, 0, 0, "request.userInfo.groups[%zu]: expected a string, got %s", i,
                     json_type_desc(g));
            return -1;
        }
    }
    r->groups = groups;
    return 0;
}

static int decode_envelope(yyjson_val *root, struct review *r, struct diag *d)
{
    const char *api, *kind;

    /* json_read() takes any root here so that this message, not its own, names what is wrong:
     * a scalar or an array root is refused (yyjson would take "12" as a whole document) */
    if (!yyjson_is_obj(root)) {
        diag_set(d, NULL, 0, 0, "body: expected an AdmissionReview object, got %s",
                 json_type_desc(root));
        return -1;
    }
    if (get_string(root, "apiVersion", "review", NULL, &api, d) < 0 ||
        get_string(root, "kind", "review", NULL, &kind, d) < 0)
        return -1;
    if (json_str_is(yyjson_obj_get(root, "apiVersion"), API_V1)) {
        r->version = REVIEW_V1;
    } else if (json_str_is(yyjson_obj_get(root, "apiVersion"), API_V1BETA1)) {
        r->version = REVIEW_V1BETA1;
    } else {
        diag_set(d, NULL, 0, 0, "review.apiVersion: expected %s or %s, got \"%.64s\"", API_V1,
                 API_V1BETA1, api);
        return -1;
    }
    if (!json_str_is(yyjson_obj_get(root, "kind"), "AdmissionReview")) {
        diag_set(d, NULL, 0, 0, "review.kind: expected AdmissionReview, got \"%.64s\"", kind);
        return -1;
    }
    return 0;
}

static int decode_request(yyjson_val *req, struct review *r, struct diag *d)
{
    yyjson_val *dry;

    if (get_string(req, "uid", "request", NULL, &r->uid, d) < 0)
        return -1;
    r->uid_json = yyjson_obj_get(req, "uid");
    if (yyjson_get_len(r->uid_json) == 0) {
        diag_set(d, NULL, 0, 0, "request.uid: empty");
        return -1;
    }
    if (decode_gvk(req, &r->kind, d) < 0 || decode_gvr(req, &r->resource, d) < 0 ||
        get_string(req, "subResource", "request", "", &r->sub_resource, d) < 0 ||
        get_string(req, "name", "request", "", &r->name, d) < 0 ||
        get_string(req, "namespace", "request", "", &r->ns, d) < 0 ||
        decode_op(req, &r->op, d) < 0 || decode_user(req, r, d) < 0 ||
        get_object_or_null(req, "object", "request", &r->object, d) < 0 ||
        get_object_or_null(req, "oldObject", "request", &r->old_object, d) < 0 ||
        get_object_or_null(req, "options", "request", &r->options, d) < 0)
        return -1;
    dry = yyjson_obj_get(req, "dryRun");
    if (dry != NULL && !yyjson_is_null(dry) && !yyjson_is_bool(dry)) {
        diag_set(d, NULL, 0, 0, "request.dryRun: expected a boolean, got %s", json_type_desc(dry));
        return -1;
    }
    r->dry_run = yyjson_is_true(dry);
    return 0;
}

/* json_read()'s error in this codec's words: "invalid JSON at line L, column C: text" (yyjson's
 * text names what it expected, never the input, so nothing of a Secret in the body reaches
 * the log), and "review: ..." for what it refuses after parsing (depth, a repeated key, an
 * integer past 64 bits). */
static void read_error(const struct diag *rd, struct diag *d)
{
    static const char invalid[] = "invalid JSON at ";
    const char *text;

    if (strncmp(rd->msg, invalid, sizeof(invalid) - 1) == 0 &&
        (text = strstr(rd->msg + sizeof(invalid) - 1, ": ")) != NULL) {
        diag_set(d, NULL, 0, 0, "invalid JSON at line %u, column %u: %s", rd->line, rd->column,
                 text + 2);
        return;
    }
    if (strncmp(rd->msg, "invalid JSON", 12) == 0 || strncmp(rd->msg, "out of memory", 13) == 0)
        diag_set(d, NULL, 0, 0, "%s", rd->msg);
    else
        diag_set(d, NULL, 0, 0, "review: %s", rd->msg);
}

int review_decode_in(struct review *r, char *body, size_t len, unsigned flags,
                     const yyjson_alc *alc, struct diag *d)
{
    struct diag rd;
    yyjson_val *req;

    memset(r, 0, sizeof(*r));
    diag_clear(&rd);
    /* Decisions (docs/json.md §2): duplicate keys refused (400, as with jansson's
     * JSON_REJECT_DUPLICATES: yyjson would keep both and find the first, the apiserver the
     * last); integers past 64 bits refused rather than read as doubles; nesting capped at
     * REVIEW_DEPTH_MAX by json_read's walk after the (iterative) parse, which replaces the
     * bracket pre-scan jansson needed, and keeps yyjson_equals and the copies of eval.c and
     * patch.c within that depth. "\u0000" is taken (the apiserver writes a NUL so and any
     * annotation may hold one; refusing it would be a call error, a bypass under
     * failurePolicy Ignore). */
    r->doc = json_read(body, len, (flags & JSON_READ_INSITU) | JSON_READ_ANY_ROOT, REVIEW_DEPTH_MAX,
                       alc, &rd);
    if (r->doc == NULL) {
        read_error(&rd, d);
        return -1;
    }
    if (decode_envelope(yyjson_doc_get_root(r->doc), r, d) < 0)
        goto fail;
    req = yyjson_obj_get(yyjson_doc_get_root(r->doc), "request");
    if (req == NULL || yyjson_is_null(req)) {
        diag_set(d, NULL, 0, 0, "review.request: missing");
        goto fail;
    }
    if (!yyjson_is_obj(req)) {
        diag_set(d, NULL, 0, 0, "review.request: expected an object, got %s", json_type_desc(req));
        goto fail;
    }
    if (decode_request(req, r, d) < 0)
        goto fail;
    return 0;
fail:
    review_release(r);
    return -1;
}

void review_release(struct review *r)
{
    if (r == NULL)
        return;
    yyjson_doc_free(r->doc);
    memset(r, 0, sizeof(*r));
}

struct review *review_decode(const char *body, size_t len, struct diag *d)
{
    struct review *r = malloc(sizeof(*r));

    if (r == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        return NULL;
    }
    /* not in situ: json_read leaves body as it is */
    if (review_decode_in(r, (char *)body, len, 0, NULL, d) < 0) {
        free(r);
        return NULL;
    }
    return r;
}

void review_free(struct review *r)
{
    if (r == NULL)
        return;
    review_release(r);
    free(r);
}

static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static bool arena_key_ok;

static void arena_drop(void *p)
{
    struct review_arena *a = p;

    yyjson_alc_dyn_free(a->dyn);
    free(a->buf);
    free(a);
}

static void arena_key_make(void)
{
    arena_key_ok = pthread_key_create(&arena_key, arena_drop) == 0;
}

struct review_arena *review_thread_arena(void)
{
    struct review_arena *a;

    if (pthread_once(&arena_once, arena_key_make) != 0 || !arena_key_ok)
        return NULL;
    a = pthread_getspecific(arena_key);
    if (a != NULL)
        return a;
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    a->size = yyjson_read_max_memory_usage(REVIEW_POOL_BODY_BYTES, YYJSON_READ_INSITU);
    a->buf = malloc(a->size);
    a->dyn = yyjson_alc_dyn_new();
    if (a->buf == NULL || a->dyn == NULL || !yyjson_alc_pool_init(&a->pool, a->buf, a->size) ||
        pthread_setspecific(arena_key, a) != 0) {
        arena_drop(a);
        return NULL;
    }
    return a;
}

const yyjson_alc *review_arena_reader(struct review_arena *a, size_t len)
{
    return a != NULL && len <= REVIEW_POOL_BODY_BYTES ? &a->pool : NULL;
}

static const char *reason_for(int code)
{
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    default: return code >= 500 ? "InternalError" : "BadRequest";
    }
}

static void *alc_malloc(const yyjson_alc *alc, size_t n)
{
    return alc ? alc->malloc(alc->ctx, n) : malloc(n);
}

static void alc_free(const yyjson_alc *alc, void *p)
{
    if (alc)
        alc->free(alc->ctx, p);
    else
        free(p);
}

/* The patch member of resp: standard padded base64 (RFC 4648) of the compact patch document,
 * in doc (whose allocator also holds the compact text meanwhile). */
static int encode_patch(yyjson_mut_doc *doc, yyjson_mut_val *resp, const struct decision *dec,
                        const yyjson_alc *alc)
{
    char *text, *b64;
    size_t n;
    yyjson_mut_val *v;
    int rc = -1;

    if (!yyjson_mut_is_arr(dec->patch) || yyjson_mut_arr_size(dec->patch) == 0)
        return 0;
    text = yyjson_mut_val_write_opts(dec->patch, YYJSON_WRITE_NOFLAG, alc, &n, NULL);
    if (text == NULL)
        return -1;
    if (n <= (size_t)INT32_MAX / 4 * 3 - 3 && (b64 = alc_malloc(alc, 4 * ((n + 2) / 3) + 1))) {
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)text, (int)n);
        v = yyjson_mut_strcpy(doc, b64);
        alc_free(alc, b64);
        if (v != NULL && yyjson_mut_obj_add_str(doc, resp, "patchType", "JSONPatch") &&
            yyjson_mut_obj_add_val(doc, resp, "patch", v))
            rc = 0;
    }
    alc_free(alc, text);
    return rc;
}

int review_encode(const struct review *r, const struct decision *dec, bool mutating, char **out,
                  size_t *out_len)
{
    const yyjson_alc *alc = dec->alc;
    yyjson_mut_doc *doc = yyjson_mut_doc_new(alc);
    yyjson_mut_val *root, *resp, *uid;
    int rc = -1;

    *out = NULL;
    if (doc == NULL)
        return -1;
    /* the uid goes back as the value it came in, byte for byte, NULs included: borrowed (not
     * copied) from the review's document, which outlives this one */
    uid = yyjson_mut_strn(doc, yyjson_get_str(r->uid_json), yyjson_get_len(r->uid_json));
    /* literal keys only below: yyjson_mut_obj_add_* neither copy keys nor replace members */
    root = json_pack(doc, "{s:s, s:s, s:{s:o, s:b}}", "apiVersion",
                     r->version == REVIEW_V1 ? API_V1 : API_V1BETA1, "kind", "AdmissionReview",
                     "response", "uid", uid, "allowed", dec->allowed);
    if (uid == NULL || root == NULL)
        goto out;
    yyjson_mut_doc_set_root(doc, root);
    resp = yyjson_mut_obj_get(root, "response");
    if (!dec->allowed) {
        int code = dec->code >= 400 ? dec->code : 403;
        yyjson_mut_val *st =
            json_pack(doc, "{s:i, s:s, s:s, s:s}", "code", code, "status", "Failure", "reason",
                      dec->reason ? dec->reason : reason_for(code), "message",
                      dec->message ? dec->message : "");

        if (st == NULL || !yyjson_mut_obj_add_val(doc, resp, "status", st))
            goto out;
    }
    if (mutating && encode_patch(doc, resp, dec, alc) < 0)
        goto out;
    /* warnings and annotations are copied: they live in the decision's document */
    if (yyjson_mut_arr_size(dec->warnings) > 0 &&
        !yyjson_mut_obj_add_val(doc, resp, "warnings", yyjson_mut_val_mut_copy(doc, dec->warnings)))
        goto out;
    if (yyjson_mut_obj_size(dec->annotations) > 0 &&
        !yyjson_mut_obj_add_val(doc, resp, "auditAnnotations",
                                yyjson_mut_val_mut_copy(doc, dec->annotations)))
        goto out;
    /* the caller frees the text with free(): with an arena, written there (the writer guesses
     * a size and grows it, two or more calls) and copied out in one malloc of the exact size */
    if (alc == NULL) {
        *out = yyjson_mut_write_opts(doc, YYJSON_WRITE_NOFLAG, NULL, out_len, NULL);
    } else {
        char *text = yyjson_mut_write_opts(doc, YYJSON_WRITE_NOFLAG, alc, out_len, NULL);

        if (text != NULL && (*out = malloc(*out_len + 1)) != NULL)
            memcpy(*out, text, *out_len + 1);
        alc_free(alc, text);
    }
    if (*out != NULL)
        rc = 0;
out:
    yyjson_mut_doc_free(doc);
    return rc;
}

int review_status_body(int code, const char *reason, const char *message, char **out,
                       size_t *out_len)
{
    char *clean = text_utf8_clean(message ? message : "", (size_t)-1, false);
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *st;

    *out = NULL;
    if (clean == NULL || doc == NULL) {
        free(clean);
        yyjson_mut_doc_free(doc);
        return -1;
    }
    st = json_pack(doc, "{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                   "v1", "metadata", "status", "Failure", "message", clean, "reason",
                   reason ? reason : reason_for(code), "code", code);
    free(clean);
    if (st != NULL)
        *out = yyjson_mut_val_write(st, YYJSON_WRITE_NOFLAG, out_len);
    yyjson_mut_doc_free(doc);
    return *out != NULL ? 0 : -1;
}
