/*
 * fs/inode.c - the table of nodes the kernel knows: node ids <-> (parent,
 * name), lookup counts, paths rebuilt from the parent chain, and the
 * bookkeeping that mirrors unlink and rename. See fs/inode_int.h for the
 * rules, fs/fs_int.h for the lock order.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"

#define FS_BUCKETS_MIN 1024

static size_t node_hash(const struct fs_node *parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)parent;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return (size_t)(h ^ (h >> 29));
}

int fs_nodes_init(struct fs_ctx *ctx)
{
	ctx->inodes.buckets = calloc(FS_BUCKETS_MIN, sizeof(*ctx->inodes.buckets));
	if (!ctx->inodes.buckets)
		return -ENOMEM;
	ctx->inodes.nbuckets = FS_BUCKETS_MIN;
	ctx->inodes.root.name = (char *)"";
	ctx->inodes.root.nlookup = 1;
	ctx->inodes.root.hashed = true;
	return 0;
}

/* Frees every node left (at exit: the kernel is gone). */
void fs_nodes_release(struct fs_ctx *ctx)
{
	struct fs_node *n, *next;

	for (n = ctx->inodes.nodes; n; n = next) {
		next = n->next;
		if (n->tmp)
			free(n->tmp->buf);
		free(n->tmp);
		free(n->tmp_gone);
		free(n->name);
		free(n);
	}
	ctx->inodes.nodes = NULL;
	for (unsigned i = 0; i < FS_MOVED_MAX; i++) {
		free(ctx->inodes.moved[i].name);
		ctx->inodes.moved[i].name = NULL;
	}
	free(ctx->inodes.buckets);
	ctx->inodes.buckets = NULL;
	free(ctx->inodes.fixed);
	ctx->inodes.fixed = NULL;
}

struct fs_node *fs_node_from_ino(struct fs_ctx *ctx, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &ctx->inodes.root;
	return (struct fs_node *)(uintptr_t)ino;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fs_node_fresh_set(struct fs_ctx *ctx, struct fs_node *node, pid_t pid)
{
	if (!ctx->later || pid <= 0)
		return;
	pthread_mutex_lock(&ctx->lock);
	node->fresh_pid = pid;
	node->fresh_until = monotonic_ns() + (int64_t)FS_FRESH_MS * 1000000;
	pthread_mutex_unlock(&ctx->lock);
}

static bool fresh_locked(const struct fs_node *node, pid_t pid)
{
	return node && node->fresh_pid == pid && monotonic_ns() < node->fresh_until;
}

bool fs_node_fresh(struct fs_ctx *ctx, struct fs_node *node, pid_t pid)
{
	bool fresh;

	if (!ctx->later || pid <= 0)
		return false;
	pthread_mutex_lock(&ctx->lock);
	fresh = fresh_locked(node, pid);
	pthread_mutex_unlock(&ctx->lock);
	return fresh;
}

bool fs_node_fresh_child(struct fs_ctx *ctx, struct fs_node *dir, const char *name, pid_t pid)
{
	bool fresh;

	if (!ctx->later || pid <= 0)
		return false;
	pthread_mutex_lock(&ctx->lock);
	fresh = fresh_locked(fs_node_child_locked(ctx, dir, name, false), pid);
	pthread_mutex_unlock(&ctx->lock);
	return fresh;
}

fuse_ino_t fs_node_ino(struct fs_ctx *ctx, const struct fs_node *node)
{
	if (node == &ctx->inodes.root)
		return FUSE_ROOT_ID;
	return (fuse_ino_t)(uintptr_t)node;
}

int fs_node_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out)
{
	size_t len = name ? strlen(name) + 1 : 0, pos;
	const struct fs_node *n;
	char *path;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	for (n = node; n != &ctx->inodes.root; n = n->parent) {
		if (!n->hashed) {
			ret = -ENOENT;
			goto out_unlock;
		}
		len += strlen(n->name) + 1;
	}
	path = malloc(len + 2);
	if (!path) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	pos = len;
	path[pos] = '\0';
	if (name) {
		size_t l = strlen(name);

		pos -= l;
		memcpy(path + pos, name, l);
		path[--pos] = '/';
	}
	for (n = node; n != &ctx->inodes.root; n = n->parent) {
		size_t l = strlen(n->name);

		pos -= l;
		memcpy(path + pos, n->name, l);
		path[--pos] = '/';
	}
	if (len == 0)
		strcpy(path, "/");
	*out = path;
out_unlock:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

static void children_add(struct fs_node *parent, struct fs_node *n)
{
	n->sib_prev = NULL;
	n->sib_next = parent->children;
	if (parent->children)
		parent->children->sib_prev = n;
	parent->children = n;
}

static void children_remove(struct fs_node *parent, struct fs_node *n)
{
	if (n->sib_prev)
		n->sib_prev->sib_next = n->sib_next;
	else
		parent->children = n->sib_next;
	if (n->sib_next)
		n->sib_next->sib_prev = n->sib_prev;
	n->sib_prev = n->sib_next = NULL;
}

static void table_insert(struct fs_ctx *ctx, struct fs_node *n)
{
	size_t b = node_hash(n->parent, n->name) % ctx->inodes.nbuckets;

	n->hnext = ctx->inodes.buckets[b];
	ctx->inodes.buckets[b] = n;
	n->hashed = true;
}

static void table_remove(struct fs_ctx *ctx, struct fs_node *n)
{
	struct fs_node **pp =
		&ctx->inodes.buckets[node_hash(n->parent, n->name) % ctx->inodes.nbuckets];

	if (!n->hashed)
		return;
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	}
	n->hnext = NULL;
	n->hashed = false;
}

