/*
 * model/table/table_ref.c - references over several fields (docs/FORMAT.md,
 * "Tables and indexes"): the values of a row's fields, in order, are the
 * key levels of a row of the referenced table, which must exist (checked
 * at the commit of every write of the referencing row) and cannot be
 * removed while a row references it (one lookup in the index kept over
 * the fields). A row that leaves out one of the fields, or holds null
 * there, references nothing (SQL's MATCH SIMPLE). Declared by
 * table_cmd.c; a one-field column's reference is table_row.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

const struct table_index *table_ref_index(const struct table_schema *s,
					  const struct table_ref *ref)
{
	for (int i = 0; i < s->nidx; i++)
		if (s->idx[i].id == ref->index)
			return &s->idx[i];
	return NULL;
}

const char *table_ref_what(const struct table_schema *s, const struct table_ref *ref,
			   char *buf, size_t size)
{
	const struct table_index *x = table_ref_index(s, ref);
	size_t n;

	if (!x) {
		snprintf(buf, size, "fields ?");
		return buf;
	}
	n = (size_t)snprintf(buf, size, "%s ", x->nfields == 1 ? "field" : "fields");
	for (int f = 0; f < x->nfields && n < size; f++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", f ? "," : "", x->fields[f]);
	return buf;
}

/* Appends a field's value to a key as the key level it names; false: not a string or integer. */
static bool put_level(struct tuple_writer *w, const struct tree_node *n)
{
	char buf[NUMBER_TEXT_MAX];

	if (n->kind != MODEL_KIND_LEAF)
		return false;
	if (n->leaf.tag == LEAF_STRING)
		tuple_put_string(w, (const char *)n->leaf.payload, n->leaf.payload_len);
	else if (n->leaf.tag == LEAF_INTEGER)
		tuple_put_string(w, buf, number_format_integer(n->leaf.integer, buf));
	else
		return false;
	return true;
}

/*
 * The key of the row ref names for the row, into key (STORE_KEY_MAX
 * bytes): 0, or 1 when the row leaves a field out or holds null there
 * (it references nothing), -EINVAL when a field holds something other
 * than a string or an integer (*bad: its name, borrowed from s),
 * -ENAMETOOLONG when no key is that long (no row can be named so).
 */
static int ref_target(struct store_txn *txn, const struct table_schema *s,
		      const struct table_ref *ref, const uint8_t *row, size_t len, uint8_t *key,
		      size_t *klen, const char **bad)
{
	const struct table_index *x = table_ref_index(s, ref);
	char raw[STORE_KEY_MAX];
	struct tuple_writer w;
	struct tree_node n;
	int ret;

	if (!x)
		return 1;
	*bad = NULL;
	tuple_writer_init(&w, key, STORE_KEY_MAX);
	w.len = ref->table_len;
	memcpy(key, ref->table, ref->table_len);
	for (int f = 0; f < x->nfields; f++) {
		ret = table_row_value(txn, s, row, len, x->fields[f], raw, &n);
		if (ret < 0)
			return ret;
		if (!n.exists || (n.kind == MODEL_KIND_LEAF && n.leaf.tag == LEAF_NULL))
			return 1;
		if (!*bad && !put_level(&w, &n))
			*bad = x->fields[f];
	}
	if (*bad)
		return -EINVAL;
	*klen = w.len;
	return w.overflow ? -ENAMETOOLONG : 0;
}

/* The refusal of a row whose reference names no row (target NULL: no key is that long). */
static int dangling(struct table_txn *tt, const struct table_schema *s, const struct table_ref *ref,
		    const uint8_t *row, size_t len, const uint8_t *target, size_t tlen)
{
	const struct table_index *x = table_ref_index(s, ref);
	char what[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];
	struct strbuf p;
	int ret;

	strbuf_init(&p);
	if (target)
		tree_key_to_path(target, tlen, &p);
	else
		tree_key_to_path(ref->table, ref->table_len, &p);
	ret = table_fail_row(tt, -EINVAL, row, len, "%s %s %s%s, which does not exist",
			     table_ref_what(s, ref, what, sizeof(what)),
			     x && x->nfields == 1 ? "references" : "reference", p.buf ? p.buf : "?",
			     target ? "" : "/... (a key too long)");
	strbuf_release(&p);
	return ret;
}

/* The refusal of a row whose field cannot be a key level: EINVAL. */
static int not_a_level(struct table_txn *tt, const struct table_schema *s,
		       const struct table_ref *ref, const uint8_t *row, size_t len, const char *bad)
{
	char what[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];
	struct strbuf p;
	int ret;

	strbuf_init(&p);
	tree_key_to_path(ref->table, ref->table_len, &p);
	ret = table_fail_row(tt, -EINVAL, row, len, "%s name a row of %s: field %s must be a "
			     "string or an integer", table_ref_what(s, ref, what, sizeof(what)),
			     p.buf ? p.buf : "?", bad);
	strbuf_release(&p);
	return ret;
}

