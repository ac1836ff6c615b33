/*
 * text.c: UTF-8 hygiene for strings that leave the process (JSON responses, log lines, warnings).
 * yyjson's writer refuses invalid UTF-8 (it fails the whole document, as jansson refused the
 * string), so a message cut mid-sequence by a printf precision would otherwise cost the response
 * or the log line instead of reaching the operator.
 */
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not valid UTF-8. */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
    size_t len;
    unsigned c = s[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, c &= 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, c &= 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, c &= 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* A new copy of text that is valid UTF-8 (a bad byte becomes '?'), at most max_runes long, with
 * control characters (Go's unicode.IsControl: C0, DEL, C1) turned into spaces when asked. */
char *text_utf8_clean(const char *text, size_t max_runes, bool controls_to_space)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text), i = 0, o = 0, runes = 0;
    char *out = malloc(n + 1); /* every replacement is one byte for one or more */
    unsigned cp;
    size_t len;

    if (out == NULL)
        return NULL;
    while (i < n && runes < max_runes) {
        len = utf8_seq(s + i, n - i, &cp);
        if (len == 0) {
            out[o++] = '?';
            i++;
        } else if (controls_to_space && (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))) {
            out[o++] = ' ';
            i += len;
        } else {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        }
        runes++;
    }
    out[o] = '\0';
    return out;
}

bool text_utf8_valid(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    unsigned cp;
    size_t len;

    for (size_t i = 0; i < n; i += len) {
        len = utf8_seq(s + i, n - i, &cp);
        if (len == 0)
            return false;
    }
    return true;
}

void text_utf8_fix(char *s)
{
    char *clean = text_utf8_clean(s, (size_t)-1, false);

    if (clean != NULL) {
        memcpy(s, clean, strlen(clean) + 1); /* never longer than s */
        free(clean);
    }
}

void text_excerpt(const char *s, size_t n, size_t max, char *out, size_t len)
{
    size_t take = n < max ? n : max, o = 0;

    /* back off to the start of the character the cut falls in */
    while (take < n && take > 0 && ((unsigned char)s[take] & 0xC0) == 0x80)
        take--;
    for (size_t i = 0; i < take && o + 7 < len; i++) {
        if (s[i] == '\0') {
            memcpy(out + o, "\\u0000", 6);
            o += 6;
        } else {
            out[o++] = s[i];
        }
    }
    if (take < n && o + 4 <= len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    text_utf8_fix(out); /* whatever s was, the excerpt is UTF-8 */
}
