/*
 * model/table.c - tables kept exact (docs/FORMAT.md, "Tables and indexes"):
 * schema records, the rows a write transaction touched, and at its commit
 * the re-derived index entries, column checks, unique indexes and
 * references of each of those rows, inside the same transaction.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table_int.h"
#include "model/tree_int.h"
#include "model/ttl_int.h"

#define SCHEMA_VERSION 1
#define SCHEMA_BODY_MAX 65536
#define UNIQUE_CLASH "unique index"	/* how a clash's message names it */

/* ---- schema records ---- */

int table_schema_encode(const struct table_schema *s, struct strbuf *out)
{
	uint8_t *buf = malloc(SCHEMA_BODY_MAX);
	struct tuple_writer w;

	if (!buf)
		return -ENOMEM;
	tuple_writer_init(&w, buf, SCHEMA_BODY_MAX);
	tuple_put_int(&w, SCHEMA_VERSION);
	tuple_put_int(&w, s->key_depth);
	tuple_nested_begin(&w);
	for (int i = 0; i < s->nkey_fields; i++)
		tuple_put_string(&w, s->key_fields[i], strlen(s->key_fields[i]));
	tuple_nested_end(&w);
	tuple_nested_begin(&w);
	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];

		tuple_nested_begin(&w);
		tuple_put_string(&w, c->name, strlen(c->name));
		tuple_put_int(&w, c->type);
		tuple_put_bool(&w, c->required);
		tuple_put_int(&w, c->max_length);
		tuple_put_bytes(&w, c->ref, c->ref_len);
		tuple_put_int(&w, c->ref_index);
		tuple_nested_end(&w);
	}
	tuple_nested_end(&w);
	tuple_nested_begin(&w);
	for (int i = 0; i < s->nidx; i++) {
		const struct table_index *x = &s->idx[i];

		tuple_nested_begin(&w);
		tuple_put_string(&w, x->name, strlen(x->name));
		tuple_put_int(&w, x->id);
		tuple_put_bool(&w, x->unique);
		tuple_nested_begin(&w);
		for (int f = 0; f < x->nfields; f++)
			tuple_put_string(&w, x->fields[f], strlen(x->fields[f]));
		tuple_nested_end(&w);
		tuple_nested_end(&w);
	}
	tuple_nested_end(&w);
	if (s->ttl_seconds)	/* optional (format 4): records without it read as 0 */
		tuple_put_int(&w, s->ttl_seconds);
	if (!w.overflow)
		leaf_record_seal(s->key, s->key_len, buf, w.len, out);
	free(buf);
	if (w.overflow)
		return -E2BIG;
	return out->failed ? -ENOMEM : 0;
}

/* Reads one element of an expected type. */
static bool next_of(struct tuple_reader *r, enum tuple_type t, struct tuple_elem *e)
{
	return tuple_next(r, e) == 1 && e->type == t;
}

static bool next_bool(struct tuple_reader *r, bool *out)
{
	struct tuple_elem e;

	if (tuple_next(r, &e) != 1 || (e.type != TUPLE_TYPE_TRUE && e.type != TUPLE_TYPE_FALSE))
		return false;
	*out = e.type == TUPLE_TYPE_TRUE;
	return true;
}

static bool next_name(struct tuple_reader *r, char *dst)
{
	struct tuple_elem e;

	if (!next_of(r, TUPLE_TYPE_STRING, &e) || e.len >= TABLE_NAME_MAX)
		return false;
	tuple_elem_copy(&e, dst);
	dst[e.len] = '\0';
	return true;
}

static bool decode_col(const struct tuple_elem *n, struct table_col *c)
{
	struct tuple_reader r;
	struct tuple_elem e;

	tuple_reader_init_nested(&r, n);
	if (!next_name(&r, c->name) || !next_of(&r, TUPLE_TYPE_INT, &e))
		return false;
	c->type = (enum table_col_type)e.integer;
	if (!next_bool(&r, &c->required) || !next_of(&r, TUPLE_TYPE_INT, &e))
		return false;
	c->max_length = e.integer;
	if (!next_of(&r, TUPLE_TYPE_BYTES, &e) || e.len > STORE_KEY_MAX)
		return false;
	tuple_elem_copy(&e, c->ref);
	c->ref_len = e.len;
	if (!next_of(&r, TUPLE_TYPE_INT, &e))
		return false;
	c->ref_index = e.integer;
	return c->type >= TABLE_COL_STRING && c->type <= TABLE_COL_ARRAY;
}

