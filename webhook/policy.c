/*
 * policy.c: policy snapshots' lifetime and the holder of the one in force (see policy.h).
 * The holder's lock is held only to copy a pointer and bump a count, never while evaluating.
 */
#include "policy.h"

#include <pthread.h>
#include <stdlib.h>

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
