/* COHORT_* parsing: defaults, every accepted value, and a named error for every bad one. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "core/config.h"
#include "core/context.h"

static cohort_config_t cfg;
static char err[512], warn[512];

static cohort_status_t parse(char **env)
{
    return cohort_config_parse(&cfg, env, err, sizeof(err), warn, sizeof(warn));
}

START_TEST(test_defaults)
{
    char *env[] = {"PATH=/bin", "HOME=/root", NULL};

    ck_assert_int_eq(parse(env), COHORT_OK);
    ck_assert_str_eq(cfg.pmix_plugin, "dmodex");
    ck_assert_int_eq(cfg.progress, COHORT_PROGRESS_YIELD);
    ck_assert(cfg.timeout_s == 0);
    ck_assert(cfg.keepalive_s == 1.0 && cfg.watch_s == 1.0);
    ck_assert_int_eq(cfg.cma, COHORT_CMA_AUTO);
    ck_assert_uint_eq(cfg.cma_min, 64u << 10);
    ck_assert_int_eq(cfg.check, 0);
    ck_assert_int_eq(cfg.log_level, 1);
    ck_assert_str_eq(cfg.plugin_path, "");
    ck_assert_int_eq(cfg.nalgo, 0);
    ck_assert_int_eq(cfg.fault_point, COHORT_FAULT_NONE);
    ck_assert(cfg.orphan_bytes > 0);
    ck_assert_int_eq(cfg.cuda_ipc_cache, 64);
    ck_assert_uint_eq(cfg.cuda_pipeline_min, 4u << 20);
    ck_assert_int_eq(cfg.cuda_ipc, COHORT_CUDA_IPC_AUTO);
    ck_assert_uint_eq(cfg.cuda_ipc_min, 1u << 20);
    ck_assert_int_eq(cfg.shm_arena, 1);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(warn, "");
}
END_TEST

START_TEST(test_values)
{
    char *env[] = {"COHORT_PMIX_PLUGIN=fence",
                   "COHORT_PROGRESS=block",
                   "COHORT_TIMEOUT=2.5",
                   "COHORT_KEEPALIVE_S=0.5",
                   "COHORT_WATCH_S=0",
                   "COHORT_CMA=on",
                   "COHORT_CMA_MIN=4096",
                   "COHORT_CHECK=1",
                   "COHORT_LOG=debug",
                   "COHORT_PLUGIN_PATH=/a:/b",
                   "COHORT_ALGO_ALLREDUCE=ring",
                   "COHORT_ALGO_REDUCE_SCATTER=ring",
                   "COHORT_CUDA_IPC_CACHE=0",
                   "COHORT_CUDA_PIPELINE_MIN=1M",
                   "COHORT_CUDA_IPC_MIN=64K",
                   "COHORT_SHM_DEFER=3",
                   "COHORT_SHM_ARENA=off",
                   NULL};

    ck_assert_int_eq(parse(env), COHORT_OK);
    ck_assert_str_eq(cfg.pmix_plugin, "fence");
    ck_assert_int_eq(cfg.shm_defer, 3);
    ck_assert_int_eq(cfg.shm_arena, 0);
    ck_assert_int_eq(cfg.progress, COHORT_PROGRESS_BLOCK);
    ck_assert(cfg.timeout_s == 2.5);
    ck_assert(cfg.keepalive_s == 0.5);
    ck_assert(cfg.watch_s == 0);
    ck_assert_int_eq(cfg.cma, COHORT_CMA_ON);
    ck_assert_uint_eq(cfg.cma_min, 4096);
    ck_assert_int_eq(cfg.check, 1);
    ck_assert_int_eq(cfg.cuda_ipc_cache, 0);
    ck_assert_uint_eq(cfg.cuda_pipeline_min, 1u << 20);
    ck_assert_uint_eq(cfg.cuda_ipc_min, 64u << 10);
    {
        char *off[] = {"COHORT_CUDA_PIPELINE_MIN=off", NULL};
        ck_assert_int_eq(parse(off), COHORT_OK);
        ck_assert_uint_eq(cfg.cuda_pipeline_min, SIZE_MAX);
    }
    {
        /* sizes take K, M and G, binary, either case */
        static const struct {
            const char *set;
            size_t bytes;
        } sized[] = {{"COHORT_CMA_MIN=64K", 65536},
                     {"COHORT_CMA_MIN=1m", 1048576},
                     {"COHORT_CMA_MIN=2G", 2147483648u},
                     {"COHORT_CMA_MIN=0", 0}};
        for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
            char *one[] = {(char *)sized[i].set, NULL};
            ck_assert_int_eq(parse(one), COHORT_OK);
            ck_assert_uint_eq(cfg.cma_min, sized[i].bytes);
        }
        ck_assert_int_eq(parse(env), COHORT_OK);
    }
    ck_assert_int_eq(cfg.log_level, 3);
    ck_assert_str_eq(cfg.plugin_path, "/a:/b");
    /* Kept as text for the collective layer, in order. */
    ck_assert_int_eq(cfg.nalgo, 2);
    ck_assert_str_eq(cfg.algo[0].name, "ALLREDUCE");
    ck_assert_str_eq(cfg.algo[0].value, "ring");
    ck_assert_str_eq(cfg.algo[1].name, "REDUCE_SCATTER");
    ck_assert_str_eq(cfg.algo[1].value, "ring");
}
END_TEST

