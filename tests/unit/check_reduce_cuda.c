/*
 * The CUDA module (src/reduce/cuda/): loads and answers "no device" without a driver; with a
 * device, every (dtype, op) kernel against the host reduction, bit for bit, with the exact
 * aliasings the collectives use, AVG's division, the n-way reduction of same-node IPC, pointer
 * kinds and copies in every direction. tests/gpu/fake_check.sh also runs it without a GPU, over
 * the fake runtime and the module whose kernels are host loops: that checks the test itself
 * and the module's C side, not the kernels.
 *
 * One exception to "bit for bit", and it is the hardware's: a SUM, PROD or AVG whose result is
 * NaN. GPUs return the canonical NaN where x86 propagates an operand's payload; both are NaN
 * (the collectives combine data on one kind of processor per call, so members still agree).
 *
 * Without a device every test is skipped: main prints "no CUDA device" and exits 77 (SKIP).
 */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <config.h>

#include "base/dtype.h"
#include "reduce/elem.h"
#include "reduce/gpu_module.h"
#include "reduce/reduce.h"

#define NELEM 100003 /* more than one block's worth per thread, and odd */

static const cohort_gpu_module_t *mod;

static const cohort_dtype_t all_dtypes[] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64,
};
#define NDTYPES ((int)(sizeof(all_dtypes) / sizeof(all_dtypes[0])))
static const cohort_op_t all_ops[] = {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG};

/* The module from COHORT_PLUGIN_PATH (the build tree's .libs under make check). */
static const cohort_gpu_module_t *load_module(char *why, size_t len)
{
#ifdef COHORT_HAVE_CUDA
    const char *dir = getenv("COHORT_PLUGIN_PATH");
    char path[4096];
    void *dl;
    const cohort_gpu_module_t *m;

    snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : ".libs", COHORT_GPU_MODULE_FILE);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        snprintf(why, len, "no CUDA device support (%s)", dlerror());
        return NULL;
    }
    m = dlsym(dl, COHORT_GPU_MODULE_SYMBOL);
    if (m == NULL || m->abi != COHORT_GPU_MODULE_ABI) {
        snprintf(why, len, "%.200s is not this version's CUDA module", path);
        return NULL;
    }
    if (m->open(why, len) <= 0) {
        return NULL;
    }
    return m;
#else
    snprintf(why, len, "no CUDA device support (cohort built without CUDA)");
    return NULL;
#endif
}

/* Random bits, with a share of values that make arithmetic interesting for floats: zeros of
 * both signs, ones, small integers, infinities. */
static void fill(cohort_dtype_t dt, void *buf, size_t n, unsigned seed)
{
    size_t es = cohort_dtype_size(dt);
    uint8_t *p = buf;

    srand(seed);
    for (size_t i = 0; i < n * es; i++) {
        p[i] = (uint8_t)rand();
    }
    if (!cohort_dtype_is_float(dt)) {
        return;
    }
    for (size_t i = 0; i < n; i += 7) {
        float v = (float)(rand() % 9) - 4.0f;
        switch (dt) {
        case COHORT_FLOAT16:
            ((uint16_t *)buf)[i] = cohort_float_to_half(v);
            break;
        case COHORT_BFLOAT16:
            ((uint16_t *)buf)[i] = cohort_float_to_bf16(v);
            break;
        case COHORT_FLOAT32:
            ((float *)buf)[i] = i % 5 == 0 ? INFINITY : v;
            break;
        default:
            ((double *)buf)[i] = i % 5 == 0 ? -0.0 : v;
            break;
        }
    }
}

static int is_nan(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case COHORT_FLOAT16:
        return (((const uint16_t *)buf)[i] & 0x7fffu) > 0x7c00u;
    case COHORT_BFLOAT16:
        return (((const uint16_t *)buf)[i] & 0x7fffu) > 0x7f80u;
    case COHORT_FLOAT32:
        return isnan(((const float *)buf)[i]);
    case COHORT_FLOAT64:
        return isnan(((const double *)buf)[i]);
    default:
        return 0;
    }
}

/* Mismatching elements of got against want (a NaN where NaN is wanted matches for SUM, PROD
 * and AVG, see the top). */
static size_t mismatches(cohort_dtype_t dt, cohort_op_t op, const void *got, const void *want,
                         size_t n, size_t *first)
{
    size_t es = cohort_dtype_size(dt), bad = 0;
    int nan_ok = op == COHORT_SUM || op == COHORT_PROD || op == COHORT_AVG;

    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0) {
            continue;
        }
        if (nan_ok && is_nan(dt, got, i) && is_nan(dt, want, i)) {
            continue;
        }
        if (bad++ == 0) {
            *first = i;
        }
    }
    return bad;
}

