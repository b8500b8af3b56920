/*
 * lib/etcd/etcd_client.h - the etcd client library's public face: a small
 * client of etcd v3's JSON gateway (POST /v3/kv/range, /v3/kv/put,
 * /v3/kv/deleterange, /v3/kv/txn, /v3/lease/..., /v3/watch) over libcurl,
 * the JSON read and written with cJSON, keys and values base64-coded on
 * the wire. It knows nothing of kvfs (no store/ header); the etcd backend
 * (store/etcd/, docs/ETCD.md) is built on it, and nothing above store/
 * may include it.
 *
 * Threads: a handle is one libcurl easy handle with its kept-alive
 * connection and is NOT thread-safe. Give every thread its own handle (the
 * backend keeps one per reader/writer thread and one for the watch thread);
 * the only call that may come from another thread is etcd_client_cancel.
 * libcurl's global set-up runs once, inside the first etcd_client_open.
 *
 * Errors: every call returns 0 or -errno and never exits; the handle keeps a
 * one-line message for the last error (etcd_client_error):
 *   -ECONNREFUSED no member could be reached     -ETIMEDOUT  a member stopped answering
 *   -E2BIG        request over --max-request-bytes ("request is too large" or
 *                 gRPC ResourceExhausted; "too many requests" is -EAGAIN)
 *   -ENOSPC       the cluster's space quota is used up (the NOSPACE alarm)
 *   -EINVAL       etcd refused the request (a key twice in one Txn)
 *   -EMSGSIZE     more operations or compares in a Txn than --max-txn-ops
 *   -ENOENT       lease not found                -ESTALE     revision compacted
 *   -EAGAIN       cluster unavailable (no leader) -EACCES    auth refused
 *   -EPROTO       an answer that is not the expected JSON   -ECANCELED cancelled
 * Fail-over: when a member cannot be connected to (nothing was sent), the
 * call is tried on the next member of the list, each at most once; the
 * member that answered is kept for the next calls. A member that was
 * reached but did not answer in time (hung, or cut off by the network
 * while the rest of the cluster serves) is noted in the handle's health
 * table (shared by the clients of one store: etcd_client_share_health)
 * and passed over by every call for ETCD_DOWN_MS; a call that only reads
 * (a range, a Txn of ranges) waits ETCD_READ_TRY_MS there while another
 * member may answer and is then tried again on the next member; a Txn
 * sent with etcd_client_txn_settled waits as long and returns -ETIMEDOUT
 * (its caller settles it and sends it again, to the next member); any
 * other call waits the handle's limit and returns -ETIMEDOUT, its outcome
 * unknown to the caller. Every limit ends at the calling thread's deadline
 * (etcd_deadline_begin) when it has one.
 */
#ifndef KVFS_ETCD_CLIENT_H
#define KVFS_ETCD_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etcd_client;

#define ETCD_MEMBERS_MAX 16	/* members one client knows at most */
#define ETCD_DOWN_MS 30000	/* a member that stopped answering is passed over this long */
#define ETCD_READ_TRY_MS 2000	/* a read waits this long for a member while others may answer */
#define ETCD_CONFIRM_MS 2000	/* a watch asks its member this often whether it is current */
#define ETCD_PROBE_MS 2000	/* ... and, silent, ends when it does not answer within this */
#define ETCD_CONNECT_MS 1000	/* a connection not made within this is given up */
/*
 * A watch's member whose question is slower than this (and four times its
 * last answer) is asked of another member too, in turns of this long.
 */
#define ETCD_QUESTION_TURN_MS 500
/*
 * ... a watch's within this, and tried again 0.2 s later (store/etcd's
 * feed): a SYN dropped in a cut is sent again only after 1 s, so after the
 * heal a watch waited out up to 1 s for an attempt begun in the cut. A
 * try whose TLS handshake this cut short is followed by one with
 * ETCD_CONNECT_MS (a handshake on a loaded machine).
 */
