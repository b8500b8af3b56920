/*
 * store/lmdb.c - the LMDB backend of store/store.h: the environment and its
 * format check, transactions, map-size growth, point operations and prefix
 * scans with subtree skipping. The only file in kvfs that includes lmdb.h.
 *
 * Locking. mdb_env_set_mapsize() may only run while this process has no
 * transaction open, so every transaction is counted in a "gate" for its
 * whole life, and growth waits until the count is zero. The order is always
 *     write_mutex  ->  gate (shared)  ->  LMDB's writer lock
 * and growth runs holding write_mutex only, after its own transaction has
 * ended and left the gate. So a writer never waits for the gate while
 * holding LMDB's writer lock, and a thread waiting for LMDB's writer lock
 * holds the write mutex, which keeps every other writer of this process out.
 * The gate is a counter under a mutex rather than a pthread_rwlock because
 * a read transaction may be ended by another thread of a FUSE pool
 * (MDB_NOTLS), and a rwlock must be unlocked by the thread that locked it.
 *
 * The gate prefers whoever wants to close it: a closer first counts itself
 * in `closers`, which keeps new transactions out, and then waits for the
 * open ones to end. Otherwise readers that overlap one another would keep
 * the count above zero forever and a growing writer (holding write_mutex)
 * would never get in. Hence a thread must not begin any transaction while
 * it holds one: the inner begin could wait for a closer that waits for the
 * outer transaction.
 *
 * store_copy (a backup) stays in the gate for the whole copy, because
 * mdb_env_copy2 runs its own read transaction all along and the map must
 * not be resized under it. A closer waits for running copies to finish
 * before it counts itself, so readers and other copies are not held up by
 * a backup; only a write that needs to grow the map (and writers queued
 * behind it on write_mutex) waits for the backup to end.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"

#define MAPSIZE_DEFAULT ((size_t)64 << 20)
#define MAX_READERS 254

static const char *const space_names[STORE_SPACES_ALL] = { "meta", "data", "schema", "index",
								  "attr", "expiry", "ttl",
								  [STORE_SPACE_FEED] = "changes" };

struct store {
	MDB_env *env;
	MDB_dbi dbi[STORE_SPACES_ALL];
	bool absent[STORE_SPACES_ALL];	/* read-only open of an older store: not there yet */
	uint64_t writer;	/* random: marks this handle's entries in the change log */
	unsigned feed_keep;	/* change log entries kept (feed.c) */
	bool readonly;
	int64_t created_ns;
	/* Record format: set at open; only ever raised to STORE_FORMAT_VERSION
	 * once a snapshot shows the store upgraded (store_txn_format). */
	_Atomic unsigned format;
	pthread_mutex_t write_mutex;	/* one writer of this process at a time; seen_txnid, foreign */
	uint64_t seen_txnid;		/* the last commit accounted for (ours or noticed) */
	bool foreign;			/* another process committed since store_changed_elsewhere */
	pthread_mutex_t q_mutex;	/* the group commit's queue: the three fields below */
	pthread_cond_t q_cond;
	struct store_req *q_head, *q_tail;
	bool q_leader;			/* a writer is committing a batch */
	pthread_mutex_t gate_mutex;	/* guards the two fields below */
	pthread_cond_t gate_cond;
	unsigned active_txns;		/* transactions open in this process */
	unsigned copies;		/* store_copy calls inside the gate */
	unsigned closers;		/* waiting to close the gate: no new txns */
	bool resizing;			/* mapsize change in progress */
	struct store_queue *queue;	/* queued commits (store_queue_start), or NULL */
	char *dir;		/* heap: where the store lives */
	unsigned stale_cleared;	/* dead readers' slots cleared at open */
	bool created_dir;	/* store_open made these: store_close_discard */
	bool created_data;	/* removes them again */
	bool created_lock;
};

struct store_txn {
	struct store *st;
	MDB_txn *txn;
	bool write;
	bool map_full;		/* an operation hit MDB_MAP_FULL: grow and retry */
	unsigned format;	/* this snapshot's format; 0 = not looked up yet */
	void *owner;		/* the caller's (store_txn_set_owner) */
	struct feed_set *feed;	/* write transactions: the keys touched (feed.c) */
	struct hidden *hidden[2];	/* heap: data/index subtrees hidden from reads, or NULL */
	bool borrowed;		/* a read of the queued batch (queue_read_begin): no txn of its own */
	uint64_t *written;	/* queued batch: bytes put, counted (nested ones too), or NULL */
};

/* Sorted, and no key is the tuple ancestor of another (store_txn_hide). */
struct hidden {
	size_t n, cap;
	struct store_val keys[];	/* each key's bytes are heap */
};

enum scan_state { SCAN_START, SCAN_SEEK, SCAN_NEXT, SCAN_END };

struct store_scan {
	struct store_txn *txn;
	MDB_cursor *cursor;
	enum scan_state state;
	enum store_space space;
	uint64_t steps;
	size_t prefix_len;
	size_t target_len;
	uint8_t prefix[STORE_KEY_MAX];
	uint8_t target[STORE_KEY_MAX + 1];	/* where SCAN_SEEK positions next */
};

/* ---- errors: the one place LMDB codes become -errno ---- */

static int store_err(int rc)
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

static int commit_err(const struct store *st, int rc)
{
	struct statvfs sv;

	if (rc == EDQUOT)
		return -ENOSPC;
	if (rc != EIO || statvfs(st->dir, &sv) < 0)
		return store_err(rc);
	return (uint64_t)sv.f_bavail * sv.f_frsize < COMMIT_ROOM_MIN ? -ENOSPC : -EIO;
}

/* Maps an operation's result, remembering a full map for store_write. */
static int txn_err(struct store_txn *t, int rc)
{
	if (rc == MDB_MAP_FULL)
		t->map_full = true;
	if (rc == EACCES && !t->write)
		return -EROFS;
	return store_err(rc);
}

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/* ---- the gate (see the top of the file) ---- */

