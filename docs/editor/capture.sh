#!/usr/bin/env bash
# Captures Neovim's screen with `shape-lint server` attached (hover + inlay hints + the
# diagnostic) as text into docs/editor/capture.txt and, with its colours, as the SVG image
# docs/editor/capture.svg (rendered by render_svg.py, which needs `pip install rich`).
# Needs nvim, tmux and shape-lint installed.
#   bash docs/editor/capture.sh [FILE LINE COL]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if [ $# -ge 1 ]; then
    FILE="$1"
else  # the buggy model of tests/lsp_buffers.py
    FILE="$TMP/net.py"
    python3 -c "import sys; sys.path.insert(0, '$HERE/../../tests'); from lsp_buffers import BUGGY; open('$FILE', 'w').write(BUGGY)"
fi
export HOVER_LINE="${2:-13}" HOVER_COL="${3:-24}"
export SHAPE_LINT_CMD="[\"$(command -v python3)\", \"-m\", \"shape_lint.cli\", \"server\"]"
export READY_FILE="$TMP/ready"
SESSION="shape-lint-capture-$$"
tmux new-session -d -s "$SESSION" -x 100 -y 32 \
    "nvim --clean -n -c 'set nonumber laststatus=0 shortmess+=I' -c 'luafile $HERE/capture.lua' '$FILE'"
for _ in $(seq 1 600); do [ -f "$READY_FILE" ] && break; sleep 0.1; done
sleep 0.5
tmux capture-pane -p -t "$SESSION" > "$HERE/capture.txt"
tmux capture-pane -p -e -t "$SESSION" > "$TMP/capture.ansi"
tmux kill-session -t "$SESSION"
python3 "$HERE/render_svg.py" "$TMP/capture.ansi" "$HERE/capture.svg"
cat "$HERE/capture.txt"
