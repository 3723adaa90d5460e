/*
 * Reader of benchdnn's graph batch files (the harness files of oneDNN's
 * tests/benchdnn/inputs/graph/; grammar: tests/benchdnn/doc/driver_graph.md
 * and benchdnn's own parser).
 *
 * A batch file is a stream of options, as on benchdnn's command line;
 * '#' at the start of a word comments out the rest of its line, and a word
 * ending in '\' continues with the next word (a long option over several
 * lines). Settings
 * persist until --reset, also into and out of nested --batch= files
 * (benchdnn parses them in place). --case=FILE runs FILE, a oneDNN Graph
 * JSON graph file, with the current settings:
 *   --dt=DT[,DT...]          f32, bf16, f16 or undef; or ID:DT[+ID:DT...]
 *   --in-shapes=ID:SHAPE[*TAG][+...][,...]   rewrite graph inputs
 *   --op-attrs=ID:NAME:VALUE[*NAME:VALUE][+...][,...]   rewrite attributes
 *   --mb=N[,N...]            rewrite the minibatch of the data inputs
 * A comma separates alternatives: each combination is one run. Options of
 * benchdnn that do not change what an op computes (engine, mode, timing,
 * verbosity, ...) are read and ignored; an unknown option is an error.
 *
 * Paths (--case=, --batch=) are taken as they are when absolute, else
 * relative to the folder of the batch file that names them, else relative
 * to the --inputs-dir folder (oneDNN's harness files name their cases
 * relative to tests/benchdnn/inputs/graph/).
 *
 * Rewrites happen on the parsed JSON document (jansson), as benchdnn does
 * them, before the graph reader sees it:
 * - --in-shapes changes the dims and strides of graph inputs (tensors no op
 *   of the graph produces). A TAG (letters a, b, c, ... outermost first)
 *   gives the strides; without one a tensor keeps the tag of its file
 *   strides (sorted by decreasing stride, ties in dims order), or takes
 *   the plain tag when its rank changes.
 * - --op-attrs may only change attributes the op has (benchdnn's rule),
 *   with the attribute's own type (s64[] values are written 2x2).
 * - The output of every ConvolutionBackwardData op is inferred again: a
 *   dst_shape the line's --op-attrs gives (not all zeros) is the output
 *   shape (benchdnn's rule). Otherwise N follows diff_dst, the channels
 *   follow the weights and groups, and the spatial sizes stay the file's
 *   when the op's geometry (input spatial sizes, kernel, strides,
 *   dilations, pads, auto_pad) is unchanged, else they are the natural
 *   ones (F - pads for explicit pads, F for VALID, X * stride for SAME_*);
 *   a non-zero dst_shape in the file is rewritten to match. Output strides
 *   follow benchdnn: the output's own tag, or the data input's tag when the
 *   line changed a layout or a rank.
 * - --mb=N sets N of each ConvolutionBackwardData op's data input.
 * A ConvolutionBackwardData op whose inputs other ops compute is skipped
 * when the line rewrites shapes (dgrad conform infers no other op's
 * output). --dt picks the one type the cases of the line run in.
 *
 * A line whose graph holds no op dgrad runs is a skip with the reason.
 * Errors name the batch file and line: "<file>:<line>: <what>: <rule>".
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_common.h"

/* Nesting bound (a batch file that names itself would never end). */
#define BATCH_MAX_DEPTH 16
/* Longest option value, and largest batch file read. */
#define BATCH_VALUE 4096
#define BATCH_MAX_BYTES (16L << 20)
#define CBD "ConvolutionBackwardData"

typedef struct settings {
    char dt[BATCH_VALUE], in_shapes[BATCH_VALUE], op_attrs[BATCH_VALUE],
            mb[BATCH_VALUE];
} settings_t;

typedef struct batch {
    cf_sink_t *sink;
    const char *inputs_dir;
    settings_t s;
    int errors;
    int depth;
} batch_t;

/* Where a message points: a batch file and line. */
typedef struct at {
    const char *file;
    int line;
} at_t;

static int berr(batch_t *b, at_t at, const char *what, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int berr(batch_t *b, at_t at, const char *what, const char *fmt, ...) {
    char rule[CF_MESSAGE / 2], where[CF_WHERE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(rule, sizeof rule, fmt, args);
    va_end(args);
    if (at.line > 0) snprintf(where, sizeof where, "%s:%d", at.file, at.line);
    else snprintf(where, sizeof where, "%s", at.file);
    cf_sink_errorf(b->sink, at.file, where, what, "%s", rule);
    b->errors++;
    return 0;
}

/* Options that do not change what an op computes: benchdnn's global
 * options and the graph driver's partitioning and precision knobs. */
static const char *const ignored_options[] = {"--mode", "--mode-modifier",
        "--engine", "--cold-cache", "--canonical", "--check-ref-impl",
        "--cpu-isa-hints", "--fast-ref", "--fast-ref-gpu",
        "--fix-times-per-prb", "--impl", "--global-impl", "--skip-impl",
        "--global-skip-impl", "--max-ms-per-prb", "--num-streams",
        "--repeats-per-prb", "--mem-check", "--memory-kind", "--start",
        "--stream-kind", "--verbose", "--allow-enum-tags-only",
        "--attr-same-pd-check", "--expected-n-partitions", "--fpmath-mode",
        "--attr-fpmath",
        "--summary", "--perf-template", "--graph"};

const char *cf_batch_ignored_options(void) {
    static char list[512];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; i < sizeof ignored_options / sizeof *ignored_options;
                i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                    i ? ", " : "", ignored_options[i]);
    }
    return list;
}

