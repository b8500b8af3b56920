/*
 * model/table/table_find.c - reading tables: a schema shown as JSON, the indexes
 * listed, and rows found through an index (one value, a prefix, a range).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

void table_show_json(const struct table_schema *s, struct json_writer *w)
{
	struct strbuf path;

	json_write_object_begin(w);
	json_write_key(w, "key_depth", 9);
	json_write_integer(w, s->key_depth);
	json_write_key(w, "key_fields", 10);
	json_write_array_begin(w);
	for (int i = 0; i < s->nkey_fields; i++)
		json_write_string(w, s->key_fields[i], strlen(s->key_fields[i]));
	json_write_array_end(w);
	json_write_key(w, "columns", 7);
	json_write_object_begin(w);
	for (int i = 0; i < s->ncols; i++) {
		const struct table_col *c = &s->cols[i];
		const char *type = table_col_type_name(c->type);

		json_write_key(w, c->name, strlen(c->name));
		json_write_object_begin(w);
		json_write_key(w, "type", 4);
		json_write_string(w, type, strlen(type));
		json_write_key(w, "required", 8);
		json_write_bool(w, c->required);
		if (c->max_length) {
			json_write_key(w, "max_length", 10);
			json_write_integer(w, c->max_length);
		}
		if (c->ref_len) {
			strbuf_init(&path);
			tree_key_to_path(c->ref, c->ref_len, &path);
			json_write_key(w, "references", 10);
			json_write_string(w, path.buf ? path.buf : "", path.len);
			strbuf_release(&path);
		}
		json_write_object_end(w);
	}
	json_write_object_end(w);
	json_write_key(w, "indexes", 7);
	json_write_object_begin(w);
	/*
	 * In name order, not creation order: a table declared again from this
	 * text (a restore through user.kvfs.schema) creates its reference
	 * indexes after the others, and must show the same text.
	 */
	for (int i = 0, last = -1; i < s->nidx; i++) {
		const struct table_index *x = NULL;
		int next = -1;

		for (int j = 0; j < s->nidx; j++)
			if ((last < 0 || strcmp(s->idx[j].name, s->idx[last].name) > 0) &&
			    (next < 0 || strcmp(s->idx[j].name, s->idx[next].name) < 0))
				next = j;
		x = &s->idx[next];
		last = next;
		if (strcmp(x->name, TABLE_KEY_INDEX) == 0)
			continue;	/* the columns say it (table_order.c) */

		json_write_key(w, x->name, strlen(x->name));
		json_write_object_begin(w);
		json_write_key(w, "fields", 6);
		json_write_array_begin(w);
		for (int f = 0; f < x->nfields; f++)
			json_write_string(w, x->fields[f], strlen(x->fields[f]));
		json_write_array_end(w);
		json_write_key(w, "unique", 6);
		json_write_bool(w, x->unique);
		json_write_object_end(w);
	}
	json_write_object_end(w);
	table_refs_show_json(s, w);
	if (s->ttl_seconds) {
		json_write_key(w, "ttl", 3);
		json_write_integer(w, s->ttl_seconds);
	}
	json_write_object_end(w);
}

/* A read transaction with the schema of path; the caller ends txn. */
static int read_schema(struct model *m, const char *path, struct store_txn **txn,
		       struct tree_path *p, struct table_schema **s, struct model_error *err)
{
	int ret;

	tree_clear(err);
	*s = malloc(sizeof(**s));
	if (!*s)
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	ret = tree_read_begin(m, txn);
	if (ret < 0) {
		free(*s);
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	}
	ret = table_schema_get(*txn, path, p, *s, err);
	if (ret < 0) {
		store_txn_end(*txn);
		free(*s);
	}
	return ret;
}

int model_table_show(struct model *m, const char *path, char **out, size_t *len,
		     struct model_error *err)
{
	struct store_txn *txn;
	struct table_schema *s;
	struct tree_path p;
	struct json_writer w;
	struct strbuf sb;
	int ret = read_schema(m, path, &txn, &p, &s, err);

	if (ret < 0)
		return ret;
	strbuf_init(&sb);
	json_writer_init(&w, &sb, NULL, true);
	table_show_json(s, &w);
	ret = json_writer_finish(&w);
	store_txn_end(txn);
	free(s);
	if (ret < 0) {
		strbuf_release(&sb);
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	}
	*out = strbuf_detach(&sb, len);
	return 0;
}

int model_index_list(struct model *m, const char *path, FILE *out, struct model_error *err)
{
	struct store_txn *txn;
	struct table_schema *s;
	struct tree_path p;
	int ret = read_schema(m, path, &txn, &p, &s, err);

	if (ret < 0)
		return ret;
	for (int i = 0; i < s->nidx; i++) {
		fprintf(out, "%s ", s->idx[i].name);
		for (int f = 0; f < s->idx[i].nfields; f++)
			fprintf(out, "%s%s", f ? "," : "", s->idx[i].fields[f]);
		fprintf(out, "%s\n", s->idx[i].unique ? " unique" : "");
	}
	store_txn_end(txn);
	free(s);
	return 0;
}

