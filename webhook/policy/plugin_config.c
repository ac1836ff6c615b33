/*
 * plugin_config.c: the NVIDIA device plugin's config file, read strictly (plugin_config.h).
 *
 * The plugin reads its config with sigs.k8s.io/yaml.Unmarshal into Go structs
 * (api/config/v1/config.go, parseConfigFrom): YAML becomes JSON, and encoding/json drops every
 * key no struct field names. A misplaced key (NVIDIA/k8s-device-plugin#1433: renameByDefault
 * under flags) is therefore ignored without a word, and the plugin's own checks run only when it
 * restarts on a node. This reader knows the v1 schema of v0.20.0 and refuses, with the line and
 * column in the file:
 *   - keys the schema does not have at that place (with where they belong, when they do exist);
 *     a Go struct's key written in another case is read by encoding/json, so only warned;
 *   - duplicate keys (sigs.k8s.io/yaml.Unmarshal is not the strict variant: the last one wins);
 *   - anchors, aliases, tags other than YAML's core ones, more than one document, NUL bytes,
 *     text that is not UTF-8, nesting past PLUGIN_CONFIG_DEPTH_MAX (the schema has 5 levels);
 *   - values of the wrong type (JSON unmarshalling fails on "4" for an int);
 *   - what the plugin refuses when it starts: version (config.go), resources, names, replicas
 *     and devices (replicas.go, resources.go), the flags validateFlags() checks
 *     (cmd/nvidia-device-plugin/main.go, strategy.go, imex.go), durations (duration.go), null
 *     where encoding/json hands it to an UnmarshalJSON that refuses it, MPS's limits
 *     (cmd/mps-control-daemon/mps/device.go: 48 replicas at most);
 *   - MPS together with time-slicing: sharing.go's SharingStrategy() takes MPS and drops
 *     time-slicing silently.
 * It warns about what the plugin accepts and then resets (config.go,
 * DisableResourceNamingInConfig: a rename other than the default, devices other than all, the
 * top-level resources) and resource names it does not serve.
 *
 * Invariants: the tree is bounded by yamltree's caps; the walk recurses only along the schema
 * (5 levels), never along the input; every finding is formatted into the caller's report, cut
 * to PLUGIN_CONFIG_TEXT_MAX bytes, with values shown cut to VALUE_SHOWN bytes.
 */
#include "plugin_config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "parse.h"
#include "yamltree.h"

#define CORE_TAG         "tag:yaml.org,2002:"
#define VALUE_SHOWN      64 /* bytes of a value quoted in a message */
#define PATH_MAX_LEN     160
#define RES_NAME_MAX     63 /* api/config/v1/consts.go: MaxResourceNameLength */
#define RES_PREFIX       "nvidia.com/"
#define MPS_REPLICAS_MAX 48 /* mps/device.go, at compute capability 7.5 and above */

/* ---- the schema ---- */

enum vtype {
    T_STR,      /* a string; with choices, one of them */
    T_BOOL,     /* true or false */
    T_DURATION, /* a Go duration string ("10s") */
    T_STR_LIST, /* a string or a list of strings, each one of the choices (deviceListStrategy) */
    T_INT_LIST, /* a list of integers (imex.channelIDs) */
    T_MAP,      /* a mapping of sub, walked here */
    T_SEQ_MAP,  /* a list of mappings of sub, walked here */
    T_RES_NAME, /* a resource name (resources.go NewResourceName) */
    T_OWN,      /* a value its parent's check reads itself (sharing, resources, ...) */
};

struct schema;

struct pfield {
    const char *name;
    enum vtype type;
    const struct schema *sub;   /* T_MAP, T_SEQ_MAP */
    const char *const *choices; /* T_STR, T_STR_LIST: NULL-terminated, or NULL for any */
    const char *missing;        /* required: the plugin's words when it is absent; else NULL */
};

struct schema {
    const char *at; /* where its keys live, for "it belongs in ..." */
    const struct pfield *f;
    size_t n;
    bool fold; /* a Go struct: encoding/json matches its keys regardless of case; the others
                  (replicas.go, resources.go) look their keys up exactly */
};

static const char *const MIG_STRATEGIES[] = {"none", "single", "mixed", NULL};
static const char *const DISCOVERY[] = {"auto", "nvml", "tegra", NULL};
static const char *const ID_STRATEGIES[] = {"uuid", "index", NULL};
static const char *const ALLOCATION[] = {"distributed", "packed", NULL};
/* strategy.go: supportedDeviceListStrategies */
static const char *const LIST_STRATEGIES[] = {"envvar", "volume-mounts", "cdi-annotations",
                                              "cdi-cri", NULL};

/* flags.go: PluginCommandLineFlags, with sharedDevicesAllocationPolicy (v0.19.3, #1621) */
static const struct pfield PLUGIN_F[] = {
    {"passDeviceSpecs", T_BOOL, NULL, NULL, NULL},
    {"deviceListStrategy", T_STR_LIST, NULL, LIST_STRATEGIES, NULL},
    {"deviceIDStrategy", T_STR, NULL, ID_STRATEGIES, NULL},
    {"cdiAnnotationPrefix", T_STR, NULL, NULL, NULL},
    {"nvidiaCTKPath", T_STR, NULL, NULL, NULL},
    {"containerDriverRoot", T_STR, NULL, NULL, NULL},
    {"kubeletSocket", T_STR, NULL, NULL, NULL},
    {"cdiFeatureFlags", T_STR_LIST, NULL, NULL, NULL},
    {"sharedDevicesAllocationPolicy", T_STR, NULL, ALLOCATION, NULL},
};
static const struct schema PLUGIN_S = {"flags.plugin", PLUGIN_F,
                                       sizeof(PLUGIN_F) / sizeof(PLUGIN_F[0]), true};

