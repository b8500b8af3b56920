/*
 * tests/unit/test_model_json.c - the strict JSON reader and the writer:
 * nasty valid inputs, one test per kind of invalid input, sequences, and
 * reader -> writer -> reader round trips.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"
#include "tests/unit/unit.h"

/* Every event as one line of text, so two parses compare with memcmp. */
static int record(void *arg, const struct json_token *tok)
{
	struct strbuf *sb = arg;
	uint64_t bits;

	strbuf_addf(sb, "%d ", tok->depth);
	switch (tok->event) {
	case JSON_OBJECT_BEGIN: strbuf_addf(sb, "{\n"); break;
	case JSON_OBJECT_END: strbuf_addf(sb, "}\n"); break;
	case JSON_ARRAY_BEGIN: strbuf_addf(sb, "[\n"); break;
	case JSON_ARRAY_END: strbuf_addf(sb, "]\n"); break;
	case JSON_KEY:
	case JSON_STRING:
		strbuf_addf(sb, "%s%zu:", tok->event == JSON_KEY ? "K" : "S", tok->len);
		strbuf_add(sb, tok->str, tok->len);
		strbuf_addc(sb, '\n');
		break;
	case JSON_INTEGER: strbuf_addf(sb, "I%lld\n", (long long)tok->integer); break;
	case JSON_BIG_INTEGER:
		strbuf_addc(sb, 'B');
		strbuf_add(sb, tok->str, tok->len);
		strbuf_addc(sb, '\n');
		break;
	case JSON_DOUBLE:
		memcpy(&bits, &tok->real, 8);
		strbuf_addf(sb, "D%016llx\n", (unsigned long long)bits);
		break;
	case JSON_TRUE: strbuf_addf(sb, "T\n"); break;
	case JSON_FALSE: strbuf_addf(sb, "F\n"); break;
	case JSON_NULL: strbuf_addf(sb, "N\n"); break;
	case JSON_VALUE_END: strbuf_addf(sb, "E\n"); break;
	}
	return 0;
}

static int parse_into(const char *text, size_t len, unsigned flags, int depth,
		      struct strbuf *sb, struct model_error *err)
{
	strbuf_reset(sb);
	err->msg[0] = '\0';
	return json_parse(text, len, flags, depth, record, sb, NULL, NULL, err);
}

/* Parses a C string and checks the event text. */
static void expect_events(const char *json, const char *events)
{
	struct strbuf sb;
	struct model_error err;
	int ret;

	strbuf_init(&sb);
	ret = parse_into(json, strlen(json), 0, MODEL_DEPTH_MAX, &sb, &err);
	CHECK_EQ_INT(ret, 0);
	if (ret)
		fprintf(stderr, "#   %s: %s\n", json, err.msg);
	CHECK(sb.buf && strcmp(sb.buf, events) == 0);
	if (sb.buf && strcmp(sb.buf, events))
		fprintf(stderr, "#   got:\n%s#   want:\n%s", sb.buf, events);
	strbuf_release(&sb);
}

static void expect_invalid_n(const char *json, size_t len, unsigned flags, const char *needle)
{
	struct strbuf sb;
	struct model_error err;
	int ret;

	strbuf_init(&sb);
	ret = parse_into(json, len, flags, MODEL_DEPTH_MAX, &sb, &err);
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(err.msg, "line ") == err.msg);
	if (needle && !strstr(err.msg, needle)) {
		fprintf(stderr, "#   '%s': message '%s' lacks '%s'\n", json, err.msg, needle);
		unit_current_failed = 1;
	}
	strbuf_release(&sb);
}

static void expect_invalid(const char *json, const char *needle)
{
	expect_invalid_n(json, strlen(json), 0, needle);
}

static void test_scalars(void)
{
	expect_events("true", "0 T\n0 E\n");
	expect_events(" false\n", "0 F\n0 E\n");
	expect_events("null", "0 N\n0 E\n");
	expect_events("\"\"", "0 S0:\n0 E\n");
	expect_events("0", "0 I0\n0 E\n");
	expect_events("-12", "0 I-12\n0 E\n");
}