/* Doubles the bucket array when the table gets crowded; keeps it on failure. */
static void table_grow(struct fs_ctx *ctx)
{
	size_t nb = ctx->inodes.nbuckets * 2;
	struct fs_node **nbk = calloc(nb, sizeof(*nbk));

	if (!nbk)
		return;
	for (size_t i = 0; i < ctx->inodes.nbuckets; i++) {
		struct fs_node *n = ctx->inodes.buckets[i], *next;

		for (; n; n = next) {
			size_t b = node_hash(n->parent, n->name) % nb;

			next = n->hnext;
			n->hnext = nbk[b];
			nbk[b] = n;
		}
	}
	free(ctx->inodes.buckets);
	ctx->inodes.buckets = nbk;
	ctx->inodes.nbuckets = nb;
}

/* ctx->lock held. Whether a node other than self, or a freed renamed name, keeps ino. */
static bool ino_taken_locked(const struct fs_ctx *ctx, const struct fs_node *self, uint64_t ino)
{
	if (ctx->inodes.fixed)
		for (const struct fs_node *n = ctx->inodes.fixed[ino % FS_FIXED_BUCKETS]; n;
		     n = n->ino_next)
			if (n != self && n->st_ino == ino)
				return true;
	for (unsigned i = 0; i < FS_MOVED_MAX; i++)
		if (ctx->inodes.moved[i].name && ctx->inodes.moved[i].st_ino == ino)
			return true;
	return false;
}

/* ctx->lock held. n's number stays as shown (no memory: it follows the model, as before). */
static void ino_fix_locked(struct fs_ctx *ctx, struct fs_node *n)
{
	struct fs_node **b;

	if (n->ino_fixed || !n->st_ino)
		return;
	if (!ctx->inodes.fixed)
		ctx->inodes.fixed = calloc(FS_FIXED_BUCKETS, sizeof(*ctx->inodes.fixed));
	if (!ctx->inodes.fixed)
		return;
	b = &ctx->inodes.fixed[n->st_ino % FS_FIXED_BUCKETS];
	n->ino_next = *b;
	*b = n;
	n->ino_fixed = true;
}

static void ino_unfix_locked(struct fs_ctx *ctx, struct fs_node *n)
{
	if (!n->ino_fixed)
		return;
	for (struct fs_node **p = &ctx->inodes.fixed[n->st_ino % FS_FIXED_BUCKETS]; *p;
	     p = &(*p)->ino_next)
		if (*p == n) {
			*p = n->ino_next;
			break;
		}
	n->ino_next = NULL;
	n->ino_fixed = false;
}

