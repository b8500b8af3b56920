/*
 * tests/unit/test_model_leaf.c - leaf records, their text form, the
 * "Writing text T" rules of docs/FORMAT.md, canonical numbers and UTF-8.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"
#include "tests/unit/unit.h"

static struct leaf make(enum leaf_tag tag, uint8_t flags, const char *payload)
{
	struct leaf l = { 0 };

	l.tag = tag;
	l.flags = flags;
	l.mtime_ns = -1234567890123LL;
	l.payload = (const uint8_t *)payload;
	l.payload_len = payload ? strlen(payload) : 0;
	return l;
}

/* Encodes, decodes, and checks that the text form is identical. */
static void check_roundtrip(const struct leaf *in)
{
	struct strbuf sb;
	struct leaf out;
	char a[128], b[128];
	size_t na, nb;

	strbuf_init(&sb);
	leaf_encode(in, &sb);
	CHECK_EQ_INT(leaf_decode(sb.buf, sb.len, &out), 0);
	CHECK_EQ_INT(out.tag, in->tag);
	CHECK_EQ_INT(out.flags, in->flags);
	CHECK_EQ_INT(out.mtime_ns, in->mtime_ns);
	na = leaf_text_read(in, a, sizeof(a), 0);
	nb = leaf_text_read(&out, b, sizeof(b), 0);
	CHECK_MEM(a, na, b, nb);
	if (in->tag == LEAF_INTEGER)
		CHECK(out.integer == in->integer);
	if (in->tag == LEAF_DOUBLE)
		CHECK(memcmp(&out.real, &in->real, 8) == 0);
	strbuf_release(&sb);
}

static void test_record_roundtrip(void)
{
	static const enum leaf_tag tags[] = { LEAF_STRING, LEAF_INTEGER, LEAF_DOUBLE,
		LEAF_FALSE, LEAF_TRUE, LEAF_NULL, LEAF_BYTES, LEAF_EMPTY_OBJECT, LEAF_EMPTY_ARRAY };
	size_t i;

	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		struct leaf l = make(tags[i], 0, tags[i] == LEAF_STRING ? "h\xc3\xa9llo" :
				     tags[i] == LEAF_BYTES ? "\xff\x00" : NULL);

		if (tags[i] == LEAF_BYTES)
			l.payload_len = 2;
		l.integer = INT64_MIN;
		l.real = -0.0;
		check_roundtrip(&l);
		if (tags[i] <= LEAF_NULL) {
			l.flags = LEAF_FLAG_NEWLINE;
			check_roundtrip(&l);
		}
	}
}

static void test_record_bytes(void)
{
	struct leaf l = make(LEAF_INTEGER, LEAF_FLAG_NEWLINE, NULL);
	struct strbuf sb;
	static const uint8_t want[] = { 0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 7,
		0, 0, 0, 0, 0, 0, 0, 0x2a };

	l.mtime_ns = 7;
	l.integer = 42;
	strbuf_init(&sb);
	leaf_encode(&l, &sb);
	CHECK_MEM(sb.buf, sb.len, want, sizeof(want));
	strbuf_release(&sb);
}

static void test_record_malformed(void)
{
	struct leaf l;
	uint8_t r[32] = { 0 };

	CHECK_EQ_INT(leaf_decode(r, 9, &l), -EINVAL);		/* short header */
	r[0] = 0x08;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);		/* unknown tag */
	r[0] = 0x00;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);
	r[0] = LEAF_INTEGER;
	CHECK_EQ_INT(leaf_decode(r, 17, &l), -EINVAL);		/* 7-byte integer */
	CHECK_EQ_INT(leaf_decode(r, 19, &l), -EINVAL);
	CHECK_EQ_INT(leaf_decode(r, 18, &l), 0);
	r[0] = LEAF_DOUBLE;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);
	r[0] = LEAF_TRUE;
	CHECK_EQ_INT(leaf_decode(r, 11, &l), -EINVAL);		/* payload on a boolean */
	r[0] = LEAF_EMPTY_ARRAY;
	CHECK_EQ_INT(leaf_decode(r, 11, &l), -EINVAL);
	CHECK_EQ_INT(leaf_decode(r, 10, &l), 0);
	r[1] = LEAF_FLAG_NEWLINE;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);		/* flag on a marker */
	r[0] = LEAF_BYTES;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);		/* flag on bytes */
	r[0] = LEAF_STRING;
	r[1] = 0x02;
	CHECK_EQ_INT(leaf_decode(r, 10, &l), -EINVAL);		/* unknown flag */
	r[1] = 0;
	r[10] = 0xc0;
	r[11] = 0x80;
	/* An overlong NUL: structurally fine, only leaf_validate reads the bytes. */
	CHECK_EQ_INT(leaf_decode(r, 12, &l), 0);
	CHECK_EQ_INT(leaf_validate(&l), -EINVAL);
	r[10] = 0xc3;
	r[11] = 0xa9;
	CHECK_EQ_INT(leaf_decode(r, 12, &l), 0);
	CHECK_EQ_INT(leaf_validate(&l), 0);
	CHECK_EQ_INT(l.payload_len, 2);
	r[0] = LEAF_BYTES;
	r[10] = 0xff;
	CHECK_EQ_INT(leaf_decode(r, 12, &l), 0);
	CHECK_EQ_INT(leaf_validate(&l), 0);		/* bytes may hold anything */
}

