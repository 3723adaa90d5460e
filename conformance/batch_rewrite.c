/*
 * The graph document of a batch line's run and its rewrites. Rewrites
 * happen on the parsed JSON document (jansson), as benchdnn does them,
 * before the graph reader sees it:
 * - --in-shapes changes the dims and strides of graph inputs (tensors no op
 *   of the graph produces). A TAG (letters a, b, c, ... outermost first)
 *   gives the strides; without one a tensor keeps the tag of its file
 *   strides (sorted by decreasing stride, ties in dims order), or takes
 *   the plain tag when its rank changes.
 * - --op-attrs may only change attributes the op has (benchdnn's rule),
 *   with the attribute's own type (s64[] values are written 2x2).
 * - --mb=N sets N of the data input of each op dgrad runs
 *   (ConvolutionBackwardData, ConvTranspose).
 * The outputs are inferred again afterwards (batch_outputs.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_batch.h"

/* --------------------------------------------------- graph documents */

/* The dims of a logical tensor object (-1 when they are not a list). */
int batch_lt_dims(json_t *lt, int64_t *dims) {
    json_t *s = json_object_get(lt, "shape");
    if (!json_is_array(s) || json_array_size(s) > DGRAD_MAX_NDIMS) return -1;
    for (size_t i = 0; i < json_array_size(s); i++)
        dims[i] = json_integer_value(json_array_get(s, i));
    return (int)json_array_size(s);
}

