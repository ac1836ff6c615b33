/* test_rules.c: the rule-file loader: every field, every default, every error with its position. */
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "policy/rule_capacity.h"
#include "policy/rule_device_plugin.h"
#include "policy/rule_gpu_request.h"
#include "policy/rule_node_selector.h"
#include "policy/rule_priority_class.h"
#include "policy/rules.h"

#define DATA "tests/data/rules/"

/* Lines 1-5 of most inline files; what follows starts at line 6, inside spec. */
#define HEAD                                                                                       \
    "apiVersion: gpuadmit.io/v1alpha1\n"                                                           \
    "kind: GPUPolicy\n"                                                                            \
    "metadata:\n"                                                                                  \
    "  name: p\n"                                                                                  \
    "spec:\n"

static struct rules_errors E;

static struct policy *load(const char *yaml)
{
    return rules_load_buffer("t.yaml", yaml, strlen(yaml), &E);
}

static const char *fmt_err(size_t i)
{
    static char buf[DIAG_MSG_MAX + 300];

    return i < E.n ? diag_format(&E.items[i], buf, sizeof(buf)) : "(no such error)";
}

static void dump_errors(void)
{
    size_t i;

    for (i = 0; i < E.n; i++)
        printf("    error %zu: %s\n", i, fmt_err(i));
    if (E.dropped)
        printf("    (%zu dropped)\n", E.dropped);
}

/* Whether an error reads "<pos>: <...msg...>": pos exactly ("t.yaml:9:7"), msg as a substring. */
static bool has_err(const char *pos, const char *msg)
{
    size_t i, pl = strlen(pos);

    for (i = 0; i < E.n; i++) {
        const char *s = fmt_err(i);
        if (strncmp(s, pos, pl) == 0 && strncmp(s + pl, ": ", 2) == 0 && strstr(s + pl, msg))
            return true;
    }
    printf("  wanted \"%s: ...%s...\" among:\n", pos, msg);
    dump_errors();
    return false;
}

static bool list_is(const struct strlist *l, size_t n, const char *const *want)
{
    size_t i;

    if (l->n != n)
        return false;
    for (i = 0; i < n; i++)
        if (l->v[i] == NULL || strcmp(l->v[i], want[i]) != 0)
            return false;
    return true;
}

#define LIST_IS(l, ...)                                                                            \
    list_is((l), sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *),                     \
            (const char *[]){__VA_ARGS__})

/* ---- temporary directories ---- */

