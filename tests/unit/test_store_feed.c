/*
 * tests/unit/test_store_feed.c - the change feed: which keys a transaction
 * notes (prefix deletes as subtrees, other spaces only dirty), which
 * subtrees read back removed (gone) and which collapsed, the entry
 * encoding and its strict decoding, collapsing past the bounds, and the
 * log in a real store: entries read from a position, this handle's marked
 * mine, trimming to KVFS_CHANGES_KEEP, and gaps reported as -ESTALE.
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/store_int.h"
#include "tests/unit/unit.h"

static char tmp_root[64];
static int dir_serial;

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

/* The tuple of the strings given (a NULL-terminated list); returns its length. */
static size_t key_of(uint8_t *buf, const char *first, ...)
{
	struct tuple_writer w;
	va_list ap;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *))
		tuple_put_string(&w, s, strlen(s));
	va_end(ap);
	return w.len;
}

/* The items of s, decoded after an encode: kinds and keys, in order. */
struct seen {
	unsigned n;
	enum store_change_kind kind[8];
	bool gone[8];
	uint8_t key[8][64];
	size_t len[8];
};

static int encode_decode(const struct feed_set *s, uint64_t writer, struct seen *out,
			 struct feed_entry *e)
{
	struct store_change c;
	uint8_t *v;
	size_t len;
	int ret = feed_entry_encode(s, writer, &v, &len);

	if (ret < 0)
		return ret;
	memset(out, 0, sizeof(*out));
	ret = feed_entry_decode(v, len, e);
	while (ret == 0 && feed_entry_next(e, &c) == 1 && out->n < 8) {
		out->kind[out->n] = c.kind;
		out->gone[out->n] = c.gone;
		out->len[out->n] = c.len;
		if (c.len && c.len <= sizeof(out->key[0]))
			memcpy(out->key[out->n], c.key, c.len);
		out->n++;
	}
	free(v);
	return ret;
}

static void test_notes_and_roundtrip(void)
{
	struct feed_set s;
	struct feed_entry e;
	struct seen got;
	uint8_t a[64], ab[64], pre[64];
	size_t la = key_of(a, "a", NULL), lab = key_of(ab, "a", "b", NULL);

	feed_set_init(&s);
	CHECK(!s.dirty);
	feed_set_note(&s, STORE_SPACE_INDEX, "x", 1, false);
	feed_set_note(&s, STORE_SPACE_META, "format", 6, false);
	CHECK(s.dirty);
	CHECK_EQ_INT(s.count, 0);
	feed_set_note(&s, STORE_SPACE_DATA, ab, lab, false);
	feed_set_note(&s, STORE_SPACE_ATTR, ab, lab, false);	/* same node: once */
	/* tree_delete's prefix: the key and a child's type code */
	memcpy(pre, a, la);
	pre[la] = 0x02;
	feed_set_note(&s, STORE_SPACE_DATA, pre, la + 1, true);
	feed_set_note(&s, STORE_SPACE_DATA, ab, lab, false);	/* inside ("a"): covered */
	CHECK_EQ_INT(s.count, 2);
	CHECK_EQ_INT(encode_decode(&s, 77, &got, &e), 0);
	CHECK_EQ_INT(e.writer, 77);
	CHECK(!e.all);
	CHECK_EQ_INT(got.n, 2);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_KEY);
	CHECK_MEM(got.key[0], got.len[0], ab, lab);
	CHECK_EQ_INT(got.kind[1], STORE_CHANGE_SUBTREE);
	CHECK_MEM(got.key[1], got.len[1], a, la);
	feed_set_release(&s);
}

/*
 * A subtree deleted, or a node noted removed (an empty container's marker),
 * reads back gone; keys, and many keys collapsed into one subtree, do not.
 */
