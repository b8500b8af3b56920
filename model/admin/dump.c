/*
 * model/admin/dump.c - the dump format (docs/FORMAT.md, "Dump"): a lossless,
 * versioned, line-oriented copy of every key of every space, independent
 * of LMDB pages, and loading it back into an empty store in one
 * transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

#define DUMP_HEADER "kvfs-dump 1"

static const char *const space_names[STORE_SPACE_COUNT] = {
	[STORE_SPACE_META] = "meta",
	[STORE_SPACE_DATA] = "data",
	[STORE_SPACE_SCHEMA] = "schema",
	[STORE_SPACE_INDEX] = "index",
	[STORE_SPACE_ATTR] = "attr",	/* dumps made before it have none */
	[STORE_SPACE_EXPIRY] = "expiry",	/* format 4: deadlines, absolute */
	[STORE_SPACE_TTL] = "ttl",
};

/* ---- dump ---- */

static void put_hex(FILE *out, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (len == 0)
		fputc('-', out);
	for (size_t i = 0; i < len; i++)
		fprintf(out, "%02x", p[i]);
}

/*
 * A dump is a backup: it copies records exactly, so it must not copy one
 * whose checksum fails (the restored store would then vouch for it).
 */
static int dump_verify(struct store_txn *txn, const struct store_val *k,
		       const struct store_val *v, struct model_error *err)
{
	size_t body_len;
	struct strbuf path;
	int ret = leaf_record_verify(store_txn_format(txn), k->data, k->len, v->data, v->len,
				     &body_len);

	if (ret == 0)
		return 0;
	strbuf_init(&path);
	tree_key_to_path(k->data, k->len, &path);
	tree_fail(err, -EIO, "dump: %s: corrupt record in the store (bad checksum; run kvfs "
		  "check)", path.buf ? path.buf : "?");
	strbuf_release(&path);
	return -EIO;
}

/* A schema record is sealed like a data record (docs/FORMAT.md, tables). */
static int dump_verify_schema(const struct store_val *k, const struct store_val *v,
			      struct model_error *err)
{
	size_t body_len;
	struct strbuf path;

	if (leaf_record_verify(STORE_FORMAT_VERSION, k->data, k->len, v->data, v->len,
			       &body_len) == 0)
		return 0;
	strbuf_init(&path);
	tree_key_to_path(k->data, k->len, &path);
	tree_fail(err, -EIO, "dump: %s: corrupt table schema record (bad checksum; run kvfs "
		  "check)", path.buf ? path.buf : "?");
	strbuf_release(&path);
	return -EIO;
}

static int dump_space(struct store_txn *txn, enum store_space space, FILE *out,
		      uint64_t *count, struct model_error *err)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct model_attr a;
	int ret = store_scan_open(txn, space, NULL, 0, &scan);

	if (ret == -ENOENT)
		return 0;	/* a read-only open of an older store: not there yet */
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (space == STORE_SPACE_DATA) {
			ret = dump_verify(txn, &k, &v, err);
			if (ret < 0)
				break;
		}
		if (space == STORE_SPACE_SCHEMA && dump_verify_schema(&k, &v, err) < 0) {
			ret = -EIO;
			break;
		}
		if (space == STORE_SPACE_ATTR && attr_decode(k.data, k.len, v.data, v.len, &a) < 0) {
			ret = tree_fail(err, -EIO, "dump: corrupt attribute record in the store "
					"(run kvfs check)");
			break;
		}
		fprintf(out, "%s ", space_names[space]);
		put_hex(out, k.data, k.len);
		fputc(' ', out);
		put_hex(out, v.data, v.len);
		fputc('\n', out);
		(*count)++;
	}
	store_scan_close(scan);
	return ret;
}

int model_dump(struct model *m, FILE *out, struct model_error *err)
{
	struct store_txn *txn;
	uint64_t count = 0;
	int ret = store_read_begin(m->st, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "dump: %s", strerror(-ret));
	fprintf(out, "%s\n", DUMP_HEADER);
	for (int s = 0; s < STORE_SPACE_COUNT && ret == 0; s++)
		ret = dump_space(txn, (enum store_space)s, out, &count, err);
	store_txn_end(txn);
	if (ret == -EIO && err && err->msg[0])
		return ret;
	if (ret < 0)
		return tree_fail(err, ret, "dump: %s", strerror(-ret));
	fprintf(out, "end %llu\n", (unsigned long long)count);
	if (fflush(out) != 0 || ferror(out))
		return tree_fail(err, -EIO, "dump: write error");
	return 0;
}

/* ---- load ---- */

