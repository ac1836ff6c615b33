/* mono.c: the monotonic clock (see mono.h). */
#include "mono.h"

#include <time.h>

uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t mono_ms(void)
{
    return (int64_t)(mono_ns() / 1000000u);
}

double mono_s(void)
{
    struct timespec ts;

    /* not mono_ns() / 1e9: a double keeps the nanoseconds of the two fields, not of the sum */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