static void test_gone(void)
{
	struct feed_set s;
	struct feed_entry e;
	struct seen got;
	uint8_t a[64], b[64], k[64], pre[64], name[16];
	size_t la = key_of(a, "a", NULL), lb = key_of(b, "b", NULL);

	feed_set_init(&s);
	memcpy(pre, a, la);
	pre[la] = 0x14;	/* tree_delete's prefix of an array's elements */
	feed_set_note(&s, STORE_SPACE_DATA, pre, la + 1, true);
	feed_set_note_removed(&s, STORE_SPACE_DATA, b, lb);
	feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "c", NULL), false);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK(e.removed);
	CHECK_EQ_INT(got.n, 3);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_SUBTREE);
	CHECK(got.gone[0]);
	CHECK_MEM(got.key[0], got.len[0], a, la);
	CHECK_EQ_INT(got.kind[1], STORE_CHANGE_SUBTREE);
	CHECK(got.gone[1]);
	CHECK_MEM(got.key[1], got.len[1], b, lb);
	CHECK_EQ_INT(got.kind[2], STORE_CHANGE_KEY);
	CHECK(!got.gone[2]);
	feed_set_release(&s);
	/* a move of many keys within "a": one subtree, collapsed, not gone */
	feed_set_init(&s);
	feed_set_note_removed(&s, STORE_SPACE_DATA, k, key_of(k, "a", "from", NULL));
	for (int i = 0; i < FEED_ITEMS_MAX + 1; i++) {
		snprintf((char *)name, sizeof(name), "n%d", i);
		feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "a", "to", (char *)name, NULL),
			      false);
	}
	CHECK(s.collapsed);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK(!e.removed);
	CHECK_EQ_INT(got.n, 1);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_SUBTREE);
	CHECK(!got.gone[0]);
	CHECK_MEM(got.key[0], got.len[0], a, la);
	feed_set_release(&s);
}

/*
 * An entry as a kvfs from before 2026-11-30 writes it (still version 1): a
 * subtree item, which stood for a prefix delete or for many keys collapsed
 * alike, in an entry without flags. That writer cannot have said which, so
 * it is not read as removed: a mount's pending files would be dropped for
 * another's `kvfs import` of 65 keys into their directory.
 */
static void test_old_entry_not_gone(void)
{
	uint8_t v[FEED_HEAD + 3 + 64] = { FEED_VERSION, 0 };
	struct feed_entry e;
	struct store_change c;
	size_t la = key_of(v + FEED_HEAD + 3, "a", NULL);

	put_be(v + 2, 7, 8);
	put_be(v + 10, 1, 2);
	v[FEED_HEAD] = STORE_CHANGE_SUBTREE;
	put_be(v + FEED_HEAD + 1, la, 2);
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 3 + la, &e), 0);
	CHECK_EQ_INT(feed_entry_next(&e, &c), 1);
	CHECK_EQ_INT(c.kind, STORE_CHANGE_SUBTREE);
	CHECK(!c.gone);
	CHECK_MEM(c.key, c.len, v + FEED_HEAD + 3, la);
}

/* A prefix ending on an element boundary also starts siblings ("a\0b"): its parent. */
static void test_prefix_on_boundary(void)
{
	struct feed_set s;
	struct feed_entry e;
	struct seen got;
	uint8_t ab[64], a[64];
	size_t lab = key_of(ab, "a", "b", NULL), la = key_of(a, "a", NULL);

	feed_set_init(&s);
	feed_set_note(&s, STORE_SPACE_DATA, ab, lab, true);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK_EQ_INT(got.n, 1);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_SUBTREE);
	CHECK_MEM(got.key[0], got.len[0], a, la);
	feed_set_release(&s);
	/* a top-level boundary: the root, so everything */
	feed_set_init(&s);
	feed_set_note(&s, STORE_SPACE_DATA, a, la, true);
	CHECK(s.all);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK(e.all);
	CHECK_EQ_INT(got.n, 1);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_ALL);
	feed_set_release(&s);
}

