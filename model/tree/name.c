/*
 * model/tree/name.c - object keys as file names and back (docs/FORMAT.md,
 * "Names"): %-escaping, the length rule, array indices, the `.json` view
 * and `@` index names, and a tuple key printed as a path; and the names of
 * leaf types and node kinds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

/* The one place that says what a view name is (docs/FORMAT.md, "Views"). */
#define VIEW_SUFFIX ".json"
#define VIEW_SUFFIX_LEN (sizeof(VIEW_SUFFIX) - 1)

bool model_name_is_view(const char *name, size_t len)
{
	return len >= VIEW_SUFFIX_LEN &&
	       memcmp(name + len - VIEW_SUFFIX_LEN, VIEW_SUFFIX, VIEW_SUFFIX_LEN) == 0;
}

size_t model_name_view_base(const char *name, size_t len)
{
	return model_name_is_view(name, len) ? len - VIEW_SUFFIX_LEN : len;
}

bool model_name_is_index(const char *name, size_t len)
{
	int64_t index;

	return tree_name_index(name, len, &index);
}

static bool name_needs_escape(const uint8_t *k, size_t len)
{
	if (len == 0 || k[0] == '%')
		return true;
	if ((len == 1 && k[0] == '.') || (len == 2 && k[0] == '.' && k[1] == '.'))
		return true;
	if (model_name_is_view((const char *)k, len))
		return true;
	return memchr(k, '/', len) || memchr(k, '\0', len);
}

size_t tree_name_escape(const void *key, size_t len, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const uint8_t *k = key;
	size_t n = 0;

	if (!name_needs_escape(k, len)) {
		memcpy(out, k, len);
		out[len] = '\0';
		return len;
	}
	out[n++] = '%';
	for (size_t i = 0; i < len; i++) {
		if (k[i] == '%' || k[i] == '/' || k[i] == '\0' || k[i] == '.') {
			out[n++] = '%';
			out[n++] = hex[k[i] >> 4];
			out[n++] = hex[k[i] & 15];
		} else {
			out[n++] = (char)k[i];
		}
	}
	out[n] = '\0';
	return n;
}

size_t tree_name_escaped_len(const void *key, size_t len)
{
	const uint8_t *k = key;
	size_t n = len + 1;

	if (!name_needs_escape(k, len))
		return len;
	for (size_t i = 0; i < len; i++)
		if (k[i] == '%' || k[i] == '/' || k[i] == '\0' || k[i] == '.')
			n += 2;
	return n;
}

