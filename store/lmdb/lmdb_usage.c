/*
 * store/lmdb/lmdb_usage.c - what the LMDB backend says about itself and the
 * abilities only it has: info, where the file's space goes and who reads
 * it (STORE_CAN_USAGE), sync (STORE_CAN_SYNC) and hot copies (STORE_CAN_HOT_COPY).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "store/lmdb/lmdb_int.h"

int lmdb_readers_check(struct store *st, unsigned *cleared)
{
	int dead = 0, rc = mdb_reader_check(lmdb_of(st)->env, &dead);

	if (cleared)
		*cleared = rc == 0 && dead > 0 ? (unsigned)dead : 0;
	return lmdb_err(rc);
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
	while ((rc = LMDB_ENGINE(mdb_cursor_get(c, &k, &v, MDB_NEXT))) == 0)
		if (v.mv_size >= sizeof(size_t))
			*pages += *(const size_t *)v.mv_data;
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int lmdb_usage(struct store *base, struct store_usage *out)
{
	struct lmdb_store *st = lmdb_of(base);
	struct store_txn *txn;
	MDB_envinfo info;
	MDB_stat ms;
	struct stat sb;
	char path[PATH_MAX];
	uint64_t free_pages;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store_read_begin(base, &txn);
	if (rc)
		return rc;
	mdb_env_info(st->env, &info);
	mdb_env_stat(st->env, &ms);
	rc = count_free_pages(lmdb_txn_of(txn)->txn, &free_pages);
	store_txn_end(txn);
	if (rc)
		return lmdb_err(rc);
	out->high_water_bytes = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	out->free_bytes = free_pages * ms.ms_psize;
	out->in_use_bytes = out->high_water_bytes > out->free_bytes ?
			    out->high_water_bytes - out->free_bytes : 0;
	snprintf(path, sizeof(path), "%s/data.mdb", base->name);
	if (lstat(path, &sb) == 0)
		out->file_bytes = (uint64_t)sb.st_size;
	out->stale_cleared = st->stale_cleared;
	/* Listed after our own transaction ended, so it is not counted. */
	rc = mdb_reader_list(st->env, usage_reader_line, out);
	return rc < 0 ? -EIO : 0;
}

int lmdb_info(struct store *base, struct store_info *out)
{
	struct lmdb_store *st = lmdb_of(base);
	struct store_txn *txn;
	MDB_envinfo info;
	MDB_stat ms;
	int rc;

	rc = store_read_begin(base, &txn);
	if (rc)
		return rc;
	mdb_env_info(st->env, &info);
	mdb_env_stat(st->env, &ms);
	memset(out, 0, sizeof(*out));
	out->map_size = info.me_mapsize;
	out->page_size = ms.ms_psize;
	out->used_bytes = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	out->last_txn_id = info.me_last_txnid;
	out->created_ns = base->created_ns;
	rc = LMDB_ENGINE(mdb_stat(lmdb_txn_of(txn)->txn, st->dbi[STORE_SPACE_DATA], &ms));
	out->entries = ms.ms_entries;
	store_txn_end(txn);
	return lmdb_err(rc);
}

/* store.c skips it for a read-only handle: nothing of ours to flush. */
int lmdb_sync(struct store *st)
{
	int rc = 0;

	if (lmdb_of(st)->queue)
		rc = lmdb_queue_flush(lmdb_of(st));	/* the queued batch committed first */
	return rc ? rc : lmdb_err(mdb_env_sync(lmdb_of(st)->env, 1));
}

/*
 * The copy runs its own read transaction, so it stays inside the gate for
 * its whole length: a write that needs to grow the map waits for it (see
 * store/lmdb/lmdb_int.h).
 */
int lmdb_copy(struct store *base, const char *dir)
{
	struct lmdb_store *st = lmdb_of(base);
	char path[PATH_MAX];
	int rc;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	lmdb_gate_enter(st, true);
	rc = LMDB_ENGINE(mdb_env_copy2(st->env, dir, MDB_CP_COMPACT));
	lmdb_gate_leave(st, true);
	if (rc)
		return lmdb_err(rc);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return chmod(path, 0600) < 0 ? -errno : 0;
}

