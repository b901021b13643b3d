/*
 * 16-bit floating-point conversions: IEEE 754 binary16 ("half") and bfloat16, to and from
 * binary32, in portable integer arithmetic (no _Float16, no F16C), so every build rounds the
 * same way.
 *
 * Float to 16 bits rounds to nearest, ties to even; values past the largest finite 16-bit
 * value round to infinity exactly when IEEE says they do. NaNs stay NaN: the sign and the top
 * payload bits are kept and the quiet bit is set, so a signalling NaN comes back quiet and a
 * payload whose kept bits are all zero cannot turn into an infinity.
 */
#include <string.h>

#include "reduce/reduce.h"

#define F32_SIGN      0x80000000u
#define F32_EXP_MASK  0x7f800000u
#define F32_QUIET     0x00400000u
#define F16_SIGN      0x8000u
#define F16_EXP_MASK  0x7c00u
#define F16_MANT_MASK 0x03ffu
#define F16_QUIET     0x0200u
#define BF16_QUIET    0x0040u

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

float cohort_half_to_float(uint16_t h)
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

uint16_t cohort_float_to_half(float f)
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

float cohort_bf16_to_float(uint16_t b)
{
    if ((b & 0x7fffu) > 0x7f80u) {
        b |= BF16_QUIET;
    }
    return f32_from_bits((uint32_t)b << 16);
}

uint16_t cohort_float_to_bf16(float f)
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

/* The public names (cohort.h). The reductions call the internal ones above, which the compiler
 * may inline; these stay out of their loops. */
float cohort_float16_to_float(uint16_t h)
{
    return cohort_half_to_float(h);
}

uint16_t cohort_float_to_float16(float f)
{
    return cohort_float_to_half(f);
}

float cohort_bfloat16_to_float(uint16_t b)
{
    return cohort_bf16_to_float(b);
}

uint16_t cohort_float_to_bfloat16(float f)
{
    return cohort_float_to_bf16(f);
}
