/*
 * model/table/table_cmd.c - the table verbs of model.h: declaring tables,
 * columns and indexes (each one transaction that rebuilds the table's
 * entries, so a schema that its rows break is refused), rebuilding every
 * index (check --repair), and a written PATH/@schema.json (its text read
 * by model/table/table_json.c). Reading them (show, list, find) is
 * model/table/table_find.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

struct table_op {
	struct model_error *err;
	const char *path;
	int key_depth;
	const char *key_fields;	/* "a,b" or NULL */
	const char *field;	/* column or index name */
	const char *type;
	bool required, unique;
	int64_t max_length;
	const char *references;
	const char *fields;	/* index fields "a,b" */
	int64_t ttl_seconds;	/* create: new rows' time to live; 0 none */
	struct table_schema *s;	/* heap, one per op */
};

/* The table at path: key in p, schema in s; -ENOENT with a message when none. */
int table_schema_get(struct store_txn *txn, const char *path, struct tree_path *p,
		      struct table_schema *s, struct model_error *err)
{
	struct store_val v;
	int ret = tree_resolve(txn, path, 0, p, err);

	if (ret < 0)
		return ret;
	if (p->is_view)
		return tree_fail(err, -EINVAL, "%s: a table is a directory, not a .json view", path);
	ret = p->len ? store_get(txn, STORE_SPACE_SCHEMA, p->key, p->len, &v) : -ENOENT;
	if (ret == -ENOENT)
		return tree_fail(err, -ENOENT, "%s: not a table (kvfs table create)", path);
	if (ret < 0)
		return ret;
	ret = table_schema_decode(p->key, p->len, v.data, v.len, s);
	if (ret < 0)
		return tree_fail(err, -EIO, "%s: the table's schema record is corrupt (run kvfs "
				 "check)", path);
	return 0;
}

static int64_t next_index_id(struct store_txn *txn);
static int drop_entries(struct store_txn *txn, int64_t id);

/* Writes the schema, then has the commit rebuild and check the whole table. */
static int schema_put(struct store_txn *txn, struct table_schema *s)
{
	struct strbuf sb;
	int64_t gone = 0;
	int ret = 0;

	/* the key index follows the columns (table_order.c) */
	if (!table_key_index(s) != !table_key_ordered(s))
		ret = table_key_index_sync(s, next_index_id(txn), &gone);
	if (ret == 0 && gone)
		ret = drop_entries(txn, gone);
	if (ret < 0)
		return ret;
	strbuf_init(&sb);
	ret = table_schema_encode(s, &sb);
	if (ret == 0)
		ret = store_put(txn, STORE_SPACE_SCHEMA, s->key, s->key_len, sb.buf, sb.len);
	strbuf_release(&sb);
	if (ret == 0)
		ret = table_schema_reload(txn, s->key, s->key_len);
	if (ret == 0)
		ret = table_touch(txn, s->key, s->key_len, true);
	return ret;
}

/* Splits "a,b,c" into names; -EINVAL on an empty or too long one. */
static int split_names(const char *list, char names[][TABLE_NAME_MAX], int max, int *n,
		       const char *what, struct model_error *err)
{
	const char *p = list;

	for (*n = 0; *p; (*n)++) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (*n >= max)
			return tree_fail(err, -EINVAL, "%s: at most %d names", what, max);
		if (len == 0 || len >= TABLE_NAME_MAX)
			return tree_fail(err, -EINVAL, "%s: empty or too long name in \"%s\"", what,
					 list);
		memcpy(names[*n], p, len);
		names[*n][len] = '\0';
		p += len + (comma ? 1 : 0);
		if (comma && !*p)
			return tree_fail(err, -EINVAL, "%s: empty name in \"%s\"", what, list);
	}
	return *n ? 0 : tree_fail(err, -EINVAL, "%s: no names given", what);
}