static void test_integers_exact(void)
{
	expect_events("9223372036854775807", "0 I9223372036854775807\n0 E\n");
	expect_events("-9223372036854775808", "0 I-9223372036854775808\n0 E\n");
	expect_events("9007199254740993", "0 I9007199254740993\n0 E\n");
	/* Past int64: the digits, whatever their number (never a double). */
	expect_events("9223372036854775808", "0 B9223372036854775808\n0 E\n");
	expect_events("-9223372036854775809", "0 B-9223372036854775809\n0 E\n");
	expect_events("123456789012345678901234567890",
		      "0 B123456789012345678901234567890\n0 E\n");
	expect_events("[-99999999999999999999999]",
		      "0 [\n1 B-99999999999999999999999\n0 ]\n0 E\n");
}

/* A double only when it holds the written value exactly; never rounded. */
static void test_numbers_exact(void)
{
	expect_events("1.10", "0 D3ff199999999999a\n0 E\n");
	expect_events("1e2", "0 D4059000000000000\n0 E\n");
	expect_events("100e-2", "0 D3ff0000000000000\n0 E\n");
	expect_events("0.000e5", "0 D0000000000000000\n0 E\n");
	expect_events("5e-324", "0 D0000000000000001\n0 E\n");
	expect_events("1.7976931348623157e308", "0 D7fefffffffffffff\n0 E\n");
	expect_invalid("0.1000000000000000000001", "number cannot be kept exactly: 0.1000");
	expect_invalid("1e400", "number cannot be kept exactly: 1e400");
	expect_invalid("2e-400", "number cannot be kept exactly: 2e-400");
	expect_invalid("-1e-400", "cannot be kept exactly");
	expect_invalid("9007199254740993.0", "cannot be kept exactly");
	expect_invalid("1e99999999999999999999999", "cannot be kept exactly");
	expect_invalid("[1, 0.30000000000000000000000000000000000000000000001]",
		       "cannot be kept exactly: 0.30000000000000000000000000000000000000...");
}

/* Edge cases of the exactness check: shortest round-trip texts are kept,
 * texts the nearest double cannot say again are refused, and exponents of
 * any length are read without overflow. */
static void test_numbers_exact_edges(void)
{
	expect_events("1e22", "0 D4480f0cf064dd592\n0 E\n");
	expect_events("0.30000000000000004", "0 D3fd3333333333334\n0 E\n");
	expect_events("123456789012345678", "0 I123456789012345678\n0 E\n");
	expect_invalid("1.23456789012345678e17", "cannot be kept exactly");
	expect_invalid("1e-99999999999999999999", "cannot be kept exactly");
	expect_invalid("-1e-99999999999999999999999999999999", "cannot be kept exactly");
	expect_events("0e-99999999999999999999", "0 D0000000000000000\n0 E\n");
}

/* RFC 8259 8.1: a leading byte order mark is ignored; elsewhere it is not JSON. */
static void test_bom(void)
{
	expect_events("\xef\xbb\xbf{}", "0 {\n0 }\n0 E\n");
	expect_events("\xef\xbb\xbf 1", "0 I1\n0 E\n");
	expect_invalid("\xef\xbb\xbf", "empty input");
	expect_invalid("[\xef\xbb\xbf]", "expected a value");
	expect_invalid("\xef\xbb\xbf\xef\xbb\xbf" "1", "expected a value");
}

static void test_doubles(void)
{
	expect_events("-0", "0 D8000000000000000\n0 E\n");
	expect_events("-0.0", "0 D8000000000000000\n0 E\n");
	expect_events("0.1", "0 D3fb999999999999a\n0 E\n");
	expect_events("1e308", "0 D7fe1ccf385ebc8a0\n0 E\n");
	expect_events("1E2", "0 D4059000000000000\n0 E\n");
	expect_events("1.5e-1", "0 D3fc3333333333333\n0 E\n");
	expect_invalid("1e-400", "cannot be kept exactly");
	expect_invalid("1e400", "cannot be kept exactly");
	expect_invalid("-1e400", "cannot be kept exactly");
}

