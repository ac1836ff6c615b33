/*
 * capreport.c: gpuadmit capacity, the cluster view's GPUs for people, and how many replicas of
 * a workload fit.
 *
 * The view comes from a snapshot file or from one list of a live cluster (kube.c's watcher,
 * started, waited on until synced, stopped). Per node and GPU resource: allocatable, in use
 * (bound, non-terminal pods), free; the node's taints, readiness and the labels that say what
 * its GPUs are. A workload (-f) is judged by capacity_judge(), as the capacity rule judges it,
 * and explained by capacity_explain(). Everything is read from cluster_dump(), so nothing here
 * reaches into the view's records.
 */
#include "capreport.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capacity.h"
#include "cluster.h"
#include "kube.h"
#include "log.h"
#include "offline.h"
#include "pod.h"
#include "policy.h"
#include "yamljson.h"

#define SYNC_TIMEOUT_S_DEFAULT 30u

static const char usage_capacity[] =
    "usage: gpuadmit capacity (--cluster-snapshot FILE | --kubeconfig FILE) [OPTIONS]\n"
    "\n"
    "Per node and GPU resource: allocatable, in use, free, taints, readiness and the GPU\n"
    "labels (nvidia.com/gpu.product, nvidia.com/gpu.replicas, nvidia.com/mig.config); totals\n"
    "per resource; with -f, how many replicas of each workload in the file fit, and why the\n"
    "other nodes are not eligible.\n"
    "\n"
    "  --cluster-snapshot FILE   kubectl get nodes,pods,priorityclasses,replicasets,\n"
    "                            deployments,statefulsets,jobs -A -o json\n"
    "  --kubeconfig FILE         list the live cluster once through this kubeconfig\n"
    "  --timeout SECONDS         how long to wait for the live list (default 30)\n"
    "  -r, --rules PATH          policy directory or file: its GPU resources and capacity\n"
    "                            headroom (default rules)\n"
    "  -f, --filename FILE       workloads to fit (Pods, Deployments, ReplicaSets,\n"
    "                            StatefulSets, Jobs, CronJobs; - for standard input)\n"
    "  -o, --output text|json    the report's format (default text)\n"
    "\n"
    "Exit code: 0, or 2 for a usage or input error.\n";

struct cap_opts {
    const char *snapshot, *kubeconfig, *rules, *workloads;
    unsigned timeout_s;
    bool json;
};

enum { OPT_SNAPSHOT = 256, OPT_KUBECONFIG, OPT_TIMEOUT, OPT_HELP };

static const struct option longopts[] = {
    {"cluster-snapshot", required_argument, NULL, OPT_SNAPSHOT},
    {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"rules", required_argument, NULL, 'r'},
    {"filename", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_args(int argc, char **argv, struct cap_opts *o)
{
    char *end;
    unsigned long v;
    int ch;

    o->rules = "rules";
    o->timeout_s = SYNC_TIMEOUT_S_DEFAULT;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":r:f:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case OPT_SNAPSHOT: o->snapshot = optarg; break;
        case OPT_KUBECONFIG: o->kubeconfig = optarg; break;
        case OPT_TIMEOUT:
            v = strtoul(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || v < 1 || v > 3600) {
                fprintf(stderr, "gpuadmit capacity: --timeout takes 1 to 3600, got \"%s\"\n",
                        optarg);
                return -1;
            }
            o->timeout_s = (unsigned)v;
            break;
        case 'r': o->rules = optarg; break;
        case 'f': o->workloads = optarg; break;
        case 'o':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "gpuadmit capacity: -o takes text or json, got \"%s\"\n", optarg);
                return -1;
            }
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'h':
        case OPT_HELP: fputs(usage_capacity, stdout); return 1;
        case ':':
            fprintf(stderr, "gpuadmit capacity: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr,
                    "gpuadmit capacity: unknown option \"%s\"; see gpuadmit capacity --help\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuadmit capacity: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    if ((o->snapshot != NULL) == (o->kubeconfig != NULL)) {
        fprintf(stderr, "gpuadmit capacity: give one of --cluster-snapshot and --kubeconfig\n");
        return -1;
    }
    return 0;
}

