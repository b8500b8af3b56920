/*
 * model/table/table_int.h - private interfaces of tables (docs/FORMAT.md,
 * "Tables and indexes"): the order-preserving encoding of indexed values
 * (ikey.c), table schemas and the per-transaction bookkeeping that keeps
 * indexes, column checks and references exact (table_commit.c). Nothing outside
 * model/ (and its unit tests) includes it.
 */
#ifndef KVFS_MODEL_TABLE_INT_H
#define KVFS_MODEL_TABLE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model_int.h"
#include "store/store.h"

/* ---- indexed values (ikey.c): byte order equals value order ---- */
enum ikey_code {
	IKEY_NULL = 0x10,
	IKEY_FALSE = 0x11,
	IKEY_TRUE = 0x12,
	IKEY_NUM_NEG = 0x20,	/* then ~(E + 0x8000) in 2 bytes, ~(digit + 1)..., 0xff */
	IKEY_NUM_ZERO = 0x21,
	IKEY_NUM_POS = 0x22,	/* then E + 0x8000 in 2 bytes, (digit + 1)..., 0x00 */
	IKEY_STRING = 0x30,	/* then bytes, 0x00 escaped as 0x00 0xff, ends 0x00 */
	IKEY_BYTES = 0x31,	/* same */
};
#define IKEY_EXP_BIAS 0x8000
#define IKEY_DIGITS_MAX 400	/* significant decimal digits a number may have */

/*
 * Appends the element for the number written as JSON number text (any
 * form: "30", "-4.5", "1e+300", big integer digits). Its value is the
 * decimal the text shows: 30, 30.0 and 3e1 are one value. -EINVAL when
 * text is not a number, -ERANGE when it has too many digits or too large
 * an exponent.
 */
int ikey_put_number_text(struct strbuf *sb, const char *text, size_t len);
void ikey_put_string(struct strbuf *sb, enum ikey_code code, const void *data, size_t len);
/*
 * Appends the element for a leaf's value; 1 (nothing appended) when the
 * value is not indexable (an empty container's marker), 0 when appended.
 */
int ikey_put_leaf(struct strbuf *sb, const struct leaf *leaf);
/* Moves *pos past one value element of key; -EINVAL when malformed. */
int ikey_skip(const uint8_t *key, size_t len, size_t *pos);
/* Appends the JSON text of the value element at *pos and moves past it. */
int ikey_to_text(const uint8_t *key, size_t len, size_t *pos, struct strbuf *out);

/* ---- schemas (table_commit.c) ---- */
enum table_col_type {
	TABLE_COL_STRING = 1,
	TABLE_COL_INTEGER,
	TABLE_COL_DOUBLE,
	TABLE_COL_NUMBER,
	TABLE_COL_BOOLEAN,
	TABLE_COL_BYTES,
	TABLE_COL_OBJECT,
	TABLE_COL_ARRAY,
};

#define TABLE_NAME_MAX 256	/* a field or index name, with its NUL */
#define TABLE_KEY_DEPTH_MAX 8
#define TABLE_COLUMNS_MAX 64
#define TABLE_INDEXES_MAX 32
#define TABLE_INDEX_FIELDS_MAX 8
#define TABLE_REFS_MAX 16	/* references over several fields a table holds */

struct table_col {
	char name[TABLE_NAME_MAX];
	enum table_col_type type;
	bool required;
	int64_t max_length;	/* 0: none */
	uint8_t ref[STORE_KEY_MAX];	/* referenced table's key; ref_len 0: none */
	size_t ref_len;
	int64_t ref_index;	/* id of the index kept for the reference */
};

struct table_index {
	char name[TABLE_NAME_MAX];
	int64_t id;
	bool unique;
	int nfields;
	char fields[TABLE_INDEX_FIELDS_MAX][TABLE_NAME_MAX];
};

/*
 * A reference over several fields (table_ref.c): the fields of its index,
 * in order, are the key levels of a row of the referenced table.
 */
struct table_ref {
	uint8_t table[STORE_KEY_MAX];	/* the referenced table's data key */
	size_t table_len;
	int64_t index;		/* id of the index over the fields, named "@F1,F2..." */
};

