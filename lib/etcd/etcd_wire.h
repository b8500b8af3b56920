/*
 * lib/etcd/etcd_wire.h - PRIVATE to lib/etcd/: the JSON gateway's wire
 * forms (lib/etcd/etcd_wire.c). Keys and values are base64 strings; int64
 * fields are decimal strings, and proto3 leaves zero/false fields out, so a
 * missing field reads as 0/false.
 */
#ifndef KVFS_ETCD_WIRE_H
#define KVFS_ETCD_WIRE_H

#include <cjson/cJSON.h>

#include "lib/etcd/etcd_client.h"
#include "lib/etcd/etcd_dl.h"

/* The gRPC status code the gateway reports, as -errno (table: etcd_client.h). */
int etcd_wire_errno(int code);

/* Add name: base64(data) / name: "v" to obj. 0 or -ENOMEM. */
int etcd_wire_add_b64(cJSON *obj, const char *name, const void *data, size_t len);
int etcd_wire_add_i64(cJSON *obj, const char *name, int64_t v);

int64_t etcd_wire_get_i64(const cJSON *obj, const char *name);
bool etcd_wire_get_bool(const cJSON *obj, const char *name);
/* Decodes base64 field name into *out, heap (NULL, 0 when absent); -EPROTO when malformed. */
int etcd_wire_get_b64(const cJSON *obj, const char *name, uint8_t **out, size_t *len);

/* *kv's key and val are heap; free them with etcd_wire_kv_release. */
int etcd_wire_parse_kv(const cJSON *obj, struct etcd_kv *kv);
void etcd_wire_kv_release(struct etcd_kv *kv);
/* A RangeResponse; *out is released with etcd_range_result_release. */
int etcd_wire_parse_range(const cJSON *obj, struct etcd_range_result *out);

#endif
