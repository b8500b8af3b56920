/*
 * store/etcd_store.h - PRIVATE to store/: the etcd backend (docs/ETCD.md)
 * behind store.h's operations, spelled with its own types until the
 * operations table (struct store_ops) wires them in: a store is one key
 * prefix of a cluster, a read transaction reads at one pinned revision, a
 * write transaction is buffered and committed as one guarded Txn, run again
 * from the start when someone changed what it read.
 * Semantics and errors follow store/store.h function by function.
 */
#ifndef KVFS_ETCD_STORE_H
#define KVFS_ETCD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct store_etcd;
struct store_etcd_txn;
struct store_etcd_scan;

/* True when name is an etcd store URL (etcd://...). */
bool store_etcd_is_url(const char *name);

/*
 * url: etcd://HOST:PORT[,HOST:PORT...]/PREFIX. Endpoints are tried in turn
 * on connection failure. STORE_OPEN_CREATE writes the meta keys when the
 * prefix is empty; a prefix that holds keys but no kvfs format is refused
 * (-EINVAL); none without CREATE: -ENOENT. *out is heap (store_etcd_close).
 */
int store_etcd_open(const char *url, unsigned flags, struct store_etcd **out,
		    char *why, size_t why_len);
/* discard: remove the store again when this handle created it. */
void store_etcd_close(struct store_etcd *st, bool discard);
/* last_txn_id = the cluster revision; entries = keys in the data space. */
int store_etcd_info(struct store_etcd *st, struct store_info *out);
unsigned store_etcd_format(struct store_etcd *st);
/* The newest revision (one round trip). 0 when the cluster cannot be reached. */
uint64_t store_etcd_position(struct store_etcd *st);
/* The revision of this handle's last commit (0: none yet). */
uint64_t store_etcd_last_commit(struct store_etcd *st);

/* Read transactions: every read in one sees the store at one revision. */
int store_etcd_read_begin(struct store_etcd *st, struct store_etcd_txn **out);
/* Ends a read transaction (write transactions belong to store_etcd_write: no-op). */
void store_etcd_txn_end(struct store_etcd_txn *txn);
/* The revision the transaction reads at (pins it now if nothing was read yet). */
uint64_t store_etcd_txn_rev(struct store_etcd_txn *txn);
unsigned store_etcd_txn_format(struct store_etcd_txn *txn);
int store_etcd_set_format(struct store_etcd_txn *txn, unsigned version);
void store_etcd_txn_set_owner(struct store_etcd_txn *txn, void *owner);
void *store_etcd_txn_owner(const struct store_etcd_txn *txn);

/*
 * Runs fn in a buffered write transaction and commits it as one guarded
 * Txn; on a conflict (something fn read changed) fn runs again from the
 * start. Writers of one handle are serialized.
 */
typedef int (*store_etcd_write_fn)(struct store_etcd_txn *txn, void *arg);
int store_etcd_write(struct store_etcd *st, store_etcd_write_fn fn, void *arg);

int store_etcd_get(struct store_etcd_txn *txn, enum store_space space,
		   const void *key, size_t key_len, struct store_val *out);
int store_etcd_put(struct store_etcd_txn *txn, enum store_space space,
		   const void *key, size_t key_len, const void *val, size_t val_len);
int store_etcd_put_reserve(struct store_etcd_txn *txn, enum store_space space,
			   const void *key, size_t key_len, size_t val_len, void **out);
int store_etcd_del(struct store_etcd_txn *txn, enum store_space space,
		   const void *key, size_t key_len);
int store_etcd_del_prefix(struct store_etcd_txn *txn, enum store_space space,
			  const void *prefix, size_t prefix_len, uint64_t *deleted);
bool store_etcd_space_is_empty(struct store_etcd_txn *txn, enum store_space space);

/* Scans (store/etcd_scan.c): paged ranges at the transaction's revision. */
int store_etcd_scan_open(struct store_etcd_txn *txn, enum store_space space,
			 const void *prefix, size_t prefix_len, struct store_etcd_scan **out);
int store_etcd_scan_next(struct store_etcd_scan *scan, struct store_val *key,
			 struct store_val *val);
int store_etcd_scan_seek(struct store_etcd_scan *scan, const void *key, size_t key_len);
int store_etcd_scan_next_distinct(struct store_etcd_scan *scan, int depth,
				  struct store_val *key, struct store_val *val, size_t *child_end);
uint64_t store_etcd_scan_steps(const struct store_etcd_scan *scan);
struct store_etcd_txn *store_etcd_scan_txn(struct store_etcd_scan *scan);
void store_etcd_scan_close(struct store_etcd_scan *scan);

#endif
