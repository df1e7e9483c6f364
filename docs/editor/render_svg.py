#!/usr/bin/env python3
"""Render a tmux screen capture with its colours (``tmux capture-pane -e``) as an SVG terminal
image for the README: ``python docs/editor/render_svg.py capture.ansi capture.svg``.

Needs `rich` (``pip install rich``; a documentation tool only, not a dependency of shape-lint).
"""
import re
import sys

from rich.console import Console
from rich.terminal_theme import MONOKAI
from rich.text import Text


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8", errors="replace") as f:
        screen = f.read().rstrip("\n")
    width = max(len(Text.from_ansi(line).plain) for line in screen.splitlines())
    console = Console(record=True, width=width, force_terminal=True, color_system="256", file=open("/dev/null", "w"))
    console.print(Text.from_ansi(screen), soft_wrap=True)
    svg = console.export_svg(title="Neovim + shape-lint server", theme=MONOKAI)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(re.sub(r'(<text [^>]*?x=")([0-9.]+)("[^>]*?textLength=")([0-9.]+)("[^>]*>)((?:&#160;)+)', shift, svg))


def shift(m: re.Match) -> str:
    """Leading spaces of a text run become an offset: some renderers (librsvg) drop them, which
    pulls the run left; browsers keep them. Both draw the offset alike."""
    n = m.group(6).count("&#160;")
    x, length = float(m.group(2)), float(m.group(4))
    return f"{m.group(1)}{x + n * CELL:g}{m.group(3)}{max(length - n * CELL, 0):g}{m.group(5)}"


CELL = 20 * 0.61  # rich's SVG cell width: its default char height times font aspect ratio


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
