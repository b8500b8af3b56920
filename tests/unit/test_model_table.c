/*
 * tests/unit/test_model_table.c - tables: the index value encoding orders
 * numbers exactly across integers, doubles and big integers (random pairs
 * against an independent comparison), strings in byte order; and the rules
 * a write must keep (unique, references, restricted delete), kvfs check
 * finding an index entry corrupted through the store layer, and the schema
 * record's two versions (docs/FORMAT.md, "Schema records").
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_int.h"
#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "store/store.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-table-XXXXXX"
#include "unit_model.h"

/* ---- encoding order ---- */

enum vkind { V_INT, V_DOUBLE, V_BIG };

struct val {
	enum vkind kind;
	int64_t i;
	double d;
	char big[48];		/* sign and digits, |value| >= 2^63 */
	struct strbuf enc;
};

static int cmp_bytes(const struct strbuf *a, const struct strbuf *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->buf, b->buf, n);

	if (c)
		return c < 0 ? -1 : 1;
	return a->len < b->len ? -1 : a->len > b->len;
}

static int sign_of(const struct val *v)
{
	if (v->kind == V_BIG)
		return v->big[0] == '-' ? -1 : 1;
	if (v->kind == V_INT)
		return (v->i > 0) - (v->i < 0);
	return (v->d > 0) - (v->d < 0);
}

