/*
 * bounds.h: the sizes, counts, depths and timeouts that bound what a peer can cost gpuadmit, and
 * the defaults of the command line, in one place.
 *
 * Defaults that users can change on the command line are named DEFAULT_* (or *_DEFAULT_*); the
 * rest are fixed bounds that keep a hostile or broken peer (a client, the apiserver, a rule file,
 * a manifest, a kubeconfig) from costing more than a known amount. A module's private sizes (its
 * message buffers, cache sizes, the tuning of an algorithm) stay next to its code.
 */
#ifndef GPUADMIT_BOUNDS_H
#define GPUADMIT_BOUNDS_H

/* Request bodies. The apiserver caps a write at 3 MiB and a review carries object and
 * oldObject, so 8 MiB leaves room for both plus options. */
#define DEFAULT_MAX_BODY_BYTES (8u * 1024u * 1024u)
#define MIN_MAX_BODY_BYTES     (4u * 1024u)
#define MAX_MAX_BODY_BYTES     (256u * 1024u * 1024u)
/* First allocation for a body whose length is not announced; it grows by doubling. */
#define BODY_INITIAL_BYTES (16u * 1024u)
/* A chunked body past the limit is drained (never truncated) so that the client gets its 413;
 * past this many times the limit it is not worth reading any more and the connection dies. */
#define BODY_DRAIN_FACTOR 2u

/* All request bodies held at once; past it a request gets 503 instead of more memory. */
#define DEFAULT_MAX_BODY_MEMORY_BYTES (256u * 1024u * 1024u)
/* Error answers wait for the body to be drained (keeping the connection) only when the body is
 * this small; a larger one is refused at once and the connection closed. */
#define DEFER_ERROR_BODY_MAX (64u * 1024u)
/* Blocks this large or larger (bodies, mostly) get their own mapping, unmapped when freed
 * (main.c): glibc's default of the same size, held fixed instead of rising to the largest
 * block freed so far. */
#define MALLOC_MMAP_THRESHOLD_BYTES (128u * 1024u)

/* Capacity decisions remember a pod template's eligible nodes under a key written from its
 * constraints: on the stack up to this size (on the heap past it), from JSON nested at most
 * this deep (a deeper template is judged by a scan every time, not remembered). */
#define PLACE_KEY_INLINE_BYTES 2048u
#define PLACE_KEY_DEPTH_MAX    32u

/* Connections. */
#define DEFAULT_CONNECTION_LIMIT  1024u
#define DEFAULT_IDLE_TIMEOUT_S    30u /* idle or stalled connections are closed after this */
#define MAX_IDLE_TIMEOUT_S        3600u
#define DEFAULT_REQUEST_TIMEOUT_S 30u /* the apiserver itself gives up on a webhook after 30 s */
#define MAX_THREADS               256u
/* Overload: a new connection whose ClientHello has waited this long for its turn (in the
 * listen backlog or the worker's queue) is closed unserved. */
#define DEFAULT_MAX_QUEUE_MS 1000u
#define MIN_MAX_QUEUE_MS     10u
#define MAX_MAX_QUEUE_MS     30000u

/* libmicrohttpd's per-connection pool for the read buffer, headers and response bookkeeping.
 * It zeroes the whole pool for every request (MHD_pool_reset in 0.9.75), so its size is paid
 * per review: at 64 KiB that was 99k of a keep-alive /validate's 286k instructions, at 16 KiB
 * it is a quarter of that. 16 KiB still takes 8 KiB of request headers (a bearer token and
 * tracing, far past what the apiserver sends; tests/e2e: large_request_headers); past that the
 * client gets 431. Bodies do not live in it: they stream into the server's own buffer. */
#define CONNECTION_MEMORY_BYTES (16u * 1024u)

/* Shutdown: how long SIGTERM waits for in-flight requests, and how long it leaves idle
 * keep-alive connections open after the last request so clients see "Connection: close"
 * on a response instead of a reset. */
