/* Unit tests for policy.c: the names of the policy's vocabulary. */
#include "harness.h"
#include "policy/policy.h"

/* Every value has a name, no two share one, and out-of-range values have none. */
static void check_names(const char *(*name_of)(int), int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(name_of(i) != NULL && name_of(i)[0] != '\0');
        for (int k = 0; k < i; k++)
            CHECK(name_of(i) == NULL || name_of(k) == NULL || strcmp(name_of(i), name_of(k)) != 0);
    }
    CHECK(name_of(n) == NULL);
    CHECK(name_of(-1) == NULL);
}

static const char *type_name(int i)
{
    return policy_rule_type_name((enum rule_type)i);
}

static const char *enforcement_name(int i)
{
    return policy_enforcement_name((enum rule_enforcement)i);
}

static const char *stale_mode_name(int i)
{
    return policy_stale_mode_name((enum stale_mode)i);
}

static const char *finding_name(int i)
{
    return policy_finding_name((enum finding)i);
}

static const char *finding_text(int i)
{
    return policy_finding_text((enum finding)i);
}

static const char *outcome_name(int i)
{
    return policy_outcome_name((enum rule_outcome)i);
}

static void test_every_value_named_once(void)
{
    check_names(type_name, RULE_TYPES);
    check_names(enforcement_name, ENFORCEMENTS);
    check_names(stale_mode_name, STALE_MODES);
    check_names(finding_name, FINDINGS);
    check_names(finding_text, FINDINGS);
    check_names(outcome_name, OUTCOMES);
}

/* The names are what rule files, logs, traces and metrics have always said. */
static void test_names_as_written(void)
{
    CHECK_STR(policy_rule_type_name(RULE_GPU_REQUEST), "gpu-request");
    CHECK_STR(policy_rule_type_name(RULE_NODE_SELECTOR), "node-selector");
    CHECK_STR(policy_rule_type_name(RULE_CAPACITY), "capacity");
    CHECK_STR(policy_enforcement_name(ENFORCE_AUDIT), "Audit");
    CHECK_STR(policy_stale_mode_name(STALE_ALLOW), "Allow");
    CHECK_STR(policy_finding_name(FINDING_WOULD_WARN), "would_warn");
    CHECK_STR(policy_finding_text(FINDING_WOULD_WARN), "would warn");
    CHECK_STR(policy_finding_text(FINDING_PATCH), "patched");
    CHECK_STR(policy_outcome_name(OUTCOME_AUDIT), "audit");
}

/* Outcomes read back by name, in their order of strength. */
static void test_outcomes(void)
{
    for (int i = 0; i < OUTCOMES; i++)
        CHECK(policy_outcome_of(policy_outcome_name((enum rule_outcome)i)) == i);
    CHECK(policy_outcome_of("denied") == -1);
    CHECK(policy_outcome_of(NULL) == -1);
    CHECK(OUTCOME_SKIP < OUTCOME_PASS && OUTCOME_PASS < OUTCOME_PATCH &&
          OUTCOME_PATCH < OUTCOME_AUDIT && OUTCOME_AUDIT < OUTCOME_WARN &&
          OUTCOME_WARN < OUTCOME_DENY);
    CHECK(policy_finding_outcome(FINDING_WOULD_PATCH, ENFORCE_AUDIT) == OUTCOME_AUDIT);
    CHECK(policy_finding_outcome(FINDING_DENY, ENFORCE_ENFORCE) == OUTCOME_DENY);
    CHECK(policy_finding_outcome(FINDING_PATCH, ENFORCE_ENFORCE) == OUTCOME_PATCH);
    CHECK(policy_finding_outcome(FINDING_WOULD_DENY, ENFORCE_WARN) == OUTCOME_WARN);
    CHECK(policy_finding_outcome(FINDING_WARN, ENFORCE_ENFORCE) == OUTCOME_WARN);
}

int main(void)
{
    RUN(test_every_value_named_once);
    RUN(test_names_as_written);
    RUN(test_outcomes);
    TEST_MAIN_END("test_policy");
}