/* The live cluster, listed once: the watcher runs until the view is synced, then stops. */
static struct cluster *list_live(const struct cap_opts *o, struct diag *d)
{
    struct cluster_config cc = {DEFAULT_ALLOCATABLE_GRACE_S};
    struct kube_config kc = {o->kubeconfig, 0, 0, NULL};
    struct cluster *view = cluster_new(&cc);
    struct kube *k = NULL;
    struct timespec step = {0, 50 * 1000 * 1000};

    if (view == NULL || (k = kube_start(&kc, view, d)) == NULL) {
        cluster_free(view);
        return NULL;
    }
    for (unsigned i = 0; i < o->timeout_s * 20 && !cluster_synced(view); i++)
        nanosleep(&step, NULL);
    kube_stop(k);
    if (!cluster_synced(view)) {
        diag_set(d, o->kubeconfig, 0, 0,
                 "the cluster was not listed within %u s (run gpuadmit serve --kubeconfig "
                 "for the reason in its log)",
                 o->timeout_s);
        cluster_free(view);
        return NULL;
    }
    return view;
}

/* The policy document whose GPU resources and headroom apply: the first with a capacity rule,
 * else the first. */
static const struct policy_doc *capacity_doc(const struct policy *p, int64_t *headroom)
{
    *headroom = 0;
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            if (p->docs[i].rules[k].type == RULE_CAPACITY) {
                *headroom = p->docs[i].rules[k].headroom;
                return &p->docs[i];
            }
    return p->n_docs ? &p->docs[0] : NULL;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The report of the nodes: {nodes: [...], totals: {...}}. New. */
static json_t *node_report(struct cluster *view, const struct strlist *globs)
{
    static const char *const wanted[][2] = {{"nvidia.com/gpu.product", "product"},
                                            {"nvidia.com/gpu.replicas", "replicas"},
                                            {"nvidia.com/mig.config", "migConfig"}};
    json_t *dump = cluster_dump(view), *nodes = json_object_get(dump, "nodes");
    json_t *list = json_array(), *totals = json_object(), *n, *v;
    const char **names = calloc(json_object_size(nodes) + 1, sizeof(*names)), *key, *res;
    size_t count = 0;

    json_object_foreach (nodes, key, n) {
        names[count++] = key;
    }
    qsort(names, count, sizeof(*names), by_key);
    for (size_t i = 0; i < count; i++) {
        json_t *out, *labels = json_object(), *resources = json_object();

        n = json_object_get(nodes, names[i]);
        for (size_t k = 0; k < sizeof(wanted) / sizeof(wanted[0]); k++)
            if ((v = json_object_get(json_object_get(n, "labels"), wanted[k][0])) != NULL)
                json_object_set(labels, wanted[k][1], v);
        json_object_foreach (json_object_get(n, "allocatable"), res, v) {
            json_int_t alloc = json_integer_value(v);
            json_int_t used = json_integer_value(json_object_get(json_object_get(n, "used"), res));
            json_int_t free_ = alloc > used ? alloc - used : 0;
            json_t *t;

            if (!pod_glob_any(globs, res))
                continue;
            json_object_set_new(
                resources, res,
                json_pack("{s:I, s:I, s:I}", "allocatable", alloc, "used", used, "free", free_));
            if ((t = json_object_get(totals, res)) == NULL)
                json_object_set_new(totals, res,
                                    json_pack("{s:I, s:I, s:I}", "allocatable", alloc, "used", used,
                                              "free", free_));
            else
                for (int f = 0; f < 3; f++) {
                    const char *fld = f == 0 ? "allocatable" : f == 1 ? "used" : "free";
                    json_int_t add = f == 0 ? alloc : f == 1 ? used : free_;

                    json_object_set_new(
                        t, fld, json_integer(json_integer_value(json_object_get(t, fld)) + add));
                }
        }
        out = json_pack("{s:s, s:O, s:O, s:o, s:O, s:o}", "name", names[i], "ready",
                        json_object_get(n, "ready"), "cordoned",
                        json_object_get(n, "unschedulable"), "labels", labels, "taints",
                        json_object_get(n, "taints"), "resources", resources);
        json_array_append_new(list, out);
    }
    free(names);
    json_decref(dump);
    return json_pack("{s:o, s:o}", "nodes", list, "totals", totals);
}

/* The pod template spec (borrowed) and replicas of a workload object, or NULL. */
static const json_t *template_of(const json_t *obj, int64_t *replicas)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const json_t *spec = json_object_get(obj, "spec"), *v;
    int64_t par, comp;

    *replicas = 1;
    if (kind == NULL || !json_is_object(spec))
        return NULL;
    if (strcmp(kind, "Pod") == 0)
        return spec;
    if (strcmp(kind, "CronJob") == 0) {
        kind = "Job";
        spec = json_object_get(json_object_get(spec, "jobTemplate"), "spec");
    }
    if (strcmp(kind, "Job") == 0) {
        v = json_object_get(spec, "parallelism");
        par = json_is_integer(v) ? json_integer_value(v) : 1;
        v = json_object_get(spec, "completions");
        comp = json_is_integer(v) ? json_integer_value(v) : par;
        *replicas = par < comp ? par : comp;
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0 ||
               strcmp(kind, "StatefulSet") == 0) {
        v = json_object_get(spec, "replicas");
        *replicas = json_is_integer(v) ? json_integer_value(v) : 1;
    } else {
        return NULL;
    }
    v = json_object_get(json_object_get(spec, "template"), "spec");
    return json_is_object(v) ? v : NULL;
}