/* Counts a transaction (or a copy) in; waits while a closer is pending. */
static void gate_enter(struct store *st, bool copy)
{
	pthread_mutex_lock(&st->gate_mutex);
	while (st->resizing || st->closers > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->active_txns++;
	st->copies += copy;
	pthread_mutex_unlock(&st->gate_mutex);
}

static void gate_leave(struct store *st, bool copy)
{
	pthread_mutex_lock(&st->gate_mutex);
	st->copies -= copy;
	if (--st->active_txns == 0 || copy)
		pthread_cond_broadcast(&st->gate_cond);
	pthread_mutex_unlock(&st->gate_mutex);
}

/*
 * Keeps new transactions out, then waits until no transaction is open.
 * A running copy is waited for first, without keeping anyone out.
 */
static void gate_close(struct store *st)
{
	pthread_mutex_lock(&st->gate_mutex);
	while (st->copies > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->closers++;
	while (st->resizing || st->active_txns > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->closers--;
	st->resizing = true;
	pthread_mutex_unlock(&st->gate_mutex);
}

static void gate_open(struct store *st)
{
	pthread_mutex_lock(&st->gate_mutex);
	st->resizing = false;
	pthread_cond_broadcast(&st->gate_cond);
	pthread_mutex_unlock(&st->gate_mutex);
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

static size_t current_mapsize(struct store *st)
{
	MDB_envinfo info;

	mdb_env_info(st->env, &info);
	return info.me_mapsize;
}

/*
 * Another process grew the map past our mapping: adopt its size.
 * Called with no transaction of ours open.
 */
static int adopt_mapsize(struct store *st)
{
	int rc;

	gate_close(st);
	rc = mdb_env_set_mapsize(st->env, 0);
	gate_open(st);
	return store_err(rc);
}

/*
 * Doubles the map (or takes another process's larger size). Called holding
 * write_mutex, with no transaction of ours open. Failure means the address
 * space or the disk cannot hold more: -ENOSPC.
 */
static int grow_mapsize(struct store *st)
{
	size_t old, adopted;
	int rc;

	gate_close(st);
	old = current_mapsize(st);
	rc = mdb_env_set_mapsize(st->env, 0);
	adopted = current_mapsize(st);
	if (rc == 0 && adopted <= old)
		rc = old > SIZE_MAX / 2 ? ENOMEM : mdb_env_set_mapsize(st->env, old * 2);
	gate_open(st);
	return rc ? -ENOSPC : 0;
}

/* ---- opening ---- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *name, uint64_t v, size_t n)
{
	uint8_t buf[8];
	MDB_val k = { strlen(name), (void *)name }, d = { n, buf };

	put_be(buf, v, n);
	return mdb_put(txn, dbi, &k, &d, 0);
}

/* Fills a new store's meta space: format version and creation time. */
static int init_meta(struct store *st, MDB_txn *txn)
{
	int rc;

	st->created_ns = now_ns();
	atomic_store(&st->format, STORE_FORMAT_VERSION);
	rc = meta_put(txn, st->dbi[STORE_SPACE_META], "format", STORE_FORMAT_VERSION, 4);
	if (rc == 0)
		rc = meta_put(txn, st->dbi[STORE_SPACE_META], "created", (uint64_t)st->created_ns, 8);
	return rc;
}

/* Checks the format version of an existing store and reads its creation time. */
static int check_meta(struct store *st, MDB_txn *txn, const char *dir, char *why, size_t why_len)
{
	MDB_val k = { 6, (void *)"format" }, v;
	uint64_t version;

	if (mdb_get(txn, st->dbi[STORE_SPACE_META], &k, &v) != 0 || v.mv_size != 4) {
		say(why, why_len, "%s: not a kvfs store (no format version)", dir);
		return -EINVAL;
	}
	version = get_be(v.mv_data, 4);
	if (version > STORE_FORMAT_VERSION) {
		say(why, why_len, "store format %llu is newer than this kvfs supports (%d)",
		    (unsigned long long)version, STORE_FORMAT_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (version == 0) {
		say(why, why_len, "%s: not a kvfs store (format 0)", dir);
		return -EINVAL;
	}
	atomic_store(&st->format, (unsigned)version);	/* model/ upgrades older ones */
	k = (MDB_val){ 7, (void *)"created" };
	if (mdb_get(txn, st->dbi[STORE_SPACE_META], &k, &v) == 0 && v.mv_size == 8)
		st->created_ns = (int64_t)get_be(v.mv_data, 8);
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
	return mdb_dbi_open(txn, NULL, 0, &main_dbi) == 0 &&
	       mdb_stat(txn, main_dbi, &ms) == 0 && ms.ms_entries == 0;
}

/*
 * Opens the named databases in one transaction: a blank writable LMDB
 * becomes a kvfs store, anything else must carry our format.
 */
static int open_spaces(struct store *st, const char *dir, char *why, size_t why_len)
{
	unsigned create = st->readonly ? 0 : MDB_CREATE;
	MDB_txn *txn;
	bool fresh;
	int rc;

	rc = mdb_txn_begin(st->env, NULL, st->readonly ? MDB_RDONLY : 0, &txn);
	if (rc) {
		say(why, why_len, "%s: %s", dir, mdb_strerror(rc));
		return store_err(rc);
	}
	rc = mdb_dbi_open(txn, space_names[STORE_SPACE_META], 0, &st->dbi[STORE_SPACE_META]);
	fresh = rc == MDB_NOTFOUND && !st->readonly && env_is_blank(st->env, txn);
	if (fresh)
		rc = mdb_dbi_open(txn, space_names[STORE_SPACE_META], MDB_CREATE,
				  &st->dbi[STORE_SPACE_META]);
	if (rc) {
		say(why, why_len, "%s: not a kvfs store (an LMDB database of another program; "
		    "left untouched)", dir);
		rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? -EINVAL : store_err(rc);
		goto out_abort_txn;
	}
	rc = fresh ? store_err(init_meta(st, txn)) : check_meta(st, txn, dir, why, why_len);
	if (rc)
		goto out_abort_txn;
	rc = mdb_dbi_open(txn, space_names[STORE_SPACE_DATA], create, &st->dbi[STORE_SPACE_DATA]);
	if (rc) {
		say(why, why_len, "%s: not a kvfs store (no data space)", dir);
		rc = store_err(rc);
		goto out_abort_txn;
	}
	/* Format 3's and 4's spaces, and the optional change log: created
	 * here for older stores (their upgrade only raises the version); a
	 * read-only open of one reads them as empty (without a log, the feed
	 * cannot tell). */
	for (int sp = STORE_SPACE_SCHEMA; sp < STORE_SPACES_ALL; sp++) {
		rc = mdb_dbi_open(txn, space_names[sp], create, &st->dbi[sp]);
		if (rc == MDB_NOTFOUND && st->readonly) {
			st->absent[sp] = true;
			rc = 0;
		}
		if (rc) {
			say(why, why_len, "%s: cannot open the %s space: %s", dir, space_names[sp],
			    mdb_strerror(rc));
			rc = store_err(rc);
			goto out_abort_txn;
		}
	}
	rc = mdb_txn_commit(txn);	/* also keeps the dbi handles */
	rc = commit_err(st, rc);
	if (rc)
		say(why, why_len, "%s: %s", dir, strerror(-rc));
	return rc;

out_abort_txn:
	mdb_txn_abort(txn);
	return rc;
}

/* ---- the store directory: what may be opened, and undoing a failed create ---- */

/*
 * KVFS_SAFE_DIRECTORY: ':'-separated directories the user trusts although
 * another user owns them, or "*" for any (git's safe.directory).
 */
static bool dir_is_trusted(const char *dir)
{
	const char *list = getenv("KVFS_SAFE_DIRECTORY");
	char real[PATH_MAX];
	bool have_real = realpath(dir, real) != NULL;

	while (list && *list) {
		size_t len = strcspn(list, ":");

		if ((len == 1 && list[0] == '*') ||
		    (len == strlen(dir) && memcmp(list, dir, len) == 0) ||
		    (have_real && len == strlen(real) && memcmp(list, real, len) == 0))
			return true;
		list += len;
		if (*list == ':')
			list++;
	}
	return false;
}

/*
 * Looks at one of the store's files without following a link: 1 it is a
 * regular file (size in *size), 0 it does not exist, <0 refused with why.
 * LMDB opens the files by name itself, so this is checked before it does;
 * the directory belongs to us (or is trusted), so nobody else can swap a
 * file for a link in between.
 */
static int store_file_state(const char *dir, const char *name, off_t *size,
			    char *why, size_t why_len)
{
	char path[PATH_MAX];
	struct stat sb;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &sb) < 0) {
		err = errno;
		if (err == ENOENT)
			return 0;
		say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	if (S_ISLNK(sb.st_mode)) {
		say(why, why_len, "%s: is a symbolic link; refusing to follow it", path);
		return -ELOOP;
	}
	if (!S_ISREG(sb.st_mode)) {
		say(why, why_len, "%s: not a regular file; refusing it", path);
		return -EINVAL;
	}
	if (size)
		*size = sb.st_size;
	return 1;
}

/* 0 when dir holds nothing but perhaps an old lock.mdb, else -EEXIST with why. */
static int dir_check_empty(const char *dir, char *why, size_t why_len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int err;

	if (!d) {
		err = errno;
		say(why, why_len, "%s: %s", dir, strerror(err));
		return -err;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "lock.mdb"))
			break;
	closedir(d);
	if (de) {
		say(why, why_len, "%s: not empty and not a kvfs store; refusing to create a "
		    "store in it", dir);
		return -EEXIST;
	}
	return 0;
}

/* Creates dir 0700 whatever the umask, without following a planted link. */
static int dir_create(const char *dir, char *why, size_t why_len)
{
	int fd, err;

	if (mkdir(dir, 0700) < 0)
		goto out_fail;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out_fail;
	if (fchmod(fd, 0700) < 0) {
		err = errno;
		close(fd);
		errno = err;
		goto out_fail;
	}
	close(fd);
	return 0;

out_fail:
	err = errno;
	say(why, why_len, "cannot create %s: %s", dir, strerror(err));
	return -err;
}

/*
 * Makes sure dir exists (creating it if allowed), is ours, and holds either
 * a store or, when creating, nothing. Records in st what is about to be
 * created, for store_close_discard.
 */
static int prepare_dir(struct store *st, const char *dir, unsigned flags, char *why, size_t why_len)
{
	bool create = (flags & STORE_OPEN_CREATE) && !(flags & STORE_OPEN_READONLY);
	off_t size = 0;
	struct stat sb;
	int err, data, lock;

	if (stat(dir, &sb) < 0) {
		err = errno;
		if (err != ENOENT || !create) {
			say(why, why_len, "%s: %s", dir, strerror(err));
			return -err;
		}
		if ((err = dir_create(dir, why, why_len)) < 0)
			return err;
		st->created_dir = true;
	} else if (!S_ISDIR(sb.st_mode)) {
		say(why, why_len, "%s: not a directory", dir);
		return -ENOTDIR;
	} else if (sb.st_uid != geteuid() && !dir_is_trusted(dir)) {
		say(why, why_len, "%s: owned by uid %u, not by you (uid %u); refusing to open "
		    "it (set KVFS_SAFE_DIRECTORY=%s if you trust it)", dir,
		    (unsigned)sb.st_uid, (unsigned)geteuid(), dir);
		return -EPERM;
	}
	data = store_file_state(dir, "data.mdb", &size, why, why_len);
	if (data < 0)
		return data;
	lock = store_file_state(dir, "lock.mdb", NULL, why, why_len);
	if (lock < 0)
		return lock;
	st->created_lock = lock == 0;
	if (data == 1 && size == 0 && !create) {
		say(why, why_len, "%s: data.mdb is empty (a store whose creation was cut off?)", dir);
		return -EIO;
	}
	if (data == 1 && size > 0 && size < 2 * 4096) {
		say(why, why_len, "%s: store is damaged: data.mdb is truncated (%lld bytes, "
		    "shorter than its two header pages)", dir, (long long)size);
		return -EIO;
	}
	if (data == 0 && !create) {
		say(why, why_len, "%s: no kvfs store here (no data.mdb)", dir);
		return -ENOENT;
	}
	if (data == 0 && !st->created_dir && (err = dir_check_empty(dir, why, why_len)) < 0)
		return err;
	st->created_data = data == 0 || size == 0;
	return 0;
}

/*
 * Undoes what a failed or discarded open created: the files it created,
 * and the directory when it made that too. Never removes anything that
 * was there before.
 */
static void undo_create(struct store *st)
{
	char path[PATH_MAX];

	if (!st->dir)
		return;
	if (st->created_data) {
		snprintf(path, sizeof(path), "%s/data.mdb", st->dir);
		unlink(path);
	}
	if (st->created_lock) {
		snprintf(path, sizeof(path), "%s/lock.mdb", st->dir);
		unlink(path);
	}
	if (st->created_dir)
		rmdir(st->dir);
}

/*
 * LMDB creates its files 0600 minus the umask; make them exactly 0600, never
 * through a link. Through O_PATH descriptors: closing an ordinary one on
 * lock.mdb would drop this process's fcntl lock on it (POSIX locks are per
 * process and file), and the next process to open the store would then
 * think itself alone, reset the lock file's mutexes, and write at the same
 * time as we do.
 */
static int fix_file_modes(const char *dir)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char path[PATH_MAX], proc[64];
	struct stat sb;
	int fd, err = 0;

	for (size_t i = 0; i < 2 && !err; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (fstat(fd, &sb) < 0)
			err = -errno;
		else if (!S_ISREG(sb.st_mode))
			err = -EINVAL;	/* a link is not followed: O_NOFOLLOW gives the link */
		else if (chmod(proc, 0600) < 0)
			err = -errno;
		close(fd);
	}
	return err;
}

/*
 * The pages the newest meta page claims must all be in the file: a
 * truncated file would fault (SIGBUS) on the first read past its end.
 * The file only grows and LMDB writes pages before the meta that counts
 * them, so the size is taken after the claim.
 */
static int check_file_size(struct store *st, const char *dir, char *why, size_t why_len)
{
	char path[PATH_MAX];
	MDB_envinfo info;
	MDB_stat ms;
	struct stat sb;
	uint64_t claimed;
	int fd, err;

	if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &ms) != 0) {
		say(why, why_len, "%s: store is damaged: unreadable header", dir);
		return -EIO;
	}
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	close(fd);
	claimed = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if (claimed > (uint64_t)sb.st_size || info.me_last_pgno * (uint64_t)ms.ms_psize >
	    (uint64_t)info.me_mapsize) {
		say(why, why_len, "%s: store is damaged: data.mdb is truncated or its header is "
		    "corrupt (%lld bytes, but it claims %llu)", dir, (long long)sb.st_size,
		    (unsigned long long)claimed);
		return -EIO;
	}
	return 0;
}

static int env_open(struct store *st, const char *dir, unsigned flags, char *why, size_t why_len)
{
	unsigned envflags = MDB_NOTLS;
	int rc;

	if (flags & STORE_OPEN_READONLY)
		envflags |= MDB_RDONLY;
	if (flags & STORE_OPEN_NOSYNC)
		envflags |= MDB_NOSYNC;
	if (flags & STORE_OPEN_SYNC_ONCE)
		envflags |= MDB_NOMETASYNC;
	rc = mdb_env_create(&st->env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(st->env, 12);
	if (rc == 0)
		rc = mdb_env_set_maxreaders(st->env, MAX_READERS);
	if (rc == 0)
		rc = mdb_env_open(st->env, dir, envflags, 0600);
	if (rc) {
		say(why, why_len, "%s: %s", dir,
		    rc == MDB_INVALID ? "not a kvfs store (not an LMDB file)" :
		    rc == EACCES ? "permission denied" : mdb_strerror(rc));
		if (st->env)
			mdb_env_close(st->env);
		st->env = NULL;
		return store_err(rc);
	}
	/* Grow to the wanted size, never shrink a store another run grew. */
	if (!st->readonly && current_mapsize(st) < initial_mapsize())
		mdb_env_set_mapsize(st->env, initial_mapsize());
	return 0;
}

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

/* Tells this handle's log entries from other writers'; unique enough at random. */
static uint64_t writer_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
		id = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	return id;
}

static struct store *store_alloc(const char *dir, unsigned flags)
{
	struct store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->dir = strdup(dir);
	if (!st->dir) {
		free(st);
		return NULL;
	}
	st->readonly = flags & STORE_OPEN_READONLY;
	st->writer = writer_id();
	st->feed_keep = feed_keep();
	pthread_mutex_init(&st->write_mutex, NULL);
	pthread_mutex_init(&st->gate_mutex, NULL);
	pthread_cond_init(&st->gate_cond, NULL);
	pthread_mutex_init(&st->q_mutex, NULL);
	pthread_cond_init(&st->q_cond, NULL);
	return st;
}

static void store_free(struct store *st)
{
	pthread_cond_destroy(&st->q_cond);
	pthread_mutex_destroy(&st->q_mutex);
	pthread_cond_destroy(&st->gate_cond);
	pthread_mutex_destroy(&st->gate_mutex);
	pthread_mutex_destroy(&st->write_mutex);
	free(st->dir);
	free(st);
}

int store_open(const char *dir, unsigned flags, struct store **out, char *why, size_t why_len)
{
	struct store *st;
	int rc;

	*out = NULL;
	st = store_alloc(dir, flags);
	if (!st) {
		say(why, why_len, "out of memory");
		return -ENOMEM;
	}
	rc = prepare_dir(st, dir, flags, why, why_len);
	if (rc)
		goto out_free_store;
	rc = env_open(st, dir, flags, why, why_len);
	if (rc)
		goto out_undo_create;
	if (st->created_data && (rc = fix_file_modes(dir)) < 0) {
		say(why, why_len, "%s: cannot set file modes: %s", dir, strerror(-rc));
		goto out_close_env;
	}
	if (!st->created_data && (rc = check_file_size(st, dir, why, why_len)) < 0)
		goto out_close_env;
	/* Before our first transaction: dead readers pin pages and fill the table. */
	rc = store_readers_check(st, &st->stale_cleared);
	if (rc)
		goto out_close_env;
	rc = open_spaces(st, dir, why, why_len);
	if (rc)
		goto out_close_env;
	{
		MDB_envinfo info;

		if (mdb_env_info(st->env, &info) == 0)
			st->seen_txnid = info.me_last_txnid;	/* what came before is no news */
	}
	*out = st;
	return 0;

out_close_env:
	mdb_env_close(st->env);
out_undo_create:
	undo_create(st);
out_free_store:
	store_free(st);
	return rc;
}

static void queue_stop(struct store *st);

void store_close(struct store *st)
{
	if (!st)
		return;
	queue_stop(st);	/* commits the queued batch */
	mdb_env_close(st->env);
	store_free(st);
}

void store_close_discard(struct store *st)
{
	if (!st)
		return;
	queue_stop(st);
	mdb_env_close(st->env);
	undo_create(st);
	store_free(st);
}

int store_readers_check(struct store *st, unsigned *cleared)
{
	int dead = 0, rc = mdb_reader_check(st->env, &dead);

	if (cleared)
		*cleared = rc == 0 && dead > 0 ? (unsigned)dead : 0;
	return store_err(rc);
}

/* mdb_reader_list hands out one formatted line per live reader: "pid thread txnid". */
static int usage_reader_line(const char *msg, void *arg)
{
	struct store_usage *u = arg;
	int pid;

	if (sscanf(msg, "%d", &pid) != 1)
		return 0;	/* the heading, or "(no active readers)" */
	if (u->reader_pids_len < STORE_READER_PIDS)
		u->reader_pids[u->reader_pids_len++] = pid;
	u->readers++;
	return 0;
}

/*
 * Pages on LMDB's free list (its database 0): each record is a list of
 * page numbers whose first word is their count.
 */
static int count_free_pages(MDB_txn *txn, uint64_t *pages)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	*pages = 0;
	rc = mdb_cursor_open(txn, 0, &c);
	if (rc)
		return rc;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0)
		if (v.mv_size >= sizeof(size_t))
			*pages += *(const size_t *)v.mv_data;
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int store_usage(struct store *st, struct store_usage *out)
{
	struct store_txn *txn;
	MDB_envinfo info;
	MDB_stat ms;
	struct stat sb;
	char path[PATH_MAX];
	uint64_t free_pages;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store_read_begin(st, &txn);
	if (rc)
		return rc;
	mdb_env_info(st->env, &info);
	mdb_env_stat(st->env, &ms);
	rc = count_free_pages(txn->txn, &free_pages);
	store_txn_end(txn);
	if (rc)
		return store_err(rc);
	out->high_water_bytes = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	out->free_bytes = free_pages * ms.ms_psize;
	out->in_use_bytes = out->high_water_bytes > out->free_bytes ?
			    out->high_water_bytes - out->free_bytes : 0;
	snprintf(path, sizeof(path), "%s/data.mdb", st->dir);
	if (lstat(path, &sb) == 0)
		out->file_bytes = (uint64_t)sb.st_size;
	out->stale_cleared = st->stale_cleared;
	/* Listed after our own transaction ended, so it is not counted. */
	rc = mdb_reader_list(st->env, usage_reader_line, out);
	return rc < 0 ? -EIO : 0;
}

