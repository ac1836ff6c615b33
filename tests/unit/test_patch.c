/* test_patch.c: the JSON Patch builder and the RFC 6902 applier, against the RFC's own examples
 * (Appendix A). */
#include <yyjson.h>

#include "json.h"

#include "harness.h"
#include "patch.h"

#define js harness_json

/* Applies patch to doc; when want is NULL the patch must fail with a message containing err. */
static void apply(const char *doc, const char *patch, const char *want, const char *err)
{
    yyjson_doc *d = js(doc), *p = js(patch), *w = want ? js(want) : NULL, *got;
    struct diag dg;

    diag_clear(&dg);
    got = patch_apply(harness_val(d), harness_val(p), &dg);
    if (w != NULL) {
        bool same = got != NULL && yyjson_equals(harness_val(got), harness_val(w));

        CHECK(same);
        if (!same) {
            char *s = got ? json_write(harness_val(got), NULL) : NULL;

            printf("  patch %s: got %s (%s)\n", patch, s ? s : "NULL", dg.msg);
            free(s);
        }
    } else {
        CHECK(got == NULL);
        CHECK_CONTAINS(dg.msg, err);
    }
    /* the input is never changed */
    yyjson_doc *again = js(doc);
    CHECK(yyjson_equals(harness_val(d), harness_val(again)));
    yyjson_doc_free(again);
    yyjson_doc_free(d);
    yyjson_doc_free(p);
    yyjson_doc_free(w);
    yyjson_doc_free(got);
}

static void test_rfc6902_appendix_a(void)
{
    /* A.1 - A.16 */
    apply("{'foo': 'bar'}", "[{'op': 'add', 'path': '/baz', 'value': 'qux'}]",
          "{'baz': 'qux', 'foo': 'bar'}", NULL);
    apply("{'foo': ['bar', 'baz']}", "[{'op': 'add', 'path': '/foo/1', 'value': 'qux'}]",
          "{'foo': ['bar', 'qux', 'baz']}", NULL);
    apply("{'baz': 'qux', 'foo': 'bar'}", "[{'op': 'remove', 'path': '/baz'}]", "{'foo': 'bar'}",
          NULL);
    apply("{'foo': ['bar', 'qux', 'baz']}", "[{'op': 'remove', 'path': '/foo/1'}]",
          "{'foo': ['bar', 'baz']}", NULL);
    apply("{'baz': 'qux', 'foo': 'bar'}", "[{'op': 'replace', 'path': '/baz', 'value': 'boo'}]",
          "{'baz': 'boo', 'foo': 'bar'}", NULL);
    apply("{'foo': {'bar': 'baz', 'waldo': 'fred'}, 'qux': {'corge': 'grault'}}",
          "[{'op': 'move', 'from': '/foo/waldo', 'path': '/qux/thud'}]",
          "{'foo': {'bar': 'baz'}, 'qux': {'corge': 'grault', 'thud': 'fred'}}", NULL);
    apply("{'foo': ['all', 'grass', 'cows', 'eat']}",
          "[{'op': 'move', 'from': '/foo/1', 'path': '/foo/3'}]",
          "{'foo': ['all', 'cows', 'eat', 'grass']}", NULL);
    apply("{'baz': 'qux', 'foo': ['a', 2, 'c']}",
          "[{'op': 'test', 'path': '/baz', 'value': 'qux'}, {'op': 'test', 'path': '/foo/1', "
          "'value': 2}]",
          "{'baz': 'qux', 'foo': ['a', 2, 'c']}", NULL);
    apply("{'baz': 'qux'}", "[{'op': 'test', 'path': '/baz', 'value': 'bar'}]", NULL,
          "operation 1 (test /baz): the test failed");
    apply("{'foo': 'bar'}", "[{'op': 'add', 'path': '/child', 'value': {'grandchild': {}}}]",
          "{'foo': 'bar', 'child': {'grandchild': {}}}", NULL);
    apply("{'foo': 'bar'}", "[{'op': 'add', 'path': '/baz', 'value': 'qux', 'xyz': 123}]",
          "{'foo': 'bar', 'baz': 'qux'}", NULL);
    apply("{'foo': 'bar'}", "[{'op': 'add', 'path': '/baz/bat', 'value': 'qux'}]", NULL,
          "the parent does not exist");
    apply("{'/': 9, '~1': 10}", "[{'op': 'test', 'path': '/~01', 'value': 10}]",
          "{'/': 9, '~1': 10}", NULL);
    apply("{'/': 9, '~1': 10}", "[{'op': 'test', 'path': '/~01', 'value': '10'}]", NULL,
          "the test failed");
    apply("{'foo': ['bar']}", "[{'op': 'add', 'path': '/foo/-', 'value': ['abc', 'def']}]",
          "{'foo': ['bar', ['abc', 'def']]}", NULL);
}

