/*
 * tests/unit/test_etcd_store_subdirs.c - how many containers each listed
 * child holds (a directory's nlink from a listing), and its edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_etcd_store.h"

/* The test's container record: the value "E" (model/ passes its empty object and array). */
static bool subdirs_record(const void *val, size_t len)
{
	return len == 1 && *(const char *)val == 'E';
}

/* The tuple ("f", a[, b[, c]]): a child of ("f") and keys below it. */
static size_t subdirs_key(uint8_t *out, const char *a, const char *b, const char *c)
{
	struct tuple_writer w;

	tuple_writer_init(&w, out, 64);
	tuple_put_string(&w, "f", 1);
	tuple_put_string(&w, a, strlen(a));
	if (b)
		tuple_put_string(&w, b, strlen(b));
	if (c)
		tuple_put_string(&w, c, strlen(c));
	return w.len;
}

struct subdirs_put {
	const char *a, *b, *c, *val;
};

/*
 * step 0: a holds a leaf; b two containers, one of them an empty
 * container's record; c the record alone; d a leaf and a container; e is
 * a leaf. step 1: d's container goes by a plain delete of its one key
 * (its entry and hint stay behind), b's record becomes a leaf, and b's
 * other container loses its first key (the hint) but keeps another.
 */
static int subdirs_fn(struct store_txn *t, void *arg)
{
	static const struct subdirs_put step0[] = {
		{ "a", "x", NULL, "1" }, { "b", "g", "y", "1" }, { "b", "g", "z", "1" },
		{ "b", "r", NULL, "E" }, { "c", "e", NULL, "E" }, { "d", "g", "y", "1" },
		{ "d", "z", NULL, "1" }, { "e", NULL, NULL, "1" },
	};
	const int *step = arg;
	uint8_t k[64];
	int rc = 0;

	if (*step == 1) {
		rc = store_del(t, STORE_SPACE_DATA, k, subdirs_key(k, "d", "g", "y"));
		if (!rc)
			rc = store_put(t, STORE_SPACE_DATA, k, subdirs_key(k, "b", "r", NULL), "1", 1);
		if (!rc)
			rc = store_del(t, STORE_SPACE_DATA, k, subdirs_key(k, "b", "g", "y"));
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < sizeof(step0) / sizeof(step0[0]); i++)
		rc = store_put(t, STORE_SPACE_DATA, k,
			       subdirs_key(k, step0[i].a, step0[i].b, step0[i].c), step0[i].val, 1);
	return rc;
}

/*
 * Each child of ("f") and what store_scan_child_subdirs says of it, as
 * "a0 b2 ..." ("?" when not known) into out; *reads: reads of the entries
 * below the children.
 */
static void subdirs_list(struct store *st, char *out, int *reads)
{
	struct store_txn *t;
	struct store_scan *s;
	struct store_val k, v;
	uint8_t pfx[16];
	size_t end, pl = subdirs_key(pfx, "", NULL, NULL) - 2;	/* ("f") */
	const struct etcd_below *last = NULL;
	int rc;

	*out = 0;
	*reads = 0;
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK(store_etcd_txn_id(t) > 0);	/* pinned, as a mount's reads are */
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, pfx, pl, &s), 0);
	store_scan_expect_children(s);
	while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1) {
		uint32_t n;
		int known = store_scan_child_subdirs(s, k.data, end, &n);
		char c = ((const char *)k.data)[pl + 1];

		CHECK(known >= 0);
		if (ESCAN(s)->below && ESCAN(s)->below != last) {
			(*reads)++;
			last = ESCAN(s)->below;
		}
		if (known == 1)
			sprintf(out + strlen(out), "%s%c%u", *out ? " " : "", c, n);
		else
			sprintf(out + strlen(out), "%s%c?", *out ? " " : "", c);
	}
	CHECK_EQ_INT(rc, 0);
	t_scan_close(s);
	t_end(t);
}

static void subdirs_expect(const char *got, const char *want, int line)
{
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "#   %s:%d: listed \"%s\", expected \"%s\"\n", __FILE__, line, got, want);
		unit_current_failed = 1;
	}
}

static int subdirs_repair_fn(struct store_txn *t, void *arg)
{
	(void)arg;
	return store_txn_repair(t);
}