bool tree_name_too_long(const uint8_t *key, size_t start, size_t len)
{
	char raw[STORE_KEY_MAX];
	struct tuple_reader r;
	struct tuple_elem e;

	tuple_reader_init(&r, key + start, len - start);
	if (tuple_next(&r, &e) != 1 || e.type != TUPLE_TYPE_STRING || e.len > sizeof(raw))
		return false;
	tuple_elem_copy(&e, raw);
	return tree_name_escaped_len(raw, e.len) > TREE_FILE_NAME_MAX;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes "%..." and accepts it only when encoding gives the name back. */
static ssize_t name_decode(const char *name, size_t len, char *dst, size_t cap)
{
	char check[TREE_NAME_MAX];
	size_t n = 0;

	for (size_t i = 1; i < len; i++) {
		if (n >= cap)
			return -1;
		if (name[i] != '%') {
			dst[n++] = name[i];
			continue;
		}
		if (i + 2 >= len)
			return -1;
		int hi = hex_digit(name[i + 1]), lo = hex_digit(name[i + 2]);
		if (hi < 0 || lo < 0)
			return -1;
		dst[n++] = (char)(hi << 4 | lo);
		i += 2;
	}
	if (n > STORE_KEY_MAX || tree_name_escape(dst, n, check) != len ||
	    memcmp(check, name, len) != 0)
		return -1;
	return (ssize_t)n;
}

ssize_t tree_name_unescape(const char *name, size_t len, char *dst, size_t cap)
{
	if (len == 0)
		return -1;
	if (name[0] == '%')
		return name_decode(name, len, dst, cap);
	if (name_needs_escape((const uint8_t *)name, len) || len > cap)
		return -1;
	memcpy(dst, name, len);
	return (ssize_t)len;
}

bool tree_name_index(const char *name, size_t len, int64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 19 || (name[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	if (v > INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

void tree_key_to_path(const uint8_t *key, size_t len, struct strbuf *sb)
{
	struct tuple_reader r;
	struct tuple_elem e;
	char raw[STORE_KEY_MAX], name[TREE_NAME_MAX];

	tuple_reader_init(&r, key, len);
	if (len == 0)
		strbuf_addc(sb, '/');
	while (tuple_next(&r, &e) == 1) {
		strbuf_addc(sb, '/');
		if (e.type == TUPLE_TYPE_STRING && e.len <= sizeof(raw)) {
			tuple_elem_copy(&e, raw);
			strbuf_add(sb, name, tree_name_escape(raw, e.len, name));
		} else if (e.type == TUPLE_TYPE_INT) {
			strbuf_addf(sb, "%lld", (long long)e.integer);
		} else {
			strbuf_add(sb, "?", 1);
		}
	}
}

/*
 * Why a name refused for a create is invalid (docs/FORMAT.md, "Names"), for
 * the message: a broken %XX, an escape of a key that needs none, text that
 * is not UTF-8, or a key that must be escaped.
 */
void tree_name_problem(const char *name, size_t len, char *buf, size_t cap)
{
	char raw[STORE_KEY_MAX + 1], canon[TREE_NAME_MAX];
	ssize_t n;

	if (name[0] == '%') {
		for (size_t i = 1; i < len; i++) {
			if (name[i] != '%')
				continue;
			if (i + 2 >= len || hex_digit(name[i + 1]) < 0 || hex_digit(name[i + 2]) < 0) {
				snprintf(buf, cap, "'%.*s' is no escape: after the leading %%, write "
					 "%%, /, NUL and . as %%XX with two upper-case hex digits",
					 (int)(len - i < 3 ? len - i : 3), name + i);
				return;
			}
			i += 2;
		}
		n = 0;
		for (size_t i = 1; i < len && (size_t)n < sizeof(raw); i++, n++) {
			if (name[i] == '%') {
				raw[n] = (char)(hex_digit(name[i + 1]) << 4 | hex_digit(name[i + 2]));
				i += 2;
			} else {
				raw[n] = name[i];
			}
		}
		tree_name_escape(raw, (size_t)n, canon);
		snprintf(buf, cap, "that key's file name is '%s' (a name starting with %% is an "
			 "escape, and only keys that need one are escaped)", canon);
		return;
	}
	n = tree_name_unescape(name, len, raw, sizeof(raw));
	if (n >= 0) {
		snprintf(buf, cap, "not UTF-8");
		return;
	}
	if (len <= STORE_KEY_MAX) {
		tree_name_escape(name, len, canon);
		snprintf(buf, cap, "a key like this is written '%s' (names ending in .json are "
			 "views)", canon);
		return;
	}
	snprintf(buf, cap, "too long");
}

/* ---- names of types and kinds ---- */

static const char *const type_names[] = {
	[MODEL_TYPE_STRING] = "string",
	[MODEL_TYPE_INTEGER] = "integer",
	[MODEL_TYPE_DOUBLE] = "double",
	[MODEL_TYPE_BOOLEAN] = "boolean",
	[MODEL_TYPE_NULL] = "null",
	[MODEL_TYPE_BYTES] = "bytes",
};

const char *model_type_name(enum model_type type)
{
	if (type < MODEL_TYPE_STRING || type > MODEL_TYPE_BYTES)
		return "unknown";
	return type_names[type];
}

int model_type_parse(const char *name, enum model_type *out)
{
	for (int t = MODEL_TYPE_STRING; t <= MODEL_TYPE_BYTES; t++) {
		if (strcmp(name, type_names[t]) == 0) {
			*out = (enum model_type)t;
			return 0;
		}
	}
	return -EINVAL;
}

const char *model_kind_name(enum model_kind kind)
{
	switch (kind) {
	case MODEL_KIND_LEAF:
		return "leaf";
	case MODEL_KIND_OBJECT:
		return "object";
	case MODEL_KIND_ARRAY:
		return "array";
	case MODEL_KIND_VIEW:
		return "view";
	case MODEL_KIND_LINK:
		return "link";
	}
	return "unknown";
}
