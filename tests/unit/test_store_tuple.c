/*
 * tests/unit/test_store_tuple.c - the tuple encoding: FoundationDB's published
 * byte vectors, round trips, strict refusal of malformed input, and the
 * property the whole store rests on: memcmp order of encodings equals tuple
 * order (checked against an independent comparison written here).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/tuple.h"
#include "tests/unit/unit.h"

/* Encodes with the statements in `expr` (using `w`) and compares the bytes. */
#define ENC(expr, ...) do { \
	static const uint8_t want[] = { __VA_ARGS__ }; \
	uint8_t got[128]; \
	struct tuple_writer w_; \
	struct tuple_writer *w = &w_; \
	tuple_writer_init(w, got, sizeof(got)); \
	expr; \
	CHECK(!w->overflow); \
	CHECK_MEM(got, w->len, want, sizeof(want)); \
} while (0)

#define FF 0xff

/* ---- a value model independent of the codec ---- */

struct val {
	enum tuple_type type;
	int64_t i;
	double d;
	uint8_t s[8];
	size_t slen;
	struct val *kids;	/* nested tuple (and the top-level tuple) */
	size_t nkids;
};

static struct val arena[1 << 16];
static size_t arena_used;

static struct val *val_alloc(size_t n)
{
	struct val *v = &arena[arena_used];

	if (arena_used + n > sizeof(arena) / sizeof(arena[0]))
		abort();
	arena_used += n;
	memset(v, 0, n * sizeof(*v));
	return v;
}

static int type_rank(enum tuple_type t)
{
	static const int rank[] = {
		[TUPLE_TYPE_NULL] = 0x00, [TUPLE_TYPE_BYTES] = 0x01,
		[TUPLE_TYPE_STRING] = 0x02, [TUPLE_TYPE_NESTED] = 0x05,
		[TUPLE_TYPE_INT] = 0x14, [TUPLE_TYPE_DOUBLE] = 0x21,
		[TUPLE_TYPE_FALSE] = 0x26, [TUPLE_TYPE_TRUE] = 0x27,
	};
	return rank[t];
}

static int sign(long long x)
{
	return (x > 0) - (x < 0);
}

static uint64_t dbits(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

/* |a| vs |b| where NaN is above infinity and NaNs order by payload. */
static int cmp_magnitude(double a, double b)
{
	uint64_t low = ~((uint64_t)1 << 63);

	if (isnan(a) && isnan(b))
		return sign((dbits(a) & low) > (dbits(b) & low) ? 1 :
			    (dbits(a) & low) < (dbits(b) & low) ? -1 : 0);
	if (isnan(a) || isnan(b))
		return isnan(a) ? 1 : -1;
	return fabs(a) < fabs(b) ? -1 : fabs(a) > fabs(b);
}

/* Spec order: every negative (sign bit set, -0.0 and -NaN too) below every positive. */
static int cmp_double(double a, double b)
{
	int na = signbit(a) != 0, nb = signbit(b) != 0;

	if (na != nb)
		return na ? -1 : 1;
	return na ? -cmp_magnitude(a, b) : cmp_magnitude(a, b);
}

static int cmp_list(const struct val *a, size_t na, const struct val *b, size_t nb);

static int cmp_val(const struct val *a, const struct val *b)
{
	int c = sign(type_rank(a->type) - type_rank(b->type));
	size_t n;

	if (c)
		return c;
	switch (a->type) {
	case TUPLE_TYPE_INT:
		return a->i < b->i ? -1 : a->i > b->i;
	case TUPLE_TYPE_DOUBLE:
		return cmp_double(a->d, b->d);
	case TUPLE_TYPE_BYTES:
	case TUPLE_TYPE_STRING:
		n = a->slen < b->slen ? a->slen : b->slen;
		c = sign(memcmp(a->s, b->s, n));
		return c ? c : sign((long long)a->slen - (long long)b->slen);
	case TUPLE_TYPE_NESTED:
		return cmp_list(a->kids, a->nkids, b->kids, b->nkids);
	default:
		return 0;
	}
}

static int cmp_list(const struct val *a, size_t na, const struct val *b, size_t nb)
{
	for (size_t i = 0; i < na && i < nb; i++) {
		int c = cmp_val(&a[i], &b[i]);

		if (c)
			return c;
	}
	return na < nb ? -1 : na > nb;
}

static void encode_list(struct tuple_writer *w, const struct val *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (v[i].type) {
		case TUPLE_TYPE_NULL: tuple_put_null(w); break;
		case TUPLE_TYPE_BYTES: tuple_put_bytes(w, v[i].s, v[i].slen); break;
		case TUPLE_TYPE_STRING: tuple_put_string(w, (const char *)v[i].s, v[i].slen); break;
		case TUPLE_TYPE_INT: tuple_put_int(w, v[i].i); break;
		case TUPLE_TYPE_DOUBLE: tuple_put_double(w, v[i].d); break;
		case TUPLE_TYPE_FALSE: tuple_put_bool(w, false); break;
		case TUPLE_TYPE_TRUE: tuple_put_bool(w, true); break;
		case TUPLE_TYPE_NESTED:
			tuple_nested_begin(w);
			encode_list(w, v[i].kids, v[i].nkids);
			tuple_nested_end(w);
			break;
		}
	}
}

