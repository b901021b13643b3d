/*
 * Unit tests for the host reduction kernels and the 16-bit float conversions
 * (src/reduce/host.c, src/reduce/half.c).
 *
 * The references here are written independently of the implementation: 16-bit floats are
 * decoded with ldexp, rounded with rint() in double (ties to even in the default rounding
 * mode) and encoded field by field; integer results are computed in 64-bit unsigned arithmetic
 * and truncated. Loops over many cases count mismatches and assert once at the end, keeping
 * the first mismatch for the message (one Check assertion per case would cost a pipe write
 * each).
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

#define NELEM 1037 /* odd, so vector loops also run their scalar tail */

static const cohort_dtype_t all_dtypes[] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64,
};
#define NDTYPES ((int)(sizeof(all_dtypes) / sizeof(all_dtypes[0])))

static const cohort_op_t all_ops[] = {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG};
#define NOPS ((int)(sizeof(all_ops) / sizeof(all_ops[0])))

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    long count;
    char first[256];
} mismatch_t;

static void mismatch_note(mismatch_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void mismatch_note(mismatch_t *m, const char *fmt, ...)
{
    if (m->count++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->first, sizeof(m->first), fmt, ap);
        va_end(ap);
    }
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* xorshift64*: fixed seed per test, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static int is_float_dtype(cohort_dtype_t dt)
{
    return dt == COHORT_FLOAT16 || dt == COHORT_BFLOAT16 || dt == COHORT_FLOAT32 ||
           dt == COHORT_FLOAT64;
}

/* Same number: both NaN (any payload), or equal with the same sign (so +0 != -0). */
static int same_value(double x, double y)
{
    if (isnan(x) || isnan(y)) {
        return isnan(x) && isnan(y);
    }
    return x == y && signbit(x) == signbit(y);
}

/* ------------------------------------------------------------------------------------------ */
/* Reference 16-bit formats: p significand bits (with the implicit one), minimum exponent     */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int mant_bits; /* stored fraction bits */
    int exp_bits;
    int bias;
} fmt16_t;

static const fmt16_t fmt_half = {10, 5, 15};
static const fmt16_t fmt_bf16 = {7, 8, 127};

static double fmt_max_finite(const fmt16_t *f)
{
    int emax = (1 << f->exp_bits) - 2 - f->bias;
    return ldexp(2.0 - ldexp(1.0, -f->mant_bits), emax);
}

static int fmt_is_nan(const fmt16_t *f, uint16_t bits)
{
    uint16_t exp_all = (uint16_t)(((1u << f->exp_bits) - 1) << f->mant_bits);
    uint16_t mant = (uint16_t)(bits & ((1u << f->mant_bits) - 1));
    return (bits & exp_all) == exp_all && mant != 0;
}

static double ref_decode(const fmt16_t *f, uint16_t bits)
{
    int exp = (bits >> f->mant_bits) & ((1 << f->exp_bits) - 1);
    int mant = bits & ((1 << f->mant_bits) - 1);
    double sign = (bits & 0x8000) ? -1.0 : 1.0;

    if (exp == (1 << f->exp_bits) - 1) {
        return mant ? NAN : sign * INFINITY;
    }
    if (exp == 0) {
        return sign * ldexp(mant, 1 - f->bias - f->mant_bits);
    }
    return sign * ldexp(mant + (1 << f->mant_bits), exp - f->bias - f->mant_bits);
}

/* Round v to the format's precision and range, ties to even; returns the value (or +-inf). */
static double ref_round(const fmt16_t *f, double v)
{
    if (isnan(v) || isinf(v) || v == 0) {
        return v;
    }
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int exp = e - 1;
    int emin = 1 - f->bias;
    if (exp < emin) {
        exp = emin;
    }
    double ulp = ldexp(1.0, exp - f->mant_bits);
    double r = rint(v / ulp) * ulp;
    if (fabs(r) > fmt_max_finite(f)) {
        return copysign(INFINITY, v);
    }
    return copysign(r, v);
}

/* Encode a value the format represents exactly (as ref_round returns), field by field. */
static uint16_t ref_encode(const fmt16_t *f, double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    uint16_t exp_all = (uint16_t)(((1u << f->exp_bits) - 1) << f->mant_bits);
    double a = fabs(v);

    if (isnan(v)) {
        return exp_all | (uint16_t)(1u << (f->mant_bits - 1));
    }
    if (isinf(v)) {
        return sign | exp_all;
    }
    if (a == 0) {
        return sign;
    }
    int e;
    frexp(a, &e);
    int exp = e - 1;
    if (exp < 1 - f->bias) {
        return sign | (uint16_t)ldexp(a, f->bias - 1 + f->mant_bits);
    }
    uint16_t frac = (uint16_t)(ldexp(a, f->mant_bits - exp) - ldexp(1.0, f->mant_bits));
    return sign | (uint16_t)((exp + f->bias) << f->mant_bits) | frac;
}

static uint16_t ref_to_fmt(const fmt16_t *f, double v)
{
    return ref_encode(f, ref_round(f, v));
}

/* ------------------------------------------------------------------------------------------ */
/* 16-bit conversions, generic over the two formats                                           */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    const fmt16_t *fmt;
    float (*to_float)(uint16_t);
    uint16_t (*from_float)(float);
    uint16_t quiet_bit;
} conv_t;

