/*
 * policy.c: policy snapshots' lifetime, the holder of the one in force, and the names of the
 * policy's vocabulary (see policy.h).
 * The holder's lock is held only to copy a pointer and bump a count, never while evaluating.
 * Each name is written once, here: a table indexed by its enum, sized by the enum's count, so
 * that a value added to an enum without its name is a NULL the unit tests catch; the rule
 * types' names are rule_kinds.h's, through the kinds' table (kind.h).
 */
#include "policy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"

static const char *const enforcement_names[ENFORCEMENTS] = {
    [ENFORCE_ENFORCE] = "Enforce",
    [ENFORCE_WARN] = "Warn",
    [ENFORCE_AUDIT] = "Audit",
};

static const char *const stale_mode_names[STALE_MODES] = {
    [STALE_ALLOW] = "Allow",
    [STALE_WARN] = "Warn",
    [STALE_DENY] = "Deny",
};

/* A finding's metrics label, and its words in decision logs and messages. */
static const struct {
    const char *name, *text;
} findings[FINDINGS] = {
    [FINDING_DENY] = {"deny", "denied"},
    [FINDING_PATCH] = {"patch", "patched"},
    [FINDING_WARN] = {"warn", "warned"},
    [FINDING_WOULD_DENY] = {"would_deny", "would deny"},
    [FINDING_WOULD_PATCH] = {"would_patch", "would patch"},
    [FINDING_WOULD_WARN] = {"would_warn", "would warn"},
};

static const char *const outcome_names[OUTCOMES] = {
    [OUTCOME_SKIP] = "skip",   [OUTCOME_PASS] = "pass", [OUTCOME_PATCH] = "patch",
    [OUTCOME_AUDIT] = "audit", [OUTCOME_WARN] = "warn", [OUTCOME_DENY] = "deny",
};

const char *policy_rule_type_name(enum rule_type t)
{
    return (unsigned)t < RULE_TYPES ? rule_kinds[t].name : NULL;
}

int policy_rule_type_of(const char *name)
{
    for (int i = 0; name != NULL && i < RULE_TYPES; i++)
        if (strcmp(name, rule_kinds[i].name) == 0)
            return i;
    return -1;
}

const char *policy_enforcement_name(enum rule_enforcement e)
{
    return (unsigned)e < ENFORCEMENTS ? enforcement_names[e] : NULL;
}

const char *policy_stale_mode_name(enum stale_mode m)
{
    return (unsigned)m < STALE_MODES ? stale_mode_names[m] : NULL;
}

const char *policy_finding_name(enum finding f)
{
    return (unsigned)f < FINDINGS ? findings[f].name : NULL;
}

const char *policy_finding_text(enum finding f)
{
    return (unsigned)f < FINDINGS ? findings[f].text : NULL;
}

const char *policy_outcome_name(enum rule_outcome o)
{
    return (unsigned)o < OUTCOMES ? outcome_names[o] : NULL;
}

int policy_outcome_of(const char *name)
{
    for (int i = 0; name != NULL && i < OUTCOMES; i++)
        if (strcmp(name, outcome_names[i]) == 0)
            return i;
    return -1;
}

enum rule_outcome policy_finding_outcome(enum finding f, enum rule_enforcement eff)
{
    if (eff == ENFORCE_AUDIT)
        return OUTCOME_AUDIT;
    return f == FINDING_DENY ? OUTCOME_DENY : f == FINDING_PATCH ? OUTCOME_PATCH : OUTCOME_WARN;
}

struct policy_holder {
    pthread_mutex_t lock;
    struct policy *current;
    unsigned long generation;
};

struct policy *policy_ref(struct policy *p)
{
    if (p != NULL)
        atomic_fetch_add(&p->refs, 1);
    return p;
}

void policy_unref(struct policy *p)
{
    if (p != NULL && atomic_fetch_sub(&p->refs, 1) == 1)
        policy_free(p);
}

struct policy_holder *policy_holder_new(struct policy *p)
{
    struct policy_holder *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return NULL;
    pthread_mutex_init(&h->lock, NULL);
    h->current = p;
    h->generation = 1;
    p->generation = 1;
    return h;
}

void policy_holder_free(struct policy_holder *h)
{
    if (h == NULL)
        return;
    policy_unref(h->current);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

struct policy *policy_holder_get(struct policy_holder *h)
{
    struct policy *p;

    pthread_mutex_lock(&h->lock);
    p = policy_ref(h->current);
    pthread_mutex_unlock(&h->lock);
    return p;
}

void policy_holder_swap(struct policy_holder *h, struct policy *p)
{
    struct policy *old;

    pthread_mutex_lock(&h->lock);
    old = h->current;
    p->generation = ++h->generation;
    h->current = p;
    pthread_mutex_unlock(&h->lock);
    policy_unref(old);
}