#define ETCD_WATCH_CONNECT_MS 500

/*
 * Members that stopped answering: until when each is passed over
 * (CLOCK_MONOTONIC ns, 0: never), by the position in the endpoint list;
 * and when the clients sharing it stop waiting for any member (0: never).
 * Zero it to start; it must outlive every client sharing it.
 */
struct etcd_health {
	_Atomic int64_t down_until_ns[ETCD_MEMBERS_MAX];
	_Atomic int64_t calls_end_ns;	/* set by etcd_health_end_calls */
	_Atomic int64_t answered_ns;	/* when a call of a client sharing it was last answered */
	_Atomic size_t answered_member;	/* ... and by which member (its place in the URL's list) */
	_Atomic size_t preferred;	/* where a client given it starts: etcd_client_prefer_leader */
};

/* One key-value as etcd returns it. key/val are heap, owned by the result holding them. */
struct etcd_kv {
	uint8_t *key;
	size_t key_len;
	uint8_t *val;	/* NULL with keys_only; a NUL follows its val_len bytes */
	size_t val_len;
	int64_t create_rev;	/* revision that created the key (0: absent) */
	int64_t mod_rev;	/* revision of its last change */
	int64_t version;	/* changes since creation */
	int64_t lease;	/* 0: none */
};

/* A range's answer; release with etcd_range_result_release. */
struct etcd_range_result {
	struct etcd_kv *kvs;
	size_t len;
	int64_t count;	/* keys in the whole range (may exceed len when limited) */
	bool more;	/* the limit cut the answer short */
	int64_t revision;	/* the store revision the answer was read at */
};

void etcd_range_result_release(struct etcd_range_result *r);

/*
 * endpoints: "HOST:PORT[,HOST:PORT...]" (an "http://" scheme is optional).
 * *out is heap; close it with etcd_client_close. On failure -errno and a
 * reason in why (may be NULL).
 */
int etcd_client_open(const char *endpoints, struct etcd_client **out, char *why, size_t why_len);
void etcd_client_close(struct etcd_client *c);
/* The last error's message; borrowed, valid until the next call on c. "" when none. */
const char *etcd_client_error(const struct etcd_client *c);
/* The endpoint the last call went to ("http://HOST:PORT"); borrowed from c. */
const char *etcd_client_endpoint(const struct etcd_client *c);
/* The next call goes to member i (modulo their count) first: batches of reads spread out. */
void etcd_client_spread(struct etcd_client *c, size_t i);
/*
 * Makes c note members that stopped answering in h, and pass over those
 * h names, with every client given the same h (one store's, same endpoint
 * list); without it c keeps a table of its own.
 */
void etcd_client_share_health(struct etcd_client *c, struct etcd_health *h);
/*
 * From ms from now on, every call of the clients sharing h (a watch too)
 * ends: one under way at that time at the latest (-ETIMEDOUT, a write's
 * outcome unknown), later ones at once, sending nothing. For a process
 * about to close its clients whatever the cluster does (a daemon's exit);
 * any thread.
 */
void etcd_health_end_calls(struct etcd_health *h, long ms);
/*
 * One deadline for every call the calling thread makes, on any client,
 * from now on (ms 0: none, the default): a call ends with -ETIMEDOUT once
 * ms passed since the later of this call and the last answer (HTTP 200,
 * no error) to any client sharing its health table, and is not sent at
 * all once they have. So an operation made of many calls, each tried on
 * several members and retried by its caller, fails within ms of the
 * cluster's last answer, whatever it had left to try, while one the
 * cluster keeps answering (a big commit's many requests, or another
 * thread's that it waits behind) goes on. Per thread, as a handle is used
 * by one thread at a time; the watch stream ignores it.
 */
