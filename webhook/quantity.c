/*
 * quantity.c: resource.Quantity parsing (see quantity.h), as ParseQuantity and MilliValue() do
 * it (k8s.io/apimachinery/pkg/api/resource/quantity.go, suffix.go). Exact integer arithmetic
 * whatever the number of digits: the digits left of the milli-unit point make an integer, those
 * right of it a fraction that the binary suffix multiplies digit by digit from its last, so that
 * the rounding up sees every digit; nothing goes through floating point.
 */
#include "quantity.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "parse.h"

/* A suffix as suffix.go's interpret() reads it: one of the table (decimal SI, binary SI), else
 * "e" or "E" and a signed decimal exponent. An exponent past int32 is refused: ParseQuantity
 * wraps it with int32(). */
static bool suffix_scale(const char *sfx, int64_t *exp10, int *exp2)
{
    static const struct {
        const char *s;
        int e10, e2;
    } table[] = {
        {"", 0, 0},    {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
        {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40},
        {"Pi", 0, 50}, {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},
    };
    const char *digits = sfx + 1;
    uint64_t e;

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(sfx, table[i].s) == 0) {
            *exp10 = table[i].e10;
            *exp2 = table[i].e2;
            return true;
        }
    }
    if (sfx[0] != 'e' && sfx[0] != 'E')
        return false;
    if (*digits == '+' || *digits == '-')
        digits++;
    if (parse_uint(digits, 0, INT32_MAX, &e) < 0)
        return false;
    *exp10 = sfx[1] == '-' ? -(int64_t)e : (int64_t)e;
    *exp2 = 0;
    return true;
}

/* The i-th digit of the number whose integer digits are the n_int at in and whose fraction
 * digits follow at frac. */
static int digit_at(const char *in, size_t n_int, const char *frac, size_t i)
{
    return (i < n_int ? in[i] : frac[i - n_int]) - '0';
}

int quantity_parse_milli(const char *s, int64_t *milli)
{
    const char *p = s, *in, *frac = "";
    size_t n_int, n_frac = 0, n;
    int64_t exp10, point, whole = 0;
    uint64_t carry = 0;
    bool neg = false, rest = false;
    int exp2;

    if (*s == '\0')
        return -1;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    /* digits, then "." and digits; either may be empty, and so may both: parseQuantityString
     * makes the numerator "0" then, so that ParseQuantity takes "+", "." or "k" for 0 */
    in = p;
    p += strspn(p, "0123456789");
    n_int = (size_t)(p - in);
    if (*p == '.') {
        frac = ++p;
        p += strspn(p, "0123456789");
        n_frac = (size_t)(p - frac);
    }
    if (!suffix_scale(p, &exp10, &exp2))
        return -1;
    n = n_int + n_frac;
    /* the milli-unit point, in digits from the first */
    point = (int64_t)n_int + exp10 + 3;

    /* the digits left of it, then the zeros of a point past the last digit */
    for (size_t i = 0; (int64_t)i < point && i < n; i++) {
        if (__builtin_mul_overflow(whole, 10, &whole) ||
            __builtin_add_overflow(whole, digit_at(in, n_int, frac, i), &whole))
            return -1;
    }
    for (int64_t i = (int64_t)n; i < point && whole != 0; i++) {
        if (__builtin_mul_overflow(whole, 10, &whole))
            return -1;
    }
    if (exp2 > 0 && whole > (INT64_MAX >> exp2))
        return -1;
    whole <<= exp2;

    /* the fraction right of it times 2^exp2, from its last digit: carry is its integer part,
     * rest whether anything is left below (then MilliValue() rounds up). carry stays below
     * 2^exp2, so a digit times 2^60 plus carry fits 64 bits. Zeros between the point and the
     * first digit only divide carry by ten: once it is 0 they change nothing. */
    for (size_t i = n; i > 0 && (int64_t)(i - 1) >= point; i--) {
        uint64_t v = ((uint64_t)digit_at(in, n_int, frac, i - 1) << exp2) + carry;

        rest = rest || v % 10 != 0;
        carry = v / 10;
    }
    for (int64_t i = point < 0 ? point : 0; i < 0 && carry != 0; i++) {
        rest = rest || carry % 10 != 0;
        carry /= 10;
    }
    if (__builtin_add_overflow(whole, (int64_t)carry + (rest ? 1 : 0), &whole))
        return -1;
    *milli = neg ? -whole : whole;
    return 0;
}

int quantity_json_milli(yyjson_val *v, int64_t *milli)
{
    char buf[64];
    int64_t n;

    /* byte for byte: "1\u0000000" is not the quantity "1" (quantity_parse_milli would stop at
     * the NUL) */
    if (yyjson_is_str(v))
        return strlen(yyjson_get_str(v)) == yyjson_get_len(v)
                   ? quantity_parse_milli(yyjson_get_str(v), milli)
                   : -1;
    /* jansson's integers were int64: a uint64 past INT64_MAX is out of range, as there (never
     * yyjson_get_sint, which would wrap it) */
    if (yyjson_is_int(v)) {
        if (!json_int64(v, &n) || __builtin_mul_overflow(n, 1000, milli))
            return -1;
        return 0;
    }
    if (yyjson_is_real(v)) {
        snprintf(buf, sizeof(buf), "%.17g", yyjson_get_real(v));
        return quantity_parse_milli(buf, milli);
    }
    return -1;
}
