/*
 * autoscaler.c: the Cluster Autoscaler status ConfigMap and Karpenter NodePools, read into what
 * the capacity judgement needs (see autoscaler.h).
 *
 * The YAML status goes through the bounded tree (yamltree.h): an alias stops the reading, and
 * depth, node count and size are capped, so a hostile ConfigMap costs a known amount. The text
 * format is read line by line by hand, each group's Health line token by token as CA's
 * GetReadableString() wrote it, so that a column can be named where it differs. Neither reader
 * recurses; every string kept is a bounded copy, so nothing outlives the text it came from.
 */
#include "autoscaler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "parse.h"
#include "quantity.h"
#include "text.h"
#include "yamltree.h"

#define CA_TEXT_PREFIX "Cluster-autoscaler status at "
#define PATH_MAX_LEN   96 /* a field's path in a message: nodeGroups[4095].health.nodeCounts... */

static int fail(struct diag *d, unsigned line, unsigned column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct diag *d, unsigned line, unsigned column, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_set(d, NULL, line, column, "%s", msg);
    return -1;
}

/* n bytes of s into dst (size len), whole when they fit, else cut at a character with "...". */
static void copy_cut(char *dst, size_t len, const char *s, size_t n)
{
    if (n < len && memchr(s, '\0', n) == NULL) {
        memcpy(dst, s, n);
        dst[n] = '\0';
        text_utf8_fix(dst);
        return;
    }
    text_excerpt(s, n, len - 4, dst, len);
}

void ca_status_free(struct ca_status *s)
{
    free(s->groups);
    memset(s, 0, sizeof(*s));
}

int64_t ca_group_headroom(const struct ca_group *g)
{
    if (!g->healthy || strcmp(g->scale_up, "Backoff") == 0 || strcmp(g->scale_up, "Unhealthy") == 0)
        return 0;
    return g->max_size > g->target ? g->max_size - g->target : 0;
}

/* The next group of s, zeroed; NULL (recorded) past AUTOSCALER_GROUPS_MAX or out of memory. */
static struct ca_group *group_add(struct ca_status *s, size_t *cap, struct diag *d, unsigned line,
                                  unsigned column)
{
    if (s->n_groups == AUTOSCALER_GROUPS_MAX) {
        fail(d, line, column, "more than %u node groups", AUTOSCALER_GROUPS_MAX);
        return NULL;
    }
    if (s->n_groups == *cap) {
        size_t n = *cap ? *cap * 2 : 16;
        struct ca_group *g;

        if (n > AUTOSCALER_GROUPS_MAX)
            n = AUTOSCALER_GROUPS_MAX;
        g = realloc(s->groups, n * sizeof(*g));
        if (g == NULL) {
            fail(d, line, column, "out of memory");
            return NULL;
        }
        s->groups = g;
        *cap = n;
    }
    memset(&s->groups[s->n_groups], 0, sizeof(s->groups[0]));
    return &s->groups[s->n_groups++];
}

/* ------------------------------------------------------------------------------------------ */
/* The text format (CA 1.29 and before) */

/* A cursor on one line of the text. */
struct cur {
    const char *p, *end, *start; /* start: the line's first byte, for columns */
    unsigned line;
};

static unsigned col(const struct cur *c)
{
    return (unsigned)(c->p - c->start) + 1;
}

static bool eat(struct cur *c, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return false;
    c->p += n;
    return true;
}

static void skip_spaces(struct cur *c)
{
    while (c->p < c->end && *c->p == ' ')
        c->p++;
}

static bool num(struct cur *c, int64_t *v)
{
    const char *q = c->p;
    uint64_t u;

    while (q < c->end && *q >= '0' && *q <= '9')
        q++;
    if (q == c->p || parse_uintn(c->p, (size_t)(q - c->p), 0, INT64_MAX, &u) < 0)
        return false;
    *v = (int64_t)u;
    c->p = q;
    return true;
}

/* A word of letters, at most max - 1 of them, into out; false when there is none or too long. */
static bool word(struct cur *c, char *out, size_t max)
{
    const char *q = c->p;

    while (q < c->end && ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z')))
        q++;
    if (q == c->p || (size_t)(q - c->p) >= max)
        return false;
    memcpy(out, c->p, (size_t)(q - c->p));
    out[q - c->p] = '\0';
    c->p = q;
    return true;
}

/* The counts of a group's Health line after its status word; NULL, or what was expected. */
static const char *health_counts(struct cur *c, struct ca_group *g)
{
    int64_t long_not_started;
    const struct {
        const char *lit; /* NULL: the optional " (resourceUnready=N)" of CA 1.24 and later */
        int64_t *v;
    } steps[] = {
        {" (ready=", &g->ready},
        {" unready=", &g->unready},
        {NULL, &g->resource_unready},
        {" notStarted=", &g->not_started},
        {" longNotStarted=", &long_not_started},
        {" registered=", &g->registered},
        {" longUnregistered=", &g->long_unregistered},
        {" cloudProviderTarget=", &g->target},
        {" (minSize=", &g->min_size},
        {", maxSize=", &g->max_size},
    };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (steps[i].lit == NULL) {
            if (!eat(c, " (resourceUnready="))
                continue;
            if (!num(c, steps[i].v))
                return "a number";
            if (!eat(c, ")"))
                return ")";
            continue;
        }
        if (!eat(c, steps[i].lit))
            return steps[i].lit;
        if (!num(c, steps[i].v))
            return "a number";
    }
    if (!eat(c, "))"))
        return "))";
    skip_spaces(c);
    return c->p == c->end ? NULL : "the end of the line";
}

