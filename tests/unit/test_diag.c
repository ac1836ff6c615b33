/* Unit tests for diag.c: the first error wins, and its text has the parts that are known. */
#include "diag.h"
#include "harness.h"

static void test_first_error_wins(void)
{
    struct diag d;
    char buf[DIAG_MSG_MAX + 300];

    diag_clear(&d);
    CHECK(!d.set && d.file[0] == '\0' && d.msg[0] == '\0');
    diag_set(&d, "a.yaml", 3, 7, "root cause %d", 1);
    diag_set(&d, "b.yaml", 9, 9, "a caller's %s", "summary");
    CHECK(d.set);
    CHECK_STR(diag_format(&d, buf, sizeof(buf)), "a.yaml:3:7: root cause 1");
    diag_set(NULL, "x", 1, 1, "ignored"); /* no record asked for: nothing happens */
    diag_clear(&d);
    diag_set(&d, NULL, 0, 0, "after a clear");
    CHECK_STR(diag_format(&d, buf, sizeof(buf)), "after a clear");
}

static void test_parts_that_are_known(void)
{
    struct diag d;
    char buf[DIAG_MSG_MAX + 300];

    diag_clear(&d);
    diag_set(&d, "f", 0, 0, "no line");
    CHECK_STR(diag_format(&d, buf, sizeof(buf)), "f: no line");
    diag_clear(&d);
    diag_set(&d, NULL, 4, 2, "no file");
    CHECK_STR(diag_format(&d, buf, sizeof(buf)), "4:2: no file");
    diag_clear(&d);
    diag_set(&d, "f", 4, 2, "both");
    diag_format(&d, buf, 6); /* cut to what the caller has room for, NUL-terminated */
    CHECK_STR(buf, "f:4:2");
}

/* A message cut at the buffer's end, or by "%.Ns", keeps no half UTF-8 character: the stray
 * byte becomes '?', so that the text stays valid UTF-8 in a JSON log line or a response. */
static void test_cut_utf8_mended(void)
{
    struct diag d;
    char big[DIAG_MSG_MAX + 8];

    memset(big, 'a', sizeof(big));
    /* "é" (2 bytes) straddling the last byte the message keeps */
    memcpy(big + DIAG_MSG_MAX - 2, "\xc3\xa9", 2);
    big[sizeof(big) - 1] = '\0';
    diag_clear(&d);
    diag_set(&d, NULL, 0, 0, "%s", big); /* the é's first byte is the last one kept */
    CHECK(strlen(d.msg) == DIAG_MSG_MAX - 1 && d.msg[DIAG_MSG_MAX - 2] == '?');
    diag_clear(&d);
    diag_set(&d, NULL, 0, 0, "%.3s", "ab\xc3\xa9");
    CHECK_STR(d.msg, "ab?");
}

int main(void)
{
    RUN(test_first_error_wins);
    RUN(test_parts_that_are_known);
    RUN(test_cut_utf8_mended);
    TEST_MAIN_END("test_diag");
}
