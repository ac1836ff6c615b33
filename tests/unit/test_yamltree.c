/*
 * test_yamltree.c: the bounded YAML reader on its own: the tree (positions, styles, tags,
 * anchors, keys, documents), the caps with the refused node kept in err.at, syntax errors with
 * libyaml's words, the byte order mark, and the core schema's reading of plain scalars.
 */
#include <string.h>

#include "harness.h"
#include "yamltree.h"

static const struct yamltree_limits wide = {64, 1000, 0};

static int read_text(const char *text, const struct yamltree_limits *lim, unsigned flags,
                     struct yamltree *t)
{
    return yamltree_read(text, strlen(text), lim, flags, t);
}

static void test_tree(void)
{
    struct yamltree t;
    const struct yamltree_node *root, *k, *v;

    CHECK(read_text("a: 'x'\nb: [1, &n !!int 2]\n", &wide, 0, &t) == 0);
    CHECK(t.n_docs == 1 && t.docs[0].ended && t.docs[0].index == 1);
    root = t.docs[0].root;
    CHECK(root != NULL && root->kind == YAMLTREE_MAP && root->n == 4 && root->parent == NULL);
    if (root == NULL || root->n != 4) {
        yamltree_free(&t);
        return; /* reported above; the rest would read past the tree */
    }
    k = root->kids[0];
    v = root->kids[1];
    CHECK(k->is_key && !v->is_key && k->plain && !v->plain);
    CHECK_STR(v->s, "x");
    CHECK(v->line == 1 && v->column == 4 && v->parent == root);
    v = root->kids[3];
    CHECK(v->kind == YAMLTREE_SEQ && v->n == 2 && v->line == 2 && v->column == 4);
    CHECK(!v->kids[0]->anchored && v->kids[1]->anchored);
    CHECK_STR(v->kids[1]->tag, "tag:yaml.org,2002:int");
    /* the order of the text: map, a, 'x', b, the sequence, 1, 2 */
    CHECK(t.n_nodes == 7 && t.nodes[0] == root && t.nodes[6] == v->kids[1]);
    yamltree_free(&t);
}

