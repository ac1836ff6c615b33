/*
 * quantity.c: resource.Quantity parsing (see quantity.h). Exact integer arithmetic: the digits
 * form a mantissa, the fraction, exponent and suffix a power of ten and of two; nothing goes
 * through floating point.
 */
#include "quantity.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

#define MANTISSA_DIGITS_MAX 18 /* fits in int64 */

static int mul_pow10(int64_t *v, int e)
{
    while (e-- > 0) {
        if (__builtin_mul_overflow(*v, 10, v))
            return -1;
    }
    return 0;
}

/* *v / 10^e rounded towards +infinity (values here are non-negative magnitudes). */
static void div_pow10_ceil(int64_t *v, int e)
{
    bool inexact = false;

    while (e-- > 0 && *v != 0) {
        if (*v % 10 != 0)
            inexact = true;
        *v /= 10;
    }
    if (e >= 0 && *v != 0) /* ran out of digits: the value is below one milli-unit */
        inexact = true, *v = 0;
    if (inexact)
        (*v)++;
}

/* Reads [sign]digits[.digits] into a mantissa and a power of ten. */
static const char *read_number(const char *p, bool *neg, int64_t *mant, int *exp10, bool *any)
{
    int sig = 0;

    *neg = false;
    *mant = 0;
    *exp10 = 0;
    *any = false;
    if (*p == '+' || *p == '-')
        *neg = (*p++ == '-');
    for (; *p >= '0' && *p <= '9'; p++) {
        *any = true;
        if (*mant == 0 && *p == '0')
            continue;
        if (sig++ >= MANTISSA_DIGITS_MAX)
            (*exp10)++; /* digits past the precision we keep only scale */
        else
            *mant = *mant * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            *any = true;
            if (*mant == 0 && *p == '0') {
                (*exp10)--;
                continue;
            }
            if (sig++ < MANTISSA_DIGITS_MAX) {
                *mant = *mant * 10 + (*p - '0');
                (*exp10)--;
            }
        }
    }
    return p;
}

static bool suffix_scale(const char *sfx, int *exp10, int *exp2)
{
    static const struct {
        const char *s;
        int e10, e2;
    } table[] = {
        {"", 0, 0},    {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
        {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40},
        {"Pi", 0, 50}, {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},
    };

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(sfx, table[i].s) == 0) {
            *exp10 = table[i].e10;
            *exp2 = table[i].e2;
            return true;
        }
    }
    return false;
}

int quantity_parse_milli(const char *s, int64_t *milli)
{
    bool neg, eneg, any, eany;
    int64_t mant, emant;
    int exp10, eexp10, sexp10 = 0, exp2 = 0;
    const char *p;

    p = read_number(s, &neg, &mant, &exp10, &any);
    if (!any)
        return -1;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0') {
        /* a decimal exponent (a lone "E" is the exa suffix): an integer, possibly signed */
        p = read_number(p + 1, &eneg, &emant, &eexp10, &eany);
        if (!eany || eexp10 != 0 || *p != '\0' || emant > 1000)
            return -1;
        sexp10 = (int)(eneg ? -emant : emant);
    } else if (!suffix_scale(p, &sexp10, &exp2)) {
        return -1;
    }
    exp10 += sexp10 + 3; /* to milli-units */
    for (int i = 0; i < exp2; i++) {
        if (__builtin_mul_overflow(mant, 2, &mant))
            return -1;
    }
    if (exp10 >= 0) {
        if (mul_pow10(&mant, exp10) < 0)
            return -1;
    } else {
        div_pow10_ceil(&mant, -exp10);
    }
    *milli = neg ? -mant : mant;
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