/* Decodes every element of r into the arena: element count, or -EINVAL. */
static int decode_list(struct tuple_reader *r, struct val **out)
{
	struct val tmp[64];
	struct tuple_elem e;
	struct tuple_reader sub;
	size_t n = 0;
	int rc;

	while ((rc = tuple_next(r, &e)) == 1) {
		if (n == 64)
			return -E2BIG;
		memset(&tmp[n], 0, sizeof(tmp[n]));
		tmp[n].type = e.type;
		tmp[n].i = e.integer;
		tmp[n].d = e.real;
		if (e.type == TUPLE_TYPE_BYTES || e.type == TUPLE_TYPE_STRING) {
			if (e.len > sizeof(tmp[n].s))
				return -E2BIG;
			tuple_elem_copy(&e, tmp[n].s);
			tmp[n].slen = e.len;
		} else if (e.type == TUPLE_TYPE_NESTED) {
			tuple_reader_init_nested(&sub, &e);
			rc = decode_list(&sub, &tmp[n].kids);
			if (rc < 0)
				return rc;
			tmp[n].nkids = (size_t)rc;
		}
		n++;
	}
	if (rc < 0)
		return rc;
	*out = val_alloc(n);
	memcpy(*out, tmp, n * sizeof(tmp[0]));
	return (int)n;
}

/* ---- published vectors (FoundationDB design/tuple.md and the Java tests) ---- */

static void test_vectors_scalars(void)
{
	ENC(tuple_put_null(w), 0x00);
	ENC(tuple_put_int(w, 0), 0x14);
	ENC(tuple_put_int(w, 1), 0x15, 0x01);
	ENC(tuple_put_int(w, -1), 0x13, 0xfe);
	ENC(tuple_put_int(w, 255), 0x15, FF);
	ENC(tuple_put_int(w, -255), 0x13, 0x00);
	ENC(tuple_put_int(w, 256), 0x16, 0x01, 0x00);
	ENC(tuple_put_int(w, -256), 0x12, 0xfe, FF);
	ENC(tuple_put_int(w, 65536), 0x17, 0x01, 0x00, 0x00);
	ENC(tuple_put_int(w, -65536), 0x11, 0xfe, FF, FF);
	ENC(tuple_put_int(w, 0x3019), 0x16, 0x30, 0x19);
	ENC(tuple_put_int(w, -4294967295LL), 0x10, 0x00, 0x00, 0x00, 0x00);
	ENC(tuple_put_int(w, INT64_MAX), 0x1c, 0x7f, FF, FF, FF, FF, FF, FF, FF);
	ENC(tuple_put_int(w, INT64_MIN + 2), 0x0c, 0x80, 0, 0, 0, 0, 0, 0, 0x01);
	ENC(tuple_put_int(w, INT64_MIN + 1), 0x0c, 0x80, 0, 0, 0, 0, 0, 0, 0x00);
	ENC(tuple_put_int(w, INT64_MIN), 0x0c, 0x7f, FF, FF, FF, FF, FF, FF, FF);
	ENC(tuple_put_bool(w, false), 0x26);
	ENC(tuple_put_bool(w, true), 0x27);
}