static void subdirs_problem(void *arg, const uint8_t *key, size_t len, const char *message)
{
	(void)key;
	(void)len;
	(void)message;
	(*(int *)arg)++;
}

/*
 * A store created with container records' entries (the marker's "2")
 * counts each listed child's containers from the entries one level below
 * the children, each checked (a stale entry, a record turned leaf and a
 * gone hint are all seen), one read for a listing's window. A store from
 * before never says. kvfs check misses no record's entry; a repair puts
 * it back.
 */
void test_kids_subdirs(void)
{
	struct store *st = open_new("subdirs");
	struct store_etcd *e = ETCD(st);
	struct etcd_client *c = NULL;
	struct store_txn *t;
	uint8_t k[ETCD_KEY_MAX], tk[64];
	size_t kl = e->prefix_len, tl = subdirs_key(tk, "c", "e", NULL);
	struct etcd_op del = { .type = ETCD_OP_DELETE, .key = k };
	struct etcd_txn_result r;
	char got[64];
	int step = 0, reads, problems = 0;

	CHECK(e->kids && e->kids_records);
	store_set_container_test(st, subdirs_record);
	CHECK_EQ_INT(store_etcd_write(st, subdirs_fn, &step), 0);
	subdirs_list(st, got, &reads);
	subdirs_expect(got, "a0 b2 c1 d1 e0", __LINE__);
	CHECK_EQ_INT(reads, 1);
	step = 1;
	CHECK_EQ_INT(store_etcd_write(st, subdirs_fn, &step), 0);
	subdirs_list(st, got, &reads);
	subdirs_expect(got, "a0 b1 c1 d0 e0", __LINE__);
	CHECK_EQ_INT(reads, 1);
	/* a store from before the marker's "2" never says */
	e->kids_records = false;
	subdirs_list(st, got, &reads);
	subdirs_expect(got, "a? b? c? d? e?", __LINE__);
	e->kids_records = true;

	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, subdirs_problem, &problems), 0);
	t_end(t);
	CHECK_EQ_INT(problems, 0);
	memcpy(k, e->prefix, kl);
	k[kl++] = ETCD_SPACE_KIDS;
	k[kl++] = 2;	/* ("f", "c", "e") has two elements before its last */
	memcpy(k + kl, tk, tl);
	del.key_len = kl + tl;
	CHECK_EQ_INT(etcd_client_take(e, &c), 0);
	CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, &del, 1, NULL, 0, &r), 0);
	etcd_txn_result_release(&r);
	etcd_client_give(e, c);
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, subdirs_problem, &problems), 0);
	t_end(t);
	CHECK_EQ_INT(problems, 1);
	/* a repair puts it back */
	CHECK_EQ_INT(store_etcd_write(st, subdirs_repair_fn, NULL), 0);
	problems = 0;
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, subdirs_problem, &problems), 0);
	t_end(t);
	CHECK_EQ_INT(problems, 0);
	subdirs_list(st, got, &reads);
	subdirs_expect(got, "a0 b1 c1 d0 e0", __LINE__);
	/* a store from before records' entries: the repair says it keeps them now */
	e->kids_records = false;
	CHECK_EQ_INT(store_etcd_write(st, subdirs_repair_fn, NULL), 0);
	CHECK(e->kids_records);
	{
		struct etcd_range_result m = { 0 };
		uint8_t mk[ETCD_KEY_MAX];

		CHECK_EQ_INT(etcd_client_take(e, &c), 0);
		CHECK_EQ_INT(etcd_range_retry(c, mk, etcd_kids_marker(e, mk), NULL, &m), 0);
		etcd_client_give(e, c);
		CHECK(m.len == 1 && m.kvs[0].val_len == 1 && m.kvs[0].val[0] == '2');
		etcd_range_result_release(&m);
	}
	t_close(st, true);
}

struct wide_subdirs {
	int child, subdirs;	/* ("w", child, j, "x") for each j < subdirs */
};

