#!/usr/bin/env bash
# `dgrad conform` on oneDNN's own benchdnn graph harness, unchanged: the
# batch files and cases of tests/benchdnn/inputs/graph are extracted from
# the oneDNN source tarball into a temporary folder and run as a user would
# run them (--inputs-dir <that folder>): the CI harness (test_graph_ci, which
# nests op/harness_f32_ci and others), the bf16 and f16 op harnesses (every
# ConvolutionBackwardData line of oneDNN's op harnesses, among them
# --op-attrs=0:output_padding:2x2 on op/f32/conv_bwd_d_2d.json), and that
# output_padding line once more without its --dt (so in f32 too), taken
# from the harness; and every line of oneDNN's harnesses that names a
# ConvTranspose case outside those files (op/f32/deconv.json in the f32 op
# harness: auto_pad, output_padding 1x1, NXC, XOI; the pattern harnesses'
# convtranspose cases: each ConvTranspose with the chain of post-ops after
# it (Square; Add then Multiply; Add of a full tensor; Add of a scalar)
# as one fused partition through graph_partition, also on the lines that
# rewrite the quantized patterns' shapes, whose Dequantize outputs are
# inferred again; the quantization ops are skipped). Requires 0 failed
# and at least one passed, and every fused pattern to pass.
#
# Usage: check-onednn-harness.sh PATH/TO/dgrad PATH/TO/oneDNN-X.Y.Z.tar.xz
# Exit 77 (skipped under ctest) when the tarball is absent.
set -euo pipefail
dgrad="$1"
tarball="$2"
if [ ! -r "$tarball" ]; then
    echo "SKIP: oneDNN source tarball not found at $tarball" \
        "(its benchdnn graph harness is what this test runs)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp" --wildcards '*/tests/benchdnn/inputs/graph/*'
inputs=$(echo "$tmp"/*/tests/benchdnn/inputs/graph)
[ -d "$inputs" ] || { echo "FAIL: no tests/benchdnn/inputs/graph in $tarball"; exit 1; }

line=$(grep -h -- '--op-attrs=0:output_padding:2x2 --case=op/f32/conv_bwd_d_2d.json' \
    "$inputs"/op/harness_*_all | head -1)
[ -n "$line" ] || { echo "FAIL: the output_padding line is not in oneDNN's harness"; exit 1; }
sed 's/--dt=[a-z0-9]* //' <<<"$line" >"$tmp/output_padding_f32"
echo "benchdnn's line without --dt: $(cat "$tmp/output_padding_f32")"

# oneDNN Graph's ConvTranspose (dgrad's onednn:ConvTranspose): the lines of
# the harnesses not run whole above that name its cases, as they are.
{ grep -h -- 'deconv\.json' "$inputs"/op/harness_f32_all
  grep -h -- 'convtranspose' "$inputs"/pattern/harness_*_all; } \
    >"$tmp/conv_transpose_lines" || true
n_ct=$(wc -l <"$tmp/conv_transpose_lines")
[ "$n_ct" -ge 8 ] || { echo "FAIL: only $n_ct ConvTranspose lines in oneDNN's harness"; exit 1; }
echo "benchdnn's ConvTranspose lines: $n_ct"

status=0
out=$("$dgrad" conform -v --inputs-dir "$inputs" "$inputs/test_graph_ci" \
    "$inputs/op/harness_bf16_all" "$inputs/op/harness_f16_all" \
    "$tmp/output_padding_f32" "$tmp/conv_transpose_lines" 2>&1) || status=$?
grep -E '^(PASS|FAIL)' <<<"$out" | sed "s|$inputs/||g"
last=$(tail -1 <<<"$out")
echo "$last"
if [ "$status" -ne 0 ] || ! grep -qE '^[1-9][0-9]* passed, 0 failed, [0-9]+ skipped$' <<<"$last"; then
    echo "FAIL: dgrad conform on oneDNN's harness (status $status)"
    grep -vE '^(PASS|SKIP)' <<<"$out" | head -20
    exit 1
fi
# The output_padding line ran, in f32 and in the types the harness asks for.
for dt in f32 bf16 f16; do
    if ! grep -qE "^PASS [^ ]*conv_bwd_d_2d.json#op0:CONV_0 $dt native ok" <<<"$out"; then
        echo "FAIL: conv_bwd_d_2d.json did not pass in $dt"
        exit 1
    fi
done
grep -qE "^PASS [^ ]*output_padding_f32:1:op/f32/conv_bwd_d_2d.json#op0:CONV_0 f32 native ok" <<<"$out" \
    || { echo "FAIL: benchdnn's output_padding 2x2 line did not pass in f32"; exit 1; }
# Every deconv.json line ran: in f32 (its f32 harness, as extracted), bf16
# and f16 (their op harnesses), each the 7 lines (as is, SAME_UPPER,
# SAME_LOWER, VALID, output_padding 1x1, NXC, XOI).
for dt in f32 bf16 f16; do
    n=$(grep -cE "^PASS [^ ]*:op/f32/deconv.json#op0:DECONV_0 $dt native ok" <<<"$out" || true)
    if [ "$n" -lt 7 ]; then
        echo "FAIL: op/f32/deconv.json (ConvTranspose) passed on $n lines in $dt, not 7"
        exit 1
    fi
done
for dt in f32 bf16 f16; do
    grep -qE "^PASS [^ ]*pattern/f32/convtranspose_post_ops_fusion.json#op0:DECONV_0 $dt native ok" <<<"$out" \
        || { echo "FAIL: pattern/f32/convtranspose_post_ops_fusion.json did not pass in $dt"; exit 1; }
done
# The quantized patterns' ConvTranspose with its chain, one fused
# partition (the f32 pattern file holds the ConvTranspose alone), in each
# type, on at least one line each.
for fused in 'int8_convtranspose_post_ops_square_fusion.json#op5:DECONV_0\+op6150:Square' \
        'int8_convtranspose_post_ops_chain_fusion.json#op5:DECONV_0\+op6145:Add\+op10241:Multiply' \
        'int8_convtranspose_post_ops_sum_fusion.json#op5:DECONV_0\+op6159:Add' \
        'int8_convtranspose_post_ops_add_fusion.json#op5:DECONV_0\+op6145:Add' \
        'int8_convtranspose_post_ops_sum_fusion_2.json#op5:DECONV_0\+op6159:Add'; do
    for dt in f32 bf16 f16; do
        grep -qE "^PASS [^ ]*pattern/int8/$fused $dt native ok" <<<"$out" \
            || { echo "FAIL: the fused partition ${fused//\\/} did not pass in $dt"; exit 1; }
    done
done
echo "ok"