static bool decode_index(const struct tuple_elem *n, struct table_index *x)
{
	struct tuple_reader r, fr;
	struct tuple_elem e;

	tuple_reader_init_nested(&r, n);
	if (!next_name(&r, x->name) || !next_of(&r, TUPLE_TYPE_INT, &e))
		return false;
	x->id = e.integer;
	if (!next_bool(&r, &x->unique) || !next_of(&r, TUPLE_TYPE_NESTED, &e))
		return false;
	tuple_reader_init_nested(&fr, &e);
	for (x->nfields = 0; fr.pos < fr.len; x->nfields++)
		if (x->nfields >= TABLE_INDEX_FIELDS_MAX || !next_name(&fr, x->fields[x->nfields]))
			return false;
	return x->nfields > 0;
}

int table_schema_decode(const uint8_t *key, size_t key_len, const void *rec, size_t len,
			struct table_schema *s)
{
	struct tuple_reader r, nr;
	struct tuple_elem e, n;
	size_t body_len;
	int ret = leaf_record_verify(STORE_FORMAT_VERSION, key, key_len, rec, len, &body_len);

	if (ret < 0)
		return ret;
	memset(s, 0, sizeof(*s));
	if (key_len > STORE_KEY_MAX)
		return -EINVAL;
	memcpy(s->key, key, key_len);
	s->key_len = key_len;
	tuple_reader_init(&r, rec, body_len);
	if (!next_of(&r, TUPLE_TYPE_INT, &e) || e.integer != SCHEMA_VERSION ||
	    !next_of(&r, TUPLE_TYPE_INT, &e) || e.integer < 1 || e.integer > TABLE_KEY_DEPTH_MAX)
		return -EINVAL;
	s->key_depth = (int)e.integer;
	if (!next_of(&r, TUPLE_TYPE_NESTED, &n))
		return -EINVAL;
	tuple_reader_init_nested(&nr, &n);
	for (; nr.pos < nr.len; s->nkey_fields++)
		if (s->nkey_fields >= TABLE_KEY_DEPTH_MAX || !next_name(&nr, s->key_fields[s->nkey_fields]))
			return -EINVAL;
	if (!next_of(&r, TUPLE_TYPE_NESTED, &n))
		return -EINVAL;
	tuple_reader_init_nested(&nr, &n);
	for (; nr.pos < nr.len; s->ncols++)
		if (s->ncols >= TABLE_COLUMNS_MAX || !next_of(&nr, TUPLE_TYPE_NESTED, &e) ||
		    !decode_col(&e, &s->cols[s->ncols]))
			return -EINVAL;
	if (!next_of(&r, TUPLE_TYPE_NESTED, &n))
		return -EINVAL;
	tuple_reader_init_nested(&nr, &n);
	for (; nr.pos < nr.len; s->nidx++)
		if (s->nidx >= TABLE_INDEXES_MAX || !next_of(&nr, TUPLE_TYPE_NESTED, &e) ||
		    !decode_index(&e, &s->idx[s->nidx]))
			return -EINVAL;
	if (r.pos < r.len) {
		if (!next_of(&r, TUPLE_TYPE_INT, &e) || e.integer < 1 || e.integer > TTL_SECONDS_MAX)
			return -EINVAL;
		s->ttl_seconds = e.integer;
	}
	return r.pos == r.len ? 0 : -EINVAL;
}

/* ---- the transaction's bookkeeping ---- */

struct touched {
	int table;		/* index into tt->tables */
	bool existed;		/* the row was there at its first touch (a new one: false) */
	size_t len;
	uint8_t key[];
};

