/*
 * explain.c: gpuadmit explain, why GPU pods are Pending, for people and for scripts.
 *
 * The view comes from a snapshot file or from one list of a live cluster, as for gpuadmit
 * capacity; pending_explain() (cluster/pending.h) judges it. The text groups the pods of one
 * owner whose reasons are the same into one block.
 */
#include "explain.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cluster/cluster.h"
#include "cluster/pending.h"
#include "json.h"
#include "log.h"
#include "offline.h"
#include "parse.h"
#include "policy/policy.h"

static const char usage_explain[] =
    "usage: gpuadmit explain (--cluster-snapshot FILE | --kubeconfig FILE) [OPTIONS]\n"
    "                        [POD | KIND/NAME ...]\n"
    "\n"
    "Why GPU pods are Pending: for every Pending pod that requests an extended resource, or\n"
    "for those named (POD, pod/POD, or the pods of replicaset/NAME, deployment/NAME,\n"
    "statefulset/NAME, job/NAME), the scheduler's own PodScheduled message, then each reason\n"
    "with a stable code, replayed node by node in kube-scheduler's filter order, and what the\n"
    "scheduler does not say: fragmented free GPUs, a pod larger than any node, device\n"
    "plugins that advertise nothing, unhealthy GPUs, shared GPUs asked for several at once,\n"
    "whether a PriorityClass would let the pod preempt, and node groups and NodePools that\n"
    "could hold it but cannot grow. Pods of one owner with the same reasons are shown\n"
    "together.\n"
    "\n"
    "  --cluster-snapshot FILE   kubectl get nodes,pods,priorityclasses,replicasets,\n"
    "                            deployments,statefulsets,jobs -A -o json\n"
    "  --kubeconfig FILE         list the live cluster once through this kubeconfig\n"
    "  --timeout SECONDS         how long to wait for the live list (default 30)\n"
    "  -r, --rules PATH          a policy directory or file: the device plugin config\n"
    "                            ConfigMaps its device-plugin-config rules name are read\n"
    "                            (default: the default policy's three)\n"
    "  -n, --namespace NS        only pods of this namespace (default: every namespace)\n"
    "  -o, --output text|json    text (default), or JSON:\n"
    "                            {\"pods\":[{\"namespace\",\"name\",\"owner\",\"scheduler\",\n"
    "                            \"reasons\":[{\"code\",\"message\",\"nodes\"}],...}],\n"
    "                            \"notPending\":[...],\"notFound\":[...]}\n"
    "\n"
    "Reason codes: scheduling-gated, other-scheduler, larger-than-any-node,\n"
    "shared-request-gt-one, device-plugin-config-missing (a node's nvidia.com/device-plugin.\n"
    "config label names a key its plugin's ConfigMap lacks), insufficient, device-plugin-down,\n"
    "unhealthy-gpus,\n"
    "selector-mismatch, untolerated-taint, node-not-ready, node-unschedulable,\n"
    "preemption-possible, no-priority-class, node-group-at-max, autoscaler-backoff (Cluster\n"
    "Autoscaler's status ConfigMap), nodepool-limit (Karpenter NodePools); the first listed\n"
    "is the primary one. A snapshot may carry the ConfigMap kube-system/cluster-autoscaler-\n"
    "status, the device plugin's config ConfigMaps and karpenter.sh/v1 NodePools (kubectl get\n"
    "... configmaps,nodepools.karpenter.sh).\n"
    "\n"
    "Exit code: 0 nothing named (or nothing at all) is Pending, 1 some pod is, 2 a usage or\n"
    "input error, or a name the view holds nothing of.\n";

enum { EXPLAIN_EXIT_NONE = 0, EXPLAIN_EXIT_PENDING = 1, EXPLAIN_EXIT_USAGE = 2 };

enum { OPT_SNAPSHOT = 256, OPT_KUBECONFIG, OPT_TIMEOUT, OPT_HELP };