/* The declared type of field, 0 when it has none. */
static enum table_col_type col_type(const struct table_schema *s, const char *field)
{
	for (int i = 0; i < s->ncols; i++)
		if (strcmp(s->cols[i].name, field) == 0)
			return s->cols[i].type;
	return 0;
}

/*
 * A value given on the command line, as the column type of field says
 * (undeclared: true/false/null, a number when it reads as one, else a
 * string).
 */
int table_value_arg(const struct table_schema *s, const char *field, const char *text,
		     size_t len, struct strbuf *sb)
{
	enum table_col_type type = col_type(s, field);

	if (type == TABLE_COL_STRING || type == TABLE_COL_BYTES) {
		ikey_put_string(sb, type == TABLE_COL_STRING ? IKEY_STRING : IKEY_BYTES, text, len);
		return 0;
	}
	if ((type == 0 || type == TABLE_COL_BOOLEAN) && len == 4 && !memcmp(text, "true", 4))
		return strbuf_addc(sb, IKEY_TRUE), 0;
	if ((type == 0 || type == TABLE_COL_BOOLEAN) && len == 5 && !memcmp(text, "false", 5))
		return strbuf_addc(sb, IKEY_FALSE), 0;
	if (type == 0 && len == 4 && !memcmp(text, "null", 4))
		return strbuf_addc(sb, IKEY_NULL), 0;
	if (type == TABLE_COL_BOOLEAN)
		return -EINVAL;
	if (ikey_put_number_text(sb, text, len) == 0)
		return 0;
	if (type != 0)
		return -EINVAL;
	ikey_put_string(sb, IKEY_STRING, text, len);
	return 0;
}

/*
 * Prefix (id, values...) of q->value ("a/b" for a composite index). as_text:
 * the values of fields without a declared type are taken as strings, not
 * as numbers or true/false/null (the second reading of model_find).
 */
static int find_prefix(const struct table_schema *s, const struct table_index *x,
		       const char *value, bool as_text, struct strbuf *sb,
		       struct model_error *err)
{
	uint8_t id[16];
	struct tuple_writer w;
	const char *p = value;

	tuple_writer_init(&w, id, sizeof(id));
	tuple_put_int(&w, x->id);
	strbuf_add(sb, id, w.len);
	for (int f = 0; p && f < x->nfields; f++) {
		const char *slash = x->nfields > 1 ? strchr(p, '/') : NULL;
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (as_text && col_type(s, x->fields[f]) == 0)
			ikey_put_string(sb, IKEY_STRING, p, len);
		else if (table_value_arg(s, x->fields[f], p, len, sb) < 0)
			return tree_fail(err, -EINVAL, "find: \"%.*s\" is not a value of field %s's "
					 "type", (int)len, p, x->fields[f]);
		p = slash ? slash + 1 : NULL;
	}
	if (p)
		return tree_fail(err, -EINVAL, "find: more values than index %s has fields",
				 x->name);
	return sb->failed ? -ENOMEM : 0;
}

static void print_row(struct store_txn *txn, const struct table_schema *s, const uint8_t *key,
		      size_t len, size_t pk, const struct model_find *q, FILE *out)
{
	struct tuple_reader r;
	struct tuple_elem e;
	char raw[STORE_KEY_MAX], name[TREE_NAME_MAX];
	uint8_t row[STORE_KEY_MAX];
	size_t rlen;
	struct strbuf sb;

	if (q->json) {
		if (table_entry_key(s, key, pk, len, row, &rlen) < 0)
			return;
		strbuf_init(&sb);
		if (doc_render_buf(txn, row, rlen, MODEL_JSON_COMPACT, &sb, NULL) == 0)
			fprintf(out, "%.*s%s", (int)sb.len, sb.buf,
				sb.len && sb.buf[sb.len - 1] == '\n' ? "" : "\n");
		strbuf_release(&sb);
		return;
	}
	tuple_reader_init(&r, key + pk, len - pk);
	for (int i = 0; tuple_next(&r, &e) == 1; i++) {
		if (i)
			fputc('/', out);
		if (e.type == TUPLE_TYPE_INT) {
			fprintf(out, "%lld", (long long)e.integer);
		} else if (e.type == TUPLE_TYPE_STRING && e.len <= sizeof(raw)) {
			tuple_elem_copy(&e, raw);
			fwrite(name, 1, tree_name_escape(raw, e.len, name), out);
		}
	}
	fputc('\n', out);
}

