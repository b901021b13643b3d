/*
 * cohort_bench --tail: the distribution of per-call times. A mean hides a call in thousands that
 * stalls for milliseconds; percentiles and counts above fixed thresholds show it.
 */
#include <stdlib.h>
#include "sweep.h"

const char *const bench_tail_names[BENCH_TAIL_NSTATS] = {
    [BENCH_TAIL_P50] = "p50_us",        [BENCH_TAIL_P99] = "p99_us",
    [BENCH_TAIL_P999] = "p999_us",      [BENCH_TAIL_MAX] = "max_us",
    [BENCH_TAIL_OVER_1MS] = "over_1ms", [BENCH_TAIL_OVER_250US] = "over_250us",
    [BENCH_TAIL_CALLS] = "calls",
};

static int bench_tail_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The nearest-rank percentile per_mille / 1000 of n sorted values, in integers: 0.99 * n in
 * floating point can land just above a whole number and pick the next value up. */
static double bench_tail_rank(const double *t, long n, long per_mille)
{
    long idx = (n * per_mille + 999) / 1000 - 1;

    return t[idx < 0 ? 0 : idx];
}

static long bench_tail_above(const double *t, long n, double limit)
{
    long k = n;

    while (k > 0 && t[k - 1] > limit) {
        k--;
    }
    return n - k;
}

void bench_tail_stats(double *t, long n, double *out)
{
    for (int s = 0; s < BENCH_TAIL_NSTATS; s++) {
        out[s] = 0;
    }
    if (n <= 0) {
        return;
    }
    qsort(t, (size_t)n, sizeof(*t), bench_tail_cmp);
    out[BENCH_TAIL_P50] = bench_tail_rank(t, n, 500) * 1e6;
    out[BENCH_TAIL_P99] = bench_tail_rank(t, n, 990) * 1e6;
    out[BENCH_TAIL_P999] = bench_tail_rank(t, n, 999) * 1e6;
    out[BENCH_TAIL_MAX] = t[n - 1] * 1e6;
    out[BENCH_TAIL_OVER_1MS] = (double)bench_tail_above(t, n, 1e-3);
    out[BENCH_TAIL_OVER_250US] = (double)bench_tail_above(t, n, 250e-6);
    out[BENCH_TAIL_CALLS] = (double)n;
}
