/*
 * test_kube.c: the kubeconfig loader's bounds, through kube_start (which reads the file before
 * it starts anything): YAML anchors, aliases and custom tags refused (no billion laughs), nesting,
 * node count and file size capped, each with a message that says so.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "harness.h"
#include "cluster/kube.h"
#include "log.h"

static char dir[] = "/tmp/gpuadmit-test-kube-XXXXXX";

static void put(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    close(fd);
}

/* kube_start on a kubeconfig holding text must fail with a message containing want. */
static void refused(const char *text, size_t len, const char *want)
{
    struct cluster_config cc = {60};
    struct cluster *view = cluster_new(&cc);
    char path[128];
    struct kube_config cfg = {.kubeconfig = path};
    struct kube *k;
    struct diag d;

    snprintf(path, sizeof(path), "%s/config", dir);
    put(path, text, len);
    diag_clear(&d);
    k = kube_start(&cfg, view, &d);
    CHECK(k == NULL);
    CHECK_CONTAINS(d.msg, want);
    if (k != NULL)
        kube_stop(k);
    cluster_free(view);
}

#define REFUSED(text, want) refused(text, strlen(text), want)

static void test_anchors_aliases_tags(void)
{
    REFUSED("current-context: &c dev\n", "YAML anchors and tags are not supported");
    REFUSED("a: &m {x: 1}\nb: *m\n", "YAML anchors and tags are not supported");
    /* libyaml does not check that an alias names an anchor: refused all the same */
    REFUSED("current-context: *c\n", "YAML aliases are not supported");
    REFUSED("current-context: !secret dev\n", "YAML anchors and tags are not supported");
    /* the classic billion laughs: refused at its first anchor, long before any expansion */
    REFUSED("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
            "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "YAML anchors and tags are not supported");
}

static void test_depth_nodes_size(void)
{
    size_t n = 0, max = 4u * 1024u * 1024u;
    char *text = malloc(max + 2);
    char path[128];
    int fd;

    /* 33 nested flow sequences: one past the cap */
    for (int i = 0; i < 33; i++)
        text[n++] = '[';
    for (int i = 0; i < 33; i++)
        text[n++] = ']';
    text[n++] = '\n';
    refused(text, n, "nested too deeply");

    /* 100,001 scalars in one sequence (plus the sequence): past the node cap */
    n = 0;
    text[n++] = '[';
    for (int i = 0; i < 100001; i++) {
        text[n++] = '1';
        text[n++] = ',';
    }
    text[n - 1] = ']';
    refused(text, n, "more than 100000 YAML nodes");
    free(text);

    /* one byte past 4 MiB (a sparse file): refused before it is read */
    snprintf(path, sizeof(path), "%s/config", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)max + 1) == 0);
    close(fd);
    {
        struct cluster_config cc = {60};
        struct cluster *view = cluster_new(&cc);
        struct kube_config cfg = {.kubeconfig = path};
        struct diag d;
        struct kube *k;

        diag_clear(&d);
        k = kube_start(&cfg, view, &d);
        CHECK(k == NULL);
        CHECK_CONTAINS(d.msg, "file is 4194305 bytes, more than the limit of 4194304");
        if (k != NULL)
            kube_stop(k);
        cluster_free(view);
    }
}

int main(void)
{
    char path[128];

    log_set_level(LOG_ERROR);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    RUN(test_anchors_aliases_tags);
    RUN(test_depth_nodes_size);
    snprintf(path, sizeof(path), "%s/config", dir);
    unlink(path);
    rmdir(dir);
    TEST_MAIN_END("test_kube");
}
