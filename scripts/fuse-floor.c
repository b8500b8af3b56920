/*
 * scripts/fuse-floor.c - the benchmarks' floor: a FUSE file system that
 * keeps names and attributes in memory, drops what is written and reads
 * back zeros, so a workload's time on it is what the FUSE round trips cost
 * by themselves (scripts/bench.sh and bench-write.sh, mode "floor").
 * A measuring tool, not a file system to keep anything in.
 *
 * It meets the kernel as kvfs does, so that the difference between the two
 * is kvfs's own work: libfuse's low-level API (node ids, lookup and forget),
 * the multi-threaded loop with up to 32 workers, default_permissions, names
 * and attributes cached for a day, no writeback cache, readdirplus, the
 * INIT flags libfuse 3.14 cannot send (FUSE_PARALLEL_DIROPS,
 * FUSE_HANDLE_KILLPRIV_V2: added to its reply as fs/transport.c does) and,
 * with -o io_uring, FUSE over io_uring through kvfs's own rings (fs/uring.c,
 * linked alone: it knows nothing of kvfs's model or store).
 *
 *   fuse-floor [-f] [-o io_uring] [-o seed=DIR] [-o FUSE options] MNT
 *
 * seed=DIR starts it holding DIR's names, modes, owners, sizes and times
 * (a fresh mount of a tree, for cold reads). The root's user.kvfs.stats
 * says, as kvfs's does, "requests N" (every request it answered) and
 * "transport io_uring" or "transport dev_fuse". Nodes live until it exits.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fs/uring_int.h"

#define FLOOR_BUCKETS (1u << 16)
#define FLOOR_TIMEOUT 86400.0	/* names and attributes: a day, as kvfs's default */
#define FLOOR_URING_PARAM "/sys/module/fuse/parameters/enable_uring"
/* The INIT flags kvfs adds to libfuse's reply (fs/transport.c), added here too. */
#define FLOOR_ADDED_FLAGS (FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2)

/* One name. Every field is guarded by fl.lock; the node id is its address. */
struct floor_node {
	struct floor_node *parent;	/* NULL: the root, or unlinked */
	char *name;
	struct stat st;
	struct floor_node *hash_next;	/* in its (parent, name) bucket */
	struct floor_node *kids;	/* a directory's children */
	struct floor_node *sib_prev, *sib_next;
	struct floor_node *all_next;	/* every node ever made, freed at exit */
};

/* The daemon's one state. */
static struct floor {
	pthread_mutex_t lock;	/* the nodes, the buckets, next_ino */
	struct floor_node root;
	struct floor_node *buckets[FLOOR_BUCKETS];
	struct floor_node *all;
	ino_t next_ino;
	atomic_ulong requests;	/* every request answered (no lock) */
	/* the INIT exchange and the rings, as fs/transport.c keeps them */
	struct fuse_session *se;
	bool want_uring;
	_Atomic uint64_t offered, init_unique;
	atomic_bool init_done;
	struct fs_uring *_Atomic uring;
} fl = { .lock = PTHREAD_MUTEX_INITIALIZER, .next_ino = 2 };

/* ---- the table of names ---- */

static unsigned name_hash(const struct floor_node *parent, const char *name)
{
	unsigned h = 2166136261u ^ (unsigned)(uintptr_t)parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h & (FLOOR_BUCKETS - 1);
}

static struct floor_node *node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &fl.root : (struct floor_node *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct floor_node *n)
{
	return n == &fl.root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* The child of parent named name, or NULL. Under fl.lock. */
static struct floor_node *child(struct floor_node *parent, const char *name)
{
	struct floor_node *n = fl.buckets[name_hash(parent, name)];

