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
 *
 * JSON: the report is built in one mutable document (yyjson); the dump and each offline_admit()
 * result are frozen into immutable documents to be read, and freed once read.
 */
#include "capreport.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/capacity.h"
#include "cluster/cluster.h"
#include "json.h"
#include "cluster/kube.h"
#include "limits.h"
#include "log.h"
#include "offline.h"
#include "parse.h"
#include "policy/pod.h"
#include "policy/policy.h"
#include "yamljson.h"

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
    uint64_t v;
    int ch;

    o->rules = "rules";
    o->timeout_s = DEFAULT_CAPACITY_SYNC_TIMEOUT_S;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":r:f:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case OPT_SNAPSHOT: o->snapshot = optarg; break;
        case OPT_KUBECONFIG: o->kubeconfig = optarg; break;
        case OPT_TIMEOUT:
            if (parse_uint(optarg, 1, 3600, &v) < 0) {
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

/* A node of the dump: its name and its record there. */
struct dumped {
    const char *name;
    yyjson_val *n;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct dumped *)a)->name, ((const struct dumped *)b)->name);
}

/* An integer of the dump (0 when it is not one, as jansson's json_integer_value). */
static int64_t int_of(yyjson_val *v)
{
    int64_t x;

    return json_int64(v, &x) ? x : 0;
}

/* Adds allocatable, used and free to totals[res] (in doc). -1 when out of memory. */
static int total_add(yyjson_mut_doc *doc, yyjson_mut_val *totals, const char *res, int64_t alloc,
                     int64_t used, int64_t free_)
{
    yyjson_mut_val *t = yyjson_mut_obj_get(totals, res);
    static const char *const fld[3] = {"allocatable", "used", "free"};
    const int64_t add[3] = {alloc, used, free_};

    if (t == NULL)
        return json_mut_set(
            doc, totals, res,
            json_pack(doc, "{s:I, s:I, s:I}", "allocatable", alloc, "used", used, "free", free_));
    for (int f = 0; f < 3; f++) {
        yyjson_mut_val *cur = yyjson_mut_obj_get(t, fld[f]);
        int64_t was = 0;

        (void)json_mut_int64(cur, &was);
        if (!yyjson_mut_set_sint(cur, was + add[f]))
            return -1;
    }
    return 0;
}

/* One node of the dump (n) into the report's shape, in doc; NULL when out of memory. */
static yyjson_mut_val *node_entry(yyjson_mut_doc *doc, const struct dumped *dn,
                                  yyjson_mut_val *totals, const struct strlist *globs)
{
    static const char *const wanted[][2] = {{"nvidia.com/gpu.product", "product"},
                                            {"nvidia.com/gpu.replicas", "replicas"},
                                            {"nvidia.com/mig.config", "migConfig"}};
    yyjson_mut_val *labels = yyjson_mut_obj(doc), *resources = yyjson_mut_obj(doc);
    yyjson_val *n = dn->n, *used_of = yyjson_obj_get(n, "used"), *k, *v;
    size_t i, max;

    if (labels == NULL || resources == NULL)
        return NULL;
    for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++)
        if ((v = yyjson_obj_get(yyjson_obj_get(n, "labels"), wanted[w][0])) != NULL &&
            json_mut_set(doc, labels, wanted[w][1], yyjson_val_mut_copy(doc, v)) < 0)
            return NULL;
    yyjson_obj_foreach (yyjson_obj_get(n, "allocatable"), i, max, k, v) {
        const char *res = yyjson_get_str(k); /* a resource name: no NUL (cluster.c) */
        int64_t alloc = int_of(v), used = int_of(yyjson_obj_get(used_of, res));
        int64_t free_ = alloc > used ? alloc - used : 0;

        if (!pod_glob_any(globs, res))
            continue;
        if (json_mut_set(doc, resources, res,
                         json_pack(doc, "{s:I, s:I, s:I}", "allocatable", alloc, "used", used,
                                   "free", free_)) < 0 ||
            total_add(doc, totals, res, alloc, used, free_) < 0)
            return NULL;
    }
    return json_pack(doc, "{s:s, s:V, s:V, s:o, s:V, s:o}", "name", dn->name, "ready",
                     yyjson_obj_get(n, "ready"), "cordoned", yyjson_obj_get(n, "unschedulable"),
                     "labels", labels, "taints", yyjson_obj_get(n, "taints"), "resources",
                     resources);
}

