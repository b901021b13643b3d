/* The datatypes and operations of cohort.h: sizes and names (no arithmetic; see src/reduce). */
#ifndef COHORT_DTYPE_H
#define COHORT_DTYPE_H

#include <stddef.h>
#include "cohort.h"

/** Bytes per element; 0 for an unknown dtype. */
size_t cohort_dtype_size(cohort_dtype_t dt);
/** 1 for the floating types (float16, bfloat16, float32, float64). */
int cohort_dtype_is_float(cohort_dtype_t dt);

/** Printable names ("float32", "sum"); "unknown" for bad values. */
const char *cohort_dtype_name(cohort_dtype_t dt);
const char *cohort_op_name(cohort_op_t op);

#endif
