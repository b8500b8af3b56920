/*
 * model/doc/stream.c - big inputs without whole copies: a document or a leaf
 * whose text is a file mapping (a spilled mount buffer, an imported file)
 * gives its pages back as the parser or the copy moves past them, and a
 * big leaf record is written straight into the store's own page.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

/* Payloads from this size on go straight into the store's page. */
#define STREAM_BIG ((size_t)64 << 10)
/* A big record is copied (and its source given back) this much at a time. */
#define STREAM_CHUNK ((size_t)1 << 20)

void stream_drop_init(struct stream_drop *d, const void *base, bool mapped)
{
	d->base = base;
	d->done = 0;
	d->mapped = mapped;
}

/*
 * The whole pages below base + upto are not needed again: drop them. On a
 * file mapping that only unmaps them (the file keeps the data; a later
 * read faults them back in), so the process's resident size stays small.
 */
void stream_drop_upto(struct stream_drop *d, size_t upto)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from, to;

	if (!d->mapped || upto <= d->done)
		return;
	from = ((uintptr_t)d->base + d->done + page - 1) & ~(page - 1);
	to = ((uintptr_t)d->base + upto) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_DONTNEED);	/* a hint: failing costs memory only */
	if (to > (uintptr_t)d->base)
		d->done = to - (uintptr_t)d->base;
}

void stream_progress(void *arg, uint64_t done, uint64_t total)
{
	struct stream_progress *sp = arg;

	stream_drop_upto(&sp->drop, (size_t)done);
	if (sp->fn)
		sp->fn(sp->arg, done, total);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The sealed record of a big leaf, built in the store's page, chunk by chunk. */
static int stream_put_big(struct store_txn *txn, const uint8_t *key, size_t len,
			  const struct leaf *leaf, struct stream_drop *src)
{
	struct leaf head = *leaf;
	struct strbuf sb;
	uint8_t *dst;
	void *place;
	uint32_t sum;
	size_t body, done, n;
	int ret;

	head.payload = NULL;
	head.payload_len = 0;
	strbuf_init(&sb);
	leaf_encode(&head, &sb);	/* the header alone */
	if (sb.failed) {
		strbuf_release(&sb);
		return -ENOMEM;
	}
	body = sb.len + leaf->payload_len;
	ret = store_put_reserve(txn, STORE_SPACE_DATA, key, len, body + LEAF_CHECKSUM_SIZE, &place);
	if (ret < 0) {
		strbuf_release(&sb);
		return ret;
	}
	dst = place;
	memcpy(dst, sb.buf, sb.len);
	sum = crc32c(crc32c(0, key, len), sb.buf, sb.len);
	for (done = 0; done < leaf->payload_len; done += n) {
		n = leaf->payload_len - done < STREAM_CHUNK ? leaf->payload_len - done : STREAM_CHUNK;
		memcpy(dst + sb.len + done, leaf->payload + done, n);
		sum = crc32c(sum, leaf->payload + done, n);
		stream_drop_upto(src, (size_t)(leaf->payload - (const uint8_t *)src->base) + done + n);
	}
	put_be32(dst + body, sum);
	strbuf_release(&sb);
	return 0;
}

static bool stream_is_big(const struct leaf *leaf)
{
	return (leaf->tag == LEAF_STRING || leaf->tag == LEAF_BYTES ||
		leaf->tag == LEAF_BIG_INTEGER) && leaf->payload_len >= STREAM_BIG;
}

int tree_put_leaf(struct store_txn *txn, const uint8_t *key, size_t len, const struct leaf *leaf)
{
	struct stream_drop none;

	stream_drop_init(&none, leaf->payload, false);
	return tree_put_leaf_from(txn, key, len, leaf, &none);
}

int tree_put_leaf_from(struct store_txn *txn, const uint8_t *key, size_t len,
		       const struct leaf *leaf, struct stream_drop *src)
{
	struct strbuf sb;
	int ret;

	ret = table_touch(txn, key, len, false);
	if (ret < 0)
		return ret;
	if (stream_is_big(leaf))
		return stream_put_big(txn, key, len, leaf, src);
	strbuf_init(&sb);
	leaf_record_encode(key, len, leaf, &sb);
	ret = sb.failed ? -ENOMEM : store_put(txn, STORE_SPACE_DATA, key, len, sb.buf, sb.len);
	strbuf_release(&sb);
	return ret;
}