static int text_health(struct cur *c, struct ca_group *g, struct diag *d)
{
    char status[16];
    const char *want;
    unsigned at;

    skip_spaces(c);
    at = col(c);
    if (!word(c, status, sizeof(status)) ||
        (strcmp(status, "Healthy") != 0 && strcmp(status, "Unhealthy") != 0))
        return fail(d, c->line, at, "node group \"%s\": Health must be Healthy or Unhealthy",
                    g->name);
    g->healthy = strcmp(status, "Healthy") == 0;
    want = health_counts(c, g);
    if (want != NULL) {
        bool phrase = want[0] == 'a' || want[0] == 't'; /* "a number", "the end of the line" */

        return fail(d, c->line, col(c), "node group \"%s\": Health: expected %s%s%s", g->name,
                    phrase ? "" : "\"", want, phrase ? "" : "\"");
    }
    return 0;
}

/* One line of the node groups: a Name starts a group, its Health and ScaleUp lines fill it. */
static int text_group_line(struct cur *c, struct ca_status *s, size_t *cap, bool *health,
                           unsigned *name_line, struct diag *d)
{
    struct ca_group *g = s->n_groups ? &s->groups[s->n_groups - 1] : NULL;

    if (eat(c, "  Name:")) {
        const char *end = c->end;

        if (g != NULL && !*health)
            return fail(d, *name_line, 3, "node group \"%s\" has no Health line", g->name);
        skip_spaces(c);
        while (end > c->p && end[-1] == ' ')
            end--;
        if (end == c->p)
            return fail(d, c->line, col(c), "a node group without a name");
        if ((size_t)(end - c->p) >= CA_NAME_MAX)
            return fail(d, c->line, col(c), "a node group name of %zu bytes (at most %d)",
                        (size_t)(end - c->p), CA_NAME_MAX - 1);
        if ((g = group_add(s, cap, d, c->line, col(c))) == NULL)
            return -1;
        memcpy(g->name, c->p, (size_t)(end - c->p));
        g->name[end - c->p] = '\0';
        text_utf8_fix(g->name);
        *health = false;
        *name_line = c->line;
        return 0;
    }
    if (eat(c, "  Health:")) {
        if (g == NULL)
            return fail(d, c->line, 3, "a Health line before any node group's Name");
        *health = true;
        return text_health(c, g, d);
    }
    if (eat(c, "  ScaleUp:") && g != NULL) {
        skip_spaces(c);
        if (!word(c, g->scale_up, sizeof(g->scale_up)))
            return fail(d, c->line, col(c), "node group \"%s\": ScaleUp has no status", g->name);
    }
    return 0; /* ScaleDown, probe times, blank lines */
}

static int text_parse(const char *text, size_t len, struct ca_status *s, struct diag *d)
{
    const char *p = text, *end = text + len;
    bool in_groups = false, health = true;
    unsigned line = 0, name_line = 0;
    size_t cap = 0;

    s->text_format = true;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        struct cur c = {p, nl ? nl : end, p, ++line};

        p = nl ? nl + 1 : end;
        if (line == 1) {
            /* "Cluster-autoscaler status at <time>:" */
            const char *t = c.p + strlen(CA_TEXT_PREFIX), *te = c.end;

            if (te > t && te[-1] == ':')
                te--;
            copy_cut(s->time, sizeof(s->time), t, (size_t)(te - t));
            continue;
        }
        if (line == 2 && c.end - c.p == 12 && memcmp(c.p, "Initializing", 12) == 0) {
            strcpy(s->autoscaler_status, "Initializing");
            continue;
        }
        if (!in_groups) {
            in_groups = eat(&c, "NodeGroups:");
            /* Cluster-wide:'s "  Health:      Unhealthy (ready=...)" */
            while (c.p < c.end && *c.p == ' ')
                c.p++;
            if (eat(&c, "Health:")) {
                while (c.p < c.end && *c.p == ' ')
                    c.p++;
                s->cluster_unhealthy = c.end - c.p >= 9 && memcmp(c.p, "Unhealthy", 9) == 0;
            }
            continue;
        }
        if (text_group_line(&c, s, &cap, &health, &name_line, d) < 0)
            return -1;
    }
    if (!health)
        return fail(d, name_line, 3, "node group \"%s\" has no Health line",
                    s->groups[s->n_groups - 1].name);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The YAML format (CA 1.30 and later), through the bounded tree */