int store_info(struct store *st, struct store_info *out)
{
	struct store_txn *txn;
	MDB_envinfo info;
	MDB_stat ms;
	int rc;

	rc = store_read_begin(st, &txn);
	if (rc)
		return rc;
	mdb_env_info(st->env, &info);
	mdb_env_stat(st->env, &ms);
	memset(out, 0, sizeof(*out));
	out->map_size = info.me_mapsize;
	out->page_size = ms.ms_psize;
	out->used_bytes = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	out->last_txn_id = info.me_last_txnid;
	out->created_ns = st->created_ns;
	rc = mdb_stat(txn->txn, st->dbi[STORE_SPACE_DATA], &ms);
	out->entries = ms.ms_entries;
	store_txn_end(txn);
	return store_err(rc);
}

/* Inside the gate: the meta pages move when the map is resized. */
uint64_t store_position(struct store *st)
{
	MDB_envinfo info;

	gate_enter(st, false);
	mdb_env_info(st->env, &info);
	gate_leave(st, false);
	return info.me_last_txnid;
}

uint64_t store_writer_id(const struct store *st)
{
	return st->writer;
}

static int queue_flush(struct store *st);

int store_sync(struct store *st)
{
	int rc = 0;

	if (st->readonly)
		return 0;	/* nothing of ours to flush */
	if (st->queue)
		rc = queue_flush(st);	/* the queued batch committed first */
	if (rc == 0)
		rc = store_err(mdb_env_sync(st->env, 1));
	return rc;
}

