/*
 * The sweep generator's rooms: sweep.c (the core matrix and the invalid
 * cases of the ops themselves) and sweep_chain.c (post-op chains on them,
 * and invalid chains).
 */
#ifndef DGRAD_CONFORM_SWEEP_H
#define DGRAD_CONFORM_SWEEP_H

#include "conform.h"

/* Value of knob @p salt for case j, in [0, n): scrambled so that knobs do
 * not move in lockstep. */
int cf_sweep_knob(unsigned j, unsigned salt, int n);

/* Appends a random chain of 0 to 3 post-ops to valid case @p c (case
 * number @p j) whose output has dims @p out (@p R of them, dialect order;
 * channels last when @p nxc), and describes it in @p label ("" when the
 * chain is empty). */
void cf_sweep_chain(unsigned j, cf_case_t *c, const int64_t *out, int R,
        int nxc, char *label, size_t size);

/* Invalid chains: their number, and the @p i-th on @p c (a valid base
 * case of cf_sweep_invalid_chain_kind(i) with output dims 1x6x6x6, NCX,
 * and for the ConvTranspose ops no bias), with the status dgrad must
 * return and a label. */
int cf_sweep_invalid_chains(void);
dgrad_op_kind_t cf_sweep_invalid_chain_kind(int i);
void cf_sweep_invalid_chain(int i, cf_case_t *c, const char **label);

#endif