/* Past FEED_ITEMS_MAX the items collapse into their common tuple prefix, or all. */
static void test_collapse(void)
{
	struct feed_set s;
	struct feed_entry e;
	struct seen got;
	uint8_t k[64], big[64], name[16];
	size_t lbig = key_of(big, "big", NULL);

	feed_set_init(&s);
	for (int i = 0; i < FEED_ITEMS_MAX + 10; i++) {
		snprintf((char *)name, sizeof(name), "n%d", i);
		feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "big", (char *)name, "leaf", NULL),
			      false);
	}
	CHECK(s.collapsed);
	CHECK(!s.all);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK_EQ_INT(got.n, 1);
	CHECK_EQ_INT(got.kind[0], STORE_CHANGE_SUBTREE);
	CHECK_MEM(got.key[0], got.len[0], big, lbig);
	/* a key elsewhere: nothing in common */
	feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "bigger", NULL), false);
	CHECK(s.all);
	CHECK_EQ_INT(encode_decode(&s, 1, &got, &e), 0);
	CHECK(e.all);
	feed_set_release(&s);
	/* "bi" shares bytes, not an element, with "big": the root */
	feed_set_init(&s);
	for (int i = 0; i < FEED_ITEMS_MAX; i++) {
		snprintf((char *)name, sizeof(name), "n%d", i);
		feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "big", (char *)name, NULL), false);
	}
	feed_set_note(&s, STORE_SPACE_DATA, k, key_of(k, "bi", NULL), false);
	CHECK(s.all);
	feed_set_release(&s);
}

static void test_decode_strict(void)
{
	uint8_t v[64] = { FEED_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1,
			  STORE_CHANGE_KEY, 0, 2, 0x02, 0x00 };
	struct feed_entry e;
	struct store_change c;

	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 5, &e), 0);
	CHECK_EQ_INT(e.writer, 9);
	CHECK_EQ_INT(feed_entry_next(&e, &c), 1);
	CHECK_EQ_INT(c.len, 2);
	CHECK_EQ_INT(feed_entry_next(&e, &c), 0);
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 4, &e), -EINVAL);	/* short item */
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 6, &e), -EINVAL);	/* trailing byte */
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD - 1, &e), -EINVAL);	/* short head */
	v[FEED_HEAD] = 7;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 5, &e), -EINVAL);	/* unknown kind */
	v[FEED_HEAD] = STORE_CHANGE_KEY;
	v[0] = 2;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 5, &e), -EINVAL);	/* version */
	v[0] = FEED_VERSION;
	v[1] = FEED_FLAG_ALL;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD + 5, &e), -EINVAL);	/* all with items */
	v[11] = 0;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD, &e), 0);
	CHECK(e.all);
	v[1] = FEED_FLAG_REMOVED;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD, &e), 0);
	CHECK(e.removed);
	v[1] = 0x80;
	CHECK_EQ_INT(feed_entry_decode(v, FEED_HEAD, &e), -EINVAL);	/* unknown flag */
}

/* ---- the log in a store ---- */

struct kv {
	const uint8_t *key;
	size_t len;
};

static int put_fn(struct store_txn *txn, void *arg)
{
	struct kv *kv = arg;

	return store_put(txn, STORE_SPACE_DATA, kv->key, kv->len, "v", 1);
}

static int index_fn(struct store_txn *txn, void *arg)
{
	(void)arg;
	return store_put(txn, STORE_SPACE_INDEX, "\x15\x01", 2, "", 0);
}

struct got {
	unsigned n, mine;
	uint64_t last_pos;
	uint8_t key[64];
	size_t len;
};

static int collect(void *arg, const struct store_change *c)
{
	struct got *g = arg;

	g->n++;
	g->mine += c->mine;
	g->last_pos = c->pos;
	if (c->len && c->len <= sizeof(g->key)) {
		memcpy(g->key, c->key, c->len);
		g->len = c->len;
	}
	return 0;
}

static void test_log_in_store(void)
{
	char dir[128];
	struct store *st, *other;
	uint8_t k[64];
	struct kv kv = { k, key_of(k, "x", "y", NULL) };
	struct got g = { 0 };
	uint64_t start, upto;

	snprintf(dir, sizeof(dir), "%s/s%d", tmp_root, dir_serial++);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_CREATE, &st, NULL, 0), 0);
	start = store_position(st);
	CHECK_EQ_INT(store_feed_read(st, start, collect, &g, &upto), 0);
	CHECK_EQ_INT(upto, start);
	CHECK_EQ_INT(g.n, 0);
	CHECK_EQ_INT(store_write(st, put_fn, &kv), 0);
	CHECK_EQ_INT(store_write(st, index_fn, NULL), 0);	/* an entry without items */
	CHECK_EQ_INT(store_position(st), start + 2);
	CHECK_EQ_INT(store_feed_read(st, start, collect, &g, &upto), 0);
	CHECK_EQ_INT(upto, start + 2);
	CHECK_EQ_INT(g.n, 1);
	CHECK_EQ_INT(g.mine, 1);
	CHECK_EQ_INT(g.last_pos, start + 1);
	CHECK_MEM(g.key, g.len, k, kv.len);
	/* another handle on the same store: not its own */
	CHECK_EQ_INT(store_open(dir, 0, &other, NULL, 0), 0);
	memset(&g, 0, sizeof(g));
	CHECK_EQ_INT(store_feed_read(other, start, collect, &g, &upto), 0);
	CHECK_EQ_INT(g.n, 1);
	CHECK_EQ_INT(g.mine, 0);
	/* before the store's first entry: the creation commit has none */
	CHECK_EQ_INT(store_feed_read(other, start - 1, collect, &g, &upto), -ESTALE);
	CHECK_EQ_INT(upto, start + 2);
	store_close(other);
	store_close(st);
}

