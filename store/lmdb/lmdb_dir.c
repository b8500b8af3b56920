/*
 * store/lmdb/lmdb_dir.c - the LMDB store's directory: what may be opened (owner,
 * nobody else writing to it, trusted directories, no symbolic or hard
 * links, no foreign files), creating it with the right modes, and removing
 * what a failed or discarded create made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/lmdb/lmdb_int.h"


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
 * A directory others can change is refused, as git refuses a repository
 * owned by someone else: its owner, or anyone who may write to it, could
 * put a link in place of data.mdb or lock.mdb between our look at them and
 * LMDB's open (lmdb_dir_verify), or a lock file of their own making. The
 * sticky bit does not help: others still create the files that are
 * missing, and lock.mdb is made afresh whenever it is. Group write is
 * left alone (a user's private group, a team's shared store).
 * KVFS_SAFE_DIRECTORY is the one override, for both.
 */
static int dir_check_safe(const char *dir, const struct stat *sb, char *why, size_t why_len)
{
	if (sb->st_uid != geteuid() && !dir_is_trusted(dir)) {
		store_say(why, why_len, "%s: owned by uid %u, not by you (uid %u); refusing to open "
		    "it (set KVFS_SAFE_DIRECTORY=%s if you trust it)", dir,
		    (unsigned)sb->st_uid, (unsigned)geteuid(), dir);
		return -EPERM;
	}
	if ((sb->st_mode & S_IWOTH) && !dir_is_trusted(dir)) {
		store_say(why, why_len, "%s: writable by other users (mode %04o), who could put "
		    "their own files or links in place of data.mdb or lock.mdb; refusing to open "
		    "it (chmod o-w it, or set KVFS_SAFE_DIRECTORY=%s if you trust them)", dir,
		    (unsigned)(sb->st_mode & 07777), dir);
		return -EPERM;
	}
	return 0;
}

/*
 * Why a store file must not be opened, or NULL: anything but a regular
 * file with one name. A symbolic link or a second hard link would make
 * LMDB write (lock.mdb at every open, data.mdb at every commit) into
 * another file: with a hard link, into whatever file shares the inode.
 */
static const char *store_file_refusal(const struct stat *sb)
{
	if (S_ISLNK(sb->st_mode))
		return "is a symbolic link; refusing to follow it";
	if (!S_ISREG(sb->st_mode))
		return "not a regular file; refusing it";
	if (sb->st_nlink != 1)
		return "has more than one hard link; refusing to open it (LMDB would "
		       "write into the file it is linked to)";
	return NULL;
}

static int store_file_refusal_err(const struct stat *sb)
{
	return S_ISLNK(sb->st_mode) ? -ELOOP : S_ISREG(sb->st_mode) ? -EMLINK : -EINVAL;
}

/*
 * Looks at one of the store's files without following a link: 1 it is a
 * regular file with one link (its size in *size, which file in *id), 0 it
 * does not exist, <0 refused with why. LMDB opens the files by name
 * itself, so this is checked before it does, and lmdb_dir_verify checks
 * again after.
 */
static int store_file_state(const char *dir, const char *name, off_t *size,
			    struct lmdb_file_id *id, char *why, size_t why_len)
{
	char path[PATH_MAX];
	const char *refusal;
	struct stat sb;
	int err;

