/*
 * review.h: the AdmissionReview codec (admission.k8s.io/v1 and v1beta1).
 *
 * review_decode() turns request bytes into a struct review; review_encode() turns a review and a
 * decision into the response bytes the apiserver accepts (docs/protocol.md §3). A struct review
 * owns its yyjson document, and every const char * and yyjson_val * in it is borrowed from that
 * document, valid until review_free(). The decision it encodes is decision.h's.
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

struct decision; /* decision.h */

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
/* Whether the request is for resource in group ("" for the core group). */
bool review_gvr_is(const struct review *r, const char *group, const char *resource);
/* The object's metadata.name, else request.name: borrowed from the review. */
const char *review_object_name(const struct review *r);

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
