/*
 * patch.h: building an RFC 6902 JSON Patch while applying it to a working copy of the object,
 * so that each rule judges the object as the patches before it left it, and the operations
 * apply cleanly, in order, to the exact object the apiserver sent.
 *
 * Only "add" is produced: it creates a missing member or replaces an existing one, and with the
 * "/-" index appends to an array. Paths are JSON Pointers (RFC 6901): a token's "~" is written
 * "~0" and "/" is written "~1" ("nvidia.com/gpu" -> "nvidia.com~1gpu").
 */
#ifndef GPUADMIT_PATCH_H
#define GPUADMIT_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <yyjson.h>

#include "diag.h"

#define PATCH_PATH_MAX 512
/* Operations a patch makes before its list of frozen copies needs a malloc (a review's patch
 * has a handful). */
#define PATCH_FROZEN_INLINE 16

struct patch {
    /* The object as the patches so far left it, once patch_sync() has run: the original until
     * the first patch_add(), then the root of an immutable copy of work made by patch_sync().
     * Every such copy lives until patch_release(), so a pointer taken before a patch_add()
     * stays valid, but may point into the unpatched object: look again. */
    yyjson_val *doc;
    bool stale;           /* work has operations doc does not show yet */
    yyjson_mut_doc *out;  /* where ops and the values given to patch_add() live */
    bool own_out;         /* out was made by patch_init() and is freed by patch_release() */
    yyjson_mut_val *ops;  /* array of operations in out */
    yyjson_mut_doc *work; /* the working copy, made at the first patch_add() */
    yyjson_doc **frozen;  /* the copies doc has pointed into, n_frozen of them: frozen_inline, or
                             on the heap past PATCH_FROZEN_INLINE */
    size_t n_frozen, cap_frozen;
    yyjson_doc *frozen_inline[PATCH_FROZEN_INLINE];
    const yyjson_alc *alc; /* work's and the copies' allocator; NULL: libc's */
};

/* Starts a patch of doc (borrowed: it must outlive the patch; never changed). Operations are
 * recorded into out, borrowed (a decision's document, which then owns them), or with out NULL
 * into a document of the patch's own. Nothing is copied until the first patch_add(): most
 * objects need no patch. alc (may be NULL) is kept for the working copy. Returns 0, or -1 on
 * allocation failure. */
int patch_init(struct patch *p, yyjson_val *doc, yyjson_mut_doc *out, const yyjson_alc *alc);
void patch_release(struct patch *p);

/* Appends one escaped token to a pointer held in buf (NUL-terminated, size len). -1 when it
 * does not fit. */
int patch_ptr_append(char *buf, size_t len, const char *token);

/* "add" value at path: applied to the working copy and recorded. value is a value of p->out
 * that is in no container yet (json_pack(p->out, ...)); the operation takes it, the working
 * copy gets a copy of it. -1 when the parent does not exist in the working copy or when out of
 * memory (nothing is recorded then). p->doc shows it after the next patch_sync(): several
 * operations in a row cost one copy of the object. */
int patch_add(struct patch *p, const char *path, yyjson_mut_val *value);

/* Makes p->doc the patched object (a new immutable copy of the working copy, when operations
 * were added since the last). 0, or -1 when out of memory (p->doc is the last copy then). */
int patch_sync(struct patch *p);

/* The value at path in doc (borrowed from doc's document), or NULL. */
yyjson_val *patch_get(yyjson_val *doc, const char *path);

/* Applies an RFC 6902 JSON Patch (every operation: add, remove, replace, move, copy, test) to
 * a copy of doc, as the apiserver applies a webhook's patch: all or nothing. A new document
 * (yyjson_doc_free()) whose root is the patched value, or NULL
 * with d filled ("operation 2 (remove /spec/x): ... does not exist"). */
yyjson_doc *patch_apply(yyjson_val *doc, yyjson_val *ops, struct diag *d);

#endif
