/*
 * model/table/table_json.c - a table's schema as JSON text, read: what a
 * write of PATH/@schema.json or of the attribute user.kvfs.schema holds
 * (the text `kvfs table show` prints), parsed into a struct table_want
 * that model/table/table_cmd.c declares. Nothing here touches the store.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* A list of names that does not fit its buffer: refused, never cut short. */
#define NAMES_TOO_LONG "too long a list of field names"

bool table_names_add(char *list, size_t cap, const char *str, size_t len)
{
	size_t n = strlen(list);

	if (n + (n ? 1 : 0) + len + 1 > cap)
		return false;
	snprintf(list + n, cap - n, "%s%.*s", n ? "," : "", (int)len, str);
	return true;
}

/*
 * A token of "references": [{"fields": ["a", "b"], "table": "/t"}, ...]
 * (an array whose elements are objects at depth 2).
 */
static int want_ref_token(struct table_want *w, const struct json_token *t)
{
	struct table_want_ref *r = w->nrefs ? &w->refs[w->nrefs - 1] : NULL;

	if (t->depth == 1 && (t->event == JSON_ARRAY_BEGIN || t->event == JSON_ARRAY_END))
		return 0;
	if (t->depth == 2 && t->event == JSON_OBJECT_BEGIN) {
		if (w->nrefs == TABLE_REFS_MAX)
			return w->bad = "too many references", -EINVAL;
		w->nrefs++;
		return 0;
	}
	if (t->depth == 2 && t->event == JSON_OBJECT_END)
		return r->fields[0] && r->table[0] ? 0 :
		       (w->bad = "a reference has fields and a table", -EINVAL);
	if (r && t->depth == 3 && !strcmp(w->attr, "table") && t->event == JSON_STRING) {
		snprintf(r->table, sizeof(r->table), "%.*s", (int)t->len, t->str);
		return 0;
	}
	if (r && !strcmp(w->attr, "fields") && ((t->depth == 3 && (t->event == JSON_ARRAY_BEGIN ||
	    t->event == JSON_ARRAY_END)) || (t->depth == 4 && t->event == JSON_STRING))) {
		if (t->depth == 4 && !table_names_add(r->fields, sizeof(r->fields), t->str, t->len))
			return w->bad = NAMES_TOO_LONG, -EINVAL;
		return 0;
	}
	return w->bad = "references is an array of {\"fields\": [names], \"table\": path}", -EINVAL;
}

static int want_token(void *arg, const struct json_token *t)
{
	struct table_want *w = arg;
	bool is_col = strcmp(w->section, "columns") == 0;
	bool is_idx = strcmp(w->section, "indexes") == 0;

	if (t->event == JSON_KEY && t->depth == 1) {
		snprintf(w->section, sizeof(w->section), "%.*s", (int)t->len, t->str);
		return 0;
	}
	if (t->event == JSON_KEY && t->depth == 2 && (is_col || is_idx)) {
		int *n = is_col ? &w->ncols : &w->nidx;

		if (*n == (is_col ? TABLE_COLUMNS_MAX : TABLE_INDEXES_MAX) ||
		    t->len >= TABLE_NAME_MAX)
			return w->bad = "too many columns or indexes, or too long a name", -EINVAL;
		snprintf(is_col ? w->cols[*n].name : w->idx[*n].name, TABLE_NAME_MAX, "%.*s",
			 (int)t->len, t->str);
		(*n)++;
		return 0;
	}
	if (t->event == JSON_KEY && t->depth == 3) {
		snprintf(w->attr, sizeof(w->attr), "%.*s", (int)t->len, t->str);
		return 0;
	}
	if (t->depth >= 1 && strcmp(w->section, "references") == 0)
		return want_ref_token(w, t);
	if (t->depth == 1 && strcmp(w->section, "key_depth") == 0) {
		if (t->event != JSON_INTEGER)
			return w->bad = "key_depth must be an integer", -EINVAL;
		w->key_depth = t->integer;
	} else if (t->depth == 1 && strcmp(w->section, "ttl") == 0) {
		if (t->event != JSON_INTEGER || model_ttl_deadline(t->integer, 0, &(int64_t){ 0 }) < 0)
			return w->bad = "ttl must be whole seconds, 1 to 3155760000", -EINVAL;
		w->ttl_seconds = t->integer;
	} else if (t->depth == 2 && strcmp(w->section, "key_fields") == 0) {
		if (t->event != JSON_STRING)
			return w->bad = "key_fields must be an array of names", -EINVAL;
		if (!table_names_add(w->key_fields, sizeof(w->key_fields), t->str, t->len))
			return w->bad = NAMES_TOO_LONG, -EINVAL;
	} else if (t->depth >= 3 && is_col && w->ncols) {
		struct table_want_col *c = &w->cols[w->ncols - 1];

		if (!strcmp(w->attr, "type") && t->event == JSON_STRING)
			snprintf(c->type, sizeof(c->type), "%.*s", (int)t->len, t->str);
		else if (!strcmp(w->attr, "required") && (t->event == JSON_TRUE || t->event == JSON_FALSE))
			c->required = t->event == JSON_TRUE;
		else if (!strcmp(w->attr, "max_length") && t->event == JSON_INTEGER)
			c->max_length = t->integer;
		else if (!strcmp(w->attr, "references") && t->event == JSON_STRING)
			snprintf(c->references, sizeof(c->references), "%.*s", (int)t->len, t->str);
		else if (t->event != JSON_OBJECT_BEGIN && t->event != JSON_OBJECT_END)
			return w->bad = "a column has type, required, max_length, references", -EINVAL;
	} else if (t->depth >= 3 && is_idx && w->nidx) {
		struct table_want_idx *x = &w->idx[w->nidx - 1];

		if (!strcmp(w->attr, "fields") && t->event == JSON_STRING && t->depth == 4)
			return table_names_add(x->fields, sizeof(x->fields), t->str, t->len) ? 0 :
			       (w->bad = NAMES_TOO_LONG, -EINVAL);
		if (!strcmp(w->attr, "unique") && (t->event == JSON_TRUE || t->event == JSON_FALSE))
			x->unique = t->event == JSON_TRUE;
		else if (t->event != JSON_OBJECT_BEGIN && t->event != JSON_OBJECT_END &&
			 t->event != JSON_ARRAY_BEGIN && t->event != JSON_ARRAY_END)
			return w->bad = "an index has fields and unique", -EINVAL;
	}
	return 0;
}

int table_want_parse(const char *json, size_t len, const char *what, struct table_want *w,
		     struct model_error *err)
{
	int ret;

	w->key_depth = 1;
	ret = json_parse(json, len, 0, 8, want_token, w, NULL, NULL, err);
	if (ret < 0 && w->bad)
		tree_fail_reason(err, ret, MODEL_REASON_BAD_JSON, "%s: %s", what, w->bad);
	else if (ret < 0)
		tree_fail_reason(err, ret, MODEL_REASON_BAD_JSON, "%s: invalid JSON: %s", what,
				 err->msg);
	return ret;
}
