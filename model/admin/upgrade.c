/*
 * model/admin/upgrade.c - brings an older store up to STORE_FORMAT_VERSION when it
 * is opened writable (docs/FORMAT.md, "Format versions"): format 1 -> 2
 * seals every data record with its checksum, in one transaction, so a
 * store is wholly of one format in every snapshot.
 */
#include <errno.h>
#include <string.h>

#include "model/tree/tree_int.h"

struct upgrade {
	uint64_t records;	/* per attempt: records re-sealed */
};

/* Re-seals every record of a format-1 data space (bodies kept byte for byte). */
static int upgrade_1_to_2(struct store_txn *txn, struct upgrade *u)
{
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t key[STORE_KEY_MAX];
	struct strbuf val;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, NULL, 0, &scan);

	if (ret < 0)
		return ret;
	strbuf_init(&val);
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		/* Key and value copied first: the put rewrites the page under k
		 * and v. A body that does not decode is sealed as it is: nothing
		 * is lost, and `kvfs check` still reports it. */
		if (k.len > sizeof(key)) {
			ret = -EIO;
			break;
		}
		memcpy(key, k.data, k.len);
		strbuf_reset(&val);
		leaf_record_seal(key, k.len, v.data, v.len, &val);
		if (val.failed) {
			ret = -ENOMEM;
			break;
		}
		ret = store_put(txn, STORE_SPACE_DATA, key, k.len, val.buf, val.len);
		if (ret < 0)
			break;
		u->records++;
	}
	strbuf_release(&val);
	store_scan_close(scan);
	return ret;
}

static int upgrade_txn(struct store_txn *txn, void *arg)
{
	struct upgrade *u = arg;
	unsigned format = store_txn_format(txn);
	int ret;

	u->records = 0;
	if (format == STORE_FORMAT_VERSION)
		return 0;	/* another process was first */
	if (format < 1 || format > 3)
		return -EPROTONOSUPPORT;
	/* 2 -> 3 adds the schema, index and attr spaces, 3 -> 4 the expiry and
	 * ttl spaces, which store_open created empty: raising the version is
	 * the whole upgrade. */
	ret = format == 1 ? upgrade_1_to_2(txn, u) : 0;
	if (ret == 0)
		ret = store_set_format(txn, STORE_FORMAT_VERSION);
	return ret;
}

int tree_upgrade(struct model *m, const char *dir, struct model_error *err)
{
	struct upgrade u = { 0 };
	int ret;

	if (m->readonly || store_format(m->st) >= STORE_FORMAT_VERSION)
		return 0;
	ret = store_write(m->st, upgrade_txn, &u);
	if (ret < 0)
		return tree_fail(err, ret, "%s: cannot upgrade the store from format %u to %d: %s",
				 dir, store_format(m->st), STORE_FORMAT_VERSION, strerror(-ret));
	return 0;
}
