/*
 * model/admin/check.c - verifies a store against docs/FORMAT.md: the format
 * version, every data key a tuple of strings and non-negative integers,
 * every record's checksum (format 2) and decoding, every string UTF-8, no
 * leaf or marker with keys under it, no
 * container mixing names and indices, every attribute record decoding and
 * belonging to an existing node, the ttl and expiry spaces agreeing with
 * each other and the nodes (model/ttl/ttl_space.c). One line per problem.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

struct check {
	FILE *report;
	uint64_t problems;
	unsigned format;	/* record format of the snapshot */
	uint8_t prev[STORE_KEY_MAX];
	size_t prev_len;
	bool prev_is_record;
	const char *part;	/* what the walk reads now, for check_fail */
	/* the data walk stopped at damage after this key (check_data): the
	 * other steps still run, then check fails naming the place */
	bool data_damaged;
	uint8_t damage_at[STORE_KEY_MAX];
	size_t damage_len;
};

static void check_report(struct check *c, const void *key, size_t len, const char *what)
{
	const uint8_t *k = key;

	if (c->report) {
		fputs("check: ", c->report);
		for (size_t i = 0; i < len; i++)
			fprintf(c->report, "%02x", k[i]);
		if (len == 0)
			fputc('-', c->report);
		fprintf(c->report, ": %s\n", what);
	}
	c->problems++;
}

static bool check_tuple(const struct store_val *k)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int ret;

	tuple_reader_init(&r, k->data, k->len);
	while ((ret = tuple_next(&r, &e)) == 1) {
		if (e.type != TUPLE_TYPE_STRING && (e.type != TUPLE_TYPE_INT || e.integer < 0))
			return false;
	}
	return ret == 0 && k->len > 0;
}

/*
 * Compares with the previous key: where the two first differ in an
 * element, both elements are siblings and must be of one kind; a
 * previous key that is a whole prefix of this one must not be a record.
 */
static void check_siblings(struct check *c, const struct store_val *k)
{
	struct tuple_reader a, b;
	struct tuple_elem ea, eb;
	const uint8_t *key = k->data;

	tuple_reader_init(&a, c->prev, c->prev_len);
	tuple_reader_init(&b, key, k->len);
	while (tuple_next(&a, &ea) == 1) {
		if (tuple_next(&b, &eb) != 1)
			return;
		if (a.pos == b.pos && memcmp(c->prev, key, a.pos) == 0)
			continue;
		if ((ea.type == TUPLE_TYPE_INT) != (eb.type == TUPLE_TYPE_INT))
			check_report(c, key, k->len, "a container mixes names and indices");
		return;
	}
	if (c->prev_is_record && c->prev_len < k->len)
		check_report(c, c->prev, c->prev_len, "a leaf or marker has keys under it");
}

/* Names this key adds to the previous one must fit a file name (loaded stores may not). */
static void check_names(struct check *c, const struct store_val *k)
{
	const uint8_t *key = k->data;
	struct tuple_reader r;
	struct tuple_elem e;
	size_t start = 0, common = 0;

	while (common < c->prev_len && common < k->len && c->prev[common] == key[common])
		common++;
	tuple_reader_init(&r, key, k->len);
	while (tuple_next(&r, &e) == 1) {
		if (r.pos > common && tree_name_too_long(key, start, k->len)) {
			check_report(c, key, r.pos, "name longer than 255 bytes as a file name");
			return;
		}
		start = r.pos;
	}
}

/* A checksum mismatch names the path too, when the key still reads as one. */
static void check_bad_sum(struct check *c, const struct store_val *k, bool tuple_ok)
{
	struct strbuf sb;

	strbuf_init(&sb);
	strbuf_addf(&sb, "checksum mismatch");
	if (tuple_ok) {
		strbuf_addf(&sb, " (");
		tree_key_to_path(k->data, k->len, &sb);
		strbuf_addf(&sb, ")");
	}
	check_report(c, k->data, k->len, sb.failed ? "checksum mismatch" : sb.buf);
	strbuf_release(&sb);
}

static void check_key(struct check *c, const struct store_val *k, const struct store_val *v)
{
	struct leaf leaf;
	bool tuple_ok = check_tuple(k);
	int ret;

	if (!tuple_ok)
		check_report(c, k->data, k->len, "key is not a tuple of names and indices");
	ret = leaf_record_decode(c->format, k->data, k->len, v->data, v->len, &leaf);
	if (ret == -EBADMSG)
		check_bad_sum(c, k, tuple_ok);
	else if (ret < 0)
		check_report(c, k->data, k->len, "record does not decode");
	else if (leaf_validate(&leaf) < 0)
		check_report(c, k->data, k->len, "string is not valid UTF-8");
	if (tuple_ok && c->prev_len)
		check_siblings(c, k);
	if (tuple_ok)
		check_names(c, k);
	memcpy(c->prev, k->data, k->len);
	c->prev_len = tuple_ok ? k->len : 0;
	c->prev_is_record = true;
}

static int check_meta(struct store_txn *txn, struct check *c)
{
	struct store_val v;
	int ret = store_get(txn, STORE_SPACE_META, "format", 6, &v);

	if (ret == -ENOENT) {
		check_report(c, "format", 6, "format version missing");
		return 0;
	}
	if (ret < 0)
		return ret;
	/* Format 1 is read as it is (a read-only open does not upgrade). */
	c->format = store_txn_format(txn);
	if (v.len != 4 || c->format < 1 || c->format > STORE_FORMAT_VERSION)
		check_report(c, "format", 6, "format version is not 1, 2, 3 or 4");
	if (store_get(txn, STORE_SPACE_META, "created", 7, &v) != 0 || v.len != 8)
		check_report(c, "created", 7, "creation time missing or malformed");
	return 0;
}

