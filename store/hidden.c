/*
 * store/hidden.c - subtrees of the data and index spaces hidden from one
 * read transaction (store_txn_hide: model/ttl/ttl_space.c hides expired nodes so),
 * kept sorted per transaction for any backend; store.c consults them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "store/store_ops.h"

/* Sorted, and no key is the tuple ancestor of another (store_txn_hide). */
struct hidden {
	size_t n, cap;
	struct store_val keys[];	/* each key's bytes are heap */
};

/* True when a (a node key) is k itself or a tuple ancestor of k. */
static bool key_covers(const struct store_val *a, const void *k, size_t len)
{
	return a->len <= len && memcmp(a->data, k, a->len) == 0 &&
	       (a->len == len || ((const uint8_t *)k)[a->len] != 0xff);
}

/* Index of the first hidden key > k. */
static size_t hidden_upper(const struct hidden *h, const void *k, size_t len)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(h->keys[mid].data, h->keys[mid].len, k, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The hidden key covering k, or NULL. Exact with one comparison: no hidden
 * key is an ancestor of another, so any key between a covering ancestor A
 * and k would be A's descendant (dropped) or sort after k (A + 0xff...).
 */
static const struct store_val *hidden_find(const struct hidden *h, const void *k, size_t len)
{
	size_t i;

	if (!h || h->n == 0)
		return NULL;
	i = hidden_upper(h, k, len);
	return i > 0 && key_covers(&h->keys[i - 1], k, len) ? &h->keys[i - 1] : NULL;
}

void store_hidden_free(struct hidden *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		free((void *)h->keys[i].data);
	free(h);
}

/* The hidden set of a space: only the data and index spaces have one. */
static struct hidden **hidden_of(struct store_txn *txn, enum store_space space)
{
	return space == STORE_SPACE_DATA ? &txn->hidden[0] :
	       space == STORE_SPACE_INDEX ? &txn->hidden[1] : NULL;
}

const struct store_val *store_hidden_covering(struct store_txn *txn, enum store_space space,
					      const void *key, size_t len)
{
	struct hidden **hp = hidden_of(txn, space);

	return hp ? hidden_find(*hp, key, len) : NULL;
}

int store_txn_hide(struct store_txn *txn, enum store_space space, const void *key, size_t len)
{
	struct hidden **hp = hidden_of(txn, space);
	struct hidden *h;
	struct store_val nk;
	size_t i, j;
	void *copy;

	if (!hp || txn->write || len == 0 || len > STORE_KEY_MAX)
		return -EINVAL;	/* read transactions only; the root never expires */
	h = *hp;
	if (hidden_find(h, key, len))
		return 0;	/* already hidden with an ancestor */
	if (!h || h->n == h->cap) {
		size_t cap = h ? h->cap * 2 : 16;
		struct hidden *g = realloc(h, sizeof(*g) + cap * sizeof(g->keys[0]));

		if (!g)
			return -ENOMEM;
		if (!h)
			g->n = 0;
		g->cap = cap;
		*hp = h = g;
	}
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, len);
	nk = (struct store_val){ copy, len };
	i = hidden_upper(h, key, len);
	/* Descendants of the new key sort right after it: drop them. */
	for (j = i; j < h->n && key_covers(&nk, h->keys[j].data, h->keys[j].len); j++)
		free((void *)h->keys[j].data);
	memmove(&h->keys[i + 1], &h->keys[j], (h->n - j) * sizeof(h->keys[0]));
	h->n = h->n - (j - i) + 1;
	h->keys[i] = nk;
	return 0;
}

int store_txn_hidden_from(struct store_txn *txn, enum store_space space, const void *key,
			  size_t len, struct store_val *out)
{
	struct hidden **hp = hidden_of(txn, space);
	struct hidden *h = hp ? *hp : NULL;
	size_t lo = 0, hi;

	if (!h)
		return 0;
	/* the first hidden key >= key */
	for (hi = h->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(h->keys[mid].data, h->keys[mid].len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == h->n)
		return 0;
	*out = h->keys[lo];
	return 1;
}
