/*
 * The own loops' rows shared out over the OpenMP threads (direct.c's
 * rows loop, direct_dw.c's depthwise loop, direct_blocks.c's loop): each
 * thread a contiguous share of the rows, handed out in runs along the
 * last outer axis, tile by tile of that axis where the plan stages rows
 * in tiles.
 */
#include "plan_impl.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int direct_threads_max(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* The counter over the rows' steps (direct_for_rows): its axes,
 * outermost first, and what a step's position means. */
typedef struct rows_counter {
    int64_t dim[DGRAD_MAX_SPATIAL + 1], steps, tile;
    int nd, l, tiled;
    const int64_t *Y;
} rows_counter_t;

void direct_share_of(int64_t n, int64_t th, int64_t nth, int64_t *begin,
        int64_t *end) {
    *begin = n * th / nth;
    *end = n * (th + 1) / nth;
}

/* Thread @p th of @p nth: its contiguous share of the steps, counted on
 * from its first step (no division per row). */
static void rows_share(const rows_counter_t *k, int64_t th, int64_t nth,
        char *mine, direct_row_fn fn, void *arg) {
    int nd = k->nd, l = k->l, tiled = k->tiled;
    const int64_t *dim = k->dim;
    int64_t begin, end;
    direct_share_of(k->steps, th, nth, &begin, &end);
    int64_t rest = begin, c[DGRAD_MAX_SPATIAL + 1] = {0},
            y[DGRAD_MAX_SPATIAL] = {0};
    for (int i = nd - 1; i >= 0; i--) {
        c[i] = rest % dim[i];
        rest /= dim[i];
    }
    for (int64_t step = begin; step < end;) {
        for (int i = 0; i < l; i++) y[i] = c[i + tiled];
        if (tiled) y[l - 1] += c[0] * k->tile;
        /* the run: the share's steps left on the innermost axis (the
         * last outer one), of which a last tile may pass the axis */
        int64_t run = nd ? dim[nd - 1] - c[nd - 1] : 1;
        if (run > end - step) run = end - step;
        int64_t inside = tiled && y[l - 1] + run > k->Y[l - 1]
                ? k->Y[l - 1] - y[l - 1]
                : run;
        if (inside > 0) fn(arg, rest, y, inside, mine);
        step += run;
        if (nd) c[nd - 1] += run - 1;
        int i = nd - 1;
        while (i >= 0 && ++c[i] == dim[i]) c[i--] = 0;
        if (i < 0) rest++;
    }
}

/* Shares @p rows rows of the output (index: image and whatever the
 * caller puts outside the outer spatial positions, then those) out over
 * the OpenMP threads, at most the plan's direct_threads (its scratch has
 * a part for each, @p per_thread bytes) and only where @p work (about a
 * multiply-add each) is worth the fork; @p fn gets the index without the
 * outer positions, the positions, how many positions from there on the
 * last outer axis it is to do (the run: in 1D one), and the thread's
 * scratch. With a
 * @p tile (0: none) of the last outer axis, in 3D and up, the positions
 * go tile by tile of that axis, each tile over the other outer axes.
 * Work not worth the fork runs on the calling thread outside any OpenMP
 * region: libgomp's region of one thread still allocates its team and
 * wakes the pool (a `malloc`, a `free` and a `futex` call each time,
 * 13% of the 1D example's execution under `perf`). */
void direct_for_rows(const dgrad_plan_t *plan, int64_t rows, int64_t tile,
        double work, size_t per_thread, char *scratch, direct_row_fn fn,
        void *arg) {
    direct_for_rows_after(plan, rows, tile, work, per_thread, scratch, NULL,
            0, fn, arg);
}

void direct_for_rows_after(const dgrad_plan_t *plan, int64_t rows,
        int64_t tile, double work, size_t per_thread, char *scratch,
        direct_first_fn first, int first_shared, direct_row_fn fn,
        void *arg) {
    const dgrad_problem_t *p = &plan->p;
    int threads = direct_threads_max();
    if (threads > plan->direct_threads) threads = plan->direct_threads;
    rows_counter_t k = {.l = p->nsp - 1, .tile = tile, .Y = p->Y};
    int l = k.l;
    int64_t outer = 1;
    k.tiled = l >= 2 && tile > 0 && tile < p->Y[l - 1];
    if (k.tiled) k.dim[k.nd++] = (p->Y[l - 1] + tile - 1) / tile;
    for (int i = 0; i < l; i++) {
        k.dim[k.nd++] = k.tiled && i == l - 1 ? tile : p->Y[i];
        outer *= p->Y[i];
    }
    k.steps = rows / outer;
    for (int i = 0; i < k.nd; i++) k.steps *= k.dim[i];
    if (!(work > 1e5 && threads > 1)) {
        if (first) first(arg, 0, 1);
        rows_share(&k, 0, 1, scratch, fn, arg);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        int th = omp_get_thread_num(), nth = omp_get_num_threads();
        if (first) first(arg, th, nth);
        if (first && first_shared) {
#pragma omp barrier
        }
        rows_share(&k, th, nth, scratch + per_thread * (size_t)th, fn, arg);
    }
#else
    if (first) first(arg, 0, 1);
    rows_share(&k, 0, 1, scratch, fn, arg);
#endif
}
