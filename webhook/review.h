/*
 * review.h: the AdmissionReview codec (admission.k8s.io/v1 and v1beta1).
 *
 * review_decode() turns request bytes into a struct review; review_encode() turns a review and a
 * decision into the response bytes the apiserver accepts (PROTOCOL.md §3). Ownership follows
 * jansson: a struct review owns its JSON root, and every const char * and json_t * in it is
 * borrowed from that root, valid until review_free().
 */
#ifndef GPUADMIT_REVIEW_H
#define GPUADMIT_REVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

enum review_version { REVIEW_V1, REVIEW_V1BETA1 };

enum review_op { REVIEW_CREATE, REVIEW_UPDATE, REVIEW_DELETE, REVIEW_CONNECT };

struct review_gvk {
    const char *group; /* "" for the core group */
    const char *version;
    const char *kind;
};

struct review_gvr {
    const char *group;
    const char *version;
    const char *resource;
};

struct review {
    json_t *root; /* owned */
    enum review_version version;
    const char *uid;
    json_t *uid_json; /* the uid as sent, for the echo (it may hold a NUL) */
    struct review_gvk kind;
    struct review_gvr resource;
    const char *sub_resource; /* "" when absent */
    const char *name;         /* "" when absent (CREATE with generateName at the mutating stage) */
    const char *ns;           /* request.namespace; "" for cluster-scoped objects */
    enum review_op op;
    const char *username; /* "" when absent */
    json_t *groups;       /* array of strings, or NULL */
    json_t *object;       /* NULL when absent or null (DELETE) */
    json_t *old_object;   /* NULL when absent or null (CREATE, CONNECT) */
    json_t *options;      /* NULL when absent or null */
    bool dry_run;
};

struct rule; /* policy.h */

/* One rule finding, as its "decision" log line has it, for the metrics. */
struct decision_note {
    const struct rule *rule; /* borrowed from the policy the decision was made with */
    int enforcement;         /* enum rule_enforcement, as logged */
    const char *outcome;     /* static: "deny", "patch", "warn", "would_deny", "would_patch" */
};

/* What the policy decided about one review. Fields start zeroed by decision_init(). */
struct decision {
    bool allowed;
    int code;            /* HTTP-style code of a denial; 403 when 0 */
    char *reason;        /* metav1 StatusReason of a denial, e.g. "Forbidden"; owned, may be NULL */
    char *message;       /* owned, may be NULL */
    json_t *patch;       /* owned JSON array of RFC 6902 operations, or NULL */
    json_t *warnings;    /* owned array of strings, or NULL */
    json_t *annotations; /* owned object of string values, or NULL */
    struct decision_note *notes; /* owned array, n_notes long, or NULL */
    size_t n_notes;
};

/* New review on success (free with review_free()); NULL with d filled on any malformed input.
 * The messages name the offending field, e.g. "request.uid: missing". */
struct review *review_decode(const char *body, size_t len, struct diag *d);
void review_free(struct review *r);

const char *review_op_name(enum review_op op);

void decision_init(struct decision *dec);
void decision_release(struct decision *dec);
/* Deny with a message (copied). code 0 means 403 Forbidden. */
int decision_deny(struct decision *dec, int code, const char *message);
/* A warning as the apiserver will show it: control characters become spaces (the apiserver
 * silently drops a warning that has any) and the text is cut to WARNING_MAX_RUNES runes. Empty and
 * duplicate warnings are skipped, as the apiserver would. */
int decision_warn(struct decision *dec, const char *text);
/* An audit annotation; -1 when the key is not a valid qualified-name part (PROTOCOL.md §5). */
int decision_annotate(struct decision *dec, const char *key, const char *value);
bool review_audit_key_valid(const char *key);
/* Records a finding (see struct decision_note); -1 when out of memory. */
int decision_note(struct decision *dec, const struct rule *rule, int enforcement,
                  const char *outcome);

/* Encodes the response for r. A patch is sent only when mutating is true and the patch has at
 * least one operation; a validating response never carries patch or patchType.
 * *out is new (free with free()). Returns 0, or -1 on allocation failure. */
int review_encode(const struct review *r, const struct decision *dec, bool mutating, char **out,
                  size_t *out_len);

/* A metav1.Status body for an HTTP error (400, 404, 413, ...). *out is new (free with free()). */
int review_status_body(int code, const char *reason, const char *message, char **out,
                       size_t *out_len);

#endif
