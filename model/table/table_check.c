/*
 * model/table/table_check.c - `kvfs check` of tables: every row against its
 * columns, references and indexes, and every index entry against its row.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

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
	if (table_key_ordered(s) && !table_key_index(s))
		tcheck_say(c, s->key, s->key_len, "the key index " TABLE_KEY_INDEX " of its integer "
			   "key column is missing (check --repair adds it)");
	strbuf_init(&sb);
	while ((ret = store_scan_next_distinct(scan, s->key_depth, &k, &v, &end)) == 1) {
		if (k.len <= s->key_len || end <= s->key_len ||
		    ((const uint8_t *)k.data)[s->key_len] == 0xff)
			continue;	/* an empty table's marker, or a sibling */
		memcpy(row, k.data, end);
		c->err.msg[0] = '\0';
		if (table_check_columns(txn, tt, s, row, end) < 0 ||
		    table_check_references(txn, tt, s, row, end) < 0)
			tcheck_say(c, row, end, "%s", c->err.msg);
		for (int i = 0; i < s->nidx; i++) {
			ret = table_entry_build(txn, s, &s->idx[i], row, end, &sb, &vend);
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

int table_entry_row(struct table_txn *tt, const uint8_t *key, size_t len, uint8_t *row,
		    size_t *row_len, const struct table_index **idx)
{
	struct tuple_reader r;
	struct tuple_elem id;
	const struct table_schema *s;
	size_t pos, vend;
	int t, x;

	tuple_reader_init(&r, key, len);
	if (tuple_next(&r, &id) != 1 || id.type != TUPLE_TYPE_INT ||
	    !index_of_id(tt, id.integer, &t, &x))
		return -EINVAL;
	s = tt->tables[t];
	pos = r.pos;
	for (int f = 0; f < s->idx[x].nfields; f++)
		if (ikey_skip(key, len, &pos) < 0)
			return -EINVAL;
	if (table_key_count(key, pos, len, s->key_depth + 1, &vend) != s->key_depth ||
	    table_entry_key(s, key, pos, len, row, row_len) < 0)
		return -EINVAL;
	*idx = &s->idx[x];
	return 0;
}

/* Every index entry against its row; unique indexes hold no two equal values. */
static int check_entries(struct store_txn *txn, struct table_txn *tt, struct tcheck *c)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct strbuf want, prev;
	uint8_t row[STORE_KEY_MAX];
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, NULL, 0, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	strbuf_init(&want);
	strbuf_init(&prev);
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key = k.data;
		struct tuple_reader r;
		struct tuple_elem id;
		size_t pos, vend, rlen;
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
		if (bad || table_key_count(key, pos, k.len, s->key_depth + 1, &vend) != s->key_depth ||
		    table_entry_key(s, key, pos, k.len, row, &rlen) < 0) {
			tcheck_say(c, key, k.len, "index %s: malformed entry", s->idx[x].name);
			continue;
		}
		/* an entry of the layout before integer key levels (a string there) differs: stale */
		ret = table_entry_build(txn, s, &s->idx[x], row, rlen, &want, &vend);
		if (ret < 0 && ret != -ENAMETOOLONG)
			break;
		if (ret != 0 || want.len != k.len || memcmp(want.buf, key, k.len) != 0)
			tcheck_say(c, row, rlen, "index %s: an entry does not "
				   "match the row (stale or corrupt)", s->idx[x].name);
		else if (s->idx[x].unique && prev.len == pos && memcmp(prev.buf, key, pos) == 0)
			tcheck_say(c, row, rlen, "unique index %s: a value "
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
	ret = table_txn_load(txn, tt);
	if (ret == -EIO)
		fn(arg, NULL, 0, "a table schema record is corrupt");
	/* each row looks up its index entries: on etcd one read, not one per row */
	if (ret == 0 && tt->ntables)
		(void)store_txn_prefetch(txn, STORE_SPACE_INDEX, NULL, 0);
	for (int t = 0; t < tt->ntables && ret == 0; t++)
		ret = check_rows(txn, tt, t, &c);
	if (ret == 0)
		ret = check_entries(txn, tt, &c);
	table_txn_free(tt);
	if (entries)
		*entries = c.entries;
	return ret == -EIO ? 0 : ret;
}

