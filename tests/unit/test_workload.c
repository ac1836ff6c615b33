/*
 * test_workload.c: workload.c, the GPU pods a change to a workload asks for, table-driven. Each
 * case is an AdmissionReview (resource, subresource, operation, object, old object), a cluster
 * view for the changes whose template lives there (a scale, an HPA), and the demand expected:
 * whether it is one, its increase, total, surge and replicas before, whether it grew. Every
 * expected number is what the workload's controller does, cited next to the case
 * (kubernetes/kubernetes at v1.37.2 unless said otherwise).
 */
#include <yyjson.h>

#include "cluster/cluster.h"
#include "harness.h"
#include "policy/workload.h"
#include "review.h"

#define GPU1                                                                                       \
    "{'containers':[{'name':'c','image':'trainer:1','resources':{'limits':{'nvidia.com/"           \
    "gpu':'1'}}}]}"
#define GPU2                                                                                       \
    "{'containers':[{'name':'c','image':'trainer:2','resources':{'limits':{'nvidia.com/"           \
    "gpu':'1'}}}]}"

/* A Deployment ml/web: its replicas (text, "" for none), its strategy (JSON, "" for none) and
 * its pod template spec. */
#define DEPLOY(replicas, strategy, tmpl)                                                           \
    "{'metadata':{'name':'web','namespace':'ml'},'spec':{" replicas strategy                       \
    "'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':'web'}},"    \
    "'spec':" tmpl "}}}"
#define R(n) "'replicas':" #n ","
#define ROLLING(surge, unavailable)                                                                \
    "'strategy':{'type':'RollingUpdate','rollingUpdate':{'maxSurge':" surge                        \
    ",'maxUnavailable':" unavailable "}},"
#define RECREATE "'strategy':{'type':'Recreate'},"
#define PAUSED   "'paused':true,"

#define RS(replicas, owner, tmpl)                                                                  \
    "{'metadata':{'name':'web-5d8f','namespace':'ml'" owner "},'spec':{" replicas                  \
    "'template':{'spec':" tmpl "}}}"
#define OWNED_BY(kind, controller)                                                                 \
    ",'ownerReferences':[{'apiVersion':'apps/v1','kind':'" kind "','name':'web','uid':'u',"        \
    "'controller':" controller "}]"

#define STS(replicas, tmpl)                                                                        \
    "{'metadata':{'name':'db','namespace':'ml'},'spec':{" replicas "'serviceName':'db',"           \
    "'template':{'spec':" tmpl "}}}"

/* A Job ml/train: its JobSpec's fields before the template, then its status. */
#define JOB(fields, status)                                                                        \
    "{'metadata':{'name':'train','namespace':'ml'},'spec':{" fields "'template':{'spec':" GPU1     \
    "}},'status':{" status "}}"
#define CRON(fields, job_fields)                                                                   \
    "{'metadata':{'name':'nightly','namespace':'ml'},'spec':{" fields "'schedule':'0 1 * * *',"    \
    "'jobTemplate':{'spec':{" job_fields "'template':{'spec':" GPU1 "}}}}}"

/* An autoscaling/v1 Scale of name, as the apiserver sends it for .../scale. */
#define SCALE(name, replicas)                                                                      \
    "{'kind':'Scale','apiVersion':'autoscaling/v1','metadata':{'name':'" name "','namespace':"     \
    "'ml'},'spec':{'replicas':" #replicas "}}"
#define HPA(kind, name, max)                                                                       \
    "{'kind':'HorizontalPodAutoscaler','metadata':{'name':'hpa','namespace':'ml'},'spec':{"        \
    "'scaleTargetRef':{'apiVersion':'apps/v1','kind':'" kind "','name':'" name "'},"               \
    "'minReplicas':1,'maxReplicas':" #max "}}"

struct wcase {
    const char *name;
    const char *resource; /* "group/resource" */
    const char *sub;      /* request.subResource, "" by default */
    const char *op;       /* default CREATE */
    const char *req_name; /* request.name, "" by default */
    const char *object;
    const char *old_object;
    bool owned_replicasets;
    const char *view; /* a snapshot in tests/data/snapshots, or NULL for none */
    bool is;          /* workload_demand_of()'s answer; the rest is checked only when true */
    int64_t increase, total, surge, before;
    bool grew, job, cron, hpa;
    const char *what;
};