static char *tmpdir_new(void)
{
    char *d = strdup("/tmp/test_rules.XXXXXX");

    if (d == NULL || mkdtemp(d) == NULL) {
        fprintf(stderr, "mkdtemp failed\n");
        exit(2);
    }
    return d;
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);

    if (p == NULL)
        exit(2);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void put_file(const char *dir, const char *name, const char *text, size_t len)
{
    char *p = join_path(dir, name);
    FILE *f = fopen(p, "wb");

    if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
    free(p);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void tmpdir_free(char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static char *policy_text(const char *name, const char *rules)
{
    size_t n = 256 + strlen(rules);
    char *t = malloc(n);

    if (t == NULL)
        exit(2);
    snprintf(t, n,
             "apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n  name: %s\nspec:\n"
             "  rules:%s\n",
             name, rules);
    return t;
}

/* ---- valid files ---- */

static const char FULL[] =
    "apiVersion: gpuadmit.io/v1alpha1\n"                                          /* 1 */
    "kind: GPUPolicy\n"                                                           /* 2 */
    "metadata:\n"                                                                 /* 3 */
    "  name: default\n"                                                           /* 4 */
    "spec:\n"                                                                     /* 5 */
    "  auditOnly: true\n"                                                         /* 6 */
    "  autogen: false\n"                                                          /* 7 */
    "  gpu:\n"                                                                    /* 8 */
    "    resources: [nvidia.com/gpu, \"nvidia.com/mig-*\"]\n"                     /* 9 */
    "    nodeLabels:\n"                                                           /* 10 */
    "      nvidia.com/gpu.present: \"true\"\n"                                    /* 11 */
    "      nvidia.com/gpu.product: \"\"\n"                                        /* 12 */
    "      feature.node.kubernetes.io/pci-10de.present: ~\n"                      /* 13 */
    "    taints:\n"                                                               /* 14 */
    "      - key: nvidia.com/gpu\n"                                               /* 15 */
    "        value: \"present\"\n"                                                /* 16 */
    "        effect: NoExecute\n"                                                 /* 17 */
    "      - key: gpu\n"                                                          /* 18 */
    "    runtimeClasses: [nvidia, nvidia-cdi]\n"                                  /* 19 */
    "  priorityClasses:\n"                                                        /* 20 */
    "    - name: gpu-standard\n"                                                  /* 21 */
    "      value: 1000\n"                                                         /* 22 */
    "      preemptionPolicy: Never\n"                                             /* 23 */
    "    - name: gpu-low\n"                                                       /* 24 */
    "      value: -5\n"                                                           /* 25 */
    "  match:\n"                                                                  /* 26 */
    "    namespaces: [ml-*, research]\n"                                          /* 27 */
    "    labelSelector:\n"                                                        /* 28 */
    "      matchLabels: {team: ml}\n"                                             /* 29 */
    "      matchExpressions:\n"                                                   /* 30 */
    "        - {key: tier, operator: In, values: [gpu, \"gpu-2\"]}\n"             /* 31 */
    "        - {key: example.com/skip, operator: DoesNotExist}\n"                 /* 32 */
    "    users: [\"system:serviceaccount:kube-system:*\"]\n"                      /* 33 */
    "    groups: [\"system:masters\"]\n"                                          /* 34 */
    "    serviceAccounts: [\"kube-system/*\"]\n"                                  /* 35 */
    "    ownerKinds: [Job]\n"                                                     /* 36 */
    "  exclude:\n"                                                                /* 37 */
    "    namespaces: [kube-system]\n"                                             /* 38 */
    "  rules:\n"                                                                  /* 39 */
    "    - name: gpu-request\n"                                                   /* 40 */
    "      type: gpu-request\n"                                                   /* 41 */
    "      action: Mutate\n"                                                      /* 42 */
    "      enforcement: Warn\n"                                                   /* 43 */
    "      match: {namespaces: [\"team-[ab]*\"]}\n"                               /* 44 */
    "      exclude: {users: [alice]}\n"                                           /* 45 */
    "      default: {resource: nvidia.com/mig-1g.5gb, count: 2}\n"                /* 46 */
    "      maxPerPod: 8\n"                                                        /* 47 */
    "      denyVisibleDevicesEnv: false\n"                                        /* 48 */
    "      denyPrivileged: false\n"                                               /* 49 */
    "      denyDevHostPath: false\n"                                              /* 50 */
    "    - name: priority\n"                                                      /* 51 */
    "      type: priority-class\n"                                                /* 52 */
    "      action: Mutate\n"                                                      /* 53 */
    "      enforcement: Audit\n"                                                  /* 54 */
    "      default: gpu-standard\n"                                               /* 55 */
    "      namespaceDefaults:\n"                                                  /* 56 */
    "        - {namespace: \"team-a*\", class: team-a-gpu}\n"                     /* 57 */
    "      allowed:\n"                                                            /* 58 */
    "        - {namespace: \"team-a*\", classes: [\"team-a-*\", gpu-standard]}\n" /* 59 */
    "    - name: tolerations\n"                                                   /* 60 */
    "      type: tolerations\n"                                                   /* 61 */
    "    - name: node-selector\n"                                                 /* 62 */
    "      type: node-selector\n"                                                 /* 63 */
    "      action: Mutate\n"                                                      /* 64 */
    "      labels:\n"                                                             /* 65 */
    "        nvidia.com/gpu.present: \"true\"\n"                                  /* 66 */
    "        example.com/gpu-pool: a100\n";                                       /* 67 */

static void check_full_gpu(const struct policy_doc *d)
{
    CHECK(LIST_IS(&d->gpu_resources, "nvidia.com/gpu", "nvidia.com/mig-*"));
    CHECK(d->n_gpu_node_labels == 3);
    if (d->n_gpu_node_labels == 3) {
        CHECK_STR(d->gpu_node_labels[0].key, "nvidia.com/gpu.present");
        CHECK_STR(d->gpu_node_labels[0].value, "true");
        CHECK_STR(d->gpu_node_labels[1].key, "nvidia.com/gpu.product");
        CHECK(d->gpu_node_labels[1].value == NULL); /* "": any value */
        CHECK_STR(d->gpu_node_labels[2].key, "feature.node.kubernetes.io/pci-10de.present");
        CHECK(d->gpu_node_labels[2].value == NULL); /* ~: any value */
    }
    CHECK(d->n_gpu_taints == 2);
    if (d->n_gpu_taints == 2) {
        CHECK_STR(d->gpu_taints[0].key, "nvidia.com/gpu");
        CHECK_STR(d->gpu_taints[0].value, "present");
        CHECK_STR(d->gpu_taints[0].effect, "NoExecute");
        CHECK_STR(d->gpu_taints[1].key, "gpu");
        CHECK(d->gpu_taints[1].value == NULL);
        CHECK_STR(d->gpu_taints[1].effect, "NoSchedule");
    }
    CHECK(LIST_IS(&d->gpu_runtime_classes, "nvidia", "nvidia-cdi"));
    CHECK(d->n_classes == 2);
    if (d->n_classes == 2) {
        CHECK_STR(d->classes[0].name, "gpu-standard");
        CHECK(d->classes[0].value == 1000);
        CHECK_STR(d->classes[0].preemption_policy, "Never");
        CHECK_STR(d->classes[1].name, "gpu-low");
        CHECK(d->classes[1].value == -5);
        CHECK_STR(d->classes[1].preemption_policy, "PreemptLowerPriority");
    }
}

static void check_full_scope(const struct scope *s)
{
    const struct label_selector *ls = &s->match.labels;

    CHECK(s->has_match);
    CHECK(LIST_IS(&s->match.namespaces, "ml-*", "research"));
    CHECK(ls->set);
    CHECK(ls->n == 3);
    if (ls->n == 3) {
        CHECK_STR(ls->reqs[0].key, "team");
        CHECK(ls->reqs[0].op == SEL_IN);
        CHECK(LIST_IS(&ls->reqs[0].values, "ml"));
        CHECK_STR(ls->reqs[1].key, "tier");
        CHECK(ls->reqs[1].op == SEL_IN);
        CHECK(LIST_IS(&ls->reqs[1].values, "gpu", "gpu-2"));
        CHECK_STR(ls->reqs[2].key, "example.com/skip");
        CHECK(ls->reqs[2].op == SEL_DOES_NOT_EXIST);
        CHECK(ls->reqs[2].values.n == 0);
    }
    CHECK(LIST_IS(&s->match.users, "system:serviceaccount:kube-system:*"));
    CHECK(LIST_IS(&s->match.groups, "system:masters"));
    CHECK(LIST_IS(&s->match.service_accounts, "kube-system/*"));
    CHECK(LIST_IS(&s->match.owner_kinds, "Job"));
    /* an exclude block replaces the default one: no DaemonSet in it */
    CHECK(s->has_exclude);
    CHECK(LIST_IS(&s->exclude.namespaces, "kube-system"));
    CHECK(s->exclude.owner_kinds.n == 0);
    CHECK(!s->exclude.labels.set);
}

static void check_full_rules(const struct policy_doc *d)
{
    const struct rule *r;
    const struct gpu_request_settings *gr;
    const struct priority_class_settings *pc;
    const struct node_selector_settings *ns;

    CHECK(d->n_rules == 4);
    if (d->n_rules != 4)
        return;
    r = &d->rules[0];
    CHECK_STR(r->name, "gpu-request");
    CHECK(r->type == RULE_GPU_REQUEST);
    CHECK(r->action == ACTION_MUTATE);
    CHECK(r->enforcement == ENFORCE_WARN);
    CHECK(r->line == 40);
    CHECK(r->scope.has_match && LIST_IS(&r->scope.match.namespaces, "team-[ab]*"));
    CHECK(r->scope.has_exclude && LIST_IS(&r->scope.exclude.users, "alice"));
    CHECK(r->scope.exclude.owner_kinds.n == 0); /* no default exclude on rules */
    gr = gpu_request_settings(r);
    CHECK(gr != NULL);
    if (gr != NULL) {
        CHECK_STR(gr->default_resource, "nvidia.com/mig-1g.5gb");
        CHECK(gr->default_count == 2);
        CHECK(gr->max_per_pod == 8);
        CHECK(!gr->deny_visible_devices_env && !gr->deny_privileged && !gr->deny_dev_host_path);
    }

    r = &d->rules[1];
    CHECK_STR(r->name, "priority");
    CHECK(r->type == RULE_PRIORITY_CLASS);
    CHECK(r->action == ACTION_MUTATE);
    CHECK(r->enforcement == ENFORCE_AUDIT);
    CHECK(r->line == 51);
    CHECK(!r->scope.has_match && !r->scope.has_exclude);
    pc = priority_class_settings(r);
    CHECK(pc != NULL);
    if (pc != NULL) {
        CHECK_STR(pc->default_class, "gpu-standard");
        CHECK(pc->n_ns_defaults == 1);
        if (pc->n_ns_defaults == 1) {
            CHECK_STR(pc->ns_defaults[0].ns_glob, "team-a*");
            CHECK_STR(pc->ns_defaults[0].value, "team-a-gpu");
        }
        CHECK(pc->n_allowed == 1);
        if (pc->n_allowed == 1) {
            CHECK_STR(pc->allowed[0].ns_glob, "team-a*");
            CHECK(LIST_IS(&pc->allowed[0].values, "team-a-*", "gpu-standard"));
        }
    }
    CHECK(gpu_request_settings(r) == NULL); /* the settings are the priority-class kind's */

    r = &d->rules[2];
    CHECK_STR(r->name, "tolerations");
    CHECK(r->type == RULE_TOLERATIONS);
    CHECK(r->action == ACTION_DENY);
    CHECK(r->enforcement == ENFORCE_ENFORCE);
    CHECK(r->line == 60);

    r = &d->rules[3];
    CHECK_STR(r->name, "node-selector");
    CHECK(r->type == RULE_NODE_SELECTOR);
    CHECK(r->action == ACTION_MUTATE);
    CHECK(r->line == 62);
    ns = node_selector_settings(r);
    CHECK(ns != NULL && ns->n_labels == 2);
    if (ns != NULL && ns->n_labels == 2) {
        CHECK_STR(ns->labels[0].key, "nvidia.com/gpu.present");
        CHECK_STR(ns->labels[0].value, "true");
        CHECK_STR(ns->labels[1].key, "example.com/gpu-pool");
        CHECK_STR(ns->labels[1].value, "a100");
    }
}

static void test_full_policy(void)
{
    struct policy *p = rules_load_buffer("rules/full.yaml", FULL, strlen(FULL), &E);
    const struct policy_doc *d;

    CHECK(p != NULL);
    CHECK(E.n == 0 && E.dropped == 0);
    if (p == NULL) {
        dump_errors();
        return;
    }
    CHECK(atomic_load(&p->refs) == 1);
    CHECK(p->generation == 0);
    CHECK(p->n_docs == 1);
    d = &p->docs[0];
    CHECK_STR(d->name, "default");
    CHECK_STR(d->file, "rules/full.yaml");
    CHECK(d->audit_only);
    CHECK(!d->autogen);
    check_full_gpu(d);
    check_full_scope(&d->scope);
    check_full_rules(d);
    policy_free(p);
}

static void test_defaults(void)
{
    struct policy *p = load("apiVersion: gpuadmit.io/v1alpha1\n"
                            "kind: GPUPolicy\n"
                            "metadata: {name: minimal}\n"
                            "spec:\n"
                            "  rules:\n"
                            "    - {name: r1, type: gpu-request}\n"
                            "    - {name: r2, type: node-selector}\n"
                            "    - {name: r3, type: priority-class}\n"
                            "    - {name: r4, type: tolerations}\n");
    const struct policy_doc *d;
    size_t i;

    CHECK(p != NULL);
    if (p == NULL) {
        dump_errors();
        return;
    }
    d = &p->docs[0];
    CHECK_STR(d->name, "minimal");
    CHECK(!d->audit_only);
    CHECK(d->autogen);
    CHECK(
        LIST_IS(&d->gpu_resources, "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"));
    CHECK(d->n_gpu_node_labels == 1 && d->gpu_node_labels != NULL);
    if (d->n_gpu_node_labels == 1) {
        CHECK_STR(d->gpu_node_labels[0].key, "nvidia.com/gpu.present");
        CHECK_STR(d->gpu_node_labels[0].value, "true");
    }
    CHECK(d->n_gpu_taints == 1);
    if (d->n_gpu_taints == 1) {
        CHECK_STR(d->gpu_taints[0].key, "nvidia.com/gpu");
        CHECK(d->gpu_taints[0].value == NULL);
        CHECK_STR(d->gpu_taints[0].effect, "NoSchedule");
    }
    CHECK(d->gpu_runtime_classes.n == 0);
    CHECK(d->n_classes == 0);
    CHECK(!d->scope.has_match);
    CHECK(d->scope.has_exclude);
    CHECK(LIST_IS(&d->scope.exclude.owner_kinds, "DaemonSet"));
    CHECK(d->scope.exclude.namespaces.n == 0);
    CHECK(d->n_rules == 4);
    for (i = 0; i < d->n_rules; i++) {
        CHECK(d->rules[i].action == ACTION_DENY);
        CHECK(d->rules[i].enforcement == ENFORCE_ENFORCE);
        CHECK(d->rules[i].line == 6 + i);
        CHECK(!d->rules[i].scope.has_match && !d->rules[i].scope.has_exclude);
    }
    if (d->n_rules == 4) {
        const struct gpu_request_settings *g = gpu_request_settings(&d->rules[0]);
        const struct node_selector_settings *ns = node_selector_settings(&d->rules[1]);
        const struct priority_class_settings *pc = priority_class_settings(&d->rules[2]);
        CHECK(d->rules[0].type == RULE_GPU_REQUEST);
        CHECK(g != NULL);
        if (g != NULL) {
            CHECK_STR(g->default_resource, "nvidia.com/gpu");
            CHECK(g->default_count == 1);
            CHECK(g->max_per_pod == 0);
            CHECK(g->deny_visible_devices_env && g->deny_privileged && g->deny_dev_host_path);
        }
        CHECK(d->rules[1].type == RULE_NODE_SELECTOR);
        CHECK(ns != NULL && ns->n_labels == 0 && ns->labels == NULL);
        CHECK(d->rules[2].type == RULE_PRIORITY_CLASS);
        CHECK(pc != NULL && pc->default_class == NULL);
        CHECK(pc != NULL && pc->n_ns_defaults == 0 && pc->n_allowed == 0);
        CHECK(d->rules[3].type == RULE_TOLERATIONS);
        CHECK(d->rules[3].settings == NULL); /* tolerations has no settings of its own */
    }
    policy_free(p);
}

/* null is "not given" for optional keys; {} is given and empty */
static void test_null_and_empty(void)
{
    struct policy *p = load(HEAD "  auditOnly:\n"
                                 "  gpu:\n"
                                 "  match: ~\n"
                                 "  exclude: null\n"
                                 "  rules: []\n");

    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(!p->docs[0].audit_only);
        CHECK(p->docs[0].gpu_resources.n == 3);
        CHECK(!p->docs[0].scope.has_match);
        CHECK(LIST_IS(&p->docs[0].scope.exclude.owner_kinds, "DaemonSet"));
        CHECK(p->docs[0].n_rules == 0);
    }
    policy_free(p);

    p = load(HEAD "  gpu: {nodeLabels: {}, taints: []}\n"
                  "  exclude: {}\n"
                  "  match: {labelSelector: {}}\n"
                  "  rules: [{name: n, type: node-selector, labels: {}}]\n");
    CHECK(p != NULL);
    if (p != NULL) {
        const struct policy_doc *d = &p->docs[0];
        CHECK(d->gpu_resources.n == 3 && d->n_gpu_node_labels == 0 && d->n_gpu_taints == 0);
        CHECK(d->scope.has_exclude && d->scope.exclude.owner_kinds.n == 0);
        CHECK(d->scope.has_match && d->scope.match.labels.set && d->scope.match.labels.n == 0);
        CHECK(node_selector_settings(&d->rules[0]) != NULL &&
              node_selector_settings(&d->rules[0])->n_labels == 0);
    }
    policy_free(p);
}

/* Empty lists that would silently mean "everything" or "nothing" are refused. */
static void test_empty_lists_refused(void)
{
    struct policy *p = load(HEAD "  gpu: {resources: []}\n"                 /* 6 */
                                 "  match: {namespaces: []}\n"              /* 7 */
                                 "  exclude: {users: [], ownerKinds: []}\n" /* 8 */
                                 "  rules: []\n");

    CHECK(p == NULL);
    CHECK(E.n == 4);
    CHECK(has_err("t.yaml:6:20", "spec.gpu.resources: an empty list would turn every rule off"));
    CHECK(has_err("t.yaml:7:23", "spec.match.namespaces: an empty list; leave the key out"));
    CHECK(has_err("t.yaml:8:20", "spec.exclude.users: an empty list"));
    CHECK(has_err("t.yaml:8:36", "spec.exclude.ownerKinds: an empty list"));
}

/* Reserved class names, values the apiserver refuses, and the same taint twice. */
static void test_cluster_rules_enforced(void)
{
    struct policy *p = load(HEAD "  gpu:\n"                                            /* 6 */
                                 "    taints:\n"                                       /* 7 */
                                 "      - {key: nvidia.com/gpu, effect: NoSchedule}\n" /* 8 */
                                 "      - {key: nvidia.com/gpu, effect: NoSchedule}\n" /* 9 */
                                 "  priorityClasses:\n"                                /* 10 */
                                 "    - {name: system-node-critical, value: 5}\n"      /* 11 */
                                 "    - {name: huge, value: 1000000001}\n"             /* 12 */
                                 "  rules: []\n");

    CHECK(p == NULL);
    CHECK(E.n == 3);
    CHECK(has_err("t.yaml:9:9", "spec.gpu.taints[1]: the same taint as spec.gpu.taints[0]"));
    CHECK(has_err("t.yaml:11:14", "names starting with system- are reserved"));
    CHECK(has_err("t.yaml:12:27", "integer 1000000001 out of range"));
}

static void test_multiple_documents(void)
{
    struct policy *p = load("---\n"
                            "# an empty document is skipped\n"
                            "---\n" HEAD "  rules: [{name: one, type: tolerations}]\n"
                            "---\n"
                            "apiVersion: gpuadmit.io/v1alpha1\n"
                            "kind: GPUPolicy\n"
                            "metadata: {name: q}\n"
                            "spec: {rules: [{name: two, type: gpu-request}]}\n"
                            "...\n");

    CHECK(p != NULL);
    if (p == NULL) {
        dump_errors();
        return;
    }
    CHECK(p->n_docs == 2);
    if (p->n_docs == 2) {
        CHECK_STR(p->docs[0].name, "p");
        CHECK_STR(p->docs[0].rules[0].name, "one");
        CHECK(p->docs[0].rules[0].line == 9);
        CHECK_STR(p->docs[1].name, "q");
        CHECK_STR(p->docs[1].rules[0].name, "two");
        CHECK(p->docs[1].rules[0].line == 14);
        CHECK_STR(p->docs[0].file, "t.yaml");
        CHECK_STR(p->docs[1].file, "t.yaml");
    }
    policy_free(p);
}

static void test_tags(void)
{
    struct policy *p = load(HEAD "  auditOnly: !!bool true\n"
                                 "  rules:\n"
                                 "    - name: !!str 123\n"
                                 "      type: gpu-request\n"
                                 "      maxPerPod: !!int \"4\"\n");

    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(p->docs[0].audit_only);
        CHECK_STR(p->docs[0].rules[0].name, "123");
        CHECK(gpu_request_settings(&p->docs[0].rules[0]) != NULL &&
              gpu_request_settings(&p->docs[0].rules[0])->max_per_pod == 4);
    } else {
        dump_errors();
    }
    policy_free(p);

    p = load(HEAD "  autogen: !custom true\n" /* 6 */
                  "  auditOnly: !!int yes\n"  /* 7 */
                  "  gpu: !!seq {}\n"         /* 8 */
                  "  rules: []\n");
    CHECK(p == NULL);
    CHECK(E.n == 3);
    CHECK(has_err("t.yaml:6:12", "tag \"!custom\" is not supported on a scalar (only the YAML "
                                 "core tags"));
    CHECK(has_err("t.yaml:7:14", "\"yes\" is not a valid !!int"));
    CHECK(has_err("t.yaml:8:8", "tag \"tag:yaml.org,2002:seq\" is not supported on a mapping"));
}