/*
 * The copy runs its own read transaction, so it stays inside the gate for
 * its whole length: a write that needs to grow the map waits for it (see
 * the top of the file).
 */
int store_copy(struct store *st, const char *dir)
{
	char path[PATH_MAX];
	int rc;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	gate_enter(st, true);
	rc = mdb_env_copy2(st->env, dir, MDB_CP_COMPACT);
	gate_leave(st, true);
	if (rc)
		return store_err(rc);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return chmod(path, 0600) < 0 ? -errno : 0;
}

/* ---- transactions ---- */

/* Begins an LMDB transaction inside the gate, adopting a map grown elsewhere. */
static int txn_begin(struct store *st, unsigned flags, MDB_txn **out)
{
	int rc;

	for (;;) {
		gate_enter(st, false);
		rc = mdb_txn_begin(st->env, NULL, flags, out);
		if (rc == 0)
			return 0;
		gate_leave(st, false);
		if (rc != MDB_MAP_RESIZED)
			return store_err(rc);
		rc = adopt_mapsize(st);
		if (rc)
			return rc;
	}
}

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

static bool queue_read_begin(struct store *st, struct store_txn *t);
static void queue_read_end(struct store *st);

int store_read_begin(struct store *st, struct store_txn **out)
{
	struct store_txn *t = calloc(1, sizeof(*t));
	int rc;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->st = st;
	if (queue_read_begin(st, t)) {
		*out = t;
		return 0;
	}
	t->format = snapshot_format(st);
	rc = txn_begin(st, MDB_RDONLY, &t->txn);
	if (rc) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

static void hidden_free(struct hidden *h);

/* Ends a read transaction. Write transactions belong to store_write: no-op. */
void store_txn_end(struct store_txn *txn)
{
	if (!txn || txn->write)
		return;
	if (txn->borrowed)
		queue_read_end(txn->st);	/* the batch is the committer's to end */
	else {
		mdb_txn_abort(txn->txn);
		gate_leave(txn->st, false);
	}
	hidden_free(txn->hidden[0]);
	hidden_free(txn->hidden[1]);
	free(txn);
}

/* ---- hidden subtrees (store_txn_hide) ---- */

/* True when a (a node key) is k itself or a tuple ancestor of k. */
static bool key_covers(const struct store_val *a, const void *k, size_t len)
{
	return a->len <= len && memcmp(a->data, k, a->len) == 0 &&
	       (a->len == len || ((const uint8_t *)k)[a->len] != 0xff);
}

static int key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

	return c ? c : (a_len > b_len) - (a_len < b_len);
}

