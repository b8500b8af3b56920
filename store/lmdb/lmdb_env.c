/*
 * store/lmdb/lmdb_env.c - the LMDB backend's table of operations and its
 * environment: opening (format check, a blank LMDB made a kvfs store, a
 * truncated file refused), closing, and the one place LMDB codes become -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store/lmdb/lmdb_int.h"

#define MAPSIZE_DEFAULT ((size_t)64 << 20)
#define MAX_READERS 254

static const char *const space_names[STORE_SPACES_ALL] = { "meta", "data", "schema", "index",
								  "attr", "expiry", "ttl",
								  [STORE_SPACE_FEED] = "changes" };

const char *lmdb_space_name(enum store_space space)
{
	return space_names[space];
}

/* ---- errors: the one place LMDB codes become -errno ---- */

int lmdb_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS: return 0;
	case MDB_NOTFOUND: return -ENOENT;
	case MDB_KEYEXIST: return -EEXIST;
	case MDB_MAP_FULL: return -ENOSPC;
	case MDB_BAD_VALSIZE: return -ENAMETOOLONG;
	case MDB_TXN_FULL: case MDB_CURSOR_FULL: case MDB_PAGE_FULL: return -EFBIG;
	case MDB_READERS_FULL: case MDB_TLS_FULL: case MDB_MAP_RESIZED: return -EAGAIN;
	case MDB_DBS_FULL: return -EMFILE;
	case MDB_BAD_RSLOT: case MDB_BAD_DBI: case MDB_INCOMPATIBLE: return -EINVAL;
	case MDB_CORRUPTED: case MDB_PAGE_NOTFOUND: case MDB_INVALID:
	case MDB_PANIC: case MDB_VERSION_MISMATCH: case MDB_BAD_TXN: return -EIO;
	default: return rc > 0 ? -rc : -EIO;
	}
}

/*
 * A commit that cannot write its pages: LMDB reports a short write (the
 * file system ran out of room part-way) as EIO, and a write refused
 * outright as ENOSPC or EDQUOT. A short write leaves the file system with
 * next to nothing free, so an EIO with less than COMMIT_ROOM_MIN free
 * where the store lives was a full disk, and is said so. Nothing of the
 * transaction is kept either way.
 */
#define COMMIT_ROOM_MIN ((uint64_t)1 << 20)

int lmdb_commit_err(const struct lmdb_store *ls, int rc)
{
	struct statvfs sv;

	if (rc == EDQUOT)
		return -ENOSPC;
	if (rc != EIO || statvfs(ls->base.name, &sv) < 0)
		return lmdb_err(rc);
	return (uint64_t)sv.f_bavail * sv.f_frsize < COMMIT_ROOM_MIN ? -ENOSPC : -EIO;
}

/* Maps an operation's result, remembering a full map for store_write. */
int lmdb_txn_err(struct lmdb_txn *t, int rc)
{
	if (rc == MDB_MAP_FULL)
		t->map_full = true;
	if (rc == EACCES && !t->base.write)
		return -EROFS;
	return lmdb_err(rc);
}
/* ---- map size ---- */

/* KVFS_MAPSIZE: bytes, optionally with a k/m/g suffix (tests use small maps). */
static size_t initial_mapsize(void)
{
	const char *s = getenv("KVFS_MAPSIZE");
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return MAPSIZE_DEFAULT;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return MAPSIZE_DEFAULT;
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	}
	return v < 65536 ? 65536 : (size_t)v;
}
/* ---- opening ---- */

static int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *name, uint64_t v, size_t n)
{
	uint8_t buf[8];
	MDB_val k = { strlen(name), (void *)name }, d = { n, buf };

	put_be(buf, v, n);
	return mdb_put(txn, dbi, &k, &d, 0);
}

/* Fills a new store's meta space: format version and creation time. */
static int init_meta(struct lmdb_store *ls, MDB_txn *txn)
{
	int rc;

	ls->base.created_ns = store_now_ns();
	atomic_store(&ls->base.format, STORE_FORMAT_VERSION);
	rc = meta_put(txn, ls->dbi[STORE_SPACE_META], "format", STORE_FORMAT_VERSION, 4);
	if (rc == 0)
		rc = meta_put(txn, ls->dbi[STORE_SPACE_META], "created",
			      (uint64_t)ls->base.created_ns, 8);
	return rc;
}

