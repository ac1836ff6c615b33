/* diag.c: first-error-wins error records; see diag.h. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

void diag_clear(struct diag *d)
{
    memset(d, 0, sizeof(*d));
}

void diag_set(struct diag *d, const char *file, unsigned line, unsigned column, const char *fmt,
              ...)
{
    va_list ap;

    if (d == NULL || d->set)
        return;
    d->set = 1;
    snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
    d->line = line;
    d->column = column;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
    text_utf8_fix(d->msg); /* "%.64s" or the buffer's end may cut a multi-byte character */
    text_utf8_fix(d->file);
}

const char *diag_format(const struct diag *d, char *buf, size_t len)
{
    if (d->file[0] && d->line)
        snprintf(buf, len, "%s:%u:%u: %s", d->file, d->line, d->column, d->msg);
    else if (d->file[0])
        snprintf(buf, len, "%s: %s", d->file, d->msg);
    else if (d->line)
        snprintf(buf, len, "%u:%u: %s", d->line, d->column, d->msg);
    else
        snprintf(buf, len, "%s", d->msg);
    return buf;
}