/* flags.go: GFDCommandLineFlags */
static const struct pfield GFD_F[] = {
    {"oneshot", T_BOOL, NULL, NULL, NULL},           {"noTimestamp", T_BOOL, NULL, NULL, NULL},
    {"sleepInterval", T_DURATION, NULL, NULL, NULL}, {"outputFile", T_STR, NULL, NULL, NULL},
    {"machineTypeFile", T_STR, NULL, NULL, NULL},
};
static const struct schema GFD_S = {"flags.gfd", GFD_F, sizeof(GFD_F) / sizeof(GFD_F[0]), true};

/* flags.go: CommandLineFlags */
enum { FL_MIG, FL_MPS_ROOT };
static const struct pfield FLAGS_F[] = {
    [FL_MIG] = {"migStrategy", T_STR, NULL, MIG_STRATEGIES, NULL},
    [FL_MPS_ROOT] = {"mpsRoot", T_STR, NULL, NULL, NULL},
    {"failOnInitError", T_BOOL, NULL, NULL, NULL},
    {"nvidiaDriverRoot", T_STR, NULL, NULL, NULL},
    {"nvidiaDevRoot", T_STR, NULL, NULL, NULL},
    {"gdrcopyEnabled", T_BOOL, NULL, NULL, NULL},
    {"gdsEnabled", T_BOOL, NULL, NULL, NULL},
    {"mofedEnabled", T_BOOL, NULL, NULL, NULL},
    {"useNodeFeatureAPI", T_BOOL, NULL, NULL, NULL},
    {"deviceDiscoveryStrategy", T_STR, NULL, DISCOVERY, NULL},
    {"plugin", T_MAP, &PLUGIN_S, NULL, NULL},
    {"gfd", T_MAP, &GFD_S, NULL, NULL},
};
#define FLAGS_N (sizeof(FLAGS_F) / sizeof(FLAGS_F[0]))
static const struct schema FLAGS_S = {"flags", FLAGS_F, FLAGS_N, true};

/* replicas.go: ReplicatedResource (its UnmarshalJSON looks its keys up exactly) */
enum { RS_NAME, RS_RENAME, RS_DEVICES, RS_REPLICAS, RS_N };
static const struct pfield RES_F[RS_N] = {
    {"name", T_OWN, NULL, NULL, "no resource name specified"},
    {"rename", T_OWN, NULL, NULL, NULL},
    {"devices", T_OWN, NULL, NULL, NULL},
    {"replicas", T_OWN, NULL, NULL, "no replicas specified"},
};
static const struct schema RES_S = {"sharing.timeSlicing.resources[] or sharing.mps.resources[]",
                                    RES_F, RS_N, false};

/* replicas.go: ReplicatedResources */
enum { RP_RENAME_BY_DEFAULT, RP_FAIL_GT_ONE, RP_RESOURCES, RP_N };
static const struct pfield REPL_F[RP_N] = {
    {"renameByDefault", T_BOOL, NULL, NULL, NULL},
    {"failRequestsGreaterThanOne", T_BOOL, NULL, NULL, NULL},
    {"resources", T_OWN, NULL, NULL, "no resources specified"},
};
static const struct schema REPL_S = {"sharing.timeSlicing or sharing.mps", REPL_F, RP_N, false};

/* sharing.go: Sharing */
enum { SH_TS, SH_MPS, SH_N };
static const struct pfield SHARING_F[SH_N] = {
    {"timeSlicing", T_OWN, NULL, NULL, NULL},
    {"mps", T_OWN, NULL, NULL, NULL},
};
static const struct schema SHARING_S = {"sharing", SHARING_F, SH_N, true};

/* resources.go: Resource and Resources (accepted, then dropped: config.go); a Resource's name
 * is read as a ResourceName before that, and refused as one */
static const struct pfield PATTERN_F[] = {
    {"pattern", T_STR, NULL, NULL, "resources must have a 'pattern' field set"},
    {"name", T_RES_NAME, NULL, NULL, "resources must have a 'name' field set"},
};
static const struct schema PATTERN_S = {"resources.gpus[] or resources.mig[]", PATTERN_F, 2, false};
static const struct pfield RESOURCES_F[] = {
    {"gpus", T_SEQ_MAP, &PATTERN_S, NULL, NULL},
    {"mig", T_SEQ_MAP, &PATTERN_S, NULL, NULL},
};
static const struct schema RESOURCES_S = {"resources", RESOURCES_F, 2, true};

/* imex.go: Imex */
static const struct pfield IMEX_F[] = {
    {"channelIDs", T_INT_LIST, NULL, NULL, NULL},
    {"required", T_BOOL, NULL, NULL, NULL},
};
static const struct schema IMEX_S = {"imex", IMEX_F, 2, true};

/* config.go: Config */
enum { TOP_VERSION, TOP_FLAGS, TOP_RESOURCES, TOP_SHARING, TOP_IMEX, TOP_N };
static const struct pfield TOP_F[TOP_N] = {
    {"version", T_OWN, NULL, NULL, NULL},           {"flags", T_OWN, NULL, NULL, NULL},
    {"resources", T_MAP, &RESOURCES_S, NULL, NULL}, {"sharing", T_OWN, NULL, NULL, NULL},
    {"imex", T_MAP, &IMEX_S, NULL, NULL},
};
static const struct schema TOP_S = {"the top level", TOP_F, TOP_N, true};

/* Every mapping of the schema, for "it belongs in ...". */
static const struct schema *const ALL[] = {&TOP_S,  &FLAGS_S, &PLUGIN_S,    &GFD_S,     &SHARING_S,
                                           &REPL_S, &RES_S,   &RESOURCES_S, &PATTERN_S, &IMEX_S};

#define FIELDS_MAX 16 /* keys of the largest mapping above */

/* ---- one check ---- */

struct pc {
    const char *where;
    struct plugin_report *r;
    const char *mig; /* flags.migStrategy, or NULL */
    bool mps_root;   /* flags.mpsRoot given and not empty */
};

static void vfinding(struct pc *c, bool warn, const struct yamltree_node *at, const char *fmt,
                     va_list ap) __attribute__((format(printf, 4, 0)));
