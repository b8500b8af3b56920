/*
 * model/tree/perm.c - the permission checks a write on behalf of a user makes
 * inside the model: a view's document (NAME.json) is a set of creates,
 * writes and unlinks applied in one transaction, which the kernel never
 * sees one by one, so each must pass here what the kernel would have
 * checked for the single operation (default_permissions):
 *
 *   change a leaf      write permission on the leaf
 *   create a node      write and search permission on its directory
 *   remove a node      the same, and in a sticky directory (mode 01000)
 *                      who must own the directory or the node; removing a
 *                      container removes what is below it, as rm -r would
 *
 * A kind change (a leaf becoming a directory) is a removal and a create.
 * uid 0 may anything. A refusal fails the transaction: nothing is written.
 * Also a view's rendering on behalf of a reader (perm_may_read_tree): read
 * permission on every node of its subtree and search permission on every
 * container with children, as reading each node through the tree needs;
 * and model_may_read, for whose refusals a user may see (fs/mount.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* The mount's defaults for a node without a stored mode (fs_mode_default). */
#define PERM_FILE_DEFAULT 0644
#define PERM_DIR_DEFAULT 0755

int perm_get(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
	     size_t len, bool dir, struct perm_node *out)
{
	struct model_attr a;
	int ret = attr_get(txn, key, len, &a);

	if (ret < 0)
		return ret;
	out->mode = (a.have & MODEL_ATTR_MODE) ? a.mode & 07777 :
		    dir ? PERM_DIR_DEFAULT : PERM_FILE_DEFAULT;
	out->uid = (a.have & MODEL_ATTR_UID) ? (uid_t)a.uid : who->owner_uid;
	out->gid = (a.have & MODEL_ATTR_GID) ? (gid_t)a.gid : who->owner_gid;
	return 0;
}