/* ctx->lock held. n and every node known below it keep their numbers (a rename of n). */
static void ino_fix_subtree_locked(struct fs_ctx *ctx, struct fs_node *n)
{
	ino_fix_locked(ctx, n);
	for (struct fs_node *c = n->children; c; c = c->sib_next)
		ino_fix_subtree_locked(ctx, c);
}

uint64_t fs_node_st_ino_locked(struct fs_ctx *ctx, struct fs_node *node, uint64_t ino)
{
	if (node->ino_fixed || (node->st_ino && node->model_ino == ino))
		return node->st_ino;
	node->model_ino = ino;
	node->st_ino = ino;
	if (!ino_taken_locked(ctx, node, ino))
		return ino;
	/* a renamed node shows the model's number for this path: one of its own, kept */
	do
		node->st_ino = ino ^ (++ctx->inodes.move_seq * 0x9e3779b97f4a7c15ull);
	while (!node->st_ino || ino_taken_locked(ctx, node, node->st_ino));
	ino_fix_locked(ctx, node);
	return node->st_ino;
}

/*
 * ctx->lock held. A node with a number of its own being freed (still under
 * its name) leaves it to the next node of its name.
 */
static void moved_remember_locked(struct fs_ctx *ctx, struct fs_node *n)
{
	struct fs_moved *m = &ctx->inodes.moved[ctx->inodes.moved_next];

	if (!n->ino_fixed)
		return;
	free(m->name);
	m->name = n->name;	/* taken over: the node is freed next */
	n->name = NULL;
	m->parent = n->parent;
	m->st_ino = n->st_ino;
	ctx->inodes.moved_next = (ctx->inodes.moved_next + 1) % FS_MOVED_MAX;
}

/*
 * ctx->lock held. The number a freed node of this name left (0: none); the
 * entry is dropped: the number lives in the caller's node now, or the name
 * was unlinked or renamed over (forget).
 */
static uint64_t moved_take_locked(struct fs_ctx *ctx, const struct fs_node *parent,
				  const char *name)
{
	for (unsigned i = 0; i < FS_MOVED_MAX; i++) {
		struct fs_moved *m = &ctx->inodes.moved[i];

		if (m->name && m->parent == parent && strcmp(m->name, name) == 0) {
			free(m->name);
			m->name = NULL;
			return m->st_ino;
		}
	}
	return 0;
}

struct fs_node *fs_node_child_locked(struct fs_ctx *ctx, struct fs_node *parent,
				     const char *name, bool make)
{
	struct fs_node *n = ctx->inodes.buckets[node_hash(parent, name) % ctx->inodes.nbuckets];

	for (; n; n = n->hnext)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	if (!make)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->name = strdup(name);
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	n->st_ino = moved_take_locked(ctx, parent, name);
	fs_node_ref_locked(parent);
	children_add(parent, n);
	ino_fix_locked(ctx, n);	/* a recalled number stays */
	if (ctx->inodes.nnodes >= ctx->inodes.nbuckets)
		table_grow(ctx);
	table_insert(ctx, n);
	ctx->inodes.nnodes++;
	n->next = ctx->inodes.nodes;
	if (ctx->inodes.nodes)
		ctx->inodes.nodes->prev = n;
	ctx->inodes.nodes = n;
	return n;
}

void fs_node_ref_locked(struct fs_node *node)
{
	node->refs++;
}

/* Frees n when nothing refers to it, then walks up to its parent. */
static void node_maybe_free(struct fs_ctx *ctx, struct fs_node *n)
{
	while (n && n != &ctx->inodes.root && n->nlookup == 0 && n->refs == 0) {
		struct fs_node *parent = n->parent;

		bool hashed = n->hashed;

		table_remove(ctx, n);
		if (hashed)
			moved_remember_locked(ctx, n);
		ino_unfix_locked(ctx, n);
		ctx->inodes.nnodes--;
		if (n->prev)
			n->prev->next = n->next;
		else
			ctx->inodes.nodes = n->next;
		if (n->next)
			n->next->prev = n->prev;
		children_remove(parent, n);
		free(n->tmp_gone);
		free(n->name);
		free(n);
		parent->refs--;
		n = parent;
	}
}

