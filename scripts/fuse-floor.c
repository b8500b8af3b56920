/*
 * scripts/fuse-floor.c - the write benchmarks' floor: a FUSE file system that
 * answers the requests kvfs answers but keeps only names and attributes in
 * memory and drops what is written, so a workload's time on it is what the
 * FUSE round trips cost by themselves (scripts/bench-write.sh, mode "floor").
 * A measuring tool, not a file system to keep anything in.
 */
#define FUSE_USE_VERSION 312
#include <fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_BUCKETS (1u << 18)

struct floor_node {
	char *path;
	struct stat st;
	struct floor_node *next;	/* in its bucket */
	struct floor_node *prev_all, *next_all;	/* every node, for readdir */
};

/* The one table of the daemon, as kvfs keeps one context. */
static struct floor_table {
	pthread_mutex_t lock;
	struct floor_node *buckets[FLOOR_BUCKETS];
	struct floor_node *all;
	atomic_ulong requests;
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned path_hash(const char *path)
{
	unsigned h = 2166136261u;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 16777619u;
	return h & (FLOOR_BUCKETS - 1);
}

static struct floor_node *find(const char *path)
{
	struct floor_node *n = table.buckets[path_hash(path)];

	while (n && strcmp(n->path, path) != 0)
		n = n->next;
	return n;
}

static void stamp_now(struct stat *st)
{
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* Links n (path owned by it) into the table. */
static void link_node(struct floor_node *n)
{
	unsigned b = path_hash(n->path);

	n->next = table.buckets[b];
	table.buckets[b] = n;
	n->prev_all = NULL;
	n->next_all = table.all;
	if (table.all)
		table.all->prev_all = n;
	table.all = n;
}

static void unlink_node(struct floor_node *n)
{
	struct floor_node **p = &table.buckets[path_hash(n->path)];

	while (*p != n)
		p = &(*p)->next;
	*p = n->next;
	if (n->prev_all)
		n->prev_all->next_all = n->next_all;
	else
		table.all = n->next_all;
	if (n->next_all)
		n->next_all->prev_all = n->prev_all;
}

static int add_owned(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	struct floor_node *n;
	int rc = 0;

	pthread_mutex_lock(&table.lock);
	if (find(path)) {
		rc = -EEXIST;
		goto out;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->path = strdup(path))) {
		free(n);
		rc = -ENOMEM;
		goto out;
	}
	n->st.st_mode = mode;
	n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
	n->st.st_uid = uid;
	n->st.st_gid = gid;
	n->st.st_blksize = 4096;
	stamp_now(&n->st);
	link_node(n);
out:
	pthread_mutex_unlock(&table.lock);
	return rc;
}

/* A new node owned by the caller of the request. */
static int add(const char *path, mode_t mode)
{
	struct fuse_context *ctx = fuse_get_context();

	atomic_fetch_add(&table.requests, 1);
	return add_owned(path, mode, ctx->uid, ctx->gid);
}

/* Runs fn on the node at path under the lock: its result, or -ENOENT. */
static int with_node(const char *path, int (*fn)(struct floor_node *, const void *), const void *arg)
{
	struct floor_node *n;
	int rc = -ENOENT;

	atomic_fetch_add(&table.requests, 1);
	pthread_mutex_lock(&table.lock);
	n = find(path);
	if (n)
		rc = fn(n, arg);
	pthread_mutex_unlock(&table.lock);
	return rc;
}

static int copy_stat(struct floor_node *n, const void *arg)
{
	*(struct stat *)arg = n->st;
	return 0;
}

static int floor_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	return with_node(path, copy_stat, st);
}

static int exists(struct floor_node *n, const void *arg)
{
	(void)n;
	(void)arg;
	return 0;
}

/* Whether child is a direct child of the directory dir ("/" or "/a/b"). */
static bool is_child(const char *dir, size_t dl, const char *child)
{
	if (dl == 1)
		return child[1] && !strchr(child + 1, '/');
	return strncmp(child, dir, dl) == 0 && child[dl] == '/' && !strchr(child + dl + 1, '/');
}

