/*
 * The command line of `dgrad bench`: options (--opt value or --opt=value),
 * problems and batch files, read in order; the usage text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

#define MAX_REPS 100000

static const char *usage_text =
        "usage: dgrad bench [options] [PROBLEM...] [--batch FILE...]\n"
        "\n"
        "Times dgrad (through the plugin, as a graph compiler runs it) against\n"
        "one raw oneDNN convolution-backward-data primitive created on the same\n"
        "user memory layout, measured interleaved in the same run.\n"
        "\n"
        "PROBLEM is a benchdnn deconvolution descriptor, e.g.\n"
        "  g4mb1ic20ih224oc8oh447kh3sh2ph1n\"spec:group2d\"\n"
        "ic/i[dhw] describe the op's data input (diff_dst), oc/o[dhw] its output,\n"
        "g groups, mb batch (default 2), k/s/p kernel, stride, begin pad, d the\n"
        "dilation in oneDNN's 0-based form; w/h/d axes for 1D/2D/3D. A missing\n"
        "output size or pad is computed as benchdnn does.\n"
        "\n"
        "options:\n"
        "  --batch FILE            problems from FILE (one per line, '#' comments,\n"
        "                          --batch=OTHER lines include files relative to it)\n"
        "  --dt f32|bf16|f16       data type (default f32); f16 runs the raw\n"
        "                          baseline in f32 (oneDNN 2.6 has no f16 CPU\n"
        "                          convolution); f16 and bf16 also time dgrad\n"
        "                          in f32 (column f16/f32 or bf16/f32)\n"
        "  --data-format NXC|NCX   user layout of data and output (default NXC)\n"
        "  --weights-format XIO|OIX  user layout of the weights (default XIO\n"
        "                          with NXC data, OIX with NCX data)\n"
        "  --constant-weights      weights logical tensor marked constant\n"
        "  --changing-weights      dgrad's weights alternate between two buffers\n"
        "                          of different values, so that every execution\n"
        "                          prepares them (by default they are the same\n"
        "                          bytes each time, which dgrad takes prepared\n"
        "                          from the execution before, as a caller passing\n"
        "                          unchanged weights gets); the baselines'\n"
        "                          weights stay the same\n"
        "  --reps N                timed samples per participant (default 15)\n"
        "  --warmup N              untimed executions first (default 3)\n"
        "  --min-sample-ms T       executions per sample grow until one sample\n"
        "                          lasts T ms (default 1)\n"
        "  --cached-reps N         cached compiles timed (default 50)\n"
        "  --max-problem-s T       fewer samples when one problem would take\n"
        "                          longer than T s to time (default 20, >= 3)\n"
        "  --peak-gflops G         peak GFLOP/s for the roofline (default: measured\n"
        "                          with dnnl_sgemm, or a bf16 matmul for bf16)\n"
        "  --peak-gbs B            memory bandwidth in GB/s (default: measured with\n"
        "                          a streaming triad)\n"
        "  --csv FILE              write the results as CSV\n"
        "  --plot FILE.png         plot dgrad, raw oneDNN and the roofline (gnuplot)\n"
        "  --backend auto|plugin|core  how dgrad is reached (default auto: the\n"
        "                          plugin, else libdgrad.so with a note)\n"
        "  --core-lib PATH         libdgrad.so for --backend core\n"
        "  --no-check              skip the dgrad vs raw oneDNN output comparison\n"
        "  --no-raw                time dgrad alone (profiling); no baseline\n"
        "  --no-graph              no oneDNN Graph anchor (timed, as graph ms,\n"
        "                          wherever dgrad is built on oneDNN 3)\n"
        "  --raw-weights user|prepacked  the baseline reads the user's weights\n"
        "                          (default), or weights reordered once into the\n"
        "                          primitive's preferred layout (format_tag_any),\n"
        "                          as a user with constant weights would (compare\n"
        "                          with --constant-weights)\n"
        "  --raw-layout user|preferred  the baseline runs on the user's layouts\n"
        "                          (default), or on oneDNN's preferred ones\n"
        "                          (format_tag_any for every tensor, data and\n"
        "                          weights reordered once untimed): the best\n"
        "                          primitive alone, a lower bound for dgrad\n"
        "  --post-ops CHAIN        the op with a chain of post-ops, e.g. relu,\n"
        "                          bias+relu, bias+add:per_oc+tanh, clip:0:6;\n"
        "                          oneDNN Graph's names or benchdnn's\n"
        "                          --attr-post-ops spelling (also accepted as\n"
        "                          --attr-post-ops); binary ops take a data type\n"
        "                          and a policy: common, per_oc, per_position,\n"
        "                          per_tensor (default). Times the fused op, the\n"
        "                          bare op, the bare op plus one oneDNN pass per\n"
        "                          post-op (unfused), and raw oneDNN: a\n"
        "                          deconvolution with the chain as its post-ops\n"
        "                          attribute (bench/README.md)\n"
        "  --in-place              with a chain holding an Add of the output's\n"
        "                          shape in the op's type (add:T:per_tensor, or\n"
        "                          sum): the fused op accumulates onto that\n"
        "                          operand in the output's buffer, as oneDNN\n"
        "                          Graph's in-place sum (the others keep theirs)\n"
        "  -q, --quiet             no per-problem progress on stderr\n"
        "  --list-problems         print each problem as one line of JSON and\n"
        "                          exit 0, running nothing: name, label,\n"
        "                          descriptor, file and line it was read from,\n"
        "                          mb, g, ic, oc, spatial_rank, axes, and per\n"
        "                          axis (outermost first) i, o, k, s, p (begin\n"
        "                          pad), pad_end (natural - p - o; negative is\n"
        "                          output padding), d (dilation, oneDNN 0-based),\n"
        "                          dilation (1-based: d + 1), natural (the full\n"
        "                          output size s*(i-1) + (k-1)*(d+1) + 1); then\n"
        "                          depthwise and flops\n"
        "\n"
        "Columns: dgrad and raw execute time (median of the samples, with min and\n"
        "max), ratio dgrad/raw, added us (dgrad - raw medians, microseconds),\n"
        "dgrad GFLOP/s, roofline fraction (time at the roofline / dgrad time),\n"
        "cold compile (first compile of the problem) and\n"
        "cached compile (median, same op compiled again), peak extra memory of\n"
        "dgrad's compile + first execute (VmHWM), and the output check.\n"
        "Exit status: 0 when every problem ran and checked, 1 otherwise (also\n"
        "when the plugin, a batch file, the CSV or the plot cannot be used), 2 on\n"
        "usage errors (unknown option, bad value, a problem that is malformed or\n"
        "whose buffers do not fit in physical memory), before anything runs.\n";

const char *bench_layout_name(bench_layout_t layout) {
    return layout == bench_nxc ? "NXC" : "NCX";
}

const char *bench_wlayout_name(bench_wlayout_t wlayout) {
    return wlayout == bench_xio ? "XIO" : "OIX";
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0)) return -1;
    *out = v;
    return 0;
}

int bench_options_parse(int argc, char **argv, bench_options_t *o,
        bench_problem_list_t *list) {
    int wlayout_given = 0;
    *o = (bench_options_t){.dt = dgrad_f32, .layout = bench_nxc,
            .wlayout = bench_xio, .reps = 15, .warmup = 3, .cached_reps = 50,
            .min_sample_ms = 1.0, .max_problem_s = 20,
            .backend = bench_backend_auto, .check = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char key[64];
        /* --opt=value or --opt value */
        if (!strncmp(a, "--", 2)) {
            const char *eq = strchr(a, '=');
            size_t n = eq ? (size_t)(eq - a) : strlen(a);
            snprintf(key, sizeof key, "%.*s", (int)n, a);
            if (eq) val = eq + 1;
        } else {
            snprintf(key, sizeof key, "%s", a);
        }
        static const char *flags[] = {"--constant-weights",
                "--changing-weights", "--no-check",
                "--in-place",
                "--no-raw", "--no-graph", "--quiet", "-q", "--help", "-h",
                "--list-problems"};
        static const char *valued[] = {"--batch", "--dt", "--data-format",
                "--weights-format", "--reps", "--warmup", "--cached-reps",
                "--max-problem-s", "--min-sample-ms", "--peak-gflops",
                "--peak-gbs", "--csv", "--plot", "--backend", "--raw-weights",
                "--raw-layout", "--core-lib", "--post-ops", "--attr-post-ops"};
        int is_flag = 0, is_valued = 0;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            is_flag |= !strcmp(key, flags[f]);
        for (size_t f = 0; f < sizeof valued / sizeof valued[0]; f++)
            is_valued |= !strcmp(key, valued[f]);
        if (key[0] == '-' && !is_flag && !is_valued) {
            fprintf(stderr, "dgrad bench: unknown option '%s' (see --help)\n",
                    key);
            return 2;
        }
        if (is_valued && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dgrad bench: %s needs a value\n", key);
                return 2;
            }
            val = argv[++i];
        }
        int bad = 0;
        if (!strcmp(key, "--help") || !strcmp(key, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(key, "--constant-weights")) {
            o->constant_weights = 1;
        } else if (!strcmp(key, "--changing-weights")) {
            o->changing_weights = 1;
        } else if (!strcmp(key, "--in-place")) {
            o->in_place = 1;
        } else if (!strcmp(key, "--no-check")) {
            o->check = 0;
        } else if (!strcmp(key, "--list-problems")) {
            o->list_problems = 1;
        } else if (!strcmp(key, "--no-raw")) {
            o->no_raw = 1;
        } else if (!strcmp(key, "--no-graph")) {
            o->no_graph = 1;
        } else if (!strcmp(key, "--quiet") || !strcmp(key, "-q")) {
            o->quiet = 1;
        } else if (!strcmp(key, "--batch")) {
            int rc = bench_batch_read(list, val);
            if (rc) return rc;
        } else if (!strcmp(key, "--dt")) {
            if (!strcmp(val, "f32")) o->dt = dgrad_f32;
            else if (!strcmp(val, "bf16")) o->dt = dgrad_bf16;
            else if (!strcmp(val, "f16")) o->dt = dgrad_f16;
            else bad = 1;
        } else if (!strcmp(key, "--data-format")) {
            if (!strcasecmp(val, "NXC")) o->layout = bench_nxc;
            else if (!strcasecmp(val, "NCX")) o->layout = bench_ncx;
            else bad = 1;
        } else if (!strcmp(key, "--weights-format")) {
            if (!strcasecmp(val, "XIO")) o->wlayout = bench_xio;
            else if (!strcasecmp(val, "OIX")) o->wlayout = bench_oix;
            else bad = 1;
            wlayout_given = 1;
        } else if (!strcmp(key, "--reps")) {
            bad = parse_int(val, 1, MAX_REPS, &o->reps);
        } else if (!strcmp(key, "--warmup")) {
            bad = parse_int(val, 0, MAX_REPS, &o->warmup);
        } else if (!strcmp(key, "--cached-reps")) {
            bad = parse_int(val, 1, MAX_REPS, &o->cached_reps);
        } else if (!strcmp(key, "--max-problem-s")) {
            bad = parse_double(val, &o->max_problem_s);
        } else if (!strcmp(key, "--min-sample-ms")) {
            bad = parse_double(val, &o->min_sample_ms);
        } else if (!strcmp(key, "--peak-gflops")) {
            bad = parse_double(val, &o->peak_gflops);
        } else if (!strcmp(key, "--peak-gbs")) {
            bad = parse_double(val, &o->peak_gbs);
        } else if (!strcmp(key, "--csv")) {
            o->csv = val;
        } else if (!strcmp(key, "--plot")) {
            o->plot = val;
        } else if (!strcmp(key, "--backend")) {
            if (!strcmp(val, "auto")) o->backend = bench_backend_auto;
            else if (!strcmp(val, "plugin")) o->backend = bench_backend_plugin;
            else if (!strcmp(val, "core")) o->backend = bench_backend_core;
            else bad = 1;
        } else if (!strcmp(key, "--raw-weights")) {
            if (!strcmp(val, "user")) o->raw_prepacked = 0;
            else if (!strcmp(val, "prepacked")) o->raw_prepacked = 1;
            else bad = 1;
        } else if (!strcmp(key, "--raw-layout")) {
            if (!strcmp(val, "user")) o->raw_layout = bench_raw_user;
            else if (!strcmp(val, "preferred")) o->raw_layout = bench_raw_preferred;
            else bad = 1;
        } else if (!strcmp(key, "--post-ops")
                || !strcmp(key, "--attr-post-ops")) {
            char err[512];
            if (bench_chain_parse(val, &o->chain, err, sizeof err)) {
                fprintf(stderr, "dgrad bench: %s\n", err);
                return 2;
            }
        } else if (!strcmp(key, "--core-lib")) {
            o->core_lib = val;
        } else if (bench_problem_add(list, a, "")) {
            return 2;
        }
        if (bad) {
            fprintf(stderr, "dgrad bench: bad value '%s' for %s\n", val, key);
            return 2;
        }
    }
    if (!wlayout_given)
        o->wlayout = o->layout == bench_nxc ? bench_xio : bench_oix;
    if (list->n == 0) {
        fprintf(stderr, "dgrad bench: no problems given (see --help)\n");
        return 2;
    }
    for (int i = 0; i < list->n; i++)
        if (bench_problem_fits(&list->v[i], o->dt, &o->chain)) return 2;
    return BENCH_RUN;
}
