/*
 * capreport.c: gpuadmit capacity, the cluster view's GPUs for people, and how many replicas of
 * a workload fit.
 *
 * The view comes from a snapshot file or from one list of a live cluster (kube.c's watcher,
 * started, waited on until synced, stopped). Per node and GPU resource: allocatable, in use
 * (bound, non-terminal pods), free; the node's taints, readiness and the labels that say what
 * its GPUs are. Each workload of the files is judged by offline_admit() against the view, the
 * very evaluation gpuadmit check makes: the capacity rule's own judgement (eval.h: the trace's
 * "capacity" entry) gives how many fit, and its verdict the exit code, so that capacity never
 * calls fitting what check denies for capacity. The nodes are read from cluster_dump(), so
 * nothing here reaches into the view's records.
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
#include "bounds.h"
#include "log.h"
#include "offline.h"
#include "parse.h"
#include "policy/eval.h"
#include "policy/pod.h"
#include "policy/policy.h"
#include "yamljson.h"

static const char usage_capacity[] =
    "usage: gpuadmit capacity (--cluster-snapshot FILE | --kubeconfig FILE) [OPTIONS] [FILE...]\n"
    "\n"
    "Per node and GPU resource: allocatable, in use, free, taints, readiness and the GPU\n"
    "labels (nvidia.com/gpu.product, nvidia.com/gpu.replicas, nvidia.com/mig.config); totals\n"
    "per resource; for each workload of the files, in file order, how many of its replicas fit\n"
    "now and at most, and why the other nodes are not eligible. Each workload is judged as\n"
    "gpuadmit check judges it (the policy's patches, then the capacity rule), alone against\n"
    "the view: the workloads of the files do not add up.\n"
    "\n"
    "  --cluster-snapshot FILE   kubectl get nodes,pods,priorityclasses,replicasets,\n"
    "                            deployments,statefulsets,jobs -A -o json\n"
    "  --kubeconfig FILE         list the live cluster once through this kubeconfig\n"
    "  --timeout SECONDS         how long to wait for the live list (default 30)\n"
    "  -r, --rules PATH          policy directory or file: its GPU resources and capacity\n"
    "                            rule (default rules)\n"
    "  -f, --filename FILE       workloads to fit (Pods, Deployments, ReplicaSets,\n"
    "                            StatefulSets, Jobs, CronJobs); repeatable, and the same as a\n"
    "                            FILE argument; - for standard input, once\n"
    "  -o, --output text|json    the report's format (default text)\n"
    "\n"
    "Exit code: 0 every workload fits now (or none is given), 1 some workload does not fit now\n"
    "(fewer of its replicas fit than it asks for), 3 some workload never fits (the capacity\n"
    "rule denies it whatever is free: the eligible nodes could never hold all its pods, or\n"
    "their GPUs are shared and it asks for several a container), 2 a usage or input error.\n"
    "Of several workloads the strongest wins: 2, then 3, then 1, then 0.\n";

struct cap_opts {
    const char *snapshot, *kubeconfig, *rules;
    const char **files; /* the workload files, in command-line order (argv's strings) */
    size_t n_files;
    unsigned timeout_s;
    bool json;
};

/* The exit codes, and which of two wins: a usage or input error (the report is incomplete),
 * then a workload that never fits, then one that does not fit now. */
enum { CAP_EXIT_FITS = 0, CAP_EXIT_NOT_NOW = 1, CAP_EXIT_USAGE = 2, CAP_EXIT_NEVER = 3 };

static int cap_exit_worse(int a, int b)
{
    static const int rank[] = {
        [CAP_EXIT_FITS] = 0, [CAP_EXIT_NOT_NOW] = 1, [CAP_EXIT_NEVER] = 2, [CAP_EXIT_USAGE] = 3};

    return rank[b] > rank[a] ? b : a;
}

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

/* A workload file, after the others; "-" only once (standard input is read once). -1 when it is
 * a second "-" (reported). */
