# tests/test_helper/tables.bash - the table fixture of the tables suites
# (70, 71, 75, 46): `load 'test_helper/tables'` after common.

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

# poi_names: issue 32's geo/poi example with references over two fields:
# /geo (row G1); /poi keyed by (poi_id, language), whose poi_id references
# /geo (rows G1/en, G1/fr); /names keyed by (poi_id, language) too and
# referencing /poi over those two key fields, which its rows leave out
# (their key implies them; row G1/en); /reviews keyed by one level, whose
# fields poi, lang reference /poi (row r1 naming G1/fr).
poi_names() {
	mkdir "$MNT/geo" "$MNT/poi" "$MNT/names" "$MNT/reviews"
	kvfs table create "$STORE" /geo --key-depth 1
	kvfs table create "$STORE" /poi --key-depth 2 --key-fields poi_id,language
	kvfs table column "$STORE" /poi poi_id string --references /geo
	kvfs table create "$STORE" /names --key-depth 2 --key-fields poi_id,language
	kvfs table reference "$STORE" /names poi_id,language /poi
	kvfs table create "$STORE" /reviews --key-depth 1
	kvfs table column "$STORE" /reviews stars integer
	kvfs table reference "$STORE" /reviews poi,lang /poi
	row geo/G1 '{"lat":48.86}'
	mkdir "$MNT/poi/G1" "$MNT/names/G1"
	row poi/G1/en '{"poiName":"Louvre"}'
	row poi/G1/fr '{"poiName":"Le Louvre"}'
	row names/G1/en '{"name":"The Louvre"}'
	row reviews/r1 '{"poi":"G1","lang":"fr","stars":5}'
}
