/* Unit tests for toleration.c: one toleration against one taint, as the scheduler decides. */
#include <yyjson.h>

#include "harness.h"
#include "policy/toleration.h"

/* Whether the toleration written as JSON tolerates key=value:effect. */
static bool tol(const char *json, const char *key, const char *value, const char *effect)
{
    yyjson_doc *doc = yyjson_read(json, strlen(json), 0);
    bool ok = toleration_tolerates(yyjson_doc_get_root(doc), key, value, effect);

    yyjson_doc_free(doc);
    return ok;
}

static void test_effect(void)
{
    CHECK(tol("{\"key\": \"g\", \"operator\": \"Exists\"}", "g", "x", "NoSchedule"));
    CHECK(
        tol("{\"key\": \"g\", \"operator\": \"Exists\", \"effect\": \"\"}", "g", "x", "NoExecute"));
    CHECK(tol("{\"key\": \"g\", \"operator\": \"Exists\", \"effect\": \"NoSchedule\"}", "g", "x",
              "NoSchedule"));
    CHECK(!tol("{\"key\": \"g\", \"operator\": \"Exists\", \"effect\": \"NoSchedule\"}", "g", "x",
               "NoExecute"));
}

static void test_empty_key(void)
{
    CHECK(tol("{\"operator\": \"Exists\"}", "any", "x", "NoSchedule"));
    CHECK(tol("{\"key\": \"\", \"operator\": \"Exists\"}", "any", NULL, "NoExecute"));
    CHECK(!tol("{\"key\": \"\"}", "any", "", "NoSchedule")); /* Equal with no key: nothing */
    CHECK(!tol("{}", "any", "", "NoSchedule"));
}

static void test_equal(void)
{
    CHECK(tol("{\"key\": \"g\", \"value\": \"true\"}", "g", "true", "NoSchedule"));
    CHECK(tol("{\"key\": \"g\", \"operator\": \"Equal\", \"value\": \"true\"}", "g", "true",
              "NoSchedule"));
    CHECK(!tol("{\"key\": \"g\", \"value\": \"true\"}", "g", "false", "NoSchedule"));
    CHECK(tol("{\"key\": \"g\"}", "g", "", "NoSchedule")); /* no value is "" */
    CHECK(!tol("{\"key\": \"h\", \"value\": \"true\"}", "g", "true", "NoSchedule"));
    /* a taint of any value is tolerated only by Exists */
    CHECK(!tol("{\"key\": \"g\", \"value\": \"true\"}", "g", NULL, "NoSchedule"));
    CHECK(tol("{\"key\": \"g\", \"operator\": \"Exists\"}", "g", NULL, "NoSchedule"));
}

int main(void)
{
    RUN(test_effect);
    RUN(test_empty_key);
    RUN(test_equal);
    TEST_MAIN_END("test_toleration");
}
