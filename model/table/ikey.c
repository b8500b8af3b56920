/*
 * model/table/ikey.c - the encoding of indexed values inside index keys
 * (docs/FORMAT.md, "Index values"): byte order equals value order, numbers
 * compared exactly as decimals whatever their leaf type, strings in byte
 * order. Owns encode, skip and decode-to-text.
 */
#include <errno.h>
#include <string.h>

#include "model/table/table_int.h"

void ikey_put_string(struct strbuf *sb, enum ikey_code code, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t run = 0;

	strbuf_addc(sb, (char)code);
	for (size_t i = 0; i < len; i++) {
		if (p[i] != 0)
			continue;
		strbuf_add(sb, p + run, i + 1 - run);
		strbuf_addc(sb, (char)0xff);	/* the NUL is data, not the end */
		run = i + 1;
	}
	strbuf_add(sb, p + run, len - run);
	strbuf_addc(sb, 0);
}

/* A number as sign, significant digits d1d2... and E: value = 0.d1d2... * 10^E. */
struct decimal {
	bool neg;
	size_t nd;
	char dig[IKEY_DIGITS_MAX];
	long exp;
};

static int decimal_parse(const char *t, size_t n, struct decimal *d)
{
	size_t i = 0;
	long point = 0, e = 0;
	bool seen_point = false, any = false, eneg = false;

	memset(d, 0, offsetof(struct decimal, dig));
	if (i < n && t[i] == '-')
		d->neg = true, i++;
	for (; i < n && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.'); i++) {
		if (t[i] == '.') {
			if (seen_point)
				return -EINVAL;
			seen_point = true;
			continue;
		}
		any = true;
		if (d->nd == 0 && t[i] == '0') {	/* a leading zero moves the point only */
			if (seen_point)
				point--;
			continue;
		}
		if (d->nd >= IKEY_DIGITS_MAX)
			return -ERANGE;
		d->dig[d->nd++] = (char)(t[i] - '0');
		if (!seen_point)
			point++;
	}
	if (!any)
		return -EINVAL;
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			eneg = t[i++] == '-';
		if (i >= n)
			return -EINVAL;
		for (; i < n && t[i] >= '0' && t[i] <= '9'; i++) {
			e = e * 10 + (t[i] - '0');
			if (e > 20000)
				return -ERANGE;
		}
	}
	if (i != n)
		return -EINVAL;
	while (d->nd > 0 && d->dig[d->nd - 1] == 0)
		d->nd--;
	d->exp = point + (eneg ? -e : e);
	if (d->nd && (d->exp > 30000 || d->exp < -30000))
		return -ERANGE;
	return 0;
}

int ikey_put_number_text(struct strbuf *sb, const char *text, size_t len)
{
	struct decimal d;
	uint8_t flip;
	unsigned be;
	int ret = decimal_parse(text, len, &d);

	if (ret < 0)
		return ret;
	if (d.nd == 0) {
		strbuf_addc(sb, IKEY_NUM_ZERO);	/* -0, 0.0 and 0 are one value */
		return 0;
	}
	/* A negative number is its magnitude's bytes inverted: larger magnitudes
	 * sort first, and a shorter digit string (0xff end) after a longer one. */
	flip = d.neg ? 0xff : 0x00;
	be = (unsigned)(d.exp + IKEY_EXP_BIAS);
	strbuf_addc(sb, d.neg ? IKEY_NUM_NEG : IKEY_NUM_POS);
	strbuf_addc(sb, (char)(((be >> 8) & 0xff) ^ flip));
	strbuf_addc(sb, (char)((be & 0xff) ^ flip));
	for (size_t i = 0; i < d.nd; i++)
		strbuf_addc(sb, (char)((d.dig[i] + 1) ^ flip));
	strbuf_addc(sb, (char)flip);
	return 0;
}

int ikey_put_leaf(struct strbuf *sb, const struct leaf *leaf)
{
	char buf[NUMBER_TEXT_MAX];
	size_t n;

	switch (leaf->tag) {
	case LEAF_STRING:
		ikey_put_string(sb, IKEY_STRING, leaf->payload, leaf->payload_len);
		return 0;
	case LEAF_BYTES:
		ikey_put_string(sb, IKEY_BYTES, leaf->payload, leaf->payload_len);
		return 0;
	case LEAF_INTEGER:
		n = number_format_integer(leaf->integer, buf);
		return ikey_put_number_text(sb, buf, n);
	case LEAF_DOUBLE:
		/* The decimal kvfs shows for the double is its value (docs/FORMAT.md). */
		n = number_format_double(leaf->real, buf);
		return ikey_put_number_text(sb, buf, n);
	case LEAF_BIG_INTEGER:
		return ikey_put_number_text(sb, (const char *)leaf->payload, leaf->payload_len);
	case LEAF_TRUE:
		strbuf_addc(sb, IKEY_TRUE);
		return 0;
	case LEAF_FALSE:
		strbuf_addc(sb, IKEY_FALSE);
		return 0;
	case LEAF_NULL:
		strbuf_addc(sb, IKEY_NULL);
		return 0;
	default:
		return 1;
	}
}

