/*
 * lib/etcd/etcd_requests.c - the etcd client's KV, Txn and lease requests: each
 * builds its JSON body (base64 keys and values, int64 fields as strings),
 * sends it through etcd_client_call and reads the answer into the caller's
 * result structs (lib/etcd/etcd_client.h).
 */
#include "lib/etcd/etcd_dl.h"
#include "lib/etcd/etcd_client.h"
#include "lib/etcd/etcd_client_int.h"
#include "lib/etcd/etcd_wire.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- KV ---- */

static int range_request(cJSON *obj, const void *key, size_t key_len,
			 const struct etcd_range_opts *o)
{
	int rc = etcd_wire_add_b64(obj, "key", key, key_len);

	if (rc == 0 && o && o->range_end)
		rc = etcd_wire_add_b64(obj, "range_end", o->range_end, o->range_end_len);
	if (rc == 0 && o && o->limit > 0)
		rc = etcd_wire_add_i64(obj, "limit", o->limit);
	if (rc == 0 && o && o->revision > 0)
		rc = etcd_wire_add_i64(obj, "revision", o->revision);
	if (rc == 0 && o && o->keys_only && !cJSON_AddTrueToObject(obj, "keys_only"))
		rc = -ENOMEM;
	if (rc == 0 && o && o->count_only && !cJSON_AddTrueToObject(obj, "count_only"))
		rc = -ENOMEM;
	return rc;
}

int etcd_client_range(struct etcd_client *c, const void *key, size_t key_len,
		      const struct etcd_range_opts *opts, struct etcd_range_result *out)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req || range_request(req, key, key_len, opts) < 0) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a range");
	}
	rc = etcd_client_call(c, "/v3/kv/range", req, ETCD_CALL_READ, &reply);
	if (rc < 0)
		return rc;
	rc = etcd_wire_parse_range(reply, out);
	cJSON_Delete(reply);
	return rc < 0 ? etcd_client_fail(c, rc, "etcd: bad range answer") : 0;
}

static int put_request(cJSON *obj, const void *key, size_t key_len,
		       const void *val, size_t val_len, int64_t lease)
{
	int rc = etcd_wire_add_b64(obj, "key", key, key_len);

	if (rc == 0)
		rc = etcd_wire_add_b64(obj, "value", val, val_len);
	if (rc == 0 && lease != 0)
		rc = etcd_wire_add_i64(obj, "lease", lease);
	return rc;
}

int etcd_client_put(struct etcd_client *c, const void *key, size_t key_len,
		    const void *val, size_t val_len, int64_t lease, int64_t *revision)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	int rc;

	if (!req || put_request(req, key, key_len, val, val_len, lease) < 0) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a put");
	}
	rc = etcd_client_call(c, "/v3/kv/put", req, ETCD_CALL_WRITE, &reply);
	if (rc < 0)
		return rc;
	if (revision)
		*revision = etcd_wire_get_i64(cJSON_GetObjectItemCaseSensitive(reply, "header"), "revision");
	cJSON_Delete(reply);
	return 0;
}

int etcd_client_delete_range(struct etcd_client *c, const void *key, size_t key_len,
			     const void *range_end, size_t range_end_len,
			     int64_t *deleted, int64_t *revision)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	int rc = req ? etcd_wire_add_b64(req, "key", key, key_len) : -ENOMEM;

	if (rc == 0 && range_end)
		rc = etcd_wire_add_b64(req, "range_end", range_end, range_end_len);
	if (rc < 0) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a delete");
	}
	rc = etcd_client_call(c, "/v3/kv/deleterange", req, ETCD_CALL_WRITE, &reply);
	if (rc < 0)
		return rc;
	if (deleted)
		*deleted = etcd_wire_get_i64(reply, "deleted");
	if (revision)
		*revision = etcd_wire_get_i64(cJSON_GetObjectItemCaseSensitive(reply, "header"), "revision");
	cJSON_Delete(reply);
	return 0;
}

int etcd_client_compact(struct etcd_client *c, int64_t revision, bool physical)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	int rc = req ? etcd_wire_add_i64(req, "revision", revision) : -ENOMEM;

	if (rc == 0 && physical && !cJSON_AddTrueToObject(req, "physical"))
		rc = -ENOMEM;
	if (rc < 0) {
		cJSON_Delete(req);
		return etcd_client_fail(c, rc, "etcd: out of memory building a compaction");
	}
	rc = etcd_client_call(c, "/v3/kv/compaction", req, ETCD_CALL_WRITE, &reply);
	cJSON_Delete(reply);
	return rc;
}

/* ---- Txn ---- */

static const char *const cmp_targets[] = { "MOD", "CREATE", "VERSION", "VALUE" };
static const char *const cmp_results[] = { "EQUAL", "GREATER", "LESS", "NOT_EQUAL" };
static const char *const cmp_fields[] = { "mod_revision", "create_revision", "version", NULL };

