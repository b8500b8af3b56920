#!/usr/bin/env bash
# Tables: what indexes cost a write, and that find does not grow with the
# table. Ratios within one run (the machine is shared and noisy).
#   scripts/bench-tables.sh [ROWS] [SMALL] [LARGE]
#     ROWS   row documents copied into a table (default 10,000), through a
#            real mount: once into a plain table, once into a table with
#            two indexes (one unique)
#            and once as one import (one transaction) of the whole table
#     SMALL, LARGE   table sizes for find (default 1,000 and 100,000): the
#            same 200 point finds and 200 range finds of 100 rows each, by
#            kvfs find and as listings of @NAME/VALUE/ and @range through a mount
#   LINES=N (default 100,000): rows of the `import --lines` run, against
#            mdb_load of the same keys and row texts into a bare LMDB
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000} small=${2:-1000} large=${3:-100000}
kvfs=${KVFS_BIN:-$PWD/kvfs}
work=$(mktemp -d /tmp/kvfs-bench-tables.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }

# rows_json N FILE: a table document of N rows {"email", "age", "name"}
rows_json() {
	awk -v n="$1" 'BEGIN {
		printf "{"
		for (i = 0; i < n; i++)
			printf "%s\"r%07d\":{\"email\":\"u%d@x\",\"age\":%d.5,\"name\":\"n%07d\"}", \
				i ? "," : "", i, i, (i * 7919) % 1000, i
		printf "}"
	}' >"$2"
}

# copy_rows STORE INDEXED: copies $rows row documents into /people through a
# mount, one cp each (each its own transaction); prints the seconds.
copy_rows() {
	local store=$1 t0
	"$kvfs" mkdir --create "$store" /people
	"$kvfs" table create "$store" /people --key-depth 1
	if [ "$2" = yes ]; then
		"$kvfs" index create "$store" /people by_email email --unique
		"$kvfs" index create "$store" /people by_age age
	fi
	"$kvfs" mount "$store" "$mnt"
	t0=$(now)
	(cd "$work/rows" && for f in *.json; do cp "$f" "$mnt/people/$f"; done)
	elapsed "$t0"
	"$kvfs" umount "$mnt"
}

mkdir -p "$work/rows"
awk -v n="$rows" -v dir="$work/rows" 'BEGIN {
	for (i = 0; i < n; i++)
		printf "{\"email\":\"u%d@x\",\"age\":%d.5,\"name\":\"n%d\"}", i, (i * 7919) % 1000, i \
			>(dir "/r" sprintf("%07d", i) ".json")
}'
plain=$(copy_rows "$work/plain" no)
indexed=$(copy_rows "$work/indexed" yes)
"$kvfs" check "$work/indexed" >/dev/null
echo "copy $rows row documents (cp each): plain ${plain}s, two indexes ${indexed}s," \
	"ratio $(ratio "$indexed" "$plain") (goal: at most 1.5)"

# import_time STORE INDEXED: one import of a $rows-row table document (one
# transaction) into a table, with or without the two indexes.
import_time() {
	local t0
	"$kvfs" mkdir --create "$1" /people
	"$kvfs" table create "$1" /people --key-depth 1
	if [ "$2" = yes ]; then
		"$kvfs" index create "$1" /people by_email email --unique
		"$kvfs" index create "$1" /people by_age age
	fi
	t0=$(now)
	"$kvfs" import "$1" /people "$work/rows.json"
	elapsed "$t0"
}
rows_json "$rows" "$work/rows.json"
plain=$(import_time "$work/iplain" no)
indexed=$(import_time "$work/iindexed" yes)
echo "import $rows rows in one transaction: plain ${plain}s, two indexes ${indexed}s," \
	"ratio $(ratio "$indexed" "$plain")"

# import --lines: LINES JSON Lines rows into a table with a key field and
# an index, against mdb_load (lmdb-utils) of the same keys and rows.
lines=${LINES:-100000}
awk -v n="$lines" 'BEGIN { for (i = 0; i < n; i++)
	printf "{\"email\":\"u%d@x\",\"age\":%d,\"name\":\"n%07d\"}\n", i, i % 1000, i
}' >"$work/rows.jsonl"
"$kvfs" mkdir --create "$work/lines" /people
"$kvfs" table create "$work/lines" /people --key-depth 1 --key-fields email
"$kvfs" index create "$work/lines" /people by_age age
t0=$(now)
"$kvfs" import --lines "$work/lines" /people "$work/rows.jsonl"
t_lines=$(elapsed "$t0")
"$kvfs" check "$work/lines" >/dev/null
awk '{ key = $0; sub(/^\{"email":"/, "", key); sub(/".*/, "", key)
	printf " %s\n %s\n", key, $0 }
	BEGIN { print "VERSION=3\nformat=print\ntype=btree\nmapsize=4294967296\nHEADER=END" }
	END { print "DATA=END" }' "$work/rows.jsonl" >"$work/rows.mdb.txt"