static int is_ignored(const char *tok) {
    /* -v, -vN, --verbose=N */
    if (tok[0] == '-' && tok[1] == 'v' && (!tok[2] || isdigit((unsigned char)tok[2])))
        return 1;
    for (size_t i = 0; i < sizeof ignored_options / sizeof *ignored_options; i++) {
        size_t n = strlen(ignored_options[i]);
        if (!strncmp(tok, ignored_options[i], n) && (!tok[n] || tok[n] == '='))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ paths */

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder part of @p path ("" for none), with its slash. */
static void folder_of(const char *path, char *buf, size_t size) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(buf, size, "%.*s", (int)n, path);
}

/* Resolves @p name named in @p from; 0 with an error when not found. */
static int resolve(batch_t *b, at_t at, const char *option, const char *name,
        char *out, size_t size) {
    if (!name[0]) return berr(b, at, "bad value", "%s needs a file", option);
    if (name[0] == '/') {
        snprintf(out, size, "%s", name);
        if (is_file(out)) return 1;
        return berr(b, at, "unreadable", "%s%s: no such file", option, name);
    }
    char dir[CF_WHERE], tried[2 * CF_WHERE + 64];
    folder_of(at.file, dir, sizeof dir);
    snprintf(out, size, "%s%s", dir, name);
    if (is_file(out)) return 1;
    snprintf(tried, sizeof tried, "%s", out);
    if (b->inputs_dir) {
        snprintf(out, size, "%s%s%s", b->inputs_dir,
                b->inputs_dir[0] && b->inputs_dir[strlen(b->inputs_dir) - 1] != '/'
                        ? "/" : "", name);
        if (is_file(out)) return 1;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried),
                " nor %s", out);
    }
    return berr(b, at, "unreadable", "%s%s: found neither %s%s", option, name,
            tried, b->inputs_dir ? "" : " (relative paths are looked up "
            "next to the batch file, then in --inputs-dir, which is not set)");
}

/* ------------------------------------------------- small text helpers */

/* Splits @p text at @p delim into at most @p max parts (in place). */
static int split(char *text, char delim, char **parts, int max) {
    int n = 0;
    char *p = text;
    for (;;) {
        if (n == max) return -1;
        parts[n++] = p;
        char *d = strchr(p, delim);
        if (!d) return n;
        *d = '\0';
        p = d + 1;
    }
}

/* "2x28x28" -> dims; 0 on bad text. */
static int parse_dims_x(const char *text, int64_t *v, int max, int *n) {
    *n = 0;
    const char *p = text;
    if (!*p) return 0;
    for (;;) {
        if (!isdigit((unsigned char)*p) && *p != '-') return 0;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || *n == max) return 0;
        v[(*n)++] = x;
        if (!*end) return 1;
        if (*end != 'x') return 0;
        p = end + 1;
    }
}

static int parse_long(const char *text, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(text, &end, 10);
    return end != text && !*end && !errno;
}

/* A type ops compute in, or "undef" (*dt undef: the cases' own). */
static int parse_dtype(const char *s, dgrad_data_type_t *dt) {
    *dt = cf_data_type_named(s);
    if (!cf_is_compute_type(*dt)) *dt = dgrad_data_type_undef;
    return *dt != dgrad_data_type_undef || !strcmp(s, "undef");
}

/* --------------------------------------------------- graph documents */

/* The dims of a logical tensor object (0 when they are not a list). */
static int lt_dims(json_t *lt, int64_t *dims) {
    json_t *s = json_object_get(lt, "shape");
    if (!json_is_array(s) || json_array_size(s) > DGRAD_MAX_NDIMS) return -1;
    for (size_t i = 0; i < json_array_size(s); i++)
        dims[i] = json_integer_value(json_array_get(s, i));
    return (int)json_array_size(s);
}

static json_t *ints_json(const int64_t *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* benchdnn's tag of strides: dims by decreasing stride (ties in dims
 * order); the plain tag when the strides are missing or not all > 0. */
static void tag_of(json_t *lt, int nd, char *tag) {
    json_t *s = json_object_get(lt, "stride");
    int valid = json_is_array(s) && (int)json_array_size(s) == nd;
    int64_t st[DGRAD_MAX_NDIMS];
    for (int d = 0; valid && d < nd; d++) {
        st[d] = json_integer_value(json_array_get(s, (size_t)d));
        valid = st[d] > 0;
    }
    int order[DGRAD_MAX_NDIMS];
    for (int d = 0; d < nd; d++) order[d] = d;
    for (int i = 1; valid && i < nd; i++) /* stable insertion sort */
        for (int k = i; k > 0 && st[order[k]] > st[order[k - 1]]; k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (int d = 0; d < nd; d++) tag[d] = (char)('a' + order[d]);
    tag[nd] = '\0';
}

/* benchdnn's strides of a tag (the plain tag when its length is not the
 * rank): the last letter is innermost. */
static void tag_strides(const char *tag, const int64_t *dims, int nd,
        int64_t *strides) {
    char plain[DGRAD_MAX_NDIMS + 1];
    if ((int)strlen(tag) != nd) {
        for (int d = 0; d < nd; d++) plain[d] = (char)('a' + d);
        plain[nd] = '\0';
        tag = plain;
    }
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int d = tag[i] - 'a';
        strides[d] = s;
        if (dims[d] > 0) s *= dims[d];
    }
}

