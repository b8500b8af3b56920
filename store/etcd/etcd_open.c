/*
 * store/etcd/etcd_open.c - opening and closing a store named
 * etcd://HOST:PORT[,HOST:PORT...]/PREFIX (docs/ETCD.md section 3): the URL,
 * the meta keys written at creation or checked at open (a prefix holding
 * anything else is refused), removal of a store this handle created, the
 * store-wide reads (info, the newest revision), the end of its calls
 * (at exit, and each request's deadline), and the cluster's limits on a
 * Txn as the handle learns them.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- open and close ---- */

/* Splits etcd://ENDPOINTS/PREFIX[?OPTIONS] into st (the options go with the endpoints). */
static int parse_url(struct store_etcd *st, const char *url, char *why, size_t why_len)
{
	const char *rest = url + 7, *slash = strchr(rest, '/');
	size_t plen;

	if (!slash || slash == rest) {
		store_say(why, why_len, "%s: expected etcd://HOST:PORT[,HOST:PORT...]/PREFIX", url);
		return -EINVAL;
	}
	const char *query = strchr(slash, '?');

	/* the endpoints, with the URL's options (?user=...&cacert=...) for the client */
	plen = (size_t)(slash - rest);
	st->endpoints = malloc(plen + (query ? strlen(query) : 0) + 1);
	if (!st->endpoints)
		return -ENOMEM;
	memcpy(st->endpoints, rest, plen);
	strcpy(st->endpoints + plen, query ? query : "");
	slash++;
	plen = query ? (size_t)(query - slash) : strlen(slash);
	while (plen && slash[plen - 1] == '/')
		plen--;	/* etcd://h/team/docs/ names the same store as .../team/docs */
	if (plen == 0) {
		store_say(why, why_len, "%s: no PREFIX after the endpoints (etcd://HOST:PORT/PREFIX)", url);
		return -EINVAL;
	}
	if (plen > ETCD_PREFIX_MAX) {
		store_say(why, why_len, "%s: PREFIX longer than %d bytes", url, ETCD_PREFIX_MAX);
		return -ENAMETOOLONG;
	}
	memcpy(st->prefix, slash, plen);
	st->prefix[plen] = 0;	/* keeps store "a" apart from store "a/b" */
	st->prefix_len = plen + 1;
	return 0;
}

/* Writes the meta keys when nothing holds the format key yet. 0, or 1 when someone else did first. */
static int create_meta(struct store_etcd *st, struct etcd_client *c)
{
	uint8_t fk[ETCD_KEY_MAX], ck[ETCD_KEY_MAX], fv[4], cv[8];
	size_t fl = etcd_key(st, STORE_SPACE_META, "format", 6, fk);
	size_t cl = etcd_key(st, STORE_SPACE_META, "created", 7, ck);
	struct etcd_cmp cmp = { .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL,
				.key = fk, .key_len = fl, .rev = 0 };
	uint8_t kk[ETCD_KEY_MAX];
	size_t kl = etcd_kids_marker(st, kk);
	struct etcd_op ops[3] = {
		{ .type = ETCD_OP_PUT, .key = fk, .key_len = fl, .val = fv, .val_len = 4 },
		{ .type = ETCD_OP_PUT, .key = ck, .key_len = cl, .val = cv, .val_len = 8 },
		/* the children space is kept from the first commit on, container records' too */
		{ .type = ETCD_OP_PUT, .key = kk, .key_len = kl, .val = "3", .val_len = 1 },
	};
	struct etcd_txn_result r;
	int rc;

	st->base.created_ns = store_now_ns();
	put_be(fv, STORE_FORMAT_VERSION, 4);
	put_be(cv, (uint64_t)st->base.created_ns, 8);
	rc = etcd_client_txn(c, &cmp, 1, ops, 3, NULL, 0, &r);
	if (rc)
		return rc;
	rc = r.succeeded ? 0 : 1;
	etcd_txn_result_release(&r);
	return rc;
}

