/*
 * store/tuple.c - the FoundationDB tuple layer encoding (byte table in
 * store/tuple.h). The writer appends whole elements to a caller-owned buffer;
 * the reader decodes one element at a time and never reads past its input.
 *
 * The reader is stricter than FoundationDB's, because a kvfs key must have
 * exactly one spelling (otherwise one path could exist under two keys):
 *   - integers must be minimal: no leading 0x00 byte in a positive body, no
 *     leading 0xff byte in a negative one (so 0x13 0xff, "-0", is refused);
 *   - integers must fit int64_t (0x1c 0x80.. and 0x0c 0x7f..fe are refused;
 *     FoundationDB's big-integer codes 0x0b and 0x1d are unknown here);
 *   - codes kvfs does not use (float 0x20, UUID 0x30, versionstamps...) are
 *     refused as unknown.
 * Every refusal is -EINVAL. Unicode strings are not checked for valid UTF-8:
 * the store treats them as bytes, validity is the model layer's business.
 */
#include <errno.h>
#include <string.h>

#include "store/tuple.h"

enum {
	CODE_NULL = 0x00,
	CODE_BYTES = 0x01,
	CODE_STRING = 0x02,
	CODE_NESTED = 0x05,
	CODE_NEG_MIN = 0x0c,	/* 8-byte negative integer */
	CODE_ZERO = 0x14,
	CODE_POS_MAX = 0x1c,	/* 8-byte positive integer */
	CODE_DOUBLE = 0x21,
	CODE_FALSE = 0x26,
	CODE_TRUE = 0x27,
	ESCAPE = 0xff,		/* follows a 0x00 that is data, not a terminator */
};

#define SIGN_BIT ((uint64_t)1 << 63)

void tuple_writer_init(struct tuple_writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->depth = 0;
	w->overflow = false;
}

/*
 * Returns where the next n bytes go, or NULL (setting overflow) when they do
 * not fit; the caller then adds n to len once the element is written.
 */
static uint8_t *reserve(struct tuple_writer *w, size_t n)
{
	if (w->overflow || n > w->cap - w->len) {
		w->overflow = true;
		return NULL;
	}
	return w->buf + w->len;
}

static void put_be(uint8_t *dst, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *src, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = (v << 8) | src[i];
	return v;
}

void tuple_put_null(struct tuple_writer *w)
{
	size_t n = w->depth > 0 ? 2 : 1;
	uint8_t *p = reserve(w, n);

	if (!p)
		return;
	p[0] = CODE_NULL;
	if (n == 2)
		p[1] = ESCAPE;
	w->len += n;
}

/* Writes code, data with every 0x00 followed by 0xff, and a 0x00 terminator. */
static void put_escaped(struct tuple_writer *w, uint8_t code, const uint8_t *data, size_t len)
{
	size_t zeros = 0, n, j = 1;
	uint8_t *p;

	for (size_t i = 0; i < len; i++)
		zeros += data[i] == 0;
	n = 1 + len + zeros + 1;
	if (n < len || !(p = reserve(w, n)))
		return;
	p[0] = code;
	for (size_t i = 0; i < len; i++) {
		p[j++] = data[i];
		if (data[i] == 0)
			p[j++] = ESCAPE;
	}
	p[j] = 0x00;
	w->len += n;
}

void tuple_put_bytes(struct tuple_writer *w, const void *data, size_t len)
{
	put_escaped(w, CODE_BYTES, data, len);
}

void tuple_put_string(struct tuple_writer *w, const char *utf8, size_t len)
{
	put_escaped(w, CODE_STRING, (const uint8_t *)utf8, len);
}

/* Bytes needed to hold v without leading zero bytes (0 for v == 0). */
static size_t byte_len(uint64_t v)
{
	size_t n = 0;

	while (v) {
		n++;
		v >>= 8;
	}
	return n;
}

/*
 * Magnitude in uint64_t arithmetic, so INT64_MIN (magnitude 2^63) needs no
 * signed negation. Negative bodies are the ones' complement of the
 * magnitude, truncated to its byte length.
 */