static const struct wcase cases[] = {
    /* ---- Deployments: replicas ---- */
    /* A new Deployment: the controller makes its first ReplicaSet at NewRSNewReplicas, which
     * with no pods yet is min(replicas + maxSurge - 0, replicas - 0) = replicas
     * (pkg/controller/deployment/util/deployment_util.go; sync.go, getNewReplicaSet) */
    {.name = "deployment CREATE: all its replicas, no surge",
     .resource = "apps/deployments",
     .object = DEPLOY(R(3), "", GPU1),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .what = "deployments ml/web"},
    /* replicas defaults to 1 (pkg/apis/apps/v1/defaults.go, SetDefaults_Deployment) */
    {.name = "deployment CREATE without replicas: one",
     .resource = "apps/deployments",
     .object = DEPLOY("", "", GPU1),
     .is = true,
     .increase = 1,
     .total = 1,
     .grew = true},
    /* the same template at more replicas is a scaling event: sync.go, scale, grows the
     * active ReplicaSet to the new replicas, no surge pods */
    {.name = "deployment UPDATE: replicas up",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(5), "", GPU1),
     .old_object = DEPLOY(R(3), "", GPU1),
     .is = true,
     .increase = 2,
     .total = 5,
     .before = 3,
     .grew = true},
    {.name = "deployment UPDATE: replicas down",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(3), "", GPU1),
     .old_object = DEPLOY(R(5), "", GPU1),
     .is = true,
     .total = 3,
     .before = 5},
    {.name = "deployment UPDATE: nothing that makes pods changes",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(3), ROLLING("1", "0"), GPU1),
     .old_object = DEPLOY(R(3), ROLLING("1", "0"), GPU1),
     .is = true,
     .total = 3,
     .before = 3},

    /* ---- Deployments: a new template, the rollout's surge ---- */
    /* maxSurge and maxUnavailable default to 25% (pkg/apis/apps/v1/defaults.go); of 4
     * replicas ResolveFenceposts makes them ceil(1) = 1 and floor(1) = 1: with an unavailable
     * pod allowed, reconcileOldReplicaSets (rolling.go) scales the old ReplicaSet down in the
     * same sync, so the new pods take the GPUs it frees. Every new pod must still fit: grew */
    {.name = "deployment new template, default 25%/25% of 4: no surge",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), "", GPU2),
     .old_object = DEPLOY(R(4), "", GPU1),
     .is = true,
     .total = 4,
     .before = 4,
     .grew = true},
    /* of 3 replicas the default 25% maxUnavailable rounds DOWN to floor(0.75) = 0 and maxSurge
     * UP to ceil(0.75) = 1 (ResolveFenceposts: GetScaledValueFromIntOrPercent with roundUp
     * true, then false): the old pods stay until the one surge pod is available */
    {.name = "deployment new template, default 25%/25% of 3: one surge pod",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(3), "", GPU2),
     .old_object = DEPLOY(R(3), "", GPU1),
     .is = true,
     .increase = 1,
     .total = 3,
     .surge = 1,
     .before = 3,
     .grew = true},
    /* maxUnavailable 0, maxSurge 1 as an integer: NewRSNewReplicas scales the new ReplicaSet
     * to min(4 + 1 - 4, 4 - 0) = 1 while the 4 old pods keep their GPUs */
    {.name = "deployment new template, maxSurge 1 maxUnavailable 0",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(R(4), ROLLING("1", "0"), GPU1),
     .is = true,
     .increase = 1,
     .total = 4,
     .surge = 1,
     .before = 4,
     .grew = true,
     .what = "deployments ml/web"},
    /* a percentage of maxSurge rounds up: ceil(50% of 3) = 2 */
    {.name = "deployment new template, maxSurge 50% of 3 rounds up to 2",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(3), ROLLING("'50%'", "0"), GPU2),
     .old_object = DEPLOY(R(3), ROLLING("'50%'", "0"), GPU1),
     .is = true,
     .increase = 2,
     .total = 3,
     .surge = 2,
     .before = 3,
     .grew = true},
    /* maxUnavailable 1: the old ReplicaSet gives a pod's GPUs back as the surge pod comes */
    {.name = "deployment new template, maxUnavailable 1: no surge demand",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("2", "1"), GPU2),
     .old_object = DEPLOY(R(4), ROLLING("2", "1"), GPU1),
     .is = true,
     .total = 4,
     .before = 4,
     .grew = true},
    /* maxUnavailable 10% of 4 rounds down to 0 and maxSurge is 0%: both 0, so
     * ResolveFenceposts makes maxUnavailable 1, and the rollout replaces pods one by one */
    {.name = "deployment new template, both fenceposts 0: maxUnavailable becomes 1",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("'0%'", "'10%'"), GPU2),
     .old_object = DEPLOY(R(4), ROLLING("'0%'", "'10%'"), GPU1),
     .is = true,
     .total = 4,
     .before = 4,
     .grew = true},
    /* a maxSurge of any size is valid (ValidatePositiveIntOrPercent, IsValidPercent; only
     * maxUnavailable is capped at 100%): ceil(1e11% of 2) = 2e9, and NewRSNewReplicas never
     * scales the new ReplicaSet past replicas: 2 surge pods */
    {.name = "deployment new template, maxSurge 100000000000% of 2: surge is the replicas",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(2), ROLLING("'100000000000%'", "0"), GPU2),
     .old_object = DEPLOY(R(2), ROLLING("'100000000000%'", "0"), GPU1),
     .is = true,
     .increase = 2,
     .total = 2,
     .surge = 2,
     .before = 2,
     .grew = true},
    /* 1e11% of the most replicas an int32 holds is 2.1e20 pods, past int64: saturated, so the
     * surge is again the replicas, never a wrapped product. (The controller itself would
     * convert that maxSurge with int32() and wrap it; this asserts the cap NewRSNewReplicas
     * means, min(..., replicas - 0).) */
    {.name = "deployment new template, maxSurge 100000000000% of 2147483647 does not overflow",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(2147483647), ROLLING("'100000000000%'", "0"), GPU2),
     .old_object = DEPLOY(R(2147483647), ROLLING("'100000000000%'", "0"), GPU1),
     .is = true,
     .increase = 2147483647,
     .total = 2147483647,
     .surge = 2147483647,
     .before = 2147483647,
     .grew = true},
    /* Recreate deletes the old pods before it makes new ones (recreate.go,
     * rolloutRecreate: scaleDownOldReplicaSetsForRecreate, then wait for no old pods) */
    {.name = "deployment new template, Recreate: no surge",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), RECREATE, GPU2),
     .old_object = DEPLOY(R(4), RECREATE, GPU1),
     .is = true,
     .total = 4,
     .before = 4,
     .grew = true},
    /* new replicas and template at once: the scaling event comes first (syncDeployment:
     * isScalingEvent, then sync.go scale grows the old ReplicaSet 4 -> 6), then the rollout
     * surges min(6 + 1 - 6, 6) = 1 more: 2 + 1 */
    {.name = "deployment new template and replicas up: the scale-up, then the surge",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(6), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(R(4), ROLLING("1", "0"), GPU1),
     .is = true,
     .increase = 3,
     .total = 6,
     .surge = 1,
     .before = 4,
     .grew = true},
    /* scaled 6 -> 4 first (2 GPUs freed), then NewRSNewReplicas: min(4 + 3 - 4, 4) = 3 surge
     * pods, of which the freed GPUs hold 2: one more */
    {.name = "deployment new template and replicas down: the freed GPUs take the surge",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("3", "0"), GPU2),
     .old_object = DEPLOY(R(6), ROLLING("3", "0"), GPU1),
     .is = true,
     .increase = 1,
     .total = 4,
     .surge = 1,
     .before = 6,
     .grew = true},
    {.name = "deployment new template and replicas down past the surge: nothing more",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(R(6), ROLLING("1", "0"), GPU1),
     .is = true,
     .total = 4,
     .before = 6,
     .grew = true},
    /* a paused Deployment is only scaled (deployment_controller.go, syncDeployment: while
     * spec.paused, sync and return): its new template rolls nothing out yet */
    {.name = "deployment new template while paused: nothing rolls out",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(PAUSED R(4), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(PAUSED R(4), ROLLING("1", "0"), GPU1),
     .is = true,
     .total = 4,
     .before = 4},
    /* ... and the UPDATE that resumes it rolls out the template it has now */
    {.name = "deployment resumed: its template rolls out",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(4), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(PAUSED R(4), ROLLING("1", "0"), GPU2),
     .is = true,
     .increase = 1,
     .total = 4,
     .surge = 1,
     .before = 4,
     .grew = true},
    {.name = "deployment new template at 0 replicas: no pod to make",
     .resource = "apps/deployments",
     .op = "UPDATE",
     .object = DEPLOY(R(0), ROLLING("1", "0"), GPU2),
     .old_object = DEPLOY(R(0), ROLLING("1", "0"), GPU1),
     .is = true},

    /* ---- ReplicaSets ---- */
    /* replica_set.go, manageReplicas: creates replicas - len(active pods) */
    {.name = "replicaset CREATE: its replicas",
     .resource = "apps/replicasets",
     .object = RS(R(3), "", GPU1),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .what = "replicasets ml/web-5d8f"},
    /* a ReplicaSet never replaces running pods for a new template (manageReplicas counts
     * pods, not templates) */
    {.name = "replicaset new template: its pods stay",
     .resource = "apps/replicasets",
     .op = "UPDATE",
     .object = RS(R(3), "", GPU2),
     .old_object = RS(R(3), "", GPU1),
     .is = true,
     .total = 3,
     .before = 3},
    {.name = "replicaset of a Deployment: judged at its Deployment",
     .resource = "apps/replicasets",
     .object = RS(R(3), OWNED_BY("Deployment", "true"), GPU1),
     .owned_replicasets = false,
     .is = false},
    {.name = "replicaset of a Deployment, owned_replicasets: judged",
     .resource = "apps/replicasets",
     .object = RS(R(3), OWNED_BY("Deployment", "true"), GPU1),
     .owned_replicasets = true,
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true},
    /* only the controller reference makes it the Deployment's (metav1.GetControllerOf) */
    {.name = "replicaset whose Deployment owner is no controller: judged",
     .resource = "apps/replicasets",
     .object = RS(R(2), OWNED_BY("Deployment", "false"), GPU1),
     .is = true,
     .increase = 2,
     .total = 2,
     .grew = true},

    /* ---- StatefulSets ---- */
    /* stateful_set_control.go creates pods 0..replicas-1; replicas defaults to 1 */
    {.name = "statefulset CREATE: its replicas",
     .resource = "apps/statefulsets",
     .object = STS(R(2), GPU1),
     .is = true,
     .increase = 2,
     .total = 2,
     .grew = true,
     .what = "statefulsets ml/db"},
    {.name = "statefulset UPDATE: replicas up",
     .resource = "apps/statefulsets",
     .op = "UPDATE",
     .object = STS(R(5), GPU1),
     .old_object = STS(R(3), GPU1),
     .is = true,
     .increase = 2,
     .total = 5,
     .before = 3,
     .grew = true},
    /* a rolling update deletes a pod, then makes it anew (stateful_set_control.go,
     * updateStatefulSet): no surge, but each new pod must fit */
    {.name = "statefulset new template: every pod anew, no surge",
     .resource = "apps/statefulsets",
     .op = "UPDATE",
     .object = STS(R(3), GPU2),
     .old_object = STS(R(3), GPU1),
     .is = true,
     .total = 3,
     .before = 3,
     .grew = true},

    /* ---- Jobs ---- */
    /* job_controller.go, manageJob: wantActive = min(parallelism, completions - succeeded) */
    {.name = "job CREATE: parallelism 4 capped by completions 2",
     .resource = "batch/jobs",
     .object = JOB("'parallelism':4,'completions':2,", ""),
     .is = true,
     .increase = 2,
     .total = 2,
     .grew = true,
     .job = true,
     .what = "jobs ml/train"},
    {.name = "job CREATE: parallelism 2 of completions 10",
     .resource = "batch/jobs",
     .object = JOB("'parallelism':2,'completions':10,", ""),
     .is = true,
     .increase = 2,
     .total = 2,
     .grew = true,
     .job = true},
    /* no completions: a work queue, parallelism pods until one succeeds */
    {.name = "job CREATE: parallelism 3 without completions",
     .resource = "batch/jobs",
     .object = JOB("'parallelism':3,", ""),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .job = true},
    /* neither: both default to 1 (pkg/apis/batch/v1/defaults.go, SetDefaults_Job) */
    {.name = "job CREATE: neither parallelism nor completions",
     .resource = "batch/jobs",
     .object = JOB("", ""),
     .is = true,
     .increase = 1,
     .total = 1,
     .grew = true,
     .job = true},
    {.name = "job UPDATE: parallelism 2 -> 5 of 10 completions",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("'parallelism':5,'completions':10,", ""),
     .old_object = JOB("'parallelism':2,'completions':10,", ""),
     .is = true,
     .increase = 3,
     .total = 5,
     .before = 2,
     .grew = true,
     .job = true},
    /* the completions still to go are completions - status.succeeded, the stored Job's (an
     * UPDATE keeps the old status: pkg/registry/batch/job/strategy.go, PrepareForUpdate): of
     * 10 completions 9 succeeded, so min(5, 1) = 1 pod runs, as before the change */
    {.name = "job UPDATE: parallelism 2 -> 5 with 1 completion to go",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("'parallelism':5,'completions':10,", "'succeeded':9"),
     .old_object = JOB("'parallelism':2,'completions':10,", "'succeeded':9"),
     .is = true,
     .total = 1,
     .before = 1,
     .job = true},
    {.name = "job UPDATE: parallelism 2 -> 5 with 4 completions to go",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("'parallelism':5,'completions':10,", "'succeeded':6"),
     .old_object = JOB("'parallelism':2,'completions':10,", "'succeeded':6"),
     .is = true,
     .increase = 2,
     .total = 4,
     .before = 2,
     .grew = true,
     .job = true},
    /* no completions: once a pod has succeeded, manageJob keeps wantActive at the active
     * pods, creating none */
    {.name = "job UPDATE without completions after a success: no new pods",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("'parallelism':5,", "'succeeded':1,'active':2"),
     .old_object = JOB("'parallelism':2,", "'succeeded':1,'active':2"),
     .is = true,
     .job = true},
    /* a CREATE has no status (PrepareForCreate clears it), whatever the request carries */
    {.name = "job CREATE: a status in the request is not the Job's",
     .resource = "batch/jobs",
     .object = JOB("'parallelism':2,'completions':10,", "'succeeded':9"),
     .is = true,
     .increase = 2,
     .total = 2,
     .grew = true,
     .job = true},
    /* manageJob deletes every active pod of a suspended Job */
    {.name = "job CREATE suspended: no pods",
     .resource = "batch/jobs",
     .object = JOB("'suspend':true,'parallelism':3,", ""),
     .is = false},
    /* ... and creates them when it is resumed, as for a new Job */
    {.name = "job resumed: its pods as a CREATE's",
     .resource = "batch/jobs",
     .op = "UPDATE",
     .object = JOB("'suspend':false,'parallelism':3,", ""),
     .old_object = JOB("'suspend':true,'parallelism':3,", ""),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .job = true},

    /* ---- CronJobs ---- */
    /* cronjob_controllerv2.go makes each Job from spec.jobTemplate, and that Job's pods are
     * its width; a CronJob's Jobs come later (cron) */
    {.name = "cronjob CREATE: its Jobs' width",
     .resource = "batch/cronjobs",
     .object = CRON("", "'parallelism':3,'completions':5,"),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .job = true,
     .cron = true,
     .what = "cronjobs ml/nightly (its Jobs)"},
    {.name = "cronjob UPDATE, the same jobTemplate: nothing new",
     .resource = "batch/cronjobs",
     .op = "UPDATE",
     .object = CRON("'startingDeadlineSeconds':60,", "'parallelism':3,'completions':5,"),
     .old_object = CRON("", "'parallelism':3,'completions':5,"),
     .is = true,
     .total = 3,
     .before = 3,
     .job = true,
     .cron = true},
    {.name = "cronjob UPDATE, a wider jobTemplate: judged as a new one",
     .resource = "batch/cronjobs",
     .op = "UPDATE",
     .object = CRON("", "'parallelism':4,"),
     .old_object = CRON("", "'parallelism':3,"),
     .is = true,
     .increase = 4,
     .total = 4,
     .grew = true,
     .job = true,
     .cron = true},
    /* the UPDATE that resumes it makes its Jobs come again: judged as its CREATE */
    {.name = "cronjob resumed, the same jobTemplate: judged as new",
     .resource = "batch/cronjobs",
     .op = "UPDATE",
     .object = CRON("'suspend':false,", "'parallelism':3,"),
     .old_object = CRON("'suspend':true,", "'parallelism':3,"),
     .is = true,
     .increase = 3,
     .total = 3,
     .grew = true,
     .job = true,
     .cron = true},
    /* syncCronJob schedules nothing while spec.suspend is true */
    {.name = "cronjob suspended: no Jobs",
     .resource = "batch/cronjobs",
     .object = CRON("'suspend':true,", "'parallelism':3,"),
     .is = false},

    /* ---- the scale subresource: its spec.replicas becomes the workload's
     * (pkg/registry/apps/deployment/storage/storage.go, scaleUpdatedObjectInfo.UpdatedObject:
     * deployment.Spec.Replicas = scale.Spec.Replicas; the same for statefulsets and
     * replicasets), the template from the view ---- */
    {.name = "deployment scale 2 -> 5",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "trainer",
     .object = SCALE("trainer", 5),
     .old_object = SCALE("trainer", 2),
     .view = "stall.json",
     .is = true,
     .increase = 3,
     .total = 5,
     .before = 2,
     .grew = true,
     .what = "deployments ml/trainer (scale)"},
    {.name = "deployment scale 2 -> 1",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "trainer",
     .object = SCALE("trainer", 1),
     .old_object = SCALE("trainer", 2),
     .view = "stall.json",
     .is = true,
     .total = 1,
     .before = 2},
    /* without the old Scale, the replicas before are the view's (2 in stall.json) */
    {.name = "deployment scale without oldObject: the view's replicas before",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "trainer",
     .object = SCALE("trainer", 4),
     .view = "stall.json",
     .is = true,
     .increase = 2,
     .total = 4,
     .before = 2,
     .grew = true},
    {.name = "statefulset scale 4 -> 6",
     .resource = "apps/statefulsets",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "db",
     .object = SCALE("db", 6),
     .old_object = SCALE("db", 4),
     .view = "owed.json",
     .is = true,
     .increase = 2,
     .total = 6,
     .before = 4,
     .grew = true,
     .what = "statefulsets ml/db (scale)"},
    {.name = "replicaset scale 12 -> 16",
     .resource = "apps/replicasets",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "busy",
     .object = SCALE("busy", 16),
     .old_object = SCALE("busy", 12),
     .view = "seed-000.json",
     .is = true,
     .increase = 4,
     .total = 16,
     .before = 12,
     .grew = true},
    {.name = "scale of a workload the view holds no GPU template of",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "absent",
     .object = SCALE("absent", 5),
     .old_object = SCALE("absent", 2),
     .view = "stall.json",
     .is = false},
    {.name = "scale without a view: no template to judge",
     .resource = "apps/deployments",
     .sub = "scale",
     .op = "UPDATE",
     .req_name = "trainer",
     .object = SCALE("trainer", 5),
     .old_object = SCALE("trainer", 2),
     .is = false},

    /* ---- HorizontalPodAutoscalers: the controller never scales past maxReplicas
     * (pkg/controller/podautoscaler/horizontal.go, normalizeDesiredReplicas and
     * convertDesiredReplicasWithRules clamp to hpa.Spec.MaxReplicas) ---- */
    {.name = "hpa of trainer up to 6: 4 more than its 2",
     .resource = "autoscaling/horizontalpodautoscalers",
     .object = HPA("Deployment", "trainer", 6),
     .view = "stall.json",
     .is = true,
     .increase = 4,
     .total = 6,
     .grew = true,
     .hpa = true,
     .what = "HorizontalPodAutoscaler ml/hpa (target Deployment trainer, maxReplicas 6)"},
    {.name = "hpa of trainer up to its 2 replicas: nothing more",
     .resource = "autoscaling/horizontalpodautoscalers",
     .op = "UPDATE",
     .object = HPA("Deployment", "trainer", 2),
     .old_object = HPA("Deployment", "trainer", 6),
     .view = "stall.json",
     .is = true,
     .total = 2,
     .hpa = true},
    {.name = "hpa of a StatefulSet",
     .resource = "autoscaling/horizontalpodautoscalers",
     .object = HPA("StatefulSet", "db", 10),
     .view = "owed.json",
     .is = true,
     .increase = 6,
     .total = 10,
     .grew = true,
     .hpa = true},
    {.name = "hpa of a Job: no scale subresource to drive",
     .resource = "autoscaling/horizontalpodautoscalers",
     .object = HPA("Job", "trainer", 6),
     .view = "stall.json",
     .is = false},
    {.name = "hpa of a workload not in the view",
     .resource = "autoscaling/horizontalpodautoscalers",
     .object = HPA("Deployment", "absent", 6),
     .view = "stall.json",
     .is = false},

    /* ---- no workload change ---- */
    {.name = "a pod", .resource = "/pods", .object = "{'metadata':{'name':'p'},'spec':" GPU1 "}"},
    {.name = "a configmap",
     .resource = "/configmaps",
     .object = "{'metadata':{'name':'c'},'data':{'a':'b'}}"},
    {.name = "a deployment DELETE",
     .resource = "apps/deployments",
     .op = "DELETE",
     .old_object = DEPLOY(R(3), "", GPU1)},
    {.name = "a deployment's status",
     .resource = "apps/deployments",
     .sub = "status",
     .op = "UPDATE",
     .object = DEPLOY(R(5), "", GPU1),
     .old_object = DEPLOY(R(3), "", GPU1)},
    {.name = "a deployment without a pod template",
     .resource = "apps/deployments",
     .object = "{'metadata':{'name':'web','namespace':'ml'},'spec':{'replicas':3}}"},
    {.name = "a deployment CONNECT",
     .resource = "apps/deployments",
     .op = "CONNECT",
     .object = DEPLOY(R(3), "", GPU1)},
};

