/*
 * test_table.c: table.c, the hash table the cluster view keeps its records in: lookups by key,
 * replacement and removal free what they let go of, growth keeps every entry, and a sweep drops
 * the entries whose tag is stale.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "table.h"

static int freed;

static void count_free(void *ctx, void *value)
{
    (void)ctx;
    freed++;
    free(value);
}

static bool stale(const struct table_entry *e, unsigned gen)
{
    return e->gen != gen;
}

static void put_get_del(void)
{
    struct table t;
    char key[16];

    freed = 0;
    CHECK(table_init(&t, count_free, NULL) == 0);
    CHECK(table_get(&t, "a") == NULL);
    CHECK(table_put(&t, "a", strdup("1"), 0) == 0);
    CHECK_STR(table_get(&t, "a"), "1");
    CHECK(table_put(&t, "a", strdup("2"), 0) == 0); /* replaced: the old value freed */
    CHECK(freed == 1 && t.n == 1);
    CHECK_STR(table_get(&t, "a"), "2");
    CHECK(table_entry_of(&t, "a") != NULL && strcmp(table_entry_of(&t, "a")->key, "a") == 0);
    /* many more than the buckets it starts with: it grows and loses none */
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        CHECK(table_put(&t, key, strdup(key), (unsigned)(i % 2)) == 0);
    }
    CHECK(t.n == 1001 && t.n_buckets >= 1001);
    for (int i = 0; i < 1000; i += 97) {
        snprintf(key, sizeof(key), "k%d", i);
        CHECK_STR(table_get(&t, key), key);
    }
    CHECK(table_del(&t, "a") && !table_del(&t, "a") && table_get(&t, "a") == NULL);
    CHECK(freed == 2 && t.n == 1000);
    table_sweep(&t, stale, 1); /* the even ones were put with gen 0 */
    CHECK(t.n == 500 && freed == 502);
    CHECK(table_get(&t, "k2") == NULL && table_get(&t, "k3") != NULL);
    table_free(&t);
    CHECK(freed == 1002 && t.buckets == NULL);
    table_free(&t); /* twice, or never initialised: nothing to do */
}

int main(void)
{
    RUN(put_get_del);
    TEST_MAIN_END("test_table");
}
