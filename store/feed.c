/*
 * store/feed.c - the change feed: gathering the node keys a write
 * transaction touches, the log entry that records them at its commit (its
 * encoding, collapsing and trimming), and reading the log from a position.
 * Backend-neutral: it reaches the log through the store's own space
 * operations on the private STORE_SPACE_FEED (docs/FORMAT.md, "changes").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

#define FEED_TRIM_BATCH 64	/* old entries deleted per scan while trimming */
#define FEED_TRIM_SLACK 16	/* the log may hold keep + keep / this before a trim */
#define FEED_STRING_CODE 0x02	/* a string element's first byte (store/tuple.h) */

/* ---- tuple boundaries ---- */

/*
 * Length of the longest prefix of key made of whole tuple elements; *prev
 * (may be NULL) gets the boundary before the last of them (0 for one).
 */
static size_t whole_elements(const uint8_t *key, size_t len, size_t *prev)
{
	struct tuple_reader r;
	struct tuple_elem e;
	size_t end = 0, before = 0;

	tuple_reader_init(&r, key, len);
	while (tuple_next(&r, &e) == 1) {
		before = end;
		end = r.pos;
	}
	if (prev)
		*prev = before;
	return end;
}

/*
 * The longest tuple prefix common (whole elements) of common[0..clen], which
 * is made of whole elements, and key. Encodings delimit themselves, so equal
 * bytes up to one of common's boundaries are equal elements.
 */
static size_t common_elements(const uint8_t *common, size_t clen, const uint8_t *key, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	size_t same = 0, best = 0, n = clen < len ? clen : len;

	while (same < n && common[same] == key[same])
		same++;
	tuple_reader_init(&r, common, clen);
	while (tuple_next(&r, &e) == 1 && r.pos <= same)
		best = r.pos;
	return best;
}

/* ---- gathering a transaction's keys ---- */

void feed_set_init(struct feed_set *s)
{
	memset(s, 0, sizeof(*s));
}

void feed_set_release(struct feed_set *s)
{
	free(s->buf);
	feed_set_init(s);
}

static bool space_names_nodes(enum store_space space)
{
	return space == STORE_SPACE_DATA || space == STORE_SPACE_ATTR ||
	       space == STORE_SPACE_SCHEMA;
}

/*
 * True when an item already stands for (kind, key): the same item, or a
 * subtree holding the key. A key that continues a subtree's bytes with
 * 0xff is a sibling whose name goes on after a NUL, not inside it.
 */
static bool set_covers(const struct feed_set *s, enum store_change_kind kind,
		       const uint8_t *key, size_t len)
{
	for (size_t at = 0; at + 3 <= s->used;) {
		enum store_change_kind k = s->buf[at];
		size_t l = get_be(s->buf + at + 1, 2);
		const uint8_t *ik = s->buf + at + 3;

		if (k == kind && l == len && memcmp(ik, key, len) == 0)
			return true;
		if (k == STORE_CHANGE_SUBTREE && l <= len && memcmp(ik, key, l) == 0 &&
		    (l == len || key[l] != 0xff))
			return true;
		at += 3 + l;
	}
	return false;
}

/* Too many items: from now on only their common prefix stands for them. */
static void set_collapse(struct feed_set *s)
{
	free(s->buf);
	s->buf = NULL;
	s->used = s->cap = 0;
	s->count = 0;
	s->collapsed = true;
	if (s->common_len == 0)
		s->all = true;
}

static void set_append(struct feed_set *s, enum store_change_kind kind, const uint8_t *key,
		       size_t len)
{
	size_t need = s->used + 3 + len;

	if (need > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		uint8_t *buf;

		while (cap < need)
			cap *= 2;
		buf = realloc(s->buf, cap);
		if (!buf) {
			s->all = true;	/* cannot say what changed: say everything */
			return;
		}
		s->buf = buf;
		s->cap = cap;
	}
	s->buf[s->used] = (uint8_t)kind;
	put_be(s->buf + s->used + 1, len, 2);
	memcpy(s->buf + s->used + 3, key, len);
	s->used = need;
	s->count++;
	if (s->count > FEED_ITEMS_MAX || s->used > FEED_BYTES_MAX)
		set_collapse(s);
}

