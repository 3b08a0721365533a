# Checks shared by the CLI tests in tests/cli/ (sourced by them; this file is
# kept out of tests/cli/ because CTest runs every tests/cli/*.sh as a test).
# Failures are counted in $failures so that one run reports every failed check.

failures=0

# cli_test_start BIN_DIR TOOL...: sets BIN to BIN_DIR made absolute, skips the
# test (exit 77) unless every TOOL is built there, then moves into a fresh
# work folder, $WORK, removed when the script exits.
cli_test_start() {
  BIN="$(cd "$1" 2>/dev/null && pwd)"
  shift
  local tool
  for tool in "$@"; do
    [[ -x "$BIN/$tool" ]] || { echo "skip: $BIN/$tool not built"; exit 77; }
  done
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  cd "$WORK" || exit 1
}

# fail MESSAGE...: reports one failed check and goes on.
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# check_one_error_line NAME PATTERN RC: the run that exited with RC, its stderr
# in ./stderr.txt, failed (RC != 0) with exactly one stderr line, matching PATTERN.
check_one_error_line() {
  local name="$1" pattern="$2" rc="$3"
  local lines
  lines=$(wc -l <stderr.txt)
  if [[ $rc -eq 0 ]]; then fail "$name: exit code 0"; fi
  if [[ $lines -ne 1 ]]; then fail "$name: $lines stderr lines:"; cat stderr.txt; fi
  if ! grep -q -- "$pattern" stderr.txt; then fail "$name: stderr lacks '$pattern':"; cat stderr.txt; fi
}

# finish MESSAGE: exits 1 with the failure count if a check failed, else
# prints MESSAGE (the script then ends with status 0).
finish() {
  if [[ $failures -ne 0 ]]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "$1"
}
