/*
 * log.h: structured logs, one JSON object per line on stderr:
 *   {"time":"2026-11-29T17:03:45.123Z","level":"info","msg":"listening","addr":"127.0.0.1:8443"}
 * Callers check log_enabled() before building fields on hot paths. Nothing secret is ever
 * passed here: tokens and key material stay out of fields by construction.
 */
#ifndef GPUADMIT_LOG_H
#define GPUADMIT_LOG_H

#include <stdbool.h>
#include <yyjson.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
/* Where lines go (stderr by default); set once, before threads start. Tests use it to read
 * the log while sanitizer reports still reach stderr. */
void log_set_fd(int fd);
bool log_enabled(enum log_level level);
/* Parses "debug", "info", "warn", "error"; -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);

/* Writes one line: time, level and msg, then the members packed from fmt, an object in
 * json_pack()'s format (json.h; 'o' cannot be used, there is no document to build in), or NULL
 * for none. Nothing is packed when the level is off. A line is written with one write(2), and
 * built in a per-thread arena: a log line costs no malloc once the thread has logged before. */
void log_event(enum log_level level, const char *msg, const char *fmt, ...);
/* The same with the members of fields, an object of any mutable document (borrowed), or NULL. */
void log_event_obj(enum log_level level, const char *msg, yyjson_mut_val *fields);

#endif