/* Index of the first hidden key > k. */
static size_t hidden_upper(const struct hidden *h, const void *k, size_t len)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(h->keys[mid].data, h->keys[mid].len, k, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The hidden key covering k, or NULL. Exact with one comparison: no hidden
 * key is an ancestor of another, so any key between a covering ancestor A
 * and k would be A's descendant (dropped) or sort after k (A + 0xff...).
 */
static const struct store_val *hidden_find(const struct hidden *h, const void *k, size_t len)
{
	size_t i;

	if (!h || h->n == 0)
		return NULL;
	i = hidden_upper(h, k, len);
	return i > 0 && key_covers(&h->keys[i - 1], k, len) ? &h->keys[i - 1] : NULL;
}

static void hidden_free(struct hidden *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		free((void *)h->keys[i].data);
	free(h);
}

/* The hidden set of a space: only the data and index spaces have one. */
static struct hidden **hidden_of(struct store_txn *txn, enum store_space space)
{
	return space == STORE_SPACE_DATA ? &txn->hidden[0] :
	       space == STORE_SPACE_INDEX ? &txn->hidden[1] : NULL;
}

int store_txn_hide(struct store_txn *txn, enum store_space space, const void *key, size_t len)
{
	struct hidden **hp = hidden_of(txn, space);
	struct hidden *h;
	struct store_val nk;
	size_t i, j;
	void *copy;

	if (!hp || txn->write || len == 0 || len > STORE_KEY_MAX)
		return -EINVAL;	/* read transactions only; the root never expires */
	h = *hp;
	if (hidden_find(h, key, len))
		return 0;	/* already hidden with an ancestor */
	if (!h || h->n == h->cap) {
		size_t cap = h ? h->cap * 2 : 16;
		struct hidden *g = realloc(h, sizeof(*g) + cap * sizeof(g->keys[0]));

		if (!g)
			return -ENOMEM;
		if (!h)
			g->n = 0;
		g->cap = cap;
		*hp = h = g;
	}
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, len);
	nk = (struct store_val){ copy, len };
	i = hidden_upper(h, key, len);
	/* Descendants of the new key sort right after it: drop them. */
	for (j = i; j < h->n && key_covers(&nk, h->keys[j].data, h->keys[j].len); j++)
		free((void *)h->keys[j].data);
	memmove(&h->keys[i + 1], &h->keys[j], (h->n - j) * sizeof(h->keys[0]));
	h->n = h->n - (j - i) + 1;
	h->keys[i] = nk;
	return 0;
}

