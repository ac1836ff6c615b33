/*
 * test_names.c: names.c, the name part of a Kubernetes qualified name, which audit annotation
 * keys, label keys and label values must be.
 */
#include <string.h>

#include "harness.h"
#include "names.h"

static bool ok(const char *s)
{
    return names_part_ok(s, strlen(s));
}

static void name_parts(void)
{
    char long_name[NAMES_PART_MAX + 2];

    CHECK(ok("a") && ok("gpu-limit") && ok("A.b_c-9") && ok("0"));
    CHECK(!ok("") && !ok("-a") && !ok("a-") && !ok("_a") && !ok("a.") && !ok("a/b"));
    CHECK(!ok("a b") && !ok("é"));
    memset(long_name, 'x', sizeof(long_name));
    CHECK(names_part_ok(long_name, NAMES_PART_MAX));
    CHECK(!names_part_ok(long_name, NAMES_PART_MAX + 1));
    CHECK(!names_part_ok("a\0b", 3)); /* a NUL is no name byte */
}

int main(void)
{
    RUN(name_parts);
    TEST_MAIN_END("test_names");
}