static void test_bom(void)
{
    const char *t = "\xef\xbb\xbf" HEAD "  rules: []\n";
    struct policy *p = load(t);

    CHECK(p != NULL);
    policy_free(p);
    p = load("\xff\xfe" HEAD);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "t.yaml: cannot read YAML: invalid leading UTF-8 octet (#FF at byte 0)");
    p = load(HEAD "  rules: []\n  x\xc3: 1\n");
    CHECK(p == NULL);
    CHECK_CONTAINS(fmt_err(0), "t.yaml: cannot read YAML: invalid trailing UTF-8 octet");
}

/* ---- directories and file lists ---- */

static void test_dir_two_files(void)
{
    static const char *const dirs[] = {DATA "two", DATA "two/"};
    size_t i;

    for (i = 0; i < 2; i++) {
        struct policy *p = rules_load_dir(dirs[i], &E);
        CHECK(p != NULL);
        if (p == NULL) {
            dump_errors();
            continue;
        }
        /* README.md, .hidden.yaml and the sub.yaml directory are not read: all three would fail */
        CHECK(p->n_docs == 3);
        if (p->n_docs == 3) {
            CHECK_STR(p->docs[0].name, "alpha");
            CHECK_STR(p->docs[0].file, DATA "two/a.yaml");
            CHECK_STR(p->docs[0].rules[0].name, "alpha-gpu");
            CHECK(p->docs[0].rules[0].line == 8);
            CHECK_STR(p->docs[1].name, "beta");
            CHECK_STR(p->docs[1].file, DATA "two/a.yaml");
            CHECK(!p->docs[1].autogen);
            CHECK(p->docs[1].n_rules == 0);
            CHECK_STR(p->docs[2].name, "gamma");
            CHECK_STR(p->docs[2].file, DATA "two/b.yml");
            CHECK(p->docs[2].rules[0].action == ACTION_MUTATE);
        }
        CHECK(atomic_load(&p->refs) == 1 && p->generation == 0);
        policy_free(p);
    }
}

static void test_files_list(void)
{
    const char *files[] = {DATA "two/b.yml", DATA "two/a.yaml"};
    const char *many[RULES_FILES_MAX + 1];
    const char *bad[] = {DATA "two/a.yaml", DATA "missing.yaml", DATA "two/.hidden.yaml",
                         DATA "two/sub.yaml"};
    struct policy *p;
    size_t i;

    /* an explicit list is read in its own order */
    p = rules_load_files(files, 2, &E);
    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(p->n_docs == 3);
        CHECK_STR(p->docs[0].name, "gamma");
        CHECK_STR(p->docs[1].name, "alpha");
        CHECK_STR(p->docs[2].name, "beta");
    }
    policy_free(p);

    for (i = 0; i <= RULES_FILES_MAX; i++)
        many[i] = DATA "two/a.yaml";
    p = rules_load_files(many, RULES_FILES_MAX + 1, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "65 rule files are more than the limit of 64");

    p = rules_load_files(bad, 4, &E);
    CHECK(p == NULL);
    CHECK(E.n == 3);
    CHECK(has_err(DATA "missing.yaml", "cannot open: No such file or directory"));
    CHECK(has_err(DATA "two/.hidden.yaml:1:9", "YAML syntax error: mapping values are not "
                                               "allowed in this context"));
    CHECK(has_err(DATA "two/sub.yaml", "not a regular file"));

    p = rules_load_files(NULL, 0, &E);
    CHECK(p == NULL);
    CHECK_STR(fmt_err(0), "no GPUPolicy found in the given files");
}

static void test_duplicates_across_files(void)
{
    struct policy *p = rules_load_dir(DATA "dup", &E);

    CHECK(p == NULL);
    CHECK(E.n == 2);
    CHECK(has_err(DATA "dup/b.yaml:4:9",
                  "duplicate policy name \"team-a\" (first defined at " DATA "dup/a.yaml:4:9)"));
    CHECK(has_err(DATA "dup/b.yaml:7:13", "duplicate rule name \"gpu-request\" (first defined "
                                          "at " DATA "dup/a.yaml:9:7)"));
}

static void test_empty_dirs(void)
{
    struct policy *p;
    char *tmp = tmpdir_new();

    p = rules_load_dir(DATA "empty", &E); /* holds only a dotfile */
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "no GPUPolicy found in " DATA "empty");

    p = rules_load_dir(tmp, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_CONTAINS(fmt_err(0), "no GPUPolicy found in /tmp/test_rules.");

    p = rules_load_dir(DATA "comments-only", &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "no GPUPolicy found in " DATA "comments-only");

    p = rules_load_dir(DATA "no-such-dir", &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0),
              DATA "no-such-dir: cannot open the rules directory: No such file or directory");

    p = load("# nothing\n");
    CHECK(p == NULL);
    CHECK_STR(fmt_err(0), "no GPUPolicy found in t.yaml");
    tmpdir_free(tmp);
}

/* A ConfigMap volume: the files are symlinks through ..data to a hidden timestamped directory. */
static void test_configmap_layout(void)
{
    char *tmp = tmpdir_new(), *ts = join_path(tmp, "..2024_01_01"),
         *data = join_path(tmp, "..data");
    char *link = join_path(tmp, "gpu.yaml");
    char *text = policy_text("cm", " [{name: cm-rule, type: tolerations}]");
    struct policy *p;

    CHECK(mkdir(ts, 0700) == 0);
    put_file(ts, "gpu.yaml", text, strlen(text));
    CHECK(symlink("..2024_01_01", data) == 0);
    CHECK(symlink("..data/gpu.yaml", link) == 0);
    p = rules_load_dir(tmp, &E);
    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(p->n_docs == 1); /* read once, through the top-level link only */
        CHECK_STR(p->docs[0].name, "cm");
        CHECK_STR(p->docs[0].file, link);
    } else {
        dump_errors();
    }
    policy_free(p);
    free(text);
    free(ts);
    free(data);
    free(link);
    tmpdir_free(tmp);
}

/* ---- each kind of error, with its position ---- */

static void test_syntax_error(void)
{
    struct policy *p = load("apiVersion: gpuadmit.io/v1alpha1\n"
                            "kind: GPUPolicy\n"
                            "metadata:\n"
                            "  name: p\n"
                            " spec: x\n");

    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "t.yaml:5:2: YAML syntax error: did not find expected key (while "
                          "parsing a block mapping at line 1, column 1)");

    /* the documents before the broken one are still checked */
    p = load(HEAD "  rules: []\n"
                  "  bogus: 1\n"
                  "---\n"
                  "a: [1, 2\n"
                  "b: 3\n");
    CHECK(p == NULL);
    CHECK(E.n == 2);
    CHECK(has_err("t.yaml:7:3", "unknown key \"bogus\" in spec; expected one of auditOnly"));
    /* libyaml sees the problem at the ":" of "b:" */
    CHECK(has_err("t.yaml:10:2", "YAML syntax error: did not find expected ',' or ']' (while "
                                 "parsing a flow sequence at line 9, column 4)"));
}