/* One document of the file that is not judged, with why. */
static json_t *skipped(const json_t *obj, const char *why)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));

    return json_pack("{s:s, s:s, s:s, s:s}", "kind", kind ? kind : "?", "namespace",
                     ns ? ns : "default", "name", name ? name : "", "skipped", why);
}

/* Whether some rule of the policy judged the object (offline_admit marks the others "skip"). */
static bool in_scope(const json_t *admit)
{
    const json_t *r;
    size_t i;

    json_array_foreach (json_object_get(admit, "rules"), i, r) {
        const char *o = json_string_value(json_object_get(r, "outcome"));

        if (o != NULL && strcmp(o, "skip") != 0)
            return true;
    }
    return false;
}

/* Each workload of the file, judged as the capacity rule judges it at /validate: after the
 * policy's patches (a toleration or selector the mutating webhook adds changes which nodes are
 * eligible). An array; NULL with d filled on an input error. */
static json_t *workload_report(struct cluster *view, const struct policy *p, const char *path,
                               const struct strlist *globs, int64_t headroom, struct diag *d)
{
    struct yamljson y;
    struct offline_opts oo = {p, NULL, false, NULL, NULL};
    json_t *out = NULL;

    if (yamljson_read_file(path, 0, &y, d) < 0)
        return NULL;
    out = json_array();
    for (size_t i = 0; i < y.n; i++) {
        const json_t *obj = y.docs[i].value, *meta, *judged;
        const char *ns, *name, *decision;
        int64_t replicas;
        const json_t *spec;
        struct capacity_result res;
        char expl[2 * CAPACITY_TEXT_MAX + 512];
        json_t *admit = NULL;
        struct diag ad;

        if (template_of(obj, &replicas) == NULL) {
            json_array_append_new(out, skipped(obj, "not a workload with a pod template"));
            continue;
        }
        diag_clear(&ad);
        admit = offline_admit(&oo, obj, &ad);
        decision = json_string_value(json_object_get(admit, "decision"));
        if (admit == NULL || decision == NULL || strcmp(decision, "not judged") == 0) {
            json_array_append_new(
                out, skipped(obj, admit == NULL ? ad.msg
                                  : json_string_value(json_object_get(admit, "reason"))
                                      ? json_string_value(json_object_get(admit, "reason"))
                                      : "not judged by the policy"));
            json_decref(admit);
            continue;
        }
        if (!in_scope(admit)) {
            json_array_append_new(out, skipped(obj, "out of the policy's scope (exclude, "
                                                    "namespaces), so the webhook admits it"));
            json_decref(admit);
            continue;
        }
        judged = json_object_get(admit, "object");
        if (!json_is_object(judged))
            judged = obj;
        meta = json_object_get(judged, "metadata");
        ns = json_string_value(json_object_get(meta, "namespace"));
        name = json_string_value(json_object_get(meta, "name"));
        spec = template_of(judged, &replicas);
        struct capacity_request rq = {spec, globs, replicas, replicas, headroom, 0, 0};

        memset(&res, 0, sizeof(res));
        if (spec == NULL || capacity_judge(view, &rq, &res) < 0) {
            diag_set(d, path, y.docs[i].line, y.docs[i].column, "document %u: %s", y.docs[i].index,
                     spec == NULL ? "the patched object has no pod template" : res.reasons);
            json_decref(admit);
            json_decref(out);
            out = NULL;
            break;
        }
        if (res.judged)
            capacity_explain(&rq, &res, expl, sizeof(expl));
        else
            snprintf(expl, sizeof(expl), "requests no GPU");
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s, s:I, s:b, s:I, s:I, s:i, s:s, s:s, s:b}", "kind",
                           json_string_value(json_object_get(judged, "kind")), "namespace",
                           ns ? ns : "default", "name", name ? name : "", "replicas",
                           (json_int_t)replicas, "requestsGPUs", res.judged, "fitNow",
                           (json_int_t)res.fit_now, "fitEver", (json_int_t)res.fit_ever,
                           "eligibleNodes", res.eligible, "notEligible", res.reasons, "explanation",
                           expl, "patched", json_array_size(json_object_get(admit, "patch")) > 0));
        json_decref(admit);
    }
    yamljson_free(&y);
    return out;
}