static int floor_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			 struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	size_t dl = strlen(path);

	(void)off;
	(void)fi;
	(void)flags;
	atomic_fetch_add(&table.requests, 1);
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	pthread_mutex_lock(&table.lock);
	for (struct floor_node *n = table.all; n; n = n->next_all)
		if (is_child(path, dl, n->path))
			fill(buf, strrchr(n->path, '/') + 1, &n->st, 0, 0);
	pthread_mutex_unlock(&table.lock);
	return 0;
}

static int floor_mkdir(const char *path, mode_t mode)
{
	return add(path, S_IFDIR | (mode & 07777));
}

static int floor_mknod(const char *path, mode_t mode, dev_t dev)
{
	(void)dev;
	return add(path, mode);
}

static int floor_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return add(path, S_IFREG | (mode & 07777));
}

static int truncate_to(struct floor_node *n, const void *arg)
{
	n->st.st_size = *(const off_t *)arg;
	stamp_now(&n->st);
	return 0;
}

static int floor_open(const char *path, struct fuse_file_info *fi)
{
	off_t zero = 0;

	return fi->flags & O_TRUNC ? with_node(path, truncate_to, &zero) :
	       with_node(path, exists, NULL);
}

static int floor_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	return with_node(path, truncate_to, &size);
}

static int grow_to(struct floor_node *n, const void *arg)
{
	off_t end = *(const off_t *)arg;

	if (n->st.st_size < end)
		n->st.st_size = end;
	n->st.st_blocks = (n->st.st_size + 511) / 512;
	stamp_now(&n->st);
	return 0;
}

static int floor_write(const char *path, const char *data, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	off_t end = off + (off_t)size;
	int rc;

	(void)data;	/* dropped: the floor keeps no content */
	(void)fi;
	rc = with_node(path, grow_to, &end);
	return rc < 0 ? rc : (int)size;
}

static int floor_read(const char *path, char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct stat st;
	int rc = floor_getattr(path, &st, fi);

	if (rc < 0)
		return rc;
	if (off >= st.st_size)
		return 0;
	if ((off_t)size > st.st_size - off)
		size = (size_t)(st.st_size - off);
	memset(buf, 0, size);
	return (int)size;
}

static int set_times(struct floor_node *n, const void *arg)
{
	const struct timespec *tv = arg;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (tv[0].tv_nsec != UTIME_OMIT)
		n->st.st_atim = tv[0].tv_nsec == UTIME_NOW ? now : tv[0];
	if (tv[1].tv_nsec != UTIME_OMIT)
		n->st.st_mtim = tv[1].tv_nsec == UTIME_NOW ? now : tv[1];
	n->st.st_ctim = now;
	return 0;
}

static int floor_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	(void)fi;
	return with_node(path, set_times, tv);
}

static int set_mode(struct floor_node *n, const void *arg)
{
	n->st.st_mode = (n->st.st_mode & S_IFMT) | (*(const mode_t *)arg & 07777);
	return 0;
}

static int floor_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	return with_node(path, set_mode, &mode);
}

static int set_owner(struct floor_node *n, const void *arg)
{
	const uid_t *ids = arg;

	if (ids[0] != (uid_t)-1)
		n->st.st_uid = ids[0];
	if (ids[1] != (uid_t)-1)
		n->st.st_gid = (gid_t)ids[1];
	return 0;
}

static int floor_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	uid_t ids[2] = { uid, (uid_t)gid };

	(void)fi;
	return with_node(path, set_owner, ids);
}

static void drop(struct floor_node *n)
{
	unlink_node(n);
	free(n->path);
	free(n);
}

static int floor_remove(const char *path)
{
	struct floor_node *n;

	atomic_fetch_add(&table.requests, 1);
	pthread_mutex_lock(&table.lock);
	n = find(path);
	if (n)
		drop(n);
	pthread_mutex_unlock(&table.lock);
	return n ? 0 : -ENOENT;
}