struct table_schema {
	uint8_t key[STORE_KEY_MAX];	/* the table's data key */
	size_t key_len;
	int key_depth;
	int nkey_fields;
	char key_fields[TABLE_KEY_DEPTH_MAX][TABLE_NAME_MAX];
	int ncols;
	struct table_col cols[TABLE_COLUMNS_MAX];
	int nidx;
	struct table_index idx[TABLE_INDEXES_MAX];
	int64_t ttl_seconds;	/* new rows expire after it (model/ttl/ttl_space.c); 0: never */
	int nrefs;
	struct table_ref refs[TABLE_REFS_MAX];
};

/*
 * The schema record: body then CRC-32C of key || body (like data records);
 * record version 2 when the schema holds references over several fields,
 * 1 (as before them) otherwise. decode reads both: -EBADMSG on a bad
 * checksum, -EINVAL when malformed.
 */
int table_schema_encode(const struct table_schema *s, struct strbuf *out);
int table_schema_decode(const uint8_t *key, size_t key_len, const void *rec, size_t len,
			struct table_schema *out);

/*
 * Per write transaction bookkeeping (set as the transaction's owner by
 * tree_write): the tables, the rows touched so far, the tables wiped.
 * Its fields are read and written only by model/table/.
 */
struct touched {
	int table;		/* index into tt->tables */
	bool existed;		/* the row was there at its first touch (a new one: false) */
	size_t len;
	uint8_t key[];
};

struct table_txn {
	struct model_error *err;
	bool loaded;
	/*
	 * A dry run of a create (tree_write_dry): only a row's shape is
	 * judged (an object, no '@' key); its fields are judged by the
	 * commit that brings the new leaf's content (a file at its close).
	 */
	bool shape_only;
	int ntables;
	struct table_schema **tables;
	bool *wiped;		/* per table: a subtree delete took the table itself */
	struct touched **rows;	/* in touch order */
	size_t nrows, cap;
	size_t *slots;		/* hash of rows: index + 1, 0 empty */
	size_t nslots;
};
int table_txn_new(struct model_error *err, struct table_txn **out);	/* heap */
void table_txn_free(struct table_txn *tt);
/* Re-derives every touched row's entries and checks them: 0 or a refusal. */
int table_txn_commit(struct store_txn *txn, struct table_txn *tt);
/*
 * table_txn_commit now, then forgets the rows touched so far (the schemas
 * stay loaded): a bulk load checks each row as it goes and learns which one
 * broke a rule. tt may be NULL (nothing to do).
 */
int table_txn_flush(struct store_txn *txn, struct table_txn *tt);

/*
 * Called by every data write of model/ before it happens: key[0..len] is
 * about to be put or deleted (subtree: it and everything under it). The
 * first touch of a row deletes its index entries as they are now.
 */
int table_touch(struct store_txn *txn, const uint8_t *key, size_t len, bool subtree);

/*
 * The expired node at key[0..len] (not yet hidden in the data space): hides
 * from the read transaction the index entries it takes along - every entry
 * of a table it holds, the entries of a row it is, or those over a row's
 * top-level field it is (model/ttl/ttl_space.c).
 */
int table_hide_expired(struct store_txn *txn, const uint8_t *key, size_t len);

/*
 * 1 when key[0..len] is a declared table (one get in the schema space), 0
 * when not: names beginning with '@' are special only directly inside one.
 */
int table_is_at(struct store_txn *txn, const uint8_t *key, size_t len);

/*
 * A schema put again inside a transaction that already loaded it: the
 * commit must check the rows against the new one (several declarations in
 * one transaction, as a write of PATH/@schema.json makes).
 */
int table_schema_reload(struct store_txn *txn, const uint8_t *key, size_t len);

/*
 * 1 when key[0..len] lies inside a row (below it, not the row itself) that
 * a row of another table references, so that removing the row would be
 * refused (EBUSY): tt->err then says by which row. 0 when not, <0 on a
 * store error. MODEL_REMOVE_ROW_WHOLE keeps such a row whole.
 */
int table_row_pinned(struct store_txn *txn, const uint8_t *key, size_t len);

