#!/usr/bin/env bats
# Every verb's --help, the man page and the code list the same verbs,
# options and exit codes. tests/test_helper/cli_options.py reads each
# source into the same line form ("opt rm -R,-r,--recursive"); these tests
# compare them. A new option needs an entry in its verb's cli_opts_VERB
# table in cli/ (which also makes its --help line), a .TP item under the
# verb in docs/kvfs.1, and a mention in both usage lines; nothing here.

# bats file_tags=cli,docs

load 'test_helper/common'

SRC=$BATS_TEST_DIRNAME/..
MAN=$SRC/docs/kvfs.1

# options SOURCE-KIND [SOURCE]: the items of one source, one per line.
options() {
	local kind=$1 source=${2:-}
	if [ -z "$source" ]; then
		case $kind in
		code) source=$SRC ;;
		man) source=$MAN ;;
		help) source=$KVFS_BIN ;;
		esac
	fi
	python3 "$SRC/tests/test_helper/cli_options.py" "$kind" "$source"
}

# same LABEL-A FILE-A LABEL-B FILE-B: fails with a diff when they differ.
same() {
	if ! diff -u --label "$1" "$2" --label "$3" "$4" >"$BATS_TEST_TMPDIR/diff"; then
		echo "$1 and $3 differ:" >&2
		cat "$BATS_TEST_TMPDIR/diff" >&2
		return 1
	fi
}

# pick PATTERN FILE: the lines of FILE that match PATTERN (none is fine).
pick() {
	grep -E "$1" "$2" || true
}

# The three sources are read once for the file: reading help starts kvfs
# once per verb, about 5 s a time under ASan, which every test paid.
setup_file() {
	options code >"$BATS_FILE_TMPDIR/code"
	options man >"$BATS_FILE_TMPDIR/man"
	options help >"$BATS_FILE_TMPDIR/help"
}

setup() {
	common_setup
	cp "$BATS_FILE_TMPDIR/code" "$BATS_FILE_TMPDIR/man" "$BATS_FILE_TMPDIR/help" "$BATS_TEST_TMPDIR/"
	cd "$BATS_TEST_TMPDIR"
}

@test "the sources are read: the code has verbs, options and exit codes" {
	# Guards the comparisons below against three empty lists agreeing.
	[ "$(pick '^verb ' code | wc -l)" -ge 14 ]
	[ "$(pick '^opt ' code | wc -l)" -ge 15 ]
	run -0 pick '^exit ' code
	assert_output $'exit 0\nexit 1\nexit 2'
	run -0 pick '^opt rm ' code
	assert_output 'opt rm -R,-r,--recursive'
	run -0 pick '^opt put -t' man
	assert_output 'opt put -t,--type=ARG'
	run -0 pick '^opt mount -o' help
	assert_output 'opt mount -o,--options=ARG'
}

@test "every verb has --help: it exits 0, starts with its usage and lists -h, --help" {
	run -0 pick '^error ' help
	assert_output ''
	for v in $(pick '^verb ' code | cut -d' ' -f2); do
		run -0 kvfs "$v" --help
		assert_line --index 0 --regexp "^usage: kvfs $v "
		run -0 kvfs "$v" -h
		assert_line --index 0 --regexp "^usage: kvfs $v "
		run -0 kvfs help "$v"
		assert_line --index 0 --regexp "^usage: kvfs $v "
	done
}

@test "kvfs --help, the man page's SYNOPSIS and cli/kvfs.c name the same verbs" {
	pick '^verb ' code >verbs.code
	pick '^verb ' help >verbs.help
	pick '^verb ' man >verbs.man
	same cli/kvfs.c verbs.code 'kvfs --help' verbs.help
	same cli/kvfs.c verbs.code 'docs/kvfs.1 SYNOPSIS' verbs.man
}

@test "every verb's --help lists exactly the options of its table in cli/" {
	pick '^opt ' code >opts.code
	pick '^opt ' help >opts.help
	same 'cli/ option tables' opts.code 'kvfs VERB --help' opts.help
}

