/*
 * lib/etcd/etcd_dl.h - PRIVATE to lib/etcd/: libcurl and cJSON, loaded
 * with dlopen when the first etcd store is opened (lib/etcd/etcd_dl.c), so
 * that LMDB users of kvfs do not load them and the thirty libraries they
 * pull in (TLS, Kerberos, LDAP) at every start. Include it after the
 * library headers: it turns each call into a call through the table.
 */
#ifndef KVFS_ETCD_DL_H
#define KVFS_ETCD_DL_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

struct etcd_dl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *curl);
	const char *(*easy_strerror)(CURLcode code);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *multi, CURL *curl);
	CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *curl);
	CURLMcode (*multi_perform)(CURLM *multi, int *running);
	CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd extra[], unsigned int n, int ms, int *ret);
	CURLMsg *(*multi_info_read)(CURLM *multi, int *left);
	CURLMcode (*multi_cleanup)(CURLM *multi);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
	cJSON *(*parse_with_length)(const char *value, size_t len);
	char *(*print_unformatted)(const cJSON *item);
	void (*delete)(cJSON *item);
	cJSON *(*create_object)(void);
	cJSON *(*add_string_to_object)(cJSON *object, const char *name, const char *string);
	cJSON *(*add_true_to_object)(cJSON *object, const char *name);
	cJSON *(*add_array_to_object)(cJSON *object, const char *name);
	cJSON_bool (*add_item_to_object)(cJSON *object, const char *string, cJSON *item);
	cJSON_bool (*add_item_to_array)(cJSON *array, cJSON *item);
	cJSON *(*get_object_item_case_sensitive)(const cJSON *object, const char *string);
	int (*get_array_size)(const cJSON *array);
	cJSON_bool (*is_string)(const cJSON *item);
	cJSON_bool (*is_number)(const cJSON *item);
	cJSON_bool (*is_true)(const cJSON *item);
	cJSON_bool (*is_object)(const cJSON *item);
};

/*
 * Loads both libraries once per process (later calls return the first
 * result): 0, or -ENOSYS with a line in why naming what is missing.
 */
int etcd_dl_load(char *why, size_t why_len);
/* The table; valid (every member set) once etcd_dl_load returned 0. */
const struct etcd_dl *etcd_dl_table(void);

/* curl.h makes these two type-checking macros of its own */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init (etcd_dl_table()->global_init)
#define curl_easy_init (etcd_dl_table()->easy_init)
#define curl_easy_setopt (etcd_dl_table()->easy_setopt)
#define curl_easy_perform (etcd_dl_table()->easy_perform)
#define curl_easy_getinfo (etcd_dl_table()->easy_getinfo)
#define curl_easy_cleanup (etcd_dl_table()->easy_cleanup)
#define curl_easy_strerror (etcd_dl_table()->easy_strerror)
#define curl_multi_init (etcd_dl_table()->multi_init)
#define curl_multi_add_handle (etcd_dl_table()->multi_add_handle)
#define curl_multi_remove_handle (etcd_dl_table()->multi_remove_handle)
#define curl_multi_perform (etcd_dl_table()->multi_perform)
#define curl_multi_poll (etcd_dl_table()->multi_poll)
#define curl_multi_info_read (etcd_dl_table()->multi_info_read)
#define curl_multi_cleanup (etcd_dl_table()->multi_cleanup)
#define curl_slist_append (etcd_dl_table()->slist_append)
#define curl_slist_free_all (etcd_dl_table()->slist_free_all)
#define cJSON_ParseWithLength (etcd_dl_table()->parse_with_length)
#define cJSON_PrintUnformatted (etcd_dl_table()->print_unformatted)
#define cJSON_Delete (etcd_dl_table()->delete)
#define cJSON_CreateObject (etcd_dl_table()->create_object)
#define cJSON_AddStringToObject (etcd_dl_table()->add_string_to_object)
#define cJSON_AddTrueToObject (etcd_dl_table()->add_true_to_object)
#define cJSON_AddArrayToObject (etcd_dl_table()->add_array_to_object)
#define cJSON_AddItemToObject (etcd_dl_table()->add_item_to_object)
#define cJSON_AddItemToArray (etcd_dl_table()->add_item_to_array)
#define cJSON_GetObjectItemCaseSensitive (etcd_dl_table()->get_object_item_case_sensitive)
#define cJSON_GetArraySize (etcd_dl_table()->get_array_size)
#define cJSON_IsString (etcd_dl_table()->is_string)
#define cJSON_IsNumber (etcd_dl_table()->is_number)
#define cJSON_IsTrue (etcd_dl_table()->is_true)
#define cJSON_IsObject (etcd_dl_table()->is_object)

#endif