static void vfinding(struct pc *c, bool warn, const struct yamltree_node *at, const char *fmt,
                     va_list ap)
{
    struct plugin_finding *f;
    int n;

    if (warn)
        c->r->warned++;
    else
        c->r->refused++;
    if (c->r->n >= PLUGIN_CONFIG_FINDINGS_MAX)
        return;
    f = &c->r->f[c->r->n++];
    f->warn = warn;
    f->line = at ? at->line : 0;
    f->column = at ? at->column : 0;
    if (at != NULL)
        n = snprintf(f->text, sizeof(f->text), "%.*s:%u:%u: ", 100, c->where, f->line, f->column);
    else
        n = snprintf(f->text, sizeof(f->text), "%.*s: ", 100, c->where);
    if (n > 0 && (size_t)n < sizeof(f->text))
        vsnprintf(f->text + n, sizeof(f->text) - (size_t)n, fmt, ap);
}

static void refuse(struct pc *c, const struct yamltree_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct pc *c, const struct yamltree_node *at, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfinding(c, false, at, fmt, ap);
    va_end(ap);
}

static void warn(struct pc *c, const struct yamltree_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(struct pc *c, const struct yamltree_node *at, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfinding(c, true, at, fmt, ap);
    va_end(ap);
}

/* s quoted for a message, escaped, cut at VALUE_SHOWN bytes, into buf (VALUE_SHOWN * 2 + 8). */
#define SHOW_LEN (VALUE_SHOWN * 2 + 8)
static const char *show(char *buf, const char *s)
{
    size_t i, o = 0;

    buf[o++] = '"';
    for (i = 0; i < VALUE_SHOWN && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch == '"' || ch == '\\')
            buf[o++] = '\\';
        buf[o++] = ch < 0x20 ? '?' : (char)ch;
    }
    if (s[i])
        buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static void path_key(char *out, const char *base, const char *key)
{
    if (base[0] == '\0')
        snprintf(out, PATH_MAX_LEN, "%.64s", key);
    else
        snprintf(out, PATH_MAX_LEN, "%.*s.%.64s", PATH_MAX_LEN - 70, base, key);
}

static void path_index(char *out, const char *base, size_t i)
{
    snprintf(out, PATH_MAX_LEN, "%.*s[%zu]", PATH_MAX_LEN - 24, base, i);
}

/* What a scalar means: quoted and !!str scalars are strings; a plain one reads by the core
 * schema, as the plugin's YAML reader reads it before JSON sees it. */
static enum yamltree_type stype(const struct yamltree_node *n)
{
    if (n->tag != NULL && strcmp(n->tag, CORE_TAG "str") == 0)
        return YAMLTREE_STR;
    if (n->tag == NULL && !n->plain)
        return YAMLTREE_STR;
    return yamltree_resolve(n->s);
}

/* Absent, or null: the plugin takes its default (a nil pointer, a zero value). */
static bool given(const struct yamltree_node *n)
{
    return n != NULL && !(n->kind == YAMLTREE_SCALAR && stype(n) == YAMLTREE_NULL);
}

static const char *kind_name(const struct yamltree_node *n)
{
    static const char *const names[] = {"a string", "null", "a boolean", "an integer", "a number"};

    if (n->kind == YAMLTREE_MAP)
        return "a mapping";
    if (n->kind == YAMLTREE_SEQ)
        return "a list";
    return names[stype(n)];
}

/* YAML 1.1's other booleans (yes, no, on, off, y, n in their casings). */
static bool yaml11_bool(const char *s)
{
    static const char *const words[] = {"yes", "no", "on", "off", "y", "n"};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(s, words[i]) == 0)
            return true;
    return false;
}

static bool is_str(struct pc *c, const struct yamltree_node *n, const char *path)
{
    if (n->kind == YAMLTREE_SCALAR && stype(n) == YAMLTREE_STR)
        return true;
    refuse(c, n, "%s must be a string, not %s%s", path, kind_name(n),
           n->kind == YAMLTREE_SCALAR ? " (quote it)" : "");
    return false;
}

static bool one_of(const char *const *choices, const char *s)
{
    for (size_t i = 0; choices[i] != NULL; i++)
        if (strcmp(choices[i], s) == 0)
            return true;
    return false;
}

static void choices_text(const char *const *choices, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; choices[i] != NULL && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", choices[i]);
}

static void check_choice(struct pc *c, const struct yamltree_node *n, const char *path,
                         const char *const *choices)
{
    char b[SHOW_LEN], list[160];

    if (choices == NULL || one_of(choices, n->s))
        return;
    choices_text(choices, list, sizeof(list));
    refuse(c, n, "%s %s is not one of %s (the plugin refuses to start)", path, show(b, n->s), list);
}

/* Where a key the mapping s does not have belongs, into buf: another mapping of the schema that
 * has it, or a key of s that differs only in case (encoding/json would match it, the exact
 * lookups of replicas.go would not). "" when neither. */
static void belongs(const struct schema *s, const char *key, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->f[i].name, key) == 0) {
            snprintf(buf, len, ": did you mean \"%s\"?", s->f[i].name);
            return;
        }
    for (size_t k = 0; k < sizeof(ALL) / sizeof(ALL[0]); k++)
        for (size_t i = 0; ALL[k] != s && i < ALL[k]->n; i++)
            if (strcmp(ALL[k]->f[i].name, key) == 0) {
                snprintf(buf, len, ": it belongs in %s", ALL[k]->at);
                return;
            }
}

static void walk_map(struct pc *c, const struct yamltree_node *map, const char *path,
                     const struct schema *s, const struct yamltree_node **vals,
                     const struct yamltree_node **keys);
static bool resource_name(struct pc *c, const struct yamltree_node *n, const char *path, char *full,
                          size_t len);

/* Go's time.ParseDuration: "0", or an optional sign and one or more decimal numbers (a fraction
 * allowed), each with a unit: ns, us, µs, μs, ms, s, m, h. */
