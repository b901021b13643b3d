/* A process's shared arena (src/mem/arena.c), owner and viewer in one process: heads packed on
 * shared pages apart from the bodies, found through a view under their id with the sizes asked,
 * retired and reused only when the caller says nobody reads them, refused when full. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mem/arena.h"

#define PAGE 4096u

static cohort_arena_t *arena;
static cohort_arena_ref_t ref;

static int never(const void *head)
{
    (void)head;
    return 0;
}

static int always(const void *head)
{
    (void)head;
    return 1;
}

static void setup(void)
{
    char why[160] = "";

    cohort_arena_open(&arena, &ref, why, sizeof(why));
    ck_assert_msg(arena != NULL, "no arena: %s", why);
}

static void teardown(void)
{
    cohort_arena_close(arena);
    arena = NULL;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* Whether [a, a + na) and [b, b + nb) share a byte. */
static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return x < y + nb && y < x + na;
}

START_TEST(test_heads_packed)
{
    size_t head[4] = {1000, 3600, 1000, 200}, body[4] = {256 << 10, 1 << 20, 256 << 10, 0};
    uint8_t *h[4];
    void *b[4];
    int fresh;

    for (int i = 0; i < 4; i++) {
        h[i] = cohort_arena_take(arena, head[i], body[i], never, &fresh, &b[i]);
        ck_assert_ptr_nonnull(h[i]);
        ck_assert_int_eq(fresh, 1);
        ck_assert_uint_eq((uintptr_t)h[i] % 64, 0);
        ck_assert(all_zero(h[i], head[i]));
        if (body[i] == 0) {
            ck_assert_ptr_null(b[i]);
        } else {
            ck_assert_ptr_nonnull(b[i]);
            ck_assert_uint_eq((uintptr_t)b[i] % PAGE, 0);
            ck_assert(all_zero(b[i], body[i]));
        }
    }
    /* The point of the heads' part: the heads of small groups share pages (these four fit in
     * two), and no body lies among them. */
    ck_assert_uint_lt((uintptr_t)(h[3] + head[3]) - (uintptr_t)h[0], 2 * PAGE);
    for (int i = 0; i < 4; i++) {
        memset(h[i], 0x10 + i, head[i]);
        if (b[i] != NULL) {
            memset(b[i], 0x20 + i, body[i]);
        }
        for (int j = 0; j < 4; j++) {
            ck_assert(i == j || !overlap(h[i], head[i], h[j], head[j]));
            ck_assert(b[j] == NULL || !overlap(h[i], head[i], b[j], body[j]));
            ck_assert(i == j || b[i] == NULL || b[j] == NULL ||
                      !overlap(b[i], body[i], b[j], body[j]));
        }
    }
    /* Nothing written over another's bytes. */
    for (int i = 0; i < 4; i++) {
        for (size_t k = 0; k < head[i]; k++) {
            ck_assert_uint_eq(h[i][k], 0x10 + i);
        }
    }
}
END_TEST

START_TEST(test_view_finds)
{
    size_t head[3] = {992, 3648, 27776}, body[3] = {256 << 10, 1 << 20, 8 << 20};
    uint64_t id[3] = {0x1111, 0x2222 + 2048, 0x1111 + 2048}; /* two share a directory slot */
    uint8_t *h[3];
    void *b[3];
    cohort_arena_view_t *v = NULL;
    char why[160] = "";
    int fresh;

    ck_assert_int_eq(cohort_arena_view_open((int32_t)getpid(), &ref, &v, why, sizeof(why)),
                     COHORT_OK);
    for (int i = 0; i < 3; i++) {
        size_t hb = 0, bb = 0;
        void *vb = NULL;

        h[i] = cohort_arena_take(arena, head[i], body[i], never, &fresh, &b[i]);
        ck_assert_ptr_nonnull(h[i]);
        memset(h[i], 0x30 + i, head[i]);
        memset(b[i], 0x40 + i, 64);
        /* Not findable before it is published. */
        ck_assert_ptr_null(cohort_arena_view_find(v, id[i], &hb, &vb, &bb));
        cohort_arena_publish(arena, h[i], id[i]);
    }
    for (int i = 0; i < 3; i++) {
        size_t hb = 0, bb = 0;
        void *vb = NULL;
        uint8_t *vh = cohort_arena_view_find(v, id[i], &hb, &vb, &bb);

        /* Another mapping of the same memory: the owner's bytes, at the sizes asked. */
        ck_assert_ptr_nonnull(vh);
        ck_assert_ptr_nonnull(vb);
        ck_assert_uint_ge(hb, head[i]);
        ck_assert_uint_ge(bb, body[i]);
        ck_assert_uint_eq(vh[0], 0x30 + i);
        ck_assert_uint_eq(vh[head[i] - 1], 0x30 + i);
        ck_assert_uint_eq(((uint8_t *)vb)[63], 0x40 + i);
        vh[1] = 0x77; /* and writes through the view reach the owner */
        ck_assert_uint_eq(h[i][1], 0x77);
    }
    {
        size_t hb = 0, bb = 0;
        void *vb = NULL;
        ck_assert_ptr_null(cohort_arena_view_find(v, 0x3333, &hb, &vb, &bb));
    }
    cohort_arena_view_close(v);
}
END_TEST

