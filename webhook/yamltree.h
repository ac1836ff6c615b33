/*
 * yamltree.h: the one bounded YAML reader: libyaml's events into a tree of our own, with
 * positions, the quoted/plain distinction, tags and anchors as written, and caps on depth,
 * nodes and documents. Never libyaml's document loader, which turns aliases into shared nodes.
 *
 * The reader judges nothing but the caps and the syntax: each caller (rules.c, yamljson.c,
 * kubeconfig.c) walks the tree and says, in its own words, what it refuses (anchors, tags, NUL
 * bytes, duplicate keys). The nodes are also kept in the order of the text (yamltree.nodes), so
 * that a caller whose first error wins finds the same first error as a reader of events would.
 * When a cap or the syntax stops the reading, the tree holds what came before, and err says
 * where and why; a node refused by a cap is built all the same (err.at, not attached), so that
 * a caller can check it before it reports the cap, as a reader of events would.
 *
 * Plain scalars resolve as YAML 1.2's core schema (yamltree_resolve): null (`null`, `~`, empty,
 * in three casings), boolean (`true`/`false` in three casings; YAML 1.1's yes/no/on/off are
 * strings), integer (decimal with an optional sign, 0o octal, 0x hex), float (decimal with a
 * fraction or an exponent, `.inf`, `.nan` in their casings), or else a string.
 *
 * Ownership: a struct yamltree owns every node and string in it until yamltree_free().
 */
#ifndef GPUADMIT_YAMLTREE_H
#define GPUADMIT_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

/* Reader flags. */
#define YAMLTREE_WIPE         1u /* wipe every scalar when freed (kubeconfig secrets) */
#define YAMLTREE_UTF8         2u /* UTF-8 only: a UTF-8 byte order mark is dropped first */
#define YAMLTREE_KEEP_ALIASES 4u /* an alias is a node (counted); else it stops the reading */

enum yamltree_kind { YAMLTREE_SCALAR, YAMLTREE_SEQ, YAMLTREE_MAP, YAMLTREE_ALIAS };

/* What a plain scalar means by the core schema. */
enum yamltree_type { YAMLTREE_STR, YAMLTREE_NULL, YAMLTREE_BOOL, YAMLTREE_INT, YAMLTREE_FLOAT };

struct yamltree_node {
    enum yamltree_kind kind;
    bool plain;            /* a scalar in plain style (quoted and block scalars are not) */
    bool anchored;         /* it carried an anchor */
    bool is_key;           /* a mapping's key */
    char *tag;             /* as libyaml resolved it ("tag:yaml.org,2002:str"), or NULL */
    unsigned line, column; /* 1-based start */
    unsigned doc;          /* 1-based number of its document */
    char *s;               /* scalars: the text, NUL-terminated (a quoted one may hold NULs) */
    size_t len;            /* of s */
    struct yamltree_node *parent;
    struct yamltree_node **kids; /* sequence items; mapping keys and values alternating */
    size_t n, cap;
    unsigned note; /* the caller's, for its walk (what it made of the node); 0 from the reader */
};

struct yamltree_doc {
    struct yamltree_node *root; /* NULL for an empty document */
    unsigned index;             /* 1-based */
    unsigned line, column;      /* of its content, or of its start when empty */
    bool ended;                 /* its end was read */
};

enum yamltree_fail {
    YAMLTREE_OK,
    YAMLTREE_E_SYNTAX, /* libyaml refused the text: problem, context, ... */
    YAMLTREE_E_MEMORY,
    YAMLTREE_E_DEPTH, /* a container at max_depth */
    YAMLTREE_E_NODES, /* the node past max_nodes */
    YAMLTREE_E_DOCS,  /* the document past max_docs */
    YAMLTREE_E_ALIAS, /* an alias, without YAMLTREE_KEEP_ALIASES */
};

struct yamltree_error {
    enum yamltree_fail code;
    unsigned line, column;    /* 1-based; libyaml's problem mark for a syntax error */
    unsigned doc;             /* documents started when it happened */
    struct yamltree_node *at; /* E_DEPTH, E_NODES: the node refused (owned by the tree), or NULL */
    /* E_SYNTAX, from libyaml (static strings) */
    int libyaml_error; /* yaml_error_type_t */
    const char *problem, *context;
    unsigned context_line, context_column; /* 1-based */
    int problem_value;
    size_t problem_offset; /* in the text as given, byte order mark included */
};

struct yamltree {
    struct yamltree_node **nodes; /* every node attached, in the order of the text */
    size_t n_nodes, cap_nodes;
    struct yamltree_doc *docs; /* every document started */
    size_t n_docs, cap_docs;
    unsigned flags;
    struct yamltree_error err;
};

struct yamltree_limits {
    size_t max_depth; /* containers open at once */
    size_t max_nodes; /* scalars, sequences, mappings (and kept aliases) in the text */
    size_t max_docs;  /* 0: no cap */
};

/* Reads len bytes of text into t (zeroed here). 0 when it was read to its end, else -1 with
 * t->err set; either way free t with yamltree_free(). */
int yamltree_read(const char *text, size_t len, const struct yamltree_limits *lim, unsigned flags,
                  struct yamltree *t);
void yamltree_free(struct yamltree *t);

/* What the plain scalar s (NUL-terminated) means by the core schema. */
enum yamltree_type yamltree_resolve(const char *s);

#endif
