/*
 * The rows loop's tap tables (direct.c): where each phase of the last
 * axis starts and what it reads, which taps reach each output position
 * of the outer axes, and the windows of 3 at stride 2 whose phases can
 * share input loads.
 */
#include "direct_rows.h"

#include <stdint.h>

int64_t direct_phase_geometry(const dgrad_problem_t *p, int64_t r,
        int64_t *count, int64_t *q0) {
    int l = p->nsp - 1;
    int64_t S = p->S[l], Y = p->Y[l], a = ((r - p->PB[l]) % S + S) % S;
    *count = a < Y ? (Y - 1 - a) / S + 1 : 0;
    *q0 = (a + p->PB[l] - r) / S;
    return a;
}

/* Tap tables, made once per plan so that building a row's terms takes
 * no division. Per outer axis i and output position y: the count of taps
 * reaching it, then (k, input position) pairs; per phase r of the last
 * axis: the count, then (k, t) pairs. Laid out one after the other:
 * outer axes at their offsets, each entry 1 + 2*K wide. */
int64_t direct_taps_width(const dgrad_problem_t *p, int i) {
    return 1 + 2 * p->K[i];
}

int64_t *direct_position_taps(const dgrad_problem_t *p, int i, int64_t *t) {
    for (int64_t y = 0; y < p->Y[i]; y++, t += direct_taps_width(p, i))
        for (int64_t k = 0; k < p->K[i]; k++) {
            int64_t num = y + p->PB[i] - p->D[i] * k;
            if (num < 0 || num % p->S[i] || num / p->S[i] >= p->X[i])
                continue;
            t[1 + 2 * t[0]] = k;
            t[2 + 2 * t[0]] = num / p->S[i];
            t[0]++;
        }
    return t;
}

/* The entry of outer axis @p i's table for output position @p y. */
const int64_t *direct_outer_taps(const dgrad_plan_t *plan, int i,
        int64_t y) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *tab = plan->direct_taps;
    for (int j = 0; j < i; j++) tab += p->Y[j] * direct_taps_width(p, j);
    return tab + y * direct_taps_width(p, i);
}

const int64_t *direct_last_taps(const dgrad_plan_t *plan, int64_t r) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    return direct_outer_taps(plan, l, 0) + r * direct_taps_width(p, l);
}

/* The phase of stride 2 (0 even, 1 odd) with one tap whose input run
 * the other phase's second (even) or first (odd) of two taps reads as
 * well, or -1: where the last axis has such taps (windows of 3 at
 * stride 2 and dilation 1: the tap table lists k ascending, and with odd
 * padding the even phase has k = 1 alone, the odd one k = 0 and 2, k = 2
 * reading k = 1's run; with even padding the other way round, k = 0
 * reading k = 1's). A term of phase r reads its row from q0 - tx
 * (direct.c's row_terms). */
int direct_shared_taps(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    if (p->S[l] != 2 || p->Y[l] < 2) return -1;
    int64_t count, q, q0[2];
    const int64_t *t[2];
    for (int64_t r = 0; r < 2; r++) { /* even output positions first */
        int ph = direct_phase_geometry(p, r, &count, &q) != 0;
        q0[ph] = q;
        t[ph] = direct_last_taps(plan, r);
    }
    for (int one = 0; one < 2; one++) {
        const int64_t *a = t[one], *b = t[!one];
        int64_t shared = one ? 0 : 1; /* of b's two taps */
        if (a[0] == 1 && b[0] == 2
                && q0[!one] - b[2 + 2 * shared] == q0[one] - a[2])
            return one;
    }
    return -1;
}
