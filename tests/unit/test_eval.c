/*
 * test_eval.c: the policy engine, table-driven. Each case is a policy file from
 * tests/data/policies, an endpoint, an object, and the expected decision and patch. Every patch
 * is then applied (by an applier written here, independent of patch.c) and the patched object is
 * judged again: /mutate must return no patch (idempotence) and /validate must allow it.
 */
#include <unistd.h>
#include <yyjson.h>

#include "cluster/cluster.h"
#include "policy/eval.h"
#include "harness.h"
#include "json.h"
#include "log.h"
#include "policy/rules.h"

#define POLICIES "tests/data/policies/"

#define js harness_json

static struct policy *load(const char *file)
{
    char path[256];
    const char *paths[1] = {path};
    struct rules_errors errs;
    struct policy *p;

    /* a bare name is a test policy; a path is the shipped policy or its examples */
    snprintf(path, sizeof(path), "%s%s", strchr(file, '/') ? "" : POLICIES, file);
    p = rules_load_files(paths, 1, &errs);
    if (p == NULL) {
        char buf[600];

        printf("cannot load %s: %s\n", path,
               errs.n ? diag_format(&errs.items[0], buf, sizeof(buf)) : "?");
        exit(2);
    }
    return p;
}

struct ecase {
    const char *name;
    const char *policy;
    bool mutating;
    bool audit_only;
    const char *ns;       /* default "ml" */
    const char *resource; /* "group/resource", default "/pods" */
    const char *op;       /* default CREATE */
    const char *object;
    const char *old_object;
    const char *user;
    const char *group;
    const char *view; /* a snapshot in tests/data/snapshots, or NULL for no cluster view */
    const char *sub;  /* request.subResource */
    int allowed;
    const char *patch;      /* expected operations, or NULL for none */
    const char *message;    /* substring of the denial */
    const char *warning;    /* substring of the first warning */
    const char *annotation; /* "key=substring" */
};

static struct review *make_review(const struct ecase *c, yyjson_val *object)
{
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *req, *root;
    yyjson_doc *old = c->old_object ? js(c->old_object) : NULL;
    char *text;
    size_t len = 0;
    const char *res = c->resource ? c->resource : "/pods";
    const char *slash = strchr(res, '/');
    char group[64];
    struct diag d;
    struct review *r;

    snprintf(group, sizeof(group), "%.*s", (int)(slash - res), res);
    req = json_pack(m,
                    "{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:[s]}, "
                    "s:V, s:V?, s:b, s:s*}",
                    "uid", "case-uid", "kind", "group", group, "version", "v1", "kind", "X",
                    "resource", "group", group, "version", "v1", "resource", slash + 1, "name", "",
                    "namespace", c->ns ? c->ns : "ml", "operation", c->op ? c->op : "CREATE",
                    "userInfo", "username", c->user ? c->user : "alice", "groups",
                    c->group ? c->group : "system:authenticated", "object", object, "oldObject",
                    old ? harness_val(old) : NULL, "dryRun", 0, "subResource", c->sub);
    root = json_pack(m, "{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                     "AdmissionReview", "request", req);
    text = root ? json_mut_write(root, &len) : NULL;
    diag_clear(&d);
    r = text ? review_decode(text, len, &d) : NULL;
    if (r == NULL)
        printf("review: %s\n", text ? d.msg : "cannot build it");
    free(text);
    yyjson_mut_doc_free(m);
    yyjson_doc_free(old);
    return r;
}

/* An RFC 6902 "add" applier, written from the RFC, for checking patches: value (copied) into
 * the mutable document doc. */
static int apply_add(yyjson_mut_doc *doc, const char *path, yyjson_mut_val *value)
{
    char tok[256];
    yyjson_mut_val *node = yyjson_mut_doc_get_root(doc), *copy;
    const char *p = path;

    for (;;) {
        size_t n = 0;
        const char *next;

        if (*p != '/')
            return -1;
        for (p++; *p && *p != '/'; p++) {
            if (*p == '~') {
                p++;
                tok[n++] = *p == '0' ? '~' : '/';
            } else {
                tok[n++] = *p;
            }
        }
        tok[n] = '\0';
        next = p;
        if (*next == '\0') {
            copy = yyjson_mut_val_mut_copy(doc, value);
            if (yyjson_mut_is_obj(node))
                return json_mut_set(doc, node, tok, copy);
            if (yyjson_mut_is_arr(node) && strcmp(tok, "-") == 0)
                return yyjson_mut_arr_append(node, copy) ? 0 : -1;
            return -1;
        }
        node = yyjson_mut_is_obj(node) ? yyjson_mut_obj_get(node, tok)
                                       : yyjson_mut_arr_get(node, strtoul(tok, NULL, 10));
        if (node == NULL)
            return -1; /* a missing parent: the apiserver would fail the patch */
    }
}

/* object with ops applied: a new document, or NULL when an operation does not apply. */
static yyjson_doc *apply_patch(yyjson_doc *object, yyjson_mut_val *ops)
{
    yyjson_mut_doc *m = yyjson_doc_mut_copy(object, NULL);
    yyjson_mut_val *op;
    yyjson_mut_arr_iter it;
    yyjson_doc *out = NULL;

    yyjson_mut_arr_iter_init(ops, &it);
    while ((op = yyjson_mut_arr_iter_next(&it)) != NULL) {
        if (!json_mut_str_is(yyjson_mut_obj_get(op, "op"), "add") ||
            apply_add(m, yyjson_mut_get_str(yyjson_mut_obj_get(op, "path")),
                      yyjson_mut_obj_get(op, "value")) < 0)
            goto out;
    }
    out = yyjson_mut_doc_imut_copy(m, NULL);
out:
    yyjson_mut_doc_free(m);
    return out;
}

static bool has_warning(const struct decision *dec, const char *want)
{
    yyjson_mut_val *w;
    yyjson_mut_arr_iter it;

    yyjson_mut_arr_iter_init(dec->warnings, &it);
    while ((w = yyjson_mut_arr_iter_next(&it)) != NULL) {
        if (strstr(yyjson_mut_get_str(w), want))
            return true;
    }
    return false;
}

/* The first warning, or NULL. */
static const char *first_warning(const struct decision *dec)
{
    return yyjson_mut_get_str(yyjson_mut_arr_get(dec->warnings, 0));
}

/* The annotation of key, or NULL. */
static const char *annotation(const struct decision *dec, const char *key)
{
    return yyjson_mut_get_str(yyjson_mut_obj_get(dec->annotations, key));
}

static void check_case(const struct ecase *c)
{
    struct policy *p = load(c->policy);
    struct cluster *view = harness_view(c->view);
    yyjson_doc *object = js(c->object), *patched = NULL;
    struct review *r = make_review(c, harness_val(object)), *r2 = NULL;
    struct decision dec, again;
    int failed_before = harness_failed;

    decision_init(&dec);
    decision_init(&again);
    CHECK(r != NULL);
    if (r == NULL)
        goto out;
    CHECK(eval_review(p, r, c->mutating, c->audit_only, view, &dec) == 0);
    CHECK(dec.allowed == (c->allowed != 0));
    if (c->message)
        CHECK_CONTAINS(dec.message, c->message);
    else
        CHECK(dec.message == NULL);
    if (c->warning)
        CHECK(has_warning(&dec, c->warning));
    else
        CHECK(yyjson_mut_arr_size(dec.warnings) == 0);
    if (c->annotation) {
        char key[64];
        const char *eq = strchr(c->annotation, '=');

        snprintf(key, sizeof(key), "%.*s", (int)(eq - c->annotation), c->annotation);
        CHECK_CONTAINS(annotation(&dec, key), eq + 1);
    }
    if (c->patch) {
        yyjson_doc *want = js(c->patch), *got = json_freeze(dec.patch);
        bool same = got != NULL && yyjson_equals(harness_val(want), harness_val(got));

        CHECK(same);
        if (!same) {
            char *text = json_mut_write(dec.patch, NULL);
            printf("  patch: %s\n", text ? text : "(none)");
            free(text);
        }
        yyjson_doc_free(want);
        yyjson_doc_free(got);
        /* the patch applies to the object as sent, and the result is settled */
        patched = apply_patch(object, dec.patch);
        CHECK(patched != NULL);
        if (patched != NULL) {
            struct ecase c2 = *c;

            r2 = make_review(&c2, harness_val(patched));
            CHECK(r2 != NULL && eval_review(p, r2, true, false, view, &again) == 0);
            CHECK(again.patch == NULL); /* idempotent */
            decision_release(&again);
            decision_init(&again);
            CHECK(r2 != NULL && eval_review(p, r2, false, false, view, &again) == 0);
            CHECK(again.allowed);
            if (!again.allowed)
                printf("  patched object denied: %s\n", again.message);
        }
    } else {
        CHECK(dec.patch == NULL);
    }
out:
    if (harness_failed != failed_before)
        printf("FAIL case \"%s\"\n", c->name);
    decision_release(&dec);
    decision_release(&again);
    review_free(r);
    review_free(r2);
    yyjson_doc_free(object);
    yyjson_doc_free(patched);
    policy_unref(p);
    cluster_free(view);
}

#define POD(spec)                                                                                  \
    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','labels':{'app':'t'}},'spec':" spec "}"
#define GPU_CONTAINER                                                                              \
    "{'name':'trainer','image':'x','resources':{'limits':{'nvidia.com/"                            \
    "gpu':'1'},'requests':{'nvidia.com/gpu':'1'}}}"
#define CPU_CONTAINER "{'name':'web','image':'x'}"
#define GPU_POD       POD("{'containers':[" GPU_CONTAINER "]}")
#define TOL           "{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoSchedule'}"
#define SETTLED_SPEC                                                                               \
    "'priorityClassName':'gpu-standard','priority':1000,'preemptionPolicy':'PreemptLowerPriority'" \
    ",'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'}"
#define SETTLED_POD POD("{'containers':[" GPU_CONTAINER "]," SETTLED_SPEC "}")
#define FULL_PATCH                                                                                 \
    "[{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"                       \
    "{'op':'add','path':'/spec/priority','value':1000},"                                           \
    "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"                 \
    "{'op':'add','path':'/spec/tolerations','value':[" TOL "]},"                                   \
    "{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]"

/* Pods that break exactly one rule. */
#define ONLY_GPU_REQUEST POD("{'containers':[" CPU_CONTAINER "],'runtimeClassName':'nvidia'}")
#define ONLY_CLASS                                                                                 \
    POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL                                    \
        "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}")
#define ONLY_TOLERATIONS                                                                           \
    POD("{'containers':[" GPU_CONTAINER                                                            \
        "],'priorityClassName':'gpu-standard','nodeSelector':{'nvidia.com/gpu.present':'true'}}")
#define ONLY_SELECTOR                                                                              \
    POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard','tolerations':[" TOL \
        "]}")

/* Each rule under each action and enforcement, at the endpoint that acts on it. */
#define PER_RULE(rule, pod, patch_ops, problem)                                                    \
    {.name = rule ": Mutate+Enforce patches at /mutate",                                           \
     .policy = "mutate.yaml",                                                                      \
     .mutating = true,                                                                             \
     .object = pod,                                                                                \
     .allowed = 1,                                                                                 \
     .patch = patch_ops,                                                                           \
     .annotation = rule "=patched: "},                                                             \
        {.name = rule ": Mutate+Enforce denies at /validate when unpatched",                       \
         .policy = "mutate.yaml",                                                                  \
         .object = pod,                                                                            \
         .allowed = 0,                                                                             \
         .message = "[" rule "] " problem},                                                        \
        {.name = rule ": Deny+Enforce denies at /validate",                                        \
         .policy = "deny.yaml",                                                                    \
         .object = pod,                                                                            \
         .allowed = 0,                                                                             \
         .message = "[" rule "] " problem},                                                        \
        {.name = rule ": Deny never patches at /mutate",                                           \
         .policy = "deny.yaml",                                                                    \
         .mutating = true,                                                                         \
         .object = pod,                                                                            \
         .allowed = 1},                                                                            \
        {.name = rule ": Mutate+Warn warns at /mutate",                                            \
         .policy = "warn.yaml",                                                                    \
         .mutating = true,                                                                         \
         .object = pod,                                                                            \
         .allowed = 1,                                                                             \
         .warning = "gpuadmit [" rule "]: would patch: " problem},                                 \
        {.name = rule ": Mutate+Warn is silent at /validate",                                      \
         .policy = "warn.yaml",                                                                    \
         .object = pod,                                                                            \
         .allowed = 1},                                                                            \
        {.name = rule ": Deny+Audit records at /validate",                                         \
         .policy = "audit-deny.yaml",                                                              \
         .object = pod,                                                                            \
         .allowed = 1,                                                                             \
         .annotation = rule "=would deny: " problem},                                              \
    {                                                                                              \
        .name = rule ": audit-only records the would-be patch", .policy = "mutate.yaml",           \
        .mutating = true, .audit_only = true, .object = pod, .allowed = 1,                         \
        .annotation = rule "=would patch: " problem                                                \
    }

#define TEMPLATE_SPEC(cls)                                                                         \
    "{'priorityClassName':'" cls "','tolerations':[{'key':'nvidia.com/gpu','operator':'Exists',"   \
    "'effect':'NoSchedule'}],'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"       \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"
#define RS(n, cls)                                                                                 \
    "{'metadata':{'name':'trainer'},'spec':{'replicas':" #n                                        \
    ",'template':{'spec':" TEMPLATE_SPEC(cls) "}}}"
#define RS_NAMED(name, n, cls)                                                                     \
    "{'metadata':{'name':'" name "'},'spec':{'replicas':" #n                                       \
    ",'template':{'spec':" TEMPLATE_SPEC(cls) "}}}"
/* ml/trainer of the capacity snapshots: replicas, strategy, template metadata, image */
#define DEP_SPEC(image)                                                                            \
    "{'priorityClassName':'gpu-standard','tolerations':[" TOL "],'nodeSelector':"                  \
    "{'nvidia.com/gpu.present':'true'},'containers':[{'name':'trainer','image':'" image "',"       \
    "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}"
#define DEP(n, strategy, tmeta, image)                                                             \
    "{'metadata':{'name':'trainer'},'spec':{'replicas':" #n ",'strategy':" strategy                \
    ",'template':{'metadata':" tmeta ",'spec':" DEP_SPEC(image) "}}}"
/* ... the same with more metadata (annotations, deletion) */
#define DEP_META(n, meta)                                                                          \
    "{'metadata':{'name':'trainer'," meta "},'spec':{'replicas':" #n ",'strategy':{},"             \
    "'template':{'metadata':{},'spec':" DEP_SPEC("trainer:1") "}}}"
/* kubectl rollout restart: an annotation on the pod template */
#define RESTARTED "{'annotations':{'kubectl.kubernetes.io/restartedAt':'2026-12-01T10:00:00Z'}}"
#define JOB(suspend, par, comp)                                                                    \
    "{'metadata':{'name':'j'},'spec':{'suspend':" suspend ",'parallelism':" #par                   \
    ",'completions':" #comp ",'template':{'spec':" TEMPLATE_SPEC("gpu-standard") "}}}"
#define CRON(par, gpus)                                                                            \
    "{'metadata':{'name':'cj'},'spec':{'schedule':'0 * * * *','jobTemplate':{'spec':"              \
    "{'parallelism':" #par ",'template':{'spec':{'priorityClassName':'gpu-standard',"              \
    "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"       \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'" gpus "'}}}]}}}}}}"

#define CRON_SUSPENDED(suspend, par, gpus)                                                         \
    "{'metadata':{'name':'cj'},'spec':{'suspend':" suspend                                         \
    ",'schedule':'0 * * * *','jobTemplate':"                                                       \
    "{'spec':{'parallelism':" #par ",'template':{'spec':{'priorityClassName':'gpu-standard',"      \
    "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'},'containers':"       \
    "[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'" gpus "'}}}]}}}}}}"

