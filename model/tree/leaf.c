/*
 * model/tree/leaf.c - leaf records and their text form.
 *
 * Owns: the byte layout of a leaf record (docs/FORMAT.md, "data: leaf
 * records"), the text a leaf shows as a file ("Text form of a leaf"), the
 * type rules for text written to a leaf ("Writing text T"), and UTF-8
 * validation. Decoding is strict so that `kvfs check` and every reader agree
 * on what a well-formed record is.
 */
#include <errno.h>
#include <string.h>

#include "model/model_int.h"

/* ---- UTF-8 ---- */

/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629 table 3-7), or 0:
 * rejects overlong forms, surrogates (U+D800..DFFF) and > U+10FFFF.
 */
static size_t utf8_seq_len(const uint8_t *s, size_t avail)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte's range is what excludes overlongs and surrogates. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool utf8_is_valid(const void *data, size_t len)
{
	const uint8_t *s = data;
	size_t i = 0, n;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_seq_len(s + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/* ---- records ---- */

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void be64_put(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* Payload size a tag requires: 8 for numbers, 0 for the rest, -1 = any. */
static int leaf_tag_payload(unsigned tag)
{
	switch (tag) {
	case LEAF_STRING:
	case LEAF_BYTES:
	case LEAF_BIG_INTEGER:
		return -1;
	case LEAF_INTEGER:
	case LEAF_DOUBLE:
		return 8;
	case LEAF_FALSE:
	case LEAF_TRUE:
	case LEAF_NULL:
	case LEAF_EMPTY_OBJECT:
	case LEAF_EMPTY_ARRAY:
		return 0;
	default:
		return -2;
	}
}

/* The newline flag means something only for types with a text value. */
static bool leaf_tag_has_newline(unsigned tag)
{
	return (tag >= LEAF_STRING && tag <= LEAF_NULL) || tag == LEAF_BIG_INTEGER;
}

/*
 * out->payload borrows from record: valid while the record is. Checks the
 * structure only, in constant time: a string's payload is validated when it
 * is written (leaf_from_text, the flattener's parser) and by leaf_validate.
 */
int leaf_decode(const void *record, size_t len, struct leaf *out)
{
	const uint8_t *r = record;
	int want;

	if (len < LEAF_HEADER_SIZE)
		return -EINVAL;
	want = leaf_tag_payload(r[0]);
	if (want == -2)
		return -EINVAL;
	if (r[1] & ~LEAF_FLAG_NEWLINE)
		return -EINVAL;
	if ((r[1] & LEAF_FLAG_NEWLINE) && !leaf_tag_has_newline(r[0]))
		return -EINVAL;
	if (want >= 0 && len - LEAF_HEADER_SIZE != (size_t)want)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->tag = (enum leaf_tag)r[0];
	out->flags = r[1];
	out->mtime_ns = (int64_t)be64_get(r + 2);
	out->payload = r + LEAF_HEADER_SIZE;
	out->payload_len = len - LEAF_HEADER_SIZE;
	if (out->tag == LEAF_INTEGER)
		out->integer = (int64_t)be64_get(out->payload);
	/* Numbers are short: checking the digits keeps one text per value. */
	if (out->tag == LEAF_BIG_INTEGER &&
	    !number_is_big_integer((const char *)out->payload, out->payload_len))
		return -EINVAL;
	if (out->tag == LEAF_DOUBLE) {
		uint64_t bits = be64_get(out->payload);

		memcpy(&out->real, &bits, sizeof(bits));
	}
	return 0;
}

/* The full check of a decoded leaf: a string's payload must be UTF-8. */
int leaf_validate(const struct leaf *leaf)
{
	if (leaf->tag == LEAF_STRING && !utf8_is_valid(leaf->payload, leaf->payload_len))
		return -EINVAL;
	return 0;
}

void leaf_encode(const struct leaf *leaf, struct strbuf *sb)
{
	uint8_t head[LEAF_HEADER_SIZE], num[8];
	uint64_t bits;

	head[0] = (uint8_t)leaf->tag;
	head[1] = leaf->flags;
	be64_put(head + 2, (uint64_t)leaf->mtime_ns);
	strbuf_add(sb, head, sizeof(head));
	switch (leaf->tag) {
	case LEAF_INTEGER:
		be64_put(num, (uint64_t)leaf->integer);
		strbuf_add(sb, num, 8);
		break;
	case LEAF_DOUBLE:
		memcpy(&bits, &leaf->real, sizeof(bits));
		be64_put(num, bits);
		strbuf_add(sb, num, 8);
		break;
	case LEAF_STRING:
	case LEAF_BYTES:
	case LEAF_BIG_INTEGER:
		strbuf_add(sb, leaf->payload, leaf->payload_len);
		break;
	default:
		break;
	}
}

bool leaf_is_marker(const struct leaf *leaf)
{
	return leaf->tag == LEAF_EMPTY_OBJECT || leaf->tag == LEAF_EMPTY_ARRAY;
}

/* 0 for markers: they are containers, not typed leaves. */
enum model_type leaf_model_type(const struct leaf *leaf)
{
	switch (leaf->tag) {
	case LEAF_STRING:
		return MODEL_TYPE_STRING;
	case LEAF_INTEGER:
	case LEAF_BIG_INTEGER:
		return MODEL_TYPE_INTEGER;
	case LEAF_DOUBLE:
		return MODEL_TYPE_DOUBLE;
	case LEAF_FALSE:
	case LEAF_TRUE:
		return MODEL_TYPE_BOOLEAN;
	case LEAF_NULL:
		return MODEL_TYPE_NULL;
	case LEAF_BYTES:
		return MODEL_TYPE_BYTES;
	default:
		return (enum model_type)0;
	}
}

/* ---- text form ---- */

/*
 * The value part of the text form: *body points at the payload (strings,
 * bytes) or at buf (everything else, formatted there). Returns its length.
 */
static size_t leaf_text_body(const struct leaf *leaf, char buf[NUMBER_TEXT_MAX],
			     const char **body)
{
	*body = buf;
	switch (leaf->tag) {
	case LEAF_STRING:
	case LEAF_BYTES:
	case LEAF_BIG_INTEGER:
		*body = (const char *)leaf->payload;
		return leaf->payload_len;
	case LEAF_INTEGER:
		return number_format_integer(leaf->integer, buf);
	case LEAF_DOUBLE:
		return number_format_double(leaf->real, buf);
	case LEAF_TRUE:
		memcpy(buf, "true", 4);
		return 4;
	case LEAF_FALSE:
		memcpy(buf, "false", 5);
		return 5;
	case LEAF_NULL:
		memcpy(buf, "null", 4);
		return 4;
	default:
		return 0;	/* markers have no text */
	}
}

static bool leaf_text_newline(const struct leaf *leaf)
{
	return (leaf->flags & LEAF_FLAG_NEWLINE) && leaf_tag_has_newline(leaf->tag);
}

uint64_t leaf_text_size(const struct leaf *leaf)
{
	char buf[NUMBER_TEXT_MAX];
	const char *body;

	return leaf_text_body(leaf, buf, &body) + (leaf_text_newline(leaf) ? 1 : 0);
}

/* Copies the window [offset, offset+size) of the text form; returns bytes copied. */
size_t leaf_text_read(const struct leaf *leaf, void *dst, size_t size, uint64_t offset)
{
	char buf[NUMBER_TEXT_MAX];
	const char *body;
	size_t blen = leaf_text_body(leaf, buf, &body), n = 0;
	uint64_t total = blen + (leaf_text_newline(leaf) ? 1 : 0);
	char *d = dst;

	if (offset >= total)
		return 0;
	if (size > total - offset)
		size = (size_t)(total - offset);
	if (offset < blen) {
		n = blen - (size_t)offset < size ? blen - (size_t)offset : size;
		memcpy(d, body + offset, n);
	}
	if (n < size)		/* the only byte left in the window is the newline */
		d[n++] = '\n';
	return n;
}

/* ---- writing text ---- */

static bool leaf_is_plain_text(const char *v, size_t len)
{
	return !memchr(v, '\0', len) && utf8_is_valid(v, len);
}

bool leaf_type_is_inferred(const struct leaf *leaf)
{
	const char *v = (const char *)leaf->payload;

	if (leaf->payload_len > LEAF_INFER_READ_MAX)
		return false;
	if (leaf->tag == LEAF_STRING)
		return leaf_is_plain_text(v, leaf->payload_len);
	if (leaf->tag == LEAF_BYTES)
		return !leaf_is_plain_text(v, leaf->payload_len);
	return false;	/* numbers, booleans, null: only ever set explicitly */
}

/*
 * Fills out as `type` from value text v; false when v is not canonical for
 * it. A string is valid UTF-8; it may hold NUL only when the type was asked
 * for (`explicit`), since inferred text with NUL becomes bytes.
 */
static bool leaf_parse_as(enum model_type type, const char *v, size_t len, bool explicit,
			  struct leaf *out)
{
	switch (type) {
	case MODEL_TYPE_STRING:
		out->tag = LEAF_STRING;
		out->payload = (const uint8_t *)v;
		out->payload_len = len;
		return explicit ? utf8_is_valid(v, len) : leaf_is_plain_text(v, len);
	case MODEL_TYPE_INTEGER:
		out->tag = LEAF_INTEGER;
		if (number_parse_integer(v, len, &out->integer))
			return true;
		out->tag = LEAF_BIG_INTEGER;	/* any length, digit for digit */
		out->payload = (const uint8_t *)v;
		out->payload_len = len;
		return number_is_big_integer(v, len);
	case MODEL_TYPE_DOUBLE:
		out->tag = LEAF_DOUBLE;
		return number_parse_double(v, len, &out->real);
	case MODEL_TYPE_BOOLEAN:
		out->tag = len == 4 && !memcmp(v, "true", 4) ? LEAF_TRUE : LEAF_FALSE;
		return (len == 4 && !memcmp(v, "true", 4)) || (len == 5 && !memcmp(v, "false", 5));
	case MODEL_TYPE_NULL:
		out->tag = LEAF_NULL;
		return len == 4 && !memcmp(v, "null", 4);
	default:
		return false;
	}
}

/*
 * A CLI value (not file text) given an explicit numeric type may be spelled
 * as any JSON number: `put --type double x 1` stores 1.0, `1e308` stores
 * 1e+308. File writes stay strict, since their bytes must read back exactly.
 */
struct leaf_number {
	int count;
	struct json_token tok;
};

static int leaf_number_token(void *arg, const struct json_token *tok)
{
	struct leaf_number *n = arg;

	if (tok->event == JSON_VALUE_END)
		return 0;
	n->tok = *tok;
	return ++n->count > 1;
}

static bool leaf_value_as_number(enum model_type type, const char *v, size_t len,
				 struct leaf *out)
{
	struct leaf_number n = { 0 };

	struct strbuf sb;
	bool ok;

	if (json_parse(v, len, 0, 1, leaf_number_token, &n, NULL, NULL, NULL) != 0 || n.count != 1)
		return false;
	if (type == MODEL_TYPE_DOUBLE &&
	    (n.tok.event == JSON_INTEGER || n.tok.event == JSON_BIG_INTEGER)) {
		/* Only when the double holds the integer exactly: never rounded.
		 * The token's own text: white space or a BOM around it would
		 * hide its digits from the exactness check. */
		strbuf_init(&sb);
		out->tag = LEAF_DOUBLE;
		ok = number_read_double(n.tok.str, n.tok.len, &sb, &out->real) &&
		     number_double_is_exact(out->real, n.tok.str, n.tok.len, &sb);
		strbuf_release(&sb);
		return ok;
	}
	if (type == MODEL_TYPE_DOUBLE && n.tok.event == JSON_DOUBLE) {
		out->real = n.tok.real;
		return true;
	}
	if (type == MODEL_TYPE_INTEGER && n.tok.event == JSON_INTEGER) {
		out->tag = LEAF_INTEGER;
		out->integer = n.tok.integer;
		return true;
	}
	if (type == MODEL_TYPE_INTEGER && n.tok.event == JSON_BIG_INTEGER) {
		out->tag = LEAF_BIG_INTEGER;
		out->payload = (const uint8_t *)n.tok.str;	/* points into v */
		out->payload_len = n.tok.len;
		return true;
	}
	return false;
}

/*
 * See docs/FORMAT.md "Writing text T". File text: one trailing '\n' is split
 * off into the flag. Value (CLI put): the whole text is the value and the
 * flag is set, so it reads back as the value plus a newline. Bytes never
 * carry the flag: they keep the text exactly.
 */
int leaf_from_text(const void *text, size_t len, bool is_file_text, const struct leaf *old,
		   enum model_type type, int64_t mtime_ns, struct leaf *out)
{
	const char *t = text;
	size_t vlen = len;
	enum model_type old_type = old ? leaf_model_type(old) : (enum model_type)0;

	memset(out, 0, sizeof(*out));
	out->mtime_ns = mtime_ns;
	out->flags = LEAF_FLAG_NEWLINE;
	if (is_file_text) {
		if (len && t[len - 1] == '\n')
			vlen--;
		else
			out->flags = 0;
	}
	if (type == 0 && old_type == MODEL_TYPE_BYTES)
		type = MODEL_TYPE_BYTES;
	if (type == MODEL_TYPE_BYTES)
		goto bytes;
	if (type != 0) {
		if (leaf_parse_as(type, t, vlen, true, out))
			return 0;
		if (!is_file_text && leaf_value_as_number(type, t, vlen, out))
			return 0;
		return -EINVAL;
	}
	if (old_type && leaf_parse_as(old_type, t, vlen, false, out))
		return 0;
	if (leaf_parse_as(MODEL_TYPE_STRING, t, vlen, false, out))
		return 0;
bytes:
	out->tag = LEAF_BYTES;
	out->flags = 0;
	out->payload = text;
	out->payload_len = len;
	out->integer = 0;
	out->real = 0;
	return 0;
}