/*
 * The format and creation keys and the children space's marker, in one
 * read-only Txn (one round trip, where three reads took three): 0 with
 * r holding their three answers in that order, or the error. When no
 * member takes a connection at all (each was tried), there is no cluster
 * to wait for, as there is for an election or a member restarting: a
 * wrong URL, or the cluster down, is said at once.
 */
static int meta_read(struct store_etcd *st, struct etcd_client *c, struct etcd_txn_result *r)
{
	uint8_t fk[ETCD_KEY_MAX], ck[ETCD_KEY_MAX], kk[ETCD_KEY_MAX];
	struct etcd_op ops[3] = {
		{ .type = ETCD_OP_RANGE, .key = fk,
		  .key_len = etcd_key(st, STORE_SPACE_META, "format", 6, fk) },
		{ .type = ETCD_OP_RANGE, .key = ck,
		  .key_len = etcd_key(st, STORE_SPACE_META, "created", 7, ck) },
		{ .type = ETCD_OP_RANGE, .key = kk, .key_len = etcd_kids_marker(st, kk) },
	};
	int rc = etcd_client_txn(c, NULL, 0, ops, 3, NULL, 0, r);

	if (rc && rc != -ECONNREFUSED)
		rc = etcd_read_txn_retry(c, ops, 3, r);
	if (rc == 0 && r->len != 3) {
		etcd_txn_result_release(r);
		rc = -EPROTO;
	}
	return rc;
}

/* Reads (or creates) the meta keys: the store's format and creation time. */
static int open_meta(struct store_etcd *st, struct etcd_client *c, const char *url,
		     char *why, size_t why_len)
{
	uint8_t end[ETCD_KEY_MAX];
	struct etcd_range_result r;
	struct etcd_txn_result meta;
	struct etcd_range_opts any = { .keys_only = true, .limit = 1 };
	size_t kl;
	int rc;

	for (int tries = 0; tries < 3; tries++) {
		rc = meta_read(st, c, &meta);
		if (rc)
			goto fail;
		if (meta.ranges[0].len == 1) {
			const struct etcd_range_result *f = &meta.ranges[0], *cr = &meta.ranges[1],
							*kr = &meta.ranges[2];
			uint64_t v = f->kvs[0].val_len == 4 ? get_be(f->kvs[0].val, 4) : 0;

			if (v == 0 || v > STORE_FORMAT_VERSION) {
				etcd_txn_result_release(&meta);
				if (v == 0) {
					store_say(why, why_len, "%s: not a kvfs store (no format version)", url);
					return -EINVAL;
				}
				store_say(why, why_len, "store format %llu is newer than this kvfs supports (%d)",
				    (unsigned long long)v, STORE_FORMAT_VERSION);
				return -EPROTONOSUPPORT;
			}
			atomic_store(&st->base.format, (unsigned)v);
			if (cr->len == 1 && cr->kvs[0].val_len == 8)
				st->base.created_ns = (int64_t)get_be(cr->kvs[0].val, 8);
			/* a store created before the children space lists by its pages */
			st->kids = kr->len == 1;
			st->kids_records = kr->len == 1 && kr->kvs[0].val_len == 1 &&
					   (kr->kvs[0].val[0] == '2' || kr->kvs[0].val[0] == '3');
			st->kids_trust = st->kids_records && kr->kvs[0].val[0] == '3';
			etcd_txn_result_release(&meta);
			return 0;
		}
		etcd_txn_result_release(&meta);
		/* no format key: is anything else under the prefix? */
		any.range_end = end;
		any.range_end_len = etcd_prefix_end(st->prefix, st->prefix_len, end);
		rc = etcd_client_range(c, st->prefix, st->prefix_len, &any, &r);
		if (rc)
			goto fail;
		kl = r.len;
		etcd_range_result_release(&r);
		if (kl) {
			store_say(why, why_len, "%s: not a kvfs store (keys under the prefix, no format version)",
			    url);
			return -EINVAL;
		}
		if (!(st->base.flags & STORE_OPEN_CREATE) || st->base.readonly) {
			store_say(why, why_len, "%s: no kvfs store there", url);
			return -ENOENT;
		}
		rc = create_meta(st, c);
		if (rc < 0)
			goto fail;
		if (rc == 0) {
			st->created = true;
			st->kids = st->kids_records = st->kids_trust = true;
			atomic_store(&st->base.format, STORE_FORMAT_VERSION);
			return 0;
		}
		/* another client created it meanwhile: read what it wrote */
	}
	store_say(why, why_len, "%s: the store's meta keys keep changing", url);
	return -EAGAIN;
fail:
	store_say(why, why_len, "%s: %s", url, etcd_client_error(c));
	return rc;
}