static void print_text(const json_t *report, const char *source)
{
    const json_t *nodes = json_object_get(report, "nodes"), *n, *r, *t, *w;
    const char *res;
    size_t i, k;
    int width = 5; /* "TOTAL" */

    json_array_foreach (nodes, i, n) {
        if ((int)strlen(json_string_value(json_object_get(n, "name"))) > width)
            width = (int)strlen(json_string_value(json_object_get(n, "name")));
    }
    printf("%s: %zu node%s\n", source, json_array_size(nodes),
           json_array_size(nodes) == 1 ? "" : "s");
    printf("%-*s  %-10s %-22s %5s %5s %5s  %s\n", width, "NODE", "STATUS", "RESOURCE", "ALLOC",
           "USED", "FREE", "LABELS, TAINTS");
    json_array_foreach (nodes, i, n) {
        const char *status = !json_is_true(json_object_get(n, "ready"))     ? "NotReady"
                             : json_is_true(json_object_get(n, "cordoned")) ? "Cordoned"
                                                                            : "Ready";
        const json_t *resources = json_object_get(n, "resources");
        bool first = true;

        json_object_foreach ((json_t *)resources, res, r) {
            printf("%-*s  %-10s %-22s %5lld %5lld %5lld", width,
                   first ? json_string_value(json_object_get(n, "name")) : "", first ? status : "",
                   res, (long long)json_integer_value(json_object_get(r, "allocatable")),
                   (long long)json_integer_value(json_object_get(r, "used")),
                   (long long)json_integer_value(json_object_get(r, "free")));
            first = false;
            putchar('\n');
        }
        if (first)
            printf("%-*s  %-10s %-22s %5s %5s %5s\n", width,
                   json_string_value(json_object_get(n, "name")), status, "(no GPUs)", "-", "-",
                   "-");
        json_object_foreach ((json_t *)json_object_get(n, "labels"), res, r) {
            printf("%-*s  %s=%s\n", width + 53, "",
                   strcmp(res, "product") == 0    ? "nvidia.com/gpu.product"
                   : strcmp(res, "replicas") == 0 ? "nvidia.com/gpu.replicas"
                                                  : "nvidia.com/mig.config",
                   json_string_value(r) ? json_string_value(r) : "?");
        }
        json_array_foreach (json_object_get(n, "taints"), k, t) {
            const char *val = json_string_value(json_object_get(t, "value"));

            printf("%-*s  taint %s%s%s:%s\n", width + 53, "",
                   json_string_value(json_object_get(t, "key")), val && val[0] ? "=" : "",
                   val ? val : "", json_string_value(json_object_get(t, "effect")));
        }
    }
    json_object_foreach ((json_t *)json_object_get(report, "totals"), res, r) {
        printf("%-*s  %-10s %-22s %5lld %5lld %5lld\n", width, "TOTAL", "", res,
               (long long)json_integer_value(json_object_get(r, "allocatable")),
               (long long)json_integer_value(json_object_get(r, "used")),
               (long long)json_integer_value(json_object_get(r, "free")));
    }
    json_array_foreach (json_object_get(report, "workloads"), i, w) {
        if (json_object_get(w, "skipped") != NULL) {
            printf("\n%s %s/%s: not judged: %s\n", json_string_value(json_object_get(w, "kind")),
                   json_string_value(json_object_get(w, "namespace")),
                   json_string_value(json_object_get(w, "name")),
                   json_string_value(json_object_get(w, "skipped")));
            continue;
        }
        printf("\n%s %s/%s: %lld replica%s", json_string_value(json_object_get(w, "kind")),
               json_string_value(json_object_get(w, "namespace")),
               json_string_value(json_object_get(w, "name")),
               (long long)json_integer_value(json_object_get(w, "replicas")),
               json_integer_value(json_object_get(w, "replicas")) == 1 ? "" : "s");
        if (json_is_true(json_object_get(w, "requestsGPUs")))
            printf(": %lld fit now, %lld at most\n",
                   (long long)json_integer_value(json_object_get(w, "fitNow")),
                   (long long)json_integer_value(json_object_get(w, "fitEver")));
        else
            putchar('\n');
        if (json_is_true(json_object_get(w, "patched")))
            printf("  (judged as the policy patches it: see gpuadmit check)\n");
        printf("  %s\n", json_string_value(json_object_get(w, "explanation")));
    }
}

