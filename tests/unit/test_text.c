/*
 * test_text.c: text.c, what a user's text becomes in a message, a warning or a log line: always
 * valid UTF-8 (yyjson's writer refuses anything else, and would take the whole response or line
 * with it), cut between characters, NULs visible.
 */
#include <string.h>

#include "harness.h"
#include "text.h"

static void excerpts(void)
{
    char out[64];

    text_excerpt("all", 3, 64, out, sizeof(out));
    CHECK_STR(out, "all");
    /* a NUL is shown, not taken for the end */
    text_excerpt("void\0all", 8, 64, out, sizeof(out));
    CHECK_STR(out, "void\\u0000all");
    /* "é" is C3 A9: a cut after its first byte backs off before it */
    text_excerpt("ab\xc3\xa9", 4, 3, out, sizeof(out));
    CHECK_STR(out, "ab...");
    text_excerpt("ab\xc3\xa9", 4, 4, out, sizeof(out));
    CHECK_STR(out, "ab\xc3\xa9");
    /* bytes that are not UTF-8 to begin with become '?' */
    text_excerpt("a\xff"
                 "b",
                 3, 64, out, sizeof(out));
    CHECK_STR(out, "a?b");
    /* a small buffer still ends in a NUL and in valid text */
    text_excerpt("abcdefghijklmnop", 16, 64, out, 8);
    CHECK(strlen(out) < 8);
}

static void cleaning(void)
{
    char s[] = "ok \xc3";
    char *c = text_utf8_clean("a\tb\xe2\x82", 20, true);

    CHECK_STR(c, "a b??");
    free(c);
    c = text_utf8_clean("\xc3\xa9\xc3\xa9\xc3\xa9", 2, false);
    CHECK_STR(c, "\xc3\xa9\xc3\xa9");
    free(c);
    text_utf8_fix(s);
    CHECK_STR(s, "ok ?");
    CHECK(text_utf8_valid("a\0b", 3));
    CHECK(!text_utf8_valid("a\xc3", 2));
}

int main(void)
{
    RUN(excerpts);
    RUN(cleaning);
    TEST_MAIN_END("test_text");
}