/* A tag for rank @p nd: each of the first nd letters once. */
static int valid_tag(const char *tag, int nd) {
    if ((int)strlen(tag) != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (!strchr(tag, 'a' + d)) return 0;
    return 1;
}

/* Per tensor id (as it appears in the graph): its tag, whether a rewrite
 * changed it, whether an op produces it. */
#define MAX_TENSORS 256
typedef struct tensor_info {
    int64_t id;
    char tag[DGRAD_MAX_NDIMS + 1];
    int produced, rewritten;
} tensor_info_t;

typedef struct doc {
    json_t *root, *ops;
    tensor_info_t t[MAX_TENSORS];
    int n;
    int change_stride; /* a rank or a layout changed (benchdnn's flag) */
} doc_t;

static tensor_info_t *tensor(doc_t *d, int64_t id) {
    for (int i = 0; i < d->n; i++)
        if (d->t[i].id == id) return &d->t[i];
    return NULL;
}

/* Indexes every logical tensor of the graph: 1, or 0 when the graph has
 * more tensors than the index holds. (What is malformed is left to the
 * graph reader, which reports it with its JSON path.) */
static int index_tensors(doc_t *d) {
    static const char *const sides[] = {"inputs", "outputs"};
    size_t i;
    json_t *op;
    d->n = 0;
    if (!json_is_array(d->ops)) return 1;
    json_array_foreach(d->ops, i, op) for (int s = 0; s < 2; s++) {
        json_t *lts = json_object_get(op, sides[s]), *lt;
        size_t k;
        if (!json_is_array(lts)) continue;
        json_array_foreach(lts, k, lt) {
            json_t *id = json_object_get(lt, "id");
            if (!json_is_integer(id)) continue;
            tensor_info_t *t = tensor(d, json_integer_value(id));
            if (!t) {
                if (d->n == MAX_TENSORS) return 0;
                t = &d->t[d->n++];
                memset(t, 0, sizeof *t);
                t->id = json_integer_value(id);
                int64_t dims[DGRAD_MAX_NDIMS];
                int nd = lt_dims(lt, dims);
                tag_of(lt, nd < 0 ? 0 : nd, t->tag);
            }
            t->produced |= s == 1;
        }
    }
    return 1;
}

/* Sets dims and strides of every occurrence of tensor @p id. */
static void set_tensor(doc_t *d, int64_t id, const int64_t *dims, int nd,
        const char *tag) {
    static const char *const sides[] = {"inputs", "outputs"};
    int64_t strides[DGRAD_MAX_NDIMS];
    tag_strides(tag, dims, nd, strides);
    size_t i;
    json_t *op;
    json_array_foreach(d->ops, i, op) for (int s = 0; s < 2; s++) {
        json_t *lts = json_object_get(op, sides[s]), *lt;
        size_t k;
        if (!json_is_array(lts)) continue;
        json_array_foreach(lts, k, lt) {
            json_t *jid = json_object_get(lt, "id");
            if (!json_is_integer(jid) || json_integer_value(jid) != id) continue;
            json_object_set_new(lt, "shape", ints_json(dims, nd));
            json_t *layout = json_object_get(lt, "layout_type");
            if (!json_is_string(layout)
                    || strcmp(json_string_value(layout), "any"))
                json_object_set_new(lt, "stride", ints_json(strides, nd));
        }
    }
}

static json_t *op_by_id(doc_t *d, long long id) {
    size_t i;
    json_t *op;
    json_array_foreach(d->ops, i, op) {
        json_t *jid = json_object_get(op, "id");
        if (json_is_integer(jid) && json_integer_value(jid) == id) return op;
    }
    return NULL;
}

static int is_cbd(json_t *op) {
    json_t *k = json_object_get(op, "kind");
    return json_is_string(k) && !strcmp(json_string_value(k), CBD);
}

/* ---------------------------------------------------- the rewrites */

/* --in-shapes alternative: ID:SHAPE[*TAG] / ID:TAG / ID:- / ID:0, '+'. */
static int rewrite_in_shapes(batch_t *b, at_t at, doc_t *d, char *alt) {
    char *items[64];
    int n = *alt ? split(alt, '+', items, 64) : 0;
    if (n < 0) return berr(b, at, "too large", "--in-shapes: more than 64 tensors");
    for (int i = 0; i < n; i++) {
        char *colon = strchr(items[i], ':');
        long long id;
        if (!colon || colon[1] == '\0')
            return berr(b, at, "bad value", "--in-shapes '%s': expected "
                    "ID:SHAPE[*TAG] (e.g. 0:1x32x28x28*acdb)", items[i]);
        *colon = '\0';
        char *val = colon + 1;
        if (!parse_long(items[i], &id))
            return berr(b, at, "bad value", "--in-shapes: tensor id '%s' is "
                    "not an integer", items[i]);
        tensor_info_t *t = tensor(d, id);
        if (!t || t->produced)
            return berr(b, at, "bad value", "--in-shapes: tensor %lld is not "
                    "an input of the graph", id);
        json_t *lt = NULL;
        { /* any occurrence gives the current dims */
            size_t k, m;
            json_t *op, *x;
            json_array_foreach(d->ops, k, op) {
                json_array_foreach(json_object_get(op, "inputs"), m, x)
                    if (json_integer_value(json_object_get(x, "id")) == id)
                        lt = x;
            }
        }
        int64_t old[DGRAD_MAX_NDIMS], dims[DGRAD_MAX_NDIMS];
        int old_nd = lt_dims(lt, old), nd = old_nd;
        if (old_nd < 0)
            return berr(b, at, "bad value", "--in-shapes: tensor %lld has no "
                    "shape list in the case", id);
        memcpy(dims, old, sizeof dims);
        char *star = strchr(val, '*');
        const char *shape = val, *tag = NULL;
        if (star) {
            *star = '\0';
            tag = star + 1;
        } else if (isalpha((unsigned char)val[0])) {
            shape = NULL;
            tag = val;
        }
        if (shape && !strcmp(shape, "-")) {
            nd = 0; /* a scalar: no ConvolutionBackwardData input is one */
        } else if (shape && !parse_dims_x(shape, dims, DGRAD_MAX_NDIMS, &nd)) {
            return berr(b, at, "bad value", "--in-shapes: '%s' of tensor %lld "
                    "is not a shape NUMxNUMx... (at most %d dims)", shape, id,
                    DGRAD_MAX_NDIMS);
        }
        if (tag && (!tag[0] || !valid_tag(tag, nd)))
            return berr(b, at, "bad value", "--in-shapes: tag '%s' of tensor "
                    "%lld is not a permutation of the first %d letters", tag,
                    id, nd);
        if (tag && strcmp(tag, t->tag)) d->change_stride = 1;
        if (!tag && nd != old_nd) d->change_stride = 1;
        if (tag) snprintf(t->tag, sizeof t->tag, "%s", tag);
        else if (nd != old_nd) t->tag[0] = '\0'; /* plain */
        t->rewritten = 1;
        set_tensor(d, id, dims, nd, t->tag);
    }
    return 1;
}

/* One attribute value in the attribute's own type. */
static int set_attr_value(batch_t *b, at_t at, long long id, json_t *attr,
        const char *name, const char *val) {
    const char *type = json_string_value(json_object_get(attr, "type"));
    long long x;
    if (!type)
        return berr(b, at, "bad value", "--op-attrs: attribute '%s' of op %lld "
                "has no type in the case", name, id);
    if (!strcmp(type, "string")) {
        json_object_set_new(attr, "value", json_string(val));
    } else if (!strcmp(type, "s64")) {
        if (!parse_long(val, &x))
            return berr(b, at, "bad value", "--op-attrs: %s of op %lld is s64, "
                    "'%s' is not an integer", name, id, val);
        json_object_set_new(attr, "value", json_integer(x));
    } else if (!strcmp(type, "s64[]")) {
        int64_t v[CF_MAX_LIST];
        int n;
        if (!parse_dims_x(val, v, CF_MAX_LIST, &n))
            return berr(b, at, "bad value", "--op-attrs: %s of op %lld is "
                    "s64[], '%s' is not NUMxNUM... (at most %d values)", name,
                    id, val, CF_MAX_LIST);
        json_object_set_new(attr, "value", ints_json(v, n));
    } else if (!strcmp(type, "bool")) {
        int t = !strcmp(val, "true") || !strcmp(val, "1");
        if (!t && strcmp(val, "false") && strcmp(val, "0"))
            return berr(b, at, "bad value", "--op-attrs: %s of op %lld is "
                    "bool, '%s' is not true or false", name, id, val);
        json_object_set_new(attr, "value", json_boolean(t));
    } else if (!strcmp(type, "f32")) {
        char *end;
        double f = strtod(val, &end);
        if (end == val || *end)
            return berr(b, at, "bad value", "--op-attrs: %s of op %lld is f32, "
                    "'%s' is not a number", name, id, val);
        json_object_set_new(attr, "value", json_real(f));
    }
    /* Other types (f32[]) belong to ops dgrad does not run: left as the
     * case has them. */
    return 1;
}

/* --op-attrs alternative: ID:NAME:VALUE[*NAME:VALUE][+ID:...]. Returns a
 * bit set of the ops (by position) whose dst_shape it set. */
static int rewrite_op_attrs(batch_t *b, at_t at, doc_t *d, char *alt,
        unsigned char *dst_shape_given) {
    char *items[64];
    int n = *alt ? split(alt, '+', items, 64) : 0;
    if (n < 0) return berr(b, at, "too large", "--op-attrs: more than 64 ops");
    for (int i = 0; i < n; i++) {
        char *colon = strchr(items[i], ':');
        long long id;
        if (!colon || !colon[1])
            return berr(b, at, "bad value", "--op-attrs '%s': expected "
                    "ID:NAME:VALUE[*NAME:VALUE...]", items[i]);
        *colon = '\0';
        if (!parse_long(items[i], &id))
            return berr(b, at, "bad value", "--op-attrs: op id '%s' is not an "
                    "integer", items[i]);
        json_t *op = op_by_id(d, id);
        if (!op)
            return berr(b, at, "bad value", "--op-attrs: the case has no op "
                    "with id %lld", id);
        char *pairs[64];
        int np = split(colon + 1, '*', pairs, 64);
        for (int k = 0; k < np; k++) {
            char *c2 = strchr(pairs[k], ':');
            if (!c2 || c2 == pairs[k] || !c2[1])
                return berr(b, at, "bad value", "--op-attrs '%s': expected "
                        "NAME:VALUE", pairs[k]);
            *c2 = '\0';
            json_t *attr = json_object_get(json_object_get(op, "attrs"), pairs[k]);
            if (!json_is_object(attr))
                return berr(b, at, "bad value", "--op-attrs: op %lld has no "
                        "attribute '%s' (benchdnn only rewrites attributes "
                        "the op has)", id, pairs[k]);
            if (!set_attr_value(b, at, id, attr, pairs[k], c2 + 1)) return 0;
            if (!strcmp(pairs[k], "dst_shape") && is_cbd(op)) {
                int64_t v[CF_MAX_LIST];
                int nv, zero = 1;
                parse_dims_x(c2 + 1, v, CF_MAX_LIST, &nv);
                for (int z = 0; z < nv; z++) zero = zero && v[z] == 0;
                size_t pos = 0;
                while (json_array_get(d->ops, pos) != op) pos++;
                if (pos < 256) dst_shape_given[pos] = !zero;
            }
        }
    }
    return 1;
}

/* Integer list attribute @p name of @p op, or @p dflt (n values). */
static int op_ints(json_t *op, const char *name, int64_t *v, int n,
        int64_t dflt) {
    json_t *a = json_object_get(json_object_get(json_object_get(op, "attrs"),
            name), "value");
    int m = json_is_array(a) ? (int)json_array_size(a) : 0;
    for (int i = 0; i < n; i++)
        v[i] = i < m ? json_integer_value(json_array_get(a, (size_t)i)) : dflt;
    return m;
}

static const char *op_str(json_t *op, const char *name, const char *dflt) {
    const char *s = json_string_value(json_object_get(
            json_object_get(json_object_get(op, "attrs"), name), "value"));
    return s ? s : dflt;
}

/* The spatial geometry of a ConvolutionBackwardData op: what its output
 * spatial sizes depend on. */
typedef struct geom {
    int nsp, nxc;
    int64_t N, Cout, X[3], K[3], S[3], D[3], pb[3], pe[3];
    char auto_pad[24];
} geom_t;

static int op_geom(json_t *op, geom_t *g) {
    memset(g, 0, sizeof *g);
    json_t *ins = json_object_get(op, "inputs");
    int64_t x[DGRAD_MAX_NDIMS], w[DGRAD_MAX_NDIMS];
    int nx = lt_dims(json_array_get(ins, 0), x), nw = lt_dims(json_array_get(ins, 1), w);
    if (nx < 3 || nx > 5 || nw != nx) return 0;
    g->nsp = nx - 2;
    g->nxc = strcmp(op_str(op, "data_format", "NXC"), "NCX") != 0;
    int xio = strcmp(op_str(op, "weights_format", "XIO"), "OIX") != 0;
    json_t *groups = json_object_get(json_object_get(json_object_get(op, "attrs"),
            "groups"), "value");
    int64_t G = json_is_integer(groups) ? json_integer_value(groups) : 1;
    g->N = x[0];
    g->Cout = G * (xio ? w[g->nsp] : w[1]);
    for (int i = 0; i < g->nsp; i++) {
        g->X[i] = g->nxc ? x[1 + i] : x[2 + i];
        g->K[i] = xio ? w[i] : w[2 + i];
    }
    op_ints(op, "strides", g->S, g->nsp, 1);
    op_ints(op, "dilations", g->D, g->nsp, 1);
    op_ints(op, "pads_begin", g->pb, g->nsp, 0);
    op_ints(op, "pads_end", g->pe, g->nsp, 0);
    snprintf(g->auto_pad, sizeof g->auto_pad, "%s", op_str(op, "auto_pad", "None"));
    for (char *p = g->auto_pad; *p; p++) *p = (char)tolower((unsigned char)*p);
    return 1;
}

static int same_spatial_geom(const geom_t *a, const geom_t *b) {
    size_t n = (size_t)a->nsp * sizeof(int64_t);
    return a->nsp == b->nsp && !memcmp(a->X, b->X, n) && !memcmp(a->K, b->K, n)
            && !memcmp(a->S, b->S, n) && !memcmp(a->D, b->D, n)
            && !memcmp(a->pb, b->pb, n) && !memcmp(a->pe, b->pe, n)
            && !strcmp(a->auto_pad, b->auto_pad);
}

/* The output dims (dialect order) of op @p op after the rewrites; @p orig
 * is the same op in the file as written. */
static int infer_output(json_t *op, json_t *orig, int dst_shape_given,
        int64_t *out, int *nd) {
    geom_t g, g0;
    if (!op_geom(op, &g)) return 0;
    *nd = g.nsp + 2;
    int64_t v[CF_MAX_LIST];
    int n = op_ints(op, "dst_shape", v, CF_MAX_LIST, 0);
    if (dst_shape_given) { /* the line's own dst_shape: benchdnn's rule */
        if (n != *nd) return 0;
        memcpy(out, v, (size_t)n * sizeof *v);
        return 1;
    }
    int64_t y[3];
    int keep = op_geom(orig, &g0) && same_spatial_geom(&g, &g0);
    if (keep) { /* the file's spatial sizes: its dst_shape, else output */
        int64_t f[CF_MAX_LIST];
        int nf = op_ints(orig, "dst_shape", f, CF_MAX_LIST, 0), zero = 1;
        for (int i = 0; i < nf; i++) zero = zero && f[i] == 0;
        if (zero) nf = lt_dims(json_array_get(json_object_get(orig, "outputs"), 0), f);
        keep = nf == *nd;
        for (int i = 0; keep && i < g.nsp; i++) {
            y[i] = f[g0.nxc ? 1 + i : 2 + i];
            keep = y[i] > 0;
        }
    }
    for (int i = 0; !keep && i < g.nsp; i++) {
        int64_t F = g.S[i] * (g.X[i] - 1) + (g.K[i] - 1) * g.D[i] + 1;
        if (!strncmp(g.auto_pad, "same", 4)) y[i] = g.X[i] * g.S[i];
        else if (!strcmp(g.auto_pad, "valid")) y[i] = F;
        else y[i] = F - g.pb[i] - g.pe[i];
    }
    out[0] = g.N;
    out[g.nxc ? *nd - 1 : 1] = g.Cout;
    for (int i = 0; i < g.nsp; i++) out[g.nxc ? 1 + i : 2 + i] = y[i];
    return 1;
}

/* Outputs of the ConvolutionBackwardData ops, inferred again. */
static void reinfer_outputs(doc_t *d, json_t *orig_ops,
        const unsigned char *dst_shape_given) {
    size_t i;
    json_t *op;
    json_array_foreach(d->ops, i, op) {
        if (!is_cbd(op)) continue;
        json_t *outs = json_object_get(op, "outputs"), *o = json_array_get(outs, 0);
        json_t *ins = json_object_get(op, "inputs");
        int64_t dims[DGRAD_MAX_NDIMS];
        int nd;
        if (!json_is_object(o) || !infer_output(op, json_array_get(orig_ops, i),
                    i < 256 && dst_shape_given[i], dims, &nd))
            continue; /* the graph reader reports what is wrong */
        json_t *dst = json_object_get(json_object_get(op, "attrs"), "dst_shape");
        int64_t v[CF_MAX_LIST];
        int n = op_ints(op, "dst_shape", v, CF_MAX_LIST, 0), zero = 1;
        for (int k = 0; k < n; k++) zero = zero && v[k] == 0;
        if (json_is_object(dst) && !zero) /* rewritten to match */
            json_object_set_new(dst, "value", ints_json(dims, nd));
        tensor_info_t *t = tensor(d, json_integer_value(json_object_get(o, "id")));
        tensor_info_t *in0 = tensor(d, json_integer_value(json_object_get(
                json_array_get(ins, 0), "id")));
        char tag[DGRAD_MAX_NDIMS + 1] = "";
        if (d->change_stride && in0) snprintf(tag, sizeof tag, "%s", in0->tag);
        else if (t) snprintf(tag, sizeof tag, "%s", t->tag);
        if (t) snprintf(t->tag, sizeof t->tag, "%s", tag);
        set_tensor(d, json_integer_value(json_object_get(o, "id")), dims, nd, tag);
    }
}

/* --mb=N: N of each ConvolutionBackwardData op's data input. */
static void rewrite_mb(doc_t *d, long long mb) {
    size_t i;
    json_t *op;
    json_array_foreach(d->ops, i, op) {
        if (!is_cbd(op)) continue;
        json_t *x = json_array_get(json_object_get(op, "inputs"), 0);
        tensor_info_t *t = tensor(d, json_integer_value(json_object_get(x, "id")));
        int64_t dims[DGRAD_MAX_NDIMS];
        int nd = lt_dims(x, dims);
        if (!t || t->produced || nd < 1) continue;
        dims[0] = mb;
        t->rewritten = 1;
        set_tensor(d, t->id, dims, nd, t->tag);
    }
}

/* --------------------------------------------- running one case line */

/* Forwards the graph reader's findings, with the line's type and its
 * batch file as the suite; counts what the line gave. */
typedef struct proxy {
    cf_sink_t sink; /* first: the reader calls through it */
    cf_sink_t *down;
    const char *suite;
    dgrad_data_type_t run_dt;
    int cases, skips, errors;
} proxy_t;

static void proxy_case(cf_sink_t *s, const cf_case_t *c) {
    proxy_t *p = (proxy_t *)s;
    cf_case_t *copy = malloc(sizeof *copy);
    if (!copy) return;
    *copy = *c; /* graph cases own no data */
    snprintf(copy->suite, sizeof copy->suite, "%s", p->suite);
    copy->run_dt = p->run_dt;
    p->cases++;
    p->down->on_case(p->down, copy);
    free(copy);
}

static void proxy_skip(cf_sink_t *s, const char *suite, const char *name,
        const char *reason) {
    (void)suite, (void)name, (void)reason;
    ((proxy_t *)s)->skips++; /* one skip per line names the kinds */
}

static void proxy_error(cf_sink_t *s, const char *suite, const char *message) {
    proxy_t *p = (proxy_t *)s;
    (void)suite;
    p->errors++;
    p->down->on_error(p->down, p->suite, message);
}

/* Kinds of the graph's ops, for the skip message. */
static void kinds_of(json_t *ops, char *buf, size_t size) {
    size_t i, used = 0;
    json_t *op;
    buf[0] = '\0';
    json_array_foreach(ops, i, op) {
        const char *k = json_string_value(json_object_get(op, "kind"));
        if (!k || !strcmp(k, CBD) || strstr(buf, k)) continue;
        if (used + strlen(k) + 8 >= size) {
            snprintf(buf + used, size - used, ", ...");
            return;
        }
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                used ? ", " : "", k);
    }
}