/*
 * The writes that would part a declaration from its rows (table_guard.c),
 * each -EBUSY with a message in err naming what (and the table).
 * table_check_move: key[0..len] is a table or holds one, and moving a
 * table directory would leave its declaration behind (not supported).
 * table_check_kind: the same, for a change of kind of key[0..len]
 * (object <-> array), which re-keys every table below it and makes a
 * table itself no object of rows.
 * table_check_kept: after a document replaced key[0..len] in txn, a table
 * at or under it that is gone or no object (the write's transaction then
 * aborts; removing a table on purpose goes by model_remove instead).
 */
int table_check_move(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err);
int table_check_kind(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err);
int table_check_kept(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		     struct model_error *err);

/* kvfs check: reports index/row disagreement through fn; repair rebuilds. */
typedef void (*table_report_fn)(void *arg, const uint8_t *key, size_t len, const char *msg);
int table_check(struct store_txn *txn, table_report_fn fn, void *arg, uint64_t *entries);

struct tree_path;
struct json_writer;

/* ---- shared by the verbs and the mount's views (table_cmd.c) ---- */
/* The table at path: key in p, schema in s; -ENOENT with a message when none. */
int table_schema_get(struct store_txn *txn, const char *path, struct tree_path *p,
		     struct table_schema *s, struct model_error *err);
/* Appends the encoded value text stands for, as field's column type reads it. */
int table_value_arg(const struct table_schema *s, const char *field, const char *text,
		    size_t len, struct strbuf *sb);
void table_show_json(const struct table_schema *s, struct json_writer *w);
/* Declares or alters the table at path from the JSON of its schema view. */
int table_schema_write(struct store_txn *txn, const char *path, const char *json, size_t len,
		       struct model_error *err);

/*
 * ---- a table's reserved @ names (table_view.c) ----
 * tview_open parses a path through a table's '@' name (-ENOENT with a
 * message when it names nothing); the view is heap (tview_free). Links and
 * directories are derived from the index space inside txn.
 */
struct tview;
/*
 * Where path names a table's own '@' name: 1 with *at the offset of the
 * first '@' component whose parent is a declared table, 0 when there is
 * none (every name is ordinary), <0 on a store error.
 */
int tview_find(struct store_txn *txn, const char *path, size_t *at);
/*
 * 1 when a write to path is a schema's: TABLE/@schema.json, or DIR/@schema.json
 * with no key "@schema" in DIR (declares DIR); 0 when not, <0 on a store error.
 */
int tview_is_schema(struct store_txn *txn, const char *path);
/* at: from tview_find. */
int tview_open(struct store_txn *txn, const char *path, size_t at, struct tview **out,
	       struct model_error *err);
void tview_free(struct tview *v);
int tview_stat(struct model *m, struct store_txn *txn, struct tview *v, struct model_node *out,
	       struct model_error *err);
/* The schema's JSON or a link's target, appended to out. */
int tview_text(struct store_txn *txn, struct tview *v, struct strbuf *out,
	       struct model_error *err);
/* Like model_list_fill, resuming after the last name handed out. */
int tview_fill(struct model *m, struct store_txn *txn, struct tview *v, model_list_fn fn,
	       void *arg);
void tview_rewind(struct tview *v);

/*
 * ---- the order of rows under integer key columns (table_order.c) ----
 * A table with a key field whose column is integer keeps the key index,
 * named TABLE_KEY_INDEX (no reference's name: those never hold an empty
 * field name), over its key fields; table_cmd.c declares and drops it with
 * the columns. A walk hands out the children of one key level in index
 * order; it is heap, valid inside txn (table_order_close).
 */
#define TABLE_KEY_INDEX "@,key"
struct table_order;
/* The key index of s (NULL: none). */
const struct table_index *table_key_index(const struct table_schema *s);
/* s should keep the key index: a key field's column is integer. */
bool table_key_ordered(const struct table_schema *s);
/*
 * Adds the key index to s (id next_id, or past s's own ids) or drops it,
 * as its columns want; *dropped: the id whose entries the caller deletes
 * (0: none). -ENOSPC when s has no room for another index.
 */
int table_key_index_sync(struct table_schema *s, int64_t next_id, int64_t *dropped);
/*
 * 1 with *out when dir[0..len] is a table or a key level above its rows
 * whose children are an integer key column's (deep: or whose descendants
 * down to the rows are), and the key index orders them; 0 when not (key
 * order is the order), <0 on a store error.
 */
int table_order_open(struct store_txn *txn, const uint8_t *dir, size_t len, bool deep,
		     struct table_order **out);