/* The case's AdmissionReview, in JSON written with single quotes; aborts the run when it does
 * not decode (a typo in a case). */
static struct review *make_review(const struct wcase *c)
{
    static char text[16384];
    const char *res = c->resource, *slash = strchr(res, '/');
    struct diag d;
    struct review *r;
    int n;

    n = snprintf(text, sizeof(text),
                 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview','request':{"
                 "'uid':'u1','kind':{'group':'%.*s','version':'v1','kind':'X'},"
                 "'resource':{'group':'%.*s','version':'v1','resource':'%s'},"
                 "'subResource':'%s','name':'%s','namespace':'ml','operation':'%s',"
                 "'userInfo':{'username':'alice'},'object':%s,'oldObject':%s}}",
                 (int)(slash - res), res, (int)(slash - res), res, slash + 1, c->sub ? c->sub : "",
                 c->req_name ? c->req_name : "", c->op ? c->op : "CREATE",
                 c->object ? c->object : "null", c->old_object ? c->old_object : "null");
    if (n < 0 || (size_t)n >= sizeof(text)) {
        printf("%s: review too long\n", c->name);
        exit(2);
    }
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    diag_clear(&d);
    r = review_decode(text, (size_t)n, &d);
    if (r == NULL) {
        printf("%s: review: %s\n", c->name, d.msg);
        exit(2);
    }
    return r;
}

