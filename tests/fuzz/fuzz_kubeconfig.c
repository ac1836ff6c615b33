/*
 * fuzz_kubeconfig: the kubeconfig loader (kubeconfig_load: the YAML event loader with its caps,
 * then the current context's cluster and user) on arbitrary bytes, through a memory file.
 *
 * A load either fills a target with an https:// server and no trailing '/', or fails with a
 * message; a target never holds both a token file and nothing to read, nor a certificate without
 * its key. Files the input names are read as the loader reads them (regular files only, with
 * size caps); stdin is /dev/null so that nothing can wait on a terminal.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_support.h"
#include "cluster/kubeconfig.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int fd = open("/dev/null", O_RDONLY);

    (void)argc;
    (void)argv;
    if (fd >= 0) {
        dup2(fd, 0);
        close(fd);
    }
    fuzz_quiet_logs();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kubeconfig_target t;
    struct diag d;
    char path[64];
    int fd = memfd_create("kubeconfig", MFD_CLOEXEC);

    FUZZ_ASSERT(fd >= 0, "memfd");
    FUZZ_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size, "memfd write");
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    memset(&t, 0, sizeof(t));
    diag_clear(&d);
    if (kubeconfig_load(path, &t, &d) < 0) {
        FUZZ_ASSERT(d.set && d.msg[0] != '\0', "a refused kubeconfig without a message");
    } else {
        size_t n;

        FUZZ_ASSERT(!d.set, "a kubeconfig loaded with an error: %s", d.msg);
        FUZZ_ASSERT(t.server != NULL && strncmp(t.server, "https://", 8) == 0,
                    "a target without an https server");
        n = strlen(t.server);
        FUZZ_ASSERT(n > 8 && t.server[n - 1] != '/', "server %s ends in '/'", t.server);
        FUZZ_ASSERT(strpbrk(t.server, " \t\r\n?#") == NULL, "server holds a space, ? or #");
        FUZZ_ASSERT(!t.insecure || (t.ca == NULL && t.ca_path == NULL), "insecure with a CA");
        FUZZ_ASSERT((t.cert || t.cert_path) == (t.key || t.key_path),
                    "a client certificate without its key, or a key without its certificate");
        FUZZ_ASSERT(!(t.ca && t.ca_path), "both an inline CA and a CA file");
    }
    kubeconfig_target_free(&t);
    close(fd);
    return 0;
}
