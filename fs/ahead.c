/*
 * fs/ahead.c - attributes read ahead for stats, where each read of the
 * store is a round trip (etcd): a run of stats of one directory's children
 * that the kernel holds no attributes for (`ls` then `ls -l` over the
 * kernel's cached listing, `stat *`, `ls -l *`) is served from listings
 * from the name asked on, a batch each, while the store is unchanged.
 *
 * Only a directory listed at the store's present version qualifies (the
 * names stat'ed came from that listing), from the second child's stat that
 * missed within 0.2 s of another; a batch that served half its names or
 * more is followed by one twice its size. A batch that did not hold the
 * name it was read for (no such child), or a listing that could not start
 * there, ends the read-ahead in that directory until the store changes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs_int.h"

/* Children per listing: the first after two stats that missed, doubling while the run goes on. */
#define AHEAD_FIRST 32
#define AHEAD_MAX 1024
/* Two stats that missed make a run when this close (a tool's, not a user's typing). */
#define AHEAD_PAIR_NS 200000000LL
/*
 * Children kept at once: a batch read for the same directory and version
 * joins the ones before (a shell's glob sorts names as text, so `ls -l *`
 * of an array asks 1, 10, 100, 101, ..., 11, 110: runs that alternate).
 */
#define AHEAD_KEEP 4096
/*
 * A batch serves for a second at most, as the store's shared answers do
 * (docs/ETCD.md section 8a): what a watch silently stuck could hide.
 * KVFS_TEST_AHEAD_AGE_MS sets it for a test (tests/89: a deadline that
 * passes while a batch serves).
 */
#define AHEAD_AGE_NS 1000000000LL

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void fs_ahead_start(struct fs_ctx *ctx)
{
	const char *s = getenv("KVFS_TEST_AHEAD_AGE_MS");

	ctx->reads_locally = model_reads_locally(ctx->model);
	ctx->ahead.age_ns = s ? (int64_t)atoi(s) * 1000000LL : AHEAD_AGE_NS;
}

static void batch_free(struct fs_ahead_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->names[i]);
	free(b->names);
	free(b->nodes);
	memset(b, 0, sizeof(*b));
}

void fs_ahead_release(struct fs_ctx *ctx)
{
	batch_free(&ctx->ahead.batch);
}

/* model_list_fill callback: keeps children until the batch is full. */
static int collect_fn(void *arg, const char *name, const struct model_node *node)
{
	struct fs_ahead_batch *b = arg;

	if (b->n == b->cap)
		return 1;
	b->names[b->n] = strdup(name);
	if (!b->names[b->n])
		return 1;
	b->nodes[b->n++] = *node;
	return 0;
}

/* Moves b's children to the end of into's; false (b untouched) when into has no room. */
static bool batch_join(struct fs_ahead_batch *into, struct fs_ahead_batch *b)
{
	size_t n = into->n + b->n;
	char **names;
	struct model_node *nodes;

	if (n > AHEAD_KEEP)
		return false;
	names = realloc(into->names, (n ? n : 1) * sizeof(*names));
	if (!names)
		return false;
	into->names = names;
	nodes = realloc(into->nodes, (n ? n : 1) * sizeof(*nodes));
	if (!nodes)
		return false;
	into->nodes = nodes;
	memcpy(into->names + into->n, b->names, b->n * sizeof(*names));
	memcpy(into->nodes + into->n, b->nodes, b->n * sizeof(*nodes));
	into->next = into->n;	/* the stats to come are this batch's, mostly */
	into->n = into->cap = n;
	b->n = 0;	/* the names are into's now */
	return true;
}

/* Lists up to cap children of the directory at dir_path from name on into *b. */
static int batch_read(struct fs_ctx *ctx, const char *dir_path, const char *name, size_t cap,
		      struct fs_ahead_batch *b)
{
	struct model_list *list;
	int ret;

	b->names = calloc(cap, sizeof(*b->names));
	b->nodes = calloc(cap, sizeof(*b->nodes));
	b->cap = cap;
	if (!b->names || !b->nodes)
		return -ENOMEM;
	ret = model_list_open(ctx->model, dir_path, &list, NULL);
	if (ret < 0)
		return ret;
	ret = model_list_start_at(list, name);
	if (ret == 0) {
		model_list_want_subdirs(list, true);	/* nlink, as a readdirplus gives it */
		ret = model_list_fill(list, collect_fn, b);
	}
	model_list_close(list);
	return ret < 0 ? ret : 0;
}

enum batch_answer {
	BATCH_ABSENT,	/* no child of that name in the batch */
	BATCH_ASK,	/* there, but a stat must ask the model: a directory whose
			 * subdirectories the listing did not count, a table's view,
			 * a node with a deadline (hidden by the clock, not by a
			 * new version, once it passes) */
	BATCH_FOUND,
};

/* name's node in b, as model_stat with subdirs gives it, into *out when found. */
static enum batch_answer batch_find(struct fs_ahead_batch *b, const char *name,
				    struct model_node *out)
{
	for (size_t k = 0; k < b->n; k++) {
		size_t i = (b->next + k) % b->n;	/* stats come in listing order, mostly */
		const struct model_node *n = &b->nodes[i];

		if (strcmp(b->names[i], name) != 0)
			continue;
		b->next = i + 1 < b->n ? i + 1 : 0;
		if (n->derived || n->expires_ns ||
		    (fs_kind_is_dir(n->kind) && !n->empty && !n->subdirs_known))
			return BATCH_ASK;
		*out = *n;
		b->hits++;
		return BATCH_FOUND;
	}
	return BATCH_ABSENT;
}