int store_txn_hidden_from(struct store_txn *txn, enum store_space space, const void *key,
			  size_t len, struct store_val *out)
{
	struct hidden **hp = hidden_of(txn, space);
	struct hidden *h = hp ? *hp : NULL;
	size_t lo = 0, hi;

	if (!h)
		return 0;
	/* the first hidden key >= key */
	for (hi = h->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(h->keys[mid].data, h->keys[mid].len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == h->n)
		return 0;
	*out = h->keys[lo];
	return 1;
}

uint64_t store_txn_id(const struct store_txn *txn)
{
	return mdb_txn_id(txn->txn);
}

void store_txn_set_owner(struct store_txn *txn, void *owner)
{
	txn->owner = owner;
}

void *store_txn_owner(const struct store_txn *txn)
{
	return txn->owner;
}

unsigned store_format(struct store *st)
{
	return atomic_load(&st->format);
}

unsigned store_txn_format(struct store_txn *txn)
{
	MDB_val k = { 6, (void *)"format" }, v;

	if (txn->format)
		return txn->format;
	if (mdb_get(txn->txn, txn->st->dbi[STORE_SPACE_META], &k, &v) != 0 || v.mv_size != 4)
		return 0;
	txn->format = (unsigned)get_be(v.mv_data, 4);
	if (txn->format == STORE_FORMAT_VERSION)
		atomic_store(&txn->st->format, txn->format);
	return txn->format;
}

int store_set_format(struct store_txn *txn, unsigned version)
{
	int rc;

	if (!txn->write)
		return -EROFS;
	rc = meta_put(txn->txn, txn->st->dbi[STORE_SPACE_META], "format", version, 4);
	if (rc)
		return txn_err(txn, rc);
	txn->format = version;
	return 0;
}

/*
 * Group commit. Writers of this process queue their operations; the first
 * one to find no batch running becomes the leader: it takes every queued
 * operation and runs them in one LMDB transaction, each in a nested
 * transaction of its own (so that a refusal undoes only its own changes),
 * and commits them together: one sync for all. Writers that arrive while
 * it commits queue up for the next batch. Each gets its own result.
 */
struct store_req {
	store_write_fn fn;
	void *arg;
	int rc;
	bool done;		/* q_mutex */
	struct store_req *next;	/* q_mutex */
};

static void batch_fail(struct store_req *batch, int rc, bool only_ok)
{
	for (struct store_req *r = batch; r; r = r->next)
		if (!only_ok || r->rc == 0)
			r->rc = rc;
}

/* write_mutex held. Our commit txnid: anything between it and the last one seen is foreign. */
static void note_own_commit(struct store *st, uint64_t txnid)
{
	if (txnid - 1 > st->seen_txnid)
		st->foreign = true;
	st->seen_txnid = txnid;
}

/* One request of a batch of several, in a nested transaction of t. 0, or <0: fail the batch. */
static int batch_run_nested(struct store_txn *t, struct store_req *r, bool *map_full)
{
	struct store_txn c = { .st = t->st, .write = true, .format = t->format, .feed = t->feed,
			       .written = t->written };
	int rc = mdb_txn_begin(t->st->env, t->txn, 0, &c.txn);

	if (rc)
		return store_err(rc);
	r->rc = r->fn(&c, r->arg);
	if (c.map_full || r->rc) {
		mdb_txn_abort(c.txn);
		*map_full = c.map_full;
		return 0;
	}
	rc = mdb_txn_commit(c.txn);	/* into t */
	if (rc == MDB_MAP_FULL)
		*map_full = true;
	else if (rc)
		return commit_err(t->st, rc);
	t->format = c.format;
	return 0;
}

/*
 * write_mutex held. One attempt at a batch: begin, run each request,
 * commit. *retry is set when the map was full (the transaction is then gone
 * and the caller grows the map). Sets every request's rc.
 */
static void batch_attempt(struct store *st, struct store_req *batch, bool *retry)
{
	struct feed_set feed;
	struct store_txn t = { .st = st, .write = true, .feed = &feed };
	bool map_full = false;
	unsigned ok = 0;
	uint64_t txnid;
	int rc;

	*retry = false;
	t.format = snapshot_format(st);
	feed_set_init(&feed);
	rc = txn_begin(st, 0, &t.txn);
	if (rc) {
		feed_set_release(&feed);
		batch_fail(batch, rc, false);
		return;
	}
	for (struct store_req *r = batch; r && !map_full; r = r->next) {
		if (!batch->next) {	/* alone: in t itself, as without batching */
			r->rc = r->fn(&t, r->arg);
			map_full = t.map_full;
		} else {
			rc = batch_run_nested(&t, r, &map_full);
			if (rc) {
				batch_fail(batch, rc, false);
				goto out_abort_txn;
			}
		}
		ok += r->rc == 0;
	}
	if (!map_full && ok) {
		/* The change log entry, in the same transaction. Without memory
		 * for it the commit goes without: readers see a gap, and
		 * re-check everything. (A refused request's keys may be in it:
		 * readers then re-check a little more.) */
		rc = feed_txn_commit(&t, &feed, st->writer, st->feed_keep);
		map_full = t.map_full;
		if (rc < 0 && rc != -ENOMEM && !map_full) {
			batch_fail(batch, rc, true);
			goto out_abort_txn;
		}
	}
	if (map_full) {
		*retry = true;
		goto out_abort_txn;
	}
	if (!ok)
		goto out_abort_txn;	/* nothing to commit: refusals only */
	feed_set_release(&feed);
	txnid = mdb_txn_id(t.txn);
	rc = mdb_txn_commit(t.txn);	/* frees the transaction even on failure */
	gate_leave(st, false);
	*retry = rc == MDB_MAP_FULL;
	if (rc)
		batch_fail(batch, commit_err(st, rc), true);
	else
		note_own_commit(st, txnid);
	return;

out_abort_txn:
	feed_set_release(&feed);
	mdb_txn_abort(t.txn);
	gate_leave(st, false);
}

static void batch_run(struct store *st, struct store_req *batch)
{
	bool retry;
	int rc;

	pthread_mutex_lock(&st->write_mutex);
	for (;;) {
		batch_attempt(st, batch, &retry);
		if (!retry)
			break;
		rc = grow_mapsize(st);
		if (rc) {
			batch_fail(batch, rc, false);
			break;
		}
	}
	pthread_mutex_unlock(&st->write_mutex);
}

static int queue_write(struct store *st, struct store_req *req);

int store_write(struct store *st, store_write_fn fn, void *arg)
{
	struct store_req req = { .fn = fn, .arg = arg };
	struct store_req *batch, *r, *next;

	if (st->readonly)
		return -EROFS;
	if (st->queue)
		return queue_write(st, &req);
	pthread_mutex_lock(&st->q_mutex);
	if (st->q_tail)
		st->q_tail->next = &req;
	else
		st->q_head = &req;
	st->q_tail = &req;
	while (!req.done) {
		if (st->q_leader) {
			pthread_cond_wait(&st->q_cond, &st->q_mutex);
			continue;
		}
		st->q_leader = true;
		batch = st->q_head;
		st->q_head = st->q_tail = NULL;
		pthread_mutex_unlock(&st->q_mutex);
		batch_run(st, batch);
		pthread_mutex_lock(&st->q_mutex);
		for (r = batch; r; r = next) {
			next = r->next;
			r->done = true;	/* its writer may return (and free r) once we unlock */
		}
		st->q_leader = false;
		pthread_cond_broadcast(&st->q_cond);
	}
	pthread_mutex_unlock(&st->q_mutex);
	return req.rc;
}

/*
 * ---- queued commits (store_queue_start) ----
 *
 * One committer thread owns one write transaction, the batch, and keeps it
 * open for at most `ms` after the first change in it. Each store_write hands
 * its fn to the committer and waits only for fn to run in a nested
 * transaction of the batch: its verdict (a refusal undoes only its own
 * nested transaction) comes back at once, without a commit or a sync. The
 * batch is committed as one ordinary transaction (one sync in
 * STORE_OPEN_SYNC_ONCE, the store's integrity kept) when ms have passed,
 * at store_sync, when it grows past QUEUE_BATCH_MAX, and at store_close.
 * A process killed before that loses the batch whole, never a part of one
 * fn's changes. LMDB ties a write transaction's lock to the thread that
 * began it, so only the committer begins and ends it.
 *
 * While a batch is open, this process's read transactions read the batch
 * itself (queue_read_begin), one at a time under b_mutex, so that what a
 * write acknowledged is seen at once by this process; other processes
 * see it at the commit. Other processes' writers wait for the commit.
 *
 * Locks: b_mutex, then q_mutex or write_mutex, then the gate; b_mutex is
 * recursive because one thread may nest read transactions. The committer
 * is the only writer of the process, so it may take write_mutex (for the
 * accounting of its commit) while it holds LMDB's writer lock: no thread
 * of the process waits for that lock holding write_mutex.
 */
#define QUEUE_BATCH_MAX 20000	/* writes in one batch before it is committed early */

struct store_queue {
	unsigned ms;		/* fixed */
	pthread_t thread;	/* fixed once started */
	pthread_cond_t cond;	/* the committer waits here (with st->q_mutex) */
	/* st->q_mutex: */
	bool stop;
	uint64_t flush_want, flush_done;	/* store_sync's tickets */
	int flush_rc;		/* the result of the commit that served flush_done */
	int lost_rc;		/* a timed commit failed: told to the next store_sync */
	/* b_mutex: the open batch (only the committer changes it) */
	pthread_mutex_t b_mutex;
	struct store_txn batch;	/* batch.txn is NULL when no batch is open */
	struct feed_set feed;
	unsigned count;		/* writes applied in the batch */
	uint64_t written;	/* bytes they put (store_txn.written) */
	struct timespec deadline;	/* CLOCK_MONOTONIC: commit by then */
	_Atomic bool open;	/* batch.txn != NULL; a hint read without b_mutex */
	_Atomic uint64_t applied;	/* writes ever applied (store_version) */
};

static bool deadline_passed(const struct timespec *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

static bool queue_read_begin(struct store *st, struct store_txn *t)
{
	struct store_queue *q = st->queue;

	if (!q || !atomic_load(&q->open))
		return false;
	pthread_mutex_lock(&q->b_mutex);
	if (!q->batch.txn) {	/* committed meanwhile: an ordinary snapshot sees it */
		pthread_mutex_unlock(&q->b_mutex);
		return false;
	}
	t->txn = q->batch.txn;
	t->format = q->batch.format;
	t->borrowed = true;
	return true;	/* b_mutex held until store_txn_end */
}

static void queue_read_end(struct store *st)
{
	pthread_mutex_unlock(&st->queue->b_mutex);
}

/* Committer, b_mutex held. Opens a batch. */
static int queue_begin(struct store *st)
{
	struct store_queue *q = st->queue;
	int rc;

	memset(&q->batch, 0, sizeof(q->batch));
	q->batch.st = st;
	q->batch.write = true;
	q->batch.feed = &q->feed;
	q->batch.written = &q->written;
	q->batch.format = snapshot_format(st);
	feed_set_init(&q->feed);
	rc = txn_begin(st, 0, &q->batch.txn);
	if (rc) {
		feed_set_release(&q->feed);
		q->batch.txn = NULL;
		return rc;
	}
	q->count = 0;
	q->written = 0;
	clock_gettime(CLOCK_MONOTONIC, &q->deadline);
	q->deadline.tv_sec += q->ms / 1000;
	q->deadline.tv_nsec += (long)(q->ms % 1000) * 1000000L;
	if (q->deadline.tv_nsec >= 1000000000L) {
		q->deadline.tv_nsec -= 1000000000L;
		q->deadline.tv_sec++;
	}
	atomic_store(&q->open, true);
	return 0;
}

/*
 * Committer, b_mutex held, no batch open. A batch that fills the map cannot
 * be run again (its writers have returned), and its commit needs pages of
 * its own: the map is grown while more than half of it is used, so that a
 * write that finds it full leaves room for committing the batch before it.
 */
static void queue_headroom(struct store *st)
{
	MDB_envinfo info;
	MDB_stat ms;

	if (mdb_env_info(st->env, &info) || mdb_env_stat(st->env, &ms))
		return;
	if ((uint64_t)(info.me_last_pgno + 1) * ms.ms_psize <= info.me_mapsize / 2)
		return;
	/* on failure, the next write that needs the room finds the map full */
	pthread_mutex_lock(&st->write_mutex);
	(void)grow_mapsize(st);
	pthread_mutex_unlock(&st->write_mutex);
}

/* Committer, b_mutex held. Ends the batch: committed when anything is in it. */
static int queue_end(struct store *st, bool commit)
{
	struct store_queue *q = st->queue;
	struct store_txn c = { .st = st, .write = true, .format = q->batch.format,
			       .feed = &q->feed };
	uint64_t txnid;
	int rc = 0;

	if (!q->batch.txn)
		return 0;
	if (!commit || !q->count) {
		mdb_txn_abort(q->batch.txn);
		gate_leave(st, false);
		goto out_release;
	}
	/*
	 * The change log entry in a nested transaction: when it does not fit,
	 * the batch commits without it (readers see a gap, and re-check all).
	 */
	if (mdb_txn_begin(st->env, q->batch.txn, 0, &c.txn) == 0) {
		if (feed_txn_commit(&c, &q->feed, st->writer, st->feed_keep) == 0 && !c.map_full)
			mdb_txn_commit(c.txn);
		else
			mdb_txn_abort(c.txn);
	}
	txnid = mdb_txn_id(q->batch.txn);
	pthread_mutex_lock(&st->write_mutex);
	rc = mdb_txn_commit(q->batch.txn);
	if (rc == 0)
		note_own_commit(st, txnid);
	pthread_mutex_unlock(&st->write_mutex);
	gate_leave(st, false);
	rc = rc ? commit_err(st, rc) : 0;
out_release:
	feed_set_release(&q->feed);
	q->batch.txn = NULL;
	q->count = 0;
	atomic_store(&q->open, false);
	if (commit && rc == 0)
		queue_headroom(st);
	return rc;
}

/* Committer, b_mutex held. A commit whose writers have returned: its failure is kept. */
static void queue_commit_now(struct store *st)
{
	int rc = queue_end(st, true);

	if (rc < 0) {
		pthread_mutex_lock(&st->q_mutex);
		st->queue->lost_rc = rc;
		pthread_mutex_unlock(&st->q_mutex);
	}
}

/*
 * Committer, b_mutex held. Runs one write in the batch. When the map is
 * full, the batch so far is committed (it is whole) and the write runs
 * again in a new one, after the map is grown; when the transaction holds
 * too many pages (-EFBIG), again in a new one, alone.
 */
static void queue_apply(struct store *st, struct store_req *r)
{
	struct store_queue *q = st->queue;
	bool full;
	int rc;

	for (int attempt = 0;; attempt++) {
		if (!q->batch.txn && (rc = queue_begin(st)) < 0) {
			r->rc = rc;
			return;
		}
		full = false;
		rc = batch_run_nested(&q->batch, r, &full);
		if (rc < 0) {
			/* the batch itself failed: nothing in it can be trusted */
			r->rc = rc;
			queue_end(st, false);
			pthread_mutex_lock(&st->q_mutex);
			q->lost_rc = rc;
			pthread_mutex_unlock(&st->q_mutex);
			return;
		}
		/* too many dirty pages for one transaction: maybe not alone */
		if (r->rc == -EFBIG && q->count > 0 && attempt == 0)
			full = true;
		if (!full)
			break;
		queue_commit_now(st);
		if (attempt > 0) {
			pthread_mutex_lock(&st->write_mutex);
			rc = grow_mapsize(st);
			pthread_mutex_unlock(&st->write_mutex);
			if (rc < 0 || attempt > 8) {
				r->rc = rc < 0 ? rc : -ENOSPC;
				return;
			}
		}
	}
	if (r->rc == 0) {
		q->count++;
		atomic_fetch_add(&q->applied, 1);
	}
	/* big: committed while the room queue_headroom kept is surely enough */
	if (q->count >= QUEUE_BATCH_MAX || q->written > current_mapsize(st) / 8)
		queue_commit_now(st);
}

static void *queue_main(void *arg)
{
	struct store *st = arg;
	struct store_queue *q = st->queue;
	struct store_req *batch, *r, *next;
	uint64_t flush;
	bool stop, due;
	int rc;

	pthread_mutex_lock(&st->q_mutex);
	for (;;) {
		for (;;) {
			bool open = atomic_load(&q->open);

			if (q->stop || st->q_head || q->flush_want > q->flush_done)
				break;
			if (open && deadline_passed(&q->deadline))
				break;
			if (open)
				pthread_cond_timedwait(&q->cond, &st->q_mutex, &q->deadline);
			else
				pthread_cond_wait(&q->cond, &st->q_mutex);
		}
		batch = st->q_head;
		st->q_head = st->q_tail = NULL;
		flush = q->flush_want;
		stop = q->stop;
		pthread_mutex_unlock(&st->q_mutex);
		pthread_mutex_lock(&q->b_mutex);
		for (r = batch; r; r = r->next)
			queue_apply(st, r);
		due = q->batch.txn && deadline_passed(&q->deadline);
		rc = 0;
		if (stop || due || flush > q->flush_done)
			rc = queue_end(st, true);
		pthread_mutex_unlock(&q->b_mutex);
		pthread_mutex_lock(&st->q_mutex);
		for (r = batch; r; r = next) {
			next = r->next;
			r->done = true;	/* its writer may return (and free r) once we unlock */
		}
		if (rc < 0 && flush <= q->flush_done)
			q->lost_rc = rc;	/* nobody waits for this commit: the next sync says it */
		if (flush > q->flush_done) {
			q->flush_done = flush;
			q->flush_rc = rc;
		}
		pthread_cond_broadcast(&st->q_cond);
		if (stop && !st->q_head)
			break;
	}
	pthread_mutex_unlock(&st->q_mutex);
	return NULL;
}

static int queue_write(struct store *st, struct store_req *req)
{
	pthread_mutex_lock(&st->q_mutex);
	if (st->q_tail)
		st->q_tail->next = req;
	else
		st->q_head = req;
	st->q_tail = req;
	pthread_cond_signal(&st->queue->cond);
	while (!req->done)
		pthread_cond_wait(&st->q_cond, &st->q_mutex);
	pthread_mutex_unlock(&st->q_mutex);
	return req->rc;
}

static int queue_flush(struct store *st)
{
	struct store_queue *q = st->queue;
	uint64_t ticket;
	int rc;

	pthread_mutex_lock(&st->q_mutex);
	ticket = ++q->flush_want;
	pthread_cond_signal(&q->cond);
	while (q->flush_done < ticket)
		pthread_cond_wait(&st->q_cond, &st->q_mutex);
	rc = q->flush_rc ? q->flush_rc : q->lost_rc;
	q->lost_rc = 0;
	pthread_mutex_unlock(&st->q_mutex);
	return rc;
}

int store_queue_start(struct store *st, unsigned ms)
{
	struct store_queue *q;
	pthread_condattr_t attr;
	pthread_mutexattr_t ma;
	int rc;

	if (st->readonly || st->queue || !ms)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ms = ms;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (rc) {
		free(q);
		return -rc;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&q->b_mutex, &ma);
	pthread_mutexattr_destroy(&ma);
	st->queue = q;
	rc = pthread_create(&q->thread, NULL, queue_main, st);
	if (rc) {
		st->queue = NULL;
		pthread_mutex_destroy(&q->b_mutex);
		pthread_cond_destroy(&q->cond);
		free(q);
		return -rc;
	}
	return 0;
}

static void queue_stop(struct store *st)
{
	struct store_queue *q = st->queue;

	if (!q)
		return;
	pthread_mutex_lock(&st->q_mutex);
	q->stop = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&st->q_mutex);
	pthread_join(q->thread, NULL);
	st->queue = NULL;
	pthread_mutex_destroy(&q->b_mutex);
	pthread_cond_destroy(&q->cond);
	free(q);
}

uint64_t store_version(struct store *st)
{
	uint64_t applied = st->queue ? atomic_load(&st->queue->applied) : 0;

	return store_position(st) + applied;
}

bool store_changed_elsewhere(struct store *st)
{
	MDB_envinfo info;
	bool changed;

	/* under write_mutex: no commit of ours is half accounted for */
	pthread_mutex_lock(&st->write_mutex);
	if (mdb_env_info(st->env, &info) == 0 && info.me_last_txnid > st->seen_txnid) {
		st->foreign = true;
		st->seen_txnid = info.me_last_txnid;
	}
	changed = st->foreign;
	st->foreign = false;
	pthread_mutex_unlock(&st->write_mutex);
	return changed;
}

/* ---- point operations ---- */

static int check_key(size_t key_len)
{
	return key_len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
}

int store_get(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, struct store_val *out)
{
	MDB_val k = { key_len, (void *)key }, v;
	int rc;

	if (key_len == 0)
		return -ENOENT;	/* the root has no key */
	if ((rc = check_key(key_len)))
		return rc;
	if (txn->st->absent[space])
		return -ENOENT;
	if (hidden_of(txn, space) && hidden_find(*hidden_of(txn, space), key, key_len))
		return -ENOENT;
	rc = mdb_get(txn->txn, txn->st->dbi[space], &k, &v);
	if (rc)
		return txn_err(txn, rc);
	out->data = v.mv_data;
	out->len = v.mv_size;
	return 0;
}

/* Every put goes through here (a plain one, or MDB_RESERVE: v gets the place). */
static int put_with(struct store_txn *txn, enum store_space space, const void *key,
		    size_t key_len, MDB_val *v, unsigned flags)
{
	MDB_val k = { key_len, (void *)key };
	int rc;

	if (!txn->write)
		return -EROFS;
	if (txn->map_full)
		return -ENOSPC;	/* store_write will grow the map and retry */
	if (key_len == 0)
		return -EINVAL;
	if ((rc = check_key(key_len)))
		return rc;
	rc = mdb_put(txn->txn, txn->st->dbi[space], &k, v, flags);
	if (rc == 0)
		feed_set_note(txn->feed, space, key, key_len, false);
	if (rc == 0 && txn->written)
		*txn->written += key_len + v->mv_size;
	return txn_err(txn, rc);
}

int store_put(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, const void *val, size_t val_len)
{
	MDB_val v = { val_len, (void *)val };

	return put_with(txn, space, key, key_len, &v, 0);
}

int store_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
		      size_t key_len, size_t val_len, void **out)
{
	MDB_val v = { val_len, NULL };
	/* LMDB hands back the value's place in its own dirty page: no copy. */
	int rc = put_with(txn, space, key, key_len, &v, MDB_RESERVE);

	*out = rc == 0 ? v.mv_data : NULL;
	return rc;
}

