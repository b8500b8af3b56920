/*
 * model/doc/json.c - the strict JSON reader and the JSON writer of model_int.h.
 *
 * Owns: what kvfs accepts as JSON (RFC 8259, nothing more: no comments, no
 * trailing commas, no NaN, no single quotes, no invalid UTF-8, no lone
 * surrogates) and how it prints JSON. We do not use cJSON because it keeps
 * numbers as doubles (int64 above 2^53 would change) and strings
 * NUL-terminated ("\u0000" would truncate); here integers are parsed
 * digit by digit and strings carry a length.
 *
 * The reader is a loop over an explicit stack of open containers, so nesting
 * costs one byte per level of heap, never C stack, and the limit is checked
 * before each push. Every byte is looked at a bounded number of times, so
 * huge inputs parse in linear time. Strings without escapes are handed to
 * the callback straight from the input; escaped ones are unescaped into a
 * scratch buffer that is reused for the whole parse.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

#define JSON_PROGRESS_STEP ((size_t)1 << 20)
#define JSON_RS 0x1e
#define JSON_FLUSH_SIZE ((size_t)64 << 10)

enum json_state {
	ST_VALUE,		/* a value must come */
	ST_VALUE_OR_CLOSE,	/* just after '[' */
	ST_KEY,			/* after ',' in an object */
	ST_KEY_OR_CLOSE,	/* just after '{' */
	ST_AFTER,		/* a value ended: ',', a close, or the end */
};

struct json_parser {
	const char *start, *p, *end;
	int max_depth;
	struct strbuf stack;	/* '{' or '[' per open container */
	struct strbuf scratch;	/* unescaped strings, number text */
	json_token_fn fn;
	void *arg;
	model_progress_fn progress;
	void *progress_arg;
	size_t next_progress;
	struct model_error *err;
};

/* ---- errors ---- */

/* Writes "line L, column C: what" for position `at`; returns -EINVAL. */
static int json_fail(struct json_parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int json_fail(struct json_parser *ps, const char *at, const char *fmt, ...)
{
	const char *line_start = ps->start, *q;
	size_t line = 1, column = 1;
	char what[256];
	va_list ap;

	/* Only computed on failure, so the happy path never counts lines. */
	for (q = ps->start; (q = memchr(q, '\n', (size_t)(at - q))) != NULL; q++) {
		line++;
		line_start = q + 1;
	}
	for (q = line_start; q < at; q++)	/* columns count characters */
		if (((unsigned char)*q & 0xc0) != 0x80)
			column++;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ps->err)
		snprintf(ps->err->msg, sizeof(ps->err->msg), "line %zu, column %zu: %s",
			 line, column, what);
	return -EINVAL;
}

static int json_emit(struct json_parser *ps, struct json_token *tok, enum json_event ev)
{
	tok->event = ev;
	tok->depth = (int)ps->stack.len;
	return ps->fn(ps->arg, tok);
}

static int json_emit_simple(struct json_parser *ps, enum json_event ev)
{
	struct json_token tok = { 0 };

	return json_emit(ps, &tok, ev);
}

static void json_skip_ws(struct json_parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' ||
				   *ps->p == '\r'))
		ps->p++;
}

/* ---- strings ---- */

static int json_hex4(const char *p, const char *end)
{
	int v = 0, i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static void json_put_utf8(struct strbuf *sb, unsigned cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	strbuf_add(sb, b, n);
}

/* \uXXXX at ps->p (the backslash), with its low surrogate if it needs one. */
static int json_unicode_escape(struct json_parser *ps)
{
	const char *at = ps->p;
	int hi = json_hex4(at + 2, ps->end), lo;

	if (hi < 0)
		return json_fail(ps, at, "expected four hex digits after \\u");
	ps->p += 6;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return json_fail(ps, at, "lone low surrogate \\u%04X", (unsigned)hi);
	if (hi < 0xd800 || hi > 0xdbff) {
		json_put_utf8(&ps->scratch, (unsigned)hi);
		return 0;
	}
	if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
		return json_fail(ps, at, "lone high surrogate \\u%04X", (unsigned)hi);
	lo = json_hex4(ps->p + 2, ps->end);
	if (lo < 0xdc00 || lo > 0xdfff)
		return json_fail(ps, at, "high surrogate \\u%04X not followed by a low one",
				 (unsigned)hi);
	ps->p += 6;
	json_put_utf8(&ps->scratch, 0x10000 + (((unsigned)hi - 0xd800) << 10) +
		      ((unsigned)lo - 0xdc00));
	return 0;
}

/* One escape at ps->p (the backslash), appended unescaped to scratch. */
static int json_escape(struct json_parser *ps)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *hit;

	if (ps->end - ps->p < 2)
		return json_fail(ps, ps->p, "unterminated string");
	if (ps->p[1] == 'u')
		return json_unicode_escape(ps);
	hit = ps->p[1] ? strchr(from, ps->p[1]) : NULL;
	if (!hit)
		return json_fail(ps, ps->p, "invalid escape '\\%c' in string",
				 ps->p[1] > 0x20 && ps->p[1] < 0x7f ? ps->p[1] : '?');
	strbuf_addc(&ps->scratch, to[hit - from]);
	ps->p += 2;
	return 0;
}

