/*
 * Element operations of the reductions and the 16-bit float conversions, shared by the host
 * loops (host.c, half.c) and the CUDA kernels (cuda/kernels.cu): one definition compiled for
 * both, so a device reduction is bitwise the host one by construction (nvcc runs with
 * -fmad=false, and these are single IEEE operations in either compiler).
 */
#ifndef COHORT_REDUCE_ELEM_H
#define COHORT_REDUCE_ELEM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define COHORT_HD __host__ __device__
#else
#define COHORT_HD __attribute__((always_inline))
#endif

/*
 * 16-bit floating-point conversions: IEEE 754 binary16 ("half") and bfloat16, to and from
 * binary32, in portable integer arithmetic (no _Float16, no F16C, no cuda_fp16.h), so every
 * build and the device round the same way.
 *
 * Float to 16 bits rounds to nearest, ties to even; values past the largest finite 16-bit
 * value round to infinity exactly when IEEE says they do. NaNs stay NaN: the sign and the top
 * payload bits are kept and the quiet bit is set, so a signalling NaN comes back quiet and a
 * payload whose kept bits are all zero cannot turn into an infinity.
 */
#define F32_SIGN      0x80000000u
#define F32_EXP_MASK  0x7f800000u
#define F32_QUIET     0x00400000u
#define F16_SIGN      0x8000u
#define F16_EXP_MASK  0x7c00u
#define F16_MANT_MASK 0x03ffu
#define F16_QUIET     0x0200u
#define BF16_QUIET    0x0040u

static inline COHORT_HD uint32_t f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

static inline COHORT_HD float f32_from_bits(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

static inline COHORT_HD float cohort_elem_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & F16_SIGN) << 16;
    int exp = (h & F16_EXP_MASK) >> 10;
    uint32_t mant = h & F16_MANT_MASK;

    if (exp == 0x1f) {
        if (mant == 0) {
            return f32_from_bits(sign | F32_EXP_MASK);
        }
        return f32_from_bits(sign | F32_EXP_MASK | F32_QUIET | (mant << 13));
    }
    if (exp == 0) {
        if (mant == 0) {
            return f32_from_bits(sign);
        }
        /* Subnormal: mant * 2^-24. Shift the leading one up to the implicit bit (bit 10); each
         * shift lowers the exponent by one from that of the smallest normal, 2^-14. */
        exp = 1;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            exp--;
        }
        mant &= F16_MANT_MASK;
    }
    /* Rebias 15 -> 127. exp is at least -9 here, so the float exponent is at least 103: every
     * half is a normal float. */
    return f32_from_bits(sign | ((uint32_t)(exp + 112) << 23) | (mant << 13));
}

static inline COHORT_HD uint16_t cohort_elem_float_to_half(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & F16_SIGN);
    uint32_t abs = x & ~F32_SIGN;

    if (abs > F32_EXP_MASK) {
        return sign | F16_EXP_MASK | F16_QUIET | (uint16_t)((abs >> 13) & F16_MANT_MASK);
    }
    if (abs >= 0x38800000u) {
        /* Normal in half (|f| >= 2^-14): rebias, then add just under half an ulp plus the
         * lowest kept bit, which rounds ties to even. A carry out of the mantissa bumps the
         * exponent, which is the right answer, and carries to 0x7c00 (inf) past 65504; the
         * comparison also catches float infinities and anything far above the half range. */
        uint32_t h = (abs - (112u << 23) + 0x0fffu + ((abs >> 13) & 1u)) >> 13;
        return sign | (uint16_t)(h >= F16_EXP_MASK ? F16_EXP_MASK : h);
    }
    if (abs <= 0x33000000u) {
        /* |f| <= 2^-25, half the smallest subnormal: ties go to the even neighbour, zero. */
        return sign;
    }
    /* Subnormal in half: the result is |f| / 2^-24 rounded to an integer. With m the float's
     * 24-bit significand and e its biased exponent, |f| = m * 2^(e - 150), so the result is
     * m >> (126 - e), rounded. e is in [102, 112] here, so the shift is in [14, 24]. A round up
     * to 0x400 is the smallest normal, correctly encoded. */
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x007fffffu) | 0x00800000u;
    uint32_t shift = 126u - e;
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) {
        q++;
    }
    return sign | (uint16_t)q;
}

static inline COHORT_HD float cohort_elem_bf16_to_float(uint16_t b)
{
    if ((b & 0x7fffu) > 0x7f80u) {
        b |= BF16_QUIET;
    }
    return f32_from_bits((uint32_t)b << 16);
}

static inline COHORT_HD uint16_t cohort_elem_float_to_bf16(float f)
{
    uint32_t x = f32_bits(f);

    if ((x & ~F32_SIGN) > F32_EXP_MASK) {
        return (uint16_t)(x >> 16) | BF16_QUIET;
    }
    /* bfloat16 is the top half of a float: round the bottom half away, ties to even. Overflow
     * carries into the exponent and lands exactly on infinity (0x7f80); infinities, zeros and
     * subnormals need no special case. Cannot overflow 32 bits: x <= 0xff800000 here. */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ------------------------------------------------------------------------------------------ */
/* Element operations                                                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * Integers. SUM and PROD are computed in the unsigned twin of the type, where overflow wraps by
 * definition; the operands of the 8-bit types promote to int, where the product of two values
 * below 256 cannot overflow. Converting the result back to a signed type is
 * implementation-defined, not undefined, and GCC and Clang both keep the two's-complement bits.
 * The macro only stamps out the four one-line functions for each width.
 */
#define COHORT_REDUCE_INT_OPS(_sfx, _type, _utype)                                                 \
    static inline COHORT_HD _type sum_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        return (_type)(_utype)((_utype)x + (_utype)y);                                             \
    }                                                                                              \
    static inline COHORT_HD _type prod_##_sfx(_type x, _type y)                                    \
    {                                                                                              \
        return (_type)(_utype)((_utype)x * (_utype)y);                                             \
    }                                                                                              \
    static inline COHORT_HD _type min_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        return x < y ? x : y;                                                                      \
    }                                                                                              \
    static inline COHORT_HD _type max_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        return x > y ? x : y;                                                                      \
    }

