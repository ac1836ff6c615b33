/*
 * buf.h: a byte buffer that grows by doubling, up to a cap its caller gives each time. Its
 * bytes are always followed by BUF_PAD zero bytes, so that it is a NUL-terminated string and
 * a document yyjson can read in place (JSON_READ_INSITU wants YYJSON_PADDING_SIZE of them).
 * Start it zeroed ({0}); p stays NULL until the first byte. Owned: free with buf_free().
 */
#ifndef GPUADMIT_BUF_H
#define GPUADMIT_BUF_H

#include <stddef.h>
#include <yyjson.h>

#define BUF_PAD       YYJSON_PADDING_SIZE
#define BUF_FIRST_CAP 4096u /* the first allocation */

struct buf {
    char *p;
    size_t len, cap; /* cap counts the padding */
};

/* Appends n bytes; -1 (buffer unchanged) when it would hold more than max bytes or out of
 * memory. */
int buf_add(struct buf *b, const void *data, size_t n, size_t max);
void buf_free(struct buf *b);

#endif
