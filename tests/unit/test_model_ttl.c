/*
 * tests/unit/test_model_ttl.c - time to live: the expiry key encoding and
 * its order, hidden subtrees in a read transaction (siblings that continue
 * a name's bytes stay), deadlines set, cleared, moved and dropped with their
 * nodes, and the reaper and the read filter driven by an injected "now".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"
#include "store/store.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-ttl-XXXXXX"
#include "unit_model.h"

/* The tuple key of the names given (NULL-terminated); its length. */
static size_t key_of(uint8_t *buf, const char *const *names, const size_t *lens)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	for (int i = 0; names[i]; i++)
		tuple_put_string(&w, names[i], lens ? lens[i] : strlen(names[i]));
	return w.len;
}

static void test_expiry_key_encoding(void)
{
	uint8_t a[TTL_EXPIRY_KEY_MAX], b[TTL_EXPIRY_KEY_MAX], k[STORE_KEY_MAX], d[8];
	const uint8_t *key;
	size_t al, bl, kl = key_of(k, (const char *[]){ "z", NULL }, NULL), len;
	int64_t dl;

	/* big-endian: byte order is deadline order, whatever the key */
	ttl_deadline_encode(0x0102030405060708LL, d);
	CHECK_MEM(d, 8, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	al = ttl_expiry_key(255, k, kl, a);
	bl = ttl_expiry_key(256, (const uint8_t *)"\x02" "a\0", 3, b);
	CHECK_EQ_INT((int)al, 8 + (int)kl);
	CHECK(bl == 11 && memcmp(a, b, 8) < 0);
	CHECK(ttl_expiry_parse(a, al, &dl, &key, &len));
	CHECK(dl == 255);
	CHECK_MEM(key, len, k, kl);
	/* refused: no node key, a zero or negative deadline, wrong sizes */
	CHECK(!ttl_expiry_parse(a, 8, &dl, &key, &len));
	CHECK(!ttl_deadline_decode("\0\0\0\0\0\0\0\0", 8, &dl));
	CHECK(!ttl_deadline_decode("\x80\0\0\0\0\0\0\0", 8, &dl));
	CHECK(!ttl_deadline_decode("\0\0\0\0\0\0\1", 7, &dl));
	CHECK(ttl_deadline_decode(d, 8, &dl) && dl == 0x0102030405060708LL);
	/* seconds: 1 .. 100 years */
	CHECK_EQ_INT(model_ttl_deadline(0, 5, &dl), -EINVAL);
	CHECK_EQ_INT(model_ttl_deadline(TTL_SECONDS_MAX + 1, 5, &dl), -EINVAL);
	CHECK_EQ_INT(model_ttl_deadline(2, 5, &dl), 0);
	CHECK(dl == 2000000005LL);
}

static int put_keys(struct store_txn *txn, void *arg)
{
	static const char *const names[][3] = { { "a", NULL }, { "a", "x", NULL },
						  { "a\0b", NULL }, { "b", NULL } };
	static const size_t lens[][2] = { { 1 }, { 1, 1 }, { 3 }, { 1 } };
	uint8_t k[STORE_KEY_MAX];
	int ret = 0;

	(void)arg;
	for (int i = 0; i < 4 && ret == 0; i++) {
		size_t kl = key_of(k, names[i], lens[i]);

		ret = store_put(txn, STORE_SPACE_DATA, k, kl, "v", 1);
	}
	return ret;
}

static int count_data(struct store_txn *txn)
{
	struct store_scan *scan;
	struct store_val k, v;
	int n = 0;

	if (store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan) < 0)
		return -1;
	while (store_scan_next(scan, &k, &v) == 1)
		n++;
	store_scan_close(scan);
	return n;
}

