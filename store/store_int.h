/*
 * store/store_int.h - private to store/: the change feed's pieces that a
 * backend calls (store/feed.c owns them), and small helpers of store.c. A write transaction gathers the
 * keys it touched in a struct feed_set; at commit the set becomes one log
 * entry in the private `changes` space. Nothing outside store/ includes it
 * (tests/unit/test_store_feed.c does, to test the encoding).
 */
#ifndef KVFS_STORE_INT_H
#define KVFS_STORE_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/store.h"

/* The log's space: private to store/, after the public ones (never dumped). */
#define STORE_SPACE_FEED ((enum store_space)STORE_SPACE_COUNT)
#define STORE_SPACES_ALL (STORE_SPACE_COUNT + 1)

#define FEED_ITEMS_MAX 64	/* an entry names at most this many keys ... */
#define FEED_BYTES_MAX 4096	/* ... of at most this many bytes; else it collapses */
#define FEED_KEEP_DEFAULT 1024	/* entries kept (KVFS_CHANGES_KEEP for tests) */
#define FEED_KEY_LEN 8		/* an entry's key: its position, 8 bytes big-endian */

/* n-byte big-endian numbers (the meta values, the feed's positions). */
static inline void put_be(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static inline uint64_t get_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/* Entry layout (docs/FORMAT.md, "changes"). */
#define FEED_VERSION 1
#define FEED_FLAG_ALL 0x01	/* everything may have changed: no items */
#define FEED_FLAG_REMOVED 0x02	/* its subtree items are subtrees removed; without
				 * it (collapsed, or a writer from before
				 * 2026-11-30) they say only that keys changed */
#define FEED_HEAD 12		/* version, flags, writer (8), item count (2) */

/*
 * The keys one write transaction touched. dirty: anything at all was
 * written (a commit then needs an entry, maybe without items). Items are
 * kept encoded as in an entry, deduplicated; past the bounds only their
 * common tuple prefix is kept (collapsed), and an empty one means all.
 */
struct feed_set {
	bool dirty;
	bool noted;		/* some item was noted: common is set */
	bool all;		/* everything (collapsed to nothing in common, or no memory) */
	bool collapsed;		/* too many items: only `common` stands for them */
	unsigned count;
	uint8_t *buf;		/* heap: the items, encoded */
	size_t used, cap;
	size_t common_len;	/* the tuple prefix every item noted so far shares */
	uint8_t common[STORE_KEY_MAX];
};

void feed_set_init(struct feed_set *s);
void feed_set_release(struct feed_set *s);
/*
 * Notes that key[0..len] of space changed; prefix: every key starting with
 * those bytes (a prefix delete). Spaces whose keys name no node (META,
 * INDEX, the log itself) only make the set dirty.
 */
void feed_set_note(struct feed_set *s, enum store_space space, const void *key, size_t len,
		   bool prefix);
/* store_note_removed into s: the node at key[0..len] (whole elements) and its subtree. */
void feed_set_note_removed(struct feed_set *s, enum store_space space, const void *key,
			   size_t len);

/*
 * The entry for s, committed by writer: *out is heap (free()). 0 or
 * -ENOMEM.
 */
int feed_entry_encode(const struct feed_set *s, uint64_t writer, uint8_t **out, size_t *out_len);

/* Walks an entry's items. */
struct feed_entry {
	uint64_t writer;
	bool all;
	bool removed;		/* FEED_FLAG_REMOVED */
	unsigned count;
	const uint8_t *items;	/* borrowed from the value */
	size_t items_len;
	size_t pos;		/* next item */
	unsigned seen;
};

/* 0, or -EINVAL when val is no valid entry (every length is checked). */
int feed_entry_decode(const void *val, size_t len, struct feed_entry *out);
/* 1 with the next item (c->pos and c->mine left alone), 0 at the end. */
int feed_entry_next(struct feed_entry *e, struct store_change *c);

/*
 * Inside a write transaction about to commit: puts the entry for s under
 * the transaction's position and deletes entries older than the last
 * `keep`. Nothing when s is not dirty.
 */
int feed_txn_commit(struct store_txn *txn, const struct feed_set *s, uint64_t writer,
		    unsigned keep);

/* What store.c tells feed.c about a handle. */
uint64_t store_writer_id(const struct store *st);

/*
 * store_feed_read for a backend that keeps the log in STORE_SPACE_FEED
 * (calling feed_txn_commit in its commits): reads it through the store's
 * own space operations.
 */
int feed_log_read(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
		  uint64_t *upto);

/* ---- store/hidden.c: subtrees hidden from a read transaction ---- */

struct hidden;
/* The hidden key covering key (itself or a tuple ancestor), or NULL; borrowed. */
const struct store_val *store_hidden_covering(struct store_txn *txn, enum store_space space,
					      const void *key, size_t len);
void store_hidden_free(struct hidden *h);

/*
 * The order both engines keep keys in: bytes (memcmp), then the shorter
 * first. Inline: the etcd client's unit test builds etcd_buf.c alone.
 */
static inline int store_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
	size_t n = a_len < b_len ? a_len : b_len;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : (a_len > b_len) - (a_len < b_len);
}

/* Wall-clock nanoseconds (the meta "created" stamp). */
int64_t store_now_ns(void);
/* CLOCK_MONOTONIC nanoseconds, for ages and intervals. */
int64_t store_mono_ns(void);

/* Whether the handle's interrupt flag (store_set_interrupt) is raised. */
bool store_interrupted(const struct store *st);

/* -ENAMETOOLONG for a key longer than a store takes, else 0. */
static inline int store_key_check(size_t key_len)
{
	return key_len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
}

#endif
