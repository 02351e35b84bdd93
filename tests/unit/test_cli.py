"""The generated CLI: flags from params models, field-named errors, JSON output, exit codes."""

from __future__ import annotations

import json

import pytest

from ndomo.terminal.cli import build_parser, find_workspace, main
from tests.trusting import trust


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


def test_find_workspace_walks_up_to_a_marker(tmp_path):
    (tmp_path / ".ndomo").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep) == tmp_path.resolve()


def test_missing_required_flag_is_an_argparse_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["mode", "set", "--workspace", str(tmp_path)])
    assert exc.value.code == 2


def _all_flags(parser, path=()):
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _all_flags(sub, (*path, name))
        elif a.dest != "help":
            yield " ".join(path), (a.option_strings or [a.dest])[0], a.help


def test_every_flag_has_help_text():
    from ndomo.terminal.cli import EXTRA_COMMANDS

    flags = list(_all_flags(build_parser()))
    assert {"run", "serve"} <= set(EXTRA_COMMANDS)
    assert ("run", "--agent") in {(p, f) for p, f, _ in flags}
    assert [(p, f) for p, f, h in flags if not h] == []


def test_run_with_an_unknown_agent_is_one_line_naming_the_agents(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    rc = main(["run", "hi", "--agent", "nobody", "--workspace", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 2
    assert out.err.count("\n") == 1 and "Traceback" not in out.err
    assert "unknown agent 'nobody'" in out.err and "craftsman" in out.err and "--agent" in out.err


def test_run_with_no_model_server_says_what_to_do_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    rc = main(["run", "hi", "--workspace", str(tmp_path)])
    out = capsys.readouterr()
    both = out.out + out.err
    assert rc == 1
    assert both.count("is unreachable") == 1, both
    assert "start the model server (e.g. Ollama) or set NDOMO_BASE_URL; see `ndomo health`" in both


def test_health_prints_config_problems_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    (tmp_path / ".ndomo").mkdir()
    (tmp_path / ".ndomo" / "config.yaml").write_text("history_chars: lots\n", encoding="utf-8")
    trust(tmp_path)  # an untrusted folder's file is not read at all
    main(["health", "--no-probe-model", "--workspace", str(tmp_path)])
    out = capsys.readouterr()
    assert (out.out + out.err).count("history_chars") == 1, out


def test_serve_on_a_terminal_says_what_it_is(tmp_path):
    """A person typing `ndomo serve` is told it speaks LSP on stdio and where the editor docs are."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ndomo", "serve"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    os.close(slave)
    try:
        import select

        ready, _, _ = select.select(
            [proc.stderr], [], [], 60
        )  # generous: only a silent server waits it out
        line = proc.stderr.readline().decode() if ready else ""
    finally:
        os.close(master)  # the terminal goes away: stdin ends, the server exits
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    assert "LSP on stdin/stdout" in line and "docs/editors.md" in line