static void test_vectors_doubles(void)
{
	uint64_t max_bits = INT64_MAX, all_bits = ~(uint64_t)0;
	double dmax, dall;

	memcpy(&dmax, &max_bits, sizeof(dmax));
	memcpy(&dall, &all_bits, sizeof(dall));
	ENC(tuple_put_double(w, 3.14), 0x21, 0xc0, 0x09, 0x1e, 0xb8, 0x51, 0xeb, 0x85, 0x1f);
	ENC(tuple_put_double(w, -3.14), 0x21, 0x3f, 0xf6, 0xe1, 0x47, 0xae, 0x14, 0x7a, 0xe0);
	ENC(tuple_put_double(w, 0.0), 0x21, 0x80, 0, 0, 0, 0, 0, 0, 0);
	ENC(tuple_put_double(w, -0.0), 0x21, 0x7f, FF, FF, FF, FF, FF, FF, FF);
	ENC(tuple_put_double(w, INFINITY), 0x21, FF, 0xf0, 0, 0, 0, 0, 0, 0);
	ENC(tuple_put_double(w, -INFINITY), 0x21, 0x00, 0x0f, FF, FF, FF, FF, FF, FF);
	ENC(tuple_put_double(w, dmax), 0x21, FF, FF, FF, FF, FF, FF, FF, FF);
	ENC(tuple_put_double(w, dall), 0x21, 0, 0, 0, 0, 0, 0, 0, 0);
}

static void test_vectors_strings(void)
{
	ENC(tuple_put_bytes(w, "", 0), 0x01, 0x00);
	ENC(tuple_put_bytes(w, "\x01\x02\x03", 3), 0x01, 0x01, 0x02, 0x03, 0x00);
	ENC(tuple_put_bytes(w, "\0\0\0\x04", 4), 0x01, 0x00, FF, 0x00, FF, 0x00, FF, 0x04, 0x00);
	ENC(tuple_put_bytes(w, "foo\x00\x62\x61r", 7),
	    0x01, 'f', 'o', 'o', 0x00, FF, 'b', 'a', 'r', 0x00);
	ENC(tuple_put_string(w, "", 0), 0x02, 0x00);
	ENC(tuple_put_string(w, "hello", 5), 0x02, 'h', 'e', 'l', 'l', 'o', 0x00);
	ENC(tuple_put_string(w, "foo\0bar", 7), 0x02, 0x66, 0x6f, 0x6f, 0x00, FF, 0x62, 0x61, 0x72, 0x00);
	ENC(tuple_put_string(w, "\xe4\xb8\xad\xe6\x96\x87", 6),
	    0x02, 0xe4, 0xb8, 0xad, 0xe6, 0x96, 0x87, 0x00);
	ENC(tuple_put_string(w, "\xf4\x8f\xbf\xbf", 4), 0x02, 0xf4, 0x8f, 0xbf, 0xbf, 0x00);
	/* the header's own examples */
	ENC((tuple_put_string(w, "users", 5), tuple_put_int(w, 42)),
	    0x02, 'u', 's', 'e', 'r', 's', 0x00, 0x15, 0x2a);
	ENC((tuple_put_string(w, "users", 5), tuple_put_int(w, -1)),
	    0x02, 'u', 's', 'e', 'r', 's', 0x00, 0x13, 0xfe);
}

static void test_vectors_nested(void)
{
	ENC((tuple_nested_begin(w), tuple_put_null(w), tuple_nested_end(w)), 0x05, 0x00, FF, 0x00);
	ENC((tuple_nested_begin(w), tuple_put_null(w), tuple_put_string(w, "hello", 5),
	     tuple_nested_end(w)),
	    0x05, 0x00, FF, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00, 0x00);
	ENC((tuple_nested_begin(w), tuple_put_null(w), tuple_put_string(w, "hell\0", 5),
	     tuple_nested_end(w)),
	    0x05, 0x00, FF, 0x02, 'h', 'e', 'l', 'l', 0x00, FF, 0x00, 0x00);
	ENC((tuple_nested_begin(w), tuple_put_null(w), tuple_nested_end(w),
	     tuple_put_string(w, "hello", 5)),
	    0x05, 0x00, FF, 0x00, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00);
	ENC((tuple_nested_begin(w), tuple_put_null(w), tuple_nested_end(w),
	     tuple_put_string(w, "hello", 5), tuple_put_bytes(w, "\x01\x00", 2),
	     tuple_put_bytes(w, "", 0)),
	    0x05, 0x00, FF, 0x00, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00,
	    0x01, 0x01, 0x00, FF, 0x00, 0x01, 0x00);
	/* top-level null after a nested tuple is one byte again */
	ENC((tuple_nested_begin(w), tuple_nested_end(w), tuple_put_null(w)), 0x05, 0x00, 0x00);
}

/* Decodes exactly one int from bytes; returns the tuple_next result. */
static int decode_one(const uint8_t *buf, size_t len, struct tuple_elem *e)
{
	struct tuple_reader r;
	int rc;

	tuple_reader_init(&r, buf, len);
	rc = tuple_next(&r, e);
	if (rc == 1 && r.pos != len)
		return -100;
	return rc;
}

