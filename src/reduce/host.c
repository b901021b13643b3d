/*
 * Host reduction kernels: dst = a op b, elementwise, for every (dtype, op) pair, plus the
 * final division of COHORT_AVG. The dtype table (sizes, names) is core/dtype.c.
 *
 * Layout of this file: per type, small inline element operations (sum_i8, min_f32, ...), then
 * one macro expansion per type that defines the loops over them. Each loop is one tight `for`
 * per op so that the compiler can vectorize it (at -O3, or -O2 -ftree-vectorize).
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "reduce/reduce.h"

cohort_status_t cohort_reduce_check(cohort_dtype_t dt, cohort_op_t op)
{
    if (cohort_dtype_size(dt) == 0 || strcmp(cohort_op_name(op), "unknown") == 0) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (op == COHORT_AVG && !cohort_dtype_is_float(dt)) {
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
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
    static inline _type sum_##_sfx(_type x, _type y)                                               \
    {                                                                                              \
        return (_type)(_utype)((_utype)x + (_utype)y);                                             \
    }                                                                                              \
    static inline _type prod_##_sfx(_type x, _type y)                                              \
    {                                                                                              \
        return (_type)(_utype)((_utype)x * (_utype)y);                                             \
    }                                                                                              \
    static inline _type min_##_sfx(_type x, _type y)                                               \
    {                                                                                              \
        return x < y ? x : y;                                                                      \
    }                                                                                              \
    static inline _type max_##_sfx(_type x, _type y)                                               \
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
    static inline _type sum_##_sfx(_type x, _type y)                                               \
    {                                                                                              \
        return x + y;                                                                              \
    }                                                                                              \
    static inline _type prod_##_sfx(_type x, _type y)                                              \
    {                                                                                              \
        return x * y;                                                                              \
    }                                                                                              \
    static inline _type min_##_sfx(_type x, _type y)                                               \
    {                                                                                              \
        if (x < y || isnan(x)) {                                                                   \
            return x;                                                                              \
        }                                                                                          \
        if (y < x || isnan(y)) {                                                                   \
            return y;                                                                              \
        }                                                                                          \
        return signbit(x) ? x : y; /* equal: only the sign of a zero can differ */                 \
    }                                                                                              \
    static inline _type max_##_sfx(_type x, _type y)                                               \
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
    static inline uint16_t sum_##_sfx(uint16_t x, uint16_t y)                                      \
    {                                                                                              \
        return _from_float(_to_float(x) + _to_float(y));                                           \
    }                                                                                              \
    static inline uint16_t prod_##_sfx(uint16_t x, uint16_t y)                                     \
    {                                                                                              \
        return _from_float(_to_float(x) * _to_float(y));                                           \
    }                                                                                              \
    static inline uint16_t min_##_sfx(uint16_t x, uint16_t y)                                      \
    {                                                                                              \
        return _from_float(min_f32(_to_float(x), _to_float(y)));                                   \
    }                                                                                              \
    static inline uint16_t max_##_sfx(uint16_t x, uint16_t y)                                      \
    {                                                                                              \
        return _from_float(max_f32(_to_float(x), _to_float(y)));                                   \
    }

COHORT_REDUCE_HALF_OPS(f16, cohort_half_to_float, cohort_float_to_half)
COHORT_REDUCE_HALF_OPS(bf16, cohort_bf16_to_float, cohort_float_to_bf16)

/* ------------------------------------------------------------------------------------------ */
/* Loops                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/*
 * For each type, COHORT_REDUCE_LOOPS defines:
 *  - reduce_<sfx>_body: one loop per op over dst, a, b (always inlined, never called alone);
 *  - four wrappers that give the compiler the aliasing facts as restrict-qualified parameters,
 *    so it vectorizes without runtime overlap checks: dst apart from a and b (a may equal b:
 *    restrict allows two read-only views of one buffer), dst == a (the in-place accumulate of
 *    most collectives), dst == b, and all three equal. In the in-place wrappers both operands
 *    are read through the one restrict pointer dst, which restrict allows; the loop reads
 *    element i before it writes element i, so an exact alias is safe;
 *  - reduce_<sfx>: picks the wrapper. A partial overlap is not supported (see reduce.h).
 * COHORT_AVG sums here; cohort_reduce_finish() divides.
 */