	while (n && (n->parent != parent || strcmp(n->name, name) != 0))
		n = n->hash_next;
	return n;
}

/* Links n under parent as name (owned by n). Under fl.lock. */
static void link_child(struct floor_node *parent, struct floor_node *n, char *name)
{
	unsigned b = name_hash(parent, name);

	n->parent = parent;
	n->name = name;
	n->hash_next = fl.buckets[b];
	fl.buckets[b] = n;
	n->sib_prev = NULL;
	n->sib_next = parent->kids;
	if (parent->kids)
		parent->kids->sib_prev = n;
	parent->kids = n;
}

/* Takes n out of its directory; the node itself stays (the kernel may still name it). */
static void unlink_child(struct floor_node *n)
{
	struct floor_node **p = &fl.buckets[name_hash(n->parent, n->name)];

	while (*p != n)
		p = &(*p)->hash_next;
	*p = n->hash_next;
	if (n->sib_prev)
		n->sib_prev->sib_next = n->sib_next;
	else
		n->parent->kids = n->sib_next;
	if (n->sib_next)
		n->sib_next->sib_prev = n->sib_prev;
	n->parent = NULL;
	free(n->name);
	n->name = NULL;
}

/* A new node under parent, with st's mode, owner and times; NULL: ENOMEM or EEXIST (errno). */
static struct floor_node *add_node(struct floor_node *parent, const char *name, const struct stat *st)
{
	struct floor_node *n = NULL;
	char *copy;

	pthread_mutex_lock(&fl.lock);
	if (child(parent, name)) {
		errno = EEXIST;
		goto out;
	}
	n = calloc(1, sizeof(*n));
	copy = strdup(name);
	if (!n || !copy) {
		free(n);
		free(copy);
		n = NULL;
		errno = ENOMEM;
		goto out;
	}
	n->st = *st;
	n->st.st_ino = fl.next_ino++;
	n->st.st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	n->st.st_blksize = 4096;
	link_child(parent, n, copy);
	n->all_next = fl.all;
	fl.all = n;
out:
	pthread_mutex_unlock(&fl.lock);
	return n;
}

static void stamp_now(struct stat *st)
{
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* ---- replies ---- */

static void note_request(void)
{
	atomic_fetch_add_explicit(&fl.requests, 1, memory_order_relaxed);
}

static void reply_entry_of(fuse_req_t req, struct floor_node *n)
{
	struct fuse_entry_param e = {
		.ino = ino_of(n), .entry_timeout = FLOOR_TIMEOUT, .attr_timeout = FLOOR_TIMEOUT,
	};

	pthread_mutex_lock(&fl.lock);
	e.attr = n->st;
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_entry(req, &e);
}

static void reply_attr_of(fuse_req_t req, struct floor_node *n)
{
	struct stat st;

	pthread_mutex_lock(&fl.lock);
	st = n->st;
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_attr(req, &st, FLOOR_TIMEOUT);
}

/* ---- the operations ---- */

static void floor_init(void *userdata, struct fuse_conn_info *conn)
{
	unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_AUTO_INVAL_DATA;

	(void)userdata;
	note_request();
	conn->want |= want & conn->capable;
	/* as kvfs: measured, a writeback cache sent 15.6 requests per file in cp -a, not 10.6 */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = 1U << 20;
	conn->time_gran = 1;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct floor_node *n;

	note_request();
	pthread_mutex_lock(&fl.lock);
	n = child(node_of(parent), name);
	pthread_mutex_unlock(&fl.lock);
	if (n)
		reply_entry_of(req, n);
	else
		fuse_reply_err(req, ENOENT);
}

static void floor_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	note_request();
	fuse_reply_none(req);
}

static void floor_forget_multi(fuse_req_t req, size_t n, struct fuse_forget_data *forgets)
{
	(void)n;
	(void)forgets;
	note_request();
	fuse_reply_none(req);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	note_request();
	reply_attr_of(req, node_of(ino));
}

/* A time of setattr: now, or the one given. */
static struct timespec given_time(int to_set, int now_flag, const struct timespec *t)
{
	struct timespec now;