static int ynode_err(struct diag *d, const struct yamltree_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ynode_err(struct diag *d, const struct yamltree_node *n, const char *fmt, ...)
{
    char msg[DIAG_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    diag_set(d, NULL, n ? n->line : 0, n ? n->column : 0, "%s", msg);
    return -1;
}

static bool ynull(const struct yamltree_node *n)
{
    return n == NULL ||
           (n->kind == YAMLTREE_SCALAR && n->plain && yamltree_resolve(n->s) == YAMLTREE_NULL);
}

/* Checks that n is a mapping with distinct scalar keys, at most AUTOSCALER_MAP_KEYS_MAX of them:
 * CA's mappings have a handful (clusterstate/api/types.go), and the check of distinct keys is
 * quadratic in them. */
static int ymap(const struct yamltree_node *n, const char *path, struct diag *d)
{
    if (n->kind != YAMLTREE_MAP)
        return ynode_err(d, n, "%s must be a mapping", path);
    if (n->n / 2 > AUTOSCALER_MAP_KEYS_MAX)
        return ynode_err(d, n, "%s: more than %u keys", path, AUTOSCALER_MAP_KEYS_MAX);
    for (size_t i = 0; i < n->n; i += 2) {
        if (n->kids[i]->kind != YAMLTREE_SCALAR)
            return ynode_err(d, n->kids[i], "%s: keys must be strings", path);
        for (size_t j = 0; j < i; j += 2)
            if (n->kids[i]->len == n->kids[j]->len &&
                memcmp(n->kids[i]->s, n->kids[j]->s, n->kids[i]->len) == 0)
                return ynode_err(d, n->kids[i], "%s: duplicate key \"%.64s\"", path, n->kids[i]->s);
    }
    return 0;
}

/* The value of key in a checked mapping; NULL when absent or null. */
static const struct yamltree_node *yget(const struct yamltree_node *map, const char *key)
{
    size_t n = strlen(key);

    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (map->kids[i]->len == n && memcmp(map->kids[i]->s, key, n) == 0)
            return ynull(map->kids[i + 1]) ? NULL : map->kids[i + 1];
    return NULL;
}

/* The mapping at key (checked), or NULL when absent; -1 when it is not one. */
static int ysub(const struct yamltree_node *map, const char *key, const char *base,
                const struct yamltree_node **out, char *path, struct diag *d)
{
    if (snprintf(path, PATH_MAX_LEN, "%s%s%s", base, base[0] ? "." : "", key) >= PATH_MAX_LEN)
        path[PATH_MAX_LEN - 1] = '\0'; /* cut: only a message's path */
    *out = yget(map, key);
    return *out == NULL ? 0 : ymap(*out, path, d);
}

/* A string at key (quoted, or plain that is no number, boolean or null), or NULL when absent. */
static int ystr(const struct yamltree_node *map, const char *key, const char *base,
                const struct yamltree_node **out, struct diag *d)
{
    const struct yamltree_node *v = yget(map, key);

    *out = NULL;
    if (v == NULL)
        return 0;
    if (v->kind != YAMLTREE_SCALAR || (v->plain && yamltree_resolve(v->s) != YAMLTREE_STR))
        return ynode_err(d, v, "%s%s%s must be a string", base, base[0] ? "." : "", key);
    *out = v;
    return 0;
}

/* A whole number >= 0 at key; 0 when absent unless required. */
static int yint(const struct yamltree_node *map, const char *key, const char *base, bool required,
                int64_t *out, struct diag *d)
{
    const struct yamltree_node *v = yget(map, key);
    uint64_t u;

    *out = 0;
    if (v == NULL && !required)
        return 0;
    if (v == NULL)
        return ynode_err(d, map, "%s.%s is missing", base, key);
    if (v->kind != YAMLTREE_SCALAR || !v->plain || yamltree_resolve(v->s) != YAMLTREE_INT ||
        parse_uint(v->s, 0, INT64_MAX, &u) < 0)
        return ynode_err(d, v, "%s.%s must be a whole number", base, key);
    *out = (int64_t)u;
    return 0;
}

/* A short status word at key into out (size max), "" when absent. */
static int yword(const struct yamltree_node *map, const char *key, const char *base, char *out,
                 size_t max, struct diag *d)
{
    const struct yamltree_node *v;

    out[0] = '\0';
    if (ystr(map, key, base, &v, d) < 0)
        return -1;
    if (v == NULL)
        return 0;
    if (v->len >= max || memchr(v->s, '\0', v->len) != NULL)
        return ynode_err(d, v, "%s.%s: \"%.32s\" is not a status", base, key, v->s);
    memcpy(out, v->s, v->len + 1);
    return 0;
}

static int ycounts(const struct yamltree_node *nc, const char *base, struct ca_group *g,
                   struct diag *d)
{
    const struct yamltree_node *reg, *unready;
    char path[PATH_MAX_LEN], upath[PATH_MAX_LEN];

    if (ysub(nc, "registered", base, &reg, path, d) < 0 ||
        yint(nc, "longUnregistered", base, false, &g->long_unregistered, d) < 0)
        return -1;
    if (reg == NULL)
        return 0;
    if (yint(reg, "total", path, false, &g->registered, d) < 0 ||
        yint(reg, "ready", path, false, &g->ready, d) < 0 ||
        yint(reg, "notStarted", path, false, &g->not_started, d) < 0 ||
        ysub(reg, "unready", path, &unready, upath, d) < 0)
        return -1;
    if (unready == NULL)
        return 0;
    if (yint(unready, "total", upath, false, &g->unready, d) < 0 ||
        yint(unready, "resourceUnready", upath, false, &g->resource_unready, d) < 0)
        return -1;
    return 0;
}

static int yhealth(const struct yamltree_node *grp, const char *base, struct ca_group *g,
                   struct diag *d)
{
    const struct yamltree_node *h, *nc;
    char path[PATH_MAX_LEN], ncpath[PATH_MAX_LEN], status[16];

    if (ysub(grp, "health", base, &h, path, d) < 0)
        return -1;
    if (h == NULL)
        return ynode_err(d, grp, "%s.health is missing", base);
    if (yword(h, "status", path, status, sizeof(status), d) < 0)
        return -1;
    if (strcmp(status, "Healthy") != 0 && strcmp(status, "Unhealthy") != 0)
        return ynode_err(d, yget(h, "status") ? yget(h, "status") : h,
                         "%s.status must be Healthy or Unhealthy", path);
    g->healthy = strcmp(status, "Healthy") == 0;
    if (ysub(h, "nodeCounts", path, &nc, ncpath, d) < 0 ||
        (nc != NULL && ycounts(nc, ncpath, g, d) < 0))
        return -1;
    if (yint(h, "cloudProviderTarget", path, true, &g->target, d) < 0 ||
        yint(h, "minSize", path, true, &g->min_size, d) < 0 ||
        yint(h, "maxSize", path, true, &g->max_size, d) < 0)
        return -1;
    return 0;
}

static int yscale_up(const struct yamltree_node *grp, const char *base, struct ca_group *g,
                     struct diag *d)
{
    const struct yamltree_node *su, *bo, *code, *msg;
    char path[PATH_MAX_LEN], bpath[PATH_MAX_LEN];

    if (ysub(grp, "scaleUp", base, &su, path, d) < 0)
        return -1;
    if (su == NULL)
        return 0;
    if (yword(su, "status", path, g->scale_up, sizeof(g->scale_up), d) < 0 ||
        ysub(su, "backoffInfo", path, &bo, bpath, d) < 0)
        return -1;
    if (bo == NULL)
        return 0;
    if (ystr(bo, "errorCode", bpath, &code, d) < 0 || ystr(bo, "errorMessage", bpath, &msg, d) < 0)
        return -1;
    if (code != NULL)
        copy_cut(g->backoff_code, sizeof(g->backoff_code), code->s, code->len);
    if (msg != NULL)
        copy_cut(g->backoff_msg, sizeof(g->backoff_msg), msg->s, msg->len);
    return 0;
}

static int ygroup(const struct yamltree_node *n, size_t i, struct ca_group *g, struct diag *d)
{
    const struct yamltree_node *name;
    char base[PATH_MAX_LEN];

    snprintf(base, sizeof(base), "nodeGroups[%zu]", i);
    if (ymap(n, base, d) < 0 || ystr(n, "name", base, &name, d) < 0)
        return -1;
    if (name == NULL || name->len == 0)
        return ynode_err(d, name ? name : n, "%s.name is missing", base);
    if (memchr(name->s, '\0', name->len) != NULL)
        return ynode_err(d, name, "%s.name holds a NUL character", base);
    if (name->len >= CA_NAME_MAX)
        return ynode_err(d, name, "%s.name of %zu bytes (at most %d)", base, name->len,
                         CA_NAME_MAX - 1);
    memcpy(g->name, name->s, name->len + 1);
    text_utf8_fix(g->name);
    return yhealth(n, base, g, d) < 0 || yscale_up(n, base, g, d) < 0 ? -1 : 0;
}

/* Why the reader stopped. */
static int yread_failed(const struct yamltree_error *e, struct diag *d)
{
    switch (e->code) {
    case YAMLTREE_E_ALIAS: return fail(d, e->line, e->column, "YAML aliases are not supported");
    case YAMLTREE_E_DEPTH: return fail(d, e->line, e->column, "nested too deeply");
    case YAMLTREE_E_NODES:
        return fail(d, e->line, e->column, "more than %u YAML nodes", AUTOSCALER_YAML_NODES_MAX);
    case YAMLTREE_E_DOCS: return fail(d, e->line, e->column, "more than one YAML document");
    case YAMLTREE_E_SYNTAX:
        return fail(d, e->line, e->column, "YAML: %s", e->problem ? e->problem : "syntax error");
    default: return fail(d, e->line, e->column, "out of memory");
    }
}

static int yaml_status(const struct yamltree_node *root, struct ca_status *s, struct diag *d)
{
    const struct yamltree_node *v, *groups;

    if (ymap(root, "the status", d) < 0 || ystr(root, "time", "", &v, d) < 0)
        return -1;
    if (v != NULL)
        copy_cut(s->time, sizeof(s->time), v->s, v->len);
    if (yword(root, "autoscalerStatus", "", s->autoscaler_status, sizeof(s->autoscaler_status), d) <
        0)
        return -1;
    {
        const struct yamltree_node *cw = yget(root, "clusterWide"), *h, *st;

        h = cw != NULL && cw->kind == YAMLTREE_MAP ? yget(cw, "health") : NULL;
        st = h != NULL && h->kind == YAMLTREE_MAP ? yget(h, "status") : NULL;
        s->cluster_unhealthy = st != NULL && st->kind == YAMLTREE_SCALAR && st->len == 9 &&
                               memcmp(st->s, "Unhealthy", 9) == 0;
    }
    groups = yget(root, "nodeGroups");
    if (groups == NULL)
        return 0;
    if (groups->kind != YAMLTREE_SEQ)
        return ynode_err(d, groups, "nodeGroups must be a sequence");
    if (groups->n > AUTOSCALER_GROUPS_MAX)
        return ynode_err(d, groups->kids[AUTOSCALER_GROUPS_MAX], "more than %u node groups",
                         AUTOSCALER_GROUPS_MAX);
    if (groups->n == 0)
        return 0;
    s->groups = calloc(groups->n, sizeof(s->groups[0]));
    if (s->groups == NULL)
        return ynode_err(d, groups, "out of memory");
    for (size_t i = 0; i < groups->n; i++, s->n_groups++)
        if (ygroup(groups->kids[i], i, &s->groups[i], d) < 0)
            return -1;
    return 0;
}

static int yaml_parse(const char *text, size_t len, struct ca_status *s, struct diag *d)
{
    static const struct yamltree_limits lim = {AUTOSCALER_YAML_DEPTH_MAX, AUTOSCALER_YAML_NODES_MAX,
                                               1};
    struct yamltree t;
    int rc = -1;

    if (yamltree_read(text, len, &lim, YAMLTREE_UTF8, &t) < 0) {
        yread_failed(&t.err, d);
        goto out;
    }
    if (t.n_docs == 0 || t.docs[0].root == NULL) {
        fail(d, 0, 0, "the status is empty");
        goto out;
    }
    rc = yaml_status(t.docs[0].root, s, d);
out:
    yamltree_free(&t);
    return rc;
}

int ca_status_parse(const char *text, size_t len, struct ca_status *out, struct diag *d)
{
    size_t plen = strlen(CA_TEXT_PREFIX);

    memset(out, 0, sizeof(*out));
    if (len > AUTOSCALER_STATUS_MAX_BYTES)
        return fail(d, 0, 0, "the status is %zu bytes (at most %u)", len,
                    AUTOSCALER_STATUS_MAX_BYTES);
    if (text == NULL || len == 0)
        return fail(d, 0, 0, "the status is empty");
    if (memchr(text, '\0', len) != NULL)
        return fail(d, 0, 0, "the status holds a NUL byte");
    if (len >= plen && memcmp(text, CA_TEXT_PREFIX, plen) == 0)
        return text_parse(text, len, out, d);
    return yaml_parse(text, len, out, d);
}

/* ------------------------------------------------------------------------------------------ */
/* Karpenter NodePools */

void karpenter_pool_free(struct karpenter_pool *p)
{
    for (size_t i = 0; i < p->n_taints; i++) {
        free(p->taints[i].key);
        free(p->taints[i].value);
        free(p->taints[i].effect);
    }
    for (size_t i = 0; i < p->n_labels; i++) {
        free(p->labels[i].key);
        free(p->labels[i].value);
    }
    for (size_t i = 0; i < p->n_reqs; i++) {
        free(p->reqs[i].key);
        free(p->reqs[i].op);
        for (size_t k = 0; p->reqs[i].values != NULL && k < p->reqs[i].n_values; k++)
            free(p->reqs[i].values[k]);
        free(p->reqs[i].values);
    }
    free(p->reqs);
    free(p->taints);
    free(p->labels);
    free(p->limits);
    free(p->used);
    memset(p, 0, sizeof(*p));
}

/* Whether a JSON string holds a NUL byte (so that a C string of it would be a different one). */
static bool has_nul(yyjson_val *s)
{
    return memchr(yyjson_get_str(s), '\0', yyjson_get_len(s)) != NULL;
}

static char *dup_str(yyjson_val *s)
{
    return strndup(yyjson_get_str(s), yyjson_get_len(s));
}

/* An extended resource as Kubernetes means it: qualified, outside the kubernetes.io domains. */
static bool extended_resource(const char *name)
{
    const char *slash = strchr(name, '/');
    size_t dom;

    if (slash == NULL || strncmp(name, "requests.", 9) == 0)
        return false;
    dom = (size_t)(slash - name);
    if (dom == 13 && memcmp(name, "kubernetes.io", 13) == 0)
        return false;
    return !(dom > 14 && memcmp(slash - 14, ".kubernetes.io", 14) == 0);
}

/* A ResourceList object (spec.limits, status.resources) into a new array. */
static int amounts(yyjson_val *obj, const char *path, const char *pool,
                   struct karpenter_amount **out, size_t *n_out, struct diag *d)
{
    yyjson_val *k, *v;
    size_t i, max, n = 0;

    if (obj == NULL || yyjson_is_null(obj))
        return 0;
    if (!yyjson_is_obj(obj))
        return fail(d, 0, 0, "NodePool %s: %s must be an object, not %s", pool, path,
                    json_type_desc(obj));
    if (yyjson_obj_size(obj) > KARPENTER_RESOURCES_MAX)
        return fail(d, 0, 0, "NodePool %s: %s has more than %u resources", pool, path,
                    KARPENTER_RESOURCES_MAX);
    if (yyjson_obj_size(obj) == 0)
        return 0;
    *out = calloc(yyjson_obj_size(obj), sizeof(**out));
    if (*out == NULL)
        return fail(d, 0, 0, "out of memory");
    yyjson_obj_foreach (obj, i, max, k, v) {
        struct karpenter_amount *a = &(*out)[n];

        if (yyjson_get_len(k) == 0 || yyjson_get_len(k) >= RESOURCE_NAME_MAX || has_nul(k))
            return fail(d, 0, 0, "NodePool %s: %s: \"%.64s\" is not a resource name", pool, path,
                        yyjson_get_str(k));
        memcpy(a->name, yyjson_get_str(k), yyjson_get_len(k) + 1);
        if (quantity_json_milli(v, &a->milli) < 0 || a->milli < 0)
            return fail(d, 0, 0, "NodePool %s: %s[\"%s\"] is not a quantity of 0 or more", pool,
                        path, a->name);
        *n_out = ++n;
    }
    return 0;
}

static int pool_taints(yyjson_val *arr, struct karpenter_pool *p, struct diag *d)
{
    yyjson_val *t;
    size_t i, max;

    if (arr == NULL || yyjson_is_null(arr))
        return 0;
    if (!yyjson_is_arr(arr))
        return fail(d, 0, 0, "NodePool %s: spec.template.spec.taints must be an array", p->name);
    if (yyjson_arr_size(arr) > KARPENTER_TAINTS_MAX)
        return fail(d, 0, 0, "NodePool %s: more than %u taints", p->name, KARPENTER_TAINTS_MAX);
    if (yyjson_arr_size(arr) == 0)
        return 0;
    p->taints = calloc(yyjson_arr_size(arr), sizeof(p->taints[0]));
    if (p->taints == NULL)
        return fail(d, 0, 0, "out of memory");
    yyjson_arr_foreach (arr, i, max, t) {
        yyjson_val *key = yyjson_obj_get(t, "key"), *value = yyjson_obj_get(t, "value"),
                   *effect = yyjson_obj_get(t, "effect");
        struct karpenter_taint *x = &p->taints[p->n_taints];

        if (!yyjson_is_obj(t) || !yyjson_is_str(key) || has_nul(key) || !yyjson_is_str(effect) ||
            has_nul(effect) ||
            (value != NULL && !yyjson_is_null(value) && (!yyjson_is_str(value) || has_nul(value))))
            return fail(d, 0, 0,
                        "NodePool %s: spec.template.spec.taints[%zu] must be an object with "
                        "string key and effect (and value)",
                        p->name, i);
        p->n_taints++;
        x->key = dup_str(key);
        x->effect = dup_str(effect);
        x->value = yyjson_is_str(value) ? dup_str(value) : NULL;
        if (x->key == NULL || x->effect == NULL || (yyjson_is_str(value) && x->value == NULL))
            return fail(d, 0, 0, "out of memory");
    }
    return 0;
}

static int pool_labels(yyjson_val *obj, struct karpenter_pool *p, struct diag *d)
{
    yyjson_val *k, *v;
    size_t i, max;

    if (obj == NULL || yyjson_is_null(obj))
        return 0;
    if (!yyjson_is_obj(obj))
        return fail(d, 0, 0, "NodePool %s: spec.template.metadata.labels must be an object",
                    p->name);
    if (yyjson_obj_size(obj) > KARPENTER_LABELS_MAX)
        return fail(d, 0, 0, "NodePool %s: more than %u labels", p->name, KARPENTER_LABELS_MAX);
    if (yyjson_obj_size(obj) == 0)
        return 0;
    p->labels = calloc(yyjson_obj_size(obj), sizeof(p->labels[0]));
    if (p->labels == NULL)
        return fail(d, 0, 0, "out of memory");
    yyjson_obj_foreach (obj, i, max, k, v) {
        struct karpenter_label *l = &p->labels[p->n_labels];

        if (!yyjson_is_str(v) || has_nul(k) || has_nul(v))
            return fail(d, 0, 0,
                        "NodePool %s: spec.template.metadata.labels[\"%.64s\"] must be "
                        "a string",
                        p->name, yyjson_get_str(k));
        p->n_labels++;
        l->key = dup_str(k);
        l->value = dup_str(v);
        if (l->key == NULL || l->value == NULL)
            return fail(d, 0, 0, "out of memory");
    }
    return 0;
}

/* One instance-gpu-count requirement, narrowing p's GPU count bounds. */
static int gpu_requirement(yyjson_val *r, size_t at, struct karpenter_pool *p, struct diag *d)
{
    yyjson_val *op = yyjson_obj_get(r, "operator"), *values = yyjson_obj_get(r, "values"), *v;
    int64_t lo = INT64_MAX, hi = 0;
    size_t i, max;

    if (!yyjson_is_str(op) || (values != NULL && !yyjson_is_null(values) && !yyjson_is_arr(values)))
        return fail(d, 0, 0,
                    "NodePool %s: spec.template.spec.requirements[%zu]: operator must be a "
                    "string and values an array",
                    p->name, at);
    yyjson_arr_foreach (values, i, max, v) {
        uint64_t u;

        if (!yyjson_is_str(v) || has_nul(v) || parse_uint(yyjson_get_str(v), 0, INT64_MAX, &u) < 0)
            return fail(d, 0, 0,
                        "NodePool %s: spec.template.spec.requirements[%zu].values[%zu] must be a "
                        "whole number",
                        p->name, at, i);
        lo = (int64_t)u < lo ? (int64_t)u : lo;
        hi = (int64_t)u > hi ? (int64_t)u : hi;
    }
    if (json_str_is(op, "In") && lo != INT64_MAX) {
        p->gpu_count_min = lo > p->gpu_count_min ? lo : p->gpu_count_min;
        p->gpu_count_max = p->gpu_count_max < 0 || hi < p->gpu_count_max ? hi : p->gpu_count_max;
        return 0;
    }
    if (yyjson_arr_size(values) != 1)
        return 0; /* NotIn, Exists, DoesNotExist: no bound */
    if (json_str_is(op, "Gt") || json_str_is(op, "Gte")) {
        int64_t m = json_str_is(op, "Gt") ? (hi == INT64_MAX ? hi : hi + 1) : hi;

        p->gpu_count_min = m > p->gpu_count_min ? m : p->gpu_count_min;
    } else if (json_str_is(op, "Lt") || json_str_is(op, "Lte")) {
        int64_t m = json_str_is(op, "Lt") ? (hi > 0 ? hi - 1 : 0) : hi;

        p->gpu_count_max = p->gpu_count_max < 0 || m < p->gpu_count_max ? m : p->gpu_count_max;
    }
    return 0;
}

/* One requirement kept for karpenter_pool_may_label(). */
static int pool_req(yyjson_val *r, size_t i, struct karpenter_pool *p, struct diag *d)
{
    yyjson_val *op = yyjson_obj_get(r, "operator"), *values = yyjson_obj_get(r, "values"), *v;
    struct karpenter_req *q;
    size_t k, max;

    if (!yyjson_is_str(op) || has_nul(op) || (values != NULL && !yyjson_is_arr(values)) ||
        yyjson_arr_size(values) > KARPENTER_REQ_VALUES_MAX)
        return fail(d, 0, 0,
                    "NodePool %s: spec.template.spec.requirements[%zu]: an operator and at most "
                    "%u values",
                    p->name, i, KARPENTER_REQ_VALUES_MAX);
    if (p->n_reqs == KARPENTER_REQS_MAX)
        return fail(d, 0, 0, "NodePool %s: more than %u requirements", p->name, KARPENTER_REQS_MAX);
    if (p->n_reqs == 0 && (p->reqs = calloc(KARPENTER_REQS_MAX, sizeof(*p->reqs))) == NULL)
        return fail(d, 0, 0, "out of memory");
    q = &p->reqs[p->n_reqs++];
    q->key = dup_str(yyjson_obj_get(r, "key"));
    q->op = dup_str(op);
    q->values = calloc(yyjson_arr_size(values) + 1, sizeof(*q->values));
    if (q->key == NULL || q->op == NULL || q->values == NULL)
        return fail(d, 0, 0, "out of memory");
    yyjson_arr_foreach (values, k, max, v) {
        if (!yyjson_is_str(v) || has_nul(v))
            return fail(d, 0, 0,
                        "NodePool %s: spec.template.spec.requirements[%zu].values[%zu] must be a "
                        "string",
                        p->name, i, k);
        if ((q->values[q->n_values] = dup_str(v)) == NULL)
            return fail(d, 0, 0, "out of memory");
        q->n_values++;
    }
    return 0;
}

/* Karpenter's well-known labels (kubernetes-sigs/karpenter pkg/apis/v1/labels.go
 * WellKnownLabels, and the AWS and Azure providers' instance labels): a node gets them from its
 * instance type whether or not the pool names them. */
static bool well_known(const char *key)
{
    static const char *const keys[] = {"topology.kubernetes.io/zone",
                                       "topology.kubernetes.io/region",
                                       "node.kubernetes.io/instance-type",
                                       "kubernetes.io/arch",
                                       "kubernetes.io/os",
                                       "node.kubernetes.io/windows-build",
                                       "karpenter.sh/capacity-type",
                                       "kubernetes.io/hostname"};
    static const char *const prefixes[] = {"karpenter.k8s.aws/", "karpenter.azure.com/"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

bool karpenter_pool_may_have(const struct karpenter_pool *p, const char *key)
{
    if (strcmp(key, "karpenter.sh/nodepool") == 0)
        return true;
    for (size_t i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].key, key) == 0)
            return true;
    for (size_t i = 0; i < p->n_reqs; i++)
        if (strcmp(p->reqs[i].key, key) == 0)
            return strcmp(p->reqs[i].op, "DoesNotExist") != 0;
    return well_known(key);
}

bool karpenter_pool_may_label(const struct karpenter_pool *p, const char *key, const char *value)
{
    bool named = false;

    if (strcmp(key, "karpenter.sh/nodepool") == 0)
        return strcmp(value, p->name) == 0;
    for (size_t i = 0; i < p->n_labels; i++)
        named = named || strcmp(p->labels[i].key, key) == 0;
    for (size_t i = 0; i < p->n_reqs; i++)
        named = named || strcmp(p->reqs[i].key, key) == 0;
    if (!named)
        return well_known(key);
    for (size_t i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].key, key) == 0 && strcmp(p->labels[i].value, value) != 0)
            return false;
    for (size_t i = 0; i < p->n_reqs; i++) {
        const struct karpenter_req *q = &p->reqs[i];
        bool listed = false;

        if (strcmp(q->key, key) != 0)
            continue;
        for (size_t k = 0; k < q->n_values; k++)
            listed = listed || strcmp(q->values[k], value) == 0;
        if ((strcmp(q->op, "In") == 0 && !listed) || (strcmp(q->op, "NotIn") == 0 && listed) ||
            strcmp(q->op, "DoesNotExist") == 0)
            return false;
    }
    return true;
}

