/*
 * benchdnn deconvolution descriptors:
 *   gXmbX_icXidXihXiwX_ocXodXohXowX_kdXkhXkwX_sdXshXswX_pdXphXpwX_ddXdhXdwX_nS
 * with benchdnn's implicit rules ('_' is ignored; missing inner axes copy
 * the outermost given one; a missing output size is computed with
 * symmetric padding; a missing pad is the trivial one; mb defaults to 2).
 * For deconvolution the input (ic, i*) is the small side:
 *   o = (i - 1) * s - 2 * p + (k - 1) * (d + 1) + 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Per-axis sizes are derived in 128 bits, from descriptor values below
 * 2^63, so that no intermediate overflows; results are then checked to
 * fit in 64 bits. */
typedef __int128 wide_t;

enum { AX_D = 0, AX_H = 1, AX_W = 2 };

typedef struct raw_desc {
    int64_t g, mb, ic, oc;
    int64_t i[3], o[3], k[3], s[3], p[3], d[3]; /* d, h, w */
    int has_groups;
    char name[BENCH_NAME_MAX];
} raw_desc_t;

static int64_t *field(raw_desc_t *r, const char *key, size_t *len) {
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
#define K(k, m) {k, offsetof(raw_desc_t, m)}
            K("mb", mb), K("ic", ic), K("oc", oc),
            K("id", i[AX_D]), K("ih", i[AX_H]), K("iw", i[AX_W]),
            K("od", o[AX_D]), K("oh", o[AX_H]), K("ow", o[AX_W]),
            K("kd", k[AX_D]), K("kh", k[AX_H]), K("kw", k[AX_W]),
            K("sd", s[AX_D]), K("sh", s[AX_H]), K("sw", s[AX_W]),
            K("pd", p[AX_D]), K("ph", p[AX_H]), K("pw", p[AX_W]),
            K("dd", d[AX_D]), K("dh", d[AX_H]), K("dw", d[AX_W]),
            K("g", g),
#undef K
    };
    for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
        size_t n = strlen(keys[j].key);
        if (!strncmp(key, keys[j].key, n)) {
            *len = n;
            return (int64_t *)((char *)r + keys[j].off);
        }
    }
    return NULL;
}

static void copy_name(char *dst, const char *src) {
    size_t n = 0;
    if (*src == '"') src++;
    for (; *src && n + 1 < BENCH_NAME_MAX; src++) {
        if (*src == '"') break;
        /* Names end up in CSV fields and gnuplot labels. */
        dst[n++] = (*src == ',' || *src == '\'' || *src == '\\') ? '_' : *src;
    }
    dst[n] = 0;
}