void fs_node_unref_locked(struct fs_ctx *ctx, struct fs_node *node)
{
	assert(node->refs > 0);
	node->refs--;
	node_maybe_free(ctx, node);
}

void fs_node_drop_unused_locked(struct fs_ctx *ctx, struct fs_node *node)
{
	node_maybe_free(ctx, node);
}

void fs_node_forget(struct fs_ctx *ctx, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs_node *n = fs_node_from_ino(ctx, ino);

	if (n == &ctx->inodes.root)
		return;
	pthread_mutex_lock(&ctx->lock);
	/* the kernel forgets only what we counted: more is a bug in the counting */
	assert(n->nlookup >= nlookup);
	n->nlookup -= nlookup;
	node_maybe_free(ctx, n);
	pthread_mutex_unlock(&ctx->lock);
}

void fs_node_detach(struct fs_ctx *ctx, struct fs_node *parent, const char *name)
{
	struct fs_node *n;

	pthread_mutex_lock(&ctx->lock);
	n = fs_node_child_locked(ctx, parent, name, false);
	if (n)
		table_remove(ctx, n);
	moved_take_locked(ctx, parent, name);	/* a new file of this name gets a new number */
	pthread_mutex_unlock(&ctx->lock);
}

void fs_node_unhash_locked(struct fs_ctx *ctx, struct fs_node *node)
{
	table_remove(ctx, node);
}

/* Gives n a new parent and name; ctx->lock held. false: no memory (n unchanged). */
static bool node_relink(struct fs_ctx *ctx, struct fs_node *n, struct fs_node *newparent,
			const char *newname)
{
	char *name = strdup(newname);
	struct fs_node *old = n->parent;

	if (!name)
		return false;
	table_remove(ctx, n);
	free(n->name);
	n->name = name;
	ino_fix_subtree_locked(ctx, n);	/* the numbers shown stay (the paths change) */
	fs_node_ref_locked(newparent);
	children_remove(old, n);
	children_add(newparent, n);
	n->parent = newparent;
	table_insert(ctx, n);
	old->refs--;
	node_maybe_free(ctx, old);
	return true;
}

void fs_node_move(struct fs_ctx *ctx, struct fs_node *parent, const char *name,
		  struct fs_node *newparent, const char *newname, bool exchange)
{
	struct fs_node *src, *dst;

	pthread_mutex_lock(&ctx->lock);
	src = fs_node_child_locked(ctx, parent, name, false);
	dst = fs_node_child_locked(ctx, newparent, newname, false);
	moved_take_locked(ctx, newparent, newname);	/* renamed over: that number is gone */
	if (exchange)
		moved_take_locked(ctx, parent, name);
	/* Pin both: relinking may free an old parent chain. */
	if (src)
		fs_node_ref_locked(src);
	if (dst)
		fs_node_ref_locked(dst);
	if (dst)
		table_remove(ctx, dst);
	if (src && !node_relink(ctx, src, newparent, newname))
		table_remove(ctx, src);	/* no memory: forget the node instead */
	if (exchange && dst && !node_relink(ctx, dst, parent, name))
		table_remove(ctx, dst);
	if (src)
		fs_node_unref_locked(ctx, src);
	if (dst)
		fs_node_unref_locked(ctx, dst);
	pthread_mutex_unlock(&ctx->lock);
}

void fs_node_tmp_drop_locked(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_tmpfile *t = node->tmp;

	if (!t)
		return;
	node->tmp = NULL;
	free(t->buf);
	free(t);
	fs_node_unref_locked(ctx, node);
}

/* A growing array of pinned nodes (each holds one ref). */
struct node_vec {
	struct fs_node **v;
	size_t n, cap;
};

/* ctx->lock held. Pins n into vec; false: no memory. */
static bool vec_push_locked(struct node_vec *vec, struct fs_node *n)
{
	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 256;
		struct fs_node **v = realloc(vec->v, cap * sizeof(*v));

		if (!v)
			return false;
		vec->v = v;
		vec->cap = cap;
	}
	fs_node_ref_locked(n);
	vec->v[vec->n++] = n;
	return true;
}

