/*
 * model/table/table_commit.c - tables kept exact (docs/FORMAT.md, "Tables and indexes"):
 * the rows a write transaction touched, and at its commit the re-derived
 * index entries, unique indexes and restricted deletes of each of those
 * rows, inside the same transaction. Rows' fields and checks: table_row.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

#define UNIQUE_CLASH "unique index"	/* how a clash's message names it */

/* ---- the transaction's bookkeeping ---- */

int table_txn_new(struct model_error *err, struct table_txn **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->err = err;
	return 0;
}

static void tables_unload(struct table_txn *tt)
{
	for (int i = 0; i < tt->ntables; i++)
		free(tt->tables[i]);
	free(tt->tables);
	free(tt->wiped);
	tt->tables = NULL;
	tt->wiped = NULL;
	tt->ntables = 0;
	tt->loaded = false;
}

void table_txn_free(struct table_txn *tt)
{
	if (!tt)
		return;
	tables_unload(tt);
	for (size_t i = 0; i < tt->nrows; i++)
		free(tt->rows[i]);
	free(tt->rows);
	free(tt->slots);
	free(tt);
}

int table_txn_loaded(struct store_txn *txn, struct table_txn **out)
{
	int ret;

	*out = store_txn_owner(txn);
	if (!*out)
		return 0;
	ret = table_txn_load(txn, *out);
	return ret < 0 ? ret : 1;
}

/* Reads every schema (a store has few tables); an empty space costs one seek. */
int table_txn_load(struct store_txn *txn, struct table_txn *tt)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret;

	if (tt->loaded)
		return 0;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	if (ret == -ENOENT) {
		tt->loaded = true;	/* a read-only format-2 store: no tables */
		return 0;
	}
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		struct table_schema *s = malloc(sizeof(*s));
		void *grown = realloc(tt->tables, (size_t)(tt->ntables + 1) * sizeof(*tt->tables));
		bool *gw = grown ? realloc(tt->wiped, (size_t)(tt->ntables + 1) * sizeof(bool)) : NULL;

		if (grown)
			tt->tables = grown;
		if (gw)
			tt->wiped = gw;
		if (!s || !grown || !gw) {
			free(s);
			ret = -ENOMEM;
			break;
		}
		ret = table_schema_decode(k.data, k.len, v.data, v.len, s);
		if (ret < 0) {
			free(s);
			ret = -EIO;
			break;
		}
		tt->wiped[tt->ntables] = false;
		tt->tables[tt->ntables++] = s;
	}
	store_scan_close(scan);
	if (ret < 0) {
		tables_unload(tt);
		return ret;
	}
	tt->loaded = true;
	return 0;
}

static uint64_t hash_key(const uint8_t *k, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ k[i]) * 1099511628211ULL;
	return h;
}

/* 1 when the row was already touched, 0 when added now, <0 error. */
static int rows_add(struct table_txn *tt, int table, const uint8_t *key, size_t len)
{
	struct touched *t;
	size_t i;

	if ((tt->nrows + 1) * 2 > tt->nslots) {
		size_t n = tt->nslots ? tt->nslots * 2 : 64;
		size_t *slots = calloc(n, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t r = 0; r < tt->nrows; r++) {
			i = hash_key(tt->rows[r]->key, tt->rows[r]->len) & (n - 1);
			while (slots[i])
				i = (i + 1) & (n - 1);
			slots[i] = r + 1;
		}
		free(tt->slots);
		tt->slots = slots;
		tt->nslots = n;
	}
	for (i = hash_key(key, len) & (tt->nslots - 1); tt->slots[i]; i = (i + 1) & (tt->nslots - 1)) {
		t = tt->rows[tt->slots[i] - 1];
		if (t->len == len && memcmp(t->key, key, len) == 0)
			return 1;
	}
	if (tt->nrows == tt->cap) {
		size_t cap = tt->cap ? tt->cap * 2 : 64;
		void *grown = realloc(tt->rows, cap * sizeof(*tt->rows));

		if (!grown)
			return -ENOMEM;
		tt->rows = grown;
		tt->cap = cap;
	}
	t = malloc(sizeof(*t) + len);
	if (!t)
		return -ENOMEM;
	t->table = table;
	t->existed = true;	/* row_touch looks when it matters */
	t->len = len;
	memcpy(t->key, key, len);
	tt->rows[tt->nrows] = t;
	tt->slots[i] = ++tt->nrows;
	return 0;
}