/* A hidden node takes its tuple subtree along, never a sibling "a\0b". */
static void test_hide_subtree(void)
{
	struct model *m = open_fresh();
	struct store_txn *txn;
	struct store_val v;
	uint8_t a[STORE_KEY_MAX], ax[STORE_KEY_MAX], sib[STORE_KEY_MAX];
	size_t al = key_of(a, (const char *[]){ "a", NULL }, NULL);
	size_t axl = key_of(ax, (const char *[]){ "a", "x", NULL }, NULL);
	size_t sl = key_of(sib, (const char *[]){ "a\0b", NULL }, (const size_t[]){ 3 });

	CHECK(m != NULL);
	CHECK_EQ_INT(store_write(m->st, put_keys, NULL), 0);
	CHECK_EQ_INT(store_read_begin(m->st, &txn), 0);
	CHECK_EQ_INT(count_data(txn), 4);
	/* a descendant first, then its ancestor replaces it */
	CHECK_EQ_INT(store_txn_hide(txn, STORE_SPACE_DATA, ax, axl), 0);
	CHECK_EQ_INT(store_get(txn, STORE_SPACE_DATA, ax, axl, &v), -ENOENT);
	CHECK_EQ_INT(store_get(txn, STORE_SPACE_DATA, a, al, &v), 0);
	CHECK_EQ_INT(count_data(txn), 3);
	CHECK_EQ_INT(store_txn_hide(txn, STORE_SPACE_DATA, a, al), 0);
	CHECK_EQ_INT(store_get(txn, STORE_SPACE_DATA, a, al, &v), -ENOENT);
	CHECK_EQ_INT(store_get(txn, STORE_SPACE_DATA, sib, sl, &v), 0);
	CHECK_EQ_INT(count_data(txn), 2);
	/* other spaces have no hidden set */
	CHECK_EQ_INT(store_txn_hide(txn, STORE_SPACE_ATTR, a, al), -EINVAL);
	store_txn_end(txn);
	close_fresh(m);
}

static int count_space(struct model *m, enum store_space space)
{
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	int n = 0;

	if (store_read_begin(m->st, &txn) < 0)
		return -1;
	if (store_scan_open(txn, space, NULL, 0, &scan) == 0) {
		while (store_scan_next(scan, &k, &v) == 1)
			n++;
		store_scan_close(scan);
	}
	store_txn_end(txn);
	return n;
}

/* The deadline of the node at path (0: none). */
static int64_t deadline_of(struct model *m, const char *path)
{
	struct store_txn *txn;
	struct tree_path p;
	struct tree_node n;
	int64_t d = 0;

	if (store_read_begin(m->st, &txn) < 0)
		return -1;
	if (tree_find(txn, path, &p, &n, NULL) == 0 && ttl_get(txn, p.key, p.len, &d) < 0)
		d = 0;
	store_txn_end(txn);
	return d;
}

static void test_deadlines_follow_nodes(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	int64_t left, d;

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/a", "{\"b\":1,\"c\":{\"d\":2}}", 19, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_ttl_get(m, "/a", &left, &err), -ENODATA);
	CHECK_EQ_INT(model_ttl_set(m, "/a", 100, &err), 0);
	CHECK_EQ_INT(model_ttl_set(m, "/a/c/d", 50, &err), 0);
	CHECK_EQ_INT(model_ttl_get(m, "/a", &left, &err), 0);
	CHECK(left == 100);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_TTL), 2);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_EXPIRY), 2);
	CHECK_EQ_INT(model_ttl_set(m, "/", 5, &err), -EPERM);
	CHECK_EQ_INT(model_ttl_set(m, "/nope", 5, &err), -ENOENT);
	/* a write of a leaf clears its own deadline only */
	d = deadline_of(m, "/a");
	CHECK_EQ_INT(model_write(m, "/a/c/d", "3", 1, 0, 0, &err), 0);
	CHECK(deadline_of(m, "/a/c/d") == 0);
	CHECK(deadline_of(m, "/a") == d);
	/* a rename moves the deadlines of the subtree */
	CHECK_EQ_INT(model_ttl_set(m, "/a/c/d", 50, &err), 0);
	CHECK_EQ_INT(model_rename(m, "/a", "/z", 0, &err), 0);
	CHECK(deadline_of(m, "/z") == d);
	CHECK(deadline_of(m, "/z/c/d") > 0);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_TTL), 2);
	/* removing a node drops the deadlines in it */
	CHECK_EQ_INT(model_remove(m, "/z/c", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_TTL), 1);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_EXPIRY), 1);
	/* a document written over it clears them; clear drops the rest */
	CHECK_EQ_INT(model_import_ttl(m, "/z", "{\"q\":1}", 7, 7, 0, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_ttl_get(m, "/z", &left, &err), 0);
	CHECK(left == 7);
	CHECK_EQ_INT(model_ttl_clear(m, "/z", &err), 0);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_TTL), 0);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_EXPIRY), 0);
	close_fresh(m);
}

struct reap_arg {
	int64_t now;
	unsigned done;
};

static int reap_at(struct store_txn *txn, void *arg)
{
	struct reap_arg *r = arg;

	return ttl_reap_txn(txn, r->now, 0, 16, &r->done);
}

