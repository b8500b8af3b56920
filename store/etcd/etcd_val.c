/*
 * store/etcd/etcd_val.c - data values larger than one etcd request (docs/ETCD.md
 * section 3): stored as chunks of 1 MiB under the private space 'v' beside a
 * small stub at the value's own key, written in the same transaction (so a
 * big commit keeps them all or nothing), and assembled on read at the
 * transaction's revision; the last assembled value is kept per handle.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A stub: MAGIC, total length (8), chunk count (4). No record starts 0xfe (docs/FORMAT.md). */
static const uint8_t VAL_MAGIC[16] = { 0xfe, 'k', 'v', 'f', 's', '-', 'e', 't', 'c', 'd',
				       '-', 'b', 'i', 'g', 0x00, 0x01 };
#define VAL_STUB_LEN 28
#define VAL_WINDOW 4	/* chunks per range request when assembling */

/* An assembled value: shared by the handle's cache and the transactions that hold it. */
struct etcd_blob {
	unsigned refs;	/* guarded by the handle's pool_lock */
	int64_t mod_rev;	/* the stub's revision: same revision, same chunks */
	size_t key_len, len;
	uint8_t key[ETCD_KEY_MAX];
	uint8_t *data;
};

/* A put_reserve of a big value, chunked at the transaction's next operation. */
struct etcd_resv {
	uint8_t key[ETCD_KEY_MAX];
	size_t key_len, len;
	uint8_t *data;
};

static bool is_stub(const void *v, size_t len)
{
	return len == VAL_STUB_LEN && memcmp(v, VAL_MAGIC, sizeof(VAL_MAGIC)) == 0;
}

/* A value stored as chunks: over one chunk, or one that would read as a stub. */
static bool is_big(const void *v, size_t len)
{
	return len > ETCD_VAL_CHUNK || is_stub(v, len);
}

/* Only the data space holds big values: the spaces' keys are the value's full key here. */
static bool is_data_key(const struct store_etcd *st, const uint8_t *k, size_t kl)
{
	return kl > st->prefix_len && k[st->prefix_len] == 'd';
}

size_t etcd_val_chunk_key(const struct store_etcd *st, const uint8_t *k, size_t kl, long n,
			  uint8_t *out)
{
	size_t pl = st->prefix_len, o = 0;

	memcpy(out, k, pl);
	out[pl] = ETCD_SPACE_VALUE;
	memcpy(out + pl + 1, k + pl, kl - pl);	/* the space byte and the tuple key */
	o = kl + 1;
	out[o++] = 0xfe;	/* no tuple element starts 0xfe, nor does a string go on with 00 fe */
	if (n >= 0) {
		put_be(out + o, (uint64_t)n, 4);
		o += 4;
	}
	return o;
}

/* Deletes the chunks of the value at k (prefix: of every key starting with k), unless already deleted. */
static int chunks_forget(struct store_etcd_txn *t, const uint8_t *k, size_t kl, bool prefix)
{
	uint8_t lo[ETCD_VKEY_MAX], hi[ETCD_VKEY_MAX];
	size_t ll, hl;
	const void *end;
	size_t end_len;

	if (prefix) {
		ll = etcd_val_chunk_key(t->st, k, kl, -1, lo) - 1;	/* without the 0xfe */
		hl = etcd_prefix_end(lo, ll, hi);
	} else {
		ll = etcd_val_chunk_key(t->st, k, kl, -1, lo);
		memcpy(hi, lo, ll);
		hi[ll - 1] = 0xff;
		hl = ll;
	}
	if (etcd_buf_covering(t->buf, lo, ll, &end, &end_len) == 1 &&
	    ((end_len == 1 && !*(const uint8_t *)end) || store_key_cmp(end, end_len, hi, hl) >= 0))
		return 0;	/* a range deleted in this attempt holds them all already */
	return etcd_buf_del_range(t->buf, lo, ll, hi, hl);
}

int etcd_val_forget(struct store_etcd_txn *t, const uint8_t *k, size_t kl, bool prefix)
{
	if (!is_data_key(t->st, k, kl))
		return 0;
	return chunks_forget(t, k, kl, prefix);
}