/* The expectation of a case that is a workload change, against wd. */
static void check_demand(const struct wcase *c, const struct review *r,
                         const struct workload_demand *wd)
{
    bool view_template = c->view != NULL;

    CHECK(wd->increase == c->increase);
    CHECK(wd->total == c->total);
    CHECK(wd->surge == c->surge);
    CHECK(wd->before == c->before);
    CHECK(wd->grew == c->grew);
    CHECK(wd->job == c->job);
    CHECK(wd->cron == c->cron);
    CHECK(wd->hpa == c->hpa);
    CHECK(!wd->pod);
    /* the template judged: the review's own, or the view's copy for a scale or an HPA */
    CHECK(yyjson_is_arr(yyjson_obj_get(wd->spec, "containers")));
    CHECK((wd->spec_doc != NULL) == view_template);
    if (c->what != NULL)
        CHECK_STR(wd->what, c->what);
    if (!view_template && !c->cron)
        CHECK(wd->key == cluster_workload_key(r->resource.resource, "ml", review_object_name(r)));
}

static void test_workload_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct wcase *c = &cases[i];
        struct cluster *view = harness_view(c->view);
        struct review *r = make_review(c);
        struct workload_demand wd;
        int before = harness_failed;
        bool is;

        memset(&wd, 0, sizeof(wd));
        is = workload_demand_of(r, c->owned_replicasets, view, &wd);
        CHECK(is == c->is);
        if (is && c->is)
            check_demand(c, r, &wd);
        if (harness_failed != before)
            printf("  in case \"%s\": is %d increase %lld total %lld surge %lld before %lld "
                   "grew %d\n",
                   c->name, is, (long long)wd.increase, (long long)wd.total, (long long)wd.surge,
                   (long long)wd.before, wd.grew);
        workload_demand_release(&wd);
        CHECK(wd.spec_doc == NULL);
        review_free(r);
        cluster_free(view);
    }
}

int main(void)
{
    RUN(test_workload_cases);
    TEST_MAIN_END("test_workload");
}
