"""docs/cli.md's "mqadmin 4.9.7 → rocketq" table names only rocketq commands that exist (the Java-marked
test_mqadmin.py checks that it has a row for every command the stock mqadmin lists)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rocketq.cli.main import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _table_rows() -> list[tuple[str, str]]:
    table = DOC.read_text().split("## mqadmin 4.9.7 → rocketq", 1)[1]
    return re.findall(r"^\| `(\w+)` \| (.+?) \| .*\|$", table, re.M)


def test_every_rocketq_command_the_table_names_exists() -> None:
    commands = _subcommands(build_parser())
    rows = _table_rows()
    assert len(rows) > 50
    checked = 0
    for mqadmin, cell in rows:
        for snippet in re.findall(r"`([^`]+)`", cell):
            words = snippet.split()
            assert words[0] in commands, (mqadmin, snippet)
            actions = _subcommands(commands[words[0]])
            if actions:
                assert len(words) > 1 and words[1] in actions, (mqadmin, snippet, sorted(actions))
            checked += 1
    assert checked >= len(rows) - 1  # every row but the not-applicable one names a command


def test_a_misspelt_command_in_the_table_would_be_caught() -> None:
    commands = _subcommands(build_parser())
    assert "topic" in commands and "no-such-action" not in _subcommands(commands["topic"])
