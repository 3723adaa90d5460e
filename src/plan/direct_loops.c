/*
 * dgrad's own loops (direct.c, direct_dw.c, direct_blocks.c,
 * direct_row_vectors.c, direct_phase_pair.c, direct_phase_pair_amx.c,
 * direct_gemm_rows.c):
 * which one
 * applies to a plan, and the calls a plan and its executions make of
 * its loop, each passed on to that loop's file.
 */
#include "plan_impl.h"
#include "direct_phase_pair.h"

/* With @p kind 0, the rows loop where it applies, else the depthwise
 * channels-last one, else the blocks one, else the row vectors one, else
 * the phase pair one, else its AMX form, else the gemm rows one (several
 * apply to small problems of few channels per group; timing builds each,
 * challenge_with_direct). */
int direct_applicable(const dgrad_plan_t *plan, int kind) {
    int rows = (!kind || kind == DIRECT_ROWS) && direct_rows_applicable(plan);
    if (rows) return DIRECT_ROWS;
    if ((!kind || kind == DIRECT_DEPTHWISE_CL) && direct_dw_applicable(plan))
        return DIRECT_DEPTHWISE_CL;
    if ((!kind || kind == DIRECT_BLOCKS_CL) && direct_blocks_applicable(plan))
        return DIRECT_BLOCKS_CL;
    if ((!kind || kind == DIRECT_ROW_VECTORS)
            && direct_row_vectors_applicable(plan))
        return DIRECT_ROW_VECTORS;
    if ((!kind || kind == DIRECT_PHASE_PAIR)
            && direct_phase_pair_applicable(plan))
        return DIRECT_PHASE_PAIR;
    if ((!kind || kind == DIRECT_PHASE_PAIR_AMX)
            && direct_phase_pair_amx_applicable(plan))
        return DIRECT_PHASE_PAIR_AMX;
    if ((!kind || kind == DIRECT_GEMM_ROWS)
            && direct_gemm_rows_applicable(plan))
        return DIRECT_GEMM_ROWS;
    return 0;
}

int direct_avx2_differs(const dgrad_plan_t *plan) {
    if (plan->direct == DIRECT_ROWS) return direct_rows_avx2_differs(plan);
    /* the row vectors loop's AVX2 form runs only where AVX-512 is
     * missing (its 16 lanes hold the same rows in fewer calls); the phase
     * pair loop is AVX-512 (and AMX) only */
    if (plan->direct == DIRECT_ROW_VECTORS || plan->direct == DIRECT_PHASE_PAIR
            || plan->direct == DIRECT_PHASE_PAIR_AMX)
        return 0;
    if (plan->direct == DIRECT_GEMM_ROWS) return 0; /* sgemm picks its own */
    return cpu_has_avx2_fma() && cpu_has_avx512f();
}

/* Scratch of an execution: one part per thread, for as many threads as
 * the caller's OpenMP setting gives now (executions never run more:
 * direct_run), then a part they share. Returns the bytes, the thread count in @p threads. */
size_t direct_scratch_size(const dgrad_plan_t *plan, int *threads) {
    *threads = direct_threads_max();
    if (plan->direct == DIRECT_ROW_VECTORS)
        return direct_row_vectors_scratch(plan);
    if (plan->direct == DIRECT_PHASE_PAIR)
        return direct_phase_pair_scratch(plan);
    if (plan->direct == DIRECT_PHASE_PAIR_AMX)
        return direct_phase_pair_amx_scratch(plan);
    size_t per_thread = plan->direct == DIRECT_DEPTHWISE_CL
            ? direct_dw_thread_scratch(&plan->p)
            : plan->direct == DIRECT_BLOCKS_CL
            ? direct_blocks_thread_scratch(plan)
            : plan->direct == DIRECT_GEMM_ROWS
            ? direct_gemm_rows_thread_scratch(plan)
            : direct_rows_thread_scratch(plan);
    return per_thread * (size_t)*threads
            + (plan->direct == DIRECT_BLOCKS_CL
                            ? direct_blocks_shared_scratch(plan)
                            : 0);
}

int direct_prepare(dgrad_plan_t *plan) {
    switch (plan->direct) {
    case DIRECT_BLOCKS_CL: return direct_blocks_prepare(plan);
    case DIRECT_ROW_VECTORS: return direct_row_vectors_prepare(plan);
    case DIRECT_PHASE_PAIR: return direct_phase_pair_prepare(plan);
    case DIRECT_PHASE_PAIR_AMX: return direct_phase_pair_amx_prepare(plan);
    default: return 1;
    }
}

