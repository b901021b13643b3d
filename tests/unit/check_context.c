/* How the engine is composed with its protocol layer (core/proto_ops.h): a context made without
 * one, or with one that lacks a verb, is refused with a status and an error line before anything
 * is made (never a crash at the first send); one made with proto.c's layer calls its init and
 * cleanup through the pointer it was given, once each. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/context.h"
#include "proto/proto.h"

/* stderr caught in a file while a call runs (Check forks each test: nothing leaks out). */
static FILE *caught;
static int saved_fd = -1;

static void catch_stderr(void)
{
    fflush(stderr);
    caught = tmpfile();
    ck_assert_ptr_nonnull(caught);
    saved_fd = dup(STDERR_FILENO);
    ck_assert_int_ge(saved_fd, 0);
    ck_assert_int_ge(dup2(fileno(caught), STDERR_FILENO), 0);
}

/* What was written meanwhile (static buffer), stderr given back. */
static const char *caught_text(void)
{
    static char text[4096];
    size_t n;

    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    rewind(caught);
    n = fread(text, 1, sizeof(text) - 1, caught);
    text[n] = '\0';
    fclose(caught);
    return text;
}

START_TEST(test_no_layer)
{
    cohort_context_t *ctx = (cohort_context_t *)&ctx; /* must stay as it is */
    cohort_status_t st;
    const char *said;

    catch_stderr();
    st = cohort_context_create(&ctx, NULL, NULL, NULL);
    said = caught_text();
    ck_assert_int_eq(st, COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_eq(ctx, (cohort_context_t *)&ctx);
    ck_assert_msg(strstr(said, "error: cohort_init: the context was given no protocol layer") !=
                      NULL,
                  "said: %s", said);
}
END_TEST

/* Each verb in turn taken out of proto.c's layer: refused, naming it. */
START_TEST(test_verb_missing)
{
    static const char *const verbs[] = {"init",   "cleanup", "stage",   "start", "progress", "sent",
                                        "cancel", "finish",  "payload", "drain", "unstage"};
    cohort_proto_ops_t ops = cohort_proto_layer;
    cohort_context_t *ctx = NULL;
    cohort_status_t st;
    char want[128];
    const char *said;

    switch (_i) {
    case 0:
        ops.init = NULL;
        break;
    case 1:
        ops.cleanup = NULL;
        break;
    case 2:
        ops.stage = NULL;
        break;
    case 3:
        ops.start = NULL;
        break;
    case 4:
        ops.progress = NULL;
        break;
    case 5:
        ops.sent = NULL;
        break;
    case 6:
        ops.cancel = NULL;
        break;
    case 7:
        ops.finish = NULL;
        break;
    case 8:
        ops.payload = NULL;
        break;
    case 9:
        ops.drain = NULL;
        break;
    default:
        ops.unstage = NULL;
        break;
    }
    catch_stderr();
    st = cohort_context_create(&ctx, NULL, &ops, NULL);
    said = caught_text();
    ck_assert_int_eq(st, COHORT_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);
    snprintf(want, sizeof(want), "protocol layer 'protocols' lacks its '%s' verb", verbs[_i]);
    ck_assert_msg(strstr(said, want) != NULL, "want '%s', said: %s", want, said);
}
END_TEST

/* A world of one over an in-memory store: the card this rank puts is all there is. */
static void *stored;
static size_t stored_len;

static cohort_status_t one_put(void *arg, const char *key, const void *value, size_t len)
{
    (void)arg;
    (void)key;
    free(stored);
    stored = malloc(len);
    if (stored == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(stored, value, len);
    stored_len = len;
    return COHORT_OK;
}

static cohort_status_t one_get(void *arg, const char *key, void **value, size_t *len)
{
    (void)arg;
    (void)key;
    if (stored == NULL) {
        return COHORT_INPROGRESS;
    }
    *value = malloc(stored_len);
    if (*value == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(*value, stored, stored_len);
    *len = stored_len;
    return COHORT_OK;
}

static int inits, cleanups;

static cohort_status_t counted_init(cohort_context_t *ctx)
{
    inits++;
    return cohort_proto_layer.init(ctx);
}

static void counted_cleanup(cohort_context_t *ctx)
{
    cleanups++;
    cohort_proto_layer.cleanup(ctx);
}

START_TEST(test_layer_composed)
{
    cohort_exchange_t ex = {.rank = 0, .size = 1, .put = one_put, .get = one_get};
    cohort_proto_ops_t ops = cohort_proto_layer;
    cohort_context_t *ctx = NULL;

    ops.init = counted_init;
    ops.cleanup = counted_cleanup;
    ck_assert_int_eq(cohort_context_create(&ctx, NULL, &ops, &ex), COHORT_OK);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_ptr_eq(ctx->proto_ops, &ops);
    ck_assert_int_eq(inits, 1);
    ck_assert_int_eq(cleanups, 0);
    ck_assert_ptr_nonnull(ctx->protos); /* the table's state, made by its init */
    ck_assert_int_eq(cohort_context_destroy(ctx), COHORT_OK);
    ck_assert_int_eq(inits, 1);
    ck_assert_int_eq(cleanups, 1);
    free(stored);
    stored = NULL;
}
END_TEST

static Suite *context_suite(void)
{
    Suite *s = suite_create("context");
    TCase *tc = tcase_create("compose");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_no_layer);
    tcase_add_loop_test(tc, test_verb_missing, 0, 11);
    tcase_add_test(tc, test_layer_composed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(context_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