/* Raw bytes [from, to) of a string: must be valid UTF-8 (quote at `open`). */
static int json_raw_run(struct json_parser *ps, const char *from, const char *to, bool copy)
{
	if (!utf8_is_valid(from, (size_t)(to - from)))
		return json_fail(ps, from, "invalid UTF-8 in string");
	if (copy)
		strbuf_add(&ps->scratch, from, (size_t)(to - from));
	return 0;
}

/*
 * The string whose opening quote is at ps->p. *str borrows from the input
 * when there was no escape, else from scratch; valid until the next string.
 */
static int json_string(struct json_parser *ps, const char **str, size_t *len)
{
	const char *open = ps->p, *run;
	bool escaped = false;
	int ret;

	run = ++ps->p;
	strbuf_reset(&ps->scratch);
	for (;;) {
		unsigned char c;

		if (ps->p >= ps->end)
			return json_fail(ps, open, "unterminated string");
		c = (unsigned char)*ps->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return json_fail(ps, ps->p, "control character 0x%02x in string "
					 "(must be escaped)", c);
		if (c != '\\') {
			ps->p++;
			continue;
		}
		ret = json_raw_run(ps, run, ps->p, true);
		if (!ret)
			ret = json_escape(ps);
		if (ret)
			return ret;
		escaped = true;
		run = ps->p;
	}
	ret = json_raw_run(ps, run, ps->p, escaped);
	if (ret)
		return ret;
	if (ps->scratch.failed)
		return -ENOMEM;
	*str = escaped ? ps->scratch.buf : run;
	*len = escaped ? ps->scratch.len : (size_t)(ps->p - run);
	if (escaped && !*str)
		*str = "";
	ps->p++;		/* the closing quote */
	return 0;
}

/* ---- numbers and literals ---- */

static bool json_is_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* A number or literal must not run into letters, digits or signs. */
static bool json_is_glued(const char *p, const char *end)
{
	char c;

	if (p >= end)
		return false;
	c = *p;
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c == '.' || c == '+' || c == '-';
}

/* Scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; *is_int if no frac/exp. */
static int json_scan_number(struct json_parser *ps, bool *is_int)
{
	const char *p = ps->p, *end = ps->end;

	*is_int = true;
	if (*p == '-')
		p++;
	if (!json_is_digit(p, end))
		return json_fail(ps, p, "expected a digit in number");
	if (*p == '0' && json_is_digit(p + 1, end))
		return json_fail(ps, p, "leading zeros are not allowed in numbers");
	while (json_is_digit(p, end))
		p++;
	if (p < end && *p == '.') {
		*is_int = false;
		if (!json_is_digit(++p, end))
			return json_fail(ps, p, "expected a digit after '.' in number");
		while (json_is_digit(p, end))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		*is_int = false;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (!json_is_digit(p, end))
			return json_fail(ps, p, "expected a digit in the exponent of number");
		while (json_is_digit(p, end))
			p++;
	}
	if (json_is_glued(p, end))
		return json_fail(ps, p, "invalid character after number");
	ps->p = p;
	return 0;
}

/*
 * Every number is kept exactly or refused, never rounded: integers of any
 * length stay integers (int64, or their digits), other numbers (and "-0")
 * become doubles only when the double has the same decimal value.
 */