static const conv_t conv_half = {"half", &fmt_half, cohort_half_to_float, cohort_float_to_half,
                                 0x0200};
static const conv_t conv_bf16 = {"bf16", &fmt_bf16, cohort_bf16_to_float, cohort_float_to_bf16,
                                 0x0040};

/* Every bit pattern widens to the right float; NaNs widen to quiet NaNs of the same sign. */
static void check_to_float_exhaustive(const conv_t *c)
{
    mismatch_t m = {0};

    for (uint32_t h = 0; h <= 0xffff; h++) {
        float got = c->to_float((uint16_t)h);
        double want = ref_decode(c->fmt, (uint16_t)h);
        if (isnan(want)) {
            uint32_t bits = f32_bits(got);
            if (!isnan(got) || !(bits & 0x00400000u) || (bits >> 31) != (h >> 15)) {
                mismatch_note(&m, "%s 0x%04x -> 0x%08x, want a quiet NaN", c->name, h, bits);
            }
        } else if (!same_value(got, want)) {
            mismatch_note(&m, "%s 0x%04x -> %a, want %a", c->name, h, got, want);
        }
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}

/* All 65536 patterns survive 16 -> float -> 16; a NaN comes back as itself, quieted. */
static void check_round_trip_exhaustive(const conv_t *c)
{
    mismatch_t m = {0};

    for (uint32_t h = 0; h <= 0xffff; h++) {
        uint16_t back = c->from_float(c->to_float((uint16_t)h));
        uint16_t want = (uint16_t)h;
        if (fmt_is_nan(c->fmt, (uint16_t)h)) {
            want |= c->quiet_bit;
        }
        if (back != want) {
            mismatch_note(&m, "%s 0x%04x -> 0x%04x, want 0x%04x", c->name, h, back, want);
        }
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}

/*
 * The midpoint between every two neighbouring finite values (subnormals included, both signs)
 * rounds to the even one, and one float ulp either side rounds to the nearer one. The midpoint
 * above the largest finite value rounds to infinity (its even "neighbour").
 */
static void check_halfway_to_even(const conv_t *c)
{
    mismatch_t m = {0};
    uint16_t max_finite = ref_encode(c->fmt, fmt_max_finite(c->fmt));

    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
        for (uint32_t h = 0; h <= max_finite; h++) {
            uint16_t lo = (uint16_t)(sign | h), hi = (uint16_t)(lo + 1);
            double vlo = ref_decode(c->fmt, lo);
            double vhi = h == max_finite ? copysign(ldexp(1.0, (int)(c->fmt->bias + 1)), vlo)
                                         : ref_decode(c->fmt, hi);
            float mid = (float)((vlo + vhi) / 2);
            if ((double)mid != (vlo + vhi) / 2) {
                mismatch_note(&m, "%s midpoint after 0x%04x not a float", c->name, lo);
                continue;
            }
            uint16_t even = (h & 1) ? hi : lo;
            float below = nextafterf(mid, 0.0f), above = nextafterf(mid, mid * 2);
            uint16_t got_mid = c->from_float(mid);
            uint16_t got_below = c->from_float(below);
            uint16_t got_above = c->from_float(above);
            if (got_mid != even || got_below != lo || got_above != hi) {
                mismatch_note(&m,
                              "%s around %a: got 0x%04x 0x%04x 0x%04x, want 0x%04x 0x%04x "
                              "0x%04x",
                              c->name, mid, got_below, got_mid, got_above, lo, even, hi);
            }
        }
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}

/* About a million floats spread over all 2^32 patterns, against the rint() reference. */
static void check_sampled_floats(const conv_t *c)
{
    mismatch_t m = {0};

    for (uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
        float f = f32_from_bits((uint32_t)u);
        uint16_t got = c->from_float(f);
        if (isnan(f)) {
            if (!fmt_is_nan(c->fmt, got) || !(got & c->quiet_bit) ||
                (got >> 15) != (uint16_t)(u >> 31)) {
                mismatch_note(&m, "%s NaN 0x%08x -> 0x%04x", c->name, (uint32_t)u, got);
            }
            continue;
        }
        uint16_t want = ref_to_fmt(c->fmt, f);
        if (got != want) {
            mismatch_note(&m, "%s %a (0x%08x) -> 0x%04x, want 0x%04x", c->name, f, (uint32_t)u, got,
                          want);
        }
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}

START_TEST(test_half_to_float_exhaustive)
{
    check_to_float_exhaustive(&conv_half);
}
END_TEST

START_TEST(test_half_round_trip_exhaustive)
{
    check_round_trip_exhaustive(&conv_half);
}
END_TEST

START_TEST(test_half_halfway_to_even)
{
    check_halfway_to_even(&conv_half);
}
END_TEST

START_TEST(test_half_sampled_floats)
{
    check_sampled_floats(&conv_half);
}
END_TEST

START_TEST(test_half_special_values)
{
    /* overflow */
    ck_assert_uint_eq(cohort_float_to_half(65504.0f), 0x7bff);
    ck_assert_uint_eq(cohort_float_to_half(nextafterf(65520.0f, 0.0f)), 0x7bff);
    ck_assert_uint_eq(cohort_float_to_half(65520.0f), 0x7c00);
    ck_assert_uint_eq(cohort_float_to_half(-65520.0f), 0xfc00);
    ck_assert_uint_eq(cohort_float_to_half(1e10f), 0x7c00);
    ck_assert_uint_eq(cohort_float_to_half(FLT_MAX), 0x7c00);
    ck_assert_uint_eq(cohort_float_to_half(INFINITY), 0x7c00);
    ck_assert_uint_eq(cohort_float_to_half(-INFINITY), 0xfc00);
    /* subnormals: 2^-24 is the smallest, 2^-25 a tie to even (zero) */
    ck_assert_uint_eq(cohort_float_to_half(ldexpf(1.0f, -24)), 0x0001);
    ck_assert_uint_eq(cohort_float_to_half(ldexpf(1.0f, -25)), 0x0000);
    ck_assert_uint_eq(cohort_float_to_half(-ldexpf(1.0f, -25)), 0x8000);
    ck_assert_uint_eq(cohort_float_to_half(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    ck_assert_uint_eq(cohort_float_to_half(ldexpf(3.0f, -25)), 0x0002);
    ck_assert_uint_eq(cohort_float_to_half(ldexpf(1023.0f, -24)), 0x03ff);
    ck_assert_uint_eq(cohort_float_to_half(ldexpf(2047.0f, -25)), 0x0400); /* up to normal */
    ck_assert_uint_eq(cohort_float_to_half(FLT_TRUE_MIN), 0x0000);
    ck_assert_uint_eq(cohort_float_to_half(-FLT_TRUE_MIN), 0x8000);
    ck_assert(cohort_half_to_float(0x0001) == ldexpf(1.0f, -24));
    ck_assert(cohort_half_to_float(0x83ff) == -ldexpf(1023.0f, -24));
    /* zeros and ordinary values */
    ck_assert_uint_eq(cohort_float_to_half(0.0f), 0x0000);
    ck_assert_uint_eq(cohort_float_to_half(-0.0f), 0x8000);
    ck_assert_uint_eq(cohort_float_to_half(1.0f), 0x3c00);
    ck_assert_uint_eq(cohort_float_to_half(-2.0f), 0xc000);
    ck_assert_uint_eq(cohort_float_to_half(0.1f), 0x2e66);
    /* NaN: a payload only in the low float bits must not become infinity */
    ck_assert_uint_eq(cohort_float_to_half(f32_from_bits(0x7f800001u)), 0x7e00);
    ck_assert_uint_eq(cohort_float_to_half(f32_from_bits(0xff800001u)), 0xfe00);
    ck_assert_uint_eq(cohort_float_to_half(f32_from_bits(0x7fc00000u)), 0x7e00);
    ck_assert_uint_eq(cohort_float_to_half(f32_from_bits(0x7fa02000u)), 0x7f01);
    ck_assert(isnan(cohort_half_to_float(0x7c01)));
    ck_assert(isnan(cohort_half_to_float(0xfe00)));
}
END_TEST

START_TEST(test_bf16_to_float_exhaustive)
{
    check_to_float_exhaustive(&conv_bf16);
}
END_TEST

START_TEST(test_bf16_round_trip_exhaustive)
{
    check_round_trip_exhaustive(&conv_bf16);
}
END_TEST

START_TEST(test_bf16_halfway_to_even)
{
    check_halfway_to_even(&conv_bf16);
}
END_TEST

START_TEST(test_bf16_sampled_floats)
{
    check_sampled_floats(&conv_bf16);
}
END_TEST

START_TEST(test_bf16_special_values)
{
    ck_assert_uint_eq(cohort_float_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80); /* tie, even */
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82); /* tie, even */
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x3f808001u)), 0x3f81);
    ck_assert_uint_eq(cohort_float_to_bf16(FLT_MAX), 0x7f80); /* rounds up to infinity */
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x7f7f7fffu)), 0x7f7f);
    ck_assert_uint_eq(cohort_float_to_bf16(-INFINITY), 0xff80);
    ck_assert_uint_eq(cohort_float_to_bf16(-0.0f), 0x8000);
    ck_assert_uint_eq(cohort_float_to_bf16(FLT_TRUE_MIN), 0x0000);
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x00008001u)), 0x0001);
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x00018000u)), 0x0002);
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0x7f800001u)), 0x7fc0);
    ck_assert_uint_eq(cohort_float_to_bf16(f32_from_bits(0xffa00000u)), 0xffe0);
    ck_assert(isnan(cohort_bf16_to_float(0x7f81)));
    ck_assert(cohort_bf16_to_float(0x0001) == ldexpf(1.0f, -133));
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Names, sizes, validation                                                                    */
/* ------------------------------------------------------------------------------------------ */

