/* The handle table: what a stale, foreign or wrong-kind handle reads as, slot reuse at a new
 * generation, and lookups on other threads while handles are made and retired (lookups take no
 * lock: a racing one returns the live object or NULL, never another object). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "core/handle.h"

START_TEST(test_kinds_and_stale)
{
    int a = 1, b = 2;
    const char *why = NULL;
    uintptr_t ha = cohort_handle_new(COHORT_HANDLE_GROUP, &a);
    uintptr_t hb = cohort_handle_new(COHORT_HANDLE_REQUEST, &b);

    ck_assert_uint_ne(ha, 0);
    ck_assert_ptr_eq(cohort_handle_get((void *)ha, COHORT_HANDLE_GROUP, &why), &a);
    ck_assert_ptr_eq(cohort_handle_get((void *)hb, COHORT_HANDLE_REQUEST, &why), &b);
    ck_assert_ptr_null(cohort_handle_get((void *)ha, COHORT_HANDLE_REQUEST, &why));
    ck_assert_str_eq(why, "a handle of another kind");
    ck_assert_ptr_null(cohort_handle_get(&a, COHORT_HANDLE_GROUP, &why)); /* a pointer */
    ck_assert_str_eq(why, "never made by cohort");
    cohort_handle_retire(ha);
    ck_assert_ptr_null(cohort_handle_get((void *)ha, COHORT_HANDLE_GROUP, &why));
    ck_assert_str_eq(why, "freed, or its context finalized");
    cohort_handle_retire(ha); /* twice: nothing */
    ck_assert_ptr_eq(cohort_handle_get((void *)hb, COHORT_HANDLE_REQUEST, &why), &b);
    cohort_handle_retire(hb);
}
END_TEST

/* A retired slot comes back at a new generation: the old handle stays refused. */
START_TEST(test_reuse_generation)
{
    int objs[5000];
    uintptr_t h[5000], first;
    const char *why = NULL;

    for (int i = 0; i < 5000; i++) {
        h[i] = cohort_handle_new(COHORT_HANDLE_LAYOUT, &objs[i]);
        ck_assert_uint_ne(h[i], 0);
    }
    first = h[0];
    for (int i = 0; i < 5000; i++) {
        cohort_handle_retire(h[i]);
    }
    for (int i = 0; i < 5000; i++) {
        h[i] = cohort_handle_new(COHORT_HANDLE_LAYOUT, &objs[i]);
        ck_assert_uint_ne(h[i], first);
    }
    ck_assert_ptr_null(cohort_handle_get((void *)first, COHORT_HANDLE_LAYOUT, &why));
    ck_assert_str_eq(why, "freed, or its context finalized");
    for (int i = 0; i < 5000; i++) {
        ck_assert_ptr_eq(cohort_handle_get((void *)h[i], COHORT_HANDLE_LAYOUT, &why), &objs[i]);
        cohort_handle_retire(h[i]);
    }
}
END_TEST

#define RACE_SLOTS 64
static _Atomic uintptr_t race_h[RACE_SLOTS];
static int race_obj[RACE_SLOTS];
static atomic_int race_stop;
static atomic_long race_wrong, race_hits;

/* Look up whatever handle each slot holds now: the object is that slot's, or NULL. */
static void *race_reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&race_stop)) {
        for (int i = 0; i < RACE_SLOTS; i++) {
            const char *why = NULL;
            uintptr_t h = atomic_load(&race_h[i]);
            void *o = h ? cohort_handle_get((void *)h, COHORT_HANDLE_REQUEST, &why) : NULL;
            if (o != NULL && o != &race_obj[i]) {
                atomic_fetch_add(&race_wrong, 1);
            }
            atomic_fetch_add(&race_hits, o != NULL);
        }
    }
    return NULL;
}

START_TEST(test_race)
{
    pthread_t t[2];

    for (int i = 0; i < RACE_SLOTS; i++) {
        atomic_store(&race_h[i], cohort_handle_new(COHORT_HANDLE_REQUEST, &race_obj[i]));
    }
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(pthread_create(&t[k], NULL, race_reader, NULL), 0);
    }
    /* Retire and remake every slot's handle, many times, while the readers look: a slot's
     * old handle is retired while a reader may hold it, and its slot may be reused by another
     * slot's object at once. */
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < RACE_SLOTS; i++) {
            int j = (i * 7 + round) % RACE_SLOTS;
            uintptr_t old = atomic_load(&race_h[j]);
            cohort_handle_retire(old);
            atomic_store(&race_h[j], cohort_handle_new(COHORT_HANDLE_REQUEST, &race_obj[j]));
        }
    }
    atomic_store(&race_stop, 1);
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
    }
    ck_assert_int_eq(atomic_load(&race_wrong), 0);
    ck_assert_int_gt(atomic_load(&race_hits), 0);
    for (int i = 0; i < RACE_SLOTS; i++) {
        cohort_handle_retire(atomic_load(&race_h[i]));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("handle");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_kinds_and_stale);
    tcase_add_test(tc, test_reuse_generation);
    tcase_add_test(tc, test_race);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
