/*
 * model/model_int.h - private interfaces shared by the files of model/:
 * a growable byte buffer, the streaming JSON reader and writer, and the
 * leaf record codec with its text form. Nothing outside model/ includes it.
 */
#ifndef KVFS_MODEL_INT_H
#define KVFS_MODEL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

/* ---- growable buffer (heap; release with strbuf_release) ---- */
struct strbuf {
	char *buf;		/* NUL-terminated when not NULL */
	size_t len;
	size_t cap;
	bool failed;		/* an allocation failed; later appends do nothing */
};
void strbuf_init(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addc(struct strbuf *sb, char c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_reset(struct strbuf *sb);
/* Hands the buffer to the caller (heap, free()); sb is left empty. */
char *strbuf_detach(struct strbuf *sb, size_t *len);

/* ---- base64 (base64.c): standard alphabet, with padding ---- */
void base64_encode(const uint8_t *data, size_t len, struct strbuf *sb);
/* Decodes into sb (reset first); false unless the text is canonical base64. */
bool base64_decode(const char *s, size_t len, struct strbuf *sb);

/* ---- JSON reader: strict RFC 8259, streaming events ---- */
enum json_event {
	JSON_OBJECT_BEGIN,
	JSON_OBJECT_END,
	JSON_ARRAY_BEGIN,
	JSON_ARRAY_END,
	JSON_KEY,		/* str/len: the member name */
	JSON_STRING,		/* str/len: the value (may hold NUL bytes) */
	JSON_INTEGER,		/* a number without fraction/exponent that fits int64
				 * (str/len: its text, as for every number) */
	JSON_BIG_INTEGER,	/* one outside int64: str/len, its canonical digits */
	JSON_DOUBLE,		/* a number the nearest double holds exactly; "-0" is -0.0 */
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
	JSON_VALUE_END,		/* a top-level value is complete */
};

/* One event. str is unescaped, borrowed, valid until the callback returns. */
struct json_token {
	enum json_event event;
	const char *str;
	size_t len;
	int64_t integer;
	double real;
	int depth;		/* containers open around this token */
};

enum json_parse_flags {
	/* Accept several top-level values separated by whitespace or RS (0x1e). */
	JSON_PARSE_SEQUENCE = 1 << 0,
};

/*
 * Calls fn for each token of `text`. Stops at the first error: malformed
 * input gives -EINVAL with err->msg "line L, column C: what", nesting deeper
 * than max_depth gives -EINVAL too; a nonzero return of fn stops and is
 * returned. Empty input is invalid (unless JSON_PARSE_SEQUENCE).
 * progress (may be NULL) is called now and then with bytes consumed.
 */
typedef int (*json_token_fn)(void *arg, const struct json_token *tok);
int json_parse(const char *text, size_t len, unsigned flags, int max_depth,
	       json_token_fn fn, void *arg, model_progress_fn progress, void *progress_arg,
	       struct model_error *err);

/* JSON writer into a strbuf, optionally flushed to a FILE as it grows. */
struct json_writer {
	struct strbuf *out;
	FILE *flush_to;		/* NULL: keep everything in out */
	bool pretty;
	int depth;
	bool first;		/* no member/element yet at this depth */
	bool after_key;
};
void json_writer_init(struct json_writer *w, struct strbuf *out, FILE *flush_to, bool pretty);
void json_write_object_begin(struct json_writer *w);
void json_write_object_end(struct json_writer *w);
void json_write_array_begin(struct json_writer *w);
void json_write_array_end(struct json_writer *w);
void json_write_key(struct json_writer *w, const char *str, size_t len);
void json_write_string(struct json_writer *w, const char *str, size_t len);
void json_write_integer(struct json_writer *w, int64_t value);
/* A number already in JSON form (a big integer's digits). */
void json_write_number_text(struct json_writer *w, const char *text, size_t len);
void json_write_double(struct json_writer *w, double value);
void json_write_bool(struct json_writer *w, bool value);
void json_write_null(struct json_writer *w);
/* Ends the document (pretty: final newline) and flushes; -EIO/-ENOMEM on failure. */
int json_writer_finish(struct json_writer *w);

/* ---- numbers: canonical text forms ---- */
#define NUMBER_TEXT_MAX 32
/* Shortest text that reads back to the same double; always has '.' or 'e'. */
size_t number_format_double(double value, char buf[NUMBER_TEXT_MAX]);
size_t number_format_integer(int64_t value, char buf[NUMBER_TEXT_MAX]);
/* True when text is exactly the canonical form of some int64 / double. */
bool number_parse_integer(const char *text, size_t len, int64_t *out);
bool number_parse_double(const char *text, size_t len, double *out);
/*
 * Any text of JSON number grammar (already validated) -> nearest double;
 * false when it overflows. scratch is a caller-owned work buffer.
 */
bool number_read_double(const char *text, size_t len, struct strbuf *scratch, double *out);
/* True when text is canonical integer text (as above) outside int64. */
bool number_is_big_integer(const char *text, size_t len);
/*
 * True when the double's shortest text has the same value as the JSON
 * number text (digits and exponent compared after normalizing: `1.10`,
 * `1e2` are exact; `0.1000000000000000000001` is not).
 */
bool number_double_is_exact(double value, const char *text, size_t len,
			    struct strbuf *scratch);

/* ---- leaf records (docs/FORMAT.md, "leaf records") ---- */
enum leaf_tag {
	LEAF_STRING = 0x01,
	LEAF_INTEGER = 0x02,
	LEAF_DOUBLE = 0x03,
	LEAF_FALSE = 0x04,
	LEAF_TRUE = 0x05,
	LEAF_NULL = 0x06,
	LEAF_BYTES = 0x07,
	LEAF_BIG_INTEGER = 0x08,	/* type "integer" outside int64: canonical digits */
	LEAF_EMPTY_OBJECT = 0x10,
	LEAF_EMPTY_ARRAY = 0x11,
};
#define LEAF_FLAG_NEWLINE 0x01
#define LEAF_HEADER_SIZE 10

/* A decoded record; payload is borrowed from the record. */
struct leaf {
	enum leaf_tag tag;
	uint8_t flags;
	int64_t mtime_ns;
	const uint8_t *payload;
	size_t payload_len;
	int64_t integer;	/* LEAF_INTEGER */
	double real;		/* LEAF_DOUBLE */
};

/*
 * -EINVAL when the record is malformed (bad tag, flags or size). Constant
 * time: it does not look at a string's bytes (reads of big leaves would
 * rescan them per chunk); leaf_validate does.
 */
int leaf_decode(const void *record, size_t len, struct leaf *out);
/* -EINVAL when a decoded string leaf is not valid UTF-8 (kvfs check). */
int leaf_validate(const struct leaf *leaf);
/* Appends the record for leaf to sb (payload taken from integer/real for numbers). */
void leaf_encode(const struct leaf *leaf, struct strbuf *sb);
bool leaf_is_marker(const struct leaf *leaf);
enum model_type leaf_model_type(const struct leaf *leaf);
/* Text form (docs/FORMAT.md): its exact size, and a window of it. */
uint64_t leaf_text_size(const struct leaf *leaf);
size_t leaf_text_read(const struct leaf *leaf, void *dst, size_t size, uint64_t offset);
/*
 * Builds the leaf for text written to a file (MODEL_WRITE_TEXT) or for a
 * value (CLI put), following the type rules. `old` is the existing leaf or
 * NULL; `type` 0 means infer. The result's payload may point into `text`.
 * -EINVAL when an explicit type does not parse.
 */
int leaf_from_text(const void *text, size_t len, bool is_file_text, const struct leaf *old,
		   enum model_type type, int64_t mtime_ns, struct leaf *out);
bool utf8_is_valid(const void *data, size_t len);
/*
 * Whether a new file with leaf's text would get leaf's type (a string
 * without NUL, bytes that are not UTF-8 text): what a reset leaves as it
 * is. A value over LEAF_INFER_READ_MAX bytes is not read: false.
 */
#define LEAF_INFER_READ_MAX (16u << 20)
bool leaf_type_is_inferred(const struct leaf *leaf);

/*
 * ---- sealed records (model/tree/record.c; docs/FORMAT.md, format 2) ----
 * A data record is the leaf body above followed by LEAF_CHECKSUM_SIZE
 * bytes: CRC-32C of key || body, big-endian. Format-1 stores (read-only
 * opens of a store not yet upgraded) have bare bodies. Every reader of a
 * data record goes through leaf_record_decode; `format` is the
 * transaction's store_txn_format.
 */
#define LEAF_CHECKSUM_SIZE 4
/* CRC-32C; start with crc 0, chain by passing the previous result. */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);
/* Appends the sealed record for leaf at key to sb. */
void leaf_record_encode(const void *key, size_t key_len, const struct leaf *leaf,
			struct strbuf *sb);
/*
 * Verifies and decodes: -EBADMSG on a checksum mismatch (or a record too
 * short to hold one), -EINVAL when the body is malformed, -EIO for a format
 * this kvfs cannot read. out->payload borrows from record.
 */
int leaf_record_decode(unsigned format, const void *key, size_t key_len, const void *record,
		       size_t len, struct leaf *out);
/* Checks the checksum only; *body_len is the body's length. Errors as above. */
int leaf_record_verify(unsigned format, const void *key, size_t key_len, const void *record,
		       size_t len, size_t *body_len);
/* Appends body then its checksum under key (an upgrade, a load of format 1). */
void leaf_record_seal(const void *key, size_t key_len, const void *body, size_t body_len,
		      struct strbuf *sb);
/* A record (current format) of an empty object or array: the store's container test. */
bool leaf_record_is_marker(const void *record, size_t len);
/* Verifies a record under old_key and appends it re-sealed for new_key (rename). */
int leaf_record_rekey(unsigned format, const void *old_key, size_t old_len, const void *new_key,
		      size_t new_len, const void *record, size_t len, struct strbuf *sb);

#endif