/* Deletes the row's entries as the store holds the row now. */
static int entries_delete(struct store_txn *txn, const struct table_schema *s, const uint8_t *row,
			  size_t len)
{
	struct strbuf sb;
	size_t vend;
	int ret = 0;

	strbuf_init(&sb);
	for (int i = 0; i < s->nidx && ret >= 0; i++) {
		ret = table_entry_build(txn, s, &s->idx[i], row, len, &sb, &vend);
		if (ret == 0) {
			ret = store_del(txn, STORE_SPACE_INDEX, sb.buf, sb.len);
			if (ret == -ENOENT)
				ret = 0;
		} else if (ret == -ENAMETOOLONG || ret == -ERANGE) {
			ret = 0;	/* never stored */
		}
	}
	strbuf_release(&sb);
	return ret < 0 ? ret : 0;
}

/* ---- touching ---- */


/* Hides the row's entries in the indexes over field (NULL: in every index). */
static int hide_row_entries(struct store_txn *txn, const struct table_schema *s,
			    const uint8_t *row, size_t len, const char *field)
{
	struct strbuf sb;
	size_t vend;
	int ret = 0;

	strbuf_init(&sb);
	for (int i = 0; i < s->nidx && ret >= 0; i++) {
		bool uses = !field;

		for (int f = 0; !uses && f < s->idx[i].nfields; f++)
			uses = strcmp(s->idx[i].fields[f], field) == 0;
		if (!uses)
			continue;
		ret = table_entry_build(txn, s, &s->idx[i], row, len, &sb, &vend);
		if (ret == 0)
			ret = store_txn_hide(txn, STORE_SPACE_INDEX, sb.buf, sb.len);
		else if (ret > 0 || ret == -ENAMETOOLONG || ret == -ERANGE)
			ret = 0;	/* not in that index */
	}
	strbuf_release(&sb);
	return ret < 0 ? ret : 0;
}

/*
 * Calls fn(txn, arg, row, row_len) for every row under key[0..len] (a
 * partial key: levels short of the table's depth); stops at an error.
 */
typedef int (*row_fn)(struct store_txn *txn, void *arg, const uint8_t *row, size_t len);

static int rows_under(struct store_txn *txn, const uint8_t *key, size_t len, int levels,
		      row_fn fn, void *arg)
{
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t row[STORE_KEY_MAX];
	size_t end;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);

	if (ret < 0)
		return ret;
	while ((ret = store_scan_next_distinct(scan, levels, &k, &v, &end)) == 1) {
		if (k.len <= len || end <= len || ((const uint8_t *)k.data)[len] == 0xff)
			continue;	/* key's own record, or a sibling's escaped NUL */
		memcpy(row, k.data, end);
		ret = fn(txn, arg, row, end);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	return ret;
}

static int hide_row_fn(struct store_txn *txn, void *arg, const uint8_t *row, size_t len)
{
	return hide_row_entries(txn, arg, row, len, NULL);
}

/* A level of a composite key expired: the entries of every row under it. */
static int hide_rows_under(struct store_txn *txn, const struct table_schema *s,
			   const uint8_t *key, size_t len, int levels)
{
	return rows_under(txn, key, len, levels, hide_row_fn, (void *)s);
}

