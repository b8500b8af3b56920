/*
 * store/etcd/etcd_scan.c - scans of the etcd backend: a space's key range read in
 * pages of ETCD_PAGE keys, every page at the transaction's revision (so a
 * listing is one snapshot), the next page starting after the last key. In
 * a write transaction the pages are merged with the attempt's buffer (its
 * puts shown, its deletes hidden) and every stretch read is guarded.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


int store_etcd_scan_open(struct store_scan *sb)
{
	struct store_etcd_scan *s = ESCAN(sb);

	s->txn = ETXN(sb->txn);
	s->base_len = etcd_key(s->txn->st, sb->space, NULL, 0, s->lo);
	s->lo_len = etcd_key(s->txn->st, sb->space, sb->prefix, sb->prefix_len, s->lo);
	s->hi_len = etcd_prefix_end(s->lo, s->lo_len, s->hi);
	memcpy(s->cur, s->lo, s->lo_len);
	s->cur_len = s->lo_len;
	s->incl = true;
	return 0;
}

/* Guards what the scan looked at of another transaction's page, if any: 0 or -ENOMEM. */
static int guard_flush(struct store_etcd_scan *s)
{
	int rc = 0;

	if (s->gpage && s->gupto_len)
		rc = etcd_txn_guard_page(s->txn, s->gpage, s->gfrom, s->gfrom_len, s->gupto,
					 s->gupto_len);
	s->gpage = NULL;
	s->gupto_len = 0;
	return rc;
}

/* The scan looked at [.., up) of its page: what guard_flush guards grows to there. */
static void guard_upto(struct store_etcd_scan *s, const uint8_t *up, size_t len)
{
	if (!s->gpage || s->page != &s->gpage->r)
		return;
	if (s->gupto_len == 1 && !s->gupto[0])
		return;	/* to etcd's end already */
	if (!s->gupto_len || (len == 1 && !up[0]) || store_key_cmp(up, len, s->gupto, s->gupto_len) > 0) {
		memcpy(s->gupto, up, len);
		s->gupto_len = len;
	}
}

void store_etcd_scan_close(struct store_scan *scan)
{
	struct store_etcd_scan *s = ESCAN(scan);
	int rc = guard_flush(s);

	if (rc && !s->txn->guard_rc)
		s->txn->guard_rc = rc;	/* the write fails rather than commit unguarded */
	etcd_kids_scan_release(s);	/* its pages belong to the transaction */
}

/* A listing: the first fetch reads the children space, not a page of the whole range. */
void store_etcd_scan_expect_children(struct store_scan *scan)
{
	ESCAN(scan)->walk = true;
	ESCAN(scan)->listing = true;
}

int store_etcd_scan_child_subdirs(struct store_scan *scan, const void *child, size_t len,
				  uint32_t *count)
{
	return etcd_kids_child_subdirs(ESCAN(scan), child, len, count);
}

/* k is at or past the position. */
static bool past_cur(const struct store_etcd_scan *s, const void *k, size_t kl)
{
	int c = store_key_cmp(k, kl, s->cur, s->cur_len);

	return c > 0 || (c == 0 && s->incl);
}

/*
 * Reads [from, hi) with at most limit keys (values unless keys_only) into
 * a page the transaction keeps and describes, guarding it in a write.
 */
static int read_page(struct store_etcd_txn *t, const uint8_t *from, size_t fl, const uint8_t *hi,
		     size_t hl, bool keys_only, int64_t limit, struct etcd_kept **out)
{
	struct etcd_range_opts o = { .range_end = hi, .range_end_len = hl, .limit = limit,
				     .keys_only = keys_only };
	struct etcd_kept *kept;
	int rc = etcd_txn_range_kept(t, from, fl, &o, &kept);

	if (rc)
		return rc;
	/* what this page read: [from, after its last key), or to the end */
	kept->reader = t->id;
	kept->has_vals = !keys_only;
	memcpy(kept->from, from, fl);
	kept->from_len = fl;
	memcpy(kept->scan_hi, hi, hl);
	kept->scan_hi_len = hl;
	memcpy(kept->end, hi, hl);
	kept->end_len = hl;
	if (kept->r.more && kept->r.len)
		kept->end_len = etcd_key_after(&kept->r.kvs[kept->r.len - 1], kept->end);
	etcd_txn_keep_page(t, kept);	/* described whole first: other readers may find it at once */
	*out = kept;
	if (t->base.write)
		return etcd_txn_guard_range(t, kept->from, kept->from_len, kept->end, kept->end_len);
	return 0;
}