#define COHORT_REDUCE_LOOPS(_sfx, _type)                                                           \
    static inline __attribute__((always_inline)) void reduce_##_sfx##_body(                        \
        _type *dst, const _type *a, const _type *b, size_t n, cohort_op_t op)                      \
    {                                                                                              \
        switch (op) {                                                                              \
        case COHORT_SUM:                                                                           \
        case COHORT_AVG:                                                                           \
            for (size_t i = 0; i < n; i++) {                                                       \
                dst[i] = sum_##_sfx(a[i], b[i]);                                                   \
            }                                                                                      \
            break;                                                                                 \
        case COHORT_PROD:                                                                          \
            for (size_t i = 0; i < n; i++) {                                                       \
                dst[i] = prod_##_sfx(a[i], b[i]);                                                  \
            }                                                                                      \
            break;                                                                                 \
        case COHORT_MIN:                                                                           \
            for (size_t i = 0; i < n; i++) {                                                       \
                dst[i] = min_##_sfx(a[i], b[i]);                                                   \
            }                                                                                      \
            break;                                                                                 \
        case COHORT_MAX:                                                                           \
            for (size_t i = 0; i < n; i++) {                                                       \
                dst[i] = max_##_sfx(a[i], b[i]);                                                   \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void reduce_##_sfx##_disjoint(_type *restrict dst, const _type *restrict a,             \
                                         const _type *restrict b, size_t n, cohort_op_t op)        \
    {                                                                                              \
        reduce_##_sfx##_body(dst, a, b, n, op);                                                    \
    }                                                                                              \
    static void reduce_##_sfx##_into_a(_type *restrict dst, const _type *restrict b, size_t n,     \
                                       cohort_op_t op)                                             \
    {                                                                                              \
        reduce_##_sfx##_body(dst, dst, b, n, op);                                                  \
    }                                                                                              \
    static void reduce_##_sfx##_into_b(_type *restrict dst, const _type *restrict a, size_t n,     \
                                       cohort_op_t op)                                             \
    {                                                                                              \
        reduce_##_sfx##_body(dst, a, dst, n, op);                                                  \
    }                                                                                              \
    static void reduce_##_sfx##_self(_type *restrict dst, size_t n, cohort_op_t op)                \
    {                                                                                              \
        reduce_##_sfx##_body(dst, dst, dst, n, op);                                                \
    }                                                                                              \
    static void reduce_##_sfx(void *dst, const void *a, const void *b, size_t n, cohort_op_t op)   \
    {                                                                                              \
        if (dst != a && dst != b) {                                                                \
            reduce_##_sfx##_disjoint(dst, a, b, n, op);                                            \
        } else if (a == b) {                                                                       \
            reduce_##_sfx##_self(dst, n, op);                                                      \
        } else if (dst == a) {                                                                     \
            reduce_##_sfx##_into_a(dst, b, n, op);                                                 \
        } else {                                                                                   \
            reduce_##_sfx##_into_b(dst, a, n, op);                                                 \
        }                                                                                          \
    }

COHORT_REDUCE_LOOPS(i8, int8_t)
COHORT_REDUCE_LOOPS(u8, uint8_t)
COHORT_REDUCE_LOOPS(i32, int32_t)
COHORT_REDUCE_LOOPS(u32, uint32_t)
COHORT_REDUCE_LOOPS(i64, int64_t)
COHORT_REDUCE_LOOPS(u64, uint64_t)
COHORT_REDUCE_LOOPS(f16, uint16_t)
COHORT_REDUCE_LOOPS(bf16, uint16_t)
COHORT_REDUCE_LOOPS(f32, float)
COHORT_REDUCE_LOOPS(f64, double)

void cohort_reduce_local(void *dst, const void *a, const void *b, size_t count, cohort_dtype_t dt,
                         cohort_op_t op)
{
    /* Callers validate user input with cohort_reduce_check() first (AVG on an integer type is
     * then already rejected; here it would simply sum). */
    assert(cohort_reduce_check(dt, op == COHORT_AVG ? COHORT_SUM : op) == COHORT_OK);

    if (count == 0) {
        return;
    }
    switch (dt) {
    case COHORT_INT8:
        reduce_i8(dst, a, b, count, op);
        break;
    case COHORT_UINT8:
        reduce_u8(dst, a, b, count, op);
        break;
    case COHORT_INT32:
        reduce_i32(dst, a, b, count, op);
        break;
    case COHORT_UINT32:
        reduce_u32(dst, a, b, count, op);
        break;
    case COHORT_INT64:
        reduce_i64(dst, a, b, count, op);
        break;
    case COHORT_UINT64:
        reduce_u64(dst, a, b, count, op);
        break;
    case COHORT_FLOAT16:
        reduce_f16(dst, a, b, count, op);
        break;
    case COHORT_BFLOAT16:
        reduce_bf16(dst, a, b, count, op);
        break;
    case COHORT_FLOAT32:
        reduce_f32(dst, a, b, count, op);
        break;
    case COHORT_FLOAT64:
        reduce_f64(dst, a, b, count, op);
        break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* AVG                                                                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * Division, not multiplication by 1/nranks, so that each quotient is correctly rounded;
 * multiplying by a rounded reciprocal can be an ulp off. (float)nranks is exact up to 2^24
 * ranks.
 */
void cohort_reduce_finish(void *buf, size_t count, cohort_dtype_t dt, cohort_op_t op, int nranks)
{
    assert(nranks > 0);

    if (op != COHORT_AVG || nranks <= 0) {
        return;
    }
    switch (dt) {
    case COHORT_FLOAT16: {
        uint16_t *p = buf;
        for (size_t i = 0; i < count; i++) {
            p[i] = cohort_float_to_half(cohort_half_to_float(p[i]) / (float)nranks);
        }
        break;
    }
    case COHORT_BFLOAT16: {
        uint16_t *p = buf;
        for (size_t i = 0; i < count; i++) {
            p[i] = cohort_float_to_bf16(cohort_bf16_to_float(p[i]) / (float)nranks);
        }
        break;
    }
    case COHORT_FLOAT32: {
        float *p = buf;
        float n = (float)nranks;
        for (size_t i = 0; i < count; i++) {
            p[i] /= n;
        }
        break;
    }
    case COHORT_FLOAT64: {
        double *p = buf;
        double n = (double)nranks;
        for (size_t i = 0; i < count; i++) {
            p[i] /= n;
        }
        break;
    }
    default:
        /* AVG on an integer type is rejected by cohort_reduce_check(); nothing to divide. */
        break;
    }
}