/* Moves n (and, for a directory, every node below it) from `from` to `to`. */
static int move(struct floor_node *n, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	struct floor_node *below = table.all;

	while (S_ISDIR(n->st.st_mode) && below) {
		struct floor_node *next = below->next_all;

		if (strncmp(below->path, from, fl) == 0 && below->path[fl] == '/') {
			char *p = malloc(tl + strlen(below->path + fl) + 1);

			if (!p)
				return -ENOMEM;
			sprintf(p, "%s%s", to, below->path + fl);
			unlink_node(below);
			free(below->path);
			below->path = p;
			link_node(below);
		}
		below = next;
	}
	char *p = strdup(to);

	if (!p)
		return -ENOMEM;
	unlink_node(n);
	free(n->path);
	n->path = p;
	link_node(n);
	return 0;
}

static int floor_rename(const char *from, const char *to, unsigned flags)
{
	struct floor_node *n, *old;
	int rc = 0;

	atomic_fetch_add(&table.requests, 1);
	pthread_mutex_lock(&table.lock);
	n = find(from);
	old = find(to);
	if (!n)
		rc = -ENOENT;
	else if (old && (flags & RENAME_NOREPLACE))
		rc = -EEXIST;
	else if (flags & ~RENAME_NOREPLACE)
		rc = -EINVAL;
	if (rc == 0 && old && old != n)
		drop(old);
	if (rc == 0 && old != n)
		rc = move(n, from, to);
	pthread_mutex_unlock(&table.lock);
	return rc;
}

static int floor_setxattr(const char *path, const char *name, const char *value, size_t size,
			  int flags)
{
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	return with_node(path, exists, NULL);	/* dropped */
}

/* The root's user.kvfs.stats, as bench-write.sh reads kvfs's: the requests answered. */
static int floor_getxattr(const char *path, const char *name, char *value, size_t size)
{
	char text[64];
	int len;

	atomic_fetch_add(&table.requests, 1);
	if (strcmp(path, "/") != 0 || strcmp(name, "user.kvfs.stats") != 0)
		return -ENODATA;
	len = snprintf(text, sizeof(text), "requests %lu\n", atomic_load(&table.requests));
	if (size == 0)
		return len;
	if (size < (size_t)len)
		return -ERANGE;
	memcpy(value, text, (size_t)len);
	return len;
}

static int floor_listxattr(const char *path, char *list, size_t size)
{
	(void)list;
	(void)size;
	return with_node(path, exists, NULL);	/* none */
}

static int floor_removexattr(const char *path, const char *name)
{
	(void)path;
	(void)name;
	atomic_fetch_add(&table.requests, 1);
	return -ENODATA;
}

static int floor_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	atomic_fetch_add(&table.requests, 1);
	return 0;
}

static int floor_release(const char *path, struct fuse_file_info *fi)
{
	return floor_flush(path, fi);
}

static int floor_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	return floor_flush(path, fi);
}

static int floor_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	atomic_fetch_add(&table.requests, 1);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = sv->f_bfree = sv->f_bavail = 1u << 24;
	sv->f_files = sv->f_ffree = 1u << 24;
	sv->f_namemax = 255;
	return 0;
}

/* Names and attributes cached for a day, as kvfs has them by default. */
static void *floor_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;	/* no writeback cache, as kvfs: measured, it sent 15.6 requests per file in cp -a, not 10.6 */
	cfg->entry_timeout = cfg->attr_timeout = 86400;
	cfg->kernel_cache = 1;
	return NULL;
}

static const struct fuse_operations floor_ops = {
	.init = floor_init,
	.getattr = floor_getattr,
	.readdir = floor_readdir,
	.mkdir = floor_mkdir,
	.mknod = floor_mknod,
	.create = floor_create,
	.open = floor_open,
	.truncate = floor_truncate,
	.write = floor_write,
	.read = floor_read,
	.utimens = floor_utimens,
	.chmod = floor_chmod,
	.chown = floor_chown,
	.unlink = floor_remove,
	.rmdir = floor_remove,
	.rename = floor_rename,
	.setxattr = floor_setxattr,
	.getxattr = floor_getxattr,
	.listxattr = floor_listxattr,
	.removexattr = floor_removexattr,
	.flush = floor_flush,
	.release = floor_release,
	.fsync = floor_fsync,
	.statfs = floor_statfs,
};

int main(int argc, char *argv[])
{
	if (add_owned("/", S_IFDIR | 0755, getuid(), getgid()) < 0)
		return 1;
	return fuse_main(argc, argv, &floor_ops, NULL);
}