static int cmp_json(cJSON *arr, const struct etcd_cmp *cm)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	if (!cJSON_AddStringToObject(o, "target", cmp_targets[cm->target]) ||
	    !cJSON_AddStringToObject(o, "result", cmp_results[cm->result]))
		return -ENOMEM;
	rc = etcd_wire_add_b64(o, "key", cm->key, cm->key_len);
	if (rc == 0 && cm->range_end)
		rc = etcd_wire_add_b64(o, "range_end", cm->range_end, cm->range_end_len);
	if (rc == 0 && cm->target == ETCD_CMP_VALUE)
		rc = etcd_wire_add_b64(o, "value", cm->val, cm->val_len);
	else if (rc == 0)
		rc = etcd_wire_add_i64(o, cmp_fields[cm->target], cm->rev);
	return rc;
}

static int op_json(cJSON *arr, const struct etcd_op *op)
{
	static const char *const kinds[] = { "request_range", "request_put", "request_delete_range" };
	cJSON *wrap = cJSON_CreateObject(), *o = cJSON_CreateObject();
	struct etcd_range_opts ro = {
		.range_end = op->range_end, .range_end_len = op->range_end_len,
		.keys_only = op->keys_only, .limit = op->limit, .revision = op->revision,
	};
	int rc;

	if (!wrap || !o || !cJSON_AddItemToObject(wrap, kinds[op->type], o)) {
		cJSON_Delete(wrap);
		cJSON_Delete(o);
		return -ENOMEM;
	}
	if (!cJSON_AddItemToArray(arr, wrap)) {
		cJSON_Delete(wrap);
		return -ENOMEM;
	}
	switch (op->type) {
	case ETCD_OP_RANGE:
		return range_request(o, op->key, op->key_len, &ro);
	case ETCD_OP_PUT:
		return put_request(o, op->key, op->key_len, op->val, op->val_len, op->lease);
	case ETCD_OP_DELETE:
		rc = etcd_wire_add_b64(o, "key", op->key, op->key_len);
		if (rc == 0 && op->range_end)
			rc = etcd_wire_add_b64(o, "range_end", op->range_end, op->range_end_len);
		return rc;
	}
	return -EINVAL;
}

static int txn_request(cJSON *req, const struct etcd_cmp *cmps, size_t n_cmps,
		       const struct etcd_op *succ, size_t n_succ,
		       const struct etcd_op *fail_ops, size_t n_fail)
{
	cJSON *cmp = cJSON_AddArrayToObject(req, "compare");
	cJSON *s = cJSON_AddArrayToObject(req, "success");
	cJSON *f = cJSON_AddArrayToObject(req, "failure");
	size_t i;
	int rc = cmp && s && f ? 0 : -ENOMEM;

	for (i = 0; rc == 0 && i < n_cmps; i++)
		rc = cmp_json(cmp, &cmps[i]);
	for (i = 0; rc == 0 && i < n_succ; i++)
		rc = op_json(s, &succ[i]);
	for (i = 0; rc == 0 && i < n_fail; i++)
		rc = op_json(f, &fail_ops[i]);
	return rc;
}

void etcd_txn_result_release(struct etcd_txn_result *r)
{
	for (size_t i = 0; i < r->len; i++)
		etcd_range_result_release(&r->ranges[i]);
	free(r->ranges);
	memset(r, 0, sizeof(*r));
}

static int parse_txn(const cJSON *reply, struct etcd_txn_result *out)
{
	const cJSON *resps = cJSON_GetObjectItemCaseSensitive(reply, "responses"), *it;
	int n = cJSON_GetArraySize(resps), rc;

	out->succeeded = etcd_wire_get_bool(reply, "succeeded");
	out->revision = etcd_wire_get_i64(cJSON_GetObjectItemCaseSensitive(reply, "header"), "revision");
	if (n == 0)
		return 0;
	out->ranges = calloc((size_t)n, sizeof(*out->ranges));
	if (!out->ranges)
		return -ENOMEM;
	cJSON_ArrayForEach(it, resps) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "response_range");

		if (r) {
			rc = etcd_wire_parse_range(r, &out->ranges[out->len]);
			if (rc < 0)
				return rc;
		}
		out->len++;
	}
	return 0;
}

/* Whether a Txn only reads: ranges in both branches (compares read too). */
static bool txn_reads_only(const struct etcd_op *success, size_t n_success,
			   const struct etcd_op *failure, size_t n_failure)
{
	for (size_t i = 0; i < n_success; i++)
		if (success[i].type != ETCD_OP_RANGE)
			return false;
	for (size_t i = 0; i < n_failure; i++)
		if (failure[i].type != ETCD_OP_RANGE)
			return false;
	return true;
}

/*
 * Makes a Txn of compares alone linearizable: etcd serves a Txn as a
 * serializable read, from the answering member's own state without asking
 * the leader (ReadIndex), when none of its operations is a linearizable
 * range, and a Txn with no operation at all is such a Txn (etcdserver's
 * isTxnSerializable). A member behind the others, or cut off from them,
 * would then judge the compares on what it has. One range that only counts
 * the first compare's key makes the member confirm it is current first;
 * its answer is dropped (txn_call).
 */