static bool perm_in_group(const struct model_cred *who, gid_t gid)
{
	const gid_t *groups = who->groups;
	size_t n = who->ngroups;

	if (who->gid == gid)
		return true;
	if (!groups && who->groups_fn)
		groups = who->groups_fn(who->groups_arg, &n);
	for (size_t i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

bool perm_allows(const struct model_cred *who, const struct perm_node *n, unsigned want)
{
	unsigned bits;

	if (who->uid == 0)
		return true;
	if (who->uid == n->uid)
		bits = n->mode >> 6;
	else if (((n->mode >> 3) & want & 7) == (n->mode & want & 7))
		bits = n->mode;	/* the group's answer is the others': no need to ask (0664) */
	else if (perm_in_group(who, n->gid))
		bits = n->mode >> 3;
	else
		bits = n->mode;
	return (bits & want & 7) == (want & 7);
}

/* "what: permission denied to VERB PATH" with the node's path; returns ret. */
static int perm_refuse(struct model_error *err, int ret, const char *what, const char *verb,
		       const uint8_t *key, size_t len, const char *why)
{
	struct strbuf sb;

	strbuf_init(&sb);
	tree_key_to_path(key, len, &sb);
	tree_fail(err, ret, "%s: permission denied to %s %s (%s)", what, verb,
		  sb.buf ? sb.buf : "?", why);
	strbuf_release(&sb);
	return ret;
}

/* The sticky rule: in a directory with 01000 only its owner or the node's may remove it. */
static bool perm_sticky_keeps(const struct model_cred *who, const struct perm_node *d,
			      const struct perm_node *n)
{
	return who->uid != 0 && (d->mode & S_ISVTX) && who->uid != d->uid && who->uid != n->uid;
}

/*
 * Everything below the container at key[0..len] (shown as d) may go: who
 * may write and search it, and its sticky rule lets each child go; then
 * the same below each child that has children. Keys are copied per level:
 * a child's key is borrowed from the scan, which moves on.
 */
static int perm_may_empty(struct store_txn *txn, const struct model_cred *who,
			  const struct perm_node *d, const uint8_t *key, size_t len,
			  const char *what, struct model_error *err)
{
	struct store_scan *scan;
	struct tree_child c;
	struct perm_node n;
	uint8_t *child;
	bool below;
	int ret;

	if (!perm_allows(who, d, PERM_W | PERM_X))
		return perm_refuse(err, -EACCES, what, "empty", key, len,
				   "no write or search permission on it");
	child = malloc(STORE_KEY_MAX);
	if (!child)
		return tree_fail(err, -ENOMEM, "%s: out of memory", what);
	ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);
	if (ret < 0)
		goto out_fail;
	for (ret = tree_child_first(scan, key, len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, len, &c)) {
		below = c.key_len > c.end;	/* a container with children has keys past its own */
		memcpy(child, c.key, c.end);
		c.key = child;	/* the scan resumes after it; the reads below may move its pages */
		ret = perm_get(txn, who, child, c.end, below || tree_child_is_container(&c), &n);
		if (ret < 0)
			break;
		if (perm_sticky_keeps(who, d, &n)) {
			ret = perm_refuse(err, -EPERM, what, "remove", child, c.end,
					  "sticky directory, owned by another user");
			goto out_close;	/* told */
		}
		if (below) {
			ret = perm_may_empty(txn, who, &n, child, c.end, what, err);
			if (ret < 0)
				goto out_close;	/* told */
		}
	}
	store_scan_close(scan);
out_fail:
	free(child);
	return ret < 0 ? tree_fail(err, ret, "%s: %s", what, strerror(-ret)) : 0;

out_close:
	store_scan_close(scan);
	free(child);
	return ret;
}

int perm_may_remove(struct store_txn *txn, const struct model_cred *who,
		    const struct perm_node *d, const uint8_t *key, size_t len, bool dir,
		    const char *what, struct model_error *err)
{
	struct perm_node n;
	int ret;

	if (who->uid == 0)
		return 0;
	if (!perm_allows(who, d, PERM_W | PERM_X))
		return perm_refuse(err, -EACCES, what, "remove", key, len,
				   "no write or search permission on its directory");
	ret = perm_get(txn, who, key, len, dir, &n);
	if (ret < 0)
		return tree_fail(err, ret, "%s: corrupt attribute record (run kvfs check)", what);
	if (perm_sticky_keeps(who, d, &n))
		return perm_refuse(err, -EPERM, what, "remove", key, len,
				   "sticky directory, owned by another user");
	if (!dir || tree_subtree_empty(txn, STORE_SPACE_DATA, key, len))
		return 0;
	return perm_may_empty(txn, who, &n, key, len, what, err);
}

int perm_may_create(const struct model_cred *who, const struct perm_node *d,
		    const uint8_t *key, size_t len, const char *what, struct model_error *err)
{
	if (perm_allows(who, d, PERM_W | PERM_X))
		return 0;
	return perm_refuse(err, -EACCES, what, "create", key, len,
			   "no write or search permission on its directory");
}

int perm_may_change(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
		    size_t len, const char *what, struct model_error *err)
{
	struct perm_node n;
	int ret;

	if (who->uid == 0)
		return 0;
	ret = perm_get(txn, who, key, len, false, &n);
	if (ret < 0)
		return tree_fail(err, ret, "%s: corrupt attribute record (run kvfs check)", what);
	if (perm_allows(who, &n, PERM_W))
		return 0;
	return perm_refuse(err, -EACCES, what, "change", key, len,
			   "no write permission on it");
}

void perm_new_owner(const struct model_cred *who, struct model_attr *out)
{
	memset(out, 0, sizeof(*out));
	if (who->uid != who->owner_uid) {
		out->have |= MODEL_ATTR_UID;
		out->uid = who->uid;
	}
	if (who->gid != who->owner_gid) {
		out->have |= MODEL_ATTR_GID;
		out->gid = who->gid;
	}
}

/* ---- may read a subtree (a view's rendering) ---- */

/* Nodes without a stored mode: anyone may read a file, read and search a directory. */
_Static_assert((PERM_FILE_DEFAULT & 0444) == 0444 && (PERM_DIR_DEFAULT & 0555) == 0555,
	       "perm_may_read_tree skips the nodes that have the default mode");

struct read_walk {
	struct store_txn *txn;
	const struct model_cred *who;
	const uint8_t *key;	/* the subtree's */
	size_t len;
	const char *what;
	struct model_error *err;
	bool looked;		/* a node was looked up: the next come in key order */
};

/*
 * attr_each's fn: the node at key[0..len] with stored fields a. Only a
 * node the mode refuses is looked up: what it needs depends on whether
 * it is a container with children (search too) or even still there.
 */
static int may_read_node(void *arg, const uint8_t *key, size_t len, const struct model_attr *a)
{
	struct read_walk *w = arg;
	uint8_t node[STORE_KEY_MAX];	/* the scan's key is borrowed: the lookup reads on */
	struct perm_node n;
	struct tree_node t;
	unsigned want = PERM_R;
	int ret;

	if (!(a->have & MODEL_ATTR_MODE))
		return 0;
	n.mode = a->mode & 07777;
	n.uid = (a->have & MODEL_ATTR_UID) ? (uid_t)a->uid : w->who->owner_uid;
	n.gid = (a->have & MODEL_ATTR_GID) ? (gid_t)a->gid : w->who->owner_gid;
	if (perm_allows(w->who, &n, PERM_R | PERM_X))
		return 0;
	memcpy(node, key, len);
	if (!w->looked)	/* etcd: one page of the subtree, not a round trip per node */
		store_txn_expect_reads(w->txn, STORE_SPACE_DATA, w->key, w->len);
	w->looked = true;
	ret = tree_lookup(w->txn, node, len, &t);
	if (ret < 0)
		return tree_fail(w->err, ret, "%s: %s", w->what, strerror(-ret));
	if (!t.exists)
		return 0;	/* a record left behind, or an expired node: not rendered */
	if (t.kind != MODEL_KIND_LEAF && !t.empty)
		want |= PERM_X;	/* its children are read through it */
	if (perm_allows(w->who, &n, want))
		return 0;
	return perm_refuse(w->err, -EACCES, w->what, "read", node, len,
			   perm_allows(w->who, &n, PERM_R) ? "no search permission on it" :
			   "no read permission on it");
}

int perm_may_read_tree(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
		       size_t len, const char *what, struct model_error *err)
{
	struct read_walk w = { .txn = txn, .who = who, .key = key, .len = len, .what = what,
			       .err = err };
	int ret;

	if (!who || who->uid == 0)
		return 0;
	ret = attr_each(txn, key, len, may_read_node, &w);
	if (ret == -EIO)
		return tree_fail(err, ret, "%s: corrupt attribute record (run kvfs check)", what);
	return ret;
}

/* ---- may read ---- */

/*
 * Search permission on every directory above key[0..len] and read on the
 * node; when a name on the way names nothing (or something below a leaf),
 * read on the last node there is.
 */
static int may_read_key(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
			size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	struct perm_node cur;
	struct tree_node t = { .exists = true, .kind = MODEL_KIND_OBJECT };
	int ret = perm_get(txn, who, key, 0, true, &cur);	/* the root */

	tuple_reader_init(&r, key, len);
	while (ret == 0 && r.pos < len && t.kind != MODEL_KIND_LEAF) {
		ret = tuple_next(&r, &e);
		if (ret <= 0)
			return ret < 0 ? ret : -EACCES;
		if (!perm_allows(who, &cur, PERM_X))
			return -EACCES;
		ret = tree_lookup(txn, key, r.pos, &t);
		if (ret < 0 || !t.exists)
			break;
		ret = perm_get(txn, who, key, r.pos, t.kind != MODEL_KIND_LEAF, &cur);
	}
	if (ret < 0)
		return ret;
	return perm_allows(who, &cur, PERM_R) ? 0 : -EACCES;
}

int model_may_read(struct model *m, const char *path, const struct model_cred *who)
{
	struct store_txn *txn;
	struct tree_path *p;
	int ret;

	if (who->uid == 0)
		return 0;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = tree_read_begin(m, &txn);
	if (ret == 0) {
		ret = tree_resolve(txn, path, 0, p, NULL);
		if (ret < 0)
			ret = -EACCES;	/* no node's name: nobody's to read */
		else
			ret = may_read_key(txn, who, p->key, p->len);
		if (ret == 0 && p->is_view)	/* a view is read node by node */
			ret = perm_may_read_tree(txn, who, p->key, p->len, path, NULL);
		store_txn_end(txn);
	}
	free(p);
	return ret;
}
