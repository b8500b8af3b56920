/*
 * tests/unit/test_store_backend.c - the seam (store/store.c): a store's
 * name chooses its backend, a URL of a backend not built in is refused
 * with a message and creates nothing, and abilities are declared by the
 * backend's table, not assumed: with a bit cleared the public call refuses
 * (or is the documented no-op) without reaching the backend.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_ops.h"
#include "tests/unit/unit.h"

static char tmp_root[64];

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static bool dir_is_empty(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", dir);
	return system(cmd) == 0;
}

static void test_name_is_url(void)
{
	CHECK(store_name_is_url("etcd://127.0.0.1:2379/docs"));
	CHECK(store_name_is_url("etcd://a:1,b:2/team/docs"));
	CHECK(store_name_is_url("svn+ssh://host/x"));
	CHECK(!store_name_is_url("/var/lib/kvfs"));
	CHECK(!store_name_is_url("relative/dir"));
	CHECK(!store_name_is_url("etcd:/not-a-url"));
	CHECK(!store_name_is_url("1etcd://x"));	/* a scheme starts with a letter */
	CHECK(!store_name_is_url("./etcd://x"));	/* a path that happens to hold :// */
	CHECK(!store_name_is_url(""));
	CHECK(!store_name_is_url(NULL));
}

static void test_name_chooses_backend(void)
{
	char why[256] = "";
	const struct store_ops *ops;

	CHECK(store_ops_for("/tmp/some/dir", why, sizeof(why)) == &store_lmdb_ops);
	CHECK(store_ops_for("rel", why, sizeof(why)) == &store_lmdb_ops);
	CHECK(strcmp(store_lmdb_ops.name, "lmdb") == 0);

	why[0] = '\0';
	ops = store_ops_for("etcd://127.0.0.1:1/p", why, sizeof(why));
#ifdef KVFS_ETCD
	CHECK(ops == &store_etcd_ops);
	CHECK(strcmp(ops->name, "etcd") == 0);
#else
	CHECK(ops == NULL);
	CHECK(strstr(why, "etcd backend is not built into this kvfs") != NULL);
	printf("# %s\n", why);
#endif

	why[0] = '\0';
	CHECK(store_ops_for("gopher://x/y", why, sizeof(why)) == NULL);
	CHECK(strstr(why, "unknown kind of store") != NULL);
	why[0] = '\0';
	CHECK(store_ops_for("", why, sizeof(why)) == NULL);
	CHECK(why[0] != '\0');
}

/* Without the backend an etcd:// name fails clearly, and no directory appears. */
static void test_url_without_backend(void)
{
	char cwd[4096], dir[128], why[256] = "";
	struct store *st = (struct store *)&st;	/* must become NULL */
	int rc;

	snprintf(dir, sizeof(dir), "%s/cwd", tmp_root);
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(dir) == 0);
	rc = store_open("etcd://127.0.0.1:1/team/docs", STORE_OPEN_CREATE, &st, why, sizeof(why));
#ifdef KVFS_ETCD
	/* built in: nothing listens on port 1, refused with the reason */
	CHECK_EQ_INT(rc, -ECONNREFUSED);
#else
	CHECK_EQ_INT(rc, -EPROTONOSUPPORT);
	CHECK(strstr(why, "etcd://127.0.0.1:1/team/docs") != NULL);
	CHECK(strstr(why, "not built into this kvfs") != NULL);
#endif
	CHECK(st == NULL);
	why[0] = '\0';
	rc = store_open("gopher://x/y", STORE_OPEN_CREATE, &st, why, sizeof(why));
	CHECK_EQ_INT(rc, -EPROTONOSUPPORT);
	CHECK(strstr(why, "unknown kind of store") != NULL);
	CHECK(dir_is_empty("."));	/* nothing taken for a directory and created */
	CHECK(chdir(cwd) == 0);
}

static struct store *open_lmdb(const char *name)
{
	char dir[128], why[256] = "";
	struct store *st = NULL;

	snprintf(dir, sizeof(dir), "%s/%s", tmp_root, name);
	if (store_open(dir, STORE_OPEN_CREATE, &st, why, sizeof(why)))
		fprintf(stderr, "#   open %s: %s\n", dir, why);
	return st;
}

static void test_lmdb_declares_abilities(void)
{
	struct store *st = open_lmdb("abilities");
	char dir[128];

	CHECK(st != NULL);
	if (!st)
		return;
	snprintf(dir, sizeof(dir), "%s/abilities", tmp_root);
	CHECK(strcmp(store_backend(st), "lmdb") == 0);
	CHECK(strcmp(store_name(st), dir) == 0);
	CHECK(store_can(st, STORE_CAN_SYNC));
	CHECK(store_can(st, STORE_CAN_HOT_COPY | STORE_CAN_USAGE | STORE_CAN_FEED));
	CHECK(store_can(st, 0));
	CHECK(!store_can(st, STORE_CAN_EXPIRE));	/* TTLs are the reaper's (model/ttl/ttl_space.c) */
	store_close(st);
}

static int put_one(struct store_txn *txn, void *arg)
{
	(void)arg;
	return store_put(txn, STORE_SPACE_DATA, "\x02k\x00", 3, "v", 1);
}

