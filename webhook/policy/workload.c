/*
 * workload.c: the pods a workload change asks for (see workload.h).
 *
 * Invariants: only reads the review and the view; a count read from an object is range-checked
 * (json_int64), and a missing one takes the apiserver's default.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "parse.h"
#include "patch.h"

static int64_t int_at(yyjson_val *obj, const char *path, int64_t dflt)
{
    int64_t n;

    /* range-checked: a uint64 past INT64_MAX is no count here (jansson refused it at parse) */
    return json_int64(patch_get(obj, path), &n) ? n : dflt;
}

/* An IntOrString of a rolling update scaled to replicas, as the apimachinery's
 * intstr.GetScaledValueFromIntOrPercent does: an integer as it is, "N%" of replicas rounded up
 * or down; dflt_pct when absent. A string that is not a percent of at most max_pct counts as 0
 * (the apiserver's validation refuses it: maxUnavailable past 100%, but a maxSurge of any
 * size is valid). A product past int64 is INT64_MAX, more than any replicas. */
static int64_t scaled_intstr(yyjson_val *v, int64_t dflt_pct, uint64_t max_pct, int64_t replicas,
                             bool round_up)
{
    uint64_t pct = (uint64_t)dflt_pct;
    size_t len;
    int64_t n;

    if (yyjson_is_int(v))
        return json_int64(v, &n) && n > 0 ? n : 0;
    if (yyjson_is_str(v)) {
        len = yyjson_get_len(v);
        if (len < 2 || yyjson_get_str(v)[len - 1] != '%' ||
            parse_uintn(yyjson_get_str(v), len - 1, 0, max_pct, &pct) < 0)
            return 0;
    }
    if (__builtin_mul_overflow(replicas, (int64_t)pct, &n) || n > INT64_MAX - 99)
        return INT64_MAX;
    return round_up ? (n + 99) / 100 : n / 100;
}

/* The extra pods a Deployment's rollout to a new template needs GPUs for beyond its replicas.
 * The controller resolves maxSurge (rounded up) and maxUnavailable (rounded down), both 25% by
 * default, and makes maxUnavailable 1 when both are 0 (kubernetes/kubernetes
 * pkg/controller/deployment/util/deployment_util.go, ResolveFenceposts). With maxUnavailable
 * above 0, reconcileOldReplicaSets (rolling.go) scales the old ReplicaSet down in the same sync
 * and the surge pods take the GPUs it frees: no new demand. With maxUnavailable 0, the old pods
 * keep their GPUs until the surge pods are available, and NewRSNewReplicas creates up to
 * maxSurge of them (at most replicas). The Recreate strategy deletes the old pods first. */
static int64_t rollout_surge(yyjson_val *obj, int64_t replicas)
{
    yyjson_val *strategy = patch_get(obj, "/spec/strategy");
    yyjson_val *ru = yyjson_obj_get(strategy, "rollingUpdate");
    const char *type = json_str(yyjson_obj_get(strategy, "type"));
    int64_t surge, unavailable;

    if (type != NULL && strcmp(type, "Recreate") == 0)
        return 0;
    surge = scaled_intstr(yyjson_obj_get(ru, "maxSurge"), 25, INT64_MAX, replicas, true);
    unavailable = scaled_intstr(yyjson_obj_get(ru, "maxUnavailable"), 25, 100, replicas, false);
    if (unavailable > 0 || surge == 0)
        return 0;
    return surge < replicas ? surge : replicas;
}

/* A Job runs parallelism pods at once, capped by the completions still to go, and none more
 * once a Job without completions has had a pod succeed (pkg/controller/job/job_controller.go,
 * manageJob: wantActive is min(parallelism, completions - succeeded), at least 0). at is the
 * JobSpec ("/spec" of a Job, "/spec/jobTemplate/spec" of a CronJob); succeeded is the stored
 * Job's status.succeeded (a CREATE starts with none, PrepareForCreate; an UPDATE keeps the old
 * status, PrepareForUpdate, pkg/registry/batch/job/strategy.go). */
static int64_t job_width(yyjson_val *obj, const char *at, int64_t succeeded)
{
    yyjson_val *spec = patch_get(obj, at);
    yyjson_val *p = yyjson_obj_get(spec, "parallelism"), *c = yyjson_obj_get(spec, "completions");
    int64_t par, comp, left;

    if (!json_int64(p, &par))
        par = 1;
    if (!json_int64(c, &comp))
        return succeeded > 0 ? 0 : par;
    if (__builtin_sub_overflow(comp, succeeded, &left))
        left = 0;
    return left < par ? (left > 0 ? left : 0) : par;
}

static bool job_suspended(yyjson_val *obj)
{
    return yyjson_is_true(patch_get(obj, "/spec/suspend"));
}

