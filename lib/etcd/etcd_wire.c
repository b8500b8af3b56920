/*
 * lib/etcd/etcd_wire.c - the etcd JSON gateway's wire forms for
 * lib/etcd/etcd_client.c: base64, int64-as-string fields, key-values and range
 * answers parsed out of cJSON trees, and the gRPC-status-to-errno map.
 */
#include "lib/etcd/etcd_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- base64 (RFC 4648 with padding) ---- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t etcd_b64_encode(const void *in, size_t n, char *out)
{
	const uint8_t *p = in;
	size_t o = 0, i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = b64_alphabet[v >> 18 & 63];
		out[o++] = b64_alphabet[v >> 12 & 63];
		out[o++] = b64_alphabet[v >> 6 & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = b64_alphabet[v >> 18 & 63];
		out[o++] = b64_alphabet[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

long etcd_b64_decode(const char *in, size_t n, uint8_t *out)
{
	size_t o = 0, i;

	if (n % 4 != 0)
		return -EINVAL;
	for (i = 0; i < n; i += 4) {
		int a = b64_value(in[i]), b = b64_value(in[i + 1]);
		int c = b64_value(in[i + 2]), d = b64_value(in[i + 3]);
		bool last = i + 4 == n;

		if (a < 0 || b < 0)
			return -EINVAL;
		if (c < 0 && !(last && in[i + 2] == '=' && in[i + 3] == '='))
			return -EINVAL;
		if (d < 0 && !(last && in[i + 3] == '='))
			return -EINVAL;
		out[o++] = (uint8_t)(a << 2 | b >> 4);
		if (c >= 0)
			out[o++] = (uint8_t)((b & 15) << 4 | c >> 2);
		if (c >= 0 && d >= 0)
			out[o++] = (uint8_t)((c & 3) << 6 | d);
	}
	return (long)o;
}

size_t etcd_prefix_end(const void *p, size_t p_len, uint8_t *out)
{
	const uint8_t *b = p;
	size_t n = p_len;

	while (n > 0 && b[n - 1] == 0xff)
		n--;
	if (n == 0) {
		out[0] = 0;
		return 1;
	}
	memcpy(out, b, n);
	out[n - 1]++;
	return n;
}

/* The one map from gRPC status codes (as the gateway reports them) to errno. */
int etcd_wire_errno(int code)
{
	switch (code) {
	case 1: return -ECANCELED;	/* Canceled */
	case 3: return -EINVAL;	/* InvalidArgument: duplicate key, too many ops */
	case 4: return -ETIMEDOUT;	/* DeadlineExceeded */
	case 5: return -ENOENT;	/* NotFound: lease */
	case 7: case 16: return -EACCES;	/* PermissionDenied, Unauthenticated */
	case 8: return -E2BIG;	/* ResourceExhausted: request too large */
	case 9: return -EINVAL;	/* FailedPrecondition */
	case 11: return -ESTALE;	/* OutOfRange: revision compacted */
	case 14: return -EAGAIN;	/* Unavailable: no leader */
	default: return -EIO;
	}
}

/* ---- JSON helpers ---- */

/* Adds name: base64(data). 0 or -ENOMEM. */
int etcd_wire_add_b64(cJSON *obj, const char *name, const void *data, size_t len)
{
	char *s = malloc(4 * ((len + 2) / 3) + 1);
	cJSON *item;

	if (!s)
		return -ENOMEM;
	etcd_b64_encode(data, len, s);
	item = cJSON_AddStringToObject(obj, name, s);
	free(s);
	return item ? 0 : -ENOMEM;
}

/* int64 fields travel as decimal strings (proto3's JSON form). */
int etcd_wire_add_i64(cJSON *obj, const char *name, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return cJSON_AddStringToObject(obj, name, s) ? 0 : -ENOMEM;
}

/* A missing int64 field is 0 (proto3 leaves defaults out). */
int64_t etcd_wire_get_i64(const cJSON *obj, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (cJSON_IsString(it))
		return strtoll(it->valuestring, NULL, 10);
	if (cJSON_IsNumber(it))
		return (int64_t)it->valuedouble;
	return 0;
}

bool etcd_wire_get_bool(const cJSON *obj, const char *name)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, name));
}

/* Decodes base64 field `name` into heap *out (NULL, 0 when absent). */
int etcd_wire_get_b64(const cJSON *obj, const char *name, uint8_t **out, size_t *len)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
	size_t n;
	long got;

	*out = NULL;
	*len = 0;
	if (!it)
		return 0;
	if (!cJSON_IsString(it))
		return -EPROTO;
	n = strlen(it->valuestring);
	*out = malloc(3 * (n / 4) + 1);	/* +1: a real pointer for an empty value */
	if (!*out)
		return -ENOMEM;
	got = etcd_b64_decode(it->valuestring, n, *out);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return -EPROTO;
	}
	(*out)[got] = '\0';	/* got <= 3 * (n / 4): the +1 holds it */
	*len = (size_t)got;
	return 0;
}

void etcd_wire_kv_release(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->val);
}

int etcd_wire_parse_kv(const cJSON *obj, struct etcd_kv *kv)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	rc = etcd_wire_get_b64(obj, "key", &kv->key, &kv->key_len);
	if (rc == 0)
		rc = etcd_wire_get_b64(obj, "value", &kv->val, &kv->val_len);
	if (rc < 0) {
		etcd_wire_kv_release(kv);
		return rc;
	}
	kv->create_rev = etcd_wire_get_i64(obj, "create_revision");
	kv->mod_rev = etcd_wire_get_i64(obj, "mod_revision");
	kv->version = etcd_wire_get_i64(obj, "version");
	kv->lease = etcd_wire_get_i64(obj, "lease");
	return 0;
}

void etcd_range_result_release(struct etcd_range_result *r)
{
	for (size_t i = 0; i < r->len; i++)
		etcd_wire_kv_release(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

int etcd_wire_parse_range(const cJSON *obj, struct etcd_range_result *out)
{
	const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(obj, "kvs");
	const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(obj, "header");
	const cJSON *it;
	int n = cJSON_GetArraySize(kvs), rc;

	memset(out, 0, sizeof(*out));
	out->count = etcd_wire_get_i64(obj, "count");
	out->more = etcd_wire_get_bool(obj, "more");
	out->revision = etcd_wire_get_i64(hdr, "revision");
	if (n == 0)
		return 0;
	out->kvs = calloc((size_t)n, sizeof(*out->kvs));
	if (!out->kvs)
		return -ENOMEM;
	cJSON_ArrayForEach(it, kvs) {
		rc = etcd_wire_parse_kv(it, &out->kvs[out->len]);
		if (rc < 0) {
			etcd_range_result_release(out);
			return rc;
		}
		out->len++;
	}
	return 0;
}
