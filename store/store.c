/*
 * store/store.c - store.h's public functions for every backend: choosing
 * the backend by the store's name, the argument checks, hidden subtrees,
 * distinct-children listing, format bookkeeping and the owner pointer, and
 * dispatch through the backend's struct store_ops (store/store_ops.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"
#include "store/store_ops.h"

/* ---- choosing a backend ---- */

/*
 * The URL schemes kvfs knows. A backend not built into this kvfs has no
 * table: its names are refused with a message rather than taken for a
 * directory (which store_open would otherwise create).
 */
static const struct {
	const char *scheme;	/* with "://" */
	const struct store_ops *ops;	/* NULL: not built in */
} url_backends[] = {
#ifdef KVFS_ETCD
	{ "etcd://", &store_etcd_ops },
#else
	{ "etcd://", NULL },
#endif
};

/* Every backend built in, for the questions no handle is at hand for (store_in_engine). */
static const struct store_ops *const built_in[] = {
	&store_lmdb_ops,
#ifdef KVFS_ETCD
	&store_etcd_ops,
#endif
};

void store_say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/* A scheme is a letter, then letters, digits, '+', '-', '.' (RFC 3986), then "://". */
bool store_name_is_url(const char *name)
{
	size_t n = 0;

	if (!name || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
		return false;
	while (name[n] && (strchr("+-.", name[n]) || (name[n] >= '0' && name[n] <= '9') ||
			   (name[n] >= 'a' && name[n] <= 'z') || (name[n] >= 'A' && name[n] <= 'Z')))
		n++;
	return strncmp(name + n, "://", 3) == 0;
}

char *store_name_shown(const char *name)
{
	const char *query = store_name_is_url(name) ? strchr(name, '?') : NULL;

	return query ? strndup(name, (size_t)(query - name)) : strdup(name);
}

const struct store_ops *store_ops_for(const char *name, char *why, size_t why_len)
{
	size_t i, n;

	if (!name || !*name) {
		store_say(why, why_len, "no store named (a directory or etcd://HOST:PORT/PREFIX)");
		return NULL;
	}
	if (!store_name_is_url(name))
		return &store_lmdb_ops;
	for (i = 0; i < sizeof(url_backends) / sizeof(url_backends[0]); i++) {
		n = strlen(url_backends[i].scheme);
		if (strncmp(name, url_backends[i].scheme, n) != 0)
			continue;
		if (!url_backends[i].ops)
			store_say(why, why_len, "%s: the %.*s backend is not built into this kvfs",
				  name, (int)(n - 3), url_backends[i].scheme);
		return url_backends[i].ops;
	}
	store_say(why, why_len, "%s: unknown kind of store (a store is a directory or "
		  "etcd://HOST:PORT[,HOST:PORT...]/PREFIX)", name);
	return NULL;
}

bool store_can(const struct store *st, unsigned abilities)
{
	return (st->ops->abilities & abilities) == abilities;
}

bool store_txn_can(const struct store_txn *txn, unsigned abilities)
{
	return store_can(txn->st, abilities);
}

int store_txn_expire_puts(struct store_txn *txn, store_expiry_fn fn, void *arg)
{
	if (!txn->write)
		return -EROFS;
	if (!store_can(txn->st, STORE_CAN_EXPIRE) || !txn->st->ops->ability.expire_puts)
		return 0;
	return txn->st->ops->ability.expire_puts(txn, fn, arg);
}

/* Async-signal-safe: reads static tables and asks each backend's own. */
bool store_in_engine(void)
{
	for (size_t i = 0; i < sizeof(built_in) / sizeof(built_in[0]); i++)
		if (built_in[i]->admin.in_engine && built_in[i]->admin.in_engine())
			return true;
	return false;
}

const char *store_backend(const struct store *st)
{
	return st->ops->name;
}

const char *store_name(const struct store *st)
{
	return st->name;
}

/* ---- opening ---- */

/* KVFS_CHANGES_KEEP: change log entries kept (tests make it small). */
static unsigned feed_keep(void)
{
	const char *s = getenv("KVFS_CHANGES_KEEP");
	unsigned long v;
	char *end;

	if (!s || !*s)
		return FEED_KEEP_DEFAULT;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 1000000)
		return FEED_KEEP_DEFAULT;
	return (unsigned)v;
}

