/*
 * tests/fuzz/fuzz_names.c - libFuzzer target for the escaping of object keys
 * as file names (model/tree/tree.c, docs/FORMAT.md "Names"). The input is used
 * both ways: as a key, its name must be a usable file name that decodes
 * back to the key; as a name, when it decodes at all, the key it gives must
 * encode back to that very name (one spelling per key). Array indices: a
 * name accepted as an index prints back as itself.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "model/tree/tree_int.h"

static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_names: %s\n", what);
	abort();
}

static bool ends_with_json(const char *name, size_t len)
{
	return len >= 5 && memcmp(name + len - 5, ".json", 5) == 0;
}

/* The input as a key: encode, check the name, decode back. */
static void key_round_trip(const uint8_t *key, size_t len)
{
	static char name[TREE_NAME_MAX], back[STORE_KEY_MAX + 1];
	size_t n = tree_name_escape(key, len, name);
	ssize_t k;

	if (n != tree_name_escaped_len(key, len) || n >= TREE_NAME_MAX || name[n] != '\0')
		fuzz_fail("escaped length disagrees with the name written");
	if (n == 0 || memchr(name, '/', n) || memchr(name, '\0', n) ||
	    (n == 1 && name[0] == '.') || (n == 2 && memcmp(name, "..", 2) == 0) ||
	    ends_with_json(name, n))
		fuzz_fail("a key escaped to a name the kernel or the views would misread");
	k = tree_name_unescape(name, n, back, sizeof(back));
	if (k < 0 || (size_t)k != len || memcmp(back, key, len) != 0)
		fuzz_fail("a key does not decode back from its name");
}

/* The input as a name: whatever decodes must encode to the same name. */
static void name_round_trip(const char *name, size_t len)
{
	static char key[STORE_KEY_MAX + 1], again[TREE_NAME_MAX];
	ssize_t k = tree_name_unescape(name, len, key, sizeof(key));
	char digits[32];
	int64_t index;

	/* (its length is bounded by the caller's buffer; the key encoder refuses what is too long) */
	if (k >= 0) {
		if ((size_t)k > sizeof(key))
			fuzz_fail("a decoded key longer than its buffer");
		if (tree_name_escape(key, (size_t)k, again) != len || memcmp(again, name, len) != 0)
			fuzz_fail("a decoded name does not encode back to itself");
	}
	if (tree_name_index(name, len, &index)) {
		int d = snprintf(digits, sizeof(digits), "%" PRId64, index);

		if (index < 0 || d < 0 || (size_t)d != len || memcmp(digits, name, len) != 0)
			fuzz_fail("an index name is not the canonical text of its index");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size <= STORE_KEY_MAX)
		key_round_trip(data, size);
	if (size < TREE_NAME_MAX)
		name_round_trip((const char *)data, size);
	return 0;
}