int store_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len)
{
	MDB_val k = { key_len, (void *)key };
	int rc;

	if (!txn->write)
		return -EROFS;
	if (txn->map_full)
		return -ENOSPC;
	if (key_len == 0)
		return -ENOENT;
	if ((rc = check_key(key_len)))
		return rc;
	rc = mdb_del(txn->txn, txn->st->dbi[space], &k, NULL);
	if (rc == 0)
		feed_set_note(txn->feed, space, key, key_len, false);
	return txn_err(txn, rc);
}

bool store_space_is_empty(struct store_txn *txn, enum store_space space)
{
	MDB_stat ms;

	if (txn->st->absent[space])
		return true;
	return mdb_stat(txn->txn, txn->st->dbi[space], &ms) == 0 && ms.ms_entries == 0;
}

static bool has_prefix(const MDB_val *k, const void *prefix, size_t prefix_len)
{
	return prefix_len == 0 ||
	       (k->mv_size >= prefix_len && memcmp(k->mv_data, prefix, prefix_len) == 0);
}

/* Positions c at the first key >= key (the first key at all for an empty key). */
static int cursor_seek(MDB_cursor *c, const void *key, size_t key_len, MDB_val *k, MDB_val *v)
{
	*k = (MDB_val){ key_len, (void *)key };
	return mdb_cursor_get(c, k, v, key_len ? MDB_SET_RANGE : MDB_FIRST);
}

