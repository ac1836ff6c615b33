/*
 * test_buf.c: buf.c, the growable buffer of list pages, watch lines, SAN lists and manifests:
 * always NUL-padded, never past its cap, unchanged by a refusal.
 */
#include <string.h>

#include "buf.h"
#include "harness.h"

static bool padded(const struct buf *b)
{
    for (size_t i = 0; i < BUF_PAD; i++)
        if (b->p[b->len + i] != '\0')
            return false;
    return b->len + BUF_PAD <= b->cap;
}

static void grows_and_refuses(void)
{
    struct buf b = {0};
    char big[10000];

    memset(big, 'x', sizeof(big));
    CHECK(buf_add(&b, "", 0, 10) == 0 && b.p != NULL && b.len == 0 && padded(&b));
    CHECK(buf_add(&b, "abc", 3, 10) == 0 && strcmp(b.p, "abc") == 0 && padded(&b));
    CHECK(buf_add(&b, "defghijk", 8, 10) == -1); /* 11 > 10: refused, unchanged */
    CHECK(b.len == 3 && strcmp(b.p, "abc") == 0 && padded(&b));
    CHECK(buf_add(&b, "defghij", 7, 10) == 0 && b.len == 10 && padded(&b)); /* exactly the cap */
    buf_free(&b);
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
    for (int i = 0; i < 5; i++) /* past the first allocation, doubling */
        CHECK(buf_add(&b, big, sizeof(big), 1u << 20) == 0 && padded(&b));
    CHECK(b.len == 5 * sizeof(big) && b.cap >= b.len + BUF_PAD && b.p[b.len - 1] == 'x');
    CHECK(buf_add(&b, big, 1, (size_t)-1) == 0 && b.len == 5 * sizeof(big) + 1);
    buf_free(&b);
    buf_free(&b); /* twice: nothing to do */
}

int main(void)
{
    RUN(grows_and_refuses);
    TEST_MAIN_END("test_buf");
}
