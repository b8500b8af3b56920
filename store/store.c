/*
 * store/store.c - store.h's public functions for every backend: choosing
 * the backend by the store's name, the argument checks, format bookkeeping
 * and the owner pointer, and dispatch through the backend's struct
 * store_ops (store/store_ops.h); range scans are store/store_scan.c's.
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

int64_t store_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

bool store_interrupted(const struct store *st)
{
	return st->interrupt && *st->interrupt;
}

int store_stale(struct store *st, struct store_stale *out)
{
	memset(out, 0, sizeof(*out));
	return st->ops->ability.stale ? st->ops->ability.stale(st, out) : 0;
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

void store_deadline(struct store *st, unsigned ms)
{
	if (st->ops->ability.deadline)
		st->ops->ability.deadline(st, ms);
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

bool store_txn_snapshot(const struct store_txn *txn, uint64_t *id)
{
	if (txn->write || !txn->st->ops->core.txn_snapshot)
		return false;
	return txn->st->ops->core.txn_snapshot(txn, id);
}

void store_txn_set_owner(struct store_txn *txn, void *owner)
{
	txn->owner = owner;
}

void *store_txn_owner(const struct store_txn *txn)
{
	return txn->owner;
}

void store_txn_unconfirmed(struct store_txn *txn)
{
	txn->unconfirmed = true;
}

void store_txn_as_of(struct store_txn *txn, uint64_t *as_of)
{
	if (txn->write)
		txn->as_of = as_of;
}

/* A write whose store watches an interrupt flag: raised by the time fn is done, it aborts. */
struct write_watch {
	store_write_fn fn;
	void *arg;
};

static int write_watched(struct store_txn *txn, void *arg)
{
	struct write_watch *w = arg;
	int ret = store_interrupted(txn->st) ? -EINTR : w->fn(txn, w->arg);

	return ret == 0 && store_interrupted(txn->st) ? -EINTR : ret;
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

int store_get(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, struct store_val *out)
{
	int rc;

	if (key_len == 0)
		return -ENOENT;	/* the root has no key */
	if ((rc = store_key_check(key_len)))
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
	return store_key_check(key_len);
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
	if ((rc = store_key_check(key_len)))
		return rc;
	rc = txn->st->ops->core.del(txn, space, key, key_len);
	if (rc == 0 && txn->feed)
		feed_set_note(txn->feed, space, key, key_len, false);
	return rc;
}

void store_note_removed(struct store_txn *txn, enum store_space space, const void *key,
			size_t len)
{
	if (!txn->write)
		return;
	if (txn->feed)
		feed_set_note_removed(txn->feed, space, key, len);
	else if (txn->st->ops->ability.note_removed)
		txn->st->ops->ability.note_removed(txn, space, key, len);
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