void tuple_put_int(struct tuple_writer *w, int64_t value)
{
	bool neg = value < 0;
	uint64_t mag = neg ? 0 - (uint64_t)value : (uint64_t)value;
	size_t n = byte_len(mag);
	uint8_t *p = reserve(w, 1 + n);

	if (!p)
		return;
	p[0] = (uint8_t)(neg ? CODE_ZERO - n : CODE_ZERO + n);
	put_be(p + 1, neg ? ~mag : mag, n);
	w->len += 1 + n;
}

/* Order-preserving: positives get the sign bit set, negatives all bits flipped. */
void tuple_put_double(struct tuple_writer *w, double value)
{
	uint64_t bits;
	uint8_t *p = reserve(w, 9);

	if (!p)
		return;
	memcpy(&bits, &value, sizeof(bits));
	bits = (bits & SIGN_BIT) ? ~bits : bits ^ SIGN_BIT;
	p[0] = CODE_DOUBLE;
	put_be(p + 1, bits, 8);
	w->len += 9;
}

void tuple_put_bool(struct tuple_writer *w, bool value)
{
	uint8_t *p = reserve(w, 1);

	if (!p)
		return;
	p[0] = value ? CODE_TRUE : CODE_FALSE;
	w->len += 1;
}

/* Depth is tracked even after an overflow so begin/end stay balanced. */
void tuple_nested_begin(struct tuple_writer *w)
{
	uint8_t *p = reserve(w, 1);

	w->depth++;
	if (!p)
		return;
	p[0] = CODE_NESTED;
	w->len += 1;
}

void tuple_nested_end(struct tuple_writer *w)
{
	uint8_t *p;

	if (w->depth <= 0)
		return;
	w->depth--;
	p = reserve(w, 1);
	if (!p)
		return;
	p[0] = 0x00;
	w->len += 1;
}

void tuple_reader_init(struct tuple_reader *r, const void *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->pos = 0;
	r->nested = false;
}

void tuple_reader_init_nested(struct tuple_reader *r, const struct tuple_elem *nested)
{
	tuple_reader_init(r, nested->raw, nested->raw_len);
	r->nested = true;
}

/*
 * Finds the terminator of an escaped body p[0..avail): *end is its offset,
 * *zeros the number of escaped 0x00 bytes. A 0x00 followed by 0xff is data.
 */
