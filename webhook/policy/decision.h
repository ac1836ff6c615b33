/*
 * decision.h: what the policy decided about one review, as review_encode() answers it.
 *
 * A struct decision is the caller's storage (decision_init() first, decision_release() last).
 * It owns one mutable document that holds its patch, warnings and annotations, and its notes:
 * one per rule finding, for the metrics.
 */
#ifndef GPUADMIT_DECISION_H
#define GPUADMIT_DECISION_H

#include <stdbool.h>
#include <stddef.h>
#include <yyjson.h>

#include "policy.h"

/* Notes a decision keeps without a malloc; more go to the heap. */
#define DECISION_NOTES_INLINE 8

/* One rule finding, as its "decision" log line has it, for the metrics. */
struct decision_note {
    const struct rule *rule;           /* borrowed from the policy the decision was made with */
    enum rule_enforcement enforcement; /* as logged */
    enum finding finding;
};

/* What the policy decided about one review. Fields start zeroed by decision_init(). */
struct decision {
    bool allowed;
    int code;            /* HTTP-style code of a denial; 403 when 0 */
    char *reason;        /* metav1 StatusReason of a denial, e.g. "Forbidden"; owned, may be NULL */
    char *message;       /* owned, may be NULL */
    yyjson_mut_doc *out; /* owned: holds patch, warnings and annotations; NULL until one
                            of them is made */
    yyjson_mut_val *patch;       /* array of RFC 6902 operations in out, or NULL */
    yyjson_mut_val *warnings;    /* array of strings in out, or NULL */
    yyjson_mut_val *annotations; /* object of string values in out, or NULL */
    struct decision_note *notes; /* n_notes long, or NULL: notes_inline, or owned past it */
    size_t n_notes;
    struct decision_note notes_inline[DECISION_NOTES_INLINE]; /* the first ones, no malloc */
    const yyjson_alc *alc; /* out's and review_encode's allocator (borrowed); NULL: libc's */
};

void decision_init(struct decision *dec);
/* The same with out (and review_encode's working documents) on alc, borrowed: a per-thread
 * arena on the server. decision_release() keeps it for the next decision. */
void decision_init_alc(struct decision *dec, const yyjson_alc *alc);
void decision_release(struct decision *dec);
/* dec->out, made on first use; NULL when out of memory. */
yyjson_mut_doc *decision_doc(struct decision *dec);
/* Deny with a message (copied). code 0 means 403 Forbidden. */
int decision_deny(struct decision *dec, int code, const char *message);
/* A warning as the apiserver will show it: control characters become spaces (the apiserver
 * silently drops a warning that has any) and the text is cut to WARNING_MAX_RUNES runes. Empty and
 * duplicate warnings are skipped, as the apiserver would. */
int decision_warn(struct decision *dec, const char *text);
/* An audit annotation; -1 when the key is not a valid qualified-name part (docs/protocol.md §5). */
int decision_annotate(struct decision *dec, const char *key, const char *value);
/* Records a finding (see struct decision_note); -1 when out of memory. */
int decision_note(struct decision *dec, const struct rule *rule, enum rule_enforcement enforcement,
                  enum finding finding);

#endif
