/*
 * tests/unit/unit.h - a tiny TAP harness for the C unit tests.
 * Each CHECK prints nothing on success; each TEST prints one TAP line.
 */
#ifndef KVFS_UNIT_H
#define KVFS_UNIT_H

#include <stdio.h>
#include <string.h>

/*
 * The counters. A program of one file keeps them static. A program built
 * from several files (its tests in parts beside its main) must share one
 * set, or a part's failed CHECK would set a flag no TEST reads: each of
 * its files defines UNIT_SHARED before including this header, and the
 * file with main also UNIT_MAIN, which defines them.
 */
#ifdef UNIT_SHARED
extern int unit_test_number;
extern int unit_failures;
extern int unit_current_failed;
#ifdef UNIT_MAIN
int unit_test_number;
int unit_failures;
int unit_current_failed;
#endif
#else
static int unit_test_number;
static int unit_failures;
static int unit_current_failed;
#endif

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		unit_current_failed = 1; \
	} \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long unit_a = (long long)(a), unit_b = (long long)(b); \
	if (unit_a != unit_b) { \
		fprintf(stderr, "#   %s:%d: %s == %lld, expected %s == %lld\n", \
		        __FILE__, __LINE__, #a, unit_a, #b, unit_b); \
		unit_current_failed = 1; \
	} \
} while (0)

#define CHECK_MEM(a, alen, b, blen) do { \
	if ((size_t)(alen) != (size_t)(blen) || memcmp((a), (b), (blen)) != 0) { \
		fprintf(stderr, "#   %s:%d: bytes of %s differ from %s\n", \
		        __FILE__, __LINE__, #a, #b); \
		unit_current_failed = 1; \
	} \
} while (0)

/* Runs fn as one TAP test case named by its function. */
#define TEST(fn) do { \
	unit_current_failed = 0; \
	fn(); \
	unit_test_number++; \
	printf("%sok %d - %s\n", unit_current_failed ? "not " : "", unit_test_number, #fn); \
	unit_failures += unit_current_failed; \
} while (0)

#define UNIT_DONE() (printf("1..%d\n", unit_test_number), unit_failures ? 1 : 0)

#endif