/* Tables do not nest: another table at, above or below key is refused. */
static int check_nesting(struct store_txn *txn, const struct tree_path *p,
			 struct model_error *err)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		size_t n = k.len < p->len ? k.len : p->len;

		if (memcmp(k.data, p->key, n) != 0)
			continue;
		if (k.len == p->len)
			ret = tree_fail(err, -EEXIST, "%s: already a table", p->text);
		else
			ret = tree_fail(err, -EINVAL, "%s: tables cannot nest (another table is %s "
					"it)", p->text, k.len < p->len ? "above" : "inside");
		break;
	}
	store_scan_close(scan);
	return ret;
}

static int create_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct table_schema *s = op->s;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	memset(s, 0, sizeof(*s));
	ret = tree_resolve(txn, op->path, TREE_FOR_CREATE, &p, op->err);
	if (ret < 0)
		return ret;
	if (p.is_view || p.len == 0)
		return tree_fail(op->err, -EINVAL, "%s: a table must be a directory below the "
				 "root", op->path);
	if (op->key_depth < 1 || op->key_depth > TABLE_KEY_DEPTH_MAX)
		return tree_fail(op->err, -EINVAL, "%s: --key-depth must be 1 to %d", op->path,
				 TABLE_KEY_DEPTH_MAX);
	s->key_depth = op->key_depth;
	s->ttl_seconds = op->ttl_seconds;
	if (op->key_fields) {
		ret = split_names(op->key_fields, s->key_fields, TABLE_KEY_DEPTH_MAX,
				  &s->nkey_fields, op->path, op->err);
		if (ret < 0)
			return ret;
		if (s->nkey_fields != s->key_depth)
			return tree_fail(op->err, -EINVAL, "%s: %d key fields for a key depth of %d",
					 op->path, s->nkey_fields, s->key_depth);
	}
	ret = check_nesting(txn, &p, op->err);
	if (ret < 0)
		return ret;
	ret = tree_lookup(txn, p.key, p.len, &n);
	if (ret < 0)
		return ret;
	if (n.exists && n.kind != MODEL_KIND_OBJECT)
		return tree_fail(op->err, -ENOTDIR, "%s: a table must be an object", op->path);
	memcpy(s->key, p.key, p.len);
	s->key_len = p.len;
	/* The schema first: the writes below then already see the table. */
	ret = schema_put(txn, s);
	if (ret < 0 || n.exists)
		return ret;
	ret = tree_attach(txn, &p, op->err);
	return ret < 0 ? ret : tree_put_marker(txn, p.key, p.len, MODEL_KIND_OBJECT);
}

static int64_t next_index_id(struct store_txn *txn)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct table_schema *s = malloc(sizeof(*s));
	int64_t max = 0;

	if (!s)
		return -ENOMEM;
	if (store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan) == 0) {
		while (store_scan_next(scan, &k, &v) == 1)
			if (table_schema_decode(k.data, k.len, v.data, v.len, s) == 0)
				for (int i = 0; i < s->nidx; i++)
					if (s->idx[i].id > max)
						max = s->idx[i].id;
		store_scan_close(scan);
	}
	free(s);
	return max + 1;
}

static int index_add(struct store_txn *txn, struct table_op *op, const char *name,
		     const char *fields, bool unique, int64_t *id)
{
	struct table_schema *s = op->s;
	struct table_index *x;
	int ret;

	for (int i = 0; i < s->nidx; i++)
		if (strcmp(s->idx[i].name, name) == 0)
			return tree_fail(op->err, -EEXIST, "%s: index %s already exists", op->path,
					 name);
	if (s->nidx >= TABLE_INDEXES_MAX)
		return tree_fail(op->err, -ENOSPC, "%s: at most %d indexes", op->path,
				 TABLE_INDEXES_MAX);
	if (strlen(name) >= TABLE_NAME_MAX || !*name)
		return tree_fail(op->err, -EINVAL, "%s: bad index name", op->path);
	x = &s->idx[s->nidx];
	memset(x, 0, sizeof(*x));
	strcpy(x->name, name);
	x->unique = unique;
	ret = split_names(fields, x->fields, TABLE_INDEX_FIELDS_MAX, &x->nfields, op->path,
			  op->err);
	if (ret < 0)
		return ret;
	x->id = next_index_id(txn);
	if (x->id < 0)
		return (int)x->id;
	*id = x->id;
	s->nidx++;
	return 0;
}