static int txn_confirm(cJSON *req, const struct etcd_cmp *first)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(req, "success");
	struct etcd_range_opts ro = { .count_only = true };
	cJSON *wrap = cJSON_CreateObject(), *o = cJSON_CreateObject();

	if (!wrap || !o || !cJSON_AddItemToObject(wrap, "request_range", o)) {
		cJSON_Delete(wrap);
		cJSON_Delete(o);
		return -ENOMEM;
	}
	if (!cJSON_AddItemToArray(s, wrap)) {
		cJSON_Delete(wrap);
		return -ENOMEM;
	}
	return range_request(o, first->key, first->key_len, &ro);
}

/* A Txn sent as `kind` (a Txn of ranges only is a read whatever the caller says). */
static int txn_call(struct etcd_client *c, enum etcd_call_kind kind, const struct etcd_cmp *cmps,
		    size_t n_cmps, const struct etcd_op *success, size_t n_success,
		    const struct etcd_op *failure, size_t n_failure, struct etcd_txn_result *out)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	bool confirm = n_cmps > 0 && n_success == 0 && n_failure == 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req || txn_request(req, cmps, n_cmps, success, n_success, failure, n_failure) < 0 ||
	    (confirm && txn_confirm(req, &cmps[0]) < 0)) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a txn");
	}
	if (txn_reads_only(success, n_success, failure, n_failure))
		kind = ETCD_CALL_READ;
	rc = etcd_client_call(c, "/v3/kv/txn", req, kind, &reply);
	if (rc < 0)
		return rc;
	rc = parse_txn(reply, out);
	cJSON_Delete(reply);
	if (rc < 0) {
		etcd_txn_result_release(out);
		return etcd_client_fail(c, rc, "etcd: bad txn answer");
	}
	if (confirm) {
		/* the caller asked for no operation: the count is not its answer */
		struct etcd_txn_result t = *out;

		t.succeeded = false;
		etcd_txn_result_release(&t);
		out->ranges = NULL;
		out->len = 0;
	}
	return 0;
}

int etcd_client_txn(struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
		    const struct etcd_op *success, size_t n_success,
		    const struct etcd_op *failure, size_t n_failure, struct etcd_txn_result *out)
{
	return txn_call(c, ETCD_CALL_WRITE, cmps, n_cmps, success, n_success, failure, n_failure, out);
}

int etcd_client_txn_settled(struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
			    const struct etcd_op *success, size_t n_success,
			    const struct etcd_op *failure, size_t n_failure,
			    struct etcd_txn_result *out)
{
	return txn_call(c, ETCD_CALL_SETTLED, cmps, n_cmps, success, n_success, failure, n_failure,
			out);
}

/* ---- leases ---- */

static int lease_call(struct etcd_client *c, const char *path, const char *field, int64_t v,
		      cJSON **reply)
{
	cJSON *req = cJSON_CreateObject();

	if (!req || etcd_wire_add_i64(req, field, v) < 0) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a lease request");
	}
	return etcd_client_call(c, path, req, ETCD_CALL_WRITE, reply);
}

int etcd_client_lease_grant(struct etcd_client *c, int64_t ttl, int64_t *id, int64_t *granted)
{
	cJSON *reply = NULL;
	int rc = lease_call(c, "/v3/lease/grant", "TTL", ttl, &reply);

	if (rc < 0)
		return rc;
	*id = etcd_wire_get_i64(reply, "ID");
	if (granted)
		*granted = etcd_wire_get_i64(reply, "TTL");
	cJSON_Delete(reply);
	return *id != 0 ? 0 : etcd_client_fail(c, -EPROTO, "etcd: lease grant answered no ID");
}

int etcd_client_lease_revoke(struct etcd_client *c, int64_t id)
{
	cJSON *reply = NULL;
	int rc = lease_call(c, "/v3/lease/revoke", "ID", id, &reply);

	cJSON_Delete(reply);
	return rc;
}

/*
 * The gateway serves LeaseKeepAlive (a bidirectional stream) to one request
 * body as one {"result": ...} answer; a TTL of 0 means the lease is gone.
 */
int etcd_client_lease_keepalive(struct etcd_client *c, int64_t id, int64_t *ttl)
{
	cJSON *reply = NULL;
	int64_t t;
	int rc = lease_call(c, "/v3/lease/keepalive", "ID", id, &reply);

	if (rc < 0)
		return rc;
	t = etcd_wire_get_i64(cJSON_GetObjectItemCaseSensitive(reply, "result"), "TTL");
	cJSON_Delete(reply);
	if (ttl)
		*ttl = t;
	return t > 0 ? 0 : etcd_client_fail(c, -ENOENT, "etcd: lease %" PRId64 " not found", id);
}

/*
 * LeaseTimeToLive: etcd answers a lease it no longer has with TTL -1, not
 * an error; the gateway leaves out a TTL of 0 (a lease in its last second).
 */
int etcd_client_lease_ttl(struct etcd_client *c, int64_t id, int64_t *ttl)
{
	cJSON *reply = NULL;
	int rc = lease_call(c, "/v3/lease/timetolive", "ID", id, &reply);

	if (rc < 0)
		return rc;
	*ttl = etcd_wire_get_i64(reply, "TTL");
	cJSON_Delete(reply);
	return 0;
}