/* The end of an escaped string body starting at pos: the offset of its 0x00. */
static int string_end(const uint8_t *k, size_t len, size_t pos, size_t *end)
{
	while (pos < len) {
		if (k[pos] == 0) {
			if (pos + 1 < len && k[pos + 1] == 0xff) {
				pos += 2;
				continue;
			}
			*end = pos;
			return 0;
		}
		pos++;
	}
	return -EINVAL;
}

int ikey_skip(const uint8_t *k, size_t len, size_t *pos)
{
	size_t p = *pos, end;
	uint8_t stop;

	if (p >= len)
		return -EINVAL;
	switch (k[p]) {
	case IKEY_NULL:
	case IKEY_FALSE:
	case IKEY_TRUE:
	case IKEY_NUM_ZERO:
		*pos = p + 1;
		return 0;
	case IKEY_NUM_NEG:
	case IKEY_NUM_POS:
		stop = k[p] == IKEY_NUM_NEG ? 0xff : 0x00;
		for (p += 3; p < len && k[p] != stop; p++)
			;
		if (p >= len)
			return -EINVAL;
		*pos = p + 1;
		return 0;
	case IKEY_STRING:
	case IKEY_BYTES:
		if (string_end(k, len, p + 1, &end) < 0)
			return -EINVAL;
		*pos = end + 1;
		return 0;
	default:
		return -EINVAL;
	}
}

static void number_to_text(const uint8_t *k, size_t start, size_t end, struct strbuf *out)
{
	uint8_t flip = k[start] == IKEY_NUM_NEG ? 0xff : 0x00;
	long e = (long)((((unsigned)(k[start + 1] ^ flip)) << 8) | (k[start + 2] ^ flip)) -
		 IKEY_EXP_BIAS;
	size_t nd = end - (start + 3);
	const uint8_t *d = k + start + 3;

	if (flip)
		strbuf_addc(out, '-');
	if (e >= (long)nd && e <= 21) {		/* an integer */
		for (size_t i = 0; i < nd; i++)
			strbuf_addc(out, (char)('0' + ((d[i] ^ flip) - 1)));
		for (long i = (long)nd; i < e; i++)
			strbuf_addc(out, '0');
	} else if (e > 0 && e < (long)nd) {
		for (size_t i = 0; i < nd; i++) {
			if ((long)i == e)
				strbuf_addc(out, '.');
			strbuf_addc(out, (char)('0' + ((d[i] ^ flip) - 1)));
		}
	} else {				/* d.ddde(E-1) */
		for (size_t i = 0; i < nd; i++) {
			strbuf_addc(out, (char)('0' + ((d[i] ^ flip) - 1)));
			if (i == 0 && nd > 1)
				strbuf_addc(out, '.');
		}
		strbuf_addf(out, "e%ld", e - 1);
	}
}

int ikey_to_text(const uint8_t *k, size_t len, size_t *pos, struct strbuf *out)
{
	size_t start = *pos;
	struct json_writer w;
	struct strbuf raw;
	int ret = ikey_skip(k, len, pos);

	if (ret < 0)
		return ret;
	switch (k[start]) {
	case IKEY_NULL:
		strbuf_add(out, "null", 4);
		return 0;
	case IKEY_FALSE:
		strbuf_add(out, "false", 5);
		return 0;
	case IKEY_TRUE:
		strbuf_add(out, "true", 4);
		return 0;
	case IKEY_NUM_ZERO:
		strbuf_addc(out, '0');
		return 0;
	case IKEY_NUM_NEG:
	case IKEY_NUM_POS:
		number_to_text(k, start, *pos - 1, out);
		return 0;
	default:
		break;
	}
	strbuf_init(&raw);	/* unescape, then write as a JSON string */
	for (size_t i = start + 1; i < *pos - 1; i++) {
		strbuf_addc(&raw, (char)k[i]);
		if (k[i] == 0)
			i++;
	}
	json_writer_init(&w, out, NULL, false);
	json_write_string(&w, raw.buf ? raw.buf : "", raw.len);
	strbuf_release(&raw);
	return out->failed ? -ENOMEM : 0;
}
