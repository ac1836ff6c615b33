/* buf.c: the growable byte buffer (see buf.h). Invariant: p == NULL, or len + BUF_PAD <= cap
 * and p[len .. len + BUF_PAD) are zero. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

int buf_add(struct buf *b, const void *data, size_t n, size_t max)
{
    size_t ncap;
    char *np;

    if (n > max || b->len > max - n)
        return -1;
    if (b->len + n + BUF_PAD > b->cap) {
        ncap = b->cap ? b->cap : BUF_FIRST_CAP;
        while (ncap < b->len + n + BUF_PAD)
            ncap *= 2;
        np = realloc(b->p, ncap);
        if (np == NULL)
            return -1;
        b->p = np;
        b->cap = ncap;
    }
    if (n > 0)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    memset(b->p + b->len, 0, BUF_PAD);
    return 0;
}

void buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}
