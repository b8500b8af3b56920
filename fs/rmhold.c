/*
 * fs/rmhold.c - removals held in table rows, so that `rm -r ROW` removes a
 * row whole (ops_int.h says what is held and when it ends). rm -r (GNU
 * fts) unlinks each name of a directory, then removes the directory; the
 * mount cannot know at the first unlink that the row goes next, and a
 * table judges each unlink on the row it leaves: it refuses the unlink of
 * a required field, and accepts the unlinks in a row another row
 * references, whose removal it then refuses (EBUSY) with the row emptied.
 *
 * So such an unlink (or rmdir of a directory in a row) is held: the model
 * changes nothing, the caller sees success, and the name is hidden (lookup
 * ENOENT, listings skip it; the kernel dropped its entry at the unlink).
 * The rmdir of a directory whose stored names are all held removes it
 * whole in one model call (model_remove_known): the row's index entries
 * go with it and its references are checked; refused, the held names come
 * back. The same transaction finds that the directory holds no name but
 * the held ones: a name another process wrote there since the unlinks is
 * neither removed nor its rules skipped, the rmdir fails (ENOTEMPTY) as
 * on a disk, and the holds are left to be tried alone. A hold nothing took is tried for real once the mount
 * made no removal for FS_RMHOLD_MS (rm -r may spend longer than that on a
 * big subtree between a row's first unlink and its rmdir), at an fsync or
 * fsyncdir of a directory above it (or of a file beside it: an fsync
 * elsewhere must not cut into an rm -r), and at unmount. A failure that
 * may pass (the store unreachable or full) keeps the hold for a later try.
 *
 * The state is on the held node (rm_held, a ref, a link in ctx->rmhold)
 * under ctx->lock, so a hold follows renames of the directories above it
 * and a lookup finds it through the node table. A removal and its hold,
 * an rmdir that takes the holds below it, and an attempt for real each run
 * inside the exclusive write section, so none of them sees another half
 * done. A create or rename onto a held name ends the hold only once it
 * succeeded, so that a write a rule refuses leaves the removal standing
 * (the name hidden) rather than the old value shown again: a rename in its
 * own section; a create once its file is open (an attempt for real
 * running before that either removed the name, which the create makes
 * anew, or was refused, and the create opens it truncated), the name then
 * shown while the file is open and held again when its first commit is
 * refused (fs_rmhold_again). The kernel serializes a create in a
 * directory with the rmdir of that directory (both lock it), so a name
 * cannot be re-created while its row goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs_int.h"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A hold that ended, handled once ctx->lock is released (pinned: one ref). */
struct ended {
	struct fs_node *node;
	struct fs_node *dir;	/* its parent, pinned too */
	char *back;		/* refused: its name (heap), which the kernel must ask again */
};

struct ended_vec {
	struct ended *v;
	size_t n, cap;
};

