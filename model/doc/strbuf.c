/*
 * model/doc/strbuf.c - the growable byte buffer of model_int.h.
 *
 * Owns: allocation policy of struct strbuf. The buffer is always
 * NUL-terminated once allocated so callers may print it, but it may hold
 * NUL bytes itself (JSON strings, bytes leaves): len is the truth.
 * An allocation failure sets `failed` and turns later appends into no-ops,
 * so callers check once at the end instead of after every append.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

void strbuf_init(struct strbuf *sb)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->cap = 0;
	sb->failed = false;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb);
}

/* Makes room for `extra` more bytes plus the NUL; false (and failed) if not. */
static bool strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need, cap;
	char *nbuf;

	if (sb->failed)
		return false;
	if (extra > SIZE_MAX - sb->len - 1)
		goto fail;
	need = sb->len + extra + 1;
	if (need <= sb->cap)
		return true;
	/* Doubling keeps appends amortised O(1) for huge documents. */
	cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	nbuf = realloc(sb->buf, cap);
	if (!nbuf)
		goto fail;
	sb->buf = nbuf;
	sb->cap = cap;
	return true;
fail:
	sb->failed = true;
	return false;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (!strbuf_grow(sb, len))
		return;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addc(struct strbuf *sb, char c)
{
	strbuf_add(sb, &c, 1);
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		sb->failed = true;
		return;
	}
	if (!strbuf_grow(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

/* Empties the buffer but keeps its memory for reuse (scratch buffers). */
void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

/*
 * Returns the heap buffer (caller frees with free()); never NULL unless an
 * allocation failed, so an empty buffer gives an empty string.
 */
char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *buf;

	if (!sb->buf && !sb->failed)
		strbuf_grow(sb, 0);
	if (sb->buf)
		sb->buf[sb->len] = '\0';
	buf = sb->failed ? NULL : sb->buf;
	if (len)
		*len = buf ? sb->len : 0;
	if (!buf)
		free(sb->buf);
	strbuf_init(sb);
	return buf;
}
