/*
 * model/table/table_schema.c - a table's schema record (docs/FORMAT.md, "Tables
 * and indexes"): key fields, columns, indexes, default TTL and references
 * over several fields, encoded as a tuple body sealed with a CRC-32C like
 * data records. Record version 1 has no references over several fields;
 * version 2, written only for a schema that has some, adds them after a
 * TTL element that is then always there (0: none).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

#define SCHEMA_VERSION 1
#define SCHEMA_VERSION_REFS 2	/* with references over several fields (and only then) */
#define SCHEMA_BODY_MAX 65536

/* Version 2's last element: nested (referenced table's data key, index id) each. */
static void encode_refs(const struct table_schema *s, struct tuple_writer *w)
{
	tuple_nested_begin(w);
	for (int i = 0; i < s->nrefs; i++) {
		tuple_nested_begin(w);
		tuple_put_bytes(w, s->refs[i].table, s->refs[i].table_len);
		tuple_put_int(w, s->refs[i].index);
		tuple_nested_end(w);
	}
	tuple_nested_end(w);
}

int table_schema_encode(const struct table_schema *s, struct strbuf *out)
{
	uint8_t *buf = malloc(SCHEMA_BODY_MAX);
	struct tuple_writer w;

	if (!buf)
		return -ENOMEM;
	tuple_writer_init(&w, buf, SCHEMA_BODY_MAX);
	tuple_put_int(&w, s->nrefs ? SCHEMA_VERSION_REFS : SCHEMA_VERSION);
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
	if (s->ttl_seconds || s->nrefs)	/* optional in version 1 (format 4): absent reads as 0 */
		tuple_put_int(&w, s->ttl_seconds);
	if (s->nrefs)
		encode_refs(s, &w);
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

/* A reference: its table's key and an index of the schema named "@..." over its fields. */
static bool decode_ref(const struct tuple_elem *n, const struct table_schema *s,
		       struct table_ref *ref)
{
	struct tuple_reader r;
	struct tuple_elem e;
	const struct table_index *x;

	tuple_reader_init_nested(&r, n);
	if (!next_of(&r, TUPLE_TYPE_BYTES, &e) || e.len == 0 || e.len > STORE_KEY_MAX)
		return false;
	tuple_elem_copy(&e, ref->table);
	ref->table_len = e.len;
	if (!next_of(&r, TUPLE_TYPE_INT, &e) || r.pos != r.len)
		return false;
	ref->index = e.integer;
	x = table_ref_index(s, ref);
	return x && x->name[0] == '@';
}

/* The TTL element (optional in version 1, always there in 2) and version 2's references. */
static int decode_tail(struct tuple_reader *r, int64_t version, struct table_schema *s)
{
	struct tuple_reader nr;
	struct tuple_elem e, n;

	if (r->pos < r->len || version == SCHEMA_VERSION_REFS) {
		if (!next_of(r, TUPLE_TYPE_INT, &e) || e.integer < 0 ||
		    e.integer > TTL_SECONDS_MAX || (e.integer == 0 && version == SCHEMA_VERSION))
			return -EINVAL;
		s->ttl_seconds = e.integer;
	}
	if (version == SCHEMA_VERSION_REFS) {
		if (!next_of(r, TUPLE_TYPE_NESTED, &n))
			return -EINVAL;
		tuple_reader_init_nested(&nr, &n);
		for (; nr.pos < nr.len; s->nrefs++)
			if (s->nrefs >= TABLE_REFS_MAX || !next_of(&nr, TUPLE_TYPE_NESTED, &e) ||
			    !decode_ref(&e, s, &s->refs[s->nrefs]))
				return -EINVAL;
		if (!s->nrefs)
			return -EINVAL;	/* version 2 is written only for a schema with some */
	}
	return r->pos == r->len ? 0 : -EINVAL;
}

int table_schema_decode(const uint8_t *key, size_t key_len, const void *rec, size_t len,
			struct table_schema *s)
{
	int64_t version;
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
	if (!next_of(&r, TUPLE_TYPE_INT, &e) ||
	    (e.integer != SCHEMA_VERSION && e.integer != SCHEMA_VERSION_REFS))
		return -EINVAL;
	version = e.integer;
	if (!next_of(&r, TUPLE_TYPE_INT, &e) || e.integer < 1 || e.integer > TABLE_KEY_DEPTH_MAX)
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
	return decode_tail(&r, version, s);
}
