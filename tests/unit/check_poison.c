/* The ids whose messages are dropped on arrival (base/poison.h): a job that creates and frees
 * groups all day keeps a bounded set; a lost message's mark survives any number of frees until
 * its group is created. */
#include <check.h>
#include <stdlib.h>
#include "base/poison.h"

START_TEST(test_freed_bounded)
{
    cohort_poison_t *p = malloc(sizeof(*p));
    const uint64_t n = 100000;

    cohort_poison_init(p);
    for (uint64_t id = 1; id <= n; id++) {
        cohort_poison_freed(p, id);
    }
    /* Catches a ring that forgets nothing (the map growing with every free ever made). */
    ck_assert_uint_eq(cohort_poison_count(p), COHORT_POISON_FREED_KEEP);
    ck_assert_int_eq(cohort_poison_get(p, n), COHORT_POISON_FREED);
    ck_assert_int_eq(cohort_poison_get(p, n - COHORT_POISON_FREED_KEEP + 1), COHORT_POISON_FREED);
    ck_assert_int_eq(cohort_poison_get(p, n - COHORT_POISON_FREED_KEEP), COHORT_POISON_NONE);
    ck_assert_int_eq(cohort_poison_get(p, 1), COHORT_POISON_NONE);
    cohort_poison_cleanup(p);
    free(p);
}
END_TEST

START_TEST(test_dropped_kept_until_created)
{
    cohort_poison_t *p = malloc(sizeof(*p));
    const uint64_t lost = 0xfeedULL << 32;

    cohort_poison_init(p);
    cohort_poison_dropped(p, lost);
    for (uint64_t id = 1; id <= 5 * COHORT_POISON_FREED_KEEP; id++) {
        cohort_poison_freed(p, id);
    }
    /* Catches eviction by age alone: the group that lost a message would hang when created. */
    ck_assert_int_eq(cohort_poison_get(p, lost), COHORT_POISON_DROPPED);
    ck_assert_uint_eq(cohort_poison_count(p), COHORT_POISON_FREED_KEEP + 1);
    ck_assert_int_eq(cohort_poison_take(p, lost), COHORT_POISON_DROPPED);
    ck_assert_int_eq(cohort_poison_get(p, lost), COHORT_POISON_NONE);
    ck_assert_int_eq(cohort_poison_take(p, 5 * COHORT_POISON_FREED_KEEP), COHORT_POISON_FREED);
    ck_assert_int_eq(cohort_poison_get(p, 5 * COHORT_POISON_FREED_KEEP), COHORT_POISON_FREED);
    cohort_poison_cleanup(p);
    free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("poison");
    TCase *tc = tcase_create("bounds");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_freed_bounded);
    tcase_add_test(tc, test_dropped_kept_until_created);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