static const struct option longopts[] = {
    {"cluster-snapshot", required_argument, NULL, OPT_SNAPSHOT},
    {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"rules", required_argument, NULL, 'r'},
    {"namespace", required_argument, NULL, 'n'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

struct explain_opts {
    const char *snapshot, *kubeconfig, *ns, *rules;
    const char **names; /* argv's strings */
    size_t n_names;
    unsigned timeout_s;
    bool json;
};

/* 0 to go on, 1 when help was printed, -1 on a usage error (reported). */
static int parse_args(int argc, char **argv, struct explain_opts *o)
{
    uint64_t v;
    int ch;

    o->timeout_s = DEFAULT_CAPACITY_SYNC_TIMEOUT_S;
    if ((o->names = calloc((size_t)argc + 1, sizeof(*o->names))) == NULL) {
        fprintf(stderr, "gpuadmit explain: out of memory\n");
        return -1;
    }
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "-:n:o:r:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 1: o->names[o->n_names++] = optarg; break;
        case OPT_SNAPSHOT: o->snapshot = optarg; break;
        case OPT_KUBECONFIG: o->kubeconfig = optarg; break;
        case 'r': o->rules = optarg; break;
        case OPT_TIMEOUT:
            if (parse_uint(optarg, 1, 3600, &v) < 0) {
                fprintf(stderr, "gpuadmit explain: --timeout takes 1 to 3600, got \"%s\"\n",
                        optarg);
                return -1;
            }
            o->timeout_s = (unsigned)v;
            break;
        case 'n':
            if (optarg[0] == '\0') {
                fprintf(stderr, "gpuadmit explain: -n takes a namespace\n");
                return -1;
            }
            o->ns = optarg;
            break;
        case 'o':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "gpuadmit explain: -o takes text or json, got \"%s\"\n", optarg);
                return -1;
            }
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'h':
        case OPT_HELP: fputs(usage_explain, stdout); return 1;
        case ':':
            fprintf(stderr, "gpuadmit explain: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr,
                    "gpuadmit explain: unknown option \"%s\"; see gpuadmit explain --help\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    while (optind < argc) /* after "--" */
        o->names[o->n_names++] = argv[optind++];
    if ((o->snapshot != NULL) == (o->kubeconfig != NULL)) {
        fprintf(stderr, "gpuadmit explain: give one of --cluster-snapshot and --kubeconfig\n");
        return -1;
    }
    return 0;
}

/* Whether two pods of the output say the same: owner, scheduler message, reasons. */
static bool same_story(yyjson_val *a, yyjson_val *b)
{
    static const char *const keys[] = {"owner", "scheduler", "reasons", "fits", "resources"};

    if (!yyjson_equals(yyjson_obj_get(a, "namespace"), yyjson_obj_get(b, "namespace")))
        return false;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!yyjson_equals(yyjson_obj_get(a, keys[i]), yyjson_obj_get(b, keys[i])))
            return false;
    return true;
}

static const char *str(yyjson_val *obj, const char *key)
{
    const char *s = json_get_str(obj, key);

    return s ? s : "";
}

/* One block: the pods [from, to) of pods, which say the same. */
static void print_block(yyjson_val *pods, size_t from, size_t to)
{
    yyjson_val *p = yyjson_arr_get(pods, from), *owner = yyjson_obj_get(p, "owner");
    yyjson_val *sched = yyjson_obj_get(p, "scheduler"), *r, *k, *v;
    size_t n = to - from, i, max;

    if (yyjson_is_obj(owner)) {
        printf("%zu of %" PRId64 " %s of %s %s/%s %s Pending", n,
               yyjson_get_sint(yyjson_obj_get(owner, "pods")),
               yyjson_get_sint(yyjson_obj_get(owner, "pods")) == 1 ? "GPU pod" : "GPU pods",
               str(owner, "kind"), str(p, "namespace"), str(owner, "name"), n == 1 ? "is" : "are");
        if (json_get_str(owner, "deployment") != NULL)
            printf(" (Deployment %s/%s)", str(p, "namespace"), str(owner, "deployment"));
        printf(":");
        for (size_t j = from; j < to; j++)
            printf("%s%s", j == from ? " " : ", ", str(yyjson_arr_get(pods, j), "name"));
        printf("\n");
    } else if (n == 1) {
        printf("Pod %s/%s is Pending:\n", str(p, "namespace"), str(p, "name"));
    } else {
        printf("%zu pods of no controller in namespace %s are Pending:", n, str(p, "namespace"));
        for (size_t j = from; j < to; j++)
            printf("%s%s", j == from ? " " : ", ", str(yyjson_arr_get(pods, j), "name"));
        printf("\n");
    }
    printf("  asks for");
    yyjson_obj_foreach (yyjson_obj_get(p, "resources"), i, max, k, v)
        printf("%s %" PRId64 " %s", i ? "," : "", yyjson_get_sint(v), yyjson_get_str(k));
    printf(" per pod\n");
    if (yyjson_is_obj(sched))
        printf("  kube-scheduler (%s): %s\n", str(sched, "reason"), str(sched, "message"));
    else
        printf("  kube-scheduler: no PodScheduled condition yet (not tried, or not its pod)\n");
    yyjson_arr_foreach (yyjson_obj_get(p, "reasons"), i, max, r)
        printf("  %s: %s\n", str(r, "code"), str(r, "message"));
    if (yyjson_arr_size(yyjson_obj_get(p, "fits")) > 0) {
        printf("  the view finds room on");
        yyjson_arr_foreach (yyjson_obj_get(p, "fits"), i, max, v)
            printf("%s %s", i ? "," : "", yyjson_get_str(v));
        printf(": kube-scheduler has not retried yet, or the pod lacks what the view does not "
               "hold (CPU, memory, ports, volumes, pod affinity)\n");
    }
}