static bool go_duration_ok(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h"};

    if (*s == '+' || *s == '-')
        s++;
    if (strcmp(s, "0") == 0)
        return true;
    if (*s == '\0')
        return false;
    while (*s != '\0') {
        size_t whole = strspn(s, "0123456789"), frac = 0, u, best = 0;

        s += whole;
        if (*s == '.')
            frac = strspn(++s, "0123456789");
        s += frac;
        if (whole == 0 && frac == 0)
            return false;
        for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
            if (strncmp(s, units[u], strlen(units[u])) == 0 && strlen(units[u]) > best)
                best = strlen(units[u]);
        if (best == 0)
            return false; /* a number without its unit */
        s += best;
    }
    return true;
}

static void check_value(struct pc *c, const struct pfield *f, const struct yamltree_node *v,
                        const char *path)
{
    const struct yamltree_node *sv[FIELDS_MAX], *sk[FIELDS_MAX];
    char p[PATH_MAX_LEN], b[SHOW_LEN];

    switch (f->type) {
    case T_STR:
        if (is_str(c, v, path))
            check_choice(c, v, path, f->choices);
        break;
    case T_DURATION:
        /* duration.go Duration.UnmarshalJSON: a number is nanoseconds, a string goes to
         * time.ParseDuration, whose error stops the plugin ("unable to parse config file") */
        if (v->kind == YAMLTREE_SCALAR && (stype(v) == YAMLTREE_INT || stype(v) == YAMLTREE_FLOAT))
            break;
        if (is_str(c, v, path) && !go_duration_ok(v->s))
            refuse(c, v, "%s %s: time: invalid duration (a Go duration such as 30s, 5m or 1h30m)",
                   path, show(b, v->s));
        break;
    case T_RES_NAME: {
        char full[RES_NAME_MAX + 16];

        resource_name(c, v, path, full, sizeof(full));
        break;
    }
    case T_BOOL:
        if (v->kind == YAMLTREE_SCALAR && stype(v) == YAMLTREE_STR && v->plain && yaml11_bool(v->s))
            /* sigs.k8s.io/yaml reads YAML 1.1, where it is a boolean; YAML 1.2 and every other
             * reader of the file see a string */
            refuse(c, v, "%s must be true or false, not %.*s (a boolean in YAML 1.1 only)", path,
                   VALUE_SHOWN, v->s);
        else if (v->kind != YAMLTREE_SCALAR || stype(v) != YAMLTREE_BOOL)
            refuse(c, v, "%s must be true or false, not %s", path, kind_name(v));
        break;
    case T_STR_LIST:
        if (v->kind == YAMLTREE_SCALAR) {
            if (is_str(c, v, path))
                check_choice(c, v, path, f->choices);
            break;
        }
        if (v->kind != YAMLTREE_SEQ) {
            refuse(c, v, "%s must be a string or a list of strings, not %s", path, kind_name(v));
            break;
        }
        if (v->n == 0 && f->choices != NULL)
            refuse(c, v, "%s is empty: no device list strategy specified", path);
        for (size_t i = 0; i < v->n; i++) {
            path_index(p, path, i);
            if (is_str(c, v->kids[i], p))
                check_choice(c, v->kids[i], p, f->choices);
        }
        break;
    case T_INT_LIST:
        if (v->kind != YAMLTREE_SEQ) {
            refuse(c, v, "%s must be a list of integers, not %s", path, kind_name(v));
            break;
        }
        for (size_t i = 0; i < v->n; i++) {
            path_index(p, path, i);
            if (v->kids[i]->kind != YAMLTREE_SCALAR || stype(v->kids[i]) != YAMLTREE_INT)
                refuse(c, v->kids[i], "%s must be an integer, not %s", p, kind_name(v->kids[i]));
            else if (i > 0 || strcmp(v->kids[i]->s, "0") != 0)
                /* imex.go AssertChannelIDsValid, which validateFlags runs at start */
                refuse(c, v->kids[i], "%s is %.*s: channelIDs must be [] or [0]", p, VALUE_SHOWN,
                       v->kids[i]->s);
        }
        break;
    case T_MAP: walk_map(c, v, path, f->sub, sv, sk); break;
    case T_SEQ_MAP:
        if (v->kind != YAMLTREE_SEQ) {
            refuse(c, v, "%s must be a list, not %s", path, kind_name(v));
            break;
        }
        for (size_t i = 0; i < v->n; i++) {
            path_index(p, path, i);
            walk_map(c, v->kids[i], p, f->sub, sv, sk);
        }
        break;
    case T_OWN: break;
    }
}

/* The keys of map by s into vals and keys (NULL where absent), refusing a map that is not one,
 * keys that are not strings, unknown and duplicate keys, and required keys that are missing;
 * values of the types walked here are checked here, T_OWN ones are the caller's. */
static void walk_map(struct pc *c, const struct yamltree_node *map, const char *path,
                     const struct schema *s, const struct yamltree_node **vals,
                     const struct yamltree_node **keys)
{
    char p[PATH_MAX_LEN], b[SHOW_LEN], hint[200];
    const char *where = path[0] ? path : "the top level";

    for (size_t i = 0; i < s->n; i++)
        vals[i] = keys[i] = NULL;
    if (map->kind != YAMLTREE_MAP) {
        refuse(c, map, "%s must be a mapping, not %s", where, kind_name(map));
        return;
    }
    for (size_t k = 0; k + 1 < map->n; k += 2) {
        const struct yamltree_node *key = map->kids[k], *v = map->kids[k + 1];
        size_t i;

        if (key->kind != YAMLTREE_SCALAR || stype(key) != YAMLTREE_STR) {
            refuse(c, key, "a key in %s must be a string, not %s", where, kind_name(key));
            continue;
        }
        for (i = 0; i < s->n && strcmp(s->f[i].name, key->s) != 0; i++)
            ;
        if (i == s->n && s->fold) {
            /* encoding/json's case-insensitive match: the plugin reads it */
            for (i = 0; i < s->n && strcasecmp(s->f[i].name, key->s) != 0; i++)
                ;
            if (i < s->n)
                warn(c, key,
                     "key %s in %s is read as \"%s\" (the plugin matches the keys here "
                     "regardless of case, other readers of the file do not); write \"%s\"",
                     show(b, key->s), where, s->f[i].name, s->f[i].name);
        }
        if (i == s->n) {
            belongs(s, key->s, hint, sizeof(hint));
            refuse(c, key, "unknown key %s in %s%s (the device plugin drops it without a word)",
                   show(b, key->s), where, hint);
            continue;
        }
        if (keys[i] != NULL) {
            refuse(c, key,
                   "duplicate key %s in %s (first at line %u, column %u; the plugin would take "
                   "the last)",
                   show(b, key->s), where, keys[i]->line, keys[i]->column);
            continue;
        }
        keys[i] = key;
        vals[i] = v;
        path_key(p, path, key->s);
        if (given(v))
            check_value(c, &s->f[i], v, p);
    }
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].missing != NULL && !given(vals[i]))
            refuse(c, keys[i] ? keys[i] : map, "%s has no %s: %s", where, s->f[i].name,
                   s->f[i].missing);
}

