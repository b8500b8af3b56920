/*
 * lib/etcd/etcd_dl.c - loads libcurl and cJSON for the etcd backend the first
 * time an etcd store is opened (lib/etcd/etcd_dl.h says why), and keeps their
 * entry points in one table for the life of the process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/etcd/etcd_dl.h"

#define LIBCURL "libcurl.so.4"
#define LIBCJSON "libcjson.so.1"

/*
 * Process-wide, like libcurl's own global state: written once under
 * pthread_once, read only after etcd_dl_load returned 0.
 */
static struct etcd_dl table;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];

struct symbol {
	void *lib;
	const char *name;
	void **slot;
};

static void load_all(void)
{
	void *curl = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
	void *cjson = curl ? dlopen(LIBCJSON, RTLD_NOW | RTLD_LOCAL) : NULL;
	const struct symbol symbols[] = {
		{ curl, "curl_global_init", (void **)&table.global_init },
		{ curl, "curl_easy_init", (void **)&table.easy_init },
		{ curl, "curl_easy_setopt", (void **)&table.easy_setopt },
		{ curl, "curl_easy_perform", (void **)&table.easy_perform },
		{ curl, "curl_easy_getinfo", (void **)&table.easy_getinfo },
		{ curl, "curl_easy_cleanup", (void **)&table.easy_cleanup },
		{ curl, "curl_easy_strerror", (void **)&table.easy_strerror },
		{ curl, "curl_multi_init", (void **)&table.multi_init },
		{ curl, "curl_multi_add_handle", (void **)&table.multi_add_handle },
		{ curl, "curl_multi_remove_handle", (void **)&table.multi_remove_handle },
		{ curl, "curl_multi_perform", (void **)&table.multi_perform },
		{ curl, "curl_multi_poll", (void **)&table.multi_poll },
		{ curl, "curl_multi_info_read", (void **)&table.multi_info_read },
		{ curl, "curl_multi_cleanup", (void **)&table.multi_cleanup },
		{ curl, "curl_slist_append", (void **)&table.slist_append },
		{ curl, "curl_slist_free_all", (void **)&table.slist_free_all },
		{ cjson, "cJSON_ParseWithLength", (void **)&table.parse_with_length },
		{ cjson, "cJSON_PrintUnformatted", (void **)&table.print_unformatted },
		{ cjson, "cJSON_Delete", (void **)&table.delete },
		{ cjson, "cJSON_CreateObject", (void **)&table.create_object },
		{ cjson, "cJSON_AddStringToObject", (void **)&table.add_string_to_object },
		{ cjson, "cJSON_AddTrueToObject", (void **)&table.add_true_to_object },
		{ cjson, "cJSON_AddArrayToObject", (void **)&table.add_array_to_object },
		{ cjson, "cJSON_AddItemToObject", (void **)&table.add_item_to_object },
		{ cjson, "cJSON_AddItemToArray", (void **)&table.add_item_to_array },
		{ cjson, "cJSON_GetObjectItemCaseSensitive",
		  (void **)&table.get_object_item_case_sensitive },
		{ cjson, "cJSON_GetArraySize", (void **)&table.get_array_size },
		{ cjson, "cJSON_IsString", (void **)&table.is_string },
		{ cjson, "cJSON_IsNumber", (void **)&table.is_number },
		{ cjson, "cJSON_IsTrue", (void **)&table.is_true },
		{ cjson, "cJSON_IsObject", (void **)&table.is_object },
	};

	if (!curl || !cjson) {
		snprintf(load_error, sizeof(load_error), "the etcd backend needs %s (%s)",
			 curl ? LIBCJSON " (Debian: libcjson1)" : LIBCURL " (Debian: libcurl4)",
			 dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		*symbols[i].slot = dlsym(symbols[i].lib, symbols[i].name);
		if (!*symbols[i].slot) {
			snprintf(load_error, sizeof(load_error), "the etcd backend: %s has no %s",
				 symbols[i].lib == curl ? LIBCURL : LIBCJSON, symbols[i].name);
			return;
		}
	}
}

int etcd_dl_load(char *why, size_t why_len)
{
	pthread_once(&load_once, load_all);
	if (!load_error[0])
		return 0;
	if (why)
		snprintf(why, why_len, "%s", load_error);
	return -ENOSYS;
}

const struct etcd_dl *etcd_dl_table(void)
{
	return &table;
}
