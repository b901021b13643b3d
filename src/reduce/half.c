/* The 16-bit float conversions (defined in elem.h, shared with the CUDA kernels) by their
 * internal names (reduce.h) and their public ones (cohort.h). */
#include "reduce/elem.h"
#include "reduce/reduce.h"

float cohort_half_to_float(uint16_t h)
{
    return cohort_elem_half_to_float(h);
}

uint16_t cohort_float_to_half(float f)
{
    return cohort_elem_float_to_half(f);
}

float cohort_bf16_to_float(uint16_t b)
{
    return cohort_elem_bf16_to_float(b);
}

uint16_t cohort_float_to_bf16(float f)
{
    return cohort_elem_float_to_bf16(f);
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
