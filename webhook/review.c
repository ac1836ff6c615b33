/*
 * review.c: AdmissionReview decoding and response encoding (PROTOCOL.md §2-§5).
 *
 * Invariants: a decoded review has a non-empty uid, a known operation and a request kind; every
 * pointer in it is borrowed from the parsed root it owns. A response always carries the request's
 * apiVersion, kind AdmissionReview, the uid byte for byte and an explicit "allowed"; a patch and
 * patchType travel together and only on the mutating route.
 */
#include "review.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "text.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"

static const char *const op_names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};

const char *review_op_name(enum review_op op)
{
    return op_names[op];
}

static const char *json_type_name(const json_t *v)
{
    if (v == NULL)
        return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* A string member. Absent: *out = def, or an error when def is NULL. */
static int get_string(const json_t *obj, const char *key, const char *path, const char *def,
                      const char **out, struct diag *d)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL) {
        if (def == NULL) {
            diag_set(d, NULL, 0, 0, "%s.%s: missing", path, key);
            return -1;
        }
        *out = def;
        return 0;
    }
    if (!json_is_string(v)) {
        diag_set(d, NULL, 0, 0, "%s.%s: expected a string, got %s", path, key, json_type_name(v));
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* An object member that may be absent or null (*out = NULL then). */
static int get_object_or_null(const json_t *obj, const char *key, const char *path, json_t **out,
                              struct diag *d)
{
    json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        diag_set(d, NULL, 0, 0, "%s.%s: expected an object or null, got %s", path, key,
                 json_type_name(v));
        return -1;
    }
    *out = v;
    return 0;
}

static int decode_gvk(const json_t *req, struct review_gvk *gvk, struct diag *d)
{
    const json_t *k = json_object_get(req, "kind");

    if (k == NULL) {
        diag_set(d, NULL, 0, 0, "request.kind: missing");
        return -1;
    }
    if (!json_is_object(k)) {
        diag_set(d, NULL, 0, 0, "request.kind: expected an object, got %s", json_type_name(k));
        return -1;
    }
    if (get_string(k, "group", "request.kind", "", &gvk->group, d) < 0 ||
        get_string(k, "version", "request.kind", NULL, &gvk->version, d) < 0 ||
        get_string(k, "kind", "request.kind", NULL, &gvk->kind, d) < 0)
        return -1;
    return 0;
}

static int decode_gvr(const json_t *req, struct review_gvr *gvr, struct diag *d)
{
    const json_t *r = json_object_get(req, "resource");

    if (r == NULL) {
        diag_set(d, NULL, 0, 0, "request.resource: missing");
        return -1;
    }
    if (!json_is_object(r)) {
        diag_set(d, NULL, 0, 0, "request.resource: expected an object, got %s", json_type_name(r));
        return -1;
    }
    if (get_string(r, "group", "request.resource", "", &gvr->group, d) < 0 ||
        get_string(r, "version", "request.resource", "", &gvr->version, d) < 0 ||
        get_string(r, "resource", "request.resource", NULL, &gvr->resource, d) < 0)
        return -1;
    return 0;
}

static int decode_op(const json_t *req, enum review_op *op, struct diag *d)
{
    const char *s;

    if (get_string(req, "operation", "request", NULL, &s, d) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
        if (strcmp(s, op_names[i]) == 0) {
            *op = (enum review_op)i;
            return 0;
        }
    }
    diag_set(d, NULL, 0, 0,
             "request.operation: expected CREATE, UPDATE, DELETE or CONNECT, got \"%.64s\"", s);
    return -1;
}

static int decode_user(const json_t *req, struct review *r, struct diag *d)
{
    const json_t *u = json_object_get(req, "userInfo");
    json_t *groups;
    size_t i;
    json_t *g;

    r->username = "";
    r->groups = NULL;
    if (u == NULL || json_is_null(u))
        return 0;
    if (!json_is_object(u)) {
        diag_set(d, NULL, 0, 0, "request.userInfo: expected an object, got %s", json_type_name(u));
        return -1;
    }
    if (get_string(u, "username", "request.userInfo", "", &r->username, d) < 0)
        return -1;
    groups = json_object_get(u, "groups");
    if (groups == NULL || json_is_null(groups))
        return 0;
    if (!json_is_array(groups)) {
        diag_set(d, NULL, 0, 0, "request.userInfo.groups: expected an array, got %s",
                 json_type_name(groups));
        return -1;
    }
    json_array_foreach (groups, i, g) {
        if (!json_is_string(g)) {
            diag_set(d, NULL, 0, 0, "request.userInfo.groups[%zu]: expected a string, got %s", i,
                     json_type_name(g));
            return -1;
        }
    }
    r->groups = groups;
    return 0;
}

