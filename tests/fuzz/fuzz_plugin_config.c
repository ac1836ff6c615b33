/*
 * fuzz_plugin_config: the device plugin's config read strictly (policy/plugin_config.c) on
 * arbitrary bytes, as one data key of a ConfigMap.
 *
 * A check never crashes, and what it reports holds together: the refusals it returns are the
 * report's, the report keeps at most its array's worth, each finding is a NUL-terminated text
 * under the cap that starts with the file's name, and a finding with a position points inside
 * the text (or one line past it, where libyaml reports the end), counting lines as YAML does.
 * What the cluster view reads of it (plugin_config_sharing) holds together too.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_support.h"
#include "policy/plugin_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct plugin_report r;
    size_t lines = 1, refused;

    /* YAML's line breaks: LF, CR, and NEL, LS and PS in UTF-8 (counted at their last byte) */
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n' || data[i] == '\r' ||
                 (i > 0 && data[i - 1] == 0xc2 && data[i] == 0x85) ||
                 (i > 1 && data[i - 2] == 0xe2 && data[i - 1] == 0x80 &&
                  (data[i] == 0xa8 || data[i] == 0xa9));
    refused = plugin_config_check("data[k]", (const char *)data, size, &r);
    FUZZ_ASSERT(refused == r.refused, "the count returned is the report's");
    FUZZ_ASSERT(r.n <= PLUGIN_CONFIG_FINDINGS_MAX, "more findings kept than the array holds");
    FUZZ_ASSERT(r.n == r.refused + r.warned || r.n == PLUGIN_CONFIG_FINDINGS_MAX,
                "findings dropped before the array was full");
    for (size_t i = 0; i < r.n; i++) {
        const struct plugin_finding *f = &r.f[i];

        FUZZ_ASSERT(memchr(f->text, '\0', sizeof(f->text)) != NULL, "a finding not terminated");
        FUZZ_ASSERT(strncmp(f->text, "data[k]", 7) == 0, "a finding without the file's name");
        FUZZ_ASSERT(f->line <= lines + 1, "a finding past the end of the text");
    }
    /* what the cluster view reads of the same text: a strategy only with a readable file, a
     * resource name only with a strategy, and MPS always failing requests greater than one
     * unless the file says false */
    {
        struct plugin_sharing sh;

        plugin_config_sharing((const char *)data, size, &sh);
        FUZZ_ASSERT(sh.strategy == PLUGIN_SHARES_NONE || sh.readable,
                    "a strategy read from a file that is not a mapping");
        FUZZ_ASSERT(memchr(sh.resource, '\0', sizeof(sh.resource)) != NULL,
                    "a resource name not terminated");
        FUZZ_ASSERT(sh.resource[0] == '\0' || sh.strategy != PLUGIN_SHARES_NONE,
                    "a shared resource without a strategy");
        FUZZ_ASSERT(sh.strategy != PLUGIN_SHARES_NONE || !sh.fail_gt_one,
                    "failing requests greater than one without sharing");
    }
    return 0;
}