static void test_types(void)
{
	struct leaf l = make(LEAF_TRUE, 0, NULL);

	CHECK_EQ_INT(leaf_model_type(&l), MODEL_TYPE_BOOLEAN);
	l.tag = LEAF_FALSE;
	CHECK_EQ_INT(leaf_model_type(&l), MODEL_TYPE_BOOLEAN);
	CHECK(!leaf_is_marker(&l));
	l.tag = LEAF_EMPTY_OBJECT;
	CHECK(leaf_is_marker(&l));
	CHECK_EQ_INT(leaf_model_type(&l), 0);
	l.tag = LEAF_BYTES;
	CHECK_EQ_INT(leaf_model_type(&l), MODEL_TYPE_BYTES);
}

static void check_text(const struct leaf *l, const char *want, size_t wlen)
{
	char buf[128];
	size_t n, off, sz;

	CHECK_EQ_INT(leaf_text_size(l), wlen);
	n = leaf_text_read(l, buf, sizeof(buf), 0);
	CHECK_MEM(buf, n, want, wlen);
	/* Every window agrees with the whole. */
	for (off = 0; off <= wlen + 1; off++)
		for (sz = 0; sz <= wlen + 1; sz++) {
			size_t exp = off >= wlen ? 0 : (wlen - off < sz ? wlen - off : sz);

			n = leaf_text_read(l, buf, sz, off);
			CHECK_EQ_INT(n, exp);
			CHECK(memcmp(buf, want + (off < wlen ? off : 0), n) == 0);
		}
}

static void test_text_forms(void)
{
	struct leaf l;
	int flag;

	for (flag = 0; flag <= 1; flag++) {
		size_t nl = (size_t)flag;

		l = make(LEAF_STRING, (uint8_t)flag, "abc");
		check_text(&l, "abc\n", 3 + nl);
		l = make(LEAF_STRING, (uint8_t)flag, "");
		check_text(&l, "\n", nl);
		l = make(LEAF_INTEGER, (uint8_t)flag, NULL);
		l.integer = -9223372036854775807LL - 1;
		check_text(&l, "-9223372036854775808\n", 20 + nl);
		l = make(LEAF_DOUBLE, (uint8_t)flag, NULL);
		l.real = 1e300;
		check_text(&l, "1e+300\n", 6 + nl);
		l.real = -0.0;
		check_text(&l, "-0.0\n", 4 + nl);
		l = make(LEAF_TRUE, (uint8_t)flag, NULL);
		check_text(&l, "true\n", 4 + nl);
		l = make(LEAF_FALSE, (uint8_t)flag, NULL);
		check_text(&l, "false\n", 5 + nl);
		l = make(LEAF_NULL, (uint8_t)flag, NULL);
		check_text(&l, "null\n", 4 + nl);
	}
	l = make(LEAF_BYTES, 0, "\xff\n");
	check_text(&l, "\xff\n", 2);
	l = make(LEAF_EMPTY_ARRAY, 0, NULL);
	check_text(&l, "", 0);
}

/* Writes text T in file mode over `old` and checks the type and read-back. */
static struct leaf write_file(const char *t, size_t len, const struct leaf *old,
			      enum leaf_tag tag, int flags)
{
	struct leaf out;
	char buf[128];
	size_t n;

