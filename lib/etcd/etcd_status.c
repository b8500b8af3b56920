/*
 * lib/etcd/etcd_status.c - how much room a member has (etcd_client_status):
 * its database's size and the part in use from the Maintenance Status call,
 * and the storage quota in effect from the same answer (etcd 3.6) or else
 * from the member's /metrics page, the one place etcd 3.4 and 3.5 show it.
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
