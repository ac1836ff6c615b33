/* Unit tests for pool.c: which GPU pools a pod's demand draws on, and their taints and labels. */
#include "harness.h"
#include "policy/pool.h"
#include "policy/rules.h"

/* Pools t4 (nvidia.com/gpu.shared), mig (the nvidia.com/mig- globs, two taints, two labels) and
 * any (every example.com resource). */
static const char POLICY[] = "apiVersion: gpuadmit.io/v1alpha1\n"
                             "kind: GPUPolicy\n"
                             "metadata: {name: p}\n"
                             "spec:\n"
                             "  gpu:\n"
                             "    pools:\n"
                             "      - name: t4\n"
                             "        resources: [nvidia.com/gpu.shared]\n"
                             "        nodeLabels: {product: Tesla-T4, present: \"true\"}\n"
                             "        taints: [{key: nvidia.com/gpu}]\n"
                             "      - name: mig\n"
                             "        resources: [\"nvidia.com/mig-*\"]\n"
                             "        nodeLabels: {product: A100, present: \"true\"}\n"
                             "        taints: [{key: nvidia.com/gpu}, {key: d, value: a}]\n"
                             "      - name: any\n"
                             "        resources: [\"example.com/*\"]\n"
                             "        nodeLabels: {present: \"true\"}\n"
                             "        taints: [{key: nvidia.com/gpu, effect: NoExecute}]\n"
                             "  rules: []\n";

static struct policy *load(void)
{
    struct rules_errors e = {0};
    struct policy *p = rules_load_buffer("p.yaml", POLICY, sizeof(POLICY) - 1, &e);

    CHECK(p != NULL && e.n == 0);
    rules_errors_clear(&e);
    return p;
}

static struct pod_demand demand(const char *a, int64_t na, const char *b, int64_t nb)
{
    struct pod_demand dm = {.n = 0};

    if (a != NULL)
        dm.r[dm.n++] = (struct pod_amount){a, na * 1000};
    if (b != NULL)
        dm.r[dm.n++] = (struct pod_amount){b, nb * 1000};
    return dm;
}

static void test_pool_of(void)
{
    struct policy *p = load();
    const struct policy_doc *d;
    struct pod_demand dm;

    if (p == NULL)
        return;
    d = &p->docs[0];
    CHECK(pool_of(d, "nvidia.com/gpu.shared") == 0);
    CHECK(pool_of(d, "nvidia.com/mig-1g.5gb") == 1);
    CHECK(pool_of(d, "example.com/gpu") == 2);
    CHECK(pool_of(d, "nvidia.com/gpu") == -1);
    dm = demand("nvidia.com/mig-3g.20gb", 2, NULL, 0);
    CHECK(pool_set(d, &dm) == 2u);
    dm = demand("nvidia.com/gpu.shared", 1, "nvidia.com/mig-1g.5gb", 1);
    CHECK(pool_set(d, &dm) == 3u);
    dm = demand("nvidia.com/gpu.shared", 0, "cpu", 1); /* none above 0, none of a pool */
    CHECK(pool_set(d, &dm) == 0u);
    policy_unref(p);
}

/* A resource belongs to the first pool that matches it: a narrow glob before a wider one
 * takes its resources, the wider one the rest. */
static void test_first_pool_wins(void)
{
    static const char two[] = "apiVersion: gpuadmit.io/v1alpha1\n"
                              "kind: GPUPolicy\n"
                              "metadata: {name: p}\n"
                              "spec:\n"
                              "  gpu:\n"
                              "    pools:\n"
                              "      - {name: small, resources: [\"nvidia.com/mig-1g.*\"]}\n"
                              "      - {name: other, resources: [\"nvidia.com/mig-*\"]}\n"
                              "  rules: []\n";
    struct rules_errors e = {0};
    struct policy *p = rules_load_buffer("two.yaml", two, sizeof(two) - 1, &e);

    CHECK(p != NULL);
    rules_errors_clear(&e);
    if (p == NULL)
        return;
    CHECK(pool_of(&p->docs[0], "nvidia.com/mig-1g.5gb") == 0);
    CHECK(pool_of(&p->docs[0], "nvidia.com/mig-3g.20gb") == 1);
    policy_unref(p);
}

static void test_taints_and_labels(void)
{
    struct policy *p = load();
    const struct policy_doc *d;
    struct taint t[4];
    struct node_label l[4];
    char names[64];

    if (p == NULL)
        return;
    d = &p->docs[0];
    CHECK(pool_taints(d, 1u, t, 4) == 1 && strcmp(t[0].key, "nvidia.com/gpu") == 0);
    /* the shared nvidia.com/gpu:NoSchedule once; another effect is another taint */
    CHECK(pool_taints(d, 7u, t, 4) == 3 && strcmp(t[1].key, "d") == 0 &&
          strcmp(t[2].effect, "NoExecute") == 0);
    CHECK(pool_taints(d, 7u, t, 2) == 3); /* max + 1: they do not fit */
    CHECK(pool_labels(d, 2u, l, 4) == 2 && strcmp(l[0].value, "A100") == 0);
    CHECK(pool_labels(d, 5u, l, 4) == 2); /* present=true once */
    CHECK(!pool_labels_clash(d, 5u));     /* t4 and any agree */
    CHECK(pool_labels_clash(d, 3u));      /* product Tesla-T4 against A100 */
    CHECK(!pool_labels_clash(d, 2u));
    pool_names(d, 2u, names, sizeof(names));
    CHECK(strcmp(names, "mig") == 0);
    pool_names(d, 3u, names, sizeof(names));
    CHECK(strcmp(names, "t4 and mig") == 0);
    pool_names(d, 7u, names, sizeof(names));
    CHECK(strcmp(names, "t4, mig and any") == 0);
    pool_names(d, 0u, names, sizeof(names));
    CHECK(names[0] == '\0');
    policy_unref(p);
}

int main(void)
{
    RUN(test_pool_of);
    RUN(test_first_pool_wins);
    RUN(test_taints_and_labels);
    TEST_MAIN_END("test_pool");
}