/* The oracle: plain arithmetic, no decimal encoding involved. */
static int oracle(const struct val *a, const struct val *b)
{
	if (a->kind == V_BIG || b->kind == V_BIG) {
		const char *x, *y;
		size_t lx, ly;
		int s;

		if (a->kind != V_BIG || b->kind != V_BIG)	/* the other is inside +-2^63 */
			return a->kind == V_BIG ? sign_of(a) : -sign_of(b);
		if (sign_of(a) != sign_of(b))
			return sign_of(a);
		s = sign_of(a);
		x = a->big + (s < 0);
		y = b->big + (s < 0);
		lx = strlen(x);
		ly = strlen(y);
		if (lx != ly)
			return (lx < ly ? -1 : 1) * s;
		lx = (size_t)strcmp(x, y);	/* same length: digit order */
		return (int)lx == 0 ? 0 : ((int)lx > 0 ? s : -s);
	}
	{
		long double x = a->kind == V_INT ? (long double)a->i : (long double)a->d;
		long double y = b->kind == V_INT ? (long double)b->i : (long double)b->d;

		return (x > y) - (x < y);
	}
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void random_val(struct val *v)
{
	struct leaf leaf;

	memset(&leaf, 0, sizeof(leaf));
	v->kind = (enum vkind)(rnd() % 3);
	switch (v->kind) {
	case V_INT:
		/* small numbers often, so that ties and near ties with doubles occur */
		v->i = rnd() % 2 ? (int64_t)(rnd() % 201) - 100 : (int64_t)rnd();
		leaf.tag = LEAF_INTEGER;
		leaf.integer = v->i;
		break;
	case V_DOUBLE:
		/* |d| < 2^52: its shortest text is its exact value's neighbour on the
		 * same side of every integer, so long double compares like kvfs */
		v->d = ((double)(int64_t)(rnd() % 4000001) - 2000000) / (double)(1 << (rnd() % 12));
		if (rnd() % 4 == 0)
			v->d = ((double)(rnd() % (1ULL << 51))) * (rnd() % 2 ? 1 : -1);
		leaf.tag = LEAF_DOUBLE;
		leaf.real = v->d;
		break;
	case V_BIG: {
		size_t n = 20 + rnd() % 20, p = 0;

		if (rnd() % 2)
			v->big[p++] = '-';
		v->big[p++] = (char)('1' + rnd() % 9);
		for (size_t i = 1; i < n; i++)
			v->big[p++] = (char)('0' + rnd() % 10);
		v->big[p] = '\0';
		leaf.tag = LEAF_BIG_INTEGER;
		leaf.payload = (const uint8_t *)v->big;
		leaf.payload_len = p;
		break;
	}
	}
	strbuf_init(&v->enc);
	CHECK_EQ_INT(ikey_put_leaf(&v->enc, &leaf), 0);
}

static void test_number_order_random(void)
{
	int wrong = 0;

	for (int i = 0; i < 200000; i++) {
		struct val a, b;

		random_val(&a);
		random_val(&b);
		if (cmp_bytes(&a.enc, &b.enc) != oracle(&a, &b) && wrong++ < 5)
			fprintf(stderr, "# order differs: kinds %d %d (%lld %g %s) (%lld %g %s)\n",
				a.kind, b.kind, (long long)a.i, a.d, a.big, (long long)b.i, b.d, b.big);
		strbuf_release(&a.enc);
		strbuf_release(&b.enc);
	}
	CHECK_EQ_INT(wrong, 0);
}

static void enc_text(const char *text, struct strbuf *sb)
{
	strbuf_init(sb);
	CHECK_EQ_INT(ikey_put_number_text(sb, text, strlen(text)), 0);
}

static void test_number_order_cases(void)
{
	/* ascending; each strictly below the next */
	static const char *const asc[] = {
		"-1e300", "-123456789012345678901234567890", "-9007199254740993",
		"-9007199254740992", "-100", "-30.5", "-4.5", "-0.01", "-0.001", "0",
		"0.001", "0.01", "4.5", "30", "30.5", "100", "9007199254740992",
		"9007199254740993", "18446744073709551616", "1e300",
	};
	struct strbuf a, b, text;
	size_t pos;

	for (size_t i = 0; i + 1 < sizeof(asc) / sizeof(asc[0]); i++) {
		enc_text(asc[i], &a);
		enc_text(asc[i + 1], &b);
		if (cmp_bytes(&a, &b) >= 0)
			fprintf(stderr, "# %s does not sort before %s\n", asc[i], asc[i + 1]);
		CHECK(cmp_bytes(&a, &b) < 0);
		strbuf_release(&a);
		strbuf_release(&b);
	}
	/* one value, several spellings */
	enc_text("30", &a);
	enc_text("30.0", &b);
	CHECK_MEM(a.buf, a.len, b.buf, b.len);
	strbuf_release(&b);
	enc_text("3e1", &b);
	CHECK_MEM(a.buf, a.len, b.buf, b.len);
	/* the worked example of docs/FORMAT.md: 30 -> 22 80 02 04 00 */
	CHECK_MEM(a.buf, a.len, "\x22\x80\x02\x04\x00", 5);
	strbuf_release(&a);
	strbuf_release(&b);
	enc_text("-4.5", &a);
	CHECK_MEM(a.buf, a.len, "\x20\x7f\xfe\xfa\xf9\xff", 6);
	/* back to text */
	strbuf_init(&text);
	pos = 0;
	CHECK_EQ_INT(ikey_to_text((const uint8_t *)a.buf, a.len, &pos, &text), 0);
	CHECK(text.buf && strcmp(text.buf, "-4.5") == 0);
	CHECK_EQ_INT(pos, a.len);
	strbuf_release(&a);
	strbuf_release(&text);
	enc_text("9007199254740993", &a);
	strbuf_init(&text);
	pos = 0;
	CHECK_EQ_INT(ikey_to_text((const uint8_t *)a.buf, a.len, &pos, &text), 0);
	CHECK(text.buf && strcmp(text.buf, "9007199254740993") == 0);
	strbuf_release(&a);
	strbuf_release(&text);
	strbuf_init(&a);
	CHECK_EQ_INT(ikey_put_number_text(&a, "1e99999", 7), -ERANGE);
	CHECK_EQ_INT(ikey_put_number_text(&a, "abc", 3), -EINVAL);
	strbuf_release(&a);
}

static void test_string_order(void)
{
	static const char *const asc[] = { "", "a", "a\0", "a\0b", "a\1", "ab", "b", "\xc3\xa9" };
	static const size_t lens[] = { 0, 1, 2, 3, 2, 2, 1, 2 };
	struct strbuf a, b, n;

	for (size_t i = 0; i + 1 < sizeof(asc) / sizeof(asc[0]); i++) {
		strbuf_init(&a);
		strbuf_init(&b);
		ikey_put_string(&a, IKEY_STRING, asc[i], lens[i]);
		ikey_put_string(&b, IKEY_STRING, asc[i + 1], lens[i + 1]);
		CHECK(cmp_bytes(&a, &b) < 0);
		strbuf_release(&a);
		strbuf_release(&b);
	}
	/* every number sorts before every string */
	enc_text("1e300", &n);
	strbuf_init(&a);
	ikey_put_string(&a, IKEY_STRING, "", 0);
	CHECK(cmp_bytes(&n, &a) < 0);
	strbuf_release(&a);
	strbuf_release(&n);
}

/* ---- the rules ---- */

static int put(struct model *m, const char *path, const char *json, struct model_error *err)
{
	return model_write(m, path, json, strlen(json), 0, 0, err);
}

static char *get(struct model *m, const char *path)
{
	char *out = NULL;
	size_t len = 0;
	struct model_error err;

	if (model_export(m, path, MODEL_JSON_COMPACT, &out, &len, &err) < 0)
		return NULL;
	return out;
}

static void test_rules(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	char *before, *after;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(put(m, "/people.json", "{\"ann\":{\"email\":\"a@x\",\"age\":30},"
			 "\"bob\":{\"email\":\"a@x\"}}", &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/people", 1, NULL, &err), 0);
	/* a unique index over duplicates: refused naming both rows */
	CHECK_EQ_INT(model_index_create(m, "/people", "by_email", "email", true, &err), -EEXIST);
	CHECK(strstr(err.msg, "/people/ann") && strstr(err.msg, "/people/bob"));
	CHECK_EQ_INT(model_write(m, "/people/bob/email", "b@x", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_index_create(m, "/people", "by_email", "email", true, &err), 0);
	/* a clash through a whole-row write and through one leaf: nothing changes */
	before = get(m, "/people");
	CHECK_EQ_INT(put(m, "/people/cy.json", "{\"email\":\"a@x\"}", &err), -EEXIST);
	CHECK(strstr(err.msg, "email") && strstr(err.msg, "/people/cy"));
	CHECK_EQ_INT(model_write(m, "/people/bob/email", "a@x", 3, 0, MODEL_WRITE_TEXT, &err),
		     -EEXIST);
	after = get(m, "/people");
	CHECK(before && after && strcmp(before, after) == 0);
	free(before);
	free(after);
	/* the whole store, indexes included, is unchanged by a refusal */
	{
		size_t l1 = 0;
		char *d1 = dump_text(m, &l1);

		CHECK_EQ_INT(put(m, "/people/cy.json", "{\"email\":\"b@x\"}", &err), -EEXIST);
		check_unchanged(m, d1, l1);
	}
	/* a typed, required column tightened over a row that breaks it: refused */
	CHECK_EQ_INT(model_table_column(m, "/people", "age", "integer", true, 0, NULL, &err),
		     -EINVAL);
	CHECK(strstr(err.msg, "/people/bob") && strstr(err.msg, "age"));
	CHECK_EQ_INT(model_table_column(m, "/people", "age", "integer", false, 0, NULL, &err), 0);
	CHECK_EQ_INT(model_write(m, "/people/ann/age", "x", 1, MODEL_TYPE_STRING, 0, &err),
		     -EINVAL);
	/* references: dangling refused, referenced row cannot go */
	CHECK_EQ_INT(model_table_create(m, "/orders", 1, NULL, &err), 0);
	CHECK_EQ_INT(model_table_column(m, "/orders", "who", "string", true, 0, "/people", &err),
		     0);
	CHECK_EQ_INT(put(m, "/orders/1.json", "{\"who\":\"zed\"}", &err), -EINVAL);
	CHECK(strstr(err.msg, "who") && strstr(err.msg, "/people/zed"));
	CHECK_EQ_INT(put(m, "/orders/1.json", "{\"who\":\"ann\"}", &err), 0);
	CHECK_EQ_INT(model_remove(m, "/people/ann", MODEL_REMOVE_RECURSIVE, &err), -EBUSY);
	CHECK(strstr(err.msg, "/orders/1"));
	CHECK_EQ_INT(model_remove(m, "/people", MODEL_REMOVE_RECURSIVE, &err), -EBUSY);
	CHECK_EQ_INT(model_table_drop(m, "/people", &err), -EBUSY);
	/* MODEL_REMOVE_ROW_WHOLE: nothing inside the referenced row goes; the row itself
	 * meets the reference; a row nothing references is not pinned */
	CHECK_EQ_INT(model_remove(m, "/people/ann/email", MODEL_REMOVE_LEAF |
				  MODEL_REMOVE_ROW_WHOLE, &err), -EBUSY);
	CHECK(err.reason == MODEL_REASON_ROW_PINNED && strstr(err.msg, "/orders/1"));
	CHECK_EQ_INT(model_remove(m, "/people/ann", MODEL_REMOVE_RECURSIVE |
				  MODEL_REMOVE_ROW_WHOLE, &err), -EBUSY);
	CHECK(err.reason == MODEL_REASON_TABLE_RULE);
	CHECK_EQ_INT(put(m, "/people/dee.json", "{\"email\":\"d@x\",\"age\":1}", &err), 0);
	CHECK_EQ_INT(model_remove(m, "/people/dee/age", MODEL_REMOVE_LEAF |
				  MODEL_REMOVE_ROW_WHOLE, &err), 0);
	CHECK_EQ_INT(model_remove(m, "/people/dee", MODEL_REMOVE_RECURSIVE, &err), 0);
	/* both rows in one transaction: fine */
	CHECK_EQ_INT(model_remove(m, "/orders/1", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_remove(m, "/people/ann", MODEL_REMOVE_RECURSIVE, &err), 0);
	close_fresh(m);
}

/*
 * A table's declaration stays with its directory: a change of kind of the
 * table or of a directory above it, and a document over a directory holding
 * it that leaves it no object of rows, are refused (EBUSY) and change
 * nothing, the store dumped the same; a removal on purpose takes it.
 */
static void test_table_kept(void)
{
	static const char *const docs[] = { "{\"x\":1}", "[1]", "7" };
	struct model_error err;
	struct model *m = open_fresh();
	size_t l1 = 0;
	char *d1;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(put(m, "/a.json", "{\"0\":{\"t\":{\"r\":{\"n\":1}}}}", &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/a/0/t", 1, NULL, &err), 0);
	CHECK_EQ_INT(model_index_create(m, "/a/0/t", "by_n", "n", true, &err), 0);
	CHECK_EQ_INT(put(m, "/f", "{\"y\":2}", &err), 0);
	d1 = dump_text(m, &l1);
	CHECK_EQ_INT(model_set_type(m, "/a", "array", &err), -EBUSY);
	CHECK(strstr(err.msg, "holds the table /a/0/t") != NULL);
	CHECK_EQ_INT(model_set_type(m, "/a/0/t", "array", &err), -EBUSY);
	CHECK(strstr(err.msg, "is a table") != NULL);
	CHECK_EQ_INT(model_set_type(m, "/a/0/t", "object", &err), 0);	/* its kind already */
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		CHECK_EQ_INT(put(m, "/a.json", docs[i], &err), -EBUSY);
		CHECK_EQ_INT(model_import(m, "/a", docs[i], strlen(docs[i]), NULL, NULL, &err),
			     -EBUSY);
		if (docs[i][0] != '{')
			CHECK_EQ_INT(put(m, "/a/0/t.json", docs[i], &err), -EBUSY);
	}
	CHECK_EQ_INT(model_rename(m, "/f", "/a.json", 0, &err), -EBUSY);
	CHECK(strstr(err.msg, "would replace the table /a/0/t") != NULL);
	CHECK_EQ_INT(model_rename(m, "/a/0", "/b", 0, &err), -EBUSY);
	check_unchanged(m, d1, l1);
	/* the table's document as an object is its rows, and the table stays */
	CHECK_EQ_INT(put(m, "/a/0/t.json", "{\"s\":{\"n\":2}}", &err), 0);
	CHECK_EQ_INT(put(m, "/a/0/t/u.json", "{\"n\":2}", &err), -EEXIST);	/* by_n holds */
	CHECK_EQ_INT(model_remove(m, "/a", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_table_drop(m, "/a/0/t", &err), -ENOENT);
	close_fresh(m);
}

/*
 * A reference over two fields holding integers names the key levels their
 * decimal text spells: it holds /t/7/1, not /t/007/1, though both read as
 * the numbers 7 and 1.
 */
static void test_refs_over_numbers(void)
{
	struct model_error err;
	struct model *m = open_fresh();

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(put(m, "/t.json", "{\"7\":{\"1\":{}},\"007\":{\"1\":{}}}", &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/t", 2, NULL, &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/r", 1, NULL, &err), 0);
	CHECK_EQ_INT(model_table_reference(m, "/r", "a,b", "/t", &err), 0);
	CHECK_EQ_INT(put(m, "/r/x.json", "{\"a\":7,\"b\":2}", &err), -EINVAL);
	CHECK(strstr(err.msg, "/r/x: fields a,b reference /t/7/2, which does not exist"));
	CHECK_EQ_INT(put(m, "/r/x.json", "{\"a\":7,\"b\":1}", &err), 0);
	CHECK_EQ_INT(model_remove(m, "/t/007/1", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_remove(m, "/t/7/1", MODEL_REMOVE_RECURSIVE, &err), -EBUSY);
	CHECK(strstr(err.msg, "/t/7/1: still referenced by /r/x (fields a,b)"));
	CHECK_EQ_INT(model_remove(m, "/t/7", MODEL_REMOVE_RECURSIVE, &err), -EBUSY);
	CHECK_EQ_INT(model_table_reference(m, "/r", "a,b", NULL, &err), 0);
	CHECK_EQ_INT(model_remove(m, "/t/7/1", MODEL_REMOVE_RECURSIVE, &err), 0);
	close_fresh(m);
}

static int corrupt_entry(struct store_txn *txn, void *arg)
{
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t key[STORE_KEY_MAX];
	size_t len = 0;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, NULL, 0, &scan);

	(void)arg;
	if (ret < 0)
		return ret;
	if (store_scan_next(scan, &k, &v) == 1) {
		memcpy(key, k.data, k.len);
		len = k.len;
	}
	store_scan_close(scan);
	if (!len)
		return -ENOENT;
	/* The entry's value changes under it: (id 1, 30, "a") says 40. */
	ret = store_del(txn, STORE_SPACE_INDEX, key, len);
	key[5] = 0x05;
	return ret < 0 ? ret : store_put(txn, STORE_SPACE_INDEX, key, len, "", 0);
}

static void test_check_finds_corrupt_entry(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	uint64_t problems = 99;
	FILE *report = tmpfile();

	CHECK(m != NULL && report != NULL);
	if (!m || !report)
		return;
	CHECK_EQ_INT(put(m, "/t.json", "{\"a\":{\"n\":30}}", &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/t", 1, NULL, &err), 0);
	CHECK_EQ_INT(model_index_create(m, "/t", "by_n", "n", false, &err), 0);
	CHECK_EQ_INT(model_check(m, report, &problems, &err), 0);
	CHECK_EQ_INT(problems, 0);
	CHECK_EQ_INT(store_write(m->st, corrupt_entry, NULL), 0);
	CHECK_EQ_INT(model_check(m, report, &problems, &err), 0);
	CHECK_EQ_INT(problems, 2);	/* the stale entry, and the row's missing one */
	CHECK_EQ_INT(model_check_repair(m, &err), 0);
	CHECK_EQ_INT(model_check(m, report, &problems, &err), 0);
	CHECK_EQ_INT(problems, 0);
	fclose(report);
	close_fresh(m);
}

/* ---- schema records ---- */

/* The first element of a sealed record's body: its version. */
static int64_t record_version(const struct strbuf *rec)
{
	struct tuple_reader r;
	struct tuple_elem e;

	tuple_reader_init(&r, rec->buf, rec->len - 4);
	return tuple_next(&r, &e) == 1 && e.type == TUPLE_TYPE_INT ? e.integer : -1;
}

/*
 * A record in the layout of version 1 (or 2 with an empty list of
 * references: no kvfs writes it), element by element as FORMAT.md has it.
 */
static void seal_by_hand(const uint8_t *key, size_t klen, int64_t version, int64_t ttl,
			 struct strbuf *out)
{
	uint8_t body[256];
	struct tuple_writer w;

	tuple_writer_init(&w, body, sizeof(body));
	tuple_put_int(&w, version);
	tuple_put_int(&w, 2);			/* key depth */
	tuple_nested_begin(&w);
	tuple_put_string(&w, "a", 1);		/* key fields */
	tuple_put_string(&w, "b", 1);
	tuple_nested_end(&w);
	tuple_nested_begin(&w);			/* a column: n, integer, required, no reference */
	tuple_nested_begin(&w);
	tuple_put_string(&w, "n", 1);
	tuple_put_int(&w, TABLE_COL_INTEGER);
	tuple_put_bool(&w, true);
	tuple_put_int(&w, 0);
	tuple_put_bytes(&w, "", 0);
	tuple_put_int(&w, 0);
	tuple_nested_end(&w);
	tuple_nested_end(&w);
	tuple_nested_begin(&w);			/* an index: by_n (id 3) over n */
	tuple_nested_begin(&w);
	tuple_put_string(&w, "by_n", 4);
	tuple_put_int(&w, 3);
	tuple_put_bool(&w, false);
	tuple_nested_begin(&w);
	tuple_put_string(&w, "n", 1);
	tuple_nested_end(&w);
	tuple_nested_end(&w);
	tuple_nested_end(&w);
	if (ttl >= 0)
		tuple_put_int(&w, ttl);
	if (version == 2) {
		tuple_nested_begin(&w);
		tuple_nested_end(&w);
	}
	strbuf_reset(out);
	leaf_record_seal(key, klen, body, w.len, out);
}

static void test_schema_record_versions(void)
{
	struct table_schema *s = calloc(1, sizeof(*s)), *d = calloc(1, sizeof(*d));
	uint8_t key[8], ref[8];
	size_t klen, rlen;
	struct tuple_writer w;
	struct strbuf rec;

	CHECK(s && d);
	if (!s || !d)
		goto out;
	tuple_writer_init(&w, key, sizeof(key));
	tuple_put_string(&w, "t", 1);		/* the table /t */
	klen = w.len;
	tuple_writer_init(&w, ref, sizeof(ref));
	tuple_put_string(&w, "p", 1);		/* the table /p it references */
	rlen = w.len;
	strbuf_init(&rec);
	/* a record of a kvfs before references over several fields still reads */
	seal_by_hand(key, klen, 1, -1, &rec);
	CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, s), 0);
	CHECK_EQ_INT(s->key_depth, 2);
	CHECK_EQ_INT(s->ncols, 1);
	CHECK_EQ_INT(s->nidx, 1);
	CHECK_EQ_INT(s->nrefs, 0);
	CHECK_EQ_INT(s->ttl_seconds, 0);
	seal_by_hand(key, klen, 1, 60, &rec);
	CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, s), 0);
	CHECK_EQ_INT(s->ttl_seconds, 60);
	/* without references over several fields, written as version 1, byte for byte */
	{
		struct strbuf again;

		strbuf_init(&again);
		CHECK_EQ_INT(table_schema_encode(s, &again), 0);
		CHECK_MEM(again.buf, again.len, rec.buf, rec.len);
		CHECK_EQ_INT(record_version(&again), 1);
		strbuf_release(&again);
	}
	seal_by_hand(key, klen, 1, 0, &rec);	/* version 1 never holds a TTL of 0 */
	CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, d), -EINVAL);
	/* version 2 is written only for a schema with references: one without is corrupt */
	seal_by_hand(key, klen, 2, 0, &rec);
	CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, d), -EINVAL);
	/* with one: version 2, read back whole, its TTL 0 or not */
	for (int64_t ttl = 0; ttl <= 60; ttl += 60) {
		s->ttl_seconds = ttl;
		s->nrefs = 1;
		memcpy(s->refs[0].table, ref, rlen);
		s->refs[0].table_len = rlen;
		s->refs[0].index = 3;
		strcpy(s->idx[0].name, "@n");
		strbuf_reset(&rec);
		CHECK_EQ_INT(table_schema_encode(s, &rec), 0);
		CHECK_EQ_INT(record_version(&rec), 2);
		CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, d), 0);
		CHECK_EQ_INT(d->nrefs, 1);
		CHECK_EQ_INT(d->refs[0].index, 3);
		CHECK_MEM(d->refs[0].table, d->refs[0].table_len, ref, rlen);
		CHECK_EQ_INT(d->ttl_seconds, ttl);
	}
	/* a reference whose index the schema does not hold is malformed */
	s->refs[0].index = 9;
	strbuf_reset(&rec);
	CHECK_EQ_INT(table_schema_encode(s, &rec), 0);
	CHECK_EQ_INT(table_schema_decode(key, klen, rec.buf, rec.len, d), -EINVAL);
	strbuf_release(&rec);
out:
	free(s);
	free(d);
}

int main(void)
{
	TEST(test_number_order_random);
	TEST(test_number_order_cases);
	TEST(test_string_order);
	TEST(test_rules);
	TEST(test_check_finds_corrupt_entry);
	TEST(test_schema_record_versions);
	TEST(test_refs_over_numbers);
	TEST(test_table_kept);
	return UNIT_DONE();
}
