"""The README is a front page and docs/ holds the reference: every link between them resolves,
and every `ptxdiff VERB --option` they show exists in the parser (a renamed option fails here,
not in a user's terminal)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ptxdiff.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a ptxdiff command as docs show it: in an indented or fenced code line, or an inline code span
COMMAND = re.compile(r"(?:^(?: {4}|\$ )|`)(?:\.venv/bin/)?ptxdiff ((?:[^`#\n])*)", re.M)


def _verbs() -> dict[str, set[str]]:
    """Each verb's option strings, the global ones included."""
    parser = build_parser()
    top = {s for a in parser._actions for s in a.option_strings}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: top | {s for a in p._actions for s in a.option_strings} for name, p in sub.choices.items()}


def _commands() -> list[tuple[str, str]]:
    return [(page.name, m.group(1).strip()) for page in PAGES for m in COMMAND.finditer(page.read_text())]


def test_the_readme_is_a_front_page_with_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    assert "./install.sh && .venv/bin/ptxdiff demo" in text and "./install.sh && .venv/bin/python -m pytest -q" in text
    assert len(text.splitlines()) < 200
    assert all(f"](docs/{p.name})" in text for p in PAGES[1:]), "every docs page is linked from the README"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path):
    for target in LINK.findall(re.sub(r"`[^`\n]*`", "", page.read_text())):   # code spans hold no links
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.name}: {target}"


def test_every_documented_command_and_option_exists():
    verbs = _verbs()
    commands = _commands()
    assert len(commands) > 50            # the pattern still finds the docs' commands
    for page, command in commands:
        words = command.split()
        while words and words[0].startswith("-"):          # global options before the verb: -C DIR, -q
            words = words[2:] if words[0] == "-C" else words[1:]
        if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
            continue                                        # `ptxdiff VERB`, `ptxdiff 0.1.0`: prose
        assert words[0] in verbs, f"{page}: ptxdiff {command}"
        for word in words[1:]:
            if word == "--":
                break
            if re.match(r"--[a-zA-Z]", word):
                option = re.match(r"--[\w-]+", word).group(0)
            elif re.match(r"-[a-zA-Z]", word):
                option = word[:2]
            else:
                continue
            assert option in verbs[words[0]], f"{page}: `{option}` in ptxdiff {command}"
