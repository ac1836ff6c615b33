/*
 * test_json.c: json.c, the checks yyjson does not make (docs/json.md §2) and json_pack.
 *
 * The expected refusals are jansson 2.14's, which the project read with JSON_REJECT_DUPLICATES
 * until the move, and Go's encoding/json as the apiserver decodes (it refuses integers that do
 * not fit the field and keeps the last of repeated keys, so a first-wins reader would judge
 * another value than the one persisted: refusing is the only safe answer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"

static yyjson_doc *rd(const char *s, unsigned flags, unsigned depth, struct diag *d)
{
    diag_clear(d);
    return json_read(s, strlen(s), flags, depth, NULL, d);
}

static void read_refuses_what_yyjson_accepts(void)
{
    struct diag d;
    yyjson_doc *doc;

    /* yyjson keeps both and finds the first */
    CHECK(rd("{\"a\":1,\"a\":2}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "(root): duplicate key \"a\"");
    CHECK(rd("{\"x\":{\"b\":[1,{\"c\":1,\"c\":2}]}}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/x/b/1: duplicate key \"c\"");
    /* a key that escapes "/" and "~" is named as a JSON Pointer */
    CHECK(rd("{\"a/b~\":{\"k\":1,\"k\":1}}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/a~1b~0: duplicate key \"k\"");
    /* keys that differ only after a NUL are different keys */
    doc = rd("{\"a\\u0000x\":1,\"a\\u0000y\":2}", 0, 8, &d);
    CHECK(doc != NULL);
    yyjson_doc_free(doc);
    CHECK(rd("{\"a\\u0000x\":1,\"a\\u0000x\":2}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "(root): duplicate key \"a\\u0000x\"");

    /* past 64 bits yyjson would read a double */
    CHECK(rd("{\"n\":18446744073709551616}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/n: number out of range");
    CHECK(rd("{\"n\":[-9223372036854775809]}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/n/0: number out of range");
    CHECK(rd("{\"n\":1e999}", 0, 8, &d) == NULL);
    /* a uint64 past INT64_MAX fits no integer field of the API (jansson refused it too) */
    CHECK(rd("{\"n\":18446744073709551615}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/n: number out of range");
    CHECK(rd("{\"n\":9223372036854775808}", 0, 8, &d) == NULL);
    doc = rd("{\"n\":9223372036854775807,\"m\":-9223372036854775808}", 0, 8, &d);
    CHECK(doc != NULL);
    yyjson_doc_free(doc);

    /* a scalar or array root is not a review, a page or an event */
    CHECK(rd("12", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "expected a JSON object, got a number");
    CHECK(rd("[]", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "expected a JSON object, got an array");
    doc = rd("[1]", JSON_READ_ANY_ROOT, 8, &d);
    CHECK(doc != NULL && yyjson_is_arr(yyjson_doc_get_root(doc)));
    yyjson_doc_free(doc);
}

static void depth_is_capped(void)
{
    struct diag d;
    yyjson_doc *doc;
    char *deep;
    size_t n = 100000;

    /* the root is depth 1: four levels pass a cap of 4, five do not */
    doc = rd("{\"a\":[[{}]]}", 0, 4, &d);
    CHECK(doc != NULL);
    yyjson_doc_free(doc);
    CHECK(rd("{\"a\":[[[[]]]]}", 0, 4, &d) == NULL);
    CHECK_STR(d.msg, "arrays and objects nested deeper than 4 levels");
    /* siblings are as deep as each other: a container right after another is not inside it */
    doc = rd("{\"a\":[[1],[2],{}],\"b\":{}}", 0, 3, &d);
    CHECK(doc != NULL);
    yyjson_doc_free(doc);
    /* far deeper than any stack a recursive walk would survive, and past the C-stack frames */
    deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    CHECK(rd(deep, JSON_READ_ANY_ROOT, 200, &d) == NULL);
    CHECK_STR(d.msg, "arrays and objects nested deeper than 200 levels");
    CHECK(rd(deep, JSON_READ_ANY_ROOT, 0, &d) == NULL); /* 0: the walk's own maximum */
    free(deep);
}

static void errors_have_line_and_column(void)
{
    struct diag d;

    /* docs/json.md §1: `"b": ,` on line 3 */
    CHECK(rd("{\"a\": 1,\n\n \"b\": ,\n}", 0, 8, &d) == NULL);
    CHECK(d.line == 3 && d.column == 7);
    CHECK_CONTAINS(d.msg, "invalid JSON at 3:7: ");
    CHECK(rd("", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "invalid JSON: empty");
    CHECK(rd("{\"a\":[1,2", 0, 8, &d) == NULL);
    CHECK_CONTAINS(d.msg, "invalid JSON at 1:");
    /* trailing text after the object, unless a prefix is asked for */
    CHECK(rd("{} x", 0, 8, &d) == NULL);
}

static void refusals_say_where(void)
{
    struct diag d;
    char *buf;
    size_t n;
    const char *text = "{\"a\": 1,\n \"env\": [{\"name\": \"x\",\n   \"name\": \"y\"}],\n \"n\": "
                       "99999999999999999999}";

    /* the repeated key's own line and column, in a copy and in situ */
    CHECK(rd(text, 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/env/0: duplicate key \"name\"");
    CHECK(d.line == 3 && d.column == 4);
    n = strlen(text);
    buf = calloc(1, n + YYJSON_PADDING_SIZE);
    memcpy(buf, text, n);
    diag_clear(&d);
    CHECK(json_read(buf, n, JSON_READ_INSITU, 8, NULL, &d) == NULL);
    CHECK(d.line == 3 && d.column == 4);
    free(buf);
    /* a number past 64 bits keeps its text: it is found too */
    CHECK(rd("{\"a\": 1,\n \"n\": 99999999999999999999}", 0, 8, &d) == NULL);
    CHECK_STR(d.msg, "/n: number out of range");
    CHECK(d.line == 2 && d.column == 7);
}

static void prefix_reads_one_value(void)
{
    struct diag d;
    const char *two = "{\"a\":1} {\"b\":2}";
    yyjson_doc *doc = rd(two, JSON_READ_PREFIX, 8, &d);

    CHECK(doc != NULL);
    CHECK(doc && yyjson_doc_get_read_size(doc) == 7);
    yyjson_doc_free(doc);
}

static void insitu_reads_in_place(void)
{
    const char *text = "{\"k\":\"a\\nb\"}";
    size_t n = strlen(text);
    char *buf = calloc(1, n + YYJSON_PADDING_SIZE);
    struct diag d = {0};
    yyjson_doc *doc;
    const char *s;

    memcpy(buf, text, n);
    doc = json_read(buf, n, JSON_READ_INSITU, 8, NULL, &d);
    CHECK(doc != NULL);
    s = json_get_str(yyjson_doc_get_root(doc), "k");
    CHECK(s != NULL && strcmp(s, "a\nb") == 0);
    /* the string lives in the caller's buffer */
    CHECK(s >= buf && s < buf + n);
    yyjson_doc_free(doc);
    free(buf);
}

static void strings_and_integers(void)
{
    /* read by yyjson alone: json_read refuses "big", json_int64 must too where a document was
     * read some other way */
    static const char text[] = "{\"s\":\"a\\u0000b\",\"t\":\"ab\",\"max\":9223372036854775807,"
                               "\"big\":9223372036854775808,\"neg\":-3,\"r\":1.0}";
    yyjson_doc *doc = yyjson_read(text, sizeof(text) - 1, 0);
    yyjson_val *root = yyjson_doc_get_root(doc);
    int64_t v = 0;

    CHECK(doc != NULL);
    /* strcmp would see "a" */
    CHECK(!json_str_is(yyjson_obj_get(root, "s"), "a"));
    CHECK(json_str_is(yyjson_obj_get(root, "t"), "ab"));
    CHECK(!json_str_is(yyjson_obj_get(root, "t"), "abc"));
    CHECK(!json_str_is(yyjson_obj_get(root, "max"), "ab"));
    CHECK(json_int64(yyjson_obj_get(root, "max"), &v) && v == INT64_MAX);
    /* yyjson_get_sint would return INT64_MIN */
    CHECK(!json_int64(yyjson_obj_get(root, "big"), &v));
    CHECK(json_int64(yyjson_obj_get(root, "neg"), &v) && v == -3);
    CHECK(!json_int64(yyjson_obj_get(root, "r"), &v));
    CHECK(!json_int64(yyjson_obj_get(root, "t"), &v));
    CHECK(!json_int64(NULL, &v));
    CHECK_STR(json_type_desc(yyjson_obj_get(root, "r")), "a number");
    CHECK_STR(json_type_desc(root), "an object");
    CHECK_STR(json_type_desc(NULL), "nothing");
    yyjson_doc_free(doc);
}

static void pack_builds_and_copies(void)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_doc *src = yyjson_read("{\"x\":[1,2]}", 11, 0);
    char key[8] = "k1", val[8] = "v1";
    yyjson_mut_val *inner = yyjson_mut_arr(m), *v;
    char *out;

    yyjson_mut_arr_add_int(m, inner, 7);
    v = json_pack(m, "{s:s, s:I, s:b, s:s*, s:s?, s:[i, f], s:{s:s#}, s:o, s:V, s:o*}", key, val,
                  "n", (int64_t)-5, "t", 1, "gone", (const char *)NULL, "nul", (const char *)NULL,
                  "arr", 3, 1.5, "obj", "h", "abcdef", 2, "own", inner, "copy",
                  yyjson_doc_get_root(src), "none", (yyjson_mut_val *)NULL);
    /* keys and strings were copied: changing the sources changes nothing */
    strcpy(key, "XX");
    strcpy(val, "YY");
    out = json_mut_write(v, NULL);
    CHECK_STR(out, "{\"k1\":\"v1\",\"n\":-5,\"t\":true,\"nul\":null,\"arr\":[3,1.5],\"obj\":{\"h\":"
                   "\"ab\"},\"own\":[7],\"copy\":{\"x\":[1,2]}}");
    free(out);
    /* a repeated key replaces, as json_object_set did */
    v = json_pack(m, "{s:i, s:i}", "a", 1, "a", 2);
    out = json_mut_write(v, NULL);
    CHECK_STR(out, "{\"a\":2}");
    free(out);
    CHECK(json_mut_set(m, v, "a", yyjson_mut_sint(m, 3)) == 0);
    CHECK(json_mut_set(m, v, "b", yyjson_mut_sint(m, 4)) == 0);
    out = json_mut_write(v, NULL);
    CHECK_STR(out, "{\"a\":3,\"b\":4}");
    free(out);
    /* a NULL string without ? or * is an error, and so is a bad format */
    CHECK(json_pack(m, "{s:s}", "a", (const char *)NULL) == NULL);
    CHECK(json_pack(m, "{s:x}", "a", 1) == NULL);
    CHECK(json_pack(m, "{s:i", "a", 1) == NULL);
    CHECK(json_pack(m, "[i] i", 1, 2) == NULL);
    yyjson_doc_free(src);
    yyjson_mut_doc_free(m);
}

static void keep_and_freeze_own_their_copy(void)
{
    char *text = strdup("{\"labels\":{\"a\":\"b\"}}");
    yyjson_doc *page = yyjson_read(text, strlen(text), 0);
    yyjson_doc *kept = json_keep(yyjson_obj_get(yyjson_doc_get_root(page), "labels"));
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_doc *frozen;
    char *out;

    yyjson_doc_free(page);
    free(text);
    CHECK(kept != NULL);
    CHECK(json_str_is(yyjson_obj_get(yyjson_doc_get_root(kept), "a"), "b"));
    frozen = json_freeze(json_pack(m, "{s:[s]}", "k", "v"));
    yyjson_mut_doc_free(m);
    out = json_write(yyjson_doc_get_root(frozen), NULL);
    CHECK_STR(out, "{\"k\":[\"v\"]}");
    free(out);
    CHECK(json_keep(NULL) == NULL && json_freeze(NULL) == NULL);
    yyjson_doc_free(kept);
    yyjson_doc_free(frozen);
}

/* An object of n keys k0..k(n-1), then one more member, key extra (or none). */
static yyjson_doc *wide(int n, const char *extra, struct diag *d)
{
    static char buf[16384];
    size_t o = 0;

    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "{");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s\"k%d\":%d", i ? "," : "", i, i);
    if (extra != NULL)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, ",\"%s\":0", extra);
    snprintf(buf + o, sizeof(buf) - o, "}");
    return rd(buf, 0, 8, d);
}

static void wide_objects_are_checked_by_sorting(void)
{
    /* past the pairwise limit the check sorts (on the stack, then in a buffer of its own past
     * 256 members); a repeat far apart is still found, and so is the pair that sorts first */
    static const int sizes[] = {17, 100, 256, 500};
    struct diag d;
    yyjson_doc *doc;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        doc = wide(sizes[i], NULL, &d);
        CHECK(doc != NULL);
        yyjson_doc_free(doc);
        doc = wide(sizes[i], "k10", &d);
        CHECK(doc == NULL);
        CHECK_STR(d.msg, "(root): duplicate key \"k10\"");
        doc = wide(sizes[i], "k0", &d);
        CHECK(doc == NULL);
        CHECK_STR(d.msg, "(root): duplicate key \"k0\"");
    }
    /* a long key is shown cut */
    doc =
        rd("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1,"
           "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":2}",
           0, 8, &d);
    CHECK(doc == NULL);
    CHECK_STR(d.msg, "(root): duplicate key "
                     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"");
}

static void obj_foreach_on_nothing(void)
{
    yyjson_doc *doc = yyjson_read("{\"a\":1,\"b\":\"x\"}", 15, 0);
    yyjson_val *root = yyjson_doc_get_root(doc), *k, *v;
    size_t i, max, n = 0;

    /* an absent member, a string and an empty object visit nothing, and touch no pointer
     * (UBSan aborts on yyjson 0.10's own macro for NULL) */
    yyjson_obj_foreach (yyjson_obj_get(root, "none"), i, max, k, v)
        n++;
    yyjson_obj_foreach (yyjson_obj_get(root, "b"), i, max, k, v)
        n++;
    CHECK(n == 0);
    yyjson_obj_foreach (root, i, max, k, v) {
        CHECK(k != NULL && v != NULL);
        n++;
    }
    CHECK(n == 2);
    yyjson_doc_free(doc);
}

int main(void)
{
    RUN(read_refuses_what_yyjson_accepts);
    RUN(depth_is_capped);
    RUN(errors_have_line_and_column);
    RUN(refusals_say_where);
    RUN(prefix_reads_one_value);
    RUN(insitu_reads_in_place);
    RUN(strings_and_integers);
    RUN(pack_builds_and_copies);
    RUN(keep_and_freeze_own_their_copy);
    RUN(wide_objects_are_checked_by_sorting);
    RUN(obj_foreach_on_nothing);
    TEST_MAIN_END("test_json");
}
