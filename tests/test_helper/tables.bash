# tests/test_helper/tables.bash - the table fixture of the tables suites
# (70, 71): `load 'test_helper/tables'` after common.

# row PATH JSON: writes a whole row (PATH relative to the mount) through
# the mount, as cp does.
row() {
	printf '%s' "$2" >"$BATS_TEST_TMPDIR/row.json"
	cp "$BATS_TEST_TMPDIR/row.json" "$MNT/$1.json"
}

# people: the table /people (key depth 1) with a unique index by_email and
# an index by_age, holding the rows ann (age 30) and bob (age -4.5).
people() {
	mkdir "$MNT/people"
	kvfs table create "$STORE" /people --key-depth 1
	kvfs index create "$STORE" /people by_email email --unique
	kvfs index create "$STORE" /people by_age age
	row people/ann '{"email":"ann@x","age":30}'
	row people/bob '{"email":"bob@x","age":-4.5}'
}