/* Hidden and reaped exactly at the deadline, in deadline order, with "now" given. */
static void test_hide_and_reap_at(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct store_txn *txn;
	struct tree_path p;
	struct tree_node n;
	struct reap_arg r = { 0 };
	int64_t da, db;

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/", "{\"a\":{\"x\":1},\"b\":2,\"c\":3}", 25, NULL, NULL,
				  &err), 0);
	CHECK_EQ_INT(model_ttl_set(m, "/a", 10, &err), 0);
	CHECK_EQ_INT(model_ttl_set(m, "/b", 20, &err), 0);
	da = deadline_of(m, "/a");
	db = deadline_of(m, "/b");
	CHECK(da > 0 && db > da);
	/* the effective deadline of /a/x is its parent's */
	CHECK_EQ_INT(store_read_begin(m->st, &txn), 0);
	CHECK_EQ_INT(tree_find(txn, "/a/x", &p, &n, NULL), 0);
	CHECK_EQ_INT(ttl_effective(txn, p.key, p.len, &r.now), 0);
	CHECK(r.now == da);
	/* just before: all there; at the deadline: /a and /a/x hidden, /b not */
	CHECK_EQ_INT(ttl_hide_expired(txn, da - 1), 0);
	CHECK_EQ_INT(tree_find(txn, "/a/x", &p, &n, NULL), 0);
	CHECK_EQ_INT(ttl_hide_expired(txn, da), 0);
	CHECK_EQ_INT(tree_find(txn, "/a/x", &p, &n, NULL), -ENOENT);
	CHECK_EQ_INT(tree_find(txn, "/a", &p, &n, NULL), -ENOENT);
	CHECK_EQ_INT(tree_find(txn, "/b", &p, &n, NULL), 0);
	store_txn_end(txn);
	/* the reaper takes what is due only */
	r.now = da;
	CHECK_EQ_INT(store_write(m->st, reap_at, &r), 0);
	CHECK_EQ_INT((int)r.done, 1);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_TTL), 1);
	CHECK_EQ_INT(model_ttl_get(m, "/a/x", &da, &err), -ENOENT);
	CHECK_EQ_INT(model_ttl_get(m, "/b", &da, &err), 0);
	r.now = db + 1;
	CHECK_EQ_INT(store_write(m->st, reap_at, &r), 0);
	CHECK_EQ_INT((int)r.done, 1);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_EXPIRY), 0);
	CHECK_EQ_INT(count_space(m, STORE_SPACE_DATA), 1);	/* /c */
	close_fresh(m);
}

/* A directory whose every child is hidden reads as an empty one; a hidden child is not listed. */
static void test_emptied_directory(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct store_txn *txn;
	struct tree_path p;
	struct tree_node n;
	struct store_scan *scan;
	struct tree_child c;
	int children = 0, ret;
	int64_t d;

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/", "{\"p\":{\"q\":1},\"r\":[5]}", 21, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_ttl_set(m, "/p/q", 10, &err), 0);
	CHECK_EQ_INT(model_ttl_set(m, "/r/0", 10, &err), 0);
	d = deadline_of(m, "/r/0");
	CHECK_EQ_INT(store_read_begin(m->st, &txn), 0);
	CHECK_EQ_INT(ttl_hide_expired(txn, d), 0);
	CHECK_EQ_INT(tree_find(txn, "/p/q", &p, &n, NULL), -ENOENT);
	CHECK_EQ_INT(tree_find(txn, "/p", &p, &n, NULL), 0);
	CHECK(n.exists && n.empty && n.kind == MODEL_KIND_OBJECT);
	CHECK_EQ_INT(tree_find(txn, "/r", &p, &n, NULL), 0);
	CHECK(n.exists && n.empty && n.kind == MODEL_KIND_ARRAY);
	/* the root lists both; /p lists nothing */
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan), 0);
	for (ret = tree_child_first(scan, (const uint8_t *)"", 0, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, 0, &c))
		children++;
	store_scan_close(scan);
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(children, 2);
	CHECK_EQ_INT(tree_find(txn, "/p", &p, &n, NULL), 0);
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, p.key, p.len, &scan), 0);
	CHECK_EQ_INT(tree_child_first(scan, p.key, p.len, NULL, 0, &c), 0);
	store_scan_close(scan);
	store_txn_end(txn);
	close_fresh(m);
}

int main(void)
{
	TEST(test_emptied_directory);
	TEST(test_expiry_key_encoding);
	TEST(test_hide_subtree);
	TEST(test_deadlines_follow_nodes);
	TEST(test_hide_and_reap_at);
	return UNIT_DONE();
}
