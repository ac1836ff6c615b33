/* text.h: UTF-8 clean-up of outgoing strings. */
#ifndef GPUADMIT_TEXT_H
#define GPUADMIT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* New (free with free()): text as valid UTF-8, a bad byte replaced by '?', at most max_runes
 * code points, control characters (C0, DEL, C1) turned into spaces when controls_to_space. */
char *text_utf8_clean(const char *text, size_t max_runes, bool controls_to_space);
/* Whether n bytes of text are valid UTF-8 (NUL bytes are: yyjson writes them as \u0000). */
bool text_utf8_valid(const char *text, size_t n);
/* In place: replaces invalid bytes by '?'. */
void text_utf8_fix(char *s);
/* A user's value for a message, into out (size len, NUL-terminated): at most max bytes of the
 * n bytes of s, never cutting a UTF-8 character, a NUL written \u0000, "..." when cut. */
void text_excerpt(const char *s, size_t n, size_t max, char *out, size_t len);

#endif