/* The next child is child[0..len] (after: the one after it), or from the start when it is none. */
int table_order_seek(struct table_order *o, const uint8_t *child, size_t len, bool after);
/* 1 with the next child's data key in child (STORE_KEY_MAX bytes), 0 at the end. */
int table_order_next(struct table_order *o, uint8_t *child, size_t *len);
void table_order_close(struct table_order *o);
/* Calls fn with the key of every table strictly under key[0..len] that the key index orders. */
typedef void (*table_order_fn)(void *arg, const uint8_t *table, size_t len);
int table_order_under(struct store_txn *txn, const uint8_t *key, size_t len,
		      table_order_fn fn, void *arg);

/* ---- a schema's JSON text, read (table_json.c) ---- */
struct table_want_col {
	char name[TABLE_NAME_MAX];
	char type[16];
	bool required;
	int64_t max_length;
	char references[512];
};

struct table_want_idx {
	char name[TABLE_NAME_MAX];
	char fields[TABLE_INDEX_FIELDS_MAX * TABLE_NAME_MAX];
	bool unique;
};

struct table_want_ref {
	char fields[TABLE_KEY_DEPTH_MAX * TABLE_NAME_MAX];
	char table[512];
};

/* A schema as written: the JSON of model_table_show, names as they are written. */
struct table_want {
	int64_t key_depth;
	char key_fields[TABLE_KEY_DEPTH_MAX * TABLE_NAME_MAX];
	int ncols, nidx, nrefs;
	int64_t ttl_seconds;	/* "ttl": new rows' default; 0 none */
	struct table_want_col cols[TABLE_COLUMNS_MAX];
	struct table_want_idx idx[TABLE_INDEXES_MAX];
	struct table_want_ref refs[TABLE_REFS_MAX];
	char section[16];	/* the top-level member being read */
	char attr[16];		/* the member of a column or index being read */
	const char *bad;	/* what is wrong, for the message */
};

/*
 * Parses json (len bytes) into w (zeroed by the caller; heap: it is large).
 * A text that is no schema: -EINVAL with "what: why" and
 * MODEL_REASON_BAD_JSON in err.
 */
int table_want_parse(const char *json, size_t len, const char *what, struct table_want *w,
		     struct model_error *err);
/* Appends a name to the list "a,b" in list (cap bytes); false (list unchanged) when it does not fit. */
bool table_names_add(char *list, size_t cap, const char *str, size_t len);

/* ---- shared by table_commit.c, table_row.c and table_check.c ---- */

struct tree_node;

/* Loads every schema once per transaction; -EIO when a record is corrupt. */
int table_txn_load(struct store_txn *txn, struct table_txn *tt);
/*
 * The hooks' start: txn's table state with every schema loaded in *out
 * (1), or none (0: a transaction no table write owns), or -errno.
 */
int table_txn_loaded(struct store_txn *txn, struct table_txn **out);
/* The value of field `name` of the row: a leaf or a container node (exists false: missing). */
int table_row_field(struct store_txn *txn, const uint8_t *row, size_t len, const char *name,
		    struct tree_node *out);
/* Key element `level` (0-based, after the table's key) of the row; -EINVAL past its end. */
int table_key_elem(const struct table_schema *s, const uint8_t *row, size_t len, int level,
		   struct tuple_elem *out);
/*
 * The index entry of the row, (id, values..., primary key...), into sb;
 * *values_end is where the primary key starts. 1: the row is not in the
 * index (a field missing or not indexable); -ENAMETOOLONG: over a key.
 */
int table_entry_build(struct store_txn *txn, const struct table_schema *s,
		      const struct table_index *x, const uint8_t *row, size_t len,
		      struct strbuf *sb, size_t *values_end);
/*
 * Index entries hold a key level under an integer key column as a tuple
 * integer (when its text is an integer's canonical form), so that rows
 * sharing their values come in numeric order (docs/FORMAT.md, "Index
 * entries"). table_entry_key turns the key part key[pos..len] of an entry
 * back into the row's data key, in row (STORE_KEY_MAX bytes); -EINVAL when
 * malformed or too long.
 */
int table_entry_key(const struct table_schema *s, const uint8_t *key, size_t pos, size_t len,
		    uint8_t *row, size_t *row_len);
