/*
 * json.h: the project's JSON conventions on top of yyjson (docs/json.md has the library's facts).
 *
 * Reading: json_read() is the one way bytes become a document. It reads with fixed flags (never
 * the ALLOW_* ones), and refuses what yyjson accepts but the apiserver's decoder or a careful
 * webhook must not: duplicate keys (yyjson keeps them and a lookup finds the first, where Go's
 * encoding/json keeps the last), integers outside int64/uint64 (yyjson would turn them into
 * doubles), nesting deeper than the caller's cap (yyjson_equals and mutable copies recurse), and,
 * unless asked, a root that is not an object. Errors carry "LINE:COLUMN: text".
 *
 * Values read from a document (yyjson_val *) live as long as that document; every header that
 * hands them out says which document that is. Strings may hold NUL bytes ("\u0000"): compare
 * them with json_str_is() or (pointer, length), never strcmp on what yyjson_get_str returns when
 * the bytes matter.
 *
 * Building: output goes into a yyjson_mut_doc. json_pack() builds a value from a format in the
 * manner of jansson's json_pack, always copying strings and keys into the document, so a packed
 * value never borrows anything.
 */
#ifndef GPUADMIT_JSON_H
#define GPUADMIT_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yyjson.h>

#include "diag.h"

/* yyjson 0.10's yyjson_obj_foreach computes NULL + 1 when obj is NULL (yyjson.h:2055-2063),
 * which is undefined behaviour that UBSan aborts on, and every lookup of an absent member
 * yields NULL. This one is the same loop, touching no pointer when obj holds no member (NULL,
 * not an object, or empty). The other three foreach macros are safe as they are. */
#undef yyjson_obj_foreach
#define yyjson_obj_foreach(obj, idx, max, key, val)                                                \
    for ((idx) = 0, (max) = yyjson_obj_size(obj),                                                  \
        (key) = (max) ? unsafe_yyjson_get_first(obj) : NULL, (val) = (max) ? (key) + 1 : NULL;     \
         (idx) < (max); (idx)++, (key) = unsafe_yyjson_get_next(val), (val) = (key) + 1)

/* json_read() flags */
#define JSON_READ_ANY_ROOT 1u /* accept a root that is not an object (arrays, scalars) */
#define JSON_READ_INSITU                                                                           \
    2u /* parse in place: buf has YYJSON_PADDING_SIZE zero bytes after                             \
          len and outlives the document (docs/json.md §4) */
#define JSON_READ_PREFIX                                                                           \
    4u /* stop after the first value; yyjson_doc_get_read_size() says                              \
          how far it read */

/* A document from len bytes of buf, or NULL with d filled ("3:8: unexpected character"). max_depth
 * caps nesting (containers inside containers; the root is depth 1). alc may be NULL (libc). */
yyjson_doc *json_read(const char *buf, size_t len, unsigned flags, unsigned max_depth,
                      const yyjson_alc *alc, struct diag *d);

/* The checks json_read() makes after parsing, for a document read some other way: 0, or -1 with
 * d filled naming the JSON Pointer of the first offence. */
int json_validate(yyjson_val *root, unsigned max_depth, struct diag *d);

/* The string of v, or NULL when v is not a string. */
static inline const char *json_str(yyjson_val *v)
{
    return yyjson_get_str(v);
}

/* The string of member key of obj, or NULL when absent or not a string. */
static inline const char *json_get_str(yyjson_val *obj, const char *key)
{
    return yyjson_get_str(yyjson_obj_get(obj, key));
}

/* Whether v is the string s, byte for byte (a string with a NUL in it is never s). */
bool json_str_is(yyjson_val *v, const char *s);
bool json_mut_str_is(yyjson_mut_val *v, const char *s);

/* An integer that fits int64: true with *out set; false for anything else (reals, strings,
 * uint64 above INT64_MAX). */
bool json_int64(yyjson_val *v, int64_t *out);
bool json_mut_int64(yyjson_mut_val *v, int64_t *out);

/* "an object", "an array", "a string", "a number", "a boolean", "null", or "nothing" (NULL). */
const char *json_type_desc(yyjson_val *v);
const char *json_mut_type_desc(yyjson_mut_val *v);

/* A copy of v in a document of its own (free with yyjson_doc_free()), NULL when out of memory
 * or v is NULL. For what a cache keeps: a value borrowed from a list page would keep the whole
 * page alive. */
yyjson_doc *json_keep(yyjson_val *v);

/* A mutable document's value as an immutable document of its own; NULL when out of memory.
 * Recursive: only for values whose depth is already capped. */
yyjson_doc *json_freeze(yyjson_mut_val *v);

/*
 * Builds a value in doc from fmt, a subset of jansson's json_pack:
 *   {...} [...]   object, array; separators ',' ':' and blanks are ignored
 *   s   const char * (copied); "s?" NULL becomes null; "s*" in an object: member left out
 *   s#  const char *, int length (copied)
 *   i   int            I  int64_t           f  double           b  int (boolean)   n  null
 *   o   yyjson_mut_val * of doc itself (linked, not copied; it must not already be in a container)
 *   O   yyjson_mut_val * of another document (copied)
 *   V   yyjson_val * of an immutable document (copied)
 *   o, O and V take the same '?' (NULL becomes null) and '*' (member left out) suffixes.
 * Keys are 's' and always copied. NULL on a format error, a NULL string without '?' or '*', or
 * when out of memory.
 */
yyjson_mut_val *json_pack(yyjson_mut_doc *doc, const char *fmt, ...);
yyjson_mut_val *json_vpack(yyjson_mut_doc *doc, const char *fmt, va_list *ap);

/* obj[key] = val, replacing any member of that key (key copied). -1 when out of memory. */
int json_mut_set(yyjson_mut_doc *doc, yyjson_mut_val *obj, const char *key, yyjson_mut_val *val);

/* Compact JSON of v (NUL-terminated, *len without it; free with free()), or NULL. Fails on
 * NaN, infinities and invalid UTF-8, as the writer does by default. */
char *json_write(yyjson_val *v, size_t *len);
char *json_mut_write(yyjson_mut_val *v, size_t *len);
/* The same, indented by two spaces, for people. */
char *json_write_pretty(yyjson_val *v, size_t *len);
char *json_mut_write_pretty(yyjson_mut_val *v, size_t *len);

#endif