static int drop_entries(struct store_txn *txn, int64_t id)
{
	uint8_t pre[16];
	struct tuple_writer w;

	tuple_writer_init(&w, pre, sizeof(pre));
	tuple_put_int(&w, id);
	return store_del_prefix(txn, STORE_SPACE_INDEX, pre, w.len, NULL);
}

static int column_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct table_schema *s = op->s;
	struct table_col c;
	struct tree_path p, rp;
	struct table_schema *rs;
	int ret, slot;

	tree_clear(op->err);
	ret = table_schema_get(txn, op->path, &p, s, op->err);
	if (ret < 0)
		return ret;
	memset(&c, 0, sizeof(c));
	if (!*op->field || strlen(op->field) >= TABLE_NAME_MAX)
		return tree_fail(op->err, -EINVAL, "%s: bad field name", op->path);
	strcpy(c.name, op->field);
	for (int t = TABLE_COL_STRING; t <= TABLE_COL_ARRAY; t++)
		if (strcmp(op->type, table_col_type_name((enum table_col_type)t)) == 0)
			c.type = (enum table_col_type)t;
	if (!c.type)
		return tree_fail(op->err, -EINVAL, "%s: unknown column type \"%s\" (string, integer, "
				 "double, number, boolean, bytes, object, array)", op->path, op->type);
	c.required = op->required;
	c.max_length = op->max_length;
	if (c.max_length && c.type != TABLE_COL_STRING && c.type != TABLE_COL_BYTES)
		return tree_fail(op->err, -EINVAL, "%s: --max-length applies to string and bytes "
				 "columns", op->path);
	if (c.type != TABLE_COL_STRING && c.type != TABLE_COL_INTEGER &&
	    table_refs_have_field(s, c.name))
		return tree_fail(op->err, -EINVAL, "%s: %s is a field of a reference (kvfs table "
				 "reference): a string or an integer column", op->path, c.name);
	for (slot = 0; slot < s->ncols && strcmp(s->cols[slot].name, c.name); slot++)
		;
	if (slot == TABLE_COLUMNS_MAX)
		return tree_fail(op->err, -ENOSPC, "%s: at most %d columns", op->path,
				 TABLE_COLUMNS_MAX);
	if (slot < s->ncols && s->cols[slot].ref_len) {	/* its reference index goes */
		for (int i = 0; i < s->nidx; i++)
			if (s->idx[i].id == s->cols[slot].ref_index)
				s->idx[i] = s->idx[--s->nidx];
		ret = drop_entries(txn, s->cols[slot].ref_index);
		if (ret < 0)
			return ret;
	}
	if (op->references) {
		char iname[TABLE_NAME_MAX];

		rs = malloc(sizeof(*rs));
		if (!rs)
			return -ENOMEM;
		ret = table_schema_get(txn, op->references, &rp, rs, op->err);
		if (ret == -ENOENT) {	/* may be declared later: a restore's order (fs/table.c) */
			op->err->reason = MODEL_REASON_TABLE_RULE;
			ret = -EINVAL;
		}
		if (ret == 0 && rs->key_depth != 1)
			ret = tree_fail(op->err, -EINVAL, "%s: a reference names a row of a table of "
					"key depth 1", op->references);
		if (ret == 0 && c.type != TABLE_COL_STRING && c.type != TABLE_COL_INTEGER)
			ret = tree_fail(op->err, -EINVAL, "%s: a reference column is a string or "
					"an integer", op->path);
		memcpy(c.ref, rp.key, rp.len);
		c.ref_len = rp.len;
		free(rs);
		if (ret < 0)
			return ret;
		/* The restricted-delete lookup needs rows by this field: an index
		 * named "@FIELD" (names with @ are kvfs's own). */
		snprintf(iname, sizeof(iname), "@%.*s", TABLE_NAME_MAX - 2, c.name);
		ret = index_add(txn, op, iname, c.name, false, &c.ref_index);
		if (ret < 0)
			return ret;
	}
	s->cols[slot] = c;
	if (slot == s->ncols)
		s->ncols++;
	return schema_put(txn, s);
}


