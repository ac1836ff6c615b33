/* test_yamljson.c: multi-document YAML and JSON into yyjson documents, positions, limits,
 * aliases and bad input. */
#include <stdio.h>
#include <yyjson.h>

#include "harness.h"
#include "json.h"
#include "bounds.h"
#include "cli/yamljson.h"

/* Whether v equals the JSON text want; prints v when not. */
static bool equals(yyjson_val *v, const char *want)
{
    yyjson_doc *w = harness_json(want);
    bool ok = yyjson_equals(v, yyjson_doc_get_root(w));

    if (!ok) {
        char *s = json_write(v, NULL);

        printf("got %s\n", s ? s : "(nothing)");
        free(s);
    }
    yyjson_doc_free(w);
    return ok;
}

/* Parses text; returns the documents (caller frees) and the formatted error in err. */
static int parse(const char *text, unsigned flags, struct yamljson *y, char *err, size_t len)
{
    struct diag d;
    int rc;

    diag_clear(&d);
    rc = yamljson_parse("m.yaml", text, strlen(text), flags, y, &d);
    diag_format(&d, err, len);
    return rc;
}

static void test_multi_doc(void)
{
    struct yamljson y;
    char err[700];

    CHECK(parse("# a comment\n---\na: 1\n---\n---\n# only a comment\n---\n- x\n- y\n", 0, &y, err,
                sizeof(err)) == 0);
    CHECK(y.n == 2); /* the empty documents are left out */
    if (y.n == 2) {
        CHECK(equals(y.docs[0].value, "{'a': 1}"));
        CHECK(y.docs[0].index == 1);
        CHECK(y.docs[0].line == 3 && y.docs[0].column == 1);
        CHECK(y.docs[1].index == 4);
        CHECK(y.docs[1].line == 8);
    }
    yamljson_free(&y);
}

static void test_scalars(void)
{
    struct yamljson y;
    char err[700];

    CHECK(parse("a: yes\nb: true\nc: \"true\"\nd: 012\ne: 0x1F\nf: 0o17\ng: 1.5\nh: ~\ni:\n"
                "j: '1'\nk: |\n  text\nl: 1e3\nm: TRUE\nn: off\no: !!str 5\np: -7\nq: 1.2.3\n"
                "1: numeric key\n",
                0, &y, err, sizeof(err)) == 0);
    CHECK(y.n == 1 &&
          equals(y.docs[0].value,
                 "{'a': 'yes', 'b': true, 'c': 'true', 'd': 12, 'e': 31, 'f': 15, 'g': 1.5, "
                 "'h': null, 'i': null, 'j': '1', 'k': 'text\\n', 'l': 1000.0, 'm': true, "
                 "'n': 'off', 'o': '5', 'p': -7, 'q': '1.2.3', '1': 'numeric key'}"));
    /* integers keep their kind: 1000.0 above is a real, 12 an integer (1 != 1.0) */
    CHECK(y.n == 1 && yyjson_is_int(yyjson_obj_get(y.docs[0].value, "d")) &&
          yyjson_is_real(yyjson_obj_get(y.docs[0].value, "l")));
    yamljson_free(&y);
}

static void test_positions(void)
{
    struct yamljson y;
    char err[700];
    unsigned line = 0, col = 0;

    CHECK(parse("kind: Pod\nspec:\n  containers:\n    - name: c\n      image: x\n  a/b: 1\n",
                YAMLJSON_MARKS, &y, err, sizeof(err)) == 0);
    CHECK(yamljson_mark(&y.docs[0], "", &line, &col) && line == 1 && col == 1);
    CHECK(yamljson_mark(&y.docs[0], "/spec/containers/0/image", &line, &col) && line == 5 &&
          col == 14);
    CHECK(yamljson_mark(&y.docs[0], "/spec/a~1b", &line, &col) && line == 6 && col == 8);
    CHECK(!yamljson_mark(&y.docs[0], "/nope", &line, &col));
    yamljson_free(&y);
    /* without YAMLJSON_MARKS, nothing is recorded */
    CHECK(parse("a: 1\n", 0, &y, err, sizeof(err)) == 0);
    CHECK(!yamljson_mark(&y.docs[0], "/a", &line, &col));
    yamljson_free(&y);
}