/* Settings of one run: one alternative of each option (as text: they are
 * checked only when the case holds an op dgrad runs). */
typedef struct run {
    char dt[BATCH_VALUE], mb[BATCH_VALUE];
    char in_shapes[BATCH_VALUE], op_attrs[BATCH_VALUE];
} run_t;

static int parse_dt_alt(batch_t *b, at_t at, char *alt, dgrad_data_type_t *dt);

/* Runs @p root (the case as loaded) with @p r; @p label names the line. */
static void run_alternative(batch_t *b, at_t at, json_t *root,
        const run_t *r, const char *label) {
    doc_t *d = calloc(1, sizeof *d);
    if (!d) {
        berr(b, at, "out of memory", "reading %s", label);
        return;
    }
    d->root = json_deep_copy(root);
    d->ops = json_object_get(d->root, "graph");
    unsigned char dst_shape_given[256] = {0};
    dgrad_data_type_t dt = dgrad_data_type_undef;
    long long mb = 0;
    int shapes = r->in_shapes[0] || r->mb[0];
    int rewrites = shapes || r->op_attrs[0];
    /* Without an op dgrad runs the line is a skip, whatever its rewrites
     * would do to ops of other kinds (whose rules dgrad does not know):
     * the graph reader still sees the file, to report what is malformed
     * and kinds that look like misspellings. */
    size_t i;
    json_t *op;
    int runs = 0;
    json_array_foreach(d->ops, i, op) runs += is_cbd(op);
    if (!runs) rewrites = shapes = 0;
    char dt_text[BATCH_VALUE];
    snprintf(dt_text, sizeof dt_text, "%s", r->dt);
    int ok = !runs || parse_dt_alt(b, at, dt_text, &dt);
    if (ok && runs && r->mb[0] && (!parse_long(r->mb, &mb) || mb < 0))
        ok = berr(b, at, "bad value", "--mb '%s': expected a non-negative "
                "integer", r->mb);
    char in_shapes[BATCH_VALUE], op_attrs[BATCH_VALUE];
    snprintf(in_shapes, sizeof in_shapes, "%s", r->in_shapes);
    snprintf(op_attrs, sizeof op_attrs, "%s", r->op_attrs);
    if (ok && rewrites && !index_tensors(d))
        ok = berr(b, at, "too large", "%s: the graph has more than %d tensors "
                "to rewrite", label, MAX_TENSORS);
    if (ok && rewrites && json_is_array(d->ops)) {
        ok = rewrite_in_shapes(b, at, d, in_shapes)
                && rewrite_op_attrs(b, at, d, op_attrs, dst_shape_given);
        if (ok && mb > 0) rewrite_mb(d, mb);
        if (ok) reinfer_outputs(d, json_object_get(root, "graph"), dst_shape_given);
    }
    proxy_t p = {{proxy_case, proxy_skip, proxy_error}, b->sink, at.file, dt,
            0, 0, 0};
    if (ok && shapes) { /* ops fed by other ops: their inputs are stale */
        for (i = 0; i < json_array_size(d->ops);) {
            op = json_array_get(d->ops, i);
            json_t *x = json_array_get(json_object_get(op, "inputs"), 0);
            tensor_info_t *t = tensor(d, json_integer_value(json_object_get(x, "id")));
            if (is_cbd(op) && t && t->produced) {
                char name[CF_NAME + 32];
                snprintf(name, sizeof name, "%s#op%lld", label,
                        (long long)json_integer_value(json_object_get(op, "id")));
                b->sink->on_skip(b->sink, at.file, name, "its diff_dst is "
                        "computed by another op, and dgrad conform infers no "
                        "other op's shapes after --in-shapes or --mb");
                json_array_remove(d->ops, i);
                p.cases++; /* reported: not a line without ops */
                continue;
            }
            i++;
        }
    }
    if (ok) {
        jctx_t j = {&p.sink, label, 0};
        cf_graph_from_json(&j, d->root);
        b->errors += p.errors;
        char kinds[256], reason[512];
        kinds_of(d->ops, kinds, sizeof kinds);
        if (!p.cases && !p.errors) {
            snprintf(reason, sizeof reason, "the case holds no op dgrad runs "
                    "(%s; dgrad runs " CBD ")", kinds[0] ? kinds : "no op");
            b->sink->on_skip(b->sink, at.file, label, reason);
        } else if (p.skips) {
            snprintf(reason, sizeof reason, "ops of other kinds in the case "
                    "are not run (%s)", kinds);
            b->sink->on_skip(b->sink, at.file, label, reason);
        }
    }
    json_decref(d->root);
    free(d);
}

