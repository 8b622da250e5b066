#!/usr/bin/env bash
# Fuzzes one target for FUZZTIME (make fuzz): scripts/fuzz-one.sh PKG FUZZ.
#
# Go's fuzzing engine takes a worker that does not answer within a second
# for a crash: "fuzzing process hung or terminated unexpectedly". On a
# loaded 2-core machine (make test fuzzes beside the test packages) a
# worker starved of CPU, or a VM paused, looks the same, and the engine
# writes the input it was on to testdata/fuzz as a crasher. So when a run
# fails that way, the input is replayed on its own (`go test -run
# FUZZ/ID`): if it fails, that is the failure; if it passes, the input
# was not the cause, it is removed, and the target is fuzzed once more,
# whose outcome stands. Any other failure stands at once.
set -uo pipefail
pkg=$1 target=$2 go=${GO:-go} fuzztime=${FUZZTIME:-10000x}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fuzz() { "$go" test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$out"; }

fuzz && exit 0
grep -q 'fuzzing process hung or terminated unexpectedly' "$out" || exit 1
id=$(sed -n "s|.*go test -run=$target/\([0-9a-f]*\).*|\1|p" "$out" | head -1)
[ -n "$id" ] || exit 1
if ! "$go" test -count=1 -run "^$target/$id\$" "$pkg"; then
  echo "fuzz-one: $pkg $target: input $id fails on its own too"
  exit 1
fi
echo "fuzz-one: $pkg $target: input $id passes on its own: the worker was starved, not crashed; fuzzing again"
rm -f "$pkg/testdata/fuzz/$target/$id"
fuzz
