/*
 * Small reorders as dgrad's own copies: the scatter into a plan's own
 * buffers, and the channel blocks copy.
 *
 * A plan whose weights are not constant reorders them into the kernel's
 * layout at every execution, and the input too where its layout is not
 * the kernel's. On tensors of a few KB oneDNN's reorder costs more than
 * its work: for masknet's 1,344 bf16 weights, oneDNN 2.6's `jit:uni`
 * reorder took 1.6 us on one thread and 2.8-4.3 on two, a scatter of the
 * elements to offsets computed once 0.6-1.0 (Intel Sapphire Rapids;
 * `build-rel/dgrad_fresh_weights`, bench/README.md "Weights written at
 * each execution"). The scatter zeroes the destination's padding, then
 * puts each element of the source at its place, on the calling thread.
 *
 * Where it is offered: a reorder into the plan's conv buffer (never into
 * the user's output, whose bytes outside the box must stay), of at most
 * SMALL_COPY_MAX_BYTES either side, between blocked layouts of one
 * 2-byte or 4-byte type. Beside it, and into the user's output too, the
 * channel blocks copy (channel_blocks.c) where the layouts are a plain
 * activation tensor and its 16-channel blocks. Where one is taken: where
 * it ran fastest, against oneDNN's reorder and each other, at planning
 * (the policy's small_copy 1), or wherever it is offered, the channel
 * blocks first (2: tests, DGRAD_SMALL_COPY=always); never with 0
 * (DGRAD_SMALL_COPY=0), nor with 1 when planning is untimed
 * (DGRAD_LAYOUT_SEARCH=0). All are timed on scratch buffers under the
 * plan's thread count, each round taking turns, the best round of each
 * kept. The scatter reads the source in its memory order from a table
 * of (source, destination) offsets made once: per-axis offsets summed
 * per element ran 2.8 us on masknet's weights, the table 0.6.
 *
 * A folded plan whose weights' reorder became the scatter folds the
 * weights in the same scatter (phase_fold.c, fuse_weights).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

/* Larger reorders keep oneDNN's: its kernels are threaded and vectorized,
 * and the scratch buffers of the timing stay small. */
#define SMALL_COPY_MAX_BYTES ((size_t)64 << 10)
#define SMALL_COPY_ROUNDS 5
#define SMALL_COPY_CALLS 8

void small_copy_run(const step_t *step, const void *from, void *to) {
    const int32_t *pair = step->own_pairs;
    int64_t n = step->own_count;
    if (step->own_to_padded) memset(to, 0, step->own_to_bytes);
    if (dnnl_data_type_size(step->own_to.dt) == 2) {
        const uint16_t *f = from;
        uint16_t *t = to;
        for (int64_t j = 0; j < n; j++) t[pair[2 * j + 1]] = f[pair[2 * j]];
    } else {
        const uint32_t *f = from;
        uint32_t *t = to;
        for (int64_t j = 0; j < n; j++) t[pair[2 * j + 1]] = f[pair[2 * j]];
    }
}

static int by_source(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The (source, destination) offset of every element, in the order of
 * the source's memory, from the step's per-axis tables (own_copy_make). */
static dnnl_status_t make_pairs(step_t *step) {
    const md_layout_t *t = &step->own_to;
    int nd = t->ndims;
    int64_t n = 1, idx[MAX_NDIMS] = {0};
    for (int a = 0; a < nd; a++) n *= t->dims[a];
    step->own_pairs = allocated(dgrad_malloc((size_t)(n > 0 ? 2 * n : 1)
            * sizeof *step->own_pairs));
    if (!step->own_pairs) return dnnl_out_of_memory;
    step->own_count = n;
    for (int64_t j = 0; j < n; j++) {
        int64_t fo = step->own_from.offset0, to_off = t->offset0;
        for (int a = 0; a < nd; a++) {
            fo += step->own_tab[a][idx[a]];
            to_off += step->own_tab[a][t->padded_dims[a] + idx[a]];
        }
        step->own_pairs[2 * j] = (int32_t)fo;
        step->own_pairs[2 * j + 1] = (int32_t)to_off;
        for (int a = nd - 1; a >= 0 && ++idx[a] == t->dims[a]; a--)
            idx[a] = 0;
    }
    /* The pairs are all the scatter reads. */
    for (int a = 0; a < MAX_NDIMS; a++) {
        free(step->own_tab[a]);
        step->own_tab[a] = NULL;
    }
    small_copy_sort(step);
    return dnnl_success;
}

/* Reads in ascending order: the source streams through the cache, the
 * writes land in a destination a few KB large. */
void small_copy_sort(step_t *step) {
    qsort(step->own_pairs, (size_t)step->own_count,
            2 * sizeof *step->own_pairs, by_source);
}

/* Whether dgrad's own copies may stand in for a reorder from @p from to
 * @p to (each then checks its own fit). */
static int offered(const dgrad_plan_t *plan, const step_t *step,
        md_ref_t from, md_ref_t to) {
    md_layout_t f, t;
    int knob = plan->policy.small_copy;
    /* Untimed planning (layout_search 0) keeps oneDNN's reorder, as it
     * keeps oneDNN's first implementation of everything. */
    if (knob == 0 || (knob == 1 && !plan->policy.layout_search)
            || step->own || step->n_chunks > 1
            || !step->prim || !md_layout(from, &f) || !md_layout(to, &t))
        return 0;
    size_t es = dnnl_data_type_size(t.dt);
    return f.ndims == t.ndims && t.ndims <= MAX_NDIMS && f.dt == t.dt
            && (es == 2 || es == 4) && t.offset0 == 0
            && md_size(from) <= SMALL_COPY_MAX_BYTES
            && md_size(to) <= SMALL_COPY_MAX_BYTES;
}

/* The best of SMALL_COPY_ROUNDS rounds, in microseconds per call, of
 * oneDNN's reorder (@p times[0]) and of each of @p n own copies @p owns
 * (@p times[1 + i]; NULL ones not timed, INFINITY), all on @p r's
 * buffers. */
static dnnl_status_t time_all(const step_t *step, const step_t *const *owns,
        int n, const scratch_reorder_t *r, double *times) {
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i <= n; i++) times[i] = INFINITY;
    double us_per_call = 1e3 / SMALL_COPY_CALLS; /* from ms a batch */
    for (int round = -1; round < SMALL_COPY_ROUNDS && s == dnnl_success;
            round++) {
        /* Round -1 warms them up, untimed. */
        double t0 = now_ms();
        for (int i = 0; i < SMALL_COPY_CALLS && s == dnnl_success; i++)
            s = scratch_reorder_run(r, step);
        double t1 = now_ms();
        if (round >= 0) times[0] = fmin(times[0], (t1 - t0) * us_per_call);
        for (int k = 0; k < n; k++) {
            if (!owns[k]) continue;
            t0 = now_ms();
            for (int i = 0; i < SMALL_COPY_CALLS; i++)
                own_reorder_run(owns[k], r->from, r->to);
            t1 = now_ms();
            if (round >= 0)
                times[1 + k] = fmin(times[1 + k], (t1 - t0) * us_per_call);
        }
    }
    return s;
}