static void test_apply_errors(void)
{
    apply("{'a': [1]}", "[{'op': 'add', 'path': '/a/2', 'value': 0}]", NULL, "out of range");
    apply("{'a': [1]}", "[{'op': 'add', 'path': '/a/01', 'value': 0}]", NULL, "out of range");
    apply("{'a': 1}", "[{'op': 'remove', 'path': '/b'}]", NULL, "does not exist");
    apply("{'a': 1}", "[{'op': 'replace', 'path': '/b', 'value': 2}]", NULL, "does not exist");
    apply("{'a': {'b': 1}}", "[{'op': 'move', 'from': '/a', 'path': '/a/b/c'}]", NULL,
          "proper prefix");
    apply("{'a': 1}", "[{'op': 'frobnicate', 'path': '/a'}]", NULL, "unknown operation");
    apply("{'a': 1}", "[{'op': 'add', 'path': 'a', 'value': 1}]", NULL, "start with '/'");
    apply("{'a': 1}", "[{'op': 'add', 'path': '/b'}]", NULL, "\"value\" is missing");
    apply("{'a': 1}", "[{'op': 'copy', 'path': '/b'}]", NULL, "\"from\" is missing");
    apply("{'a': 1}", "[{'op': 'add', 'path': '/b', 'value': 2}, {'op': 'remove', 'path': '/c'}]",
          NULL, "operation 2 (remove /c)");
    apply("{'a': 1}", "{'op': 'add'}", NULL, "must be an array");
    apply("{'a': 1}", "[1]", NULL, "not an object");
    /* the whole document */
    apply("{'a': 1}", "[{'op': 'replace', 'path': '', 'value': [1]}]", "[1]", NULL);
    apply("{'a': 1}", "[{'op': 'remove', 'path': ''}]", NULL, "cannot be removed");
    apply("{'a': {'b': [1, 2]}}", "[{'op': 'copy', 'from': '/a/b', 'path': '/c'}]",
          "{'a': {'b': [1, 2]}, 'c': [1, 2]}", NULL);
    /* 1 is not 1.0 */
    apply("{'a': 1}", "[{'op': 'test', 'path': '/a', 'value': 1.0}]", NULL, "the test failed");
}

/* RFC 6902 section 4.1: "add" onto a member that exists replaces it, where yyjson 0.10's own
 * yyjson_patch() appends a second member of that key (docs/json.md §2.5): the patch applied
 * twice gives what it gave once. */
static void test_add_replaces(void)
{
    yyjson_doc *d = js("{'a': {'b': [1, 2, 3]}}");
    yyjson_doc *p = js("[{'op': 'add', 'path': '/a/b', 'value': 9}]");
    yyjson_doc *once, *twice;
    struct diag dg;

    diag_clear(&dg);
    once = patch_apply(harness_val(d), harness_val(p), &dg);
    twice = once ? patch_apply(harness_val(once), harness_val(p), &dg) : NULL;
    CHECK(once != NULL && twice != NULL);
    CHECK(once != NULL && yyjson_obj_size(yyjson_obj_get(harness_val(once), "a")) == 1);
    CHECK(twice != NULL && yyjson_equals(harness_val(once), harness_val(twice)));
    CHECK(once != NULL && yyjson_is_int(patch_get(harness_val(once), "/a/b")));
    yyjson_doc_free(once);
    yyjson_doc_free(twice);
    yyjson_doc_free(d);
    yyjson_doc_free(p);
}

/* A document nested past the cap is refused, not handed to yyjson's recursive copy. */
static void test_apply_depth(void)
{
    char text[8192];
    size_t n = 0;
    yyjson_doc *d, *p;
    struct diag dg;

    n += (size_t)snprintf(text, sizeof(text), "{'a':");
    for (int i = 0; i < 127; i++)
        text[n++] = '[';
    for (int i = 0; i < 127; i++)
        text[n++] = ']';
    memcpy(text + n, "}", 2);
    d = js(text);
    /* 128 levels: copied as it is; one more by a copy into itself is refused */
    p = js("[{'op': 'copy', 'from': '/a', 'path': '/b'}]");
    diag_clear(&dg);
    yyjson_doc *got = patch_apply(harness_val(d), harness_val(p), &dg);
    CHECK(got != NULL);
    yyjson_doc_free(got);
    yyjson_doc_free(p);
    p = js("[{'op': 'copy', 'from': '', 'path': '/b'}]");
    diag_clear(&dg);
    CHECK(patch_apply(harness_val(d), harness_val(p), &dg) == NULL);
    CHECK_CONTAINS(dg.msg, "nests deeper than 128 levels");
    yyjson_doc_free(p);
    yyjson_doc_free(d);
}