/* Releases the backend's part of st (store.c frees st). */
static void release(struct store_etcd *st)
{
	store_etcd_feed_stop(st);
	etcd_snap_retire(st, INT64_MAX);
	etcd_val_cache_drop(st);
	for (size_t i = 0; i < st->n_pool; i++)
		etcd_client_close(st->pool[i]);
	st->n_pool = 0;
	pthread_mutex_destroy(&st->write_lock);
	pthread_mutex_destroy(&st->pool_lock);
	pthread_mutex_destroy(&st->feed_lock);
	pthread_mutex_destroy(&st->snap_lock);
	pthread_mutex_destroy(&st->big_lock);
	pthread_mutex_destroy(&st->room_lock);
	pthread_mutex_destroy(&st->silent_lock);
	free(st->endpoints);
	st->endpoints = NULL;
}

int store_etcd_open(struct store *sb, const char *url, unsigned flags, char *why, size_t why_len)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_client *c = NULL;
	int rc;

	(void)flags;	/* as in sb->flags */
	pthread_mutex_init(&st->write_lock, NULL);
	pthread_mutex_init(&st->pool_lock, NULL);
	pthread_mutex_init(&st->feed_lock, NULL);
	pthread_mutex_init(&st->snap_lock, NULL);
	pthread_mutex_init(&st->big_lock, NULL);
	pthread_mutex_init(&st->room_lock, NULL);
	pthread_mutex_init(&st->silent_lock, NULL);
	st->silent_keep_ns = (int64_t)ETCD_SILENT_KEEP_MS * 1000000;
	if (getenv("KVFS_ETCD_TEST_SILENT_KEEP_MS"))
		st->silent_keep_ns = atoll(getenv("KVFS_ETCD_TEST_SILENT_KEEP_MS")) * 1000000;
	if (getenv("KVFS_ETCD_TEST_READ_MS"))
		st->test_read_us = (unsigned)atoi(getenv("KVFS_ETCD_TEST_READ_MS")) * 1000u;
	if (getenv("KVFS_ETCD_TEST_NOTE_LATE_MS"))
		st->test_note_late_us = (unsigned)atoi(getenv("KVFS_ETCD_TEST_NOTE_LATE_MS")) * 1000u;
	st->oneshot = st->base.flags & STORE_OPEN_ONESHOT;
	atomic_init(&st->txn_ops, ETCD_TXN_OPS);
	atomic_init(&st->txn_bytes, ETCD_TXN_BYTES);
	atomic_init(&st->limits_probed, false);
	atomic_init(&st->txn_ids, 0);
	if (strncmp(url, "etcd://", 7) != 0) {
		store_say(why, why_len, "%s: not an etcd:// URL", url);
		rc = -EINVAL;
		goto release;
	}
	rc = parse_url(st, url, why, why_len);
	if (rc)
		goto release;
	rc = etcd_client_open_for(st, &c, why, why_len);
	if (rc)
		goto release;
	{
		/* messages name the store without its options: no password in them */
		char *shown = strndup(url, strcspn(url, "?"));

		rc = shown ? open_meta(st, c, shown, why, why_len) : -ENOMEM;
		free(shown);
	}
	if (rc)
		goto close_client;
	/*
	 * A mount's requests go to the leader: a follower passes each commit
	 * and each confirmed read on to it and waits for its answer (about
	 * 1 ms a copied file of two requests, docs/SPEED.md). Best effort; a
	 * one-shot CLI call is not worth its two requests.
	 */
	if (!st->oneshot)
		(void)etcd_client_prefer_leader(c);
	etcd_client_give(st, c);
	return 0;
