/*
 * Fused partitions, as a graph compiler gets them: a graph file's case
 * (an op dgrad runs and the chain of post-ops the graph reader found
 * after it) is not built op by op but taken from graph_partition with
 * DGRAD_PLUGIN_PARTITION_FUSE over the file's whole graph. The partition
 * that starts with the case's op must hold exactly the reader's chain, in
 * order, take the op's inputs and then each operand, and end at the
 * chain's output: the reader reads the fusion rules of dgrad_plugin.h on
 * its own (graph_chain.c), so a difference is a finding, reported with
 * both readings ("fusion_mismatch"). Its op is then compiled with the
 * case's tensors in the partition's input order, and run and judged as
 * any case.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad_plugin.h"
#include "runner.h"

static const cf_graph_op_t *op_by_id(const cf_graph_t *g, size_t id) {
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].id == id) return &g->ops[i];
    return NULL;
}

/* The logical tensor of a file tensor that is not one of the case's own:
 * as the file has it, in @p dt when it is an intermediate result of the
 * chain (computed in the run's type like the rest of it). */
static void file_lt(const cf_graph_lt_t *f, dgrad_data_type_t dt,
        dgrad_logical_tensor_t *lt) {
    cf_lt_fill(lt, f->id, dt ? dt : f->dt, &f->t,
            f->constant ? dgrad_property_type_constant
                        : dgrad_property_type_variable);
}

/* Where the run's tensors are: the case's inputs (ids set to the file's),
 * its output, and the chain's intermediate results. */
typedef struct tensors {
    const run_inputs_t *ri;
    const dgrad_logical_tensor_t *olt;
    size_t inner[1 + CF_MAX_POST];
    int n_inner;
    dgrad_data_type_t dt;
} tensors_t;

static void lt_of(const tensors_t *t, const cf_graph_lt_t *f,
        dgrad_logical_tensor_t *lt) {
    for (size_t k = 0; k < t->ri->n; k++)
        if (t->ri->lts[k].id == f->id) {
            *lt = t->ri->lts[k];
            return;
        }
    if (f->id == t->olt->id) {
        *lt = *t->olt;
        return;
    }
    int inner = 0;
    for (int k = 0; k < t->n_inner; k++) inner |= t->inner[k] == f->id;
    file_lt(f, inner ? t->dt : dgrad_data_type_undef, lt);
}

