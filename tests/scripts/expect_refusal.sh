#!/usr/bin/env bash
# A refusal test: runs COMMAND and passes only when it exits with STATUS and a line of its output
# (stdout and stderr together) matches the extended regular expression PATTERN; with --one-line,
# the output must also be that one line. (CTest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status, so a command that printed the message and then exited 0 would pass.)
#   expect_refusal.sh [--one-line] STATUS PATTERN COMMAND [ARG...]
set -uo pipefail
one_line=0
if [ "${1:-}" = --one-line ]; then
  one_line=1
  shift
fi
[ $# -ge 3 ] || { echo "usage: expect_refusal.sh [--one-line] STATUS PATTERN COMMAND [ARG...]" >&2; exit 2; }
status=$1 pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$status" ]; then
  echo "expect_refusal: exit status $rc, expected $status" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "expect_refusal: no line matches: $pattern" >&2
  exit 1
fi
if [ "$one_line" -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
  echo "expect_refusal: expected one line of output" >&2
  exit 1
fi
echo "expect_refusal ok"