int table_refs_check_row(struct store_txn *txn, struct table_txn *tt,
			 const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t target[STORE_KEY_MAX];
	size_t tlen = 0;
	const char *bad;
	struct tree_node t;
	int ret;

	for (int i = 0; i < s->nrefs; i++) {
		const struct table_ref *ref = &s->refs[i];

		ret = ref_target(txn, s, ref, row, len, target, &tlen, &bad);
		if (ret == 1)
			continue;	/* a field left out: references nothing */
		if (ret == -EINVAL)
			return not_a_level(tt, s, ref, row, len, bad);
		if (ret == -ENAMETOOLONG)
			return dangling(tt, s, ref, row, len, NULL, 0);
		if (ret < 0)
			return ret;
		ret = tree_lookup(txn, target, tlen, &t);
		if (ret < 0)
			return ret;
		if (!t.exists)
			return dangling(tt, s, ref, row, len, target, tlen);
	}
	return 0;
}

bool table_refs_have_field(const struct table_schema *s, const char *name)
{
	for (int i = 0; i < s->nrefs; i++) {
		const struct table_index *x = table_ref_index(s, &s->refs[i]);

		for (int f = 0; x && f < x->nfields; f++)
			if (strcmp(x->fields[f], name) == 0)
				return true;
	}
	return false;
}

const struct table_ref *table_refs_to(const struct table_schema *o, const uint8_t *key,
				      size_t len)
{
	for (int i = 0; i < o->nrefs; i++)
		if (o->refs[i].table_len == len && memcmp(o->refs[i].table, key, len) == 0)
			return &o->refs[i];
	return NULL;
}

/* The key levels of a removed row, as text, and whether each reads as a number. */
struct levels {
	int n;
	char text[TABLE_KEY_DEPTH_MAX][STORE_KEY_MAX];
	size_t len[TABLE_KEY_DEPTH_MAX];
	bool number[TABLE_KEY_DEPTH_MAX];
};

static int levels_of(const struct table_schema *s, const uint8_t *row, size_t len,
		     struct levels *lv)
{
	struct strbuf scratch;
	struct tuple_elem e;

	strbuf_init(&scratch);
	for (lv->n = 0; lv->n < s->key_depth; lv->n++) {
		int i = lv->n;

		if (table_key_elem(s, row, len, i, &e) < 0)
			break;
		if (e.type == TUPLE_TYPE_INT) {
			lv->len[i] = number_format_integer(e.integer, lv->text[i]);
		} else if (e.type == TUPLE_TYPE_STRING && e.len <= STORE_KEY_MAX) {
			tuple_elem_copy(&e, lv->text[i]);
			lv->len[i] = e.len;
		} else {
			break;
		}
		strbuf_reset(&scratch);
		lv->number[i] = ikey_put_number_text(&scratch, lv->text[i], lv->len[i]) == 0;
	}
	strbuf_release(&scratch);
	return lv->n == s->key_depth ? 0 : -EINVAL;
}

/*
 * The prefix (id, level values...) of the entries of rows that may name
 * the levels: a value stored as a string, or as a number for a level that
 * reads as one (bit i of numbers set). false when a bit is set for a level
 * that does not.
 */
static bool ref_prefix(int64_t id, const struct levels *lv, unsigned numbers,
		       struct strbuf *pre)
{
	uint8_t idb[16];
	struct tuple_writer w;

	tuple_writer_init(&w, idb, sizeof(idb));
	tuple_put_int(&w, id);
	strbuf_reset(pre);
	strbuf_add(pre, idb, w.len);
	for (int i = 0; i < lv->n; i++) {
		if (!(numbers & (1u << i)))
			ikey_put_string(pre, IKEY_STRING, lv->text[i], lv->len[i]);
		else if (!lv->number[i] || ikey_put_number_text(pre, lv->text[i], lv->len[i]) < 0)
			return false;
	}
	return !pre->failed;
}

/*
 * 1 with the referencing row in found (STORE_KEY_MAX bytes) when a row of
 * o whose entry starts with pre references row[0..len] (any row when row
 * is NULL) through ref: each candidate's reference is worked out again,
 * so a value that only reads alike (the integer 7 and a key "007") blocks
 * nothing, nor does a row holding null in a field (the index keeps it).
 */
static int first_referencing(struct store_txn *txn, struct table_txn *tt,
			     const struct table_schema *o, const struct table_ref *ref,
			     const struct strbuf *pre, const uint8_t *row, size_t len,
			     uint8_t *found, size_t *flen)
{
	uint8_t target[STORE_KEY_MAX];
	const struct table_index *x;
	struct store_scan *scan;
	struct store_val k, v;
	const char *bad;
	size_t tlen = 0;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, pre->buf, pre->len, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (table_entry_row(tt, k.data, k.len, found, flen, &x) < 0)
			continue;	/* kvfs check reports it */
		ret = ref_target(txn, o, ref, found, *flen, target, &tlen, &bad);
		if (ret < 0 && ret != -EINVAL && ret != -ENAMETOOLONG)
			break;
		if (ret == 0 && (!row || (tlen == len && memcmp(target, row, len) == 0))) {
			ret = 1;
			break;
		}
	}
	store_scan_close(scan);
	return ret < 0 ? ret : ret == 1;
}

