/*
 * store/lmdb_dir.c - the LMDB store's directory: what may be opened (owner,
 * trusted directories, no links, no foreign files), creating it with the
 * right modes, and removing what a failed or discarded create made.
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

#include "store/lmdb_int.h"


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
		store_say(why, why_len, "%s: %s", path, strerror(err));
		return -err;
	}
	if (S_ISLNK(sb.st_mode)) {
		store_say(why, why_len, "%s: is a symbolic link; refusing to follow it", path);
		return -ELOOP;
	}
	if (!S_ISREG(sb.st_mode)) {
		store_say(why, why_len, "%s: not a regular file; refusing it", path);
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
	} else if (sb.st_uid != geteuid() && !dir_is_trusted(dir)) {
		store_say(why, why_len, "%s: owned by uid %u, not by you (uid %u); refusing to open "
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
		else if (!S_ISREG(sb.st_mode))
			err = -EINVAL;	/* a link is not followed: O_NOFOLLOW gives the link */
		else if (chmod(proc, 0600) < 0)
			err = -errno;
		close(fd);
	}
	return err;
}
