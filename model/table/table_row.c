/*
 * model/table/table_row.c - one row of a table: its fields (from the row, or
 * implied by its key), its index entries, and the checks a committed row
 * must pass (columns, key fields, references).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* The value of field `name` of the row: a leaf or a container node. */
int table_row_field(struct store_txn *txn, const uint8_t *row, size_t len, const char *name,
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
int table_key_elem(const struct table_schema *s, const uint8_t *row, size_t len, int level,
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

bool table_level_is_int(const struct table_schema *s, int level)
{
	const struct table_col *c;

	if (level < 0 || level >= s->nkey_fields)
		return false;
	c = col_find(s, s->key_fields[level]);
	return c && c->type == TABLE_COL_INTEGER;
}

int table_key_value(const struct table_schema *s, int level, const struct tuple_elem *e,
		    struct strbuf *sb)
{
	const struct table_col *c = level < s->nkey_fields ? col_find(s, s->key_fields[level]) : NULL;
	char raw[STORE_KEY_MAX];

	if (e->type == TUPLE_TYPE_INT) {
		char buf[NUMBER_TEXT_MAX];

		return ikey_put_number_text(sb, buf, number_format_integer(e->integer, buf));
	}
	if (e->type != TUPLE_TYPE_STRING || e->len > sizeof(raw))
		return 1;
	tuple_elem_copy(e, raw);
	if (c && (c->type == TABLE_COL_INTEGER || c->type == TABLE_COL_NUMBER ||
		  c->type == TABLE_COL_DOUBLE) && ikey_put_number_text(sb, raw, e->len) == 0)
		return 0;
	ikey_put_string(sb, IKEY_STRING, raw, e->len);
	return 0;
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
	struct tree_node n;
	struct tuple_elem e;
	int ret = table_row_field(txn, row, len, name, &n);

	if (ret < 0)
		return ret;
	if (n.exists && n.kind == MODEL_KIND_LEAF)
		return ikey_put_leaf(sb, &n.leaf);
	if (n.exists || level < 0)
		return 1;
	if (table_key_elem(s, row, len, level, &e) < 0)
		return 1;
	return table_key_value(s, level, &e, sb);
}

/*
 * A key level's element as index entries hold it: a tuple integer for a
 * string that is an integer's canonical text (no sign but '-', no leading
 * zero, within 64 bits) under an integer key column, so that entries
 * sharing their values order their rows numerically; else unchanged.
 */
static bool level_as_int(const struct table_schema *s, int level, const struct tuple_elem *e,
			 int64_t *out)
{
	char raw[NUMBER_TEXT_MAX], canon[NUMBER_TEXT_MAX];

	if (!table_level_is_int(s, level) || e->type != TUPLE_TYPE_STRING || e->len >= sizeof(raw))
		return false;
	tuple_elem_copy(e, raw);
	if (!number_parse_integer(raw, e->len, out))
		return false;
	return number_format_integer(*out, canon) == e->len && memcmp(canon, raw, e->len) == 0;
}

/* Appends the row's key levels as index entries hold them. */
static void entry_key_put(const struct table_schema *s, const uint8_t *row, size_t len,
			  struct strbuf *sb)
{
	uint8_t buf[16];
	struct tuple_reader r;
	struct tuple_writer w;
	struct tuple_elem e;
	size_t start = 0;
	int64_t i;

	tuple_reader_init(&r, row + s->key_len, len - s->key_len);
	for (int level = 0; tuple_next(&r, &e) == 1; level++, start = r.pos) {
		if (!level_as_int(s, level, &e, &i)) {
			strbuf_add(sb, row + s->key_len + start, r.pos - start);
			continue;
		}
		tuple_writer_init(&w, buf, sizeof(buf));
		tuple_put_int(&w, i);
		strbuf_add(sb, buf, w.len);
	}
}

int table_entry_key(const struct table_schema *s, const uint8_t *key, size_t pos, size_t len,
		    uint8_t *row, size_t *row_len)
{
	char text[NUMBER_TEXT_MAX];
	struct tuple_reader r;
	struct tuple_writer w;
	struct tuple_elem e;
	size_t start = 0;

	if (s->key_len > STORE_KEY_MAX)
		return -EINVAL;
	memcpy(row, s->key, s->key_len);
	tuple_writer_init(&w, row, STORE_KEY_MAX);
	w.len = s->key_len;
	tuple_reader_init(&r, key + pos, len - pos);
	for (int level = 0; tuple_next(&r, &e) == 1; level++, start = r.pos) {
		if (e.type == TUPLE_TYPE_INT && table_level_is_int(s, level)) {
			tuple_put_string(&w, text, number_format_integer(e.integer, text));
		} else if (w.len + r.pos - start <= STORE_KEY_MAX) {
			memcpy(row + w.len, key + pos + start, r.pos - start);
			w.len += r.pos - start;
		} else {
			w.overflow = true;
		}
	}
	*row_len = w.len;
	return w.overflow || r.pos != len - pos ? -EINVAL : 0;
}

/* The index entry of the row: (id, values..., primary key...). 1: not in the index. */
int table_entry_build(struct store_txn *txn, const struct table_schema *s,
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
	entry_key_put(s, row, len, sb);
	if (sb->failed)
		return -ENOMEM;
	return sb->len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
}


/* Elements in key[from..len]; stops counting at max. */
int table_key_count(const uint8_t *key, size_t from, size_t len, int max, size_t *end_of_max)
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

bool table_is_under(const struct table_schema *s, const uint8_t *key, size_t len)
{
	return len > s->key_len && memcmp(key, s->key, s->key_len) == 0 &&
	       key[s->key_len] != 0xff;
}

int table_fail_row(struct table_txn *tt, int ret, const uint8_t *row, size_t len,
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
	tree_fail_reason(tt->err, ret, MODEL_REASON_TABLE_RULE, "%s: %s",
			 path.buf ? path.buf : "?", what);
	strbuf_release(&path);
	return ret;
}

const char *table_col_type_name(enum table_col_type t)
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

/* A whole number a double holds exactly: a double column takes it (48 as 48.0). */
static bool whole_fits_double(int64_t i)
{
	return i >= -(INT64_C(1) << 53) && i <= INT64_C(1) << 53;
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
		return tag == LEAF_DOUBLE || (tag == LEAF_INTEGER && whole_fits_double(n->leaf.integer));
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

/* The leaf types text is read as in a column of type t, in order: their count. */
static int col_leaf_types(enum table_col_type t, enum model_type types[2])
{
	switch (t) {
	case TABLE_COL_STRING:
		types[0] = MODEL_TYPE_STRING;
		return 1;
	case TABLE_COL_INTEGER:
		types[0] = MODEL_TYPE_INTEGER;
		return 1;
	case TABLE_COL_DOUBLE:
		types[0] = MODEL_TYPE_DOUBLE;
		return 1;
	case TABLE_COL_NUMBER:
		types[0] = MODEL_TYPE_INTEGER;
		types[1] = MODEL_TYPE_DOUBLE;
		return 2;
	case TABLE_COL_BOOLEAN:
		types[0] = MODEL_TYPE_BOOLEAN;
		return 1;
	case TABLE_COL_BYTES:
		types[0] = MODEL_TYPE_BYTES;
		return 1;
	default:
		return 0;	/* objects and arrays are no leaves */
	}
}

int table_field_types(struct store_txn *txn, const uint8_t *key, size_t len,
		      enum model_type types[2])
{
	struct table_txn *tt;
	int ret = table_txn_loaded(txn, &tt);

	if (ret <= 0)
		return ret;
	for (int t = 0; t < tt->ntables; t++) {
		const struct table_schema *s = tt->tables[t];
		const struct table_col *c;
		char name[TABLE_NAME_MAX];
		struct tuple_reader r;
		struct tuple_elem e;
		size_t row_end = 0;

		if (!table_is_under(s, key, len) ||
		    table_key_count(key, s->key_len, len, s->key_depth, &row_end) != s->key_depth)
			continue;
		tuple_reader_init(&r, key + row_end, len - row_end);
		if (tuple_next(&r, &e) != 1 || r.pos != len - row_end ||
		    e.type != TUPLE_TYPE_STRING || e.len >= sizeof(name))
			continue;	/* not a field of the row itself */
		tuple_elem_copy(&e, name);
		name[e.len] = '\0';
		c = col_find(s, name);
		return c ? col_leaf_types(c->type, types) : 0;
	}
	return 0;
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

/*
 * Whether a key field's value, given by the row's key (its text, as the key
 * names it), is of the column's type: a key is text, so an integer column's
 * key must read as an integer (as field_value indexes it), a boolean's as
 * true or false; bytes, objects and arrays cannot be keys.
 */
static bool key_text_type_ok(enum table_col_type t, const char *text, size_t len)
{
	int64_t i;

	switch (t) {
	case TABLE_COL_STRING:
		return true;
	case TABLE_COL_INTEGER:
		return number_parse_integer(text, len, NULL) || number_is_big_integer(text, len);
	case TABLE_COL_DOUBLE:
		return number_parse_double(text, len, NULL) ||
		       (number_parse_integer(text, len, &i) && whole_fits_double(i));
	case TABLE_COL_NUMBER:
		return number_parse_integer(text, len, NULL) || number_is_big_integer(text, len) ||
		       number_parse_double(text, len, NULL);
	case TABLE_COL_BOOLEAN:
		return (len == 4 && memcmp(text, "true", 4) == 0) ||
		       (len == 5 && memcmp(text, "false", 5) == 0);
	default:
		return false;
	}
}

/*
 * The value of key field `level` that the row leaves out, as its key gives
 * it: a string leaf n whose payload is raw (STORE_KEY_MAX bytes). -EINVAL
 * when the key has no such level.
 */
static int key_field_implied(const struct table_schema *s, const uint8_t *row, size_t len,
			     int level, char *raw, struct tree_node *n)
{
	struct tuple_elem e;

	if (table_key_elem(s, row, len, level, &e) < 0)
		return -EINVAL;
	memset(n, 0, sizeof(*n));
	n->exists = true;
	n->kind = MODEL_KIND_LEAF;
	n->leaf.tag = LEAF_STRING;
	n->leaf.payload = (const uint8_t *)raw;
	if (e.type == TUPLE_TYPE_INT) {
		n->leaf.payload_len = number_format_integer(e.integer, raw);
		return 0;
	}
	if (e.type != TUPLE_TYPE_STRING || e.len > STORE_KEY_MAX)
		return -EINVAL;
	tuple_elem_copy(&e, raw);
	n->leaf.payload_len = e.len;
	return 0;
}

/* The rules of column c on a key field the row leaves out (its value is the key's). */
static int check_implied(struct table_txn *tt, const struct table_col *c, const uint8_t *row,
			 size_t len, const struct tree_node *n)
{
	const char *text = (const char *)n->leaf.payload;

	if (!key_text_type_ok(c->type, text, n->leaf.payload_len))
		return table_fail_row(tt, -EINVAL, row, len, "key field %s must be %s, not \"%.*s\"",
				c->name, table_col_type_name(c->type), (int)n->leaf.payload_len,
				text);
	if (c->max_length > 0 && utf8_chars(n->leaf.payload, n->leaf.payload_len) >
	    (uint64_t)c->max_length)
		return table_fail_row(tt, -EINVAL, row, len, "key field %s is longer than %lld",
				c->name, (long long)c->max_length);
	return 0;
}

int table_check_columns(struct store_txn *txn, struct table_txn *tt,
			const struct table_schema *s, const uint8_t *row, size_t len)
{
	struct tree_node n;
	int ret;

	for (int i = 0; i < s->nkey_fields; i++) {
		struct tuple_elem e;
		char raw[STORE_KEY_MAX], text[NUMBER_TEXT_MAX];
		const void *have;
		size_t have_len;

		ret = table_row_field(txn, row, len, s->key_fields[i], &n);
		if (ret < 0)
			return ret;
		if (!n.exists || table_key_elem(s, row, len, i, &e) < 0)
			continue;	/* implied by the key */
		if (n.kind != MODEL_KIND_LEAF)
			return table_fail_row(tt, -EINVAL, row, len, "key field %s must equal the key",
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
		return table_fail_row(tt, -EINVAL, row, len, "key field %s does not equal the row's key",
				s->key_fields[i]);
	}
	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];

		int level = key_field_level(s, c->name);
		char raw[STORE_KEY_MAX];

		ret = table_row_field(txn, row, len, c->name, &n);
		if (ret < 0)
			return ret;
		if (!n.exists && level >= 0) {	/* implied by the key: its rules apply to it */
			if (key_field_implied(s, row, len, level, raw, &n) < 0)
				continue;
			ret = check_implied(tt, c, row, len, &n);
			if (ret < 0)
				return ret;
			continue;
		}
		if (!n.exists || (n.kind == MODEL_KIND_LEAF && n.leaf.tag == LEAF_NULL)) {
			if (c->required)
				return table_fail_row(tt, -EINVAL, row, len, "field %s is required", c->name);
			continue;
		}
		if (!type_ok(c->type, &n))
			return table_fail_row(tt, -EINVAL, row, len, "field %s must be %s, not %s",
					c->name, table_col_type_name(c->type), node_type_name(&n));
		if (c->max_length > 0 && n.kind == MODEL_KIND_LEAF &&
		    (n.leaf.tag == LEAF_STRING ? utf8_chars(n.leaf.payload, n.leaf.payload_len)
		     : n.leaf.payload_len) > (uint64_t)c->max_length)
			return table_fail_row(tt, -EINVAL, row, len, "field %s is longer than %lld",
					c->name, (long long)c->max_length);
	}
	return 0;
}

int table_row_value(struct store_txn *txn, const struct table_schema *s, const uint8_t *row,
		    size_t len, const char *name, char *raw, struct tree_node *out)
{
	int level = key_field_level(s, name);
	int ret = table_row_field(txn, row, len, name, out);

	if (ret < 0 || out->exists || level < 0)
		return ret;
	if (key_field_implied(s, row, len, level, raw, out) < 0)
		memset(out, 0, sizeof(*out));	/* no such key level: missing */
	return 0;
}

int table_check_references(struct store_txn *txn, struct table_txn *tt,
			   const struct table_schema *s, const uint8_t *row, size_t len)
{
	uint8_t target[STORE_KEY_MAX];
	size_t tlen = 0;
	struct tree_node n, t;
	int ret;

	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];
		char raw[STORE_KEY_MAX];

		if (!c->ref_len)
			continue;
		/* a key field the row leaves out references what its key names */
		ret = table_row_value(txn, s, row, len, c->name, raw, &n);
		if (ret < 0)
			return ret;
		if (!n.exists || (n.kind == MODEL_KIND_LEAF && n.leaf.tag == LEAF_NULL))
			continue;
		if (!ref_target(c, &n, target, &tlen))
			return table_fail_row(tt, -EINVAL, row, len, "field %s must name a row (a string "
					"or an integer)", c->name);
		ret = tree_lookup(txn, target, tlen, &t);
		if (ret < 0)
			return ret;
		if (!t.exists) {
			struct strbuf p;

			strbuf_init(&p);
			tree_key_to_path(target, tlen, &p);
			ret = table_fail_row(tt, -EINVAL, row, len, "field %s references %s, which does "
				       "not exist", c->name, p.buf ? p.buf : "?");
			strbuf_release(&p);
			return ret;
		}
	}
	return table_refs_check_row(txn, tt, s, row, len);
}