int etcd_val_put(struct store_etcd_txn *t, const uint8_t *k, size_t kl, const void *val,
		 size_t len)
{
	uint8_t ck[ETCD_VKEY_MAX], stub[VAL_STUB_LEN];
	uint32_t n;
	int rc;

	if (!is_data_key(t->st, k, kl))
		return len > ETCD_TXN_BYTES ? -EFBIG : etcd_buf_put(t->buf, k, kl, val, len);
	if ((rc = chunks_forget(t, k, kl, false)))	/* a big value written before leaves nothing */
		return rc;
	if (!is_big(val, len))
		return etcd_buf_put(t->buf, k, kl, val, len);
	n = (uint32_t)((len + ETCD_VAL_CHUNK - 1) / ETCD_VAL_CHUNK);
	if ((uint64_t)len > (uint64_t)ETCD_VAL_CHUNK * UINT32_MAX)
		return -EFBIG;
	for (uint32_t i = 0; i < n; i++) {
		size_t off = (size_t)i * ETCD_VAL_CHUNK;
		size_t part = len - off < ETCD_VAL_CHUNK ? len - off : ETCD_VAL_CHUNK;

		rc = etcd_buf_put(t->buf, ck, etcd_val_chunk_key(t->st, k, kl, i, ck),
				  (const uint8_t *)val + off, part);
		if (rc)
			return rc;
	}
	memcpy(stub, VAL_MAGIC, sizeof(VAL_MAGIC));
	put_be(stub + 16, len, 8);
	put_be(stub + 24, n, 4);
	return etcd_buf_put(t->buf, k, kl, stub, sizeof(stub));
}

int etcd_val_flush(struct store_etcd_txn *t)
{
	struct etcd_resv *r = t->resv;
	int rc;

	if (!r)
		return 0;
	t->resv = NULL;
	rc = etcd_val_put(t, r->key, r->key_len, r->data, r->len);
	free(r->data);
	free(r);
	return rc;
}

int etcd_val_reserve(struct store_etcd_txn *t, const uint8_t *k, size_t kl, size_t len, void **out)
{
	struct etcd_resv *r;
	int rc = etcd_val_flush(t);

	if (rc)
		return rc;
	if (!is_data_key(t->st, k, kl) || (len <= ETCD_VAL_CHUNK && len != VAL_STUB_LEN)) {
		if (len > ETCD_TXN_BYTES)
			return -EFBIG;
		if (is_data_key(t->st, k, kl) && (rc = chunks_forget(t, k, kl, false)))
			return rc;
		return etcd_buf_put_reserve(t->buf, k, kl, len, out);
	}
	/* the caller fills it in after we return: chunked at the next operation */
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->data = malloc(len ? len : 1);
	if (!r->data) {
		free(r);
		return -ENOMEM;
	}
	memcpy(r->key, k, kl);
	r->key_len = kl;
	r->len = len;
	t->resv = r;
	*out = r->data;
	return 0;
}

static void blob_unref(struct store_etcd *st, struct etcd_blob *b)
{
	bool last;

	if (!b)
		return;
	pthread_mutex_lock(&st->pool_lock);
	last = --b->refs == 0;
	pthread_mutex_unlock(&st->pool_lock);
	if (last) {
		free(b->data);
		free(b);
	}
}

/* Keeps b (one reference, taken over) until the transaction ends. */
static int txn_hold(struct store_etcd_txn *t, struct etcd_blob *b)
{
	if (t->n_blobs == t->cap_blobs) {
		size_t cap = t->cap_blobs ? 2 * t->cap_blobs : 4;
		struct etcd_blob **g = realloc(t->blobs, cap * sizeof(*g));

		if (!g) {
			blob_unref(t->st, b);
			return -ENOMEM;
		}
		t->blobs = g;
		t->cap_blobs = cap;
	}
	t->blobs[t->n_blobs++] = b;
	return 0;
}

/* Copies chunks [from, n) of the value at k, read from etcd at t's revision, into b. */
static int chunks_read(struct store_etcd_txn *t, const uint8_t *k, size_t kl, uint32_t n,
		       struct etcd_blob *b)
{
	uint8_t ck[ETCD_VKEY_MAX], end[ETCD_VKEY_MAX];
	size_t el = etcd_val_chunk_key(t->st, k, kl, n, end), done = 0;
	uint32_t i = 0;

