/*
 * bench_codec.c: what one review costs in process, against the least any JSON webhook pays.
 *
 *   bench_codec RULES_DIR DATA_DIR K8S_DIR REVIEW_POD [--reps N] [--ms M]
 *
 * For each fixture, times review_decode_in + eval_review + review_encode + the frees (what the
 * server does between reading a body and queueing the answer, in situ on its per-thread arena,
 * without the cluster view, as --no-cluster serves) against yyjson_read_opts + yyjson_write + the
 * frees of the same bytes (yyjson's bare read and write, with the default allocator), and against
 * the read alone. Batches of each alternate, in an order that rotates every rep; each rep gives a
 * ratio, and the figures printed are medians over the reps. Times are the thread's CPU time (the
 * machine is shared). Decision log lines go to /dev/null. Prints one JSON line per fixture for
 * tests/bench/run.py.
 *
 * Fixtures: REVIEW_POD (a small GPU pod the default policy patches at /mutate), the bench's
 * training pod (DATA_DIR) at /validate, and Kubernetes' all-fields roundtrip fixtures (K8S_DIR,
 * tests/data/k8s/testdata) wrapped in a review: a Pod and a Deployment (CREATE) at /validate, a
 * Scale (UPDATE of deployments/scale).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <yyjson.h>

#include "policy/eval.h"
#include "json.h"
#include "log.h"
#include "review.h"
#include "policy/rules.h"

struct fixture {
    const char *name;
    char *body;
    size_t len;
    bool mutating;
};

/* CPU time of this thread: the machine is shared, and time spent descheduled is not ours */
static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) == NULL ||
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "bench_codec: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* An AdmissionReview around the object in path, as the apiserver would send it (compact). */
static char *wrap(const char *path, const char *group, const char *kind, const char *rgroup,
                  const char *resource, const char *sub, const char *op, bool with_old, size_t *len)
{
    size_t n;
    char *text = read_file(path, &n);
    yyjson_doc *obj;
    yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *req, *root;
    char *out;
    struct diag d;

    diag_clear(&d);
    obj = json_read(text, n, 0, 128, NULL, &d);
    free(text);
    if (obj == NULL) {
        fprintf(stderr, "bench_codec: %s: %s\n", path, d.msg);
        exit(2);
    }
    req = json_pack(m,
                    "{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:s,"
                    " s:{s:s, s:[s]}, s:V, s:V*, s:b}",
                    "uid", "2f6c8a1e-4b3d-4e5f-8a7b-9c0d1e2f3a4b", "kind", "group", group,
                    "version", "v1", "kind", kind, "resource", "group", rgroup, "version", "v1",
                    "resource", resource, "subResource", sub, "name", "nameValue", "namespace",
                    "ml-research", "operation", op, "userInfo", "username", "alice", "groups",
                    "system:authenticated", "object", yyjson_doc_get_root(obj), "oldObject",
                    with_old ? yyjson_doc_get_root(obj) : NULL, "dryRun", 0);
    root = json_pack(m, "{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                     "AdmissionReview", "request", req);
    out = root ? json_mut_write(root, len) : NULL;
    if (out == NULL) {
        fprintf(stderr, "bench_codec: %s: cannot wrap it\n", path);
        exit(2);
    }
    yyjson_mut_doc_free(m);
    yyjson_doc_free(obj);
    return out;
}

/* One review as the server's admit() does it: the body copied into a padded buffer (the server
 * receives it into one), read in situ into the thread's pool, the decision and response
 * documents on the thread's allocator. */
static int review_once(const struct policy *p, const struct fixture *f)
{
    static char *buf;
    static size_t cap;
    struct review_arena *a = review_thread_arena();
    struct diag d;
    struct decision dec;
    struct review r;
    char *out = NULL;
    size_t len = 0;
    int rc;

    if (cap < f->len + YYJSON_PADDING_SIZE) {
        free(buf);
        cap = f->len + YYJSON_PADDING_SIZE;
        buf = malloc(cap);
        if (buf == NULL)
            exit(2);
    }
    memcpy(buf, f->body, f->len);
    memset(buf + f->len, 0, YYJSON_PADDING_SIZE);
    diag_clear(&d);
    if (review_decode_in(&r, buf, f->len, JSON_READ_INSITU, review_arena_reader(a, f->len), &d) <
        0) {
        fprintf(stderr, "bench_codec: %s: %s\n", f->name, d.msg);
        exit(1);
    }
    decision_init_alc(&dec, a ? a->dyn : NULL);
    rc = eval_review(p, &r, f->mutating, false, NULL, &dec);
    if (rc == 0)
        rc = review_encode(&r, &dec, f->mutating, &out, &len);
    decision_release(&dec);
    review_release(&r);
    free(out);
    return rc;
}

/* yyjson's read and write of the same bytes; with dump false, the read alone (the floor of
 * any review path that parses with yyjson) */
static void bare_once(const struct fixture *f, bool dump)
{
    yyjson_doc *doc = yyjson_read_opts(f->body, f->len, YYJSON_READ_NOFLAG, NULL, NULL);

    if (dump)
        free(yyjson_write(doc, YYJSON_WRITE_NOFLAG, NULL));
    yyjson_doc_free(doc);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void measure(const struct policy *p, const struct fixture *f, int reps, double ms)
{
    double *ours = calloc((size_t)reps, sizeof(double));
    double *bare = calloc((size_t)reps, sizeof(double));
    double *ratio = calloc((size_t)reps, sizeof(double));
    double *parse = calloc((size_t)reps, sizeof(double));
    double t0, t1;
    long iters = 1;

    /* batch size: about ms milliseconds of the review path */
    for (;;) {
        t0 = now_ns();
        for (long i = 0; i < iters; i++)
            review_once(p, f);
        t1 = now_ns();
        if (t1 - t0 > ms * 1e6 / 4)
            break;
        iters *= 2;
    }
    iters *= 4;
    for (int rep = 0; rep < reps; rep++) {
        /* review, bare, parse; the order rotates every rep */
        for (int k = 0; k < 3; k++) {
            int which = (k + rep) % 3;

            t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                if (which == 0)
                    review_once(p, f);
                else
                    bare_once(f, which == 1);
            }
            t1 = now_ns();
            (which == 0 ? ours : which == 1 ? bare : parse)[rep] = (t1 - t0) / (double)iters;
        }
        ratio[rep] = ours[rep] / bare[rep];
    }
    printf("{\"fixture\":\"%s\",\"bytes\":%zu,\"iters\":%ld,\"reps\":%d,\"review_ns\":%.0f,"
           "\"bare_ns\":%.0f,\"parse_ns\":%.0f,\"ratio\":%.3f}\n",
           f->name, f->len, iters, reps, median(ours, reps), median(bare, reps),
           median(parse, reps), median(ratio, reps));
    fflush(stdout);
    free(ours);
    free(bare);
    free(ratio);
    free(parse);
}

int main(int argc, char **argv)
{
    struct rules_errors errs;
    struct policy *p;
    struct fixture fx[5];
    char path[4096], bench_pod[4096];
    int reps = 7, n = 0;
    double ms = 200;
    int devnull;

    if (argc < 5) {
        fprintf(stderr,
                "usage: bench_codec RULES_DIR DATA_DIR K8S_DIR REVIEW_POD [--reps N] [--ms M]\n");
        return 2;
    }
    for (int i = 5; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ms") == 0)
            ms = strtod(argv[i + 1], NULL);
    }
    if (reps < 1 || ms <= 0) {
        fprintf(stderr, "bench_codec: bad --reps or --ms\n");
        return 2;
    }
    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    log_set_fd(devnull);
    memset(&errs, 0, sizeof(errs));
    p = rules_load_dir(argv[1], &errs);
    if (p == NULL) {
        fprintf(stderr, "bench_codec: cannot load the rules in %s\n", argv[1]);
        return 2;
    }
    fx[n] = (struct fixture){"small pod (/mutate, patched)", NULL, 0, true};
    fx[n].body = read_file(argv[4], &fx[n].len), n++;
    snprintf(bench_pod, sizeof(bench_pod), "%s/training-pod-review.json", argv[2]);
    fx[n] = (struct fixture){"training pod (/validate)", NULL, 0, false};
    fx[n].body = read_file(bench_pod, &fx[n].len), n++;
    snprintf(path, sizeof(path), "%s/core.v1.Pod.json", argv[3]);
    fx[n] = (struct fixture){"all-fields Pod (/validate)", NULL, 0, false};
    fx[n].body = wrap(path, "", "Pod", "", "pods", "", "CREATE", false, &fx[n].len), n++;
    snprintf(path, sizeof(path), "%s/apps.v1.Deployment.json", argv[3]);
    fx[n] = (struct fixture){"all-fields Deployment (/validate)", NULL, 0, false};
    fx[n].body =
        wrap(path, "apps", "Deployment", "apps", "deployments", "", "CREATE", false, &fx[n].len),
    n++;
    snprintf(path, sizeof(path), "%s/autoscaling.v1.Scale.json", argv[3]);
    fx[n] = (struct fixture){"Scale, deployments/scale (/validate)", NULL, 0, false};
    fx[n].body = wrap(path, "autoscaling", "Scale", "apps", "deployments", "scale", "UPDATE", true,
                      &fx[n].len),
    n++;
    for (int i = 0; i < n; i++) {
        if (review_once(p, &fx[i]) != 0) {
            fprintf(stderr, "bench_codec: %s: evaluation failed\n", fx[i].name);
            return 1;
        }
        measure(p, &fx[i], reps, ms);
    }
    for (int i = 0; i < n; i++)
        free(fx[i].body);
    policy_unref(p);
    close(devnull);
    return 0;
}