static const char *ids(char *buf, size_t size, const size_t *v, size_t n) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu",
                i ? ", " : "", v[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

static int same_ids(const size_t *a, size_t na, const size_t *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The graph in plugin structs (arrays owned by the caller, freed with
 * free_graph). */
typedef struct plugin_graph {
    dgrad_plugin_graph_op_t *ops;
    dgrad_plugin_attr_t *attrs;
    dgrad_logical_tensor_t *lts;
} plugin_graph_t;

static void free_graph(plugin_graph_t *p) {
    free(p->ops);
    free(p->attrs);
    free(p->lts);
}

static int build_graph(const cf_graph_t *g, const tensors_t *t,
        plugin_graph_t *p) {
    size_t n_attrs = 0, n_lts = 0;
    for (int i = 0; i < g->n_ops; i++) {
        n_attrs += (size_t)g->ops[i].n_attrs;
        n_lts += (size_t)(g->ops[i].n_inputs + g->ops[i].n_outputs);
    }
    p->ops = calloc((size_t)g->n_ops + 1, sizeof *p->ops);
    p->attrs = calloc(n_attrs + 1, sizeof *p->attrs);
    p->lts = calloc(n_lts + 1, sizeof *p->lts);
    if (!p->ops || !p->attrs || !p->lts) return 0;
    size_t a = 0, l = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cf_graph_op_t *s = &g->ops[i];
        dgrad_plugin_graph_op_t *o = &p->ops[i];
        o->struct_size = sizeof *o;
        o->id = s->id;
        o->kind = s->kind;
        o->n_attrs = (size_t)s->n_attrs;
        o->attrs = &p->attrs[a];
        for (int k = 0; k < s->n_attrs; k++, a++) {
            p->attrs[a].struct_size = sizeof p->attrs[a];
            p->attrs[a].name = s->attrs[k].name;
            p->attrs[a].value = s->attrs[k].value;
        }
        o->n_inputs = (size_t)s->n_inputs;
        o->inputs = &p->lts[l];
        for (int k = 0; k < s->n_inputs; k++) lt_of(t, &s->inputs[k], &p->lts[l++]);
        o->n_outputs = (size_t)s->n_outputs;
        o->outputs = &p->lts[l];
        for (int k = 0; k < s->n_outputs; k++) lt_of(t, &s->outputs[k], &p->lts[l++]);
    }
    return 1;
}

static dgrad_status_t differs(cf_compiled_t *cc, char *msg, size_t size,
        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static dgrad_status_t differs(cf_compiled_t *cc, char *msg, size_t size,
        const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, size, fmt, args);
    va_end(args);
    cc->fusion_differs = 1;
    return dgrad_success;
}

dgrad_status_t cf_compile_fused(const cf_backend_t *be, const cf_case_t *c,
        dgrad_data_type_t dt, cf_compiled_t *cc, char *msg, size_t size) {
    cc->op = cc->compiled = cc->partitions = NULL;
    cc->fusion_differs = 0;
    cf_build_inputs(c, dt, &cc->ri);
    cf_lt_fill(&cc->olt, c->graph_output_id, dt, &c->output,
            dgrad_property_type_variable);
    const cf_graph_op_t *g0 = op_by_id(c->graph, c->graph_op_id);
    if (!g0 || (size_t)g0->n_inputs != cc->ri.n_own) {
        snprintf(msg, size, "internal: op %zu is not in the case's graph "
                "with %zu inputs", c->graph_op_id, cc->ri.n_own);
        return dgrad_invalid_arguments;
    }
    /* What the fusion rules give: the op's inputs, then each operand. */
    size_t want_in[3 + CF_MAX_POST], want_ops[1 + CF_MAX_POST];
    size_t n_in = 0, n_ops = 0;
    tensors_t t = {&cc->ri, &cc->olt, {0}, 0, dt};
    for (size_t k = 0; k < cc->ri.n_own; k++) want_in[n_in++] = g0->inputs[k].id;
    want_ops[n_ops++] = g0->id;
    t.inner[t.n_inner++] = g0->outputs[0].id;
    for (int i = 0; i < c->n_post; i++) {
        want_ops[n_ops++] = c->post[i].graph_id;
        if (c->post[i].has_operand) want_in[n_in++] = c->post[i].operand_id;
        const cf_graph_op_t *p = op_by_id(c->graph, c->post[i].graph_id);
        if (p && p->n_outputs == 1) t.inner[t.n_inner++] = p->outputs[0].id;
    }
    for (size_t k = 0; k < n_in && k < cc->ri.n; k++) cc->ri.lts[k].id = want_in[k];

    plugin_graph_t pg = {NULL, NULL, NULL};
    if (!build_graph(c->graph, &t, &pg)) {
        free_graph(&pg);
        snprintf(msg, size, "out of memory building the graph");
        return dgrad_out_of_memory;
    }
    cf_partition_t part;
    dgrad_status_t st = be->partition_fused(be->ctx, (size_t)c->graph->n_ops,
            pg.ops, c->graph_op_id, &part, &cc->partitions);
    free_graph(&pg);
    if (st != dgrad_success) {
        snprintf(msg, size, "graph_partition (fused): %s", be->last_error(be->ctx));
        return st;
    }
    char a[160], b[160], x[160], y[160];
    if (!part.found)
        return differs(cc, msg, size, "graph_partition gave no partition "
                "starting with op %zu", c->graph_op_id);
    if (!part.claimed)
        return differs(cc, msg, size, "graph_partition left op %zu: %s",
                c->graph_op_id, part.reason);
    if (!same_ids(part.op_ids, part.n_op_ids, want_ops, n_ops)
            || !same_ids(part.input_ids, part.n_inputs, want_in, n_in)
            || part.output_id != c->graph_output_id)
        return differs(cc, msg, size, "dgrad's fused partition: ops %s, "
                "inputs %s, output %zu; the fusion rules of dgrad_plugin.h "
                "(as the conformance reader reads them): ops %s, inputs %s, "
                "output %zu",
                ids(a, sizeof a, part.op_ids, part.n_op_ids),
                ids(b, sizeof b, part.input_ids, part.n_inputs),
                part.output_id, ids(x, sizeof x, want_ops, n_ops),
                ids(y, sizeof y, want_in, n_in), c->graph_output_id);
    cc->op = (void *)part.op;
    st = be->compile(be->ctx, cc->op, cc->ri.n, cc->ri.lts, &cc->olt,
            &cc->compiled);
    if (st != dgrad_success)
        snprintf(msg, size, "compile (fused partition of ops %s): %s",
                ids(a, sizeof a, want_ops, n_ops), be->last_error(be->ctx));
    return st;
}
