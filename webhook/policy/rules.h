/*
 * rules.h: the loader of GPUPolicy rule files (rules/README.md) into a struct policy.
 *
 * A load reads YAML with libyaml's event API, refuses anchors, aliases and non-core tags, caps
 * nesting, size and counts, checks every key, type and value against the format, and collects
 * every error it finds (up to RULES_ERRORS_MAX, each "file:line:column: message" with the key
 * path) instead of stopping at the first. It returns a whole policy or none: any error means NULL.
 *
 * Ownership: a returned policy is new (refs = 1, generation 0): release it with policy_unref(),
 * or policy_free() while it was never shared. Every string in it is owned by it. The errors live
 * in caller-owned storage.
 */
#ifndef GPUADMIT_RULES_H
#define GPUADMIT_RULES_H

#include <stddef.h>

#include "diag.h"
#include "bounds.h"
#include "policy.h"

/* The bounds of one load (RULES_*_MAX: size, depth, nodes, files, rules, errors) are in
 * bounds.h; these size the messages. */
#define RULES_VALUE_SHOWN 64u  /* bytes of a bad value quoted in a message */
#define RULES_PATH_MAX    256u /* a key path in a message, e.g. spec.rules[3] */

struct rules_errors {
    size_t n;       /* items used */
    size_t dropped; /* errors found past RULES_ERRORS_MAX */
    struct diag items[RULES_ERRORS_MAX];
};

void rules_errors_clear(struct rules_errors *e);

/* The loaders below clear errs first. errs may be NULL when the caller only wants the verdict. */

/* Loads every *.yaml / *.yml file directly in dir (sorted by name; dotfiles ignored). New policy
 * (refs = 1, generation 0) or NULL with errors filled. */
struct policy *rules_load_dir(const char *dir, struct rules_errors *errs);
/* The same for an explicit list of files. */
struct policy *rules_load_files(const char *const *paths, size_t n, struct rules_errors *errs);
/* From a buffer; name is used as the file name in messages (tests, stdin). */
struct policy *rules_load_buffer(const char *name, const char *text, size_t len,
                                 struct rules_errors *errs);

#endif
