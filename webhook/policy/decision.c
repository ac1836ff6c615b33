/*
 * decision.c: a decision's lifetime and what it collects (see decision.h).
 *
 * Invariants: warnings and annotations are as the apiserver keeps them (warnings cleaned, cut,
 * deduplicated; annotation keys valid, values UTF-8), so that review_encode() writes them
 * unchanged; patch, warnings and annotations all live in the one document out.
 */
#include "decision.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "bounds.h"
#include "names.h"
#include "review.h"
#include "text.h"

void decision_init(struct decision *dec)
{
    decision_init_alc(dec, NULL);
}

void decision_init_alc(struct decision *dec, const yyjson_alc *alc)
{
    memset(dec, 0, sizeof(*dec));
    dec->allowed = true;
    dec->alc = alc;
}

yyjson_mut_doc *decision_doc(struct decision *dec)
{
    if (dec->out == NULL)
        dec->out = yyjson_mut_doc_new(dec->alc);
    return dec->out;
}

void decision_release(struct decision *dec)
{
    const yyjson_alc *alc = dec->alc;

    free(dec->reason);
    free(dec->message);
    /* patch, warnings and annotations live in out */
    yyjson_mut_doc_free(dec->out);
    if (dec->notes != dec->notes_inline)
        free(dec->notes);
    memset(dec, 0, sizeof(*dec));
    dec->alc = alc;
}

int decision_note(struct decision *dec, const struct rule *rule, enum rule_enforcement enforcement,
                  enum finding finding)
{
    struct decision_note *grown;

    if (dec->n_notes < DECISION_NOTES_INLINE) {
        dec->notes = dec->notes_inline;
    } else {
        grown = realloc(dec->notes == dec->notes_inline ? NULL : dec->notes,
                        (dec->n_notes + 1) * sizeof(*grown));
        if (grown == NULL)
            return -1;
        if (dec->notes == dec->notes_inline)
            memcpy(grown, dec->notes_inline, sizeof(dec->notes_inline));
        dec->notes = grown;
    }
    dec->notes[dec->n_notes++] = (struct decision_note){rule, enforcement, finding};
    return 0;
}

int decision_deny(struct decision *dec, int code, const char *message)
{
    char *m = text_utf8_clean(message ? message : "", (size_t)-1, false);

    if (m == NULL)
        return -1;
    free(dec->message);
    dec->message = m;
    dec->allowed = false;
    dec->code = code;
    return 0;
}

int decision_warn(struct decision *dec, const char *text)
{
    char *clean = text_utf8_clean(text ? text : "", WARNING_MAX_RUNES, true);
    yyjson_mut_val *w, *s;
    yyjson_mut_arr_iter it;
    int rc = -1;

    if (clean == NULL)
        goto out;
    rc = 0;
    if (clean[0] == '\0')
        goto out;
    rc = -1;
    if (decision_doc(dec) == NULL)
        goto out;
    if (dec->warnings == NULL && (dec->warnings = yyjson_mut_arr(dec->out)) == NULL)
        goto out;
    rc = 0;
    yyjson_mut_arr_iter_init(dec->warnings, &it);
    while ((w = yyjson_mut_arr_iter_next(&it)) != NULL) {
        if (json_mut_str_is(w, clean))
            goto out;
    }
    s = yyjson_mut_strcpy(dec->out, clean);
    rc = s != NULL && yyjson_mut_arr_append(dec->warnings, s) ? 0 : -1;
out:
    free(clean);
    return rc;
}

int decision_annotate(struct decision *dec, const char *key, const char *value)
{
    const char *v = value ? value : "";
    yyjson_mut_val *s;

    if (key == NULL || !names_part_ok(key, strlen(key)))
        return -1;
    if (decision_doc(dec) == NULL)
        return -1;
    if (dec->annotations == NULL && (dec->annotations = yyjson_mut_obj(dec->out)) == NULL)
        return -1;
    s = yyjson_mut_strcpy(dec->out, v);
    /* yyjson's writer would fail the whole response on text that is not UTF-8 (a user's value
     * cut by "%.64s" in the middle of a character): the copy's bad bytes become '?', so that
     * the annotation is kept rather than lost (jansson refused it) */
    if (s != NULL && !text_utf8_valid(v, strlen(v)))
        text_utf8_fix((char *)yyjson_mut_get_str(s));
    /* replaces an earlier annotation of the key, as json_object_set_new did */
    return s != NULL ? json_mut_set(dec->out, dec->annotations, key, s) : -1;
}