/* Hides the entries of s's indexes that the expired node at key stops being in. */
static int hide_in_table(struct store_txn *txn, const struct table_schema *s, const uint8_t *key,
			 size_t len)
{
	uint8_t id[16];
	struct tuple_writer w;
	struct tuple_reader r;
	struct tuple_elem e;
	char field[TABLE_NAME_MAX];
	size_t row_end = 0;
	int n, ret = 0;

	if (len <= s->key_len ? memcmp(key, s->key, len) == 0 &&
				(len == s->key_len || s->key[len] != 0xff) : false) {
		/* the table itself or an ancestor: every entry of every index */
		for (int i = 0; i < s->nidx && ret == 0; i++) {
			tuple_writer_init(&w, id, sizeof(id));
			tuple_put_int(&w, s->idx[i].id);
			ret = store_txn_hide(txn, STORE_SPACE_INDEX, id, w.len);
		}
		return ret;
	}
	if (!table_is_under(s, key, len) || s->nidx == 0)
		return 0;
	n = table_key_count(key, s->key_len, len, s->key_depth, &row_end);
	if (n < s->key_depth)
		return hide_rows_under(txn, s, key, len, s->key_depth - n);
	if (len == row_end)
		return hide_row_entries(txn, s, key, row_end, NULL);
	/* a field of the row: only indexes over that top-level field */
	tuple_reader_init(&r, key + row_end, len - row_end);
	if (tuple_next(&r, &e) != 1 || e.type != TUPLE_TYPE_STRING || e.len >= sizeof(field) ||
	    r.pos != len - row_end)
		return 0;	/* deeper: objects and arrays are never indexed */
	tuple_elem_copy(&e, field);
	field[e.len] = '\0';
	return hide_row_entries(txn, s, key, row_end, field);
}

int table_hide_expired(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct table_schema *s;
	struct store_scan *scan;
	struct store_val k, v;
	int ret;

	if (store_space_is_empty(txn, STORE_SPACE_SCHEMA))
		return 0;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	if (ret < 0) {
		free(s);
		return ret == -ENOENT ? 0 : ret;
	}
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (table_schema_decode(k.data, k.len, v.data, v.len, s) < 0)
			continue;	/* kvfs check reports it */
		ret = hide_in_table(txn, s, key, len);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	free(s);
	return ret < 0 ? ret : 0;
}

static int row_touch(struct store_txn *txn, struct table_txn *tt, int t, const uint8_t *row,
		     size_t len)
{
	struct tree_node n;
	int ret = rows_add(tt, t, row, len);

	if (ret != 0 || (tt->tables[t]->nidx == 0 && tt->tables[t]->ttl_seconds == 0))
		return ret < 0 ? ret : 0;
	/* A new row has no entries yet: one lookup instead of one per field. */
	ret = tree_lookup(txn, row, len, &n);
	if (ret < 0)
		return ret;
	tt->rows[tt->nrows - 1]->existed = n.exists;	/* a new row takes the default TTL */
	if (!n.exists || tt->tables[t]->nidx == 0)
		return 0;
	return entries_delete(txn, tt->tables[t], row, len);
}

struct touch_arg {
	struct table_txn *tt;
	int t;
	bool emptied;
};

static int touch_row_fn(struct store_txn *txn, void *arg, const uint8_t *row, size_t len)
{
	struct touch_arg *ta = arg;

	/* emptied: the table's entries are all gone already */
	return ta->emptied ? rows_add(ta->tt, ta->t, row, len) :
	       row_touch(txn, ta->tt, ta->t, row, len);
}

/* Touches every row under key[0..len] (a partial key: levels short of depth). */
static int rows_touch_under(struct store_txn *txn, struct table_txn *tt, int t,
			    const uint8_t *key, size_t len, int levels, bool emptied)
{
	struct touch_arg ta = { tt, t, emptied };

	return rows_under(txn, key, len, levels, touch_row_fn, &ta);
}

/*
 * A table declared after the schemas were loaded (the second of several
 * declared in one transaction: model_table_declare) is appended, so that
 * the indices rows already touched hold stay valid.
 */