static void test_strings(void)
{
	expect_events("\"a\\u00e9\\u20ac\"", "0 S6:a\xc3\xa9\xe2\x82\xac\n0 E\n");
	expect_events("\"\\ud83d\\ude00\"", "0 S4:\xf0\x9f\x98\x80\n0 E\n");
	expect_events("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "0 S8:\"\\/\b\f\n\r\t\n0 E\n");
	expect_events("\"h\xc3\xa9\"", "0 S3:h\xc3\xa9\n0 E\n");
	expect_events("\"\x7f\"", "0 S1:\x7f\n0 E\n");
}

static void test_nul_in_string(void)
{
	struct strbuf sb;
	struct model_error err;
	const char *json = "[\"a\\u0000b\"]";
	static const char want[] = "0 [\n1 S3:a\0b\n0 ]\n0 E\n";

	strbuf_init(&sb);
	CHECK_EQ_INT(parse_into(json, strlen(json), 0, 8, &sb, &err), 0);
	CHECK_MEM(sb.buf, sb.len, want, sizeof(want) - 1);
	strbuf_release(&sb);
}

static void test_containers(void)
{
	expect_events("{}", "0 {\n0 }\n0 E\n");
	expect_events("[ ]", "0 [\n0 ]\n0 E\n");
	expect_events("{\"\": 1}", "0 {\n1 K0:\n1 I1\n0 }\n0 E\n");
	expect_events("{\"a\":1,\"a\":2}", "0 {\n1 K1:a\n1 I1\n1 K1:a\n1 I2\n0 }\n0 E\n");
	expect_events("[[],{\"x\":[null]}]",
		      "0 [\n1 [\n1 ]\n1 {\n2 K1:x\n2 [\n3 N\n2 ]\n1 }\n0 ]\n0 E\n");
}

/* n '[' then n ']' */
static char *nested(size_t n, size_t *len)
{
	char *s = malloc(2 * n + 1);

	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	*len = 2 * n;
	return s;
}

static void test_depth(void)
{
	struct strbuf sb;
	struct model_error err;
	size_t len;
	char *s;

	strbuf_init(&sb);
	s = nested(MODEL_DEPTH_MAX, &len);
	CHECK_EQ_INT(parse_into(s, len, 0, MODEL_DEPTH_MAX, &sb, &err), 0);
	free(s);
	s = nested(MODEL_DEPTH_MAX + 1, &len);
	CHECK_EQ_INT(parse_into(s, len, 0, MODEL_DEPTH_MAX, &sb, &err), -EINVAL);
	CHECK(strstr(err.msg, "nesting deeper than 512") != NULL);
	CHECK(strstr(err.msg, "line 1, column 513") != NULL);
	free(s);
	s = nested(100000, &len);
	CHECK_EQ_INT(parse_into(s, 100000, 0, MODEL_DEPTH_MAX, &sb, &err), -EINVAL);
	CHECK(strstr(err.msg, "nesting deeper than") != NULL);
	/* A huge limit still needs no C stack. */
	CHECK_EQ_INT(parse_into(s, len, 0, 1000000, &sb, &err), 0);
	free(s);
	strbuf_release(&sb);
}