static int json_number(struct json_parser *ps)
{
	struct json_token tok = { 0 };
	const char *at = ps->p;
	size_t len;
	bool is_int;
	int ret = json_scan_number(ps, &is_int);

	if (ret)
		return ret;
	len = (size_t)(ps->p - at);
	tok.str = at;	/* every number's own text, without what surrounds it */
	tok.len = len;
	if (is_int && number_parse_integer(at, len, &tok.integer))
		return json_emit(ps, &tok, JSON_INTEGER);
	if (is_int && number_is_big_integer(at, len))
		return json_emit(ps, &tok, JSON_BIG_INTEGER);
	if (!number_read_double(at, len, &ps->scratch, &tok.real) ||
	    !number_double_is_exact(tok.real, at, len, &ps->scratch))
		return ps->scratch.failed ? -ENOMEM :
			json_fail(ps, at, "number cannot be kept exactly: %.*s%s",
				  len > 40 ? 40 : (int)len, at, len > 40 ? "..." : "");
	return json_emit(ps, &tok, JSON_DOUBLE);
}

static int json_literal(struct json_parser *ps)
{
	static const struct { const char *text; enum json_event ev; } lit[] = {
		{ "true", JSON_TRUE }, { "false", JSON_FALSE }, { "null", JSON_NULL },
	};
	size_t i, n;

	for (i = 0; i < sizeof(lit) / sizeof(lit[0]); i++) {
		n = strlen(lit[i].text);
		if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, lit[i].text, n) &&
		    !json_is_glued(ps->p + n, ps->end)) {
			ps->p += n;
			return json_emit_simple(ps, lit[i].ev);
		}
	}
	return json_fail(ps, ps->p, "expected a value (invalid literal)");
}

/* ---- containers ---- */

static int json_open(struct json_parser *ps, char kind, enum json_state *st)
{
	int ret;

	if (ps->stack.len >= (size_t)(ps->max_depth > 0 ? ps->max_depth : 0))
		return json_fail(ps, ps->p, "nesting deeper than %d", ps->max_depth);
	ret = json_emit_simple(ps, kind == '{' ? JSON_OBJECT_BEGIN : JSON_ARRAY_BEGIN);
	strbuf_addc(&ps->stack, kind);
	if (ps->stack.failed)
		return -ENOMEM;
	ps->p++;
	*st = kind == '{' ? ST_KEY_OR_CLOSE : ST_VALUE_OR_CLOSE;
	return ret;
}

static int json_close(struct json_parser *ps, enum json_state *st)
{
	char kind = ps->stack.buf[--ps->stack.len];

	ps->p++;
	*st = ST_AFTER;
	return json_emit_simple(ps, kind == '{' ? JSON_OBJECT_END : JSON_ARRAY_END);
}

static char json_top(const struct json_parser *ps)
{
	return ps->stack.len ? ps->stack.buf[ps->stack.len - 1] : 0;
}

/* A value starts at ps->p (whitespace skipped). */
static int json_value(struct json_parser *ps, enum json_state *st)
{
	struct json_token tok = { 0 };
	char c;
	int ret;

	if (ps->p >= ps->end)
		return json_fail(ps, ps->p, "unexpected end of input, expected a value");
	c = *ps->p;
	if (c == '{' || c == '[')
		return json_open(ps, c, st);
	*st = ST_AFTER;
	if (c == '"') {
		ret = json_string(ps, &tok.str, &tok.len);
		return ret ? ret : json_emit(ps, &tok, JSON_STRING);
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return json_number(ps);
	if (c >= 'a' && c <= 'z')
		return json_literal(ps);
	if (c == ']' && json_top(ps) == '[')
		return json_fail(ps, ps->p, "trailing comma before ']'");
	if (c == '\'')
		return json_fail(ps, ps->p, "expected a value (strings take double quotes)");
	return json_fail(ps, ps->p, "expected a value");
}

/* An object member name at ps->p, then ':'. */
static int json_key(struct json_parser *ps)
{
	struct json_token tok = { 0 };
	int ret;

	if (ps->p < ps->end && *ps->p == '}')
		return json_fail(ps, ps->p, "trailing comma before '}'");
	if (ps->p >= ps->end || *ps->p != '"')
		return json_fail(ps, ps->p, "expected a string as object key");
	ret = json_string(ps, &tok.str, &tok.len);
	if (!ret)
		ret = json_emit(ps, &tok, JSON_KEY);
	if (ret)
		return ret;
	json_skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != ':')
		return json_fail(ps, ps->p, "expected ':' after object key");
	ps->p++;
	return 0;
}