	if (to_set & now_flag) {
		clock_gettime(CLOCK_REALTIME, &now);
		return now;
	}
	return *t;
}

static void floor_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			  struct fuse_file_info *fi)
{
	struct floor_node *n = node_of(ino);

	(void)fi;
	note_request();
	pthread_mutex_lock(&fl.lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		n->st.st_mode = (n->st.st_mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		n->st.st_uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->st.st_gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_SIZE)
		n->st.st_size = attr->st_size;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		n->st.st_atim = given_time(to_set, FUSE_SET_ATTR_ATIME_NOW, &attr->st_atim);
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		n->st.st_mtim = given_time(to_set, FUSE_SET_ATTR_MTIME_NOW, &attr->st_mtim);
	clock_gettime(CLOCK_REALTIME, &n->st.st_ctim);
	pthread_mutex_unlock(&fl.lock);
	reply_attr_of(req, n);
}

/* A node made by the caller of req (mknod, mkdir, create): 0 or an errno. */
static int make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		struct floor_node **out)
{
	const struct fuse_ctx *caller = fuse_req_ctx(req);
	struct stat st = { .st_mode = mode, .st_uid = caller->uid, .st_gid = caller->gid };

	note_request();
	stamp_now(&st);
	*out = add_node(node_of(parent), name, &st);
	return *out ? 0 : errno;
}

static void floor_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			dev_t rdev)
{
	struct floor_node *n;
	int err = make(req, parent, name, mode, &n);

	(void)rdev;
	if (err)
		fuse_reply_err(req, err);
	else
		reply_entry_of(req, n);
}

static void floor_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	floor_mknod(req, parent, name, S_IFDIR | (mode & 07777), 0);
}

static void floor_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			 struct fuse_file_info *fi)
{
	struct fuse_entry_param e = { .entry_timeout = FLOOR_TIMEOUT, .attr_timeout = FLOOR_TIMEOUT };
	struct floor_node *n;
	int err = make(req, parent, name, S_IFREG | (mode & 07777), &n);

	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	e.ino = ino_of(n);
	pthread_mutex_lock(&fl.lock);
	e.attr = n->st;
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_create(req, &e, fi);
}

/* unlink and rmdir: the name goes, the node stays until the floor exits. */
static void floor_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct floor_node *n;
	int err = ENOENT;

	note_request();
	pthread_mutex_lock(&fl.lock);
	n = child(node_of(parent), name);
	if (n && n->kids)
		err = ENOTEMPTY;
	else if (n)
		err = 0;
	if (!err)
		unlink_child(n);
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_err(req, err);
}

static int move(struct floor_node *from_dir, const char *name, struct floor_node *to_dir,
		const char *newname, unsigned flags)
{
	struct floor_node *n = child(from_dir, name), *old = child(to_dir, newname);
	char *copy;

	if (!n)
		return ENOENT;
	if (flags & ~(unsigned)RENAME_NOREPLACE)
		return EINVAL;
	if (old && (flags & RENAME_NOREPLACE))
		return EEXIST;
	if (old && old->kids)
		return ENOTEMPTY;
	if (old == n)
		return 0;
	copy = strdup(newname);
	if (!copy)
		return ENOMEM;
	if (old)
		unlink_child(old);
	unlink_child(n);
	link_child(to_dir, n, copy);
	return 0;
}

static void floor_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			 fuse_ino_t newparent, const char *newname, unsigned flags)
{
	int err;

	note_request();
	pthread_mutex_lock(&fl.lock);
	err = move(node_of(parent), name, node_of(newparent), newname, flags);
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_err(req, err);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct floor_node *n = node_of(ino);

	note_request();
	if (fi->flags & O_TRUNC) {
		pthread_mutex_lock(&fl.lock);
		n->st.st_size = 0;
		stamp_now(&n->st);
		pthread_mutex_unlock(&fl.lock);
	}
	/* as kvfs: a reader keeps the kernel's pages, and its close needs no flush */
	fi->keep_cache = 1;
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char zeros[1U << 20];	/* max_write's size: a short read would be EOF */
	struct floor_node *n = node_of(ino);
	off_t end;

	(void)fi;
	note_request();
	pthread_mutex_lock(&fl.lock);
	end = n->st.st_size;
	pthread_mutex_unlock(&fl.lock);
	if (off >= end)
		size = 0;
	else if ((off_t)size > end - off)
		size = (size_t)(end - off);
	if (size > sizeof(zeros))
		size = sizeof(zeros);
	fuse_reply_buf(req, zeros, size);
}

