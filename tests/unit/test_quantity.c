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

/* A mix of the grammar's forms (the <quantity> grammar atop quantity.go), each value the
 * milli-units ParseQuantity then MilliValue() give; the JSON values as UnmarshalJSON reads them,
 * a number's text or a string's contents (quantity.go), so that 2.0 is "2.0" and true is no
 * quantity. */
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

/* What ParseQuantity refuses: parseQuantityString's ErrFormatWrong (quantity.go: a character
 * that is neither a digit, a point, a suffix letter nor an exponent's sign, a second point,
 * space on either side, which only UnmarshalJSON trims), and interpret()'s ErrSuffix (suffix.go:
 * a suffix outside the table, "e" without digits, a suffix and an exponent together). */
static void test_quantity_rejected(void)
{
    static const struct qcase cases[] = {
        {"1.5.2", 0, 0}, {"1..", 0, 0},   {"", 0, 0},     {" 1", 0, 0},    {"1 ", 0, 0},
        {"\t1", 0, 0},   {"1\n", 0, 0},   {"0x10", 0, 0}, {"0X10", 0, 0},  {"1,5", 0, 0},
        {"1_000", 0, 0}, {"1e3.5", 0, 0}, {"1e3e", 0, 0}, {"1e--3", 0, 0}, {"1e", 0, 0},
        {"1e+", 0, 0},   {"1Ee3", 0, 0},  {"1E3i", 0, 0}, {"1e3k", 0, 0},  {"1k3", 0, 0},
        {"2e1k", 0, 0},  {"1e18m", 0, 0}, {"1ki", 0, 0},  {"1mi", 0, 0},   {"1Kb", 0, 0},
        {"+-1", 0, 0},   {"1-", 0, 0},    {"1+", 0, 0},
    };

    CHECK_CASES(cases);
}

/* <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber> (quantity.go), its number read
 * by strconv.ParseInt in interpret() (suffix.go): a sign and leading zeros are fine. A value
 * below one milli-unit rounds up to 1m (MilliValue() is ceil(q / 10^-3)), however small. */
static void test_quantity_exponents(void)
{
    static const struct qcase cases[] = {
        {"1e+3", 1, 1000000},
        {"1E-3", 1, 1},
        {"1e0", 1, 1000},
        {"1E0", 1, 1000},
        {"1e-0", 1, 1000},
        {"12e-1", 1, 1200},
        {"1e00000003", 1, 1000000},
        {"1.5e3", 1, 1500000},
        {"5e-4", 1, 1},
        {"1e-9", 1, 1},
        {"1e-10", 1, 1},
        {"1e-300", 1, 1},
        {"1e-2147483647", 1, 1},
        {"0e300", 1, 0},
        {"0e2147483647", 1, 0},
    };

    CHECK_CASES(cases);
}

/* <signedNumber> ::= <number> | <sign><number>, one sign at most (quantity.go). A negative
 * value keeps its sign and, exact, its value; an inexact one is only promised to stay below 0:
 * MilliValue() truncates and adds one (scale_int.go, scaledValue), -1.0001 becoming -999m,
 * which is no ceiling, so the apiserver judges a negative amount by the sign of the Quantity
 * (ValidateNonnegativeQuantity), and so does gpuadmit. */
static void test_quantity_signs(void)
{
    static const struct qcase cases[] = {
        {"+1", 1, 1000},  {"-1", 1, -1000},      {"-0", 1, 0},
        {"+0.5", 1, 500}, {"-1e3", 1, -1000000}, {"-1.5Gi", 1, -1610612736000LL},
        {"--1", 0, 0},    {"++1", 0, 0},         {"-9223372036854775807m", 1, -INT64_MAX},
    };
    int64_t m = 0;

    CHECK_CASES(cases);
    CHECK(quantity_parse_milli("-1.0001", &m) == 0 && m < 0);
    CHECK(quantity_parse_milli("-1n", &m) == 0 && m < 0);
}

/* ParseQuantity keeps a value of any size (an inf.Dec), but MilliValue() "could overflow an
 * int64" and then returns a wrapped value (quantity.go, ScaledValue; 1Ei gives
 * -9223372036854775808, 1E gives 0), so gpuadmit refuses a value whose milli-units, rounded
 * up, pass INT64_MAX (quantity.h): never a wrapped count. An exponent past int32 is refused
 * too, which interpret() would wrap with int32() (suffix.go). */
static void test_quantity_overflow(void)
{
    static const struct qcase cases[] = {
        {"1Ei", 0, 0},
        {"1E", 0, 0},
        {"9223372036854776", 0, 0},
        {"9223372036854775", 1, 9223372036854775000LL},
        {"9223372036854775808m", 0, 0},
        {"1e19m", 0, 0},
        {"1e300", 0, 0},
        {"1e2147483647", 0, 0},
        {"1e2147483648", 0, 0},
        {"0e2147483648", 0, 0},
        {"8Pi", 1, 9007199254740992000LL},
        {"9Pi", 0, 0},
        {"-9223372036854775808m", 0, 0},
    };

    CHECK_CASES(cases);
}

int main(void)
{
    RUN(test_quantity);
    RUN(test_quantity_suffixes);
    RUN(test_quantity_exact);
    RUN(test_quantity_no_digit);
    RUN(test_quantity_rejected);
    RUN(test_quantity_exponents);
    RUN(test_quantity_signs);
    RUN(test_quantity_overflow);
    TEST_MAIN_END("test_quantity");
}