/* Key level `level` (0-based) is a key field whose column is integer. */
bool table_level_is_int(const struct table_schema *s, int level);
/*
 * Appends the value element key level `level` gives its key field (the
 * element e of a row's key), read as the field's column type: 0, or 1
 * when e is neither a string nor an integer.
 */
int table_key_value(const struct table_schema *s, int level, const struct tuple_elem *e,
		    struct strbuf *sb);
/* Elements in key[from..len], counting up to max; *end_of_max: where the max-th ends. */
int table_key_count(const uint8_t *key, size_t from, size_t len, int max, size_t *end_of_max);
/*
 * The row an index entry key[0..len] belongs to (its table's schema loaded
 * in tt): row (STORE_KEY_MAX bytes), *row_len, and its index (*idx,
 * borrowed from tt). -EINVAL when the entry is of no loaded index or
 * malformed.
 */
int table_entry_row(struct table_txn *tt, const uint8_t *key, size_t len, uint8_t *row,
		    size_t *row_len, const struct table_index **idx);
/* key lies inside table s (not its empty-table marker). */
bool table_is_under(const struct table_schema *s, const uint8_t *key, size_t len);
/*
 * The leaf types, in the order to try, that text written to key[0..len]
 * is read as when it is a top-level field of a row with a column of a
 * scalar type (a number column: integer, then double): their count
 * (0: none, the leaf is typed as anywhere else), or <0 on a store error.
 */
int table_field_types(struct store_txn *txn, const uint8_t *key, size_t len,
		      enum model_type types[2]);
/* "string", "integer", ...: the name a column type has in schemas and messages ("?" if none). */
const char *table_col_type_name(enum table_col_type t);
/* Sets tt->err to "PATH-of-row: message" and returns ret. */
int table_fail_row(struct table_txn *tt, int ret, const uint8_t *row, size_t len,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The row's key fields equal its key; each column has its type, presence and length. */
int table_check_columns(struct store_txn *txn, struct table_txn *tt,
			const struct table_schema *s, const uint8_t *row, size_t len);
/* Every reference the row holds names an existing row. */
int table_check_references(struct store_txn *txn, struct table_txn *tt,
			   const struct table_schema *s, const uint8_t *row, size_t len);
/*
 * The value of field `name` of the row: the row's own, or, for a key field
 * the row leaves out, a string leaf of the text its key gives it, whose
 * payload is raw (STORE_KEY_MAX bytes, the caller's).
 */
int table_row_value(struct store_txn *txn, const struct table_schema *s, const uint8_t *row,
		    size_t len, const char *name, char *raw, struct tree_node *out);

/* ---- references over several fields (table_ref.c) ---- */
/* The index whose fields ref names (NULL when the schema holds none: corrupt). */
const struct table_index *table_ref_index(const struct table_schema *s,
					  const struct table_ref *ref);
/* "field a" or "fields a,b": how messages name ref's fields, into buf. */
const char *table_ref_what(const struct table_schema *s, const struct table_ref *ref,
			   char *buf, size_t size);
/* Every reference over several fields of the row names an existing row (EINVAL). */
int table_refs_check_row(struct store_txn *txn, struct table_txn *tt,
			 const struct table_schema *s, const uint8_t *row, size_t len);
/* The removed row of s that a row still references over several fields: EBUSY. */
int table_refs_restrict(struct store_txn *txn, struct table_txn *tt,
			const struct table_schema *s, const uint8_t *row, size_t len);
/*
 * 1 with its key in found (STORE_KEY_MAX bytes) when some row of o
 * references a row through ref (a row holding null in a field or leaving
 * one out does not), 0 when none: whether ref's table can be dropped.
 */
int table_refs_any(struct store_txn *txn, struct table_txn *tt, const struct table_schema *o,
		   const struct table_ref *ref, uint8_t *found, size_t *flen);
/* Whether a reference over several fields of s names the field. */
bool table_refs_have_field(const struct table_schema *s, const char *name);
/* o's first reference over several fields to the table at key (NULL: none). */
const struct table_ref *table_refs_to(const struct table_schema *o, const uint8_t *key,
				      size_t len);
/* The "references" member of the schema's JSON (nothing when it has none). */
void table_refs_show_json(const struct table_schema *s, struct json_writer *w);

#endif
