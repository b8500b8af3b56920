/*
 * model/table/table_guard.c - the writes that would part a table's
 * declaration from its directory of rows, refused with EBUSY before they
 * change anything or at the end of their own step, in the transaction
 * that then aborts: moving a table (or a directory holding one), a change
 * of kind (object <-> array) of a table or of a directory above it, and a
 * document written over a directory holding one that leaves the table no
 * directory, or one that is not an object.
 *
 * A declaration lives in the schema space under its directory's key: a
 * write that re-keys or replaces the directory would leave it naming
 * nothing (table_txn_commit then drops it) or naming a directory that is
 * no table's. Removing a table on purpose (rm -r, rmdir, kvfs rm, an
 * expired TTL) takes its declaration and indexes with it, in
 * table_txn_commit, and is not judged here.
 */
#include <errno.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

/* True when the table at tkey[0..tlen] is key[0..len] or lies below it. */
static bool table_at_or_under(const uint8_t *tkey, size_t tlen, const uint8_t *key, size_t len)
{
	if (tlen < len || memcmp(tkey, key, len) != 0)
		return false;
	/* 0xff goes on with the last name (its NUL escaped): a sibling's */
	return tlen == len || tkey[len] != 0xff;
}

/*
 * The first table at or under key[0..len], read from the schema space:
 * 1 with its key in tkey (STORE_KEY_MAX bytes) and *tlen, 0 when none,
 * <0 on a store error.
 */
static int first_table(struct store_txn *txn, const uint8_t *key, size_t len, uint8_t *tkey,
		       size_t *tlen)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_SCHEMA, key, len, &scan);

	if (ret == -ENOENT)
		return 0;	/* a read-only format-2 store: no tables */
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (!table_at_or_under(k.data, k.len, key, len) || k.len > STORE_KEY_MAX)
			continue;
		memcpy(tkey, k.data, k.len);
		*tlen = k.len;
		break;
	}
	store_scan_close(scan);
	return ret;
}

int table_check_move(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err)
{
	uint8_t tkey[STORE_KEY_MAX];
	size_t tlen;
	int ret = first_table(txn, key, len, tkey, &tlen);

	if (ret <= 0)
		return ret;
	return tree_fail(err, -EBUSY, "%s: is or holds a table; moving a table is not supported "
			 "(kvfs table drop, move, kvfs table create)", what);
}

int table_check_kind(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err)
{
	uint8_t tkey[STORE_KEY_MAX];
	struct strbuf name;
	size_t tlen;
	int ret = first_table(txn, key, len, tkey, &tlen);

	if (ret <= 0)
		return ret;
	if (tlen == len)
		return tree_fail(err, -EBUSY, "%s: is a table, whose rows are the names of an "
				 "object: its kind stays object (kvfs table drop first)", what);
	strbuf_init(&name);
	tree_key_to_path(tkey, tlen, &name);
	ret = tree_fail(err, -EBUSY, "%s: holds the table %s, which a change of kind would move, "
			"and moving a table is not supported (rm -r or kvfs table drop it first)",
			what, name.buf ? name.buf : "");
	strbuf_release(&name);
	return ret;
}

int table_check_kept(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err)
{
	struct table_txn *tt;
	struct tree_node n;
	struct strbuf name;
	int ret = table_txn_loaded(txn, &tt);

	/* the declarations as the write found them (the rows it wrote loaded them) */
	if (ret <= 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *s = tt->tables[t];

		if (!table_at_or_under(s->key, s->key_len, key, len))
			continue;
		ret = tree_lookup(txn, s->key, s->key_len, &n);
		if (ret < 0)
			return ret;
		if (n.exists && n.kind == MODEL_KIND_OBJECT)
			continue;
		strbuf_init(&name);
		tree_key_to_path(s->key, s->key_len, &name);
		if (n.exists)
			ret = tree_fail(err, -EBUSY, "%s: the table %s would become %s; a table "
					"is an object of rows (kvfs table drop first)", what,
					name.buf ? name.buf : "",
					n.kind == MODEL_KIND_ARRAY ? "an array" : "a value");
		else
			ret = tree_fail(err, -EBUSY, "%s: would replace the table %s and lose its "
					"declaration; remove it on purpose first (rm -r, or kvfs "
					"table drop)", what, name.buf ? name.buf : "");
		strbuf_release(&name);
		return ret;
	}
	return 0;
}
