/*
 * model/doc/lines.c - `kvfs import --lines`: JSON Lines written as rows of a
 * table (keyed by its key fields, or by the next integers) or appended as
 * elements of a plain array, each batch one transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* What PATH is, found again by every batch (another writer may change it). */
struct lines_target {
	struct tree_path p;
	struct table_schema *s;	/* heap; NULL: a plain path, lines are appended */
	bool enumerable;	/* a table without key fields: keys are the next integers */
};

struct lines_op {
	const char *path;
	const char *data;
	size_t len;
	uint64_t first_line;
	struct model_lines *state;
	struct model_error *err;
	int64_t next_key;	/* this attempt's copy of state->next_key */
	uint64_t rows, lines;	/* this attempt's counts */
	uint64_t fail_line;
};

/* The key fields' values of one line, found by a first parse. */
struct key_scan {
	const struct table_schema *s;
	int pending;		/* key field whose value comes next, or -1 */
	bool object;
	bool have[TABLE_KEY_DEPTH_MAX];
	size_t val_off[TABLE_KEY_DEPTH_MAX];	/* into copy */
	size_t val_len[TABLE_KEY_DEPTH_MAX];
	bool bad[TABLE_KEY_DEPTH_MAX];	/* not a string or an int64 */
	char *copy;		/* heap: the values, copied (tokens are borrowed) */
	size_t copy_len, copy_cap;
};

static int target_find(struct store_txn *txn, const char *path, struct lines_target *t,
		       struct model_error *err)
{
	struct store_val v;
	int ret = tree_resolve(txn, path, TREE_FOR_CREATE, &t->p, err);

	if (ret < 0)
		return ret;
	if (t->p.is_view)
		return tree_fail(err, -EINVAL, "%s: import --lines needs a directory, not a "
				 ".json view", path);
	ret = t->p.len ? store_get(txn, STORE_SPACE_SCHEMA, t->p.key, t->p.len, &v) : -ENOENT;
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	t->s = malloc(sizeof(*t->s));
	if (!t->s)
		return -ENOMEM;
	ret = table_schema_decode(t->p.key, t->p.len, v.data, v.len, t->s);
	if (ret < 0)
		return tree_fail(err, -EIO, "%s: the table's schema record is corrupt (run kvfs "
				 "check)", path);
	t->enumerable = t->s->nkey_fields == 0;
	if (t->enumerable && t->s->key_depth != 1)
		return tree_fail(err, -EINVAL, "%s: the table has key depth %d and no key "
				 "fields: import --lines needs key fields to name its rows",
				 path, t->s->key_depth);
	return 0;
}

/* The highest child name that is a canonical integer, plus one; 1 when none. */
static int next_integer_key(struct store_txn *txn, const struct tree_path *p, int64_t *out)
{
	char raw[TREE_NAME_MAX];
	struct store_scan *scan;
	struct tree_child c;
	int64_t high = 0, v;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, p->key, p->len, &scan);

	if (ret == -ENOENT) {
		*out = 1;
		return 0;
	}
	if (ret < 0)
		return ret;
	for (ret = tree_child_first(scan, p->key, p->len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, p->len, &c)) {
		if (c.elem.type != TUPLE_TYPE_STRING || c.elem.len >= sizeof(raw))
			continue;
		tuple_elem_copy(&c.elem, raw);
		if (tree_name_index(raw, c.elem.len, &v) && v > high)
			high = v;
	}
	store_scan_close(scan);
	if (ret < 0)
		return ret;
	if (high == INT64_MAX)
		return -EOVERFLOW;
	*out = high + 1;
	return 0;
}