/*
 * One reading of the query: the index entries from lo (or the start of
 * pre) to hi, their rows printed in index order. *found counts them.
 */
static int find_scan(struct store_txn *txn, const struct table_schema *s,
		     const struct table_index *x, const struct model_find *q, bool as_text,
		     FILE *out, size_t *found, struct model_error *err)
{
	struct strbuf pre, lo, hi;
	struct store_scan *scan = NULL;
	struct store_val k, v;
	int ret;

	strbuf_init(&pre);
	strbuf_init(&lo);
	strbuf_init(&hi);
	ret = find_prefix(s, x, q->value, as_text, &pre, err);
	if (ret == 0 && q->from)
		ret = find_prefix(s, x, q->from, as_text, &lo, err);
	if (ret == 0 && q->to)
		ret = find_prefix(s, x, q->to, as_text, &hi, err);
	if (ret < 0)
		goto out;
	strbuf_addc(&hi, (char)0xff);	/* past every entry starting with the upper value */
	ret = store_scan_open(txn, STORE_SPACE_INDEX, pre.buf, pre.len, &scan);
	if (ret == -ENOENT) {
		ret = 0;
		goto out;
	}
	if (ret == 0 && q->from)
		ret = store_scan_seek(scan, lo.buf, lo.len);
	while (ret == 0 && (ret = store_scan_next(scan, &k, &v)) == 1) {
		size_t pos = 0, n = k.len < hi.len ? k.len : hi.len;
		struct tuple_reader r;
		struct tuple_elem id;
		int bad = 0;

		if (q->to && (memcmp(k.data, hi.buf, n) > 0 ||
			      (memcmp(k.data, hi.buf, n) == 0 && k.len > hi.len)))
			break;
		tuple_reader_init(&r, k.data, k.len);
		bad = tuple_next(&r, &id) != 1;
		pos = r.pos;
		for (int f = 0; f < x->nfields && !bad; f++)
			bad = ikey_skip(k.data, k.len, &pos) < 0;
		if (!bad) {
			print_row(txn, s, k.data, k.len, pos, q, out);
			(*found)++;
		}
		ret = 0;
	}
	if (ret < 0)
		tree_fail(err, ret, "find: %s", strerror(-ret));
out:
	store_scan_close(scan);
	strbuf_release(&hi);
	strbuf_release(&lo);
	strbuf_release(&pre);
	return ret < 0 ? ret : 0;
}

/* True when a value of the query reads as something else than a string for a field without a type. */
static bool reads_two_ways(const struct table_schema *s, const struct table_index *x,
			   const struct model_find *q)
{
	const char *vals[] = { q->value, q->from, q->to };
	struct strbuf as_is, as_text;
	bool differ = false, untyped = false;

	if (!q->from != !q->to)
		return false;	/* half open: its text reading would take in every number too */
	for (int f = 0; f < x->nfields; f++)
		untyped = untyped || col_type(s, x->fields[f]) == 0;
	if (!untyped)
		return false;	/* every field typed: one reading */
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]) && !differ; i++) {
		if (!vals[i])
			continue;
		strbuf_init(&as_is);
		strbuf_init(&as_text);
		if (find_prefix(s, x, vals[i], false, &as_is, NULL) == 0 &&
		    find_prefix(s, x, vals[i], true, &as_text, NULL) == 0)
			differ = as_is.len != as_text.len || memcmp(as_is.buf, as_text.buf, as_is.len);
		strbuf_release(&as_is);
		strbuf_release(&as_text);
	}
	return differ;
}

/*
 * A value, or a closed range, that reads as a number (or true, false,
 * null) for a field without a declared type is looked up both ways: as
 * that, then as the string it also is (dates like 20140615 are often
 * strings). Numbers come before strings in an index, so the rows still
 * print in index order. A half-open range reads one way (its text reading
 * would run through every number): declare the column to choose.
 */
int model_find(struct model *m, const char *path, const char *name,
	       const struct model_find *q, FILE *out, struct model_error *err)
{
	struct store_txn *txn;
	struct table_schema *s;
	const struct table_index *x = NULL;
	struct tree_path p;
	size_t found = 0;
	int ret = read_schema(m, path, &txn, &p, &s, err);

	if (ret < 0)
		return ret;
	for (int i = 0; i < s->nidx; i++)
		if (strcmp(s->idx[i].name, name) == 0)
			x = &s->idx[i];
	if (!x) {
		ret = tree_fail(err, -ENOENT, "%s: no index %s", path, name);
		goto out_end;
	}
	ret = find_scan(txn, s, x, q, false, out, &found, err);
	if (ret == 0 && reads_two_ways(s, x, q))
		ret = find_scan(txn, s, x, q, true, out, &found, err);
out_end:
	store_txn_end(txn);
	free(s);
	return ret < 0 ? ret : 0;
}