void feed_set_note(struct feed_set *s, enum store_space space, const void *key, size_t len,
		   bool prefix)
{
	enum store_change_kind kind = prefix ? STORE_CHANGE_SUBTREE : STORE_CHANGE_KEY;
	size_t klen = len, prev, whole;

	if (space == STORE_SPACE_FEED)
		return;
	s->dirty = true;
	if (!space_names_nodes(space) || s->all || len > STORE_KEY_MAX)
		return;
	whole = whole_elements(key, len, &prev);
	if (prefix) {
		/*
		 * Every key starting with these bytes: the node of the whole
		 * elements, or, when the prefix ends on a boundary, its parent
		 * (the bytes also start siblings continuing the last name).
		 */
		klen = whole == len ? prev : whole;
		whole = klen;
		if (klen == 0) {
			s->all = true;
			return;
		}
	}
	if (!s->noted) {
		memcpy(s->common, key, whole);
		s->common_len = whole;
		s->noted = true;
	} else {
		s->common_len = common_elements(s->common, s->common_len, key, whole);
	}
	if (s->collapsed) {
		s->all = s->common_len == 0;
		return;
	}
	if (!set_covers(s, kind, key, klen))
		set_append(s, kind, key, klen);
}

void feed_set_note_removed(struct feed_set *s, enum store_space space, const void *key,
			   size_t len)
{
	uint8_t buf[STORE_KEY_MAX + 1];

	if (len == 0 || len >= STORE_KEY_MAX) {
		s->dirty = true;
		s->all = s->all || len == 0;	/* the root: everything */
		return;
	}
	/* noted as the prefix delete of its string children is: the node's subtree */
	memcpy(buf, key, len);
	buf[len] = FEED_STRING_CODE;
	feed_set_note(s, space, buf, len + 1, true);
}

/* ---- entries ---- */

/* Whether s holds a subtree item: each one, uncollapsed, is a removal. */
static bool set_has_subtree(const struct feed_set *s)
{
	for (size_t at = 0; at + 3 <= s->used; at += 3 + get_be(s->buf + at + 1, 2))
		if (s->buf[at] == STORE_CHANGE_SUBTREE)
			return true;
	return false;
}

int feed_entry_encode(const struct feed_set *s, uint64_t writer, uint8_t **out, size_t *out_len)
{
	bool all = s->all || (s->collapsed && s->common_len == 0);
	size_t body = all ? 0 : s->collapsed ? 3 + s->common_len : s->used;
	uint8_t *v = malloc(FEED_HEAD + body);

	if (!v)
		return -ENOMEM;
	v[0] = FEED_VERSION;
	/*
	 * The removed flag only on entries that need it: a kvfs from before
	 * refuses an entry with it (re-checking everything), so the rest
	 * stay readable to it.
	 */
	v[1] = all ? FEED_FLAG_ALL : !s->collapsed && set_has_subtree(s) ? FEED_FLAG_REMOVED : 0;
	put_be(v + 2, writer, 8);
	put_be(v + 10, all ? 0 : s->collapsed ? 1 : s->count, 2);
	if (!all && s->collapsed) {
		v[FEED_HEAD] = STORE_CHANGE_SUBTREE;
		put_be(v + FEED_HEAD + 1, s->common_len, 2);
		memcpy(v + FEED_HEAD + 3, s->common, s->common_len);
	} else if (!all && body) {
		memcpy(v + FEED_HEAD, s->buf, body);
	}
	*out = v;
	*out_len = FEED_HEAD + body;
	return 0;
}

int feed_entry_decode(const void *val, size_t len, struct feed_entry *out)
{
	const uint8_t *v = val;
	size_t at;

	memset(out, 0, sizeof(*out));
	if (len < FEED_HEAD || v[0] != FEED_VERSION ||
	    (v[1] & ~(FEED_FLAG_ALL | FEED_FLAG_REMOVED)))
		return -EINVAL;
	out->writer = get_be(v + 2, 8);
	out->all = v[1] & FEED_FLAG_ALL;
	out->removed = v[1] & FEED_FLAG_REMOVED;
	out->count = (unsigned)get_be(v + 10, 2);
	out->items = v + FEED_HEAD;
	out->items_len = len - FEED_HEAD;
	if (out->all && (out->count || out->items_len))
		return -EINVAL;
	/* every item must fit, and they must fill the value exactly */
	at = 0;
	for (unsigned i = 0; i < out->count; i++) {
		size_t l;

		if (at + 3 > out->items_len)
			return -EINVAL;
		if (out->items[at] != STORE_CHANGE_KEY && out->items[at] != STORE_CHANGE_SUBTREE)
			return -EINVAL;
		l = get_be(out->items + at + 1, 2);
		if (l > STORE_KEY_MAX || at + 3 + l > out->items_len)
			return -EINVAL;
		at += 3 + l;
	}
	return at == out->items_len ? 0 : -EINVAL;
}

int feed_entry_next(struct feed_entry *e, struct store_change *c)
{
	if (e->all) {
		if (e->seen++)
			return 0;
		c->kind = STORE_CHANGE_ALL;
		c->gone = false;
		c->key = NULL;
		c->len = 0;
		return 1;
	}
	if (e->seen >= e->count)
		return 0;
	c->kind = e->items[e->pos];
	/* a prefix delete or a node noted removed, told so by its writer */
	c->gone = c->kind == STORE_CHANGE_SUBTREE && e->removed;
	c->len = get_be(e->items + e->pos + 1, 2);
	c->key = e->items + e->pos + 3;
	e->pos += 3 + c->len;
	e->seen++;
	return 1;
}

