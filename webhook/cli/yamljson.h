/*
 * yamljson.h: multi-document YAML (or JSON) into yyjson documents, with positions.
 *
 * For Kubernetes manifests and the CLI's own files (test suites). Reads with the bounded YAML
 * reader (yamltree.h) and caps what a file may cost (bounds.h: size, nesting, nodes, documents).
 * Scalars resolve as YAML 1.2's core schema (yamltree_resolve), which is what kubectl
 * (sigs.k8s.io/yaml) accepts in practice: quoted and block scalars are strings; a plain scalar
 * is null (`null`, `~`, empty),
 * a boolean (`true`/`false` in three casings; YAML 1.1's yes/no/on/off stay strings), an
 * integer (decimal, 0o octal, 0x hex; outside int64 is an error), a float, or else a string.
 * `.inf` and `.nan` are errors (JSON has neither). Explicit core tags (!!str, !!int, ...) are
 * honoured, others refused. Anchors and aliases are refused (an alias can multiply a small file
 * into a huge tree), and so are duplicate keys and keys that are not scalars. Text whose first
 * character is '{' or '[' is read as JSON (one or more values one after another), so that
 * kubectl's JSON output, tabs and all, reads as it is.
 *
 * Errors are "FILE:LINE:COLUMN: document N: message" in a struct diag (1-based positions).
 *
 * Ownership: a struct yamljson owns its documents and everything in them; values are borrowed
 * from it until yamljson_free().
 */
#ifndef GPUADMIT_YAMLJSON_H
#define GPUADMIT_YAMLJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <yyjson.h>

#include "diag.h"

/* Record where every node starts, for yamljson_mark() (YAML input only). */
#define YAMLJSON_MARKS 1u

struct yamljson_doc {
    yyjson_doc *doc;        /* owned */
    yyjson_val *value;      /* its root; never JSON null: empty documents are left out */
    unsigned index;         /* 1-based number of the document in the file */
    unsigned line, column;  /* where its content starts */
    yyjson_doc *marks;      /* owned: {JSON Pointer: [line, column]}, or NULL */
    yyjson_val **mark_keys; /* owned: the keys of marks, sorted, for yamljson_mark()'s binary
                               search (yyjson's lookups are linear); NULL without marks */
    size_t n_marks;
};

struct yamljson {
    struct yamljson_doc *docs;
    size_t n;
};

/* Parses text (len bytes; NUL bytes in it are an error); name is the file name in messages.
 * 0, or -1 with d filled; out is empty after a failure. */
int yamljson_parse(const char *name, const char *text, size_t len, unsigned flags,
                   struct yamljson *out, struct diag *d);
/* The same for a file, or standard input when path is "-" (named "<stdin>" in messages). */
int yamljson_read_file(const char *path, unsigned flags, struct yamljson *out, struct diag *d);
void yamljson_free(struct yamljson *y);

/* What the plain scalar s (len bytes) resolves to: *out is new, in doc; -1 with *why set (static
 * text) for an integer out of range or a float JSON cannot hold. */
int yamljson_resolve_plain(yyjson_mut_doc *doc, const char *s, size_t len, yyjson_mut_val **out,
                           const char **why);

/* The JSON Pointer of item i of the List at ptr ("" for the root), into out (len bytes, room
 * for YAMLJSON_POINTER_MAX); "" when it does not fit, so that the item gets its document's start.
 */
void yamljson_item_pointer(char *out, size_t len, const char *ptr, size_t i);

/* Where the node at ptr (a JSON Pointer, "" for the root) starts; false when unknown. */
bool yamljson_mark(const struct yamljson_doc *doc, const char *ptr, unsigned *line,
                   unsigned *column);

#endif
