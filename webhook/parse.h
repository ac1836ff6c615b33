/* parse.h: numbers from text, strictly: what a flag, a header, a label or a field says. */
#ifndef GPUADMIT_PARSE_H
#define GPUADMIT_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The decimal number that all of s is (one or more digits 0-9, leading zeros allowed: no sign,
 * no space, nothing after), into *out when it is from min to max. -1 otherwise (*out unset),
 * overflow included. parse_uintn reads the n bytes at s instead, which need not end in NUL. */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int parse_uintn(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out);

#endif
