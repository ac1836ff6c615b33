/*
 * test_alloc.c: what one review costs in malloc calls on the server's path (issue 18: zero on
 * the hot path). The review is served as admit() in server.c serves it: the body read in situ
 * into the thread's pool (review_thread_arena), the decision's and the response's documents on
 * the thread's growing allocator, the response text written with libc's (libmicrohttpd frees
 * it). malloc, calloc and realloc are counted by interposing them in this program; glibc's own
 * entry points (__libc_malloc and the rest) do the work. Under AddressSanitizer or valgrind,
 * which put their own allocator in its place, the counts are skipped.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "policy/eval.h"
#include "harness.h"
#include "json.h"
#include "log.h"
#include "review.h"
#include "policy/rules.h"

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

static unsigned long allocs; /* malloc, calloc and realloc calls so far */

#if COUNTING
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
    __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

/* Whether this program's malloc is the one libraries call: not under valgrind, which redirects
 * theirs to its own. */
static bool interposed(void)
{
    unsigned long before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);

    yyjson_mut_doc_free(yyjson_mut_doc_new(NULL));
    return __atomic_load_n(&allocs, __ATOMIC_RELAXED) > before;
}

static bool counting;

/* One review as admit() serves it; the response text is freed as libmicrohttpd would. */
static struct cluster *view; /* NULL: no cluster view, as with --no-cluster */

static int serve(const struct policy *p, const char *body, size_t len, bool mutating, bool *patched,
                 bool *denied)
{
    struct review_arena *a = review_thread_arena();
    char *buf = malloc(len + YYJSON_PADDING_SIZE); /* the body buffer: the server's, not counted */
    struct review r;
    struct decision dec;
    struct diag d;
    char *out = NULL;
    size_t out_len = 0;
    int rc = -1;

    memcpy(buf, body, len);
    memset(buf + len, 0, YYJSON_PADDING_SIZE);
    diag_clear(&d);
    if (review_decode_in(&r, buf, len, JSON_READ_INSITU, review_arena_reader(a, len), &d) < 0) {
        printf("  decode: %s\n", d.msg);
        free(buf);
        return -1;
    }
    decision_init_alc(&dec, a ? a->dyn : NULL);
    if (eval_review(p, &r, mutating, false, view, &dec) == 0 &&
        review_encode(&r, &dec, mutating, &out, &out_len) == 0)
        rc = 0;
    *patched = yyjson_mut_arr_size(dec.patch) > 0;
    *denied = !dec.allowed;
    decision_release(&dec);
    review_release(&r);
    free(out);
    free(buf);
    return rc;
}

/* malloc calls per review once the thread has served a few: the body buffer (the server's,
 * allocated as the body arrives) is left out, the response text is counted. */
static void count(const struct policy *p, const char *name, const char *path, bool mutating,
                  bool denied, unsigned long want_max)
{
    size_t len;
    char *body = harness_slurp(path, &len);
    unsigned long before, per;
    bool patched = false, was_denied = false;
    int fails = 0;

    for (int i = 0; i < 10; i++) /* warm up: the arena, the allocator's chunks, the log arena */
        fails += serve(p, body, len, mutating, &patched, &was_denied) != 0;
    before = __atomic_load_n(&allocs, __ATOMIC_RELAXED);
    for (int i = 0; i < 1000; i++)
        fails += serve(p, body, len, mutating, &patched, &was_denied) != 0;
    /* one per review is this test's own: the body buffer (see serve) */
    per = (__atomic_load_n(&allocs, __ATOMIC_RELAXED) - before) / 1000;
    CHECK(fails == 0);
    CHECK(was_denied == denied);
    if (counting) {
        per -= 1; /* the body buffer */
        printf("  %s (%zu bytes, %s%s%s%s): %lu malloc calls per review\n", name, len,
               mutating ? "/mutate" : "/validate", patched ? ", patched" : "",
               was_denied ? ", denied" : "", view ? ", cluster view" : "", per);
        CHECK(per <= want_max);
    }
    free(body);
}

int main(void)
{
    struct rules_errors errs;
    struct policy *p;
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

    log_set_fd(devnull); /* the decision lines: per-thread arena, as on the server */
    memset(&errs, 0, sizeof(errs));
    p = rules_load_dir("rules", &errs);
    CHECK(p != NULL);
    if (p == NULL)
        TEST_MAIN_END("test_alloc");
    counting = COUNTING && interposed();
    if (!counting)
        printf("  malloc not interposed (AddressSanitizer or valgrind): calls not counted\n");
    /* the response text is the one malloc: libmicrohttpd frees it (MHD_RESPMEM_MUST_FREE); a
     * denial costs one more, its message (decision_deny) */
    count(p, "training pod", "tests/bench/data/training-pod-review.json", false, false, 1);
    count(p, "training pod", "tests/bench/data/training-pod-review.json", true, false, 1);
    count(p, "small GPU pod", "tests/data/review-pod.json", true, false, 1);
    count(p, "small GPU pod", "tests/data/review-pod.json", false, true, 2);
    /* with a cluster view (the seed's node pool) the GPU-node checks read it */
    {
        struct cluster_config cfg = {.allocatable_grace_s = 120};
        struct diag d;

        diag_clear(&d);
        view = cluster_new(&cfg);
        CHECK(view != NULL &&
              cluster_load_snapshot(view, "tests/data/snapshots/seed-000.json", &d) == 0);
        cluster_mark_snapshot(view);
        count(p, "training pod", "tests/bench/data/training-pod-review.json", false, false, 1);
        count(p, "small GPU pod", "tests/data/review-pod.json", true, false, 1);
        /* its capacity warning is one more: the warning's cleaned text (decision_warn) */
        count(p, "stalled ReplicaSet", "tests/data/review-stall-replicaset.json", false, false, 2);
        cluster_free(view);
        view = NULL;
    }
    policy_unref(p);
    close(devnull);
    TEST_MAIN_END("test_alloc");
}