static void test_unknown_key(void)
{
    struct policy *p = load(HEAD "  rules:\n"                /* 6 */
                                 "    - name: gpu-request\n" /* 7 */
                                 "      type: gpu-request\n" /* 8 */
                                 "      tolerationz: 1\n"    /* 9 */
                                 "foo: 1\n");                /* 10 */

    CHECK(p == NULL);
    CHECK(E.n == 2);
    CHECK(has_err(
        "t.yaml:9:7",
        "unknown key \"tolerationz\" in spec.rules[0]; expected one of name, type, "
        "action, enforcement, match, exclude, default, maxPerPod, denyVisibleDevicesEnv, "
        "denyPrivileged, denyDevHostPath, denyEnvFrom, namespaceDefaults, allowed, labels"));
    CHECK(has_err("t.yaml:10:1", "unknown key \"foo\" at the top level; expected one of "
                                 "apiVersion, kind, metadata, spec"));
}

static void test_duplicate_keys(void)
{
    struct policy *p = load(HEAD "  autogen: true\n"                      /* 6 */
                                 "  gpu:\n"                               /* 7 */
                                 "    nodeLabels: {a: \"1\", a: \"2\"}\n" /* 8 */
                                 "  priorityClasses:\n"                   /* 9 */
                                 "    - {name: a, value: 1}\n"            /* 10 */
                                 "    - {name: a, value: 2}\n"            /* 11 */
                                 "  autogen: false\n"                     /* 12 */
                                 "  rules: []\n");                        /* 13 */

    CHECK(p == NULL);
    CHECK(E.n == 3);
    CHECK(has_err("t.yaml:8:26",
                  "duplicate key \"a\" in spec.gpu.nodeLabels (first at line 8, column 18)"));
    CHECK(has_err("t.yaml:11:14", "spec.priorityClasses[1].name: duplicate priority class \"a\" "
                                  "(also spec.priorityClasses[0])"));
    CHECK(has_err("t.yaml:12:3", "duplicate key \"autogen\" in spec (first at line 6, column 3)"));
}

static void test_missing_keys(void)
{
    struct policy *p = load("apiVersion: gpuadmit.io/v1alpha1\n"                /* 1 */
                            "metadata: {}\n"                                    /* 2 */
                            "spec:\n"                                           /* 3 */
                            "  rules:\n"                                        /* 4 */
                            "    - type: tolerations\n"                         /* 5 */
                            "    - name: x\n"                                   /* 6 */
                            "    - name: y\n"                                   /* 7 */
                            "      type: priority-class\n"                      /* 8 */
                            "      namespaceDefaults: [{namespace: a}]\n"       /* 9 */
                            "---\n"                                             /* 10 */
                            "apiVersion: gpuadmit.io/v1alpha1\n"                /* 11 */
                            "kind: GPUPolicy\n"                                 /* 12 */
                            "metadata:\n"                                       /* 13 */
                            "  name:\n"                                         /* 14 */
                            "spec: {gpu: {taints: [{effect: NoSchedule}]}}\n"); /* 15 */

    CHECK(p == NULL);
    CHECK(E.n == 8);
    CHECK(has_err("t.yaml:1:1", "missing required key \"kind\" at the top level"));
    CHECK(has_err("t.yaml:2:11", "missing required key \"name\" in metadata"));
    CHECK(has_err("t.yaml:5:7", "missing required key \"name\" in spec.rules[0]"));
    CHECK(has_err("t.yaml:6:7", "missing required key \"type\" in spec.rules[1]"));
    CHECK(has_err("t.yaml:9:27",
                  "missing required key \"class\" in spec.rules[2].namespaceDefaults[0]"));
    CHECK(has_err("t.yaml:14:8", "metadata.name: expected a string, got null"));
    CHECK(has_err("t.yaml:15:7", "missing required key \"rules\" in spec"));
    CHECK(has_err("t.yaml:15:23", "missing required key \"key\" in spec.gpu.taints[0]"));
}

static void test_wrong_types(void)
{
    struct policy *p = load(HEAD "  auditOnly: yes\n"              /* 6 */
                                 "  autogen: \"true\"\n"           /* 7 */
                                 "  gpu:\n"                        /* 8 */
                                 "    resources: nvidia.com/gpu\n" /* 9 */
                                 "    nodeLabels: [a]\n"           /* 10 */
                                 "    runtimeClasses: [true]\n"    /* 11 */
                                 "  priorityClasses:\n"            /* 12 */
                                 "    - name: gpu\n"               /* 13 */
                                 "      value: \"1000\"\n"         /* 14 */
                                 "  rules:\n"                      /* 15 */
                                 "    - name: r\n"                 /* 16 */
                                 "      type: gpu-request\n"       /* 17 */
                                 "      maxPerPod: 1.5\n"          /* 18 */
                                 "      denyPrivileged: off\n"     /* 19 */
                                 "      default: 3\n");            /* 20 */

    CHECK(p == NULL);
    CHECK(E.n == 9);
    CHECK(
        has_err("t.yaml:6:14", "spec.auditOnly: expected a boolean (true or false), got \"yes\""));
    CHECK(has_err("t.yaml:7:12", "spec.autogen: expected a boolean (true or false), got \"true\" "
                                 "(a quoted string; remove the quotes)"));
    CHECK(
        has_err("t.yaml:9:16", "spec.gpu.resources: expected a sequence, got \"nvidia.com/gpu\""));
    CHECK(has_err("t.yaml:10:17", "spec.gpu.nodeLabels: expected a mapping, got a sequence"));
    CHECK(has_err("t.yaml:11:22", "spec.gpu.runtimeClasses[0]: expected a string, got true (a "
                                  "boolean; quote it to make it a string)"));
    CHECK(has_err("t.yaml:14:14", "spec.priorityClasses[0].value: expected an integer, got "
                                  "\"1000\" (a quoted string; remove the quotes)"));
    CHECK(has_err("t.yaml:18:18", "spec.rules[0].maxPerPod: expected an integer, got 1.5"));
    CHECK(has_err("t.yaml:19:23",
                  "spec.rules[0].denyPrivileged: expected a boolean (true or false), got \"off\""));
    CHECK(has_err("t.yaml:20:16", "spec.rules[0].default: expected a mapping, got 3"));

    /* the document itself, and a label value that YAML reads as a boolean */
    p = load("- 1\n"
             "---\n"
             "plain\n"
             "---\n" HEAD "  gpu: {nodeLabels: {nvidia.com/gpu.present: true}}\n" /* 10 */
             "  rules: []\n");
    CHECK(p == NULL);
    CHECK(E.n == 3);
    CHECK(has_err("t.yaml:1:1", "document: expected a mapping (a GPUPolicy), got a sequence"));
    CHECK(has_err("t.yaml:3:1", "document: expected a mapping (a GPUPolicy), got \"plain\""));
    CHECK(has_err("t.yaml:10:46", "spec.gpu.nodeLabels[\"nvidia.com/gpu.present\"]: expected a "
                                  "string, got true (a boolean"));
}

static void test_bad_enums(void)
{
    struct policy *p =
        load(HEAD "  gpu:\n"                                                            /* 6 */
                  "    taints: [{key: a, effect: NoSchedul}]\n"                         /* 7 */
                  "  priorityClasses: [{name: c, value: 1, preemptionPolicy: never}]\n" /* 8 */
                  "  rules:\n"                                                          /* 9 */
                  "    - name: r\n"                                                     /* 10 */
                  "      type: gpu\n"                                                   /* 11 */
                  "      action: deny\n"                                                /* 12 */
                  "      enforcement: enforce\n"                                        /* 13 */
                  "      maxPerPod: 2\n"                                                /* 14 */
                  "    - name: s\n"                                                     /* 15 */
                  "      type: tolerations\n"                                           /* 16 */
                  "      action: [Deny]\n");                                            /* 17 */

    CHECK(p == NULL);
    CHECK(E.n == 6);
    CHECK(has_err("t.yaml:7:31", "spec.gpu.taints[0].effect: expected one of NoSchedule, "
                                 "PreferNoSchedule, NoExecute, got \"NoSchedul\""));
    CHECK(has_err("t.yaml:8:59", "spec.priorityClasses[0].preemptionPolicy: expected one of "
                                 "PreemptLowerPriority, Never, got \"never\""));
    CHECK(has_err("t.yaml:11:13", "spec.rules[0].type: expected one of gpu-request, "
                                  "priority-class, tolerations, node-selector, capacity, "
                                  "device-plugin-config, got \"gpu\""));
    CHECK(has_err("t.yaml:12:15",
                  "spec.rules[0].action: expected one of Deny, Mutate, got \"deny\""));
    CHECK(has_err(
        "t.yaml:13:20",
        "spec.rules[0].enforcement: expected one of Enforce, Warn, Audit, got \"enforce\""));
    CHECK(has_err("t.yaml:17:15",
                  "spec.rules[1].action: expected one of Deny, Mutate, got a sequence"));
}