void etcd_deadline_begin(long ms);
/* Whether a call of the thread ended, or was not sent, at its deadline since etcd_deadline_begin. */
bool etcd_deadline_passed(void);
/* The calling thread's deadline, for a thread that helps it: etcd_deadline_adopt there. */
struct etcd_deadline {
	int64_t span_ns, start_ns;	/* span 0: none */
};
struct etcd_deadline etcd_deadline_mine(void);
void etcd_deadline_adopt(struct etcd_deadline d);
/* Per-call time limit for unary calls, in ms (default 10000; 0 = none). */
void etcd_client_set_timeout(struct etcd_client *c, long ms);
/*
 * Makes the call running on c (a watch, typically) return -ECANCELED at
 * once: the flag is set and c's sockets are shut down, which wakes a
 * transfer waiting on them (libcurl alone would look at the flag only
 * about once a second). The one call that may come from another thread;
 * the next call on c runs normally again, on a new connection.
 */
void etcd_client_cancel(struct etcd_client *c);

/* Range options; a zeroed struct (or NULL) reads one key at the newest revision. */
struct etcd_range_opts {
	const void *range_end;	/* NULL: the single key; see ETCD_RANGE_END_* */
	size_t range_end_len;
	bool keys_only;
	bool count_only;
	int64_t limit;	/* 0: no limit */
	int64_t revision;	/* 0: newest; else read the store as of this revision */
};

/*
 * Half-open ranges: etcd reads [key, range_end). etcd_prefix_end writes the
 * end of "every key starting with p" into out (p_len bytes, at least 1) and
 * returns its length: p with its last byte below 0xff raised by one and the
 * rest cut. An empty prefix or one of only 0xff bytes gives the single byte
 * 0x00, which etcd reads as "to the end of the keyspace".
 */
size_t etcd_prefix_end(const void *p, size_t p_len, uint8_t *out);

int etcd_client_range(struct etcd_client *c, const void *key, size_t key_len,
	       const struct etcd_range_opts *opts, struct etcd_range_result *out);
/* *revision (may be NULL): the revision the put created. lease 0: none. */
int etcd_client_put(struct etcd_client *c, const void *key, size_t key_len,
	     const void *val, size_t val_len, int64_t lease, int64_t *revision);
/* range_end NULL: the single key. *deleted and *revision may be NULL. */
int etcd_client_delete_range(struct etcd_client *c, const void *key, size_t key_len,
		      const void *range_end, size_t range_end_len,
		      int64_t *deleted, int64_t *revision);

/*
 * Discards the history before `revision` (what auto-compaction does on a
 * timer); reads and watches from older revisions then give -ESTALE.
 * physical: wait until the space is really freed.
 */
int etcd_client_compact(struct etcd_client *c, int64_t revision, bool physical);

/* Txn compares: target of `key` (or of every key in [key, range_end)) against a value. */
enum etcd_cmp_target { ETCD_CMP_MOD, ETCD_CMP_CREATE, ETCD_CMP_VERSION, ETCD_CMP_VALUE };
enum etcd_cmp_result { ETCD_CMP_EQUAL, ETCD_CMP_GREATER, ETCD_CMP_LESS, ETCD_CMP_NOT_EQUAL };

struct etcd_cmp {
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	const void *key;
	size_t key_len;
	const void *range_end;	/* NULL: the key alone */
	size_t range_end_len;
	int64_t rev;	/* for MOD, CREATE, VERSION (create_rev 0 == "absent") */
	const void *val;	/* for VALUE */
	size_t val_len;
};

enum etcd_op_type { ETCD_OP_RANGE, ETCD_OP_PUT, ETCD_OP_DELETE };

/* One operation of a Txn branch; for RANGE, range_end/keys_only/limit apply. */
struct etcd_op {
	enum etcd_op_type type;
	const void *key;
	size_t key_len;
	const void *range_end;
	size_t range_end_len;
	const void *val;	/* PUT */
	size_t val_len;
	int64_t lease;	/* PUT; 0: none */
	bool keys_only;	/* RANGE */
	int64_t limit;	/* RANGE; 0: none */
	int64_t revision;	/* RANGE; 0: the newest, else read as of it (a listing's pinned revision) */
};