START_TEST(test_progress_modes)
{
    static const char *const modes[] = {"yield", "spin", "block"};
    char buf[64];
    char *env[] = {buf, NULL};

    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof(buf), "COHORT_PROGRESS=%s", modes[i]);
        ck_assert_int_eq(parse(env), COHORT_OK);
        ck_assert_int_eq(cfg.progress, i);
        ck_assert_str_eq(cohort_progress_mode_name(cfg.progress), modes[i]);
    }
}
END_TEST

/* Every bad value is an error whose message names the variable. */
START_TEST(test_bad_values_named)
{
    static const char *const bad[][2] = {
        {"COHORT_PMIX_PLUGIN=pmi2", "COHORT_PMIX_PLUGIN"},
        {"COHORT_PROGRESS=busy", "COHORT_PROGRESS"},
        {"COHORT_TIMEOUT=-1", "COHORT_TIMEOUT"},
        {"COHORT_TIMEOUT=abc", "COHORT_TIMEOUT"},
        {"COHORT_TIMEOUT=5s", "COHORT_TIMEOUT"},
        {"COHORT_TIMEOUT=", "COHORT_TIMEOUT"},
        {"COHORT_TIMEOUT=inf", "COHORT_TIMEOUT"},
        {"COHORT_TIMEOUT=1e40", "COHORT_TIMEOUT"},
        {"COHORT_KEEPALIVE_S=-1", "COHORT_KEEPALIVE_S"},
        {"COHORT_KEEPALIVE_S=1s", "COHORT_KEEPALIVE_S"},
        {"COHORT_WATCH_S=nan", "COHORT_WATCH_S"},
        {"COHORT_CMA=yes", "COHORT_CMA"},
        {"COHORT_CMA_MIN=-1", "COHORT_CMA_MIN"},
        {"COHORT_CMA_MIN=1x", "COHORT_CMA_MIN"},
        {"COHORT_CMA_MIN=K", "COHORT_CMA_MIN"},
        {"COHORT_CMA_MIN=1kk", "COHORT_CMA_MIN"},
        {"COHORT_CMA_MIN= 1", "COHORT_CMA_MIN"},
        {"COHORT_CMA_MIN=99999999999999G", "COHORT_CMA_MIN"},
        {"COHORT_CHECK=yes", "COHORT_CHECK"},
        {"COHORT_LOG=verbose", "COHORT_LOG"},
        {"COHORT_ALGO_ALLREDUCE=", "COHORT_ALGO_ALLREDUCE"},
        {"COHORT_ORPHAN_LIMIT=-5", "COHORT_ORPHAN_LIMIT"},
        {"COHORT_ORPHAN_LIMIT=lots", "COHORT_ORPHAN_LIMIT"},
        {"COHORT_FAULT=send", "COHORT_FAULT"},
        {"COHORT_FAULT=send:0", "COHORT_FAULT"},
        {"COHORT_FAULT=disk:1", "COHORT_FAULT"},
        {"COHORT_CUDA=on", "COHORT_CUDA"},
        {"COHORT_CUDA_IPC=1", "COHORT_CUDA_IPC"},
        {"COHORT_SHM_DEFER=-1", "COHORT_SHM_DEFER"},
        {"COHORT_SHM_DEFER=2x", "COHORT_SHM_DEFER"},
        {"COHORT_SHM_ARENA=1", "COHORT_SHM_ARENA"},
        {"COHORT_SHM_ARENA=", "COHORT_SHM_ARENA"},
        {"COHORT_CUDA_IPC_CACHE=-1", "COHORT_CUDA_IPC_CACHE"},
        {"COHORT_CUDA_IPC_CACHE=8x", "COHORT_CUDA_IPC_CACHE"},
        {"COHORT_CUDA_IPC_CACHE=", "COHORT_CUDA_IPC_CACHE"},
        {"COHORT_CUDA_IPC_CACHE=99999999999", "COHORT_CUDA_IPC_CACHE"},
        {"COHORT_CUDA_PIPELINE_MIN=never", "COHORT_CUDA_PIPELINE_MIN"},
        {"COHORT_CUDA_PIPELINE_MIN=-1", "COHORT_CUDA_PIPELINE_MIN"},
        {"COHORT_CUDA_IPC_MIN=big", "COHORT_CUDA_IPC_MIN"},
        {"COHORT_CUDA_IPC_MIN=-5", "COHORT_CUDA_IPC_MIN"},
        {"COHORT_CUDA_IPC_MIN=", "COHORT_CUDA_IPC_MIN"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *env[] = {(char *)bad[i][0], NULL};
        ck_assert_int_eq(parse(env), COHORT_ERR_INVALID_ARG);
        ck_assert_msg(strstr(err, bad[i][1]) != NULL, "'%s' gave '%s'", bad[i][0], err);
    }
}
END_TEST

START_TEST(test_unknown_name_warns)
{
    char *env[] = {"COHORT_PROGESS=spin", "COHORT_TIMEOUT=1", NULL};

    ck_assert_int_eq(parse(env), COHORT_OK);
    ck_assert_ptr_nonnull(strstr(warn, "COHORT_PROGESS"));
    ck_assert(cfg.timeout_s == 1);
}
END_TEST

/* Algorithm names are checked against the table; the message lists the valid ones. */
START_TEST(test_algo_names)
{
    char *good[] = {"COHORT_ALGO_BARRIER=dissemination", NULL};
    char *bad[] = {"COHORT_ALGO_BARRIER=nope", NULL};
    /* An unknown collective is the collective layer's to reject, at init, named. */
    char *coll[] = {"COHORT_ALGO_SCAN=ring", NULL};
    cohort_context_t ctx;

    memset(&ctx, 0, sizeof(ctx));
    ck_assert_int_eq(parse(good), COHORT_OK);
    ctx.cfg = cfg;
    ck_assert_int_eq(cohort_coll_config(&ctx, err, sizeof(err)), COHORT_OK);
    ctx.coll_free(ctx.coll);
    ck_assert_int_eq(parse(bad), COHORT_OK);
    ctx.cfg = cfg;
    ck_assert_int_eq(cohort_coll_config(&ctx, err, sizeof(err)), COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "COHORT_ALGO_BARRIER=nope"));
    ck_assert_ptr_nonnull(strstr(err, "dissemination"));
    ck_assert_int_eq(parse(coll), COHORT_OK);
    ctx.cfg = cfg;
    ck_assert_int_eq(cohort_coll_config(&ctx, err, sizeof(err)), COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "COHORT_ALGO_SCAN"));
    ck_assert_ptr_nonnull(strstr(err, "unknown collective"));
}
END_TEST