START_TEST(test_names_and_sizes)
{
    static const char *const dt_names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                           "uint64", "float16", "bfloat16", "float32", "float64"};
    static const size_t dt_sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

    for (int i = 0; i < NDTYPES; i++) {
        ck_assert_str_eq(cohort_dtype_name(all_dtypes[i]), dt_names[i]);
        ck_assert_uint_eq(cohort_dtype_size(all_dtypes[i]), dt_sizes[i]);
    }
    for (int i = 0; i < NOPS; i++) {
        ck_assert_str_eq(cohort_op_name(all_ops[i]), op_names[i]);
    }
    ck_assert_str_eq(cohort_dtype_name((cohort_dtype_t)NDTYPES), "unknown");
    ck_assert_str_eq(cohort_dtype_name((cohort_dtype_t)-1), "unknown");
    ck_assert_uint_eq(cohort_dtype_size((cohort_dtype_t)NDTYPES), 0);
    ck_assert_uint_eq(cohort_dtype_size((cohort_dtype_t)-1), 0);
    ck_assert_str_eq(cohort_op_name((cohort_op_t)NOPS), "unknown");
    ck_assert_str_eq(cohort_op_name((cohort_op_t)-1), "unknown");
}
END_TEST

START_TEST(test_check_pairs)
{
    for (int d = 0; d < NDTYPES; d++) {
        for (int o = 0; o < NOPS; o++) {
            cohort_dtype_t dt = all_dtypes[d];
            cohort_op_t op = all_ops[o];
            cohort_status_t want =
                (op == COHORT_AVG && !is_float_dtype(dt)) ? COHORT_ERR_INVALID_ARG : COHORT_OK;
            ck_assert_msg(cohort_reduce_check(dt, op) == want, "%s %s", cohort_dtype_name(dt),
                          cohort_op_name(op));
        }
    }
}
END_TEST