/* ---- sharing ---- */

static bool subdomain_ok(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
        bool edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';

        if (!alnum && (edge || (s[i] != '-' && s[i] != '.')))
            return false;
    }
    return true;
}

/* resources.go NewResourceName: the name with "nvidia.com/" put before it unless it has it,
 * at most 63 characters, a DNS-1123 subdomain after the first '/'. Into full (of len bytes);
 * false when refused (recorded). */
static bool resource_name(struct pc *c, const struct yamltree_node *n, const char *path, char *full,
                          size_t len)
{
    char b[SHOW_LEN];
    bool prefixed;
    size_t flen;
    const char *slash;

    if (!is_str(c, n, path))
        return false;
    prefixed = strncmp(n->s, RES_PREFIX, strlen(RES_PREFIX)) == 0;
    flen = strlen(n->s) + (prefixed ? 0 : strlen(RES_PREFIX));
    if (flen > RES_NAME_MAX) {
        refuse(c, n,
               "%s %s: fully-qualified resource name must be %d characters or less (it has %zu)",
               path, show(b, n->s), RES_NAME_MAX, flen);
        return false;
    }
    snprintf(full, len, "%s%s", prefixed ? "" : RES_PREFIX, n->s);
    slash = strchr(full, '/');
    if (slash == NULL || !subdomain_ok(slash + 1, strlen(slash + 1))) {
        refuse(c, n,
               "%s %s: incorrect format for resource name '%s': after nvidia.com/ it must be a "
               "DNS-1123 subdomain (lowercase letters, digits, '-' and '.')",
               path, show(b, n->s), full);
        return false;
    }
    return true;
}

/* The names the plugin shares (internal/rm: only full GPUs, and MIG devices under the mixed
 * strategy); a name it does not serve is skipped. An unknown strategy (set on its command line,
 * not here) leaves MIG names alone. */
static void served(struct pc *c, const struct yamltree_node *n, const char *path, const char *full,
                   bool mps)
{
    bool mig = strncmp(full, RES_PREFIX "mig-", strlen(RES_PREFIX "mig-")) == 0;

    if (strcmp(full, RES_PREFIX "gpu") == 0)
        return;
    if (mig && !mps && (c->mig == NULL || strcmp(c->mig, "mixed") == 0))
        return;
    warn(c, n,
         "%s %s is not a resource the plugin serves%s: it shares nothing for it (nvidia.com/gpu%s)",
         path, full,
         mig && mps ? " with MPS (full GPUs only)"
         : mig      ? " under migStrategy single or none"
                    : "",
         mps ? "" : ", or nvidia.com/mig-<profile> under migStrategy mixed");
}

static bool hex_run(const char **p, int n)
{
    for (int i = 0; i < n; i++, (*p)++)
        if (!((**p >= '0' && **p <= '9') || (**p >= 'a' && **p <= 'f') ||
              (**p >= 'A' && **p <= 'F')))
            return false;
    return true;
}

/* A UUID as github.com/google/uuid's Parse reads it (replicas.go IsUUID): 8-4-4-4-12 hex
 * digits, the same with "urn:uuid:" before it or in braces, or 32 hex digits; then the end or a
 * '/'. */
static bool uuid_ok(const char *s)
{
    static const int groups[] = {8, 4, 4, 4, 12};
    const char *p = s, *q = s;
    bool braced;

    if (hex_run(&q, 32) && (*q == '\0' || *q == '/'))
        return true;
    if (strncasecmp(p, "urn:uuid:", 9) == 0)
        p += 9;
    braced = *p == '{';
    p += braced;
    for (int g = 0; g < 5; g++) {
        if (!hex_run(&p, groups[g]))
            return false;
        if (g < 4 && *p++ != '-')
            return false;
    }
    if (braced && *p++ != '}')
        return false;
    return *p == '\0' || *p == '/';
}

static bool digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool device_ref_ok(const char *s)
{
    const char *colon = strchr(s, ':'), *p;

    if (digits(s, strlen(s)))
        return true; /* IsGPUIndex */
    if (colon != NULL && digits(s, (size_t)(colon - s)) && digits(colon + 1, strlen(colon + 1)))
        return true; /* IsMigIndex */
    if (strncmp(s, "GPU-", 4) == 0)
        return uuid_ok(s + 4) && strchr(s + 4, '/') == NULL;
    if (strncmp(s, "MIG-", 4) != 0)
        return false;
    if (uuid_ok(s + 4) && strchr(s + 4, '/') == NULL)
        return true; /* MIG-<uuid> */
    /* MIG-GPU-<uuid>/<gi>/<ci> */
    if (strncmp(s + 4, "GPU-", 4) != 0 || !uuid_ok(s + 8) || (p = strchr(s + 8, '/')) == NULL)
        return false;
    colon = strchr(p + 1, '/');
    return colon != NULL && digits(p + 1, (size_t)(colon - p - 1)) &&
           digits(colon + 1, strlen(colon + 1));
}