static int schema_append(struct store_txn *txn, struct table_txn *tt, const uint8_t *key,
			 size_t len, const struct store_val *v)
{
	struct table_schema *s = malloc(sizeof(*s));
	void *grown = realloc(tt->tables, (size_t)(tt->ntables + 1) * sizeof(*tt->tables));
	bool *gw = grown ? realloc(tt->wiped, (size_t)(tt->ntables + 1) * sizeof(bool)) : NULL;

	(void)txn;
	if (grown)
		tt->tables = grown;
	if (gw)
		tt->wiped = gw;
	if (!s || !grown || !gw) {
		free(s);
		return -ENOMEM;
	}
	if (table_schema_decode(key, len, v->data, v->len, s) < 0) {
		free(s);
		return -EIO;
	}
	tt->wiped[tt->ntables] = false;
	tt->tables[tt->ntables++] = s;
	return 0;
}

int table_schema_reload(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct table_txn *tt = store_txn_owner(txn);
	struct store_val v;
	int ret;

	if (!tt || !tt->loaded)
		return 0;
	ret = store_get(txn, STORE_SPACE_SCHEMA, key, len, &v);
	if (ret < 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		struct table_schema *s = tt->tables[t];

		if (s->key_len != len || memcmp(s->key, key, len) != 0)
			continue;
		return table_schema_decode(key, len, v.data, v.len, s) < 0 ? -EIO : 0;
	}
	return schema_append(txn, tt, key, len, &v);
}

int table_is_at(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct store_val v;
	int ret;

	if (len == 0)
		return 0;	/* the root is never a table */
	ret = store_get(txn, STORE_SPACE_SCHEMA, key, len, &v);
	return ret == -ENOENT ? 0 : ret < 0 ? ret : 1;
}

int table_touch(struct store_txn *txn, const uint8_t *key, size_t len, bool subtree)
{
	struct table_txn *tt;
	int ret = table_txn_loaded(txn, &tt);

	if (ret <= 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *s = tt->tables[t];
		size_t row_end = 0;
		int n;

		if (tt->wiped[t])
			continue;	/* rebuilt whole at commit */
		if (!table_is_under(s, key, len)) {
			if (subtree && len <= s->key_len && memcmp(key, s->key, len) == 0 &&
			    (len == s->key_len || s->key[len] != 0xff))
				tt->wiped[t] = true;	/* the table or an ancestor goes */
			continue;
		}
		n = table_key_count(key, s->key_len, len, s->key_depth, &row_end);
		if (n == s->key_depth)
			ret = row_touch(txn, tt, t, key, row_end);
		else if (subtree)
			ret = rows_touch_under(txn, tt, t, key, len, s->key_depth - n, false);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- commit: checks and new entries ---- */

bool model_error_is_unique_clash(const struct model_error *err)
{
	return err && strstr(err->msg, ": " UNIQUE_CLASH " ") != NULL;
}

/* The first index entry starting with prefix, other than `self` (NULL: any). */
static int entry_other(struct store_txn *txn, const void *prefix, size_t plen, const void *self,
		       size_t self_len, struct strbuf *found)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, prefix, plen, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (self && k.len == self_len && memcmp(k.data, self, self_len) == 0)
			continue;
		strbuf_reset(found);
		strbuf_add(found, k.data, k.len);
		break;
	}
	store_scan_close(scan);
	return ret;
}

/* "people/ann" from an entry's primary key part after values_end. */
static void entry_row_path(const struct table_schema *s, const uint8_t *entry, size_t len,
			   size_t values_end, struct strbuf *out)
{
	uint8_t key[STORE_KEY_MAX];
	size_t klen;

	if (table_entry_key(s, entry, values_end, len, key, &klen) == 0)
		tree_key_to_path(key, klen, out);
}

