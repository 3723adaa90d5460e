/*
 * One --case= line of a batch file: a comma separates the alternatives of
 * each option, and each combination is one run of the case file, with its
 * rewrites (batch_rewrite.c, batch_outputs.c), handed to the graph reader.
 * --dt picks the one type the cases of the run run in. An op dgrad runs
 * (ConvolutionBackwardData, ConvTranspose) whose data input another op
 * computes is skipped when the line rewrites shapes, unless that op is an
 * element-wise one whose output batch_outputs.c infers again. A run whose
 * graph holds no op dgrad runs is a skip with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_batch.h"

/* A type ops compute in, or "undef" (*dt undef: the cases' own). */
static int parse_dtype(const char *s, dgrad_data_type_t *dt) {
    *dt = cf_data_type_named(s);
    if (!cf_is_compute_type(*dt)) *dt = dgrad_data_type_undef;
    return *dt != dgrad_data_type_undef || !strcmp(s, "undef");
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
    /* The ops skipped (the reader names them "...#op<id>:..."): the
     * links of a chain run with their op and are not among them. */
    long long skipped[64];
    int n_skipped;
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
    proxy_t *p = (proxy_t *)s;
    (void)suite, (void)reason;
    p->skips++; /* one skip per line names the kinds */
    const char *h = NULL;
    for (const char *f = strstr(name, "#op"); f; f = strstr(f + 1, "#op")) h = f;
    long long id;
    if (h && sscanf(h, "#op%lld", &id) == 1 && p->n_skipped < 64)
        p->skipped[p->n_skipped++] = id;
}

static void proxy_error(cf_sink_t *s, const char *suite, const char *message) {
    proxy_t *p = (proxy_t *)s;
    (void)suite;
    p->errors++;
    p->down->on_error(p->down, p->suite, message);
}

/* Kinds of the graph's ops that were skipped (all but the run ones when
 * @p p is NULL), for the skip message. */
