/* test_yamljson.c: multi-document YAML and JSON into jansson values, positions, limits,
 * aliases and bad input. */
#include <jansson.h>
#include <stdio.h>

#include "harness.h"
#include "limits.h"
#include "yamljson.h"

#define js harness_json

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
    json_t *want;

    CHECK(parse("# a comment\n---\na: 1\n---\n---\n# only a comment\n---\n- x\n- y\n", 0, &y, err,
                sizeof(err)) == 0);
    CHECK(y.n == 2); /* the empty documents are left out */
    if (y.n == 2) {
        want = js("{'a': 1}");
        CHECK(json_equal(y.docs[0].value, want));
        json_decref(want);
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
    json_t *want;

    CHECK(parse("a: yes\nb: true\nc: \"true\"\nd: 012\ne: 0x1F\nf: 0o17\ng: 1.5\nh: ~\ni:\n"
                "j: '1'\nk: |\n  text\nl: 1e3\nm: TRUE\nn: off\no: !!str 5\np: -7\nq: 1.2.3\n"
                "1: numeric key\n",
                0, &y, err, sizeof(err)) == 0);
    want = js("{'a': 'yes', 'b': true, 'c': 'true', 'd': 12, 'e': 31, 'f': 15, 'g': 1.5, "
              "'h': null, 'i': null, 'j': '1', 'k': 'text\\n', 'l': 1000.0, 'm': true, "
              "'n': 'off', 'o': '5', 'p': -7, 'q': '1.2.3', '1': 'numeric key'}");
    CHECK(y.n == 1 && json_equal(y.docs[0].value, want));
    if (y.n == 1 && !json_equal(y.docs[0].value, want)) {
        char *s = json_dumps(y.docs[0].value, JSON_COMPACT);
        printf("got %s\n", s);
        free(s);
    }
    json_decref(want);
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
    json_t *want = js("{'kind': 'List', 'items': []}");

    /* kubectl's JSON, with tabs, and two values one after another */
    CHECK(parse("{\n\t\"kind\": \"List\",\n\t\"items\": []\n}\n{\"a\": \"yes\"}", 0, &y, err,
                sizeof(err)) == 0);
    CHECK(y.n == 2 && json_equal(y.docs[0].value, want));
    CHECK(y.n == 2 && y.docs[1].line == 5 && y.docs[1].index == 2);
    yamljson_free(&y);
    json_decref(want);
    CHECK(parse("{\"a\": 1, \"a\": 2}", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:1:");
    CHECK_CONTAINS(err, "duplicate");
    CHECK(parse("{\"a\": 1}\n{\"b\": }", 0, &y, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "m.yaml:2:");
    CHECK_CONTAINS(err, "document 2: JSON");
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
    json_t *v = NULL;
    const char *why = NULL;

    CHECK(yamljson_resolve_plain("Null", 4, &v, &why) == 0 && json_is_null(v));
    json_decref(v);
    CHECK(yamljson_resolve_plain("-.5e1", 5, &v, &why) == 0 && json_real_value(v) == -5.0);
    json_decref(v);
    CHECK(yamljson_resolve_plain("1_000", 5, &v, &why) == 0 && json_is_string(v));
    json_decref(v);
    CHECK(yamljson_resolve_plain("-.nan", 5, &v, &why) == 0 && json_is_string(v));
    json_decref(v);
    CHECK(yamljson_resolve_plain(".NaN", 4, &v, &why) == -1 && why != NULL);
}

int main(void)
{
    RUN(test_multi_doc);
    RUN(test_scalars);
    RUN(test_positions);
    RUN(test_json);
    RUN(test_refused);
    RUN(test_bad_yaml);
    RUN(test_limits);
    RUN(test_resolve);
    TEST_MAIN_END("test_yamljson");
}
