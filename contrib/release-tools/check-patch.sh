#!/bin/sh
# Apply relbot-mode.patch to a release-tools checkout and run release-tools' own checks with
# it: their tests before and after the patch (from a throwaway virtualenv with their pinned
# test requirements, from PyPI), then their linters (the ruff and black versions of their
# pre-commit config) and mypy (their mypy-requirements.txt) on the patched tree.
#
#   contrib/release-tools/check-patch.sh RELEASE_TOOLS_CHECKOUT
#
# The checkout must be clean and should be at the patch's base commit (README.md). The patch
# stays applied afterwards; `git -C CHECKOUT checkout -- .` undoes it. Needs git, Python 3.11+
# ($PYTHON, default python3) and PyPI. Not run by `make test`: CI has no network.
set -eu

say() { printf 'check-patch: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 RELEASE_TOOLS_CHECKOUT"
here=$(cd "$(dirname "$0")" && pwd)
patch="$here/relbot-mode.patch"
checkout=$(cd "$1" && pwd) || die "$1 is not a folder"
python=${PYTHON:-python3}
[ -f "$checkout/run_release.py" ] || die "$checkout has no run_release.py: not release-tools"
git -C "$checkout" diff --quiet HEAD -- || die "$checkout has uncommitted changes"

base=$(sed -n 's/^base-commit: //p' "$patch")
head=$(git -C "$checkout" rev-parse HEAD)
if [ "$head" = "$base" ]; then
    say "release-tools at $head (the patch's base)"
else
    say "release-tools at $head; the patch is against $base"
fi
git -C "$checkout" apply --check "$patch" || die "git apply --check: the patch does not apply"
say "git apply --check: the patch applies"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "$("$python" --version), test requirements from requirements.txt and dev-requirements.txt"
"$python" -m venv "$work/tests"
"$work/tests/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$checkout/requirements.txt" -r "$checkout/dev-requirements.txt" >"$work/pip.log" 2>&1 \
    || { cat "$work/pip.log" >&2; die "installing release-tools' test requirements failed"; }

# One line per test: "PASSED tests/...::name" (or FAILED, ERROR), and pytest's own summary.
run_tests() {
    (cd "$checkout" && "$work/tests/bin/python" -m pytest -p no:cacheprovider -q -rA tests/) \
        >"$work/$1.log" 2>&1 || true
    grep -E '^(PASSED|FAILED|ERROR) ' "$work/$1.log" | sed 's/ - .*//' | sort >"$work/$1.results"
    tail -n 1 "$work/$1.log"
}
say "before the patch: $(run_tests before)"
git -C "$checkout" apply "$patch"
say "patch applied: $(git -C "$checkout" diff --stat | tail -n 1 | sed 's/^ *//')"
say "with the patch:   $(run_tests after)"

# Tests that passed before and do not now; tests the patch adds, and how they went.
# A test's id may hold spaces (parameters): drop only the leading status word.
ids() { sed -n "s/^$1 //p" "$2" | sort; }
ids PASSED "$work/before.results" >"$work/passed-before"
ids PASSED "$work/after.results" >"$work/passed-after"
broken=$(comm -23 "$work/passed-before" "$work/passed-after")
ids '[A-Z]*' "$work/before.results" >"$work/all-before"
ids '[A-Z]*' "$work/after.results" >"$work/all-after"
comm -13 "$work/all-before" "$work/all-after" >"$work/new"
new_failing=$(comm -23 "$work/new" "$work/passed-after")
still_failing=$(ids '\(FAILED\|ERROR\)' "$work/after.results")
say "tests the patch adds: $(wc -l <"$work/new" | tr -d ' '), failing: $(printf '%s' "$new_failing" | grep -c . || true)"
say "tests that passed before and fail with the patch: $(printf '%s' "$broken" | grep -c . || true)"
if [ -n "$still_failing" ]; then
    say "failing before and after (not the patch's):"
    printf '%s\n' "$still_failing" | sed 's/^/check-patch:   /'
    grep -E 'URLError|Name or service not known|Temporary failure in name resolution' \
        "$work/after.log" >/dev/null && say "  (these reach the network: peps.python.org)"
fi

# Their linters, at the versions their pre-commit config pins, on the files the patch changes.
ruff=$(sed -n '/ruff-pre-commit/{n;s/.*rev: v\{0,1\}//p;}' "$checkout/.pre-commit-config.yaml")
black=$(sed -n '/black-pre-commit-mirror/{n;s/.*rev: v\{0,1\}//p;}' "$checkout/.pre-commit-config.yaml")
"$python" -m venv "$work/lint"
"$work/lint/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ruff==$ruff" "black==$black" -r "$checkout/mypy-requirements.txt" >"$work/pip-lint.log" 2>&1 \
    || { cat "$work/pip-lint.log" >&2; die "installing ruff, black and mypy failed"; }
changed=$(git -C "$checkout" diff --name-only -- '*.py')
lint=ok
(cd "$checkout" && "$work/lint/bin/ruff" check --no-fix --no-cache $changed) >"$work/ruff.log" 2>&1 \
    || lint=failed
say "ruff $ruff check: $(tail -n 1 "$work/ruff.log")"
(cd "$checkout" && "$work/lint/bin/black" --check $changed) >"$work/black.log" 2>&1 || lint=failed
say "black $black --check: $(tail -n 1 "$work/black.log")"
(cd "$checkout" && "$work/lint/bin/mypy" --cache-dir "$work/mypy-cache" .) >"$work/mypy.log" 2>&1 \
    || lint=failed
say "mypy (their config, strict): $(tail -n 1 "$work/mypy.log")"
[ "$lint" = ok ] || { cat "$work/ruff.log" "$work/black.log" "$work/mypy.log" >&2; die "FAILED: lint"; }

[ -z "$broken" ] && [ -z "$new_failing" ] || {
    printf '%s\n' "$broken" "$new_failing" >&2
    die "FAILED: the tests above fail with the patch"
}
say "OK: the patch applies, and release-tools' tests and linters pass with it"
say "(it stays applied; undo it with: git -C $checkout checkout -- .)"