/* The report of the nodes: {nodes: [...], totals: {...}}, new in doc; NULL when out of memory. */
static yyjson_mut_val *node_report(yyjson_mut_doc *doc, struct cluster *view,
                                   const struct strlist *globs)
{
    yyjson_mut_doc *mdump = cluster_dump(view);
    /* the dump's depth is capped: node labels were read with a cap */
    yyjson_doc *dump = mdump != NULL ? json_freeze(yyjson_mut_doc_get_root(mdump)) : NULL;
    yyjson_val *nodes = yyjson_obj_get(yyjson_doc_get_root(dump), "nodes"), *k, *n;
    yyjson_mut_val *list = yyjson_mut_arr(doc), *totals = yyjson_mut_obj(doc), *e, *out = NULL;
    struct dumped *names = calloc(yyjson_obj_size(nodes) + 1, sizeof(*names));
    size_t count = 0, i, max;

    yyjson_mut_doc_free(mdump);
    if (dump == NULL || names == NULL || list == NULL || totals == NULL)
        goto out;
    yyjson_obj_foreach (nodes, i, max, k, n)
        names[count++] = (struct dumped){yyjson_get_str(k), n};
    qsort(names, count, sizeof(*names), by_name);
    for (i = 0; i < count; i++) {
        if ((e = node_entry(doc, &names[i], totals, globs)) == NULL ||
            !yyjson_mut_arr_append(list, e))
            goto out;
    }
    out = json_pack(doc, "{s:o, s:o}", "nodes", list, "totals", totals);
out:
    free(names);
    yyjson_doc_free(dump);
    return out;
}

/* The pod template spec (borrowed from obj's document) and replicas of a workload object, or
 * NULL. */
static yyjson_val *template_of(yyjson_val *obj, int64_t *replicas)
{
    const char *kind = json_get_str(obj, "kind");
    yyjson_val *spec = yyjson_obj_get(obj, "spec"), *v;
    int64_t par, comp;

    *replicas = 1;
    if (kind == NULL || !yyjson_is_obj(spec))
        return NULL;
    if (json_str_is(yyjson_obj_get(obj, "kind"), "Pod"))
        return spec;
    if (json_str_is(yyjson_obj_get(obj, "kind"), "CronJob")) {
        kind = "Job";
        spec = yyjson_obj_get(yyjson_obj_get(spec, "jobTemplate"), "spec");
    } else if (strlen(kind) != yyjson_get_len(yyjson_obj_get(obj, "kind"))) {
        return NULL; /* a kind with a NUL in it is none of these */
    }
    if (strcmp(kind, "Job") == 0) {
        if (!json_int64(yyjson_obj_get(spec, "parallelism"), &par))
            par = 1;
        if (!json_int64(yyjson_obj_get(spec, "completions"), &comp))
            comp = par;
        *replicas = par < comp ? par : comp;
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0 ||
               strcmp(kind, "StatefulSet") == 0) {
        if (!json_int64(yyjson_obj_get(spec, "replicas"), replicas))
            *replicas = 1;
    } else {
        return NULL;
    }
    v = yyjson_obj_get(yyjson_obj_get(spec, "template"), "spec");
    return yyjson_is_obj(v) ? v : NULL;
}

/* One document of the file that is not judged, with why: new in doc. */
static yyjson_mut_val *skipped(yyjson_mut_doc *doc, yyjson_val *obj, const char *why)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata");
    const char *kind = json_get_str(obj, "kind");
    const char *ns = json_get_str(meta, "namespace");
    const char *name = json_get_str(meta, "name");

    return json_pack(doc, "{s:s, s:s, s:s, s:s}", "kind", kind ? kind : "?", "namespace",
                     ns ? ns : "default", "name", name ? name : "", "skipped", why);
}