/* The capacity rule's nodeGroups: CA's node-template tags, as the policy writes them. */
static void test_capacity_node_groups(void)
{
    struct policy *p = load("apiVersion: gpuadmit.io/v1alpha1\n"
                            "kind: GPUPolicy\n"
                            "metadata: {name: t}\n"
                            "spec:\n"
                            "  rules:\n"
                            "    - name: capacity\n"
                            "      type: capacity\n"
                            "      nodeGroups:\n"
                            "        - name: eks-a100-*\n"
                            "          labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
                            "          taints: [{key: nvidia.com/gpu, value: 'true'}]\n"
                            "          resources: {nvidia.com/gpu: 8}\n"
                            "        - name: '*'\n");
    const struct capacity_settings *s;

    CHECK(p != NULL);
    if (p == NULL) {
        dump_errors();
        return;
    }
    s = capacity_settings(&p->docs[0].rules[0]);
    CHECK(s != NULL && s->n_templates == 2);
    if (s != NULL && s->n_templates == 2) {
        const struct node *n = &s->templates[0].node;

        CHECK_STR(s->templates[0].glob, "eks-a100-*");
        CHECK_STR(yyjson_get_str(yyjson_obj_get(n->labels, "nvidia.com/gpu.product")),
                  "NVIDIA-A100-SXM4-80GB");
        /* CA's template carries the generic labels (aws_manager.go buildGenericLabels) */
        CHECK_STR(yyjson_get_str(yyjson_obj_get(n->labels, "kubernetes.io/os")), "linux");
        CHECK(n->n_taints == 1 && n->n_res == 1);
        if (n->n_taints == 1) {
            CHECK_STR(n->taints[0].key, "nvidia.com/gpu");
            CHECK_STR(n->taints[0].value, "true");
            CHECK_STR(n->taints[0].effect, "NoSchedule");
        }
        if (n->n_res == 1) {
            CHECK_STR(n->res[0].name, "nvidia.com/gpu");
            CHECK(n->res[0].capacity == 8 && n->res[0].allocatable == 8);
        }
        CHECK_STR(s->templates[1].glob, "*");
        CHECK(s->templates[1].node.n_res == 0 && s->templates[1].node.n_taints == 0);
        CHECK(yyjson_obj_size(s->templates[1].node.labels) == 1);
    }
    policy_free(p);

    p = load("apiVersion: gpuadmit.io/v1alpha1\n"                         /* 1 */
             "kind: GPUPolicy\n"                                          /* 2 */
             "metadata: {name: t}\n"                                      /* 3 */
             "spec:\n"                                                    /* 4 */
             "  rules:\n"                                                 /* 5 */
             "    - name: capacity\n"                                     /* 6 */
             "      type: capacity\n"                                     /* 7 */
             "      nodeGroups:\n"                                        /* 8 */
             "        - labels: {a: b}\n"                                 /* 9 */
             "        - name: g\n"                                        /* 10 */
             "          resources: {nvidia.com/gpu: -1, 'bad name': 1}\n" /* 11 */
             "          taints: [{key: k, effect: Never}]\n"              /* 12 */
             "          gpus: 4\n");                                      /* 13 */
    CHECK(p == NULL);
    CHECK(has_err("t.yaml:9:11", "missing required key \"name\""));
    CHECK(has_err("t.yaml:11:39", "spec.rules[0].nodeGroups[1].resources[\"nvidia.com/gpu\"]: "
                                  "integer -1 out of range"));
    CHECK(has_err("t.yaml:11:43", "bad resource name \"bad name\""));
    CHECK(has_err("t.yaml:12:37", "spec.rules[0].nodeGroups[1].taints[0].effect: expected one of "
                                  "NoSchedule, PreferNoSchedule, NoExecute, got \"Never\""));
    CHECK(has_err("t.yaml:13:11", "unknown key \"gpus\""));
    if (E.n != 5)
        dump_errors();
    CHECK(E.n == 5);
    policy_free(p);
}

static void test_bad_globs(void)
{
    struct policy *p =
        load(HEAD "  match:\n"                                                           /* 6 */
                  "    namespaces: [\"ml-[\", \"ok-[a]*\", \"[[:alpha:]]x\", \"x[]\"]\n" /* 7 */
                  "    serviceAccounts: [kube-system]\n"                                 /* 8 */
                  "    users: [\"a[!]b\", \"\\\\[\", \"\"]\n"                            /* 9 */
                  "  rules: []\n");                                                      /* 10 */

    CHECK(p == NULL);
    CHECK(E.n == 5);
    CHECK(has_err("t.yaml:7:18", "spec.match.namespaces[0]: bad glob \"ml-[\": unterminated '[' "
                                 "bracket expression"));
    CHECK(has_err("t.yaml:7:53", "spec.match.namespaces[3]: bad glob \"x[]\": unterminated '[' "
                                 "bracket expression"));
    CHECK(has_err("t.yaml:8:23", "spec.match.serviceAccounts[0]: bad service account glob "
                                 "\"kube-system\": must be NAMESPACE/NAME"));
    CHECK(has_err("t.yaml:9:13", "spec.match.users[0]: bad glob \"a[!]b\": unterminated"));
    CHECK(has_err("t.yaml:9:29", "spec.match.users[2]: bad glob \"\": must not be empty"));
}

static void test_bad_label_keys(void)
{
    char yaml[2048];
    struct policy *p;

    snprintf(yaml, sizeof(yaml),
             HEAD "  gpu:\n"                             /* 6 */
                  "    nodeLabels:\n"                    /* 7 */
                  "      \"Nvidia.com/gpu\": \"true\"\n" /* 8 */
                  "      a/b/c: \"1\"\n"                 /* 9 */
                  "      -bad: x\n"                      /* 10 */
                  "      ok: \"-bad\"\n"                 /* 11 */
                  "      %.64s: x\n"                     /* 12 */
                  "      %.63s: x\n"                     /* 13: the longest name is fine */
                  "    taints:\n"                        /* 14 */
                  "      - key: \"nvidia.com/\"\n"       /* 15 */
                  "  rules: []\n",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    p = load(yaml);
    CHECK(p == NULL);
    CHECK(E.n == 6);
    CHECK(has_err("t.yaml:8:7", "spec.gpu.nodeLabels: bad label key \"Nvidia.com/gpu\": the "
                                "prefix before '/' must be a DNS subdomain"));
    CHECK(has_err("t.yaml:9:7", "bad label key \"a/b/c\": must hold at most one '/'"));
    CHECK(has_err("t.yaml:10:7", "bad label key \"-bad\": the name must be 1-63 characters"));
    CHECK(has_err("t.yaml:11:11", "spec.gpu.nodeLabels[\"ok\"]: bad label value \"-bad\""));
    CHECK(has_err("t.yaml:12:7", "bad label key \"aaaaaaaa"));
    CHECK(has_err("t.yaml:15:14",
                  "spec.gpu.taints[0].key: bad label key \"nvidia.com/\": the name must be"));
}

static void test_bad_selectors(void)
{
    struct policy *p = load(HEAD "  match:\n"                                               /* 6 */
                                 "    labelSelector:\n"                                     /* 7 */
                                 "      matchLabels: {\"bad key\": x, team: [ml]}\n"        /* 8 */
                                 "      matchExpressions:\n"                                /* 9 */
                                 "        - {key: tier, operator: In}\n"                    /* 10 */
                                 "        - {key: tier, operator: NotIn, values: []}\n"     /* 11 */
                                 "        - {key: tier, operator: Exists, values: [a]}\n"   /* 12 */
                                 "        - {key: tier, operator: Equals, values: [a]}\n"   /* 13 */
                                 "        - {operator: In, values: [a]}\n"                  /* 14 */
                                 "        - {key: tier, operator: In, values: [\"a b\"]}\n" /* 15 */
                                 "      matchFields: []\n"                                  /* 16 */
                                 "  rules: []\n");

    CHECK(p == NULL);
    CHECK(E.n == 9);
    CHECK(
        has_err("t.yaml:8:21", "spec.match.labelSelector.matchLabels: bad label key \"bad key\""));
    CHECK(has_err("t.yaml:8:41", "spec.match.labelSelector.matchLabels[\"team\"]: expected a "
                                 "string, got a sequence"));
    CHECK(has_err("t.yaml:10:11", "spec.match.labelSelector.matchExpressions[0].values: "
                                  "operator In needs at least one value"));
    CHECK(has_err("t.yaml:11:48", "spec.match.labelSelector.matchExpressions[1].values: "
                                  "operator NotIn needs at least one value"));
    CHECK(has_err("t.yaml:12:49", "spec.match.labelSelector.matchExpressions[2].values: "
                                  "operator Exists takes no values"));
    CHECK(has_err("t.yaml:13:33",
                  "spec.match.labelSelector.matchExpressions[3].operator: "
                  "expected one of In, NotIn, Exists, DoesNotExist, got \"Equals\""));
    CHECK(has_err("t.yaml:14:11", "missing required key \"key\" in "
                                  "spec.match.labelSelector.matchExpressions[4]"));
    CHECK(has_err("t.yaml:15:46", "spec.match.labelSelector.matchExpressions[5].values[0]: bad "
                                  "label value \"a b\""));
    CHECK(has_err("t.yaml:16:7", "unknown key \"matchFields\" in spec.match.labelSelector; "
                                 "expected one of matchLabels, matchExpressions"));
}

static void test_integers(void)
{
    struct policy *p = load(HEAD "  priorityClasses:\n"                           /* 6 */
                                 "    - {name: a, value: 2147483648}\n"           /* 7 */
                                 "    - {name: b, value: -2147483649}\n"          /* 8 */
                                 "    - {name: c, value: 2147483647}\n"           /* 9 */
                                 "    - {name: d, value: 99999999999999999999}\n" /* 10 */
                                 "    - {name: e, value: 010}\n"                  /* 11 */
                                 "    - {name: f, value: 0x10}\n"                 /* 12 */
                                 "    - {name: g, value: -2147483648}\n"          /* 13 */
                                 "  rules:\n"                                     /* 14 */
                                 "    - name: r\n"                                /* 15 */
                                 "      type: gpu-request\n"                      /* 16 */
                                 "      maxPerPod: -1\n"                          /* 17 */
                                 "      default: {count: 0}\n");                  /* 18 */

    CHECK(p == NULL);
    CHECK(E.n == 8);
    CHECK(has_err("t.yaml:9:24", "spec.priorityClasses[2].value: integer 2147483647 out of "
                                 "range; expected -2147483648 to 1000000000"));
    CHECK(has_err("t.yaml:7:24", "spec.priorityClasses[0].value: integer 2147483648 out of "
                                 "range; expected -2147483648 to 1000000000"));
    CHECK(
        has_err("t.yaml:8:24", "spec.priorityClasses[1].value: integer -2147483649 out of range"));
    CHECK(has_err("t.yaml:10:24",
                  "spec.priorityClasses[3].value: integer 99999999999999999999 out of range"));
    CHECK(has_err("t.yaml:11:24", "spec.priorityClasses[4].value: expected a decimal integer "
                                  "without leading zeros, got 010"));
    CHECK(has_err("t.yaml:12:24",
                  "spec.priorityClasses[5].value: expected a decimal integer, got 0x10"));
    CHECK(has_err("t.yaml:17:18",
                  "spec.rules[0].maxPerPod: integer -1 out of range; expected at least 0"));
    CHECK(has_err("t.yaml:18:24",
                  "spec.rules[0].default.count: integer 0 out of range; expected at least 1"));

    /* the edges themselves are fine */
    p = load(HEAD "  priorityClasses: [{name: hi, value: 1000000000}, {name: lo, value: "
                  "-2147483648}]\n"
                  "  rules: [{name: r, type: gpu-request, maxPerPod: 9223372036854775807, "
                  "default: {count: 1}}]\n");
    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(p->docs[0].classes[0].value == 1000000000);
        CHECK(p->docs[0].classes[1].value == INT32_MIN);
        CHECK(gpu_request_settings(&p->docs[0].rules[0]) != NULL &&
              gpu_request_settings(&p->docs[0].rules[0])->max_per_pod == INT64_MAX);
    }
    policy_free(p);
}