/* 1 with the row in found when a row of o references row through ref; 0 when none. */
static int referenced_by(struct store_txn *txn, struct table_txn *tt,
			 const struct table_schema *o, const struct table_ref *ref,
			 const struct levels *lv, const uint8_t *row, size_t len, uint8_t *found,
			 size_t *flen)
{
	struct strbuf pre;
	int ret = 0;

	strbuf_init(&pre);
	for (unsigned numbers = 0; numbers < 1u << lv->n && ret == 0; numbers++)
		if (ref_prefix(ref->index, lv, numbers, &pre))
			ret = first_referencing(txn, tt, o, ref, &pre, row, len, found, flen);
	if (ret == 0 && pre.failed)
		ret = -ENOMEM;
	strbuf_release(&pre);
	return ret;
}

int table_refs_restrict(struct store_txn *txn, struct table_txn *tt,
			const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t found[STORE_KEY_MAX];
	size_t flen = 0;
	struct levels *lv = NULL;
	int ret = 0;

	for (int t = 0; t < tt->ntables && ret == 0; t++) {
		const struct table_schema *o = tt->tables[t];

		for (int i = 0; i < o->nrefs && ret == 0; i++) {
			const struct table_ref *ref = &o->refs[i];
			char what[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];
			struct strbuf p;

			if (ref->table_len != s->key_len ||
			    memcmp(ref->table, s->key, s->key_len) != 0)
				continue;
			if (!lv && !(lv = malloc(sizeof(*lv))))
				return -ENOMEM;
			if (levels_of(s, row, len, lv) < 0)
				break;	/* no row's key: nothing can name it */
			ret = referenced_by(txn, tt, o, ref, lv, row, len, found, &flen);
			if (ret != 1)
				continue;
			strbuf_init(&p);
			tree_key_to_path(found, flen, &p);
			ret = table_fail_row(tt, -EBUSY, row, len, "still referenced by %s (%s)",
					     p.buf ? p.buf : "?",
					     table_ref_what(o, ref, what, sizeof(what)));
			strbuf_release(&p);
		}
	}
	free(lv);
	return ret;
}

int table_refs_any(struct store_txn *txn, struct table_txn *tt, const struct table_schema *o,
		   const struct table_ref *ref, uint8_t *found, size_t *flen)
{
	uint8_t idb[16];
	struct tuple_writer w;
	struct strbuf pre;
	int ret;

	tuple_writer_init(&w, idb, sizeof(idb));
	tuple_put_int(&w, ref->index);
	strbuf_init(&pre);
	strbuf_add(&pre, idb, w.len);
	ret = pre.failed ? -ENOMEM : first_referencing(txn, tt, o, ref, &pre, NULL, 0, found, flen);
	strbuf_release(&pre);
	return ret;
}

/* In the order of their index names, so that a table declared again from the text shows it. */
static const struct table_ref *ref_in_order(const struct table_schema *s,
					    const struct table_ref *last)
{
	const struct table_ref *next = NULL;
	const struct table_index *lx = last ? table_ref_index(s, last) : NULL;

	for (int i = 0; i < s->nrefs; i++) {
		const struct table_index *x = table_ref_index(s, &s->refs[i]);

		if (!x || (lx && strcmp(x->name, lx->name) <= 0))
			continue;
		if (!next || strcmp(x->name, table_ref_index(s, next)->name) < 0)
			next = &s->refs[i];
	}
	return next;
}

void table_refs_show_json(const struct table_schema *s, struct json_writer *w)
{
	struct strbuf path;

	if (!s->nrefs)
		return;
	json_write_key(w, "references", 10);
	json_write_array_begin(w);
	for (const struct table_ref *ref = ref_in_order(s, NULL); ref; ref = ref_in_order(s, ref)) {
		const struct table_index *x = table_ref_index(s, ref);

		json_write_object_begin(w);
		json_write_key(w, "fields", 6);
		json_write_array_begin(w);
		for (int f = 0; f < x->nfields; f++)
			json_write_string(w, x->fields[f], strlen(x->fields[f]));
		json_write_array_end(w);
		strbuf_init(&path);
		tree_key_to_path(ref->table, ref->table_len, &path);
		json_write_key(w, "table", 5);
		json_write_string(w, path.buf ? path.buf : "", path.len);
		strbuf_release(&path);
		json_write_object_end(w);
	}
	json_write_array_end(w);
}