static bool owned_by_deployment(yyjson_val *obj)
{
    yyjson_val *owners = patch_get(obj, "/metadata/ownerReferences"), *o;
    size_t i, max;

    yyjson_arr_foreach (owners, i, max, o) {
        const char *kind = json_str(yyjson_obj_get(o, "kind"));

        if (yyjson_is_true(yyjson_obj_get(o, "controller")) && kind && !strcmp(kind, "Deployment"))
            return true;
    }
    return false;
}

/* A CronJob CREATE or UPDATE: its jobTemplate, judged as the cronjob controller's Jobs will be
 * (pkg/controller/cronjob/cronjob_controllerv2.go creates each Job from spec.jobTemplate; this
 * webhook then judges that Job's CREATE), so that a CronJob whose Jobs would all be refused is
 * refused itself instead of failing at every schedule with FailedCreate events. */
static bool cap_cronjob(const struct review *r, struct workload_demand *ct)
{
    yyjson_val *tmpl = patch_get(r->object, "/spec/jobTemplate/spec/template/spec");
    int64_t now, before = 0;

    if (!review_gvr_is(r, "batch", "cronjobs") || r->sub_resource[0] ||
        (r->op != REVIEW_CREATE && r->op != REVIEW_UPDATE) || !yyjson_is_obj(tmpl) ||
        yyjson_is_true(patch_get(r->object, "/spec/jobTemplate/spec/suspend")) ||
        yyjson_is_true(patch_get(r->object, "/spec/suspend")))
        return false; /* a suspended CronJob makes no Jobs (cronjob_controllerv2.go, syncCronJob
                         returns before scheduling while spec.suspend is true) */
    now = job_width(r->object, "/spec/jobTemplate/spec", 0);
    if (r->op == REVIEW_UPDATE && r->old_object != NULL &&
        yyjson_equals(patch_get(r->object, "/spec/jobTemplate"),
                      patch_get(r->old_object, "/spec/jobTemplate")) &&
        !yyjson_is_true(patch_get(r->old_object, "/spec/suspend")))
        before = now; /* the Jobs it makes are unchanged: nothing new to judge; the UPDATE
                         that resumes it is judged as its CREATE */
    ct->total = now;
    ct->before = before;
    ct->increase = now > before ? now - before : 0;
    ct->grew = ct->increase > 0;
    ct->job = ct->cron = true;
    ct->spec = tmpl;
    snprintf(ct->what, sizeof(ct->what), "cronjobs %s/%s (its Jobs)", r->ns, review_object_name(r));
    return true;
}

/* A workload CREATE or UPDATE: the template, and how many more pods it asks for. */
static bool cap_workload(const struct review *r, bool owned_replicasets, struct workload_demand *ct)
{
    static const char *const res[] = {"deployments", "replicasets", "statefulsets", "jobs"};
    static const char *const grp[] = {"apps", "apps", "apps", "batch"};
    int which = -1;
    int64_t now, before = 0, succeeded = 0;
    bool changed, update = r->op == REVIEW_UPDATE && r->old_object != NULL;
    yyjson_val *tmpl = patch_get(r->object, "/spec/template/spec");

    for (int i = 0; i < 4; i++)
        if (review_gvr_is(r, grp[i], res[i]))
            which = i;
    if (which < 0 || r->sub_resource[0] || (r->op != REVIEW_CREATE && r->op != REVIEW_UPDATE) ||
        !yyjson_is_obj(tmpl))
        return false;
    /* judged at its Deployment, so that a rollout cannot deadlock */
    if (which == 1 && !owned_replicasets && owned_by_deployment(r->object))
        return false;
    if (which == 3 && job_suspended(r->object))
        return false; /* a suspended Job runs no pods */
    if (which == 3 && update)
        succeeded = int_at(r->old_object, "/status/succeeded", 0);
    now = which == 3 ? job_width(r->object, "/spec", succeeded)
                     : int_at(r->object, "/spec/replicas", 1);
    /* a suspended Job runs none: the UPDATE that resumes it (Kueue admitting it, kubectl
     * patch) starts its pods as a CREATE would (the job controller's manageJob deletes the
     * active pods while suspended and creates them on resume) */
    if (update && !(which == 3 && job_suspended(r->old_object)))
        before = which == 3 ? job_width(r->old_object, "/spec", succeeded)
                            : int_at(r->old_object, "/spec/replicas", 1);
    /* any change of the template (its labels too) rolls a Deployment out */
    changed = r->op == REVIEW_CREATE || r->old_object == NULL ||
              !yyjson_equals(patch_get(r->object, "/spec/template"),
                             patch_get(r->old_object, "/spec/template"));
    ct->total = now;
    ct->before = before;
    ct->key = cluster_workload_key(res[which], r->ns, review_object_name(r));
    ct->increase = now > before ? now - before : 0;
    /* a paused Deployment rolls nothing out (deployment_controller.go, syncDeployment: while
     * spec.paused it only scales), and the UPDATE that resumes it rolls out whatever template
     * changed meanwhile: judged as a new template then */
    if (which == 0 && yyjson_is_true(patch_get(r->object, "/spec/paused")))
        changed = false;
    else if (which == 0 && update && yyjson_is_true(patch_get(r->old_object, "/spec/paused")))
        changed = true;
    /* a new template makes new pods of all the replicas (a Deployment's new ReplicaSet, a
     * StatefulSet's rolling update): each must fit some node at most, whatever the surge. A
     * ReplicaSet keeps its pods (replica_set.go creates new ones only to replace the missing),
     * and a Job's template cannot change */
    ct->grew = ct->increase > 0 || (changed && now > 0 && (which == 0 || which == 2));
    if (which == 0 && changed && r->op == REVIEW_UPDATE) {
        ct->surge = rollout_surge(r->object, now);
        /* a scale-down with it: the controller scales the old ReplicaSet down to the new
         * replicas first (sync.go, scale, on the scaling event), and the surge pods then take
         * the GPUs those freed (rolling.go, NewRSNewReplicas: replicas + maxSurge less the
         * pods there are) */
        if (now < before)
            ct->surge = ct->surge > before - now ? ct->surge - (before - now) : 0;
        ct->increase += ct->surge;
    }
    ct->spec = tmpl;
    ct->job = which == 3;
    snprintf(ct->what, sizeof(ct->what), "%s %s/%s", res[which], r->ns, review_object_name(r));
    return true;
}