static int pool_requirements(yyjson_val *arr, struct karpenter_pool *p, struct diag *d)
{
    yyjson_val *r;
    size_t i, max;

    if (arr == NULL || yyjson_is_null(arr))
        return 0;
    if (!yyjson_is_arr(arr))
        return fail(d, 0, 0, "NodePool %s: spec.template.spec.requirements must be an array",
                    p->name);
    yyjson_arr_foreach (arr, i, max, r) {
        yyjson_val *key = yyjson_obj_get(r, "key");

        if (!yyjson_is_obj(r) || !yyjson_is_str(key))
            return fail(d, 0, 0,
                        "NodePool %s: spec.template.spec.requirements[%zu] must be an object "
                        "with a string key",
                        p->name, i);
        if (json_str_is(key, "karpenter.k8s.aws/instance-gpu-count") &&
            gpu_requirement(r, i, p, d) < 0)
            return -1;
        if (pool_req(r, i, p, d) < 0)
            return -1;
    }
    return 0;
}

int karpenter_pool_parse(yyjson_val *obj, struct karpenter_pool *out, struct diag *d)
{
    yyjson_val *api, *kind, *name, *spec, *tmpl, *tspec, *status, *nodes;

    memset(out, 0, sizeof(*out));
    out->status_nodes = -1;
    out->gpu_count_max = -1;
    if (!yyjson_is_obj(obj))
        return fail(d, 0, 0, "a NodePool must be an object, not %s", json_type_desc(obj));
    api = yyjson_obj_get(obj, "apiVersion");
    kind = yyjson_obj_get(obj, "kind");
    if (api != NULL && !json_str_is(api, "karpenter.sh/v1"))
        return fail(d, 0, 0, "apiVersion must be karpenter.sh/v1");
    if (kind != NULL && !json_str_is(kind, "NodePool"))
        return fail(d, 0, 0, "kind must be NodePool");
    name = yyjson_obj_get(yyjson_obj_get(obj, "metadata"), "name");
    if (!yyjson_is_str(name) || yyjson_get_len(name) == 0 ||
        yyjson_get_len(name) >= sizeof(out->name) || has_nul(name))
        return fail(d, 0, 0, "a NodePool needs metadata.name, a string of 1 to %zu bytes",
                    sizeof(out->name) - 1);
    memcpy(out->name, yyjson_get_str(name), yyjson_get_len(name) + 1);
    spec = yyjson_obj_get(obj, "spec");
    tmpl = yyjson_obj_get(spec, "template");
    tspec = yyjson_obj_get(tmpl, "spec");
    status = yyjson_obj_get(obj, "status");
    if ((spec != NULL && !yyjson_is_obj(spec)) || (tmpl != NULL && !yyjson_is_obj(tmpl)) ||
        (tspec != NULL && !yyjson_is_obj(tspec)) || (status != NULL && !yyjson_is_obj(status)))
        return fail(d, 0, 0,
                    "NodePool %s: spec, spec.template, its spec and status must be "
                    "objects",
                    out->name);
    if (amounts(yyjson_obj_get(spec, "limits"), "spec.limits", out->name, &out->limits,
                &out->n_limits, d) < 0 ||
        amounts(yyjson_obj_get(status, "resources"), "status.resources", out->name, &out->used,
                &out->n_used, d) < 0)
        return -1;
    for (size_t i = 0; i < out->n_limits; i++) {
        out->limits_extended |= extended_resource(out->limits[i].name);
        out->limits_nodes |= strcmp(out->limits[i].name, "nodes") == 0;
    }
    nodes = yyjson_obj_get(status, "nodes");
    if (nodes != NULL && !yyjson_is_null(nodes) &&
        (!json_int64(nodes, &out->status_nodes) || out->status_nodes < 0))
        return fail(d, 0, 0, "NodePool %s: status.nodes must be a whole number", out->name);
    if (pool_taints(yyjson_obj_get(tspec, "taints"), out, d) < 0 ||
        pool_labels(yyjson_obj_get(yyjson_obj_get(tmpl, "metadata"), "labels"), out, d) < 0 ||
        pool_requirements(yyjson_obj_get(tspec, "requirements"), out, d) < 0)
        return -1;
    return 0;
}