struct load {
	const char *text;
	size_t len;
	struct model_error *err;
	/* per attempt */
	size_t pos;
	uint64_t line;
	uint64_t count;
	int space;
	unsigned format;	/* the dump's meta format; 0 until its line */
	uint8_t prev[STORE_KEY_MAX];
	size_t prev_len;
};

/* The next line (without '\n'); false at the end of the text. */
static bool load_line(struct load *l, const char **line, size_t *len)
{
	const char *nl;

	if (l->pos >= l->len)
		return false;
	*line = l->text + l->pos;
	nl = memchr(*line, '\n', l->len - l->pos);
	if (!nl)
		return false;	/* every line ends with a newline */
	*len = (size_t)(nl - *line);
	l->pos += *len + 1;
	l->line++;
	return true;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes lowercase hex (or "-" for empty) into sb. */
static bool load_hex(const char *s, size_t len, struct strbuf *sb)
{
	strbuf_reset(sb);
	if (len == 1 && s[0] == '-')
		return true;
	if (len == 0 || len % 2)
		return false;
	for (size_t i = 0; i < len; i += 2) {
		int hi = hex_val(s[i]), lo = hex_val(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		strbuf_addc(sb, (char)(hi << 4 | lo));
	}
	return !sb->failed;
}

static int load_fail(struct load *l, const char *what)
{
	return tree_fail(l->err, -EINVAL, "load: line %llu: %s", (unsigned long long)l->line,
			 what);
}

/* Spaces come in order, keys strictly increasing within a space. */
static bool load_in_order(struct load *l, int space, const struct strbuf *key)
{
	size_t n = key->len < l->prev_len ? key->len : l->prev_len;
	int c;

	if (space != l->space) {
		if (space < l->space)
			return false;
		l->space = space;
		l->prev_len = 0;
		memcpy(l->prev, key->buf, key->len);
		l->prev_len = key->len;
		return true;
	}
	c = memcmp(key->buf, l->prev, n);
	if (c < 0 || (c == 0 && key->len <= l->prev_len))
		return false;
	memcpy(l->prev, key->buf, key->len);
	l->prev_len = key->len;
	return true;
}

/*
 * The meta `format` line, which sorts before every data line: a format-1
 * dump is stored upgraded, so the store always holds the current format.
 */
static int load_format(struct store_txn *txn, struct load *l, const struct strbuf *val)
{
	const uint8_t *v = (const uint8_t *)val->buf;

	if (val->len != 4 || v[0] || v[1] || v[2] || v[3] < 1 || v[3] > STORE_FORMAT_VERSION)
		return load_fail(l, "the dump's format version is not 1, 2, 3 or 4");
	l->format = v[3];
	return store_set_format(txn, STORE_FORMAT_VERSION);
}

/* A current record is loaded exactly once its checksum holds; a format-1
 * record is sealed on the way in. */
static int load_data(struct store_txn *txn, struct load *l, const struct strbuf *key,
		     struct strbuf *val)
{
	size_t body_len;
	struct strbuf sealed;
	int ret;

	if (l->format == 0)
		return load_fail(l, "data before the meta format line");
	if (l->format >= 2) {
		if (leaf_record_verify(l->format, key->buf, key->len, val->buf ? val->buf : "",
				       val->len, &body_len) < 0)
			return load_fail(l, "checksum mismatch");
		return store_put(txn, STORE_SPACE_DATA, key->buf, key->len, val->buf, val->len);
	}
	strbuf_init(&sealed);
	leaf_record_seal(key->buf, key->len, val->buf ? val->buf : "", val->len, &sealed);
	ret = sealed.failed ? -ENOMEM
		: store_put(txn, STORE_SPACE_DATA, key->buf, key->len, sealed.buf, sealed.len);
	strbuf_release(&sealed);
	return ret;
}

static int load_record(struct store_txn *txn, struct load *l, const char *line, size_t len,
		       struct strbuf *key, struct strbuf *val)
{
	const char *sp1 = memchr(line, ' ', len), *sp2;
	struct model_attr a;
	int space = -1;

	if (!sp1)
		return load_fail(l, "expected \"<space> <key> <value>\"");
	for (int s = 0; s < STORE_SPACE_COUNT; s++)
		if ((size_t)(sp1 - line) == strlen(space_names[s]) &&
		    memcmp(line, space_names[s], (size_t)(sp1 - line)) == 0)
			space = s;
	if (space < 0)
		return load_fail(l, "unknown space");
	sp2 = memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - line));
	if (!sp2 || !load_hex(sp1 + 1, (size_t)(sp2 - sp1 - 1), key) || key->len == 0 ||
	    key->len > STORE_KEY_MAX || !load_hex(sp2 + 1, len - (size_t)(sp2 + 1 - line), val))
		return load_fail(l, "bad hex key or value");
	if (!load_in_order(l, space, key))
		return load_fail(l, "keys out of order");
	l->count++;
	if (space == STORE_SPACE_META && key->len == 6 && memcmp(key->buf, "format", 6) == 0)
		return load_format(txn, l, val);
	if (space == STORE_SPACE_DATA)
		return load_data(txn, l, key, val);
	if (space == STORE_SPACE_SCHEMA &&
	    leaf_record_verify(STORE_FORMAT_VERSION, key->buf, key->len, val->buf ? val->buf : "",
			       val->len, &(size_t){ 0 }) < 0)
		return load_fail(l, "checksum mismatch");
	if (space == STORE_SPACE_ATTR && attr_decode((const uint8_t *)key->buf, key->len,
						     val->buf ? val->buf : "", val->len, &a) < 0)
		return load_fail(l, "attribute record does not verify");
	if (space == STORE_SPACE_EXPIRY &&
	    (!ttl_expiry_parse(key->buf, key->len, &(int64_t){ 0 }, &(const uint8_t *){ NULL },
			       &(size_t){ 0 }) || val->len != 0))
		return load_fail(l, "bad expiry entry");
	if (space == STORE_SPACE_TTL && !ttl_deadline_decode(val->buf, val->len, &(int64_t){ 0 }))
		return load_fail(l, "bad ttl entry");
	return store_put(txn, (enum store_space)space, key->buf, key->len,
			 val->len ? val->buf : "", val->len);
}