static void test_trim(void)
{
	char dir[128];
	struct store *st;
	uint8_t k[64];
	struct kv kv = { k, key_of(k, "x", NULL) };
	struct got g = { 0 };
	uint64_t start, upto;

	snprintf(dir, sizeof(dir), "%s/s%d", tmp_root, dir_serial++);
	setenv("KVFS_CHANGES_KEEP", "3", 1);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_CREATE, &st, NULL, 0), 0);
	unsetenv("KVFS_CHANGES_KEEP");
	start = store_position(st);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(store_write(st, put_fn, &kv), 0);
	/* the last three are kept: reading from before them is a gap */
	CHECK_EQ_INT(store_feed_read(st, start + 7, collect, &g, &upto), 0);
	CHECK_EQ_INT(g.n, 3);
	CHECK_EQ_INT(upto, start + 10);
	CHECK_EQ_INT(store_feed_read(st, start + 6, collect, &g, &upto), -ESTALE);
	store_close(st);
	/* a read-only open sees the same log */
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_READONLY, &st, NULL, 0), 0);
	memset(&g, 0, sizeof(g));
	CHECK_EQ_INT(store_feed_read(st, start + 8, collect, &g, &upto), 0);
	CHECK_EQ_INT(g.n, 2);
	store_close(st);
}

/* The oldest position store_feed_read still gives without a gap, after start. */
static uint64_t oldest_kept(struct store *st, uint64_t start)
{
	struct got g = { 0 };
	uint64_t upto, after = start;

	while (store_feed_read(st, after, collect, &g, &upto) == -ESTALE)
		after++;
	return after + 1;
}

/*
 * With a long log the trim waits until keep / 16 entries are over, then
 * deletes them in one commit: the commits between touch only the log's
 * last page, not its first one too.
 */
static void test_trim_in_batches(void)
{
	char dir[128];
	struct store *st;
	uint8_t k[64];
	struct kv kv = { k, key_of(k, "x", NULL) };
	uint64_t start, oldest, prev = 0;
	int moves = 0, past = 0;

	snprintf(dir, sizeof(dir), "%s/s%d", tmp_root, dir_serial++);
	setenv("KVFS_CHANGES_KEEP", "64", 1);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_CREATE, &st, NULL, 0), 0);
	unsetenv("KVFS_CHANGES_KEEP");
	start = store_position(st);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ_INT(store_write(st, put_fn, &kv), 0);
		oldest = oldest_kept(st, start);
		/* between keep and keep + keep / 16 entries, never fewer */
		CHECK(store_position(st) - oldest + 1 <= 64 + 4);
		if (store_position(st) - start > 64) {
			CHECK(store_position(st) - oldest + 1 >= 64);
			past++;
		}
		moves += prev && oldest != prev;
		prev = oldest;
	}
	/* one trim in five commits at most (was: every commit past keep) */
	CHECK(past > 30);
	CHECK(moves <= past / 5 + 1);
	store_close(st);
}

int main(void)
{
	int rc;

	snprintf(tmp_root, sizeof(tmp_root), "/tmp/kvfs-feed-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_notes_and_roundtrip);
	TEST(test_prefix_on_boundary);
	TEST(test_gone);
	TEST(test_old_entry_not_gone);
	TEST(test_collapse);
	TEST(test_decode_strict);
	TEST(test_log_in_store);
	TEST(test_trim);
	TEST(test_trim_in_batches);
	rc = UNIT_DONE();
	nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