/* The refusal to drop a table that o references over several fields. */
static int referenced_by_fields(const struct table_schema *o, const struct table_ref *ref,
				struct model_error *err)
{
	char what[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];
	struct strbuf path;
	int ret;

	strbuf_init(&path);
	tree_key_to_path(o->key, o->key_len, &path);
	ret = tree_fail(err, -EBUSY, "the table is referenced by %s (%s)", path.buf ? path.buf : "?",
			table_ref_what(o, ref, what, sizeof(what)));
	strbuf_release(&path);
	return ret;
}

/* Another table's reference to s: EBUSY. */
static int check_unreferenced(struct store_txn *txn, const struct table_schema *s,
			      struct model_error *err)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct table_schema *o = malloc(sizeof(*o));
	const struct table_ref *ref;
	int ret;

	if (!o)
		return -ENOMEM;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	if (ret < 0) {
		free(o);
		return ret;
	}
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (table_schema_decode(k.data, k.len, v.data, v.len, o) < 0 ||
		    (k.len == s->key_len && memcmp(k.data, s->key, k.len) == 0))
			continue;
		for (int i = 0; i < o->ncols; i++) {
			if (o->cols[i].ref_len == s->key_len &&
			    memcmp(o->cols[i].ref, s->key, s->key_len) == 0) {
				struct strbuf path;

				strbuf_init(&path);
				tree_key_to_path(o->key, o->key_len, &path);
				ret = tree_fail(err, -EBUSY, "the table is referenced by %s (field %s)",
						path.buf ? path.buf : "?", o->cols[i].name);
				strbuf_release(&path);
				break;
			}
		}
		ref = ret == 1 ? table_refs_to(o, s->key, s->key_len) : NULL;
		if (ref)	/* no column of o references s, a reference over fields does */
			ret = referenced_by_fields(o, ref, err);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	free(o);
	return ret;
}

static int drop_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct table_schema *s = op->s;
	struct tree_path p;
	int ret;

	tree_clear(op->err);
	ret = table_schema_get(txn, op->path, &p, s, op->err);
	if (ret == 0)
		ret = check_unreferenced(txn, s, op->err);
	for (int i = 0; i < s->nidx && ret == 0; i++)
		ret = drop_entries(txn, s->idx[i].id);
	if (ret == 0)
		ret = store_del(txn, STORE_SPACE_SCHEMA, p.key, p.len);
	return ret;
}

static int index_create_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct tree_path p;
	int64_t id;
	int ret;

	tree_clear(op->err);
	ret = table_schema_get(txn, op->path, &p, op->s, op->err);
	if (ret < 0)
		return ret;
	if (op->field[0] == '@')
		return tree_fail(op->err, -EINVAL, "%s: index names beginning with @ are kvfs's "
				 "own", op->path);
	ret = index_add(txn, op, op->field, op->fields, op->unique, &id);
	return ret < 0 ? ret : schema_put(txn, op->s);
}

static int index_drop_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct table_schema *s = op->s;
	struct tree_path p;
	int ret;

	tree_clear(op->err);
	ret = table_schema_get(txn, op->path, &p, s, op->err);
	if (ret < 0)
		return ret;
	if (op->field[0] == '@')
		return tree_fail(op->err, -EINVAL, "%s: index %s belongs to a reference column",
				 op->path, op->field);
	for (int i = 0; i < s->nidx; i++) {
		if (strcmp(s->idx[i].name, op->field) != 0)
			continue;
		ret = drop_entries(txn, s->idx[i].id);
		s->idx[i] = s->idx[--s->nidx];
		return ret < 0 ? ret : schema_put(txn, s);
	}
	return tree_fail(op->err, -ENOENT, "%s: no index %s", op->path, op->field);
}

/* Forgets the reference of s over the fields of index i: the index and its entries go. */
static int ref_remove(struct store_txn *txn, struct table_schema *s, int i)
{
	int64_t id = s->idx[i].id;

	for (int r = 0; r < s->nrefs; r++)
		if (s->refs[r].index == id)
			s->refs[r] = s->refs[--s->nrefs];
	s->idx[i] = s->idx[--s->nidx];
	return drop_entries(txn, id);
}