int capreport_main(int argc, char **argv)
{
    struct cap_opts o = {0};
    struct policy *p = NULL;
    struct cluster *view = NULL;
    const struct policy_doc *doc;
    json_t *report = NULL, *w;
    struct diag d;
    char text[DIAG_MSG_MAX + 300], *dump;
    int64_t headroom;
    int rc = 2;

    switch (parse_args(argc, argv, &o)) {
    case 1: return 0;
    case -1: return 2;
    }
    log_set_level(LOG_ERROR);
    if ((p = offline_load_policy("gpuadmit capacity", o.rules)) == NULL)
        goto out;
    doc = capacity_doc(p, &headroom);
    diag_clear(&d);
    view = o.snapshot ? offline_load_snapshot(o.snapshot, &d) : list_live(&o, &d);
    if (view == NULL || doc == NULL) {
        fprintf(stderr, "gpuadmit capacity: %s\n",
                doc ? diag_format(&d, text, sizeof(text)) : "the policy has no documents");
        goto out;
    }
    report = node_report(view, &doc->gpu_resources);
    if (o.workloads != NULL) {
        w = workload_report(view, p, o.workloads, &doc->gpu_resources, headroom, &d);
        if (w == NULL) {
            fprintf(stderr, "gpuadmit capacity: %s\n", diag_format(&d, text, sizeof(text)));
            goto out;
        }
        json_object_set_new(report, "workloads", w);
    }
    if (o.json) {
        dump = json_dumps(report, JSON_INDENT(2));
        if (dump != NULL)
            puts(dump);
        free(dump);
    } else {
        print_text(report, o.snapshot ? o.snapshot : o.kubeconfig);
    }
    rc = 0;
out:
    json_decref(report);
    cluster_free(view);
    policy_free(p);
    return rc;
}