/* Splits an option's alternatives (',': an empty one means the default). */
static int alternatives(char *value, char **alts, int max) {
    if (!value[0]) {
        alts[0] = value;
        return 1;
    }
    return split(value, ',', alts, max);
}

/* --dt: a plain type list, or ID:DT[+ID:DT] (then one type for all). */
static int parse_dt_alt(batch_t *b, at_t at, char *alt, dgrad_data_type_t *dt) {
    *dt = dgrad_data_type_undef;
    if (!alt[0]) return 1;
    if (!strchr(alt, ':')) {
        if (!parse_dtype(alt, dt))
            return berr(b, at, "bad value", "--dt '%s': expected f32, bf16, "
                    "f16 or undef", alt);
        return 1;
    }
    char *items[64];
    int n = split(alt, '+', items, 64);
    for (int i = 0; i < n; i++) {
        char *c = strchr(items[i], ':');
        dgrad_data_type_t t;
        if (!c || !parse_dtype(c + 1, &t) || t == dgrad_data_type_undef)
            return berr(b, at, "bad value", "--dt '%s': expected ID:DT with "
                    "DT f32, bf16 or f16", items[i]);
        if (*dt && t != *dt)
            return berr(b, at, "unsupported", "--dt gives tensors different "
                    "types (%s and %s): a dgrad op runs in one type",
                    dgrad_data_type_name(*dt), dgrad_data_type_name(t));
        *dt = t;
    }
    return 1;
}

