/*
 * test_plugin_config.c: the device plugin's config read strictly (policy/plugin_config.c): every
 * refusal with its exact message and line:column, every warning, and a near miss of each that
 * passes; the YAML the reader refuses (anchors, tags, documents, NUL, not UTF-8, the caps).
 * The configs follow NVIDIA/k8s-device-plugin v0.20.0's api/config/v1/ and its README's
 * examples (the seed and README cases say which).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "policy/plugin_config.h"

struct pcase {
    const char *text;
    size_t refused, warned;
    const char *first; /* the first finding exactly, or NULL for none */
};

#define TS(res) "version: v1\nsharing:\n  timeSlicing:\n    resources:\n" res
#define R(s)    "      - " s "\n"

static const struct pcase cases[] = {
    /* accepted as they are: seed 003's config, the README's */
    {TS(R("name: nvidia.com/gpu\n        replicas: 4")), 0, 0, NULL},
    {"version: v1\nflags:\n  migStrategy: \"none\"\n  failOnInitError: true\n  nvidiaDriverRoot: "
     "\"/\"\n  plugin:\n    passDeviceSpecs: false\n    deviceListStrategy: envvar\n    "
     "deviceIDStrategy: uuid\n",
     0, 0, NULL},
    {"version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n    - name: "
     "nvidia.com/gpu\n      replicas: 10\nflags: {mpsRoot: /run/nvidia/mps}\n",
     0, 0, NULL},
    {"{\"version\": \"v1\", \"sharing\": {\"timeSlicing\": {\"resources\": [{\"name\": "
     "\"nvidia.com/gpu\", \"replicas\": 3}]}}}",
     0, 0, NULL},
    {"", 0, 0, NULL},
    {"---\n", 0, 0, NULL},
    {"# only a comment\n", 0, 0, NULL},
    /* keys */
    {"version: v1\nflags:\n  renameByDefault: true\n", 1, 0,
     "data[k]:3:3: unknown key \"renameByDefault\" in flags: it belongs in sharing.timeSlicing or "
     "sharing.mps (the device plugin drops it without a word)"},
    /* a Go struct's keys match regardless of case (encoding/json): read, and warned */
    {"version: v1\nFlags: {}\n", 0, 1,
     "data[k]:2:1: key \"Flags\" in the top level is read as \"flags\" (the plugin matches the "
     "keys here regardless of case, other readers of the file do not); write \"flags\""},
    {TS(R("{name: gpu, replicas: 2}")) "  MPS: null\n", 0, 1,
     "data[k]:6:3: key \"MPS\" in sharing is read as \"mps\" (the plugin matches the keys here "
     "regardless of case, other readers of the file do not); write \"mps\""},
    /* ... and so read, timeSlicing {} has no resources */
    {"sharing:\n  timeslicing: {}\n", 1, 1, NULL},
    /* near miss: replicas.go looks a resource's keys up exactly */
    {TS(R("{name: gpu, Replicas: 2}")), 2, 0,
     "data[k]:5:21: unknown key \"Replicas\" in sharing.timeSlicing.resources[0]: did you mean "
     "\"replicas\"? (the device plugin drops it without a word)"},
    {"version: v1\nversion: v1\n", 1, 0,
     "data[k]:2:1: duplicate key \"version\" in the top level (first at line 1, column 1; the "
     "plugin would take the last)"},
    {"1: x\n", 1, 0, "data[k]:1:1: a key in the top level must be a string, not an integer"},
    {"- version: v1\n", 1, 0, "data[k]:1:1: the top level must be a mapping, not a list"},
    {"flags: []\n", 1, 0, "data[k]:1:8: flags must be a mapping, not a list"},
    /* version */
    {"version: v2\n", 1, 0, "data[k]:1:10: unknown version: \"v2\" (the plugin reads only v1)"},
    {"version: 1\n", 1, 0, "data[k]:1:10: version must be a string, not an integer (quote it)"},
    {"version: \"\"\nsharing:\n  timeSlicing:\n    resources:\n" R("{name: gpu, replicas: 2}"), 0,
     0, NULL},
    /* resources of a sharing block */
    {"sharing:\n  timeSlicing: {}\n", 1, 0,
     "data[k]:2:16: sharing.timeSlicing has no resources: no resources specified"},
    {"sharing:\n  timeSlicing:\n    renameByDefault: false\n", 1, 0,
     "data[k]:3:5: sharing.timeSlicing has no resources: no resources specified"},
    {"sharing:\n  timeSlicing:\n    resources: []\n", 1, 0,
     "data[k]:3:16: sharing.timeSlicing.resources is empty: no resources specified"},
    {"sharing:\n  timeSlicing:\n    resources: {}\n", 1, 0,
     "data[k]:3:16: sharing.timeSlicing.resources must be a list, not a mapping"},
    {TS(R("{replicas: 2}")), 1, 0,
     "data[k]:5:9: sharing.timeSlicing.resources[0] has no name: no resource name specified"},
    {TS(R("{name: gpu}")), 1, 0,
     "data[k]:5:9: sharing.timeSlicing.resources[0] has no replicas: no replicas specified"},
    {TS(R("{name: gpu, replicas: null}")), 1, 0,
     "data[k]:5:21: sharing.timeSlicing.resources[0] has no replicas: no replicas specified"},
    /* replicas */
    {TS(R("{name: gpu, replicas: 1}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas is 1: number of replicas must be "
     ">= 2"},
    {TS(R("{name: gpu, replicas: -3}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas is -3: number of replicas must be "
     ">= 2"},
    {TS(R("{name: gpu, replicas: 2}")), 0, 0, NULL},
    {TS(R("{name: gpu, replicas: \"2\"}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas must be a whole number written in "
     "decimal, not a string"},
    {TS(R("{name: gpu, replicas: 2.0}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas must be a whole number written in "
     "decimal, not a number"},
    {TS(R("{name: gpu, replicas: 0x10}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas must be a whole number written in "
     "decimal, not an integer"},
    {TS(R("{name: gpu, replicas: 99999999999999999999}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas is 99999999999999999999: too large "
     "for the plugin's integers"},
    /* devices */
    {TS(R("{name: gpu, replicas: 2, devices: none}")), 1, 0,
     "data[k]:5:43: sharing.timeSlicing.resources[0].devices: devices set as \"none\" but the only "
     "valid string input is 'all'"},
    {TS(R("{name: gpu, replicas: 2, devices: 0}")), 1, 0,
     "data[k]:5:43: sharing.timeSlicing.resources[0].devices: devices set as \"0\" but a count of "
     "devices must be > 0"},
    {TS(R("{name: gpu, replicas: 2, devices: [-1]}")), 1, 0,
     "data[k]:5:44: sharing.timeSlicing.resources[0].devices[0]: unsupported type for device in "
     "devices list: \"-1\" (expected a GPU index, a MIG index such as 0:1, or a GPU-, MIG- or "
     "MIG-GPU-<uuid>/<gi>/<ci> UUID)"},
    {TS(R("{name: gpu, replicas: 2, devices: [MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763]}")), 1,
     0,
     "data[k]:5:44: sharing.timeSlicing.resources[0].devices[0]: unsupported type for device in "
     "devices list: \"MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763\" (expected a GPU index, a MIG "
     "index such as 0:1, or a GPU-, MIG- or MIG-GPU-<uuid>/<gi>/<ci> UUID)"},
    {TS(R("{name: gpu, replicas: 2, devices: true}")), 1, 0,
     "data[k]:5:43: sharing.timeSlicing.resources[0].devices: unrecognized type for devices spec: "
     "a boolean (expected all, a count or a list of devices)"},
    {TS(R("{name: gpu, replicas: 2, devices: all}")), 0, 0, NULL},
    {TS(R("{name: gpu, replicas: 2, devices: 2}")), 0, 1,
     "data[k]:5:43: sharing.timeSlicing.resources[0].devices is ignored: the plugin shares every "
     "GPU of the node (Customizing the 'devices' field in sharing.timeSlicing.resources is not "
     "yet supported)"},
    {TS(R("{name: gpu, replicas: 2, devices: [0, '1', '0:1', GPU-b1028956-cfa2-0990-bf4a-"
          "5da9abb51763, MIG-b1028956-cfa2-0990-bf4a-5da9abb51763, MIG-GPU-b1028956-cfa2-0990-"
          "bf4a-5da9abb51763/3/0]}")),
     0, 1, NULL},
    /* names */
    {TS(R("{name: amd.com/gpu, replicas: 2}")), 1, 0,
     "data[k]:5:16: sharing.timeSlicing.resources[0].name \"amd.com/gpu\": incorrect format for "
     "resource name 'nvidia.com/amd.com/gpu': after nvidia.com/ it must be a DNS-1123 subdomain "
     "(lowercase letters, digits, '-' and '.')"},
    {TS(R("{name: GPU, replicas: 2}")), 1, 0,
     "data[k]:5:16: sharing.timeSlicing.resources[0].name \"GPU\": incorrect format for resource "
     "name 'nvidia.com/GPU': after nvidia.com/ it must be a DNS-1123 subdomain (lowercase "
     "letters, digits, '-' and '.')"},
    {TS(R("{name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, replicas: 2}")), 1, 0,
     "data[k]:5:16: sharing.timeSlicing.resources[0].name "
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": fully-qualified resource name "
     "must be 63 characters or less (it has 64)"},
    {TS(R("{name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, replicas: 2}")), 0, 1,
     "data[k]:5:16: sharing.timeSlicing.resources[0].name "
     "nvidia.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa is not a resource the plugin "
     "serves: it shares nothing for it (nvidia.com/gpu, or nvidia.com/mig-<profile> under "
     "migStrategy mixed)"},
    {"flags: {migStrategy: none}\n" TS(R("{name: nvidia.com/mig-1g.5gb, replicas: 2}")), 0, 1,
     "data[k]:6:16: sharing.timeSlicing.resources[0].name nvidia.com/mig-1g.5gb is not a "
     "resource the plugin serves under migStrategy single or none: it shares nothing for it "
     "(nvidia.com/gpu, or nvidia.com/mig-<profile> under migStrategy mixed)"},
    {"flags: {migStrategy: mixed}\n" TS(R("{name: nvidia.com/mig-1g.5gb, replicas: 2}")), 0, 0,
     NULL},
    /* rename */
    {TS(R("{name: nvidia.com/gpu, rename: foo, replicas: 2}")), 0, 1,
     "data[k]:5:40: sharing.timeSlicing.resources[0].rename nvidia.com/foo is ignored: the plugin "
     "advertises nvidia.com/gpu (Setting the 'rename' field is not yet supported; "
     "renameByDefault: true gives nvidia.com/gpu.shared)"},
    {"sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n" R(
         "{name: nvidia.com/gpu, rename: gpu.shared, replicas: 2}"),
     0, 0, NULL},
    {"sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n" R(
         "{name: nvidia.com/gpu, rename: gpu-shared, replicas: 2}"),
     0, 1,
     "data[k]:5:40: sharing.timeSlicing.resources[0].rename nvidia.com/gpu-shared is ignored: the "
     "plugin advertises nvidia.com/gpu.shared (Setting the 'rename' field is not yet supported; "
     "renameByDefault: true gives nvidia.com/gpu.shared)"},
    /* MPS */
    {"flags: {mpsRoot: /m}\nsharing:\n  timeSlicing: {resources: [{name: gpu, replicas: 2}]}\n  "
     "mps: {resources: [{name: gpu, replicas: 2}]}\n",
     1, 0,
     "data[k]:4:3: sharing.mps and sharing.timeSlicing are both set: the plugin uses MPS and drops "
     "time-slicing without a word; keep one"},
    {"flags: {mpsRoot: \"\"}\nsharing:\n  mps: {resources: [{name: gpu, replicas: 48}]}\n", 0, 1,
     "data[k]:3:3: sharing.mps without flags.mpsRoot: unless the plugin runs with --mps-root or "
     "MPS_ROOT (NVIDIA's Helm chart and the GPU Operator set it), it stops: using MPS requires "
     "--mps-root to be specified"},
    {"flags: {migStrategy: mixed, mpsRoot: /m}\nsharing:\n  mps: {resources: [{name: gpu, "
     "replicas: 48}]}\n",
     1, 0,
     "data[k]:1:22: flags.migStrategy mixed with sharing.mps: using --mig-strategy=mixed is not "
     "supported with MPS (unless --mig-strategy or MIG_STRATEGY sets another strategy, which wins "
     "over the file)"},
    {"flags: {mpsRoot: /m}\nsharing:\n  mps: {resources: [{name: gpu, replicas: 49}]}\n", 1, 0,
     "data[k]:3:43: sharing.mps.resources[0].replicas: maximum allowed replicas exceeded: 49 > 48 "
     "(MPS)"},
    {"flags: {migStrategy: single, mpsRoot: /m}\nsharing:\n  mps: {resources: [{name: gpu, "
     "replicas: 48}]}\n",
     0, 0, NULL},
    {"flags: {mpsRoot: /m}\nsharing:\n  mps: {resources: [{name: nvidia.com/mig-1g.5gb, "
     "replicas: 2}]}\n",
     0, 1,
     "data[k]:3:28: sharing.mps.resources[0].name nvidia.com/mig-1g.5gb is not a resource the "
     "plugin serves with MPS (full GPUs only): it shares nothing for it (nvidia.com/gpu)"},
    /* flags */
    {"flags: {migStrategy: mix}\n", 1, 0,
     "data[k]:1:22: flags.migStrategy \"mix\" is not one of none, single, mixed (the plugin "
     "refuses to start)"},
    {"flags: {deviceDiscoveryStrategy: nvlm}\n", 1, 0,
     "data[k]:1:34: flags.deviceDiscoveryStrategy \"nvlm\" is not one of auto, nvml, tegra (the "
     "plugin refuses to start)"},
    {"flags: {plugin: {deviceIDStrategy: UUID}}\n", 1, 0,
     "data[k]:1:36: flags.plugin.deviceIDStrategy \"UUID\" is not one of uuid, index (the plugin "
     "refuses to start)"},
    {"flags: {plugin: {deviceListStrategy: [envvar, cdi]}}\n", 1, 0,
     "data[k]:1:47: flags.plugin.deviceListStrategy[1] \"cdi\" is not one of envvar, "
     "volume-mounts, cdi-annotations, cdi-cri (the plugin refuses to start)"},
    {"flags: {plugin: {deviceListStrategy: []}}\n", 1, 0,
     "data[k]:1:38: flags.plugin.deviceListStrategy is empty: no device list strategy specified"},
    {"flags: {plugin: {sharedDevicesAllocationPolicy: spread}}\n", 1, 0,
     "data[k]:1:49: flags.plugin.sharedDevicesAllocationPolicy \"spread\" is not one of "
     "distributed, packed (the plugin refuses to start)"},
    {"flags: {plugin: {deviceListStrategy: [cdi-cri, volume-mounts], deviceIDStrategy: index, "
     "sharedDevicesAllocationPolicy: packed}, deviceDiscoveryStrategy: tegra}\n",
     0, 0, NULL},
    {"flags: {failOnInitError: yes}\n", 1, 0,
     "data[k]:1:26: flags.failOnInitError must be true or false, not yes (a boolean in YAML 1.1 "
     "only)"},
    {"flags: {failOnInitError: \"true\"}\n", 1, 0,
     "data[k]:1:26: flags.failOnInitError must be true or false, not a string"},
    /* duration.go: a number is nanoseconds, a string goes to time.ParseDuration */
    {"flags: {gfd: {sleepInterval: 60000000000}}\n", 0, 0, NULL},
    {"flags: {gfd: {sleepInterval: banana}}\n", 1, 0,
     "data[k]:1:30: flags.gfd.sleepInterval \"banana\": time: invalid duration (a Go duration "
     "such as 30s, 5m or 1h30m)"},
    {"flags: {gfd: {sleepInterval: 60}}\n", 0, 0, NULL},
    {"flags: {gfd: {sleepInterval: \"60\"}}\n", 1, 0,
     "data[k]:1:30: flags.gfd.sleepInterval \"60\": time: invalid duration (a Go duration such "
     "as 30s, 5m or 1h30m)"},
    {"flags: {gfd: {sleepInterval: 1h2m0.5s, oneshot: false}}\nimex: {channelIDs: [0], "
     "required: true}\n",
     0, 0, NULL},
    {"flags: {gfd: {sleepInterval: \"-1.5h\"}}\nimex: {channelIDs: []}\n", 0, 0, NULL},
    /* imex.go AssertChannelIDsValid, run by validateFlags */
    {"imex: {channelIDs: [0, 1]}\n", 1, 0,
     "data[k]:1:24: imex.channelIDs[1] is 1: channelIDs must be [] or [0]"},
    {"imex: {channelIDs: [2]}\n", 1, 0,
     "data[k]:1:21: imex.channelIDs[0] is 2: channelIDs must be [] or [0]"},
    {"imex: {channelIDs: [0, x]}\n", 1, 0,
     "data[k]:1:24: imex.channelIDs[1] must be an integer, not a string"},
    {"resources: {gpus: [{pattern: '*', name: gpu}]}\n", 0, 1,
     "data[k]:1:1: resources is ignored: the plugin drops it (Customizing the 'resources' field is "
     "not yet supported in the config)"},
    /* near miss: config.go warns only when it lists patterns */
    {"resources: {gpus: []}\n", 0, 0, NULL},
    /* a Resource's name is a ResourceName, refused as one before the list is dropped */
    {"resources: {gpus: [{pattern: '*', name: BAD NAME}]}\n", 1, 1,
     "data[k]:1:41: resources.gpus[0].name \"BAD NAME\": incorrect format for resource name "
     "'nvidia.com/BAD NAME': after nvidia.com/ it must be a DNS-1123 subdomain (lowercase "
     "letters, digits, '-' and '.')"},
    /* null where encoding/json hands it to an UnmarshalJSON that refuses it */
    {"sharing: {timeSlicing: null}\n", 1, 0,
     "data[k]:1:24: sharing.timeSlicing is null or empty: no resources specified (leave the key "
     "out or list its resources)"},
    {"sharing: {mps: null}\n", 0, 0, NULL},
    {TS(R("{name: gpu, replicas: 2, devices: null}")), 1, 0,
     "data[k]:5:43: sharing.timeSlicing.resources[0].devices is null: devices set as '' but the "
     "only valid string input is 'all' (leave the key out, or write all)"},
    {TS(R("{name: gpu, replicas: 2, rename: }")), 1, 0,
     "data[k]:5:42: sharing.timeSlicing.resources[0].rename is null: incorrect format for "
     "resource name 'nvidia.com/' (leave the key out)"},
    /* YAML 1.1 reads 060 as octal 48 */
    {TS(R("{name: gpu, replicas: 060}")), 1, 0,
     "data[k]:5:31: sharing.timeSlicing.resources[0].replicas is 060: a leading zero makes it "
     "octal to the plugin's YAML 1.1 reader; write the number without it"},
    /* uuid.Parse's other forms */
    {TS(R("{name: gpu, replicas: 2, devices: [GPU-b1028956cfa20990bf4a5da9abb51763, "
          "'GPU-{b1028956-cfa2-0990-bf4a-5da9abb51763}', "
          "'MIG-urn:uuid:b1028956-cfa2-0990-bf4a-5da9abb51763']}")),
     0, 1, NULL},
    {TS(R("{name: gpu, replicas: 2, devices: ['GPU-{b1028956-cfa2-0990-bf4a-5da9abb51763']}")), 1,
     0, NULL},
    /* YAML */
    {"a: &x 1\nb: *x\n", 1, 0, "data[k]:2:4: anchors and aliases are not supported"},
    {"version: &v v1\n", 1, 0, "data[k]:1:10: anchors and aliases are not supported"},
    {"version: !custom v1\n", 1, 0,
     "data[k]:1:10: tag \"!custom\" is not supported (only YAML's core tags)"},
    {"version: !!str v1\n", 0, 0, NULL},
    {"version: \"v1\\0\"\n", 1, 0, "data[k]:1:10: a NUL character is not allowed in a value"},
    {"version: v1\n---\nversion: v1\n", 1, 0,
     "data[k]:2:1: a second YAML document: the plugin reads only the first"},
    {"[unclosed\n", 1, 0, "data[k]:2:1: YAML syntax error: did not find expected ',' or ']'"},
    {"version: \xff\n", 1, 0, "data[k]: cannot read YAML: invalid leading UTF-8 octet at byte 9"},
};

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct pcase *c = &cases[i];
        struct plugin_report r;
        size_t refused = plugin_config_check("data[k]", c->text, strlen(c->text), &r);
        int before = harness_failed;

        CHECK(refused == c->refused && r.refused == c->refused);
        CHECK(r.warned == c->warned);
        if (c->first != NULL) {
            CHECK(r.n > 0);
            CHECK_STR(r.n > 0 ? r.f[0].text : "", c->first);
            CHECK(r.n > 0 && r.f[0].warn == (c->refused == 0));
        }
        if (harness_failed != before) {
            printf("  case %zu: %s\n", i, c->text);
            for (size_t k = 0; k < r.n; k++)
                printf("    %s %s\n", r.f[k].warn ? "warn" : "refuse", r.f[k].text);
        }
    }
}

/* The position of a finding is also in the report's fields. */
static void test_positions(void)
{
    struct plugin_report r;
    const char *t = "version: v1\nflags:\n  migStrategy: none\n  renameByDefault: true\n";

    CHECK(plugin_config_check("data[any]", t, strlen(t), &r) == 1);
    CHECK(r.n == 1 && r.f[0].line == 4 && r.f[0].column == 3 && !r.f[0].warn);
}

/* Caps: the schema nests 5 deep, a file nested past the cap is refused, not read; findings past
 * the report's array are counted; a file past the size cap is not read at all. */
static void test_caps(void)
{
    static char deep[4 * PLUGIN_CONFIG_DEPTH_MAX + 16], many[64 * 40];
    struct plugin_report r;
    size_t n = 0;

    n += (size_t)snprintf(deep + n, sizeof(deep) - n, "a: ");
    for (unsigned i = 0; i <= PLUGIN_CONFIG_DEPTH_MAX; i++)
        n += (size_t)snprintf(deep + n, sizeof(deep) - n, "[");
    CHECK(plugin_config_check("data[k]", deep, n, &r) == 1);
    CHECK_STR(r.f[0].text, "data[k]:1:15: nested deeper than 12 levels");
    n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "k%d: 1\n", i);
    CHECK(plugin_config_check("data[k]", many, n, &r) == 40);
    CHECK(r.n == PLUGIN_CONFIG_FINDINGS_MAX && r.refused == 40);
    /* refused on its length alone: not a byte of it is read */
    CHECK(plugin_config_check("data[k]", many, PLUGIN_CONFIG_MAX_BYTES + 1, &r) == 1);
    CHECK_STR(r.f[0].text, "data[k]: larger than 1048576 bytes");
}

/* A long key and a long value are cut in the message, never overflow it. */
static void test_long_values(void)
{
    static char text[3000];
    struct plugin_report r;
    int n;

    n = snprintf(text, sizeof(text), "k%0900d: 1\nversion: %0900d\n", 0, 1);
    CHECK(plugin_config_check("data[k]", text, (size_t)n, &r) == 2);
    CHECK(r.n == 2 && strlen(r.f[0].text) < PLUGIN_CONFIG_TEXT_MAX);
    CHECK_CONTAINS(r.f[0].text, "unknown key \"k0000000000");
    CHECK_CONTAINS(r.f[1].text, "version must be a string, not an integer");
}

/* What a config shares, as the plugin reads it: MPS wins over time-slicing (sharing.go), MPS
 * fails requests for more than one device unless told otherwise, time-slicing only when told
 * (replicas.go). */
static void test_sharing(void)
{
    struct plugin_sharing sh;
    const char *ts = TS(R("name: gpu\n        replicas: 4"));

    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.readable && sh.strategy == PLUGIN_TIME_SLICING && !sh.fail_gt_one);
    CHECK_STR(sh.resource, "nvidia.com/gpu");
    ts = "sharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources: [{name: "
         "nvidia.com/gpu, replicas: 2}]\n";
    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.strategy == PLUGIN_TIME_SLICING && sh.fail_gt_one);
    ts = "sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}\n";
    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.strategy == PLUGIN_MPS && sh.fail_gt_one);
    ts = "sharing: {mps: {failRequestsGreaterThanOne: false, resources: [{name: gpu, replicas: "
         "2}]}}\n";
    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.strategy == PLUGIN_MPS && !sh.fail_gt_one);
    /* Sharing's keys fold case, as encoding/json does */
    ts = "Sharing: {TimeSlicing: {resources: [{name: gpu, replicas: 2}]}}\n";
    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.strategy == PLUGIN_TIME_SLICING);
    ts = "version: v1\nflags: {migStrategy: none}\n";
    plugin_config_sharing(ts, strlen(ts), &sh);
    CHECK(sh.readable && sh.strategy == PLUGIN_SHARES_NONE && !sh.fail_gt_one);
    plugin_config_sharing("[1, 2]", 6, &sh);
    CHECK(!sh.readable);
    plugin_config_sharing("a: [", 4, &sh);
    CHECK(!sh.readable && sh.strategy == PLUGIN_SHARES_NONE);
}

int main(void)
{
    RUN(test_sharing);
    RUN(test_cases);
    RUN(test_positions);
    RUN(test_caps);
    RUN(test_long_values);
    TEST_MAIN_END("test_plugin_config");
}
