"""The help a new user reads: plain `pdors` prints it (exit 0); `pdors --help` opens with a plain sentence and an
example, no markup; every command's help says what it does and shows an example."""

from __future__ import annotations

import pytest

from pdors_cli.main import SUBCOMMANDS, main


def test_plain_pdors_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pdors") and "sweep run configs/quickstart.yaml" in out


def test_top_help_opens_with_a_sentence_and_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    opening = out.split("\n\n")[1]
    assert opening.startswith("Run PD-ORS") and "``" not in out and ":mod:" not in out, out
    assert "example:\n  pdors sweep run" in out
    for c in SUBCOMMANDS:
        assert c.name in out


@pytest.mark.parametrize("name", [c.name for c in SUBCOMMANDS])
def test_each_command_says_what_it_does_with_an_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert description[0].isupper() and description.rstrip().endswith("."), out
    assert f"example:\n  pdors {name}" in out or "example:\n  pdors simulate" in out, out