static void floor_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
			off_t off, struct fuse_file_info *fi)
{
	struct floor_node *n = node_of(ino);

	(void)buf;	/* dropped: the floor keeps no content */
	(void)fi;
	note_request();
	pthread_mutex_lock(&fl.lock);
	if (n->st.st_size < off + (off_t)size)
		n->st.st_size = off + (off_t)size;
	n->st.st_blocks = (n->st.st_size + 511) / 512;
	stamp_now(&n->st);
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_write(req, size);
}

/* flush, release, fsync, releasedir, opendir and the xattrs that change nothing */
static void reply_ok(fuse_req_t req)
{
	note_request();
	fuse_reply_err(req, 0);
}

static void floor_file_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	reply_ok(req);
}

static void floor_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	floor_file_ok(req, ino, fi);
}

static void floor_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	note_request();
	fi->cache_readdir = 0;
	fuse_reply_open(req, fi);
}

/*
 * One page of a directory: "." and ".." at offsets 1 and 2, then the
 * children, the k-th at offset k + 3 (the list is walked again for each
 * page: a floor's directories are listed whole, once). plus: readdirplus,
 * which makes each child's entry (a lookup the kernel then does not send).
 */
static size_t fill_dir(fuse_req_t req, struct floor_node *dir, char *buf, size_t size, off_t off,
		       bool plus)
{
	struct fuse_entry_param e = { .entry_timeout = FLOOR_TIMEOUT, .attr_timeout = FLOOR_TIMEOUT };
	struct floor_node *n = dir->kids;
	size_t used = 0, len;
	off_t k;

	for (k = 0; k < off - 2 && n; k++)
		n = n->sib_next;
	for (k = off; k < 2 || n; k++) {
		const char *name = k == 0 ? "." : k == 1 ? ".." : n->name;
		struct floor_node *of = k < 2 ? dir : n;

		e.ino = k < 2 && !plus ? ino_of(dir) : ino_of(of);
		e.attr = of->st;
		if (plus && k >= 2)
			len = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, k + 1);
		else if (plus)	/* . and ..: no entry, so the kernel takes no reference */
			len = fuse_add_direntry_plus(req, buf + used, size - used, name,
						     &(struct fuse_entry_param){ .attr = of->st }, k + 1);
		else
			len = fuse_add_direntry(req, buf + used, size - used, name, &e.attr, k + 1);
		if (len > size - used)
			break;
		used += len;
		if (k >= 2)
			n = n->sib_next;
	}
	return used;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	char *buf = malloc(size);
	size_t used;

	note_request();
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fl.lock);
	used = fill_dir(req, node_of(ino), buf, size, off, plus);
	pthread_mutex_unlock(&fl.lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, false);
}

static void floor_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			      struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, true);
}

static void floor_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = {
		.f_bsize = 4096, .f_frsize = 4096, .f_blocks = 1u << 24, .f_bfree = 1u << 24,
		.f_bavail = 1u << 24, .f_files = 1u << 24, .f_ffree = 1u << 24, .f_namemax = 255,
	};

	(void)ino;
	note_request();
	fuse_reply_statfs(req, &sv);
}

static void floor_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			   size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	reply_ok(req);	/* dropped */
}

/* The root's user.kvfs.stats, in kvfs's form (lines of "name value"). */
static int stats_text(char *text, size_t cap)
{
	return snprintf(text, cap, "requests %lu\ntransport %s\n", atomic_load(&fl.requests),
			fs_uring_serving(atomic_load(&fl.uring)) ? "io_uring" : "dev_fuse");
}