static int key_event(void *arg, const struct json_token *tok)
{
	struct key_scan *ks = arg;
	int f = ks->pending;

	ks->pending = -1;
	if (tok->depth == 0 && tok->event == JSON_OBJECT_BEGIN)
		ks->object = true;
	if (tok->depth != 1)
		return 0;
	if (tok->event == JSON_KEY) {
		for (int i = 0; i < ks->s->nkey_fields; i++)
			if (strlen(ks->s->key_fields[i]) == tok->len &&
			    memcmp(ks->s->key_fields[i], tok->str, tok->len) == 0)
				ks->pending = i;
		return 0;
	}
	if (f < 0)
		return 0;
	if (tok->event != JSON_STRING && tok->event != JSON_INTEGER) {
		ks->bad[f] = true;	/* containers open at depth 1 as well */
		return 0;
	}
	if (ks->copy_len + tok->len > ks->copy_cap) {
		size_t cap = (ks->copy_cap + tok->len) * 2;
		char *grown = realloc(ks->copy, cap);

		if (!grown)
			return -ENOMEM;
		ks->copy = grown;
		ks->copy_cap = cap;
	}
	memcpy(ks->copy + ks->copy_len, tok->str, tok->len);
	ks->have[f] = true;
	ks->val_off[f] = ks->copy_len;
	ks->val_len[f] = tok->len;
	ks->bad[f] = false;
	ks->copy_len += tok->len;
	return 0;
}

/* "invalid JSON: column 5: ..." (every line of JSON Lines is line 1 of its value). */
static int fail_json(struct model_error *err, int ret, const struct model_error *perr)
{
	const char *m = perr->msg;

	if (strncmp(m, "line 1, ", 8) == 0)
		m += 8;
	return tree_fail(err, ret, "invalid JSON: %s", m[0] ? m : strerror(-ret));
}

/* The row path of one line of a table with key fields, into sb. */
static int row_path_fields(const struct lines_target *t, const char *path, const char *line,
			   size_t len, struct strbuf *sb, struct model_error *err)
{
	struct key_scan ks = { .s = t->s, .pending = -1 };
	struct model_error perr = { .msg = "" };
	char name[TREE_NAME_MAX];
	int ret;

	ret = json_parse(line, len, 0, MODEL_DEPTH_MAX, key_event, &ks, NULL, NULL, &perr);
	if (ret < 0) {
		ret = ret == -ENOMEM ? tree_fail(err, ret, "out of memory")
			: fail_json(err, ret, &perr);
		goto out_free;
	}
	ret = -EINVAL;
	if (!ks.object) {
		tree_fail(err, ret, "a row must be a JSON object");
		goto out_free;
	}
	strbuf_addf(sb, "%s", path);
	for (int i = 0; i < t->s->nkey_fields; i++) {
		const char *f = t->s->key_fields[i];

		if (ks.bad[i] || !ks.have[i]) {
			tree_fail(err, ret, "key field %s %s", f, ks.bad[i] ?
				  "must be a string or an integer" : "is missing");
			goto out_free;
		}
		if (ks.val_len[i] > TREE_FILE_NAME_MAX) {
			tree_fail(err, ret, "key field %s is too long for a name", f);
			goto out_free;
		}
		tree_name_escape(ks.copy + ks.val_off[i], ks.val_len[i], name);
		strbuf_addf(sb, "/%s", name);
	}
	ret = 0;
out_free:
	free(ks.copy);
	return ret;
}

/* Creates the missing levels between the table at key[0..table_len] and a
 * composite row (empty objects), as mkdir -p would. */
static int row_parents(struct store_txn *txn, const struct tree_path *row, size_t table_len,
		       struct model_error *err)
{
	struct tree_path up = *row;
	struct tuple_reader r;
	struct tuple_elem e;
	struct tree_node n;
	int ret;

	tuple_reader_init(&r, row->key, row->len);
	r.pos = table_len;
	up.parent_len = table_len;
	while ((ret = tuple_next(&r, &e)) == 1 && r.pos < row->len) {
		up.len = r.pos;
		ret = tree_lookup(txn, up.key, up.len, &n);
		if (ret == 0 && !n.exists) {
			ret = tree_attach(txn, &up, err);
			if (ret == 0)
				ret = tree_put_marker(txn, up.key, up.len, MODEL_KIND_OBJECT);
		}
		if (ret < 0)
			return ret;
		up.parent_len = up.len;
	}
	return ret < 0 ? ret : 0;
}

