/*
 * model/doc/doc_sweep.c - the sweep of a document write (model/doc/doc.c):
 * when a container closes, its old children that the document did not
 * write go, an object's walked beside its sorted member names, an array's
 * found by one seek past its last index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc/flat_int.h"

/*
 * Deletes the child of the frame fr whose key is c->key[0..c->end]; c->key
 * then points at buf. Checked first when fr guards its children.
 */
static int sweep_child(struct flat *f, const struct flat_frame *fr, struct tree_child *c,
		       uint8_t *buf)
{
	bool dir = c->key_len > c->end || tree_child_is_container(c);
	int ret;

	memcpy(buf, c->key, c->end);
	c->key = buf;		/* the scan resumes after it (tree_child_next) */
	if (fr->guard) {
		ret = perm_may_remove(f->txn, f->who, &fr->dir, buf, c->end, dir, f->p->text,
				      f->err);
		if (ret < 0) {
			f->failed = true;	/* with perm.c's message */
			return ret;
		}
	}
	return tree_delete(f->txn, buf, c->end);
}

struct flat_name {
	const uint8_t *elem;
	size_t len;
};

static int flat_name_cmp(const void *a, const void *b)
{
	const struct flat_name *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->elem, y->elem, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The member names of the object frame fr, sorted; *out is heap (free()). */
static int flat_names_sorted(struct flat *f, const struct flat_frame *fr,
			     struct flat_name **out, size_t *count)
{
	const uint8_t *a = (const uint8_t *)f->names.buf;
	size_t pos = fr->names, n = 0, cap = 0;
	struct flat_name *v = NULL, *grown;

	*out = NULL;
	*count = 0;
	while (pos < f->names.len) {
		size_t len = (size_t)a[pos] << 8 | a[pos + 1];

		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		v[n].elem = a + pos + 2;
		v[n++].len = len;
		pos += 2 + len;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), flat_name_cmp);
	*out = v;
	*count = n;
	return 0;
}

/* Old children of the object fr that the document did not write go. */
static int sweep_object(struct flat *f, const struct flat_frame *fr, struct store_scan *scan,
			uint8_t *buf)
{
	struct flat_name *names, child;
	struct tree_child c;
	size_t count, i = 0;
	int ret = flat_names_sorted(f, fr, &names, &count);

	if (ret < 0)
		return ret;
	for (ret = tree_child_first(scan, f->key, fr->len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, fr->len, &c)) {
		child.elem = c.key + fr->len;
		child.len = c.end - fr->len;
		while (i < count && flat_name_cmp(&names[i], &child) < 0)
			i++;
		if (c.elem.type == TUPLE_TYPE_STRING && i < count &&
		    flat_name_cmp(&names[i], &child) == 0)
			continue;
		ret = sweep_child(f, fr, &c, buf);
		if (ret < 0)
			break;
	}
	free(names);
	return ret;
}

/* Old children of the array fr other than the indices 0..next-1 go. */
static int sweep_array(struct flat *f, const struct flat_frame *fr, struct store_scan *scan,
		       uint8_t *buf)
{
	struct tuple_writer w;
	struct tree_child c;
	int ret;

	/* Strings sort before integers: an old object's members come first. */
	for (ret = tree_child_first(scan, f->key, fr->len, NULL, 0, &c);
	     ret == 1 && c.elem.type != TUPLE_TYPE_INT;
	     ret = tree_child_next(scan, fr->len, &c)) {
		ret = sweep_child(f, fr, &c, buf);
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	memcpy(buf, f->key, fr->len);
	tuple_writer_init(&w, buf, STORE_KEY_MAX + 16);
	w.len = fr->len;
	tuple_put_int(&w, fr->next);
	if (w.len > STORE_KEY_MAX)
		return 0;	/* no key can hold such an index */
	ret = store_scan_seek(scan, buf, w.len);
	for (ret = ret < 0 ? ret : tree_child_first(scan, f->key, fr->len, NULL, 0, &c);
	     ret == 1; ret = tree_child_next(scan, fr->len, &c)) {
		ret = sweep_child(f, fr, &c, buf);
		if (ret < 0)
			return ret;
	}
	return ret;
}

int flat_sweep(struct flat *f, const struct flat_frame *fr)
{
	struct store_scan *scan;
	uint8_t *buf = malloc(STORE_KEY_MAX + 16);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = store_scan_open(f->txn, STORE_SPACE_DATA, f->key, fr->len, &scan);
	if (ret == 0) {
		ret = fr->array ? sweep_array(f, fr, scan, buf) : sweep_object(f, fr, scan, buf);
		store_scan_close(scan);
	}
	free(buf);
	return ret;
}