static void kinds_of(json_t *ops, const proxy_t *p, char *buf, size_t size) {
    size_t i, used = 0;
    json_t *op;
    buf[0] = '\0';
    json_array_foreach(ops, i, op) {
        const char *k = json_string_value(json_object_get(op, "kind"));
        if (!k || batch_is_run(op) || strstr(buf, k)) continue;
        int skipped = !p;
        long long id = json_integer_value(json_object_get(op, "id"));
        for (int s = 0; p && s < p->n_skipped; s++) skipped |= p->skipped[s] == id;
        if (!skipped) continue;
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
        batch_err(b, at, "out of memory", "reading %s", label);
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
    json_array_foreach(d->ops, i, op) runs += batch_is_run(op);
    if (!runs) rewrites = shapes = 0;
    char dt_text[BATCH_VALUE];
    snprintf(dt_text, sizeof dt_text, "%s", r->dt);
    int ok = !runs || parse_dt_alt(b, at, dt_text, &dt);
    if (ok && runs && r->mb[0] && (!batch_parse_long(r->mb, &mb) || mb < 0))
        ok = batch_err(b, at, "bad value", "--mb '%s': expected a non-negative "
                "integer", r->mb);
    char in_shapes[BATCH_VALUE], op_attrs[BATCH_VALUE];
    snprintf(in_shapes, sizeof in_shapes, "%s", r->in_shapes);
    snprintf(op_attrs, sizeof op_attrs, "%s", r->op_attrs);
    if (ok && rewrites && !batch_index_tensors(d))
        ok = batch_err(b, at, "too large", "%s: the graph has more than %d tensors "
                "to rewrite", label, MAX_TENSORS);
    if (ok && rewrites && json_is_array(d->ops)) {
        ok = batch_rewrite_in_shapes(b, at, d, in_shapes)
                && batch_rewrite_op_attrs(b, at, d, op_attrs, dst_shape_given);
        if (ok && mb > 0) batch_rewrite_mb(d, mb);
        if (ok) batch_reinfer_outputs(d, json_object_get(root, "graph"), dst_shape_given);
    }
    proxy_t p = {{proxy_case, proxy_skip, proxy_error}, b->sink, at.file, dt,
            0, 0, 0, {0}, 0};
    if (ok && shapes) { /* ops fed by other ops: their inputs are stale */
        for (i = 0; i < json_array_size(d->ops);) {
            op = json_array_get(d->ops, i);
            json_t *x = json_array_get(json_object_get(op, "inputs"), 0);
            tensor_info_t *t = batch_tensor(d, json_integer_value(json_object_get(x, "id")));
            if (batch_is_run(op) && t && t->produced && !t->inferred) {
                char name[CF_NAME + 32];
                snprintf(name, sizeof name, "%s#op%lld", label,
                        (long long)json_integer_value(json_object_get(op, "id")));
                b->sink->on_skip(b->sink, at.file, name, "its data input "
                        "is computed by an op whose shapes dgrad conform "
                        "does not infer after --in-shapes or --mb (it infers "
                        "the element-wise ops')");
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
        kinds_of(d->ops, p.cases ? &p : NULL, kinds, sizeof kinds);
        if (!p.cases && !p.errors) {
            snprintf(reason, sizeof reason, "the case holds no op dgrad runs "
                    "(%s; dgrad runs " CBD " and " CT ")",
                    kinds[0] ? kinds : "no op");
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
    return batch_split(value, ',', alts, max);
}

/* --dt: a plain type list, or ID:DT[+ID:DT] (then one type for all). */
static int parse_dt_alt(batch_t *b, at_t at, char *alt, dgrad_data_type_t *dt) {
    *dt = dgrad_data_type_undef;
    if (!alt[0]) return 1;
    if (!strchr(alt, ':')) {
        if (!parse_dtype(alt, dt))
            return batch_err(b, at, "bad value", "--dt '%s': expected f32, bf16, "
                    "f16 or undef", alt);
        return 1;
    }
    char *items[64];
    int n = batch_split(alt, '+', items, 64);
    if (n < 0)
        return batch_err(b, at, "too large", "--dt: more than 64 tensors");
    for (int i = 0; i < n; i++) {
        char *c = strchr(items[i], ':');
        dgrad_data_type_t t;
        if (!c || !parse_dtype(c + 1, &t) || t == dgrad_data_type_undef)
            return batch_err(b, at, "bad value", "--dt '%s': expected ID:DT with "
                    "DT f32, bf16 or f16", items[i]);
        if (*dt && t != *dt)
            return batch_err(b, at, "unsupported", "--dt gives tensors different "
                    "types (%s and %s): a dgrad op runs in one type",
                    dgrad_data_type_name(*dt), dgrad_data_type_name(t));
        *dt = t;
    }
    return 1;
}

void batch_run_case(batch_t *b, at_t at, const char *name) {
    char path[CF_WHERE], label[CF_NAME];
    if (!batch_resolve_path(b, at, "--case=", name, path, sizeof path)) return;
    snprintf(label, sizeof label, "%s:%d:%s", at.file, at.line, name);
    json_error_t e;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        batch_err(b, at, e.line < 0 ? "unreadable" : "malformed JSON",
                "%s:%d:%d: %s", path, e.line, e.column, e.text);
        return;
    }
    settings_t s = b->s; /* split in place, the settings stay */
    char *dts[16], *mbs[16], *shapes[16], *attrs[16];
    int ndt = alternatives(s.dt, dts, 16), nmb = alternatives(s.mb, mbs, 16),
        nsh = alternatives(s.in_shapes, shapes, 16),
        nat = alternatives(s.op_attrs, attrs, 16);
    if (ndt < 0 || nmb < 0 || nsh < 0 || nat < 0) {
        batch_err(b, at, "too large", "more than 16 alternatives in one option");
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