static const struct karpenter_amount *find_amount(const struct karpenter_amount *a, size_t n,
                                                  const char *resource)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i].name, resource) == 0)
            return &a[i];
    return NULL;
}

const struct karpenter_amount *karpenter_pool_limit(const struct karpenter_pool *p,
                                                    const char *resource)
{
    return find_amount(p->limits, p->n_limits, resource);
}

int64_t karpenter_pool_headroom(const struct karpenter_pool *p, const char *resource, bool *bounded)
{
    const struct karpenter_amount *lim = karpenter_pool_limit(p, resource);
    const struct karpenter_amount *used = find_amount(p->used, p->n_used, resource);
    int64_t u = 0;

    *bounded = lim != NULL;
    if (lim == NULL)
        return 0;
    if (used != NULL)
        u = used->milli;
    else if (strcmp(resource, "nodes") == 0 && p->status_nodes > 0)
        u = p->status_nodes > INT64_MAX / 1000 ? INT64_MAX : p->status_nodes * 1000;
    /* both are >= 0 (the parse refuses negative quantities): no overflow */
    return lim->milli > u ? (lim->milli - u) / 1000 : 0;
}

/* ---- nodes of a group ---- */

/* s is a + b + the rest; the rest, or NULL. */
static const char *after(const char *s, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);

    return strncmp(s, a, na) == 0 && strncmp(s + na, b, nb) == 0 ? s + na + nb : NULL;
}