	CHECK_EQ_INT(leaf_from_text(t, len, true, old, 0, 99, &out), 0);
	CHECK_EQ_INT(out.tag, tag);
	CHECK_EQ_INT(out.flags, flags);
	CHECK_EQ_INT(out.mtime_ns, 99);
	/* The bytes written are the bytes read back. */
	n = leaf_text_read(&out, buf, sizeof(buf), 0);
	CHECK_MEM(buf, n, t, len);
	CHECK_EQ_INT(leaf_text_size(&out), len);
	return out;
}

static void test_from_file_text(void)
{
	struct leaf old, out;

	write_file("abc", 3, NULL, LEAF_STRING, 0);
	out = write_file("abc\n", 4, NULL, LEAF_STRING, LEAF_FLAG_NEWLINE);
	CHECK_EQ_INT(out.payload_len, 3);
	write_file("abc\n\n", 5, NULL, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("", 0, NULL, LEAF_STRING, 0);
	write_file("\n", 1, NULL, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("42\n", 3, NULL, LEAF_STRING, LEAF_FLAG_NEWLINE);	/* new: string */

	old = make(LEAF_INTEGER, LEAF_FLAG_NEWLINE, NULL);
	old.integer = 42;
	out = write_file("43\n", 3, &old, LEAF_INTEGER, LEAF_FLAG_NEWLINE);
	CHECK_EQ_INT(out.integer, 43);
	out = write_file("-7", 2, &old, LEAF_INTEGER, 0);
	CHECK_EQ_INT(out.integer, -7);
	write_file("043\n", 4, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("+43\n", 4, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("-0\n", 3, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	/* past int64: still an integer, digit for digit (a big integer record) */
	write_file("9223372036854775808\n", 20, &old, LEAF_BIG_INTEGER, LEAF_FLAG_NEWLINE);
	write_file("-123456789012345678901234567890", 31, &old, LEAF_BIG_INTEGER, 0);
	write_file("0123456789012345678901234567890\n", 32, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);

	old.tag = LEAF_DOUBLE;
	out = write_file("1.5\n", 4, &old, LEAF_DOUBLE, LEAF_FLAG_NEWLINE);
	CHECK(out.real == 1.5);
	write_file("1.0\n", 4, &old, LEAF_DOUBLE, LEAF_FLAG_NEWLINE);
	write_file("1e+300\n", 7, &old, LEAF_DOUBLE, LEAF_FLAG_NEWLINE);
	write_file("1.50\n", 5, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("1\n", 2, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	write_file("nan\n", 4, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);

	old.tag = LEAF_TRUE;
	write_file("false\n", 6, &old, LEAF_FALSE, LEAF_FLAG_NEWLINE);
	write_file("True\n", 5, &old, LEAF_STRING, LEAF_FLAG_NEWLINE);
	old.tag = LEAF_NULL;
	write_file("null", 4, &old, LEAF_NULL, 0);

	/* Not UTF-8, or NUL: bytes, kept exactly, newline included. */
	write_file("\xff\xfe\n", 3, NULL, LEAF_BYTES, 0);
	write_file("a\0b\n", 4, NULL, LEAF_BYTES, 0);
	old.tag = LEAF_INTEGER;
	write_file("\xc0\x80", 2, &old, LEAF_BYTES, 0);
	/* Bytes stay bytes even for text. */
	old = make(LEAF_BYTES, 0, "x");
	write_file("hello\n", 6, &old, LEAF_BYTES, 0);
}

static void test_from_value(void)
{
	struct leaf out, old = make(LEAF_INTEGER, LEAF_FLAG_NEWLINE, NULL);
	char buf[32];
	size_t n;

	/* CLI put: the value as given, reading back with a newline. */
	CHECK_EQ_INT(leaf_from_text("abc", 3, false, NULL, 0, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_STRING);
	CHECK_EQ_INT(out.flags, LEAF_FLAG_NEWLINE);
	n = leaf_text_read(&out, buf, sizeof(buf), 0);
	CHECK_MEM(buf, n, "abc\n", 4);
	CHECK_EQ_INT(leaf_from_text("abc\n", 4, false, NULL, 0, 1, &out), 0);
	CHECK_EQ_INT(out.payload_len, 4);
	CHECK_EQ_INT(leaf_from_text("5", 1, false, &old, 0, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_INTEGER);
	CHECK_EQ_INT(leaf_from_text("\xff", 1, false, NULL, 0, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_BYTES);
	CHECK_EQ_INT(out.flags, 0);
}

static void test_explicit_type(void)
{
	struct leaf out, nul_string, old = make(LEAF_STRING, 0, "s");

	CHECK_EQ_INT(leaf_from_text("42\n", 3, true, &old, MODEL_TYPE_INTEGER, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_INTEGER);
	CHECK_EQ_INT(out.integer, 42);
	CHECK_EQ_INT(leaf_from_text("042", 3, true, NULL, MODEL_TYPE_INTEGER, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text("0.5", 3, false, NULL, MODEL_TYPE_DOUBLE, 1, &out), 0);
	CHECK(out.real == 0.5);
	CHECK_EQ_INT(leaf_from_text(".5", 2, false, NULL, MODEL_TYPE_DOUBLE, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text("true", 4, false, NULL, MODEL_TYPE_BOOLEAN, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_TRUE);
	CHECK_EQ_INT(leaf_from_text("false\n", 6, true, NULL, MODEL_TYPE_BOOLEAN, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_FALSE);
	CHECK_EQ_INT(leaf_from_text("yes", 3, false, NULL, MODEL_TYPE_BOOLEAN, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text("null", 4, false, NULL, MODEL_TYPE_NULL, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_NULL);
	CHECK_EQ_INT(leaf_from_text("nul", 3, false, NULL, MODEL_TYPE_NULL, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text("\xff", 1, false, NULL, MODEL_TYPE_STRING, 1, &out), -EINVAL);
	/* An explicit string may hold NUL (a JSON "\u0000" restored by type). */
	CHECK_EQ_INT(leaf_from_text("a\0", 2, false, NULL, MODEL_TYPE_STRING, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_STRING);
	CHECK_EQ_INT(out.payload_len, 2);
	/* Inference never makes one: keeping a string's type neither. */
	nul_string = out;
	CHECK_EQ_INT(leaf_from_text("a\0", 2, true, &nul_string, 0, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_BYTES);
	CHECK_EQ_INT(leaf_from_text("42", 2, false, NULL, MODEL_TYPE_STRING, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_STRING);
	CHECK_EQ_INT(leaf_from_text("ab\n", 3, true, NULL, MODEL_TYPE_BYTES, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_BYTES);
	CHECK_EQ_INT(out.payload_len, 3);
	CHECK_EQ_INT(out.flags, 0);
}

/* A value put as a double is never rounded, whatever white space is around it. */
static void test_value_double_exact(void)
{
	struct leaf out;

	CHECK_EQ_INT(leaf_from_text("9007199254740993", 16, false, NULL, MODEL_TYPE_DOUBLE, 1,
				    &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text(" 9007199254740993", 17, false, NULL, MODEL_TYPE_DOUBLE, 1,
				    &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text("\t\n9007199254740993 ", 19, false, NULL,
				    MODEL_TYPE_DOUBLE, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text(" 123456789012345678901234567890", 31, false, NULL,
				    MODEL_TYPE_DOUBLE, 1, &out), -EINVAL);
	CHECK_EQ_INT(leaf_from_text(" 5 ", 3, false, NULL, MODEL_TYPE_DOUBLE, 1, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_DOUBLE);
	CHECK(out.real == 5.0);
	CHECK_EQ_INT(leaf_from_text(" 9007199254740992", 17, false, NULL, MODEL_TYPE_DOUBLE, 1,
				    &out), 0);
	CHECK(out.real == 9007199254740992.0);
	CHECK_EQ_INT(leaf_from_text("\xef\xbb\xbf" "9007199254740993", 19, false, NULL,
				    MODEL_TYPE_DOUBLE, 1, &out), -EINVAL);
}

static void check_double(double v, const char *want)
{
	char buf[NUMBER_TEXT_MAX];
	size_t n = number_format_double(v, buf);
	double back;

	CHECK_MEM(buf, n, want, strlen(want));
	if (isfinite(v)) {
		CHECK(number_parse_double(buf, n, &back));
		CHECK(memcmp(&back, &v, 8) == 0);
	}
}

static void test_double_forms(void)
{
	check_double(1.0, "1.0");
	check_double(-0.0, "-0.0");
	check_double(0.0, "0.0");
	check_double(1.5, "1.5");
	check_double(100.0, "100.0");
	check_double(0.1, "0.1");
	check_double(0.0001, "0.0001");
	check_double(0.00001, "1e-05");
	check_double(1e15, "1000000000000000.0");
	check_double(1e16, "1e+16");
	check_double(1e300, "1e+300");
	check_double(5e-324, "5e-324");
	check_double(1.7976931348623157e308, "1.7976931348623157e+308");
	check_double(NAN, "nan");
	check_double(INFINITY, "inf");
	check_double(-INFINITY, "-inf");
	CHECK(!number_parse_double("1.50", 4, NULL));
	CHECK(!number_parse_double("1", 1, NULL));
	CHECK(!number_parse_double("1e300", 5, NULL));
	CHECK(!number_parse_double("nan", 3, NULL));
	CHECK(!number_parse_double("inf", 3, NULL));
	CHECK(!number_parse_double(" 1.0", 4, NULL));
	CHECK(!number_parse_double("", 0, NULL));
	CHECK(!number_parse_double("1.0\0", 4, NULL));
}

static void test_integer_forms(void)
{
	char buf[NUMBER_TEXT_MAX];
	int64_t v;

	CHECK_EQ_INT(number_format_integer(0, buf), 1);
	CHECK(strcmp(buf, "0") == 0);
	number_format_integer(INT64_MIN, buf);
	CHECK(strcmp(buf, "-9223372036854775808") == 0);
	CHECK(number_parse_integer("-9223372036854775808", 20, &v) && v == INT64_MIN);
	CHECK(number_parse_integer("9223372036854775807", 19, &v) && v == INT64_MAX);
	CHECK(number_parse_integer("9007199254740993", 16, &v) && v == 9007199254740993LL);
	CHECK(!number_parse_integer("9223372036854775808", 19, &v));
	CHECK(!number_parse_integer("-9223372036854775809", 20, &v));
	CHECK(!number_parse_integer("042", 3, &v));
	CHECK(!number_parse_integer("+1", 2, &v));
	CHECK(!number_parse_integer("-0", 2, &v));
	CHECK(!number_parse_integer("-", 1, &v));
	CHECK(!number_parse_integer("", 0, &v));
	CHECK(!number_parse_integer("1.0", 3, &v));
	CHECK(!number_parse_integer("1 ", 2, &v));
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void test_random_doubles(void)
{
	uint64_t seed = 88172645463325252ULL, bits;
	char buf[NUMBER_TEXT_MAX];
	int i, bad = 0;
	double v, back;
	size_t n;

	for (i = 0; i < 100000; i++) {
		bits = rnd(&seed);
		memcpy(&v, &bits, 8);
		if (isnan(v))
			continue;
		n = number_format_double(v, buf);
		if (isinf(v))
			continue;
		if (!number_parse_double(buf, n, &back) || memcmp(&back, &v, 8) != 0) {
			if (bad++ < 5)
				fprintf(stderr, "#   %016llx -> %s\n", (unsigned long long)bits, buf);
		}
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_utf8(void)
{
	CHECK(utf8_is_valid("", 0));
	CHECK(utf8_is_valid("a\0b", 3));
	CHECK(utf8_is_valid("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf", 10));
	CHECK(utf8_is_valid("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 8));
	CHECK(!utf8_is_valid("\xc0\x80", 2));		/* overlong */
	CHECK(!utf8_is_valid("\xc1\xbf", 2));
	CHECK(!utf8_is_valid("\xe0\x9f\xbf", 3));
	CHECK(!utf8_is_valid("\xf0\x8f\xbf\xbf", 4));
	CHECK(!utf8_is_valid("\xed\xa0\x80", 3));	/* surrogate */
	CHECK(!utf8_is_valid("\xed\xbf\xbf", 3));
	CHECK(utf8_is_valid("\xed\x9f\xbf", 3));
	CHECK(!utf8_is_valid("\xf4\x90\x80\x80", 4));	/* > U+10FFFF */
	CHECK(!utf8_is_valid("\xf5\x80\x80\x80", 4));
	CHECK(!utf8_is_valid("\x80", 1));
	CHECK(!utf8_is_valid("\xe2\x82", 2));		/* truncated */
	CHECK(!utf8_is_valid("\xe2\x28\xa1", 3));
	CHECK(!utf8_is_valid("\xff", 1));
}

int main(void)
{
	TEST(test_record_roundtrip);
	TEST(test_record_bytes);
	TEST(test_record_malformed);
	TEST(test_types);
	TEST(test_text_forms);
	TEST(test_from_file_text);
	TEST(test_from_value);
	TEST(test_explicit_type);
	TEST(test_value_double_exact);
	TEST(test_double_forms);
	TEST(test_integer_forms);
	TEST(test_random_doubles);
	TEST(test_utf8);
	return UNIT_DONE();
}
