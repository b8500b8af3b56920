/*
 * fs/fs.h - the public face of the FUSE adapter: `kvfs mount` serves a store
 * as a live filesystem. Only fs/ includes the FUSE headers; everything it
 * shows comes from model/model.h.
 */
#ifndef KVFS_FS_H
#define KVFS_FS_H

#include <stdbool.h>

struct fs_options {
	const char *store_dir;		/* the store: its directory, or a URL (etcd://...) */
	const char *mountpoint;		/* an existing directory */
	bool foreground;		/* -f: do not detach; log to stderr */
	bool read_only;			/* -o ro: read-only store, writes get EROFS */
	bool create;			/* --create: create a missing store */
	bool debug;			/* -o debug: trace every operation */
	const char *extra_options;	/* comma list passed to FUSE -o (may be NULL) */
};

/*
 * Mounts the store and serves it until it is unmounted (fusermount3 -u,
 * `kvfs umount`, SIGTERM, SIGINT or SIGHUP). Errors found before serving
 * starts (store cannot be opened, bad mountpoint, bad options) are printed to
 * stderr and give a non-zero result, also when daemonizing: the parent waits
 * until the detached child has mounted. Returns a process exit code: in the
 * foreground (and in the detached child) when serving ends, in the parent of
 * a daemon once the child is serving.
 */
int fs_mount_main(const struct fs_options *opts);

enum fs_mount_state {
	FS_MOUNT_NONE,		/* nothing is mounted at the directory */
	FS_MOUNT_LIVE,		/* a mount that answers */
	FS_MOUNT_DEAD,		/* a FUSE mount whose daemon is gone (ENOTCONN) */
};
/*
 * What is mounted at dir (from /proc/self/mountinfo, the newest mount on
 * it); fstype gets its type ("fuse.kvfs" for kvfs) when one is.
 */
enum fs_mount_state fs_mount_probe(const char *dir, char *fstype, size_t cap);

#endif