	*id = (struct lmdb_file_id){ 0, 0 };
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &sb) < 0) {
		err = errno;
		if (err == ENOENT)
			return 0;
		store_say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	refusal = store_file_refusal(&sb);
	if (refusal) {
		store_say(why, why_len, "%s: %s", path, refusal);
		return store_file_refusal_err(&sb);
	}
	if (size)
		*size = sb.st_size;
	*id = (struct lmdb_file_id){ sb.st_dev, sb.st_ino };
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
		store_say(why, why_len, "%s: %s", dir, strerror(err));
		return -err;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "lock.mdb"))
			break;
	closedir(d);
	if (de) {
		store_say(why, why_len, "%s: not empty and not a kvfs store; refusing to create a "
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
	store_say(why, why_len, "cannot create %s: %s", dir, strerror(err));
	return -err;
}

/*
 * Makes sure dir exists (creating it if allowed), is ours, and holds either
 * a store or, when creating, nothing. Records in st what is about to be
 * created, for store_close_discard.
 */
int lmdb_dir_prepare(struct lmdb_store *ls, const char *dir, unsigned flags, char *why,
		     size_t why_len)
{
	bool create = (flags & STORE_OPEN_CREATE) && !(flags & STORE_OPEN_READONLY);
	off_t size = 0;
	struct stat sb;
	int err, data, lock;

	if (stat(dir, &sb) < 0) {
		err = errno;
		if (err != ENOENT || !create) {
			store_say(why, why_len, "%s: %s", dir, strerror(err));
			return -err;
		}
		if ((err = dir_create(dir, why, why_len)) < 0)
			return err;
		ls->created_dir = true;
	} else if (!S_ISDIR(sb.st_mode)) {
		store_say(why, why_len, "%s: not a directory", dir);
		return -ENOTDIR;
	} else if ((err = dir_check_safe(dir, &sb, why, why_len)) < 0) {
		return err;
	}
	data = store_file_state(dir, "data.mdb", &size, &ls->data_id, why, why_len);
	if (data < 0)
		return data;
	lock = store_file_state(dir, "lock.mdb", NULL, &ls->lock_id, why, why_len);
	if (lock < 0)
		return lock;
	ls->created_lock = lock == 0;
	if (data == 1 && size == 0 && !create) {
		store_say(why, why_len, "%s: data.mdb is empty (a store whose creation was cut off?)", dir);
		return -EIO;
	}
	if (data == 1 && size > 0 && size < 2 * 4096) {
		store_say(why, why_len, "%s: store is damaged: data.mdb is truncated (%lld bytes, "
		    "shorter than its two header pages)", dir, (long long)size);
		return -EIO;
	}
	if (data == 0 && !create) {
		store_say(why, why_len, "%s: no kvfs store here (no data.mdb)", dir);
		return -ENOENT;
	}
	if (data == 0 && !ls->created_dir && (err = dir_check_empty(dir, why, why_len)) < 0)
		return err;
	ls->created_data = data == 0 || size == 0;
	return 0;
}

/*
 * One file again, after LMDB opened it by name: the name (and LMDB's
 * descriptor fd, when we have it, else -1) must lead to one regular file
 * with one link, and to the file store_file_state saw, if it saw one. A
 * lock.mdb that was not there and still is not is fine: a read-only open
 * on a read-only file system runs without one.
 */
static int store_file_recheck(const char *dir, const char *name, int fd,
			      const struct lmdb_file_id *before, char *why, size_t why_len)
{
	char path[PATH_MAX];
	struct stat by_name, by_fd;
	const char *refusal;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fd < 0 && !before->ino && lstat(path, &by_name) < 0 && errno == ENOENT)
		return 0;
	if (lstat(path, &by_name) < 0 || (fd >= 0 && fstat(fd, &by_fd) < 0)) {
		err = errno;
		store_say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	if (fd < 0)
		by_fd = by_name;
	refusal = store_file_refusal(&by_name);
	if (refusal) {
		err = store_file_refusal_err(&by_name);
	} else if ((refusal = store_file_refusal(&by_fd))) {
		err = store_file_refusal_err(&by_fd);
	} else if (by_fd.st_dev != by_name.st_dev || by_fd.st_ino != by_name.st_ino ||
		   (before->ino && (by_name.st_dev != before->dev ||
				    by_name.st_ino != before->ino))) {
		refusal = "was replaced while the store was being opened; refusing it";
		err = -EPERM;
	}
	if (!refusal)
		return 0;
	store_say(why, why_len, "%s: %s", path, refusal);
	return err;
}

/*
 * LMDB opens its two files by name, so a name swapped for a link between
 * lmdb_dir_prepare and mdb_env_open would get past the first look. The
 * data file is checked here on LMDB's own descriptor, before anything is
 * written to it (opening an existing store only reads it). What remains:
 * LMDB keeps the lock file's descriptor to itself and writes the file as
 * it opens it, so a lock.mdb swapped in that window is only found here,
 * after the fact, by its name. Swapping needs write access to the
 * directory, which lmdb_dir_prepare leaves to its owner (and whomever
 * KVFS_SAFE_DIRECTORY trusts).
 */
int lmdb_dir_verify(struct lmdb_store *ls, const char *dir, char *why, size_t why_len)
{
	mdb_filehandle_t fd;
	int err;

	if (mdb_env_get_fd(ls->env, &fd) != 0)
		fd = -1;
	err = store_file_recheck(dir, "data.mdb", fd, &ls->data_id, why, why_len);
	if (err == 0)
		err = store_file_recheck(dir, "lock.mdb", -1, &ls->lock_id, why, why_len);
	return err;
}

/*
 * Undoes what a failed or discarded open created: the files it created,
 * and the directory when it made that too. Never removes anything that
 * was there before.
 */
void lmdb_dir_undo_create(struct lmdb_store *ls)
{
	char path[PATH_MAX];

	if (!ls->base.name)
		return;
	if (ls->created_data) {
		snprintf(path, sizeof(path), "%s/data.mdb", ls->base.name);
		unlink(path);
	}
	if (ls->created_lock) {
		snprintf(path, sizeof(path), "%s/lock.mdb", ls->base.name);
		unlink(path);
	}
	if (ls->created_dir)
		rmdir(ls->base.name);
}

/*
 * LMDB creates its files 0600 minus the umask; make them exactly 0600, never
 * through a link. Through O_PATH descriptors: closing an ordinary one on
 * lock.mdb would drop this process's fcntl lock on it (POSIX locks are per
 * process and file), and the next process to open the store would then
 * think itself alone, reset the lock file's mutexes, and write at the same
 * time as we do.
 */
int lmdb_dir_fix_modes(const char *dir)
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
		else if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)
			err = -EINVAL;	/* a link is not followed: O_NOFOLLOW gives the link */
		else if (chmod(proc, 0600) < 0)
			err = -errno;
		close(fd);
	}
	return err;
}