/* The NELEM elements at device address @a dev equal @a want; @a tmp is a host buffer as big. */
static void expect_device(const void *dev, const void *want, void *tmp, cohort_dtype_t dt,
                          cohort_op_t op, const char *how)
{
    size_t first = 0, bad;

    ck_assert_int_eq(mod->copy(tmp, dev, NELEM * cohort_dtype_size(dt)), COHORT_OK);
    bad = mismatches(dt, op, tmp, want, NELEM, &first);
    ck_assert_msg(bad == 0, "%s %s (%s): %zu of %d differ from the host, first at %zu",
                  cohort_dtype_name(dt), cohort_op_name(op), how, bad, NELEM, first);
}

/* Every op of one dtype, with dst apart, dst == a and dst == b == a. */
START_TEST(test_kernels_vs_host)
{
    cohort_dtype_t dt = all_dtypes[_i];
    size_t es = cohort_dtype_size(dt), bytes = NELEM * es;
    void *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    void *da, *db, *dd;

    ck_assert(a && b && want && got);
    ck_assert_int_eq(mod->device_alloc(&da, bytes), COHORT_OK);
    ck_assert_int_eq(mod->device_alloc(&db, bytes), COHORT_OK);
    ck_assert_int_eq(mod->device_alloc(&dd, bytes), COHORT_OK);
    for (size_t k = 0; k < sizeof(all_ops) / sizeof(all_ops[0]); k++) {
        cohort_op_t op = all_ops[k];
        if (cohort_reduce_check(dt, op) != COHORT_OK) {
            continue;
        }
        fill(dt, a, NELEM, 17 + (unsigned)k);
        fill(dt, b, NELEM, 91 + (unsigned)k);
        ck_assert_int_eq(mod->copy(da, a, bytes), COHORT_OK);
        ck_assert_int_eq(mod->copy(db, b, bytes), COHORT_OK);

        /* dst apart (then AVG's division by 3); dst == a, the in-place accumulate; all three
         * the same buffer. The host computes on copies aliased the same way. */
        memcpy(want, a, bytes);
        memcpy(got, b, bytes);
        cohort_reduce_local(got, want, got, NELEM, dt, op);
        cohort_reduce_finish(got, NELEM, dt, op, 3);
        ck_assert_int_eq(mod->reduce(dd, da, db, NELEM, dt, op), COHORT_OK);
        ck_assert_int_eq(mod->finish(dd, NELEM, dt, op, 3), COHORT_OK);
        expect_device(dd, got, want, dt, op, "apart");
        memcpy(want, a, bytes);
        cohort_reduce_local(want, want, b, NELEM, dt, op);
        ck_assert_int_eq(mod->reduce(da, da, db, NELEM, dt, op), COHORT_OK);
        expect_device(da, want, got, dt, op, "in place");
        memcpy(want, b, bytes);
        cohort_reduce_local(want, want, want, NELEM, dt, op);
        ck_assert_int_eq(mod->reduce(db, db, db, NELEM, dt, op), COHORT_OK);
        expect_device(db, want, got, dt, op, "self");
    }
    ck_assert_int_eq(mod->reduce(dd, da, db, 0, dt, COHORT_SUM), COHORT_OK);
    mod->device_free(da);
    mod->device_free(db);
    mod->device_free(dd);
    free(a);
    free(b);
    free(want);
    free(got);
}
END_TEST

/* The n-way reduction of same-node CUDA IPC against successive host reductions: 1, 2, 3 and 5
 * sources into 1 and 3 destinations, one of which is the first source (in place), AVG divided
 * by the number of sources. */
