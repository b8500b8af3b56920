/*
 * fs/node.c - the table of nodes the kernel knows: node ids <-> (parent,
 * name), lookup counts, paths rebuilt from the parent chain, and the
 * bookkeeping that mirrors unlink and rename. See fs/fs_int.h for the rules.
 */
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
	ctx->buckets = calloc(FS_BUCKETS_MIN, sizeof(*ctx->buckets));
	if (!ctx->buckets)
		return -ENOMEM;
	ctx->nbuckets = FS_BUCKETS_MIN;
	ctx->root.name = (char *)"";
	ctx->root.nlookup = 1;
	ctx->root.hashed = true;
	return 0;
}

/* Frees every node left (at exit: the kernel is gone). */
void fs_nodes_release(struct fs_ctx *ctx)
{
	struct fs_node *n, *next;

	for (n = ctx->nodes; n; n = next) {
		next = n->next;
		if (n->tmp)
			free(n->tmp->buf);
		free(n->tmp);
		free(n->name);
		free(n);
	}
	ctx->nodes = NULL;
	free(ctx->buckets);
	ctx->buckets = NULL;
}

struct fs_node *fs_node_from_ino(struct fs_ctx *ctx, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &ctx->root;
	return (struct fs_node *)(uintptr_t)ino;
}

fuse_ino_t fs_node_ino(struct fs_ctx *ctx, const struct fs_node *node)
{
	if (node == &ctx->root)
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
	for (n = node; n != &ctx->root; n = n->parent) {
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
	for (n = node; n != &ctx->root; n = n->parent) {
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

static void table_insert(struct fs_ctx *ctx, struct fs_node *n)
{
	size_t b = node_hash(n->parent, n->name) % ctx->nbuckets;

	n->hnext = ctx->buckets[b];
	ctx->buckets[b] = n;
	n->hashed = true;
}

static void table_remove(struct fs_ctx *ctx, struct fs_node *n)
{
	struct fs_node **pp = &ctx->buckets[node_hash(n->parent, n->name) % ctx->nbuckets];

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
	size_t nb = ctx->nbuckets * 2;
	struct fs_node **nbk = calloc(nb, sizeof(*nbk));

	if (!nbk)
		return;
	for (size_t i = 0; i < ctx->nbuckets; i++) {
		struct fs_node *n = ctx->buckets[i], *next;

		for (; n; n = next) {
			size_t b = node_hash(n->parent, n->name) % nb;

			next = n->hnext;
			n->hnext = nbk[b];
			nbk[b] = n;
		}
	}
	free(ctx->buckets);
	ctx->buckets = nbk;
	ctx->nbuckets = nb;
}

struct fs_node *fs_node_child_locked(struct fs_ctx *ctx, struct fs_node *parent,
				     const char *name, bool make)
{
	struct fs_node *n = ctx->buckets[node_hash(parent, name) % ctx->nbuckets];

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
	fs_node_ref_locked(parent);
	if (ctx->nnodes >= ctx->nbuckets)
		table_grow(ctx);
	table_insert(ctx, n);
	ctx->nnodes++;
	n->next = ctx->nodes;
	if (ctx->nodes)
		ctx->nodes->prev = n;
	ctx->nodes = n;
	return n;
}

void fs_node_ref_locked(struct fs_node *node)
{
	node->refs++;
}

/* Frees n when nothing refers to it, then walks up to its parent. */
static void node_maybe_free(struct fs_ctx *ctx, struct fs_node *n)
{
	while (n && n != &ctx->root && n->nlookup == 0 && n->refs == 0) {
		struct fs_node *parent = n->parent;

		table_remove(ctx, n);
		ctx->nnodes--;
		if (n->prev)
			n->prev->next = n->next;
		else
			ctx->nodes = n->next;
		if (n->next)
			n->next->prev = n->prev;
		free(n->name);
		free(n);
		parent->refs--;
		n = parent;
	}
}

void fs_node_unref_locked(struct fs_ctx *ctx, struct fs_node *node)
{
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

	if (n == &ctx->root)
		return;
	pthread_mutex_lock(&ctx->lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
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
	pthread_mutex_unlock(&ctx->lock);
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
	fs_node_ref_locked(newparent);
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

void fs_node_inval_root_children(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	for (struct fs_node *n = ctx->nodes; n; n = n->next)
		if (n->parent == &ctx->root && n->hashed)
			fs_inval_entry(ctx, FUSE_ROOT_ID, n->name, strlen(n->name));
	pthread_mutex_unlock(&ctx->lock);
}

void fs_node_inval_all(struct fs_ctx *ctx)
{
	fs_node_inval_root_children(ctx);
	fs_inval_node(ctx, FUSE_ROOT_ID, FS_INVAL_DATA);
	pthread_mutex_lock(&ctx->lock);
	for (struct fs_node *n = ctx->nodes; n; n = n->next)
		if (n->nlookup > 0 && n->cache_known)
			fs_inval_node(ctx, fs_node_ino(ctx, n), FS_INVAL_DATA);
	pthread_mutex_unlock(&ctx->lock);
}
