/*
 * fuzz_watch: the watch-stream decoder of kube.c (kube_watch_feed, which splits the stream into
 * events across chunk boundaries and applies each event to the view), reached through
 * kube_watch.h.
 *
 * Input: byte 0 picks the first kind; bytes 1-4 give the chunk sizes (1-256 bytes, in turn); the
 * rest is the stream, where a form feed (never valid inside a JSON event) moves to the next
 * kind, so one input can feed nodes and pods and their bindings. A stream the decoder refuses
 * ends that kind's part, as the client would relist. After each part, and at the end, the view
 * must be consistent (fuzz_view_check); an empty relist of every kind must empty it.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_support.h"
#include "cluster/kube_watch.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER 5

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    return 0;
}

/* Feeds one kind's part in chunks; returns when it is fed or the decoder refused it. */
static void feed(struct worker *w, const uint8_t *p, size_t n, const uint8_t *sizes)
{
    size_t off = 0, turn = 0, chunk;

    w->line.len = 0;
    w->verdict = V_OK;
    w->why[0] = '\0';
    while (off < n) {
        chunk = (size_t)sizes[turn++ % 4] + 1;
        if (chunk > n - off)
            chunk = n - off;
        if (kube_watch_feed(w, (const char *)p + off, chunk) < 0) {
            FUZZ_ASSERT(w->verdict != V_OK, "a refused stream without a verdict");
            FUZZ_ASSERT(w->verdict != V_BROKEN || w->why[0] != '\0', "broken without a reason");
            return;
        }
        off += chunk;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cluster_config cfg = {60};
    struct kube k;
    const uint8_t *p, *end, *ff;
    int kind;

    if (size < HEADER)
        return 0;
    memset(&k, 0, sizeof(k));
    k.view = cluster_new(&cfg);
    FUZZ_ASSERT(k.view != NULL, "setup");
    for (int i = 0; i < CLUSTER_KINDS; i++) {
        k.w[i].k = &k;
        k.w[i].kind = (enum cluster_kind)i;
        k.w[i].plural = cluster_kind_plural((enum cluster_kind)i);
        cluster_list_begin(k.view, (enum cluster_kind)i);
        cluster_list_end(k.view, (enum cluster_kind)i);
    }
    kind = data[0] % CLUSTER_KINDS;
    p = data + HEADER;
    end = data + size;
    while (p < end) {
        ff = memchr(p, '\f', (size_t)(end - p));
        feed(&k.w[kind], p, (size_t)((ff ? ff : end) - p), data + 1);
        fuzz_view_check(k.view);
        if (ff == NULL)
            break;
        p = ff + 1;
        kind = (kind + 1) % CLUSTER_KINDS;
    }
    yyjson_mut_doc_free(cluster_dump(k.view));
    for (int i = 0; i < CLUSTER_KINDS; i++) {
        cluster_list_begin(k.view, (enum cluster_kind)i);
        cluster_list_end(k.view, (enum cluster_kind)i);
        buf_free(&k.w[i].line);
        buf_free(&k.w[i].body);
    }
    FUZZ_ASSERT(fuzz_view_check(k.view) == 0, "records left after an empty relist");
    cluster_free(k.view);
    return 0;
}
