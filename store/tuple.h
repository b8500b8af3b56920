/*
 * store/tuple.h - order-preserving tuple encoding, byte-compatible with the
 * FoundationDB tuple layer. Owns the byte format of every key kvfs writes.
 *
 *   code        element             body
 *   0x00        null                (inside a nested tuple: 0x00 0xFF)
 *   0x01        byte string         bytes, 0x00 escaped as 0x00 0xFF, ends 0x00
 *   0x02        unicode string      UTF-8, same escaping, ends 0x00
 *   0x05        nested tuple        elements, ends 0x00
 *   0x0c..0x13  negative integer    8..1 bytes: ones' complement of |n|, big-endian
 *   0x14        zero                -
 *   0x15..0x1c  positive integer    1..8 bytes big-endian
 *   0x21        double              8 bytes big-endian; sign bit flipped if
 *                                   positive, all bits flipped if negative
 *   0x26 0x27   false, true         -
 *
 * Examples (byte order equals tuple order):
 *   ("users")        02 75 73 65 72 73 00
 *   ("users", 42)    02 75 73 65 72 73 00 15 2a
 *   ("users", -1)    02 75 73 65 72 73 00 13 fe     sorts before 42
 *   ("a\0b")         02 61 00 ff 62 00
 */
#ifndef KVFS_STORE_TUPLE_H
#define KVFS_STORE_TUPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tuple_type {
	TUPLE_TYPE_NULL,
	TUPLE_TYPE_BYTES,
	TUPLE_TYPE_STRING,
	TUPLE_TYPE_NESTED,
	TUPLE_TYPE_INT,
	TUPLE_TYPE_DOUBLE,
	TUPLE_TYPE_FALSE,
	TUPLE_TYPE_TRUE,
};

/*
 * Appends encoded elements to a caller-owned buffer. When an element does not
 * fit, `overflow` is set, `len` stays at the last whole element, and later
 * appends do nothing: callers check once at the end (ENAMETOOLONG).
 */
struct tuple_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
	int depth;		/* nesting depth of open nested tuples */
	bool overflow;
};

void tuple_writer_init(struct tuple_writer *w, uint8_t *buf, size_t cap);
void tuple_put_null(struct tuple_writer *w);
void tuple_put_bytes(struct tuple_writer *w, const void *data, size_t len);
void tuple_put_string(struct tuple_writer *w, const char *utf8, size_t len);
void tuple_put_int(struct tuple_writer *w, int64_t value);
void tuple_put_double(struct tuple_writer *w, double value);
void tuple_put_bool(struct tuple_writer *w, bool value);
void tuple_nested_begin(struct tuple_writer *w);
void tuple_nested_end(struct tuple_writer *w);

/*
 * One decoded element. For bytes, strings and nested tuples, `raw` points at
 * the still-escaped body inside the input (borrowed: valid as long as the
 * input is) and `len` is the unescaped length of bytes/strings.
 */
struct tuple_elem {
	enum tuple_type type;
	int64_t integer;
	double real;
	const uint8_t *raw;
	size_t raw_len;
	size_t len;
};

struct tuple_reader {
	const uint8_t *buf;
	size_t len;
	size_t pos;		/* offset just past the last element read */
	bool nested;
};

void tuple_reader_init(struct tuple_reader *r, const void *buf, size_t len);
/* Reads the elements of a nested tuple element returned by tuple_next. */
void tuple_reader_init_nested(struct tuple_reader *r, const struct tuple_elem *nested);
/*
 * Decodes the next element: 1 when one was read, 0 at the end of input,
 * -EINVAL when the input is malformed (never reads past buf + len).
 */
int tuple_next(struct tuple_reader *r, struct tuple_elem *out);
/* Copies the unescaped body of a bytes/string element: dst holds e->len. */
void tuple_elem_copy(const struct tuple_elem *e, void *dst);

#endif
