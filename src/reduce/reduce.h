/* Host reduction kernels: pure arithmetic, no UCX, no PMIx. */
#ifndef COHORT_REDUCE_H
#define COHORT_REDUCE_H

#include "cohort.h"
#include "base/dtype.h"

/**
 * Validate a (dtype, op) pair: COHORT_ERR_INVALID_ARG for an unknown dtype or op, or for
 * COHORT_AVG on an integer type; COHORT_OK otherwise. Does not log.
 */
cohort_status_t cohort_reduce_check(cohort_dtype_t dt, cohort_op_t op);

/**
 * dst[i] = a[i] op b[i] for i < count. dst may alias a or b exactly (not partially).
 * COHORT_AVG reduces as COHORT_SUM here; cohort_reduce_finish() divides at the end.
 * Integer SUM/PROD wrap (two's complement, computed unsigned so no UB).
 * float16/bfloat16: each element converted to float, reduced, rounded to nearest even.
 */
void cohort_reduce_local(void *dst, const void *a, const void *b, size_t count, cohort_dtype_t dt,
                         cohort_op_t op);

/** For COHORT_AVG: buf[i] /= nranks (rounded to nearest even for 16-bit floats); other ops:
 *  nothing. */
void cohort_reduce_finish(void *buf, size_t count, cohort_dtype_t dt, cohort_op_t op, int nranks);

/* 16-bit float conversions (IEEE binary16 and bfloat16), round to nearest even, NaN kept. */
float cohort_half_to_float(uint16_t h);
uint16_t cohort_float_to_half(float f);
float cohort_bf16_to_float(uint16_t b);
uint16_t cohort_float_to_bf16(float f);

#endif