size_t direct_weights_size(const dgrad_plan_t *plan) {
    switch (plan->direct) {
    case DIRECT_DEPTHWISE_CL: return direct_dw_weights_size(&plan->p);
    case DIRECT_BLOCKS_CL: return direct_blocks_weights_size(plan);
    case DIRECT_ROW_VECTORS: return direct_row_vectors_weights_size(plan);
    case DIRECT_PHASE_PAIR: return direct_phase_pair_weights_size(plan);
    case DIRECT_PHASE_PAIR_AMX:
        return direct_phase_pair_amx_weights_size(plan);
    case DIRECT_GEMM_ROWS: return direct_gemm_rows_weights_size(&plan->p);
    default: return direct_rows_weights_size(&plan->p);
    }
}

int direct_packs_into(const dgrad_plan_t *plan) {
    return plan->direct != DIRECT_BLOCKS_CL
            || direct_blocks_packs_shared(plan);
}

void direct_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    switch (plan->direct) {
    case DIRECT_DEPTHWISE_CL:
        direct_dw_pack_weights(plan, user, packed);
        break;
    case DIRECT_BLOCKS_CL:
        direct_blocks_pack_weights(plan, user, packed);
        break;
    case DIRECT_ROW_VECTORS:
        direct_row_vectors_pack_weights(plan, user, packed);
        break;
    case DIRECT_PHASE_PAIR:
        direct_phase_pair_pack_weights(plan, user, packed);
        break;
    case DIRECT_PHASE_PAIR_AMX:
        direct_phase_pair_amx_pack_weights(plan, user, packed);
        break;
    case DIRECT_GEMM_ROWS:
        direct_gemm_rows_pack_weights(plan, user, packed);
        break;
    default: direct_rows_pack_weights(plan, user, packed);
    }
}

int direct_taps_init(dgrad_plan_t *plan) {
    switch (plan->direct) {
    case DIRECT_DEPTHWISE_CL: return direct_dw_taps_init(plan);
    case DIRECT_BLOCKS_CL: /* no tap tables */
    case DIRECT_ROW_VECTORS:
    case DIRECT_PHASE_PAIR:
    case DIRECT_PHASE_PAIR_AMX:
    case DIRECT_GEMM_ROWS: return 1;
    default: return direct_rows_taps_init(plan);
    }
}

int direct_rounds_output(const dgrad_plan_t *plan) {
    return plan->direct == DIRECT_BLOCKS_CL
            && direct_blocks_rounds_output(plan);
}

int direct_widens_input(const dgrad_plan_t *plan) {
    return plan->direct == DIRECT_BLOCKS_CL
            && direct_blocks_widens_input(plan);
}

void direct_run(const dgrad_plan_t *plan, const void *in, const void *w,
        float *pack_into, const float *bias, const void *const *operands,
        void *out, void *round_into, const void *widen_from,
        char *scratch) {
    if (plan->direct == DIRECT_BLOCKS_CL) {
        direct_blocks_run(plan, in, w, pack_into, bias, operands, out,
                round_into, widen_from, scratch);
        return;
    }
    if (pack_into) {
        direct_pack_weights(plan, w, pack_into);
        w = pack_into;
    }
    switch (plan->direct) {
    case DIRECT_DEPTHWISE_CL:
        direct_dw_run(plan, in, (const float *)w, bias, operands, out,
                scratch);
        break;
    case DIRECT_ROW_VECTORS:
        direct_row_vectors_run(plan, in, (const float *)w, bias, out,
                scratch);
        break;
    case DIRECT_PHASE_PAIR:
        direct_phase_pair_run(plan, in, (const float *)w, bias, out,
                scratch);
        break;
    case DIRECT_PHASE_PAIR_AMX:
        direct_phase_pair_amx_run(plan, in, (const float *)w, bias, out,
                scratch);
        break;
    case DIRECT_GEMM_ROWS:
        direct_gemm_rows_run(plan, (const float *)in, (const float *)w, bias,
                operands, (float *)out, scratch);
        break;
    default:
        direct_rows_run(plan, in, (const float *)w, bias, operands, out,
                scratch);
    }
}