COHORT_REDUCE_INT_OPS(i8, int8_t, uint8_t)
COHORT_REDUCE_INT_OPS(u8, uint8_t, uint8_t)
COHORT_REDUCE_INT_OPS(i32, int32_t, uint32_t)
COHORT_REDUCE_INT_OPS(u32, uint32_t, uint32_t)
COHORT_REDUCE_INT_OPS(i64, int64_t, uint64_t)
COHORT_REDUCE_INT_OPS(u64, uint64_t, uint64_t)

/*
 * Floating MIN/MAX follow IEEE 754-2019 minimum/maximum, not C's fmin/fmax:
 *  - a NaN operand gives NaN (the first NaN operand). A rank that produced a NaN should see
 *    it in the result, not have it silently replaced by another rank's number.
 *  - -0 is smaller than +0. This makes both operations symmetric in their operands, so the
 *    result does not depend on the order in which an algorithm combines the ranks.
 * SUM and PROD are the plain IEEE operations, commutative except for which NaN payload
 * survives when both operands are NaN.
 */
#define COHORT_REDUCE_FLOAT_OPS(_sfx, _type)                                                       \
    static inline COHORT_HD _type sum_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        return x + y;                                                                              \
    }                                                                                              \
    static inline COHORT_HD _type prod_##_sfx(_type x, _type y)                                    \
    {                                                                                              \
        return x * y;                                                                              \
    }                                                                                              \
    static inline COHORT_HD _type min_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        if (x < y || isnan(x)) {                                                                   \
            return x;                                                                              \
        }                                                                                          \
        if (y < x || isnan(y)) {                                                                   \
            return y;                                                                              \
        }                                                                                          \
        return signbit(x) ? x : y; /* equal: only the sign of a zero can differ */                 \
    }                                                                                              \
    static inline COHORT_HD _type max_##_sfx(_type x, _type y)                                     \
    {                                                                                              \
        if (x > y || isnan(x)) {                                                                   \
            return x;                                                                              \
        }                                                                                          \
        if (y > x || isnan(y)) {                                                                   \
            return y;                                                                              \
        }                                                                                          \
        return signbit(x) ? y : x;                                                                 \
    }

COHORT_REDUCE_FLOAT_OPS(f32, float)
COHORT_REDUCE_FLOAT_OPS(f64, double)

/*
 * 16-bit floats: widen to float, operate, round back to nearest even. The result is the
 * correctly rounded 16-bit answer, not a double rounding: float carries at least 2p + 2 bits
 * of a p-bit format (24 >= 2 * 11 + 2 for binary16, 24 >= 2 * 8 + 2 for bfloat16), which is
 * enough for +, * and / rounded twice to equal rounded once. (The one exception is a bfloat16
 * result below 2^-126, where float itself is subnormal and has fewer bits: PROD and AVG there
 * may differ from the exact rounding by an ulp of 2^-133.) MIN/MAX return one operand
 * unchanged (quieted if it is a signalling NaN).
 */
#define COHORT_REDUCE_HALF_OPS(_sfx, _to_float, _from_float)                                       \
    static inline COHORT_HD uint16_t sum_##_sfx(uint16_t x, uint16_t y)                            \
    {                                                                                              \
        return _from_float(_to_float(x) + _to_float(y));                                           \
    }                                                                                              \
    static inline COHORT_HD uint16_t prod_##_sfx(uint16_t x, uint16_t y)                           \
    {                                                                                              \
        return _from_float(_to_float(x) * _to_float(y));                                           \
    }                                                                                              \
    static inline COHORT_HD uint16_t min_##_sfx(uint16_t x, uint16_t y)                            \
    {                                                                                              \
        return _from_float(min_f32(_to_float(x), _to_float(y)));                                   \
    }                                                                                              \
    static inline COHORT_HD uint16_t max_##_sfx(uint16_t x, uint16_t y)                            \
    {                                                                                              \
        return _from_float(max_f32(_to_float(x), _to_float(y)));                                   \
    }

COHORT_REDUCE_HALF_OPS(f16, cohort_elem_half_to_float, cohort_elem_float_to_half)
COHORT_REDUCE_HALF_OPS(bf16, cohort_elem_bf16_to_float, cohort_elem_float_to_bf16)

/* COHORT_AVG's final division: by the count, not a multiplication by its rounded reciprocal,
 * so that each quotient is correctly rounded. */
static inline COHORT_HD uint16_t div_f16(uint16_t x, float n)
{
    return cohort_elem_float_to_half(cohort_elem_half_to_float(x) / n);
}

static inline COHORT_HD uint16_t div_bf16(uint16_t x, float n)
{
    return cohort_elem_float_to_bf16(cohort_elem_bf16_to_float(x) / n);
}

static inline COHORT_HD float div_f32(float x, float n)
{
    return x / n;
}

static inline COHORT_HD double div_f64(double x, double n)
{
    return x / n;
}

#endif