/* replicas.go ReplicatedDevices.UnmarshalJSON: "all", a count > 0, or a list of GPU indices,
 * MIG indices ("0:1") and UUIDs (IsGPUIndex, IsMigIndex, IsUUID). Returns whether it is valid
 * and not "all" (what DisableResourceNamingInConfig then resets). */
static bool devices_custom(struct pc *c, const struct yamltree_node *n, const char *path)
{
    char b[SHOW_LEN], p[PATH_MAX_LEN];
    uint64_t u;
    bool valid = true;

    if (n->kind == YAMLTREE_SCALAR && stype(n) == YAMLTREE_STR) {
        if (strcmp(n->s, "all") == 0)
            return false;
        refuse(c, n, "%s: devices set as %s but the only valid string input is 'all'", path,
               show(b, n->s));
        return false;
    }
    if (n->kind == YAMLTREE_SCALAR && stype(n) == YAMLTREE_INT) {
        if (n->s[0] == '-' || n->s[0] == '+' || parse_uint(n->s, 1, INT32_MAX, &u) < 0) {
            refuse(c, n, "%s: devices set as %s but a count of devices must be > 0", path,
                   show(b, n->s));
            return false;
        }
        return true;
    }
    if (n->kind != YAMLTREE_SEQ) {
        refuse(c, n,
               "%s: unrecognized type for devices spec: %s (expected all, a count or a list of "
               "devices)",
               path, kind_name(n));
        return false;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct yamltree_node *d = n->kids[i];
        bool ok = d->kind == YAMLTREE_SCALAR &&
                  ((stype(d) == YAMLTREE_INT && digits(d->s, strlen(d->s))) ||
                   (stype(d) == YAMLTREE_STR && device_ref_ok(d->s)));

        path_index(p, path, i);
        valid = valid && ok;
        if (!ok)
            refuse(c, d,
                   "%s: unsupported type for device in devices list: %s (expected a GPU index, a "
                   "MIG index such as 0:1, or a GPU-, MIG- or MIG-GPU-<uuid>/<gi>/<ci> UUID)",
                   p, d->kind == YAMLTREE_SCALAR ? show(b, d->s) : kind_name(d));
    }
    return valid;
}

/* One resource of a sharing block. */
static void check_resource(struct pc *c, const struct yamltree_node *item, const char *path,
                           bool mps, bool rename_by_default)
{
    const struct yamltree_node *v[RS_N], *k[RS_N];
    char p[PATH_MAX_LEN], name[RES_NAME_MAX + 16], rename[RES_NAME_MAX + 16],
        shared[RES_NAME_MAX + 24];
    bool named = false;
    uint64_t replicas;

    walk_map(c, item, path, &RES_S, v, k);
    if (item->kind != YAMLTREE_MAP)
        return;
    path_key(p, path, "name");
    if (given(v[RS_NAME]) && resource_name(c, v[RS_NAME], p, name, sizeof(name))) {
        named = true;
        served(c, v[RS_NAME], p, name, mps);
    }
    path_key(p, path, "replicas");
    if (given(v[RS_REPLICAS])) {
        const struct yamltree_node *n = v[RS_REPLICAS];

        if (n->kind != YAMLTREE_SCALAR || stype(n) != YAMLTREE_INT || n->s[0] == '+' ||
            (n->s[0] != '-' && !digits(n->s, strlen(n->s))))
            refuse(c, n, "%s must be a whole number written in decimal, not %s", p, kind_name(n));
        else if (n->s[0] == '0' && n->s[1] != '\0')
            /* YAML 1.1, which sigs.k8s.io/yaml reads, takes 060 as octal (48) */
            refuse(c, n,
                   "%s is %.*s: a leading zero makes it octal to the plugin's YAML 1.1 reader; "
                   "write the number without it",
                   p, VALUE_SHOWN, n->s);
        else if (n->s[0] != '-' && parse_uint(n->s, 0, INT64_MAX, &replicas) < 0)
            refuse(c, n, "%s is %.*s: too large for the plugin's integers", p, VALUE_SHOWN, n->s);
        else if (n->s[0] == '-' || replicas < 2)
            refuse(c, n, "%s is %.*s: number of replicas must be >= 2", p, VALUE_SHOWN, n->s);
        else if (mps && replicas > MPS_REPLICAS_MAX)
            refuse(c, n, "%s: maximum allowed replicas exceeded: %llu > %d (MPS)", p,
                   (unsigned long long)replicas, MPS_REPLICAS_MAX);
    }
    path_key(p, path, "devices");
    /* replicas.go looks the key up and unmarshals what it holds: null is read as '' */
    if (v[RS_DEVICES] != NULL && !given(v[RS_DEVICES]))
        refuse(c, v[RS_DEVICES],
               "%s is null: devices set as '' but the only valid string input is 'all' (leave "
               "the key out, or write all)",
               p);
    if (given(v[RS_DEVICES]) && devices_custom(c, v[RS_DEVICES], p))
        warn(c, v[RS_DEVICES],
             "%s is ignored: the plugin shares every GPU of the node (Customizing the 'devices' "
             "field in sharing.%s.resources is not yet supported)",
             p, mps ? "mps" : "timeSlicing");
    path_key(p, path, "rename");
    if (v[RS_RENAME] != NULL && !given(v[RS_RENAME]))
        refuse(c, v[RS_RENAME],
               "%s is null: incorrect format for resource name 'nvidia.com/' (leave the key out)",
               p);
    if (given(v[RS_RENAME]) && resource_name(c, v[RS_RENAME], p, rename, sizeof(rename)) && named) {
        snprintf(shared, sizeof(shared), "%s.shared", name);
        if (!rename_by_default || strcmp(rename, shared) != 0)
            warn(c, v[RS_RENAME],
                 "%s %s is ignored: the plugin advertises %s (Setting the 'rename' field is not "
                 "yet supported; renameByDefault: true gives %s)",
                 p, rename, rename_by_default ? shared : name, shared);
    }
}