/* A Txn's answer; release with etcd_txn_result_release. */
struct etcd_txn_result {
	bool succeeded;	/* every compare held: the success branch ran */
	int64_t revision;	/* store revision after the Txn */
	struct etcd_range_result *ranges;	/* one per op of the branch that ran; filled for RANGE ops */
	size_t len;
};

void etcd_txn_result_release(struct etcd_txn_result *r);

/*
 * Runs one Txn: if every compare holds, the success ops, else the failure
 * ops, atomically. A failed compare is not an error (0, succeeded false).
 * Its compares are judged at the cluster's newest revision (linearizable),
 * a Txn of compares alone too: it is sent with a range that etcd must
 * serve linearizably, whose answer is not returned (out->len 0).
 */
int etcd_client_txn(struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
	     const struct etcd_op *success, size_t n_success,
	     const struct etcd_op *failure, size_t n_failure, struct etcd_txn_result *out);
/*
 * etcd_client_txn for a Txn whose caller can learn afterwards whether it
 * was applied, and whose compares fail it should it land after a second
 * sending did (kvfs: its writer key): on a member that does not answer
 * within ETCD_READ_TRY_MS while another may, it returns -ETIMEDOUT then,
 * not after the handle's whole limit, and the member is passed over, so
 * that the caller's next sending goes to another member.
 */
int etcd_client_txn_settled(struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
			    const struct etcd_op *success, size_t n_success,
			    const struct etcd_op *failure, size_t n_failure,
			    struct etcd_txn_result *out);

/* A member's room: its database and the quota it enforces. */
struct etcd_status {
	int64_t db_size;	/* bytes of the database file: what the quota is checked against */
	int64_t db_in_use;	/* of them, in use; the rest is free pages that writes reuse */
	int64_t quota;	/* --quota-backend-bytes in effect; 0: the member did not say */
};

/*
 * The current member's status (POST /v3/maintenance/status). The quota is
 * in that answer from etcd 3.6 on; before, it is read from the member's
 * /metrics page (etcd_server_quota_backend_bytes), and 0 when that cannot
 * be read either.
 */
int etcd_client_status(struct etcd_client *c, struct etcd_status *out);

/*
 * Moves c, and every client that shares its health table from then on,
 * to the cluster's leader, asked of the current member (Maintenance
 * Status, then the member list): a request the leader gets saves the hops
 * a follower makes to it (a commit is forwarded to the leader, and waits
 * for the leader's word that it is committed; a linearizable read asks
 * the leader for its index). Only when the endpoint list names exactly
 * the cluster's members by their advertised client URLs: a list that
 * names another address (a proxy, a relay) keeps its order. 0 when c
 * moved or stays on the leader; -ENOENT when the list is not the
 * cluster's or no leader is known; -errno of a failed call. Nothing moves
 * on a failure, and a later change of leader moves nothing either (the
 * members pass requests on to it).
 */
int etcd_client_prefer_leader(struct etcd_client *c);

/* Leases: grant (ttl seconds; *id out, *granted may be NULL), revoke, one keep-alive round. */
int etcd_client_lease_grant(struct etcd_client *c, int64_t ttl, int64_t *id, int64_t *granted);
int etcd_client_lease_revoke(struct etcd_client *c, int64_t id);
/* *ttl (may be NULL): the lease's renewed TTL. -ENOENT when the lease has expired. */
int etcd_client_lease_keepalive(struct etcd_client *c, int64_t id, int64_t *ttl);
/* *ttl: the seconds the lease has left, without renewing it; -1 when etcd no longer has it. */
int etcd_client_lease_ttl(struct etcd_client *c, int64_t id, int64_t *ttl);

/* A watch event; kv borrowed for the callback's duration. */
struct etcd_event {
	bool is_delete;
	const struct etcd_kv *kv;	/* a delete's kv has key and mod_rev only */
	int64_t revision;	/* the header revision of the response carrying it */
	bool last;	/* the last event of its response: every change up to revision is delivered */
};

