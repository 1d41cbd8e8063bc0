"""Every option's help of every command shows a range only where it has one (walk97b F10:
`campaign set --target-metric NUMBER ... [x<=None]`, click's words for no bound at all)."""

from __future__ import annotations

import click

from conftest import cli_commands


def test_no_option_help_shows_a_range_of_none() -> None:
    seen = 0
    for name, command in cli_commands():
        ctx = click.Context(command, info_name=name)
        for param in command.params:
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is None:
                continue
            seen += 1
            assert "None" not in record[1], (name, record)
    assert seen > 50, seen
