#!/usr/bin/env bash
# The cloud path without a Box account: a Box MCP emulator on 127.0.0.1 serving a local folder,
# and the same commands as on a local workspace, through Box MCP.
# Usage: bash examples/cloud_emulator.sh [FOLDER]
set -euo pipefail
BM=${BOX_MEMORY:-box-memory}
PY=${PYTHON:-python3}
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/box-memory-cloud.XXXXXX")}
export BOX_MEMORY_HOME="${BOX_MEMORY_HOME:-$DIR/.home}"
mkdir -p "$DIR/fake-box"
: >"$DIR/emulator.log"

# Start the emulator on a free port; it prints its URL on the first line.
"$PY" -m box_memory.emulator --root "$DIR/fake-box" --port 0 --token demo-token >"$DIR/emulator.log" 2>&1 &
EMU=$!
trap 'kill $EMU 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  URL=$(sed -n 's/^box-mcp emulator listening on \(http[^ ]*\).*/\1/p' "$DIR/emulator.log")
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "${URL:-}" ] || { echo "emulator did not start"; cat "$DIR/emulator.log"; exit 1; }
export BOX_MCP_URL="$URL" BOX_ACCESS_TOKEN=demo-token
echo "emulator at $URL"

$BM mcp-check
$BM init demo --parent 0
$BM write "We decided to keep agent memory in Box, one markdown file per memory." \
  --title "Where memory lives" --kind decision --tag storage
$BM recall "memory" --kind decision
$BM status
echo
echo "Files the emulator holds (what Box would show):"
(cd "$DIR/fake-box" && find . -name '*.md' -o -name '_box-memory.json' | sort)