/* device-plugin-config: its ConfigMaps, and what its loader refuses. */
static void test_device_plugin_config(void)
{
    const struct device_plugin_settings *s;
    struct policy *p = load(HEAD "  rules:\n"                                           /* 6 */
                                 "    - name: d\n"                                      /* 7 */
                                 "      type: device-plugin-config\n"                   /* 8 */
                                 "      configMaps:\n"                                  /* 9 */
                                 "        - {namespace: gpu-operator, name: ts}\n"      /* 10 */
                                 "        - {namespace: kube-system, name: plugin}\n"); /* 11 */

    CHECK(p != NULL);
    if (p == NULL) {
        dump_errors();
        return;
    }
    s = device_plugin_settings(&p->docs[0].rules[0]);
    CHECK(s != NULL && s->n_refs == 2);
    if (s != NULL && s->n_refs == 2) {
        CHECK_STR(s->refs[0].ns, "gpu-operator");
        CHECK_STR(s->refs[0].name, "ts");
        CHECK_STR(s->refs[1].ns, "kube-system");
        CHECK_STR(s->refs[1].name, "plugin");
    }
    CHECK(p->docs[0].rules[0].action == ACTION_DENY);
    policy_unref(p);

    p = load(HEAD "  rules:\n"                                      /* 6 */
                  "    - name: a\n"                                 /* 7 */
                  "      type: device-plugin-config\n"              /* 8 */
                  "      action: Mutate\n"                          /* 9 */
                  "      configMaps: [{namespace: x, name: y}]\n"   /* 10 */
                  "    - name: b\n"                                 /* 11 */
                  "      type: device-plugin-config\n"              /* 12 */
                  "    - name: c\n"                                 /* 13 */
                  "      type: device-plugin-config\n"              /* 14 */
                  "      configMaps: []\n"                          /* 15 */
                  "    - name: e\n"                                 /* 16 */
                  "      type: device-plugin-config\n"              /* 17 */
                  "      configMaps:\n"                             /* 18 */
                  "        - {namespace: Bad_NS, name: y}\n"        /* 19 */
                  "        - {name: y}\n"                           /* 20 */
                  "        - {namespace: x, name: y, key: z}\n"     /* 21 */
                  "    - name: f\n"                                 /* 22 */
                  "      type: tolerations\n"                       /* 23 */
                  "      configMaps: [{namespace: x, name: y}]\n"); /* 24 */
    CHECK(p == NULL);
    CHECK(has_err("t.yaml:9:15", "spec.rules[0].action: device-plugin-config rules judge "
                                 "ConfigMaps at /validate and cannot patch; expected Deny"));
    CHECK(has_err("t.yaml:11:7",
                  "missing required key \"configMaps\" in spec.rules[1] (a device-plugin-config "
                  "rule)"));
    CHECK(has_err("t.yaml:15:19", "spec.rules[2].configMaps: name at least one ConfigMap"));
    CHECK(has_err("t.yaml:19:23", "spec.rules[3].configMaps[0].namespace: bad name \"Bad_NS\""));
    CHECK(has_err("t.yaml:20:11", "missing required key \"namespace\" in "
                                  "spec.rules[3].configMaps[1]"));
    CHECK(has_err("t.yaml:21:35", "unknown key \"key\" in spec.rules[3].configMaps[2]"));
    CHECK(has_err("t.yaml:24:7", "spec.rules[4]: configMaps is only valid for "
                                 "device-plugin-config rules, not tolerations"));
    policy_unref(p);
}

static void test_type_specific_keys(void)
{
    struct policy *p = load(HEAD "  rules:\n"                     /* 6 */
                                 "    - name: t\n"                /* 7 */
                                 "      type: tolerations\n"      /* 8 */
                                 "      maxPerPod: 1\n"           /* 9 */
                                 "      labels: {a: b}\n"         /* 10 */
                                 "    - name: n\n"                /* 11 */
                                 "      type: node-selector\n"    /* 12 */
                                 "      default: x\n"             /* 13 */
                                 "      allowed: []\n"            /* 14 */
                                 "    - name: g\n"                /* 15 */
                                 "      type: gpu-request\n"      /* 16 */
                                 "      namespaceDefaults: []\n"  /* 17 */
                                 "      default: gpu-standard\n"  /* 18 */
                                 "    - name: p\n"                /* 19 */
                                 "      type: priority-class\n"   /* 20 */
                                 "      default: {resource: x}\n" /* 21 */
                                 "      denyPrivileged: true\n"); /* 22 */

    CHECK(p == NULL);
    CHECK(E.n == 8);
    CHECK(has_err("t.yaml:9:7", "spec.rules[0]: maxPerPod is only valid for gpu-request rules, "
                                "not tolerations"));
    CHECK(has_err("t.yaml:10:7", "spec.rules[0]: labels is only valid for node-selector rules"));
    CHECK(has_err("t.yaml:13:7", "spec.rules[1]: default is only valid for gpu-request and "
                                 "priority-class rules, not node-selector"));
    CHECK(has_err("t.yaml:14:7", "spec.rules[1]: allowed is only valid for priority-class rules"));
    CHECK(has_err("t.yaml:17:7", "spec.rules[2]: namespaceDefaults is only valid for "
                                 "priority-class rules, not gpu-request"));
    CHECK(
        has_err("t.yaml:18:16", "spec.rules[2].default: expected a mapping, got \"gpu-standard\""));
    CHECK(has_err("t.yaml:21:16", "spec.rules[3].default: expected a string, got a mapping"));
    CHECK(has_err("t.yaml:22:7", "spec.rules[3]: denyPrivileged is only valid for gpu-request "
                                 "rules, not priority-class"));
}

static void test_rule_values(void)
{
    struct policy *p = load(HEAD "  gpu: {resources: [amd.com/gpu]}\n"        /* 6 */
                                 "  rules:\n"                                 /* 7 */
                                 "    - name: g1\n"                           /* 8 */
                                 "      type: gpu-request\n"                  /* 9 */
                                 "      action: Mutate\n"                     /* 10 */
                                 "    - name: g2\n"                           /* 11 */
                                 "      type: gpu-request\n"                  /* 12 */
                                 "      default: {resource: \"amd.com/*\"}\n" /* 13 */
                                 "    - name: g3\n"                           /* 14 */
                                 "      type: gpu-request\n"                  /* 15 */
                                 "      default: {resource: intel.com/gpu}\n" /* 16 */
                                 "    - name: g4\n"                           /* 17 */
                                 "      type: gpu-request\n"                  /* 18 */
                                 "    - name: n\n"                            /* 19 */
                                 "      type: node-selector\n"                /* 20 */
                                 "      labels:\n"                            /* 21 */
                                 "        a: \"\"\n"                          /* 22 */
                                 "        b: ~\n"                             /* 23 */
                                 "        c: \"x y\"\n"                       /* 24 */
                                 "    - name: -bad-\n"                        /* 25 */
                                 "      type: tolerations\n"                  /* 26 */
                                 "    - name: p\n"                            /* 27 */
                                 "      type: priority-class\n"               /* 28 */
                                 "      default: Gpu_Standard\n");            /* 29 */

    CHECK(p == NULL);
    CHECK(E.n == 8);
    CHECK(has_err("t.yaml:8:7", "spec.rules[0].default.resource: \"nvidia.com/gpu\" is not "
                                "matched by spec.gpu.resources"));
    CHECK(has_err("t.yaml:13:27", "spec.rules[1].default.resource: bad resource name "
                                  "\"amd.com/*\""));
    CHECK(has_err("t.yaml:16:27", "spec.rules[2].default.resource: \"intel.com/gpu\" is not "
                                  "matched by spec.gpu.resources"));
    CHECK(has_err("t.yaml:22:12", "spec.rules[4].labels[\"a\"]: expected a non-empty label value"));
    CHECK(has_err("t.yaml:23:12", "spec.rules[4].labels[\"b\"]: expected a string, got null"));
    CHECK(has_err("t.yaml:24:12", "spec.rules[4].labels[\"c\"]: bad label value \"x y\""));
    CHECK(has_err("t.yaml:25:13", "spec.rules[5].name: bad rule name \"-bad-\": must be a valid "
                                  "audit annotation key"));
    CHECK(has_err("t.yaml:29:16", "spec.rules[6].default: bad name \"Gpu_Standard\": must be a "
                                  "DNS-1123 subdomain"));
}

static void test_policy_level_errors(void)
{
    struct policy *p = load("apiVersion: v1\n"                                  /* 1 */
                            "kind: ConfigMap\n"                                 /* 2 */
                            "metadata:\n"                                       /* 3 */
                            "  name: Default_Policy\n"                          /* 4 */
                            "  labels: {a: b}\n"                                /* 5 */
                            "spec:\n"                                           /* 6 */
                            "  rules: []\n"                                     /* 7 */
                            "---\n"                                             /* 8 */
                            "apiVersion: gpuadmit.io/v1alpha1\n"                /* 9 */
                            "kind: GPUPolicy\n"                                 /* 10 */
                            "metadata: {name: dup}\n"                           /* 11 */
                            "spec: {rules: [{name: a, type: tolerations}]}\n"   /* 12 */
                            "---\n"                                             /* 13 */
                            "apiVersion: gpuadmit.io/v1alpha1\n"                /* 14 */
                            "kind: GPUPolicy\n"                                 /* 15 */
                            "metadata: {name: dup}\n"                           /* 16 */
                            "spec: {rules: [{name: a, type: tolerations}]}\n"); /* 17 */

    CHECK(p == NULL);
    CHECK(E.n == 6);
    CHECK(has_err("t.yaml:1:13", "apiVersion: expected \"gpuadmit.io/v1alpha1\", got \"v1\""));
    CHECK(has_err("t.yaml:2:7", "kind: expected \"GPUPolicy\", got \"ConfigMap\""));
    CHECK(has_err("t.yaml:4:9", "metadata.name: bad policy name \"Default_Policy\": must be a "
                                "DNS-1123 label"));
    CHECK(has_err("t.yaml:5:3", "unknown key \"labels\" in metadata; expected one of name"));
    CHECK(has_err("t.yaml:16:18", "duplicate policy name \"dup\" (first defined at t.yaml:11:18)"));
    CHECK(has_err("t.yaml:17:23", "duplicate rule name \"a\" (first defined at t.yaml:12:16)"));
}

