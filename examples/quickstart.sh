#!/usr/bin/env bash
# Local quick start: a workspace in a folder, three memories, a supersede, and lookups.
# No Box account needed. Usage: bash examples/quickstart.sh [FOLDER]
set -euo pipefail
BM=${BOX_MEMORY:-box-memory}
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/box-memory-demo.XXXXXX")}
# `init` makes the demo workspace your default one (as it says), so `box-memory recall` in this
# shell or any other finds it without -w, until the next `box-memory init`.
WS="$DIR/workspace"

$BM init demo --path "$WS" --team platform
$BM write "We decided to use short-lived JWTs with refresh rotation for the mobile API." \
  --title "Auth strategy" --kind decision --tag auth --tag mobile -w "$WS"
printf -- '- [ ] rotate the signing keys monthly\n- [ ] alert on failure\n' |
  $BM write - --title "Rotate JWT signing keys" --tag auth --tag ops --related "[[Auth strategy]]" -w "$WS"
$BM write "Deploys to production happen Tuesday and Thursday, 10:00-14:00 UTC." \
  --title "Deploy window" --kind fact --team platform -w "$WS"

OLD=$($BM get "[[Auth strategy]]" --json -w "$WS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])')
$BM write "We decided on opaque session tokens after the security review; JWTs are retired." \
  --title "Auth strategy" --kind decision --tag auth --supersedes "$OLD" -w "$WS"

echo
echo "== history of [[Auth strategy]] =="
$BM get "[[Auth strategy]]" --history -w "$WS" | tail -n 4
if $BM recall --help >/dev/null 2>&1; then
  echo
  echo "== recall \"auth\" =="
  $BM recall "auth" -w "$WS"
fi
echo
echo "Workspace: $WS (now your default workspace)"
echo "Try: $BM recall \"deploy window\" -w \"$WS\""