int64_t store_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Tells this handle's log entries from other writers'; unique enough at random. */
static uint64_t writer_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
		id = (uint64_t)store_now_ns() ^ ((uint64_t)getpid() << 32);
	return id;
}

static void store_free(struct store *st)
{
	free(st->name);
	free(st);
}

int store_open(const char *name, unsigned flags, struct store **out, char *why, size_t why_len)
{
	const struct store_ops *ops;
	struct store *st;
	int rc;

	*out = NULL;
	ops = store_ops_for(name, why, why_len);
	if (!ops)
		return name && *name ? -EPROTONOSUPPORT : -EINVAL;
	st = calloc(1, ops->store_size);
	if (!st || !(st->name = strdup(name))) {
		free(st);
		store_say(why, why_len, "out of memory");
		return -ENOMEM;
	}
	st->ops = ops;
	st->flags = flags;
	st->readonly = flags & STORE_OPEN_READONLY;
	st->writer = writer_id();
	st->feed_keep = feed_keep();
	rc = ops->core.open(st, name, flags, why, why_len);
	if (rc) {
		store_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	st->ops->core.close(st, false);
	store_free(st);
}

void store_close_discard(struct store *st)
{
	if (!st)
		return;
	st->ops->core.close(st, true);
	store_free(st);
}

/* ---- the handle ---- */

int store_info(struct store *st, struct store_info *out)
{
	return st->ops->core.info(st, out);
}

int64_t store_created_ns(const struct store *st)
{
	return st->created_ns;
}

void store_set_container_test(struct store *st, store_container_test_fn fn)
{
	st->container_test = fn;
}

void store_set_interrupt(struct store *st, const volatile sig_atomic_t *flag)
{
	st->interrupt = flag;
}

static bool interrupted(const struct store *st)
{
	return st->interrupt && *st->interrupt;
}

int store_room(struct store *st, struct store_room *out)
{
	memset(out, 0, sizeof(*out));
	return st->ops->admin.room ? st->ops->admin.room(st, out) : -ENOTSUP;
}

int store_usage(struct store *st, struct store_usage *out)
{
	if (!store_can(st, STORE_CAN_USAGE) || !st->ops->admin.usage) {
		memset(out, 0, sizeof(*out));
		return -ENOTSUP;
	}
	return st->ops->admin.usage(st, out);
}

int store_readers_check(struct store *st, unsigned *cleared)
{
	if (!store_can(st, STORE_CAN_USAGE) || !st->ops->admin.readers_check) {
		if (cleared)
			*cleared = 0;
		return 0;	/* no reader table: nothing can be stale */
	}
	return st->ops->admin.readers_check(st, cleared);
}

int store_sync(struct store *st)
{
	if (st->readonly || !store_can(st, STORE_CAN_SYNC) || !st->ops->ability.sync)
		return 0;	/* nothing of ours to flush, or every commit is durable */
	return st->ops->ability.sync(st);
}

void store_end_calls(struct store *st, unsigned ms)
{
	if (st->ops->ability.end_calls)
		st->ops->ability.end_calls(st, ms);
}

int store_copy(struct store *st, const char *dir)
{
	if (!store_can(st, STORE_CAN_HOT_COPY) || !st->ops->admin.copy)
		return -ENOTSUP;
	return st->ops->admin.copy(st, dir);
}

uint64_t store_position(struct store *st)
{
	return st->ops->core.position(st);
}

uint64_t store_version(struct store *st)
{
	const struct store_ops *ops = st->ops;

	return ops->ability.read_version ? ops->ability.read_version(st) : ops->core.position(st);
}

uint64_t store_keys_read(struct store *st)
{
	return atomic_load_explicit(&st->keys_read, memory_order_relaxed);
}

int store_queue_start(struct store *st, unsigned ms, enum store_queue_mode mode)
{
	if (st->readonly)
		return -EROFS;
	return st->ops->ability.queue_start ? st->ops->ability.queue_start(st, ms, mode) : -ENOTSUP;
}

bool store_changed_elsewhere(struct store *st)
{
	return st->ops->core.changed_elsewhere(st);
}

uint64_t store_writer_id(const struct store *st)
{
	return st->writer;
}

int store_feed_read(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
		    uint64_t *upto)
{
	if (st->ops->ability.feed_read)
		return st->ops->ability.feed_read(st, after, fn, arg, upto);
	if (store_can(st, STORE_CAN_FEED))
		return feed_log_read(st, after, fn, arg, upto);
	*upto = store_position(st);
	return -ESTALE;		/* no feed: it cannot tell */
}

/* ---- transactions ---- */

/*
 * The format a transaction about to begin may assume without looking: only
 * the current one, and only read before the transaction begins, since a
 * snapshot begun after another that showed the upgrade is never older.
 */
static unsigned snapshot_format(struct store *st)
{
	unsigned f = atomic_load(&st->format);

	return f == STORE_FORMAT_VERSION ? f : 0;
}

void store_txn_init_write(struct store_txn *txn, struct store *st, struct feed_set *feed)
{
	memset(txn, 0, sizeof(*txn));
	txn->st = st;
	txn->write = true;
	txn->feed = feed;
	txn->format = snapshot_format(st);
}

int store_read_begin(struct store *st, struct store_txn **out)
{
	struct store_txn *t = calloc(1, st->ops->txn_size);
	int rc;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->st = st;
	t->format = snapshot_format(st);
	rc = st->ops->core.read_begin(st, t);
	if (rc) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* Ends a read transaction. Write transactions belong to store_write: no-op. */
void store_txn_end(struct store_txn *txn)
{
	if (!txn || txn->write)
		return;
	txn->st->ops->core.read_end(txn);
	store_hidden_free(txn->hidden[0]);
	store_hidden_free(txn->hidden[1]);
	free(txn);
}

uint64_t store_txn_id(const struct store_txn *txn)
{
	return txn->st->ops->core.txn_id(txn);
}

void store_txn_set_owner(struct store_txn *txn, void *owner)
{
	txn->owner = owner;
}

void *store_txn_owner(const struct store_txn *txn)
{
	return txn->owner;
}

/* A write whose store watches an interrupt flag: raised by the time fn is done, it aborts. */
struct write_watch {
	store_write_fn fn;
	void *arg;
};

static int write_watched(struct store_txn *txn, void *arg)
{
	struct write_watch *w = arg;
	int ret = interrupted(txn->st) ? -EINTR : w->fn(txn, w->arg);

	return ret == 0 && interrupted(txn->st) ? -EINTR : ret;
}

int store_write(struct store *st, store_write_fn fn, void *arg)
{
	struct write_watch w = { fn, arg };

	if (st->readonly)
		return -EROFS;
	if (st->interrupt)
		return st->ops->core.write(st, write_watched, &w);
	return st->ops->core.write(st, fn, arg);
}

int store_write_later(struct store *st, store_write_fn fn, void *arg)
{
	struct write_watch w = { fn, arg };

	if (st->readonly)
		return -EROFS;
	if (!st->ops->ability.write_later)
		return store_write(st, fn, arg);
	if (st->interrupt)
		return st->ops->ability.write_later(st, write_watched, &w);
	return st->ops->ability.write_later(st, fn, arg);
}

/* ---- the format ---- */

#define META_FORMAT "format"
#define META_FORMAT_LEN 6

unsigned store_format(struct store *st)
{
	return atomic_load(&st->format);
}

unsigned store_txn_format(struct store_txn *txn)
{
	struct store_val v;

	if (txn->format)
		return txn->format;
	if (txn->st->ops->core.get(txn, STORE_SPACE_META, META_FORMAT, META_FORMAT_LEN, &v) != 0 ||
	    v.len != 4)
		return 0;
	txn->format = (unsigned)get_be(v.data, 4);
	if (txn->format == STORE_FORMAT_VERSION)
		atomic_store(&txn->st->format, txn->format);
	return txn->format;
}

/* Not noted in the change log: the meta space names no node. */
int store_set_format(struct store_txn *txn, unsigned version)
{
	uint8_t buf[4];
	int rc;

	if (!txn->write)
		return -EROFS;
	put_be(buf, version, 4);
	rc = txn->st->ops->core.put(txn, STORE_SPACE_META, META_FORMAT, META_FORMAT_LEN, buf, 4);
	if (rc)
		return rc;
	txn->format = version;
	return 0;
}

/* ---- point operations ---- */

static int check_key(size_t key_len)
{
	return key_len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
}

int store_get(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, struct store_val *out)
{
	int rc;

	if (key_len == 0)
		return -ENOENT;	/* the root has no key */
	if ((rc = check_key(key_len)))
		return rc;
	if (store_hidden_covering(txn, space, key, key_len))
		return -ENOENT;
	atomic_fetch_add_explicit(&txn->st->keys_read, 1, memory_order_relaxed);
	return txn->st->ops->core.get(txn, space, key, key_len, out);
}

/* The checks every put makes before the backend sees it. */
static int put_check(const struct store_txn *txn, size_t key_len)
{
	if (!txn->write)
		return -EROFS;
	if (key_len == 0)
		return -EINVAL;
	return check_key(key_len);
}

int store_put(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, const void *val, size_t val_len)
{
	int rc = put_check(txn, key_len);

	if (rc == 0)
		rc = txn->st->ops->core.put(txn, space, key, key_len, val, val_len);
	if (rc == 0 && txn->feed)
		feed_set_note(txn->feed, space, key, key_len, false);
	return rc;
}

void store_txn_trim(struct store_txn *txn)
{
	if (txn->write && txn->st->ops->hint.trim)
		txn->st->ops->hint.trim(txn);
}

int store_reserve(struct store *st, uint64_t bytes)
{
	if (st->readonly)
		return -EROFS;
	return st->ops->hint.reserve ? st->ops->hint.reserve(st, bytes) : 0;
}

int store_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
		      size_t key_len, size_t val_len, void **out)
{
	int rc = put_check(txn, key_len);

	*out = NULL;
	if (rc == 0)
		rc = txn->st->ops->core.put_reserve(txn, space, key, key_len, val_len, out);
	if (rc == 0 && txn->feed)
		feed_set_note(txn->feed, space, key, key_len, false);
	if (rc)
		*out = NULL;
	return rc;
}

int store_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len)
{
	int rc;

	if (!txn->write)
		return -EROFS;
	if (key_len == 0)
		return -ENOENT;
	if ((rc = check_key(key_len)))
		return rc;
	rc = txn->st->ops->core.del(txn, space, key, key_len);
	if (rc == 0 && txn->feed)
		feed_set_note(txn->feed, space, key, key_len, false);
	return rc;
}