close_client:
	etcd_client_close(c);
release:
	release(st);
	return rc;
}

void store_etcd_close(struct store *sb, bool discard)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_client *c;
	uint8_t k[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	size_t kl;

	store_etcd_feed_stop(st);
	if (etcd_client_take(st, &c) == 0) {
		/* best effort: a failure leaves an empty-looking store that open refuses clearly */
		if (discard && st->created) {
			kl = etcd_prefix_end(st->prefix, st->prefix_len, end);
			(void)etcd_client_delete_range(c, st->prefix, st->prefix_len, end, kl, NULL, NULL);
		} else if (atomic_load(&st->seq)) {
			/* our writer key is only needed while our commits can be in doubt */
			kl = etcd_writer_key(st, k);
			(void)etcd_client_delete_range(c, k, kl, NULL, 0, NULL, NULL);
		}
		etcd_client_give(st, c);
	}
	release(st);
}

void store_etcd_end_calls(struct store *sb, unsigned ms)
{
	etcd_health_end_calls(&ETCD(sb)->health, (long)ms);
}

/*
 * The thread's deadline, whichever clients of the pool it takes. When an
 * earlier request waited a deadline at least as long and nothing answered
 * since, the cluster is known silent: this one counts as begun ms -
 * ETCD_SILENT_TRY_MS ago, so it waits that long for a first answer, and
 * the whole ms from any answer on. So a file-system call made of several
 * requests (a lookup the kernel sends again after its revalidation failed,
 * a flush and a release) is refused within one deadline and a try. The
 * mark is kept ETCD_SILENT_KEEP_MS: then a request waits its whole
 * deadline again (and, unanswered, notes the silence anew).
 */
void store_etcd_deadline(struct store *sb, unsigned ms)
{
	struct store_etcd *st = ETCD(sb);
	int64_t span = (int64_t)ms * 1000000;
	bool silent;

	etcd_deadline_begin((long)ms);
	if (ms <= ETCD_SILENT_TRY_MS)
		return;
	pthread_mutex_lock(&st->silent_lock);
	silent = st->silent_span_ns >= span &&
		 atomic_load(&st->health.answered_ns) == st->silent_answered_ns &&
		 store_mono_ns() - st->silent_noted_ns < st->silent_keep_ns;
	pthread_mutex_unlock(&st->silent_lock);
	if (silent) {
		struct etcd_deadline d = etcd_deadline_mine();

		d.start_ns -= span - (int64_t)ETCD_SILENT_TRY_MS * 1000000;
		etcd_deadline_adopt(d);
	}
}

/* The keys of the data space at the newest revision (*count), and that revision (*rev). */
static int data_count(struct store_etcd *st, struct etcd_client *c, uint64_t *count, uint64_t *rev)
{
	struct etcd_range_result r;
	uint8_t k[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	size_t kl = etcd_key(st, STORE_SPACE_DATA, NULL, 0, k);
	struct etcd_range_opts o = { .count_only = true, .range_end = end,
				     .range_end_len = etcd_prefix_end(k, kl, end) };
	int rc = etcd_client_range(c, k, kl, &o, &r);

	if (rc)
		return rc;
	*count = (uint64_t)r.count;
	*rev = (uint64_t)r.revision;
	etcd_range_result_release(&r);
	return 0;
}

/* A count of the data space at the newest revision; the revision too. */
int store_etcd_info(struct store *sb, struct store_info *out)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_client *c;
	int rc = etcd_client_take(st, &c);

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	rc = data_count(st, c, &out->entries, &out->last_txn_id);
	etcd_client_give(st, c);
	out->created_ns = st->base.created_ns;
	return rc;
}