/* ctx->lock held. node is strictly below top. */
static bool is_below(const struct fs_node *node, const struct fs_node *top)
{
	for (const struct fs_node *n = node->parent; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}

/*
 * ctx->lock held. Ends node's hold: unlinked, uncounted, its ref moved to
 * out (with one on its parent) for end_finish; dropped when out is NULL
 * or full. A name back gets a new node at its next lookup (the old one
 * stays with whatever the kernel still holds: a directory the kernel saw
 * removed is dead to it).
 */
static void end_locked(struct fs_ctx *ctx, struct fs_node *node, bool back, struct ended_vec *out)
{
	char *name = NULL;

	if (node->held_prev)
		node->held_prev->held_next = node->held_next;
	else
		ctx->rmhold.head = node->held_next;
	if (node->held_next)
		node->held_next->held_prev = node->held_prev;
	node->held_prev = node->held_next = NULL;
	node->rm_held = node->rm_held_dir = node->rm_held_failed = false;
	node->parent->nheld--;
	atomic_fetch_sub(&ctx->rmhold.n, 1);
	if (back) {
		node->parent->dir_gen = 0;	/* the next opendir drops the kernel's listing */
		fs_node_unhash_locked(ctx, node);
		name = strdup(node->name);
	}
	if (out && out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 16;
		struct ended *v = realloc(out->v, cap * sizeof(*v));

		if (v) {
			out->v = v;
			out->cap = cap;
		}
	}
	if (!out || out->n == out->cap) {
		free(name);	/* the kernel asks at the next lookup all the same */
		fs_node_unref_locked(ctx, node);
		return;
	}
	fs_node_ref_locked(node->parent);
	out->v[out->n++] = (struct ended){ node, node->parent, name };
}

/* Without ctx->lock: the kernel forgets what it had of the names back; the refs go. */
static void end_finish(struct fs_ctx *ctx, struct ended_vec *ev)
{
	for (size_t i = 0; i < ev->n; i++) {
		struct ended *e = &ev->v[i];

		if (e->back) {
			fs_inval_entry(ctx, fs_node_ino(ctx, e->dir), e->back, strlen(e->back));
			free(e->back);
		}
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, e->node);
		fs_node_unref_locked(ctx, e->dir);
		pthread_mutex_unlock(&ctx->lock);
	}
	free(ev->v);
}

/* ctx->lock held. Ends every hold strictly below top. */
static void end_below_locked(struct fs_ctx *ctx, struct fs_node *top, bool back,
			     struct ended_vec *out)
{
	struct fs_node *h, *next;

	for (h = ctx->rmhold.head; h; h = next) {
		next = h->held_next;	/* held itself: not freed by ending h */
		if (is_below(h, top))
			end_locked(ctx, h, back, out);
	}
}

/* ctx->lock held. name in dir when its removal is held, else NULL. */
static struct fs_node *held_child_locked(struct fs_ctx *ctx, struct fs_node *dir,
					 const char *name)
{
	struct fs_node *node = dir->nheld ? fs_node_child_locked(ctx, dir, name, false) : NULL;

	return node && node->rm_held ? node : NULL;
}

bool fs_rmhold_hidden(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	bool held;

	if (!atomic_load(&ctx->rmhold.n))
		return false;
	pthread_mutex_lock(&ctx->lock);
	held = held_child_locked(ctx, dir, name);
	pthread_mutex_unlock(&ctx->lock);
	return held;
}

/* A removal's refusal that rm -r of the row would not meet. */
static bool hold_wanted(int ret, const struct model_error *err)
{
	return (ret == -EBUSY && err->reason == MODEL_REASON_ROW_PINNED) ||
	       (ret == -EINVAL && err->reason == MODEL_REASON_TABLE_RULE);
}

/* In the exclusive section: holds name in dir; the holds below it end in it. */
static int hold_add(struct fs_ctx *ctx, struct fs_node *dir, const char *name, bool is_dir)
{
	struct fs_node *node;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, true);
	if (!node) {
		pthread_mutex_unlock(&ctx->lock);
		return -ENOMEM;
	}
	if (!node->rm_held) {
		if (is_dir)
			end_below_locked(ctx, node, false, NULL);	/* tried with it, as rm -r */
		fs_node_ref_locked(node);
		node->rm_held = true;
		node->rm_held_dir = is_dir;
		node->held_prev = NULL;
		node->held_next = ctx->rmhold.head;
		if (node->held_next)
			node->held_next->held_prev = node;
		ctx->rmhold.head = node;
		dir->nheld++;
		dir->dir_gen = 0;
		atomic_fetch_add(&ctx->rmhold.n, 1);
	}
	ctx->rmhold.last_ns = mono_ns();
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * In the exclusive section: the names held directly in name in dir, sorted
 * (heap, names_free); NULL when none is (or out of memory).
 */
