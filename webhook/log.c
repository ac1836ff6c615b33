/*
 * log.c: JSON-lines logging to stderr. The only state is the level, set once at startup
 * before any thread starts; after that it is read-only.
 */
#include "log.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"

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

void log_event(enum log_level level, const char *msg, json_t *fields)
{
    char when[40];
    json_t *line = NULL;
    char *text = NULL;
    size_t len;

    if (!log_enabled(level))
        goto out;
    format_time(when, sizeof(when));
    line = json_pack("{s:s, s:s, s:s}", "time", when, "level", level_names[level], "msg",
                     msg ? msg : "");
    if (line == NULL)
        goto out;
    if (json_is_object(fields))
        json_object_update_missing(line, fields);
    text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text != NULL && strlen(text) >= LOG_LINE_MAX) {
        /* an oversized line (a huge field) is replaced by its head, still valid JSON */
        free(text);
        json_object_clear(line);
        json_object_set_new(line, "time", json_string(when));
        json_object_set_new(line, "level", json_string(level_names[level]));
        json_object_set_new(line, "msg", json_string(msg ? msg : ""));
        json_object_set_new(line, "fields_dropped", json_string("line too long"));
        text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    if (text == NULL)
        goto out;
    len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: the line goes out in one write */
    /* best effort: a full or closed stderr must not take the server down */
    if (write(log_fd, text, len + 1) < 0) {
    }
out:
    free(text);
    json_decref(line);
    json_decref(fields);
}
