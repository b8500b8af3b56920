/*
 * model/doc/flat_int.h - PRIVATE to model/doc/doc.c and doc_sweep.c: the
 * state of one document being flattened into keys (how and why:
 * model/doc/doc.c, "flatten").
 */
#ifndef KVFS_FLAT_INT_H
#define KVFS_FLAT_INT_H

#include "model/tree/tree_int.h"

struct flat_frame {
	size_t len;		/* key length of the container */
	bool array;
	bool has_child;
	bool marker;		/* a marker of this kind is still at the key */
	bool fresh;		/* nothing was under this key before: no compare, no sweep */
	bool guard;		/* the container was there: creates and removes in it are checked */
	bool reach;		/* guard: who may search it and every container above it */
	struct perm_node dir;	/* guard: its mode and owner */
	int64_t next;		/* arrays: the next index */
	size_t names;		/* objects: where this frame's names start */
};

/* Parser events held back while `{"$base64": "..."}` may still be bytes. */
enum flat_pending {
	PEND_NONE,
	PEND_BEGIN,		/* '{' */
	PEND_KEY,		/* '{' "$base64" */
	PEND_STRING,		/* '{' "$base64" "...", held in pend_str */
};

struct flat {
	struct store_txn *txn;
	const struct tree_path *p;
	struct model_error *err;
	struct tuple_writer w;
	uint8_t key[STORE_KEY_MAX];
	struct flat_frame stack[MODEL_DEPTH_MAX + 2];
	int depth;
	bool append;
	int64_t next_top;	/* append: the next index of the target array */
	bool top_full;		/* append: next_top is past INT64_MAX */
	uint64_t appended;
	int64_t now;
	bool failed;		/* the error came from a callback, not the parser */
	unsigned puts;		/* leaves put since the last store_txn_trim */
	bool top_fresh;		/* nothing was at the target key (or: appending) */
	struct strbuf names;	/* per name: 2 bytes length, encoded element */
	enum flat_pending pend;
	struct strbuf pend_str;
	struct strbuf bytes;	/* a decoded $base64 value */
	const struct model_cred *who;	/* checked on behalf of; NULL: not checked (uid 0) */
	struct model_attr owner;	/* what a node this write makes gets (have 0: defaults) */
	bool top_guard;		/* values at depth 0 go in a directory that was there: */
	struct perm_node top_dir;	/* its mode and owner (the parent, or the array appended to) */
};

/*
 * The old children of the container frame fr that the document did not
 * write are deleted (each checked first when fr guards its children):
 * 0, or -errno (f->failed set when the message is already in f->err).
 */
int flat_sweep(struct flat *f, const struct flat_frame *fr);

#endif
