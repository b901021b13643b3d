/*
 * Host reduction kernels: dst = a op b, elementwise, for every (dtype, op) pair, plus the
 * final division of COHORT_AVG. The dtype table (sizes, names) is base/dtype.c.
 *
 * Layout of this file: the element operations (sum_i8, min_f32, ...) are in elem.h, shared
 * with the CUDA kernels; here one macro expansion per type defines the loops over them. Each loop
 * is one tight `for` per op so that the compiler can vectorize it (at -O3, or -O2
 * -ftree-vectorize).
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/dtype.h"
#include "reduce/elem.h"
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
    static inline __attribute__((always_inline)) _type reduce_##_sfx##_one(_type x, _type y,       \
                                                                           cohort_op_t op)         \
    {                                                                                              \
        switch (op) {                                                                              \
        case COHORT_PROD:                                                                          \
            return prod_##_sfx(x, y);                                                              \
        case COHORT_MIN:                                                                           \
            return min_##_sfx(x, y);                                                               \
        case COHORT_MAX:                                                                           \
            return max_##_sfx(x, y);                                                               \
        default:                                                                                   \
            return sum_##_sfx(x, y);                                                               \
        }                                                                                          \
    }                                                                                              \
    /* A buffer at an address its type may not live at (a float array at an odd byte): every     \
     * element goes through memcpy, which is one unaligned load or store on x86, and element i    \
     * is read before it is written, so exact aliases are still fine. */                         \
    static void reduce_##_sfx##_unaligned(unsigned char *dst, const unsigned char *a,              \
                                          const unsigned char *b, size_t n, cohort_op_t op)        \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            _type x, y, r;                                                                         \
            memcpy(&x, a + i * sizeof(_type), sizeof(_type));                                      \
            memcpy(&y, b + i * sizeof(_type), sizeof(_type));                                      \
            r = reduce_##_sfx##_one(x, y, op);                                                     \
            memcpy(dst + i * sizeof(_type), &r, sizeof(_type));                                    \
        }                                                                                          \
    }                                                                                              \
    static void reduce_##_sfx(void *dst, const void *a, const void *b, size_t n, cohort_op_t op)   \
    {                                                                                              \
        if (((uintptr_t)dst | (uintptr_t)a | (uintptr_t)b) % _Alignof(_type) != 0) {               \
            reduce_##_sfx##_unaligned(dst, a, b, n, op);                                           \
        } else if (dst != a && dst != b) {                                                         \
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
    unsigned char *p = buf;

    assert(nranks > 0);

    if (op != COHORT_AVG || nranks <= 0) {
        return;
    }
    /* Through memcpy: the buffer may be at any address (see the unaligned loops). */
    switch (dt) {
    case COHORT_FLOAT16:
    case COHORT_BFLOAT16:
        for (size_t i = 0; i < count; i++) {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            v = dt == COHORT_FLOAT16 ? div_f16(v, (float)nranks) : div_bf16(v, (float)nranks);
            memcpy(p + 2 * i, &v, 2);
        }
        break;
    case COHORT_FLOAT32: {
        float n = (float)nranks;
        for (size_t i = 0; i < count; i++) {
            float v;
            memcpy(&v, p + 4 * i, 4);
            v = div_f32(v, n);
            memcpy(p + 4 * i, &v, 4);
        }
        break;
    }
    case COHORT_FLOAT64: {
        double n = (double)nranks;
        for (size_t i = 0; i < count; i++) {
            double v;
            memcpy(&v, p + 8 * i, 8);
            v = div_f64(v, n);
            memcpy(p + 8 * i, &v, 8);
        }
        break;
    }
    default:
        /* AVG on an integer type is rejected by cohort_reduce_check(); nothing to divide. */
        break;
    }
}
