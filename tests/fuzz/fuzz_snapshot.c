/*
 * fuzz_snapshot: the snapshot loader (cluster_load_snapshot) on arbitrary bytes, through a
 * memory file. The view it leaves must be consistent (fuzz_view_check), dump to JSON, and carry
 * capacity decisions: a GPU Deployment and a scale request go to /validate under the capacity
 * policy and the responses are checked; the Pending pods are explained and counted (the gauge's
 * counts add up to the pods explained). A relist of every kind with nothing in it must then
 * leave an empty view.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cluster/capacity.h"
#include "cluster/pending.h"
#include "json.h"
#include "policy/eval.h"
#include "fuzz_support.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const reviews[] = {
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u1\",\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{},"
    "\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},"
    "\"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":\"deployments\"},"
    "\"object\":{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\"},"
    "\"spec\":{\"replicas\":3,\"template\":{\"spec\":{\"priorityClassName\":\"high\","
    "\"nodeSelector\":{\"nvidia.com/gpu.present\":\"true\"},\"tolerations\":[{\"key\":"
    "\"nvidia.com/gpu\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\",\"resources\":{"
    "\"limits\":{\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpu.shared\":\"1\"}}}]}}}}}}",

    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u2\",\"namespace\":\"ml\",\"name\":\"trainer\",\"operation\":\"UPDATE\","
    "\"userInfo\":{},\"subResource\":\"scale\","
    "\"kind\":{\"group\":\"autoscaling\",\"version\":\"v1\",\"kind\":\"Scale\"},"
    "\"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":\"deployments\"},"
    "\"object\":{\"kind\":\"Scale\",\"metadata\":{\"name\":\"trainer\",\"namespace\":\"ml\"},"
    "\"spec\":{\"replicas\":40}},\"oldObject\":{\"kind\":\"Scale\",\"metadata\":{\"name\":"
    "\"trainer\",\"namespace\":\"ml\"},\"spec\":{\"replicas\":1}}}}",
};

static struct review *decoded[2];
static struct policy *capacity_policy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    capacity_policy = fuzz_policy("tests/data/policies/capacity.yaml");
    for (size_t i = 0; i < 2; i++)
        decoded[i] = fuzz_fixed_review(reviews[i]);
    return 0;
}

static void decide(struct cluster *c)
{
    for (size_t i = 0; i < 2; i++) {
        struct decision dec;
        char *body = NULL;
        size_t len = 0;

        decision_init(&dec);
        if (eval_review(capacity_policy, decoded[i], false, false, c, &dec) == 0) {
            FUZZ_ASSERT(review_encode(decoded[i], &dec, false, &body, &len) == 0, "encode");
            yyjson_doc_free(fuzz_check_response(decoded[i], &dec, false, body, len));
            free(body);
        }
        decision_release(&dec);
    }
}

/* Why the view's GPU pods are Pending: every pod, and by name, and the gauge's counts, which
 * must add up to the pods explained. */
static void explain(struct cluster *c)
{
    static const char *const names[] = {"rs/a", "deployment/a", "p", "job/x"};
    struct pending_query all = {NULL, NULL, 0, 0}, some = {"ml", names, 4, 1};
    uint64_t n[PENDING_COUNTS], sum = 0;
    struct diag d;
    yyjson_mut_doc *doc;
    char *text;

    diag_clear(&d);
    doc = pending_explain(c, &all, &d);
    FUZZ_ASSERT(doc != NULL, "explain failed");
    text = json_mut_write(yyjson_mut_doc_get_root(doc), NULL);
    FUZZ_ASSERT(text != NULL, "the explanation does not encode");
    free(text);
    FUZZ_ASSERT(pending_count(c, n) == 0, "count failed");
    for (int i = 0; i < PENDING_COUNTS; i++)
        sum += n[i];
    FUZZ_ASSERT(sum ==
                    yyjson_mut_arr_size(yyjson_mut_obj_get(yyjson_mut_doc_get_root(doc), "pods")),
                "the gauge counts other pods than explain explains");
    yyjson_mut_doc_free(doc);
    doc = pending_explain(c, &some, &d);
    FUZZ_ASSERT(doc != NULL, "explain by name failed");
    yyjson_mut_doc_free(doc);
}

/* What the view's node autoscalers may add for a 2-GPU template: never more now than at most,
 * every named group with whole nodes. */
static void growth(struct cluster *c)
{
    static char *gpu_v[] = {"nvidia.com/gpu"};
    static const struct strlist gpus = {gpu_v, 1};
    static const char text[] = "{\"tolerations\":[{\"operator\":\"Exists\"}],"
                               "\"containers\":[{\"name\":\"c\",\"resources\":{"
                               "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}";
    yyjson_doc *spec = yyjson_read(text, sizeof(text) - 1, 0);
    struct capacity_request rq = {yyjson_doc_get_root(spec), &gpus, 3, 3, 0, 0, 0};
    struct capacity_result *res = calloc(1, sizeof(*res));
    struct growth *g = calloc(1, sizeof(*g));

    FUZZ_ASSERT(spec != NULL && res != NULL && g != NULL, "setup");
    FUZZ_ASSERT(capacity_judge(c, &rq, res) == 0 && res->judged, "judge");
    capacity_growth(c, &rq, res, NULL, g);
    FUZZ_ASSERT(g->pods_now <= g->pods_ever && g->pods_ever <= GROWTH_UNBOUNDED,
                "more added now than at most");
    for (size_t i = 0; i < g->n; i++)
        FUZZ_ASSERT(g->g[i].per_node >= 1 && g->g[i].nodes_now <= g->g[i].nodes_ever &&
                        (g->g[i].state == GROWTH_GROWS || g->g[i].nodes_now == 0),
                    "a group named with no pod per node, or adding now while it cannot");
    free(g);
    free(res);
    yyjson_doc_free(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cluster_config cfg = {60};
    struct cluster *c = cluster_new(&cfg);
    char path[64];
    struct diag d;
    yyjson_mut_doc *dump;
    char *text;
    int fd = memfd_create("snapshot", MFD_CLOEXEC);

    FUZZ_ASSERT(c != NULL && fd >= 0, "setup");
    FUZZ_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size, "memfd write");
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    diag_clear(&d);
    if (cluster_load_snapshot(c, path, &d) < 0) {
        FUZZ_ASSERT(d.set && d.msg[0] != '\0', "a refused snapshot without a message");
    } else {
        fuzz_view_check(c);
        dump = cluster_dump(c);
        FUZZ_ASSERT(yyjson_mut_is_obj(yyjson_mut_doc_get_root(dump)), "the dump is not an object");
        text = json_mut_write(yyjson_mut_doc_get_root(dump), NULL);
        FUZZ_ASSERT(text != NULL, "the dump does not encode");
        free(text);
        yyjson_mut_doc_free(dump);
        decide(c);
        fuzz_view_check(c);
        explain(c);
        growth(c);
    }
    for (int k = 0; k < CLUSTER_KINDS; k++) {
        cluster_list_begin(c, (enum cluster_kind)k);
        cluster_list_end(c, (enum cluster_kind)k);
    }
    FUZZ_ASSERT(fuzz_view_check(c) == 0, "records left after an empty relist");
    close(fd);
    cluster_free(c);
    return 0;
}
