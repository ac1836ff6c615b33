/*
 * table.c: the string-keyed hash table (see table.h). Invariants: n_buckets is a power of two;
 * an entry lies in bucket hash & (n_buckets - 1); n counts the entries.
 */
#include "table.h"

#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ull; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int table_init(struct table *t, void (*free_value)(void *, void *), void *ctx)
{
    t->n_buckets = 64;
    t->n = 0;
    t->free_value = free_value;
    t->ctx = ctx;
    t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
    return t->buckets ? 0 : -1;
}

struct table_entry *table_entry_of(const struct table *t, const char *key)
{
    size_t h = hash(key);

    for (struct table_entry *e = t->buckets[h & (t->n_buckets - 1)]; e; e = e->next) {
        if (e->hash == h && strcmp(e->key, key) == 0)
            return e;
    }
    return NULL;
}

void *table_get(const struct table *t, const char *key)
{
    const struct table_entry *e = table_entry_of(t, key);

    return e != NULL ? e->value : NULL;
}

static void table_grow(struct table *t)
{
    size_t nb = t->n_buckets * 2;
    struct table_entry **b = calloc(nb, sizeof(*b)), *e, *next;

    if (b == NULL)
        return; /* a longer chain, not a failure */
    for (size_t i = 0; i < t->n_buckets; i++) {
        for (e = t->buckets[i]; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->n_buckets = nb;
}

int table_put(struct table *t, const char *key, void *value, unsigned gen)
{
    struct table_entry *e = table_entry_of(t, key);
    size_t b;

    if (e != NULL) {
        if (e->value != value)
            t->free_value(t->ctx, e->value);
        e->value = value;
        e->gen = gen;
        return 0;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL || (e->key = strdup(key)) == NULL) {
        free(e);
        t->free_value(t->ctx, value);
        return -1;
    }
    e->value = value;
    e->gen = gen;
    e->hash = hash(key);
    if (t->n >= t->n_buckets)
        table_grow(t);
    b = e->hash & (t->n_buckets - 1);
    e->next = t->buckets[b];
    t->buckets[b] = e;
    t->n++;
    return 0;
}

void table_sweep(struct table *t, bool (*drop)(const struct table_entry *, unsigned), unsigned gen)
{
    struct table_entry **pp, *e;

    for (size_t i = 0; i < t->n_buckets; i++) {
        pp = &t->buckets[i];
        while ((e = *pp) != NULL) {
            if (drop == NULL || drop(e, gen)) {
                *pp = e->next;
                t->free_value(t->ctx, e->value);
                free(e->key);
                free(e);
                t->n--;
            } else {
                pp = &e->next;
            }
        }
    }
}

void table_free(struct table *t)
{
    if (t->buckets == NULL)
        return;
    table_sweep(t, NULL, 0);
    free(t->buckets);
    t->buckets = NULL;
}

bool table_del(struct table *t, const char *key)
{
    size_t h = hash(key);
    struct table_entry **pp = &t->buckets[h & (t->n_buckets - 1)], *e;

    for (; (e = *pp) != NULL; pp = &e->next) {
        if (e->hash == h && strcmp(e->key, key) == 0) {
            *pp = e->next;
            t->free_value(t->ctx, e->value);
            free(e->key);
            free(e);
            t->n--;
            return true;
        }
    }
    return false;
}