/* The table a reference over n fields names: a table of key depth n (key in rp). */
static int ref_table_get(struct store_txn *txn, struct table_op *op, int n, struct tree_path *rp)
{
	struct table_schema *rs = malloc(sizeof(*rs));
	int ret;

	if (!rs)
		return -ENOMEM;
	ret = table_schema_get(txn, op->references, rp, rs, op->err);
	if (ret == -ENOENT) {	/* may be declared later: a restore's order (fs/table.c) */
		op->err->reason = MODEL_REASON_TABLE_RULE;
		ret = -EINVAL;
	}
	if (ret == 0 && rs->key_depth != n)
		ret = tree_fail(op->err, -EINVAL, "%s: a reference over %d field%s names a row of a "
				"table of key depth %d; %s has key depth %d", op->path, n,
				n == 1 ? "" : "s", n, op->references, rs->key_depth);
	free(rs);
	return ret;
}

/* Each field a declared column holds is a string or an integer: a key level. */
static int ref_fields_check(struct table_op *op, char names[][TABLE_NAME_MAX], int n)
{
	const struct table_schema *s = op->s;

	for (int f = 0; f < n; f++) {
		for (int i = 0; i < s->ncols; i++) {
			enum table_col_type t = s->cols[i].type;

			if (strcmp(s->cols[i].name, names[f]) != 0 || t == TABLE_COL_STRING ||
			    t == TABLE_COL_INTEGER)
				continue;
			return tree_fail(op->err, -EINVAL, "%s: column %s is %s; the fields of a "
					 "reference are strings or integers", op->path, names[f],
					 table_col_type_name(t));
		}
	}
	return 0;
}

/*
 * Declares (op->references: the table) or forgets (NULL) the reference
 * over op->fields, kept with an index named "@F1,F2...". Declaring it
 * again over the same fields replaces it.
 */
static int reference_txn(struct store_txn *txn, void *arg)
{
	struct table_op *op = arg;
	struct table_schema *s = op->s;
	char names[TABLE_KEY_DEPTH_MAX][TABLE_NAME_MAX], iname[TABLE_NAME_MAX] = "";
	struct tree_path p, rp;
	size_t need = 1;	/* the '@' */
	bool had;
	int n, i, ret;

	tree_clear(op->err);
	ret = table_schema_get(txn, op->path, &p, s, op->err);
	if (ret == 0)
		ret = split_names(op->fields, names, TABLE_KEY_DEPTH_MAX, &n, op->path, op->err);
	if (ret < 0)
		return ret;
	for (int f = 0; f < n; f++)
		need += strlen(names[f]) + (f ? 1 : 0);
	if (need + 1 >= sizeof(iname))
		return tree_fail(op->err, -EINVAL, "%s: too long a list of fields", op->path);
	for (int f = 0; f < n; f++)
		table_names_add(iname, sizeof(iname), names[f], strlen(names[f]));
	memmove(iname + 1, iname, need);
	iname[0] = '@';
	for (i = 0; i < s->nidx && strcmp(s->idx[i].name, iname) != 0; i++)
		;
	for (int c = 0; i < s->nidx && c < s->ncols; c++)
		if (s->cols[c].ref_len && s->cols[c].ref_index == s->idx[i].id)
			return tree_fail(op->err, -EEXIST, "%s: field %s already references a table "
					 "(kvfs table column --references)", op->path, names[0]);
	had = i < s->nidx;
	if (had && (ret = ref_remove(txn, s, i)) < 0)
		return ret;
	if (!op->references)
		return had ? schema_put(txn, s) : tree_fail(op->err, -ENOENT, "%s: no reference "
							    "over %s", op->path, op->fields);
	ret = ref_table_get(txn, op, n, &rp);
	if (ret == 0)
		ret = ref_fields_check(op, names, n);
	if (ret == 0 && s->nrefs == TABLE_REFS_MAX)
		ret = tree_fail(op->err, -ENOSPC, "%s: at most %d references over several fields",
				op->path, TABLE_REFS_MAX);
	if (ret == 0)
		ret = index_add(txn, op, iname, iname + 1, false, &s->refs[s->nrefs].index);
	if (ret < 0)
		return ret;
	memcpy(s->refs[s->nrefs].table, rp.key, rp.len);
	s->refs[s->nrefs++].table_len = rp.len;
	return schema_put(txn, s);
}