/* Whether some rule of the policy judged the object (offline_admit marks the others "skip"). */
static bool in_scope(yyjson_val *admit)
{
    yyjson_val *r;
    size_t i, max;

    yyjson_arr_foreach (yyjson_obj_get(admit, "rules"), i, max, r) {
        yyjson_val *o = yyjson_obj_get(r, "outcome");

        if (yyjson_is_str(o) && !json_str_is(o, "skip"))
            return true;
    }
    return false;
}

/* The result of offline_admit() for obj, frozen (a new document), or NULL with d filled. */
static yyjson_doc *admit_frozen(const struct offline_opts *oo, yyjson_val *obj, struct diag *d)
{
    yyjson_mut_doc *m = offline_admit(oo, obj, d);
    /* depth capped: the object was read with a cap, and the result wraps it in two levels */
    yyjson_doc *out = m != NULL ? json_freeze(yyjson_mut_doc_get_root(m)) : NULL;

    if (m != NULL && out == NULL)
        diag_set(d, NULL, 0, 0, "out of memory");
    yyjson_mut_doc_free(m);
    return out;
}

/* One workload judged (admit: its offline_admit() result): its entry, new in doc. NULL with d
 * filled when it cannot be judged. */
static yyjson_mut_val *workload_entry(yyjson_mut_doc *doc, struct cluster *view, yyjson_val *obj,
                                      yyjson_val *admit, const struct strlist *globs,
                                      int64_t headroom, struct diag *d)
{
    yyjson_val *judged = yyjson_obj_get(admit, "object"), *meta, *spec;
    const char *ns, *name;
    int64_t replicas;
    struct capacity_result res;
    char expl[2 * CAPACITY_TEXT_MAX + 512];

    if (!yyjson_is_obj(judged))
        judged = obj;
    meta = yyjson_obj_get(judged, "metadata");
    ns = json_get_str(meta, "namespace");
    name = json_get_str(meta, "name");
    spec = template_of(judged, &replicas);
    struct capacity_request rq = {spec, globs, replicas, replicas, headroom, 0, 0};

    memset(&res, 0, sizeof(res));
    if (spec == NULL || capacity_judge(view, &rq, &res) < 0) {
        diag_set(d, NULL, 0, 0, "%s",
                 spec == NULL ? "the patched object has no pod template" : res.reasons);
        return NULL;
    }
    if (res.judged)
        capacity_explain(&rq, &res, expl, sizeof(expl));
    else
        snprintf(expl, sizeof(expl), "requests no GPU");
    return json_pack(doc, "{s:s?, s:s, s:s, s:I, s:b, s:I, s:I, s:i, s:s, s:s, s:b}", "kind",
                     json_get_str(judged, "kind"), "namespace", ns ? ns : "default", "name",
                     name ? name : "", "replicas", replicas, "requestsGPUs", res.judged, "fitNow",
                     (int64_t)res.fit_now, "fitEver", (int64_t)res.fit_ever, "eligibleNodes",
                     res.eligible, "notEligible", res.reasons, "explanation", expl, "patched",
                     yyjson_arr_size(yyjson_obj_get(admit, "patch")) > 0);
}

/* Each workload of the file, judged as the capacity rule judges it at /validate: after the
 * policy's patches (a toleration or selector the mutating webhook adds changes which nodes are
 * eligible). An array, new in doc; NULL with d filled on an input error. */
static yyjson_mut_val *workload_report(yyjson_mut_doc *doc, struct cluster *view,
                                       const struct policy *p, const char *path,
                                       const struct strlist *globs, int64_t headroom,
                                       struct diag *d)
{
    struct yamljson y;
    struct offline_opts oo = {p, NULL, false, NULL, NULL};
    yyjson_mut_val *out = NULL, *e;