/* gpu.pools: each pool's lists, and the policy's as their union (a taint or label two pools
 * share counted once). */
static void test_pools(void)
{
    struct policy *p = load(HEAD "  gpu:\n"                                                 /* 6 */
                                 "    pools:\n"                                             /* 7 */
                                 "      - name: t4\n"                                       /* 8 */
                                 "        resources: [nvidia.com/gpu.shared]\n"             /* 9 */
                                 "        nodeLabels: {nvidia.com/gpu.product: Tesla-T4}\n" /* 10 */
                                 "        taints: [{key: nvidia.com/gpu}]\n"                /* 11 */
                                 "      - name: mig\n"                                      /* 12 */
                                 "        resources: [\"nvidia.com/mig-*\"]\n"              /* 13 */
                                 "        nodeLabels: {nvidia.com/mig.strategy: mixed}\n"   /* 14 */
                                 "        taints: [{key: nvidia.com/gpu}, {key: d, value: a}]\n"
                                 "  rules: [{name: ns, type: node-selector, action: Mutate}]\n");
    const struct policy_doc *d;

    dump_errors();
    CHECK(p != NULL);
    if (p == NULL)
        return;
    d = &p->docs[0];
    CHECK(d->n_pools == 2);
    CHECK(strcmp(d->pools[0].name, "t4") == 0 && strcmp(d->pools[1].name, "mig") == 0);
    CHECK(LIST_IS(&d->pools[1].resources, "nvidia.com/mig-*"));
    CHECK(d->pools[0].n_taints == 1 && d->pools[1].n_taints == 2);
    CHECK(LIST_IS(&d->gpu_resources, "nvidia.com/gpu.shared", "nvidia.com/mig-*"));
    CHECK(d->n_gpu_node_labels == 2 && strcmp(d->gpu_node_labels[1].value, "mixed") == 0);
    CHECK(d->n_gpu_taints == 2 && strcmp(d->gpu_taints[1].key, "d") == 0 &&
          strcmp(d->gpu_taints[1].value, "a") == 0);
    policy_unref(p);

    /* left out, a pool's nodeLabels and taints are the top level's defaults */
    p = load(HEAD "  gpu:\n"
                  "    pools: [{name: a, resources: [nvidia.com/gpu]}]\n"
                  "  rules: []\n");
    CHECK(p != NULL);
    if (p != NULL) {
        d = &p->docs[0];
        CHECK(d->pools[0].n_labels == 1 &&
              strcmp(d->pools[0].labels[0].key, "nvidia.com/gpu.present") == 0);
        CHECK(d->pools[0].n_taints == 1 &&
              strcmp(d->pools[0].taints[0].key, "nvidia.com/gpu") == 0);
        policy_unref(p);
    }
}

static void test_pool_errors(void)
{
    struct policy *p = load(HEAD "  gpu:\n"                                             /* 6 */
                                 "    resources: [nvidia.com/gpu]\n"                    /* 7 */
                                 "    taints: [{key: t}]\n"                             /* 8 */
                                 "    pools:\n"                                         /* 9 */
                                 "      - name: a\n"                                    /* 10 */
                                 "        resources: [\"nvidia.com/mig-*\"]\n"          /* 11 */
                                 "      - name: a\n"                                    /* 12 */
                                 "        resources: [nvidia.com/mig-1g.5gb, x.io/g]\n" /* 13 */
                                 "      - name: c\n"                                    /* 14 */
                                 "        resources: [y.io/g, y.io/g]\n"                /* 15 */
                                 "      - {name: d}\n"                                  /* 16 */
                                 "  rules:\n"                                           /* 17 */
                                 "    - name: ns\n"                                     /* 18 */
                                 "      type: node-selector\n"                          /* 19 */
                                 "      labels: {a: b}\n");                             /* 20 */

    CHECK(p == NULL);
    CHECK(has_err("t.yaml:7:5", "spec.gpu.resources: not beside gpu.pools, where each pool "
                                "names its own resources"));
    CHECK(has_err("t.yaml:8:5", "spec.gpu.taints: not beside gpu.pools"));
    CHECK(has_err("t.yaml:12:15", "spec.gpu.pools[1].name: pool name \"a\" is taken by an "
                                  "earlier pool"));
    CHECK(has_err("t.yaml:13:21", "spec.gpu.pools[1].resources[0]: \"nvidia.com/mig-1g.5gb\" is "
                                  "matched by \"nvidia.com/mig-*\" of pool a, so it would never "
                                  "be this pool's"));
    CHECK(has_err("t.yaml:15:29", "spec.gpu.pools[2].resources[1]: \"y.io/g\" is matched by "
                                  "spec.gpu.pools[2].resources[0] of the same pool"));
    CHECK(has_err("t.yaml:16:9", "missing required key \"resources\""));
    CHECK(has_err("t.yaml:20:7", "spec.rules[0].labels: not with gpu.pools"));
    CHECK(E.n == 7);

    p = load(HEAD "  gpu: {pools: []}\n  rules: []\n");
    CHECK(p == NULL && has_err("t.yaml:6:16", "spec.gpu.pools: expected 1 to 16 pools, got 0"));
    p = load(HEAD "  gpu: {pools: [{name: Big_Pool, resources: [a.io/g]}]}\n  rules: []\n");
    CHECK(p == NULL && has_err("t.yaml:6:24", "bad pool name \"Big_Pool\""));

    /* a pod's patch gets every label and taint of its pool: more than 32 are refused */
    {
        char text[4096];
        int at = snprintf(text, sizeof(text), "%s",
                          HEAD "  gpu:\n    pools:\n"
                               "      - name: a\n"
                               "        resources: [a.io/g]\n"
                               "        nodeLabels:\n");
        for (int i = 0; i < 33; i++)
            at += snprintf(text + at, sizeof(text) - (size_t)at, "          l%d: v\n", i);
        snprintf(text + at, sizeof(text) - (size_t)at, "  rules: []\n");
        p = load(text);
        CHECK(p == NULL && has_err("t.yaml:11:11", "spec.gpu.pools[0].nodeLabels: 33 labels, "
                                                   "more than 32 per pool"));
    }
}

/* Without pools, two gpu.nodeLabels with a value may be two kinds of node or two labels every
 * GPU node carries (nvidia.com/gpu.present and nvidia.com/gpu.deploy.device-plugin under the
 * GPU Operator): only the cluster can tell, so the policy loads, and node-selector asks a
 * synced view (rules/tests/pools-without-pools.yaml). */
static void test_selector_labels_any_of(void)
{
    struct policy *p = load(HEAD "  gpu:\n"
                                 "    nodeLabels: {nvidia.com/gpu.present: \"true\",\n"
                                 "                 nvidia.com/gpu.deploy.device-plugin: \"true\"}\n"
                                 "  rules:\n"
                                 "    - {name: ns, type: node-selector, action: Mutate}\n");

    dump_errors();
    CHECK(p != NULL);
    policy_unref(p);
}

/* All errors of a file come back, in file order, although the checks run in another. */
static void test_errors_collected_in_order(void)
{
    struct policy *p = load("apiVersion: gpuadmit.io/v1alpha1\n" /* 1 */
                            "kind: GPUPolicy\n"                  /* 2 */
                            "metadata: {name: p}\n"              /* 3 */
                            "spec:\n"                            /* 4 */
                            "  rules:\n"                         /* 5 */
                            "    - name: r\n"                    /* 6 */
                            "      type: gpu-request\n"          /* 7 */
                            "      action: deny\n"               /* 8 */
                            "  gpu:\n"                           /* 9 */
                            "    runtimeClasses: [\"nv[\"]\n"    /* 10 */
                            "  autogen: yes\n"                   /* 11 */
                            "  bogus: 1\n");                     /* 12 */

    CHECK(p == NULL);
    CHECK(E.n == 4);
    CHECK_STR(fmt_err(0), "t.yaml:8:15: spec.rules[0].action: expected one of Deny, Mutate, got "
                          "\"deny\"");
    /* runtime classes are globs (rules/README.md): an unclosed '[' is the error */
    CHECK_CONTAINS(fmt_err(1), "t.yaml:10:22: spec.gpu.runtimeClasses[0]: bad glob \"nv[\"");
    CHECK_STR(fmt_err(2), "t.yaml:11:12: spec.autogen: expected a boolean (true or false), got "
                          "\"yes\"");
    CHECK_CONTAINS(fmt_err(3), "t.yaml:12:3: unknown key \"bogus\" in spec");
}

static void test_error_cap(void)
{
    size_t n = 0, i;
    char *yaml = malloc(64 * 1024);

    n += (size_t)snprintf(yaml + n, 64 * 1024 - n, "%s", HEAD "  rules: []\n");
    for (i = 0; i < 60; i++)
        n += (size_t)snprintf(yaml + n, 64 * 1024 - n, "  k%zu: 1\n", i); /* line 7 + i */
    CHECK(load(yaml) == NULL);
    CHECK(E.n == RULES_ERRORS_MAX);
    CHECK(E.dropped == 10);
    CHECK(has_err("t.yaml:7:3", "unknown key \"k0\" in spec"));
    CHECK(has_err("t.yaml:56:3", "unknown key \"k49\" in spec"));
    free(yaml);
}

/* ---- refused YAML and bounds ---- */

static void test_anchors_aliases(void)
{
    struct policy *p = load(HEAD "  gpu:\n"                             /* 6 */
                                 "    resources: &r [nvidia.com/gpu]\n" /* 7 */
                                 "  match:\n"                           /* 8 */
                                 "    namespaces: *r\n"                 /* 9 */
                                 "  rules: []\n");

    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(
        fmt_err(0),
        "t.yaml:7:16: anchors and aliases are not supported (2 in this file, the first here)");

    p = load(HEAD "  rules: []\n"
                  "  exclude: *nowhere\n");
    CHECK(p == NULL);
    CHECK(E.n == 1);
    /* libyaml does not check that an alias names an anchor: refused all the same */
    CHECK_STR(fmt_err(0), "t.yaml:7:12: anchors and aliases are not supported");
}

