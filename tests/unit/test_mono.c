/* Unit tests for mono.c: the three readings are of one clock, in their units, and never go back. */
#include <stdbool.h>
#include <time.h>

#include "harness.h"
#include "mono.h"

static void test_units_agree(void)
{
    uint64_t ns0 = mono_ns();
    int64_t ms = mono_ms();
    double s = mono_s();
    uint64_t ns1 = mono_ns();

    /* each read between ns0 and ns1, in its own unit */
    CHECK((uint64_t)ms >= ns0 / 1000000u && (uint64_t)ms <= ns1 / 1000000u);
    CHECK(s >= (double)ns0 / 1e9 - 1e-6 && s <= (double)ns1 / 1e9 + 1e-6);
}

static void test_never_goes_back(void)
{
    uint64_t prev = mono_ns(), now;
    bool back = false;

    for (int i = 0; i < 10000; i++) {
        now = mono_ns();
        back = back || now < prev;
        prev = now;
    }
    CHECK(!back);
}

static void test_counts_a_sleep(void)
{
    struct timespec req = {0, 20 * 1000000L};
    int64_t a = mono_ms(), b;

    nanosleep(&req, NULL);
    b = mono_ms();
    CHECK(b - a >= 20); /* at least the 20 ms slept (a loaded machine may add, never take) */
}

int main(void)
{
    RUN(test_units_agree);
    RUN(test_never_goes_back);
    RUN(test_counts_a_sleep);
    TEST_MAIN_END("test_mono");
}
