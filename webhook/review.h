/*
 * review.h: the AdmissionReview codec (admission.k8s.io/v1 and v1beta1).
 *
 * review_decode() turns request bytes into a struct review; review_encode() turns a review and a
 * decision into the response bytes the apiserver accepts (PROTOCOL.md §3). A struct review owns
 * its yyjson document, and every const char * and yyjson_val * in it is borrowed from that
 * document, valid until review_free(). A struct decision owns one mutable document that holds
 * its patch, warnings and annotations.
 */
#ifndef GPUADMIT_REVIEW_H
#define GPUADMIT_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <yyjson.h>

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
    yyjson_doc *doc; /* owned */
    enum review_version version;
    const char *uid;
    yyjson_val *uid_json; /* the uid as sent, for the echo (it may hold a NUL) */
    struct review_gvk kind;
    struct review_gvr resource;
    const char *sub_resource; /* "" when absent */
    const char *name;         /* "" when absent (CREATE with generateName at the mutating stage) */
    const char *ns;           /* request.namespace; "" for cluster-scoped objects */
    enum review_op op;
    const char *username;   /* "" when absent */
    yyjson_val *groups;     /* array of strings, or NULL */
    yyjson_val *object;     /* NULL when absent or null (DELETE) */
    yyjson_val *old_object; /* NULL when absent or null (CREATE, CONNECT) */
    yyjson_val *options;    /* NULL when absent or null */
    bool dry_run;
};

struct rule; /* policy.h */

/* Notes a decision keeps without a malloc; more go to the heap. */
#define DECISION_NOTES_INLINE 8

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
    yyjson_mut_doc *out; /* owned: holds patch, warnings and annotations; NULL until one
                            of them is made */
    yyjson_mut_val *patch;       /* array of RFC 6902 operations in out, or NULL */
    yyjson_mut_val *warnings;    /* array of strings in out, or NULL */
    yyjson_mut_val *annotations; /* object of string values in out, or NULL */
    struct decision_note *notes; /* n_notes long, or NULL: notes_inline, or owned past it */
    size_t n_notes;
    struct decision_note notes_inline[DECISION_NOTES_INLINE]; /* the first ones, no malloc */
    const yyjson_alc *alc; /* out's and review_encode's allocator (borrowed); NULL: libc's */
};

/* New review on success (free with review_free()); NULL with d filled on any malformed input.
 * The messages name the offending field, e.g. "request.uid: missing". */
struct review *review_decode(const char *body, size_t len, struct diag *d);
void review_free(struct review *r);

/* The same into caller's storage r, for the server: flags are json_read()'s (JSON_READ_INSITU:
 * body then has YYJSON_PADDING_SIZE zero bytes after len, and both body and alc outlive the
 * review); the document comes from alc (NULL: libc). 0, or -1 with d filled and r empty. Undo
 * with review_release() (r itself is the caller's). */
int review_decode_in(struct review *r, char *body, size_t len, unsigned flags,
                     const yyjson_alc *alc, struct diag *d);
void review_release(struct review *r);

const char *review_op_name(enum review_op op);

void decision_init(struct decision *dec);
/* The same with out (and review_encode's working documents) on alc, borrowed: a per-thread
 * arena on the server. decision_release() keeps it for the next decision. */
void decision_init_alc(struct decision *dec, const yyjson_alc *alc);
void decision_release(struct decision *dec);
/* dec->out, made on first use; NULL when out of memory. */
yyjson_mut_doc *decision_doc(struct decision *dec);
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

/*
 * A worker thread's memory for reviews, so that one costs no malloc once the thread has served
 * one (issue 18): a pool that any body of up to REVIEW_POOL_BODY_BYTES is read into in situ
 * (sized by yyjson_read_max_memory_usage, so such a read never runs out), and a growing
 * allocator (yyjson_alc_dyn) for the decision's document, the working copies and the response
 * document. Neither is thread-safe: one per thread, freed when the thread ends.
 */
struct review_arena {
    yyjson_alc pool; /* one document at a time: the review being read */
    yyjson_alc *dyn; /* the decision's and the response's documents */
    void *buf;       /* pool's memory */
    size_t size;
};

/* This thread's arena, made on first use; NULL when out of memory (read with libc then). */
struct review_arena *review_thread_arena(void);
/* The allocator to read len bytes in situ with: the pool when they fit it, else NULL (libc). The
 * choice is made before reading, never by a retry: an in-situ read that failed half way has
 * unescaped part of the body in place already. */
const yyjson_alc *review_arena_reader(struct review_arena *a, size_t len);

/* Encodes the response for r. A patch is sent only when mutating is true and the patch has at
 * least one operation; a validating response never carries patch or patchType.
 * *out is new (free with free()). Returns 0, or -1 on allocation failure. */
int review_encode(const struct review *r, const struct decision *dec, bool mutating, char **out,
                  size_t *out_len);

/* A metav1.Status body for an HTTP error (400, 404, 413, ...). *out is new (free with free()). */
int review_status_body(int code, const char *reason, const char *message, char **out,
                       size_t *out_len);

#endif