int bench_desc_parse(const char *text, bench_desc_t *out, char *err,
        size_t err_size) {
    raw_desc_t r;
    memset(&r, 0, sizeof r);
    r.g = 1;
    r.mb = 2;
    for (int a = 0; a < 3; a++) {
        r.s[a] = 1;
        r.p[a] = -1;
    }
    const char *s = text;
    while (*s) {
        if (*s == '_') {
            s++;
            continue;
        }
        if (*s == 'n') {
            copy_name(r.name, s + 1);
            break;
        }
        size_t len = 0;
        int64_t *f = field(&r, s, &len);
        char *end = NULL;
        if (f) {
            errno = 0;
            long long v = strtoll(s + len, &end, 10);
            if (end != s + len && errno == ERANGE) {
                snprintf(err, err_size, "'%s': %.*s is out of range "
                        "(descriptor values are at most %lld)", text,
                        (int)(end - s), s, (long long)INT64_MAX);
                return -1;
            }
            if (end == s + len || v < 0) f = NULL;
            else *f = v;
        }
        if (!f) {
            snprintf(err, err_size, "cannot parse '%s' at '%s' (expected "
                    "g/mb/ic/i[dhw]/oc/o[dhw]/k[dhw]/s[dhw]/p[dhw]/d[dhw] "
                    "followed by a number, or n\"name\")", text, s);
            return -1;
        }
        if (!strncmp(s, "g", 1)) r.has_groups = 1;
        s = end;
    }
    if (r.g <= 0 || r.ic <= 0 || r.oc <= 0 || r.mb <= 0) {
        snprintf(err, err_size, "'%s': g, mb, ic and oc must be positive",
                text);
        return -1;
    }
    int given[3];
    for (int a = 0; a < 3; a++) {
        given[a] = (r.i[a] | r.k[a] | r.o[a] | r.d[a]) != 0 || r.s[a] != 1
                || r.p[a] >= 1;
        if (!given[a]) continue;
        if (!r.i[a] || !r.k[a] || r.s[a] <= 0) {
            snprintf(err, err_size, "'%s': spatial axis %c needs i, k and "
                    "a positive s", text, "dhw"[a]);
            return -1;
        }
        /* The full output size s*(i-1) + (k-1)*(d+1) + 1: also the
         * bound every other size of the axis is derived from. */
        wide_t natural = (wide_t)r.s[a] * (r.i[a] - 1)
                + (wide_t)(r.k[a] - 1) * ((wide_t)r.d[a] + 1) + 1;
        if (natural > INT64_MAX) {
            snprintf(err, err_size, "'%s': on axis %c, s*(i-1) + "
                    "(k-1)*(d+1) + 1 = %.4g does not fit in 64 bits", text,
                    "dhw"[a], (double)natural);
            return -1;
        }
        if (r.d[a] == INT64_MAX) {
            snprintf(err, err_size, "'%s': on axis %c, the dilation d+1 "
                    "does not fit in 64 bits", text, "dhw"[a]);
            return -1;
        }
        if (!r.o[a]) {
            if (r.p[a] < 0) r.p[a] = 0;
            wide_t o = natural - 2 * (wide_t)r.p[a];
            if (o <= 0) {
                snprintf(err, err_size, "'%s': computed output size on axis "
                        "%c is not positive", text, "dhw"[a]);
                return -1;
            }
            r.o[a] = (int64_t)o;
        } else if (r.p[a] < 0) {
            r.p[a] = (int64_t)((natural - r.o[a]) / 2);
            if (r.p[a] < 0) r.p[a] = 0;
        }
        /* The end pad (negative: output padding) must be a 64-bit value. */
        wide_t pad_end = natural - r.p[a] - r.o[a];
        if (pad_end < -INT64_MAX) {
            snprintf(err, err_size, "'%s': on axis %c, the end pad "
                    "s*(i-1) + (k-1)*(d+1) + 1 - p - o = %.4g does not fit "
                    "in 64 bits", text, "dhw"[a], (double)pad_end);
            return -1;
        }
    }
    bench_desc_t d;
    memset(&d, 0, sizeof d);
    int first = given[AX_D] ? AX_D : given[AX_H] ? AX_H : given[AX_W] ? AX_W : -1;
    if (first < 0) {
        snprintf(err, err_size, "'%s': no spatial axis given", text);
        return -1;
    }
    d.nsp = 3 - first;
    d.has_groups = r.has_groups;
    d.g = r.g;
    d.mb = r.mb;
    d.ic = r.ic;
    d.oc = r.oc;
    for (int a = first; a < 3; a++) {
        /* Inner axes not given copy the outermost given one (square,
         * cube). */
        int j = a - first, from = given[a] ? a : first;
        d.i[j] = r.i[from];
        d.o[j] = r.o[from];
        d.k[j] = r.k[from];
        d.s[j] = r.s[from];
        d.p[j] = r.p[from];
        d.d[j] = r.d[from];
    }
    memcpy(d.name, r.name, sizeof d.name);
    if (d.ic % d.g || d.oc % d.g) {
        snprintf(err, err_size, "'%s': groups (%lld) must divide ic (%lld) "
                "and oc (%lld)", text, (long long)d.g, (long long)d.ic,
                (long long)d.oc);
        return -1;
    }
    *out = d;
    return 0;
}