static void run_case(batch_t *b, at_t at, const char *name) {
    char path[CF_WHERE], label[CF_NAME];
    if (!resolve(b, at, "--case=", name, path, sizeof path)) return;
    snprintf(label, sizeof label, "%s:%d:%s", at.file, at.line, name);
    json_error_t e;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        berr(b, at, e.line < 0 ? "unreadable" : "malformed JSON",
                "%s:%d:%d: %s", path, e.line, e.column, e.text);
        return;
    }
    settings_t s = b->s; /* split in place, the settings stay */
    char *dts[16], *mbs[16], *shapes[16], *attrs[16];
    int ndt = alternatives(s.dt, dts, 16), nmb = alternatives(s.mb, mbs, 16),
        nsh = alternatives(s.in_shapes, shapes, 16),
        nat = alternatives(s.op_attrs, attrs, 16);
    if (ndt < 0 || nmb < 0 || nsh < 0 || nat < 0) {
        berr(b, at, "too large", "more than 16 alternatives in one option");
        json_decref(root);
        return;
    }
    run_t *r = malloc(sizeof *r);
    int k = 0, n = ndt * nmb * nsh * nat;
    for (int a = 0; r && a < ndt; a++)
        for (int m = 0; m < nmb; m++)
            for (int i = 0; i < nsh; i++)
                for (int o = 0; o < nat; o++, k++) {
                    snprintf(r->dt, sizeof r->dt, "%s", dts[a]);
                    snprintf(r->mb, sizeof r->mb, "%s", mbs[m]);
                    snprintf(r->in_shapes, sizeof r->in_shapes, "%s", shapes[i]);
                    snprintf(r->op_attrs, sizeof r->op_attrs, "%s", attrs[o]);
                    char alt_label[CF_NAME];
                    if (n > 1)
                        snprintf(alt_label, sizeof alt_label, "%s:%d.%d:%s",
                                at.file, at.line, k + 1, name);
                    else
                        snprintf(alt_label, sizeof alt_label, "%s", label);
                    run_alternative(b, at, root, r, alt_label);
                }
    free(r);
    json_decref(root);
}