static const struct ecase cases[] = {
    PER_RULE("gpu-request", ONLY_GPU_REQUEST,
             "[{'op':'add','path':'/spec/containers/0/resources','value':{'limits':{'nvidia.com/"
             "gpu':'1'},'requests':{'nvidia.com/gpu':'1'}}},"
             "{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
             "{'op':'add','path':'/spec/priority','value':1000},"
             "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"
             "{'op':'add','path':'/spec/tolerations','value':[" TOL "]},"
             "{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]",
             "container \"web\" targets GPU nodes (runtimeClassName nvidia) but requests no "
             "nvidia.com/gpu"),
    PER_RULE("priority-class", ONLY_CLASS,
             "[{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
             "{'op':'add','path':'/spec/priority','value':1000},"
             "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'}]",
             "GPU pod has no priorityClassName"),
    PER_RULE("tolerations", ONLY_TOLERATIONS,
             "[{'op':'add','path':'/spec/tolerations','value':[" TOL "]}]",
             "GPU pod does not tolerate the GPU node taint nvidia.com/gpu:NoSchedule"),
    PER_RULE("node-selector", ONLY_SELECTOR,
             "[{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]",
             "GPU pod is not confined to GPU nodes; add nodeSelector nvidia.com/gpu.present=true"),
    /* ---- audit-only predicts enforcement ---- */
    {.name = "audit-only: a problem Mutate cannot patch is a would-be denial",
     .policy = "mutate.yaml",
     .mutating = true,
     .audit_only = true,
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[" TOL
                   "],'nodeSelector':{'nvidia.com/gpu.present':'false'}}"),
     .allowed = 1,
     .annotation = "node-selector=would deny: GPU pod is not confined to GPU nodes (its "
                   "nodeSelector names other nodes)"},
    {.name = "audit-only: later rules see the would-be patches of earlier ones (priority-class)",
     .policy = "mutate.yaml",
     .mutating = true,
     .audit_only = true,
     .object =
         POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1,
     .annotation = "priority-class=would patch: GPU pod has no priorityClassName"},
    {.name = "audit-only: later rules see the would-be patches of earlier ones (tolerations)",
     .policy = "mutate.yaml",
     .mutating = true,
     .audit_only = true,
     .object =
         POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1,
     .annotation = "tolerations=would patch: GPU pod does not tolerate"},
    {.name = "audit-only: too many GPUs is a would-be denial at /mutate too",
     .policy = "mutate.yaml",
     .mutating = true,
     .audit_only = true,
     .object = POD("{'containers':[{'name':'big','resources':{'limits':{'nvidia.com/"
                   "gpu':'9'}}}]," SETTLED_SPEC "}"),
     .allowed = 1,
     .annotation = "gpu-request=would deny: pod requests 9 nvidia.com/gpu"},
    {.name = "a template that carries spec.priority gets the class's value with the class",
     .policy = "mutate.yaml",
     .mutating = true,
     .resource = "apps/deployments",
     .object = "{'spec':{'template':{'spec':{'containers':[" GPU_CONTAINER
               "],'priority':0,'tolerations':[" TOL
               "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}}}}",
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/template/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/template/spec/priority','value':1000}]"},
    /* ---- the shipped policy and its examples ---- */
    {.name = "default policy: a GPU pod gets the class and toleration",
     .policy = "rules/default.yaml",
     .mutating = true,
     .object = GPU_POD,
     .allowed = 1,
     .patch =
         "[{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
         "{'op':'add','path':'/spec/priority','value':100000},"
         "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"
         "{'op':'add','path':'/spec/tolerations','value':[" TOL "]},"
         "{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]"},
    {.name = "default policy: the device plugin's own namespace is left alone",
     .policy = "rules/default.yaml",
     .ns = "gpu-operator",
     .object = POD(
         "{'containers':[{'name':'c','securityContext':{'privileged':true}}],'tolerations':[" TOL
         "]}"),
     .allowed = 1},
    {.name = "default policy: a CPU pod targeting GPU nodes is refused",
     .policy = "rules/default.yaml",
     .object =
         POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 0,
     .message = "[gpu-request] container \"web\" targets GPU nodes"},
    {.name = "EKS example: one time-slice per pod at most",
     .policy = "rules/examples/eks-time-sliced-t4.yaml",
     .object = POD(
         "{'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'2'}}}]," SETTLED_SPEC
         "}"),
     .allowed = 0,
     .message = "pod requests 2 nvidia.com/gpu, more than the maximum of 1 per pod"},
    {.name = "MIG example: a MIG pod is steered to MIG nodes",
     .policy = "rules/examples/mig-mixed.yaml",
     .mutating = true,
     .object =
         POD("{'containers':[{'name':'c','resources':{'limits':{'nvidia.com/"
             "mig-1g.5gb':'1'}}}],'priorityClassName':'gpu-standard','tolerations':[" TOL "]}"),
     .allowed = 1,
     .patch =
         "[{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/mig.strategy':'mixed'}}]"},
    {.name = "multi-tenant example: a team's pod gets its team's class",
     .policy = "rules/examples/multi-tenant.yaml",
     .mutating = true,
     .ns = "team-a-train",
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL "]}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/priorityClassName','value':'team-a-gpu'},"
              "{'op':'add','path':'/spec/priority','value':200000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'}]"},
    {.name = "multi-tenant example: another team's class is refused",
     .policy = "rules/examples/multi-tenant.yaml",
     .ns = "team-a-train",
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'team-b-gpu','tolerations':[" TOL "]}"),
     .allowed = 0,
     .message = "priorityClassName \"team-b-gpu\" is not allowed in namespace \"team-a-train\" "
                "(allowed: team-a-gpu, gpu-batch)"},
    {.name = "multi-tenant example: research is warned, not patched",
     .policy = "rules/examples/multi-tenant.yaml",
     .mutating = true,
     .ns = "research",
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL "]}"),
     .allowed = 1,
     .warning =
         "gpuadmit [priority-class-research]: would patch: GPU pod has no priorityClassName"},
    /* ---- exemptions ---- */
    {.name = "scope: a namespace outside match is not judged",
     .policy = "scoped.yaml",
     .ns = "web",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "scope: inside match it is",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .object = GPU_POD,
     .allowed = 0,
     .message = "[node-selector]"},
    {.name = "scope: an excluded group",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .group = "system:masters",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "scope: an excluded service account",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .user = "system:serviceaccount:ml-ops:trainer-bot",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "scope: another service account is judged",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .user = "system:serviceaccount:ml:trainer-bot",
     .object = GPU_POD,
     .allowed = 0,
     .message = "[node-selector]"},
    {.name = "scope: an excluded user",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .user = "admin@example.com",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "scope: an excluding label",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .object =
         "{'metadata':{'labels':{'gpuadmit.io/exempt':'true'}},'spec':{'containers':[" GPU_CONTAINER
         "]}}",
     .allowed = 1},
    {.name = "scope: a rule's own match (label In) takes it in",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .object = "{'metadata':{'labels':{'tier':'gpu'}},'spec':{'containers':[" GPU_CONTAINER
               "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}}",
     .allowed = 0,
     .message = "gpuadmit: pod in namespace ml-train [tolerations]"},
    {.name = "scope: a rule's own match leaves others out",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .object = "{'metadata':{'labels':{'tier':'cpu'}},'spec':{'containers':[" GPU_CONTAINER
               "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}}",
     .allowed = 1},
    {.name = "scope: a rule's own exclude",
     .policy = "scoped.yaml",
     .ns = "ml-sandbox",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "scope: DaemonSet pods by default",
     .policy = "scoped.yaml",
     .ns = "ml-train",
     .user = "system:serviceaccount:kube-system:daemon-set-controller",
     .object = "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'dcgm-exporter',"
               "'controller':true}]},'"
               "spec':{'containers':[" GPU_CONTAINER "]}}",
     .allowed = 1},
    /* ---- Mutate + Enforce ---- */
    {.name = "mutate: a bare GPU pod gets class, toleration and selector",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = GPU_POD,
     .allowed = 1,
     .patch = FULL_PATCH,
     .annotation = "tolerations=patched: added tolerations for nvidia.com/gpu:NoSchedule"},
    {.name = "mutate: a settled pod gets no patch",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = SETTLED_POD,
     .allowed = 1},
    {.name = "mutate: the bare pod is denied at /validate (the mutation did not happen)",
     .policy = "mutate.yaml",
     .object = GPU_POD,
     .allowed = 0,
     .message =
         "[tolerations] GPU pod does not tolerate the GPU node taint nvidia.com/gpu:NoSchedule"},
    {.name = "mutate: existing tolerations and selector are appended to, not replaced",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[{'key':'node.kubernetes.io/"
                   "not-ready','operator':'Exists','effect':'NoExecute','tolerationSeconds':300}],'"
                   "nodeSelector':{'zone':'a'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/tolerations/-','value':" TOL "},"
              "{'op':'add','path':'/spec/nodeSelector/nvidia.com~1gpu.present','value':'true'}]"},
    {.name = "mutate: a pod on GPU nodes without a GPU request gets one, then the rest",
     .policy = "mutate.yaml",
     .mutating = true,
     .object =
         POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/containers/0/resources','value':{'limits':{'nvidia.com/"
              "gpu':'1'},'requests':{'nvidia.com/gpu':'1'}}},"
              "{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/priority','value':1000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"
              "{'op':'add','path':'/spec/tolerations','value':[" TOL "]}]",
     .annotation = "gpu-request=added 1 nvidia.com/gpu to container \"web\""},
    {.name = "mutate: existing resource lists get the GPU key added",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[{'name':'web','resources':{'limits':{'cpu':'1'},'requests':{'"
                   "cpu':'1'}}}],'runtimeClassName':'nvidia'," SETTLED_SPEC "}"),
     .allowed = 1,
     .patch =
         "[{'op':'add','path':'/spec/containers/0/resources/limits/nvidia.com~1gpu','value':'1'},"
         "{'op':'add','path':'/spec/containers/0/resources/requests/"
         "nvidia.com~1gpu','value':'1'}]"},
    {.name = "mutate: a namespace default class",
     .policy = "mutate.yaml",
     .mutating = true,
     .ns = "team-a-prod",
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL
                   "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/priorityClassName','value':'team-a-gpu'},"
              "{'op':'add','path':'/spec/priority','value':2000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'}]"},
    {.name = "mutate: an unknown class cannot be patched and is denied at /validate",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .object =
         POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'nope','tolerations':[" TOL
             "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 0,
     .message = "[priority-class] priorityClassName \"nope\" is not a known PriorityClass"},
    {.name = "mutate: a class not allowed in the namespace is denied",
     .policy = "mutate.yaml",
     .ns = "team-a",
     .object =
         POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-batch','tolerations':[" TOL
             "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 0,
     .message = "priorityClassName \"gpu-batch\" is not allowed in namespace \"team-a\" (allowed: "
                "team-a-*)"},
    {.name = "mutate: a system class is always known",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'system-node-critical','tolerations':[" TOL
                   "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1},
    {.name = "mutate: a selector naming other nodes is a conflict, not overwritten",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[" TOL
                   "],'nodeSelector':{'nvidia.com/gpu.present':'false'}}"),
     .allowed = 0,
     .message = "[node-selector] GPU pod is not confined to GPU nodes (its nodeSelector names "
                "other nodes)"},
    {.name = "mutate: required node affinity on the GPU label confines the pod",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[" TOL
                   "],'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                   "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'nvidia.com/"
                   "gpu.present','operator':'In','values':['true']}]}]}}}}"),
     .allowed = 1},
    /* fuzz_bypass: In [true, false] lets the pod onto GPU nodes as surely as a second term */
    {.name = "validate: required node affinity naming the GPU label among others targets GPU nodes",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER
                   "],'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                   "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'nvidia.com/"
                   "gpu.present','operator':'In','values':['true','false']}]}]}}}}"),
     .allowed = 0,
     .message = "targets GPU nodes (required node affinity on GPU node labels) but requests no"},
    {.name = "mutate: a toleration with an empty key and Exists tolerates everything",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[{'operator':'Exists'}],'"
                   "nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1},
    {.name = "mutate: a toleration for another effect does not count",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER
                   "],'priorityClassName':'gpu-standard','tolerations':[{'key':'nvidia.com/"
                   "gpu','operator':'Exists','effect':'NoExecute'}],'nodeSelector':{'nvidia.com/"
                   "gpu.present':'true'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/tolerations/-','value':" TOL "}]"},
    {.name = "mutate: a CPU pod that does not target GPU nodes is left alone",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},
    /* a way around the device plugin, not a way to aim at GPU nodes: adding a GPU would not
     * make it safe, so it is refused, not patched */
    {.name = "mutate: NVIDIA_VISIBLE_DEVICES without a GPU request gets no GPU patched in",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[{'name':'sneaky','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value'"
                   ":'all'}]}]}"),
     .allowed = 1},
    {.name = "mutate: NVIDIA_VISIBLE_DEVICES without a GPU request is refused at /validate",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'sneaky','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value'"
                   ":'all'}]}]}"),
     .allowed = 0,
     .message = "[gpu-request] container \"sneaky\" sets NVIDIA_VISIBLE_DEVICES=\"all\", which the "
                "NVIDIA runtime honours around the device plugin"},
    {.name = "mutate: NVIDIA_VISIBLE_DEVICES=void asks for no GPU",
     .policy = "mutate.yaml",
     .object = POD(
         "{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':'void'}]}]}"),
     .allowed = 1},
    {.name = "mutate: a privileged container on GPU nodes without a GPU is denied",
     .policy = "mutate.yaml",
     .object = POD(
         "{'containers':[{'name':'root','securityContext':{'privileged':true}}],'tolerations':[" TOL
         "]}"),
     .allowed = 0,
     .message = "privileged container \"root\" can reach GPU devices"},
    {.name = "mutate: a privileged pod kept off GPU nodes by the taint is not judged",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'root','securityContext':{'privileged':true}}]}"),
     .allowed = 1},
    {.name = "mutate: a /dev/nvidia0 hostPath on GPU nodes without a GPU is denied",
     .policy = "mutate.yaml",
     .object =
         POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{'path':'/dev//"
             "nvidia0'}}],'nodeSelector':{'nvidia.com/"
             "gpu.present':'true'},'priorityClassName':'gpu-standard','tolerations':[" TOL "]}"),
     .allowed = 0,
     .message = "hostPath volume \"/dev//nvidia0\" exposes GPU device nodes"},
    {.name = "mutate: more GPUs than the maximum is denied",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'big','resources':{'limits':{'nvidia.com/"
                   "gpu':'9'}}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "pod requests 9 nvidia.com/gpu, more than the maximum of 8 per pod"},
    {.name = "mutate: a quantity that is not a number is denied with its field",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'one'}}}]}"),
     .allowed = 0,
     .message = "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: not a valid quantity"},
    {.name = "mutate: an excluded namespace is left alone",
     .policy = "mutate.yaml",
     .mutating = true,
     .ns = "kube-system",
     .object = GPU_POD,
     .allowed = 1},
    {.name = "mutate: DaemonSet pods are exempt",
     .policy = "mutate.yaml",
     .mutating = true,
     .user = "system:kube-controller-manager",
     .object = "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'nvidia-device-plugin',"
               "'controller':true}]"
               "},'spec':{'containers':[" GPU_CONTAINER "]}}",
     .allowed = 1},
    {.name = "mutate: mirror pods are exempt",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = "{'metadata':{'annotations':{'kubernetes.io/"
               "config.mirror':'x'}},'spec':{'containers':[" GPU_CONTAINER "]}}",
     .allowed = 1},
    {.name = "mutate: a Pod UPDATE is not judged",
     .policy = "mutate.yaml",
     .op = "UPDATE",
     .object = GPU_POD,
     .old_object = GPU_POD,
     .allowed = 1},
    /* ---- autogen ---- */
    {.name = "autogen: a Deployment's template is patched, without spec.priority",
     .policy = "mutate.yaml",
     .mutating = true,
     .resource = "apps/deployments",
     .object = "{'kind':'Deployment','spec':{'replicas':2,'template':{'metadata':{'labels':{'app':'"
               "t'}},'spec':{'containers':[" GPU_CONTAINER "]}}}}",
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/template/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/template/spec/tolerations','value':[" TOL "]},"
              "{'op':'add','path':'/spec/template/spec/nodeSelector','value':{'nvidia.com/"
              "gpu.present':'true'}}]"},
    {.name = "autogen: a CronJob's job template is patched",
     .policy = "mutate.yaml",
     .mutating = true,
     .resource = "batch/cronjobs",
     .object = "{'kind':'CronJob','spec':{'schedule':'* * * * "
               "*','jobTemplate':{'spec':{'template':{'spec':{'containers':[" GPU_CONTAINER
               "],'priorityClassName':'gpu-standard','nodeSelector':{'nvidia.com/"
               "gpu.present':'true'}}}}}}}",
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/jobTemplate/spec/template/spec/tolerations','value':[" TOL
              "]}]"},
    {.name = "autogen: a Job template is denied at apply time",
     .policy = "deny.yaml",
     .resource = "batch/jobs",
     .object = "{'kind':'Job','spec':{'template':{'spec':{'containers':[" GPU_CONTAINER
               "],'restartPolicy':'Never'}}}}",
     .allowed = 0,
     .message = "gpuadmit: Job in namespace ml [priority-class] GPU pod has no priorityClassName"},
    {.name = "autogen: a workload UPDATE that keeps the template is not judged",
     .policy = "deny.yaml",
     .resource = "apps/statefulsets",
     .op = "UPDATE",
     .object = "{'spec':{'replicas':3,'template':{'spec':{'containers':[" GPU_CONTAINER "]}}}}",
     .old_object = "{'spec':{'replicas':1,'template':{'spec':{'containers':[" GPU_CONTAINER "]}}}}",
     .allowed = 1},
    {.name = "autogen: a workload UPDATE that changes the template is judged",
     .policy = "deny.yaml",
     .resource = "apps/replicasets",
     .op = "UPDATE",
     .object = "{'spec':{'template':{'spec':{'containers':[" GPU_CONTAINER "]}}}}",
     .old_object = "{'spec':{'template':{'spec':{'containers':[" CPU_CONTAINER "]}}}}",
     .allowed = 0,
     .message = "[tolerations]"},
    /* fuzz_bypass: only the template's labels changed; they are part of the template */
    {.name = "autogen: a workload UPDATE that changes only the template's labels is judged",
     .policy = "deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = "{'spec':{'template':{'metadata':{'labels':{'app':'new'}},'spec':{'containers':"
               "[" GPU_CONTAINER "]}}}}",
     .old_object = "{'spec':{'template':{'metadata':{'labels':{'app':'old'}},'spec':{'containers':"
                   "[" GPU_CONTAINER "]}}}}",
     .allowed = 0,
     .message = "[tolerations]"},
    {.name = "autogen: DaemonSets are not judged",
     .policy = "deny.yaml",
     .resource = "apps/daemonsets",
     .object = "{'spec':{'template':{'spec':{'containers':[" GPU_CONTAINER "]}}}}",
     .allowed = 1},
    {.name = "scale subresource is not a pod rule",
     .policy = "deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = "{'spec':{'replicas':3}}",
     .allowed = 1},
    /* ---- Deny ---- */
    {.name = "deny: the bare GPU pod is denied with every reason",
     .policy = "deny.yaml",
     .object = GPU_POD,
     .allowed = 0,
     .message =
         "gpuadmit: pod ml/p [priority-class] GPU pod has no priorityClassName, so it cannot "
         "preempt anything; set spec.priorityClassName: gpu-standard; [tolerations]"},
    {.name = "deny: /mutate never patches for Deny rules",
     .policy = "deny.yaml",
     .mutating = true,
     .object = GPU_POD,
     .allowed = 1},
    {.name = "deny: the message names the container and what to add",
     .policy = "deny.yaml",
     .object = POD(
         "{'containers':[{'name':'trainer'}],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 0,
     .message =
         "container \"trainer\" targets GPU nodes (nodeSelector nvidia.com/gpu.present=true) "
         "but requests no nvidia.com/gpu; add resources.limits[\"nvidia.com/gpu\"]"},
    {.name = "deny: a settled pod is allowed",
     .policy = "deny.yaml",
     .object = SETTLED_POD,
     .allowed = 1},
    /* ---- Warn ---- */
    {.name = "warn: /mutate warns and does not patch",
     .policy = "warn.yaml",
     .mutating = true,
     .object = GPU_POD,
     .allowed = 1,
     .warning = "gpuadmit [tolerations]: would patch: GPU pod does not tolerate"},
    {.name = "warn: /validate leaves Mutate-Warn rules to /mutate",
     .policy = "warn.yaml",
     .object = GPU_POD,
     .allowed = 1},
    /* ---- Audit ---- */
    {.name = "audit: Deny-Audit rules annotate at /validate",
     .policy = "audit-deny.yaml",
     .object = GPU_POD,
     .allowed = 1,
     .annotation = "tolerations=would deny: GPU pod does not tolerate"},
    {.name = "audit-only flag: no patch, the would-be patch recorded",
     .policy = "mutate.yaml",
     .mutating = true,
     .audit_only = true,
     .object = GPU_POD,
     .allowed = 1,
     .annotation = "node-selector=would patch: GPU pod is not confined to GPU nodes"},
    {.name = "audit-only flag: no denial, the would-be denial recorded",
     .policy = "deny.yaml",
     .audit_only = true,
     .object = GPU_POD,
     .allowed = 1,
     .annotation = "priority-class=would deny: GPU pod has no priorityClassName"},
    /* ---- ways around the device plugin ---- */
    {.name = "a DaemonSet owner written by a user exempts nothing",
     .policy = "mutate.yaml",
     .object =
         "{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'any','controller':true}]},"
         "'spec':{'containers':[{'name':'c','securityContext':{'privileged':true}}],"
         "'tolerations':[{'operator':'Exists'}]}}",
     .allowed = 0,
     .message = "privileged container \"c\" can reach GPU devices"},
    {.name = "gpu-request listed last still patches first: one round of patches",
     .policy = "order.yaml",
     .mutating = true,
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/"
                   "gpu.present':'true'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/containers/0/resources','value':{'limits':{'nvidia.com/"
              "gpu':'1'},'requests':{'nvidia.com/gpu':'1'}}},"
              "{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/priority','value':1000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"
              "{'op':'add','path':'/spec/tolerations','value':[{'key':'nvidia.com/gpu',"
              "'operator':'Exists','effect':'NoSchedule'}]}]"},
    /* tolerating every taint is "run anywhere" (operators, node agents), not "aim at GPUs" */
    {.name = "a pod tolerating every taint, asking for no GPU, is not aimed at GPU nodes",
     .policy = "mutate.yaml",
     .mutating = true,
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "the same on /validate",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "kubectl debug node/ on a node the view knows has no GPU",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'cpu-0','hostPID':true,"
                   "'tolerations':[{'operator':'Exists'}],'volumes':[{'name':'host-root',"
                   "'hostPath':{'path':'/'}}]}"),
     .allowed = 1},
    {.name = "kubectl debug node/ on a GPU node reaches its devices",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'gpu-1','hostPID':true,"
                   "'tolerations':[{'operator':'Exists'}],'volumes':[{'name':'host-root',"
                   "'hostPath':{'path':'/'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/\" exposes GPU device nodes"},
    {.name = "kubectl debug node/ on a node the view has not seen is judged as a GPU node",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'new-node','tolerations':[{"
                   "'operator':'Exists'}],'volumes':[{'name':'r','hostPath':{'path':'/'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/\" exposes GPU device nodes"},
    {.name = "kubectl debug node/ without a cluster view is judged as a GPU node",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'cpu-0','tolerations':[{"
                   "'operator':'Exists'}],'volumes':[{'name':'r','hostPath':{'path':'/'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/\" exposes GPU device nodes"},
    {.name = "tolerating every taint still reaches GPU nodes: a privileged container is denied",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'agent','securityContext':{'privileged':true}}],"
                   "'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "privileged container \"agent\" can reach GPU devices"},
    {.name = "an Equal toleration of the GPU taint reaches GPU nodes",
     .policy = "mutate.yaml",
     .object = POD(
         "{'containers':[{'name':'c','securityContext':{'privileged':true}}],'tolerations':"
         "[{'key':'nvidia.com/gpu','operator':'Equal','value':'present','effect':'NoSchedule'}]}"),
     .allowed = 0,
     .message = "privileged container \"c\" can reach GPU devices"},
    {.name = "nodeName bypasses taints, so it reaches GPU nodes",
     .policy = "mutate.yaml",
     .object =
         POD("{'containers':[{'name':'c','securityContext':{'privileged':true}}],'nodeName':'g1'}"),
     .allowed = 0,
     .message = "privileged container \"c\" can reach GPU devices"},
    {.name = "/dev/./nvidia0 is /dev/nvidia0",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{'path':"
                   "'/dev/./nvidia0'}}],'nodeName':'n'}"),
     .allowed = 0,
     .message = "hostPath volume \"/dev/./nvidia0\" exposes GPU device nodes"},
    {.name = "a driver root's dev directory exposes devices",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{'path':"
                   "'/run/nvidia/driver/dev/'}}],'nodeName':'n'}"),
     .allowed = 0,
     .message = "exposes GPU device nodes"},
    {.name = "/dev/dri exposes devices",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{'path':"
                   "'/dev/dri'}}],'nodeName':'n'}"),
     .allowed = 0,
     .message = "exposes GPU device nodes"},
    {.name = "/var/log is harmless",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{'path':"
                   "'/var/log'}}],'nodeName':'n'}"),
     .allowed = 1},
    {.name = "envFrom on a pod that reaches GPU nodes may hide NVIDIA_VISIBLE_DEVICES",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'configMapRef':{'name':'x'}}]}],"
                   "'nodeName':'n'}"),
     .allowed = 0,
     .message = "takes its environment from envFrom"},
    {.name = "envFrom on a pod kept off GPU nodes is fine",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'configMapRef':{'name':'x'}}]}]}"),
     .allowed = 1},

    /* ---- GPU access per container (issue: a pod that requests one GPU took them all) ---- */
    {.name = "per container: a MIG request does not cover a sibling's NVIDIA_VISIBLE_DEVICES",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'legit','resources':{'limits':{'nvidia.com/mig-1g.5gb':"
                   "'1'}}},{'name':'grab-env','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':"
                   "'all'}]},{'name':'grab-priv','securityContext':{'privileged':true},"
                   "'volumeMounts':[{'name':'dev','mountPath':'/dev'}]}],'volumes':[{'name':'dev',"
                   "'hostPath':{'path':'/dev'}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "[gpu-request] container \"grab-env\" sets NVIDIA_VISIBLE_DEVICES=\"all\", which "
                "the NVIDIA runtime honours around the device plugin (it can expose every GPU of "
                "the node); remove the variable (or set it to void), and request "
                "resources.limits[\"nvidia.com/gpu\"] where the container needs a GPU; privileged "
                "container \"grab-priv\" can reach GPU devices (a privileged container sees all "
                "of the node's /dev, whatever it requests) and the pod can reach GPU nodes (it "
                "requests nvidia.com/mig-1g.5gb); drop securityContext.privileged and add only "
                "the capabilities it needs; hostPath volume \"/dev\" exposes GPU device nodes"},
    {.name = "per container: the same pod is not patched at /mutate into looking settled",
     .policy = "rules/default.yaml",
     .mutating = true,
     .object = POD("{'containers':[{'name':'legit','resources':{'limits':{'nvidia.com/gpu':'1'}}},"
                   "{'name':'grab','securityContext':{'privileged':true}}]," SETTLED_SPEC "}"),
     .allowed = 1},
    {.name = "per container: a GPU container that is itself privileged is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'t','securityContext':{'privileged':true},'resources':"
                   "{'limits':{'nvidia.com/gpu':'1'}}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "privileged container \"t\" can reach GPU devices"},
    {.name = "per container: a GPU container that sets NVIDIA_VISIBLE_DEVICES itself is refused",
     .policy = "rules/default.yaml",
     .object = POD(
         "{'containers':[{'name':'t','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':"
         "'0,1,2,3'}],'resources':{'limits':{'nvidia.com/gpu.shared':'1'}}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "container \"t\" sets NVIDIA_VISIBLE_DEVICES=\"0,1,2,3\""},
    {.name = "per container: envFrom beside a GPU request may set NVIDIA_VISIBLE_DEVICES",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'side','envFrom':[{'configMapRef':"
                   "{'name':'x'}}]}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "container \"side\" can reach GPU nodes (it requests nvidia.com/gpu) and takes its "
                "environment from envFrom"},
    {.name = "per container: envFrom with a prefix cannot set NVIDIA_VISIBLE_DEVICES",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'side','envFrom':[{'prefix':'APP_',"
                   "'configMapRef':{'name':'x'}}]}]," SETTLED_SPEC "}"),
     .allowed = 1},
    {.name = "per container: a prefix NVIDIA_VISIBLE_DEVICES starts with is no protection",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'side','envFrom':[{'prefix':'NVIDIA_',"
                   "'configMapRef':{'name':'x'}}]}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "takes its environment from envFrom"},
    {.name = "per container: a GPU request only in an init container opens nothing for the app",
     .policy = "rules/default.yaml",
     .object = POD(
         "{'initContainers':[{'name':'warm','resources':{'limits':{'nvidia.com/gpu':'1'}}}"
         "],'containers':[{'name':'app','securityContext':{'privileged':true}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "privileged container \"app\" can reach GPU devices"},
    {.name = "per container: a privileged init container of a GPU pod is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'initContainers':[{'name':'setup','securityContext':{'privileged':true}}],"
                   "'containers':[" GPU_CONTAINER "]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "privileged container \"setup\" can reach GPU devices"},
    /* "" is no device to the runtime (cuda_image.go: "unset or empty or void"): it can only
     * narrow what the device plugin allocated, like void and none */
    {.name = "per container: NVIDIA_VISIBLE_DEVICES=\"\" asks for no GPU, like void",
     .policy = "rules/default.yaml",
     .object =
         POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':''}]}"
             "]}"),
     .allowed = 1},
    {.name = "per container: NVIDIA_VISIBLE_DEVICES without a value is the empty string",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES'}]}]}"),
     .allowed = 1},
    {.name = "per container: NVIDIA_VISIBLE_DEVICES=\"\" beside a GPU request narrows, fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'c','env':[{'name':"
                   "'NVIDIA_VISIBLE_DEVICES','value':''}]}]," SETTLED_SPEC "}"),
     .allowed = 1},
    {.name = "per container: NVIDIA_VISIBLE_DEVICES=\"all,\" still names GPUs and is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES',"
                   "'value':'all,'}]}]}"),
     .allowed = 0,
     .message = "container \"c\" sets NVIDIA_VISIBLE_DEVICES=\"all,\", which"},
    {.name =
         "per container: NVIDIA_VISIBLE_DEVICES=\"void\\u0000all\" is refused, shown with its NUL",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES',"
                   "'value':'void\\u0000all'}]}]}"),
     .allowed = 0,
     .message = "container \"c\" sets NVIDIA_VISIBLE_DEVICES=\"void\\u0000all\", which"},
    {.name = "per container: a long NVIDIA_VISIBLE_DEVICES is shown cut between characters",
     .policy = "rules/default.yaml",
     .object =
         POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES',"
             "'value':'all,"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9\xc3\xa9'}]}]}"),
     .allowed = 0,
     .message = "NVIDIA_VISIBLE_DEVICES=\"all,"
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\", which"},
    {.name = "per container: NVIDIA_VISIBLE_DEVICES from valueFrom is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES','valueFrom':"
                   "{'fieldRef':{'fieldPath':'metadata.name'}}}]}]}"),
     .allowed = 0,
     .message = "container \"c\" sets NVIDIA_VISIBLE_DEVICES from valueFrom"},
    {.name = "per container: NVIDIA_VISIBLE_DEVICES=none beside a GPU request is fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'c','env':[{'name':"
                   "'NVIDIA_VISIBLE_DEVICES','value':'none'}]}]," SETTLED_SPEC "}"),
     .allowed = 1},
    {.name = "per container: a plain sidecar beside a GPU container is fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER "," CPU_CONTAINER "]," SETTLED_SPEC "}"),
     .allowed = 1},
    {.name = "per container: a privileged CPU pod kept off GPU nodes stays fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'root','securityContext':{'privileged':true}}]}"),
     .allowed = 1},

    /* ---- what operators need is not refused ---- */
    {.name = "operators: the device plugin's DaemonSet pod, privileged with host paths, is exempt",
     .policy = "rules/default.yaml",
     .ns = "monitoring",
     .user = "system:serviceaccount:kube-system:daemon-set-controller",
     .object = "{'metadata':{'name':'nvidia-device-plugin-x','ownerReferences':[{'apiVersion':"
               "'apps/v1','kind':'DaemonSet','name':'nvidia-device-plugin','uid':'u','controller':"
               "true}]},'spec':{'tolerations':[{'operator':'Exists'}],'containers':[{'name':"
               "'plugin','securityContext':{'privileged':true},'env':[{'name':"
               "'NVIDIA_VISIBLE_DEVICES','value':'all'}]}],'volumes':[{'name':'dp','hostPath':"
               "{'path':'/var/lib/kubelet/device-plugins'}},{'name':'dev','hostPath':{'path':"
               "'/dev'}}]}}",
     .allowed = 1},
    {.name = "operators: DCGM exporter in the GPU Operator's namespace is exempt",
     .policy = "rules/default.yaml",
     .ns = "gpu-operator",
     .object = POD("{'nodeName':'gpu-0','containers':[{'name':'dcgm','securityContext':{"
                   "'privileged':true},'env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':'all'}]}]}"),
     .allowed = 1},
    {.name = "operators: kubectl debug node/ of a GPU node in kube-system is exempt",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .ns = "kube-system",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'gpu-1','hostPID':true,"
                   "'tolerations':[{'operator':'Exists'}],'volumes':[{'name':'host-root',"
                   "'hostPath':{'path':'/'}}]}"),
     .allowed = 1},
    {.name = "operators: kubectl debug --profile=sysadmin on a GPU node by an exempt group",
     .policy = "debug-exempt.yaml",
     .view = "stall.json",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .group = "system:masters",
     .object = POD("{'nodeName':'gpu-1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','securityContext':{'privileged':true}}]}"),
     .old_object = POD("{'nodeName':'gpu-1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "operators: the same by anyone else is refused",
     .policy = "debug-exempt.yaml",
     .view = "stall.json",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'gpu-1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','securityContext':{'privileged':true}}]}"),
     .old_object = POD("{'nodeName':'gpu-1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "privileged ephemeral container \"dbg\" can reach every GPU of the node"},
    {.name = "operators: a CPU pod pinned to the CPU node with host paths is fine",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'nodeName':'cpu-0','containers':[{'name':'c','securityContext':{"
                   "'privileged':true},'envFrom':[{'configMapRef':{'name':'x'}}]}],'volumes':[{"
                   "'name':'r','hostPath':{'path':'/'}}]}"),
     .allowed = 1},

    /* ---- host paths as the host resolves them ---- */
    {.name = "host path: /proc/1/root is the host's /",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/proc/1/root'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/proc/1/root\" exposes GPU device nodes"},
    {.name = "host path: /proc/self/cwd/ is a process's view of the host too",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/proc/self/cwd/'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/proc/self/cwd/\" exposes GPU device nodes"},
    {.name = "host path: /var/run/nvidia/driver is /run/nvidia/driver",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/var/run/nvidia/driver'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/var/run/nvidia/driver\" exposes GPU device nodes"},
    /* ---- a legacy CUDA image gets every GPU without NVIDIA_VISIBLE_DEVICES ---- */
    {.name = "legacy CUDA: a user-set CUDA_VERSION beside a GPU request is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'side','env':[{'name':'CUDA_VERSION',"
                   "'value':'12.2'}]}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "[gpu-request] container \"side\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so "
                "that the NVIDIA runtime takes it for a legacy CUDA image, which gets every GPU of "
                "the node without NVIDIA_VISIBLE_DEVICES, and the pod can reach GPU nodes (it "
                "requests nvidia.com/gpu); remove CUDA_VERSION (or set NVIDIA_REQUIRE_CUDA, e.g. "
                "cuda>=12.0), or set NVIDIA_VISIBLE_DEVICES=void in that container"},
    {.name = "legacy CUDA: CUDA_VERSION with an empty NVIDIA_REQUIRE_CUDA, tolerating all",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'CUDA_VERSION','value':'11.0'},"
                   "{'name':'NVIDIA_REQUIRE_CUDA','value':''}]}],'tolerations':[{'operator':"
                   "'Exists'}]}"),
     .allowed = 0,
     .message = "container \"c\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so that"},
    {.name = "legacy CUDA: an empty NVIDIA_REQUIRE_CUDA over the image's CUDA_VERSION",
     .policy = "rules/default.yaml",
     .object = POD("{'initContainers':[{'name':'i','env':[{'name':'NVIDIA_REQUIRE_CUDA'}]}],"
                   "'containers':[" CPU_CONTAINER "],'nodeName':'n'}"),
     .allowed = 0,
     .message = "container \"i\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so that"},
    {.name = "legacy CUDA: CUDA_VERSION with NVIDIA_VISIBLE_DEVICES=void is safe",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'CUDA_VERSION','value':'12.2'},"
                   "{'name':'NVIDIA_VISIBLE_DEVICES','value':'void'}]}],'tolerations':[{"
                   "'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "legacy CUDA: CUDA_VERSION with a NVIDIA_REQUIRE_CUDA is not legacy",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'CUDA_VERSION','value':'12.2'},"
                   "{'name':'NVIDIA_REQUIRE_CUDA','value':'cuda>=12.2'}]}],'tolerations':[{"
                   "'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "legacy CUDA: NVIDIA_REQUIRE_CUDA from valueFrom may be empty",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'CUDA_VERSION','value':'12.2'},"
                   "{'name':'NVIDIA_REQUIRE_CUDA','valueFrom':{'configMapKeyRef':{'name':'g',"
                   "'key':'k'}}}]}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "container \"c\" sets CUDA_VERSION or NVIDIA_REQUIRE_CUDA so that"},
    {.name = "legacy CUDA: CUDA_VERSION in a pod kept off GPU nodes is fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','env':[{'name':'CUDA_VERSION','value':'12.2'}]}]}"),
     .allowed = 1},
    {.name = "legacy CUDA: an envFrom prefix CUDA_ may set CUDA_VERSION",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'prefix':'CUDA_','configMapRef':{"
                   "'name':'x'}}]}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "takes its environment from envFrom, which may set NVIDIA_VISIBLE_DEVICES or "
                "CUDA_VERSION unseen"},
    {.name = "legacy CUDA: an envFrom prefix NVIDIA_REQUIRE_ may set NVIDIA_REQUIRE_CUDA",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'prefix':'NVIDIA_REQUIRE_',"
                   "'configMapRef':{'name':'x'}}]}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "takes its environment from envFrom"},
    {.name = "legacy CUDA: an envFrom prefix APP_ is safe",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'prefix':'APP_','configMapRef':{"
                   "'name':'x'}}]}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "denyEnvFrom: false lets envFrom without a prefix through",
     .policy = "env-from-allowed.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'configMapRef':{'name':'x'}}]}],"
                   "'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "denyEnvFrom: false still refuses NVIDIA_VISIBLE_DEVICES and privileged",
     .policy = "env-from-allowed.yaml",
     .object = POD("{'containers':[{'name':'c','envFrom':[{'configMapRef':{'name':'x'}}],"
                   "'env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':'all'}],'securityContext':{"
                   "'privileged':true}}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "[gpu-request] container \"c\" sets NVIDIA_VISIBLE_DEVICES=\"all\", which the "
                "NVIDIA runtime honours around the device plugin (it can expose every GPU of the "
                "node); remove the variable (or set it to void), and request "
                "resources.limits[\"nvidia.com/gpu\"] where the container needs a GPU; "
                "privileged container \"c\" can reach GPU devices"},
    {.name = "denyEnvFrom: false lets a debug container's envFrom through",
     .policy = "env-from-allowed.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','envFrom':[{'secretRef':{'name':'s'}}]}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "legacy CUDA: a debug container with CUDA_VERSION is refused",
     .policy = "deny.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','env':[{'name':'CUDA_VERSION','value':'12.2'}]}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "ephemeral container \"dbg\" sets NVIDIA_VISIBLE_DEVICES in effect "
                "(CUDA_VERSION without NVIDIA_REQUIRE_CUDA makes a legacy CUDA image, which gets "
                "\"all\")"},
    /* ---- the runtime hook's volume-mount device list ---- */
    {.name = "device list: /dev/null mounted under /var/run/nvidia-container-devices is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'side','volumeMounts':[{'name':'n',"
                   "'mountPath':'/var/run/nvidia-container-devices/all'}]}],'volumes':[{'name':"
                   "'n','hostPath':{'path':'/dev/null'}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "[gpu-request] container \"side\" mounts a volume at "
                "/var/run/nvidia-container-devices/all, where the NVIDIA runtime hook reads the "
                "devices to hand over (a volume-mount device list, around the device plugin), "
                "and the pod can reach GPU nodes (it requests nvidia.com/gpu); mount it "
                "elsewhere; hostPath volume /dev/null is the device plugin's placeholder"},
    {.name = "device list: any volume under /run/nvidia-container-devices, normalised",
     .policy = "rules/default.yaml",
     .object = POD("{'initContainers':[{'name':'i','volumeMounts':[{'name':'e','mountPath':"
                   "'/run//x/../nvidia-container-devices/./GPU-0'}]}],'containers':[" CPU_CONTAINER
                   "],'volumes':[{'name':'e','emptyDir':{}}],'tolerations':[{"
                   "'operator':'Exists'}]}"),
     .allowed = 0,
     .message = "container \"i\" mounts a volume at /run//x/../nvidia-container-devices/./GPU-0"},
    {.name = "device list: hostPath /dev/null alone, pinned to a node, is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'n','volumes':[{'name':'n',"
                   "'hostPath':{'path':'/dev//null'}}]}"),
     .allowed = 0,
     .message = "hostPath volume /dev/null is the device plugin's placeholder"},
    {.name = "device list: a similar folder name is fine",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','volumeMounts':[{'name':'e','mountPath':"
                   "'/var/run/nvidia-container-devices-x/all'}]}],'volumes':[{'name':'e',"
                   "'emptyDir':{}}],'tolerations':[{'operator':'Exists'}]}"),
     .allowed = 1},
    {.name = "device list: kept off GPU nodes, a mount there is not judged",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[{'name':'c','volumeMounts':[{'name':'e','mountPath':"
                   "'/var/run/nvidia-container-devices/all'}]}],'volumes':[{'name':'e',"
                   "'emptyDir':{}}]}"),
     .allowed = 1},
    /* ---- container runtime sockets ---- */
    {.name = "runtime socket: /var/run/docker.sock in a pod that tolerates every taint",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'s','hostPath':{'path':'/var/run/docker.sock'}}]}"),
     .allowed = 0,
     .message = "[gpu-request] hostPath volume \"/var/run/docker.sock\" reaches the container "
                "runtime's socket, through which a container can start a privileged container "
                "with every GPU of the node, and the pod can reach GPU nodes (tolerates every "
                "taint); remove the volume"},
    {.name = "runtime socket: containerd's folder beside a GPU request",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER "],'volumes':[{'name':'s','hostPath':{'path':"
                   "'/var/run/containerd/'}}]," SETTLED_SPEC "}"),
     .allowed = 0,
     .message = "hostPath volume \"/var/run/containerd/\" reaches the container runtime's"},
    {.name = "runtime socket: CRI-O's socket, normalised",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeName':'n','volumes':[{'name':'s',"
                   "'hostPath':{'path':'/run/./crio//crio.sock'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/run/./crio//crio.sock\" reaches the container runtime's"},
    {.name = "runtime socket: kept off GPU nodes, not judged",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'s','hostPath':{'path':"
                   "'/run/containerd/containerd.sock'}}]}"),
     .allowed = 1},
    {.name = "host path: /dev/char/195:0 is /dev/nvidia0",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/dev/char/195:0'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/dev/char/195:0\" exposes GPU device nodes"},
    {.name = "host path: /dev/block links devices by number too",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/dev/block'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/dev/block\" exposes GPU device nodes"},
    {.name = "host path: /var/run holds the driver root",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/var/run/'}}]}"),
     .allowed = 0,
     .message = "hostPath volume \"/var/run/\" exposes GPU device nodes"},
    {.name = "host path: a socket under /var/run is harmless",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/var/run/app/app.sock'}}]}"),
     .allowed = 1},
    {.name = "host path: /proc/sys entries are not a process's root",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'tolerations':[{'operator':'Exists'}],"
                   "'volumes':[{'name':'h','hostPath':{'path':'/proc/sys/net'}}]}"),
     .allowed = 1},

    /* ---- nodeName: pinned to a known GPU node, the pod targets it ---- */
    {.name = "nodeName on a GPU node the view knows targets it",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'nodeName':'gpu-0','containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message =
         "[gpu-request] container \"web\" targets GPU nodes (nodeName gpu-0, a GPU node) but "
         "requests no nvidia.com/gpu; add resources.limits[\"nvidia.com/gpu\"]"},
    {.name = "a matchFields affinity on a GPU node the view knows targets it",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                   "{'nodeSelectorTerms':[{'matchFields':[{'key':'metadata.name','operator':'In',"
                   "'values':['gpu-2']}]}]}}},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "targets GPU nodes (node affinity on node gpu-2, a GPU node)"},
    {.name = "nodeName on a CPU node the view knows is fine",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'nodeName':'cpu-0','containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "nodeName without a view cannot be said to target a GPU node",
     .policy = "rules/default.yaml",
     .object = POD("{'nodeName':'gpu-0','containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},

    /* ---- tolerating every taint and steered by selector onto GPU nodes of the view ---- */
    {.name = "every taint tolerated and a hostname nodeSelector on a GPU node targets it",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'tolerations':[{'operator':'Exists'}],'nodeSelector':{'kubernetes.io/"
                   "hostname':'gpu-0'},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "[gpu-request] container \"web\" targets GPU nodes (it tolerates every taint, "
                "and its nodeSelector and node affinity match only GPU nodes (1 of the cluster)) "
                "but requests no nvidia.com/gpu; add resources.limits[\"nvidia.com/gpu\"]"},
    {.name = "every NoSchedule taint tolerated and a required hostname affinity targets GPU nodes",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object =
         POD("{'tolerations':[{'operator':'Exists','effect':'NoSchedule'}],'affinity':{"
             "'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
             "'nodeSelectorTerms':[{'matchExpressions':[{'key':'kubernetes.io/hostname',"
             "'operator':'In','values':['gpu-0','gpu-3']}]}]}}},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "match only GPU nodes (2 of the cluster)) but requests no nvidia.com/gpu"},
    {.name = "a Deployment template that tolerates every taint and is steered onto a GPU node",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .object = "{'spec':{'template':{'spec':{'tolerations':[{'operator':'Exists'}],'nodeSelector':"
               "{'kubernetes.io/hostname':'gpu-1'},'containers':[" CPU_CONTAINER "]}}}}",
     .allowed = 0,
     .message = "targets GPU nodes (it tolerates every taint"},
    {.name = "a pod UPDATE that adds a toleration of every taint to a pod steered onto a GPU node",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .op = "UPDATE",
     .object = POD("{'tolerations':[{'operator':'Exists'}],'nodeSelector':{'kubernetes.io/"
                   "hostname':'gpu-2'},'containers':[" CPU_CONTAINER "]}"),
     .old_object = POD(
         "{'nodeSelector':{'kubernetes.io/hostname':'gpu-2'},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "targets GPU nodes (it tolerates every taint"},
    {.name = "every taint tolerated, a selector that also matches a CPU node does not target",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'tolerations':[{'operator':'Exists'}],'affinity':{'nodeAffinity':{"
                   "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{"
                   "'matchExpressions':[{'key':'kubernetes.io/hostname','operator':'In',"
                   "'values':['gpu-0','cpu-0']}]}]}}},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},
    {.name =
         "a hostname nodeSelector on a GPU node without the toleration is kept off by the taint",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .object = POD("{'nodeSelector':{'kubernetes.io/hostname':'gpu-0'},'containers':[" CPU_CONTAINER
                   "]}"),
     .allowed = 1},
    {.name = "every taint tolerated and a GPU-node selector without a view is not judged by it",
     .policy = "rules/default.yaml",
     .object = POD("{'tolerations':[{'operator':'Exists'}],'nodeSelector':{'kubernetes.io/"
                   "hostname':'gpu-0'},'containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},

    /* ---- runtime classes are globs; CDI annotations are GPU access ---- */
    {.name = "runtimeClassName nvidia-cdi targets GPU nodes, and the CDI annotation is refused",
     .policy = "rules/default.yaml",
     .object = "{'metadata':{'name':'p','annotations':{'cdi.k8s.io/gpu':'nvidia.com/gpu=all'}},"
               "'spec':{'runtimeClassName':'nvidia-cdi','tolerations':[{'operator':'Exists'}],"
               "'containers':[" CPU_CONTAINER "]}}",
     .allowed = 0,
     .message = "[gpu-request] container \"web\" targets GPU nodes (runtimeClassName nvidia-cdi) "
                "but requests no nvidia.com/gpu; add resources.limits[\"nvidia.com/gpu\"]; "
                "annotation cdi.k8s.io/gpu: nvidia.com/gpu=all asks the container runtime for "
                "NVIDIA devices around the device plugin, and the pod can reach GPU nodes "
                "(runtimeClassName nvidia-cdi); remove it"},
    {.name = "a CDI annotation beside a GPU request is refused too",
     .policy = "rules/default.yaml",
     .object = "{'metadata':{'name':'p','annotations':{'cdi.k8s.io/x':'k8s.device-plugin.nvidia."
               "com/gpu=GPU-1'}},'spec':{'containers':[" GPU_CONTAINER "]," SETTLED_SPEC "}}",
     .allowed = 0,
     .message = "annotation cdi.k8s.io/x: k8s.device-plugin.nvidia.com/gpu=GPU-1 asks the "
                "container runtime for NVIDIA devices"},
    {.name = "a CDI annotation for another vendor's device is not GPU access",
     .policy = "rules/default.yaml",
     .object = "{'metadata':{'name':'p','annotations':{'cdi.k8s.io/x':'vendor.example/net=eth1'}},"
               "'spec':{'containers':[" GPU_CONTAINER "]," SETTLED_SPEC "}}",
     .allowed = 1},

    /* ---- GPUs through Dynamic Resource Allocation ---- */
    {.name = "DRA: a container's claim is its GPU request",
     .policy = "rules/default.yaml",
     .object = POD("{'tolerations':[" TOL "],'resourceClaims':[{'name':'gpu',"
                   "'resourceClaimTemplateName':'single-gpu'}],'containers':[{'name':'c',"
                   "'resources':{'claims':[{'name':'gpu'}]}}]}"),
     .allowed = 1},
    {.name = "DRA: a claim in an init container counts too",
     .policy = "rules/default.yaml",
     .object = POD("{'tolerations':[" TOL "],'resourceClaims':[{'name':'gpu',"
                   "'resourceClaimName':'shared-gpu'}],'initContainers':[{'name':'i',"
                   "'resources':{'claims':[{'name':'gpu'}]}}],'containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "DRA: a pod claim no container uses asks for nothing",
     .policy = "rules/default.yaml",
     .object = POD("{'tolerations':[" TOL "],'resourceClaims':[{'name':'gpu',"
                   "'resourceClaimTemplateName':'single-gpu'}],'containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "container \"web\" targets GPU nodes (tolerates nvidia.com/gpu:NoSchedule) but "
                "requests no nvidia.com/gpu"},
    {.name = "DRA: a claiming pod's privileged sidecar is refused",
     .policy = "rules/default.yaml",
     .object = POD("{'resourceClaims':[{'name':'gpu','resourceClaimTemplateName':'single-gpu'}],"
                   "'containers':[{'name':'c','resources':{'claims':[{'name':'gpu'}]}},{'name':"
                   "'side','securityContext':{'privileged':true}}]}"),
     .allowed = 0,
     .message = "privileged container \"side\" can reach GPU devices (a privileged container sees "
                "all of the node's /dev, whatever it requests) and the pod can reach GPU nodes (it "
                "claims devices through resourceClaims)"},

    /* ---- pod UPDATE: new tolerations, selectors, affinity or gates ---- */
    {.name = "pod UPDATE: a gated CPU pod updated to tolerate and select GPU nodes is judged",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object = POD("{'containers':[" CPU_CONTAINER "],'schedulingGates':[{'name':'g'}],"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .old_object = POD("{'containers':[" CPU_CONTAINER "],'schedulingGates':[{'name':'g'}]}"),
     .allowed = 0,
     .message =
         "gpuadmit: pod ml/p [gpu-request] container \"web\" targets GPU nodes (nodeSelector "
         "nvidia.com/gpu.present=true) but requests no nvidia.com/gpu"},
    {.name = "pod UPDATE: the same object as a CREATE is denied alike",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'schedulingGates':[{'name':'g'}],"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 0,
     .message =
         "gpuadmit: pod ml/p [gpu-request] container \"web\" targets GPU nodes (nodeSelector "
         "nvidia.com/gpu.present=true) but requests no nvidia.com/gpu"},
    {.name = "pod UPDATE: a toleration added to a privileged pod is judged",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object = POD("{'containers':[{'name':'root','securityContext':{'privileged':true}}],"
                   "'tolerations':[{'operator':'Exists'}]}"),
     .old_object = POD("{'containers':[{'name':'root','securityContext':{'privileged':true}}]}"),
     .allowed = 0,
     .message = "privileged container \"root\" can reach GPU devices"},
    {.name = "pod UPDATE: a Mutate rule's finding is a warning, never a denial",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL "]}"),
     .old_object = POD("{'containers':[" GPU_CONTAINER "]}"),
     .allowed = 1,
     .warning = "gpuadmit [priority-class]: not enforced on a pod update (the pod's fields cannot "
                "change now; fix what creates the pod): "},
    {.name = "pod UPDATE: a Deny rule still denies beside the Mutate rules' warnings",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object = POD("{'containers':[" GPU_CONTAINER ",{'name':'s','securityContext':{'privileged':"
                   "true}}],'tolerations':[" TOL "]}"),
     .old_object = POD("{'containers':[" GPU_CONTAINER ",{'name':'s','securityContext':{"
                       "'privileged':true}}]}"),
     .allowed = 0,
     .message = "gpuadmit: pod ml/p [gpu-request] privileged container \"s\" can reach GPU",
     .warning = "gpuadmit [priority-class]: not enforced on a pod update"},
    {.name = "pod UPDATE: nothing is patched at /mutate (immutable fields)",
     .policy = "rules/default.yaml",
     .mutating = true,
     .op = "UPDATE",
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL "]}"),
     .old_object = POD("{'containers':[" GPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "pod UPDATE: a change of labels only is not judged",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object =
         "{'metadata':{'name':'p','labels':{'app':'new'}},'spec':{'containers':[" CPU_CONTAINER
         "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}}",
     .old_object =
         POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1},
    {.name = "pod UPDATE: a settled GPU pod given one more toleration passes",
     .policy = "rules/default.yaml",
     .op = "UPDATE",
     .object = POD("{'containers':[" GPU_CONTAINER "]," SETTLED_SPEC ",'schedulingGates':[]}"),
     .old_object = POD("{'containers':[" GPU_CONTAINER "]," SETTLED_SPEC "}"),
     .allowed = 1},

    /* ---- node-selector: only a label the GPU nodes carry ---- */
    {.name = "GKE: no nodeSelector the GPU nodes do not carry is patched in, and the reason is "
             "given",
     .policy = "rules/default.yaml",
     .view = "gke.json",
     .mutating = true,
     .object = GPU_POD,
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/priority','value':100000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'},"
              "{'op':'add','path':'/spec/tolerations','value':[" TOL "]}]",
     .warning = "gpuadmit [node-selector]: no nodeSelector added: no node offering nvidia.com/gpu "
                "carries nvidia.com/gpu.present=true, so the selector would leave the pod Pending; "
                "add a label those nodes carry to gpu.nodeLabels"},
    {.name = "GKE: the same pod without the patch is not denied for its selector",
     .policy = "rules/default.yaml",
     .view = "gke.json",
     .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                   "'tolerations':[" TOL "]}"),
     .allowed = 1},
    {.name = "GKE: a pod selecting the accelerator label is confined to GPU nodes",
     .policy = "rules/default.yaml",
     .view = "gke.json",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                   "'priority':100000,'preemptionPolicy':'PreemptLowerPriority','tolerations':[" TOL
                   "],'nodeSelector':{'cloud.google.com/gke-accelerator':'nvidia-l4'}}"),
     .allowed = 1},
    {.name = "GKE: a CPU pod selecting the accelerator label targets GPU nodes",
     .policy = "rules/default.yaml",
     .object = POD("{'containers':[" CPU_CONTAINER "],'nodeSelector':{'cloud.google.com/"
                   "gke-accelerator':'nvidia-l4'}}"),
     .allowed = 0,
     .message = "targets GPU nodes (nodeSelector cloud.google.com/gke-accelerator=nvidia-l4)"},
    {.name = "GPU Operator nodes in the view: the label they carry is patched in",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                   "'priority':100000,'preemptionPolicy':'PreemptLowerPriority','tolerations':[" TOL
                   "]}"),
     .allowed = 1,
     .patch =
         "[{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]"},
    /* no node offers it yet (a node autoscaler may add one): no evidence against the label */
    {.name = "no node in the view offers the MIG profile: the policy's label is added",
     .policy = "rules/default.yaml",
     .view = "gke.json",
     .mutating = true,
     .object =
         POD("{'containers':[{'name':'m','resources':{'limits':{'nvidia.com/mig-1g.5gb':'1'}}}"
             "],'priorityClassName':'gpu-standard','priority':100000,'preemptionPolicy':"
             "'PreemptLowerPriority','tolerations':[" TOL "]}"),
     .allowed = 1,
     .patch =
         "[{'op':'add','path':'/spec/nodeSelector','value':{'nvidia.com/gpu.present':'true'}}]"},

    /* ---- PriorityClasses: the cluster's, when a view knows them ---- */
    {.name = "without a cluster view an unlisted class cannot be called unknown",
     .policy = "mutate.yaml",
     .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'cluster-default',"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1},
    {.name = "a class the cluster has is known though the policy does not list it",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'batch-low',"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1},
    {.name = "the patch takes the class's value from the cluster, not the rule file",
     .policy = "mutate.yaml",
     .view = "stall.json",
     .mutating = true,
     .object = POD("{'containers':[" GPU_CONTAINER "],'tolerations':[" TOL "],"
                   "'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
     .allowed = 1,
     .patch = "[{'op':'add','path':'/spec/priorityClassName','value':'gpu-standard'},"
              "{'op':'add','path':'/spec/priority','value':100000},"
              "{'op':'add','path':'/spec/preemptionPolicy','value':'PreemptLowerPriority'}]"},

    /* ---- kubectl debug ---- */
    {.name = "a privileged debug container is refused",
     .policy = "deny.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','securityContext':{'privileged':true}}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "privileged ephemeral container \"dbg\" can reach every GPU"},
    {.name = "a debug container with NVIDIA_VISIBLE_DEVICES is refused, with Mutate rules too",
     .policy = "mutate.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" CPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':'all'}]}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "ephemeral container \"dbg\" sets NVIDIA_VISIBLE_DEVICES"},
    {.name = "a plain debug container is fine",
     .policy = "deny.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','image':'busybox'}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "kubectl debug --profile=sysadmin on a node the view knows has no GPU is fine",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'cpu-0','containers':[" CPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','securityContext':{'privileged':true}}]}"),
     .old_object = POD("{'nodeName':'cpu-0','containers':[" CPU_CONTAINER "]}"),
     .allowed = 1},
    {.name = "the same on a GPU node the view knows is refused",
     .policy = "rules/default.yaml",
     .view = "stall.json",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'gpu-1','containers':[" CPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'dbg','securityContext':{'privileged':true}}]}"),
     .old_object = POD("{'nodeName':'gpu-1','containers':[" CPU_CONTAINER "]}"),
     .allowed = 0,
     .message = "privileged ephemeral container \"dbg\" can reach every GPU of the node"},
    {.name = "debug containers added earlier are not judged again",
     .policy = "deny.yaml",
     .op = "UPDATE",
     .sub = "ephemeralcontainers",
     .object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                   "[{'name':'old','securityContext':{'privileged':true}},{'name':'new'}]}"),
     .old_object = POD("{'nodeName':'g1','containers':[" GPU_CONTAINER "],'ephemeralContainers':"
                       "[{'name':'old','securityContext':{'privileged':true}}]}"),
     .allowed = 1},

    /* ---- capacity (the stall scenario: 4 nodes × 4 GPUs, 12 in use at priority 1000) ---- */
    {.name = "capacity: 8 replicas at equal priority, deny past what fits now",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(8, "batch-low"),
     .allowed = 0,
     .message = "[capacity] replicasets ml/trainer: only 4 of 8 more pods fit now"},
    {.name = "capacity: the same under the default setting is a warning that says 4 fit now",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(8, "batch-low"),
     .allowed = 1,
     .warning = "gpuadmit [capacity]: replicasets ml/trainer: only 4 of 8 more pods fit now"},
    {.name = "capacity: a preempting class counts the lower-priority GPUs, and says whose",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(8, "gpu-critical"),
     .allowed = 1,
     .warning = "gpuadmit [capacity]: replicasets ml/trainer fits only by preempting: its 8 pods "
                "take 4 nvidia.com/gpu from lower-priority pods, which will be evicted: 4 in "
                "namespace batch at priority 1000 (batch-low)"},
    {.name = "capacity: an update that fits only by preempting counts its increase",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .op = "UPDATE",
     .object = RS(10, "gpu-critical"),
     .old_object = RS(4, "gpu-critical"),
     .allowed = 1,
     .warning = "replicasets ml/trainer fits only by preempting: its 6 more pods take 2 "
                "nvidia.com/gpu from lower-priority pods"},
    {.name = "capacity: a preempting class whose pods fit the free GPUs warns of nothing",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(4, "gpu-critical"),
     .allowed = 1},
    {.name = "capacity: as high a priority with preemptionPolicy Never preempts nobody",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(8, "gpu-critical','preemptionPolicy':'Never"),
     .allowed = 0,
     .message = "[capacity] replicasets ml/trainer: only 4 of 8 more pods fit now"},
    {.name = "capacity: fitting only by preempting is warned under Warn too",
     .policy = "capacity-mutate-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(8, "gpu-critical"),
     .allowed = 1,
     .warning = "gpuadmit [capacity-warned]: replicasets ml/trainer fits only by preempting"},
    {.name = "capacity: under Audit, fitting only by preempting is a would-be warning",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .audit_only = true,
     .object = RS(8, "gpu-critical"),
     .allowed = 1,
     .annotation = "capacity=would warn: replicasets ml/trainer fits only by preempting: its 8 "
                   "pods take 4 nvidia.com/gpu"},
    {.name = "capacity: 20 replicas can never fit 16 GPUs, whatever the setting",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = RS(20, "gpu-critical"),
     .allowed = 0,
     .message = "can never fit: 20 pods at once, at most 16 fit the eligible nodes"},
    {.name = "capacity: a ReplicaSet of a Deployment is judged at the Deployment",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .user = "system:serviceaccount:kube-system:deployment-controller",
     .object = "{'metadata':{'name':'trainer-5d9','ownerReferences':[{'kind':'Deployment',"
               "'name':'trainer','controller':true}]},'spec':{'replicas':20,'template':"
               "{'spec':" TEMPLATE_SPEC("gpu-critical") "}}}",
     .allowed = 1},
    {.name = "capacity: an update counts only the increase",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/statefulsets",
     .op = "UPDATE",
     .object = RS(6, "batch-low"),
     .old_object = RS(2, "batch-low"),
     .allowed = 1},
    {.name = "capacity: a Deployment's new template counts its rollout surge",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object =
         "{'metadata':{'name':'trainer'},'spec':{'replicas':4,'strategy':{'rollingUpdate':"
         "{'maxSurge':'100%'}},'template':{'metadata':{'labels':{'v':'2'}},'spec':" TEMPLATE_SPEC(
             "batch-low") "}}}",
     .old_object =
         "{'metadata':{'name':'trainer'},'spec':{'replicas':4,'template':{'spec':" TEMPLATE_SPEC(
             "batch-low") "}}}",
     .allowed = 1},
    {.name = "capacity: ... and denies when the surge does not fit",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = "{'metadata':{'name':'trainer'},'spec':{'replicas':8,'strategy':{'rollingUpdate':"
               "{'maxSurge':'100%','maxUnavailable':0}},'template':{'spec':" TEMPLATE_SPEC(
                   "batch-low") ",'metadata':"
                                "{'labels':{'v':'2'}}}}}",
     .old_object =
         "{'metadata':{'name':'trainer'},'spec':{'replicas':8,'template':{'spec':" TEMPLATE_SPEC(
             "batch-low") "}}}",
     .allowed = 0,
     .message = "only 4 of 8 more pods fit now"},
    {.name = "capacity: a Job runs min(parallelism, completions) at once",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "batch/jobs",
     .object = "{'metadata':{'name':'j'},'spec':{'parallelism':10,'completions':3,'template':"
               "{'spec':" TEMPLATE_SPEC("batch-low") "}}}",
     .allowed = 1},
    {.name = "capacity: kubectl scale is judged from the cached template",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .object =
         "{'kind':'Scale','metadata':{'name':'trainer','namespace':'ml'},'spec':{'replicas':10}}",
     .old_object =
         "{'kind':'Scale','metadata':{'name':'trainer','namespace':'ml'},'spec':{'replicas':2}}",
     .allowed = 0,
     .message = "gpuadmit: deployments ml/trainer (scale) [capacity]"},
    {.name = "capacity: scaling down is always fine",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .object = "{'kind':'Scale','metadata':{'name':'trainer'},'spec':{'replicas':1}}",
     .old_object = "{'kind':'Scale','metadata':{'name':'trainer'},'spec':{'replicas':2}}",
     .allowed = 1},
    {.name = "capacity: scaling a workload that uses no GPU is not judged",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .object = "{'kind':'Scale','metadata':{'name':'web'},'spec':{'replicas':100}}",
     .old_object = "{'kind':'Scale','metadata':{'name':'web'},'spec':{'replicas':2}}",
     .allowed = 1},
    {.name = "capacity: an HPA whose maxReplicas cannot fit gets a warning",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "autoscaling/horizontalpodautoscalers",
     .object = "{'metadata':{'name':'trainer'},'spec':{'maxReplicas':30,'scaleTargetRef':"
               "{'kind':'Deployment','name':'trainer'}}}",
     .allowed = 1,
     .warning = "can never fit: 30 pods at once, at most 16"},
    {.name = "capacity: without a cluster view, a warning that capacity was not checked",
     .policy = "capacity.yaml",
     .resource = "apps/replicasets",
     .object = RS(8, "batch-low"),
     .allowed = 1,
     .warning = "GPU capacity not checked: no cluster view is configured"},
    {.name = "capacity: audit-only records the would-be denial",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .audit_only = true,
     .object = RS(8, "batch-low"),
     .allowed = 1,
     .annotation = "capacity=would deny: replicasets ml/trainer: only 4 of 8 more pods fit now"},
    {.name = "capacity: under Audit, what enforcing would only warn about is a would-be warning",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .audit_only = true,
     .object = RS(8, "batch-low"),
     .allowed = 1,
     .annotation = "capacity=would warn: replicasets ml/trainer: only 4 of 8 more pods fit now"},
    {.name = "capacity: under Audit, a workload that can never fit is a would-be denial",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .audit_only = true,
     .object = RS(20, "batch-low"),
     .allowed = 1,
     .annotation = "capacity=would deny: replicasets ml/trainer can never fit"},
    {.name =
         "capacity: more than one time slice per container is refused where all GPUs are shared",
     .policy = "capacity.yaml",
     .view = "shared.json",
     .resource = "apps/replicasets",
     .object = "{'metadata':{'name':'t'},'spec':{'replicas':1,'template':{'spec':{'containers':"
               "[{'name':'big','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}}}}",
     .allowed = 0,
     .message = "container \"big\" asks for 2 nvidia.com/gpu, but every eligible "
                "node shares its GPUs (time-slicing, nvidia.com/gpu.replicas=4)"},

    {.name = "capacity: a ReplicaSet a user claims a Deployment owns is judged all the same",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = "{'metadata':{'name':'sneaky','ownerReferences':[{'kind':'Deployment','name':'x',"
               "'controller':true}]},'spec':{'replicas':1000,'template':{'spec':" TEMPLATE_SPEC(
                   "gpu-critical") "}}}",
     .allowed = 0,
     .message = "can never fit: 1000 pods at once"},
    {.name = "capacity: a suspended Job runs no pods",
     .policy = "capacity.yaml",
     .view = "stall.json",
     .resource = "batch/jobs",
     .object = "{'metadata':{'name':'j'},'spec':{'suspend':true,'parallelism':20,'template':"
               "{'spec':" TEMPLATE_SPEC("gpu-critical") "}}}",
     .allowed = 1},
    {.name = "capacity: a Job wider than the cluster still completes: a warning, not a denial",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "batch/jobs",
     .object =
         "{'metadata':{'name':'j'},'spec':{'parallelism':20,'template':{'spec':" TEMPLATE_SPEC(
             "gpu-critical") "}}}",
     .allowed = 1,
     .warning = "jobs ml/j runs at most 16 of its 20 pods at once"},
    {.name = "capacity: a Job clamped to the cluster's width is told whose pods its width evicts",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "batch/jobs",
     .object =
         "{'metadata':{'name':'j'},'spec':{'parallelism':20,'template':{'spec':" TEMPLATE_SPEC(
             "gpu-critical") "}}}",
     .allowed = 1,
     .warning = "gpuadmit [capacity]: jobs ml/j fits only by preempting: its 16 pods at once take "
                "12 nvidia.com/gpu from lower-priority pods, which will be evicted: 12 in "
                "namespace batch at priority 1000 (batch-low)"},
    {.name = "capacity: a pool scaled to zero is a warning (an autoscaler may add nodes)",
     .policy = "capacity-warn.yaml",
     .view = "stall.json",
     .resource = "apps/replicasets",
     .object = "{'metadata':{'name':'z'},'spec':{'replicas':2,'template':{'spec':{"
               "'nodeSelector':{'pool':'c'},'containers':[{'name':'t','resources':{'limits':"
               "{'nvidia.com/gpu':'1'}}}]}}}}",
     .allowed = 1,
     .warning = "replicasets ml/z: no node matches nodeSelector pool=c now: check it for a "
                "typo; its pods wait Pending unless a node autoscaler adds a matching node"},

    /* ---- capacity as the controllers and the scheduler act (snapshots: drain.json, gpu-3
     * cordoned with its 4 pods Pending; notready.json, gpu-2 and gpu-3 unreachable; full.json,
     * all 16 GPUs in use; pending.json, 4 free and 4 Pending pods waiting; owed.json, 3 free
     * and a StatefulSet owing 3; idle.json, 16 free) ---- */
    {.name = "capacity: a rollout restart during a drain is admitted (the cordon ends)",
     .policy = "capacity-warn.yaml",
     .view = "drain.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(16, "{}", RESTARTED, "trainer:1"),
     .old_object = DEP(16, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and so is a new image with maxSurge 1",
     .policy = "capacity-warn.yaml",
     .view = "drain.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(16, "{'rollingUpdate':{'maxSurge':1}}", "{}", "trainer:2"),
     .old_object = DEP(16, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: with two nodes NotReady, 16 -> 12 replicas and a new image is admitted",
     .policy = "capacity-warn.yaml",
     .view = "notready.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(12, "{}", "{}", "trainer:2"),
     .old_object = DEP(16, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: during a drain more pods than fit now are told to wait for the drain",
     .policy = "capacity.yaml",
     .view = "drain.json",
     .resource = "apps/replicasets",
     .object = RS(2, "gpu-standard"),
     .allowed = 0,
     .message = "only 0 of 2 more pods fit now, the rest will wait Pending; 1 matching node is "
                "cordoned or not Ready (4 pods' worth of GPUs): wait for the drain"},
    {.name = "capacity: during a drain, replicas past every node's GPUs still can never fit",
     .policy = "capacity-warn.yaml",
     .view = "drain.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(17, "{}", "{}", "trainer:1"),
     .old_object = DEP(16, "{}", "{}", "trainer:1"),
     .allowed = 0,
     .message = "can never fit: 17 pods at once, at most 16 fit the eligible nodes"},
    {.name = "capacity: Pending pods of equal priority hold the free GPUs",
     .policy = "capacity.yaml",
     .view = "pending.json",
     .resource = "apps/replicasets",
     .object = RS(4, "gpu-standard"),
     .allowed = 0,
     .message = "only 0 of 4 more pods fit now, the rest will wait Pending; 4 of the free GPUs "
                "go first to 4 Pending pods (Pod batch/queued-"},
    {.name = "capacity: ... but not from a class above theirs, which the queue serves first",
     .policy = "capacity.yaml",
     .view = "pending.json",
     .resource = "apps/replicasets",
     .object = RS(4, "gpu-critical"),
     .allowed = 1},
    {.name = "capacity: replicas a StatefulSet still owes hold the free GPUs",
     .policy = "capacity-warn.yaml",
     .view = "owed.json",
     .resource = "apps/replicasets",
     .object = RS(4, "gpu-standard"),
     .allowed = 1,
     .warning = "replicasets ml/trainer: 3 of the free GPUs go first to 3 replicas a "
                "controller still owes (StatefulSet ml/db) of equal or higher priority"},
    {.name = "capacity: resuming a suspended Job is judged like its CREATE",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("false", 20, 100),
     .old_object = JOB("true", 20, 100),
     .allowed = 0,
     .message = "jobs ml/j: only 0 of 16 more pods fit now, the rest will wait Pending; 16 more "
                "pods × 1 nvidia.com/gpu = 16 requested",
     .warning = "jobs ml/j runs at most 16 of its 20 pods at once"},
    {.name = "capacity: ... while an UPDATE that keeps it suspended is not",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("true", 30, 100),
     .old_object = JOB("true", 20, 100),
     .allowed = 1},
    {.name = "capacity: a full cluster admits the default 25%/25% rollout (maxUnavailable > 0)",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{}", "{}", "trainer:2"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and a rollout restart with maxUnavailable 100%",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{'rollingUpdate':{'maxUnavailable':'100%'}}", RESTARTED, "trainer:1"),
     .old_object = DEP(8, "{'rollingUpdate':{'maxUnavailable':'100%'}}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and 8 -> 4 replicas with a new image",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(4, "{}", "{}", "trainer:2"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and under Warn the default rollout gets no warning",
     .policy = "capacity-warn.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{}", "{}", "trainer:2"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: maxUnavailable 0 with a surge on a full cluster stalls: maxSurge: 0",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{'rollingUpdate':{'maxUnavailable':0}}", "{}", "trainer:2"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 0,
     .message = "only 0 of 2 more pods fit now, the rest will wait Pending; the rollout stalls: "
                "with maxUnavailable 0 the old pods keep their GPUs until 2 surge pods run, so "
                "set maxSurge: 0"},
    {.name = "capacity: maxSurge 0 and maxUnavailable 0 replace one pod at a time (fencepost)",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':0}}", "{}", "trainer:2"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: whenStale Deny lets a scale-down through",
     .policy = "capacity-stale-deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(4, "{}", "{}", "trainer:1"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and an annotation-only UPDATE",
     .policy = "capacity-stale-deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP_META(8, "'annotations':{'owner':'ml-team'}"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and an identical UPDATE",
     .policy = "capacity-stale-deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(8, "{}", "{}", "trainer:1"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 1},
    {.name = "capacity: ... and the garbage collector removing the foregroundDeletion finalizer",
     .policy = "capacity-stale-deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP_META(8, "'deletionTimestamp':'2026-01-01T00:00:00Z','finalizers':[]"),
     .old_object = DEP_META(8, "'deletionTimestamp':'2026-01-01T00:00:00Z','finalizers':"
                               "['foregroundDeletion']"),
     .allowed = 1},
    {.name = "capacity: ... but not an increase",
     .policy = "capacity-stale-deny.yaml",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEP(9, "{}", "{}", "trainer:1"),
     .old_object = DEP(8, "{}", "{}", "trainer:1"),
     .allowed = 0,
     .message = "GPU capacity not checked: no cluster view is configured"},
    {.name = "capacity: a Job wider than the cluster is clamped to at most, then fits now",
     .policy = "capacity.yaml",
     .view = "idle.json",
     .resource = "batch/jobs",
     .object = JOB("false", 20, 100),
     .allowed = 1,
     .warning = "jobs ml/j runs at most 16 of its 20 pods at once on the eligible nodes (16 "
                "nvidia.com/gpu in all); the others run as those finish"},
    {.name = "capacity: a CronJob's jobTemplate is judged as its Jobs will be",
     .policy = "capacity.yaml",
     .view = "idle.json",
     .resource = "batch/cronjobs",
     .object = CRON(20, "1"),
     .allowed = 1,
     .warning = "cronjobs ml/cj (its Jobs) runs at most 16 of its 20 pods at once"},
    {.name = "capacity: ... so one whose Jobs can never run a pod is refused",
     .policy = "capacity.yaml",
     .view = "idle.json",
     .resource = "batch/cronjobs",
     .object = CRON(1, "8"),
     .allowed = 0,
     .message = "cronjobs ml/cj (its Jobs) can never fit: 1 pod at once, at most 0 fit the "
                "eligible nodes (16 nvidia.com/gpu in all, cordoned and not Ready nodes "
                "included); no eligible node holds one pod: ask for fewer GPUs per pod"},
    {.name = "capacity: a suspended CronJob makes no Jobs: not judged",
     .policy = "capacity.yaml",
     .view = "idle.json",
     .resource = "batch/cronjobs",
     .object = CRON_SUSPENDED("true", 1, "8"),
     .allowed = 1},
    {.name = "capacity: ... and the UPDATE that resumes it is judged as its CREATE",
     .policy = "capacity.yaml",
     .view = "idle.json",
     .resource = "batch/cronjobs",
     .op = "UPDATE",
     .object = CRON_SUSPENDED("false", 1, "8"),
     .old_object = CRON_SUSPENDED("true", 1, "8"),
     .allowed = 0,
     .message = "cronjobs ml/cj (its Jobs) can never fit: 1 pod at once"},
    {.name = "capacity: ... and one that does not fit now only warns: its Jobs come later",
     .policy = "capacity.yaml",
     .view = "full.json",
     .resource = "batch/cronjobs",
     .object = CRON(2, "1"),
     .allowed = 1,
     .warning = "only 0 of 2 more pods fit now, the rest of each Job's pods will wait Pending"},
    {.name = "capacity: headroom lowers free now, not at most, and the message names it",
     .policy = "capacity-headroom.yaml",
     .view = "idle.json",
     .resource = "apps/replicasets",
     .object = RS(13, "gpu-standard"),
     .allowed = 0,
     .message = "only 12 of 13 more pods fit now, the rest eat into the headroom the capacity "
                "rule keeps free (the scheduler keeps none: they would start); the capacity "
                "rule's headroom keeps 1 GPU free on each node: lower it to admit more"},
    {.name = "capacity: with autoscaling: true, past every node's GPUs is only a warning",
     .policy = "capacity-autoscaling.yaml",
     .view = "idle.json",
     .resource = "apps/replicasets",
     .object = RS(20, "gpu-standard"),
     .allowed = 1,
     .warning = "replicasets ml/trainer can never fit: 20 pods at once, at most 16 fit the "
                "eligible nodes"},
    {.name = "capacity: no matching node with autoscaling: false is never: name the selector",
     .policy = "capacity-no-autoscaler.yaml",
     .view = "idle.json",
     .resource = "apps/replicasets",
     .object = "{'metadata':{'name':'z'},'spec':{'replicas':2,'template':{'spec':{"
               "'nodeSelector':{'pool':'c'},'containers':[{'name':'t','resources':{'limits':"
               "{'nvidia.com/gpu':'1'}}}]}}}}",
     .allowed = 0,
     .message = "replicasets ml/z can never run: no node matches nodeSelector pool=c, and the "
                "capacity rule says no node autoscaler adds nodes (autoscaling: false)"},

};

/* Two policies patch the same lists: the second appends to what the first added, and the
 * recorded operations stay as they were when recorded. */
/* A patch that is sent is recorded (audit annotation), also when the same rule found a problem
 * it could not patch beside it: here a GPU added to the pod aimed at GPU nodes, and its
 * privileged sidecar refused at /validate. */
static void test_patch_beside_problem(void)
{
    struct policy *p = load("mutate.yaml");
    const struct ecase c = {.name = "patch beside a problem", .policy = "", .mutating = true};
    yyjson_doc *object =
        js(POD("{'containers':[" CPU_CONTAINER ",{'name':'root','securityContext':"
               "{'privileged':true}}],'nodeSelector':{'nvidia.com/gpu.present':'true'"
               "},'priorityClassName':'gpu-standard','tolerations':[" TOL "]}"));
    struct review *r = make_review(&c, harness_val(object));
    struct decision dec;

    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, true, false, NULL, &dec) == 0);
    CHECK(dec.allowed && yyjson_mut_arr_size(dec.patch) == 1);
    CHECK_STR(annotation(&dec, "gpu-request"),
              "patched: added 1 nvidia.com/gpu to container \"web\"");
    decision_release(&dec);
    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, false, false, NULL, &dec) == 0);
    CHECK(!dec.allowed);
    CHECK_CONTAINS(dec.message, "privileged container \"root\" can reach GPU devices");
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(object);
    policy_unref(p);
}

static void test_two_policies_share_lists(void)
{
    struct rules_errors errs;
    struct policy *p = rules_load_dir("tests/data/policies/two", &errs);
    const struct ecase c = {.name = "two", .policy = "", .mutating = true, .object = GPU_POD};
    yyjson_doc *object = js(GPU_POD), *patched;
    yyjson_val *tols;
    struct review *r = make_review(&c, harness_val(object)), *r2;
    struct decision dec, again;

    CHECK(p != NULL && r != NULL);
    if (p == NULL || r == NULL)
        return;
    decision_init(&dec);
    CHECK(eval_review(p, r, true, false, NULL, &dec) == 0);
    patched = apply_patch(object, dec.patch);
    CHECK(patched != NULL);
    if (patched == NULL)
        return;
    tols = yyjson_obj_get(yyjson_obj_get(harness_val(patched), "spec"), "tolerations");
    CHECK(yyjson_arr_size(tols) == 2); /* nvidia.com/gpu and sku=gpu, once each */
    CHECK(yyjson_obj_size(
              yyjson_obj_get(yyjson_obj_get(harness_val(patched), "spec"), "nodeSelector")) == 2);
    r2 = make_review(&c, harness_val(patched));
    decision_init(&again);
    CHECK(r2 != NULL && eval_review(p, r2, true, false, NULL, &again) == 0);
    CHECK(again.patch == NULL);
    decision_release(&again);
    decision_release(&dec);
    review_free(r);
    review_free(r2);
    yyjson_doc_free(object);
    yyjson_doc_free(patched);
    policy_unref(p);
}

/* The /validate decision for c under --audit-only into out (initialised by the caller). */
static int check_audit(const struct policy *p, struct cluster *view, const struct ecase *c,
                       struct decision *out)
{
    yyjson_doc *object = js(c->object);
    struct review *r = make_review(c, harness_val(object));
    int rc = r != NULL ? eval_review(p, r, false, true, view, out) : -1;

    review_free(r);
    yyjson_doc_free(object);
    return rc;
}

/* A GPU ReplicaSet of n one-GPU replicas at class cls whose template lacks the GPU taint's
 * toleration and the GPU node label: the Mutate rules of capacity-mutate.yaml add both. */
#define BARE_RS(n, cls)                                                                            \
    "{'metadata':{'name':'trainer'},'spec':{'replicas':" #n ",'template':{'spec':{"                \
    "'priorityClassName':'" cls "','containers':[{'name':'t','resources':{'limits':"               \
    "{'nvidia.com/gpu':'1'}}}]}}}}"

/* Whether any warning or annotation of dec holds text. */
static bool says(const struct decision *dec, const char *text)
{
    yyjson_mut_val *k, *v;
    yyjson_mut_obj_iter it;

    if (has_warning(dec, text) || (dec->message != NULL && strstr(dec->message, text)))
        return true;
    yyjson_mut_obj_iter_init(dec->annotations, &it);
    while ((k = yyjson_mut_obj_iter_next(&it)) != NULL) {
        v = yyjson_mut_obj_iter_get_val(k);
        if (strstr(yyjson_mut_get_str(v), text) != NULL)
            return true;
    }
    return false;
}

/* What enforcing decides at /validate for object: /mutate's patch applied first, as the
 * apiserver applies it before calling validating webhooks (docs/protocol.md §6). */
static void enforced(const struct policy *p, struct cluster *view, const struct ecase *c,
                     struct decision *out)
{
    yyjson_doc *object = js(c->object), *patched = NULL;
    struct review *r = make_review(c, harness_val(object)), *r2 = NULL;
    struct decision m;

    decision_init(&m);
    CHECK(r != NULL && eval_review(p, r, true, false, view, &m) == 0);
    CHECK(m.patch != NULL);
    patched = m.patch ? apply_patch(object, m.patch) : NULL;
    CHECK(patched != NULL);
    r2 = patched ? make_review(c, harness_val(patched)) : NULL;
    CHECK(r2 != NULL && eval_review(p, r2, false, false, view, out) == 0);
    decision_release(&m);
    review_free(r);
    review_free(r2);
    yyjson_doc_free(object);
    yyjson_doc_free(patched);
}

/* kubectl scale under --audit-only: the view holds the Deployment's template as it was stored,
 * which no mutating webhook patched (audit-only patches nothing); its pods will be patched at
 * their own CREATE once enforcing, so the capacity rule judges that template as enforcing would
 * patch it: with the GPU taint's toleration, TaintToleration lets the pods onto the GPU nodes,
 * no "untolerated taint". stall.json: 4 GPUs free, one on each GPU node. */
static void test_audit_scale_judges_the_patched_template(void)
{
    struct policy *p = load("capacity-mutate.yaml");
    struct cluster *view = harness_view("stall.json");
    yyjson_doc *dep = js("{'kind':'Deployment','metadata':{'name':'bare','namespace':'ml'},"
                         "'spec':{'replicas':2,'selector':{'matchLabels':{'app':'bare'}},"
                         "'template':{'metadata':{'labels':{'app':'bare'}},'spec':{"
                         "'priorityClassName':'batch-low','containers':[{'name':'c','resources':"
                         "{'limits':{'nvidia.com/gpu':'1'}}}]}}}}");
    struct ecase up4 = {.resource = "apps/deployments",
                        .sub = "scale",
                        .op = "UPDATE",
                        .object = "{'kind':'Scale','metadata':{'name':'bare','namespace':'ml'},"
                                  "'spec':{'replicas':4}}",
                        .old_object = "{'kind':'Scale','metadata':{'name':'bare','namespace':"
                                      "'ml'},'spec':{'replicas':2}}"};
    struct ecase up8 = up4;
    struct decision aud;
    struct diag d;
    const char *ann;

    up8.object = "{'kind':'Scale','metadata':{'name':'bare','namespace':'ml'},'spec':"
                 "{'replicas':8}}";
    diag_clear(&d);
    CHECK(p != NULL && view != NULL && dep != NULL &&
          cluster_apply(view, CLUSTER_DEPLOYMENTS, "ADDED", yyjson_doc_get_root(dep), &d) == 0);
    /* 2 more fit the 4 free GPUs once tolerated: nothing to say */
    decision_init(&aud);
    CHECK(check_audit(p, view, &up4, &aud) == 0);
    CHECK(aud.allowed && annotation(&aud, "capacity") == NULL && !says(&aud, "untolerated"));
    decision_release(&aud);
    /* 6 more: 4 fit now, what enforcing would deny (available: Deny) */
    decision_init(&aud);
    CHECK(check_audit(p, view, &up8, &aud) == 0);
    ann = annotation(&aud, "capacity");
    CHECK_CONTAINS(ann, "would deny: deployments ml/bare (scale): only 4 of 6 more pods fit now");
    CHECK(aud.allowed && !says(&aud, "untolerated"));
    decision_release(&aud);
    /* the prediction keeps to the rules' scope: with the toleration's rule excluding pods a
     * ReplicaSet owns (as a Deployment's are), none is predicted, and TaintToleration keeps
     * the pods off every GPU node */
    policy_unref(p);
    p = load("capacity-mutate-no-rs.yaml");
    decision_init(&aud);
    CHECK(p != NULL && check_audit(p, view, &up4, &aud) == 0);
    CHECK(says(&aud, "untolerated taint nvidia.com/gpu"));
    decision_release(&aud);
    /* nor when it excludes the pods by a label, which the view does not keep: left out */
    policy_unref(p);
    p = load("capacity-mutate-no-app.yaml");
    decision_init(&aud);
    CHECK(p != NULL && check_audit(p, view, &up4, &aud) == 0);
    CHECK(says(&aud, "untolerated taint nvidia.com/gpu"));
    decision_release(&aud);
    yyjson_doc_free(dep);
    cluster_free(view);
    policy_unref(p);
}

/* audit-only: at /validate the object is as the user wrote it, since no mutating webhook patched
 * it. The capacity rule, Audit then, judges it as enforcing would have patched it: with the
 * toleration of the GPU taint the tolerations rule would add, kube-scheduler's TaintToleration
 * filter lets the pods onto the GPU nodes (pkg/scheduler/framework/plugins/tainttoleration), so
 * no "untolerated taint", and the same arithmetic as the enforcing /validate of the patched
 * object. stall.json: 4 GPU nodes of 4, 12 GPUs in use at batch-low's priority. */
static void test_audit_capacity_judges_the_patched_template(void)
{
    struct policy *p = load("capacity-mutate.yaml");
    struct cluster *view = harness_view("stall.json");
    struct ecase fits = {.resource = "apps/replicasets", .object = BARE_RS(4, "batch-low")};
    struct ecase stalls = fits, never = fits, update = fits;
    struct decision aud, enf;
    const char *ann;

    stalls.object = BARE_RS(8, "batch-low");
    never.object = BARE_RS(20, "gpu-critical");
    /* a scale-up of a ReplicaSet whose stored template audit-only never patched */
    update.op = "UPDATE";
    update.object = BARE_RS(8, "batch-low");
    update.old_object = BARE_RS(2, "batch-low");

    /* 4 fit the 4 free GPUs: nothing to say, as enforcing has nothing to say */
    decision_init(&aud);
    decision_init(&enf);
    CHECK(check_audit(p, view, &fits, &aud) == 0);
    CHECK(aud.allowed && yyjson_mut_arr_size(aud.warnings) == 0);
    CHECK(annotation(&aud, "capacity") == NULL);
    CHECK(!says(&aud, "untolerated taint"));
    enforced(p, view, &fits, &enf);
    CHECK(enf.allowed && yyjson_mut_arr_size(enf.warnings) == 0 &&
          annotation(&enf, "capacity") == NULL);
    decision_release(&aud);
    decision_release(&enf);

    /* 8: 4 fit now; enforcing denies (available: Deny), audit-only records that denial */
    decision_init(&aud);
    decision_init(&enf);
    CHECK(check_audit(p, view, &stalls, &aud) == 0);
    ann = annotation(&aud, "capacity");
    CHECK_CONTAINS(ann, "would deny: replicasets ml/trainer: only 4 of 8 more pods fit now");
    CHECK_CONTAINS(ann, "4 eligible nodes");
    CHECK(aud.allowed && !says(&aud, "untolerated taint"));
    enforced(p, view, &stalls, &enf);
    CHECK(!enf.allowed);
    CHECK_CONTAINS(enf.message, "[capacity] replicasets ml/trainer: only 4 of 8 more pods fit now");
    /* word for word what enforcing says, past "would deny: " */
    CHECK(ann != NULL && enf.message != NULL &&
          strstr(enf.message, ann + strlen("would deny: ")) != NULL);
    decision_release(&aud);
    decision_release(&enf);

    /* 20 at a preempting class: even patched they never fit the 16 GPUs, and audit-only says so */
    decision_init(&aud);
    decision_init(&enf);
    CHECK(check_audit(p, view, &never, &aud) == 0);
    ann = annotation(&aud, "capacity");
    CHECK_CONTAINS(ann, "would deny: replicasets ml/trainer can never fit: 20 pods at once, at "
                        "most 16 fit the eligible nodes");
    CHECK(!says(&aud, "untolerated taint"));
    enforced(p, view, &never, &enf);
    CHECK(!enf.allowed);
    CHECK(ann != NULL && enf.message != NULL &&
          strstr(enf.message, ann + strlen("would deny: ")) != NULL);
    decision_release(&aud);
    decision_release(&enf);

    /* an UPDATE that leaves the template alone (no rule judges it) is judged patched too; a
     * view of its own, as the allowed reviews above reserved the free GPUs (they are no dry
     * run) */
    cluster_free(view);
    view = harness_view("stall.json");
    decision_init(&aud);
    CHECK(check_audit(p, view, &update, &aud) == 0);
    CHECK_CONTAINS(annotation(&aud, "capacity"),
                   "would deny: replicasets ml/trainer: only 4 of 6 more pods fit now");
    CHECK(!says(&aud, "untolerated taint"));
    decision_release(&aud);

    cluster_free(view);
    policy_unref(p);
}

/* Mutate rules written Warn never patch, with or without audit-only, so neither capacity rule
 * counts their would-be toleration: pods without it fit no tainted GPU node, and both rules say
 * so, the warning one as a warning and the enforcing one too (its available: Warn). */
static void test_warn_mutate_rules_are_never_predicted(void)
{
    struct policy *p = load("capacity-mutate-warn.yaml");
    struct cluster *view = harness_view("stall.json");
    const struct ecase c = {.resource = "apps/replicasets", .object = BARE_RS(4, "batch-low")};
    yyjson_doc *object = js(c.object);
    struct review *r = make_review(&c, harness_val(object));
    struct decision dec;

    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, false, false, view, &dec) == 0);
    CHECK(dec.allowed);
    CHECK(has_warning(&dec, "gpuadmit [capacity-warned]: replicasets ml/trainer: no node "
                            "matches its GPU resources and tolerations now"));
    CHECK(has_warning(&dec, "gpuadmit [capacity-enforced]: replicasets ml/trainer: no node "
                            "matches its GPU resources and tolerations now"));
    CHECK_CONTAINS(annotation(&dec, "capacity-enforced"),
                   "not eligible: 4 nodes have untolerated taint nvidia.com/gpu=true:NoSchedule");
    CHECK_CONTAINS(annotation(&dec, "capacity-warned"),
                   "not eligible: 4 nodes have untolerated taint nvidia.com/gpu=true:NoSchedule");
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(object);
    cluster_free(view);
    policy_unref(p);
}

/* Under autogen: false templates are never patched nor judged, but their pods are, at their own
 * CREATE: /mutate gives each GPU pod the taint's toleration and the GPU node label (the Enforce
 * Mutate rules), so an enforcing capacity rule judges the template as its pods will be patched,
 * and a ReplicaSet whose template lacks both still fits; kube-scheduler places the patched pods
 * (TaintToleration filters on the pod's own tolerations, pkg/scheduler/framework/plugins/
 * tainttoleration). 4 pods fit stall.json's 4 free GPUs, 8 do not. (With autogen: true the
 * template itself is patched at /mutate, and /validate denies one without the toleration.) */
static void test_enforce_capacity_judges_templates_as_their_pods_are_patched(void)
{
    struct policy *p = load("capacity-mutate-noautogen.yaml");
    /* a view each: an allowed review reserves what it was admitted for */
    struct cluster *v4 = harness_view("stall.json"), *v8 = harness_view("stall.json");
    const struct ecase four = {.resource = "apps/replicasets", .object = BARE_RS(4, "batch-low")};
    const struct ecase eight = {.resource = "apps/replicasets", .object = BARE_RS(8, "batch-low")};
    yyjson_doc *o4 = js(four.object), *o8 = js(eight.object);
    struct review *r4 = make_review(&four, harness_val(o4));
    struct review *r8 = make_review(&eight, harness_val(o8));
    struct decision dec;

    decision_init(&dec);
    CHECK(r4 != NULL && eval_review(p, r4, false, false, v4, &dec) == 0);
    CHECK(dec.allowed && annotation(&dec, "capacity") == NULL);
    CHECK(!says(&dec, "untolerated taint"));
    decision_release(&dec);
    decision_init(&dec);
    CHECK(r8 != NULL && eval_review(p, r8, false, false, v8, &dec) == 0);
    CHECK(!dec.allowed);
    CHECK_CONTAINS(dec.message, "[capacity] replicasets ml/trainer: only 4 of 8 more pods fit now");
    CHECK(!says(&dec, "untolerated taint"));
    decision_release(&dec);
    review_free(r4);
    review_free(r8);
    yyjson_doc_free(o4);
    yyjson_doc_free(o8);
    cluster_free(v4);
    cluster_free(v8);
    policy_unref(p);
}

/* stall.json without its objects of kind drop (and of kind drop2, when not NULL), written to
 * path (a mkstemp template): a snapshot kubectl was not asked those kinds for. */
static void stall_without(char *path, const char *drop, const char *drop2)
{
    size_t len;
    char *text = harness_slurp("tests/data/snapshots/stall.json", &len);
    yyjson_doc *doc = js(text);
    yyjson_mut_doc *m = yyjson_doc_mut_copy(doc, NULL);
    yyjson_mut_val *items = yyjson_mut_obj_get(yyjson_mut_doc_get_root(m), "items"), *it;
    char *out;
    int fd = mkstemp(path);

    for (size_t i = yyjson_mut_arr_size(items); i-- > 0;) {
        it = yyjson_mut_arr_get(items, i);
        if (json_mut_str_is(yyjson_mut_obj_get(it, "kind"), drop) ||
            (drop2 != NULL && json_mut_str_is(yyjson_mut_obj_get(it, "kind"), drop2)))
            yyjson_mut_arr_remove(items, i);
    }
    out = json_mut_write(yyjson_mut_doc_get_root(m), &len);
    CHECK(fd >= 0 && out != NULL && write(fd, out, len) == (ssize_t)len);
    if (fd >= 0)
        close(fd);
    free(out);
    yyjson_mut_doc_free(m);
    yyjson_doc_free(doc);
    free(text);
}

/* A snapshot that holds no PriorityClasses: the kinds each policy reads and lacks are named,
 * and a class denial says the view is incomplete, since every cluster has classes (the system
 * ones, created by kube-apiserver at start: AddSystemPriorityClasses in
 * pkg/registry/scheduling/rest/storage_scheduling.go). */
static void test_snapshot_without_classes(void)
{
    struct cluster_config cfg = {60};
    struct cluster *noclass = cluster_new(&cfg), *bare = cluster_new(&cfg);
    struct cluster *full = harness_view("stall.json");
    struct policy *dflt = load("rules/default.yaml"), *deny = load("deny.yaml");
    struct policy *cap = load("capacity.yaml"), *gpu_only = load("debug-exempt.yaml");
    char p1[] = "/tmp/gpuadmit-noclass-XXXXXX", p2[] = "/tmp/gpuadmit-bare-XXXXXX";
    char gaps[512];
    struct diag d;
    const struct ecase named = {.object =
                                    POD("{'containers':[" GPU_CONTAINER "],"
                                        "'priorityClassName':'batch-low','tolerations':[" TOL
                                        "],'nodeSelector':{'nvidia.com/gpu.present':'true'}}")};
    const struct ecase unnamed = {.object = ONLY_CLASS};
    const struct ecase unknown = {.object = POD("{'containers':[" GPU_CONTAINER "],"
                                                "'priorityClassName':'nope','tolerations':[" TOL
                                                "],'nodeSelector':{'nvidia.com/gpu.present':"
                                                "'true'}}")};
    struct decision dec;
    yyjson_doc *obj;
    struct review *r;

    stall_without(p1, "PriorityClass", NULL);
    stall_without(p2, "PriorityClass", "Pod");
    diag_clear(&d);
    CHECK(cluster_load_snapshot(noclass, p1, &d) == 0 && cluster_load_snapshot(bare, p2, &d) == 0);

    /* the kinds each policy reads, and only those */
    CHECK(eval_view_gaps(dflt, noclass, gaps, sizeof(gaps)) == 1);
    CHECK_STR(gaps, "no PriorityClasses (read by the priority-class and capacity rules)");
    CHECK(eval_view_gaps(dflt, bare, gaps, sizeof(gaps)) == 2);
    CHECK_STR(gaps, "no PriorityClasses (read by the priority-class and capacity rules), no Pods "
                    "(read by the capacity rules)");
    CHECK(eval_view_gaps(deny, bare, gaps, sizeof(gaps)) == 1);
    CHECK_STR(gaps, "no PriorityClasses (read by the priority-class rules)");
    CHECK(eval_view_gaps(cap, bare, gaps, sizeof(gaps)) == 2);
    CHECK_STR(gaps, "no PriorityClasses (read by the capacity rules), no Pods (read by the "
                    "capacity rules)");
    CHECK(eval_view_gaps(gpu_only, bare, gaps, sizeof(gaps)) == 0 && gaps[0] == '\0');
    CHECK(eval_view_gaps(dflt, full, gaps, sizeof(gaps)) == 0 && gaps[0] == '\0');
    CHECK(eval_view_gaps(dflt, NULL, gaps, sizeof(gaps)) == 0);

    /* a class the pod names, and the rule's default class, unknown for want of classes */
    obj = js(named.object);
    r = make_review(&named, harness_val(obj));
    decision_init(&dec);
    CHECK(r != NULL && eval_review(deny, r, false, false, noclass, &dec) == 0);
    CHECK(!dec.allowed);
    CHECK_CONTAINS(dec.message, "[priority-class] priorityClassName \"batch-low\" is not a known "
                                "PriorityClass (the cluster view is a snapshot without "
                                "PriorityClasses: list them in it too");
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(obj);
    obj = js(unnamed.object);
    r = make_review(&unnamed, harness_val(obj));
    decision_init(&dec);
    CHECK(r != NULL && eval_review(deny, r, false, false, noclass, &dec) == 0);
    CHECK(!dec.allowed);
    CHECK_CONTAINS(dec.message, "the default class \"gpu-standard\" is not a known PriorityClass "
                                "(the cluster view is a snapshot without PriorityClasses");
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(obj);
    /* a snapshot with classes: an unknown one is just unknown */
    obj = js(unknown.object);
    r = make_review(&unknown, harness_val(obj));
    decision_init(&dec);
    CHECK(r != NULL && eval_review(deny, r, false, false, full, &dec) == 0);
    CHECK(!dec.allowed);
    CHECK_CONTAINS(dec.message, "priorityClassName \"nope\" is not a known PriorityClass");
    CHECK(dec.message != NULL && strstr(dec.message, "snapshot") == NULL);
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(obj);

    unlink(p1);
    unlink(p2);
    policy_unref(dflt);
    policy_unref(deny);
    policy_unref(cap);
    policy_unref(gpu_only);
    cluster_free(noclass);
    cluster_free(bare);
    cluster_free(full);
}

/* Reservations: a denied review reserves nothing; two capacity rules reserve once. */
static void test_reservation_per_review(void)
{
    struct policy *p = load("capacity-twice.yaml");
    struct cluster *view = harness_view("stall.json");
    const struct ecase denied = {.resource = "apps/replicasets",
                                 .object = "{'metadata':{'name':'a'},'spec':{'replicas':2,"
                                           "'template':{'spec':{'tolerations':[" TOL "],"
                                           "'containers':[{'name':'t','resources':{'limits':"
                                           "{'nvidia.com/gpu':'1'}}}]}}}}"};
    /* three workloads of 2 pods: a reservation is the workload's, so each is another one */
    const struct ecase ok[3] = {
        {.resource = "apps/replicasets", .object = RS_NAMED("a0", 2, "batch-low")},
        {.resource = "apps/replicasets", .object = RS_NAMED("a1", 2, "batch-low")},
        {.resource = "apps/replicasets", .object = RS_NAMED("a2", 2, "batch-low")},
    };
    struct decision dec;
    yyjson_doc *o;
    struct review *r;

    /* denied by node-selector: the 2 GPUs it would have taken are not held */
    o = js(denied.object);
    r = make_review(&denied, harness_val(o));
    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, false, false, view, &dec) == 0);
    CHECK(!dec.allowed);
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(o);
    /* admitted twice in a row: 4 free GPUs, 2 + 2; each admission reserves 2, not 2 per rule */
    for (int i = 0; i < 2; i++) {
        o = js(ok[i].object);
        r = make_review(&ok[i], harness_val(o));
        decision_init(&dec);
        CHECK(r != NULL && eval_review(p, r, false, false, view, &dec) == 0);
        CHECK(dec.allowed && yyjson_mut_arr_size(dec.warnings) == 0);
        if (yyjson_mut_arr_size(dec.warnings) > 0)
            printf("  admission %d warned: %s\n", i, first_warning(&dec));
        decision_release(&dec);
        review_free(r);
        yyjson_doc_free(o);
    }
    /* the third finds the 4 free GPUs held */
    o = js(ok[2].object);
    r = make_review(&ok[2], harness_val(o));
    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, false, false, view, &dec) == 0);
    CHECK(has_warning(&dec, "only 0 of 2 more pods fit now"));
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(o);
    cluster_free(view);
    policy_unref(p);
}

/* One /validate review of c's object against view: whether it is allowed, and its first
 * warning or else its denial into text (len bytes; "" for neither). */
static bool admit(struct policy *p, struct cluster *view, const struct ecase *c, char *text,
                  size_t len)
{
    yyjson_doc *o = js(c->object);
    struct review *r = make_review(c, harness_val(o));
    struct decision dec;
    bool allowed;

    decision_init(&dec);
    CHECK(r != NULL && eval_review(p, r, false, false, view, &dec) == 0);
    allowed = dec.allowed;
    snprintf(text, len, "%s",
             yyjson_mut_arr_size(dec.warnings) ? first_warning(&dec)
             : dec.message                     ? dec.message
                                               : "");
    decision_release(&dec);
    review_free(r);
    yyjson_doc_free(o);
    return allowed;
}

/* A retried CREATE (a client timeout, a GitOps resync, a request another webhook refused) is
 * not charged its own reservation: reservations are the workload's, replaced, not added. */
static void test_reservation_retry(void)
{
    struct policy *p = load("capacity.yaml");
    struct cluster *view = harness_view("stall.json"); /* 4 GPUs free */
    const struct ecase b = {.resource = "apps/replicasets",
                            .object = RS_NAMED("b", 4, "batch-low")};
    const struct ecase b_up = {.resource = "apps/replicasets",
                               .op = "UPDATE",
                               .object = RS_NAMED("b", 5, "batch-low"),
                               .old_object = RS_NAMED("b", 4, "batch-low")};
    const struct ecase c = {.resource = "apps/replicasets",
                            .object = RS_NAMED("c", 1, "batch-low")};
    char text[2048];

    CHECK(admit(p, view, &b, text, sizeof(text)));
    CHECK_STR(text, "");
    /* the same CREATE within the window: it replaces its reservation of 4 */
    CHECK(admit(p, view, &b, text, sizeof(text)));
    CHECK_STR(text, "");
    CHECK(admit(p, view, &b, text, sizeof(text)));
    /* another workload finds the 4 held once (not three times) */
    CHECK(!admit(p, view, &c, text, sizeof(text)));
    CHECK_CONTAINS(text, "replicasets ml/c: only 0 of 1 more pods fit now");
    /* b's next step, from 4 to 5: its earlier 4 are still on their way */
    CHECK(!admit(p, view, &b_up, text, sizeof(text)));
    CHECK_CONTAINS(text, "replicasets ml/b: only 0 of 1 more pods fit now");
    cluster_free(view);
    policy_unref(p);
}

/* A scale-down takes back what the workload's admissions still hold past its new replicas
 * (stall.json: 4 GPUs free): b admitted at 4 and scaled to 1 holds 1, so 3 are left. */
static void test_scale_down_shrinks_the_reservation(void)
{
    struct policy *p = load("capacity.yaml");
    struct cluster *view = harness_view("stall.json");
    const struct ecase b = {.resource = "apps/replicasets",
                            .object = RS_NAMED("b", 4, "batch-low")};
    const struct ecase b_down = {.resource = "apps/replicasets",
                                 .op = "UPDATE",
                                 .object = RS_NAMED("b", 1, "batch-low"),
                                 .old_object = RS_NAMED("b", 4, "batch-low")};
    const struct ecase c = {.resource = "apps/replicasets",
                            .object = RS_NAMED("c", 3, "batch-low")};
    const struct ecase d = {.resource = "apps/replicasets",
                            .object = RS_NAMED("d", 1, "batch-low")};
    char text[2048];

    CHECK(admit(p, view, &b, text, sizeof(text)));
    CHECK(admit(p, view, &b_down, text, sizeof(text)));
    CHECK(admit(p, view, &c, text, sizeof(text)));
    CHECK_STR(text, "");
    CHECK(!admit(p, view, &d, text, sizeof(text)));
    CHECK_CONTAINS(text, "replicasets ml/d: only 0 of 1 more pods fit now");
    cluster_free(view);
    /* from 4 to 3 to 0: it holds 3, then none */
    view = harness_view("stall.json");
    {
        const struct ecase b3 = {.resource = "apps/replicasets",
                                 .op = "UPDATE",
                                 .object = RS_NAMED("b", 3, "batch-low"),
                                 .old_object = RS_NAMED("b", 4, "batch-low")};
        const struct ecase b0 = {.resource = "apps/replicasets",
                                 .op = "UPDATE",
                                 .object = RS_NAMED("b", 0, "batch-low"),
                                 .old_object = RS_NAMED("b", 3, "batch-low")};
        const struct ecase d2 = {.resource = "apps/replicasets",
                                 .object = RS_NAMED("d", 2, "batch-low")};

        CHECK(admit(p, view, &b, text, sizeof(text)));
        CHECK(admit(p, view, &b3, text, sizeof(text)));
        CHECK(admit(p, view, &d, text, sizeof(text)));
        CHECK(!admit(p, view, &d2, text, sizeof(text)));
        CHECK(admit(p, view, &b0, text, sizeof(text)));
        CHECK(admit(p, view, &d2, text, sizeof(text)));
    }
    cluster_free(view);
    policy_unref(p);
}

/* A reservation ends when the view shows the workload's replicas at its target, not as soon
 * as one of its pods is Pending (held.json: 4 GPUs free; Deployment ml/b of 5 replicas, 4
 * bound and 1 Pending, which takes one of them). b's scale to 8 is admitted and holds 3; the
 * Pending pod is one of the 5 it had, so c finds the 3 still held. */
#define DEP_NAMED(name, n)                                                                         \
    "{'metadata':{'name':'" name "','namespace':'ml'},'spec':{'replicas':" #n                      \
    ",'template':{'metadata':{'labels':{'app':'" name                                              \
    "'}},'spec':" TEMPLATE_SPEC("batch-low") "}}}"
static void test_reservation_until_the_view_shows_it(void)
{
    struct policy *p = load("capacity.yaml");
    struct cluster *view = harness_view("held.json");
    const struct ecase b_up = {.resource = "apps/deployments",
                               .op = "UPDATE",
                               .object = DEP_NAMED("b", 8),
                               .old_object = DEP_NAMED("b", 5)};
    const struct ecase c = {.resource = "apps/deployments", .object = DEP_NAMED("c", 3)};
    const struct ecase c1 = {.resource = "apps/deployments", .object = DEP_NAMED("c", 1)};
    char text[2048];

    CHECK(admit(p, view, &b_up, text, sizeof(text)));
    CHECK_STR(text, "");
    CHECK(!admit(p, view, &c, text, sizeof(text)));
    CHECK_CONTAINS(text, "deployments ml/c: only 0 of 3 more pods fit now");
    CHECK(!admit(p, view, &c1, text, sizeof(text)));
    CHECK_CONTAINS(text, "deployments ml/c: only 0 of 1 more pods fit now");
    cluster_free(view);
    policy_unref(p);
}

/* The route table answers for exactly its entries, per operation and endpoint; the
 * subresources and kinds next to them are not routed. */
static void test_routes(void)
{
    static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
    static const struct {
        const char *resource, *sub;
    } others[] = {{"apps/daemonsets", NULL},      {"/pods", "status"},
                  {"/pods", "binding"},           {"/pods", "eviction"},
                  {"apps/deployments", "status"}, {"/services", NULL},
                  {"batch/cronjobs", "status"},   {"apps/replicasets", "status"}};
    size_t n;
    const struct eval_route *rt = eval_routes(&n);
    yyjson_doc *obj = js("{}");

    CHECK(n == 13);
    for (size_t i = 0; i < n; i++) {
        char res[96];

        snprintf(res, sizeof(res), "%s/%s", rt[i].group, rt[i].resource);
        for (int k = 0; k < 4; k++) {
            struct ecase c = {.resource = res, .op = ops[k], .sub = rt[i].sub_resource};
            struct review *r = make_review(&c, harness_val(obj));
            const struct eval_route *want[2] = {NULL, NULL};

            CHECK(r != NULL);
            if (r == NULL)
                continue;
            /* a resource may have a route per set of operations (pods: CREATE at both
             * endpoints, UPDATE at /validate only): the one whose operations hold */
            for (size_t j = 0; j < n; j++) {
                if (strcmp(rt[j].group, rt[i].group) != 0 ||
                    strcmp(rt[j].resource, rt[i].resource) != 0 ||
                    strcmp(rt[j].sub_resource, rt[i].sub_resource) != 0 ||
                    (rt[j].ops & (1u << k)) == 0)
                    continue;
                if (want[0] == NULL && rt[j].mutating)
                    want[0] = &rt[j];
                if (want[1] == NULL && rt[j].validating)
                    want[1] = &rt[j];
            }
            CHECK(eval_route_of(r, true) == want[0]);
            CHECK(eval_route_of(r, false) == want[1]);
            review_free(r);
        }
    }
    {
        struct ecase c = {.resource = "/pods", .op = "UPDATE"};
        struct review *r = make_review(&c, harness_val(obj));

        CHECK(r != NULL && eval_route_of(r, true) == NULL && eval_route_of(r, false) != NULL);
        review_free(r);
    }
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        for (int k = 0; k < 4; k++) {
            struct ecase c = {.resource = others[i].resource, .op = ops[k], .sub = others[i].sub};
            struct review *r = make_review(&c, harness_val(obj));

            CHECK(r != NULL);
            if (r == NULL)
                continue;
            CHECK(eval_route_of(r, true) == NULL);
            CHECK(eval_route_of(r, false) == NULL);
            review_free(r);
        }
    }
    yyjson_doc_free(obj);
}

/* Runs a table of cases, each as check_case does. */
#define CHECK_CASES(table)                                                                         \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++)                           \
            check_case(&(table)[i_]);                                                              \
    } while (0)

/* A Deny rule under Warn at /validate: the pod is allowed, and the would-be denial comes back
 * as a warning, one per problem, prefixed with the rule's name; /mutate is left alone (Deny
 * rules never patch). */
static void test_deny_warn_at_validate(void)
{
    static const struct ecase table[] = {
        {.name = "Deny+Warn warns at /validate",
         .policy = "deny-warn.yaml",
         .object = GPU_POD,
         .allowed = 1,
         .warning = "gpuadmit [tolerations]: would deny: GPU pod does not tolerate the GPU node "
                    "taint nvidia.com/gpu:NoSchedule"},
        {.name = "Deny+Warn: every rule that finds a problem warns",
         .policy = "deny-warn.yaml",
         .object = GPU_POD,
         .allowed = 1,
         .warning = "gpuadmit [priority-class]: would deny: GPU pod has no priorityClassName"},
        {.name = "Deny+Warn is silent at /mutate",
         .policy = "deny-warn.yaml",
         .mutating = true,
         .object = GPU_POD,
         .allowed = 1},
        {.name = "Deny+Warn: a settled pod gets no warning",
         .policy = "deny-warn.yaml",
         .object = SETTLED_POD,
         .allowed = 1},
    };

    CHECK_CASES(table);
}

/* device-plugin-config: the ConfigMaps it names, at /validate, under each enforcement. */
#define CM(name, data)                                                                             \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'" name "'},'data':" data "}"
#define BAD_CM(name) CM(name, "{'any':'version: v1\\nflags:\\n  renameByDefault: true\\n'}")
#define GOOD_CM(name)                                                                              \
    CM(name, "{'any':'sharing:\\n  timeSlicing:\\n    resources:\\n    - {name: nvidia.com/gpu, "  \
             "replicas: 4}\\n'}")
#define RENAMED_CM(name)                                                                           \
    CM(name, "{'any':'sharing:\\n  timeSlicing:\\n    resources:\\n    - {name: nvidia.com/gpu, "  \
             "rename: x, replicas: 4}\\n'}")
#define DP_1433 "data[any]:3:3: unknown key \"renameByDefault\" in flags"
static void test_device_plugin_config(void)
{
    static const struct ecase table[] = {
        {.name = "Enforce denies, naming the ConfigMap, the key, its line and column",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = BAD_CM("time-slicing-config"),
         .allowed = 0,
         .message = "gpuadmit: ConfigMap gpu-operator/time-slicing-config [dp-enforce] " DP_1433},
        {.name = "Enforce judges an UPDATE too",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .op = "UPDATE",
         .object = BAD_CM("time-slicing-config"),
         .old_object = GOOD_CM("time-slicing-config"),
         .allowed = 0,
         .message = DP_1433},
        {.name = "a DELETE is not judged (its object is null)",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .op = "DELETE",
         .object = "null",
         .old_object = BAD_CM("time-slicing-config"),
         .allowed = 1},
        {.name = "/mutate leaves ConfigMaps alone",
         .policy = "device-plugin-config.yaml",
         .mutating = true,
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = BAD_CM("time-slicing-config"),
         .allowed = 1},
        {.name = "a good config passes",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = GOOD_CM("time-slicing-config"),
         .allowed = 1},
        {.name = "Enforce: what the plugin ignores is a warning",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = RENAMED_CM("time-slicing-config"),
         .allowed = 1,
         .warning = "gpuadmit [dp-enforce]: data[any]:4:38: "
                    "sharing.timeSlicing.resources[0].rename nvidia.com/x is ignored"},
        {.name = "Warn warns what it would deny",
         .policy = "device-plugin-config.yaml",
         .ns = "kube-system",
         .resource = "/configmaps",
         .object = BAD_CM("time-slicing-config"),
         .allowed = 1,
         .warning = "gpuadmit [dp-warn]: would deny: " DP_1433},
        {.name = "Audit annotates what it would deny",
         .policy = "device-plugin-config.yaml",
         .ns = "kube-system",
         .resource = "/configmaps",
         .object = BAD_CM("nvidia-device-plugin-config"),
         .allowed = 1,
         .annotation = "dp-audit=would deny: " DP_1433},
        {.name = "Audit annotates what it would warn",
         .policy = "device-plugin-config.yaml",
         .ns = "kube-system",
         .resource = "/configmaps",
         .object = RENAMED_CM("nvidia-device-plugin-config"),
         .allowed = 1,
         .annotation = "dp-audit=would warn: data[any]:4:38:"},
        {.name = "audit-only turns Enforce into Audit",
         .policy = "device-plugin-config.yaml",
         .audit_only = true,
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = BAD_CM("time-slicing-config"),
         .allowed = 1,
         .annotation = "dp-enforce=would deny: " DP_1433},
        {.name = "a ConfigMap no rule names is allowed untouched",
         .policy = "device-plugin-config.yaml",
         .ns = "gpu-operator",
         .resource = "/configmaps",
         .object = BAD_CM("other"),
         .allowed = 1},
        {.name = "the same name in another namespace is not judged",
         .policy = "device-plugin-config.yaml",
         .ns = "ml",
         .resource = "/configmaps",
         .object = BAD_CM("time-slicing-config"),
         .allowed = 1},
        {.name = "the rule's own match applies: another user is not judged",
         .policy = "device-plugin-config.yaml",
         .ns = "kube-system",
         .resource = "/configmaps",
         .object = BAD_CM("scoped"),
         .allowed = 1},
        {.name = "the rule's own match applies: its user is judged",
         .policy = "device-plugin-config.yaml",
         .ns = "kube-system",
         .resource = "/configmaps",
         .user = "system:serviceaccount:gpu-operator:gpu-operator",
         .object = BAD_CM("scoped"),
         .allowed = 0,
         .message = "[dp-scoped] " DP_1433},
    };

    CHECK_CASES(table);
}

/* A toleration whose effect is empty matches every effect of its key, as the scheduler has it
 * (k8s.io/api/core/v1 toleration.go, ToleratesTaint: "if len(t.Effect) > 0 && t.Effect !=
 * taint.Effect { return false }"). */
#define ANY_EFFECT "{'key':'nvidia.com/gpu','operator':'Exists','effect':''}"
#define NO_EFFECT  "{'key':'nvidia.com/gpu','operator':'Exists'}"
static void test_empty_effect_tolerates_every_effect(void)
{
    static const struct ecase table[] = {
        {.name = "effect \"\" tolerates NoSchedule: nothing to patch",
         .policy = "mutate.yaml",
         .mutating = true,
         .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                       "'tolerations':[" ANY_EFFECT "],'nodeSelector':{'nvidia.com/"
                       "gpu.present':'true'}}"),
         .allowed = 1},
        {.name = "effect \"\" tolerates NoSchedule: nothing to deny",
         .policy = "deny.yaml",
         .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                       "'tolerations':[" ANY_EFFECT "],'nodeSelector':{'nvidia.com/"
                       "gpu.present':'true'}}"),
         .allowed = 1},
        {.name = "no effect at all tolerates NoSchedule too",
         .policy = "deny.yaml",
         .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                       "'tolerations':[" NO_EFFECT "],'nodeSelector':{'nvidia.com/"
                       "gpu.present':'true'}}"),
         .allowed = 1},
        {.name = "another effect does not tolerate NoSchedule",
         .policy = "deny.yaml",
         .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                       "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':"
                       "'NoExecute'}],'nodeSelector':{'nvidia.com/gpu.present':'true'}}"),
         .allowed = 0,
         .message = "[tolerations] GPU pod does not tolerate the GPU node taint "
                    "nvidia.com/gpu:NoSchedule"},
    };

    CHECK_CASES(table);
}

/* NVIDIA_VISIBLE_DEVICES asks the NVIDIA container runtime for GPUs unless it is "void", empty
 * (the runtime then acts as runc) or "none" (no GPU, only the driver's capabilities):
 * NVIDIA Container Toolkit, "Specialized Configurations with Docker", Environment variables.
 * The policy refuses every value a user sets but "void" and "none", the empty one too: only the
 * device plugin has cause to set the variable (rules/README.md, GPU access per container). */
#define VISIBLE(value)                                                                             \
    POD("{'containers':[{'name':'c','env':[{'name':'NVIDIA_VISIBLE_DEVICES','value':'" value       \
        "'}]}]}")
static void test_visible_devices_without_a_gpu(void)
{
    static const struct ecase table[] = {
        {.name = "NVIDIA_VISIBLE_DEVICES=none asks for no GPU",
         .policy = "mutate.yaml",
         .object = VISIBLE("none"),
         .allowed = 1},
        /* "" is no device to the runtime, as void: it can only narrow (cuda_image.go) */
        {.name = "NVIDIA_VISIBLE_DEVICES=\"\" asks for no GPU",
         .policy = "mutate.yaml",
         .object = VISIBLE(""),
         .allowed = 1},
        {.name = "NVIDIA_VISIBLE_DEVICES=all asks for every GPU",
         .policy = "mutate.yaml",
         .object = VISIBLE("all"),
         .allowed = 0,
         .message = "container \"c\" sets NVIDIA_VISIBLE_DEVICES=\"all\", which the NVIDIA "
                    "runtime honours around the device plugin"},
        {.name = "NVIDIA_VISIBLE_DEVICES=0 asks for a GPU",
         .policy = "mutate.yaml",
         .object = VISIBLE("0"),
         .allowed = 0,
         .message = "container \"c\" sets NVIDIA_VISIBLE_DEVICES=\"0\", which the NVIDIA "
                    "runtime honours around the device plugin"},
    };

    CHECK_CASES(table);
}

/* Init containers run on the node like the others (k8s.io/api/core/v1 types.go, PodSpec
 * InitContainers), with the same environment and security context: each way to a GPU counts
 * in them too. */
static void test_init_containers_are_judged(void)
{
    static const struct ecase table[] = {
        {.name = "NVIDIA_VISIBLE_DEVICES in an init container only",
         .policy = "mutate.yaml",
         .object = POD("{'initContainers':[{'name':'init','env':[{'name':'NVIDIA_VISIBLE_DEVICES',"
                       "'value':'all'}]}],'containers':[" CPU_CONTAINER "]}"),
         .allowed = 0,
         .message = "container \"init\" sets NVIDIA_VISIBLE_DEVICES=\"all\""},
        {.name = "a privileged init container on GPU nodes",
         .policy = "mutate.yaml",
         .object = POD("{'initContainers':[{'name':'init','securityContext':{'privileged':true}}],"
                       "'containers':[" CPU_CONTAINER "],'tolerations':[" TOL "]}"),
         .allowed = 0,
         .message = "privileged container \"init\" can reach GPU devices"},
        {.name = "envFrom in an init container on a pod that reaches GPU nodes",
         .policy = "mutate.yaml",
         .object = POD("{'initContainers':[{'name':'init','envFrom':[{'configMapRef':{'name':"
                       "'x'}}]}],'containers':[" CPU_CONTAINER "],'nodeName':'n'}"),
         .allowed = 0,
         .message = "takes its environment from envFrom"},
    };

    CHECK_CASES(table);
}

/* maxPerPod is the most a pod may ask: exactly that many is allowed. */
static void test_max_per_pod_is_inclusive(void)
{
    static const struct ecase table[] = {
        {.name = "exactly maxPerPod (8) GPUs is allowed",
         .policy = "deny.yaml",
         .object = POD("{'containers':[{'name':'big','resources':{'limits':{'nvidia.com/"
                       "gpu':'8'}}}]," SETTLED_SPEC "}"),
         .allowed = 1},
        {.name = "one past maxPerPod is denied",
         .policy = "deny.yaml",
         .object = POD("{'containers':[{'name':'big','resources':{'limits':{'nvidia.com/"
                       "gpu':'9'}}}]," SETTLED_SPEC "}"),
         .allowed = 0,
         .message = "pod requests 9 nvidia.com/gpu, more than the maximum of 8 per pod"},
    };

    CHECK_CASES(table);
}

/* A Deployment rolls out with maxSurge 25%, rounded up, when its strategy leaves it out
 * (k8s.io/api apps/v1 types.go, RollingUpdateDeployment.MaxSurge: "Defaults to 25%. Absolute
 * number is calculated from percentage by rounding up."). The surge is new demand only with
 * maxUnavailable 0 (ResolveFenceposts): then a new template that also scales 12 replicas to 13
 * brings 1 + ceil(3.25) = 5 more pods at once, and the stall view has room for 4 (16 in all).
 * With maxUnavailable at its default (25%, rounded down: 3) the old pods make room. */
#define DEPLOY_WITH(n, labels, strategy)                                                           \
    "{'metadata':{'name':'trainer'},'spec':{'replicas':" #n ",'strategy':" strategy                \
    ",'template':{'metadata':{'labels':{'v':'" labels                                              \
    "'}},'spec':" TEMPLATE_SPEC("batch-low") "}}}"
#define DEPLOY(n, labels) DEPLOY_WITH(n, labels, "{'rollingUpdate':{'maxUnavailable':0}}")
static void test_default_surge(void)
{
    static const struct ecase table[] = {
        {.name = "capacity: with the default maxUnavailable the surge is no new demand",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(13, "2", "{}"),
         .old_object = DEPLOY_WITH(12, "1", "{}"),
         .allowed = 1},
        {.name = "capacity: the default surge is 25% of the replicas, rounded up",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY(13, "2"),
         .old_object = DEPLOY(12, "1"),
         .allowed = 0,
         .message = "only 4 of 5 more pods fit now"},
        {.name = "capacity: a scale-down frees GPUs for the surge: 12 to 8 surges by 8 - 4",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(8, "2", "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'100%'}}"),
         .old_object = DEPLOY_WITH(12, "1", "{'rollingUpdate':{'maxUnavailable':0}}"),
         .allowed = 1},
        {.name = "capacity: ... and 12 to 10 surges by 10 - 2, which do not fit",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(10, "2", "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'100%'}}"),
         .old_object = DEPLOY_WITH(12, "1", "{'rollingUpdate':{'maxUnavailable':0}}"),
         .allowed = 0,
         .message = "only 4 of 8 more pods fit now"},
        /* maxSurge has no 100% cap (apps validation caps maxUnavailable only), and a
         * percentage that would overflow replicas * N is still more than the replicas */
        {.name = "capacity: ... as does a maxSurge of 200%, capped at the replicas",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(10, "2", "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'200%'}}"),
         .old_object = DEPLOY_WITH(12, "1", "{'rollingUpdate':{'maxUnavailable':0}}"),
         .allowed = 0,
         .message = "only 4 of 8 more pods fit now"},
        {.name = "capacity: ... and a maxSurge of 999999999999999999% (10 x it overflows int64)",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(10, "2",
                               "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':"
                               "'999999999999999999%'}}"),
         .old_object = DEPLOY_WITH(12, "1", "{'rollingUpdate':{'maxUnavailable':0}}"),
         .allowed = 0,
         .message = "only 4 of 8 more pods fit now"},
        {.name = "capacity: a maxSurge that is not a percentage (25%x) surges by none",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(10, "2", "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'25%x'}}"),
         .old_object = DEPLOY_WITH(12, "1", "{'rollingUpdate':{'maxUnavailable':0}}"),
         .allowed = 1},
        {.name = "capacity: a ReplicaSet's new template replaces none of its pods: not judged",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/replicasets",
         .op = "UPDATE",
         .object = "{'metadata':{'name':'trainer'},'spec':{'replicas':4,'template':{'spec':{"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'},"
                   "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'9'}}}]}}}}",
         .old_object = RS(4, "batch-low"),
         .allowed = 1},
        {.name = "capacity: a StatefulSet's new template replaces its pods: each must fit",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/statefulsets",
         .op = "UPDATE",
         .object = "{'metadata':{'name':'trainer'},'spec':{'replicas':4,'template':{'spec':{"
                   "'tolerations':[" TOL "],'nodeSelector':{'nvidia.com/gpu.present':'true'},"
                   "'containers':[{'name':'t','resources':{'limits':{'nvidia.com/gpu':'9'}}}]}}}}",
         .old_object = RS(4, "batch-low"),
         .allowed = 0,
         .message = "can never fit: 4 pods at once, at most 0 fit the eligible nodes"},
        {.name = "capacity: a paused Deployment rolls nothing out: no surge",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(8, "2",
                               "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'100%'}},"
                               "'paused':true"),
         .old_object = DEPLOY_WITH(8, "1",
                                   "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':"
                                   "'100%'}},'paused':true"),
         .allowed = 1},
        {.name = "capacity: ... and the UPDATE that resumes it judges the surge",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY_WITH(8, "2", "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':'100%'}}"),
         .old_object = DEPLOY_WITH(8, "2",
                                   "{'rollingUpdate':{'maxUnavailable':0,'maxSurge':"
                                   "'100%'}},'paused':true"),
         .allowed = 0,
         .message = "only 4 of 8 more pods fit now"},
        {.name = "capacity: 12 replicas surge by 3, which fit",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "apps/deployments",
         .op = "UPDATE",
         .object = DEPLOY(12, "2"),
         .old_object = DEPLOY(12, "1"),
         .allowed = 1},
    };

    CHECK_CASES(table);
}

/* A running Job whose parallelism is raised past what the eligible nodes hold at most runs
 * that many at once (stall.json: 16 at most, 4 free): the new demand is the clamped width less
 * the pods it runs already, max(0, min(total, at most) - before). */
#define JOB_LOW(par)                                                                               \
    "{'metadata':{'name':'j'},'spec':{'parallelism':" #par                                         \
    ",'template':{'spec':" TEMPLATE_SPEC("batch-low") "}}}"
static void test_clamped_job_increase(void)
{
    static const struct ecase table[] = {
        {.name = "capacity: parallelism 14 to 20 runs 2 more at once, which fit",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "batch/jobs",
         .op = "UPDATE",
         .object = JOB_LOW(20),
         .old_object = JOB_LOW(14),
         .allowed = 1,
         .warning = "jobs ml/j runs at most 16 of its 20 pods at once"},
        {.name = "capacity: parallelism 10 to 20 runs 6 more at once, of which 4 fit",
         .policy = "capacity.yaml",
         .view = "stall.json",
         .resource = "batch/jobs",
         .op = "UPDATE",
         .object = JOB_LOW(20),
         .old_object = JOB_LOW(10),
         .allowed = 0,
         .message = "only 4 of 6 more pods fit now",
         .warning = "jobs ml/j runs at most 16 of its 20 pods at once"},
    };

    CHECK_CASES(table);
}

/* hostPath paths are judged as the kernel resolves them: ".." takes the segment before it
 * away, so a detour through another directory still lands on the device nodes, and one out
 * of /dev leaves them. */
static void test_host_path_dot_dot(void)
{
    static const struct ecase table[] = {
        {.name = "/home/../dev/nvidia0 is /dev/nvidia0",
         .policy = "mutate.yaml",
         .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{"
                       "'path':'/home/../dev/nvidia0'}}],'nodeName':'n'}"),
         .allowed = 0,
         .message = "hostPath volume \"/home/../dev/nvidia0\" exposes GPU device nodes"},
        {.name = "/opt/.. is the root, and every device node under it",
         .policy = "mutate.yaml",
         .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{"
                       "'path':'/opt/..'}}],'nodeName':'n'}"),
         .allowed = 0,
         .message = "hostPath volume \"/opt/..\" exposes GPU device nodes"},
        {.name = "/dev/../var/log is /var/log",
         .policy = "mutate.yaml",
         .object = POD("{'containers':[" CPU_CONTAINER "],'volumes':[{'name':'d','hostPath':{"
                       "'path':'/dev/../var/log'}}],'nodeName':'n'}"),
         .allowed = 1},
    };

    CHECK_CASES(table);
}

/* With operator Equal a toleration matches only a taint of the same value (core/v1
 * toleration.go, ToleratesTaint: TolerationOpEqual compares t.Value == taint.Value). A policy
 * taint without a value stands for any value, which an Equal toleration cannot be known to
 * match: it needs Exists. */
static void test_equal_toleration_needs_the_value(void)
{
    static const struct ecase table[] = {
        {.name = "Equal with a value does not tolerate a taint of any value",
         .policy = "deny.yaml",
         .object = POD("{'containers':[" GPU_CONTAINER "],'priorityClassName':'gpu-standard',"
                       "'tolerations':[{'key':'nvidia.com/gpu','operator':'Equal','value':"
                       "'present','effect':'NoSchedule'}],'nodeSelector':{'nvidia.com/"
                       "gpu.present':'true'}}"),
         .allowed = 0,
         .message = "[tolerations] GPU pod does not tolerate the GPU node taint "
                    "nvidia.com/gpu:NoSchedule"},
    };

    CHECK_CASES(table);
}

int main(void)
{
    FILE *logf = tmpfile();

    /* decisions are logged by design; keep them out of the test output */
    log_set_fd(fileno(logf));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_case(&cases[i]);
    RUN(test_routes);
    RUN(test_two_policies_share_lists);
    RUN(test_patch_beside_problem);
    RUN(test_audit_capacity_judges_the_patched_template);
    RUN(test_audit_scale_judges_the_patched_template);
    RUN(test_warn_mutate_rules_are_never_predicted);
    RUN(test_enforce_capacity_judges_templates_as_their_pods_are_patched);
    RUN(test_snapshot_without_classes);
    RUN(test_reservation_per_review);
    RUN(test_deny_warn_at_validate);
    RUN(test_device_plugin_config);
    RUN(test_empty_effect_tolerates_every_effect);
    RUN(test_visible_devices_without_a_gpu);
    RUN(test_init_containers_are_judged);
    RUN(test_max_per_pod_is_inclusive);
    RUN(test_default_surge);
    RUN(test_clamped_job_increase);
    RUN(test_host_path_dot_dot);
    RUN(test_equal_toleration_needs_the_value);
    RUN(test_reservation_retry);
    RUN(test_reservation_until_the_view_shows_it);
    RUN(test_scale_down_shrinks_the_reservation);
    TEST_MAIN_END("test_eval");
}