START_TEST(test_check_avg_rejected_on_integers)
{
    static const cohort_dtype_t ints[] = {COHORT_INT8,   COHORT_UINT8, COHORT_INT32,
                                          COHORT_UINT32, COHORT_INT64, COHORT_UINT64};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        ck_assert_int_eq(cohort_reduce_check(ints[i], COHORT_AVG), COHORT_ERR_INVALID_ARG);
    }
}
END_TEST

START_TEST(test_check_bad_dtype_and_op)
{
    static const int bad_dtypes[] = {-1, NDTYPES, NDTYPES + 1, 1000};
    static const int bad_ops[] = {-1, NOPS, NOPS + 1, 1000};

    for (size_t i = 0; i < sizeof(bad_dtypes) / sizeof(bad_dtypes[0]); i++) {
        ck_assert_int_eq(cohort_reduce_check((cohort_dtype_t)bad_dtypes[i], COHORT_SUM),
                         COHORT_ERR_INVALID_ARG);
        ck_assert_int_eq(cohort_reduce_check((cohort_dtype_t)bad_dtypes[i], COHORT_AVG),
                         COHORT_ERR_INVALID_ARG);
    }
    for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
        ck_assert_int_eq(cohort_reduce_check(COHORT_FLOAT32, (cohort_op_t)bad_ops[i]),
                         COHORT_ERR_INVALID_ARG);
        ck_assert_int_eq(cohort_reduce_check(COHORT_INT32, (cohort_op_t)bad_ops[i]),
                         COHORT_ERR_INVALID_ARG);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Reduction against a reference                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Raw bits of element i, zero-extended. */
static uint64_t load_bits(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (cohort_dtype_size(dt)) {
    case 1:
        return ((const uint8_t *)buf)[i];
    case 2:
        return ((const uint16_t *)buf)[i];
    case 4:
        return ((const uint32_t *)buf)[i];
    default:
        return ((const uint64_t *)buf)[i];
    }
}

static void store_bits(cohort_dtype_t dt, void *buf, size_t i, uint64_t bits)
{
    switch (cohort_dtype_size(dt)) {
    case 1:
        ((uint8_t *)buf)[i] = (uint8_t)bits;
        break;
    case 2:
        ((uint16_t *)buf)[i] = (uint16_t)bits;
        break;
    case 4:
        ((uint32_t *)buf)[i] = (uint32_t)bits;
        break;
    default:
        ((uint64_t *)buf)[i] = bits;
        break;
    }
}

/* Element i as a signed value, sign-extended from the element width. */
static int64_t load_signed(cohort_dtype_t dt, const void *buf, size_t i)
{
    int shift = 64 - 8 * (int)cohort_dtype_size(dt);
    return (int64_t)(load_bits(dt, buf, i) << shift) >> shift;
}

/* Element i of a floating buffer as a double (exact). */
static double load_value(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case COHORT_FLOAT16:
        return ref_decode(&fmt_half, ((const uint16_t *)buf)[i]);
    case COHORT_BFLOAT16:
        return ref_decode(&fmt_bf16, ((const uint16_t *)buf)[i]);
    case COHORT_FLOAT32:
        return ((const float *)buf)[i];
    default:
        return ((const double *)buf)[i];
    }
}

/* Reference MIN/MAX as documented in host.c: NaN wins, -0 < +0. */
static double ref_min(double x, double y)
{
    if (isnan(x) || isnan(y)) {
        return NAN;
    }
    if (x == y) {
        return signbit(x) ? x : y;
    }
    return x < y ? x : y;
}

static double ref_max(double x, double y)
{
    if (isnan(x) || isnan(y)) {
        return NAN;
    }
    if (x == y) {
        return signbit(x) ? y : x;
    }
    return x > y ? x : y;
}