mkdir "$work/mdb"
t0=$(now)
mdb_load -f "$work/rows.mdb.txt" "$work/mdb"
t_mdb=$(elapsed "$t0")
echo "import --lines $lines rows (key field, one index): ${t_lines}s," \
	"$(awk -v n="$lines" -v t="$t_lines" 'BEGIN { printf "%.0f", n / t }') rows/s;" \
	"mdb_load of the same keys ${t_mdb}s, ratio $(ratio "$t_lines" "$t_mdb")"

# find_time STORE: 200 point finds and 200 range finds (100 rows each) in one
# shell loop; prints the seconds.
find_time() {
	local t0 i lo
	t0=$(now)
	for ((i = 0; i < 200; i++)); do
		"$kvfs" find "$1" /people by_email "u$((i * 3))@x" >/dev/null
		lo=$(( (i * 4) % (small - 100) ))
		"$kvfs" find "$1" /people by_name --from "$(printf n%07d "$lo")" \
			--to "$(printf n%07d $((lo + 99)))" >/dev/null
	done
	elapsed "$t0"
}
for n in "$small" "$large"; do
	rows_json "$n" "$work/t$n.json"
	"$kvfs" import --create "$work/s$n" /people "$work/t$n.json"
	"$kvfs" table create "$work/s$n" /people --key-depth 1
	"$kvfs" index create "$work/s$n" /people by_email email --unique
	"$kvfs" index create "$work/s$n" /people by_name name
done
echo "a range finds $("$kvfs" find "$work/s$large" /people by_name --from n0000100 \
	--to n0000199 | wc -l) rows of $large"
t0=$(now)
"$kvfs" find "$work/s$large" /people by_name --from n0000500 --to n0000599 >/dev/null
echo "one 100-row range find out of $large rows (a whole kvfs process): $(elapsed "$t0")s"
t_small=$(find_time "$work/s$small")
t_large=$(find_time "$work/s$large")
echo "400 finds: $small rows ${t_small}s, $large rows ${t_large}s," \
	"ratio $(ratio "$t_large" "$t_small") (goal: at most 1.5)"

# ls_time STORE: the same through a mount: 200 listings of an index value's
# rows (ls -f PATH/@by_email/VALUE/) and 200 of a 100-row range
# (PATH/@by_name/@range/FROM/TO/), each a fresh lookup (the index directories
# are never cached by the kernel); prints the seconds.
ls_time() {
	local t0 i lo
	"$kvfs" mount -o ro "$1" "$mnt" 2>/dev/null
	t0=$(now)
	for ((i = 0; i < 200; i++)); do
		ls -f "$mnt/people/@by_email/u$((i * 3))@x/" >/dev/null
		lo=$(( (i * 4) % (small - 100) ))
		ls -f "$mnt/people/@by_name/@range/$(printf n%07d "$lo")/$(printf n%07d $((lo + 99)))/" \
			>/dev/null
	done
	elapsed "$t0"
	fusermount3 -u "$mnt"
}
n_range=$("$kvfs" mount -o ro "$work/s$large" "$mnt" 2>/dev/null &&
	ls -f "$mnt/people/@by_name/@range/n0000100/n0000199/" | grep -vc '^\.\.\?$'; fusermount3 -u "$mnt")
echo "a range through the mount lists $n_range rows of $large"
# best of two runs each: the first also pays for faulting the store's pages in
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b) ? a : b }'; }
t_small=$(best "$(ls_time "$work/s$small")" "$(ls_time "$work/s$small")")
t_large=$(best "$(ls_time "$work/s$large")" "$(ls_time "$work/s$large")")
echo "400 index listings through the mount: $small rows ${t_small}s, $large rows ${t_large}s," \
	"ratio $(ratio "$t_large" "$t_small") (goal: at most 1.5)"
