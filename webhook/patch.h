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

#include <jansson.h>
#include <stddef.h>

#include "diag.h"

#define PATCH_PATH_MAX 512

struct patch {
    json_t *ops; /* owned array of operations */
    json_t *doc; /* the working copy: a reference, shared until the first operation */
};

/* Takes a reference to doc; the first patch_add() that finds it shared (anyone else holds a
 * reference) deep-copies it first, so doc itself is never changed. Most objects need no patch,
 * and a deep copy of a pod costs about a quarter of parsing it. Pointers into p->doc taken
 * before a patch_add() may point into the old, unpatched object after it: look again.
 * Returns 0, or -1 on allocation failure. */
int patch_init(struct patch *p, const json_t *doc);
void patch_release(struct patch *p);

/* Appends one escaped token to a pointer held in buf (NUL-terminated, size len). -1 when it
 * does not fit. */
int patch_ptr_append(char *buf, size_t len, const char *token);

/* "add" value (stolen) at path: applied to the working copy and recorded. -1 when the parent
 * does not exist in the working copy (nothing is recorded then). */
int patch_add(struct patch *p, const char *path, json_t *value);

/* The value at path in doc (borrowed), or NULL. */
json_t *patch_get(json_t *doc, const char *path);

/* Applies an RFC 6902 JSON Patch (every operation: add, remove, replace, move, copy, test) to
 * a copy of doc, as the apiserver applies a webhook's patch: all or nothing. New value, or NULL
 * with d filled ("operation 2 (remove /spec/x): ... does not exist"). */
json_t *patch_apply(const json_t *doc, const json_t *ops, struct diag *d);

#endif
