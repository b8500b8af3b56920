/*
 * lib/etcd/etcd_url.c - what an etcd store URL says besides its members:
 * each endpoint as a full base URL, and the options after "?" (etcdctl's
 * names), %-decoded, with etcdctl's environment filling what they leave out.
 */
#include "lib/etcd/etcd_client_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int etcd_url_endpoint(const char *s, size_t n, bool tls, char **out)
{
	bool has_scheme = n >= 3 && memmem(s, n, "://", 3) != NULL;
	char *ep;

	if (n == 0 || n > 256)
		return -EINVAL;
	ep = malloc(n + 9);
	if (!ep)
		return -ENOMEM;
	snprintf(ep, n + 9, "%s%.*s", has_scheme ? "" : tls ? "https://" : "http://", (int)n, s);
	*out = ep;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * %XX and + of a URL query value, decoded into a heap string (*out, the
 * caller frees it). A % without two hex digits after it, or %00 (a NUL
 * would cut a password or a path short without a word), is -EINVAL.
 */
static int query_value(const char *s, size_t n, char **out)
{
	char *o = malloc(n + 1);

	*out = o;
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] != '%') {
			*o++ = s[i] == '+' ? ' ' : s[i];
			continue;
		}
		hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
		lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			free(*out);	/* nothing half decoded is left for the caller to read */
			*out = NULL;
			return -EINVAL;
		}
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = 0;
	return 0;
}

/*
 * The options after "?" (NAME=VALUE&...): etcdctl's names. user=NAME or
 * user=NAME:PASSWORD, password=, cacert=, cert=, key=. -EINVAL with the
 * reason in why for anything else. What the URL leaves out is taken from
 * etcdctl's environment (ETCDCTL_PASSWORD, ...), which keeps a password out
 * of the process list and the shell history.
 */
int etcd_url_options(const char *q, char **slot[ETCD_URL_OPTIONS], char *why, size_t why_len)
{
	static const char *const names[] = { "user", "password", "cacert", "cert", "key" };
	static const char *const env_names[] = { "ETCDCTL_USER", "ETCDCTL_PASSWORD",
						  "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY" };
	const char *env;
	size_t i;
	int rc;

	while (*q) {
		const char *amp = strchr(q, '&'), *eq;
		size_t n = amp ? (size_t)(amp - q) : strlen(q);

		eq = memchr(q, '=', n);
		for (i = 0; eq && i < ETCD_URL_OPTIONS; i++)
			if (strlen(names[i]) == (size_t)(eq - q) && !memcmp(q, names[i], (size_t)(eq - q)))
				break;
		if (!eq || i == ETCD_URL_OPTIONS) {
			if (why)
				snprintf(why, why_len, "etcd URL option \"%.*s\": expected user=, "
					 "password=, cacert=, cert= or key=", (int)n, q);
			return -EINVAL;
		}
		free(*slot[i]);
		rc = query_value(eq + 1, n - (size_t)(eq + 1 - q), slot[i]);
		if (rc == -EINVAL && why)
			snprintf(why, why_len, "etcd URL option %s=: a %% must be followed by two "
				 "hex digits, and %%00 is not allowed", names[i]);
		if (rc < 0)
			return rc;
		q += n + (amp ? 1 : 0);
	}
	for (i = 0; i < ETCD_URL_OPTIONS; i++) {
		env = *slot[i] ? NULL : getenv(env_names[i]);
		if (env && *env && !(*slot[i] = strdup(env)))
			return -ENOMEM;
	}
	if (*slot[0] && !*slot[1]) {
		char *colon = strchr(*slot[0], ':');	/* etcdctl's --user NAME:PASSWORD */

		if (colon) {
			*colon = 0;
			*slot[1] = strdup(colon + 1);
			if (!*slot[1])
				return -ENOMEM;
		}
	}
	if (*slot[4] && !*slot[3]) {
		if (why)
			snprintf(why, why_len, "etcd URL option key= needs cert= (the client certificate)");
		return -EINVAL;
	}
	return 0;
}