struct table_txn {
	struct model_error *err;
	bool loaded;
	int ntables;
	struct table_schema **tables;
	bool *wiped;		/* per table: a subtree delete took the table itself */
	struct touched **rows;	/* in touch order */
	size_t nrows, cap;
	size_t *slots;		/* hash of rows: index + 1, 0 empty */
	size_t nslots;
};

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

/* Reads every schema (a store has few tables); an empty space costs one seek. */
static int tables_load(struct store_txn *txn, struct table_txn *tt)
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

/* ---- a row's fields and index entries ---- */

/* The value of field `name` of the row: a leaf or a container node. */
static int row_field(struct store_txn *txn, const uint8_t *row, size_t len, const char *name,
		     struct tree_node *out)
{
	uint8_t key[STORE_KEY_MAX];
	struct tuple_writer w;

	memset(out, 0, sizeof(*out));
	tuple_writer_init(&w, key, sizeof(key));
	w.len = len;
	memcpy(key, row, len);
	tuple_put_string(&w, name, strlen(name));
	if (w.overflow)
		return 0;	/* no key that long: missing */
	return tree_lookup(txn, key, w.len, out);
}

/* Where key element `level` (0-based, after the table) of the row starts. */
static int key_elem(const struct table_schema *s, const uint8_t *row, size_t len, int level,
		    struct tuple_elem *out)
{
	struct tuple_reader r;

	tuple_reader_init(&r, row + s->key_len, len - s->key_len);
	for (int i = 0; i <= level; i++)
		if (tuple_next(&r, out) != 1)
			return -EINVAL;
	return 0;
}

static int key_field_level(const struct table_schema *s, const char *name)
{
	for (int i = 0; i < s->nkey_fields; i++)
		if (strcmp(s->key_fields[i], name) == 0)
			return i;
	return -1;
}

static const struct table_col *col_find(const struct table_schema *s, const char *name)
{
	for (int i = 0; i < s->ncols; i++)
		if (strcmp(s->cols[i].name, name) == 0)
			return &s->cols[i];
	return NULL;
}

/*
 * Appends the value element of field `name` of the row: from the row, or
 * implied by its key when it is a key field the row leaves out. 1 when the
 * field is missing or not indexable (the row is then not in the index).
 */
static int field_value(struct store_txn *txn, const struct table_schema *s, const uint8_t *row,
		       size_t len, const char *name, struct strbuf *sb)
{
	int level = key_field_level(s, name);
	const struct table_col *c = col_find(s, name);
	struct tree_node n;
	struct tuple_elem e;
	char raw[STORE_KEY_MAX];
	int ret = row_field(txn, row, len, name, &n);

	if (ret < 0)
		return ret;
	if (n.exists && n.kind == MODEL_KIND_LEAF)
		return ikey_put_leaf(sb, &n.leaf);
	if (n.exists || level < 0)
		return 1;
	if (key_elem(s, row, len, level, &e) < 0)
		return 1;
	if (e.type == TUPLE_TYPE_INT) {
		char buf[NUMBER_TEXT_MAX];

		return ikey_put_number_text(sb, buf, number_format_integer(e.integer, buf));
	}
	if (e.type != TUPLE_TYPE_STRING || e.len > sizeof(raw))
		return 1;
	tuple_elem_copy(&e, raw);
	if (c && (c->type == TABLE_COL_INTEGER || c->type == TABLE_COL_NUMBER ||
		  c->type == TABLE_COL_DOUBLE) && ikey_put_number_text(sb, raw, e.len) == 0)
		return 0;
	ikey_put_string(sb, IKEY_STRING, raw, e.len);
	return 0;
}

/* The index entry of the row: (id, values..., primary key...). 1: not in the index. */
static int entry_build(struct store_txn *txn, const struct table_schema *s,
		       const struct table_index *x, const uint8_t *row, size_t len,
		       struct strbuf *sb, size_t *values_end)
{
	uint8_t id[16];
	struct tuple_writer w;
	int ret;

