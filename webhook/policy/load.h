/*
 * load.h: the rule-file loader's helpers that a rule type's own loader needs, internal to
 * policy/ (rules.c defines them; the kinds' modules, through kind.h, use them).
 *
 * Every get_ and load_ helper records what it refuses through the loader, with the key path
 * given ("spec.rules[3].maxPerPod") and the node's file:line:column, and is quiet for a node
 * refused already (an alias, a bad tag). Strings it returns are the caller's to free.
 */
#ifndef GPUADMIT_LOAD_H
#define GPUADMIT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "rules.h"
#include "yamltree.h"

#define SHOW_BUF (RULES_VALUE_SHOWN * 4u + 8u) /* a value quoted with escapes and "..." */
#define LIST_BUF 400u                          /* "one of a, b, c" lists in messages */

/* One load (rules.c). */
struct loader;

/* A key of a mapping of the format. */
struct field {
    const char *name;
    bool required;
};

/* A check of a string's shape: what it is, for messages, and NULL or what is wrong with s. */
struct check {
    const char *what;
    const char *(*fn)(const char *s);
};

extern const struct check VAL_GLOB;        /* fnmatch glob */
extern const struct check VAL_SUBDOMAIN;   /* DNS-1123 subdomain: a PriorityClass's name */
extern const struct check VAL_RESOURCE;    /* extended resource name */
extern const struct check VAL_LABEL_KEY;   /* label key */
extern const struct check VAL_LABEL_VALUE; /* label value */

/* The keys every rule has, before its kind's (kind.h), in the order of their table in rules.c. */
enum { R_NAME, R_TYPE, R_ACTION, R_ENFORCEMENT, R_MATCH, R_EXCLUDE, R_COMMON };
/* The keys of the rule format: the common ones and every kind's, a shared key once. */
#define RULE_KEYS_MAX 48u

/* What a kind's loader reads one rule from. */
struct rule_input {
    const struct policy_doc *doc;    /* its document, spec.gpu loaded */
    const struct rule *rule;         /* its common keys loaded: name, type, action, enforcement */
    const struct yamltree_node *map; /* the rule's mapping */
    /* the values of the common keys (R_NAME...) and of the kind's keys (in its keys' order),
     * NULL where absent; k the kind's keys themselves (where a message about a key points) */
    const struct yamltree_node *const *common;
    const struct yamltree_node *const *v;
    const struct yamltree_node *const *k;
    const char *path; /* the rule's key path, "spec.rules[3]" */
};

/* An optional key that is absent or null takes its default. */
bool given(const struct yamltree_node *n);
bool want_seq(struct loader *L, const struct yamltree_node *n, const char *path);
int get_bool(struct loader *L, const struct yamltree_node *n, const char *path, bool *out);
/* A decimal integer in [min, max]. */
int get_int(struct loader *L, const struct yamltree_node *n, const char *path, int64_t min,
            int64_t max, int64_t *out);
/* The index of the string value in names, or -1 (recorded). */
int get_enum(struct loader *L, const struct yamltree_node *n, const char *path,
             const char *const *names, size_t nn);
/* A string, checked by c (NULL: any), copied into *out. Returns 0 or -1 (recorded). */
int get_str(struct loader *L, const struct yamltree_node *n, const char *path,
            const struct check *c, char **out);
/* A sequence of strings checked by c. */
void load_strlist(struct loader *L, const struct yamltree_node *n, const char *path,
                  const struct check *c, struct strlist *out);
/* Sorts the pairs of map by fields into vals and keys (NULL where absent), reporting unknown,
 * duplicate and missing required keys. False when map is not a mapping (recorded). */
bool map_fields(struct loader *L, const struct yamltree_node *map, const char *path,
                const struct field *fields, size_t nf, const struct yamltree_node **vals,
                const struct yamltree_node **keys);
/* A label map: gpu.nodeLabels ("" or null: the key must exist) and a node-selector rule's labels
 * (value_required: a non-empty value). */
void load_label_map(struct loader *L, const struct yamltree_node *n, const char *path,
                    bool value_required, struct node_label **out, size_t *n_out);

/* Taints: a sequence of {key, value, effect} (effect NoSchedule when left out), one of each. */
void load_taints(struct loader *L, const struct yamltree_node *n, const char *path,
                 struct taint **out, size_t *n_out);

/* A name of the user's choosing and a count. */
struct name_count {
    char *name;
    int64_t n;
};
/* A mapping of names checked by c to integers in [0, max]: *out holds the *n_out that load. */
void load_count_map(struct loader *L, const struct yamltree_node *n, const char *path,
                    const struct check *c, int64_t max, struct name_count **out, size_t *n_out);

/* Key paths for messages, into out (RULES_PATH_MAX bytes): base.key, base[i]. */
void path_key(char *out, const char *base, const char *key);
void path_index(char *out, const char *base, size_t i);
/* s quoted for a message, into buf (SHOW_BUF bytes). Returns buf. */
const char *show(char *buf, const char *s);
/* Records an error at n. */
void err_node(struct loader *L, const struct yamltree_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A copy of s, or NULL (out of memory, recorded). */
char *xstrdup(struct loader *L, const char *s);
/* Zeroed array of n elements; NULL for n == 0, or on failure (recorded). */
void *xcalloc(struct loader *L, size_t n, size_t size);

void strlist_free(struct strlist *l);
void node_labels_free(struct node_label *l, size_t n);
void taints_free(struct taint *t, size_t n);

#endif