static void print_text(yyjson_val *root)
{
    yyjson_val *pods = yyjson_obj_get(root, "pods"), *x;
    size_t n = yyjson_arr_size(pods), from = 0, i, max;

    for (size_t to = 1; to <= n; to++) {
        if (to < n && same_story(yyjson_arr_get(pods, from), yyjson_arr_get(pods, to)))
            continue;
        if (from > 0)
            printf("\n");
        print_block(pods, from, to);
        from = to;
    }
    yyjson_arr_foreach (yyjson_obj_get(root, "notPending"), i, max, x)
        printf("%s%s\n", n > 0 && i == 0 ? "\n" : "", str(x, "message"));
    if (n == 0 && yyjson_arr_size(yyjson_obj_get(root, "notPending")) == 0 &&
        yyjson_arr_size(yyjson_obj_get(root, "notFound")) == 0)
        printf("no GPU pod is Pending\n");
}

int explain_main(int argc, char **argv)
{
    struct explain_opts o = {0};
    struct cluster *view = NULL;
    struct policy *p = NULL;
    yyjson_mut_doc *out = NULL;
    yyjson_doc *frozen = NULL;
    struct pending_query q;
    struct diag d;
    char text[DIAG_MSG_MAX + 300], *dump;
    yyjson_val *root, *x;
    size_t i, max;
    int rc = EXPLAIN_EXIT_USAGE;

    switch (parse_args(argc, argv, &o)) {
    case 1: rc = 0; goto out;
    case -1: goto out;
    }
    log_set_level(LOG_ERROR);
    /* the policy only says which device plugin configs to read: without one, the default's */
    if (o.rules != NULL && (p = offline_load_policy("gpuadmit explain", o.rules)) == NULL)
        goto out;
    diag_clear(&d);
    view = o.snapshot ? offline_load_snapshot(o.snapshot, p, &d)
                      : offline_list_live(o.kubeconfig, o.timeout_s, p, &d);
    q = (struct pending_query){o.ns, o.names, o.n_names, 0};
    if (view == NULL || (out = pending_explain(view, &q, &d)) == NULL) {
        fprintf(stderr, "gpuadmit explain: %s\n", diag_format(&d, text, sizeof(text)));
        goto out;
    }
    /* depth capped: the view's records and fixed-depth reasons */
    if ((frozen = json_freeze(yyjson_mut_doc_get_root(out))) == NULL) {
        fprintf(stderr, "gpuadmit explain: out of memory\n");
        goto out;
    }
    root = yyjson_doc_get_root(frozen);
    if (o.json) {
        if ((dump = json_write_pretty(root, NULL)) == NULL) {
            fprintf(stderr, "gpuadmit explain: cannot write the explanation\n");
            goto out;
        }
        puts(dump);
        free(dump);
    } else {
        print_text(root);
    }
    yyjson_arr_foreach (yyjson_obj_get(root, "notFound"), i, max, x)
        fprintf(stderr,
                "gpuadmit explain: %s: the view holds no GPU pod or GPU workload of that "
                "name%s%s\n",
                yyjson_get_str(x), o.ns ? " in namespace " : "", o.ns ? o.ns : "");
    rc = yyjson_arr_size(yyjson_obj_get(root, "notFound")) > 0 ? EXPLAIN_EXIT_USAGE
         : yyjson_arr_size(yyjson_obj_get(root, "pods")) > 0   ? EXPLAIN_EXIT_PENDING
                                                               : EXPLAIN_EXIT_NONE;
out:
    yyjson_doc_free(frozen);
    yyjson_mut_doc_free(out);
    cluster_free(view);
    policy_free(p);
    free(o.names);
    return rc;
}