static const char *label(yyjson_val *labels, const char *key)
{
    const char *v = json_get_str(labels, key);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* -UUID at the end, in 8-4-4-4-12 hex digits (an EKS managed node group's ASG). */
static bool uuid_tail(const char *s)
{
    static const size_t parts[] = {8, 4, 4, 4, 12};
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < 5; i++) {
        if (s == NULL || *s != '-' || strspn(s + 1, hex) < parts[i])
            return false;
        s += 1 + parts[i];
    }
    return *s == '\0';
}

bool ca_group_has_node(const struct ca_group *g, const char *node, yyjson_val *labels)
{
    const char *id = g->name, *v, *rest, *seg = strrchr(g->name, '/');
    size_t n;

    seg = seg != NULL ? seg + 1 : id;
    if (label(labels, "karpenter.sh/nodepool") != NULL)
        return false;
    /* eks-NG-UUID: the rest must be the UUID, so that eks-gpu-large-UUID is not gpu's */
    if ((v = label(labels, "eks.amazonaws.com/nodegroup")) != NULL &&
        (strcmp(id, v) == 0 || uuid_tail(after(id, "eks-", v))))
        return true;
    /* eksctl-CLUSTER-nodegroup-NG-NodeGroup-SUFFIX (its CloudFormation stack's ASG) */
    if ((v = label(labels, "alpha.eksctl.io/nodegroup-name")) != NULL) {
        const char *at = strncmp(id, "eksctl-", 7) == 0 ? strstr(id, "-nodegroup-") : NULL;

        for (; at != NULL; at = strstr(at + 1, "-nodegroup-"))
            if ((rest = after(at, "-nodegroup-", v)) != NULL &&
                strncmp(rest, "-NodeGroup-", 11) == 0)
                return true;
        if (strcmp(id, v) == 0)
            return true;
    }
    /* kops: IG.CLUSTER */
    if ((v = label(labels, "kops.k8s.io/instancegroup")) != NULL &&
        (strcmp(id, v) == 0 || after(id, v, ".") != NULL))
        return true;
    /* GKE: .../instanceGroups/gke-CLUSTER-POOL-HASH-grp, whose nodes are named
     * gke-CLUSTER-POOL-HASH-XXXX: the node's name decides, so that pool gpu is not big-gpu's
     * (and names GKE shortened still match) */
    if ((v = label(labels, "cloud.google.com/gke-nodepool")) != NULL) {
        n = strlen(seg);
        if (strcmp(id, v) == 0 || strcmp(seg, v) == 0)
            return true;
        if (strncmp(seg, "gke-", 4) == 0 && n > 4 + 4 && strcmp(seg + n - 4, "-grp") == 0 &&
            node != NULL && strncmp(node, seg, n - 4) == 0 && node[n - 4] == '-' &&
            strchr(node + n - 3, '-') == NULL)
            return true;
    }
    /* AKS: aks-POOL-NUMBER-vmss */
    if (((v = label(labels, "kubernetes.azure.com/agentpool")) != NULL ||
         (v = label(labels, "agentpool")) != NULL)) {
        if (strcmp(id, v) == 0)
            return true;
        if ((rest = after(id, "aks-", v)) != NULL && rest[0] == '-' &&
            (n = strspn(rest + 1, "0123456789")) > 0 && strcmp(rest + 1 + n, "-vmss") == 0)
            return true;
    }
    /* Cluster API: KIND/NAMESPACE/NAME */
    if ((v = label(labels, "cluster.x-k8s.io/deployment-name")) != NULL && strcmp(seg, v) == 0)
        return true;
    return false;
}

bool karpenter_pool_has_node(const struct karpenter_pool *p, yyjson_val *labels)
{
    const char *v = label(labels, "karpenter.sh/nodepool");

    return v != NULL && strcmp(v, p->name) == 0;
}
