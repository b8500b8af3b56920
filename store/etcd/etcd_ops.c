/*
 * store/etcd/etcd_ops.c - the etcd backend's table of operations (store/store_ops.h):
 * what store.c calls for a store named etcd://HOST:PORT[,...]/PREFIX. The
 * operations live in etcd_open.c (open, close, info, room, end_calls),
 * etcd_store.c (transactions, point operations), etcd_scan.c (scans and
 * the read hints), etcd_feed.c (position, changed_elsewhere, the feed),
 * etcd_lease.c (expiry) and etcd_kids_check.c (check, repair).
 * Abilities: the change feed, and keys that expire by themselves (leases);
 * every commit is durable when it returns (no sync), there is no local file
 * to copy or measure (the room is the cluster's quota), and none mapped
 * that a damaged store could fault in (its values are copies: no in_engine).
 */
#include "store/etcd/etcd_int.h"

const struct store_ops store_etcd_ops = {
	.name = "etcd",
	.abilities = STORE_CAN_FEED | STORE_CAN_EXPIRE,
	.store_size = sizeof(struct store_etcd),
	.txn_size = sizeof(struct store_etcd_txn),
	.scan_size = sizeof(struct store_etcd_scan),
	.core = {
		.open = store_etcd_open,
		.close = store_etcd_close,
		.info = store_etcd_info,
		.position = store_etcd_position,
		.changed_elsewhere = store_etcd_changed_elsewhere,
		.read_begin = store_etcd_read_begin,
		.read_end = store_etcd_read_end,
		.txn_id = store_etcd_txn_id,
		.txn_snapshot = store_etcd_txn_snapshot,
		.write = store_etcd_write,
		.get = store_etcd_get,
		.put = store_etcd_put,
		.put_reserve = store_etcd_put_reserve,
		.del = store_etcd_del,
		.del_prefix = store_etcd_del_prefix,
		.scan_open = store_etcd_scan_open,
		.scan_next = store_etcd_scan_next,
		.scan_seek = store_etcd_scan_seek,
		.scan_close = store_etcd_scan_close,
	},
	.ability = {
		.feed_read = store_etcd_feed_read,
		.note_removed = store_etcd_note_removed,
		.expire_puts = store_etcd_expire_puts,
		.end_calls = store_etcd_end_calls,
		.deadline = store_etcd_deadline,
		.stale = store_etcd_stale,
	},
	.hint = {
		.space_is_empty = store_etcd_space_is_empty,
		.scan_next_distinct = NULL,	/* store.c's: scan_next + scan_seek past each child */
		.scan_expect_children = store_etcd_scan_expect_children,
		.scan_child_subdirs = store_etcd_scan_child_subdirs,
		.prefetch = store_etcd_prefetch,
		.expect_reads = store_etcd_expect_reads,
	},
	.admin = {
		.room = store_etcd_room,
		.check = store_etcd_check,
		.repair = store_etcd_repair,
	},
};