/* The public list of settings and the parser agree: every listed name is one the parser knows
 * (no "ignoring unknown settings" warning), and every name the parser knows is listed. */
START_TEST(test_settings_listed)
{
    static const char *const parsed[] = {"COHORT_PMIX_PLUGIN",
                                         "COHORT_PLUGIN_PATH",
                                         "COHORT_PROGRESS",
                                         "COHORT_TIMEOUT",
                                         "COHORT_CHECK",
                                         "COHORT_LOG",
                                         "COHORT_ORPHAN_LIMIT",
                                         "COHORT_FAULT",
                                         "COHORT_KEEPALIVE_S",
                                         "COHORT_WATCH_S",
                                         "COHORT_CMA",
                                         "COHORT_CMA_MIN",
                                         "COHORT_CUDA",
                                         "COHORT_CUDA_IPC",
                                         "COHORT_CUDA_IPC_CACHE",
                                         "COHORT_CUDA_PIPELINE_MIN"};
    int n = cohort_setting_count(), found;
    cohort_setting_t info;

    ck_assert_int_ge(n, 10);
    ck_assert_int_eq(cohort_setting_info(n, &info), COHORT_ERR_INVALID_ARG);
    ck_assert_int_eq(cohort_setting_info(0, NULL), COHORT_ERR_INVALID_ARG);
    for (int i = 0; i < n; i++) {
        char entry[128];
        char *env[] = {entry, NULL};

        ck_assert_int_eq(cohort_setting_info(i, &info), COHORT_OK);
        ck_assert(info.values[0] != '\0' && info.description[0] != '\0');
        if (strchr(info.name, '<') != NULL) {
            continue; /* a family; the collective layer checks those */
        }
        snprintf(entry, sizeof(entry), "%s=%s", info.name, info.default_value);
        parse(env);
        ck_assert_msg(strstr(warn, info.name) == NULL, "%s unknown to the parser", info.name);
    }
    for (size_t j = 0; j < sizeof(parsed) / sizeof(parsed[0]); j++) {
        found = 0;
        for (int i = 0; i < n; i++) {
            cohort_setting_info(i, &info);
            found |= strcmp(info.name, parsed[j]) == 0;
        }
        ck_assert_msg(found, "%s is parsed but not listed", parsed[j]);
    }
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_progress_modes);
    tcase_add_test(tc, test_bad_values_named);
    tcase_add_test(tc, test_unknown_name_warns);
    tcase_add_test(tc, test_algo_names);
    tcase_add_test(tc, test_settings_listed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
