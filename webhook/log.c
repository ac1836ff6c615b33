/*
 * log.c: JSON-lines logging to stderr. The state is the level and the descriptor, set once at
 * startup before any thread starts and read-only after that, and each thread's arena.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "bounds.h"
#include "text.h"

static enum log_level min_level = LOG_INFO;
static int log_fd = STDERR_FILENO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    min_level = level;
}

void log_set_fd(int fd)
{
    log_fd = fd;
}

bool log_enabled(enum log_level level)
{
    return level >= min_level;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

static void format_time(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03dZ", (int)(ts.tv_nsec / 1000000L));
}

/* One dynamic allocator per thread: documents and written lines come from it and go back to
 * it, so after the first lines a thread logs without malloc. Freed when the thread ends. */
static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

static void arena_free(void *a)
{
    yyjson_alc_dyn_free(a);
}

static void arena_key_make(void)
{
    if (pthread_key_create(&arena_key, arena_free) != 0)
        arena_key = (pthread_key_t)-1;
}

static const yyjson_alc *arena(void)
{
    yyjson_alc *a;

    pthread_once(&arena_once, arena_key_make);
    if (arena_key == (pthread_key_t)-1)
        return NULL;
    a = pthread_getspecific(arena_key);
    if (a == NULL) {
        a = yyjson_alc_dyn_new();
        if (a != NULL && pthread_setspecific(arena_key, a) != 0) {
            yyjson_alc_dyn_free(a);
            a = NULL;
        }
    }
    return a;
}

static void emit(const yyjson_alc *alc, yyjson_mut_doc *doc, yyjson_mut_val *line)
{
    yyjson_write_err err;
    size_t len = 0;
    char *text = yyjson_mut_val_write_opts(line, YYJSON_WRITE_NOFLAG, alc, &len, &err);

    if (text == NULL && err.code == YYJSON_WRITE_ERROR_INVALID_STRING) {
        /* a field cut in the middle of a character ("%.64s" of a user's value): the line is
         * written anyway, each invalid byte as '?', rather than lost (a denial that leaves no
         * log line is one an attacker can provoke). Only string contents can hold them. */
        text = yyjson_mut_val_write_opts(line, YYJSON_WRITE_ALLOW_INVALID_UNICODE, alc, &len, &err);
        if (text != NULL) {
            text_utf8_fix(text);
            len = strlen(text);
        }
    }
    if (text == NULL)
        return;
    if (len + 1 > LOG_LINE_MAX) {
        /* an oversized line (a huge field) is replaced by its head, still valid JSON */
        yyjson_mut_val *head = yyjson_mut_obj(doc), *k, *v;
        size_t idx, max;

        if (alc)
            alc->free(alc->ctx, text);
        else
            free(text);
        text = NULL;
        if (head == NULL)
            return;
        yyjson_mut_obj_foreach (line, idx, max, k, v) {
            if (idx >= 3) /* time, level, msg */
                break;
            yyjson_mut_obj_add(head, k, yyjson_mut_val_mut_copy(doc, v));
        }
        yyjson_mut_obj_add_str(doc, head, "fields_dropped", "line too long");
        text = yyjson_mut_val_write_opts(head, YYJSON_WRITE_NOFLAG, alc, &len, &err);
        if (text == NULL)
            return;
    }
    /* the line and its newline in one write; yyjson leaves room for the NUL, which this takes */
    text[len] = '\n';
    /* best effort: a full or closed stderr must not take the server down */
    if (write(log_fd, text, len + 1) < 0) {
    }
    if (alc)
        alc->free(alc->ctx, text);
    else
        free(text);
}

static yyjson_mut_val *line_head(yyjson_mut_doc *doc, enum log_level level, const char *msg)
{
    char when[40];

    format_time(when, sizeof(when));
    return json_pack(doc, "{s:s, s:s, s:s}", "time", when, "level", level_names[level], "msg",
                     msg ? msg : "");
}

static void append_members(yyjson_mut_doc *doc, yyjson_mut_val *line, yyjson_mut_val *fields)
{
    yyjson_mut_val *k, *v;
    size_t idx, max;

    yyjson_mut_obj_foreach (fields, idx, max, k, v) {
        const char *key = yyjson_mut_get_str(k);

        /* time, level and msg are the line's own */
        if (yyjson_mut_obj_getn(line, key, yyjson_mut_get_len(k)) != NULL)
            continue;
        yyjson_mut_obj_add(line, yyjson_mut_val_mut_copy(doc, k), yyjson_mut_val_mut_copy(doc, v));
    }
}

/* The line of level and msg with the members of fields (an object of any document, or NULL),
 * built in doc and written. */
static void write_line(const yyjson_alc *alc, yyjson_mut_doc *doc, enum log_level level,
                       const char *msg, yyjson_mut_val *fields)
{
    yyjson_mut_val *line = line_head(doc, level, msg);

    if (line == NULL)
        return;
    if (yyjson_mut_is_obj(fields))
        append_members(doc, line, fields);
    emit(alc, doc, line);
}

/* A document for one line at level, from the thread's arena; NULL when the level is off. */
static yyjson_mut_doc *line_doc(enum log_level level, const yyjson_alc **alc)
{
    if (!log_enabled(level))
        return NULL;
    *alc = arena();
    return yyjson_mut_doc_new(*alc);
}

void log_event(enum log_level level, const char *msg, const char *fmt, ...)
{
    const yyjson_alc *alc = NULL;
    yyjson_mut_doc *doc = line_doc(level, &alc);
    yyjson_mut_val *fields = NULL;

    if (doc == NULL)
        return;
    if (fmt != NULL) {
        va_list ap;

        va_start(ap, fmt);
        fields = json_vpack(doc, fmt, &ap);
        va_end(ap);
    }
    write_line(alc, doc, level, msg, fields);
    yyjson_mut_doc_free(doc);
}

void log_event_obj(enum log_level level, const char *msg, yyjson_mut_val *fields)
{
    const yyjson_alc *alc = NULL;
    yyjson_mut_doc *doc = line_doc(level, &alc);

    if (doc == NULL)
        return;
    write_line(alc, doc, level, msg, fields);
    yyjson_mut_doc_free(doc);
}
