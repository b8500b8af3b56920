# tests/test_helper/common.bash - shared by every bats suite:
#   load 'test_helper/common'
# Loads bats-support and bats-assert, finds the kvfs binary, and gives each
# test its own store directory. Mount helpers are appended further down.

bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# The binary under test: scripts/run-tests.sh exports KVFS_BIN.
KVFS_BIN=${KVFS_BIN:-$BATS_TEST_DIRNAME/../kvfs}

# kvfs ARGS... runs the binary under test (works with bats' `run`).
kvfs() {
	"$KVFS_BIN" "$@"
}

# A fresh store directory per test (not created: verbs that create it do).
common_setup() {
	STORE=$BATS_TEST_TMPDIR/store
	export STORE
}

# A test file that defines its own setup() should call common_setup in it.
setup() {
	common_setup
}

# assert_file_bytes FILE EXPECTED_PRINTF_FORMAT [ARGS...]
# Fails unless FILE holds exactly the bytes printf would produce.
assert_file_bytes() {
	local file=$1
	shift
	# shellcheck disable=SC2059
	printf "$@" >"$BATS_TEST_TMPDIR/expected.bytes"
	if ! cmp "$BATS_TEST_TMPDIR/expected.bytes" "$file"; then
		echo "expected: $(od -An -c "$BATS_TEST_TMPDIR/expected.bytes")" >&2
		echo "actual:   $(od -An -c "$file")" >&2
		return 1
	fi
}

# ---- mount helpers (owned by the fs engineer; append below) ----