/* Unpins every node of vec and frees it. */
static void vec_release(struct fs_ctx *ctx, struct node_vec *vec)
{
	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < vec->n; i++)
		fs_node_unref_locked(ctx, vec->v[i]);
	pthread_mutex_unlock(&ctx->lock);
	free(vec->v);
	vec->v = NULL;
	vec->n = vec->cap = 0;
}

/* ctx->lock held. Pins top and every node below it (children lists, depth first). */
static void collect_subtree_locked(struct node_vec *vec, struct fs_node *top)
{
	size_t i = vec->n;

	if (!vec_push_locked(vec, top))
		return;
	for (; i < vec->n; i++)
		for (struct fs_node *c = vec->v[i]->children; c; c = c->sib_next)
			if (!vec_push_locked(vec, c))
				return;
}

void fs_node_drop_pending_below(struct fs_ctx *ctx, struct fs_node *node)
{
	struct node_vec vec = { NULL, 0, 0 };

	pthread_mutex_lock(&ctx->lock);
	collect_subtree_locked(&vec, node);
	for (size_t i = 0; i < vec.n; i++)
		fs_node_tmp_drop_locked(ctx, vec.v[i]);
	pthread_mutex_unlock(&ctx->lock);
	vec_release(ctx, &vec);
}

static bool path_stat(struct fs_ctx *ctx, struct fs_node *n, struct model_node *out, int *ret)
{
	char *path;

	*ret = fs_node_path(ctx, n, NULL, &path);
	if (*ret < 0)
		return false;
	*ret = model_stat(ctx->model, path, 0, out, NULL);
	free(path);
	return *ret == 0;
}

/*
 * Forgets n's name in the kernel (its dentry, and with it the subtree). The
 * notification is sent without ctx->lock (the kernel may call back into the
 * daemon); the parent stays pinned until then, because its inode number is
 * its address: a rename could free it and a new node reuse that number.
 */
static void forget_name(struct fs_ctx *ctx, struct fs_node *n)
{
	struct fs_node *parent;
	char *name;

	pthread_mutex_lock(&ctx->lock);
	parent = n->parent;
	fs_node_ref_locked(parent);
	name = strdup(n->name);
	pthread_mutex_unlock(&ctx->lock);
	if (name)
		fuse_lowlevel_notify_inval_entry(ctx->se, fs_node_ino(ctx, parent), name,
						 strlen(name));
	free(name);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, parent);
	pthread_mutex_unlock(&ctx->lock);
}

/* One node of a revalidation (pinned by the caller; no lock held). */
static void revalidate_one(struct fs_ctx *ctx, struct fs_node *n)
{
	struct model_node mn;
	struct fs_node *parent;
	bool tmp, known, was_dir, changed, array = false;
	uint64_t gen = 0;
	int ret = 0;

	if (n == &ctx->inodes.root) {
		fuse_lowlevel_notify_inval_inode(ctx->se, FUSE_ROOT_ID, -1, 0);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	tmp = n->tmp != NULL;
	if (tmp)
		gen = n->tmp->stage_gen;
	known = n->nlookup > 0 && n->hashed;
	parent = n->parent;	/* a rename may move n and free its old parent: pinned */
	fs_node_ref_locked(parent);
	pthread_mutex_unlock(&ctx->lock);
	if (tmp) {
		/*
		 * A pending file lives while its directory is the array it was
		 * made in: not one another process made again at its path.
		 */
		array = path_stat(ctx, parent, &mn, &ret) && mn.kind == MODEL_KIND_ARRAY &&
			!fs_node_parent_gone(ctx, n, gen);
	}
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, parent);
	pthread_mutex_unlock(&ctx->lock);
	if (tmp) {
		char *path;

		if (array || (ret != -ENOENT && ret != 0))
			return;
		if (fs_node_path(ctx, n, NULL, &path) < 0)
			path = NULL;
		pthread_mutex_lock(&ctx->lock);
		fs_tmp_gone_locked(ctx, n, path);
		pthread_mutex_unlock(&ctx->lock);
		forget_name(ctx, n);
		return;
	}
	if (!known)
		return;
	if (!path_stat(ctx, n, &mn, &ret)) {
		if (ret == -ENOENT)
			forget_name(ctx, n);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	was_dir = n->is_dir;
	known = n->kind_known;
	changed = !n->cache_known || n->cache_mtime != mn.mtime_ns || n->cache_size != mn.size;
	pthread_mutex_unlock(&ctx->lock);
	if (known && was_dir != (mn.kind == MODEL_KIND_OBJECT || mn.kind == MODEL_KIND_ARRAY))
		forget_name(ctx, n);
	else if (mn.kind == MODEL_KIND_LEAF && changed) {
		fs_cache_changed(ctx, n);
		fuse_lowlevel_notify_inval_inode(ctx->se, fs_node_ino(ctx, n), 0, 0);
	} else {
		fuse_lowlevel_notify_inval_inode(ctx->se, fs_node_ino(ctx, n), -1, 0);
	}
}

void fs_node_revalidate_subtree(struct fs_ctx *ctx, struct fs_node *node)
{
	struct node_vec vec = { NULL, 0, 0 };

	pthread_mutex_lock(&ctx->lock);
	collect_subtree_locked(&vec, node);
	fs_node_unref_locked(ctx, node);	/* the item's ref: vec holds its own */
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < vec.n; i++)
		revalidate_one(ctx, vec.v[i]);
	vec_release(ctx, &vec);
}