static int count_expiry(struct store_txn *txn, void *arg, enum store_space space,
			const uint8_t *key, size_t len, int64_t *deadline_ns)
{
	(void)txn, (void)space, (void)key, (void)len;
	(*(int *)arg)++;
	*deadline_ns = 1;
	return 0;
}

/* A put, then store_txn_expire_puts: LMDB has no engine expiry, so fn is never asked. */
static int put_expiring(struct store_txn *txn, void *arg)
{
	int ret = put_one(txn, NULL);

	return ret ? ret : store_txn_expire_puts(txn, count_expiry, arg);
}

static void test_lmdb_expire_puts_is_a_no_op(void)
{
	struct store *st = open_lmdb("expire");
	struct store_txn *txn;
	int asked = 0;

	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_EQ_INT(store_write(st, put_expiring, &asked), 0);
	CHECK_EQ_INT(asked, 0);
	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	CHECK_EQ_INT(store_txn_expire_puts(txn, count_expiry, &asked), -EROFS);
	store_txn_end(txn);
	store_close(st);
}

static int never_feed(void *arg, const struct store_change *c)
{
	(void)c;
	(*(int *)arg)++;
	return 0;
}

/*
 * The same LMDB store behind a table that declares nothing optional and
 * lacks the optional members store.c can do without: the public calls
 * then give the documented answers (no backend call is made: the members
 * are NULL), and the generic space_is_empty and distinct listing work.
 */
static void test_abilities_not_assumed(void)
{
	struct store_ops bare = store_lmdb_ops;
	const struct store_ops *real;
	struct store *st = open_lmdb("bare");
	struct store_usage u;
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	char copy[128];
	unsigned cleared = 7;
	uint64_t upto = 0, before;
	size_t end;
	int calls = 0;

	CHECK(st != NULL);
	if (!st)
		return;
	before = store_position(st);
	CHECK_EQ_INT(store_write(st, put_one, NULL), 0);
	bare.abilities = 0;
	bare.ability.sync = NULL;
	bare.admin.copy = NULL;
	bare.admin.usage = NULL;
	bare.admin.readers_check = NULL;
	bare.hint.space_is_empty = NULL;
	real = st->ops;
	st->ops = &bare;

	CHECK(!store_can(st, STORE_CAN_SYNC));
	CHECK(!store_can(st, STORE_CAN_SYNC | STORE_CAN_USAGE));
	CHECK_EQ_INT(store_sync(st), 0);		/* every commit durable: a no-op */
	snprintf(copy, sizeof(copy), "%s/bare-copy", tmp_root);
	CHECK_EQ_INT(store_copy(st, copy), -ENOTSUP);
	CHECK(access(copy, F_OK) != 0);		/* nothing made */
	CHECK_EQ_INT(store_usage(st, &u), -ENOTSUP);
	CHECK_EQ_INT(store_readers_check(st, &cleared), 0);
	CHECK_EQ_INT(cleared, 0);
	/* No feed declared: it cannot tell, whatever the store holds. */
	CHECK_EQ_INT(store_feed_read(st, before, never_feed, &calls, &upto), -ESTALE);
	CHECK_EQ_INT(calls, 0);
	CHECK(upto == store_position(st));
	CHECK(upto > before);

	/* store.c's own space_is_empty (a scan) and distinct listing. */
	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	CHECK(!store_space_is_empty(txn, STORE_SPACE_DATA));
	CHECK(store_space_is_empty(txn, STORE_SPACE_SCHEMA));
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan), 0);
	CHECK_EQ_INT(store_scan_next_distinct(scan, 1, &k, &v, &end), 1);
	CHECK_MEM(k.data, k.len, "\x02k\x00", 3);
	CHECK_EQ_INT(end, 3);
	CHECK_EQ_INT(store_scan_next_distinct(scan, 1, &k, &v, &end), 0);
	store_scan_close(scan);
	store_txn_end(txn);

	/* The real table again: the same calls reach LMDB. */
	st->ops = real;
	CHECK_EQ_INT(store_feed_read(st, before, never_feed, &calls, &upto), 0);
	CHECK_EQ_INT(calls, 1);		/* the put's key, from LMDB's log */
	CHECK_EQ_INT(store_usage(st, &u), 0);
	CHECK(u.file_bytes > 0);
	CHECK_EQ_INT(store_copy(st, copy), 0);
	CHECK(access(copy, F_OK) == 0);
	store_close(st);
}

/*
 * store_in_engine asks each backend's table (admin.in_engine): LMDB's
 * says whether the thread is inside its map, etcd maps nothing. Outside
 * any store call no thread is inside.
 */
static void test_in_engine_behind_the_table(void)
{
	CHECK(store_lmdb_ops.admin.in_engine != NULL);
#ifdef KVFS_ETCD
	CHECK(store_etcd_ops.admin.in_engine == NULL);
#endif
	CHECK(!store_in_engine());
}

int main(void)
{
	int rc;

	snprintf(tmp_root, sizeof(tmp_root), "/tmp/kvfs-backend-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_name_is_url);
	TEST(test_name_chooses_backend);
	TEST(test_url_without_backend);
	TEST(test_lmdb_declares_abilities);
	TEST(test_lmdb_expire_puts_is_a_no_op);
	TEST(test_abilities_not_assumed);
	TEST(test_in_engine_behind_the_table);
	rc = UNIT_DONE();
	nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
