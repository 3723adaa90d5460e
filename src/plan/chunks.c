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

/* Axis @p a of a blocked-format md can be cut into boxes: it is not in an
 * inner block and not padded. */
static int axis_splittable(const dnnl_memory_desc_t *md, int a) {
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    for (int i = 0; i < b->inner_nblks; i++)
        if (b->inner_idxs[i] == a) return 0;
    return md->padded_dims[a] == md->dims[a] && md->padded_offsets[a] == 0;
}

/* The md of a box of @p ext elements per axis of @p parent, at its origin
 * (same strides and blocks; split axes are never blocked or padded). */
static void box_md(const dnnl_memory_desc_t *parent, const dnnl_dims_t ext,
        dnnl_memory_desc_t *md) {
    *md = *parent;
    for (int i = 0; i < parent->ndims; i++)
        if (ext[i] != parent->dims[i]) md->dims[i] = md->padded_dims[i] = ext[i];
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
int plan_chunks(const dnnl_memory_desc_t *from,
        const dnnl_memory_desc_t *to, int64_t limit, chunking_t *ch) {
    if (from->format_kind != dnnl_blocked || to->format_kind != dnnl_blocked
            || from->ndims != to->ndims || from->offset0 || to->offset0
            || from->extra.flags || to->extra.flags)
        return 0;
    memset(ch, 0, sizeof *ch);
    ch->ndims = from->ndims;
    ch->from_elsize = dnnl_data_type_size(from->data_type);
    ch->to_elsize = dnnl_data_type_size(to->data_type);
    for (int i = 0; i < ch->ndims; i++) {
        ch->ext[i] = from->dims[i];
        ch->from_stride[i] = from->format_desc.blocking.strides[i];
        ch->to_stride[i] = to->format_desc.blocking.strides[i];
    }
    for (;;) {
        box_md(from, ch->ext, &ch->from_md);
        box_md(to, ch->ext, &ch->to_md);
        if ((int64_t)dnnl_memory_desc_get_size(&ch->from_md) < limit
                && (int64_t)dnnl_memory_desc_get_size(&ch->to_md) < limit)
            break;
        int a = -1;
        int64_t widest = 0;
        for (int i = 0; i < ch->ndims; i++) {
            int64_t w = ch->from_stride[i] > ch->to_stride[i]
                    ? ch->from_stride[i] : ch->to_stride[i];
            if (ch->ext[i] > 1 && axis_splittable(from, i)
                    && axis_splittable(to, i) && w > widest) {
                widest = w;
                a = i;
            }
        }
        if (a < 0) return 0;
        ch->ext[a] /= smallest_factor(ch->ext[a]);
    }
    for (int i = 0; i < ch->ndims; i++)
        ch->count[i] = from->dims[i] / ch->ext[i];
    return 1;
}
