/*
 * mono.h: the monotonic clock (CLOCK_MONOTONIC), for intervals, deadlines and ages: it never
 * jumps with the wall clock and starts at an arbitrary point, so it never makes a date (log.c
 * stamps lines with CLOCK_REALTIME). One reading, in the unit each caller counts in.
 */
#ifndef GPUADMIT_MONO_H
#define GPUADMIT_MONO_H

#include <stdint.h>

uint64_t mono_ns(void);
int64_t mono_ms(void); /* whole milliseconds, rounded down */
double mono_s(void);

#endif
