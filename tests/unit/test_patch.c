/* test_patch.c: the JSON Patch builder and the RFC 6902 applier, against the RFC's own examples
 * (Appendix A). */
#include <jansson.h>

#include "harness.h"
#include "patch.h"

#define js harness_json

/* Applies patch to doc; when want is NULL the patch must fail with a message containing err. */
static void apply(const char *doc, const char *patch, const char *want, const char *err)
{
    json_t *d = js(doc), *p = js(patch), *w = want ? js(want) : NULL, *got;
    struct diag dg;

    diag_clear(&dg);
    got = patch_apply(d, p, &dg);
    if (w != NULL) {
        CHECK(got != NULL && json_equal(got, w));
        if (got == NULL || !json_equal(got, w)) {
            char *s = got ? json_dumps(got, JSON_COMPACT) : NULL;

            printf("  patch %s: got %s (%s)\n", patch, s ? s : "NULL", dg.msg);
            free(s);
        }
    } else {
        CHECK(got == NULL);
        CHECK_CONTAINS(dg.msg, err);
    }
    /* the input is never changed */
    json_t *again = js(doc);
    CHECK(json_equal(d, again));
    json_decref(again);
    json_decref(d);
    json_decref(p);
    json_decref(w);
    json_decref(got);
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
}

/* What the webhook emits, applied back, gives the working copy it built. */
static void test_builder_round_trip(void)
{
    json_t *doc = js("{'spec': {'tolerations': [{'key': 'a'}]}}"), *got;
    struct patch p;
    struct diag d;

    CHECK(patch_init(&p, doc) == 0);
    CHECK(patch_add(&p, "/spec/tolerations/-", js("{'key': 'nvidia.com/gpu'}")) == 0);
    CHECK(patch_add(&p, "/spec/nodeSelector", js("{'nvidia.com/gpu.present': 'true'}")) == 0);
    CHECK(patch_add(&p, "/spec/nodeSelector/x~1y", json_string("z")) == 0);
    CHECK(patch_add(&p, "/nope/x", json_string("z")) == -1);
    diag_clear(&d);
    got = patch_apply(doc, p.ops, &d);
    CHECK(got != NULL && json_equal(got, p.doc));
    json_decref(got);
    patch_release(&p);
    json_decref(doc);
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
        json_t *doc = js("{'metadata':{}}"), *ops, *got;
        struct diag d;

        snprintf(buf, sizeof(buf), "/metadata");
        CHECK(patch_ptr_append(buf, sizeof(buf), cases[i].token) == 0);
        CHECK_STR(buf, cases[i].want);
        ops = json_pack("[{s:s, s:s, s:i}]", "op", "add", "path", buf, "value", 1);
        diag_clear(&d);
        got = patch_apply(doc, ops, &d);
        CHECK(got != NULL && json_object_size(json_object_get(got, "metadata")) == 1 &&
              json_is_integer(json_object_get(json_object_get(got, "metadata"), cases[i].token)));
        json_decref(got);
        json_decref(ops);
        json_decref(doc);
    }
    /* no room for the second escape: -1 */
    snprintf(buf, 8, "/ab");
    CHECK(patch_ptr_append(buf, 8, "~~") == -1);
}

int main(void)
{
    RUN(test_rfc6902_appendix_a);
    RUN(test_apply_errors);
    RUN(test_builder_round_trip);
    RUN(test_pointer_escapes);
    TEST_MAIN_END("test_patch");
}