/*
 * A walk that finds keys out of order stops there (store_scan_next): the
 * place is reported (the backend's check says more) and the check goes on.
 */
static int check_data(struct store_txn *txn, struct check *c)
{
	struct store_scan *scan;
	struct store_val k, v;
	char msg[256];
	int ret = store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan);

	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1)
		check_key(c, &k, &v);
	if (ret == -EIO && store_scan_damage(scan)) {
		snprintf(msg, sizeof(msg), "the walk of the data stops after this key: %s; keys "
			 "after it are not checked", store_scan_damage(scan));
		check_report(c, c->prev, c->prev_len, msg);
		c->data_damaged = true;
		memcpy(c->damage_at, c->prev, c->prev_len);
		c->damage_len = c->prev_len;
		ret = 0;
	}
	store_scan_close(scan);
	return ret;
}

/* The attr space: each record verifies and its node (a container for the
 * root's 0x00 key) exists. */
static int check_attrs(struct store_txn *txn, struct check *c)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct model_attr a;
	struct tree_node n;
	int ret = store_scan_open(txn, STORE_SPACE_ATTR, NULL, 0, &scan);

	if (ret == -ENOENT)
		return 0;	/* a read-only open of an older store: not there yet */
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		bool root = k.len == 1 && ((const uint8_t *)k.data)[0] == 0x00;
		int r = attr_decode(k.data, k.len, v.data, v.len, &a);

		if (r == -EBADMSG) {
			check_report(c, k.data, k.len, "attribute record: bad checksum");
			continue;
		}
		if (r < 0) {
			check_report(c, k.data, k.len, "attribute record: bad layout");
			continue;
		}
		if (root)
			continue;
		if (!check_tuple(&k)) {
			check_report(c, k.data, k.len, "attribute record: key is no node key");
			continue;
		}
		r = tree_lookup(txn, k.data, k.len, &n);
		if (r == 0 && !n.exists)
			check_report(c, k.data, k.len, "attribute record of a node that does not exist");
	}
	store_scan_close(scan);
	return ret;
}

/* TTL problems: the key of the ttl or expiry entry in hex, like the rest. */
static void check_ttl_report(void *arg, const uint8_t *key, size_t len, const char *msg)
{
	check_report(arg, key, len, msg);
}

/* Table problems name the row by its path, then the key in hex like the rest. */
static void check_table_report(void *arg, const uint8_t *key, size_t len, const char *msg)
{
	struct check *c = arg;
	struct strbuf line;

	strbuf_init(&line);
	if (len) {
		tree_key_to_path(key, len, &line);
		strbuf_add(&line, ": ", 2);
	}
	strbuf_add(&line, msg, strlen(msg));
	check_report(c, key, len, line.buf ? line.buf : msg);
	strbuf_release(&line);
}

static int check_backend(struct store_txn *txn, struct check *c)
{
	/* etcd: the children space; LMDB: its B-trees' order as seeks see it */
	return store_txn_check(txn, check_table_report, c);
}

static int check_tables(struct store_txn *txn, struct check *c)
{
	return table_check(txn, check_table_report, c, NULL);
}

static int check_ttl(struct store_txn *txn, struct check *c)
{
	return ttl_check(txn, check_ttl_report, c, NULL);
}

/* The walk, in order; part names what a step reads when it cannot go on. */
static const struct {
	const char *part;
	int (*run)(struct store_txn *txn, struct check *c);
} check_steps[] = {
	{ "the format record", check_meta },
	{ "the data space", check_data },	/* names the path where a record does not read */
	{ "the backend's own records", check_backend },	/* LMDB: order as seeks see it */
	{ "the table schemas and indexes", check_tables },
	{ "the attribute space", check_attrs },
	{ "the ttl and expiry spaces", check_ttl },
};

/*
 * The walk could not go on: says what it was reading and, in the data
 * space, the last path it read, so that the user knows what is damaged
 * and that nothing after it was checked. EIO and EBADMSG are damage (a
 * record or page that does not read); anything else is said as it is.
 */
static int check_fail(struct check *c, int ret, struct model_error *err)
{
	struct strbuf at;

	if (ret != -EIO && ret != -EBADMSG)
		return tree_fail(err, ret, "check: reading %s: %s", c->part, strerror(-ret));
	strbuf_init(&at);
	if (c->prev_len)
		tree_key_to_path(c->prev, c->prev_len, &at);
	tree_fail(err, -EIO, "check: the store is damaged: %s does not read%s%s (%s); "
		  "the rest was not checked", c->part, at.buf ? " past " : "",
		  at.buf ? at.buf : "", strerror(-ret));
	strbuf_release(&at);
	return -EIO;
}

int model_check(struct model *m, FILE *report, uint64_t *problems, struct model_error *err)
{
	struct store_txn *txn;
	struct check *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return tree_fail(err, -ENOMEM, "check: out of memory");
	c->report = report;
	c->part = "the store";
	ret = store_read_begin(m->st, &txn);
	if (ret == 0) {
		for (size_t i = 0; ret == 0 && i < sizeof(check_steps) / sizeof(check_steps[0]); i++) {
			c->part = check_steps[i].part;
			ret = check_steps[i].run(txn, c);
			if (ret == 0)
				c->prev_len = 0;	/* a place in the data space is named there only */
		}
		store_txn_end(txn);
	}
	if (ret == 0 && c->data_damaged) {	/* named as a walk that could not go on */
		c->part = "the data space";
		memcpy(c->prev, c->damage_at, c->damage_len);
		c->prev_len = c->damage_len;
		ret = -EIO;
	}
	if (ret < 0)
		check_fail(c, ret, err);
	if (problems)
		*problems = c->problems;
	free(c);
	return ret;
}