/*
 * The spaces nearly every read transaction asks about before anything else
 * (store_space_is_empty: model/ keeps no tables, TTLs or expiries unless
 * there are some): read with its first read, so that asking is no round
 * trip of its own. Each costs etcd one key at most.
 */
static const enum store_space probe_spaces[] = {
	STORE_SPACE_SCHEMA, STORE_SPACE_TTL, STORE_SPACE_EXPIRY,
};
_Static_assert(sizeof(probe_spaces) / sizeof(probe_spaces[0]) == ETCD_PROBES, "ETCD_PROBES");

void etcd_probes_add(struct store_etcd_txn *t, struct etcd_probes *p, struct etcd_op *ops,
		     size_t *n)
{
	for (size_t i = 0; i < ETCD_PROBES; i++) {
		p->lo_len[i] = etcd_key(t->st, probe_spaces[i], NULL, 0, p->lo[i]);
		p->hi_len[i] = etcd_prefix_end(p->lo[i], p->lo_len[i], p->hi[i]);
		ops[(*n)++] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = p->lo[i],
						.key_len = p->lo_len[i], .range_end = p->hi[i],
						.range_end_len = p->hi_len[i], .keys_only = true,
						.limit = 1 };
	}
}

/*
 * The probes' answers kept as pages of keys, which a scan of that space
 * finds instead of asking: [lo, hi) when the space is empty, [lo, its
 * first key] when not.
 */
int etcd_probes_keep(struct store_etcd_txn *t, const struct etcd_probes *p,
		     struct etcd_range_result *r)
{
	for (size_t i = 0; i < ETCD_PROBES; i++) {
		struct etcd_kept *k = calloc(1, sizeof(*k));

		if (!k)
			return -ENOMEM;
		k->r = r[i];
		memset(&r[i], 0, sizeof(r[i]));
		memcpy(k->from, p->lo[i], p->lo_len[i]);
		k->from_len = p->lo_len[i];
		memcpy(k->scan_hi, p->hi[i], p->hi_len[i]);
		k->scan_hi_len = p->hi_len[i];
		if (k->r.more && k->r.len) {
			k->end_len = etcd_key_after(&k->r.kvs[0], k->end);
		} else {
			memcpy(k->end, p->hi[i], p->hi_len[i]);
			k->end_len = p->hi_len[i];
		}
		etcd_txn_keep(t, k);
		etcd_txn_keep_page(t, k);
	}
	return 0;
}

/*
 * store_txn_prefetch: the whole range in big pages the transaction keeps,
 * which later gets and scans inside it find (etcd_txn_page_covering) instead
 * of asking etcd once each. store.c calls it for read transactions only.
 */