static char **held_names(struct fs_ctx *ctx, struct fs_node *dir, const char *name, size_t *n)
{
	struct fs_node *top, *h;
	char **names = NULL;
	size_t i = 0;

	pthread_mutex_lock(&ctx->lock);
	top = fs_node_child_locked(ctx, dir, name, false);
	if (top && top->nheld)
		names = calloc(top->nheld, sizeof(*names));
	for (h = ctx->rmhold.head; names && h; h = h->held_next) {
		if (h->parent != top)
			continue;
		names[i] = strdup(h->name);
		if (!names[i++]) {
			names_free(names, i);
			names = NULL;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	if (names)
		qsort(names, i, sizeof(*names), name_cmp);
	*n = i;
	return names;
}

/*
 * The test hook KVFS_TEST_ROW_GATE names a FIFO: before the removal of a
 * directory with held names, the daemon opens it and reads it to its end,
 * so that a test (tests/75) writes through the store at that point, where
 * the removal must see what it wrote.
 */
static void test_gate(void)
{
	const char *fifo = getenv("KVFS_TEST_ROW_GATE");
	ssize_t got;
	char c;
	int fd;

	if (!fifo || (fd = open(fifo, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	do
		got = read(fd, &c, 1);
	while (got > 0 || (got < 0 && errno == EINTR));
	close(fd);
}

int fs_rmhold_removal(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		      const char *path, unsigned flags, int *ret, struct model_error *err,
		      bool *whole)
{
	bool is_dir = flags & MODEL_REMOVE_DIR;
	char **names = NULL;
	size_t n = 0;

	*whole = false;
	if (*ret == -ENOTEMPTY && is_dir)
		names = held_names(ctx, dir, name, &n);
	if (names) {
		/* a name not held there (written by another since) keeps it: -ENOTEMPTY */
		test_gate();
		memset(err, 0, sizeof(*err));
		*ret = model_remove_known(ctx->model, path, (const char *const *)names, n, err);
		*whole = *ret != -ENOTEMPTY;
		names_free(names, n);
	}
	if (*ret == 0 || !hold_wanted(*ret, err))
		return 0;
	fs_trace(ctx, "%s: removal held until its row goes: %s", path, err->msg);
	*whole = false;
	*ret = hold_add(ctx, dir, name, is_dir);
	return 1;
}

void fs_rmhold_end_below(struct fs_ctx *ctx, struct fs_node *dir, const char *name, bool back)
{
	struct ended_vec ev = { 0 };
	struct fs_node *node;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, false);
	if (node)
		end_below_locked(ctx, node, back, &ev);
	pthread_mutex_unlock(&ctx->lock);
	end_finish(ctx, &ev);
}

/* ctx->lock held. No removal in the mount for FS_RMHOLD_MS: rm -r has moved on. */
static bool idle_locked(const struct fs_ctx *ctx)
{
	return mono_ns() - ctx->rmhold.last_ns >= (int64_t)FS_RMHOLD_MS * 1000000;
}

void fs_rmhold_touch(struct fs_ctx *ctx)
{
	if (!atomic_load(&ctx->rmhold.n))
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->rmhold.last_ns = mono_ns();
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * A failure of a removal tried for real that says nothing of the row (the
 * store was unreachable, full or failing): the hold stays for a later try.
 */
static bool may_pass(int ret)
{
	switch (-ret) {
	case EIO: case ENOSPC: case EDQUOT: case ENOMEM: case ENOBUFS: case EAGAIN:
	case EINTR: case ETIMEDOUT: case ECONNRESET: case ECONNREFUSED: case ECONNABORTED:
	case EHOSTUNREACH: case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

/* How a settle tries its holds. */
enum {
	SETTLE_IDLE = 1,	/* only once the mount is idle (checked again in the section) */
	SETTLE_LAST = 2,	/* unmount: a failure that may pass ends the hold too */
};

/* After a held removal done for real: what remove_name drops with a removed node. */
static void removed_for_real(struct fs_ctx *ctx, struct fs_node *node)
{
	fs_want_type_clear(ctx, node);
	fs_node_drop_pending_below(ctx, node);	/* pending files in a removed array */
}

/*
 * One held removal tried for real, in its own exclusive section: removed,
 * or refused (logged, for user.kvfs.error) and shown again. A failure
 * that may pass keeps the hold (logged once) and is returned; 0 otherwise.
 */
static int try_one(struct fs_ctx *ctx, struct fs_node *node, unsigned how)
{
	struct ended_vec ev = { 0 };
	struct model_error err = { 0 };
	struct fs_node *dir = NULL;
	char *path = NULL, *name = NULL;
	bool is_dir = false, held, keep, first = false;
	int ret;

	fs_write_begin_excl(ctx);
	pthread_mutex_lock(&ctx->lock);
	if (node->rm_held && (!(how & SETTLE_IDLE) || idle_locked(ctx))) {
		dir = node->parent;
		fs_node_ref_locked(dir);
		is_dir = node->rm_held_dir;
		name = strdup(node->name);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!dir) {
		fs_write_end(ctx, 0);	/* ended meanwhile, or a removal came */
		return 0;
	}
	ret = name ? fs_node_path(ctx, node, NULL, &path) : -ENOMEM;	/* -ENOENT: its row went */
	if (ret == 0)
		ret = model_remove(ctx->model, path, is_dir ? MODEL_REMOVE_RECURSIVE :
				   MODEL_REMOVE_LEAF, &err);
	keep = ret < 0 && may_pass(ret) && !(how & SETTLE_LAST);
	pthread_mutex_lock(&ctx->lock);
	held = node->rm_held;	/* false: a create took the name meanwhile (no section) */
	if (held && !keep)
		end_locked(ctx, node, ret < 0 && ret != -ENOENT, &ev);
	else if (held) {
		first = !node->rm_held_failed;
		node->rm_held_failed = true;
		ctx->rmhold.last_ns = mono_ns();	/* the watcher's next try waits FS_RMHOLD_MS */
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0)
		fs_node_detach(ctx, dir, name);	/* before a committer can take the path */
	fs_write_end(ctx, ret);
	if (ret < 0 && ret != -ENOENT && held && (!keep || first))
		fs_log_model(ctx, ret, &err, path ? path : "a removal held in a row");
	else if (ret == 0)
		fs_trace(ctx, "held removal of %s done", path);
	if (ret == 0)
		removed_for_real(ctx, node);
	end_finish(ctx, &ev);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, dir);
	pthread_mutex_unlock(&ctx->lock);
	free(name);
	free(path);
	return keep && held ? ret : 0;
}

/*
 * Tries the holds strictly below top (every hold when top is NULL), each
 * in its own section; the first failure that may pass is returned.
 */
static int settle_below(struct fs_ctx *ctx, struct fs_node *top, unsigned how)
{
	struct fs_node **todo = NULL, *h;
	size_t n = 0, max;
	int ret = 0, r;

	pthread_mutex_lock(&ctx->lock);
	max = atomic_load(&ctx->rmhold.n);
	if (max && (!(how & SETTLE_IDLE) || idle_locked(ctx)))
		todo = calloc(max, sizeof(*todo));
	for (h = ctx->rmhold.head; todo && h && n < max; h = h->held_next) {
		if (top && !is_below(h, top))
			continue;
		fs_node_ref_locked(h);
		todo[n++] = h;
	}
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < n; i++) {
		r = try_one(ctx, todo[i], how);
		if (r < 0 && ret == 0)
			ret = r;
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, todo[i]);
		pthread_mutex_unlock(&ctx->lock);
	}
	free(todo);
	return ret;
}

void fs_rmhold_settle(struct fs_ctx *ctx, bool all)
{
	if (ctx->read_only || !atomic_load(&ctx->rmhold.n))
		return;
	settle_below(ctx, NULL, all ? SETTLE_LAST : SETTLE_IDLE);
}

int fs_rmhold_settle_at(struct fs_ctx *ctx, struct fs_node *node, bool is_dir)
{
	struct fs_node *top;
	int ret;

	if (ctx->read_only || !atomic_load(&ctx->rmhold.n))
		return 0;
	pthread_mutex_lock(&ctx->lock);
	top = is_dir ? node : node->parent;
	if (top)
		fs_node_ref_locked(top);
	pthread_mutex_unlock(&ctx->lock);
	if (!top)
		return 0;
	ret = settle_below(ctx, top, 0);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, top);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

void fs_rmhold_settle_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *node;

	if (!atomic_load(&ctx->rmhold.n))
		return;
	pthread_mutex_lock(&ctx->lock);
	node = held_child_locked(ctx, dir, name);
	if (node)
		fs_node_ref_locked(node);
	pthread_mutex_unlock(&ctx->lock);
	if (!node)
		return;
	try_one(ctx, node, 0);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
}

bool fs_rmhold_onto(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *node;
	bool leaf;

	if (!atomic_load(&ctx->rmhold.n))
		return false;
	pthread_mutex_lock(&ctx->lock);
	node = held_child_locked(ctx, dir, name);
	leaf = node && !node->rm_held_dir;
	pthread_mutex_unlock(&ctx->lock);
	if (!leaf)
		fs_rmhold_settle_name(ctx, dir, name);	/* a directory: no file replaces it */
	return leaf;
}

void fs_rmhold_end_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct ended_vec ev = { 0 };
	struct fs_node *node;

	if (!atomic_load(&ctx->rmhold.n))
		return;
	pthread_mutex_lock(&ctx->lock);
	node = held_child_locked(ctx, dir, name);
	if (node && !node->rm_held_dir)
		end_locked(ctx, node, false, &ev);	/* the node stays: the new file is it */
	pthread_mutex_unlock(&ctx->lock);
	end_finish(ctx, &ev);
}

void fs_rmhold_again(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_node *dir = NULL;
	char *name = NULL;

	pthread_mutex_lock(&ctx->lock);
	if (node->hashed && node->parent && !node->rm_held) {
		dir = node->parent;
		name = strdup(node->name);
		fs_node_ref_locked(dir);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!dir)
		return;
	/* the kernel met the name at the create: it must ask again, and be told ENOENT */
	if (name && hold_add(ctx, dir, name, false) == 0)
		fs_inval_entry(ctx, fs_node_ino(ctx, dir), name, strlen(name));
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, dir);
	pthread_mutex_unlock(&ctx->lock);
	free(name);
}

/* ctx->lock held. The holds at and below what the view name in dir stands for end. */
static void view_written_locked(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
				struct ended_vec *ev)
{
	size_t len = strlen(name), base = model_name_view_base(name, len);
	struct fs_node *target = dir;
	char *copy;

	if (!model_name_is_view(name, len))
		return;
	if (base) {
		copy = strndup(name, base);
		target = copy ? fs_node_child_locked(ctx, dir, copy, false) : NULL;
		free(copy);
	}
	if (!target)
		return;
	end_below_locked(ctx, target, false, ev);
	if (target->rm_held)
		end_locked(ctx, target, false, ev);
}

void fs_rmhold_view_written(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct ended_vec ev = { 0 };

	if (!atomic_load(&ctx->rmhold.n))
		return;
	pthread_mutex_lock(&ctx->lock);
	view_written_locked(ctx, dir, name, &ev);
	pthread_mutex_unlock(&ctx->lock);
	end_finish(ctx, &ev);
}

void fs_rmhold_view_node_written(struct fs_ctx *ctx, struct fs_node *view)
{
	struct ended_vec ev = { 0 };

	if (!atomic_load(&ctx->rmhold.n))
		return;
	pthread_mutex_lock(&ctx->lock);
	if (view->parent && view->hashed)
		view_written_locked(ctx, view->parent, view->name, &ev);
	pthread_mutex_unlock(&ctx->lock);
	end_finish(ctx, &ev);
}
