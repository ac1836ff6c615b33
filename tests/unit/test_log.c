/*
 * test_log.c: log.c, one JSON object per line, never lost: a field cut in the middle of a UTF-8
 * character (a user's value quoted with "%.64s") and a field too long for a line both still
 * give a line that parses.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"
#include "bounds.h"
#include "log.h"

static int pipe_fd[2];

/* The next line logged, NUL-terminated, or "" when none (the pipe does not block). */
static char *next_line(void)
{
    static char buf[LOG_LINE_MAX + 64];
    size_t n = 0;

    while (n + 1 < sizeof(buf) && read(pipe_fd[0], buf + n, 1) == 1 && buf[n] != '\n')
        n++;
    buf[n] = '\0';
    return buf;
}

static yyjson_doc *parse(const char *line)
{
    struct diag d = {0};

    return json_read(line, strlen(line), 0, 8, NULL, &d);
}

static void a_cut_character_is_written_as_a_question_mark(void)
{
    /* "é" is C3 A9: "%.2s" of "aé" keeps "a\xc3" */
    char cut[8];
    yyjson_doc *doc;
    yyjson_val *root;

    snprintf(cut, sizeof(cut), "%.2s", "a\xc3\xa9");
    log_event(LOG_INFO, "decision", "{s:s, s:s}", "rule", "gpu-request", "message", cut);
    doc = parse(next_line());
    CHECK(doc != NULL);
    root = yyjson_doc_get_root(doc);
    CHECK(json_str_is(yyjson_obj_get(root, "msg"), "decision"));
    CHECK(json_str_is(yyjson_obj_get(root, "rule"), "gpu-request"));
    CHECK(json_str_is(yyjson_obj_get(root, "message"), "a?"));
    yyjson_doc_free(doc);
}

static void a_long_field_leaves_the_head(void)
{
    char *big = malloc(LOG_LINE_MAX * 2);
    yyjson_doc *doc;
    yyjson_val *root;

    memset(big, 'x', LOG_LINE_MAX * 2 - 1);
    big[LOG_LINE_MAX * 2 - 1] = '\0';
    log_event(LOG_WARN, "list page unreadable", "{s:s}", "error", big);
    doc = parse(next_line());
    CHECK(doc != NULL);
    root = yyjson_doc_get_root(doc);
    CHECK(json_str_is(yyjson_obj_get(root, "msg"), "list page unreadable"));
    CHECK(json_str_is(yyjson_obj_get(root, "level"), "warn"));
    CHECK(json_str_is(yyjson_obj_get(root, "fields_dropped"), "line too long"));
    CHECK(yyjson_obj_get(root, "error") == NULL);
    yyjson_doc_free(doc);
    free(big);
}

static void levels_below_the_threshold_write_nothing(void)
{
    log_set_level(LOG_WARN);
    log_event(LOG_INFO, "quiet", NULL);
    log_event(LOG_ERROR, "loud", NULL);
    CHECK_CONTAINS(next_line(), "\"msg\":\"loud\"");
    log_set_level(LOG_INFO);
}

int main(void)
{
    if (pipe(pipe_fd) != 0 || fcntl(pipe_fd[0], F_SETFL, O_NONBLOCK) != 0)
        return 2;
    log_set_fd(pipe_fd[1]);
    RUN(a_cut_character_is_written_as_a_question_mark);
    RUN(a_long_field_leaves_the_head);
    RUN(levels_below_the_threshold_write_nothing);
    TEST_MAIN_END("test_log");
}