/* sharing.timeSlicing or sharing.mps. */
static void check_block(struct pc *c, const struct yamltree_node *block, const char *path, bool mps)
{
    const struct yamltree_node *v[RP_N], *k[RP_N], *res;
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];

    walk_map(c, block, path, &REPL_S, v, k);
    res = v[RP_RESOURCES];
    if (block->kind != YAMLTREE_MAP || !given(res))
        return; /* refused already */
    path_key(p, path, "resources");
    if (res->kind != YAMLTREE_SEQ) {
        refuse(c, res, "%s must be a list, not %s", p, kind_name(res));
        return;
    }
    if (res->n == 0) {
        refuse(c, res, "%s is empty: no resources specified", p);
        return;
    }
    for (size_t i = 0; i < res->n; i++) {
        path_index(q, p, i);
        check_resource(c, res->kids[i], q, mps,
                       given(v[RP_RENAME_BY_DEFAULT]) &&
                           v[RP_RENAME_BY_DEFAULT]->kind == YAMLTREE_SCALAR &&
                           stype(v[RP_RENAME_BY_DEFAULT]) == YAMLTREE_BOOL &&
                           strcasecmp(v[RP_RENAME_BY_DEFAULT]->s, "true") == 0);
    }
}

static void check_sharing(struct pc *c, const struct yamltree_node *n,
                          const struct yamltree_node *mig_node)
{
    const struct yamltree_node *v[SH_N], *k[SH_N];
    bool ts, mps;

    walk_map(c, n, "sharing", &SHARING_S, v, k);
    ts = given(v[SH_TS]);
    mps = given(v[SH_MPS]);
    /* Sharing.TimeSlicing is not a pointer: encoding/json hands null to its UnmarshalJSON,
     * which finds no resources (sharing.mps is one, and null leaves it unset) */
    if (v[SH_TS] != NULL && !ts)
        refuse(c, v[SH_TS],
               "sharing.timeSlicing is null or empty: no resources specified (leave the key out "
               "or list its resources)");
    if (ts)
        check_block(c, v[SH_TS], "sharing.timeSlicing", false);
    if (mps)
        check_block(c, v[SH_MPS], "sharing.mps", true);
    if (ts && mps)
        refuse(c, k[SH_MPS],
               "sharing.mps and sharing.timeSlicing are both set: the plugin uses MPS and drops "
               "time-slicing without a word; keep one");
    if (mps && c->mig != NULL && strcmp(c->mig, "mixed") == 0)
        refuse(c, mig_node,
               "flags.migStrategy mixed with sharing.mps: using --mig-strategy=mixed is not "
               "supported with MPS (unless --mig-strategy or MIG_STRATEGY sets another strategy, "
               "which wins over the file)");
    /* a warning, not a refusal: the plugin also takes it from --mps-root or MPS_ROOT
     * (cmd/nvidia-device-plugin/main.go), which NVIDIA's Helm chart and the GPU Operator set;
     * without any of them it stops with this error */
    if (mps && !c->mps_root)
        warn(c, k[SH_MPS],
             "sharing.mps without flags.mpsRoot: unless the plugin runs with --mps-root or "
             "MPS_ROOT (NVIDIA's Helm chart and the GPU Operator set it), it stops: using MPS "
             "requires --mps-root to be specified");
}

/* ---- the file ---- */

/* Whether the top-level resources lists a pattern (config.go warns only then). */
static bool holds_patterns(const struct yamltree_node *res)
{
    for (size_t k = 0; res->kind == YAMLTREE_MAP && k + 1 < res->n; k += 2)
        if (res->kids[k + 1]->kind == YAMLTREE_SEQ && res->kids[k + 1]->n > 0)
            return true;
    return false;
}

static void check_config(struct pc *c, const struct yamltree_node *root)
{
    const struct yamltree_node *v[TOP_N], *k[TOP_N], *fv[FIELDS_MAX], *fk[FIELDS_MAX];
    char b[SHOW_LEN];

    walk_map(c, root, "", &TOP_S, v, k);
    if (root->kind != YAMLTREE_MAP)
        return;
    /* config.go parseConfigFrom: absent or empty means v1 */
    if (given(v[TOP_VERSION]) && is_str(c, v[TOP_VERSION], "version") &&
        v[TOP_VERSION]->s[0] != '\0' && strcmp(v[TOP_VERSION]->s, "v1") != 0)
        refuse(c, v[TOP_VERSION], "unknown version: %s (the plugin reads only v1)",
               show(b, v[TOP_VERSION]->s));
    for (size_t i = 0; i < FLAGS_N; i++)
        fv[i] = fk[i] = NULL;
    if (given(v[TOP_FLAGS]))
        walk_map(c, v[TOP_FLAGS], "flags", &FLAGS_S, fv, fk);
    if (given(fv[FL_MIG]) && fv[FL_MIG]->kind == YAMLTREE_SCALAR &&
        stype(fv[FL_MIG]) == YAMLTREE_STR)
        c->mig = fv[FL_MIG]->s;
    c->mps_root = given(fv[FL_MPS_ROOT]) && fv[FL_MPS_ROOT]->kind == YAMLTREE_SCALAR &&
                  fv[FL_MPS_ROOT]->s[0] != '\0';
    if (given(v[TOP_RESOURCES]) && holds_patterns(v[TOP_RESOURCES]))
        warn(c, k[TOP_RESOURCES],
             "resources is ignored: the plugin drops it (Customizing the 'resources' field is "
             "not yet supported in the config)");
    if (given(v[TOP_SHARING]))
        check_sharing(c, v[TOP_SHARING], fv[FL_MIG]);
}

