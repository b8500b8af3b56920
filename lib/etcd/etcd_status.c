/*
 * lib/etcd/etcd_status.c - how much room a member has (etcd_client_status):
 * its database's size and the part in use from the Maintenance Status call,
 * and the storage quota in effect from the same answer (etcd 3.6) or else
 * from the member's /metrics page, the one place etcd 3.4 and 3.5 show it;
 * and which member leads (etcd_client_prefer_leader), from the same call
 * and the member list.
 */
#include "lib/etcd/etcd_dl.h"
#include "lib/etcd/etcd_client.h"
#include "lib/etcd/etcd_client_int.h"
#include "lib/etcd/etcd_wire.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MS 2000	/* the /metrics page's limit: it is only a fallback */
#define METRICS_MAX (4u << 20)	/* bytes of it read at most (some hundreds of KiB) */
#define QUOTA_METRIC "etcd_server_quota_backend_bytes "

struct page {
	char *data;
	size_t len;
};

static size_t on_page(char *p, size_t size, size_t n, void *arg)
{
	struct page *pg = arg;
	size_t add = size * n;
	char *d;

	if (pg->len + add + 1 > METRICS_MAX || !(d = realloc(pg->data, pg->len + add + 1)))
		return 0;	/* ends the transfer: the quota is then not known */
	memcpy(d + pg->len, p, add);
	pg->len += add;
	d[pg->len] = '\0';
	pg->data = d;
	return add;
}

/*
 * The quota line of member c->cur's /metrics page (a gauge printed as a
 * float, "2.147483648e+09"), read on a connection of its own; 0 when the
 * page cannot be read or has no such line.
 */
static int64_t metrics_quota(struct etcd_client *c)
{
	struct page pg = { 0 };
	char url[320];
	int64_t quota = 0;
	CURL *h = curl_easy_init();
	const char *line;

	if (!h)
		return 0;
	snprintf(url, sizeof(url), "%s/metrics", etcd_client_endpoint(c));
	etcd_client_connection_setup(c, h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)METRICS_MS);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_page);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
	if (curl_easy_perform(h) == CURLE_OK && pg.data) {
		for (line = pg.data; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
			if (strncmp(line, QUOTA_METRIC, strlen(QUOTA_METRIC)) == 0) {
				double v = strtod(line + strlen(QUOTA_METRIC), NULL);

				quota = v > 0 && v < 9.2e18 ? (int64_t)v : 0;
				break;
			}
	}
	curl_easy_cleanup(h);
	free(pg.data);
	return quota;
}

int etcd_client_status(struct etcd_client *c, struct etcd_status *out)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req)
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a status request");
	rc = etcd_client_call(c, "/v3/maintenance/status", req, ETCD_CALL_READ, &reply);
	if (rc < 0)
		return rc;
	out->db_size = etcd_wire_get_i64(reply, "dbSize");
	out->db_in_use = etcd_wire_get_i64(reply, "dbSizeInUse");
	out->quota = etcd_wire_get_i64(reply, "dbSizeQuota");
	cJSON_Delete(reply);
	if (out->db_in_use <= 0 || out->db_in_use > out->db_size)
		out->db_in_use = out->db_size;	/* a member older than 3.4 does not say */
	if (out->quota <= 0)
		out->quota = metrics_quota(c);
	return 0;
}

/* The string at obj.name (an ID: the gateway prints uint64 as a string), or NULL. */
static const char *id_of(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * The place in c's list of the member whose ID is leader, from the
 * member list `members`: -1 unless every member of c's list is one of
 * those members (by an advertised client URL) and the leader is one.
 */
static int leader_place(const struct etcd_client *c, const cJSON *members, const char *leader)
{
	bool named[ETCD_MEMBERS_MAX] = { false };
	const cJSON *m, *u;
	int found = -1;

	cJSON_ArrayForEach(m, members) {
		const char *id = id_of(m, "ID");

		cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(m, "clientURLs")) {
			int i = cJSON_IsString(u) ? etcd_client_place(c, u->valuestring) : -1;

			if (i < 0)
				continue;
			named[i] = true;
			if (id && strcmp(id, leader) == 0)
				found = i;
		}
	}
	for (size_t i = 0; i < etcd_client_members(c); i++)
		if (!named[i])
			return -1;	/* an address that is not a member's own: the list's order stands */
	return found;
}

int etcd_client_prefer_leader(struct etcd_client *c)
{
	cJSON *req = cJSON_CreateObject(), *status = NULL, *list = NULL;
	const char *leader;
	int rc, place;

	if (!req)
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a status request");
	rc = etcd_client_call(c, "/v3/maintenance/status", req, ETCD_CALL_READ, &status);
	if (rc < 0)
		return rc;
	leader = id_of(status, "leader");
	req = cJSON_CreateObject();
	if (!leader || !req) {
		cJSON_Delete(req);
		rc = leader ? -ENOMEM : -ENOENT;
		goto out_status;
	}
	rc = etcd_client_call(c, "/v3/cluster/member/list", req, ETCD_CALL_READ, &list);
	if (rc < 0)
		goto out_status;
	place = leader_place(c, cJSON_GetObjectItemCaseSensitive(list, "members"), leader);
	rc = place < 0 ? -ENOENT : 0;
	if (place >= 0)
		etcd_client_prefer(c, (size_t)place);
	cJSON_Delete(list);
out_status:
	cJSON_Delete(status);
	return rc;
}
