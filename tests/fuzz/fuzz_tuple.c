/*
 * tests/fuzz/fuzz_tuple.c - libFuzzer target for the tuple decoder
 * (store/tuple.h). Any input: decoding never reads past it and either fails
 * or yields elements. Because the decoder accepts exactly one spelling per
 * tuple, an input that decodes whole must re-encode to the very same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

#define FUZZ_TUPLE_MAX 4096	/* bigger than any key; keeps the recursion shallow */

static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_tuple: %s\n", what);
	abort();
}

/*
 * Re-encodes every element r yields into w, nested tuples recursively.
 * 1 when the input decoded whole, 0 when the decoder refused some of it.
 */
static int reencode(struct tuple_reader *r, struct tuple_writer *w)
{
	struct tuple_elem e;
	struct tuple_reader inner;
	uint8_t *copy;
	int rc;

	while ((rc = tuple_next(r, &e)) == 1) {
		if (r->pos > r->len)
			fuzz_fail("the reader moved past its input");
		switch (e.type) {
		case TUPLE_TYPE_NULL:
			tuple_put_null(w);
			break;
		case TUPLE_TYPE_BYTES:
		case TUPLE_TYPE_STRING:
			if (e.len > e.raw_len)
				fuzz_fail("an unescaped length beyond its body");
			copy = malloc(e.len + 1);
			if (!copy)
				return 0;
			tuple_elem_copy(&e, copy);
			if (e.type == TUPLE_TYPE_BYTES)
				tuple_put_bytes(w, copy, e.len);
			else
				tuple_put_string(w, (const char *)copy, e.len);
			free(copy);
			break;
		case TUPLE_TYPE_NESTED:
			tuple_reader_init_nested(&inner, &e);
			tuple_nested_begin(w);
			if (reencode(&inner, w) != 1)
				fuzz_fail("a nested tuple accepted whole has a bad element");
			tuple_nested_end(w);
			break;
		case TUPLE_TYPE_INT:
			tuple_put_int(w, e.integer);
			break;
		case TUPLE_TYPE_DOUBLE:
			tuple_put_double(w, e.real);
			break;
		case TUPLE_TYPE_FALSE:
		case TUPLE_TYPE_TRUE:
			tuple_put_bool(w, e.type == TUPLE_TYPE_TRUE);
			break;
		default:
			fuzz_fail("an unknown element type");
		}
	}
	if (rc != 0 && rc != -EINVAL)
		fuzz_fail("tuple_next returned neither 1, 0 nor -EINVAL");
	return rc == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tuple_reader r;
	struct tuple_writer w;
	uint8_t *out;

	if (size > FUZZ_TUPLE_MAX)
		return 0;
	out = malloc(size + 1);
	if (!out)
		return 0;
	tuple_reader_init(&r, data, size);
	/* exactly the input's room: a longer re-encoding overflows and fails below */
	tuple_writer_init(&w, out, size);
	if (reencode(&r, &w) == 1) {
		if (w.overflow || w.len != size || memcmp(out, data, size) != 0)
			fuzz_fail("a tuple decoded whole does not re-encode to its input");
		if (w.depth != 0)
			fuzz_fail("unbalanced nesting after re-encoding");
	}
	free(out);
	return 0;
}
