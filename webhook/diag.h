/*
 * diag.h: the error a failed call leaves for its caller. The first error wins; later ones
 * are ignored, so a function can report the root cause and its callers need not overwrite it.
 */
#ifndef GPUADMIT_DIAG_H
#define GPUADMIT_DIAG_H

#include <stddef.h>

#define DIAG_MSG_MAX 512

struct diag {
    char file[256];  /* empty when the error is not about a file */
    unsigned line;   /* 1-based; 0 when unknown */
    unsigned column; /* 1-based; 0 when unknown */
    char msg[DIAG_MSG_MAX];
    int set;
};

void diag_clear(struct diag *d);
/* Record an error unless one is already recorded. file may be NULL. */
void diag_set(struct diag *d, const char *file, unsigned line, unsigned column, const char *fmt,
              ...) __attribute__((format(printf, 5, 6)));
/* "file:line:column: msg", or the parts that are known. Returns buf. */
const char *diag_format(const struct diag *d, char *buf, size_t len);

#endif