static void test_json(void)
{
    struct yamljson y;
    char err[700];

    /* kubectl's JSON, with tabs, and two values one after another */
    CHECK(parse("{\n\t\"kind\": \"List\",\n\t\"items\": []\n}\n{\"a\": \"yes\"}", 0, &y, err,
                sizeof(err)) == 0);
    CHECK(y.n == 2 && equals(y.docs[0].value, "{'kind': 'List', 'items': []}"));
    CHECK(y.n == 2 && y.docs[1].line == 5 && y.docs[1].index == 2);
    yamljson_free(&y);
    CHECK(parse("{\"a\": 1, \"a\": 2}", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:1:");
    CHECK_CONTAINS(err, "duplicate");
    CHECK(parse("{\"a\": 1}\n{\"b\": }", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:2:");
    CHECK_CONTAINS(err, "document 2: JSON");
    /* the position is in the whole text, not in the value that failed */
    CHECK(parse("{\"a\": 1} {\"b\": }", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:1:16: document 2: JSON: ");
    CHECK(parse("[1]\n  [2,\n   x]", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:3:4: document 2: JSON: ");
    /* a repeated key deep down, an integer beyond 64 bits, a scalar */
    CHECK(parse("[1]\n{\"x\": [{\"b\": 1, \"b\": 2}]}", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:2:17: document 2: JSON: "); /* the second "b" */
    CHECK_CONTAINS(err, "duplicate key \"b\"");
    CHECK(parse("{\"n\": 18446744073709551616}", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "out of range");
    CHECK(parse("{} 12", 0, &y, err, sizeof(err)) == -1);
    CHECK_STR(err, "m.yaml:1:4: document 2: JSON: expected an object or an array");
    /* a BOM before JSON, and "\u0000" kept with its length */
    CHECK(parse("\xEF\xBB\xBF{\"a\": \"x\\u0000y\"}", 0, &y, err, sizeof(err)) == 0);
    CHECK(y.n == 1 && yyjson_get_len(yyjson_obj_get(y.docs[0].value, "a")) == 3);
    yamljson_free(&y);
}

/* Many keys in one mapping (the key set grows), repeated keys in different mappings, marks of
 * a long list. */
static void test_many_keys(void)
{
    struct yamljson y;
    char err[700];
    size_t n = 5000, cap = n * 32 + 64, o = 0;
    char *text = malloc(cap);
    unsigned line = 0, col = 0;

    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(text + o, cap - o, "k%zu: {a: 1, b: [x]}\n", i);
    CHECK(parse(text, YAMLJSON_MARKS, &y, err, sizeof(err)) == 0);
    CHECK(y.n == 1 && yyjson_obj_size(y.docs[0].value) == n);
    CHECK(y.n == 1 && yamljson_mark(&y.docs[0], "/k4321/b/0", &line, &col) && line == 4322 &&
          col == 19);
    CHECK(y.n == 1 && yamljson_mark(&y.docs[0], "/k0", &line, &col) && line == 1 && col == 5);
    CHECK(y.n == 1 && !yamljson_mark(&y.docs[0], "/k5000", &line, &col));
    yamljson_free(&y);
    snprintf(text + o, cap - o, "k17: 2\n");
    CHECK(parse(text, 0, &y, err, sizeof(err)) == -1);
    CHECK_STR(err, "m.yaml:5001:1: document 1: duplicate key \"k17\"");
    /* the same key in the next document is no repeat */
    CHECK(parse("a: 1\n---\na: 2\nb: {a: 3}\n", 0, &y, err, sizeof(err)) == 0);
    CHECK(y.n == 2 && equals(y.docs[1].value, "{'a': 2, 'b': {'a': 3}}"));
    yamljson_free(&y);
    /* keys that differ after a NUL byte are two keys; neither gets a mark of its own */
    CHECK(parse("\"a\\0x\": 1\n\"a\\0y\": 2\n", YAMLJSON_MARKS, &y, err, sizeof(err)) == 0);
    CHECK(y.n == 1 && yyjson_obj_size(y.docs[0].value) == 2);
    CHECK(y.n == 1 && !yamljson_mark(&y.docs[0], "/a", &line, &col));
    yamljson_free(&y);
    CHECK(parse("\"a\\0x\": 1\n\"a\\0x\": 2\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:2:1: document 1: duplicate key");
    free(text);
}

static void test_refused(void)
{
    struct yamljson y;
    char err[700];

    CHECK(parse("a: &x 1\nb: *x\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_STR(err, "m.yaml:1:4: document 1: YAML anchors are not supported");
    CHECK(parse("a: 1\n---\nb: *x\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:3:4: document 2:");
    CHECK(y.n == 0 && y.docs == NULL);
    CHECK(parse("a: 1\na: 2\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_STR(err, "m.yaml:2:1: document 1: duplicate key \"a\"");
    CHECK(parse("? [a]\n: 1\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "a key must be a string");
    CHECK(parse("a: !custom 1\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "unsupported YAML tag !custom");
    CHECK(parse("a: .inf\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "no JSON form");
    CHECK(parse("a: 99999999999999999999\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "integer out of range");
    CHECK(parse("a: !!int x\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "not a valid !!int");
}

static void test_bad_yaml(void)
{
    struct yamljson y;
    char err[700];
    struct diag d;

    CHECK(parse("spec:\n  containers:\n    - name: c\n     image: x\n", 0, &y, err, sizeof(err)) ==
          -1);
    CHECK_CONTAINS(err, "m.yaml:4:6: document 1: YAML: did not find expected '-' indicator");
    CHECK(parse("a: [1, 2\n", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:2:1: document 1: YAML:");
    diag_clear(&d);
    CHECK(yamljson_parse("m.yaml", "a: 1\0", 5, 0, &y, &d) == -1);
    CHECK_CONTAINS(d.msg, "NUL");
    diag_clear(&d);
    CHECK(yamljson_read_file("/nonexistent/x.yaml", 0, &y, &d) == -1);
    CHECK_CONTAINS(d.msg, "cannot read");
}

static void test_limits(void)
{
    struct yamljson y;
    char err[700];
    size_t n = YAMLJSON_DEPTH_MAX + 1, docs = YAMLJSON_DOCS_MAX + 1;
    char *deep = malloc(2 * n + 1), *many = malloc(4 * docs + 1);

    /* nesting: [[[...]]] one level too deep */
    for (size_t i = 0; i < n; i++) {
        deep[i] = '[';
        deep[n + i] = ']';
    }
    deep[2 * n] = '\0';
    CHECK(parse(deep, 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "nested deeper than 64");
    deep[0] = ' '; /* exactly the limit is fine */
    deep[2 * n - 1] = '\0';
    CHECK(parse(deep, 0, &y, err, sizeof(err)) == 0);
    yamljson_free(&y);
    /* the same through libyaml: a mapping and 64 sequences is one level too many */
    {
        char *yaml = malloc(2 * n + 8);

        snprintf(yaml, 2 * n + 8, "x: %s", deep + 1);
        CHECK(parse(yaml, 0, &y, err, sizeof(err)) == -1);
        CHECK_CONTAINS(err, "m.yaml:1:");
        CHECK_CONTAINS(err, "nested deeper than 64");
        free(yaml);
    }
    /* documents */
    for (size_t i = 0; i < docs; i++)
        memcpy(many + 4 * i, "---\n", 4);
    many[4 * docs] = '\0';
    CHECK(parse(many, 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "more than 10000 documents");
    free(deep);
    free(many);
}

static void test_resolve(void)
{
    yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *v = NULL;
    const char *why = NULL;
    int64_t i = 0;

    CHECK(yamljson_resolve_plain(doc, "Null", 4, &v, &why) == 0 && yyjson_mut_is_null(v));
    CHECK(yamljson_resolve_plain(doc, "-.5e1", 5, &v, &why) == 0 && yyjson_mut_is_real(v) &&
          yyjson_mut_get_real(v) == -5.0);
    CHECK(yamljson_resolve_plain(doc, "1_000", 5, &v, &why) == 0 && yyjson_mut_is_str(v));
    CHECK(yamljson_resolve_plain(doc, "-.nan", 5, &v, &why) == 0 && yyjson_mut_is_str(v));
    CHECK(yamljson_resolve_plain(doc, "-9223372036854775808", 20, &v, &why) == 0 &&
          json_mut_int64(v, &i) && i == INT64_MIN);
    CHECK(yamljson_resolve_plain(doc, "0x7fffffffffffffff", 18, &v, &why) == 0 &&
          json_mut_int64(v, &i) && i == INT64_MAX);
    CHECK(yamljson_resolve_plain(doc, "9223372036854775808", 19, &v, &why) == -1 && why != NULL &&
          strstr(why, "out of range") != NULL);
    CHECK(yamljson_resolve_plain(doc, ".NaN", 4, &v, &why) == -1 && why != NULL);
    yyjson_mut_doc_free(doc);
}

int main(void)
{
    RUN(test_multi_doc);
    RUN(test_scalars);
    RUN(test_positions);
    RUN(test_json);
    RUN(test_many_keys);
    RUN(test_refused);
    RUN(test_bad_yaml);
    RUN(test_limits);
    RUN(test_resolve);
    TEST_MAIN_END("test_yamljson");
}