/* ------------------------------------------------------------ tokens */

static int read_batch(batch_t *b, const char *path, at_t from);

static void option(batch_t *b, at_t at, const char *tok) {
    static const struct {
        const char *name;
        size_t offset;
    } settings[] = {{"--dt=", offsetof(settings_t, dt)},
            {"--in-shapes=", offsetof(settings_t, in_shapes)},
            {"--op-attrs=", offsetof(settings_t, op_attrs)},
            {"--mb=", offsetof(settings_t, mb)}};
    if (!strcmp(tok, "--reset")) {
        memset(&b->s, 0, sizeof b->s);
        return;
    }
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        size_t n = strlen(settings[i].name);
        if (strncmp(tok, settings[i].name, n)) continue;
        if (strlen(tok + n) >= BATCH_VALUE) {
            berr(b, at, "too large", "%.*s value is longer than %d bytes",
                    (int)n - 1, tok, BATCH_VALUE - 1);
            return;
        }
        snprintf((char *)&b->s + settings[i].offset, BATCH_VALUE, "%s", tok + n);
        return;
    }
    if (!strncmp(tok, "--case=", 7)) {
        run_case(b, at, tok + 7);
        return;
    }
    if (!strncmp(tok, "--batch=", 8)) {
        char path[CF_WHERE];
        if (resolve(b, at, "--batch=", tok + 8, path, sizeof path))
            read_batch(b, path, at);
        return;
    }
    if (is_ignored(tok)) return;
    if (tok[0] == '-')
        berr(b, at, "unknown option", "'%.64s' is not a benchdnn graph option "
                "dgrad conform knows (it reads --reset, --dt, --in-shapes, "
                "--op-attrs, --mb, --case, --batch and ignores %s)", tok,
                cf_batch_ignored_options());
    else
        berr(b, at, "unexpected word", "'%.64s' (a case is given as "
                "--case=FILE)", tok);
}