/* ---- the log in the store ---- */

/*
 * Deletes the entries below position lo, a batch per scan (normally one),
 * but only once the oldest is slack or more below lo: deleting a few at a
 * time would rewrite the log's first page (and the pages above it) in
 * every commit, beside the last page its new entry goes to; this way one
 * commit in slack does. Reading the first entry dirties nothing.
 */
static int feed_trim(struct store_txn *txn, uint64_t lo, uint64_t slack)
{
	uint8_t old[FEED_TRIM_BATCH][FEED_KEY_LEN];
	struct store_val k, v;
	struct store_scan *scan;
	bool first = true;
	unsigned n;
	int ret;

	do {
		ret = store_scan_open(txn, STORE_SPACE_FEED, NULL, 0, &scan);
		if (ret < 0)
			return ret;
		n = 0;
		while (n < FEED_TRIM_BATCH && (ret = store_scan_next(scan, &k, &v)) == 1) {
			if (k.len != FEED_KEY_LEN)
				continue;	/* not ours: left for kvfs check to report */
			if (get_be(k.data, FEED_KEY_LEN) >= lo)
				break;
			if (first && get_be(k.data, FEED_KEY_LEN) + slack >= lo)
				break;	/* not yet slack behind: left for a later commit */
			first = false;
			memcpy(old[n++], k.data, FEED_KEY_LEN);
		}
		store_scan_close(scan);
		if (ret < 0)
			return ret;
		for (unsigned i = 0; i < n; i++) {
			ret = store_del(txn, STORE_SPACE_FEED, old[i], FEED_KEY_LEN);
			if (ret < 0)
				return ret;
		}
	} while (n == FEED_TRIM_BATCH);
	return 0;
}

int feed_txn_commit(struct store_txn *txn, const struct feed_set *s, uint64_t writer,
		    unsigned keep)
{
	uint64_t pos = store_txn_id(txn);
	uint8_t key[FEED_KEY_LEN];
	uint8_t *val;
	size_t len;
	int ret;

	if (!s->dirty)
		return 0;
	ret = feed_entry_encode(s, writer, &val, &len);
	if (ret < 0)
		return ret;
	put_be(key, pos, FEED_KEY_LEN);
	ret = store_put(txn, STORE_SPACE_FEED, key, FEED_KEY_LEN, val, len);
	free(val);
	if (ret == 0 && pos > keep)
		ret = feed_trim(txn, pos - keep + 1, keep / FEED_TRIM_SLACK);
	return ret;
}

/* Hands one entry's items to fn. */
static int feed_deliver(struct store *st, uint64_t pos, const struct store_val *v,
			store_feed_fn fn, void *arg)
{
	struct store_change c = { .pos = pos };
	struct feed_entry e;
	int ret;

	if (feed_entry_decode(v->data, v->len, &e) < 0)
		return -ESTALE;		/* unreadable: it cannot tell */
	c.mine = e.writer == store_writer_id(st);
	while (feed_entry_next(&e, &c) == 1) {
		ret = fn(arg, &c);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * Positions are consecutive (each commit takes the next), so the entries
 * after `after` must be exactly after+1 .. the snapshot's own position.
 */
int feed_log_read(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
		  uint64_t *upto)
{
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t from[FEED_KEY_LEN];
	uint64_t snap, want;
	int ret;

	ret = store_read_begin(st, &txn);
	if (ret < 0)
		return ret;
	snap = store_txn_id(txn);
	*upto = snap > after ? snap : after;
	if (snap <= after)
		goto out_end_txn;
	ret = store_scan_open(txn, STORE_SPACE_FEED, NULL, 0, &scan);
	if (ret < 0) {
		ret = ret == -ENOENT ? -ESTALE : ret;	/* no log in this store */
		goto out_end_txn;
	}
	want = after + 1;
	put_be(from, want, FEED_KEY_LEN);
	ret = store_scan_seek(scan, from, FEED_KEY_LEN);
	while (ret == 0 && want <= snap && (ret = store_scan_next(scan, &k, &v)) == 1) {
		if (k.len != FEED_KEY_LEN || get_be(k.data, FEED_KEY_LEN) != want)
			ret = -ESTALE;	/* trimmed, or a commit without an entry */
		else
			ret = feed_deliver(st, want++, &v, fn, arg);
	}
	if (ret == 0 && want != snap + 1)
		ret = -ESTALE;
	store_scan_close(scan);
out_end_txn:
	store_txn_end(txn);
	return ret;
}