/* The expected element: bits for integers; for floats a value (NaN meaning any NaN). */
typedef struct {
    uint64_t bits;
    double value;
} expect_t;

static expect_t ref_elem(cohort_dtype_t dt, cohort_op_t op, const void *a, const void *b, size_t i)
{
    expect_t e = {0, 0};

    if (!is_float_dtype(dt)) {
        uint64_t ua = load_bits(dt, a, i), ub = load_bits(dt, b, i);
        int64_t sa = load_signed(dt, a, i), sb = load_signed(dt, b, i);
        int is_signed = dt == COHORT_INT8 || dt == COHORT_INT32 || dt == COHORT_INT64;
        int a_less = is_signed ? sa < sb : ua < ub;
        switch (op) {
        case COHORT_SUM:
        case COHORT_AVG:
            e.bits = ua + ub;
            break;
        case COHORT_PROD:
            e.bits = ua * ub;
            break;
        case COHORT_MIN:
            e.bits = a_less ? ua : ub;
            break;
        case COHORT_MAX:
            e.bits = a_less ? ub : ua;
            break;
        }
        int width = 8 * (int)cohort_dtype_size(dt);
        if (width < 64) {
            e.bits &= (1ull << width) - 1;
        }
        return e;
    }

    double x = load_value(dt, a, i), y = load_value(dt, b, i);
    switch (op) {
    case COHORT_SUM:
    case COHORT_AVG:
        /* float32 in float, float64 in double, 16-bit types in float then rounded */
        e.value = dt == COHORT_FLOAT64 ? x + y : (double)((float)x + (float)y);
        break;
    case COHORT_PROD:
        e.value = dt == COHORT_FLOAT64 ? x * y : (double)((float)x * (float)y);
        break;
    case COHORT_MIN:
        e.value = ref_min(x, y);
        break;
    case COHORT_MAX:
        e.value = ref_max(x, y);
        break;
    }
    if (dt == COHORT_FLOAT16) {
        e.value = ref_round(&fmt_half, e.value);
    } else if (dt == COHORT_BFLOAT16) {
        e.value = ref_round(&fmt_bf16, e.value);
    }
    return e;
}

static int elem_matches(cohort_dtype_t dt, const void *got, size_t i, expect_t want)
{
    if (is_float_dtype(dt)) {
        return same_value(load_value(dt, got, i), want.value);
    }
    return load_bits(dt, got, i) == want.bits;
}

