/* The search for a loadable module (src/base/module.c), which both the exchange plugins and the
 * CUDA module go through: the order of the places tried (COHORT_PLUGIN_PATH's entries, empty
 * ones skipped; beside libcohort, then its own directory; the install directory), what the
 * caller is told was tried, and a module found on the path. Run from the top of the build tree
 * (make check does), where .libs holds the exchange plugins. */
#define _GNU_SOURCE /* dladdr */
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/module.h"
#include "pmix_plugins/plugin.h"

#define NOSUCH "cohort_nosuch.so"

static char tried[2 * COHORT_MODULE_DIR_MAX];
static char beside[PATH_MAX]; /* the directory the search says libcohort is in */

static void setup(void)
{
    Dl_info self;
    const char *slash;

    tried[0] = '\0';
    /* Unit tests link the library's objects into the program, so "beside libcohort" is the
     * program's own directory: found the way the search finds it. */
    ck_assert(dladdr((void *)cohort_module_open, &self) != 0 && self.dli_fname != NULL);
    slash = strrchr(self.dli_fname, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(beside, sizeof(beside), "%.*s", (int)(slash - self.dli_fname), self.dli_fname);
}

/* The @a i-th entry (from 0) of the list of paths tried, or "" past its end. */
static const char *tried_entry(int i, char *out, size_t outlen)
{
    const char *p = tried;

    for (; i > 0 && p != NULL; i--) {
        p = strstr(p, ", ");
        p = p != NULL ? p + 2 : NULL;
    }
    if (p == NULL) {
        snprintf(out, outlen, "%s", "");
        return out;
    }
    const char *end = strstr(p, ", ");
    snprintf(out, outlen, "%.*s", end != NULL ? (int)(end - p) : (int)strlen(p), p);
    return out;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

START_TEST(test_order)
{
    char want[PATH_MAX + 64], got[PATH_MAX + 64];
    const char *last;

    ck_assert_ptr_null(cohort_module_open("/no/a::/no/b:", NULL, NOSUCH, tried, sizeof(tried)));
    ck_assert_str_eq(tried_entry(0, got, sizeof(got)), "/no/a/" NOSUCH);
    ck_assert_str_eq(tried_entry(1, got, sizeof(got)), "/no/b/" NOSUCH);
    snprintf(want, sizeof(want), "%s/cohort/%s", beside, NOSUCH);
    ck_assert_str_eq(tried_entry(2, got, sizeof(got)), want);
    snprintf(want, sizeof(want), "%s/%s", beside, NOSUCH);
    ck_assert_str_eq(tried_entry(3, got, sizeof(got)), want);
    /* the install directory last (pkglibdir: .../cohort), and nothing after it */
    last = tried_entry(4, got, sizeof(got));
    ck_assert_msg(last[0] == '/' && ends_with(last, "/cohort/" NOSUCH),
                  "install directory entry '%s' (tried: %s)", last, tried);
    ck_assert_str_eq(tried_entry(5, got, sizeof(got)), "");
}
END_TEST

START_TEST(test_no_path)
{
    char want[PATH_MAX + 64], got[PATH_MAX + 64];

    /* NULL and "" are the same: no setting, the search starts beside libcohort */
    ck_assert_ptr_null(cohort_module_open(NULL, NULL, NOSUCH, tried, sizeof(tried)));
    snprintf(want, sizeof(want), "%s/cohort/%s", beside, NOSUCH);
    ck_assert_str_eq(tried_entry(0, got, sizeof(got)), want);
    tried[0] = '\0';
    ck_assert_ptr_null(cohort_module_open("", NULL, NOSUCH, tried, sizeof(tried)));
    ck_assert_str_eq(tried_entry(0, got, sizeof(got)), want);
}
END_TEST

START_TEST(test_found_on_path)
{
    char cwd[PATH_MAX], path[PATH_MAX + 16];
    const cohort_pmix_plugin_t *plugin;
    void *dl;

    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    snprintf(path, sizeof(path), "/no/a:%s/.libs", cwd);
    dl = cohort_module_open(path, NULL, "cohort_pmix_fence.so", tried, sizeof(tried));
    ck_assert_msg(dl != NULL, "cohort_pmix_fence.so not found on %s (tried %s)", path, tried);
    /* only what failed is listed: the entry before the one that loaded */
    ck_assert_str_eq(tried, "/no/a/cohort_pmix_fence.so");
    plugin = dlsym(dl, COHORT_PMIX_PLUGIN_SYMBOL);
    ck_assert_ptr_nonnull(plugin);
    ck_assert_str_eq(plugin->name, "fence");
    dlclose(dl);
}
END_TEST

START_TEST(test_bounds)
{
    char small[16] = "", *longdir = malloc(COHORT_MODULE_DIR_MAX + 2);

    /* a short list is cut, never overrun, and stays a string */
    ck_assert_ptr_null(cohort_module_open("/no/a:/no/b", NULL, NOSUCH, small, sizeof(small)));
    ck_assert_uint_lt(strlen(small), sizeof(small));
    ck_assert(strncmp(small, "/no/a/" NOSUCH, sizeof(small) - 1) == 0);
    /* a directory longer than any setting may hold is skipped, not tried cut short */
    ck_assert_ptr_nonnull(longdir);
    memset(longdir, 'd', COHORT_MODULE_DIR_MAX + 1);
    longdir[0] = '/';
    longdir[COHORT_MODULE_DIR_MAX + 1] = '\0';
    ck_assert_ptr_null(cohort_module_open(longdir, NULL, NOSUCH, tried, sizeof(tried)));
    ck_assert_msg(strncmp(tried, "/dd", 3) != 0, "the long directory was tried: %.40s", tried);
    free(longdir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("module");
    TCase *tc = tcase_create("search");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_no_path);
    tcase_add_test(tc, test_found_on_path);
    tcase_add_test(tc, test_bounds);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