START_TEST(test_multi_vs_host)
{
    enum { NSRC_MAX = 5, NDST = 3 };
    static const int nsrcs[] = {1, 2, 3, NSRC_MAX};
    cohort_dtype_t dt = all_dtypes[_i];
    size_t es = cohort_dtype_size(dt), bytes = NELEM * es;
    void *host[NSRC_MAX], *dev[NSRC_MAX], *out[NDST];
    void *want = malloc(bytes), *tmp = malloc(bytes);

    ck_assert(want && tmp);
    for (int j = 0; j < NSRC_MAX; j++) {
        host[j] = malloc(bytes);
        ck_assert(host[j] != NULL);
        ck_assert_int_eq(mod->device_alloc(&dev[j], bytes), COHORT_OK);
    }
    for (int d = 1; d < NDST; d++) {
        ck_assert_int_eq(mod->device_alloc(&out[d], bytes), COHORT_OK);
    }
    for (size_t k = 0; k < sizeof(all_ops) / sizeof(all_ops[0]); k++) {
        cohort_op_t op = all_ops[k];
        if (cohort_reduce_check(dt, op) != COHORT_OK) {
            continue;
        }
        for (size_t m = 0; m < sizeof(nsrcs) / sizeof(nsrcs[0]); m++) {
            int nsrc = nsrcs[m];
            const void *srcs[NSRC_MAX];
            for (int j = 0; j < nsrc; j++) {
                fill(dt, host[j], NELEM, 300 + 11 * (unsigned)j + (unsigned)k);
                ck_assert_int_eq(mod->copy(dev[j], host[j], bytes), COHORT_OK);
                srcs[j] = dev[j];
            }
            memcpy(want, host[0], bytes);
            for (int j = 1; j < nsrc; j++) {
                cohort_reduce_local(want, want, host[j], NELEM, dt, op);
            }
            cohort_reduce_finish(want, NELEM, dt, op, nsrc);
            /* one destination apart, then three with the first source among them */
            out[0] = dev[0];
            ck_assert_int_eq(mod->reduce_multi(&out[1], 1, srcs, nsrc, NELEM, dt, op, nsrc),
                             COHORT_OK);
            expect_device(out[1], want, tmp, dt, op, "n-way, one destination");
            ck_assert_int_eq(mod->reduce_multi(out, NDST, srcs, nsrc, NELEM, dt, op, nsrc),
                             COHORT_OK);
            for (int d = 0; d < NDST; d++) {
                expect_device(out[d], want, tmp, dt, op, "n-way, in place");
            }
        }
    }
    ck_assert_int_eq(mod->reduce_multi(out, 1, (const void *const *)dev, 2, 0, dt, COHORT_SUM, 2),
                     COHORT_OK);
    for (int j = 0; j < NSRC_MAX; j++) {
        mod->device_free(dev[j]);
        free(host[j]);
    }
    for (int d = 1; d < NDST; d++) {
        mod->device_free(out[d]);
    }
    free(want);
    free(tmp);
}
END_TEST

/* The exhaustive 16-bit check: every binary16 and bfloat16 pair (x, y) for one fixed y per
 * class, all 65536 x, through SUM and MAX. */
START_TEST(test_half_all_values)
{
    cohort_dtype_t dts[] = {COHORT_FLOAT16, COHORT_BFLOAT16};
    uint16_t ys[] = {0x0000, 0x8000, 0x3c00, 0x0001, 0x7bff, 0x3f80, 0x7c00, 0xfe00};
    size_t n = 65536, bytes = n * 2;
    uint16_t *x = malloc(bytes), *y = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    void *dx, *dy;

    ck_assert(x && y && want && got);
    ck_assert_int_eq(mod->device_alloc(&dx, bytes), COHORT_OK);
    ck_assert_int_eq(mod->device_alloc(&dy, bytes), COHORT_OK);
    for (size_t i = 0; i < n; i++) {
        x[i] = (uint16_t)i;
    }
    ck_assert_int_eq(mod->copy(dx, x, bytes), COHORT_OK);
    for (int d = 0; d < 2; d++) {
        for (size_t k = 0; k < sizeof(ys) / sizeof(ys[0]); k++) {
            for (size_t i = 0; i < n; i++) {
                y[i] = ys[k];
            }
            ck_assert_int_eq(mod->copy(dy, y, bytes), COHORT_OK);
            for (int o = 0; o < 4; o++) {
                size_t first = 0, bad;
                cohort_reduce_local(want, x, y, n, dts[d], all_ops[o]);
                ck_assert_int_eq(mod->reduce(dy, dx, dy, n, dts[d], all_ops[o]), COHORT_OK);
                ck_assert_int_eq(mod->copy(got, dy, bytes), COHORT_OK);
                ck_assert_int_eq(mod->copy(dy, y, bytes), COHORT_OK);
                bad = mismatches(dts[d], all_ops[o], got, want, n, &first);
                ck_assert_msg(bad == 0, "%s %s with y=0x%04x: %zu differ, first x=0x%04zx",
                              cohort_dtype_name(dts[d]), cohort_op_name(all_ops[o]),
                              (unsigned)ys[k], bad, first);
            }
        }
    }
    mod->device_free(dx);
    mod->device_free(dy);
    free(x);
    free(y);
    free(want);
    free(got);
}
END_TEST

