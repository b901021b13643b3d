/* The datatypes and reduction operations: sizes and printable names, for every layer. */
#include "base/dtype.h"

typedef struct {
    const char *name;
    size_t size;
    int is_float;
} cohort_dtype_info_t;

static const cohort_dtype_info_t cohort_dtype_table[] = {
    [COHORT_INT8] = {"int8", 1, 0},       [COHORT_UINT8] = {"uint8", 1, 0},
    [COHORT_INT32] = {"int32", 4, 0},     [COHORT_UINT32] = {"uint32", 4, 0},
    [COHORT_INT64] = {"int64", 8, 0},     [COHORT_UINT64] = {"uint64", 8, 0},
    [COHORT_FLOAT16] = {"float16", 2, 1}, [COHORT_BFLOAT16] = {"bfloat16", 2, 1},
    [COHORT_FLOAT32] = {"float32", 4, 1}, [COHORT_FLOAT64] = {"float64", 8, 1},
};

static const char *const cohort_op_table[] = {
    [COHORT_SUM] = "sum", [COHORT_PROD] = "prod", [COHORT_MIN] = "min",
    [COHORT_MAX] = "max", [COHORT_AVG] = "avg",
};

#define COHORT_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))

/* The casts to unsigned make a negative enum value (from a cast in the caller) out of range. */
static const cohort_dtype_info_t *cohort_dtype_info(cohort_dtype_t dt)
{
    if ((unsigned)dt >= COHORT_ARRAY_SIZE(cohort_dtype_table)) {
        return NULL;
    }
    return &cohort_dtype_table[dt];
}

static int cohort_op_valid(cohort_op_t op)
{
    return (unsigned)op < COHORT_ARRAY_SIZE(cohort_op_table);
}

size_t cohort_dtype_size(cohort_dtype_t dt)
{
    const cohort_dtype_info_t *info = cohort_dtype_info(dt);
    return info ? info->size : 0;
}

const char *cohort_dtype_name(cohort_dtype_t dt)
{
    const cohort_dtype_info_t *info = cohort_dtype_info(dt);
    return info ? info->name : "unknown";
}

const char *cohort_op_name(cohort_op_t op)
{
    return cohort_op_valid(op) ? cohort_op_table[op] : "unknown";
}

int cohort_dtype_is_float(cohort_dtype_t dt)
{
    const cohort_dtype_info_t *info = cohort_dtype_info(dt);
    return info ? info->is_float : 0;
}
