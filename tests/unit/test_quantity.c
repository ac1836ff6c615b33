/*
 * test_quantity.c: quantity.c, resource.Quantity text and JSON values in milli-units, against
 * what k8s.io/apimachinery/pkg/api/resource makes of them.
 */
#include <yyjson.h>

#include "harness.h"
#include "quantity.h"

/* JSON written with single quotes, for readability. New document. */
#define js harness_json

/* A string, and whether it parses and to how many milli-units. */
struct qcase {
    const char *s;
    int ok;
    int64_t milli;
};

/* One check per case. */
static void check_cases(const struct qcase *cases, size_t n)
{
    int64_t m;

    for (size_t i = 0; i < n; i++) {
        int rc = quantity_parse_milli(cases[i].s, &m);

        if (cases[i].ok ? (rc == 0 && m == cases[i].milli) : rc < 0) {
            harness_passed++;
        } else {
            harness_failed++;
            printf("quantity \"%s\": rc %d milli %lld, want ok=%d milli %lld\n", cases[i].s, rc,
                   (long long)m, cases[i].ok, (long long)cases[i].milli);
        }
    }
}

#define CHECK_CASES(cases) check_cases(cases, sizeof(cases) / sizeof(cases[0]))

static void test_quantity(void)
{
    static const struct qcase cases[] = {
        {"1", 1, 1000},      {"0", 1, 0},         {"1000m", 1, 1000},
        {"1500m", 1, 1500},  {"2k", 1, 2000000},  {"1Ki", 1, 1024000},
        {"1e3", 1, 1000000}, {"1E3", 1, 1000000}, {"1P", 1, 1000000000000000000LL},
        {"1E", 0, 0},        {"01", 1, 1000},     {"+2", 1, 2000},
        {"-1", 1, -1000},    {"0.5", 1, 500},     {".5", 1, 500},
        {"1.", 1, 1000},     {"1.0001", 1, 1001}, {"1n", 1, 1},
        {"100u", 1, 1},      {"1e-3", 1, 1},      {"2Mi", 1, 2097152000},
        {"", 0, 0},          {"abc", 0, 0},       {"1x", 0, 0},
        {"1 ", 0, 0},        {"1e", 0, 0},        {"--1", 0, 0},
        {"1.2.3", 0, 0},     {"9Ei", 0, 0},       {"99999999999999999999", 0, 0},
        {"1e99", 0, 0},      {".", 1, 0},         {"e3", 1, 0},
    };
    int64_t m;

    CHECK_CASES(cases);
    {
        yyjson_doc *doc = js("[3, 2.0, '4', true, 18446744073709551615, -3, '1\\u00002']");
        yyjson_val *a = harness_val(doc);

        CHECK(quantity_json_milli(yyjson_arr_get(a, 0), &m) == 0 && m == 3000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 1), &m) == 0 && m == 2000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 2), &m) == 0 && m == 4000);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 3), &m) == -1);
        /* a uint64 past INT64_MAX is out of range, never wrapped to -1 */
        CHECK(quantity_json_milli(yyjson_arr_get(a, 4), &m) == -1);
        CHECK(quantity_json_milli(yyjson_arr_get(a, 5), &m) == 0 && m == -3000);
        /* a NUL inside is no quantity ("1" would be its part before the NUL) */
        CHECK(quantity_json_milli(yyjson_arr_get(a, 6), &m) == -1);
        yyjson_doc_free(doc);
    }
}

/* Every suffix of the grammar, as k8s.io/apimachinery/pkg/api/resource/suffix.go defines it:
 * decimal n u m "" k M G T P E (10^-9 .. 10^18), binary Ki Mi Gi Ti Pi Ei (2^10 .. 2^60); and
 * MilliValue() rounding up (quantity.go). Values in milli-units; int64 holds up to about
 * 9.2e18 of them, so 1Ei (2^60 units) does not fit. */
static void test_quantity_suffixes(void)
{
    static const struct qcase cases[] = {
        {"1M", 1, 1000000000LL},
        {"1G", 1, 1000000000000LL},
        {"1T", 1, 1000000000000000LL},
        {"2P", 1, 2000000000000000000LL},
        {"1Mi", 1, 1048576000LL},
        {"1Gi", 1, 1073741824000LL},
        {"1.5Gi", 1, 1610612736000LL},
        {"1Ti", 1, 1099511627776000LL},
        {"1Pi", 1, 1125899906842624000LL},
        {"8Pi", 1, 9007199254740992000LL},
        {"1Ei", 0, 0},
        {"16Pi", 0, 0},
        {"10E", 0, 0},
        {"1m", 1, 1},
        {"1u", 1, 1},
        {"1500u", 1, 2},
        {"1000000n", 1, 1},
        {"1000000u", 1, 1000},
        {"1500000n", 1, 2},
        {"0.001E", 1, 1000000000000000000LL},
        {"3k", 1, 3000000LL},
        {"1K", 0, 0}, /* the kilo suffix is lower case only */
        {"1gi", 0, 0},
        {"1GI", 0, 0},
    };

    CHECK_CASES(cases);
}

/* Every digit counts, however many there are. ParseQuantity keeps a number of more digits
 * than an int64 holds exactly (an inf.Dec), rounds it up to 1n and MilliValue() rounds that up
 * to 1m (quantity.go, ParseQuantity and ScaledValue; scale_int.go, scaledValue), so a digit
 * past the 18th still makes "1.0000000000000000001" more than 1000m, which the apiserver's
 * validation then refuses as no integer for an extended resource. A binary suffix multiplies
 * the exact value before that rounding ("Ki" .. "Ei", 2^10 .. 2^60, suffix.go), so a value
 * whose milli-units fit int64 is never refused for the size of a product on the way. */
static void test_quantity_exact(void)
{
    static const struct qcase cases[] = {
        {"1.0000000000000000001", 1, 1001},
        {"1.0000000000000000000001", 1, 1001},
        {"1000000000000000001m", 1, 1000000000000000001LL},
        {"9223372036854775807m", 1, INT64_MAX},
        {"9223372036854775.807", 1, INT64_MAX},
        {"9223372036854775808m", 0, 0},
        {"9223372036854775.8071", 0, 0},       /* rounded up: one past INT64_MAX */
        {"0.001Ei", 1, 1152921504606846976LL}, /* 2^60 / 1000 units */
        {"0.000000000000000000001Ei", 1, 2},   /* 1.15 milli-units, rounded up */
        {"7.99999Pi", 1, 9007187995741923574LL},
        {"1.00000000000000000Ki", 1, 1024000},
        {".61436537056563048137Mi", 1, 644208783},
        {"0.0000001Ki", 1, 1},
    };

    CHECK_CASES(cases);
}

/* A number without a digit is 0: parseQuantityString takes the numerator for "0" when there
 * is none, whatever sign, point or suffix stands around it (quantity.go), so ParseQuantity
 * returns 0 for all of these, as it does for "0". Only the empty string is refused
 * (ErrFormatWrong, before any scanning). */
static void test_quantity_no_digit(void)
{
    static const struct qcase cases[] = {
        {"+", 1, 0},  {"-", 1, 0},    {".", 1, 0},  {"+.", 1, 0}, {"k", 1, 0},
        {"Mi", 1, 0}, {".e-3", 1, 0}, {"-E", 1, 0}, {"", 0, 0},   {"+x", 0, 0},
    };

    CHECK_CASES(cases);
}

int main(void)
{
    RUN(test_quantity);
    RUN(test_quantity_suffixes);
    RUN(test_quantity_exact);
    RUN(test_quantity_no_digit);
    TEST_MAIN_END("test_quantity");
}
