/*
 * A oneDNN Graph file's graph as a whole (graph_chain.c): every op read
 * as a graph compiler hands it to graph_partition, and the chain of
 * post-ops that follows an op dgrad runs, by the fusion rules of
 * dgrad_plugin.h as the conformance reader reads them.
 */
#ifndef DGRAD_CONFORM_GRAPH_CHAIN_H
#define DGRAD_CONFORM_GRAPH_CHAIN_H

#include "json_common.h"

/* Every op of @p ops (a graph file's "graph" array) into @p g, leniently:
 * what is malformed is the graph reader's to report, op by op; here an op
 * without an integer id or a kind is left out, a tensor without an
 * integer id too, a type dgrad does not know is undef, attributes become
 * text (numbers, lists, strings, booleans). 0 when out of memory. */
int cf_graph_read(json_t *ops, cf_graph_t *g);

/* The chain that follows op @p op_id of @p g into case @p c (whose op,
 * inputs and output are the op's): each link is the only consumer of the
 * chain so far, has one output, takes the chain first (either input of
 * Add, Multiply, Maximum, Minimum), its other input from outside the
 * chain, is a post-op the conformance model accepts with its attributes
 * and operand, and leaves the output's dims as they are; at most
 * DGRAD_MAX_POST_OPS links. Fills c->post (operands in the run's type),
 * c->graph, c->graph_op_id, c->graph_output_id and c->output (the last
 * link's). Returns the number of links. */
int cf_graph_chain(const cf_graph_t *g, size_t op_id, cf_case_t *c);

#endif