static int read_batch(batch_t *b, const char *path, at_t from) {
    if (b->depth >= BATCH_MAX_DEPTH)
        return berr(b, from, "too deep", "--batch files nested deeper than %d "
                "(does one name itself?)", BATCH_MAX_DEPTH);
    FILE *f = fopen(path, "rb");
    if (!f) return berr(b, from, "unreadable", "%s: %s", path, strerror(errno));
    char *text = malloc((size_t)BATCH_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, (size_t)BATCH_MAX_BYTES + 1, f) : 0;
    fclose(f);
    at_t at = {path, 0};
    if (!text || n > (size_t)BATCH_MAX_BYTES) {
        free(text);
        return berr(b, at, "too large", "a batch file is at most %ld bytes",
                BATCH_MAX_BYTES);
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        free(text);
        return berr(b, at, "unreadable", "a batch file is text (this one holds "
                "NUL bytes)");
    }
    /* Words (continuations joined) with the line each starts on, then the
     * options they make, in order. */
    char *joined = malloc(n + 1);
    int *lines = malloc((n / 2 + 2) * sizeof *lines);
    char **words = malloc((n / 2 + 2) * sizeof *words);
    if (!joined || !lines || !words) {
        free(text), free(joined), free(lines), free(words);
        return berr(b, at, "out of memory", "reading the batch file");
    }
    size_t used = 0, nw = 0;
    int continued = 0;
    char *line = text;
    while (line) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        at.line++;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\f\v", &save); tok;
                tok = strtok_r(NULL, " \t\r\f\v", &save)) {
            if (tok[0] == '#') break; /* the rest of the line is a comment */
            size_t len = strlen(tok);
            int more = tok[len - 1] == '\\';
            if (more) len--;
            if (continued && nw) {
                used--; /* extends the previous word over its NUL */
            } else {
                lines[nw] = at.line;
                words[nw++] = joined + used;
            }
            memcpy(joined + used, tok, len);
            used += len;
            joined[used++] = '\0';
            continued = more;
        }
        line = next;
    }
    free(text);
    b->depth++;
    for (size_t w = 0; w < nw; w++) {
        at.line = lines[w];
        if (words[w][0]) option(b, at, words[w]);
    }
    b->depth--;
    free(joined), free(lines), free(words);
    return 1;
}

int cf_read_batch_file(const char *path, const char *inputs_dir,
        cf_sink_t *sink) {
    batch_t *b = calloc(1, sizeof *b);
    if (!b) {
        cf_sink_errorf(sink, path, path, "out of memory", "reading the batch");
        return 1;
    }
    b->sink = sink;
    b->inputs_dir = inputs_dir;
    at_t none = {path, 0};
    read_batch(b, path, none);
    int errors = b->errors;
    free(b);
    return errors;
}
