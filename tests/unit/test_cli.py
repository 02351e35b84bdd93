"""The generated CLI: flags from params models, field-named errors, JSON output, exit codes."""

from __future__ import annotations

import json

import pytest

from ndomo.cli import build_parser, find_workspace, main


def test_every_cli_action_has_a_subcommand():
    from ndomo.actions import load_actions

    parser = build_parser()
    help_text = parser.format_help()
    for act in load_actions().all("cli"):
        assert act.path[0] in help_text


def test_wrong_type_names_the_field_and_exits_2(tmp_path, capsys):
    rc = main(["plan", "list", "--limit", "lots", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "limit" in err and "integer" in err


def test_unknown_choice_names_the_field(tmp_path, capsys):
    rc = main(["plan", "list", "--status", "sideways", "--workspace", str(tmp_path)])
    assert rc == 2 and "status" in capsys.readouterr().err


def test_json_output_and_refusal_exit_code(tmp_path, capsys):
    assert main(["plan", "list", "--json", "--workspace", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    rc = main(["plan", "show", "--id", "no-such-plan", "--workspace", str(tmp_path)])
    assert rc in (1, 2) and "no-such-plan" in capsys.readouterr().err


def test_mode_set_from_the_terminal_persists_for_the_session(tmp_path, capsys):
    assert main(["mode", "set", "--mode", "autopilot", "--json", "--workspace", str(tmp_path)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["mode"] == "autopilot"
    assert main(["mode", "get", "--json", "--workspace", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["session"] == status["session"] and report["mode"] == "autopilot"
    rc = main(["mode", "set", "--mode", "warp", "--workspace", str(tmp_path)])
    assert rc == 2 and "unknown mode" in capsys.readouterr().err


def test_find_workspace_walks_up_to_ndomo_or_git(tmp_path):
    (tmp_path / ".ndomo").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep) == tmp_path.resolve()


def test_missing_required_flag_is_an_argparse_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["mode", "set", "--workspace", str(tmp_path)])
    assert exc.value.code == 2
