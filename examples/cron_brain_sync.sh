#!/usr/bin/env bash
# Box Brain from cron: import a folder read-only into the private local store, recall cites it.
# This walk-through uses a local (Box Drive style) folder; for Box cloud use --folder-id ID.
# Usage: bash examples/cron_brain_sync.sh [FOLDER]
set -euo pipefail
BM=${BOX_MEMORY:-box-memory}
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/box-memory-brain.XXXXXX")}
export BOX_MEMORY_HOME="${BOX_MEMORY_HOME:-$DIR/.home}"
mkdir -p "$DIR/policies"
cat > "$DIR/policies/travel-policy.md" <<'DOC'
# Travel policy
Economy class for flights under six hours. Book through the travel desk.
TODO: confirm the per-diem rates for 2027.
DOC
cat > "$DIR/policies/expense-policy.md" <<'DOC'
# Expense policy
Receipts are required above 25 EUR. Expense reports are due monthly, on the first Monday.
DOC

$BM init demo --path "$DIR/workspace" -q
$BM brain-sync --path "$DIR/policies" --interval 60
echo "== the crontab line (every 15 minutes; each configured source runs when it is due) =="
echo "   absolute command and the environment this run used; add it with: crontab -e"
$BM brain-sync --print-cron
echo "== a second run right away is not due =="
$BM brain-sync --if-due
echo "== recall cites the imported documents =="
$BM recall "per-diem travel" -w "$DIR/workspace"
echo "== proposals for a person to review =="
$BM brain review