static int add_file(struct cap_opts *o, const char *path)
{
    for (size_t i = 0; strcmp(path, "-") == 0 && i < o->n_files; i++)
        if (strcmp(o->files[i], "-") == 0) {
            fprintf(stderr, "gpuadmit capacity: - (standard input) is given twice\n");
            return -1;
        }
    o->files[o->n_files++] = path;
    return 0;
}

/* 0 to go on, 1 when help was printed, -1 on a usage error (reported). o->files is new (free
 * it) whatever the result. */
static int parse_args(int argc, char **argv, struct cap_opts *o)
{
    uint64_t v;
    int ch;

    o->rules = "rules";
    o->timeout_s = DEFAULT_CAPACITY_SYNC_TIMEOUT_S;
    /* every file is an argument or an option's value: argc bounds them */
    if ((o->files = calloc((size_t)argc + 1, sizeof(*o->files))) == NULL) {
        fprintf(stderr, "gpuadmit capacity: out of memory\n");
        return -1;
    }
    opterr = 0;
    optind = 1;
    /* "-": file arguments come back in place (as option 1), so -f and plain files keep the
     * order they were given in */
    while ((ch = getopt_long(argc, argv, "-:r:f:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 1:
        case 'f':
            if (add_file(o, optarg) < 0)
                return -1;
            break;
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
    if ((o->snapshot != NULL) == (o->kubeconfig != NULL)) {
        fprintf(stderr, "gpuadmit capacity: give one of --cluster-snapshot and --kubeconfig\n");
        return -1;
    }
    return 0;
}

/* The policy document whose GPU resources the node report shows: the first with a capacity
 * rule, else the first. */
static const struct policy_doc *capacity_doc(const struct policy *p)
{
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            if (eval_type_judges_capacity(p->docs[i].rules[k].type))
                return &p->docs[i];
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
    /* what the node autoscalers say they may still add (the view's reading of them) */
    out = json_pack(doc, "{s:o, s:o, s:V}", "nodes", list, "totals", totals, "autoscalers",
                    yyjson_obj_get(yyjson_doc_get_root(dump), "autoscalers"));
out:
    free(names);
    yyjson_doc_free(dump);
    return out;
}

/* Whether obj is a workload with a pod template: a Pod, Deployment, ReplicaSet, StatefulSet, Job
 * or CronJob with one. */
static bool has_template(yyjson_val *obj)
{
    const char *kind = json_get_str(obj, "kind");
    yyjson_val *spec = yyjson_obj_get(obj, "spec");
    static const char *const kinds[] = {"Deployment", "ReplicaSet", "StatefulSet", "Job"};
    bool known = false;

    if (kind == NULL || !yyjson_is_obj(spec))
        return false;
    if (strlen(kind) != yyjson_get_len(yyjson_obj_get(obj, "kind")))
        return false; /* a kind with a NUL in it is none of these */
    if (strcmp(kind, "Pod") == 0)
        return true;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        known = known || strcmp(kind, kinds[i]) == 0;
    if (strcmp(kind, "CronJob") == 0)
        spec = yyjson_obj_get(yyjson_obj_get(spec, "jobTemplate"), "spec");
    else if (!known)
        return false;
    return yyjson_is_obj(yyjson_obj_get(yyjson_obj_get(spec, "template"), "spec"));
}

/* The workloads of the files as they are judged: the report's array and tally, the exit code
 * so far. */
struct judging {
    yyjson_mut_doc *doc;
    yyjson_mut_val *list;
    const struct offline_opts *oo;
    size_t fits, not_now, never, not_judged, errors;
    size_t after;   /* of fits, those that fit only once the node autoscalers add nodes */
    size_t objects; /* every object read, workload or not */
    int code;
};

/* One input error, on stderr: the report goes on without that document, and exits 2. */
static void input_error(struct judging *j, const struct diag *d)
{
    char text[DIAG_MSG_MAX + 300];

    fprintf(stderr, "gpuadmit capacity: %s\n", diag_format(d, text, sizeof(text)));
    j->errors++;
    j->code = cap_exit_worse(j->code, CAP_EXIT_USAGE);
}

/* Appends e (in j->doc, or NULL when out of memory) to the report. */
static void append(struct judging *j, yyjson_mut_val *e, const char *file, unsigned line)
{
    struct diag d;

    if (e != NULL && json_mut_set(j->doc, e, "file", yyjson_mut_strcpy(j->doc, file)) == 0 &&
        json_mut_set(j->doc, e, "line", yyjson_mut_uint(j->doc, line)) == 0 &&
        yyjson_mut_arr_append(j->list, e))
        return;
    diag_clear(&d);
    diag_set(&d, file, line, 0, "out of memory");
    input_error(j, &d);
}

/* One document of the file that is not judged, with why: new in doc. */
static yyjson_mut_val *skipped(struct judging *j, yyjson_val *obj, const char *why)
{
    yyjson_val *meta = yyjson_obj_get(obj, "metadata");
    const char *kind = json_get_str(obj, "kind");
    const char *ns = json_get_str(meta, "namespace");
    const char *name = json_get_str(meta, "name");

    j->not_judged++;
    return json_pack(j->doc, "{s:s, s:s, s:s, s:s}", "kind", kind ? kind : "?", "namespace",
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

/* How strong a capacity verdict is (eval.h), weakest first; -1 for none. */
static int verdict_rank(yyjson_val *cap)
{
    static const char *const order[] = {"fits", "notNow", "never", "invalid"};
    yyjson_val *v = yyjson_obj_get(cap, "verdict");

    for (int i = 0; i < 4; i++)
        if (json_str_is(v, order[i]))
            return i;
    return -1;
}

/* The capacity judgement of the admit result: of its capacity rules, the strongest verdict (the
 * first of equals); NULL when no capacity rule judged the object. Borrowed from admit. */
static yyjson_val *judgement_of(yyjson_val *admit)
{
    yyjson_val *r, *cap, *best = NULL;
    size_t i, max;

    yyjson_arr_foreach (yyjson_obj_get(admit, "rules"), i, max, r) {
        cap = yyjson_obj_get(r, "capacity");
        if (verdict_rank(cap) > verdict_rank(best))
            best = cap;
    }
    return best;
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

/* The rules that deny the object in admit (its offline_admit() result), an array new in doc;
 * NULL when out of memory. */
static yyjson_mut_val *denied_by(yyjson_mut_doc *doc, yyjson_val *admit)
{
    yyjson_mut_val *out = yyjson_mut_arr(doc);
    yyjson_val *r;
    size_t i, max;

    yyjson_arr_foreach (yyjson_obj_get(admit, "rules"), i, max, r) {
        if (out != NULL && json_str_is(yyjson_obj_get(r, "outcome"), "deny") &&
            !yyjson_mut_arr_append(out, yyjson_val_mut_copy(doc, yyjson_obj_get(r, "rule"))))
            out = NULL;
    }
    return out;
}

/* One workload's entry from its capacity judgement cap (in admit, its offline_admit() result),
 * new in j->doc; counts it. */
static yyjson_mut_val *judged_entry(struct judging *j, yyjson_val *admit, yyjson_val *cap,
                                    const char *as)
{
    const char *verdict = json_get_str(cap, "verdict");
    bool gpus = yyjson_is_true(yyjson_obj_get(cap, "requestsGPUs"));
    yyjson_mut_val *e;

    /* at 0 replicas (parallelism 0) nothing waits now: only a pod that can never fit is worth
     * a code */
    if (as != NULL &&
        (strncmp(as, "0 replicas", 10) == 0 || strncmp(as, "parallelism 0", 13) == 0) &&
        strcmp(verdict, "notNow") == 0)
        verdict = "fits";
    if (!gpus || strcmp(verdict, "fits") == 0) {
        j->fits++;
        if (gpus && yyjson_obj_get(cap, "autoscalers") != NULL &&
            int_of(yyjson_obj_get(cap, "fitNow")) < int_of(yyjson_obj_get(cap, "pods")))
            j->after++;
    } else if (strcmp(verdict, "notNow") == 0) {
        j->not_now++;
        j->code = cap_exit_worse(j->code, CAP_EXIT_NOT_NOW);
    } else {
        j->never++;
        j->code = cap_exit_worse(j->code, CAP_EXIT_NEVER);
    }
    e = json_pack(
        j->doc, "{s:s, s:s, s:s, s:V, s:V, s:V, s:V, s:V, s:V, s:V, s:s, s:V, s:s, s:b, s:V*}",
        "kind", json_get_str(admit, "kind"), "namespace", json_get_str(admit, "namespace"), "name",
        json_get_str(admit, "name"), "replicas", yyjson_obj_get(cap, "pods"), "requestsGPUs",
        yyjson_obj_get(cap, "requestsGPUs"), "fitNow", yyjson_obj_get(cap, "fitNow"), "fitEver",
        yyjson_obj_get(cap, "fitEver"), "eligibleNodes", yyjson_obj_get(cap, "eligibleNodes"),
        "notEligible", yyjson_obj_get(cap, "notEligible"), "explanation",
        yyjson_obj_get(cap, "explanation"), "verdict", gpus ? verdict : "fits", "why",
        yyjson_obj_get(cap, "why"), "decision", json_get_str(admit, "decision"), "patched",
        yyjson_arr_size(yyjson_obj_get(admit, "patch")) > 0, "autoscalers",
        yyjson_obj_get(cap, "autoscalers"));
    /* admit is the object as written (its decision, what check denies), cap the judgement of
     * the parked one */
    if (e != NULL && json_mut_set(j->doc, e, "deniedBy", denied_by(j->doc, admit)) < 0)
        e = NULL;
    /* the replicas as written: the judgement was at 1 */
    if (e != NULL && as != NULL && strncmp(as, "suspended", 9) != 0 &&
        json_mut_set(j->doc, e, "replicas", yyjson_mut_int(j->doc, 0)) < 0)
        e = NULL;
    if (e != NULL && as != NULL &&
        json_mut_set(j->doc, e, "judgedAs", yyjson_mut_strcpy(j->doc, as)) < 0)
        e = NULL;
    return e;
}

/*
 * A parked workload asks for no pods now, so the webhook lets it through; what capacity reports
 * is whether it fits once it runs: a suspended Job (Kueue creates them so, and resumes them when
 * it admits them) as when resumed, and a workload at 0 replicas as at 1, for whether a replica
 * can ever fit (a later scale-up would be refused). The object to judge, in a new document
 * (*held, the caller frees it) with *as saying how, or obj itself.
 */
static yyjson_val *as_running(yyjson_val *obj, yyjson_doc **held, const char **as)
{
    const char *kind = json_get_str(obj, "kind");
    yyjson_val *spec = yyjson_obj_get(obj, "spec"), *replicas = yyjson_obj_get(spec, "replicas");
    bool job = kind != NULL && strcmp(kind, "Job") == 0;
    int64_t n;
    bool suspended = job && yyjson_is_true(yyjson_obj_get(spec, "suspend"));
    bool paused = job && json_int64(yyjson_obj_get(spec, "parallelism"), &n) && n == 0;
    bool kueue = yyjson_obj_get(yyjson_obj_get(yyjson_obj_get(obj, "metadata"), "labels"),
                                "kueue.x-k8s.io/queue-name") != NULL;
    yyjson_mut_doc *m;
    yyjson_mut_val *root, *mspec;

    *held = NULL;
    *as = NULL;
    if (suspended && kueue)
        *as = "suspended: judged as when it is resumed, as written (Kueue may add its "
              "ResourceFlavor's nodeSelector and tolerations, or admit fewer pods)";
    else if (suspended)
        *as = "suspended: judged as when it is resumed";
    else if (paused)
        *as = "parallelism 0: judged at 1, whether a pod can ever fit";
    else if (!job && kind != NULL && strcmp(kind, "Pod") != 0 && json_int64(replicas, &n) && n == 0)
        *as = "0 replicas: judged at 1, whether a replica can ever fit";
    else
        return obj;
    m = yyjson_mut_doc_new(NULL);
    root = m ? yyjson_val_mut_copy(m, obj) : NULL; /* as deep as yamljson let obj be */
    mspec = yyjson_mut_obj_get(root, "spec");
    if (mspec == NULL ||
        (suspended && json_mut_set(m, mspec, "suspend", yyjson_mut_false(m)) < 0) ||
        (paused && json_mut_set(m, mspec, "parallelism", yyjson_mut_int(m, 1)) < 0) ||
        (!job && json_mut_set(m, mspec, "replicas", yyjson_mut_int(m, 1)) < 0)) {
        yyjson_mut_doc_free(m);
        *as = NULL;
        return obj;
    }
    *held = json_freeze(root);
    yyjson_mut_doc_free(m);
    if (*held == NULL) {
        *as = NULL;
        return obj;
    }
    return yyjson_doc_get_root(*held);
}

/* One object of a file (at ptr in doc, a JSON Pointer), judged as gpuadmit check judges it at
 * /validate: after the policy's patches (a toleration or selector the mutating webhook adds
 * changes which nodes are eligible), by the capacity rule, against the view. A List's items
 * one by one, as check takes them. */
static void judge_object(struct judging *j, const struct yamljson_doc *doc, const char *file,
                         const char *ptr, yyjson_val *obj)
{
    unsigned line = doc->line, column = doc->column;
    yyjson_val *items = yyjson_obj_get(obj, "items"), *it, *root, *cap;
    const char *kind = json_get_str(obj, "kind"), *decision, *reason;
    yyjson_mut_val *e;
    yyjson_doc *admit = NULL, *held = NULL, *parked = NULL;
    const char *as = NULL;
    struct diag d;
    char sub[YAMLJSON_POINTER_MAX];
    size_t i, max;

    yamljson_mark(doc, ptr, &line, &column);
    if (yyjson_is_arr(items) && kind != NULL && strlen(kind) >= 4 &&
        strcmp(kind + strlen(kind) - 4, "List") == 0) {
        yyjson_arr_foreach (items, i, max, it) {
            /* a nested List's items are where they are, not at the outer item's line */
            yamljson_item_pointer(sub, sizeof(sub), ptr, i);
            judge_object(j, doc, file, sub, it);
        }
        return;
    }
    j->objects++;
    diag_clear(&d);
    if (!has_template(obj)) {
        append(j, skipped(j, obj, "not a workload with a pod template"), file, line);
        return;
    }
    admit = admit_frozen(j->oo, as_running(obj, &held, &as), &d);
    if (held != NULL && admit != NULL) {
        /* parked: the capacity judgement of the running object, the rest of the written one */
        parked = admit;
        admit = admit_frozen(j->oo, obj, &d);
    }
    root = yyjson_doc_get_root(admit);
    decision = json_get_str(root, "decision");
    reason = json_get_str(root, "reason");
    cap = judgement_of(parked != NULL ? yyjson_doc_get_root(parked) : root);
    if (admit == NULL || decision == NULL || strcmp(decision, "not judged") == 0) {
        e = skipped(j, obj, admit == NULL ? d.msg : reason ? reason : "not judged by the policy");
    } else if (!in_scope(root)) {
        e = skipped(j, obj,
                    "out of the policy's scope (exclude, namespaces), so the webhook admits it");
    } else if (cap == NULL) {
        e = skipped(j, obj,
                    "no capacity rule of the policy judges it, so neither does gpuadmit check");
    } else if (json_str_is(yyjson_obj_get(cap, "verdict"), "invalid")) {
        diag_set(&d, file, line, column, "document %u: %s", doc->index,
                 json_get_str(cap, "why") ? json_get_str(cap, "why") : "");
        input_error(j, &d);
        yyjson_doc_free(admit);
        yyjson_doc_free(parked);
        yyjson_doc_free(held);
        return;
    } else {
        e = judged_entry(j, root, cap, as);
    }
    append(j, e, file, line);
    yyjson_doc_free(admit);
    yyjson_doc_free(parked);
    yyjson_doc_free(held);
}

/* Each workload of each file, in order, into j->list. */
static void workload_report(struct judging *j, const struct cap_opts *o)
{
    for (size_t f = 0; f < o->n_files; f++) {
        const char *file = strcmp(o->files[f], "-") == 0 ? "<stdin>" : o->files[f];
        struct yamljson y;
        struct diag d;

        diag_clear(&d);
        if (yamljson_read_file(o->files[f], YAMLJSON_MARKS, &y, &d) < 0) {
            input_error(j, &d);
            continue;
        }
        for (size_t i = 0; i < y.n; i++)
            judge_object(j, &y.docs[i], file, "", y.docs[i].value);
        yamljson_free(&y);
    }
    if (j->objects == 0 && j->errors == 0) {
        struct diag d;

        /* an empty manifest (a render that failed into a file) must not pass a CI gate;
         * kubectl apply refuses one too ("no objects passed to apply") */
        diag_clear(&d);
        diag_set(&d, o->n_files == 1 ? o->files[0] : "-f", 0, 0,
                 "no Kubernetes objects in the %s given (empty, only comments, or empty Lists)",
                 o->n_files == 1 ? "file" : "files");
        input_error(j, &d);
    }
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

/* One workload: "FILE:LINE: KIND NS/NAME: N replicas: VERDICT: N fit now, M at most", the
 * capacity rule's reason, whether the policy patches it, the arithmetic. */
static void print_workload(yyjson_val *w)
{
    int64_t replicas = int_of(yyjson_obj_get(w, "replicas"));
    int64_t now = int_of(yyjson_obj_get(w, "fitNow")), ever = int_of(yyjson_obj_get(w, "fitEver"));
    const char *verdict = s_of(w, "verdict"), *why = s_of(w, "why");
    yyjson_val *r, *as = yyjson_obj_get(w, "autoscalers");
    size_t i, max;

    printf("\n%s:%lld: %s %s/%s: ", s_of(w, "file"), (long long)int_of(yyjson_obj_get(w, "line")),
           s_of(w, "kind"), s_of(w, "namespace"), s_of(w, "name"));
    if (yyjson_obj_get(w, "skipped") != NULL) {
        printf("not judged: %s\n", s_of(w, "skipped"));
        return;
    }
    printf("%lld replica%s: ", (long long)replicas, replicas == 1 ? "" : "s");
    if (!yyjson_is_true(yyjson_obj_get(w, "requestsGPUs"))) {
        printf("requests no GPU\n");
        return;
    }
    if (strcmp(verdict, "never") == 0 && ever >= replicas)
        /* the rule refuses what the GPUs' count would hold (shared GPUs, several per pod) */
        printf("never fits (by the GPUs' count alone %lld would fit now, %lld at most)",
               (long long)now, (long long)ever);
    else
        printf("%s: %lld fit now, %lld at most",
               strcmp(verdict, "never") == 0    ? "never fits"
               : strcmp(verdict, "notNow") == 0 ? "does not fit now"
               : now < replicas && as != NULL   ? "fits after scale-up"
                                                : "fits",
               (long long)now, (long long)ever);
    /* what the node autoscalers may add (growth.h; 2^40: no limit bounds it) */
    if (as != NULL && int_of(yyjson_obj_get(as, "podsEver")) >= (INT64_C(1) << 40))
        printf(", and any number on the nodes the node autoscalers add");
    else if (as != NULL)
        printf(", and %lld more now, %lld at most, on the nodes the node autoscalers may add",
               (long long)int_of(yyjson_obj_get(as, "podsNow")),
               (long long)int_of(yyjson_obj_get(as, "podsEver")));
    putchar('\n');
    if (why[0])
        printf("  %s\n", why);
    yyjson_arr_foreach (yyjson_obj_get(w, "deniedBy"), i, max, r) {
        printf("%s%s", i ? ", " : "  gpuadmit check denies it: ", json_str(r) ? json_str(r) : "?");
        if (i + 1 == max)
            putchar('\n');
    }
    if (yyjson_obj_get(w, "judgedAs") != NULL)
        printf("  (%s)\n", s_of(w, "judgedAs"));
    if (yyjson_is_true(yyjson_obj_get(w, "patched")))
        printf("  (judged as the policy patches it: see gpuadmit check)\n");
    printf("  %s\n", s_of(w, "explanation"));
}

/* Each node group's and NodePool's headroom, as the view read them: "node group NAME: 2 of
 * max 6, headroom 4 nodes" (0 in backoff or unhealthy), "NodePool NAME: 8 nvidia.com/gpu left
 * of its limit" or "no GPU limit". */
static void print_autoscalers(yyjson_val *as)
{
    yyjson_val *k, *v, *gk, *g;
    size_t i, max, j, gmax;

    yyjson_obj_foreach (as, i, max, k, v) {
        const char *key = yyjson_get_str(k);

        if (json_get_str(v, "error") != NULL) {
            printf("%s: not read: %s\n", key, s_of(v, "error"));
            continue;
        }
        if (strncmp(key, "NodePool/", 9) == 0) {
            yyjson_val *h = yyjson_obj_get(v, "gpuHeadroom");

            if (yyjson_is_int(h))
                printf("NodePool %s: %lld nvidia.com/gpu left of its limit\n", key + 9,
                       (long long)yyjson_get_sint(h));
            else
                printf("NodePool %s: no nvidia.com/gpu limit\n", key + 9);
            continue;
        }
        printf("Cluster Autoscaler (%s, %s):\n", s_of(v, "status")[0] ? s_of(v, "status") : "?",
               s_of(v, "updated")[0] ? s_of(v, "updated") : "no last-updated annotation");
        yyjson_obj_foreach (yyjson_obj_get(v, "groups"), j, gmax, gk, g)
            printf("  node group %s: %lld of max %lld, headroom %lld node%s%s%s%s\n",
                   yyjson_get_str(gk), (long long)int_of(yyjson_obj_get(g, "target")),
                   (long long)int_of(yyjson_obj_get(g, "maxSize")),
                   (long long)int_of(yyjson_obj_get(g, "headroom")),
                   int_of(yyjson_obj_get(g, "headroom")) == 1 ? "" : "s",
                   yyjson_is_true(yyjson_obj_get(g, "healthy")) ? "" : ", unhealthy",
                   s_of(g, "scaleUp")[0] ? ", scale-up " : "", s_of(g, "scaleUp"));
    }
}

static void print_text(yyjson_val *report, const char *source)
{
    yyjson_val *nodes = yyjson_obj_get(report, "nodes"), *n, *k, *r, *w;
    yyjson_val *sum = yyjson_obj_get(report, "summary");
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
    print_autoscalers(yyjson_obj_get(report, "autoscalers"));
    yyjson_arr_foreach (yyjson_obj_get(report, "workloads"), i, max, w)
        print_workload(w);
    if (sum != NULL) {
        int64_t all = int_of(yyjson_obj_get(sum, "fits")) + int_of(yyjson_obj_get(sum, "notNow")) +
                      int_of(yyjson_obj_get(sum, "never")) +
                      int_of(yyjson_obj_get(sum, "notJudged"));

        printf("\n%lld workload%s: %lld fit%s now", (long long)all, all == 1 ? "" : "s",
               (long long)int_of(yyjson_obj_get(sum, "fits")),
               int_of(yyjson_obj_get(sum, "fits")) == 1 ? "s" : "");
        if (int_of(yyjson_obj_get(sum, "afterScaleUp")) > 0)
            printf(" (%lld of them after scale-up)",
                   (long long)int_of(yyjson_obj_get(sum, "afterScaleUp")));
        printf(", %lld do%s not fit now, %lld never fit%s, %lld not judged",
               (long long)int_of(yyjson_obj_get(sum, "notNow")),
               int_of(yyjson_obj_get(sum, "notNow")) == 1 ? "es" : "",
               (long long)int_of(yyjson_obj_get(sum, "never")),
               int_of(yyjson_obj_get(sum, "never")) == 1 ? "s" : "",
               (long long)int_of(yyjson_obj_get(sum, "notJudged")));
        if (int_of(yyjson_obj_get(sum, "errors")) > 0)
            printf("; %lld input error%s", (long long)int_of(yyjson_obj_get(sum, "errors")),
                   int_of(yyjson_obj_get(sum, "errors")) == 1 ? "" : "s");
        putchar('\n');
    }
}

/* The workloads of the files, judged, into report (in doc) with their summary; the exit code
 * they give, or CAP_EXIT_USAGE when out of memory. */
static int add_workloads(yyjson_mut_doc *doc, yyjson_mut_val *report, const struct cap_opts *o,
                         const struct policy *p, struct cluster *view)
{
    struct offline_opts oo = {p, view, false, NULL, NULL};
    struct judging j = {doc, yyjson_mut_arr(doc), &oo, 0, 0, 0, 0, 0, 0, 0, CAP_EXIT_FITS};

    if (j.list == NULL)
        return CAP_EXIT_USAGE;
    workload_report(&j, o);
    if (json_mut_set(doc, report, "workloads", j.list) < 0 ||
        json_mut_set(doc, report, "summary",
                     json_pack(doc, "{s:I, s:I, s:I, s:I, s:I, s:I}", "fits", (int64_t)j.fits,
                               "afterScaleUp", (int64_t)j.after, "notNow", (int64_t)j.not_now,
                               "never", (int64_t)j.never, "notJudged", (int64_t)j.not_judged,
                               "errors", (int64_t)j.errors)) < 0) {
        fprintf(stderr, "gpuadmit capacity: out of memory\n");
        return CAP_EXIT_USAGE;
    }
    return j.code;
}

static bool has_capacity_rule(const struct policy *p)
{
    for (size_t i = 0; i < p->n_docs; i++)
        for (size_t k = 0; k < p->docs[i].n_rules; k++)
            if (eval_type_judges_capacity(p->docs[i].rules[k].type))
                return true;
    return false;
}

int capreport_main(int argc, char **argv)
{
    struct cap_opts o = {0};
    struct policy *p = NULL;
    struct cluster *view = NULL;
    const struct policy_doc *doc;
    yyjson_mut_doc *rdoc = NULL;
    yyjson_mut_val *report;
    yyjson_doc *frozen = NULL;
    struct diag d;
    char text[DIAG_MSG_MAX + 300], *dump;
    int rc = CAP_EXIT_USAGE, code = CAP_EXIT_FITS;

    switch (parse_args(argc, argv, &o)) {
    case 1: rc = 0; goto out;
    case -1: goto out;
    }
    log_set_level(LOG_ERROR);
    if ((p = offline_load_policy("gpuadmit capacity", o.rules)) == NULL)
        goto out;
    doc = capacity_doc(p);
    if (o.n_files > 0 && !has_capacity_rule(p)) {
        /* the same evaluation as check: without the rule nothing judges the fit */
        fprintf(stderr,
                "gpuadmit capacity: the policy %s has no capacity rule, so nothing judges whether "
                "workloads fit; add one (rules/README.md, type: capacity) or use -r rules\n",
                o.rules);
        goto out;
    }
    diag_clear(&d);
    view = o.snapshot ? offline_load_snapshot(o.snapshot, p, &d)
                      : offline_list_live(o.kubeconfig, o.timeout_s, p, &d);
    if (view == NULL || doc == NULL) {
        fprintf(stderr, "gpuadmit capacity: %s\n",
                doc ? diag_format(&d, text, sizeof(text)) : "the policy has no documents");
        goto out;
    }
    offline_warn_snapshot(p, view); /* with no -f too: the report's totals lack what it lacks */
    if ((rdoc = yyjson_mut_doc_new(NULL)) == NULL ||
        (report = node_report(rdoc, view, &doc->gpu_resources)) == NULL) {
        fprintf(stderr, "gpuadmit capacity: out of memory\n");
        goto out;
    }
    if (o.n_files > 0)
        code = add_workloads(rdoc, report, &o, p, view);
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
    rc = code;
out:
    yyjson_doc_free(frozen);
    yyjson_mut_doc_free(rdoc);
    cluster_free(view);
    policy_free(p);
    free(o.files);
    return rc;
}
