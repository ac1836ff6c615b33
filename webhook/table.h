/*
 * table.h: a string-keyed hash table of pointers (chained; grows at one entry per bucket).
 *
 * Each entry keeps its key's hash, so that a lookup compares hashes first and reads no key it
 * passes, and a tag its owner sets with every put (cluster.c: the list generation that last
 * saw it), by which table_sweep can drop entries. The struct is open because its owners walk
 * the buckets. Not thread-safe: the owner locks.
 */
#ifndef GPUADMIT_TABLE_H
#define GPUADMIT_TABLE_H

#include <stdbool.h>
#include <stddef.h>

struct table_entry {
    struct table_entry *next;
    char *key; /* the table's own copy */
    void *value;
    size_t hash; /* of key */
    unsigned gen;
};

struct table {
    struct table_entry **buckets;
    size_t n_buckets, n;
    void (*free_value)(void *ctx, void *value); /* frees a value the table lets go of */
    void *ctx;
};

/* An empty table whose values free_value(ctx, value) frees. -1 when out of memory. */
int table_init(struct table *t, void (*free_value)(void *ctx, void *value), void *ctx);
/* Frees every value, the keys and the buckets; a table never initialised (buckets NULL) too. */
void table_free(struct table *t);

/* Borrowed: valid until the entry is deleted, swept or the table freed. NULL when absent. */
struct table_entry *table_entry_of(const struct table *t, const char *key);
void *table_get(const struct table *t, const char *key);
/* Sets key to value (taken), tagged gen, freeing an old value. -1 on allocation failure
 * (value freed). Out of memory while growing it keeps its buckets: a longer chain. */
int table_put(struct table *t, const char *key, void *value, unsigned gen);
/* Removes key, freeing its value; false when it was absent. */
bool table_del(struct table *t, const char *key);
/* Removes the entries for which drop(entry, gen) holds (all when drop is NULL). */
void table_sweep(struct table *t, bool (*drop)(const struct table_entry *e, unsigned gen),
                 unsigned gen);

#endif