int store_del_prefix(struct store_txn *txn, enum store_space space,
		     const void *prefix, size_t prefix_len, uint64_t *deleted)
{
	uint64_t n = 0;
	int rc;

	if (deleted)
		*deleted = 0;
	if (!txn->write)
		return -EROFS;
	if (prefix_len > STORE_KEY_MAX)
		return 0;	/* no key is that long, so none starts with it */
	rc = txn->st->ops->core.del_prefix(txn, space, prefix, prefix_len, &n);
	if (n && txn->feed)
		feed_set_note(txn->feed, space, prefix, prefix_len, true);
	if (deleted)
		*deleted = n;
	return rc;
}

bool store_space_is_empty(struct store_txn *txn, enum store_space space)
{
	const struct store_ops *ops = txn->st->ops;
	struct store_scan *scan;
	struct store_val k, v;
	int rc;

	if (ops->hint.space_is_empty)
		return ops->hint.space_is_empty(txn, space);
	/* Hidden keys still count: an expired node is not yet gone. */
	scan = calloc(1, ops->scan_size);
	if (!scan)
		return false;
	scan->txn = txn;
	scan->space = space;
	rc = ops->core.scan_open(scan);
	if (rc) {
		free(scan);
		return rc == -ENOENT;	/* an absent space is empty */
	}
	rc = ops->core.scan_next(scan, &k, &v);
	ops->core.scan_close(scan);
	free(scan);
	return rc == 0;
}

