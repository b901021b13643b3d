/* Group id derivation: the same inputs give the same id on every member; any difference in
 * tag, members, their order or the instance gives another. */
#include <check.h>
#include <stdlib.h>
#include "group/group.h"
#include "group/group_id.h"

START_TEST(test_same_inputs_same_id)
{
    int a[] = {3, 1, 7};
    int b[] = {3, 1, 7};

    ck_assert_uint_eq(cohort_group_key("tp", a, 3), cohort_group_key("tp", b, 3));
    ck_assert_uint_eq(cohort_group_id_derive(cohort_group_key("tp", a, 3), 0),
                      cohort_group_id_derive(cohort_group_key("tp", b, 3), 0));
}
END_TEST

START_TEST(test_differences_change_id)
{
    int m[] = {0, 1, 2, 3};
    int reordered[] = {1, 0, 2, 3};
    int other[] = {0, 1, 2, 4};
    uint64_t k = cohort_group_key("dp", m, 4);

    ck_assert_uint_ne(k, cohort_group_key("tp", m, 4));
    ck_assert_uint_ne(k, cohort_group_key("dp", reordered, 4));
    ck_assert_uint_ne(k, cohort_group_key("dp", other, 4));
    ck_assert_uint_ne(k, cohort_group_key("dp", m, 3));
    ck_assert_uint_ne(k, cohort_group_key("", m, 4));
    ck_assert_uint_ne(cohort_group_id_derive(k, 0), cohort_group_id_derive(k, 1));
}
END_TEST

/* The tag's length is hashed, so a tag cannot be confused with member bytes. */
START_TEST(test_tag_boundary)
{
    int one[] = {0x62}; /* 'b' */
    int none[] = {0x62};

    ck_assert_uint_ne(cohort_group_key("a", one, 1), cohort_group_key("ab", none, 1));
}
END_TEST

/* No collisions and never 0 over many layouts' worth of groups and instances. */
START_TEST(test_no_collisions)
{
    enum { NG = 20000, NI = 4 };
    uint64_t *ids = malloc(sizeof(uint64_t) * NG * NI);
    int m[2];
    size_t n = 0;

    ck_assert_ptr_nonnull(ids);
    for (int g = 0; g < NG; g++) {
        m[0] = g;
        m[1] = g + 1;
        uint64_t k = cohort_group_key(g % 2 ? "tp" : "dp", m, 2);
        for (int i = 0; i < NI; i++) {
            ids[n++] = cohort_group_id_derive(k, (uint64_t)i);
        }
    }
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_ne(ids[i], 0);
    }
    /* sort and look for neighbours that are equal */
    for (size_t gap = n / 2; gap > 0; gap /= 2) {
        for (size_t i = gap; i < n; i++) {
            uint64_t t = ids[i];
            size_t j = i;
            for (; j >= gap && ids[j - gap] > t; j -= gap) {
                ids[j] = ids[j - gap];
            }
            ids[j] = t;
        }
    }
    for (size_t i = 1; i < n; i++) {
        ck_assert_uint_ne(ids[i], ids[i - 1]);
    }
    free(ids);
}
END_TEST

/* Pinned values: ids must not change between builds or platforms, or mixed builds would
 * disagree. */
START_TEST(test_stable_values)
{
    int m[] = {0, 1};
    uint64_t k = cohort_group_key("world", m, 2);

    ck_assert_uint_eq(k, cohort_group_key("world", m, 2));
    ck_assert_uint_eq(cohort_group_id_derive(k, 0), 0x79b4d083ea800d45ULL);
}
END_TEST

/* Duplicates in a member list, either way it is checked: pairwise up to 32 members, a sorted
 * copy above (never a bitmap over the world). Catches either path missing a duplicate. */
START_TEST(test_duplicate_members)
{
    static int ranks[5000];
    cohort_status_t status;
    int sizes[] = {2, 32, 33, 5000};

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int n = sizes[k];
        for (int i = 0; i < n; i++) {
            ranks[i] = 7 * (n - i); /* descending, far apart: not sorted already */
        }
        ck_assert_int_eq(cohort_group_duplicate(ranks, n, &status), -1);
        ck_assert_int_eq(status, COHORT_OK);
        ranks[n - 1] = ranks[n / 3];
        ck_assert_int_eq(cohort_group_duplicate(ranks, n, &status), ranks[n - 1]);
        ck_assert_int_eq(status, COHORT_OK);
    }
}
END_TEST

static Suite *group_id_suite(void)
{
    Suite *s = suite_create("group_id");
    TCase *tc = tcase_create("derive");

    tcase_add_test(tc, test_same_inputs_same_id);
    tcase_add_test(tc, test_differences_change_id);
    tcase_add_test(tc, test_tag_boundary);
    tcase_add_test(tc, test_no_collisions);
    tcase_add_test(tc, test_stable_values);
    tcase_add_test(tc, test_duplicate_members);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(group_id_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
