/* SPDX-License-Identifier: MIT */
/* The main() every Check suite shares: run, report, exit non-zero on any failure. */
#ifndef DACCE_CHECK_MAIN_H
#define DACCE_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int run_suite(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