/*
 * Called once with ev NULL when the watch is established (so a caller knows
 * from when on it sees changes; etcd sends this even just before refusing a
 * compacted start revision), then once per event, in revision order.
 * Return 0 to go on, anything else to end the watch (etcd_watch returns it).
 */
typedef int (*etcd_watch_fn)(const struct etcd_event *ev, void *arg);
/*
 * What a watch_fn returns to end the stream and have the next
 * etcd_client_watch on the same client start on the same member (one that
 * just answered): a caller resuming from a later revision than the stream
 * would have sent (a backlog it will not read, say). Any other non-zero
 * value only ends it.
 */
#define ETCD_WATCH_AGAIN 2
/*
 * What etcd_client_watch returns when it left its member for another that
 * answered while it did not (it is behind, or cut off): the caller resumes
 * at once, and the next stream starts on the member that answered.
 */
#define ETCD_WATCH_MOVED 3

/*
 * Watches [key, range_end) (range_end NULL: the key alone) from start_rev
 * (0: from now) and blocks, delivering events to fn, until fn returns
 * non-zero, etcd_client_cancel (-ECANCELED), the stream breaks (-EPIPE or
 * the transport's error), or start_rev was compacted (-ESTALE; then
 * *compact_rev, may be NULL, is the oldest revision still available).
 * Not failed over mid-stream: the caller resumes from the last revision seen + 1.
 * Every ETCD_CONFIRM_MS the stream asks its member, on a connection of
 * its own driven beside the stream, for a linearizable read (which a
 * member cut off from the leader cannot answer): an answer confirms the
 * member current (etcd_client_confirmed_ns); none within ETCD_PROBE_MS
 * while the stream sent nothing either ends it with -ETIMEDOUT and notes
 * the member in the health table (a hung member, or one cut off from the
 * others, would keep a watch silent for good); a stream that sent through
 * an unanswered question is kept once. The first question is asked once
 * the member has created the watch, or ETCD_CONFIRM_MS after it was sent
 * when it has not; the next one ETCD_CONFIRM_MS after an answer. While a
 * question is slow (past ETCD_QUESTION_TURN_MS and four times the
 * member's last answer), or while no member confirmed since one failed
 * to, the other members are asked in turn, and the stream ends with
 * ETCD_WATCH_MOVED, its member noted, once one of them (or a call of a
 * client sharing c's health table) answered where its own did not: it is
 * behind, as one cut off with this host is while it catches up after the
 * heal. A watch starts on the member that answered such a call or
 * question last, when one did since the last stream began, else on the
 * member after the last stream's.
 */
int etcd_client_watch(struct etcd_client *c, const void *key, size_t key_len,
	       const void *range_end, size_t range_end_len, int64_t start_rev,
	       etcd_watch_fn fn, void *arg, int64_t *compact_rev);
/*
 * When the member of c's watch last answered its linearizable read
 * (CLOCK_MONOTONIC ns; 0: never): every commit up to then reaches the watch.
 * Any thread, while c is open.
 */
int64_t etcd_client_confirmed_ns(const struct etcd_client *c);
/*
 * The revision the member of the running watch had when it created it
 * (its answer's header): what it sends first after a start_rev below it
 * is the backlog up to there. 0 before the watch is created. The watch's
 * thread (its watch_fn), while etcd_client_watch runs.
 */
int64_t etcd_client_watch_created_rev(const struct etcd_client *c);

/* Base64 (RFC 4648, padded), exposed for tests. encode: out >= 4*((n+2)/3)+1 bytes, NUL-ended. */
size_t etcd_b64_encode(const void *in, size_t n, char *out);
/* decode: out >= 3*(n/4) bytes; returns the length or -EINVAL on bad input. */
long etcd_b64_decode(const char *in, size_t n, uint8_t *out);

#endif