static void test_invalid(void)
{
	expect_invalid("[1,2,]", "trailing comma");
	expect_invalid("{\"a\":1,}", "trailing comma");
	expect_invalid("{'a':1}", "object key");
	expect_invalid("'a'", "double quotes");
	expect_invalid("NaN", "expected a value");
	expect_invalid("[nan]", "invalid literal");
	expect_invalid("Infinity", NULL);
	expect_invalid("01", "leading zeros");
	expect_invalid("-01", "leading zeros");
	expect_invalid("+1", NULL);
	expect_invalid(".5", NULL);
	expect_invalid("1.", "after '.'");
	expect_invalid("1e", "exponent");
	expect_invalid("1true", NULL);
	expect_invalid("\"abc", "unterminated string");
	expect_invalid("\"abc\\", "unterminated string");
	expect_invalid("\"\\ud800\"", "lone high surrogate");
	expect_invalid("\"\\udc00\"", "lone low surrogate");
	expect_invalid("\"\\ud800\\u0041\"", "not followed by a low");
	expect_invalid("\"\\u12g4\"", "hex digits");
	expect_invalid("\"\\x\"", "invalid escape");
	expect_invalid("\"\xff\"", "invalid UTF-8");
	expect_invalid("\"\xc0\xaf\"", "invalid UTF-8");
	expect_invalid("\"\xed\xa0\x80\"", "invalid UTF-8");
	expect_invalid("\"\xf4\x90\x80\x80\"", "invalid UTF-8");
	expect_invalid("\"a\\n\xe2\x82\"", "invalid UTF-8");
	expect_invalid("\"a\tb\"", "control character");
	expect_invalid("\"a\nb\"", "control character");
	expect_invalid("{\"a\" 1}", "expected ':' after object key");
	expect_invalid("{\"a\":1 \"b\":2}", "expected ',' or '}'");
	expect_invalid("[1 2]", "expected ',' or ']'");
	expect_invalid("[1", "expected ',' or ']'");
	expect_invalid("{", "object key");
	expect_invalid("", "empty input");
	expect_invalid("   ", "empty input");
	expect_invalid("1 2", "after the JSON value");
	expect_invalid("{} x", "after the JSON value");
	expect_invalid("tru", "invalid literal");
	expect_invalid("nullx", "invalid literal");
	expect_invalid("[1]]", "after the JSON value");
	expect_invalid("\x1e" "1", NULL);
	expect_invalid("/* c */ 1", NULL);
	expect_invalid_n("[1,\0]", 5, 0, "expected a value");
}

static void test_error_position(void)
{
	struct strbuf sb;
	struct model_error err;
	const char *json = "{\n  \"\xc3\xa9\": [1,\n    2,,3]\n}";

	strbuf_init(&sb);
	CHECK_EQ_INT(parse_into(json, strlen(json), 0, 8, &sb, &err), -EINVAL);
	CHECK(strcmp(err.msg, "line 3, column 7: expected a value") == 0);
	strbuf_release(&sb);
}

static void test_sequence(void)
{
	struct strbuf sb;
	struct model_error err;
	const char *json = "\x1e{\"a\":1}\n\x1e[2]\n3\n\x1e\"x\" true";

	strbuf_init(&sb);
	CHECK_EQ_INT(parse_into(json, strlen(json), JSON_PARSE_SEQUENCE, 8, &sb, &err), 0);
	CHECK(strcmp(sb.buf, "0 {\n1 K1:a\n1 I1\n0 }\n0 E\n0 [\n1 I2\n0 ]\n0 E\n"
		     "0 I3\n0 E\n0 S1:x\n0 E\n0 T\n0 E\n") == 0);
	CHECK_EQ_INT(parse_into("", 0, JSON_PARSE_SEQUENCE, 8, &sb, &err), 0);
	CHECK_EQ_INT(sb.len, 0);
	CHECK_EQ_INT(parse_into("\n\x1e\n", 3, JSON_PARSE_SEQUENCE, 8, &sb, &err), 0);
	expect_invalid_n("1 [", 3, JSON_PARSE_SEQUENCE, "line 1");
	expect_invalid_n("[\x1e]", 3, JSON_PARSE_SEQUENCE, "expected a value");
	strbuf_release(&sb);
}

static int stop_at_key(void *arg, const struct json_token *tok)
{
	(void)arg;
	return tok->event == JSON_KEY ? 7 : 0;
}

static void test_callback_stops(void)
{
	struct model_error err;

	CHECK_EQ_INT(json_parse("{\"a\":1}", 7, 0, 8, stop_at_key, NULL, NULL, NULL, &err), 7);
}

