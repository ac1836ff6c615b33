/*
 * Unit tests for policy.c: the names of the policy's vocabulary, the rule kinds' table (kind.c)
 * those of the rule types come from, and the lifetime of snapshots:
 * the holder of the one in force (policy_holder_get, policy_holder_swap, policy_holder_free)
 * and reference counts (policy_ref, policy_unref), alone and under threads that swap while
 * others read.
 *
 * Which snapshots were freed, and when, is seen by interposing free() in this program (as
 * test_alloc.c interposes malloc): policy_free() frees a snapshot with the libc free() this
 * program defines, and a snapshot made here is known by its address. Under AddressSanitizer or
 * valgrind, which put their own free() in its place, the counts are left out, and they catch a
 * snapshot read after its free instead.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "policy/kind.h"
#include "policy/policy.h"

#if defined(__SANITIZE_ADDRESS__)
#define COUNTING 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNTING 0
#endif
#endif
#ifndef COUNTING
#define COUNTING 1
#endif

/* The snapshots made by this test, sorted by address once they are all made (snapshots_make),
 * so that free() can find one by bisection; frees[i] counts the frees of snapshots[i]. */
#define SNAPSHOTS_MAX 4096
static struct policy *snapshots[SNAPSHOTS_MAX];
static size_t n_snapshots;
static _Atomic bool sealed;
static atomic_int frees[SNAPSHOTS_MAX];

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (struct policy *const *)a,
              y = (uintptr_t) * (struct policy *const *)b;

    return x < y ? -1 : x > y;
}