/* Specific pairs worth having in every run: wraparound, extremes, NaN, signed zeros, inf. */
static void put_specials(cohort_dtype_t dt, void *a, void *b)
{
    switch (dt) {
    case COHORT_INT8: {
        static const int8_t x[] = {127, -128, -128, 127, 0, 100, -1, 64, -128};
        static const int8_t y[] = {1, -1, -128, 127, -1, 3, -1, 2, 1};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_UINT8: {
        static const uint8_t x[] = {255, 255, 16, 0, 128, 255};
        static const uint8_t y[] = {1, 255, 16, 255, 2, 0};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_INT32: {
        static const int32_t x[] = {INT32_MAX, INT32_MIN, INT32_MIN, 65536, -1, INT32_MAX};
        static const int32_t y[] = {1, -1, INT32_MAX, 65536, 0, INT32_MAX};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_UINT32: {
        static const uint32_t x[] = {UINT32_MAX, UINT32_MAX, 65536, 0, 1u << 31};
        static const uint32_t y[] = {1, UINT32_MAX, 65536, UINT32_MAX, 2};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_INT64: {
        static const int64_t x[] = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, -1, INT64_MIN};
        static const int64_t y[] = {INT64_MAX, INT64_MIN, -1, 1, 0, INT64_MIN};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_UINT64: {
        static const uint64_t x[] = {UINT64_MAX, UINT64_MAX, 1ull << 63, 0, UINT64_MAX};
        static const uint64_t y[] = {0, 1, 2, UINT64_MAX, UINT64_MAX};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_FLOAT16: {
        /* NaN, 1 | 1, NaN | +0,-0 | -0,+0 | inf,-inf | 65504,65504 | 2^-24,2^-24 | -1,1 */
        static const uint16_t x[] = {0x7e00, 0x3c00, 0x0000, 0x8000,
                                     0x7c00, 0x7bff, 0x0001, 0xbc00};
        static const uint16_t y[] = {0x3c00, 0x7e00, 0x8000, 0x0000,
                                     0xfc00, 0x7bff, 0x0001, 0x3c00};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_BFLOAT16: {
        static const uint16_t x[] = {0x7fc0, 0x3f80, 0x0000, 0x8000,
                                     0x7f80, 0x7f7f, 0x0001, 0xbf80};
        static const uint16_t y[] = {0x3f80, 0x7fc0, 0x8000, 0x0000,
                                     0xff80, 0x7f7f, 0x0001, 0x3f80};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_FLOAT32: {
        static const float x[] = {NAN, 1.0f, 0.0f, -0.0f, INFINITY, FLT_MAX, FLT_TRUE_MIN, -1.0f};
        static const float y[] = {1.0f, NAN, -0.0f, 0.0f, -INFINITY, FLT_MAX, 0.5f, 1.0f};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    case COHORT_FLOAT64: {
        static const double x[] = {NAN, 1.0, 0.0, -0.0, INFINITY, DBL_MAX, DBL_TRUE_MIN, -1.0};
        static const double y[] = {1.0, NAN, -0.0, 0.0, -INFINITY, DBL_MAX, 0.5, 1.0};
        memcpy(a, x, sizeof(x));
        memcpy(b, y, sizeof(y));
        break;
    }
    }
}

/* A "usual" float: a few significant bits, magnitude around 1..1000, either sign. */
static double usual_value(void)
{
    double v = (double)(rng_next() % 200001) / 200.0 - 500.0;
    return v;
}

/* Random operands: raw random bits (for floats: every other element, giving NaNs, infinities,
 * subnormals and huge values), usual values for the other floats, then the specials. */
static void fill_operands(cohort_dtype_t dt, void *a, void *b, size_t n)
{
    void *bufs[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = rng_next();
            if (is_float_dtype(dt) && (i & 1)) {
                double v = usual_value();
                switch (dt) {
                case COHORT_FLOAT16:
                    bits = ref_to_fmt(&fmt_half, v);
                    break;
                case COHORT_BFLOAT16:
                    bits = ref_to_fmt(&fmt_bf16, v);
                    break;
                case COHORT_FLOAT32:
                    bits = f32_bits((float)v);
                    break;
                default:
                    memcpy(&bits, &v, sizeof(bits));
                    break;
                }
            }
            store_bits(dt, bufs[k], i, bits);
        }
    }
    put_specials(dt, a, b);
}

enum { ALIAS_NONE, ALIAS_DST_A, ALIAS_DST_B, ALIAS_ALL, ALIAS_A_B, ALIAS_MODES };
static const char *const alias_names[] = {"dst apart", "dst == a", "dst == b", "dst == a == b",
                                          "a == b"};

/*
 * For each op and aliasing mode, reduce n elements and compare with the reference; the
 * element after the last must be untouched (guards the loop bound).
 */
static void check_dtype(cohort_dtype_t dt, size_t n, mismatch_t *m)
{
    static uint64_t a[NELEM + 1], b[NELEM + 1], dst[NELEM + 1];
    static const uint64_t guard = 0x5a5a5a5a5a5a5a5aull;

    for (int o = 0; o < NOPS; o++) {
        cohort_op_t op = all_ops[o];
        for (int mode = 0; mode < ALIAS_MODES; mode++) {
            fill_operands(dt, a, b, NELEM);
            if (mode == ALIAS_ALL || mode == ALIAS_A_B) {
                memcpy(b, a, sizeof(a));
            }
            expect_t want[NELEM];
            for (size_t i = 0; i < n; i++) {
                want[i] = ref_elem(dt, op, a, b, i);
            }

            void *out = dst, *pa = a, *pb = b;
            switch (mode) {
            case ALIAS_DST_A:
                out = a;
                break;
            case ALIAS_DST_B:
                out = b;
                break;
            case ALIAS_ALL:
                out = pb = a;
                break;
            case ALIAS_A_B:
                pb = a;
                break;
            }
            if (out == dst) {
                memset(dst, 0x5a, sizeof(dst));
            } else {
                store_bits(dt, out, n, guard);
            }
            uint64_t guard_elem = load_bits(dt, out, n);

            cohort_reduce_local(out, pa, pb, n, dt, op);

            for (size_t i = 0; i < n; i++) {
                if (!elem_matches(dt, out, i, want[i])) {
                    mismatch_note(m,
                                  "%s %s (%s) n=%zu: element %zu: a=0x%llx b=0x%llx got 0x%llx "
                                  "want 0x%llx / %a",
                                  cohort_dtype_name(dt), cohort_op_name(op), alias_names[mode], n,
                                  i, (unsigned long long)load_bits(dt, pa, i),
                                  (unsigned long long)load_bits(dt, pb, i),
                                  (unsigned long long)load_bits(dt, out, i),
                                  (unsigned long long)want[i].bits, want[i].value);
                }
            }
            if (load_bits(dt, out, n) != guard_elem) {
                mismatch_note(m, "%s %s (%s) n=%zu: wrote past the end", cohort_dtype_name(dt),
                              cohort_op_name(op), alias_names[mode], n);
            }
        }
    }
}

/* Loop test: _i indexes all_dtypes, so each dtype reports on its own. */
START_TEST(test_reduce_vs_reference)
{
    static const size_t counts[] = {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, NELEM};
    cohort_dtype_t dt = all_dtypes[_i];
    mismatch_t m = {0};

    rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        check_dtype(dt, counts[c], &m);
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}
END_TEST

START_TEST(test_integer_wraparound)
{
    int8_t i8a[] = {127, -128, 100}, i8b[] = {1, -1, 3}, i8d[3];
    cohort_reduce_local(i8d, i8a, i8b, 3, COHORT_INT8, COHORT_SUM);
    ck_assert_int_eq(i8d[0], -128);
    ck_assert_int_eq(i8d[1], 127);
    ck_assert_int_eq(i8d[2], 103);
    cohort_reduce_local(i8d, i8a, i8b, 3, COHORT_INT8, COHORT_PROD);
    ck_assert_int_eq(i8d[0], 127);
    ck_assert_int_eq(i8d[1], -128); /* -128 * -1 = 128, wraps to -128 */
    ck_assert_int_eq(i8d[2], 44);   /* 300 - 256 */

    uint8_t u8a[] = {16, 255, 255}, u8b[] = {16, 255, 1}, u8d[3];
    cohort_reduce_local(u8d, u8a, u8b, 3, COHORT_UINT8, COHORT_PROD);
    ck_assert_uint_eq(u8d[0], 0);
    ck_assert_uint_eq(u8d[1], 1);
    ck_assert_uint_eq(u8d[2], 255);
    cohort_reduce_local(u8d, u8a, u8b, 3, COHORT_UINT8, COHORT_SUM);
    ck_assert_uint_eq(u8d[2], 0);

    int32_t i32a[] = {INT32_MAX}, i32b[] = {1}, i32d[1];
    cohort_reduce_local(i32d, i32a, i32b, 1, COHORT_INT32, COHORT_SUM);
    ck_assert_int_eq(i32d[0], INT32_MIN);

    int64_t i64a[] = {INT64_MIN, INT64_MAX, INT64_MAX}, i64b[] = {INT64_MAX, INT64_MIN, 1};
    int64_t i64d[3];
    cohort_reduce_local(i64d, i64a, i64b, 3, COHORT_INT64, COHORT_MIN);
    ck_assert_int_eq(i64d[0], INT64_MIN);
    ck_assert_int_eq(i64d[1], INT64_MIN);
    ck_assert_int_eq(i64d[2], 1);
    cohort_reduce_local(i64d, i64a, i64b, 3, COHORT_INT64, COHORT_MAX);
    ck_assert_int_eq(i64d[0], INT64_MAX);
    ck_assert_int_eq(i64d[1], INT64_MAX);
    ck_assert_int_eq(i64d[2], INT64_MAX);
    cohort_reduce_local(i64d, i64a, i64b, 3, COHORT_INT64, COHORT_SUM);
    ck_assert_int_eq(i64d[0], -1);
    ck_assert_int_eq(i64d[2], INT64_MIN);

    uint64_t u64a[] = {UINT64_MAX, 0}, u64b[] = {0, UINT64_MAX}, u64d[2];
    cohort_reduce_local(u64d, u64a, u64b, 2, COHORT_UINT64, COHORT_MIN);
    ck_assert_uint_eq(u64d[0], 0);
    ck_assert_uint_eq(u64d[1], 0);
    cohort_reduce_local(u64d, u64a, u64b, 2, COHORT_UINT64, COHORT_MAX);
    ck_assert_uint_eq(u64d[0], UINT64_MAX);
    ck_assert_uint_eq(u64d[1], UINT64_MAX);
}
END_TEST

START_TEST(test_float_min_max_nan_and_zero)
{
    float a[] = {NAN, 1.0f, 0.0f, -0.0f}, b[] = {1.0f, NAN, -0.0f, 0.0f}, d[4];

    cohort_reduce_local(d, a, b, 4, COHORT_FLOAT32, COHORT_MIN);
    ck_assert(isnan(d[0]) && isnan(d[1]));
    ck_assert(d[2] == 0 && signbit(d[2]) && d[3] == 0 && signbit(d[3]));
    cohort_reduce_local(d, a, b, 4, COHORT_FLOAT32, COHORT_MAX);
    ck_assert(isnan(d[0]) && isnan(d[1]));
    ck_assert(d[2] == 0 && !signbit(d[2]) && d[3] == 0 && !signbit(d[3]));
}
END_TEST

START_TEST(test_count_zero)
{
    uint64_t a[2] = {1, 2}, b[2] = {3, 4}, d[2] = {5, 6};

    for (int i = 0; i < NDTYPES; i++) {
        for (int o = 0; o < NOPS; o++) {
            cohort_reduce_local(NULL, NULL, NULL, 0, all_dtypes[i], all_ops[o]);
            cohort_reduce_local(d, a, b, 0, all_dtypes[i], all_ops[o]);
            cohort_reduce_local(a, a, b, 0, all_dtypes[i], all_ops[o]);
            cohort_reduce_finish(NULL, 0, all_dtypes[i], all_ops[o], 3);
            cohort_reduce_finish(d, 0, all_dtypes[i], all_ops[o], 3);
        }
    }
    ck_assert(a[0] == 1 && a[1] == 2 && b[0] == 3 && b[1] == 4 && d[0] == 5 && d[1] == 6);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* AVG                                                                                         */
/* ------------------------------------------------------------------------------------------ */

START_TEST(test_avg_finish)
{
    static const cohort_dtype_t floats[] = {COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32,
                                            COHORT_FLOAT64};
    static const int nranks[] = {1, 2, 3, 7, 1000};
    static uint64_t buf[NELEM], orig[NELEM], junk[NELEM];
    mismatch_t m = {0};

    rng_state = 12345;
    for (size_t f = 0; f < sizeof(floats) / sizeof(floats[0]); f++) {
        cohort_dtype_t dt = floats[f];
        for (size_t k = 0; k < sizeof(nranks) / sizeof(nranks[0]); k++) {
            int n = nranks[k];
            fill_operands(dt, orig, junk, NELEM);
            memcpy(buf, orig, sizeof(buf));
            cohort_reduce_finish(buf, NELEM, dt, COHORT_AVG, n);
            for (size_t i = 0; i < NELEM; i++) {
                double x = load_value(dt, orig, i), want;
                switch (dt) {
                case COHORT_FLOAT16:
                    want = ref_round(&fmt_half, (float)x / (float)n);
                    break;
                case COHORT_BFLOAT16:
                    want = ref_round(&fmt_bf16, (float)x / (float)n);
                    break;
                case COHORT_FLOAT32:
                    want = (float)x / (float)n;
                    break;
                default:
                    want = x / n;
                    break;
                }
                if (!same_value(load_value(dt, buf, i), want)) {
                    mismatch_note(&m, "%s / %d: element %zu: %a / %d = %a, want %a",
                                  cohort_dtype_name(dt), n, i, x, n, load_value(dt, buf, i), want);
                }
            }
            /* other ops: finish leaves the buffer alone */
            memcpy(buf, orig, sizeof(buf));
            for (int o = 0; o < NOPS; o++) {
                if (all_ops[o] != COHORT_AVG) {
                    cohort_reduce_finish(buf, NELEM, dt, all_ops[o], n);
                }
            }
            if (memcmp(buf, orig, sizeof(buf)) != 0) {
                mismatch_note(&m, "%s: finish changed a non-AVG result", cohort_dtype_name(dt));
            }
        }
    }
    ck_assert_msg(m.count == 0, "%ld mismatches, first: %s", m.count, m.first);
}
END_TEST

/* Three ranks' contributions reduced with AVG, then finished: the mean. */
START_TEST(test_avg_end_to_end)
{
    float f32[3][4] = {{1, 2, -3, 0.5f}, {4, 5, 6, 0.25f}, {7, -8, 9, 0.25f}};
    double f64[3][4] = {{1, 2, -3, 0.5}, {4, 5, 6, 0.25}, {7, -8, 9, 0.25}};
    uint16_t h[3][4], bf[3][4];
    const float want[4] = {4, -1.0f / 3.0f, 4, 1.0f / 3.0f};

    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < 4; i++) {
            h[r][i] = cohort_float_to_half(f32[r][i]);
            bf[r][i] = cohort_float_to_bf16(f32[r][i]);
        }
    }
    for (int r = 1; r < 3; r++) {
        cohort_reduce_local(f32[0], f32[0], f32[r], 4, COHORT_FLOAT32, COHORT_AVG);
        cohort_reduce_local(f64[0], f64[r], f64[0], 4, COHORT_FLOAT64, COHORT_AVG);
        cohort_reduce_local(h[0], h[0], h[r], 4, COHORT_FLOAT16, COHORT_AVG);
        cohort_reduce_local(bf[0], bf[r], bf[0], 4, COHORT_BFLOAT16, COHORT_AVG);
    }
    cohort_reduce_finish(f32[0], 4, COHORT_FLOAT32, COHORT_AVG, 3);
    cohort_reduce_finish(f64[0], 4, COHORT_FLOAT64, COHORT_AVG, 3);
    cohort_reduce_finish(h[0], 4, COHORT_FLOAT16, COHORT_AVG, 3);
    cohort_reduce_finish(bf[0], 4, COHORT_BFLOAT16, COHORT_AVG, 3);
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(f32[0][i], want[i]);
        ck_assert_double_eq_tol(f64[0][i], want[i], 1e-7);
        ck_assert_uint_eq(h[0][i], cohort_float_to_half(want[i]));
        ck_assert_uint_eq(bf[0][i], cohort_float_to_bf16(want[i]));
    }
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");

    TCase *tc = tcase_create("half");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_half_to_float_exhaustive);
    tcase_add_test(tc, test_half_round_trip_exhaustive);
    tcase_add_test(tc, test_half_halfway_to_even);
    tcase_add_test(tc, test_half_sampled_floats);
    tcase_add_test(tc, test_half_special_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("bf16");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bf16_to_float_exhaustive);
    tcase_add_test(tc, test_bf16_round_trip_exhaustive);
    tcase_add_test(tc, test_bf16_halfway_to_even);
    tcase_add_test(tc, test_bf16_sampled_floats);
    tcase_add_test(tc, test_bf16_special_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_names_and_sizes);
    tcase_add_test(tc, test_check_pairs);
    tcase_add_test(tc, test_check_avg_rejected_on_integers);
    tcase_add_test(tc, test_check_bad_dtype_and_op);
    suite_add_tcase(s, tc);

    tc = tcase_create("local");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_reduce_vs_reference, 0, NDTYPES);
    tcase_add_test(tc, test_integer_wraparound);
    tcase_add_test(tc, test_float_min_max_nan_and_zero);
    tcase_add_test(tc, test_count_zero);
    suite_add_tcase(s, tc);

    tc = tcase_create("avg");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_avg_finish);
    tcase_add_test(tc, test_avg_end_to_end);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reduce_suite());
    srunner_run_all(sr, CK_ENV);
    int failures = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failures != 0;
}