static int entries_insert(struct store_txn *txn, struct table_txn *tt,
			  const struct table_schema *s, const uint8_t *row, size_t len)
{
	struct strbuf sb, other, p;
	size_t vend;
	int ret = 0;

	strbuf_init(&sb);
	strbuf_init(&other);
	for (int i = 0; i < s->nidx && ret >= 0; i++) {
		const struct table_index *x = &s->idx[i];

		ret = table_entry_build(txn, s, x, row, len, &sb, &vend);
		if (ret == 1) {
			ret = 0;
			continue;
		}
		if (ret < 0) {
			ret = table_fail_row(tt, ret, row, len, "index %s: the entry is too long (%s)",
				       x->name, strerror(-ret));
			break;
		}
		if (x->unique) {
			ret = entry_other(txn, sb.buf, vend, sb.buf, sb.len, &other);
			if (ret == 1) {
				strbuf_init(&p);
				entry_row_path(s, (const uint8_t *)other.buf, other.len, vend, &p);
				ret = table_fail_row(tt, -EEXIST, row, len, UNIQUE_CLASH " %s: %s has "
					       "the same %s", x->name, p.buf ? p.buf : "?", x->fields[0]);
				strbuf_release(&p);
				break;
			}
			if (ret < 0)
				break;
		}
		ret = store_put(txn, STORE_SPACE_INDEX, sb.buf, sb.len, "", 0);
	}
	strbuf_release(&other);
	strbuf_release(&sb);
	return ret;
}

/* A removed row that a row of another table still references: EBUSY. */
static int check_restrict(struct store_txn *txn, struct table_txn *tt,
			  const struct table_schema *s, const uint8_t *row, size_t len)
{
	struct tuple_elem e;
	char raw[STORE_KEY_MAX];
	struct strbuf pre, found, p;
	int ret = 0;

	if (s->key_depth != 1 || table_key_elem(s, row, len, 0, &e) < 0 ||
	    e.type != TUPLE_TYPE_STRING || e.len > sizeof(raw))
		return 0;
	tuple_elem_copy(&e, raw);
	strbuf_init(&pre);
	strbuf_init(&found);
	for (int t = 0; t < tt->ntables && ret == 0; t++) {
		const struct table_schema *r = tt->tables[t];

		for (int i = 0; i < r->ncols && ret == 0; i++) {
			const struct table_col *c = &r->cols[i];
			uint8_t id[16];
			struct tuple_writer w;

			if (c->ref_len != s->key_len || memcmp(c->ref, s->key, s->key_len) != 0)
				continue;
			for (int form = 0; form < 2 && ret == 0; form++) {
				tuple_writer_init(&w, id, sizeof(id));
				tuple_put_int(&w, c->ref_index);
				strbuf_reset(&pre);
				strbuf_add(&pre, id, w.len);
				if (form == 0)
					ikey_put_string(&pre, IKEY_STRING, raw, e.len);
				else if (ikey_put_number_text(&pre, raw, e.len) < 0)
					continue;
				ret = entry_other(txn, pre.buf, pre.len, NULL, 0, &found);
			}
			if (ret == 1) {
				strbuf_init(&p);
				entry_row_path(r, (const uint8_t *)found.buf, found.len, pre.len, &p);
				ret = table_fail_row(tt, -EBUSY, row, len, "still referenced by %s (field "
					       "%s)", p.buf ? p.buf : "?", c->name);
				strbuf_release(&p);
			}
		}
	}
	strbuf_release(&found);
	strbuf_release(&pre);
	return ret;
}

/* Some table references s: by a column, or by a reference over several fields. */
static bool table_referenced(const struct table_txn *tt, const struct table_schema *s)
{
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *o = tt->tables[t];

		for (int i = 0; i < o->ncols; i++)
			if (o->cols[i].ref_len == s->key_len &&
			    memcmp(o->cols[i].ref, s->key, s->key_len) == 0)
				return true;
		for (int i = 0; i < o->nrefs; i++)
			if (o->refs[i].table_len == s->key_len &&
			    memcmp(o->refs[i].table, s->key, s->key_len) == 0)
				return true;
	}
	return false;
}

