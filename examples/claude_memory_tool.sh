#!/usr/bin/env bash
# Claude's API memory tool backed by box-memory: a local workspace, then the conversation in
# examples/claude_memory_tool.py (it needs ANTHROPIC_API_KEY; without one it explains and drives
# the tool directly). Usage: bash examples/claude_memory_tool.sh [FOLDER]
set -euo pipefail
BM=${BOX_MEMORY:-box-memory}
PY=${PYTHON:-python3}
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/box-memory-claude.XXXXXX")}
export BOX_MEMORY_HOME="${BOX_MEMORY_HOME:-$DIR/.home}"
WS="$DIR/workspace"

$BM init claude-memory --path "$WS" --quiet
"$PY" "$(dirname "$0")/claude_memory_tool.py" "$WS"

echo
echo "== what the memory tool stored (box-memory recall) =="
$BM recall "memory-tool" --include-superseded -w "$WS" || true