START_TEST(test_pointer_kinds_and_copies)
{
    size_t bytes = 1 << 20;
    char *host = malloc(bytes), *back = malloc(bytes);
    void *dev, *dev2, *pinned;
    int device = -1;
    uint64_t ticket = 0;
    cohort_status_t st = COHORT_OK;
    long polls;

    ck_assert(host && back);
    ck_assert_int_eq(mod->device_alloc(&dev, bytes), COHORT_OK);
    ck_assert_int_eq(mod->device_alloc(&dev2, bytes), COHORT_OK);
    ck_assert_int_eq(mod->host_alloc(&pinned, bytes), COHORT_OK);
    ck_assert_int_eq(mod->ptr_kind(host, NULL), COHORT_GPU_PTR_HOST);
    ck_assert_int_eq(mod->ptr_kind(pinned, NULL), COHORT_GPU_PTR_HOST);
    ck_assert_int_eq(mod->ptr_kind(dev, &device), COHORT_GPU_PTR_DEVICE);
    ck_assert_int_ge(device, 0);
    ck_assert_int_eq(mod->ptr_kind((char *)dev + 4096, NULL), COHORT_GPU_PTR_DEVICE);
    ck_assert_int_eq(mod->ptr_kind(NULL, NULL), COHORT_GPU_PTR_HOST);
    for (size_t i = 0; i < bytes; i++) {
        host[i] = (char)(i * 7);
    }
    /* host -> device -> device -> pinned -> host, the asynchronous copies polled and waited
     * for */
    ck_assert_int_eq(mod->copy(dev, host, bytes), COHORT_OK);
    ck_assert_int_eq(mod->copy_start(dev2, dev, bytes, COHORT_GPU_LANE_TO_HOST, &ticket),
                     COHORT_OK);
    for (polls = 0; ticket != 0 && (st = mod->copy_test(ticket)) == COHORT_INPROGRESS; polls++) {
        ck_assert_int_lt(polls, 100000000);
    }
    ck_assert_int_eq(ticket == 0 ? COHORT_OK : st, COHORT_OK);
    ck_assert_int_eq(mod->copy_test(ticket), COHORT_OK); /* spent: nothing in flight */
    memset(pinned, 0, bytes);
    ck_assert_int_eq(mod->copy_start(pinned, dev2, bytes, COHORT_GPU_LANE_TO_DEVICE, &ticket),
                     COHORT_OK);
    ck_assert_int_eq(mod->copy_finish(ticket), COHORT_OK);
    memcpy(back, pinned, bytes);
    ck_assert_int_eq(memcmp(back, host, bytes), 0);
    ck_assert_int_eq(mod->copy_start(pinned, dev2, 0, COHORT_GPU_LANE_TO_HOST, &ticket), COHORT_OK);
    ck_assert_uint_eq(ticket, 0);
    ck_assert_int_eq(mod->can_access(device, device), 1);
    mod->host_free(pinned);
    mod->device_free(dev);
    mod->device_free(dev2);
    free(host);
    free(back);
}
END_TEST

/* A handle of a buffer inside an allocation says where in it the buffer starts. */
START_TEST(test_ipc_describe)
{
    void *dev;
    cohort_gpu_ipc_t ipc;

    ck_assert_int_eq(mod->device_alloc(&dev, 1 << 20), COHORT_OK);
    ck_assert_int_eq(mod->ipc_get((char *)dev + 4096, &ipc), COHORT_OK);
    ck_assert_uint_eq(ipc.offset, 4096);
    ck_assert_uint_ge(ipc.alloc_size, 1 << 20);
    ck_assert_int_eq(mod->ipc_get(&ipc, &ipc), COHORT_ERR_CUDA); /* host memory */
    mod->device_free(dev);
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("reduce_cuda");
    TCase *tc = tcase_create("kernels");

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_kernels_vs_host, 0, NDTYPES);
    tcase_add_loop_test(tc, test_multi_vs_host, 0, NDTYPES);
    tcase_add_test(tc, test_half_all_values);
    tcase_add_test(tc, test_pointer_kinds_and_copies);
    tcase_add_test(tc, test_ipc_describe);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    char why[256] = "";
    SRunner *sr;
    int failures;

    mod = load_module(why, sizeof(why));
    if (mod == NULL) {
        printf("check_reduce_cuda: SKIP: %s\n", why[0] ? why : "no CUDA device");
        return 77;
    }
    /* CUDA state does not survive fork: run the tests in this process. */
    sr = srunner_create(cuda_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_ENV);
    failures = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failures != 0;
}