/* ---- scans ---- */

int store_scan_open(struct store_txn *txn, enum store_space space,
		    const void *prefix, size_t prefix_len, struct store_scan **out)
{
	const struct store_ops *ops = txn->st->ops;
	struct store_scan *s;
	int rc;

	*out = NULL;
	if ((rc = check_key(prefix_len)))
		return rc;
	s = calloc(1, ops->scan_size);
	if (!s)
		return -ENOMEM;
	s->txn = txn;
	s->space = space;
	if (prefix_len)
		memcpy(s->prefix, prefix, prefix_len);
	s->prefix_len = prefix_len;
	rc = ops->core.scan_open(s);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_scan_close(struct store_scan *scan)
{
	if (!scan)
		return;
	atomic_fetch_add_explicit(&scan->txn->st->keys_read, scan->keys, memory_order_relaxed);
	scan->txn->st->ops->core.scan_close(scan);
	free(scan);
}

void store_scan_expect_children(struct store_scan *scan)
{
	if (scan->txn->st->ops->hint.scan_expect_children)
		scan->txn->st->ops->hint.scan_expect_children(scan);
}

int store_scan_child_subdirs(struct store_scan *scan, const void *child, size_t len,
			     uint32_t *count)
{
	struct store_val hidden;
	int ret;

	*count = 0;
	if (!scan->txn->st->ops->hint.scan_child_subdirs)
		return 0;
	/*
	 * Keys under it this transaction hides (past their TTL, not deleted by
	 * the backend yet) still count there: a stat counts what model/ shows.
	 */
	ret = store_txn_hidden_from(scan->txn, STORE_SPACE_DATA, child, len, &hidden);
	if (ret < 0)
		return ret;
	if (ret == 1 && hidden.len > len && memcmp(hidden.data, child, len) == 0)
		return 0;
	return scan->txn->st->ops->hint.scan_child_subdirs(scan, child, len, count);
}

int store_txn_prefetch(struct store_txn *txn, enum store_space space, const void *prefix,
		       size_t prefix_len)
{
	if (!txn->st->ops->hint.prefetch || txn->write)
		return 0;
	if (prefix_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	return txn->st->ops->hint.prefetch(txn, space, prefix, prefix_len);
}

void store_txn_expect_reads(struct store_txn *txn, enum store_space space, const void *prefix,
			    size_t prefix_len)
{
	if (txn->st->ops->hint.expect_reads && !txn->write && prefix_len <= STORE_KEY_MAX)
		txn->st->ops->hint.expect_reads(txn, space, prefix, prefix_len);
}

int store_txn_check(struct store_txn *txn, store_check_fn fn, void *arg)
{
	if (!txn->st->ops->admin.check || txn->write)
		return 0;
	return txn->st->ops->admin.check(txn, fn, arg);
}

int store_txn_repair(struct store_txn *txn)
{
	if (!txn->st->ops->admin.repair || !txn->write)
		return 0;
	return txn->st->ops->admin.repair(txn);
}

uint64_t store_scan_steps(const struct store_scan *scan)
{
	return scan->steps;
}

const char *store_scan_damage(const struct store_scan *scan)
{
	return scan->damage;
}

/*
 * Forward progress. A backend's step hands out key: it must sort after the
 * key handed out before it, or, when a seek came in between, at or after
 * the seek's target. On a sound store both hold by definition; a damaged
 * page (a flipped bit in a key LMDB compares against) breaks them, and a
 * caller that trusted the answer would hide keys or, seeking past what it
 * was given and landing before it again, loop. So the scan stops for good.
 * Costs a compare and a copy of the key per step.
 */
static int scan_progress(struct store_scan *scan, const struct store_val *key)
{
	if (scan->seeking) {
		if (store_key_cmp(key->data, key->len, scan->target, scan->target_len) < 0)
			scan->damage = "a seek landed before its target (keys out of order)";
	} else if (scan->have_last &&
		   store_key_cmp(key->data, key->len, scan->last, scan->last_len) <= 0) {
		scan->damage = "a step did not move past the key before it (keys out of order)";
	}
	if (scan->damage)
		return -EIO;
	memcpy(scan->last, key->data, key->len);
	scan->last_len = key->len;
	scan->have_last = true;
	scan->seeking = false;
	return 1;
}

/* Every backend seek goes through here: the next key is checked against key. */
static int scan_seek_to(struct store_scan *scan, const void *key, size_t key_len)
{
	memcpy(scan->target, key, key_len);
	scan->target_len = key_len;
	scan->seeking = true;
	return scan->txn->st->ops->core.scan_seek(scan, key, key_len);
}

/* One backend step, checked; -EINTR once the store's interrupt flag is up. */
static int scan_step(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	int rc;

	if (scan->damage)
		return -EIO;
	if (interrupted(scan->txn->st))
		return -EINTR;
	rc = scan->txn->st->ops->core.scan_next(scan, key, val);
	if (rc == -EIO && !scan->damage)
		scan->damage = "the store's pages are damaged";
	return rc == 1 ? scan_progress(scan, key) : rc;
}

struct store_txn *store_scan_txn(struct store_scan *scan)
{
	return scan->txn;
}

/*
 * Where the subtree of the element ending at key[len] ends: key[0..len) + 0xff.
 * No tuple element starts with 0xff, so every key below that element sorts
 * before it, while a sibling that merely continues the element's bytes (the
 * string "a\0b" after "a": 02 61 00 ff 62 00) sorts after it. A plain byte
 * successor ("strinc") would skip such siblings.
 */
static void subtree_end(const uint8_t *key, size_t len, uint8_t *out, size_t *out_len)
{
	memcpy(out, key, len);
	out[len] = 0xff;
	*out_len = len + 1;
}

/* One seek past a hidden subtree, as a listing skips a child. */
static int skip_hidden(struct store_scan *scan, const struct store_val *h)
{
	uint8_t end[STORE_KEY_MAX + 1];
	size_t end_len;

	subtree_end(h->data, h->len, end, &end_len);
	return scan_seek_to(scan, end, end_len);
}

int store_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	const struct store_val *h;
	int rc;

	for (;;) {
		rc = scan_step(scan, key, val);
		scan->keys += rc == 1;
		if (rc != 1 || !(h = store_hidden_covering(scan->txn, scan->space, key->data,
							     key->len)))
			return rc;
		rc = skip_hidden(scan, h);
		if (rc < 0)
			return rc;
	}
}

/* Keys below the prefix seek to the prefix; keys past it end the scan on the next step. */
int store_scan_seek(struct store_scan *scan, const void *key, size_t key_len)
{
	size_t n = key_len < scan->prefix_len ? key_len : scan->prefix_len;
	int c = n ? memcmp(key, scan->prefix, n) : 0;

	if (key_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	if (c < 0 || (c == 0 && key_len <= scan->prefix_len))
		return scan_seek_to(scan, scan->prefix, scan->prefix_len);
	return scan_seek_to(scan, key, key_len);
}

/*
 * Length of key up to the end of the depth-th element after the prefix:
 * 1 with *end set, 0 when the key has fewer elements, -EIO if it does not
 * decode (keys in the data space are tuples).
 */
static int child_boundary(const struct store_scan *s, const struct store_val *key,
			  int depth, size_t *end)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int rc = 1;

	tuple_reader_init(&r, (const uint8_t *)key->data + s->prefix_len, key->len - s->prefix_len);
	for (int i = 0; i < depth && rc == 1; i++)
		rc = tuple_next(&r, &e);
	if (rc < 0)
		return -EIO;
	*end = s->prefix_len + r.pos;
	return rc;
}

/* A backend's own distinct listing; hidden subtrees are still skipped here. */
static int next_distinct_backend(struct store_scan *scan, int depth, struct store_val *key,
				 struct store_val *val, size_t *child_end)
{
	const struct store_val *h;
	int rc;

	for (;;) {
		if (scan->damage)
			return -EIO;
		if (interrupted(scan->txn->st))
			return -EINTR;
		rc = scan->txn->st->ops->hint.scan_next_distinct(scan, depth, key, val, child_end);
		scan->keys += rc == 1;
		if (rc == 1)
			rc = scan_progress(scan, key);
		if (rc != 1 || !(h = store_hidden_covering(scan->txn, scan->space, key->data,
							     key->len)))
			return rc;
		rc = skip_hidden(scan, h);
		if (rc < 0)
			return rc;
	}
}

/*
 * Keys with fewer than `depth` elements after the prefix (the prefix's own
 * key, or a leaf above the wanted depth) name no element there: skipped.
 */
int store_scan_next_distinct(struct store_scan *scan, int depth,
			     struct store_val *key, struct store_val *val, size_t *child_end)
{
	uint8_t end_key[STORE_KEY_MAX + 1];
	size_t end, end_len;
	int rc;

	if (depth < 1)
		return -EINVAL;
	if (scan->txn->st->ops->hint.scan_next_distinct)
		return next_distinct_backend(scan, depth, key, val, child_end);
	for (;;) {
		rc = store_scan_next(scan, key, val);
		if (rc != 1)
			return rc;
		rc = child_boundary(scan, key, depth, &end);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
	}
	*child_end = end;
	subtree_end(key->data, end, end_key, &end_len);
	rc = scan_seek_to(scan, end_key, end_len);
	return rc < 0 ? rc : 1;
}