static int run(struct model *m, struct table_op *op, store_write_fn fn, struct model_error *err)
{
	int ret;

	op->err = err;
	op->s = malloc(sizeof(*op->s));
	if (!op->s)
		return tree_fail(err, -ENOMEM, "%s: out of memory", op->path);
	ret = tree_write(m, op->path, fn, op, err);
	free(op->s);
	return ret;
}

int model_table_create(struct model *m, const char *path, int key_depth, const char *key_fields,
		       struct model_error *err)
{
	return model_table_create_ttl(m, path, key_depth, key_fields, 0, err);
}

int model_table_create_ttl(struct model *m, const char *path, int key_depth,
			   const char *key_fields, int64_t ttl_seconds, struct model_error *err)
{
	struct table_op op = { .path = path, .key_depth = key_depth, .key_fields = key_fields,
			       .ttl_seconds = ttl_seconds };

	if (ttl_seconds && model_ttl_deadline(ttl_seconds, 0, &(int64_t){ 0 }) < 0)
		return tree_fail(err, -EINVAL, "%s: a time to live is 1 to %lld seconds", path,
				 (long long)TTL_SECONDS_MAX);
	return run(m, &op, create_txn, err);
}

int model_table_column(struct model *m, const char *path, const char *field, const char *type,
		       bool required, int64_t max_length, const char *references,
		       struct model_error *err)
{
	struct table_op op = { .path = path, .field = field, .type = type, .required = required,
			       .max_length = max_length, .references = references };

	return run(m, &op, column_txn, err);
}

int model_table_drop(struct model *m, const char *path, struct model_error *err)
{
	struct table_op op = { .path = path };

	return run(m, &op, drop_txn, err);
}

int model_table_reference(struct model *m, const char *path, const char *fields,
			  const char *table, struct model_error *err)
{
	struct table_op op = { .path = path, .fields = fields, .references = table };

	return run(m, &op, reference_txn, err);
}

int model_index_create(struct model *m, const char *path, const char *name, const char *fields,
		       bool unique, struct model_error *err)
{
	struct table_op op = { .path = path, .field = name, .fields = fields, .unique = unique };

	return run(m, &op, index_create_txn, err);
}

int model_index_drop(struct model *m, const char *path, const char *name,
		     struct model_error *err)
{
	struct table_op op = { .path = path, .field = name };

	return run(m, &op, index_drop_txn, err);
}

/* ---- check --repair ---- */

/* A table of integer key columns declared before the key index gets it. */
static int repair_key_indexes(struct store_txn *txn)
{
	struct table_schema *s = malloc(sizeof(*s));
	struct store_scan *scan = NULL;
	struct store_val k, v;
	int ret;

	if (!s)
		return -ENOMEM;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	while (ret == 0 && (ret = store_scan_next(scan, &k, &v)) == 1) {
		ret = 0;
		if (table_schema_decode(k.data, k.len, v.data, v.len, s) < 0 ||
		    !table_key_index(s) == !table_key_ordered(s))
			continue;	/* a corrupt schema is check's to report */
		store_scan_close(scan);	/* the put changes the space: read it again */
		scan = NULL;
		ret = schema_put(txn, s);
		if (ret == 0)
			ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	}
	store_scan_close(scan);
	free(s);
	return ret;
}

static int repair_txn(struct store_txn *txn, void *arg)
{
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t key[STORE_KEY_MAX];
	int ret;

	tree_clear(arg);
	ret = store_del_prefix(txn, STORE_SPACE_INDEX, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, NULL, 0, &scan);
	if (ret < 0)
		return ret;
	/* Touching a table's whole subtree makes the commit rebuild it. */
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		memcpy(key, k.data, k.len);
		ret = table_touch(txn, key, k.len, true);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	ret = ret < 0 ? ret : repair_key_indexes(txn);
	/* the ttl and expiry spaces are rebuilt from each other (model/ttl/ttl_space.c) */
	ret = ret < 0 ? ret : ttl_repair(txn, &(uint64_t){ 0 });
	/* and what the backend keeps beside them (etcd: the children space) */
	return ret < 0 ? ret : store_txn_repair(txn);
}