static int find_terminator(const uint8_t *p, size_t avail, size_t *end, size_t *zeros)
{
	size_t i = 0;

	*zeros = 0;
	while (i < avail) {
		if (p[i] != 0x00) {
			i++;
		} else if (i + 1 < avail && p[i + 1] == ESCAPE) {
			(*zeros)++;
			i += 2;
		} else {
			*end = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int decode_int(const uint8_t *p, size_t avail, struct tuple_elem *out, size_t *used)
{
	bool neg = p[0] < CODE_ZERO;
	size_t n = neg ? (size_t)(CODE_ZERO - p[0]) : (size_t)(p[0] - CODE_ZERO);
	uint64_t v, mask;

	if (avail < 1 + n)
		return -EINVAL;
	if (n > 0 && p[1] == (neg ? 0xff : 0x00))
		return -EINVAL;	/* not minimal */
	v = get_be(p + 1, n);
	out->type = TUPLE_TYPE_INT;
	*used = 1 + n;
	if (!neg) {
		if (v > (uint64_t)INT64_MAX)
			return -EINVAL;
		out->integer = (int64_t)v;
		return 0;
	}
	mask = n == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * n)) - 1;
	v = ~v & mask;		/* the magnitude, 1 .. 2^63 */
	if (v > SIGN_BIT)
		return -EINVAL;
	out->integer = v == SIGN_BIT ? INT64_MIN : -(int64_t)v;
	return 0;
}

static int decode_double(const uint8_t *p, size_t avail, struct tuple_elem *out, size_t *used)
{
	uint64_t bits;

	if (avail < 9)
		return -EINVAL;
	bits = get_be(p + 1, 8);
	bits = (bits & SIGN_BIT) ? bits ^ SIGN_BIT : ~bits;
	memcpy(&out->real, &bits, sizeof(bits));
	out->type = TUPLE_TYPE_DOUBLE;
	*used = 9;
	return 0;
}

static int decode_escaped(const uint8_t *p, size_t avail, struct tuple_elem *out, size_t *used)
{
	size_t end, zeros;

	if (find_terminator(p + 1, avail - 1, &end, &zeros) < 0)
		return -EINVAL;
	out->type = p[0] == CODE_BYTES ? TUPLE_TYPE_BYTES : TUPLE_TYPE_STRING;
	out->raw = p + 1;
	out->raw_len = end;
	out->len = end - zeros;
	*used = end + 2;
	return 0;
}

/* Decodes any element but null and nested from p[0..avail), avail >= 1. */
static int decode_scalar(const uint8_t *p, size_t avail, struct tuple_elem *out, size_t *used)
{
	uint8_t code = p[0];

	if (code == CODE_BYTES || code == CODE_STRING)
		return decode_escaped(p, avail, out, used);
	if (code >= CODE_NEG_MIN && code <= CODE_POS_MAX)
		return decode_int(p, avail, out, used);
	if (code == CODE_DOUBLE)
		return decode_double(p, avail, out, used);
	if (code == CODE_FALSE || code == CODE_TRUE) {
		out->type = code == CODE_TRUE ? TUPLE_TYPE_TRUE : TUPLE_TYPE_FALSE;
		*used = 1;
		return 0;
	}
	return -EINVAL;
}

/*
 * Finds the 0x00 closing a nested tuple whose body starts at p, validating
 * every element inside. Iterative (a depth counter, no recursion), so deep
 * nesting in hostile input cannot exhaust the stack.
 */
static int find_nested_end(const uint8_t *p, size_t avail, size_t *end)
{
	struct tuple_elem scratch;
	size_t i = 0, used;
	size_t depth = 1;

	while (i < avail) {
		if (p[i] == CODE_NULL && i + 1 < avail && p[i + 1] == ESCAPE) {
			i += 2;
		} else if (p[i] == CODE_NULL) {
			if (--depth == 0) {
				*end = i;
				return 0;
			}
			i++;
		} else if (p[i] == CODE_NESTED) {
			depth++;
			i++;
		} else {
			if (decode_scalar(p + i, avail - i, &scratch, &used) < 0)
				return -EINVAL;
			i += used;
		}
	}
	return -EINVAL;
}

static int decode_nested(const uint8_t *p, size_t avail, struct tuple_elem *out, size_t *used)
{
	size_t end;

	if (find_nested_end(p + 1, avail - 1, &end) < 0)
		return -EINVAL;
	out->type = TUPLE_TYPE_NESTED;
	out->raw = p + 1;
	out->raw_len = end;
	*used = end + 2;
	return 0;
}

static int decode_null(const struct tuple_reader *r, const uint8_t *p, size_t avail,
		       struct tuple_elem *out, size_t *used)
{
	if (r->nested && (avail < 2 || p[1] != ESCAPE))
		return -EINVAL;
	out->type = TUPLE_TYPE_NULL;
	*used = r->nested ? 2 : 1;
	return 0;
}

int tuple_next(struct tuple_reader *r, struct tuple_elem *out)
{
	const uint8_t *p;
	size_t avail, used = 0;
	int rc;

	if (r->pos >= r->len)
		return 0;
	p = r->buf + r->pos;
	avail = r->len - r->pos;
	memset(out, 0, sizeof(*out));
	if (p[0] == CODE_NULL) {
		rc = decode_null(r, p, avail, out, &used);
	} else if (p[0] == CODE_NESTED) {
		rc = decode_nested(p, avail, out, &used);
	} else {
		rc = decode_scalar(p, avail, out, &used);
	}
	if (rc < 0)
		return rc;
	r->pos += used;
	return 1;
}

void tuple_elem_copy(const struct tuple_elem *e, void *dst)
{
	uint8_t *d = dst;

	for (size_t i = 0; i < e->raw_len; i++) {
		*d++ = e->raw[i];
		if (e->raw[i] == 0x00)
			i++;	/* skip the 0xff escape */
	}
}