int table_row_pinned(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct table_txn *tt;
	int ret = table_txn_loaded(txn, &tt);

	if (ret <= 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *s = tt->tables[t];
		size_t row_end = 0;

		if (!table_is_under(s, key, len) || !table_referenced(tt, s) ||
		    table_key_count(key, s->key_len, len, s->key_depth, &row_end) < s->key_depth ||
		    len <= row_end)
			continue;	/* no row of a referenced table, or the row itself */
		/* the restrictions a removal of the row meets, with their messages */
		ret = check_restrict(txn, tt, s, key, row_end);
		if (ret == 0)
			ret = table_refs_restrict(txn, tt, s, key, row_end);
		if (ret < 0)
			return ret == -EBUSY ? 1 : ret;
	}
	return 0;
}

static int delete_index_entries(struct store_txn *txn, int64_t id)
{
	uint8_t pre[16];
	struct tuple_writer w;

	tuple_writer_init(&w, pre, sizeof(pre));
	tuple_put_int(&w, id);
	return store_del_prefix(txn, STORE_SPACE_INDEX, pre, w.len, NULL);
}

/*
 * EBUSY when a row of o references s: through the column whose reference
 * index is id (any entry), or through ref, a reference over several fields
 * (an entry of a row that names a row: one holding null names none).
 */
static int busy_if_used(struct store_txn *txn, struct table_txn *tt, const struct table_schema *s,
			const struct table_schema *o, int64_t id, const struct table_ref *ref,
			const char *what)
{
	uint8_t pre[16], row[STORE_KEY_MAX];
	struct strbuf found, path;
	struct tuple_writer w;
	size_t rlen = 0;
	int ret;

	if (ref) {
		ret = table_refs_any(txn, tt, o, ref, row, &rlen);
	} else {
		tuple_writer_init(&w, pre, sizeof(pre));
		tuple_put_int(&w, id);
		strbuf_init(&found);
		ret = entry_other(txn, pre, w.len, NULL, 0, &found);
		strbuf_release(&found);
	}
	if (ret <= 0)
		return ret;
	strbuf_init(&path);
	tree_key_to_path(o->key, o->key_len, &path);
	ret = table_fail_row(tt, -EBUSY, s->key, s->key_len, "table still referenced by rows "
			     "of %s (%s)", path.buf ? path.buf : "?", what);
	strbuf_release(&path);
	return ret;
}

/* A table whose directory went: rebuilt when it is back, else dropped. */
static int table_wiped(struct store_txn *txn, struct table_txn *tt, int t)
{
	const struct table_schema *s = tt->tables[t];
	struct tree_node n;
	int ret;

	for (int i = 0; i < s->nidx; i++) {
		ret = delete_index_entries(txn, s->idx[i].id);
		if (ret < 0)
			return ret;
	}
	ret = tree_lookup(txn, s->key, s->key_len, &n);
	if (ret < 0)
		return ret;
	if (n.exists) {
		tt->wiped[t] = false;
		return rows_touch_under(txn, tt, t, s->key, s->key_len, s->key_depth, true);
	}
	for (int r = 0; r < tt->ntables; r++) {
		const struct table_schema *o = tt->tables[r];
		char what[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];

		if (tt->wiped[r])
			continue;
		for (int i = 0; i < o->ncols; i++) {
			if (o->cols[i].ref_len != s->key_len ||
			    memcmp(o->cols[i].ref, s->key, s->key_len) != 0)
				continue;
			snprintf(what, sizeof(what), "field %s", o->cols[i].name);
			ret = busy_if_used(txn, tt, s, o, o->cols[i].ref_index, NULL, what);
			if (ret < 0)
				return ret;
		}
		for (int i = 0; i < o->nrefs; i++) {
			const struct table_ref *ref = &o->refs[i];

			if (ref->table_len != s->key_len ||
			    memcmp(ref->table, s->key, s->key_len) != 0)
				continue;
			ret = busy_if_used(txn, tt, s, o, ref->index, ref,
					   table_ref_what(o, ref, what, sizeof(what)));
			if (ret < 0)
				return ret;
		}
	}
	return store_del(txn, STORE_SPACE_SCHEMA, s->key, s->key_len);
}

