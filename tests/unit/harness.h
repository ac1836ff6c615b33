/*
 * harness.h: a tiny test harness. Each CHECK counts one assertion; a failed one prints where and
 * why and the test goes on. TEST_MAIN prints the closing line "N passed, M failed" and exits
 * non-zero when anything failed.
 */
#ifndef GPUADMIT_HARNESS_H
#define GPUADMIT_HARNESS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int harness_passed, harness_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            harness_passed++;                                                                      \
        } else {                                                                                   \
            harness_failed++;                                                                      \
            fprintf(stdout, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, __func__, #cond); \
        }                                                                                          \
    } while (0)

#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (g_ != NULL && w_ != NULL && strcmp(g_, w_) == 0) {                                     \
            harness_passed++;                                                                      \
        } else {                                                                                   \
            harness_failed++;                                                                      \
            fprintf(stdout, "%s:%d: %s: %s is \"%s\", want \"%s\"\n", __FILE__, __LINE__,          \
                    __func__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");                       \
        }                                                                                          \
    } while (0)

/* substring match, for error messages */
#define CHECK_CONTAINS(got, want)                                                                  \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (g_ != NULL && strstr(g_, w_) != NULL) {                                                \
            harness_passed++;                                                                      \
        } else {                                                                                   \
            harness_failed++;                                                                      \
            fprintf(stdout, "%s:%d: %s: %s is \"%s\", which lacks \"%s\"\n", __FILE__, __LINE__,   \
                    __func__, #got, g_ ? g_ : "(null)", w_);                                       \
        }                                                                                          \
    } while (0)

#define RUN(test)                                                                                  \
    do {                                                                                           \
        int before_ = harness_failed;                                                              \
        test();                                                                                    \
        if (harness_failed != before_)                                                             \
            fprintf(stdout, "FAIL %s\n", #test);                                                   \
    } while (0)

#define TEST_MAIN_END(name)                                                                        \
    do {                                                                                           \
        printf("%s: %d passed, %d failed\n", name, harness_passed, harness_failed);                \
        return harness_failed ? 1 : 0;                                                             \
    } while (0)

/* Reads a whole file into a new NUL-terminated buffer; aborts the test run when it cannot. */
static inline char *harness_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Writes len bytes of text to path (created 0600, truncated); aborts the test run when it cannot.
 */
static inline void harness_put(const char *path, const void *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    close(fd);
}

#ifdef YYJSON_H
/* A JSON document from text written with single quotes, for readability in C strings: any root,
 * read by yyjson itself (integers past 64 bits kept raw, not made doubles). New document (free with
 * yyjson_doc_free()); aborts the run on a typo in a test. harness_val() is its root. */
static inline yyjson_doc *harness_json(const char *text)
{
    char *buf = strdup(text);
    yyjson_doc *doc;
    yyjson_read_err err;

    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    doc = yyjson_read_opts(buf, strlen(buf), YYJSON_READ_BIGNUM_AS_RAW, NULL, &err);
    if (doc == NULL) {
        printf("bad test JSON (%s at byte %zu): %s\n", err.msg, err.pos, text);
        exit(2);
    }
    free(buf);
    return doc;
}

#define harness_val(doc) yyjson_doc_get_root(doc)
#endif

#ifdef GPUADMIT_CLUSTER_H
/* A cluster view loaded from tests/data/snapshots/NAME (NULL for NULL: no view); aborts the run
 * when the snapshot does not load. Free with cluster_free(). */
static inline struct cluster *harness_view(const char *name)
{
    struct cluster_config cfg = {60};
    struct cluster *v;
    char path[256];
    struct diag d;

    if (name == NULL)
        return NULL;
    v = cluster_new(&cfg);
    snprintf(path, sizeof(path), "tests/data/snapshots/%s", name);
    diag_clear(&d);
    if (cluster_load_snapshot(v, path, &d) < 0) {
        printf("cannot load %s: %s\n", path, d.msg);
        exit(2);
    }
    return v;
}
#endif

#endif
