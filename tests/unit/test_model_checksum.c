/*
 * tests/unit/test_model_checksum.c - format 2's sealed records: CRC-32C
 * against published vectors and a bitwise reference, the record codec
 * (every flipped bit of key or record is caught, re-keying), the upgrade of
 * a format-1 store at a writable open, and format-1 dumps loaded upgraded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_int.h"
#include "model/tree/tree_int.h"
#include "store/store.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-sum-XXXXXX"
#include "unit_model.h"

/* The textbook bit-at-a-time CRC-32C, independent of record.c's table. */
static uint32_t crc32c_bitwise(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t crc = 0xffffffff;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return ~crc;
}

static void test_crc32c_vectors(void)
{
	uint8_t buf[4096];

	CHECK_EQ_INT(crc32c(0, "123456789", 9), 0xe3069283);
	CHECK_EQ_INT(crc32c(0, "", 0), 0);
	/* RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of ones, incrementing. */
	memset(buf, 0, 32);
	CHECK_EQ_INT(crc32c(0, buf, 32), 0x8a9136aa);
	memset(buf, 0xff, 32);
	CHECK_EQ_INT(crc32c(0, buf, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CHECK_EQ_INT(crc32c(0, buf, 32), 0x46dd794e);
	/* Chaining is the same as one pass; random data matches the reference. */
	CHECK_EQ_INT(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283);
	srand(8);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t n = 0; n < sizeof(buf); n = n * 2 + 1)
		CHECK_EQ_INT(crc32c(0, buf, n), crc32c_bitwise(buf, n));
	/* the eight-bytes-at-a-time path: any alignment, any tail */
	for (size_t off = 1; off < 8; off++)
		for (size_t n = 64; n < 80; n++)
			CHECK_EQ_INT(crc32c(0, buf + off, n), crc32c_bitwise(buf + off, n));
}

/*
 * A big record (1 MiB and more) verified once by a thread is trusted while
 * it lies at the same place with the same length, key and stored sum; any
 * other copy, key or sum is verified in full.
 */
static void test_record_big_verified_once_per_place(void)
{
	uint8_t key[] = { 0x02, 'b', 'i', 'g', 0x00 };
	size_t n = (2u << 20) + 5, body_len;
	uint8_t *payload = malloc(n);
	struct leaf in = { .tag = LEAF_STRING, .mtime_ns = 7 };
	struct strbuf sb;
	char *copy;

	if (!payload)
		abort();
	for (size_t i = 0; i < n; i++)
		payload[i] = (uint8_t)(i * 31 + 7);
	in.payload = payload;
	in.payload_len = n;
	strbuf_init(&sb);
	leaf_record_encode(key, sizeof(key), &in, &sb);
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len), 0);
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len), 0);
	/* the same bytes with one flipped, elsewhere: verified, refused */
	copy = malloc(sb.len);
	if (!copy)
		abort();
	memcpy(copy, sb.buf, sb.len);
	copy[sb.len / 2] ^= 0x10;
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), copy, sb.len, &body_len), -EBADMSG);
	/* the remembered place with another stored sum, or another key: refused */
	sb.buf[sb.len - 1] ^= 0x01;
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len), -EBADMSG);
	sb.buf[sb.len - 1] ^= 0x01;
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len), 0);
	key[1] = 'B';
	CHECK_EQ_INT(leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len), -EBADMSG);
	free(copy);
	free(payload);
	strbuf_release(&sb);
}