/* Replays recorded events into a writer. */
struct replay {
	struct json_writer *w;
};

static int replay(void *arg, const struct json_token *tok)
{
	struct json_writer *w = ((struct replay *)arg)->w;

	switch (tok->event) {
	case JSON_OBJECT_BEGIN: json_write_object_begin(w); break;
	case JSON_OBJECT_END: json_write_object_end(w); break;
	case JSON_ARRAY_BEGIN: json_write_array_begin(w); break;
	case JSON_ARRAY_END: json_write_array_end(w); break;
	case JSON_KEY: json_write_key(w, tok->str, tok->len); break;
	case JSON_STRING: json_write_string(w, tok->str, tok->len); break;
	case JSON_INTEGER: json_write_integer(w, tok->integer); break;
	case JSON_BIG_INTEGER: json_write_number_text(w, tok->str, tok->len); break;
	case JSON_DOUBLE: json_write_double(w, tok->real); break;
	case JSON_TRUE: json_write_bool(w, true); break;
	case JSON_FALSE: json_write_bool(w, false); break;
	case JSON_NULL: json_write_null(w); break;
	case JSON_VALUE_END: break;
	}
	return 0;
}

/* parse -> write -> parse must give the same events. */
static void roundtrip(const char *json, bool pretty)
{
	struct strbuf ev1, ev2, out;
	struct json_writer w;
	struct replay r = { &w };
	struct model_error err;

	strbuf_init(&ev1);
	strbuf_init(&ev2);
	strbuf_init(&out);
	CHECK_EQ_INT(parse_into(json, strlen(json), 0, 64, &ev1, &err), 0);
	json_writer_init(&w, &out, NULL, pretty);
	CHECK_EQ_INT(json_parse(json, strlen(json), 0, 64, replay, &r, NULL, NULL, &err), 0);
	CHECK_EQ_INT(json_writer_finish(&w), 0);
	CHECK_EQ_INT(parse_into(out.buf, out.len, 0, 64, &ev2, &err), 0);
	CHECK_MEM(ev1.buf, ev1.len, ev2.buf, ev2.len);
	strbuf_release(&ev1);
	strbuf_release(&ev2);
	strbuf_release(&out);
}

static void test_roundtrip(void)
{
	static const char *docs[] = {
		"{\"a\":[1,-2,3.5,-0,1e308,0.1,true,false,null,\"x\\u0000y\"],\"\":{},\"e\":[]}",
		"[9223372036854775807,-9223372036854775808,9007199254740993,5e-324]",
		"\"\\u0001\\u001f\\\"\\\\\\n\\t\x7f\xf0\x9f\x98\x80\"",
		"{\"k\\n\":{\"k\":{\"k\":[[[]]]}}}",
		"12", "[]", "{}",
	};
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		roundtrip(docs[i], false);
		roundtrip(docs[i], true);
	}
}

static void test_pretty_exact(void)
{
	struct strbuf out;
	struct json_writer w;

	strbuf_init(&out);
	json_writer_init(&w, &out, NULL, true);
	json_write_object_begin(&w);
	json_write_key(&w, "name", 4);
	json_write_string(&w, "Bob \"B\"\n\0", 9);
	json_write_key(&w, "age", 3);
	json_write_integer(&w, 42);
	json_write_key(&w, "tags", 4);
	json_write_array_begin(&w);
	json_write_string(&w, "admin", 5);
	json_write_double(&w, 1.0);
	json_write_array_end(&w);
	json_write_key(&w, "none", 4);
	json_write_object_begin(&w);
	json_write_object_end(&w);
	json_write_key(&w, "list", 4);
	json_write_array_begin(&w);
	json_write_array_end(&w);
	json_write_key(&w, "ok", 2);
	json_write_bool(&w, true);
	json_write_key(&w, "nil", 3);
	json_write_null(&w);
	json_write_object_end(&w);
	CHECK_EQ_INT(json_writer_finish(&w), 0);
	CHECK(strcmp(out.buf, "{\n  \"name\": \"Bob \\\"B\\\"\\n\\u0000\",\n  \"age\": 42,\n"
		     "  \"tags\": [\n    \"admin\",\n    1.0\n  ],\n  \"none\": {},\n"
		     "  \"list\": [],\n  \"ok\": true,\n  \"nil\": null\n}\n") == 0);
	strbuf_release(&out);
}