/* The scatter from @p from to @p to into @p scatter. */
static dnnl_status_t scatter_make(step_t *scatter, md_ref_t from,
        md_ref_t to) {
    dnnl_status_t s = own_copy_make(scatter, from, to);
    if (s == dnnl_success) s = make_pairs(scatter);
    if (s != dnnl_success) return s;
    int64_t padded = 1, count = 1;
    for (int a = 0; a < scatter->own_to.ndims; a++) {
        padded *= scatter->own_to.padded_dims[a];
        count *= scatter->own_to.dims[a];
    }
    scatter->own = OWN_COPY_SCATTER;
    scatter->own_to_padded = padded != count;
    scatter->own_to_bytes = md_size(to);
    snprintf(scatter->impl, sizeof scatter->impl, "dgrad:scatter");
    return dnnl_success;
}

/* The channel blocks copy (channel_blocks.c) into @p blocks where it
 * fits; returns whether it does. */
static int channel_blocks_make(step_t *blocks, md_ref_t from, md_ref_t to) {
    if (!md_layout(from, &blocks->own_from) || !md_layout(to, &blocks->own_to)
            || !channel_blocks_fits(&blocks->own_from, &blocks->own_to))
        return 0;
    blocks->own = OWN_COPY_CHANNEL_BLOCKS;
    blocks->n_chunks = 1;
    snprintf(blocks->impl, sizeof blocks->impl, "dgrad:channel_blocks");
    return 1;
}

dnnl_status_t small_copy_offer(const dgrad_plan_t *plan, step_t *step,
        md_ref_t from, md_ref_t to, int into_user) {
    if (!offered(plan, step, from, to)) return dnnl_success;
    step_t own[2] = {{0}, {0}};
    int fits = channel_blocks_make(&own[1], from, to);
    if (into_user && !fits) return dnnl_success;
    int timed = plan->policy.small_copy == 1;
    /* the scatter never writes the user's output; untimed (policy 2) it
     * is only taken where the channel blocks do not fit */
    int scatter = !into_user && (timed || !fits);
    dnnl_status_t s = scatter ? scatter_make(&own[0], from, to)
                              : dnnl_success;
    /* times[0] oneDNN's reorder, then the scatter and the channel
     * blocks; untimed, the channel blocks where they fit, else the
     * scatter */
    double times[3] = {INFINITY, INFINITY, INFINITY};
    times[fits ? 2 : 1] = 0;
    if (s == dnnl_success && timed) {
        scratch_reorder_t r;
        const step_t *owns[2] = {scatter ? &own[0] : NULL,
                fits ? &own[1] : NULL};
        s = scratch_reorder_make(&r, step, from, to);
        if (s == dnnl_success) {
            memset(r.from, 0, md_size(from));
            s = time_all(step, owns, 2, &r, times);
        }
        scratch_reorder_free(&r);
        if (s == dnnl_success && layout_search_verbose())
            fprintf(stderr, "dgrad layout search: %zu bytes: reorder %s "
                    "%.2f us, dgrad:scatter %.2f us, "
                    "dgrad:channel_blocks %.2f us\n", md_size(to),
                    step->impl, times[0], times[1], times[2]);
    }
    int best = times[1] < times[0] ? 1 : 0;
    if (times[2] < times[best]) best = 2;
    if (s == dnnl_success && best) {
        step_free(step);
        *step = own[best - 1];
        own[best - 1] = (step_t){0};
    }
    step_free(&own[0]);
    step_free(&own[1]);
    return s;
}