#define DEFAULT_SHUTDOWN_GRACE_S 25u
#define MAX_SHUTDOWN_GRACE_S     3600u
#define SHUTDOWN_IDLE_DRAIN_MS   1000u
#define SHUTDOWN_POLL_MS         10u

/* Serving certificate. */
#define DEFAULT_CERT_POLL_MS 1000u /* how often the cert/key files are checked for change */
#define CERT_FILE_MAX_BYTES  (1024u * 1024u)
#define CERT_CHAIN_MAX       16u  /* certificates in one served or client chain */
#define CLIENT_CA_MAX        64u  /* certificates in a --client-ca bundle */
#define CLIENT_NAMES_MAX     16u  /* --client-name values */
#define CLIENT_NAME_MAX      256u /* bytes of a client certificate's CN or DNS name compared */
#define CLIENT_WHY_MAX       160u /* bytes of the reason a client certificate was refused */
#define DEFER_MSG_MAX        320u /* bytes of an error answer's message */
/* A replaced certificate is freed this long after it stopped being offered; handshakes take
 * it within microseconds of choosing it, so this is a wide margin. */
#define CERT_RETIRE_S         120u
#define CERT_EXPIRY_WARN_DAYS 30
#define CERT_EXPIRY_REMIND_S  (24u * 3600u) /* the warning again, while it is not replaced */
/* A certificate issued just now by a machine whose clock runs a little ahead is still taken. */
#define CERT_CLOCK_SKEW_S 300

/* gpuadmit certs: validity of what it makes, and how many --dns/--ip names it takes. */
#define DEFAULT_CERT_SERVING_DAYS 365u
#define DEFAULT_CERT_CA_DAYS      3650u
#define MAX_CERT_DAYS             36500u
#define CERTGEN_MAX_NAMES         64u
#define CERTGEN_SERIAL_BYTES      16u /* random serial numbers, positive, 127 bits */

/* AdmissionReview content. */
/* Arrays and objects nested in a review body. yyjson reads any depth, but its equal and mutable
 * copies recurse without a cap (docs/json.md §2.4); json_read() stops here. A Pod or workload the
 * apiserver sends nests about 20 deep (its schema prunes unknown fields), so anything deeper
 * comes from another caller. */
#define REVIEW_DEPTH_MAX 128u
/* Nesting of a list page, a watch event and a snapshot document: a page holds its objects as deep
 * as a review does (page, items; review, request), so that any object a review may carry fits,
 * and a deeper one, which no apiserver sends, fails its page with a message. */
#define VIEW_DEPTH_MAX REVIEW_DEPTH_MAX
/* Bodies up to this size are read into the worker thread's pool (review.h, struct review_arena):
 * a Pod of every field is about 60 KB, a typical review 5 KB. The pool is
 * yyjson_read_max_memory_usage() of it, about 770 KiB per thread, of which a read touches what it
 * uses. Larger bodies, up to --max-body-bytes, are read with libc's allocator. */
#define REVIEW_POOL_BODY_BYTES (64u * 1024u)
#define WARNING_MAX_RUNES      256u /* the apiserver cuts each warning to 256 runes past 4 KiB */

/* Policy reload: changes closer together than this are one reload. */
#define RULES_RELOAD_DEBOUNCE_MS  100
#define RULES_RELOAD_MAX_DELAY_MS 1000

/* Cluster view. */
#define DEFAULT_ALLOCATABLE_GRACE_S 120u /* a device plugin re-registering reports 0 briefly */
#define CLUSTER_SNAPSHOT_MAX_BYTES  (1024ul * 1024ul * 1024ul)

/* A qualified resource name: a DNS-subdomain prefix (253), '/', a name (63) and the NUL. */
#define RESOURCE_NAME_MAX 318
/* Bytes of an unbound pod's PodScheduled message the view keeps (kube-scheduler's message lists
 * one "N reason" entry per distinct reason, a few hundred bytes; a longer one is cut). */
#define PENDING_MESSAGE_MAX 8192u
/* Node names one reason of one pod lists in gpuadmit explain -o json and /debug/explain (its
 * nodeCount says how many there are); and the pods /debug/explain answers with at most. */