static void test_compact_exact(void)
{
	struct strbuf out;
	struct json_writer w;

	strbuf_init(&out);
	json_writer_init(&w, &out, NULL, false);
	json_write_array_begin(&w);
	json_write_object_begin(&w);
	json_write_key(&w, "a", 1);
	json_write_double(&w, -0.0);
	json_write_object_end(&w);
	json_write_array_begin(&w);
	json_write_array_end(&w);
	json_write_integer(&w, INT64_MIN);
	json_write_array_end(&w);
	CHECK_EQ_INT(json_writer_finish(&w), 0);
	CHECK(strcmp(out.buf, "[{\"a\":-0.0},[],-9223372036854775808]") == 0);
	strbuf_release(&out);
}

static void test_flush_to_file(void)
{
	struct strbuf out;
	struct json_writer w;
	char *mem = NULL;
	size_t memlen = 0, i;
	FILE *f = open_memstream(&mem, &memlen);
	struct strbuf ev;
	struct model_error err;

	strbuf_init(&out);
	strbuf_init(&ev);
	json_writer_init(&w, &out, f, false);
	json_write_array_begin(&w);
	for (i = 0; i < 100000; i++)
		json_write_integer(&w, (int64_t)i);
	json_write_array_end(&w);
	CHECK(out.len < ((size_t)64 << 10) + 64);
	CHECK_EQ_INT(json_writer_finish(&w), 0);
	fclose(f);
	CHECK_EQ_INT(parse_into(mem, memlen, 0, 4, &ev, &err), 0);
	CHECK(strstr(ev.buf, "1 I99999\n0 ]\n") != NULL);
	free(mem);
	strbuf_release(&out);
	strbuf_release(&ev);
}

static void progress_count(void *arg, uint64_t done, uint64_t total)
{
	(void)done;
	(void)total;
	(*(int *)arg)++;
}

static int count_events(void *arg, const struct json_token *tok)
{
	(void)tok;
	(*(size_t *)arg)++;
	return 0;
}

/* ~8 MiB of array must parse quickly with progress called several times. */
static void test_big_input(void)
{
	struct strbuf sb;
	struct model_error err;
	size_t events = 0, i;
	int calls = 0;

	strbuf_init(&sb);
	strbuf_addc(&sb, '[');
	for (i = 0; i < 400000; i++)
		strbuf_addf(&sb, "%s{\"k\":\"v\\u00e9\",\"n\":%zu}", i ? "," : "", i);
	strbuf_addc(&sb, ']');
	CHECK(!sb.failed);
	CHECK_EQ_INT(json_parse(sb.buf, sb.len, 0, 4, count_events, &events,
				progress_count, &calls, &err), 0);
	CHECK_EQ_INT(events, 400000 * 6 + 3);
	CHECK(calls >= 5);
	strbuf_release(&sb);
}

int main(void)
{
	TEST(test_scalars);
	TEST(test_integers_exact);
	TEST(test_numbers_exact);
	TEST(test_numbers_exact_edges);
	TEST(test_bom);
	TEST(test_doubles);
	TEST(test_strings);
	TEST(test_nul_in_string);
	TEST(test_containers);
	TEST(test_depth);
	TEST(test_invalid);
	TEST(test_error_position);
	TEST(test_sequence);
	TEST(test_callback_stops);
	TEST(test_roundtrip);
	TEST(test_pretty_exact);
	TEST(test_compact_exact);
	TEST(test_flush_to_file);
	TEST(test_big_input);
	return UNIT_DONE();
}