static void test_decode_vectors(void)
{
	static const uint8_t min[] = { 0x0c, 0x7f, FF, FF, FF, FF, FF, FF, FF };
	static const uint8_t max[] = { 0x1c, 0x7f, FF, FF, FF, FF, FF, FF, FF };
	static const uint8_t m255[] = { 0x13, 0x00 };
	static const uint8_t negzero[] = { 0x21, 0x7f, FF, FF, FF, FF, FF, FF, FF };
	static const uint8_t s[] = { 0x02, 'f', 'o', 'o', 0x00, FF, 'b', 'a', 'r', 0x00 };
	struct tuple_elem e;
	char out[16];

	CHECK_EQ_INT(decode_one(min, sizeof(min), &e), 1);
	CHECK(e.type == TUPLE_TYPE_INT && e.integer == INT64_MIN);
	CHECK_EQ_INT(decode_one(max, sizeof(max), &e), 1);
	CHECK(e.type == TUPLE_TYPE_INT && e.integer == INT64_MAX);
	CHECK_EQ_INT(decode_one(m255, sizeof(m255), &e), 1);
	CHECK_EQ_INT(e.integer, -255);
	CHECK_EQ_INT(decode_one(negzero, sizeof(negzero), &e), 1);
	CHECK(e.type == TUPLE_TYPE_DOUBLE && e.real == 0.0 && signbit(e.real));
	CHECK_EQ_INT(decode_one(s, sizeof(s), &e), 1);
	CHECK(e.type == TUPLE_TYPE_STRING);
	CHECK_EQ_INT(e.len, 7);
	CHECK_EQ_INT(e.raw_len, 8);
	tuple_elem_copy(&e, out);
	CHECK_MEM(out, 7, "foo\0bar", 7);
}

static void test_malformed(void)
{
	static const struct { uint8_t b[12]; size_t n; } bad[] = {
		{ { 0x01, 'a' }, 2 },				/* no terminator */
		{ { 0x01, 'a', 0x00, FF }, 4 },			/* escape, then nothing */
		{ { 0x02 }, 1 },
		{ { 0x15 }, 1 },				/* truncated integer */
		{ { 0x1c, 1, 2, 3 }, 4 },
		{ { 0x15, 0x00 }, 2 },				/* non-minimal 0 */
		{ { 0x16, 0x00, 0x01 }, 3 },			/* non-minimal 1 */
		{ { 0x13, FF }, 2 },				/* "-0" */
		{ { 0x12, FF, 0xfe }, 3 },			/* non-minimal -1 */
		{ { 0x1c, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 9 },	/* 2^63 */
		{ { 0x0c, 0x7f, FF, FF, FF, FF, FF, FF, 0xfe }, 9 },	/* -2^63-1 */
		{ { 0x0b, 0x09 }, 2 },				/* big integers */
		{ { 0x1d, 0x09 }, 2 },
		{ { 0x21, 1, 2, 3 }, 4 },			/* truncated double */
		{ { 0x20, 0, 0, 0, 0 }, 5 },			/* float: not used */
		{ { 0x30 }, 1 },
		{ { FF }, 1 },
		{ { 0x03 }, 1 },
		{ { 0x05 }, 1 },				/* nested, unterminated */
		{ { 0x05, 0x00, FF }, 3 },
		{ { 0x05, 0x02, 'a' }, 3 },
		{ { 0x05, 0x15, 0x00, 0x00 }, 4 },		/* bad int inside nested */
		{ { 0x05, 0x05, 0x00 }, 3 },			/* inner closed, outer not */
		{ { 0x05, 0x20, 0x00 }, 3 },
		{ { 0x00, FF }, 2 },				/* escaped null at top level */
	};
	struct tuple_elem e;
	struct tuple_reader r;
	int rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tuple_reader_init(&r, bad[i].b, bad[i].n);
		while ((rc = tuple_next(&r, &e)) == 1)
			;
		if (rc != -EINVAL)
			fprintf(stderr, "#   malformed case %zu accepted\n", i);
		CHECK_EQ_INT(rc, -EINVAL);
	}
}

static void test_nested_null_strict(void)
{
	static const uint8_t body[] = { 0x00, 0x00 };	/* a bare 0x00 inside a nested body */
	struct tuple_elem nested = { .type = TUPLE_TYPE_NESTED, .raw = body, .raw_len = 2 };
	struct tuple_reader r;
	struct tuple_elem e;

	tuple_reader_init_nested(&r, &nested);
	CHECK_EQ_INT(tuple_next(&r, &e), -EINVAL);
}