    if (yamljson_read_file(path, 0, &y, d) < 0)
        return NULL;
    out = yyjson_mut_arr(doc);
    for (size_t i = 0; out != NULL && i < y.n; i++) {
        yyjson_val *obj = y.docs[i].value, *root;
        const char *decision, *reason;
        int64_t replicas;
        yyjson_doc *admit = NULL;
        struct diag ad;

        e = NULL;
        diag_clear(&ad);
        if (template_of(obj, &replicas) == NULL) {
            e = skipped(doc, obj, "not a workload with a pod template");
            goto next;
        }
        admit = admit_frozen(&oo, obj, &ad);
        root = yyjson_doc_get_root(admit);
        decision = json_get_str(root, "decision");
        reason = json_get_str(root, "reason");
        if (admit == NULL || decision == NULL || strcmp(decision, "not judged") == 0) {
            e = skipped(doc, obj,
                        admit == NULL ? ad.msg
                        : reason      ? reason
                                      : "not judged by the policy");
        } else if (!in_scope(root)) {
            e = skipped(doc, obj,
                        "out of the policy's scope (exclude, namespaces), so the "
                        "webhook admits it");
        } else if ((e = workload_entry(doc, view, obj, root, globs, headroom, &ad)) == NULL) {
            diag_set(d, path, y.docs[i].line, y.docs[i].column, "document %u: %s", y.docs[i].index,
                     ad.msg);
            yyjson_doc_free(admit);
            out = NULL;
            break;
        }
    next:
        yyjson_doc_free(admit);
        if (e == NULL || !yyjson_mut_arr_append(out, e)) {
            diag_set(d, path, 0, 0, "out of memory");
            out = NULL;
        }
    }
    yamljson_free(&y);
    return out; /* on failure, what was built stays in doc until it is freed */
}

/* A string of the report, or "" (print_text's %s never gets NULL). */
static const char *s_of(yyjson_val *obj, const char *key)
{
    const char *s = json_get_str(obj, key);

    return s != NULL ? s : "";
}

static void print_node(yyjson_val *n, int width)
{
    const char *status = !yyjson_is_true(yyjson_obj_get(n, "ready"))     ? "NotReady"
                         : yyjson_is_true(yyjson_obj_get(n, "cordoned")) ? "Cordoned"
                                                                         : "Ready";
    yyjson_val *k, *r, *t;
    size_t i, max;
    bool first = true;

    yyjson_obj_foreach (yyjson_obj_get(n, "resources"), i, max, k, r) {
        printf("%-*s  %-10s %-22s %5lld %5lld %5lld", width, first ? s_of(n, "name") : "",
               first ? status : "", yyjson_get_str(k),
               (long long)int_of(yyjson_obj_get(r, "allocatable")),
               (long long)int_of(yyjson_obj_get(r, "used")),
               (long long)int_of(yyjson_obj_get(r, "free")));
        first = false;
        putchar('\n');
    }
    if (first)
        printf("%-*s  %-10s %-22s %5s %5s %5s\n", width, s_of(n, "name"), status, "(no GPUs)", "-",
               "-", "-");
    yyjson_obj_foreach (yyjson_obj_get(n, "labels"), i, max, k, r) {
        printf("%-*s  %s=%s\n", width + 53, "",
               json_str_is(k, "product")    ? "nvidia.com/gpu.product"
               : json_str_is(k, "replicas") ? "nvidia.com/gpu.replicas"
                                            : "nvidia.com/mig.config",
               json_str(r) ? json_str(r) : "?");
    }
    yyjson_arr_foreach (yyjson_obj_get(n, "taints"), i, max, t) {
        const char *val = json_get_str(t, "value");

        printf("%-*s  taint %s%s%s:%s\n", width + 53, "", s_of(t, "key"), val && val[0] ? "=" : "",
               val ? val : "", s_of(t, "effect"));
    }
}