json_t *batch_ints_json(const int64_t *v, int n) {
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


tensor_info_t *batch_tensor(doc_t *d, int64_t id) {
    for (int i = 0; i < d->n; i++)
        if (d->t[i].id == id) return &d->t[i];
    return NULL;
}

/* Calls @p visit on every logical tensor object of the graph's ops (each
 * op's inputs, then its outputs) that has an integer id; stops at the
 * first visit that returns 0, and returns 0 then. */
typedef int lt_visit_fn(json_t *lt, int64_t id, int is_output, void *arg);

static int for_each_lt(doc_t *d, lt_visit_fn *visit, void *arg) {
    static const char *const sides[] = {"inputs", "outputs"};
    size_t i, k;
    json_t *op, *lt;
    if (!json_is_array(d->ops)) return 1;
    json_array_foreach(d->ops, i, op) for (int s = 0; s < 2; s++) {
        json_t *lts = json_object_get(op, sides[s]);
        if (!json_is_array(lts)) continue;
        json_array_foreach(lts, k, lt) {
            json_t *id = json_object_get(lt, "id");
            if (json_is_integer(id)
                    && !visit(lt, json_integer_value(id), s == 1, arg))
                return 0;
        }
    }
    return 1;
}

static int index_one(json_t *lt, int64_t id, int is_output, void *arg) {
    doc_t *d = arg;
    tensor_info_t *t = batch_tensor(d, id);
    if (!t) {
        if (d->n == MAX_TENSORS) return 0;
        t = &d->t[d->n++];
        memset(t, 0, sizeof *t);
        t->id = id;
        int64_t dims[DGRAD_MAX_NDIMS];
        int nd = batch_lt_dims(lt, dims);
        tag_of(lt, nd < 0 ? 0 : nd, t->tag);
    }
    t->produced |= is_output;
    return 1;
}

int batch_index_tensors(doc_t *d) {
    d->n = 0;
    return for_each_lt(d, index_one, d);
}

/* A new shape of one tensor, for every occurrence of its id. */
typedef struct new_shape {
    int64_t id;
    const int64_t *dims;
    int nd;
    int64_t strides[DGRAD_MAX_NDIMS];
} new_shape_t;

static int set_one(json_t *lt, int64_t id, int is_output, void *arg) {
    const new_shape_t *n = arg;
    if (id != n->id) return 1;
    json_object_set_new(lt, "shape", batch_ints_json(n->dims, n->nd));
    json_t *layout = json_object_get(lt, "layout_type");
    if (!json_is_string(layout) || strcmp(json_string_value(layout), "any"))
        json_object_set_new(lt, "stride", batch_ints_json(n->strides, n->nd));
    return 1;
}

/* An occurrence of tensor @p id as an op's input. */
typedef struct input {
    int64_t id;
    json_t *lt;
} input_t;

static int find_input(json_t *lt, int64_t id, int is_output, void *arg) {
    input_t *in = arg;
    if (!is_output && id == in->id) in->lt = lt;
    return 1;
}

void batch_set_tensor(doc_t *d, int64_t id, const int64_t *dims, int nd,
        const char *tag) {
    new_shape_t n = {id, dims, nd, {0}};
    tag_strides(tag, dims, nd, n.strides);
    for_each_lt(d, set_one, &n);
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

static int kind_is(json_t *op, const char *kind) {
    json_t *k = json_object_get(op, "kind");
    return json_is_string(k) && !strcmp(json_string_value(k), kind);
}

int batch_is_cbd(json_t *op) { return kind_is(op, CBD); }
int batch_is_ct(json_t *op) { return kind_is(op, CT); }
int batch_is_run(json_t *op) { return batch_is_cbd(op) || batch_is_ct(op); }

/* ---------------------------------------------------- the rewrites */

/* An "ID:REST" item of a '+'-separated option value. */
#define MAX_ITEMS 64
typedef struct id_item {
    long long id;
    char *rest; /* after the colon, not empty */
} id_item_t;

/* Splits @p alt (in place) into the items of @p option, each naming the
 * id of a @p what; 0 after an error (@p form: what an item looks like). */
static int id_items(batch_t *b, at_t at, char *alt, const char *option,
        const char *what, const char *form, id_item_t *items, int *n) {
    char *texts[MAX_ITEMS];
    *n = *alt ? batch_split(alt, '+', texts, MAX_ITEMS) : 0;
    if (*n < 0)
        return batch_err(b, at, "too large", "%s: more than %d %ss", option,
                MAX_ITEMS, what);
    for (int i = 0; i < *n; i++) {
        char *colon = strchr(texts[i], ':');
        if (!colon || !colon[1])
            return batch_err(b, at, "bad value", "%s '%s': expected %s",
                    option, texts[i], form);
        *colon = '\0';
        items[i].rest = colon + 1;
        if (!batch_parse_long(texts[i], &items[i].id))
            return batch_err(b, at, "bad value", "%s: %s id '%s' is not an "
                    "integer", option, what, texts[i]);
    }
    return 1;
}

/* --in-shapes alternative: ID:SHAPE[*TAG] / ID:TAG / ID:- / ID:0, '+'. */
int batch_rewrite_in_shapes(batch_t *b, at_t at, doc_t *d, char *alt) {
    id_item_t items[MAX_ITEMS];
    int n;
    if (!id_items(b, at, alt, "--in-shapes", "tensor",
                "ID:SHAPE[*TAG] (e.g. 0:1x32x28x28*acdb)", items, &n))
        return 0;
    for (int i = 0; i < n; i++) {
        long long id = items[i].id;
        char *val = items[i].rest;
        tensor_info_t *t = batch_tensor(d, id);
        if (!t || t->produced)
            return batch_err(b, at, "bad value", "--in-shapes: tensor %lld is not "
                    "an input of the graph", id);
        input_t in = {id, NULL}; /* any occurrence gives the current dims */
        for_each_lt(d, find_input, &in);
        json_t *lt = in.lt;
        int64_t old[DGRAD_MAX_NDIMS], dims[DGRAD_MAX_NDIMS];
        int old_nd = batch_lt_dims(lt, old), nd = old_nd;
        if (old_nd < 0)
            return batch_err(b, at, "bad value", "--in-shapes: tensor %lld has no "
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
        } else if (shape && !batch_parse_dims_x(shape, dims, DGRAD_MAX_NDIMS, &nd)) {
            return batch_err(b, at, "bad value", "--in-shapes: '%s' of tensor %lld "
                    "is not a shape NUMxNUMx... (at most %d dims)", shape, id,
                    DGRAD_MAX_NDIMS);
        }
        if (tag && (!tag[0] || !valid_tag(tag, nd)))
            return batch_err(b, at, "bad value", "--in-shapes: tag '%s' of tensor "
                    "%lld is not a permutation of the first %d letters", tag,
                    id, nd);
        if (tag && strcmp(tag, t->tag)) d->change_stride = 1;
        if (!tag && nd != old_nd) d->change_stride = 1;
        if (tag) snprintf(t->tag, sizeof t->tag, "%s", tag);
        else if (nd != old_nd) t->tag[0] = '\0'; /* plain */
        t->rewritten = 1;
        batch_set_tensor(d, id, dims, nd, t->tag);
    }
    return 1;
}

/* One attribute value in the attribute's own type. */
static int set_attr_value(batch_t *b, at_t at, long long id, json_t *attr,
        const char *name, const char *val) {
    const char *type = json_string_value(json_object_get(attr, "type"));
    long long x;
    if (!type)
        return batch_err(b, at, "bad value", "--op-attrs: attribute '%s' of op %lld "
                "has no type in the case", name, id);
    if (!strcmp(type, "string")) {
        json_object_set_new(attr, "value", json_string(val));
    } else if (!strcmp(type, "s64")) {
        if (!batch_parse_long(val, &x))
            return batch_err(b, at, "bad value", "--op-attrs: %s of op %lld is s64, "
                    "'%s' is not an integer", name, id, val);
        json_object_set_new(attr, "value", json_integer(x));
    } else if (!strcmp(type, "s64[]")) {
        int64_t v[CF_MAX_LIST];
        int n;
        if (!batch_parse_dims_x(val, v, CF_MAX_LIST, &n))
            return batch_err(b, at, "bad value", "--op-attrs: %s of op %lld is "
                    "s64[], '%s' is not NUMxNUM... (at most %d values)", name,
                    id, val, CF_MAX_LIST);
        json_object_set_new(attr, "value", batch_ints_json(v, n));
    } else if (!strcmp(type, "bool")) {
        int t = !strcmp(val, "true") || !strcmp(val, "1");
        if (!t && strcmp(val, "false") && strcmp(val, "0"))
            return batch_err(b, at, "bad value", "--op-attrs: %s of op %lld is "
                    "bool, '%s' is not true or false", name, id, val);
        json_object_set_new(attr, "value", json_boolean(t));
    } else if (!strcmp(type, "f32")) {
        char *end;
        double f = strtod(val, &end);
        if (end == val || *end)
            return batch_err(b, at, "bad value", "--op-attrs: %s of op %lld is f32, "
                    "'%s' is not a number", name, id, val);
        json_object_set_new(attr, "value", json_real(f));
    }
    /* Other types (f32[]) belong to ops dgrad does not run: left as the
     * case has them. */
    return 1;
}

/* --op-attrs alternative: ID:NAME:VALUE[*NAME:VALUE][+ID:...]; marks in
 * @p dst_shape_given the ops (by position) whose dst_shape it set. */
int batch_rewrite_op_attrs(batch_t *b, at_t at, doc_t *d, char *alt,
        unsigned char *dst_shape_given) {
    id_item_t items[MAX_ITEMS];
    int n;
    if (!id_items(b, at, alt, "--op-attrs", "op",
                "ID:NAME:VALUE[*NAME:VALUE...]", items, &n))
        return 0;
    for (int i = 0; i < n; i++) {
        long long id = items[i].id;
        json_t *op = op_by_id(d, id);
        if (!op)
            return batch_err(b, at, "bad value", "--op-attrs: the case has no op "
                    "with id %lld", id);
        char *pairs[64];
        int np = batch_split(items[i].rest, '*', pairs, 64);
        if (np < 0)
            return batch_err(b, at, "too large", "--op-attrs: more than 64 "
                    "attributes for op %lld", id);
        for (int k = 0; k < np; k++) {
            char *c2 = strchr(pairs[k], ':');
            if (!c2 || c2 == pairs[k] || !c2[1])
                return batch_err(b, at, "bad value", "--op-attrs '%s': expected "
                        "NAME:VALUE", pairs[k]);
            *c2 = '\0';
            json_t *attr = json_object_get(json_object_get(op, "attrs"), pairs[k]);
            if (!json_is_object(attr))
                return batch_err(b, at, "bad value", "--op-attrs: op %lld has no "
                        "attribute '%s' (benchdnn only rewrites attributes "
                        "the op has)", id, pairs[k]);
            if (!set_attr_value(b, at, id, attr, pairs[k], c2 + 1)) return 0;
            if (!strcmp(pairs[k], "dst_shape") && batch_is_cbd(op)) {
                int64_t v[CF_MAX_LIST];
                int nv, zero = 1;
                batch_parse_dims_x(c2 + 1, v, CF_MAX_LIST, &nv);
                for (int z = 0; z < nv; z++) zero = zero && v[z] == 0;
                size_t pos = 0;
                while (json_array_get(d->ops, pos) != op) pos++;
                if (pos < 256) dst_shape_given[pos] = !zero;
            }
        }
    }
    return 1;
}


/* --mb=N: N of the data input of each op dgrad runs (benchdnn sets it on
 * every graph input that has a batch; the others are not run here). */
void batch_rewrite_mb(doc_t *d, long long mb) {
    size_t i;
    json_t *op;
    json_array_foreach(d->ops, i, op) {
        if (!batch_is_run(op)) continue;
        json_t *x = json_array_get(json_object_get(op, "inputs"), 0);
        tensor_info_t *t = batch_tensor(d, json_integer_value(json_object_get(x, "id")));
        int64_t dims[DGRAD_MAX_NDIMS];
        int nd = batch_lt_dims(x, dims);
        if (!t || t->produced || nd < 1) continue;
        dims[0] = mb;
        t->rewritten = 1;
        batch_set_tensor(d, t->id, dims, nd, t->tag);
    }
}