/*
 * The nodes a commit of another process touched, by mount path: a hash
 * lookup per component finds what the kernel knows of it, so the cost
 * follows the path and the nodes known below a changed subtree, never the
 * whole table. The node (and, for a subtree, every known node below it) is
 * revalidated and its parent's attributes dropped (a name came or went);
 * when the kernel knows only an ancestor, the deepest one known is
 * revalidated instead, since its listing may have changed.
 */
void fs_node_revalidate_path(struct fs_ctx *ctx, const char *path, bool subtree)
{
	struct node_vec vec = { NULL, 0, 0 };
	struct fs_node *n = &ctx->inodes.root, *parent = NULL;
	char *copy = strdup(path), *name, *save = NULL;
	bool whole = true;

	if (!copy) {
		fs_node_revalidate_all(ctx);	/* cannot say which: all of them */
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	for (name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		struct fs_node *c = fs_node_child_locked(ctx, n, name, false);

		if (!c) {
			whole = false;
			break;
		}
		n = c;
	}
	if (whole && n != &ctx->inodes.root) {
		parent = n->parent;
		fs_node_ref_locked(parent);
	}
	if (whole && subtree)
		collect_subtree_locked(&vec, n);
	else
		vec_push_locked(&vec, n);
	pthread_mutex_unlock(&ctx->lock);
	free(copy);
	for (size_t i = 0; i < vec.n; i++)
		revalidate_one(ctx, vec.v[i]);
	if (parent) {
		fuse_lowlevel_notify_inval_inode(ctx->se, fs_node_ino(ctx, parent), -1, 0);
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, parent);
		pthread_mutex_unlock(&ctx->lock);
	}
	vec_release(ctx, &vec);
}

#define FS_REVALIDATE_CHUNK 256

/*
 * Every known node, in chunks: ctx->lock is held only to pin the next
 * chunk of ctx->inodes.nodes; the last node of a chunk stays pinned as the cursor.
 * Nodes made meanwhile (at the head) were looked up after the change.
 */
void fs_node_revalidate_all(struct fs_ctx *ctx)
{
	struct node_vec vec = { NULL, 0, 0 };
	struct fs_node *cursor = NULL, *n;

	revalidate_one(ctx, &ctx->inodes.root);
	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		n = cursor ? cursor->next : ctx->inodes.nodes;
		for (; n && vec.n < FS_REVALIDATE_CHUNK; n = n->next)
			if (!vec_push_locked(&vec, n))
				break;
		if (cursor)
			fs_node_unref_locked(ctx, cursor);
		cursor = vec.n ? vec.v[vec.n - 1] : NULL;
		if (cursor)
			fs_node_ref_locked(cursor);
		pthread_mutex_unlock(&ctx->lock);
		if (!cursor)
			break;
		for (size_t i = 0; i < vec.n; i++)
			revalidate_one(ctx, vec.v[i]);
		vec_release(ctx, &vec);
	}
	free(vec.v);
}