/* Why the reader stopped. */
static void read_failed(struct pc *c, const struct yamltree_error *e)
{
    const struct yamltree_node at = {.line = e->line, .column = e->column};
    const char *problem = e->problem ? e->problem : "unknown problem";

    switch (e->code) {
    case YAMLTREE_E_DEPTH:
        refuse(c, &at, "nested deeper than %u levels", PLUGIN_CONFIG_DEPTH_MAX);
        break;
    case YAMLTREE_E_NODES:
        refuse(c, &at, "more than %u YAML nodes", PLUGIN_CONFIG_NODES_MAX);
        break;
    case YAMLTREE_E_DOCS:
        refuse(c, &at, "a second YAML document: the plugin reads only the first");
        break;
    case YAMLTREE_E_ALIAS: refuse(c, &at, "anchors and aliases are not supported"); break;
    case YAMLTREE_E_SYNTAX:
        if (e->libyaml_error == YAML_READER_ERROR)
            refuse(c, NULL, "cannot read YAML: %s at byte %zu", problem, e->problem_offset);
        else
            refuse(c, &at, "YAML syntax error: %s", problem);
        break;
    case YAMLTREE_E_MEMORY:
    case YAMLTREE_OK:
    default: refuse(c, NULL, "out of memory"); break;
    }
}

/* Refuses what the reader keeps but the config must not hold: anchors, tags other than the
 * core ones, NUL bytes. Whether any was found. */
static bool refuse_nodes(struct pc *c, const struct yamltree *t)
{
    static const char *const core[] = {"str", "null", "bool", "int", "float", "map", "seq"};
    bool bad = false;

    for (size_t i = 0; i < t->n_nodes; i++) {
        const struct yamltree_node *n = t->nodes[i];
        bool ok = n->tag == NULL;
        char b[SHOW_LEN];

        for (size_t k = 0; !ok && k < sizeof(core) / sizeof(core[0]); k++)
            ok = strncmp(n->tag, CORE_TAG, strlen(CORE_TAG)) == 0 &&
                 strcmp(n->tag + strlen(CORE_TAG), core[k]) == 0;
        if (n->anchored) {
            refuse(c, n, "anchors and aliases are not supported");
            bad = true;
        } else if (!ok) {
            refuse(c, n, "tag %s is not supported (only YAML's core tags)", show(b, n->tag));
            bad = true;
        } else if (n->kind == YAMLTREE_SCALAR && memchr(n->s, '\0', n->len) != NULL) {
            refuse(c, n, "a NUL character is not allowed in a value");
            bad = true;
        }
    }
    return bad;
}

size_t plugin_config_check(const char *where, const char *text, size_t len, struct plugin_report *r)
{
    static const struct yamltree_limits lim = {PLUGIN_CONFIG_DEPTH_MAX, PLUGIN_CONFIG_NODES_MAX, 1};
    struct pc c = {where, r, NULL, false};
    struct yamltree t;

    memset(r, 0, sizeof(*r));
    if (len > PLUGIN_CONFIG_MAX_BYTES) {
        refuse(&c, NULL, "larger than %u bytes", PLUGIN_CONFIG_MAX_BYTES);
        return r->refused;
    }
    if (yamltree_read(text, len, &lim, YAMLTREE_UTF8, &t) < 0)
        read_failed(&c, &t.err);
    else if (!refuse_nodes(&c, &t) && t.n_docs > 0 && t.docs[0].root != NULL &&
             given(t.docs[0].root))
        check_config(&c, t.docs[0].root); /* an empty or null file is an empty config */
    yamltree_free(&t);
    return r->refused;
}

/* ---- what it shares ---- */

/* The value of key in map (encoding/json's case-insensitive match where fold), or NULL. */
static const struct yamltree_node *value_of(const struct yamltree_node *map, const char *key,
                                            bool fold)
{
    for (size_t k = 0; map != NULL && map->kind == YAMLTREE_MAP && k + 1 < map->n; k += 2) {
        const struct yamltree_node *kn = map->kids[k];

        if (kn->kind == YAMLTREE_SCALAR &&
            (fold ? strcasecmp(kn->s, key) : strcmp(kn->s, key)) == 0)
            return map->kids[k + 1];
    }
    return NULL;
}

static bool is_true(const struct yamltree_node *n)
{
    return n != NULL && n->kind == YAMLTREE_SCALAR && stype(n) == YAMLTREE_BOOL &&
           strcasecmp(n->s, "true") == 0;
}

void plugin_config_sharing(const char *text, size_t len, struct plugin_sharing *out)
{
    static const struct yamltree_limits lim = {PLUGIN_CONFIG_DEPTH_MAX, PLUGIN_CONFIG_NODES_MAX, 1};
    const struct yamltree_node *root, *sharing, *block, *res, *name, *fail;
    struct yamltree t;

    memset(out, 0, sizeof(*out));
    if (len > PLUGIN_CONFIG_MAX_BYTES)
        return;
    if (yamltree_read(text, len, &lim, YAMLTREE_UTF8, &t) < 0) {
        yamltree_free(&t);
        return;
    }
    root = t.n_docs > 0 ? t.docs[0].root : NULL;
    out->readable = root == NULL || !given(root) || root->kind == YAMLTREE_MAP;
    sharing = value_of(root, "sharing", true);
    block = value_of(sharing, "mps", true);
    if (block != NULL && given(block)) {
        out->strategy = PLUGIN_MPS;
        fail = value_of(block, "failRequestsGreaterThanOne", false);
        /* replicas.go: MPS fails requests greater than one unless told otherwise */
        out->fail_gt_one = fail == NULL || !given(fail) || is_true(fail);
    } else if ((block = value_of(sharing, "timeSlicing", true)) != NULL && given(block)) {
        out->strategy = PLUGIN_TIME_SLICING;
        out->fail_gt_one = is_true(value_of(block, "failRequestsGreaterThanOne", false));
    }
    res = value_of(block, "resources", false);
    if (out->strategy != PLUGIN_SHARES_NONE && res != NULL && res->kind == YAMLTREE_SEQ &&
        res->n > 0 && (name = value_of(res->kids[0], "name", false)) != NULL &&
        name->kind == YAMLTREE_SCALAR)
        snprintf(out->resource, sizeof(out->resource), "%s%.60s",
                 strncmp(name->s, RES_PREFIX, strlen(RES_PREFIX)) == 0 ? "" : RES_PREFIX, name->s);
    yamltree_free(&t);
}