static void test_writer_overflow(void)
{
	uint8_t buf[8];
	struct tuple_writer w;

	tuple_writer_init(&w, buf, sizeof(buf));
	tuple_put_string(&w, "abc", 3);		/* 5 bytes */
	tuple_put_int(&w, 70000);		/* 4 bytes: does not fit */
	CHECK(w.overflow);
	CHECK_EQ_INT(w.len, 5);
	tuple_put_bool(&w, true);		/* would fit, but appends stop */
	CHECK_EQ_INT(w.len, 5);
	tuple_writer_init(&w, buf, sizeof(buf));
	tuple_put_int(&w, INT64_MIN);		/* exactly 9 > 8 */
	CHECK(w.overflow);
	CHECK_EQ_INT(w.len, 0);
}

/* ---- random tuples ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int64_t random_int(void)
{
	static const int64_t picks[] = {
		0, 1, -1, 255, -255, 256, -256, 65535, -65536, INT64_MAX, INT64_MIN,
		INT64_MIN + 1, INT64_MAX - 1, 4294967295LL, -4294967295LL,
	};
	uint64_t r = rnd();

	switch (r % 4) {
	case 0: return picks[(r >> 8) % (sizeof(picks) / sizeof(picks[0]))];
	case 1: return (int64_t)((r >> 8) % 600) - 300;
	case 2: return (int64_t)rnd() >> ((r >> 8) % 64);
	default: return (int64_t)rnd();
	}
}

static double random_double(void)
{
	uint64_t r = rnd(), bits;
	double picks[] = {
		0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.5, -1.5, 1e-310, -1e-310,
		1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072014e-308, 1.0, -1.0,
	};
	double d;

	if (r % 3)
		return picks[(r >> 8) % (sizeof(picks) / sizeof(picks[0]))];
	bits = rnd();
	memcpy(&d, &bits, sizeof(d));
	return d;	/* any bit pattern, NaN payloads included */
}

static void random_val(struct val *v, int depth);

static void random_list(struct val **out, size_t *n, size_t max, int depth)
{
	*n = rnd() % (max + 1);
	*out = val_alloc(*n);
	for (size_t i = 0; i < *n; i++)
		random_val(&(*out)[i], depth);
}

static void random_val(struct val *v, int depth)
{
	static const enum tuple_type types[] = {
		TUPLE_TYPE_NULL, TUPLE_TYPE_BYTES, TUPLE_TYPE_STRING, TUPLE_TYPE_NESTED,
		TUPLE_TYPE_INT, TUPLE_TYPE_INT, TUPLE_TYPE_DOUBLE, TUPLE_TYPE_FALSE, TUPLE_TYPE_TRUE,
		TUPLE_TYPE_STRING,
	};
	static const uint8_t alphabet[] = { 0x00, 0x01, 'a', 'b', 0xfe, 0xff };

	v->type = types[rnd() % (sizeof(types) / sizeof(types[0]))];
	if (v->type == TUPLE_TYPE_NESTED && depth >= 2)
		v->type = TUPLE_TYPE_NULL;
	if (v->type == TUPLE_TYPE_INT)
		v->i = random_int();
	if (v->type == TUPLE_TYPE_DOUBLE)
		v->d = random_double();
	if (v->type == TUPLE_TYPE_BYTES || v->type == TUPLE_TYPE_STRING) {
		v->slen = rnd() % 5;
		for (size_t i = 0; i < v->slen; i++)
			v->s[i] = alphabet[rnd() % sizeof(alphabet)];
	}
	if (v->type == TUPLE_TYPE_NESTED)
		random_list(&v->kids, &v->nkids, 3, depth + 1);
}

struct encoded {
	struct val *v;
	size_t n;
	uint8_t buf[256];
	size_t len;
};

/* Sometimes makes b a prefix or extension of a, so shared prefixes are common. */
static void random_pair(struct encoded *a, struct encoded *b)
{
	struct tuple_writer w;

	random_list(&a->v, &a->n, 4, 0);
	if (rnd() % 3 == 0) {
		b->n = rnd() % (a->n + 2);
		b->v = val_alloc(b->n);
		for (size_t i = 0; i < b->n; i++) {
			if (i < a->n && rnd() % 4)
				b->v[i] = a->v[i];
			else
				random_val(&b->v[i], 0);
		}
	} else {
		random_list(&b->v, &b->n, 4, 0);
	}
	tuple_writer_init(&w, a->buf, sizeof(a->buf));
	encode_list(&w, a->v, a->n);
	a->len = w.len;
	tuple_writer_init(&w, b->buf, sizeof(b->buf));
	encode_list(&w, b->v, b->n);
	b->len = w.len;
}

