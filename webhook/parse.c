/*
 * parse.c: strict number parsing (see parse.h). strtoull would skip spaces, take a sign, stop
 * at the first non-digit and saturate on overflow; each of those is a way for "25%x" or " 8" to
 * mean something, so the digits are read here and nothing else is accepted.
 */
#include "parse.h"

#include <string.h>

int parse_uintn(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
            return -1;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    return parse_uintn(s, strlen(s), min, max, out);
}