static int load_end(struct load *l, const char *line, size_t len)
{
	char want[32];
	int n = snprintf(want, sizeof(want), "end %llu", (unsigned long long)l->count);

	if ((size_t)n != len || memcmp(line, want, len) != 0)
		return load_fail(l, "the end line does not match the number of keys");
	if (l->pos != l->len)
		return load_fail(l, "text after the end line");
	return 0;
}

static int load_check_empty(struct store_txn *txn, struct load *l)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan);

	if (ret < 0)
		return ret;
	ret = store_scan_next(scan, &k, &v);
	store_scan_close(scan);
	if (ret == 1)
		return tree_fail(l->err, -EEXIST, "load: the store is not empty");
	return ret;
}

static int load_lines(struct store_txn *txn, struct load *l, struct strbuf *key,
		      struct strbuf *val)
{
	const char *line;
	size_t len;
	int ret;

	if (!load_line(l, &line, &len) || len != strlen(DUMP_HEADER) ||
	    memcmp(line, DUMP_HEADER, len) != 0)
		return load_fail(l, "not a kvfs dump (expected \"" DUMP_HEADER "\")");
	while (load_line(l, &line, &len)) {
		if (len >= 4 && memcmp(line, "end ", 4) == 0)
			return load_end(l, line, len);
		ret = load_record(txn, l, line, len, key, val);
		if (ret < 0)
			return ret;
	}
	return load_fail(l, "the dump ends without its end line");
}

static int load_txn(struct store_txn *txn, void *arg)
{
	struct load *l = arg;
	struct strbuf key, val;
	int ret;

	tree_clear(l->err);
	l->pos = 0;
	l->line = 0;
	l->count = 0;
	l->space = 0;
	l->format = 0;
	l->prev_len = 0;
	ret = load_check_empty(txn, l);
	if (ret < 0)
		return ret;
	strbuf_init(&key);
	strbuf_init(&val);
	ret = load_lines(txn, l, &key, &val);
	strbuf_release(&val);
	strbuf_release(&key);
	return ret;
}

static int slurp(FILE *in, struct strbuf *sb)
{
	char buf[65536];
	size_t n;

	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		strbuf_add(sb, buf, n);
	if (ferror(in))
		return -EIO;
	return sb->failed ? -ENOMEM : 0;
}

int model_load(struct model *m, FILE *in, struct model_error *err)
{
	struct strbuf text;
	struct load *l;
	int ret;

	if (m->readonly)	/* before reading the dump; tree_write checks again */
		return tree_fail(err, -EROFS, "load: the store is read-only");
	l = calloc(1, sizeof(*l));
	if (!l)
		return tree_fail(err, -ENOMEM, "load: out of memory");
	strbuf_init(&text);
	ret = slurp(in, &text);
	if (ret < 0) {
		tree_fail(err, ret, "load: cannot read the dump: %s", strerror(-ret));
		goto out_free;
	}
	l->text = text.buf ? text.buf : "";
	l->len = text.len;
	l->err = err;
	ret = tree_write(m, "load", load_txn, l, err);
	if (ret == 0) {
		struct store_info info;

		if (store_info(m->st, &info) == 0)
			m->created_ns = info.created_ns;	/* restored from the dump */
	}
out_free:
	strbuf_release(&text);
	free(l);
	return ret;
}