/* ("w", child, "leaf"): a child that holds no container */
static int fill_leaf_fn(struct store_txn *t, void *arg)
{
	const struct wide_subdirs *a = arg;
	uint8_t k[64];
	struct tuple_writer w;

	tuple_writer_init(&w, k, sizeof(k));
	tuple_put_string(&w, "w", 1);
	tuple_put_int(&w, a->child);
	tuple_put_string(&w, "leaf", 4);
	return store_put(t, STORE_SPACE_DATA, k, w.len, "1", 1);
}

static int wide_subdirs_fn(struct store_txn *t, void *arg)
{
	const struct wide_subdirs *a = arg;
	int rc = 0;

	for (int j = 0; rc == 0 && j < a->subdirs; j++) {
		uint8_t k[64];
		struct tuple_writer w;

		tuple_writer_init(&w, k, sizeof(k));
		tuple_put_string(&w, "w", 1);
		tuple_put_int(&w, a->child);
		tuple_put_int(&w, j);
		tuple_put_string(&w, "x", 1);
		rc = store_put(t, STORE_SPACE_DATA, k, w.len, "1", 1);
	}
	return rc;
}

/*
 * Every child of ("w") is counted with `subdirs` containers: *known of
 * them were known, the others not; 0, or the first wrong count's child + 1.
 * resume: the scan is moved before its first step, as a readdir that goes
 * on from a position is.
 */
static int wide_subdirs_list(struct store *st, int subdirs, bool resume, int *known)
{
	struct store_txn *t;
	struct store_scan *s;
	struct store_val k, v;
	uint8_t pfx[8];
	struct tuple_writer w;
	size_t end;
	int rc, i = 0, wrong = 0;

	tuple_writer_init(&w, pfx, sizeof(pfx));
	tuple_put_string(&w, "w", 1);
	*known = 0;
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK(store_etcd_txn_id(t) > 0);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, pfx, w.len, &s), 0);
	store_scan_expect_children(s);
	if (resume)
		CHECK_EQ_INT(store_scan_seek(s, pfx, w.len), 0);
	while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1) {
		uint32_t n;
		int r = store_scan_child_subdirs(s, k.data, end, &n);

		CHECK(r >= 0);
		*known += r == 1;
		/* subdirs -1: 3 for the children below 200, none after */
		if (r == 1 && n != (uint32_t)(subdirs >= 0 ? subdirs : i < 200 ? 3 : 0) && !wrong)
			wrong = i + 1;
		i++;
	}
	CHECK_EQ_INT(rc, 0);
	t_scan_close(s);
	t_end(t);
	return wrong;
}

/*
 * Counts stay exact where a listing's window ends inside a child (its last
 * child's hint: 200 children, windows of 128) and where the page of
 * entries below ends inside one (2 children of 2,100 containers each). A
 * listing from the first name (maybe a plain `ls`) checks the entries of
 * its first window only and knows the rest only when they have none; one
 * that goes on from a position (`ls -l`'s later readdirs) knows them all.
 */
void test_kids_subdirs_edges(void)
{
	struct store *st = open_new("subdirs-edges");
	struct wide_subdirs a = { 0, 3 };
	int known;

	for (a.child = 0; a.child < 200; a.child++)
		CHECK_EQ_INT(store_etcd_write(st, wide_subdirs_fn, &a), 0);
	CHECK_EQ_INT(wide_subdirs_list(st, 3, false, &known), 0);
	CHECK_EQ_INT(known, 128);
	CHECK_EQ_INT(wide_subdirs_list(st, 3, true, &known), 0);
	CHECK_EQ_INT(known, 200);
	a.subdirs = 0;	/* children without containers: the free answer */
	for (a.child = 200; a.child < 300; a.child++)
		CHECK_EQ_INT(store_etcd_write(st, fill_leaf_fn, &a), 0);
	CHECK_EQ_INT(wide_subdirs_list(st, -1, false, &known), 0);
	CHECK_EQ_INT(known, 228);
	t_close(st, true);

	st = open_new("subdirs-edges-wide");
	a.subdirs = 2100;
	for (a.child = 0; a.child < 2; a.child++)
		CHECK_EQ_INT(store_etcd_write(st, wide_subdirs_fn, &a), 0);
	CHECK_EQ_INT(wide_subdirs_list(st, 2100, true, &known), 0);
	CHECK_EQ_INT(known, 2);
	t_close(st, true);
}