/* An UPDATE of the scale subresource (kubectl scale, the HPA): the template comes from the
 * view, which caches the pod templates of GPU workloads for this. */
static bool cap_scale(const struct review *r, struct cluster *view, struct workload_demand *ct)
{
    static const char *const res[] = {"deployments", "replicasets", "statefulsets"};
    static const enum cluster_kind kinds[] = {CLUSTER_DEPLOYMENTS, CLUSTER_REPLICASETS,
                                              CLUSTER_STATEFULSETS};
    int64_t now, before, replicas;

    if (strcmp(r->sub_resource, "scale") != 0 || r->op != REVIEW_UPDATE || view == NULL)
        return false;
    for (int i = 0; i < 3; i++) {
        if (!review_gvr_is(r, "apps", res[i]))
            continue;
        const char *name = r->name[0] ? r->name : review_object_name(r);

        ct->spec_doc = cluster_workload_template(view, kinds[i], r->ns, name, &replicas);
        ct->spec = yyjson_doc_get_root(ct->spec_doc);
        if (ct->spec == NULL)
            return false; /* not a GPU workload */
        now = int_at(r->object, "/spec/replicas", 0);
        before = r->old_object ? int_at(r->old_object, "/spec/replicas", replicas) : replicas;
        ct->total = now;
        ct->before = before;
        ct->key = cluster_workload_key(res[i], r->ns, name);
        ct->increase = now > before ? now - before : 0;
        ct->grew = ct->increase > 0;
        snprintf(ct->what, sizeof(ct->what), "%s %s/%s (scale)", res[i], r->ns, name);
        return true;
    }
    return false;
}

/* A HorizontalPodAutoscaler: can its target's template fit maxReplicas? Warnings only. */
static bool cap_hpa(const struct review *r, struct cluster *view, struct workload_demand *ct)
{
    const char *kind = json_str(patch_get(r->object, "/spec/scaleTargetRef/kind"));
    const char *name = json_str(patch_get(r->object, "/spec/scaleTargetRef/name"));
    int k;
    int64_t replicas;

    if (!review_gvr_is(r, "autoscaling", "horizontalpodautoscalers") || r->sub_resource[0] ||
        (r->op != REVIEW_CREATE && r->op != REVIEW_UPDATE) || view == NULL || kind == NULL ||
        name == NULL || (k = cluster_kind_of(kind)) < CLUSTER_REPLICASETS || k == CLUSTER_JOBS)
        return false;
    ct->spec_doc = cluster_workload_template(view, (enum cluster_kind)k, r->ns, name, &replicas);
    ct->spec = yyjson_doc_get_root(ct->spec_doc);
    if (ct->spec == NULL)
        return false;
    ct->total = int_at(r->object, "/spec/maxReplicas", replicas);
    ct->increase = ct->total > replicas ? ct->total - replicas : 0;
    ct->grew = ct->increase > 0;
    ct->hpa = true;
    snprintf(ct->what, sizeof(ct->what),
             "HorizontalPodAutoscaler %s/%s (target %s %s, "
             "maxReplicas %lld)",
             r->ns, review_object_name(r), kind, name, (long long)ct->total);
    return true;
}

bool workload_demand_of(const struct review *r, bool owned_replicasets, struct cluster *view,
                        struct workload_demand *wd)
{
    return cap_workload(r, owned_replicasets, wd) || cap_cronjob(r, wd) || cap_scale(r, view, wd) ||
           cap_hpa(r, view, wd);
}

void workload_demand_release(struct workload_demand *wd)
{
    yyjson_doc_free(wd->spec_doc);
    wd->spec_doc = NULL;
}