static int decode_envelope(const json_t *root, struct review *r, struct diag *d)
{
    const char *api, *kind;

    if (!json_is_object(root)) {
        diag_set(d, NULL, 0, 0, "body: expected an AdmissionReview object, got %s",
                 json_type_name(root));
        return -1;
    }
    if (get_string(root, "apiVersion", "review", NULL, &api, d) < 0 ||
        get_string(root, "kind", "review", NULL, &kind, d) < 0)
        return -1;
    if (strcmp(api, API_V1) == 0) {
        r->version = REVIEW_V1;
    } else if (strcmp(api, API_V1BETA1) == 0) {
        r->version = REVIEW_V1BETA1;
    } else {
        diag_set(d, NULL, 0, 0, "review.apiVersion: expected %s or %s, got \"%.64s\"", API_V1,
                 API_V1BETA1, api);
        return -1;
    }
    if (strcmp(kind, "AdmissionReview") != 0) {
        diag_set(d, NULL, 0, 0, "review.kind: expected AdmissionReview, got \"%.64s\"", kind);
        return -1;
    }
    return 0;
}

static int decode_request(const json_t *req, struct review *r, struct diag *d)
{
    const json_t *dry;

    if (get_string(req, "uid", "request", NULL, &r->uid, d) < 0)
        return -1;
    r->uid_json = json_object_get(req, "uid");
    if (json_string_length(r->uid_json) == 0) {
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
    dry = json_object_get(req, "dryRun");
    if (dry != NULL && !json_is_null(dry) && !json_is_boolean(dry)) {
        diag_set(d, NULL, 0, 0, "request.dryRun: expected a boolean, got %s", json_type_name(dry));
        return -1;
    }
    r->dry_run = json_is_true(dry);
    return 0;
}

/* Whether arrays and objects in body nest deeper than max, by a scan of the bytes (brackets in
 * strings do not count), before the parser and the recursive walks after it see the body. A
 * body that is not JSON may be counted wrong; the parser refuses it anyway. */
static bool nested_deeper(const char *p, size_t len, unsigned max)
{
    unsigned depth = 0;
    bool in_string = false;

    for (size_t i = 0; i < len; i++) {
        if (in_string) {
            if (p[i] == '\\')
                i++;
            else if (p[i] == '"')
                in_string = false;
        } else if (p[i] == '"') {
            in_string = true;
        } else if (p[i] == '[' || p[i] == '{') {
            if (++depth > max)
                return true;
        } else if ((p[i] == ']' || p[i] == '}') && depth > 0) {
            depth--;
        }
    }
    return false;
}

struct review *review_decode(const char *body, size_t len, struct diag *d)
{
    struct review *r = NULL;
    json_error_t jerr;
    json_t *root = NULL;
    const json_t *req;

    /* JSON_ALLOW_NUL: the apiserver encodes a NUL in a string as \u0000 and any annotation
     * may hold one; refusing it would be a call error, i.e. a bypass under failurePolicy Ignore */
    if (nested_deeper(body, len, REVIEW_DEPTH_MAX)) {
        diag_set(d, NULL, 0, 0, "review: arrays and objects nested deeper than %u levels",
                 REVIEW_DEPTH_MAX);
        goto fail;
    }
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (root == NULL) {
        /* jansson quotes the text near the error; it may be part of a Secret: leave it out */
        char *near = strstr(jerr.text, " near '");

        if (near != NULL)
            *near = '\0';
        diag_set(d, NULL, 0, 0, "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                 jerr.text);
        goto fail;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        diag_set(d, NULL, 0, 0, "out of memory");
        goto fail;
    }
    r->root = root;
    root = NULL;
    if (decode_envelope(r->root, r, d) < 0)
        goto fail;
    req = json_object_get(r->root, "request");
    if (req == NULL || json_is_null(req)) {
        diag_set(d, NULL, 0, 0, "review.request: missing");
        goto fail;
    }
    if (!json_is_object(req)) {
        diag_set(d, NULL, 0, 0, "review.request: expected an object, got %s", json_type_name(req));
        goto fail;
    }
    if (decode_request(req, r, d) < 0)
        goto fail;
    return r;
fail:
    json_decref(root);
    review_free(r);
    return NULL;
}

void review_free(struct review *r)
{
    if (r == NULL)
        return;
    json_decref(r->root);
    free(r);
}

void decision_init(struct decision *dec)
{
    memset(dec, 0, sizeof(*dec));
    dec->allowed = true;
}

void decision_release(struct decision *dec)
{
    free(dec->reason);
    free(dec->message);
    json_decref(dec->patch);
    json_decref(dec->warnings);
    json_decref(dec->annotations);
    free(dec->notes);
    memset(dec, 0, sizeof(*dec));
}

int decision_note(struct decision *dec, const struct rule *rule, int enforcement,
                  const char *outcome)
{
    struct decision_note *grown = realloc(dec->notes, (dec->n_notes + 1) * sizeof(*grown));

    if (grown == NULL)
        return -1;
    dec->notes = grown;
    dec->notes[dec->n_notes++] = (struct decision_note){rule, enforcement, outcome};
    return 0;
}

int decision_deny(struct decision *dec, int code, const char *message)
{
    char *m = text_utf8_clean(message ? message : "", (size_t)-1, false);

    if (m == NULL)
        return -1;
    free(dec->message);
    dec->message = m;
    dec->allowed = false;
    dec->code = code;
    return 0;
}

int decision_warn(struct decision *dec, const char *text)
{
    char *clean = text_utf8_clean(text ? text : "", WARNING_MAX_RUNES, true);
    size_t i;
    json_t *w;
    int rc = -1;

    if (clean == NULL)
        goto out;
    rc = 0;
    if (clean[0] == '\0')
        goto out;
    if (dec->warnings == NULL && (dec->warnings = json_array()) == NULL) {
        rc = -1;
        goto out;
    }
    json_array_foreach (dec->warnings, i, w) {
        if (strcmp(json_string_value(w), clean) == 0)
            goto out;
    }
    rc = json_array_append_new(dec->warnings, json_string(clean));
out:
    free(clean);
    return rc;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool review_audit_key_valid(const char *key)
{
    size_t n = key ? strlen(key) : 0;

    if (n == 0 || n > AUDIT_KEY_MAX || !is_alnum(key[0]) || !is_alnum(key[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        if (!is_alnum(key[i]) && key[i] != '-' && key[i] != '_' && key[i] != '.')
            return false;
    }
    return true;
}

int decision_annotate(struct decision *dec, const char *key, const char *value)
{
    json_t *v;

    if (!review_audit_key_valid(key))
        return -1;
    v = json_string(value ? value : "");
    if (v == NULL)
        return -1; /* not valid UTF-8 */
    if (dec->annotations == NULL && (dec->annotations = json_object()) == NULL) {
        json_decref(v);
        return -1;
    }
    return json_object_set_new(dec->annotations, key, v);
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

/* New string: standard padded base64 (RFC 4648) of the compact patch document. */
static char *patch_base64(const json_t *patch)
{
    char *doc = json_dumps(patch, JSON_COMPACT);
    char *b64 = NULL;
    size_t n;

    if (doc == NULL)
        return NULL;
    n = strlen(doc);
    b64 = malloc(4 * ((n + 2) / 3) + 1);
    if (b64 != NULL)
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)doc, (int)n);
    free(doc);
    return b64;
}

static int encode_status(json_t *resp, const struct decision *dec)
{
    int code = dec->code >= 400 ? dec->code : 403;
    const char *reason = dec->reason ? dec->reason : reason_for(code);

    return json_object_set_new(resp, "status",
                               json_pack("{s:i, s:s, s:s, s:s}", "code", code, "status", "Failure",
                                         "reason", reason, "message",
                                         dec->message ? dec->message : ""));
}

static int encode_patch(json_t *resp, const struct decision *dec)
{
    char *b64;
    int rc;

    if (!json_is_array(dec->patch) || json_array_size(dec->patch) == 0)
        return 0;
    b64 = patch_base64(dec->patch);
    if (b64 == NULL)
        return -1;
    rc = json_object_set_new(resp, "patchType", json_string("JSONPatch")) |
         json_object_set_new(resp, "patch", json_string(b64));
    free(b64);
    return rc;
}

int review_encode(const struct review *r, const struct decision *dec, bool mutating, char **out,
                  size_t *out_len)
{
    json_t *root = NULL, *resp;
    int rc = -1;

    *out = NULL;
    /* the uid goes back as the value it came in, byte for byte, NULs included */
    root = json_pack("{s:s, s:s, s:{s:O, s:b}}", "apiVersion",
                     r->version == REVIEW_V1 ? API_V1 : API_V1BETA1, "kind", "AdmissionReview",
                     "response", "uid", r->uid_json, "allowed", dec->allowed);
    if (root == NULL)
        goto out;
    resp = json_object_get(root, "response");
    if (!dec->allowed && encode_status(resp, dec) < 0)
        goto out;
    if (mutating && encode_patch(resp, dec) < 0)
        goto out;
    if (json_array_size(dec->warnings) > 0 && json_object_set(resp, "warnings", dec->warnings) < 0)
        goto out;
    if (json_object_size(dec->annotations) > 0 &&
        json_object_set(resp, "auditAnnotations", dec->annotations) < 0)
        goto out;
    *out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (*out == NULL)
        goto out;
    *out_len = strlen(*out);
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int review_status_body(int code, const char *reason, const char *message, char **out,
                       size_t *out_len)
{
    char *clean = text_utf8_clean(message ? message : "", (size_t)-1, false);
    json_t *st = NULL;

    *out = NULL;
    if (clean == NULL)
        return -1;
    st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                   "metadata", "status", "Failure", "message", clean, "reason",
                   reason ? reason : reason_for(code), "code", code);
    free(clean);
    if (st == NULL)
        return -1;
    *out = json_dumps(st, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(st);
    if (*out == NULL)
        return -1;
    *out_len = strlen(*out);
    return 0;
}