static void floor_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char text[128];
	int len;

	note_request();
	if (ino != FUSE_ROOT_ID || strcmp(name, "user.kvfs.stats") != 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	len = stats_text(text, sizeof(text));
	if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if (size < (size_t)len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, (size_t)len);
}

static void floor_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	note_request();
	if (size == 0)
		fuse_reply_xattr(req, 0);	/* none */
	else
		fuse_reply_buf(req, NULL, 0);
}

static void floor_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino;
	(void)name;
	note_request();
	fuse_reply_err(req, ENODATA);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.init = floor_init,
	.lookup = floor_lookup,
	.forget = floor_forget,
	.forget_multi = floor_forget_multi,
	.getattr = floor_getattr,
	.setattr = floor_setattr,
	.mknod = floor_mknod,
	.mkdir = floor_mkdir,
	.create = floor_create,
	.unlink = floor_remove,
	.rmdir = floor_remove,
	.rename = floor_rename,
	.open = floor_open,
	.read = floor_read,
	.write = floor_write,
	.flush = floor_file_ok,
	.release = floor_file_ok,
	.fsync = floor_fsync,
	.opendir = floor_opendir,
	.readdir = floor_readdir,
	.readdirplus = floor_readdirplus,
	.releasedir = floor_file_ok,
	.fsyncdir = floor_fsync,
	.statfs = floor_statfs,
	.setxattr = floor_setxattr,
	.getxattr = floor_getxattr,
	.listxattr = floor_listxattr,
	.removexattr = floor_removexattr,
};

/* ---- the transport: INIT's flags and the rings, as fs/transport.c ---- */

static void floor_log(void *arg, int prio, const char *line)
{
	(void)arg;
	(void)prio;
	fprintf(stderr, "fuse-floor: %s\n", line);
}

static ssize_t floor_io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	uint64_t offered = n > 0 ? fs_uring_init_offered(buf, (size_t)n) : 0;

	(void)userdata;
	if (offered) {
		atomic_store(&fl.offered, offered);
		atomic_store(&fl.init_unique, ((const struct fuse_in_header *)buf)->unique);
	}
	return n;
}

/* INIT's reply: amended, written, then (-o io_uring) the rings registered. */
static ssize_t floor_write_init(int fd, struct iovec *iov, int count)
{
	const struct fs_uring_host host = { .se = fl.se, .log = floor_log };
	size_t payload = fs_uring_init_amend(iov, count, atomic_load(&fl.offered),
					     FLOOR_ADDED_FLAGS, fl.want_uring);
	struct fs_uring *u;
	ssize_t n;
	int ret;

	atomic_store(&fl.init_done, true);
	if (fl.want_uring && !payload)
		floor_log(NULL, 0, "io_uring: not offered at INIT (is " FLOOR_URING_PARAM " Y?)");
	n = writev(fd, iov, count);
	if (n < 0 || !payload)
		return n;
	ret = fs_uring_start(&host, payload, &u);
	if (ret < 0)
		floor_log(NULL, 0, strerror(-ret));
	else
		atomic_store(&fl.uring, u);
	return n;
}

static ssize_t floor_io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	uint64_t init = atomic_load(&fl.init_unique);
	ssize_t n = fs_uring_reply(iov, count);

	(void)userdata;
	if (n != -2)
		return n;	/* a ring's request: its thread commits the reply */
	if (init != 0 && !atomic_load(&fl.init_done) && count >= 1 &&
	    iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == init)
		return floor_write_init(fd, iov, count);
	return writev(fd, iov, count);
}

/* ---- the daemon ---- */

static size_t seed_root_len;	/* of the seed directory's path, as nftw gives it */

/* Each name below the seed directory as a node (nftw visits parents first). */
static int seed_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct floor_node *dir = &fl.root;
	char rel[4096], *part, *save = NULL;

	(void)type;
	if (ftw->level == 0)
		return 0;
	snprintf(rel, sizeof(rel), "%s", path + seed_root_len);
	*strrchr(rel, '/') = '\0';	/* the directories above the name: "/a/b", or "" */
	for (part = strtok_r(rel, "/", &save); part && dir; part = strtok_r(NULL, "/", &save))
		dir = child(dir, part);
	if (!dir || !add_node(dir, path + ftw->base, st))
		return -1;
	return 0;
}