START_TEST(test_retire_reuse)
{
    cohort_arena_view_t *v = NULL;
    char why[160] = "";
    size_t hb, bb;
    void *b, *b2, *vb;
    int fresh;
    uint8_t *h = cohort_arena_take(arena, 1000, 256 << 10, never, &fresh, &b), *h2;

    ck_assert_int_eq(cohort_arena_view_open((int32_t)getpid(), &ref, &v, why, sizeof(why)),
                     COHORT_OK);
    cohort_arena_publish(arena, h, 42);
    ck_assert_ptr_nonnull(cohort_arena_view_find(v, 42, &hb, &vb, &bb));
    cohort_arena_retire(arena, h);
    ck_assert_ptr_null(cohort_arena_view_find(v, 42, &hb, &vb, &bb));
    /* Still read by someone (reusable says no): new memory, never the retired block. */
    h2 = cohort_arena_take(arena, 1000, 256 << 10, never, &fresh, &b2);
    ck_assert_ptr_ne(h2, h);
    ck_assert_ptr_ne(b2, b);
    ck_assert_int_eq(fresh, 1);
    /* Nobody reads it any more: taken again, head and body, not fresh. */
    h2 = cohort_arena_take(arena, 1000, 256 << 10, always, &fresh, &b2);
    ck_assert_ptr_eq(h2, h);
    ck_assert_ptr_eq(b2, b);
    ck_assert_int_eq(fresh, 0);
    cohort_arena_publish(arena, h2, 43);
    ck_assert_ptr_nonnull(cohort_arena_view_find(v, 43, &hb, &vb, &bb));
    ck_assert_ptr_null(cohort_arena_view_find(v, 42, &hb, &vb, &bb));
    cohort_arena_view_close(v);
}
END_TEST

/* Full: the bodies of about 1,000 groups of two fill it; then NULL, and a retired block nobody
 * reads is what the next take gets. */
START_TEST(test_full)
{
    uint8_t *first = NULL, *h;
    void *b;
    int fresh, n = 0;

    while ((h = cohort_arena_take(arena, 1000, 256 << 10, never, &fresh, &b)) != NULL) {
        if (first == NULL) {
            first = h;
        }
        cohort_arena_publish(arena, h, (uint64_t)n + 1);
        n++;
        ck_assert_int_lt(n, 4096);
    }
    ck_assert_int_ge(n, 900);
    ck_assert_int_le(n, 1024);
    ck_assert_ptr_null(cohort_arena_take(arena, 1000, 256 << 10, never, &fresh, &b));
    cohort_arena_retire(arena, first);
    ck_assert_ptr_null(cohort_arena_take(arena, 1000, 256 << 10, never, &fresh, &b));
    ck_assert_ptr_eq(cohort_arena_take(arena, 1000, 256 << 10, always, &fresh, &b), first);
}
END_TEST

static Suite *arena_suite(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("blocks");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_heads_packed);
    tcase_add_test(tc, test_view_finds);
    tcase_add_test(tc, test_retire_reuse);
    tcase_add_test(tc, test_full);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    cohort_arena_t *probe = NULL;
    cohort_arena_ref_t r;
    char why[160] = "";
    SRunner *sr;
    int failed;

    /* Where other processes could not take the arena (Yama, no pidfd_getfd), there is none. */
    cohort_arena_open(&probe, &r, why, sizeof(why));
    if (probe == NULL) {
        printf("check_arena: SKIP: no arena here (%s)\n", why);
        return 77;
    }
    cohort_arena_close(probe);
    sr = srunner_create(arena_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
