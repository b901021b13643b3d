/* The context's scratch cache: reuse, best fit, eviction of the smallest, cleanup. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/context.h"
#include "mem/scratch.h"

static cohort_context_t ctx;

static void setup(void)
{
    memset(&ctx, 0, sizeof(ctx));
}

static void teardown(void)
{
    cohort_scratch_cleanup(&ctx);
}

START_TEST(test_reuse)
{
    void *a = cohort_scratch_get(&ctx, 1 << 20);

    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    memset(a, 1, 1 << 20); /* the whole size is usable */
    cohort_scratch_put(&ctx, a);
    /* a smaller request is served from the cached buffer */
    ck_assert_ptr_eq(cohort_scratch_get(&ctx, 4096), a);
    cohort_scratch_put(&ctx, a);
    /* a larger one is not */
    void *b = cohort_scratch_get(&ctx, 2 << 20);
    ck_assert_ptr_ne(b, a);
    cohort_scratch_put(&ctx, b);
    cohort_scratch_put(&ctx, NULL);
}
END_TEST

START_TEST(test_best_fit)
{
    void *small = cohort_scratch_get(&ctx, 1000), *big = cohort_scratch_get(&ctx, 100000);

    cohort_scratch_put(&ctx, big);
    cohort_scratch_put(&ctx, small);
    ck_assert_ptr_eq(cohort_scratch_get(&ctx, 900), small);
    ck_assert_ptr_eq(cohort_scratch_get(&ctx, 900), big);
    cohort_scratch_put(&ctx, small);
    cohort_scratch_put(&ctx, big);
}
END_TEST

/* Full: a bigger buffer evicts the smallest; a smaller one is freed rather than kept. */
START_TEST(test_eviction)
{
    void *b[COHORT_SCRATCH_SLOTS + 2];

    for (int i = 0; i < COHORT_SCRATCH_SLOTS + 2; i++) {
        b[i] = cohort_scratch_get(&ctx, (size_t)(i + 1) * 1000);
    }
    for (int i = 1; i < COHORT_SCRATCH_SLOTS + 1; i++) {
        cohort_scratch_put(&ctx, b[i]);
    }
    cohort_scratch_put(&ctx, b[0]);                        /* smallest of all: freed */
    cohort_scratch_put(&ctx, b[COHORT_SCRATCH_SLOTS + 1]); /* evicts b[1] */
    for (int i = 0; i < COHORT_SCRATCH_SLOTS; i++) {
        ck_assert_ptr_ne(ctx.mem.scratch.buf[i], b[0]);
        ck_assert_ptr_ne(ctx.mem.scratch.buf[i], b[1]);
        ck_assert_ptr_nonnull(ctx.mem.scratch.buf[i]);
    }
}
END_TEST

/* A cache over another allocator (the CUDA module's page-locked one, in gpu.c): every block it
 * hands out comes from that allocator and goes back to it, on eviction and at cleanup. */
static int custom_live, custom_allocs;

static void *custom_alloc(void *arg, size_t bytes)
{
    void *p = NULL;

    ck_assert_ptr_eq(arg, &custom_live);
    if (posix_memalign(&p, 64, bytes) != 0) {
        return NULL;
    }
    custom_live++;
    custom_allocs++;
    return p;
}

static void custom_release(void *arg, void *raw)
{
    ck_assert_ptr_eq(arg, &custom_live);
    custom_live--;
    free(raw);
}

START_TEST(test_custom_allocator)
{
    cohort_scratch_cache_t c;
    void *bufs[COHORT_SCRATCH_SLOTS + 2];

    memset(&c, 0, sizeof(c));
    c.alloc = custom_alloc;
    c.release = custom_release;
    c.arg = &custom_live;
    for (int i = 0; i < COHORT_SCRATCH_SLOTS + 2; i++) {
        bufs[i] = cohort_scratch_cache_get(&c, (size_t)(i + 1) * 4096);
        ck_assert_ptr_nonnull(bufs[i]);
        ck_assert_uint_eq((uintptr_t)bufs[i] % 64, 0);
        memset(bufs[i], i, (size_t)(i + 1) * 4096);
    }
    ck_assert_int_eq(custom_live, COHORT_SCRATCH_SLOTS + 2);
    for (int i = 0; i < COHORT_SCRATCH_SLOTS + 2; i++) {
        cohort_scratch_cache_put(&c, bufs[i]);
    }
    /* the cache keeps the largest SLOTS blocks; the others went back to the allocator */
    ck_assert_int_eq(custom_live, COHORT_SCRATCH_SLOTS);
    ck_assert_ptr_eq(cohort_scratch_cache_get(&c, 4096 * (COHORT_SCRATCH_SLOTS + 2)),
                     bufs[COHORT_SCRATCH_SLOTS + 1]);
    ck_assert_int_eq(custom_allocs, COHORT_SCRATCH_SLOTS + 2);
    cohort_scratch_cache_put(&c, bufs[COHORT_SCRATCH_SLOTS + 1]);
    cohort_scratch_cache_put(&c, NULL);
    cohort_scratch_cache_cleanup(&c);
    ck_assert_int_eq(custom_live, 0);
}
END_TEST

static Suite *scratch_suite(void)
{
    Suite *s = suite_create("scratch");
    TCase *tc = tcase_create("cache");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reuse);
    tcase_add_test(tc, test_best_fit);
    tcase_add_test(tc, test_eviction);
    tcase_add_test(tc, test_custom_allocator);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(scratch_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