#define PENDING_NODES_LISTED_MAX 50u
#define PENDING_DEBUG_PODS_MAX   200u
/* Distinct pod specs one scrape of gpuadmit_pending_gpu_pods replays (each against every node);
 * the pods of others count as unexplained. */
#define PENDING_COUNT_SPECS_MAX 2000u
/* node-selector labels checked against the cluster view's GPU nodes; past this many, none is */
#define SELECTOR_LABELS_MAX 32u

/* Metrics. Rule names are label values: a policy has a handful of rules, and names that come
 * and go over reloads are kept; past this many distinct names they count as rule="other". */
#define METRICS_RULES_MAX 256u
/* GPU resource names of the cluster view exported as label values (MIG profiles included). */
#define METRICS_GPU_RESOURCES_MAX 64u
/* The plain-HTTP metrics port (--metrics-addr): scrapers and probes only. */
#define METRICS_CONNECTION_LIMIT 64u

/* Manifests and test suites read by the CLI (yamljson.c): a broken or hostile file costs at
 * most this much. kubectl get -A -o yaml of a large cluster is tens of MiB; CRD schemas nest
 * deeply, but not past 64. */
#define YAMLJSON_FILE_MAX_BYTES (256ul * 1024ul * 1024ul)
#define YAMLJSON_DEPTH_MAX      64u
#define YAMLJSON_NODES_MAX      (4u * 1024u * 1024u) /* scalars, mappings, sequences per file */
#define YAMLJSON_DOCS_MAX       10000u               /* documents per file */
#define YAMLJSON_POINTER_MAX    1024u                /* a JSON Pointer kept for a node's position */

/* Logs. */
#define LOG_LINE_MAX (16u * 1024u)

/* The API-server client (kube.c): timeoutSeconds asked of each watch and limit per list page
 * (flags; client-go asks 5-10 minutes), and their ceilings. */
#define KUBE_DEFAULT_WATCH_TIMEOUT_S 300u
#define KUBE_MAX_WATCH_TIMEOUT_S     3600u
#define KUBE_DEFAULT_LIST_PAGE       500u
#define KUBE_MAX_LIST_PAGE           10000u
#define KUBE_CONNECT_TIMEOUT_S       10L /* TCP connect and TLS handshake */
#define KUBE_LIST_TIMEOUT_S          60L /* one list page, start to end */
/* A watch silent for its timeoutSeconds plus this margin (at least KUBE_SILENCE_MARGIN_MIN_S,
 * else a tenth of the timeout) is dead: the apiserver would have ended it. */
#define KUBE_SILENCE_MARGIN_MIN_S 2u
#define KUBE_TCP_KEEPIDLE_S       30L
#define KUBE_TCP_KEEPINTVL_S      10L
/* Backoff: full jitter over an exponential ceiling, reset after a success. */
#define KUBE_BACKOFF_BASE_MS 200u
#define KUBE_BACKOFF_MAX_MS  30000u
/* A watch that ends cleanly this soon without delivering anything counts as a failure, so that
 * a server closing every watch at once cannot make us spin. */
#define KUBE_WATCH_MIN_HEALTHY_S 1.0
/* An optional kind the apiserver does not serve (no CRD) or does not let gpuadmit read is asked
 * for again this often: a Karpenter installed later is seen within it. */
#define KUBE_OPTIONAL_RELIST_MS 300000u
/* The device plugin's config ConfigMaps are read this often (listed by name, not watched: a
 * watch would take a stream a ConfigMap, and they change once in a long while). */
#define KUBE_PLUGIN_CONFIG_POLL_MS 30000u
/* Token files are re-read this often (client-go: every minute), and after a 401. */
#define KUBE_TOKEN_REFRESH_S 60.0
/* What the apiserver (or something posing as it) can make us hold. */
#define KUBE_LIST_BODY_MAX  (64u * 1024u * 1024u) /* one list page; past it the page halves */
#define KUBE_LINE_MAX       (16u * 1024u * 1024u) /* one watch event */
#define KUBE_ERROR_BODY_MAX (16u * 1024u)         /* a failed request's Status, for the log */
#define KUBE_RV_MAX         256u                  /* a resourceVersion */