static int cmp_bytes(const struct encoded *a, const struct encoded *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = sign(memcmp(a->buf, b->buf, n));

	return c ? c : sign((long long)a->len - (long long)b->len);
}

static void check_round_trip(const struct encoded *a)
{
	struct tuple_reader r;
	struct val *back;
	int n;

	tuple_reader_init(&r, a->buf, a->len);
	n = decode_list(&r, &back);
	CHECK_EQ_INT(n, a->n);
	if (n >= 0)
		CHECK_EQ_INT(cmp_list(back, (size_t)n, a->v, a->n), 0);
}

/* Every truncation decodes to -EINVAL or to a shorter valid tuple; never reads past. */
static void check_truncations(const struct encoded *a)
{
	for (size_t len = 0; len < a->len; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		struct tuple_reader r;
		struct val *back;
		int n;

		memcpy(copy, a->buf, len);
		tuple_reader_init(&r, copy, len);
		n = decode_list(&r, &back);
		CHECK(n == -EINVAL || (n >= 0 && (size_t)n <= a->n));
		free(copy);
	}
}

static void test_order_property(void)
{
	int mismatches = 0, equal = 0, prefixes = 0;

	for (int i = 0; i < 20000; i++) {
		struct encoded a, b;
		int sem, byt;

		arena_used = 0;
		random_pair(&a, &b);
		sem = cmp_list(a.v, a.n, b.v, b.n);
		byt = cmp_bytes(&a, &b);
		equal += sem == 0;
		prefixes += a.len != b.len && memcmp(a.buf, b.buf, a.len < b.len ? a.len : b.len) == 0;
		if (sem != byt && mismatches++ < 5)
			fprintf(stderr, "#   pair %d: tuple order %d, byte order %d\n", i, sem, byt);
		check_round_trip(&a);
		check_round_trip(&b);
	}
	printf("# 20000 random pairs: %d equal, %d byte-prefix pairs\n", equal, prefixes);
	CHECK_EQ_INT(mismatches, 0);
	CHECK(prefixes > 100);
}

static void test_truncations(void)
{
	for (int i = 0; i < 2000; i++) {
		struct encoded a, b;

		arena_used = 0;
		random_pair(&a, &b);
		check_truncations(&a);
	}
}

/*
 * Random bytes: the reader must never crash, and whatever it accepts must
 * re-encode to the very same bytes (one spelling per tuple).
 */
static void test_fuzz_canonical(void)
{
	static const uint8_t alphabet[] = {
		0x00, 0x01, 0x02, 0x05, 0x13, 0x14, 0x15, 0x16, 0x0c, 0x1c, 0x21, 0x26, 0x27,
		0xff, 0xfe, 0x80, 0x7f, 'a',
	};
	int accepted = 0;

	for (int i = 0; i < 200000; i++) {
		size_t len = rnd() % 12;
		uint8_t *in = malloc(len ? len : 1), out[256];
		struct tuple_reader r;
		struct tuple_writer w;
		struct val *v;
		int n;

		for (size_t j = 0; j < len; j++)
			in[j] = rnd() % 4 ? alphabet[rnd() % sizeof(alphabet)] : (uint8_t)rnd();
		arena_used = 0;
		tuple_reader_init(&r, in, len);
		n = decode_list(&r, &v);
		if (n >= 0) {
			accepted++;
			tuple_writer_init(&w, out, sizeof(out));
			encode_list(&w, v, (size_t)n);
			CHECK_MEM(out, w.len, in, len);
		}
		free(in);
	}
	printf("# fuzz: %d of 200000 random inputs were valid tuples\n", accepted);
	CHECK(accepted > 1000);
}

int main(void)
{
	TEST(test_vectors_scalars);
	TEST(test_vectors_doubles);
	TEST(test_vectors_strings);
	TEST(test_vectors_nested);
	TEST(test_decode_vectors);
	TEST(test_malformed);
	TEST(test_nested_null_strict);
	TEST(test_writer_overflow);
	TEST(test_order_property);
	TEST(test_truncations);
	TEST(test_fuzz_canonical);
	return UNIT_DONE();
}