/* Where p is in snapshots, or -1. Valid once sealed. */
static long snapshot_index(const void *p)
{
    size_t lo = 0, hi = n_snapshots;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if ((uintptr_t)snapshots[mid] == (uintptr_t)p)
            return (long)mid;
        if ((uintptr_t)snapshots[mid] < (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static void *_Atomic probe;
static atomic_bool probe_seen;

#if COUNTING
extern void __libc_free(void *p);

void free(void *p)
{
    long i;

    if (p != NULL && p == atomic_load(&probe))
        atomic_store(&probe_seen, true);
    if (p != NULL && atomic_load(&sealed) && (i = snapshot_index(p)) >= 0)
        atomic_fetch_add(&frees[i], 1);
    __libc_free(p);
}
#endif

/* Whether the free() above is the one this program's code calls: not under valgrind, which
 * redirects it to its own. */
static bool counting;

static bool interposed(void)
{
    void *p = malloc(16);

    atomic_store(&probe, p);
    free(p);
    atomic_store(&probe, NULL);
    return atomic_load(&probe_seen);
}

/* A snapshot of one document called name, with one reference (the caller's). */
static struct policy *snapshot_new(const char *name)
{
    struct policy *p = calloc(1, sizeof(*p));

    atomic_init(&p->refs, 1);
    p->docs = calloc(1, sizeof(*p->docs));
    p->n_docs = 1;
    p->docs[0].name = strdup(name);
    return p;
}

/* Makes n snapshots named "snapshot 0" to "snapshot n-1", then seals the table: the table is
 * not written after, so that threads may search it. out[k] is "snapshot k". */
static void snapshots_make(struct policy **out, size_t n)
{
    char name[32];

    n_snapshots = 0;
    for (size_t k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "snapshot %zu", k);
        out[k] = snapshots[n_snapshots++] = snapshot_new(name);
    }
    qsort(snapshots, n_snapshots, sizeof(snapshots[0]), by_address);
    for (size_t i = 0; i < n_snapshots; i++)
        atomic_init(&frees[i], 0);
    atomic_store(&sealed, true);
}

/* How many times p was freed; -1 when this build cannot tell. */
static int freed(const struct policy *p)
{
    long i = snapshot_index(p);

    return counting && i >= 0 ? atomic_load(&frees[i]) : -1;
}

static void snapshots_unseal(void)
{
    atomic_store(&sealed, false);
    n_snapshots = 0;
}

/* The number in a snapshot's name, as snapshots_make wrote it; -1 when it is not there. */
static long number_of(const struct policy *p)
{
    unsigned long k;
    int end = 0;

    if (p->n_docs != 1 || p->docs[0].name == NULL ||
        sscanf(p->docs[0].name, "snapshot %lu%n", &k, &end) != 1 || p->docs[0].name[end] != '\0')
        return -1;
    return (long)k;
}

/* Every value has a name, no two share one, and out-of-range values have none. */
static void check_names(const char *(*name_of)(int), int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(name_of(i) != NULL && name_of(i)[0] != '\0');
        for (int k = 0; k < i; k++)
            CHECK(name_of(i) == NULL || name_of(k) == NULL || strcmp(name_of(i), name_of(k)) != 0);
    }
    CHECK(name_of(n) == NULL);
    CHECK(name_of(-1) == NULL);
}

static const char *type_name(int i)
{
    return policy_rule_type_name((enum rule_type)i);
}

static const char *enforcement_name(int i)
{
    return policy_enforcement_name((enum rule_enforcement)i);
}

static const char *stale_mode_name(int i)
{
    return policy_stale_mode_name((enum stale_mode)i);
}

static const char *finding_name(int i)
{
    return policy_finding_name((enum finding)i);
}

static const char *finding_text(int i)
{
    return policy_finding_text((enum finding)i);
}

static const char *outcome_name(int i)
{
    return policy_outcome_name((enum rule_outcome)i);
}

static void test_every_value_named_once(void)
{
    check_names(type_name, RULE_TYPES);
    check_names(enforcement_name, ENFORCEMENTS);
    check_names(stale_mode_name, STALE_MODES);
    check_names(finding_name, FINDINGS);
    check_names(finding_text, FINDINGS);
    check_names(outcome_name, OUTCOMES);
}

/* Each rule type's kind is whole: judged by its judge or by its own pass (one of them), its
 * settings made and freed by the same kind, its name read back, and the keys of all kinds
 * within what the loader holds. */
static void test_kinds(void)
{
    size_t keys = R_COMMON;

    for (int t = 0; t < RULE_TYPES; t++) {
        const struct rule_ops *k = rule_ops_of((enum rule_type)t);

        CHECK(k != NULL && k == rule_kinds[t].ops);
        if (k == NULL)
            continue;
        CHECK((k->judge != NULL) != (k->pass != NULL));
        CHECK((k->load != NULL) == (k->free != NULL));
        CHECK(k->load != NULL || k->n_keys == 0);
        CHECK(policy_rule_type_of(rule_kinds[t].name) == t);
        keys += k->n_keys;
    }
    CHECK(keys <= RULE_KEYS_MAX);
    CHECK(rule_ops_of(RULE_TYPES) == NULL);
    CHECK(policy_rule_type_of("nope") == -1 && policy_rule_type_of(NULL) == -1);
}

/* The names are what rule files, logs, traces and metrics have always said. */
static void test_names_as_written(void)
{
    CHECK_STR(policy_rule_type_name(RULE_GPU_REQUEST), "gpu-request");
    CHECK_STR(policy_rule_type_name(RULE_NODE_SELECTOR), "node-selector");
    CHECK_STR(policy_rule_type_name(RULE_CAPACITY), "capacity");
    CHECK_STR(policy_enforcement_name(ENFORCE_AUDIT), "Audit");
    CHECK_STR(policy_stale_mode_name(STALE_ALLOW), "Allow");
    CHECK_STR(policy_finding_name(FINDING_WOULD_WARN), "would_warn");
    CHECK_STR(policy_finding_text(FINDING_WOULD_WARN), "would warn");
    CHECK_STR(policy_finding_text(FINDING_PATCH), "patched");
    CHECK_STR(policy_outcome_name(OUTCOME_AUDIT), "audit");
}

/* Outcomes read back by name, in their order of strength. */
static void test_outcomes(void)
{
    for (int i = 0; i < OUTCOMES; i++)
        CHECK(policy_outcome_of(policy_outcome_name((enum rule_outcome)i)) == i);
    CHECK(policy_outcome_of("denied") == -1);
    CHECK(policy_outcome_of(NULL) == -1);
    CHECK(OUTCOME_SKIP < OUTCOME_PASS && OUTCOME_PASS < OUTCOME_PATCH &&
          OUTCOME_PATCH < OUTCOME_AUDIT && OUTCOME_AUDIT < OUTCOME_WARN &&
          OUTCOME_WARN < OUTCOME_DENY);
    CHECK(policy_finding_outcome(FINDING_WOULD_PATCH, ENFORCE_AUDIT) == OUTCOME_AUDIT);
    CHECK(policy_finding_outcome(FINDING_DENY, ENFORCE_ENFORCE) == OUTCOME_DENY);
    CHECK(policy_finding_outcome(FINDING_PATCH, ENFORCE_ENFORCE) == OUTCOME_PATCH);
    CHECK(policy_finding_outcome(FINDING_WOULD_DENY, ENFORCE_WARN) == OUTCOME_WARN);
    CHECK(policy_finding_outcome(FINDING_WARN, ENFORCE_ENFORCE) == OUTCOME_WARN);
}

/* A reader's reference keeps its snapshot whole across swaps; the last reference frees it. */
static void test_holder_lifetime(void)
{
    struct policy *s[4], *r1, *r2, *r3;
    struct policy_holder *h;

    snapshots_make(s, 4);
    h = policy_holder_new(s[0]);
    CHECK(h != NULL);
    CHECK(s[0]->generation == 1);

    r1 = policy_holder_get(h);
    CHECK(r1 == s[0]);
    CHECK(atomic_load(&s[0]->refs) == 2); /* the holder's and the reader's */

    /* the swap drops the holder's reference, not the reader's */
    policy_holder_swap(h, s[1]);
    CHECK(s[1]->generation == 2);
    CHECK(freed(s[0]) <= 0);
    if (freed(s[0]) <= 0) { /* else reading it would crash the run */
        CHECK(atomic_load(&s[0]->refs) == 1);
        CHECK_STR(r1->docs[0].name, "snapshot 0");
        CHECK(r1->generation == 1); /* its own generation, not the holder's */
    }

    /* a reader now gets the new snapshot */
    r2 = policy_holder_get(h);
    CHECK(r2 == s[1]);
    CHECK(number_of(r2) == 1);

    /* the last reference frees, once */
    policy_unref(r1);
    CHECK(freed(s[0]) == 1 || freed(s[0]) == -1);
    CHECK(freed(s[1]) <= 0);

    /* a snapshot nobody reads is freed by the swap that replaces it */
    policy_unref(r2);
    CHECK(freed(s[1]) <= 0); /* the holder still has it */
    policy_holder_swap(h, s[2]);
    CHECK(freed(s[1]) == 1 || freed(s[1]) == -1);
    CHECK(s[2]->generation == 3);

    /* policy_ref is a reference like the holder's */
    r3 = policy_ref(policy_holder_get(h));
    CHECK(r3 == s[2] && atomic_load(&s[2]->refs) == 3);
    policy_unref(r3);

    /* the holder's own free drops its reference: a reader's keeps the snapshot */
    policy_holder_free(h);
    CHECK(freed(s[2]) <= 0);
    if (freed(s[2]) <= 0)
        CHECK_STR(r3->docs[0].name, "snapshot 2");
    policy_unref(r3);
    CHECK(freed(s[2]) == 1 || freed(s[2]) == -1);

    /* a holder freed with no reader frees its snapshot at once */
    h = policy_holder_new(s[3]);
    policy_holder_free(h);
    CHECK(freed(s[3]) == 1 || freed(s[3]) == -1);
    /* NULL is fine for both */
    policy_unref(NULL);
    policy_holder_free(NULL);
    CHECK(policy_ref(NULL) == NULL);
    snapshots_unseal();
}

/* Threads that swap new snapshots in while others get, read and unref them: no reader ever
 * holds a freed or torn snapshot, a reader's generations never go back, and at the end every
 * snapshot was freed exactly once. */
#define SWAPPERS  2
#define READERS   4
#define SWAPS     2000 /* snapshots swapped in, in all */
#define READS_MIN 2000 /* per reader, at least */

struct race {
    struct policy_holder *h;
    struct policy **s;   /* SWAPS + 1 snapshots: s[0] first in force */
    atomic_size_t next;  /* the next snapshot to swap in */
    atomic_int swapping; /* swappers still at work */
};

struct reader {
    struct race *r;
    unsigned long reads, held, torn, stale, backwards;
};

static void *swapper(void *arg)
{
    struct race *r = arg;
    size_t k;

    while ((k = atomic_fetch_add(&r->next, 1)) <= SWAPS)
        policy_holder_swap(r->h, r->s[k]);
    atomic_fetch_sub(&r->swapping, 1);
    return NULL;
}

/* One reference at a time, and sometimes two: an older snapshot kept across the swaps that
 * happen while the reader gets another. */
static void *reader(void *arg)
{
    struct reader *me = arg;
    struct policy *p, *old = NULL;
    unsigned long last = 0;

    while (atomic_load(&me->r->swapping) > 0 || me->reads < READS_MIN) {
        p = policy_holder_get(me->r->h);
        me->reads++;
        if (freed(p) > 0)
            me->stale++;
        else if (number_of(p) < 0)
            me->torn++;
        if (p->generation < last)
            me->backwards++;
        last = p->generation;
        if (old != NULL) {
            if (freed(old) > 0 || number_of(old) < 0)
                me->stale++;
            policy_unref(old);
            old = NULL;
        }
        if (me->reads % 7 == 0) {
            old = p; /* kept until the next turn */
            me->held++;
        } else {
            policy_unref(p);
        }
    }
    policy_unref(old);
    return NULL;
}

static void test_holder_threads(void)
{
    static struct policy *s[SWAPS + 1];
    pthread_t sw[SWAPPERS], rd[READERS];
    struct reader readers[READERS];
    struct race r;
    struct policy *last;
    int once = 0;

    snapshots_make(s, SWAPS + 1);
    r.h = policy_holder_new(s[0]);
    r.s = s;
    atomic_init(&r.next, 1);
    atomic_init(&r.swapping, SWAPPERS);
    for (int i = 0; i < READERS; i++) {
        memset(&readers[i], 0, sizeof(readers[i]));
        readers[i].r = &r;
        CHECK(pthread_create(&rd[i], NULL, reader, &readers[i]) == 0);
    }
    for (int i = 0; i < SWAPPERS; i++)
        CHECK(pthread_create(&sw[i], NULL, swapper, &r) == 0);
    for (int i = 0; i < SWAPPERS; i++)
        pthread_join(sw[i], NULL);
    for (int i = 0; i < READERS; i++) {
        pthread_join(rd[i], NULL);
        CHECK(readers[i].reads >= READS_MIN);
        CHECK(readers[i].held > 0);
        CHECK(readers[i].torn == 0);
        CHECK(readers[i].stale == 0);
        CHECK(readers[i].backwards == 0);
    }

    /* every swap counted: the one in force has the last generation, and only the holder
     * holds it */
    last = policy_holder_get(r.h);
    CHECK(last->generation == SWAPS + 1);
    CHECK(atomic_load(&last->refs) == 2);
    policy_unref(last);
    /* each snapshot swapped out was freed, once, and the one in force is not */
    for (size_t k = 0; k <= SWAPS; k++)
        once += s[k] != last && freed(s[k]) == 1;
    CHECK(!counting || once == SWAPS);
    CHECK(freed(last) <= 0);
    policy_holder_free(r.h);
    CHECK(freed(last) == 1 || !counting);
    snapshots_unseal();
}

int main(void)
{
    counting = COUNTING && interposed();
    if (!counting)
        printf("  free not interposed (AddressSanitizer or valgrind): frees not counted\n");
    RUN(test_every_value_named_once);
    RUN(test_names_as_written);
    RUN(test_kinds);
    RUN(test_outcomes);
    RUN(test_holder_lifetime);
    RUN(test_holder_threads);
    TEST_MAIN_END("test_policy");
}