/* Writes one non-blank line; 0 or a refusal with a message (no line number). */
static int line_write(struct store_txn *txn, struct lines_op *op, const struct lines_target *t,
		      const char *line, size_t len)
{
	struct tree_path row;
	struct tree_node n;
	struct strbuf sb;
	bool replaced = false;
	int ret;

	if (!t->s)
		return doc_write(txn, &t->p, line, len, DOC_APPEND, NULL, NULL, NULL, op->err);
	strbuf_init(&sb);
	if (t->enumerable) {
		strbuf_addf(&sb, "%s/%lld", op->path, (long long)op->next_key);
		ret = 0;
	} else {
		ret = row_path_fields(t, op->path, line, len, &sb, op->err);
	}
	if (ret == 0 && sb.failed)
		ret = tree_fail(op->err, -ENOMEM, "out of memory");
	if (ret == 0)
		ret = tree_resolve(txn, sb.buf, TREE_FOR_CREATE, &row, op->err);
	if (ret == 0 && t->enumerable) {
		ret = tree_lookup(txn, row.key, row.len, &n);
		if (ret == 0 && n.exists)
			ret = tree_fail(op->err, -EEXIST, "%s: the next integer key is taken "
					"(written meanwhile by someone else)", sb.buf);
	}
	if (ret == 0 && !t->enumerable) {
		ret = tree_lookup(txn, row.key, row.len, &n);
		replaced = ret == 0 && n.exists;
	}
	if (ret == 0 && t->s->key_depth > 1)
		ret = row_parents(txn, &row, t->s->key_len, op->err);
	/* a line replaces its row as kvfs import does: its TTLs go (the
	 * table's default comes again), and the attributes of fields it
	 * leaves out */
	if (ret == 0 && replaced)
		ret = ttl_delete_subtree(txn, row.key, row.len);
	if (ret == 0)
		ret = doc_write(txn, &row, line, len, 0, NULL, NULL, NULL, op->err);
	if (ret == 0 && replaced)
		ret = attr_prune(txn, row.key, row.len);
	if (ret == 0 && t->enumerable)
		op->next_key++;
	strbuf_release(&sb);
	return ret;
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static int lines_txn(struct store_txn *txn, void *arg)
{
	struct lines_op *op = arg;
	struct table_txn *tt = store_txn_owner(txn);
	struct lines_target t = { .s = NULL };
	const char *at = op->data, *end = op->data + op->len;
	int ret;

	tree_clear(op->err);
	op->rows = op->lines = 0;
	op->fail_line = 0;
	op->next_key = op->state->next_key;
	ret = target_find(txn, op->path, &t, op->err);
	if (ret == 0 && t.enumerable && op->next_key == 0)
		ret = next_integer_key(txn, &t.p, &op->next_key);
	while (ret == 0 && at < end) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t len = nl ? (size_t)(nl - at) : (size_t)(end - at);

		op->lines++;
		if (!blank(at, len)) {
			ret = line_write(txn, op, &t, at, len);
			/* each row checked at once: a refusal names its line */
			if (ret == 0)
				ret = table_txn_flush(txn, tt);
			if (ret < 0) {
				op->fail_line = op->first_line + op->lines - 1;
				break;
			}
			op->rows++;
			if (op->state->progress && (op->rows & 1023) == 0)
				op->state->progress(op->state->arg, (uint64_t)(at - op->data),
						    op->rows);
		}
		at += len + (nl ? 1 : 0);
	}
	free(t.s);
	return ret;
}

int model_import_lines(struct model *m, const char *path, const char *data, size_t len,
		       uint64_t first_line, struct model_lines *state, struct model_error *err)
{
	struct lines_op op = { .path = path, .data = data, .len = len,
			       .first_line = first_line, .state = state, .err = err };
	int ret = tree_write(m, path, lines_txn, &op, err);

	if (ret < 0) {
		state->fail_line = op.fail_line;
		return ret;
	}
	state->rows += op.rows;
	state->next_key = op.next_key;
	return 0;
}