	strbuf_reset(sb);
	tuple_writer_init(&w, id, sizeof(id));
	tuple_put_int(&w, x->id);
	strbuf_add(sb, id, w.len);
	for (int f = 0; f < x->nfields; f++) {
		ret = field_value(txn, s, row, len, x->fields[f], sb);
		if (ret != 0)
			return ret;
	}
	*values_end = sb->len;
	strbuf_add(sb, row + s->key_len, len - s->key_len);
	if (sb->failed)
		return -ENOMEM;
	return sb->len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
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
		ret = entry_build(txn, s, &s->idx[i], row, len, &sb, &vend);
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

/* Elements in key[from..len]; stops counting at max. */
static int count_elems(const uint8_t *key, size_t from, size_t len, int max, size_t *end_of_max);
static bool is_under(const struct table_schema *s, const uint8_t *key, size_t len);

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
		ret = entry_build(txn, s, &s->idx[i], row, len, &sb, &vend);
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
	if (!is_under(s, key, len) || s->nidx == 0)
		return 0;
	n = count_elems(key, s->key_len, len, s->key_depth, &row_end);
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

/* Elements in key[from..len]; stops counting at max. */
static int count_elems(const uint8_t *key, size_t from, size_t len, int max, size_t *end_of_max)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int n = 0;

	tuple_reader_init(&r, key + from, len - from);
	while (n < max && tuple_next(&r, &e) == 1) {
		n++;
		if (n == max)
			*end_of_max = from + r.pos;
	}
	return n;
}