/* The kubeconfig and the token file (kubeconfig.c). */
#define KUBE_TOKEN_MAX_BYTES      (64u * 1024u)
#define KUBE_KUBECONFIG_MAX_BYTES (4u * 1024u * 1024u)
#define KUBE_YAML_DEPTH_MAX       32u
#define KUBE_YAML_NODES_MAX       100000u

/* Rule files (rules.c), per load: a broken or hostile file costs at most this much. */
#define RULES_DEPTH_MAX      32u             /* nested mappings and sequences */
#define RULES_FILE_MAX_BYTES (1024u * 1024u) /* per file */
#define RULES_NODES_MAX      10000u          /* scalars, mappings, sequences per file */
#define RULES_FILES_MAX      64u             /* rule files per directory or list */
#define RULES_RULES_MAX      256u            /* rules in one load, all files together */
#define RULES_ERRORS_MAX     50              /* errors kept; the rest are only counted */

/* Pod specs and capacity: the GPU resources one pod spec (pod.c) and one template's capacity
 * judgement (capacity.c) keep apart, and the admitted increases held at once (a burst of
 * requests past this many reserves nothing more until the oldest end). */
#define POD_RESOURCES_MAX         16
#define CAPACITY_RESOURCES_MAX    8
#define CAPACITY_RESERVATIONS_MAX 1024

/* Node autoscalers (cluster/autoscaler.c). Cluster Autoscaler keeps its status ConfigMap under
 * 1,000,000 bytes by dropping node groups; a ConfigMap holds at most 1 MiB. A group takes about
 * 1.5 KB of YAML and some 60 nodes, 8 deep at most. A Karpenter NodePool's lists are capped too:
 * the apiserver caps requirements at 100, but not limits, labels or taints. */
#define AUTOSCALER_STATUS_MAX_BYTES (1024u * 1024u)
#define AUTOSCALER_GROUPS_MAX       4096u
#define AUTOSCALER_YAML_DEPTH_MAX   16u
#define AUTOSCALER_YAML_NODES_MAX   (100u * AUTOSCALER_GROUPS_MAX)
#define AUTOSCALER_MAP_KEYS_MAX     64u   /* keys of one mapping (CA's have under 20) */
#define KARPENTER_RESOURCES_MAX     64u   /* spec.limits, status.resources */
#define KARPENTER_TAINTS_MAX        64u   /* spec.template.spec.taints */
#define KARPENTER_LABELS_MAX        256u  /* spec.template.metadata.labels */
#define KARPENTER_REQS_MAX          100u  /* spec.template.spec.requirements (the CRD's cap) */
#define KARPENTER_REQ_VALUES_MAX    1024u /* values of one (instance-type lists run long) */

/* gpuadmit test (suite.c): suite files one run reads, and subdirectory levels it looks into. */
#define SUITE_FILES_MAX 1000u
#define SUITE_DIR_DEPTH 4u
/* gpuadmit capacity (capreport.c): how long --timeout waits for a live cluster's first list. */
#define DEFAULT_CAPACITY_SYNC_TIMEOUT_S 30u

/* The device plugin's sharing config (policy/plugin_config.c): one data key of a ConfigMap,
 * which the apiserver caps at 1 MiB in all. The config's own schema nests 5 deep; a file twice
 * that is refused, not read. Findings past PLUGIN_CONFIG_FINDINGS_MAX per file are counted. */
#define PLUGIN_CONFIG_MAX_BYTES    (1024u * 1024u)
#define PLUGIN_CONFIG_DEPTH_MAX    12u
#define PLUGIN_CONFIG_NODES_MAX    20000u
#define PLUGIN_CONFIG_FINDINGS_MAX 16u
#define PLUGIN_CONFIG_TEXT_MAX     400u /* bytes of one finding, its data[KEY]:L:C included */

#endif