/*
 * Each deletion re-seeks to the prefix: everything before it is gone, so the
 * first key >= prefix is the next victim, whatever LMDB does with a cursor
 * after mdb_cursor_del.
 */
int store_del_prefix(struct store_txn *txn, enum store_space space,
		     const void *prefix, size_t prefix_len, uint64_t *deleted)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t n = 0;
	int rc;

	if (deleted)
		*deleted = 0;
	if (!txn->write)
		return -EROFS;
	if (txn->map_full)
		return -ENOSPC;
	if (prefix_len > STORE_KEY_MAX)
		return 0;	/* no key is that long, so none starts with it */
	rc = mdb_cursor_open(txn->txn, txn->st->dbi[space], &c);
	if (rc)
		return txn_err(txn, rc);
	while ((rc = cursor_seek(c, prefix, prefix_len, &k, &v)) == 0 &&
	       has_prefix(&k, prefix, prefix_len)) {
		rc = mdb_cursor_del(c, 0);
		if (rc)
			break;
		n++;
	}
	mdb_cursor_close(c);
	if (n)
		feed_set_note(txn->feed, space, prefix, prefix_len, true);
	if (deleted)
		*deleted = n;
	return rc == MDB_NOTFOUND ? 0 : txn_err(txn, rc);
}

/* ---- scans ---- */

int store_scan_open(struct store_txn *txn, enum store_space space,
		    const void *prefix, size_t prefix_len, struct store_scan **out)
{
	struct store_scan *s;
	int rc;

	*out = NULL;
	if ((rc = check_key(prefix_len)))
		return rc;
	if (txn->st->absent[space])
		return -ENOENT;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = mdb_cursor_open(txn->txn, txn->st->dbi[space], &s->cursor);
	if (rc) {
		free(s);
		return txn_err(txn, rc);
	}
	s->txn = txn;
	s->space = space;
	s->state = SCAN_START;
	if (prefix_len)
		memcpy(s->prefix, prefix, prefix_len);
	s->prefix_len = prefix_len;
	*out = s;
	return 0;
}

void store_scan_close(struct store_scan *scan)
{
	if (!scan)
		return;
	mdb_cursor_close(scan->cursor);
	free(scan);
}

uint64_t store_scan_steps(const struct store_scan *scan)
{
	return scan->steps;
}

struct store_txn *store_scan_txn(struct store_scan *scan)
{
	return scan->txn;
}

/* One cursor move, as the state says; counts it. */
static int scan_move(struct store_scan *s, MDB_val *k, MDB_val *v)
{
	s->steps++;
	switch (s->state) {
	case SCAN_START:
		return cursor_seek(s->cursor, s->prefix, s->prefix_len, k, v);
	case SCAN_SEEK:
		return cursor_seek(s->cursor, s->target, s->target_len, k, v);
	default:
		return mdb_cursor_get(s->cursor, k, v, MDB_NEXT);
	}
}

static void subtree_end(const uint8_t *key, size_t len, uint8_t *out, size_t *out_len);

int store_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	MDB_val k, v;
	int rc;

	if (scan->state == SCAN_END)
		return 0;
	for (;;) {
		const struct store_val *h;

		rc = scan_move(scan, &k, &v);
		if (rc == 0 && !has_prefix(&k, scan->prefix, scan->prefix_len))
			rc = MDB_NOTFOUND;
		if (rc || !hidden_of(scan->txn, scan->space) ||
		    !(h = hidden_find(*hidden_of(scan->txn, scan->space), k.mv_data, k.mv_size)))
			break;
		/* A hidden subtree: one seek past it, as a listing skips a child. */
		subtree_end(h->data, h->len, scan->target, &scan->target_len);
		scan->state = SCAN_SEEK;
	}
	if (rc) {
		scan->state = SCAN_END;
		return rc == MDB_NOTFOUND ? 0 : txn_err(scan->txn, rc);
	}
	scan->state = SCAN_NEXT;
	key->data = k.mv_data;
	key->len = k.mv_size;
	val->data = v.mv_data;
	val->len = v.mv_size;
	return 1;
}

/* Keys below the prefix seek to the prefix; keys past it end the scan on the next step. */
int store_scan_seek(struct store_scan *scan, const void *key, size_t key_len)
{
	size_t n = key_len < scan->prefix_len ? key_len : scan->prefix_len;
	int c = n ? memcmp(key, scan->prefix, n) : 0;

	if (key_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	if (c < 0 || (c == 0 && key_len <= scan->prefix_len)) {
		scan->state = SCAN_START;
		return 0;
	}
	memcpy(scan->target, key, key_len);
	scan->target_len = key_len;
	scan->state = SCAN_SEEK;
	return 0;
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

/*
 * Keys with fewer than `depth` elements after the prefix (the prefix's own
 * key, or a leaf above the wanted depth) name no element there: skipped.
 */
int store_scan_next_distinct(struct store_scan *scan, int depth,
			     struct store_val *key, struct store_val *val, size_t *child_end)
{
	size_t end;
	int rc;

	if (depth < 1)
		return -EINVAL;
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
	subtree_end(key->data, end, scan->target, &scan->target_len);
	scan->state = SCAN_SEEK;
	return 1;
}