/* The worked example of docs/FORMAT.md: the integer 42 at ("a"). */
static void test_record_worked_example(void)
{
	static const uint8_t key[] = { 0x02, 'a', 0x00 };
	static const uint8_t body[] = { 0x02, 0x01, 0x18, 0x7a, 0x0b, 0x6b, 0x1a, 0x2c, 0x00, 0x00,
					0, 0, 0, 0, 0, 0, 0, 0x2a };
	uint8_t all[sizeof(key) + sizeof(body)];
	struct leaf leaf = { .tag = LEAF_INTEGER, .flags = LEAF_FLAG_NEWLINE,
			     .mtime_ns = 0x187a0b6b1a2c0000, .integer = 42 };
	struct strbuf sb;
	uint32_t sum;
	uint8_t want[4];

	memcpy(all, key, sizeof(key));
	memcpy(all + sizeof(key), body, sizeof(body));
	sum = crc32c_bitwise(all, sizeof(all));
	want[0] = (uint8_t)(sum >> 24);
	want[1] = (uint8_t)(sum >> 16);
	want[2] = (uint8_t)(sum >> 8);
	want[3] = (uint8_t)sum;
	strbuf_init(&sb);
	leaf_record_encode(key, sizeof(key), &leaf, &sb);
	CHECK_EQ_INT(sb.len, sizeof(body) + 4);
	CHECK_MEM(sb.buf, sizeof(body), body, sizeof(body));
	CHECK_MEM(sb.buf + sizeof(body), 4, want, 4);
	/* the value docs/FORMAT.md prints */
	CHECK_EQ_INT(sum, 0x936bec8e);
	strbuf_release(&sb);
}