/* What the webhook emits, applied back, gives the working copy it built; the object it started
 * from is left as it was, and pointers into earlier states stay readable. */
static void test_builder_round_trip(void)
{
    yyjson_doc *doc = js("{'spec': {'tolerations': [{'key': 'a'}]}}"), *ops, *got;
    yyjson_val *before;
    struct patch p;
    struct diag d;

    CHECK(patch_init(&p, harness_val(doc), NULL, NULL) == 0);
    CHECK(p.doc == harness_val(doc)); /* nothing copied before the first add */
    before = patch_get(p.doc, "/spec/tolerations");
    CHECK(patch_add(&p, "/spec/tolerations/-",
                    json_pack(p.out, "{s:s}", "key", "nvidia.com/gpu")) == 0);
    CHECK(patch_add(&p, "/spec/nodeSelector",
                    json_pack(p.out, "{s:s}", "nvidia.com/gpu.present", "true")) == 0);
    CHECK(patch_add(&p, "/spec/nodeSelector/x~1y", yyjson_mut_strcpy(p.out, "z")) == 0);
    /* add onto a member that is there replaces it */
    CHECK(patch_add(&p, "/spec/nodeSelector/x~1y", yyjson_mut_strcpy(p.out, "w")) == 0);
    CHECK(patch_add(&p, "/nope/x", yyjson_mut_strcpy(p.out, "z")) == -1);
    CHECK(yyjson_mut_arr_size(p.ops) == 4);
    CHECK(p.doc == harness_val(doc)); /* not shown before patch_sync */
    CHECK(patch_sync(&p) == 0);
    CHECK(yyjson_obj_size(patch_get(p.doc, "/spec/nodeSelector")) == 2);
    CHECK(json_str_is(patch_get(p.doc, "/spec/nodeSelector/x~1y"), "w"));
    CHECK(yyjson_arr_size(patch_get(p.doc, "/spec/tolerations")) == 2);
    CHECK(yyjson_arr_size(before) == 1);
    CHECK(yyjson_arr_size(patch_get(harness_val(doc), "/spec/tolerations")) == 1);
    diag_clear(&d);
    ops = json_freeze(p.ops);
    got = ops ? patch_apply(harness_val(doc), harness_val(ops), &d) : NULL;
    CHECK(got != NULL && yyjson_equals(harness_val(got), p.doc));
    yyjson_doc_free(got);
    yyjson_doc_free(ops);
    patch_release(&p);
    yyjson_doc_free(doc);
}

/* JSON Pointer tokens (RFC 6901, section 3): "~" is written "~0" and "/" is written "~1", "~"
 * first, so that a key holding "~1" comes back as "~01" and not as "/". Annotation and label
 * keys hold "/" ("nvidia.com/gpu"); "~" is rare, but legal in a key. Each pointer is applied
 * back (section 4 evaluates it) and must name the very key it was made from. */
static void test_pointer_escapes(void)
{
    static const struct {
        const char *token, *want;
    } cases[] = {
        {"nvidia.com/gpu", "/metadata/nvidia.com~1gpu"},
        {"a~b", "/metadata/a~0b"},
        {"~1", "/metadata/~01"},
        {"/~", "/metadata/~1~0"},
        {"~", "/metadata/~0"},
        {"plain", "/metadata/plain"},
    };
    char buf[PATCH_PATH_MAX];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        yyjson_doc *doc = js("{'metadata':{}}"), *ops, *got;
        yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
        struct diag d;

        snprintf(buf, sizeof(buf), "/metadata");
        CHECK(patch_ptr_append(buf, sizeof(buf), cases[i].token) == 0);
        CHECK_STR(buf, cases[i].want);
        ops = json_freeze(json_pack(m, "[{s:s, s:s, s:i}]", "op", "add", "path", buf, "value", 1));
        diag_clear(&d);
        got = patch_apply(harness_val(doc), harness_val(ops), &d);
        CHECK(got != NULL && yyjson_obj_size(yyjson_obj_get(harness_val(got), "metadata")) == 1 &&
              yyjson_is_int(
                  yyjson_obj_get(yyjson_obj_get(harness_val(got), "metadata"), cases[i].token)));
        yyjson_doc_free(got);
        yyjson_doc_free(ops);
        yyjson_mut_doc_free(m);
        yyjson_doc_free(doc);
    }
    /* no room for the second escape: -1 */
    snprintf(buf, 8, "/ab");
    CHECK(patch_ptr_append(buf, 8, "~~") == -1);
}

int main(void)
{
    RUN(test_rfc6902_appendix_a);
    RUN(test_apply_errors);
    RUN(test_add_replaces);
    RUN(test_apply_depth);
    RUN(test_builder_round_trip);
    RUN(test_pointer_escapes);
    TEST_MAIN_END("test_patch");
}