/* Whether the batch is dir's at gen1 (version + 1), young enough to serve. ahead.lock held. */
static bool batch_fresh_locked(const struct fs_ahead *a, const struct fs_node *dir, uint64_t gen1)
{
	return a->dir == dir && a->gen == gen1 && now_ns() - a->read_ns < a->age_ns;
}

/* The directory part of path (a child's path): heap, or NULL. */
static char *parent_path(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return NULL;
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/*
 * Whether a stat of node in dir (listed: at gen1, version + 1) that the
 * batch does not serve reads one. ahead.lock held.
 */
static bool want_batch_locked(struct fs_ahead *a, struct fs_node *dir, const struct fs_node *node,
			      uint64_t gen1, bool listed)
{
	/* the batch of dir was used and has run out: the run goes on */
	bool run = a->dir == dir && a->gen == gen1 && a->batch.hits * 2 >= a->batch.n;
	bool second = a->miss_dir == dir && a->miss_gen == gen1 && a->miss_node != node &&
		      now_ns() - a->miss_ns < AHEAD_PAIR_NS;
	bool dead = a->dead_dir == dir && a->dead_gen == gen1;

	if (a->reading || !listed || dead || (!run && !second)) {
		a->miss_dir = dir;
		a->miss_node = node;
		a->miss_gen = gen1;
		a->miss_ns = now_ns();
		return false;
	}
	a->miss_dir = NULL;	/* the next batch needs this one used up, or a new pair */
	a->next_cap = run && a->cap < AHEAD_MAX ? a->cap * 2 : run ? AHEAD_MAX : AHEAD_FIRST;
	a->reading = true;
	return true;
}

int fs_ahead_stat(struct fs_ctx *ctx, struct fs_node *node, const char *path, uint64_t gen,
		  struct model_node *out)
{
	struct fs_ahead *a = &ctx->ahead;
	struct fs_ahead_batch b = { 0 };
	struct fs_node *dir = NULL, *old = NULL;
	char *name = NULL, *dir_path = NULL;
	enum batch_answer answer = BATCH_ABSENT;
	bool listed = false, unchanged, read;
	size_t cap;
	int ret;

	if (ctx->reads_locally)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	if (node->hashed && node->parent && node->name[0] != '@' &&
	    !model_name_is_view(node->name, strlen(node->name))) {
		dir = node->parent;
		fs_node_ref_locked(dir);	/* ours until the batch takes it */
		listed = dir->dir_gen == gen + 1;
		name = strdup(node->name);
	}
	pthread_mutex_unlock(&ctx->lock);
	/*
	 * The caller's path and version were taken before: a rename that
	 * committed since (moving the version first, then relinking the node)
	 * could have given node another directory and name, another file's.
	 */
	if (!dir || !name || model_version(ctx->model) != gen)
		goto out_unref;

	pthread_mutex_lock(&ctx->ahead.lock);
	if (batch_fresh_locked(a, dir, gen + 1))
		answer = batch_find(&a->batch, name, out);
	read = answer == BATCH_ABSENT && want_batch_locked(a, dir, node, gen + 1, listed);
	cap = a->next_cap;
	pthread_mutex_unlock(&ctx->ahead.lock);
	if (!read)
		goto out_unref;

	dir_path = parent_path(path);
	ret = dir_path ? batch_read(ctx, dir_path, name, cap, &b) : -ENOMEM;
	fs_trace(ctx, "read ahead %s from %s: %zu children (%d)", dir_path ? dir_path : "?", name,
		 b.n, ret);
	/* only what the store held at gen: a commit meanwhile makes it another listing's */
	unchanged = ret == 0 && model_version(ctx->model) == gen;
	pthread_mutex_lock(&ctx->ahead.lock);
	a->reading = false;
	if (ret < 0 && ret != -ENOMEM) {	/* no listing from that name: none at the next stat either */
		a->dead_dir = dir;
		a->dead_gen = gen + 1;
	}
	if (unchanged) {
		a->cap = cap;
		if (!batch_fresh_locked(a, dir, gen + 1) || !batch_join(&a->batch, &b)) {
			old = a->dir;
			batch_free(&a->batch);
			a->batch = b;
			memset(&b, 0, sizeof(b));
			a->dir = dir;
			dir = NULL;	/* the batch holds the ref now */
			a->gen = gen + 1;
			a->read_ns = now_ns();
		}	/* else joined: the batch holds its own ref of dir */
		answer = batch_find(&a->batch, name, out);
		if (answer == BATCH_ABSENT) {	/* no such child: stop reading ahead here */
			a->dead_dir = a->dir;
			a->dead_gen = a->gen;
		}
		fs_stat_add(ctx, FS_STAT_AHEAD_READS, 1);
	}
	pthread_mutex_unlock(&ctx->ahead.lock);
	batch_free(&b);
out_unref:
	if (answer == BATCH_FOUND)
		fs_stat_add(ctx, FS_STAT_AHEAD_HITS, 1);
	pthread_mutex_lock(&ctx->lock);
	if (dir)
		fs_node_unref_locked(ctx, dir);
	if (old)
		fs_node_unref_locked(ctx, old);
	pthread_mutex_unlock(&ctx->lock);
	free(name);
	free(dir_path);
	return answer == BATCH_FOUND;
}
