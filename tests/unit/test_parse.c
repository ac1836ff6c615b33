/*
 * test_parse.c: parse.c, the one way a flag, a header, a label or a percentage becomes a
 * number: all digits, in range, or refused.
 */
#include <stdint.h>

#include "harness.h"
#include "parse.h"

static void whole_numbers(void)
{
    uint64_t v = 7;

    CHECK(parse_uint("0", 0, 10, &v) == 0 && v == 0);
    CHECK(parse_uint("10", 0, 10, &v) == 0 && v == 10);
    CHECK(parse_uint("007", 0, 10, &v) == 0 && v == 7);
    CHECK(parse_uint("18446744073709551615", 0, UINT64_MAX, &v) == 0 && v == UINT64_MAX);
    v = 42;
    /* what strtoull would take, refused, and *out left alone */
    CHECK(parse_uint("", 0, 10, &v) == -1);
    CHECK(parse_uint(" 8", 0, 10, &v) == -1);
    CHECK(parse_uint("+8", 0, 10, &v) == -1);
    CHECK(parse_uint("-0", 0, 10, &v) == -1);
    CHECK(parse_uint("8 ", 0, 10, &v) == -1);
    CHECK(parse_uint("25%", 0, 100, &v) == -1);
    CHECK(parse_uint("0x10", 0, 100, &v) == -1);
    CHECK(parse_uint("18446744073709551616", 0, UINT64_MAX, &v) == -1); /* overflow */
    CHECK(parse_uint("99999999999999999999999", 0, UINT64_MAX, &v) == -1);
    CHECK(v == 42);
    /* the range, both ends */
    CHECK(parse_uint("0", 1, 10, &v) == -1);
    CHECK(parse_uint("11", 1, 10, &v) == -1);
    CHECK(parse_uint("1", 1, 10, &v) == 0 && v == 1);
    /* n bytes: a prefix, and a NUL inside is not a digit */
    CHECK(parse_uintn("25%", 2, 0, 100, &v) == 0 && v == 25);
    CHECK(parse_uintn("2\0"
                      "5",
                      3, 0, 100, &v) == -1);
    CHECK(parse_uintn("5", 0, 0, 100, &v) == -1);
}

int main(void)
{
    RUN(whole_numbers);
    TEST_MAIN_END("test_parse");
}
