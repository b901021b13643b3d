/* The active-message header's wire encoding, and the id map behind group lookup. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "core/am_header.h"
#include "core/address_card.h"
#include "base/map.h"

START_TEST(test_roundtrip)
{
    cohort_am_hdr_t in = {.gid = 0x0123456789abcdefULL,
                          .seq = 0xfffffffeu,
                          .src = 12345,
                          .tag = -7,
                          .fingerprint = 0xdeadbeefu,
                          .wsrc = 70000,
                          .kind = COHORT_MSG_COLL};
    cohort_am_hdr_t out;
    uint8_t buf[COHORT_AM_HDR_BYTES];

    memset(&out, 0, sizeof(out));
    cohort_am_hdr_encode(&in, buf);
    ck_assert_int_eq(cohort_am_hdr_decode(buf, sizeof(buf), &out), 0);
    ck_assert_uint_eq(out.gid, in.gid);
    ck_assert_uint_eq(out.seq, in.seq);
    ck_assert_int_eq(out.src, in.src);
    ck_assert_int_eq(out.tag, in.tag);
    ck_assert_uint_eq(out.fingerprint, in.fingerprint);
    ck_assert_int_eq(out.wsrc, in.wsrc);
    ck_assert_uint_eq(out.kind, in.kind);
}
END_TEST

/* Little-endian on the wire whatever the host: the bytes are pinned. */
START_TEST(test_wire_layout)
{
    cohort_am_hdr_t in = {.gid = 0x0102030405060708ULL,
                          .seq = 0x0a0b0c0d,
                          .src = 1,
                          .tag = 2,
                          .fingerprint = 3,
                          .wsrc = 4,
                          .kind = COHORT_MSG_P2P};
    uint8_t buf[COHORT_AM_HDR_BYTES];

    cohort_am_hdr_encode(&in, buf);
    ck_assert_uint_eq(buf[0], COHORT_AM_MAGIC);
    ck_assert_uint_eq(buf[1], COHORT_MSG_P2P);
    ck_assert_uint_eq(buf[4], 0x0d);
    ck_assert_uint_eq(buf[7], 0x0a);
    ck_assert_uint_eq(buf[8], 0x08);
    ck_assert_uint_eq(buf[15], 0x01);
    ck_assert_uint_eq(buf[16], 1);
    ck_assert_uint_eq(buf[20], 2);
    ck_assert_uint_eq(buf[24], 3);
    ck_assert_uint_eq(buf[28], 4);
}
END_TEST

START_TEST(test_rejects_bad_headers)
{
    cohort_am_hdr_t in = {.gid = 1, .kind = COHORT_MSG_P2P}, out;
    uint8_t buf[COHORT_AM_HDR_BYTES + 1];

    cohort_am_hdr_encode(&in, buf);
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES - 1, &out), -1);
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES + 1, &out), -1);
    ck_assert_int_eq(cohort_am_hdr_decode(NULL, COHORT_AM_HDR_BYTES, &out), -1);
    buf[0] ^= 0xff;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[0] ^= 0xff;
    buf[1] = 99;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[1] = 0;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[1] = COHORT_MSG_REVOKE;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), 0);
    /* The padding must be zero, flags are known ones on data messages, no rank is negative. */
    buf[3] = 1;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[3] = 0;
    buf[2] = COHORT_HDR_SINGLE_COPY; /* on a revoke */
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[1] = COHORT_MSG_P2P;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), 0);
    ck_assert_uint_eq(out.flags, COHORT_HDR_SINGLE_COPY);
    buf[2] = 0x80;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[2] = 0;
    buf[1] = COHORT_MSG_REVOKE;
    buf[19] = 0x80;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
    buf[19] = 0;
    buf[31] = 0x80;
    ck_assert_int_eq(cohort_am_hdr_decode(buf, COHORT_AM_HDR_BYTES, &out), -1);
}
END_TEST

/* A rank's published card (core/address_card.h): its pid and address come back as made; what is not a
 * card (an older cohort's bare address, a truncated value, a pid of 0) is refused, never read
 * as a pid to copy from. */
START_TEST(test_card)
{
    const char addr[] = "ucx-worker-address";
    const void *back = NULL;
    size_t len = 0;
    int32_t pid = 0;
    cohort_arena_ref_t arena = {.fd = 17, .token = 0x1122334455667788ull}, got = {0};
    uint8_t *card = cohort_card_make(4242, &arena, addr, sizeof(addr), &len);

    ck_assert_ptr_nonnull(card);
    ck_assert_uint_eq(len, COHORT_CARD_HDR + sizeof(addr));
    ck_assert_int_eq(cohort_card_read(card, len, &pid, &got, &back), COHORT_OK);
    ck_assert_int_eq(pid, 4242);
    ck_assert_int_eq(got.fd, 17);
    ck_assert_uint_eq(got.token, 0x1122334455667788ull);
    ck_assert_mem_eq(back, addr, sizeof(addr));
    pid = 7;
    ck_assert_int_eq(cohort_card_read(addr, sizeof(addr), &pid, &got, &back), COHORT_ERR_MISMATCH);
    ck_assert_int_eq(cohort_card_read(card, COHORT_CARD_HDR, &pid, &got, &back),
                     COHORT_ERR_MISMATCH);
    ck_assert_int_eq(pid, 7); /* untouched when refused */
    free(card);
    card = cohort_card_make(0, &arena, addr, sizeof(addr), &len);
    ck_assert_int_eq(cohort_card_read(card, len, &pid, &got, &back), COHORT_ERR_MISMATCH);
    free(card);
}
END_TEST

START_TEST(test_map)
{
    cohort_map_t m;
    enum { N = 5000 };

    cohort_map_init(&m);
    ck_assert_ptr_null(cohort_map_get(&m, 42));
    for (uint64_t k = 1; k <= N; k++) {
        ck_assert_int_eq(cohort_map_put(&m, k * 0x9e3779b97f4a7c15ULL, (void *)(uintptr_t)k),
                         COHORT_OK);
    }
    ck_assert_uint_eq(m.count, N);
    /* delete every other key; the rest stay reachable across the holes */
    for (uint64_t k = 1; k <= N; k += 2) {
        cohort_map_del(&m, k * 0x9e3779b97f4a7c15ULL);
    }
    for (uint64_t k = 1; k <= N; k++) {
        void *v = cohort_map_get(&m, k * 0x9e3779b97f4a7c15ULL);
        if (k % 2) {
            ck_assert_ptr_null(v);
        } else {
            ck_assert_ptr_eq(v, (void *)(uintptr_t)k);
        }
    }
    ck_assert_int_eq(cohort_map_put(&m, 0, NULL), COHORT_ERR_INVALID_ARG);
    cohort_map_cleanup(&m);
}
END_TEST

static Suite *header_suite(void)
{
    Suite *s = suite_create("am_header");
    TCase *tc = tcase_create("encode");

    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_wire_layout);
    tcase_add_test(tc, test_rejects_bad_headers);
    tcase_add_test(tc, test_map);
    tcase_add_test(tc, test_card);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(header_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