/* Checks the format version of an existing store and reads its creation time. */
static int check_meta(struct lmdb_store *ls, MDB_txn *txn, const char *dir, char *why,
		      size_t why_len)
{
	MDB_val k = { 6, (void *)"format" }, v;
	uint64_t version;

	if (LMDB_ENGINE(mdb_get(txn, ls->dbi[STORE_SPACE_META], &k, &v)) != 0 || v.mv_size != 4) {
		store_say(why, why_len, "%s: not a kvfs store (no format version)", dir);
		return -EINVAL;
	}
	version = get_be(v.mv_data, 4);
	if (version > STORE_FORMAT_VERSION) {
		store_say(why, why_len, "store format %llu is newer than this kvfs supports (%d)",
		    (unsigned long long)version, STORE_FORMAT_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (version == 0) {
		store_say(why, why_len, "%s: not a kvfs store (format 0)", dir);
		return -EINVAL;
	}
	atomic_store(&ls->base.format, (unsigned)version);	/* model/ upgrades older ones */
	k = (MDB_val){ 7, (void *)"created" };
	if (LMDB_ENGINE(mdb_get(txn, ls->dbi[STORE_SPACE_META], &k, &v)) == 0 && v.mv_size == 8)
		ls->base.created_ns = (int64_t)get_be(v.mv_data, 8);
	return 0;
}

/*
 * An LMDB environment that nothing was ever written to: no page past the two
 * meta pages, and nothing in the main database (which is where the named
 * databases of another program would be listed). Anything else is someone
 * else's data and must not be adopted.
 */
static bool env_is_blank(MDB_env *env, MDB_txn *txn)
{
	MDB_envinfo info;
	MDB_stat ms;
	MDB_dbi main_dbi;

	if (mdb_env_info(env, &info) != 0 || info.me_last_pgno > 1)
		return false;
	return LMDB_ENGINE(mdb_dbi_open(txn, NULL, 0, &main_dbi)) == 0 &&
	       LMDB_ENGINE(mdb_stat(txn, main_dbi, &ms)) == 0 && ms.ms_entries == 0;
}

/*
 * Opens the named databases in one transaction: a blank writable LMDB
 * becomes a kvfs store, anything else must carry our format.
 */
static int open_spaces(struct lmdb_store *ls, const char *dir, char *why, size_t why_len)
{
	unsigned create = ls->base.readonly ? 0 : MDB_CREATE;
	MDB_txn *txn;
	bool fresh;
	int rc;

	rc = mdb_txn_begin(ls->env, NULL, ls->base.readonly ? MDB_RDONLY : 0, &txn);
	if (rc) {
		store_say(why, why_len, "%s: %s", dir, mdb_strerror(rc));
		return lmdb_err(rc);
	}
	rc = LMDB_ENGINE(mdb_dbi_open(txn, space_names[STORE_SPACE_META], 0, &ls->dbi[STORE_SPACE_META]));
	fresh = rc == MDB_NOTFOUND && !ls->base.readonly && env_is_blank(ls->env, txn);
	if (fresh)
		rc = LMDB_ENGINE(mdb_dbi_open(txn, space_names[STORE_SPACE_META], MDB_CREATE,
				  &ls->dbi[STORE_SPACE_META]));
	if (rc) {
		store_say(why, why_len, "%s: not a kvfs store (an LMDB database of another program; "
		    "left untouched)", dir);
		rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? -EINVAL : lmdb_err(rc);
		goto out_abort_txn;
	}
	rc = fresh ? lmdb_err(init_meta(ls, txn)) : check_meta(ls, txn, dir, why, why_len);
	if (rc)
		goto out_abort_txn;
	/* Made with the format version, in one transaction: a store that has
	 * the version but not the data space lost its name to a damaged page,
	 * and a new empty one would hide every key. */
	rc = LMDB_ENGINE(mdb_dbi_open(txn, space_names[STORE_SPACE_DATA], fresh ? MDB_CREATE : 0,
				      &ls->dbi[STORE_SPACE_DATA]));
	if (rc == MDB_NOTFOUND) {
		store_say(why, why_len, "%s: store is damaged: its data space is missing from "
		    "LMDB's list of databases", dir);
		rc = -EIO;
		goto out_abort_txn;
	}
	if (rc) {
		store_say(why, why_len, "%s: cannot open the data space: %s", dir, mdb_strerror(rc));
		rc = lmdb_err(rc);
		goto out_abort_txn;
	}
	/* Format 3's and 4's spaces, and the optional change log: created
	 * here for older stores (their upgrade only raises the version); a
	 * read-only open of one reads them as empty (without a log, the feed
	 * cannot tell). */
	for (int sp = STORE_SPACE_SCHEMA; sp < STORE_SPACES_ALL; sp++) {
		rc = LMDB_ENGINE(mdb_dbi_open(txn, space_names[sp], create, &ls->dbi[sp]));
		if (rc == MDB_NOTFOUND && ls->base.readonly) {
			ls->absent[sp] = true;
			rc = 0;
		}
		if (rc) {
			store_say(why, why_len, "%s: cannot open the %s space: %s", dir, space_names[sp],
			    mdb_strerror(rc));
			rc = lmdb_err(rc);
			goto out_abort_txn;
		}
	}
	rc = mdb_txn_commit(txn);	/* also keeps the dbi handles */
	rc = lmdb_commit_err(ls, rc);
	if (rc)
		store_say(why, why_len, "%s: %s", dir, strerror(-rc));
	return rc;

out_abort_txn:
	mdb_txn_abort(txn);
	return rc;
}

/*
 * The pages the newest meta page claims must all be in the file: a
 * truncated file would fault (SIGBUS) on the first read past its end.
 * The file only grows and LMDB writes pages before the meta that counts
 * them, so the size is taken after the claim.
 */
static int check_file_size(struct lmdb_store *ls, const char *dir, char *why, size_t why_len)
{
	char path[PATH_MAX];
	MDB_envinfo info;
	MDB_stat ms;
	struct stat sb;
	uint64_t claimed;
	int fd, err;

	if (mdb_env_info(ls->env, &info) != 0 || mdb_env_stat(ls->env, &ms) != 0) {
		store_say(why, why_len, "%s: store is damaged: unreadable header", dir);
		return -EIO;
	}
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		store_say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	close(fd);
	claimed = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if (claimed > (uint64_t)sb.st_size || info.me_last_pgno * (uint64_t)ms.ms_psize >
	    (uint64_t)info.me_mapsize) {
		store_say(why, why_len, "%s: store is damaged: data.mdb is truncated or its header is "
		    "corrupt (%lld bytes, but it claims %llu)", dir, (long long)sb.st_size,
		    (unsigned long long)claimed);
		return -EIO;
	}
	return 0;
}

static int env_open(struct lmdb_store *ls, const char *dir, unsigned flags, char *why,
		    size_t why_len)
{
	unsigned envflags = MDB_NOTLS;
	int rc;

	if (flags & STORE_OPEN_READONLY)
		envflags |= MDB_RDONLY;
	if (flags & STORE_OPEN_NOSYNC)
		envflags |= MDB_NOSYNC;
	if (flags & STORE_OPEN_SYNC_ONCE)
		envflags |= MDB_NOMETASYNC;
	rc = mdb_env_create(&ls->env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(ls->env, 12);
	if (rc == 0)
		rc = mdb_env_set_maxreaders(ls->env, MAX_READERS);
	if (rc == 0)
		rc = mdb_env_open(ls->env, dir, envflags, 0600);
	if (rc) {
		store_say(why, why_len, "%s: %s", dir,
		    rc == MDB_INVALID ? "not a kvfs store (not an LMDB file)" :
		    rc == EACCES ? "permission denied" : mdb_strerror(rc));
		if (ls->env)
			mdb_env_close(ls->env);
		ls->env = NULL;
		return lmdb_err(rc);
	}
	/* Grow to the wanted size, never shrink a store another run grew. */
	if (!ls->base.readonly && lmdb_mapsize(ls) < initial_mapsize())
		mdb_env_set_mapsize(ls->env, initial_mapsize());
	return 0;
}

static void lmdb_locks_init(struct lmdb_store *ls)
{
	pthread_mutex_init(&ls->write_mutex, NULL);
	pthread_mutex_init(&ls->gate_mutex, NULL);
	pthread_cond_init(&ls->gate_cond, NULL);
	pthread_mutex_init(&ls->q_mutex, NULL);
	pthread_cond_init(&ls->q_cond, NULL);
}

static void lmdb_locks_destroy(struct lmdb_store *ls)
{
	pthread_cond_destroy(&ls->q_cond);
	pthread_mutex_destroy(&ls->q_mutex);
	pthread_cond_destroy(&ls->gate_cond);
	pthread_mutex_destroy(&ls->gate_mutex);
	pthread_mutex_destroy(&ls->write_mutex);
}

/* The name is a directory (store_ops_for): the store lives in it. */
static int lmdb_open(struct store *st, const char *dir, unsigned flags, char *why,
		     size_t why_len)
{
	struct lmdb_store *ls = lmdb_of(st);
	MDB_envinfo info;
	int rc;

	lmdb_locks_init(ls);
	rc = lmdb_dir_prepare(ls, dir, flags, why, why_len);
	if (rc)
		goto out_destroy_locks;
	rc = env_open(ls, dir, flags, why, why_len);
	if (rc)
		goto out_undo_create;
	rc = lmdb_dir_verify(ls, dir, why, why_len);
	if (rc)
		goto out_close_env;
	if (ls->created_data && (rc = lmdb_dir_fix_modes(dir)) < 0) {
		store_say(why, why_len, "%s: cannot set file modes: %s", dir, strerror(-rc));
		goto out_close_env;
	}
	if (!ls->created_data && (rc = check_file_size(ls, dir, why, why_len)) < 0)
		goto out_close_env;
	/* a mount's queued touches, acknowledged before we started, are ours to read */
	lmdb_queue_barrier(ls);
	/* Before our first transaction: dead readers pin pages and fill the table. */
	rc = lmdb_readers_check(st, &ls->stale_cleared);
	if (rc)
		goto out_close_env;
	rc = open_spaces(ls, dir, why, why_len);
	if (rc)
		goto out_close_env;
	if (mdb_env_info(ls->env, &info) == 0)
		ls->seen_txnid = info.me_last_txnid;	/* what came before is no news */
	return 0;

out_close_env:
	mdb_env_close(ls->env);
out_undo_create:
	lmdb_dir_undo_create(ls);
out_destroy_locks:
	lmdb_locks_destroy(ls);
	return rc;
}

static void lmdb_close(struct store *st, bool discard)
{
	struct lmdb_store *ls = lmdb_of(st);

	lmdb_queue_stop(ls);	/* commits the queued batch */
	mdb_env_close(ls->env);
	if (discard)
		lmdb_dir_undo_create(ls);
	lmdb_locks_destroy(ls);
}

_Thread_local volatile sig_atomic_t lmdb_engine_depth;

/* The map a damaged file can fault in (the ops table's admin.in_engine). */
static bool lmdb_in_engine(void)
{
	return lmdb_engine_depth > 0;
}

/*
 * The embedded default. Keeps the change log itself (feed_txn_commit in
 * every commit; store.c reads it), so feed_read is NULL.
 */
const struct store_ops store_lmdb_ops = {
	.name = "lmdb",
	.abilities = STORE_CAN_SYNC | STORE_CAN_HOT_COPY | STORE_CAN_USAGE | STORE_CAN_FEED |
		     STORE_CAN_READ_LOCALLY,
	.store_size = sizeof(struct lmdb_store),
	.txn_size = sizeof(struct lmdb_txn),
	.scan_size = sizeof(struct lmdb_scan),
	.core = {
		.open = lmdb_open,
		.close = lmdb_close,
		.info = lmdb_info,
		.position = lmdb_position,
		.changed_elsewhere = lmdb_changed_elsewhere,
		.read_begin = lmdb_read_begin,
		.read_end = lmdb_read_end,
		.txn_id = lmdb_txn_id,
		.txn_snapshot = lmdb_txn_snapshot,
		.write = lmdb_write,
		.get = lmdb_get,
		.put = lmdb_put,
		.put_reserve = lmdb_put_reserve,
		.del = lmdb_del,
		.del_prefix = lmdb_del_prefix,
		.scan_open = lmdb_scan_open,
		.scan_next = lmdb_scan_next,
		.scan_seek = lmdb_scan_seek,
		.scan_close = lmdb_scan_close,
	},
	.ability = {
		.sync = lmdb_sync,
		.feed_read = NULL,	/* the change log in its own space, which store.c reads */
		.queue_start = lmdb_queue_start,
		.write_later = lmdb_write_later,
		.read_version = lmdb_version,
	},
	.hint = {
		.space_is_empty = lmdb_space_is_empty,
		.scan_next_distinct = NULL,	/* store.c's: one cursor seek per child */
		.trim = lmdb_trim,
		.reserve = lmdb_reserve,
	},
	.admin = {
		.copy = lmdb_copy,
		.usage = lmdb_usage,
		.readers_check = lmdb_readers_check,
		.check = lmdb_check,
		.in_engine = lmdb_in_engine,
	},
};