int model_check_repair(struct model *m, struct model_error *err)
{
	return tree_write(m, "check --repair", repair_txn, err, err);
}

/* ---- the mount's PATH/@schema.json, written (read by table_json.c) ---- */

static bool same_index(const struct table_index *x, const struct table_want_idx *wi)
{
	char fields[sizeof(wi->fields)] = "";

	for (int f = 0; f < x->nfields; f++)
		table_names_add(fields, sizeof(fields), x->fields[f], strlen(x->fields[f]));
	return x->unique == wi->unique && strcmp(fields, wi->fields) == 0;
}

/*
 * References over several fields: the ones the text leaves out are
 * forgotten, the ones it names declared (again); no_refs: all forgotten.
 */
static int apply_want_refs(struct store_txn *txn, struct table_op *op, struct table_want *w,
			   bool no_refs)
{
	struct table_schema *s = op->s;
	struct tree_path p;
	int ret = 0;

	for (int i = 0; ret == 0 && i < s->nrefs; i++) {
		const struct table_index *x = table_ref_index(s, &s->refs[i]);
		char fields[TABLE_NAME_MAX];
		bool keep = false;

		for (int j = 0; x && !no_refs && j < w->nrefs; j++)
			keep |= strcmp(x->name + 1, w->refs[j].fields) == 0;
		if (keep || !x)
			continue;
		snprintf(fields, sizeof(fields), "%s", x->name + 1);	/* s is read again */
		op->fields = fields;
		op->references = NULL;
		ret = reference_txn(txn, op) ?: table_schema_get(txn, op->path, &p, s, op->err);
		i = -1;
	}
	for (int j = 0; ret == 0 && !no_refs && j < w->nrefs; j++) {
		op->fields = w->refs[j].fields;
		op->references = w->refs[j].table;
		ret = reference_txn(txn, op) ?: table_schema_get(txn, op->path, &p, s, op->err);
	}
	return ret;
}

/* no_refs: every column without its reference (the first pass of model_table_declare). */
static int apply_want(struct store_txn *txn, struct table_op *op, struct table_want *w,
		      bool no_refs)
{
	struct table_schema *s = op->s;
	struct tree_path p;
	struct model_error quiet;
	char have[sizeof(w->key_fields)] = "";
	int ret = table_schema_get(txn, op->path, &p, s, &quiet);

	if (ret == -ENOENT) {
		op->key_depth = (int)w->key_depth;
		op->key_fields = w->key_fields[0] ? w->key_fields : NULL;
		op->ttl_seconds = w->ttl_seconds;
		ret = create_txn(txn, op);
	} else if (ret == 0) {
		for (int i = 0; i < s->nkey_fields; i++)
			table_names_add(have, sizeof(have), s->key_fields[i],
					strlen(s->key_fields[i]));
		if (s->key_depth != w->key_depth || strcmp(have, w->key_fields) != 0)
			return tree_fail(op->err, -EINVAL, "%s: key_depth and key_fields cannot "
					 "change (kvfs table drop, then declare again)", op->path);
		for (int i = 0; i < s->ncols; i++) {
			bool kept = false;

			for (int j = 0; j < w->ncols; j++)
				kept |= strcmp(s->cols[i].name, w->cols[j].name) == 0;
			if (!kept)
				return tree_fail(op->err, -EINVAL, "%s: column %s cannot be removed",
						 op->path, s->cols[i].name);
		}
	} else {
		return tree_fail(op->err, ret, "%s", quiet.msg);
	}
	for (int j = 0; ret == 0 && j < w->ncols; j++) {
		op->field = w->cols[j].name;
		op->type = w->cols[j].type;
		op->required = w->cols[j].required;
		op->max_length = w->cols[j].max_length;
		op->references = w->cols[j].references[0] && !no_refs ? w->cols[j].references : NULL;
		ret = column_txn(txn, op);
	}
	/* indexes: drop the ones gone or changed, then create the new ones */
	ret = ret ?: table_schema_get(txn, op->path, &p, s, op->err);
	for (int i = 0; ret == 0 && i < s->nidx; i++) {
		bool keep = s->idx[i].name[0] == '@';

		for (int j = 0; j < w->nidx; j++)
			keep |= !strcmp(s->idx[i].name, w->idx[j].name) &&
				same_index(&s->idx[i], &w->idx[j]);
		if (keep)
			continue;
		op->field = s->idx[i].name;
		ret = index_drop_txn(txn, op) ?: table_schema_get(txn, op->path, &p, s, op->err);
		i = -1;
	}
	for (int j = 0; ret == 0 && j < w->nidx; j++) {
		bool have_it = w->idx[j].name[0] == '@';

		for (int i = 0; i < s->nidx; i++)
			have_it |= !strcmp(s->idx[i].name, w->idx[j].name);
		if (have_it)
			continue;
		op->field = w->idx[j].name;
		op->fields = w->idx[j].fields;
		op->unique = w->idx[j].unique;
		ret = index_create_txn(txn, op) ?: table_schema_get(txn, op->path, &p, s, op->err);
	}
	ret = ret ?: apply_want_refs(txn, op, w, no_refs);
	/* the default time to live of new rows: absent means none */
	if (ret == 0 && s->ttl_seconds != w->ttl_seconds) {
		s->ttl_seconds = w->ttl_seconds;
		ret = schema_put(txn, s);
	}
	return ret;
}