/* After a value inside a container: ',' or the matching close. */
static int json_after(struct json_parser *ps, enum json_state *st)
{
	char top = json_top(ps), close = top == '{' ? '}' : ']';

	if (ps->p < ps->end && *ps->p == ',') {
		ps->p++;
		*st = top == '{' ? ST_KEY : ST_VALUE;
		return 0;
	}
	if (ps->p < ps->end && *ps->p == close)
		return json_close(ps, st);
	return json_fail(ps, ps->p, top == '{' ? "expected ',' or '}' after object member" :
			 "expected ',' or ']' after array element");
}

static void json_report(struct json_parser *ps)
{
	size_t done = (size_t)(ps->p - ps->start);

	if (ps->progress && done >= ps->next_progress) {
		ps->progress(ps->progress_arg, done, (uint64_t)(ps->end - ps->start));
		ps->next_progress = done + JSON_PROGRESS_STEP;
	}
}

/* One whole top-level value, iteratively. */
static int json_document(struct json_parser *ps)
{
	enum json_state st = ST_VALUE;
	int ret;

	for (;;) {
		json_skip_ws(ps);
		if (st == ST_AFTER && ps->stack.len == 0)
			return 0;
		if (st == ST_KEY_OR_CLOSE && ps->p < ps->end && *ps->p == '}')
			ret = json_close(ps, &st);
		else if (st == ST_VALUE_OR_CLOSE && ps->p < ps->end && *ps->p == ']')
			ret = json_close(ps, &st);
		else if (st == ST_KEY || st == ST_KEY_OR_CLOSE) {
			ret = json_key(ps);
			st = ST_VALUE;
		} else if (st == ST_AFTER)
			ret = json_after(ps, &st);
		else
			ret = json_value(ps, &st);
		if (ret)
			return ret;
		json_report(ps);
	}
}

/* Between top-level values: whitespace, and RS too in sequence mode. */
static void json_skip_top(struct json_parser *ps, unsigned flags)
{
	for (;;) {
		json_skip_ws(ps);
		if (!(flags & JSON_PARSE_SEQUENCE) || ps->p >= ps->end || *ps->p != JSON_RS)
			return;
		ps->p++;
	}
}

static int json_values(struct json_parser *ps, unsigned flags)
{
	size_t count = 0;
	int ret;

	for (;;) {
		json_skip_top(ps, flags);
		if (ps->p >= ps->end)
			break;
		if (count && !(flags & JSON_PARSE_SEQUENCE))
			return json_fail(ps, ps->p, "unexpected data after the JSON value");
		ret = json_document(ps);
		if (!ret)
			ret = json_emit_simple(ps, JSON_VALUE_END);
		if (ret)
			return ret;
		count++;
	}
	if (!count && !(flags & JSON_PARSE_SEQUENCE))
		return json_fail(ps, ps->p, "empty input, expected a JSON value");
	return 0;
}

int json_parse(const char *text, size_t len, unsigned flags, int max_depth,
	       json_token_fn fn, void *arg, model_progress_fn progress, void *progress_arg,
	       struct model_error *err)
{
	struct json_parser ps = {
		.start = text, .p = text, .end = text + len, .max_depth = max_depth,
		.fn = fn, .arg = arg, .progress = progress, .progress_arg = progress_arg,
		.next_progress = JSON_PROGRESS_STEP, .err = err,
	};
	int ret;