int store_etcd_prefetch(struct store_txn *txn, enum store_space space, const void *prefix,
			size_t prefix_len)
{
	struct store_etcd_txn *t = ETXN(txn);
	uint8_t from[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t fl = etcd_key(t->st, space, prefix, prefix_len, from);
	size_t hl = etcd_prefix_end(from, fl, hi);
	struct etcd_kept *kept;
	int rc;

	for (;;) {
		rc = read_page(t, from, fl, hi, hl, false, ETCD_PAGE_AHEAD, &kept);
		if (rc || !kept->r.more || !kept->r.len)
			return rc;
		memcpy(from, kept->end, kept->end_len);
		fl = kept->end_len;
	}
}

/* store_txn_expect_reads: kept for this read transaction (store.c calls it for reads only). */
void store_etcd_expect_reads(struct store_txn *txn, enum store_space space, const void *prefix,
			     size_t prefix_len)
{
	struct store_etcd_txn *t = ETXN(txn);
	struct etcd_ahead *a;

	if (t->n_ahead == ETCD_AHEAD_MAX)
		return;	/* a hint: the reads go out one by one */
	a = &t->ahead[t->n_ahead++];
	a->lo_len = etcd_key(t->st, space, prefix, prefix_len, a->lo);
	a->hi_len = etcd_prefix_end(a->lo, a->lo_len, a->hi);
}

struct etcd_kept *etcd_read_ahead(struct store_etcd_txn *t, const uint8_t *k, size_t kl)
{
	for (int i = 0; i < t->n_ahead; i++) {
		struct etcd_ahead *a = &t->ahead[i];
		struct etcd_kept *page;

		if (kl < a->lo_len || memcmp(k, a->lo, a->lo_len) != 0)
			continue;
		if (a->skip) {
			a->skip--;
			return NULL;
		}
		if (a->last && a->served <= 1) {
			/* the last page held nothing the gets wanted: back off */
			a->backoff = a->backoff ? 2 * a->backoff : 8;
			if (a->backoff > 256)
				a->backoff = 256;
			a->skip = a->backoff - 1;	/* this miss is the first */
			a->last = NULL;
			return NULL;
		}
		if (a->last)
			a->backoff = 0;	/* it paid */
		a->limit = !a->last ? ETCD_AHEAD_FIRST :
			   a->limit * 4 > ETCD_PAGE_AHEAD ? ETCD_PAGE_AHEAD : a->limit * 4;
		if (read_page(t, k, kl, a->hi, a->hi_len, false, a->limit, &page))
			return NULL;
		a->last = page;
		a->served = 0;	/* the get that read it counts itself */
		return page;
	}
	return NULL;
}

void etcd_read_ahead_served(struct store_etcd_txn *t, const struct etcd_kept *page)
{
	for (int i = 0; i < t->n_ahead; i++)
		if (t->ahead[i].last == page)
			t->ahead[i].served++;
}

/*
 * Reads the next page: from the position, or after the current page when
 * that is further. A page read before in the transaction that holds the
 * place serves without a round trip; when an earlier scan's range holds the
 * place but its pages stopped short (a walk over the children of one
 * document, each scanned in turn), that range is read on from here, in a
 * big page.
 */
static int fetch(struct store_etcd_scan *s)
{
	uint8_t from[ETCD_KEY_MAX];
	size_t fl;
	int rc;
	struct etcd_kept *kept, *prev;

	memcpy(from, s->cur, s->cur_len);
	fl = s->cur_len;
	if (!s->incl)
		from[fl++] = 0;	/* the first key after cur */
	if (s->page && store_key_cmp(s->pend, s->pend_len, from, fl) > 0) {
		memcpy(from, s->pend, s->pend_len);	/* the last page read up to there */
		fl = s->pend_len;
	}
	if (s->skip_len && store_key_cmp(s->skip, s->skip_len, from, fl) > 0) {
		memcpy(from, s->skip, s->skip_len);
		fl = s->skip_len;
	}
	if (s->walk && (!s->skel_tried || (s->skel_more && store_key_cmp(from, fl, s->skel_until,
								      s->skel_until_len) >= 0)) &&
	    (s->walk_seeks < ETCD_KIDS_WALK || s->skel_deferred) && !s->txn->base.write &&
	    s->txn->st->kids && s->base.space == STORE_SPACE_DATA) {
		/*
		 * Children with big subtrees: their first keys, not their
		 * subtrees. A listing that starts in a page read before (the
		 * lookup's, or the last listing's in this snapshot) goes on
		 * from its end, where that listing's window starts, however
		 * many small children that page held: what follows them may
		 * be big, and that page's range runs to the container's end.
		 */
		if (!s->skel_tried && !s->skel_deferred &&
		    etcd_txn_page_covering(s->txn, from, fl, !s->keys_only)) {
			s->skel_deferred = true;
		} else {
			s->skel_tried = true;
			(void)etcd_kids_prefetch(s, from, fl);	/* failing, the pages below serve */
		}
	}
	s->walk_seeks = 0;
	if (s->skel) {
		struct etcd_skel *sk = etcd_kids_covering(s, from, fl);

		if (sk) {
			s->page = sk->r;
			for (s->idx = 0; s->idx < s->page->len; s->idx++)
				if (store_key_cmp(s->page->kvs[s->idx].key, s->page->kvs[s->idx].key_len,
					    from, fl) >= 0)
					break;
			memcpy(s->from, from, fl);
			s->from_len = fl;
			memcpy(s->pend, sk->end, sk->end_len);
			s->pend_len = sk->end_len;
			return 0;
		}
	}
	kept = etcd_txn_page_covering(s->txn, from, fl, !s->keys_only);
	if ((rc = guard_flush(s)))	/* the page it leaves: what it looked at there */
		return rc;
	if (kept && s->txn->base.write && s->txn->snap && kept->reader != s->txn->id) {
		/* another transaction read it: this write guards what it looks at, as it goes */
		s->gpage = kept;
		memcpy(s->gfrom, from, fl);
		s->gfrom_len = fl;
	}
	if (!kept && (prev = etcd_txn_page_before(s->txn, from, fl, !s->keys_only))) {
		/* from here on in that earlier range, in a big page: the next scans find it read */
		const uint8_t *hi = prev->scan_hi;
		size_t hl = prev->scan_hi_len;

		if (s->txn->base.write && prev->reader != s->txn->id &&
		    ((hl == 1 && !hi[0]) || store_key_cmp(s->hi, s->hi_len, hi, hl) < 0)) {
			hi = s->hi;	/* another's range: a write reads (and guards) its own */
			hl = s->hi_len;
		}
		s->fetches++;
		rc = read_page(s->txn, from, fl, hi, hl, !prev->has_vals, ETCD_PAGE_AHEAD, &kept);
		if (rc)
			return rc;
	}
	if (!kept) {
		uint8_t bound[ETCD_KEY_MAX];
		const uint8_t *hi = s->hi;
		size_t hl = s->hi_len, bl;
		/*
		 * A lookup's first page of a container: bounded once it is
		 * known to be big, and always for the root, which holds
		 * every key of the store (a mount's first stat of it), and
		 * in a process without a watch (`kvfs ls`), whose handle
		 * learns nothing for later; otherwise where a listing of its
		 * parent says for free.
		 */
		bool start = s->base.space == STORE_SPACE_DATA && !s->txn->base.write &&
			     s->txn->st->kids && fl == s->lo_len && memcmp(from, s->lo, fl) == 0;

		if (start && (s->lo_len == s->base_len || etcd_kids_is_big(s->txn->st, s->lo, s->lo_len) ||
			      !etcd_feed_running(s->txn->st))) {
			rc = etcd_kids_first_bound(s, bound, &bl);
			if (rc < 0)
				return rc;
			if (rc == 1) {
				hi = bound;
				hl = bl;
			}
		} else if (start && etcd_kids_window_bound(s, bound, &bl)) {
			hi = bound;	/* its parent's listing knows where its first container starts */
			hl = bl;
		}
		s->fetches++;
		rc = read_page(s->txn, from, fl, hi, hl, s->keys_only, ETCD_PAGE, &kept);
		if (rc) {
			s->page = NULL;
			return rc;
		}
		if (start && hi == s->hi && kept->r.count > ETCD_BIG_KEYS)
			etcd_kids_note_big(s->txn->st, s->lo, s->lo_len);
	}
	/* a page read before (by this scan or another) serves from where it holds `from` */
	s->page = &kept->r;
	for (s->idx = 0; s->idx < s->page->len; s->idx++)
		if (store_key_cmp(s->page->kvs[s->idx].key, s->page->kvs[s->idx].key_len, from, fl) >= 0)
			break;
	memcpy(s->from, from, fl);
	s->from_len = fl;
	memcpy(s->pend, kept->end, kept->end_len);
	s->pend_len = kept->end_len;
	return 0;
}

/* The next key of etcd at or past the position that the buffer does not override: 1, 0, <0. */
static int etcd_next(struct store_etcd_scan *s, const struct etcd_kv **out)
{
	for (;;) {
		const struct etcd_kv *kv;

		if (!s->page || s->idx >= s->page->len) {
			int rc;

			if (s->page && ((s->pend_len == 1 && s->pend[0] == 0) ||
					store_key_cmp(s->pend, s->pend_len, s->hi, s->hi_len) >= 0)) {
				guard_upto(s, s->hi, s->hi_len);
				return 0;	/* the page held everything up to the end */
			}
			if (store_key_cmp(s->cur, s->cur_len, s->hi, s->hi_len) >= 0)
				return 0;	/* sought past the prefix */
			if (s->page)
				guard_upto(s, s->pend, s->pend_len);	/* it went through the page */
			rc = fetch(s);
			if (rc)
				return rc;
			continue;
		}
		kv = &s->page->kvs[s->idx];
		if (store_key_cmp(kv->key, kv->key_len, s->hi, s->hi_len) >= 0) {
			guard_upto(s, s->hi, s->hi_len);
			return 0;	/* a page of a wider scan: past this one's end */
		}
		if (s->gpage) {
			uint8_t up[ETCD_KEY_MAX + 1];

			guard_upto(s, up, etcd_key_after(kv, up));
		}
		if (!past_cur(s, kv->key, kv->key_len) ||
		    (s->skip_len && store_key_cmp(kv->key, kv->key_len, s->skip, s->skip_len) < 0)) {
			s->idx++;
			continue;
		}
		if (s->txn->base.write) {
			const void *v, *end;
			size_t vl, el;

			if (etcd_buf_covering(s->txn->buf, kv->key, kv->key_len, &end, &el)) {
				/* a range this attempt deleted: skip it whole */
				if (store_key_cmp(end, el, s->hi, s->hi_len) >= 0 || (el == 1 && !*(const uint8_t *)end))
					return 0;
				memcpy(s->skip, end, el);
				s->skip_len = el;
				s->idx++;
				continue;
			}
			if (etcd_buf_get(s->txn->buf, kv->key, kv->key_len, &v, &vl) != -ENOENT) {
				s->idx++;	/* written or deleted here: the buffer answers */
				continue;
			}
		}
		*out = kv;
		return 1;
	}
}

int store_etcd_scan_next(struct store_scan *sb, struct store_val *key, struct store_val *val)
{
	struct store_etcd_scan *scan = ESCAN(sb);
	const struct etcd_kv *kv = NULL;
	const void *bk = NULL, *bv = NULL;
	size_t bkl = 0, bvl = 0;
	int rc = scan->txn->resv ? etcd_val_flush(scan->txn) : 0, has_b = 0;

	scan->stepped = true;
	if (rc == 0)
		rc = etcd_next(scan, &kv);

	if (rc < 0)
		return rc;
	if (rc == 0)
		kv = NULL;
	if (scan->txn->base.write)
		has_b = etcd_buf_next_put(scan->txn->buf, scan->cur, scan->cur_len, scan->incl,
					  scan->hi, scan->hi_len, &bk, &bkl, &bv, &bvl);
	if (has_b && (!kv || store_key_cmp(bk, bkl, kv->key, kv->key_len) < 0)) {
		memcpy(scan->cur, bk, bkl);
		scan->cur_len = bkl;
		scan->incl = false;
		key->data = (const uint8_t *)bk + scan->base_len;
		key->len = bkl - scan->base_len;
		val->data = bv;
		val->len = bvl;
		if (scan->keys_only)
			return 1;	/* counting: a big value is not assembled */
		rc = etcd_val_resolve(scan->txn, bk, bkl, 0, &val->data, &val->len);
		return rc < 0 ? rc : 1;
	}
	if (!kv)
		return 0;
	scan->idx++;
	memcpy(scan->cur, kv->key, kv->key_len);
	scan->cur_len = kv->key_len;
	scan->incl = false;
	key->data = kv->key + scan->base_len;
	key->len = kv->key_len - scan->base_len;
	val->data = kv->val ? (const void *)kv->val : (const void *)"";
	val->len = kv->val_len;
	if (scan->keys_only)
		return 1;
	rc = etcd_val_resolve(scan->txn, kv->key, kv->key_len, kv->mod_rev, &val->data, &val->len);
	return rc < 0 ? rc : 1;
}

/* Moves the position to the tuple key k (up to STORE_KEY_MAX + 1 bytes: a subtree's end). */
static void seek_to(struct store_etcd_scan *scan, const void *key, size_t key_len)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = scan->base_len;

	memcpy(k, scan->lo, scan->base_len);
	memcpy(k + kl, key, key_len);
	kl += key_len;
	if (store_key_cmp(k, kl, scan->lo, scan->lo_len) < 0) {
		memcpy(k, scan->lo, scan->lo_len);
		kl = scan->lo_len;
	}
	if (etcd_kids_is_child_end(scan, key, key_len)) {
		scan->walk = true;	/* past one child: a listing */
		scan->walk_seeks++;
	}
	memcpy(scan->cur, k, kl);
	scan->cur_len = kl;
	scan->incl = true;
	scan->skip_len = 0;	/* found again from the buffer if k lies in a deleted range */
	/* the page holds every key from where it was read: still good when that is not past k */
	if (scan->page && store_key_cmp(scan->from, scan->from_len, k, kl) > 0)
		scan->page = NULL;
	if (scan->page) {
		scan->idx = 0;	/* skip what lies before the position */
		while (scan->idx < scan->page->len) {
			const struct etcd_kv *e = &scan->page->kvs[scan->idx];

			if (store_key_cmp(e->key, e->key_len, k, kl) >= 0)
				break;
			scan->idx++;
		}
	}
}

/* Keys below the prefix seek to the prefix; keys past it end the scan on the next step. */
int store_etcd_scan_seek(struct store_scan *sb, const void *key, size_t key_len)
{
	struct store_etcd_scan *scan = ESCAN(sb);
	if (key_len > STORE_KEY_MAX + 1)
		return -ENAMETOOLONG;	/* a subtree's end (key + 0xff) may be one longer */
	if (!scan->stepped)
		scan->resumed = true;
	seek_to(scan, key, key_len);
	return 0;
}