static int seed(char *dir)
{
	int ret;

	seed_root_len = strlen(dir);
	while (seed_root_len > 1 && dir[seed_root_len - 1] == '/')
		dir[--seed_root_len] = '\0';	/* so that a name's path is DIR/... */
	ret = nftw(dir, seed_one, 32, FTW_PHYS);
	if (ret != 0)
		fprintf(stderr, "fuse-floor: seed=%s: cannot copy its names\n", dir);
	return ret;
}

struct floor_opts {
	int io_uring;
	char *seed;
	int foreground;
};

static const struct fuse_opt floor_opt_spec[] = {
	{ "io_uring", offsetof(struct floor_opts, io_uring), 1 },
	{ "seed=%s", offsetof(struct floor_opts, seed), 0 },
	{ "-f", offsetof(struct floor_opts, foreground), 1 },
	FUSE_OPT_END
};

static void free_nodes(void)
{
	while (fl.all) {
		struct floor_node *n = fl.all;

		fl.all = n->all_next;
		free(n->name);
		free(n);
	}
}

/* Mounts at mnt and serves until unmounted: 0, or 1. */
static int serve(struct fuse_args *args, const char *mnt, const struct floor_opts *o)
{
	static const struct fuse_custom_io io = { .read = floor_io_read, .writev = floor_io_writev };
	struct fuse_loop_config *cfg;
	int ret = 1;

	fl.se = fuse_session_new(args, &floor_ops, sizeof(floor_ops), NULL);
	if (!fl.se)
		return 1;
	if (fuse_set_signal_handlers(fl.se) < 0)
		goto out_destroy;
	if (fuse_session_mount(fl.se, mnt) < 0)
		goto out_signals;
	if (fuse_session_custom_io(fl.se, &io, fuse_session_fd(fl.se)) < 0)
		fprintf(stderr, "fuse-floor: libfuse's own transport: INIT flags not added\n");
	fuse_daemonize(o->foreground);
	cfg = fuse_loop_cfg_create();
	if (cfg) {
		fuse_loop_cfg_set_max_threads(cfg, 32);
		ret = fuse_session_loop_mt(fl.se, cfg) < 0;
		fuse_loop_cfg_destroy(cfg);
	}
	fs_uring_stop(atomic_exchange(&fl.uring, NULL));
	fuse_session_unmount(fl.se);
out_signals:
	fuse_remove_signal_handlers(fl.se);
out_destroy:
	fuse_session_destroy(fl.se);
	return ret;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd;
	struct floor_opts o = { 0 };
	int ret = 1;

	fl.root.st.st_mode = S_IFDIR | 0755;
	fl.root.st.st_nlink = 2;
	fl.root.st.st_ino = FUSE_ROOT_ID;
	fl.root.st.st_uid = getuid();
	fl.root.st.st_gid = getgid();
	stamp_now(&fl.root.st);
	if (fuse_opt_parse(&args, &o, floor_opt_spec, NULL) < 0 ||
	    fuse_opt_add_arg(&args, "-odefault_permissions,subtype=floor,fsname=floor") < 0 ||
	    fuse_parse_cmdline(&args, &cmd) < 0)
		return 1;
	if (!cmd.mountpoint) {
		fprintf(stderr, "usage: fuse-floor [-f] [-o io_uring] [-o seed=DIR] MNT\n");
		goto out_args;
	}
	fl.want_uring = o.io_uring;
	o.foreground |= cmd.foreground;
	if (o.seed && seed(o.seed) != 0)
		goto out_mnt;
	ret = serve(&args, cmd.mountpoint, &o);
out_mnt:
	free(cmd.mountpoint);
	free_nodes();
out_args:
	free(o.seed);
	fuse_opt_free_args(&args);
	return ret;
}