static bool any_references(const struct table_txn *tt)
{
	for (int t = 0; t < tt->ntables; t++) {
		if (tt->tables[t]->nrefs)
			return true;
		for (int i = 0; i < tt->tables[t]->ncols; i++)
			if (tt->tables[t]->cols[i].ref_len)
				return true;
	}
	return false;
}

/* Directly inside a table the '@' names are its own views: no row can be browsed there. */
static bool row_key_is_at(const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t raw[STORE_KEY_MAX];
	struct tuple_elem e;

	if (table_key_elem(s, row, len, 0, &e) < 0 || e.type != TUPLE_TYPE_STRING || e.len == 0 ||
	    e.len > sizeof(raw))
		return false;
	tuple_elem_copy(&e, raw);
	return raw[0] == '@';
}

int table_txn_commit(struct store_txn *txn, struct table_txn *tt)
{
	struct tree_node n;
	int ret = 0;

	if (!tt->loaded)
		return 0;	/* nothing touched a table */
	for (int t = 0; t < tt->ntables; t++)
		if (tt->wiped[t] && (ret = table_wiped(txn, tt, t)) < 0)
			return ret;
	for (size_t i = 0; i < tt->nrows; i++) {
		const struct touched *r = tt->rows[i];
		const struct table_schema *s = tt->tables[r->table];

		if (tt->wiped[r->table])
			continue;	/* dropped with its table */
		ret = tree_lookup(txn, r->key, r->len, &n);
		if (ret < 0)
			return ret;
		if (!n.exists)
			continue;
		if (row_key_is_at(s, r->key, r->len))
			return table_fail_row(tt, -EINVAL, r->key, r->len, "a row key cannot begin with @ "
					"inside a table (the table's own names)");
		if (n.kind != MODEL_KIND_OBJECT)
			return table_fail_row(tt, -EINVAL, r->key, r->len, "a row of a table must be an "
					"object");
		if (tt->shape_only)
			continue;
		ret = table_check_columns(txn, tt, s, r->key, r->len);
		if (ret == 0)
			ret = entries_insert(txn, tt, s, r->key, r->len);
		if (ret == 0 && !r->existed && s->ttl_seconds)
			ret = ttl_default(txn, r->key, r->len, s->ttl_seconds, tree_now_ns());
		if (ret < 0)
			return ret;
	}
	/* References last: rows added or removed together in one write agree. */
	if (tt->shape_only || !any_references(tt))
		return 0;
	for (size_t i = 0; i < tt->nrows; i++) {
		const struct touched *r = tt->rows[i];
		const struct table_schema *s = tt->tables[r->table];

		if (tt->wiped[r->table])
			continue;
		ret = tree_lookup(txn, r->key, r->len, &n);
		if (ret < 0)
			return ret;
		ret = n.exists ? table_check_references(txn, tt, s, r->key, r->len)
			: check_restrict(txn, tt, s, r->key, r->len);
		if (ret == 0 && !n.exists)	/* references over several fields */
			ret = table_refs_restrict(txn, tt, s, r->key, r->len);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int table_txn_flush(struct store_txn *txn, struct table_txn *tt)
{
	int ret;

	if (!tt || !tt->loaded)
		return 0;
	ret = table_txn_commit(txn, tt);
	if (ret < 0)
		return ret;
	/* the entries are now written: a later touch starts from them */
	for (size_t i = 0; i < tt->nrows; i++)
		free(tt->rows[i]);
	tt->nrows = 0;
	if (tt->slots)
		memset(tt->slots, 0, tt->nslots * sizeof(*tt->slots));
	for (int t = 0; t < tt->ntables; t++)
		tt->wiped[t] = false;
	return 0;
}