static void test_billion_laughs(void)
{
    static const char *const names = "abcdefghi";
    char *yaml = malloc(4096);
    size_t n = 0, i, j;
    struct policy *p;
    clock_t t0 = clock();

    n += (size_t)snprintf(yaml + n, 4096 - n,
                          "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\","
                          "\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (i = 1; i < 9; i++) {
        n += (size_t)snprintf(yaml + n, 4096 - n, "%c: &%c [", names[i], names[i]);
        for (j = 0; j < 9; j++)
            n += (size_t)snprintf(yaml + n, 4096 - n, "%s*%c", j ? "," : "", names[i - 1]);
        n += (size_t)snprintf(yaml + n, 4096 - n, "]\n");
    }
    p = rules_load_buffer("lol.yaml", yaml, n, &E);
    CHECK(p == NULL);
    CHECK(has_err("lol.yaml:1:4",
                  "anchors and aliases are not supported (81 in this file, the first here)"));
    /* 9 unknown keys, 4 missing keys and the refusal: nothing was expanded */
    CHECK(E.n == 14);
    CHECK(clock() - t0 < CLOCKS_PER_SEC);
    free(yaml);
}

static char *nested(size_t depth)
{
    char *s = malloc(2 * depth + 8);
    size_t i, n = 0;

    memcpy(s, "a: ", 3);
    n = 3;
    for (i = 0; i < depth; i++)
        s[n++] = '[';
    for (i = 0; i < depth; i++)
        s[n++] = ']';
    s[n++] = '\n';
    s[n] = '\0';
    return s;
}

static void test_depth_cap(void)
{
    char *ok = nested(RULES_DEPTH_MAX - 1), *deep = nested(RULES_DEPTH_MAX); /* + the root */
    size_t i;

    CHECK(load(ok) == NULL); /* not a policy, but read to its end */
    CHECK(E.n == 5);
    for (i = 0; i < E.n; i++)
        CHECK(strstr(fmt_err(i), "nesting") == NULL);
    CHECK(has_err("t.yaml:1:1", "unknown key \"a\" at the top level"));

    CHECK(load(deep) == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "t.yaml:1:35: nesting deeper than 32 levels");
    free(ok);
    free(deep);
}

static char *flow_list(size_t items)
{
    char *s = malloc(2 * items + 16);
    size_t i, n;

    memcpy(s, "a: [", 4);
    n = 4;
    for (i = 0; i < items; i++) {
        if (i)
            s[n++] = ',';
        s[n++] = '0';
    }
    s[n++] = ']';
    s[n++] = '\n';
    s[n] = '\0';
    return s;
}

static void test_node_cap(void)
{
    /* the root mapping, the key and the sequence are 3 nodes */
    char *ok = flow_list(RULES_NODES_MAX - 3), *big = flow_list(RULES_NODES_MAX - 2);

    CHECK(load(ok) == NULL);
    CHECK(E.n == 5);
    CHECK(has_err("t.yaml:1:1", "unknown key \"a\""));
    CHECK(load(big) == NULL);
    CHECK(E.n == 1);
    /* item 9998 starts at column 5 + 2 * 9997 */
    CHECK_STR(fmt_err(0), "t.yaml:1:19999: more than 10000 YAML nodes in one file");
    free(ok);
    free(big);
}

static void test_size_cap(void)
{
    const char *head = HEAD "  rules: []\n#";
    size_t hl = strlen(head), i;
    char *text = malloc(RULES_FILE_MAX_BYTES + 2);
    char *tmp = tmpdir_new();
    struct policy *p;

    /* exactly the limit: a valid policy padded with a comment */
    memcpy(text, head, hl);
    for (i = hl; i < RULES_FILE_MAX_BYTES - 1; i++)
        text[i] = 'x';
    text[RULES_FILE_MAX_BYTES - 1] = '\n';
    p = rules_load_buffer("big.yaml", text, RULES_FILE_MAX_BYTES, &E);
    CHECK(p != NULL);
    CHECK(E.n == 0);
    policy_free(p);
    put_file(tmp, "big.yaml", text, RULES_FILE_MAX_BYTES);
    p = rules_load_dir(tmp, &E);
    CHECK(p != NULL);
    policy_free(p);

    /* one byte more */
    text[RULES_FILE_MAX_BYTES - 1] = 'x';
    text[RULES_FILE_MAX_BYTES] = '\n';
    p = rules_load_buffer("big.yaml", text, RULES_FILE_MAX_BYTES + 1, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "big.yaml: file of 1048577 bytes is over the limit of 1048576 bytes");
    put_file(tmp, "big.yaml", text, RULES_FILE_MAX_BYTES + 1);
    p = rules_load_dir(tmp, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_CONTAINS(fmt_err(0), "/big.yaml: file of 1048577 bytes is over the limit of 1048576 "
                               "bytes");
    free(text);
    tmpdir_free(tmp);
}

static void test_file_count_cap(void)
{
    char *tmp = tmpdir_new(), name[32];
    char *text = policy_text("x", " []");
    struct policy *p;
    size_t i;

    for (i = 0; i < RULES_FILES_MAX; i++) {
        char body[256];
        snprintf(name, sizeof(name), "f%02zu.yaml", i);
        snprintf(body, sizeof(body),
                 "apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: p%zu}\n"
                 "spec: {rules: []}\n",
                 i);
        put_file(tmp, name, body, strlen(body));
    }
    put_file(tmp, "notes.txt", "x", 1); /* not a rule file: not counted */
    p = rules_load_dir(tmp, &E);
    CHECK(p != NULL);
    if (p != NULL) {
        CHECK(p->n_docs == RULES_FILES_MAX);
        CHECK_STR(p->docs[0].name, "p0");
        CHECK_STR(p->docs[63].name, "p63");
    }
    policy_free(p);

    put_file(tmp, "z.yml", text, strlen(text));
    p = rules_load_dir(tmp, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_CONTAINS(fmt_err(0), ": 65 rule files are more than the limit of 64");
    free(text);
    tmpdir_free(tmp);
}

static char *many_rules(const char *name, const char *prefix, size_t count)
{
    size_t cap = 64 * count + 256, n, i;
    char *s = malloc(cap);

    n = (size_t)snprintf(s, cap,
                         "apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n"
                         "  name: %s\nspec:\n  rules:\n",
                         name);
    for (i = 0; i < count; i++) /* rule i on line 7 + i */
        n +=
            (size_t)snprintf(s + n, cap - n, "    - {name: %s%zu, type: tolerations}\n", prefix, i);
    return s;
}

static void test_rule_count_cap(void)
{
    char *ok = many_rules("p", "r", RULES_RULES_MAX);
    char *over = many_rules("p", "r", RULES_RULES_MAX + 1);
    char *a = many_rules("a", "a", 200), *b = many_rules("b", "b", 57);
    char *tmp = tmpdir_new();
    struct policy *p;

    p = load(ok);
    CHECK(p != NULL);
    if (p != NULL)
        CHECK(p->docs[0].n_rules == RULES_RULES_MAX);
    policy_free(p);

    p = load(over);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_STR(fmt_err(0), "t.yaml:263:7: more than 256 rules (the limit for all files together)");

    /* the limit is for the directory, not per file */
    put_file(tmp, "a.yaml", a, strlen(a));
    put_file(tmp, "b.yaml", b, strlen(b));
    p = rules_load_dir(tmp, &E);
    CHECK(p == NULL);
    CHECK(E.n == 1);
    CHECK_CONTAINS(fmt_err(0), "/b.yaml:63:7: more than 256 rules");
    free(ok);
    free(over);
    free(a);
    free(b);
    tmpdir_free(tmp);
}

static void test_misc(void)
{
    struct policy *p;
    const char *t = HEAD "  rules: []\n";

    /* errs may be NULL; policy_free takes NULL */
    p = rules_load_buffer("t.yaml", t, strlen(t), NULL);
    CHECK(p != NULL);
    policy_free(p);
    CHECK(rules_load_buffer("t.yaml", "a: [", 4, NULL) == NULL);
    policy_free(NULL);

    /* NUL inside a value; a key that is not a string */
    p = load(HEAD "  rules: [{name: \"a\\0b\", type: tolerations}]\n"
                  "  ? [x]\n"
                  "  : 1\n");
    CHECK(p == NULL);
    CHECK(E.n == 2);
    CHECK(has_err("t.yaml:6:18", "a NUL character is not allowed in a value"));
    CHECK(has_err("t.yaml:7:5", "expected a string key in spec, got a sequence"));

    /* a long bad value is cut in the message, control characters escaped */
    {
        char yaml[512], want[128];
        char ys[101];
        memset(ys, 'y', 100);
        ys[100] = '\0';
        snprintf(yaml, sizeof(yaml), HEAD "  rules: []\n  autogen: \"\\t%s\"\n", ys);
        /* RULES_VALUE_SHOWN bytes: the tab and 63 of the y */
        snprintf(want, sizeof(want), "got \"\\x09%.63s...\"", ys);
        CHECK(load(yaml) == NULL);
        CHECK(E.n == 1);
        CHECK_CONTAINS(fmt_err(0), want);
    }

    /* rules_errors_clear empties */
    E.n = 3;
    E.dropped = 2;
    rules_errors_clear(&E);
    CHECK(E.n == 0 && E.dropped == 0);
}

int main(void)
{
    RUN(test_full_policy);
    RUN(test_defaults);
    RUN(test_null_and_empty);
    RUN(test_empty_lists_refused);
    RUN(test_cluster_rules_enforced);
    RUN(test_multiple_documents);
    RUN(test_tags);
    RUN(test_bom);
    RUN(test_dir_two_files);
    RUN(test_files_list);
    RUN(test_duplicates_across_files);
    RUN(test_empty_dirs);
    RUN(test_configmap_layout);
    RUN(test_syntax_error);
    RUN(test_unknown_key);
    RUN(test_duplicate_keys);
    RUN(test_missing_keys);
    RUN(test_wrong_types);
    RUN(test_bad_enums);
    RUN(test_capacity_node_groups);
    RUN(test_bad_globs);
    RUN(test_bad_label_keys);
    RUN(test_bad_selectors);
    RUN(test_integers);
    RUN(test_type_specific_keys);
    RUN(test_device_plugin_config);
    RUN(test_rule_values);
    RUN(test_policy_level_errors);
    RUN(test_pools);
    RUN(test_pool_errors);
    RUN(test_selector_labels_any_of);
    RUN(test_errors_collected_in_order);
    RUN(test_error_cap);
    RUN(test_anchors_aliases);
    RUN(test_billion_laughs);
    RUN(test_depth_cap);
    RUN(test_node_cap);
    RUN(test_size_cap);
    RUN(test_file_count_cap);
    RUN(test_rule_count_cap);
    RUN(test_misc);
    TEST_MAIN_END("test_rules");
}