@test "docs/kvfs.1 lists exactly the options of each verb's table in cli/" {
	pick '^opt ' code >opts.code
	pick '^opt ' man >opts.man
	same 'cli/ option tables' opts.code 'docs/kvfs.1 VERBS items' opts.man
}

@test "each option is named in the verb's usage line, in --help and in the man page's SYNOPSIS" {
	local kind verb spellings s found
	# every spelling each verb accepts ("rm -r"), from its options in code
	# (sets, not a grep a lookup: 14 s of forks before)
	local -A accepts=()
	while read -r _ verb spellings; do
		spellings=${spellings%=ARG}
		for s in ${spellings//,/ }; do
			accepts["$verb $s"]=1
		done
	done < <(pick '^opt ' code)
	for kind in help man; do
		local -A named=()
		while read -r _ verb s; do
			named["$verb $s"]=1
		done < <(pick '^synopsis ' "$kind")
		# Every option: one of its spellings is in the usage line.
		while read -r _ verb spellings; do
			spellings=${spellings%=ARG}
			found=
			for s in ${spellings//,/ }; do
				[ -z "${named["$verb $s"]:-}" ] || found=1
			done
			[ -n "$found" ] || {
				echo "$kind: usage line of $verb lacks $spellings" >&2
				return 1
			}
		done < <(pick '^opt ' code)
		# Every spelling in a usage line is an option of that verb.
		while read -r _ verb s; do
			[ -n "${accepts["$verb $s"]:-}" ] || {
				echo "$kind: usage line of $verb names $s, which it does not accept" >&2
				return 1
			}
		done < <(pick '^synopsis ' "$kind")
		unset named
	done
}

@test "every verb's --help and the man page's EXIT STATUS list the exit codes of enum cli_exit" {
	local v
	pick '^exit ' code >exit.code
	pick '^exit ' man >exit.man
	same 'enum cli_exit' exit.code 'docs/kvfs.1 EXIT STATUS' exit.man
	for v in $(pick '^verb ' code | cut -d' ' -f2); do
		pick "^exit $v " help | sed "s/^exit $v /exit /" >exit.help
		same 'enum cli_exit' exit.code "kvfs $v --help" exit.help
	done
}

@test "the parser accepts every spelling the man page lists, and refuses an unknown option" {
	local verb spellings s has_arg
	while read -r _ verb spellings; do
		has_arg=
		[ "${spellings%=ARG}" != "$spellings" ] && has_arg=1
		spellings=${spellings%=ARG}
		for s in ${spellings//,/ }; do
			if [ -n "$has_arg" ]; then
				# The value may be refused (put --type x), the option not.
				run kvfs "$verb" "$s" x --help
				refute_output --partial "unknown option '"
				refute_output --partial "needs a value"
				refute_output --partial "takes no value"
			else
				run -0 kvfs "$verb" "$s" --help
				assert_line --index 0 --regexp "^usage: kvfs $verb "
			fi
		done
	done < <(pick '^opt ' man)
	run -2 kvfs rm --no-such-option S /x
	assert_output --partial "unknown option '--no-such-option'"
	run -2 kvfs get -q S /x
	assert_output --partial "unknown option '-q'"
}

@test "the comparison fails when the man page loses or changes an option" {
	# The check above must be able to fail: break a copy of the man page.
	sed 's/^\.BR \\-z ", " \\-\\-lazy$/.BR \\-z/' "$MAN" >broken.1
	! cmp -s "$MAN" broken.1
	options man "$PWD/broken.1" | pick '^opt ' /dev/stdin >opts.broken
	pick '^opt ' code >opts.code
	run same 'cli/ option tables' opts.code 'broken man page' opts.broken
	assert_failure
	assert_output --partial '-opt umount -z,--lazy'
	assert_output --partial '+opt umount -z'
	# An item that loses its head line (get's --compact) is missed too.
	sed '0,/^\.B \\-\\-compact$/{//d}' "$MAN" >broken2.1
	options man "$PWD/broken2.1" | pick '^opt ' /dev/stdin >opts.broken2
	run same 'cli/ option tables' opts.code 'broken man page' opts.broken2
	assert_output --partial '-opt get --compact'
	assert_failure
}