static void print_workload(yyjson_val *w)
{
    int64_t replicas = int_of(yyjson_obj_get(w, "replicas"));

    if (yyjson_obj_get(w, "skipped") != NULL) {
        printf("\n%s %s/%s: not judged: %s\n", s_of(w, "kind"), s_of(w, "namespace"),
               s_of(w, "name"), s_of(w, "skipped"));
        return;
    }
    printf("\n%s %s/%s: %lld replica%s", s_of(w, "kind"), s_of(w, "namespace"), s_of(w, "name"),
           (long long)replicas, replicas == 1 ? "" : "s");
    if (yyjson_is_true(yyjson_obj_get(w, "requestsGPUs")))
        printf(": %lld fit now, %lld at most\n", (long long)int_of(yyjson_obj_get(w, "fitNow")),
               (long long)int_of(yyjson_obj_get(w, "fitEver")));
    else
        putchar('\n');
    if (yyjson_is_true(yyjson_obj_get(w, "patched")))
        printf("  (judged as the policy patches it: see gpuadmit check)\n");
    printf("  %s\n", s_of(w, "explanation"));
}

static void print_text(yyjson_val *report, const char *source)
{
    yyjson_val *nodes = yyjson_obj_get(report, "nodes"), *n, *k, *r, *w;
    size_t i, max;
    int width = 5; /* "TOTAL" */

    yyjson_arr_foreach (nodes, i, max, n) {
        if ((int)strlen(s_of(n, "name")) > width)
            width = (int)strlen(s_of(n, "name"));
    }
    printf("%s: %zu node%s\n", source, yyjson_arr_size(nodes),
           yyjson_arr_size(nodes) == 1 ? "" : "s");
    printf("%-*s  %-10s %-22s %5s %5s %5s  %s\n", width, "NODE", "STATUS", "RESOURCE", "ALLOC",
           "USED", "FREE", "LABELS, TAINTS");
    yyjson_arr_foreach (nodes, i, max, n)
        print_node(n, width);
    yyjson_obj_foreach (yyjson_obj_get(report, "totals"), i, max, k, r) {
        printf("%-*s  %-10s %-22s %5lld %5lld %5lld\n", width, "TOTAL", "", yyjson_get_str(k),
               (long long)int_of(yyjson_obj_get(r, "allocatable")),
               (long long)int_of(yyjson_obj_get(r, "used")),
               (long long)int_of(yyjson_obj_get(r, "free")));
    }
    yyjson_arr_foreach (yyjson_obj_get(report, "workloads"), i, max, w)
        print_workload(w);
}

int capreport_main(int argc, char **argv)
{
    struct cap_opts o = {0};
    struct policy *p = NULL;
    struct cluster *view = NULL;
    const struct policy_doc *doc;
    yyjson_mut_doc *rdoc = NULL;
    yyjson_mut_val *report, *w;
    yyjson_doc *frozen = NULL;
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
    if ((rdoc = yyjson_mut_doc_new(NULL)) == NULL ||
        (report = node_report(rdoc, view, &doc->gpu_resources)) == NULL) {
        fprintf(stderr, "gpuadmit capacity: out of memory\n");
        goto out;
    }
    if (o.workloads != NULL) {
        w = workload_report(rdoc, view, p, o.workloads, &doc->gpu_resources, headroom, &d);
        if (w == NULL || json_mut_set(rdoc, report, "workloads", w) < 0) {
            fprintf(stderr, "gpuadmit capacity: %s\n", diag_format(&d, text, sizeof(text)));
            goto out;
        }
    }
    if (o.json) {
        dump = json_mut_write_pretty(report, NULL);
        if (dump == NULL) {
            fprintf(stderr, "gpuadmit capacity: cannot write the report\n");
            goto out;
        }
        puts(dump);
        free(dump);
    } else {
        /* depth capped: labels and taints from the view, workloads from capped reads */
        if ((frozen = json_freeze(report)) == NULL) {
            fprintf(stderr, "gpuadmit capacity: out of memory\n");
            goto out;
        }
        print_text(yyjson_doc_get_root(frozen), o.snapshot ? o.snapshot : o.kubeconfig);
    }
    rc = 0;
out:
    yyjson_doc_free(frozen);
    yyjson_mut_doc_free(rdoc);
    cluster_free(view);
    policy_free(p);
    return rc;
}