void bench_desc_format(const bench_desc_t *d, char *buf, size_t size) {
    static const char *ax3 = "dhw";
    const char *ax = ax3 + (3 - d->nsp);
    size_t n = 0;
#define PUT(...)                                                          \
    do {                                                                  \
        int w_ = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                      \
    } while (0)
    if (d->has_groups || d->g != 1) PUT("g%lld", (long long)d->g);
    PUT("mb%lld", (long long)d->mb);
    PUT("ic%lld", (long long)d->ic);
    for (int j = 0; j < d->nsp; j++) PUT("i%c%lld", ax[j], (long long)d->i[j]);
    PUT("oc%lld", (long long)d->oc);
    for (int j = 0; j < d->nsp; j++) PUT("o%c%lld", ax[j], (long long)d->o[j]);
    for (int j = 0; j < d->nsp; j++) PUT("k%c%lld", ax[j], (long long)d->k[j]);
    for (int j = 0; j < d->nsp; j++)
        if (d->s[j] != 1) PUT("s%c%lld", ax[j], (long long)d->s[j]);
    for (int j = 0; j < d->nsp; j++) PUT("p%c%lld", ax[j], (long long)d->p[j]);
    for (int j = 0; j < d->nsp; j++)
        if (d->d[j] != 0) PUT("d%c%lld", ax[j], (long long)d->d[j]);
#undef PUT
    if (size) buf[n < size ? n : size - 1] = 0;
}

int64_t bench_desc_natural(const bench_desc_t *d, int a) {
    return d->s[a] * (d->i[a] - 1) + (d->k[a] - 1) * (d->d[a] + 1) + 1;
}

int64_t bench_desc_pad_end(const bench_desc_t *d, int a) {
    return bench_desc_natural(d, a) - d->p[a] - d->o[a];
}

/* sum_{j=0}^{n-1} floor((a*j + b) / m) for n, a, b >= 0 and m >= 1, in
 * O(log) steps (the Euclid-like reduction of the floor sum). Every partial
 * sum is part of the result, so it stays in range when the result does. */
static wide_t floor_sum(wide_t n, wide_t m, wide_t a, wide_t b) {
    wide_t sum = 0;
    for (;;) {
        if (a >= m) {
            sum += n * (n - 1) / 2 * (a / m);
            a %= m;
        }
        if (b >= m) {
            sum += n * (b / m);
            b %= m;
        }
        wide_t top = a * n + b;
        if (top < m) return sum;
        n = top / m;
        b = top % m;
        wide_t t = m;
        m = a;
        a = t;
    }
}

/* Pairs (x, k), 0 <= x < I, 0 <= k < K, with s*x + D*k <= c. Tap k sees
 * min(I, floor((c - D*k) / s) + 1) positions when c - D*k >= 0: taps up to
 * k_full see all I, taps k_full+1..k_last a floor sum, later taps none. */
static wide_t pairs_at_most(wide_t c, wide_t I, wide_t K, wide_t s, wide_t D) {
    if (c < 0) return 0;
    wide_t k_last = c / D < K - 1 ? c / D : K - 1;
    wide_t rest = c - s * (I - 1);
    wide_t k_full = rest < 0 ? -1 : rest / D < k_last ? rest / D : k_last;
    wide_t n = k_last - k_full;
    return (k_full + 1) * I + floor_sum(n, s, D, c - D * k_last) + n;
}

double bench_desc_axis_terms(const bench_desc_t *d, int a) {
    /* Output position y = s*x + D*k - p lands when 0 <= y < o. */
    wide_t D = (wide_t)d->d[a] + 1, p = d->p[a];
    return (double)(pairs_at_most(d->o[a] - 1 + p, d->i[a], d->k[a], d->s[a], D)
            - pairs_at_most(p - 1, d->i[a], d->k[a], d->s[a], D));
}

double bench_desc_flops(const bench_desc_t *d) {
    double terms = 1;
    for (int a = 0; a < d->nsp; a++) terms *= bench_desc_axis_terms(d, a);
    return 2.0 * (double)d->mb * (double)d->ic * (double)(d->oc / d->g)
            * terms;
}

int bench_desc_is_depthwise(const bench_desc_t *d) {
    return d->g > 1 && d->ic == d->g && d->oc == d->g;
}