/*
 * Declares or alters the table at path (what: how messages name it) from
 * the JSON of its schema; a text that is no schema is refused with
 * MODEL_REASON_BAD_JSON, what the rows or other tables refuse keeps the
 * reason the check gave.
 */
static int schema_write_at(struct store_txn *txn, const char *path, const char *what,
			   const char *json, size_t len, bool no_refs, struct model_error *err)
{
	struct table_op op = { .err = err, .path = path };
	struct table_want *w = calloc(1, sizeof(*w));
	int ret;

	op.s = malloc(sizeof(*op.s));
	if (!w || !op.s) {
		ret = tree_fail(err, -ENOMEM, "%s: out of memory", what);
		goto out_free;
	}
	ret = table_want_parse(json, len, what, w, err);
	if (ret < 0)
		goto out_free;
	ret = apply_want(txn, &op, w, no_refs);
out_free:
	free(op.s);
	free(w);
	return ret;
}

int table_schema_write(struct store_txn *txn, const char *path, const char *json, size_t len,
		       struct model_error *err)
{
	const char *at = strstr(path, "@schema.json");
	char *table = at ? strndup(path, (size_t)(at - path)) : NULL;
	int ret;

	if (!table)
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	ret = schema_write_at(txn, table, path, json, len, false, err);
	free(table);
	return ret;
}

struct declare_op {
	size_t n;
	const char *const *paths;
	const char *const *jsons;
	const size_t *lens;
	struct model_error *err;
};

/*
 * Every table without its references first, then each whole: tables that
 * reference each other (or themselves) are all declared when the second
 * pass names them, and the commit checks every row against them at once.
 */
static int declare_txn(struct store_txn *txn, void *arg)
{
	struct declare_op *op = arg;
	int ret = 0;

	tree_clear(op->err);
	for (int pass = 0; pass < 2 && ret == 0; pass++)
		for (size_t i = 0; i < op->n && ret == 0; i++)
			ret = schema_write_at(txn, op->paths[i], op->paths[i], op->jsons[i],
					      op->lens[i], pass == 0, op->err);
	return ret;
}

int model_table_declare(struct model *m, size_t n, const char *const *paths,
			const char *const *jsons, const size_t *lens, struct model_error *err)
{
	struct declare_op op = { .n = n, .paths = paths, .jsons = jsons, .lens = lens,
				 .err = err };

	if (n == 0)
		return 0;
	return tree_write(m, paths[0], declare_txn, &op, err);
}