	while (i < n) {
		struct etcd_range_opts o = { .range_end = end, .range_end_len = el, .limit = VAL_WINDOW,
					     .revision = t->rev };
		size_t cl = etcd_val_chunk_key(t->st, k, kl, i, ck);
		struct etcd_range_result r;
		int rc = etcd_range_retry(t->c, ck, cl, &o, &r);

		if (rc)
			return rc;
		for (size_t j = 0; rc == 0 && j < r.len; j++, i++) {
			const struct etcd_kv *kv = &r.kvs[j];

			cl = etcd_val_chunk_key(t->st, k, kl, i, ck);
			if (store_key_cmp(kv->key, kv->key_len, ck, cl) || kv->val_len > b->len - done)
				rc = -EIO;	/* a chunk missing or too long: not the value the stub names */
			else if (kv->val_len)
				memcpy(b->data + done, kv->val, kv->val_len);
			done += kv->val_len;
		}
		if (rc == 0 && r.len == 0)
			rc = -EIO;
		etcd_range_result_release(&r);
		if (rc)
			return rc;
	}
	return done == b->len ? 0 : -EIO;
}

/* Copies the chunks of the value at k that this attempt wrote (its buffer) into b. */
static int chunks_from_buf(struct store_etcd_txn *t, const uint8_t *k, size_t kl, uint32_t n,
			   struct etcd_blob *b)
{
	uint8_t ck[ETCD_VKEY_MAX];
	size_t done = 0;

	for (uint32_t i = 0; i < n; i++) {
		const void *v;
		size_t vl;

		if (etcd_buf_get(t->buf, ck, etcd_val_chunk_key(t->st, k, kl, i, ck), &v, &vl) != 1 ||
		    vl > b->len - done)
			return -EIO;
		memcpy(b->data + done, v, vl);
		done += vl;
	}
	return done == b->len ? 0 : -EIO;
}

int etcd_val_resolve(struct store_etcd_txn *t, const uint8_t *k, size_t kl, int64_t mod_rev,
		     const void **data, size_t *len)
{
	struct store_etcd *st = t->st;
	struct etcd_blob *b, *old = NULL;
	uint64_t total;
	uint32_t n;
	int rc;

	if (!is_stub(*data, *len) || !is_data_key(st, k, kl))
		return 0;
	total = get_be((const uint8_t *)*data + 16, 8);
	n = (uint32_t)get_be((const uint8_t *)*data + 24, 4);
	if (total > SIZE_MAX || n != (total + ETCD_VAL_CHUNK - 1) / ETCD_VAL_CHUNK)
		return -EIO;
	if (mod_rev) {
		pthread_mutex_lock(&st->pool_lock);
		b = st->val_cache;
		if (b && b->mod_rev == mod_rev && !store_key_cmp(b->key, b->key_len, k, kl))
			b->refs++;
		else
			b = NULL;
		pthread_mutex_unlock(&st->pool_lock);
		if (b)
			goto out_hand;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->len = (size_t)total;
	b->data = malloc(b->len ? b->len : 1);
	if (!b->data) {
		free(b);
		return -ENOMEM;
	}
	b->refs = 1;
	b->mod_rev = mod_rev;
	memcpy(b->key, k, kl);
	b->key_len = kl;
	rc = mod_rev ? chunks_read(t, k, kl, n, b) : chunks_from_buf(t, k, kl, n, b);
	if (rc) {
		blob_unref(st, b);
		return rc;
	}
	if (mod_rev) {
		/* the handle keeps the last one: a mount reads a big leaf in many small calls */
		pthread_mutex_lock(&st->pool_lock);
		old = st->val_cache;
		st->val_cache = b;
		b->refs++;
		pthread_mutex_unlock(&st->pool_lock);
		blob_unref(st, old);
	}
out_hand:
	if ((rc = txn_hold(t, b)))
		return rc;
	*data = b->data;
	*len = b->len;
	return 0;
}

void etcd_val_release(struct store_etcd_txn *t)
{
	for (size_t i = 0; i < t->n_blobs; i++)
		blob_unref(t->st, t->blobs[i]);
	free(t->blobs);
	t->blobs = NULL;
	t->n_blobs = t->cap_blobs = 0;
	if (t->resv) {
		free(t->resv->data);
		free(t->resv);
		t->resv = NULL;
	}
}

void etcd_val_cache_drop(struct store_etcd *st)
{
	struct etcd_blob *b;

	pthread_mutex_lock(&st->pool_lock);
	b = st->val_cache;
	st->val_cache = NULL;
	pthread_mutex_unlock(&st->pool_lock);
	blob_unref(st, b);
}