static bool is_under(const struct table_schema *s, const uint8_t *key, size_t len)
{
	return len > s->key_len && memcmp(key, s->key, s->key_len) == 0 &&
	       key[s->key_len] != 0xff;
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

int table_schema_reload(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct table_txn *tt = store_txn_owner(txn);
	struct store_val v;
	int ret;

	if (!tt || !tt->loaded)
		return 0;
	for (int t = 0; t < tt->ntables; t++) {
		struct table_schema *s = tt->tables[t];

		if (s->key_len != len || memcmp(s->key, key, len) != 0)
			continue;
		ret = store_get(txn, STORE_SPACE_SCHEMA, key, len, &v);
		if (ret < 0)
			return ret;
		return table_schema_decode(key, len, v.data, v.len, s) < 0 ? -EIO : 0;
	}
	return 0;
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
	struct table_txn *tt = store_txn_owner(txn);
	int ret;

	if (!tt)
		return 0;
	ret = tables_load(txn, tt);
	if (ret < 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *s = tt->tables[t];
		size_t row_end = 0;
		int n;

		if (tt->wiped[t])
			continue;	/* rebuilt whole at commit */
		if (!is_under(s, key, len)) {
			if (subtree && len <= s->key_len && memcmp(key, s->key, len) == 0 &&
			    (len == s->key_len || s->key[len] != 0xff))
				tt->wiped[t] = true;	/* the table or an ancestor goes */
			continue;
		}
		n = count_elems(key, s->key_len, len, s->key_depth, &row_end);
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

static int fail_row(struct table_txn *tt, int ret, const uint8_t *row, size_t len,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail_row(struct table_txn *tt, int ret, const uint8_t *row, size_t len,
		    const char *fmt, ...)
{
	struct strbuf path;
	char what[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	strbuf_init(&path);
	tree_key_to_path(row, len, &path);
	tree_fail(tt->err, ret, "%s: %s", path.buf ? path.buf : "?", what);
	strbuf_release(&path);
	return ret;
}

bool model_error_is_unique_clash(const struct model_error *err)
{
	return err && strstr(err->msg, ": " UNIQUE_CLASH " ") != NULL;
}

static const char *col_type_name(enum table_col_type t)
{
	static const char *const names[] = { "?", "string", "integer", "double", "number",
					     "boolean", "bytes", "object", "array" };

	return t >= TABLE_COL_STRING && t <= TABLE_COL_ARRAY ? names[t] : "?";
}

static const char *node_type_name(const struct tree_node *n)
{
	if (n->kind == MODEL_KIND_OBJECT)
		return "object";
	if (n->kind == MODEL_KIND_ARRAY)
		return "array";
	if (n->leaf.tag == LEAF_BIG_INTEGER)
		return "integer";
	return model_type_name(leaf_model_type(&n->leaf));
}

static bool type_ok(enum table_col_type t, const struct tree_node *n)
{
	enum leaf_tag tag = n->leaf.tag;

	if (n->kind == MODEL_KIND_OBJECT || n->kind == MODEL_KIND_ARRAY)
		return t == (n->kind == MODEL_KIND_OBJECT ? TABLE_COL_OBJECT : TABLE_COL_ARRAY);
	switch (t) {
	case TABLE_COL_STRING:
		return tag == LEAF_STRING;
	case TABLE_COL_INTEGER:
		return tag == LEAF_INTEGER || tag == LEAF_BIG_INTEGER;
	case TABLE_COL_DOUBLE:
		return tag == LEAF_DOUBLE;
	case TABLE_COL_NUMBER:
		return tag == LEAF_INTEGER || tag == LEAF_BIG_INTEGER || tag == LEAF_DOUBLE;
	case TABLE_COL_BOOLEAN:
		return tag == LEAF_TRUE || tag == LEAF_FALSE;
	case TABLE_COL_BYTES:
		return tag == LEAF_BYTES;
	default:
		return false;
	}
}

static size_t utf8_chars(const uint8_t *p, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += (p[i] & 0xc0) != 0x80;
	return n;
}

/* The row key of the referenced table for a reference value; false: none. */
static bool ref_target(const struct table_col *c, const struct tree_node *n, uint8_t *key,
		       size_t *len)
{
	char buf[NUMBER_TEXT_MAX];
	struct tuple_writer w;

	tuple_writer_init(&w, key, STORE_KEY_MAX);
	w.len = c->ref_len;
	memcpy(key, c->ref, c->ref_len);
	if (n->kind != MODEL_KIND_LEAF)
		return false;
	if (n->leaf.tag == LEAF_STRING)
		tuple_put_string(&w, (const char *)n->leaf.payload, n->leaf.payload_len);
	else if (n->leaf.tag == LEAF_INTEGER)
		tuple_put_string(&w, buf, number_format_integer(n->leaf.integer, buf));
	else
		return false;
	*len = w.len;
	return !w.overflow;
}

static int check_columns(struct store_txn *txn, struct table_txn *tt,
			 const struct table_schema *s, const uint8_t *row, size_t len)
{
	struct tree_node n;
	int ret;

	for (int i = 0; i < s->nkey_fields; i++) {
		struct tuple_elem e;
		char raw[STORE_KEY_MAX], text[NUMBER_TEXT_MAX];
		const void *have;
		size_t have_len;

		ret = row_field(txn, row, len, s->key_fields[i], &n);
		if (ret < 0)
			return ret;
		if (!n.exists || key_elem(s, row, len, i, &e) < 0)
			continue;	/* implied by the key */
		if (n.kind != MODEL_KIND_LEAF)
			return fail_row(tt, -EINVAL, row, len, "key field %s must equal the key",
					s->key_fields[i]);
		if (n.leaf.tag == LEAF_STRING) {
			have = n.leaf.payload;
			have_len = n.leaf.payload_len;
		} else if (n.leaf.tag == LEAF_INTEGER) {
			have = text;
			have_len = number_format_integer(n.leaf.integer, text);
		} else {
			have = "";
			have_len = (size_t)-1;
		}
		if (e.type == TUPLE_TYPE_STRING && e.len <= sizeof(raw)) {
			tuple_elem_copy(&e, raw);
			if (have_len == e.len && memcmp(have, raw, e.len) == 0)
				continue;
		}
		return fail_row(tt, -EINVAL, row, len, "key field %s does not equal the row's key",
				s->key_fields[i]);
	}
	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];

		ret = row_field(txn, row, len, c->name, &n);
		if (ret < 0)
			return ret;
		if (!n.exists && key_field_level(s, c->name) >= 0)
			continue;	/* implied by the key */
		if (!n.exists || (n.kind == MODEL_KIND_LEAF && n.leaf.tag == LEAF_NULL)) {
			if (c->required)
				return fail_row(tt, -EINVAL, row, len, "field %s is required", c->name);
			continue;
		}
		if (!type_ok(c->type, &n))
			return fail_row(tt, -EINVAL, row, len, "field %s must be %s, not %s",
					c->name, col_type_name(c->type), node_type_name(&n));
		if (c->max_length > 0 && n.kind == MODEL_KIND_LEAF &&
		    (n.leaf.tag == LEAF_STRING ? utf8_chars(n.leaf.payload, n.leaf.payload_len)
		     : n.leaf.payload_len) > (uint64_t)c->max_length)
			return fail_row(tt, -EINVAL, row, len, "field %s is longer than %lld",
					c->name, (long long)c->max_length);
	}
	return 0;
}

static int check_references(struct store_txn *txn, struct table_txn *tt,
			    const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t target[STORE_KEY_MAX];
	size_t tlen = 0;
	struct tree_node n, t;
	int ret;

	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];

		if (!c->ref_len)
			continue;
		ret = row_field(txn, row, len, c->name, &n);
		if (ret < 0)
			return ret;
		if (!n.exists || (n.kind == MODEL_KIND_LEAF && n.leaf.tag == LEAF_NULL))
			continue;
		if (!ref_target(c, &n, target, &tlen))
			return fail_row(tt, -EINVAL, row, len, "field %s must name a row (a string "
					"or an integer)", c->name);
		ret = tree_lookup(txn, target, tlen, &t);
		if (ret < 0)
			return ret;
		if (!t.exists) {
			struct strbuf p;

			strbuf_init(&p);
			tree_key_to_path(target, tlen, &p);
			ret = fail_row(tt, -EINVAL, row, len, "field %s references %s, which does "
				       "not exist", c->name, p.buf ? p.buf : "?");
			strbuf_release(&p);
			return ret;
		}
	}
	return 0;
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
	uint8_t key[2 * STORE_KEY_MAX];

	memcpy(key, s->key, s->key_len);
	memcpy(key + s->key_len, entry + values_end, len - values_end);
	tree_key_to_path(key, s->key_len + len - values_end, out);
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

		ret = entry_build(txn, s, x, row, len, &sb, &vend);
		if (ret == 1) {
			ret = 0;
			continue;
		}
		if (ret < 0) {
			ret = fail_row(tt, ret, row, len, "index %s: the entry is too long (%s)",
				       x->name, strerror(-ret));
			break;
		}
		if (x->unique) {
			ret = entry_other(txn, sb.buf, vend, sb.buf, sb.len, &other);
			if (ret == 1) {
				strbuf_init(&p);
				entry_row_path(s, (const uint8_t *)other.buf, other.len, vend, &p);
				ret = fail_row(tt, -EEXIST, row, len, UNIQUE_CLASH " %s: %s has "
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

	if (s->key_depth != 1 || key_elem(s, row, len, 0, &e) < 0 ||
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
				ret = fail_row(tt, -EBUSY, row, len, "still referenced by %s (field "
					       "%s)", p.buf ? p.buf : "?", c->name);
				strbuf_release(&p);
			}
		}
	}
	strbuf_release(&found);
	strbuf_release(&pre);
	return ret;
}

static int delete_index_entries(struct store_txn *txn, int64_t id)
{
	uint8_t pre[16];
	struct tuple_writer w;

	tuple_writer_init(&w, pre, sizeof(pre));
	tuple_put_int(&w, id);
	return store_del_prefix(txn, STORE_SPACE_INDEX, pre, w.len, NULL);
}

/* A table whose directory went: rebuilt when it is back, else dropped. */
static int table_wiped(struct store_txn *txn, struct table_txn *tt, int t)
{
	const struct table_schema *s = tt->tables[t];
	struct tree_node n;
	struct strbuf path;
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

		if (tt->wiped[r])
			continue;
		for (int i = 0; i < o->ncols; i++) {
			struct strbuf found;
			uint8_t pre[16];
			struct tuple_writer w;

			if (o->cols[i].ref_len != s->key_len ||
			    memcmp(o->cols[i].ref, s->key, s->key_len) != 0)
				continue;
			tuple_writer_init(&w, pre, sizeof(pre));
			tuple_put_int(&w, o->cols[i].ref_index);
			strbuf_init(&found);
			ret = entry_other(txn, pre, w.len, NULL, 0, &found);
			strbuf_release(&found);
			if (ret != 0) {
				if (ret < 0)
					return ret;
				strbuf_init(&path);
				tree_key_to_path(o->key, o->key_len, &path);
				ret = fail_row(tt, -EBUSY, s->key, s->key_len, "table still "
					       "referenced by rows of %s (field %s)",
					       path.buf ? path.buf : "?", o->cols[i].name);
				strbuf_release(&path);
				return ret;
			}
		}
	}
	return store_del(txn, STORE_SPACE_SCHEMA, s->key, s->key_len);
}

static bool any_references(const struct table_txn *tt)
{
	for (int t = 0; t < tt->ntables; t++)
		for (int i = 0; i < tt->tables[t]->ncols; i++)
			if (tt->tables[t]->cols[i].ref_len)
				return true;
	return false;
}

/* Directly inside a table the '@' names are its own views: no row can be browsed there. */
static bool row_key_is_at(const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t raw[STORE_KEY_MAX];
	struct tuple_elem e;

	if (key_elem(s, row, len, 0, &e) < 0 || e.type != TUPLE_TYPE_STRING || e.len == 0 ||
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
			return fail_row(tt, -EINVAL, r->key, r->len, "a row key cannot begin with @ "
					"inside a table (the table's own names)");
		if (n.kind != MODEL_KIND_OBJECT)
			return fail_row(tt, -EINVAL, r->key, r->len, "a row of a table must be an "
					"object");
		ret = check_columns(txn, tt, s, r->key, r->len);
		if (ret == 0)
			ret = entries_insert(txn, tt, s, r->key, r->len);
		if (ret == 0 && !r->existed && s->ttl_seconds)
			ret = ttl_default(txn, r->key, r->len, s->ttl_seconds, tree_now_ns());
		if (ret < 0)
			return ret;
	}
	/* References last: rows added or removed together in one write agree. */
	if (!any_references(tt))
		return 0;
	for (size_t i = 0; i < tt->nrows; i++) {
		const struct touched *r = tt->rows[i];
		const struct table_schema *s = tt->tables[r->table];

		if (tt->wiped[r->table])
			continue;
		ret = tree_lookup(txn, r->key, r->len, &n);
		if (ret < 0)
			return ret;
		ret = n.exists ? check_references(txn, tt, s, r->key, r->len)
			: check_restrict(txn, tt, s, r->key, r->len);
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

int table_check_move(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_SCHEMA, key, len, &scan);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (k.len > len && ((const uint8_t *)k.data)[len] == 0xff)
			continue;	/* a sibling whose name goes on with a NUL */
		ret = tree_fail(err, -EBUSY, "%s: is or holds a table; moving a table is not "
				"supported (kvfs table drop, move, kvfs table create)", what);
		break;
	}
	store_scan_close(scan);
	return ret;
}

/* ---- kvfs check ---- */

struct tcheck {
	table_report_fn fn;
	void *arg;
	struct model_error err;
	uint64_t entries;
};

static void tcheck_say(struct tcheck *c, const uint8_t *key, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void tcheck_say(struct tcheck *c, const uint8_t *key, size_t len, const char *fmt, ...)
{
	char msg[640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->fn(c->arg, key, len, msg);
}

/* Every row against its columns, references and every index. */
static int check_rows(struct store_txn *txn, struct table_txn *tt, int t, struct tcheck *c)
{
	const struct table_schema *s = tt->tables[t];
	struct store_scan *scan;
	struct store_val k, v, e;
	uint8_t row[STORE_KEY_MAX];
	struct strbuf sb;
	size_t end, vend;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, s->key, s->key_len, &scan);

	if (ret < 0)
		return ret;
	strbuf_init(&sb);
	while ((ret = store_scan_next_distinct(scan, s->key_depth, &k, &v, &end)) == 1) {
		if (k.len <= s->key_len || end <= s->key_len ||
		    ((const uint8_t *)k.data)[s->key_len] == 0xff)
			continue;	/* an empty table's marker, or a sibling */
		memcpy(row, k.data, end);
		c->err.msg[0] = '\0';
		if (check_columns(txn, tt, s, row, end) < 0 ||
		    check_references(txn, tt, s, row, end) < 0)
			tcheck_say(c, row, end, "%s", c->err.msg);
		for (int i = 0; i < s->nidx; i++) {
			ret = entry_build(txn, s, &s->idx[i], row, end, &sb, &vend);
			if (ret == 1)
				continue;
			if (ret < 0 || store_get(txn, STORE_SPACE_INDEX, sb.buf, sb.len, &e) < 0)
				tcheck_say(c, row, end, "index %s: the row's entry is missing",
					   s->idx[i].name);
		}
		ret = 0;
	}
	strbuf_release(&sb);
	store_scan_close(scan);
	return ret;
}

static bool index_of_id(struct table_txn *tt, int64_t id, int *t, int *x)
{
	for (*t = 0; *t < tt->ntables; (*t)++)
		for (*x = 0; *x < tt->tables[*t]->nidx; (*x)++)
			if (tt->tables[*t]->idx[*x].id == id)
				return true;
	return false;
}

/* Every index entry against its row; unique indexes hold no two equal values. */
static int check_entries(struct store_txn *txn, struct table_txn *tt, struct tcheck *c)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct strbuf want, prev;
	uint8_t row[2 * STORE_KEY_MAX];
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, NULL, 0, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	strbuf_init(&want);
	strbuf_init(&prev);
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key = k.data;
		struct tuple_reader r;
		struct tuple_elem id;
		size_t pos, vend;
		int t, x, bad = 0;
		const struct table_schema *s;

		c->entries++;
		tuple_reader_init(&r, key, k.len);
		if (tuple_next(&r, &id) != 1 || id.type != TUPLE_TYPE_INT ||
		    !index_of_id(tt, id.integer, &t, &x)) {
			tcheck_say(c, key, k.len, "index entry of no declared index");
			continue;
		}
		s = tt->tables[t];
		pos = r.pos;
		for (int f = 0; f < s->idx[x].nfields && !bad; f++)
			bad = ikey_skip(key, k.len, &pos) < 0;
		if (bad || count_elems(key, pos, k.len, s->key_depth + 1, &vend) != s->key_depth ||
		    s->key_len + k.len - pos > STORE_KEY_MAX) {
			tcheck_say(c, key, k.len, "index %s: malformed entry", s->idx[x].name);
			continue;
		}
		memcpy(row, s->key, s->key_len);
		memcpy(row + s->key_len, key + pos, k.len - pos);
		ret = entry_build(txn, s, &s->idx[x], row, s->key_len + k.len - pos, &want, &vend);
		if (ret < 0 && ret != -ENAMETOOLONG)
			break;
		if (ret != 0 || want.len != k.len || memcmp(want.buf, key, k.len) != 0)
			tcheck_say(c, row, s->key_len + k.len - pos, "index %s: an entry does not "
				   "match the row (stale or corrupt)", s->idx[x].name);
		else if (s->idx[x].unique && prev.len == pos && memcmp(prev.buf, key, pos) == 0)
			tcheck_say(c, row, s->key_len + k.len - pos, "unique index %s: a value "
				   "appears twice", s->idx[x].name);
		strbuf_reset(&prev);
		strbuf_add(&prev, key, pos);
		ret = 0;
	}
	strbuf_release(&prev);
	strbuf_release(&want);
	store_scan_close(scan);
	return ret;
}

int table_check(struct store_txn *txn, table_report_fn fn, void *arg, uint64_t *entries)
{
	struct tcheck c = { .fn = fn, .arg = arg };
	struct table_txn *tt;
	int ret = table_txn_new(&c.err, &tt);

	if (ret < 0)
		return ret;
	ret = tables_load(txn, tt);
	if (ret == -EIO)
		fn(arg, NULL, 0, "a table schema record is corrupt");
	for (int t = 0; t < tt->ntables && ret == 0; t++)
		ret = check_rows(txn, tt, t, &c);
	if (ret == 0)
		ret = check_entries(txn, tt, &c);
	table_txn_free(tt);
	if (entries)
		*entries = c.entries;
	return ret == -EIO ? 0 : ret;
}