	if (!text)
		ps.start = ps.p = ps.end = "";
	/* RFC 8259 section 8.1: a parser may ignore a leading byte order mark. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		ps.start = ps.p = text + 3;
	strbuf_init(&ps.stack);
	strbuf_init(&ps.scratch);
	ret = json_values(&ps, flags);
	if (!ret && progress)
		progress(progress_arg, len, len);
	if (ret == -ENOMEM && err)
		snprintf(err->msg, sizeof(err->msg), "out of memory while parsing JSON");
	strbuf_release(&ps.scratch);
	strbuf_release(&ps.stack);
	return ret;
}

/* ---- writer ---- */

void json_writer_init(struct json_writer *w, struct strbuf *out, FILE *flush_to, bool pretty)
{
	w->out = out;
	w->flush_to = flush_to;
	w->pretty = pretty;
	w->depth = 0;
	w->first = true;
	w->after_key = false;
}

/* Hands the buffer to the FILE once it is big enough to be worth a write. */
static void json_maybe_flush(struct json_writer *w)
{
	if (!w->flush_to || w->out->len < JSON_FLUSH_SIZE)
		return;
	if (fwrite(w->out->buf, 1, w->out->len, w->flush_to) != w->out->len)
		w->out->failed = true;	/* remembered; finish reports it */
	strbuf_reset(w->out);
}

static void json_newline_indent(struct json_writer *w, int depth)
{
	int i;

	strbuf_addc(w->out, '\n');
	for (i = 0; i < depth; i++)
		strbuf_add(w->out, "  ", 2);
}

/* What goes before a value or key: separator, newline and indent. */
static void json_prefix(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first && w->depth == 0)
		strbuf_addc(w->out, '\n');	/* several top-level values */
	else if (!w->first)
		strbuf_addc(w->out, ',');
	if (w->pretty && w->depth > 0)
		json_newline_indent(w, w->depth);
	w->first = false;
}

static void json_begin(struct json_writer *w, char open)
{
	json_prefix(w);
	strbuf_addc(w->out, open);
	w->depth++;
	w->first = true;
}

static void json_end(struct json_writer *w, char close)
{
	w->depth--;
	if (w->pretty && !w->first)
		json_newline_indent(w, w->depth);
	strbuf_addc(w->out, close);
	w->first = false;
	json_maybe_flush(w);
}

void json_write_object_begin(struct json_writer *w)
{
	json_begin(w, '{');
}

void json_write_object_end(struct json_writer *w)
{
	json_end(w, '}');
}

void json_write_array_begin(struct json_writer *w)
{
	json_begin(w, '[');
}

void json_write_array_end(struct json_writer *w)
{
	json_end(w, ']');
}

/* Quotes and escapes; bytes >= 0x20 other than '"' and '\\' pass verbatim. */
static void json_put_string(struct strbuf *sb, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	strbuf_addc(sb, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 0, '0', '0', 0, 0 };
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		strbuf_add(sb, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		strbuf_add(sb, esc, n);
	}
	strbuf_add(sb, s + run, len - run);
	strbuf_addc(sb, '"');
}

void json_write_key(struct json_writer *w, const char *str, size_t len)
{
	json_prefix(w);
	json_put_string(w->out, str, len);
	if (w->pretty)
		strbuf_add(w->out, ": ", 2);
	else
		strbuf_addc(w->out, ':');
	w->after_key = true;
}

void json_write_string(struct json_writer *w, const char *str, size_t len)
{
	json_prefix(w);
	json_put_string(w->out, str, len);
	json_maybe_flush(w);
}

void json_write_integer(struct json_writer *w, int64_t value)
{
	char buf[NUMBER_TEXT_MAX];

	json_prefix(w);
	strbuf_add(w->out, buf, number_format_integer(value, buf));
	json_maybe_flush(w);
}

void json_write_number_text(struct json_writer *w, const char *text, size_t len)
{
	json_prefix(w);
	strbuf_add(w->out, text, len);
	json_maybe_flush(w);
}

/* NaN and infinities have no JSON form: they are written as null. */
void json_write_double(struct json_writer *w, double value)
{
	char buf[NUMBER_TEXT_MAX];

	json_prefix(w);
	if (value != value || value - value != 0)
		strbuf_add(w->out, "null", 4);
	else
		strbuf_add(w->out, buf, number_format_double(value, buf));
	json_maybe_flush(w);
}

void json_write_bool(struct json_writer *w, bool value)
{
	json_prefix(w);
	if (value)
		strbuf_add(w->out, "true", 4);
	else
		strbuf_add(w->out, "false", 5);
}

void json_write_null(struct json_writer *w)
{
	json_prefix(w);
	strbuf_add(w->out, "null", 4);
}

int json_writer_finish(struct json_writer *w)
{
	if (w->pretty && !w->first)
		strbuf_addc(w->out, '\n');
	if (w->out->failed)
		return w->flush_to && ferror(w->flush_to) ? -EIO : -ENOMEM;
	if (!w->flush_to)
		return 0;
	if (w->out->len && fwrite(w->out->buf, 1, w->out->len, w->flush_to) != w->out->len)
		return -EIO;
	strbuf_reset(w->out);
	return fflush(w->flush_to) || ferror(w->flush_to) ? -EIO : 0;
}