/*
 * Asks the cluster (a member's status, the data space's count) for
 * store_room. The room is the member's: every store of the cluster
 * shares its quota, and etcd refuses writes (NOSPACE) once its database
 * file would pass it; free pages inside the file are reused first, so
 * what is left is the quota less the part in use.
 */
static int room_ask(struct store_etcd *st, struct store_room *out)
{
	struct etcd_status s;
	struct etcd_client *c;
	uint64_t rev;
	int rc = etcd_client_take(st, &c);

	if (rc)
		return rc;
	rc = etcd_client_status(c, &s);
	if (rc == 0)
		rc = data_count(st, c, &out->entries, &rev);
	etcd_client_give(st, c);
	if (rc)
		return rc;
	out->total_assumed = s.quota <= 0;
	out->total_bytes = out->total_assumed ? ETCD_QUOTA_DEFAULT : (uint64_t)s.quota;
	out->used_bytes = (uint64_t)s.db_in_use;
	out->free_bytes = out->total_bytes > out->used_bytes ? out->total_bytes - out->used_bytes : 0;
	return 0;
}

int store_etcd_room(struct store *sb, struct store_room *out)
{
	struct store_etcd *st = ETCD(sb);
	int64_t now = store_mono_ns();
	int rc = 0;

	/* one asker at a time: the others of a df storm wait for its answer and take it */
	pthread_mutex_lock(&st->room_lock);
	if (!st->room_ns || now - st->room_ns >= (int64_t)ETCD_ROOM_MS * 1000000) {
		rc = room_ask(st, &st->room);
		st->room_ns = rc ? 0 : now;
	}
	if (rc == 0)
		*out = st->room;
	pthread_mutex_unlock(&st->room_lock);
	return rc;
}

/* The newest revision, read from the cluster (one round trip); 0 when unreachable. */
uint64_t etcd_newest_revision(struct store_etcd *st)
{
	struct etcd_client *c;
	struct etcd_range_result r;
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_key(st, STORE_SPACE_META, "format", 6, k);
	struct etcd_range_opts o = { .count_only = true };
	uint64_t rev = 0;

	if (etcd_client_take(st, &c))
		return 0;
	if (etcd_range_retry(c, k, kl, &o, &r) == 0) {
		rev = (uint64_t)r.revision;
		etcd_range_result_release(&r);
	}
	etcd_client_give(st, c);
	return rev;
}

/* ---- the cluster's limits ---- */

size_t etcd_txn_ops(struct store_etcd *st)
{
	return atomic_load_explicit(&st->txn_ops, memory_order_relaxed);
}

size_t etcd_txn_bytes(struct store_etcd *st)
{
	return atomic_load_explicit(&st->txn_bytes, memory_order_relaxed);
}

bool etcd_limits_lower(struct store_etcd *st, int rc, size_t used, size_t largest)
{
	bool ops = rc == -EMSGSIZE;
	atomic_size_t *limit = ops ? &st->txn_ops : &st->txn_bytes;
	size_t low = ops ? ETCD_TXN_OPS_LOW : ETCD_TXN_BYTES_LOW;
	size_t least = ops ? 8 : 64u << 10;
	size_t now = atomic_load(limit), next;

	if (rc != -EMSGSIZE && rc != -E2BIG)
		return false;
	if (now < used)
		return true;	/* another thread lowered it since: planning again is enough */
	if (!ops && now <= largest)
		return false;	/* one put is the budget already: it is too big by itself */
	next = now > low ? low : now / 2;
	if (next < least)
		return false;	/* nothing this small is refused for its size: give up */
	/* a lost race means someone else lowered it: that serves as well */
	(void)atomic_compare_exchange_strong(limit, &now, next);
	return true;
}
