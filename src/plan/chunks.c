/*
 * Reorders run piece by piece: oneDNN 2.6 has jit reorders only for
 * tensors under 2^31 bytes and falls back to its generic one (some 30x
 * slower; 33 s for the 3D specification example's 2.9 GB output) beyond.
 * To see it: ONEDNN_VERBOSE=1 prints each reorder's implementation and
 * time; a policy with chunk_bytes above the tensor's size keeps the whole
 * reorder (tests/test_onednn.c builds both kinds).
 * Each chunk is a box of both plain tensors; one primitive serves every
 * chunk (see chunking_t).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <string.h>

/* Axis @p a of a blocked layout can be cut into boxes: it is not in an
 * inner block and not padded. */
static int axis_splittable(const md_layout_t *l, int a) {
    for (int i = 0; i < l->inner_nblks; i++)
        if (l->inner_idxs[i] == a) return 0;
    return l->padded_dims[a] == l->dims[a] && l->padded_offsets[a] == 0;
}

static int64_t smallest_factor(int64_t n) {
    for (int64_t f = 2; f * f <= n; f++)
        if (n % f == 0) return f;
    return n;
}

/* Splits a reorder into chunks of at most @p limit bytes in both
 * tensors: the splittable axis with the largest stride (either tensor) is
 * divided by its smallest factor until they fit, so that the chunks tile
 * the tensors exactly. Returns 0 when it cannot. */
int plan_chunks(md_ref_t from, md_ref_t to, int64_t limit,
        chunking_t *ch) {
    md_layout_t f, t;
    memset(ch, 0, sizeof *ch);
    if (!md_layout(from, &f) || !md_layout(to, &t) || f.ndims != t.ndims
            || f.offset0 || t.offset0)
        return 0;
    ch->ndims = f.ndims;
    ch->from_elsize = dnnl_data_type_size(f.dt);
    ch->to_elsize = dnnl_data_type_size(t.dt);
    for (int i = 0; i < ch->ndims; i++) {
        ch->ext[i] = f.dims[i];
        ch->from_stride[i] = f.strides[i];
        ch->to_stride[i] = t.strides[i];
    }
    for (;;) {
        /* A box that oneDNN refuses (a split through a block) ends the
         * search: the reorder then runs whole. */
        if (ACQUIRE(md_box(&ch->from_md, from, ch->ext)) != dnnl_success
                || ACQUIRE(md_box(&ch->to_md, to, ch->ext)) != dnnl_success)
            break;
        if ((int64_t)md_size(md_ref(&ch->from_md)) < limit
                && (int64_t)md_size(md_ref(&ch->to_md)) < limit) {
            for (int i = 0; i < ch->ndims; i++)
                ch->count[i] = f.dims[i] / ch->ext[i];
            return 1;
        }
        int a = -1;
        int64_t widest = 0;
        for (int i = 0; i < ch->ndims; i++) {
            int64_t w = ch->from_stride[i] > ch->to_stride[i]
                    ? ch->from_stride[i] : ch->to_stride[i];
            if (ch->ext[i] > 1 && axis_splittable(&f, i)
                    && axis_splittable(&t, i) && w > widest) {
                widest = w;
                a = i;
            }
        }
        if (a < 0) break;
        ch->ext[a] /= smallest_factor(ch->ext[a]);
    }
    chunking_free(ch);
    return 0;
}

void chunking_free(chunking_t *ch) {
    md_free(&ch->from_md);
    md_free(&ch->to_md);
}
