/*
 * model/doc/number.c - canonical text forms of leaf numbers.
 *
 * Owns: the one text form each int64 and each double has (docs/FORMAT.md,
 * "Text form of a leaf"), and the conversion of JSON number text to double.
 * "Canonical" matters because a file write keeps a number's type only when
 * the text is exactly what reading would print, so that the bytes written
 * are the bytes read back.
 *
 * Doubles: the fewest significant digits (1..17) that read back to the same
 * bits, laid out like Python's repr(): positional when the decimal exponent
 * is in [-4, 16) ("100.0", "0.0001", "1.5"), else "d.ddde+XX" ("1e+16",
 * "1e-05", "1e+300"). Positional forms always carry a '.', so text that
 * reads back as a double never looks like an integer.
 *
 * Integers outside int64 are kept as their canonical digits (big integers),
 * and a JSON number becomes a double only when the double has exactly its
 * value (number_double_is_exact): nothing is ever rounded.
 *
 * All conversions use a private "C" locale, so a host program that calls
 * setlocale() cannot turn '.' into ','.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* strtod_l, uselocale */
#endif
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

static locale_t number_c_locale;
static pthread_once_t number_locale_once = PTHREAD_ONCE_INIT;

static void number_locale_init(void)
{
	number_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* The "C" locale; (locale_t)0 only if newlocale failed (then: global). */
static locale_t number_locale(void)
{
	pthread_once(&number_locale_once, number_locale_init);
	return number_c_locale;
}

/* strtod in the C locale on a NUL-terminated string. */
static double number_strtod(const char *s, char **end)
{
	locale_t loc = number_locale();

	return loc ? strtod_l(s, end, loc) : strtod(s, end);
}

/*
 * Decimal digits and exponent of value with `prec` significant digits:
 * digits gets "d[ddd]" without trailing zeros, *exp10 the decimal exponent.
 */
static size_t number_digits(double value, int prec, char *digits, int *exp10)
{
	char tmp[48];
	locale_t loc = number_locale(), old = (locale_t)0;
	size_t n = 0;
	const char *p;

	if (loc)
		old = uselocale(loc);
	snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, fabs(value));
	if (loc)
		uselocale(old);
	for (p = tmp; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	*exp10 = atoi(p + 1);
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	return n;
}

/* Lays out digits/exponent as described at the top of the file. */
static size_t number_layout(bool neg, const char *digits, size_t nd, int e, char *buf)
{
	size_t n = 0, i;

	if (neg)
		buf[n++] = '-';
	if (e < -4 || e >= 16) {
		buf[n++] = digits[0];
		if (nd > 1) {
			buf[n++] = '.';
			memcpy(buf + n, digits + 1, nd - 1);
			n += nd - 1;
		}
		n += (size_t)sprintf(buf + n, "e%c%02d", e < 0 ? '-' : '+', abs(e));
		return n;
	}
	if (e < 0) {
		buf[n++] = '0';
		buf[n++] = '.';
		for (i = 1; i < (size_t)-e; i++)
			buf[n++] = '0';
		memcpy(buf + n, digits, nd);
		n += nd;
	} else {
		for (i = 0; i <= (size_t)e; i++)
			buf[n++] = i < nd ? digits[i] : '0';
		buf[n++] = '.';
		if (nd > (size_t)e + 1) {
			memcpy(buf + n, digits + e + 1, nd - (size_t)e - 1);
			n += nd - (size_t)e - 1;
		} else {
			buf[n++] = '0';
		}
	}
	buf[n] = '\0';
	return n;
}

/* True when `prec` significant digits read back to exactly value. */
static bool number_round_trips(double value, int prec)
{
	char digits[24], probe[NUMBER_TEXT_MAX];
	int e;
	size_t nd = number_digits(value, prec, digits, &e);
	double back;

	number_layout(signbit(value), digits, nd, e, probe);
	back = number_strtod(probe, NULL);
	return memcmp(&back, &value, sizeof(value)) == 0;
}

size_t number_format_double(double value, char buf[NUMBER_TEXT_MAX])
{
	char digits[24];
	int lo = 1, hi = 17, mid, e;
	size_t nd;

	/* Not JSON values, but a leaf may hold them: print something readable. */
	if (isnan(value))
		return (size_t)sprintf(buf, "nan");
	if (isinf(value))
		return (size_t)sprintf(buf, value < 0 ? "-inf" : "inf");
	/*
	 * 17 digits always round-trip, and if P digits do then P+1 do (they are
	 * at least as close), so a binary search finds the fewest in ~4 tries.
	 */
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (number_round_trips(value, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	nd = number_digits(value, lo, digits, &e);
	return number_layout(signbit(value), digits, nd, e, buf);
}

size_t number_format_integer(int64_t value, char buf[NUMBER_TEXT_MAX])
{
	char tmp[24];
	size_t n = 0, i = 0;
	/* Work on the magnitude as uint64 so INT64_MIN does not overflow. */
	uint64_t mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;

	do {
		tmp[n++] = (char)('0' + mag % 10);
		mag /= 10;
	} while (mag);
	if (value < 0)
		buf[i++] = '-';
	while (n)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return i;
}

/*
 * Canonical integer: "0" or -?[1-9][0-9]* within int64, never "-0". Digits
 * are accumulated exactly (no double on the way), so 2^53+1 and INT64_MIN
 * survive. This is also exactly JSON's integer grammar minus "-0" and
 * overflow, which is why the JSON reader uses it.
 */
bool number_parse_integer(const char *text, size_t len, int64_t *out)
{
	bool neg = false;
	uint64_t mag = 0, limit;
	size_t i = 0;

	if (len && text[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == len || text[i] < '0' || text[i] > '9')
		return false;
	if (text[i] == '0' && (len - i > 1 || neg))
		return false;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		unsigned d = (unsigned char)text[i] - '0';

		if (d > 9 || mag > (limit - d) / 10)
			return false;
		mag = mag * 10 + d;
	}
	if (out)
		*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return true;
}

bool number_parse_double(const char *text, size_t len, double *out)
{
	char tmp[NUMBER_TEXT_MAX], canon[NUMBER_TEXT_MAX];
	char *end;
	double v;

	if (len == 0 || len >= NUMBER_TEXT_MAX || memchr(text, '\0', len))
		return false;
	memcpy(tmp, text, len);
	tmp[len] = '\0';
	v = number_strtod(tmp, &end);
	if (end != tmp + len || !isfinite(v))
		return false;
	/* Canonical means: formatting the value gives the text back. */
	if (number_format_double(v, canon) != len || memcmp(canon, text, len) != 0)
		return false;
	if (out)
		*out = v;
	return true;
}

/*
 * Any number text already checked against the JSON grammar -> the nearest
 * double. False when it overflows (JSON has no infinity); underflow gives
 * the nearest subnormal or zero, which number_double_is_exact then refuses
 * unless it is the value written. scratch holds the NUL-terminated copy
 * strtod needs.
 */
bool number_read_double(const char *text, size_t len, struct strbuf *scratch, double *out)
{
	double v;

	strbuf_reset(scratch);
	strbuf_add(scratch, text, len);
	if (scratch->failed)
		return false;
	v = number_strtod(scratch->buf, NULL);
	if (!isfinite(v))
		return false;
	*out = v;
	return true;
}

bool number_is_big_integer(const char *text, size_t len)
{
	size_t i = len && text[0] == '-' ? 1 : 0;

	if (i == len || text[i] < '1' || text[i] > '9')
		return false;	/* also "0" and "-0": they fit */
	for (; i < len; i++)
		if (text[i] < '0' || text[i] > '9')
			return false;
	return !number_parse_integer(text, len, NULL);
}

/* A number's value as significant digits D (no leading or trailing zeros) times 10^exp. */
struct number_decimal {
	bool neg;
	const char *digits;	/* borrowed from the scratch buffer given */
	size_t len;		/* 0: the value is zero */
	int64_t exp;
};

#define NUMBER_EXP_CLAMP ((int64_t)1 << 60)

/* Any text of JSON number grammar (also with `e+XX`), into d; digits go to sb. */
static void number_decimal_read(const char *text, size_t len, struct strbuf *sb,
				struct number_decimal *d)
{
	size_t i = 0, start;
	int64_t e = 0, frac = 0;
	bool eneg = false;

	strbuf_reset(sb);
	d->neg = len && text[0] == '-';
	i = d->neg ? 1 : 0;
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
		strbuf_addc(sb, text[i]);
	if (i < len && text[i] == '.')
		for (i++; i < len && text[i] >= '0' && text[i] <= '9'; i++, frac++)
			strbuf_addc(sb, text[i]);
	if (i < len && (text[i] == 'e' || text[i] == 'E')) {
		i++;
		if (i < len && (text[i] == '+' || text[i] == '-'))
			eneg = text[i++] == '-';
		/* Stops growing past the clamp (beyond any double either way), and
		 * before e * 10 could overflow int64. */
		for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
			if (e < NUMBER_EXP_CLAMP / 10)
				e = e * 10 + (text[i] - '0');
	}
	d->exp = (eneg ? -e : e) - frac;
	for (start = 0; start < sb->len && sb->buf[start] == '0'; start++)
		;
	d->digits = sb->buf ? sb->buf + start : "";
	d->len = sb->len - start;
	while (d->len && d->digits[d->len - 1] == '0') {
		d->len--;
		d->exp++;
	}
}

bool number_double_is_exact(double value, const char *text, size_t len, struct strbuf *scratch)
{
	char buf[NUMBER_TEXT_MAX];
	struct strbuf mine;
	struct number_decimal a, b;
	bool same;

	if (!isfinite(value))
		return false;
	number_decimal_read(text, len, scratch, &b);
	/*
	 * Fast path: distinct decimals of at most 15 significant digits (DBL_DIG)
	 * in the normal range never share a double, so the shortest text of the
	 * nearest double is the number written.
	 */
	if (!scratch->failed && b.len <= 15 &&
	    (b.len == 0 || (b.exp + (int64_t)b.len > -300 && b.exp + (int64_t)b.len < 300)))
		return true;
	strbuf_init(&mine);
	number_decimal_read(buf, number_format_double(value, buf), &mine, &a);
	same = !mine.failed && !scratch->failed && a.neg == b.neg && a.len == b.len &&
	       (a.len == 0 || (a.exp == b.exp && !memcmp(a.digits, b.digits, a.len)));
	strbuf_release(&mine);
	return same;
}