static void test_record_every_bit_flip_caught(void)
{
	uint8_t key[] = { 0x02, 'n', 'a', 'm', 'e', 0x00, 0x15, 0x07 };
	struct leaf in = { .tag = LEAF_STRING, .flags = LEAF_FLAG_NEWLINE, .mtime_ns = 123456789,
			   .payload = (const uint8_t *)"Bob Smith", .payload_len = 9 };
	struct leaf out;
	struct strbuf sb;
	size_t body_len;
	int missed = 0;

	strbuf_init(&sb);
	leaf_record_encode(key, sizeof(key), &in, &sb);
	CHECK_EQ_INT(leaf_record_decode(2, key, sizeof(key), sb.buf, sb.len, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_STRING);
	CHECK_MEM(out.payload, out.payload_len, "Bob Smith", 9);
	CHECK_EQ_INT(out.mtime_ns, 123456789);
	for (size_t i = 0; i < sb.len * 8; i++) {
		sb.buf[i / 8] ^= (char)(1 << (i % 8));
		if (leaf_record_decode(2, key, sizeof(key), sb.buf, sb.len, &out) != -EBADMSG)
			missed++;
		sb.buf[i / 8] ^= (char)(1 << (i % 8));
	}
	for (size_t i = 0; i < sizeof(key) * 8; i++) {
		key[i / 8] ^= (uint8_t)(1 << (i % 8));
		if (leaf_record_verify(2, key, sizeof(key), sb.buf, sb.len, &body_len) != -EBADMSG)
			missed++;
		key[i / 8] ^= (uint8_t)(1 << (i % 8));
	}
	CHECK_EQ_INT(missed, 0);
	/* too short to hold a checksum; an unknown format */
	CHECK_EQ_INT(leaf_record_decode(2, key, sizeof(key), sb.buf, 3, &out), -EBADMSG);
	CHECK_EQ_INT(leaf_record_decode(STORE_FORMAT_VERSION + 1, key, sizeof(key), sb.buf, sb.len, &out), -EIO);
	/* format 1 reads the bare body; the trailer would be payload there */
	CHECK_EQ_INT(leaf_record_decode(1, key, sizeof(key), sb.buf, sb.len - 4, &out), 0);
	CHECK_MEM(out.payload, out.payload_len, "Bob Smith", 9);
	strbuf_release(&sb);
}

static void test_record_rekey(void)
{
	static const uint8_t a[] = { 0x02, 'a', 0x00 }, b[] = { 0x02, 'b', 0x00, 0x14 };
	struct leaf in = { .tag = LEAF_NULL, .mtime_ns = 7 }, out;
	struct strbuf sb, moved;

	strbuf_init(&sb);
	strbuf_init(&moved);
	leaf_record_encode(a, sizeof(a), &in, &sb);
	CHECK_EQ_INT(leaf_record_rekey(2, a, sizeof(a), b, sizeof(b), sb.buf, sb.len, &moved), 0);
	CHECK_EQ_INT(leaf_record_decode(2, b, sizeof(b), moved.buf, moved.len, &out), 0);
	CHECK_EQ_INT(out.tag, LEAF_NULL);
	CHECK_EQ_INT(leaf_record_decode(2, a, sizeof(a), moved.buf, moved.len, &out), -EBADMSG);
	/* a record that does not verify is not re-sealed */
	strbuf_reset(&moved);
	sb.buf[2] ^= 1;
	CHECK_EQ_INT(leaf_record_rekey(2, a, sizeof(a), b, sizeof(b), sb.buf, sb.len, &moved),
		     -EBADMSG);
	strbuf_release(&moved);
	strbuf_release(&sb);
}

/* ---- a format-1 store, made with the store API ---- */

#define V1_COUNT 3000

static size_t v1_key(uint8_t *key, int i)
{
	struct tuple_writer w;

	tuple_writer_init(&w, key, STORE_KEY_MAX);
	tuple_put_string(&w, "v", 1);
	tuple_put_int(&w, i);
	return w.len;
}

/* Body of element i: strings of varied sizes, some spilling to overflow pages. */
static size_t v1_body(uint8_t *rec, size_t cap, int i)
{
	size_t n = (size_t)(i % 7 == 0 ? 3000 + i : i % 200);
	struct leaf l = { .tag = LEAF_STRING, .flags = LEAF_FLAG_NEWLINE, .mtime_ns = i };
	struct strbuf sb;
	char *text = malloc(n + 1);

	for (size_t j = 0; j < n; j++)
		text[j] = (char)('a' + (i + j) % 26);
	l.payload = (const uint8_t *)text;
	l.payload_len = n;
	strbuf_init(&sb);
	leaf_encode(&l, &sb);
	n = sb.len <= cap ? sb.len : 0;
	memcpy(rec, sb.buf, n);
	strbuf_release(&sb);
	free(text);
	return n;
}

static int v1_fill(struct store_txn *txn, void *arg)
{
	uint8_t key[STORE_KEY_MAX], *rec = malloc(8192);
	int ret = store_set_format(txn, 1);

	(void)arg;
	for (int i = 0; ret == 0 && i < V1_COUNT; i++)
		ret = store_put(txn, STORE_SPACE_DATA, key, v1_key(key, i), rec,
				v1_body(rec, 8192, i));
	free(rec);
	return ret;
}

static void check_v1_values(struct model *m)
{
	uint8_t rec[8192];
	char path[32], *out;
	struct model_error err;
	size_t len;
	int bad = 0;

	for (int i = 0; i < V1_COUNT; i++) {
		size_t n = v1_body(rec, sizeof(rec), i);

		snprintf(path, sizeof(path), "/v/%d", i);
		out = NULL;
		if (model_read_all(m, path, &out, &len, &err) != 0 ||
		    len != n - LEAF_HEADER_SIZE + 1 ||
		    memcmp(out, rec + LEAF_HEADER_SIZE, len - 1) != 0)
			bad++;
		free(out);
	}
	CHECK_EQ_INT(bad, 0);
}

static uint64_t problems_in(struct model *m)
{
	struct model_error err;
	uint64_t problems = 99;

	CHECK_EQ_INT(model_check(m, stderr, &problems, &err), 0);
	return problems;
}

static void test_upgrade_v1_store(void)
{
	struct model *m = open_fresh(), *ro;
	struct model_error err;
	struct store_txn *txn;
	struct store_val v;
	char *d1;
	size_t l1 = 0;

	CHECK(m != NULL);
	CHECK_EQ_INT(store_write(m->st, v1_fill, NULL), 0);
	model_close(m);

	/* read-only: read as format 1, nothing written */
	CHECK_EQ_INT(model_open(store_dir, MODEL_OPEN_READONLY, &ro, &err), 0);
	CHECK_EQ_INT(store_format(ro->st), 1);
	check_v1_values(ro);
	CHECK_EQ_INT(problems_in(ro), 0);
	model_close(ro);

	/* writable: upgraded in one go, same values, every record sealed */
	CHECK_EQ_INT(model_open(store_dir, 0, &m, &err), 0);
	CHECK_EQ_INT(store_read_begin(m->st, &txn), 0);
	CHECK_EQ_INT(store_txn_format(txn), STORE_FORMAT_VERSION);
	CHECK_EQ_INT(store_get(txn, STORE_SPACE_META, "format", 6, &v), 0);
	CHECK_MEM(v.data, v.len, "\0\0\0\4", 4);
	store_txn_end(txn);
	check_v1_values(m);
	CHECK_EQ_INT(problems_in(m), 0);
	d1 = dump_text(m, &l1);
	model_close(m);

	/* a second open changes nothing */
	CHECK_EQ_INT(model_open(store_dir, 0, &m, &err), 0);
	CHECK_EQ_INT(store_format(m->st), STORE_FORMAT_VERSION);
	check_unchanged(m, d1, l1);
	close_fresh(m);
}

/* A read-only reader that opened a format-1 store sees the upgrade of another open. */
static void test_reader_follows_upgrade(void)
{
	struct model *m = open_fresh(), *ro, *w;
	struct model_error err;

	CHECK_EQ_INT(store_write(m->st, v1_fill, NULL), 0);
	model_close(m);
	CHECK_EQ_INT(model_open(store_dir, MODEL_OPEN_READONLY, &ro, &err), 0);
	check_v1_values(ro);
	CHECK_EQ_INT(model_open(store_dir, 0, &w, &err), 0);
	check_v1_values(ro);
	CHECK_EQ_INT(store_format(ro->st), STORE_FORMAT_VERSION);
	model_close(ro);
	close_fresh(w);
}

static int load_text(struct model *m, const char *text, struct model_error *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret = model_load(m, f, err);

	fclose(f);
	return ret;
}

static void test_load_v1_dump(void)
{
	/* ("s") = "hi" with the newline flag, mtime 1; format 1: no checksum */
	static const char v1[] =
		"kvfs-dump 1\n"
		"meta 63726561746564 0000000000000005\n"
		"meta 666f726d6174 00000001\n"
		"data 027300 010100000000000000016869\n"
		"end 3\n";
	struct model *m = open_fresh(), *m2;
	struct model_error err;
	char *out = NULL, *d1, *d2, dir1[64];
	size_t len = 0, l1 = 0, l2 = 0;

	CHECK_EQ_INT(load_text(m, v1, &err), 0);
	CHECK_EQ_INT(model_read_all(m, "/s", &out, &len, &err), 0);
	CHECK_MEM(out, len, "hi\n", 3);
	free(out);
	CHECK_EQ_INT(problems_in(m), 0);
	d1 = dump_text(m, &l1);
	CHECK(d1 && strstr(d1, "meta 666f726d6174 00000004\n") != NULL);
	CHECK(d1 && strstr(d1, "data 027300 010100000000000000016869") != NULL);
	CHECK(d1 && strstr(d1, "data 027300 010100000000000000016869\n") == NULL);

	/* a format-2 dump loads byte for byte */
	strcpy(dir1, store_dir);
	m2 = open_fresh();
	CHECK_EQ_INT(load_text(m2, d1, &err), 0);
	d2 = dump_text(m2, &l2);
	CHECK(d1 && d2);
	if (d1 && d2)
		CHECK_MEM(d1, l1, d2, l2);
	close_fresh(m2);

	/* a flipped bit in a format-2 dump's record is refused, nothing loaded */
	m2 = open_fresh();
	if (d1) {
		char *p = strstr(d1, "data 027300 0101");

		p[strlen("data 027300 0101") + 2] ^= 1;	/* 0 <-> 1: still hex */
		CHECK_EQ_INT(load_text(m2, d1, &err), -EINVAL);
		CHECK(strstr(err.msg, "line 4: checksum mismatch") != NULL);
		free(d2);
		d2 = dump_text(m2, &l2);
		CHECK(d2 && strstr(d2, "data ") == NULL);
	}
	close_fresh(m2);
	free(d1);
	free(d2);
	strcpy(store_dir, dir1);
	close_fresh(m);
}

/* A record whose bytes changed: every reader gives -EIO and names the path. */
static int corrupt_fn(struct store_txn *txn, void *arg)
{
	uint8_t key[STORE_KEY_MAX], val[256];
	struct store_val v;
	struct tuple_writer w;
	int ret;

	(void)arg;
	tuple_writer_init(&w, key, sizeof(key));
	tuple_put_string(&w, "d", 1);
	tuple_put_string(&w, "name", 4);
	ret = store_get(txn, STORE_SPACE_DATA, key, w.len, &v);
	if (ret < 0 || v.len > sizeof(val))
		return ret < 0 ? ret : -EIO;
	memcpy(val, v.data, v.len);
	val[LEAF_HEADER_SIZE] ^= 0x20;		/* "Bob" -> "bob" */
	return store_put(txn, STORE_SPACE_DATA, key, w.len, val, v.len);
}

static void test_readers_refuse_corrupt_record(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;
	char *out = NULL, *report = NULL;
	size_t len = 0, rlen = 0;
	uint64_t problems = 0;
	FILE *f;
	const char *doc = "{\"name\":\"Bob\",\"age\":3}";

	CHECK_EQ_INT(model_import(m, "/d", doc, strlen(doc), NULL, NULL, &err), 0);
	CHECK_EQ_INT(store_write(m->st, corrupt_fn, NULL), 0);
	CHECK_EQ_INT(model_read_all(m, "/d/name", &out, &len, &err), -EIO);
	CHECK(strstr(err.msg, "/d/name") != NULL);
	CHECK_EQ_INT(model_stat(m, "/d/name", 0, &node, &err), -EIO);
	CHECK_EQ_INT(model_export(m, "/d", 0, &out, &len, &err), -EIO);
	CHECK_EQ_INT(model_read_all(m, "/d.json", &out, &len, &err), -EIO);
	CHECK_EQ_INT(model_rename(m, "/d", "/e", 0, &err), -EIO);
	CHECK(strstr(err.msg, "/d") != NULL);
	CHECK_EQ_INT(model_read_all(m, "/d/age", &out, &len, &err), 0);	/* the rest reads */
	free(out);
	f = open_memstream(&report, &rlen);
	CHECK_EQ_INT(model_dump(m, f, &err), -EIO);
	fclose(f);
	free(report);
	CHECK(strstr(err.msg, "/d/name") != NULL);
	report = NULL;
	f = open_memstream(&report, &rlen);
	CHECK_EQ_INT(model_check(m, f, &problems, &err), 0);
	fclose(f);
	CHECK_EQ_INT(problems, 1);
	CHECK(report && strstr(report, "check: 026400026e616d6500: checksum mismatch (/d/name)\n") !=
	      NULL);
	free(report);
	close_fresh(m);
}

int main(void)
{
	TEST(test_crc32c_vectors);
	TEST(test_record_worked_example);
	TEST(test_record_every_bit_flip_caught);
	TEST(test_record_big_verified_once_per_place);
	TEST(test_record_rekey);
	TEST(test_upgrade_v1_store);
	TEST(test_reader_follows_upgrade);
	TEST(test_load_v1_dump);
	TEST(test_readers_refuse_corrupt_record);
	return UNIT_DONE();
}