static void test_documents(void)
{
    struct yamltree t;
    static const struct yamltree_limits two = {64, 1000, 2};

    CHECK(read_text("--- 1\n---\n--- [a]\n", &wide, 0, &t) == 0);
    /* libyaml makes an explicit empty document an empty plain scalar */
    CHECK(t.n_docs == 3 && t.docs[2].root->kind == YAMLTREE_SEQ);
    CHECK(t.docs[1].root != NULL && t.docs[1].root->plain && t.docs[1].root->len == 0);
    CHECK(t.nodes[2]->doc == 3 && t.docs[2].line == 3 && t.docs[2].column == 5);
    yamltree_free(&t);
    CHECK(read_text("# nothing\n", &wide, 0, &t) == 0);
    CHECK(t.n_docs == 0 && t.n_nodes == 0);
    yamltree_free(&t);
    CHECK(read_text("--- 1\n--- 2\n--- 3\n", &two, 0, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_DOCS && t.err.doc == 3 && t.err.line == 3);
    CHECK(t.n_docs == 2 && t.docs[1].ended);
    yamltree_free(&t);
}

/* A cap stops the reading at the node past it, which is kept (not attached) in err.at. */
static void test_caps(void)
{
    static const struct yamltree_limits shallow = {2, 1000, 0}, few = {64, 4, 0};
    struct yamltree t;

    CHECK(read_text("a: [[1]]\n", &shallow, 0, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_DEPTH && t.err.line == 1 && t.err.column == 5);
    CHECK(t.err.at != NULL && t.err.at->kind == YAMLTREE_SEQ && t.n_nodes == 3);
    yamltree_free(&t);
    CHECK(read_text("a: [1, &x 2]\n", &few, 0, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_NODES && t.err.column == 8 && t.n_nodes == 4);
    CHECK(t.err.at != NULL && t.err.at->anchored && strcmp(t.err.at->s, "2") == 0);
    yamltree_free(&t);
    CHECK(read_text("a: [1, 2, 3]\n", &few, 0, &t) == -1 && t.n_nodes == 4);
    yamltree_free(&t);
}

static void test_aliases(void)
{
    struct yamltree t;

    CHECK(read_text("a: &x 1\nb: *x\n", &wide, 0, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_ALIAS && t.err.line == 2 && t.err.column == 4);
    CHECK(t.err.at == NULL && !t.docs[0].ended);
    yamltree_free(&t);
    CHECK(read_text("a: &x 1\nb: *x\n", &wide, YAMLTREE_KEEP_ALIASES, &t) == 0);
    CHECK(t.n_nodes == 5 && t.nodes[4]->kind == YAMLTREE_ALIAS && t.nodes[4]->s == NULL);
    yamltree_free(&t);
}

static void test_syntax(void)
{
    struct yamltree t;

    CHECK(read_text("a: [1, 2\n", &wide, 0, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_SYNTAX && t.err.line == 2 && t.err.column == 1);
    CHECK_STR(t.err.problem, "did not find expected ',' or ']'");
    CHECK_STR(t.err.context, "while parsing a flow sequence");
    CHECK(t.err.context_line == 1 && t.err.context_column == 4);
    yamltree_free(&t);
    /* a byte order mark is dropped (and counted in reader offsets) with YAMLTREE_UTF8 only */
    CHECK(read_text("\xef\xbb\xbf"
                    "a: \xff\n",
                    &wide, YAMLTREE_UTF8, &t) == -1);
    CHECK(t.err.code == YAMLTREE_E_SYNTAX && t.err.problem_offset == 6);
    yamltree_free(&t);
    CHECK(read_text("\xef\xbb\xbf"
                    "a: 1\n",
                    &wide, YAMLTREE_UTF8, &t) == 0);
    CHECK(t.nodes[0]->column == 1);
    yamltree_free(&t);
}

static void test_quoted_nul(void)
{
    struct yamltree t;

    CHECK(read_text("a: \"x\\0y\"\n", &wide, YAMLTREE_WIPE, &t) == 0);
    CHECK(t.nodes[2]->len == 3 && memcmp(t.nodes[2]->s, "x\0y", 3) == 0);
    yamltree_free(&t);
    CHECK(t.nodes == NULL && t.n_nodes == 0);
}

static void test_resolve(void)
{
    static const struct {
        const char *s;
        enum yamltree_type want;
    } cases[] = {
        {"", YAMLTREE_NULL},     {"~", YAMLTREE_NULL},      {"Null", YAMLTREE_NULL},
        {"nULL", YAMLTREE_STR},  {"TRUE", YAMLTREE_BOOL},   {"False", YAMLTREE_BOOL},
        {"yes", YAMLTREE_STR},   {"on", YAMLTREE_STR},      {"12", YAMLTREE_INT},
        {"-12", YAMLTREE_INT},   {"+0", YAMLTREE_INT},      {"0o17", YAMLTREE_INT},
        {"0o18", YAMLTREE_STR},  {"0x1F", YAMLTREE_INT},    {"0x", YAMLTREE_STR},
        {"-0x1", YAMLTREE_STR},  {"1_000", YAMLTREE_STR},   {"1.5", YAMLTREE_FLOAT},
        {".5", YAMLTREE_FLOAT},  {"1.", YAMLTREE_FLOAT},    {"1e3", YAMLTREE_FLOAT},
        {"1e", YAMLTREE_STR},    {"-.inf", YAMLTREE_FLOAT}, {".NaN", YAMLTREE_FLOAT},
        {"-.nan", YAMLTREE_STR}, {".", YAMLTREE_STR},       {"1.2.3", YAMLTREE_STR},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (yamltree_resolve(cases[i].s) != cases[i].want)
            fprintf(stderr, "  resolve(\"%s\")\n", cases[i].s);
        CHECK(yamltree_resolve(cases[i].s) == cases[i].want);
    }
}

int main(void)
{
    RUN(test_tree);
    RUN(test_documents);
    RUN(test_caps);
    RUN(test_aliases);
    RUN(test_syntax);
    RUN(test_quoted_nul);
    RUN(test_resolve);
    TEST_MAIN_END("test_yamltree");
}
