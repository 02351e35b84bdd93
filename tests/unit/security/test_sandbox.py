"""The sandbox profile as text: bubblewrap's mount order, the macOS Seatbelt profile,
the configuration shorthands, the approval prompt. (Real runs: test_sandbox_real.py.)"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ndomo.config import SandboxConfig, Settings, load_settings
from ndomo.runtime.host import ApprovalRequest
from ndomo.security import sandbox
from ndomo.security.sandbox import build_profile, bwrap_argv, git_layout, seatbelt_profile


def _mounts(argv: list[str]) -> list[tuple[str, str]]:
    """(flag, destination) of each mount in order."""
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--bind", "--ro-bind", "--ro-bind-try"):
            out.append((a, argv[i + 2]))
            i += 3
        elif a == "--tmpfs":
            out.append((a, argv[i + 1]))
            i += 2
        else:
            i += 1
    return out


def _index(mounts, flag, dest) -> int:
    return mounts.index((flag, str(dest)))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_workspace_under_tmp_is_mounted_after_the_private_tmp(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".pyenv").mkdir(parents=True)
    p = build_profile(repo, network=False, home_read=["~/.pyenv"], env={"HOME": str(home)})
    m = _mounts(bwrap_argv("bwrap", p))
    ws = os.path.realpath(repo)
    assert m[0] == ("--ro-bind", "/")
    assert _index(m, "--tmpfs", "/tmp") < _index(m, "--bind", ws)
    # the home (also under /tmp here) is hidden first, its toolchain re-shown read-only after
    assert _index(m, "--tmpfs", os.path.realpath(home)) < _index(
        m, "--ro-bind-try", os.path.realpath(home / ".pyenv")
    )
    # control files land on top of the writable workspace; .git is a mount of its own
    for ro in (f"{ws}/.git/config", f"{ws}/.git/hooks"):
        assert _index(m, "--bind", ws) < _index(m, "--ro-bind-try", ro)
    # .ndomo/ is a read-only snapshot of its names: a tmpfs over it, remounted read-only
    assert _index(m, "--bind", ws) < _index(m, "--tmpfs", f"{ws}/.ndomo")
    full = bwrap_argv("bwrap", p)
    assert full[full.index("--remount-ro") + 1] == f"{ws}/.ndomo"
    assert _index(m, "--bind", f"{ws}/.git") < _index(m, "--ro-bind-try", f"{ws}/.git/config")
    argv = bwrap_argv("bwrap", p)
    assert "--unshare-net" in argv and "--cap-drop" in argv and "--unshare-pid" in argv
    assert argv[-3:] == ["--chdir", ws, "--"]
    assert "--new-session" not in argv  # it would take the command out of the group a timeout kills


def test_workspace_inside_home_stays_visible(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = home / "src" / "proj"
    ws.mkdir(parents=True)
    p = build_profile(ws, network=True, home_read=[], env={"HOME": str(home)})
    m = _mounts(bwrap_argv("bwrap", p))
    assert _index(m, "--tmpfs", os.path.realpath(home)) < _index(m, "--bind", os.path.realpath(ws))
    assert "--unshare-net" not in bwrap_argv("bwrap", p)


def test_profile_creates_missing_control_folders(repo: Path) -> None:
    """A sandboxed command must not be able to create them as its own."""
    import shutil

    shutil.rmtree(repo / ".git" / "hooks")
    build_profile(repo, network=False, env={"HOME": "/nonexistent"})
    assert (repo / ".ndomo").is_dir() and (repo / ".git" / "hooks").is_dir()


def test_worktree_git_dirs_are_read_only_unless_the_user_lists_them(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()

    def run(*a):
        return subprocess.run(["git", "-C", str(main), *a], check=True, capture_output=True)

    run("init", "-q")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    run("worktree", "add", "-q", str(tmp_path / "wt"))
    lay = git_layout(tmp_path / "wt")
    assert lay.pointer == tmp_path / "wt" / ".git"
    assert lay.common == Path(os.path.realpath(main / ".git"))
    common = os.path.realpath(main / ".git")
    p = build_profile(tmp_path / "wt", network=False, env={"HOME": "/nonexistent"})
    m = _mounts(bwrap_argv("bwrap", p))
    # the workspace's .git pointer chose them: readable for git status/log, never writable
    assert ("--ro-bind-try", common) in m and ("--bind", common) not in m
    p = build_profile(
        tmp_path / "wt",
        network=False,
        env={"HOME": "/nonexistent"},
        writable_roots=[str(main / ".git")],
    )
    m = _mounts(bwrap_argv("bwrap", p))
    assert ("--bind", common) in m and ("--ro-bind-try", f"{common}/config") in m
    assert ("--ro-bind-try", f"{common}/hooks") in m
    assert ("--ro-bind-try", os.path.realpath(tmp_path / "wt" / ".git")) in m  # the pointer file


def test_secret_env_is_dropped_and_foreign_tmpdir_replaced(repo: Path) -> None:
    p = build_profile(
        repo,
        network=False,
        drop_env=("NDOMO_API_KEY",),
        env={"HOME": "/nonexistent", "TMPDIR": "/var/x"},
    )
    argv = bwrap_argv("bwrap", p)
    assert argv[argv.index("--unsetenv") : argv.index("--unsetenv") + 2] == [
        "--unsetenv",
        "NDOMO_API_KEY",
    ]
    assert argv[argv.index("TMPDIR") + 1] == "/tmp"


def test_seatbelt_profile_text(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    p = build_profile(repo, network=False, home_read=["~/.cargo"], env={"HOME": str(home)})
    text = seatbelt_profile(p)
    ws = os.path.realpath(repo)
    assert text.startswith("(version 1)\n(allow default)\n")
    assert f'(deny file-write* (require-not (require-any\n  (subpath "{ws}")' in text
    assert '(subpath "/private/tmp")' in text
    assert f'(literal "{ws}/.git/config")' in text
    assert f'(subpath "{ws}/.git/hooks")' in text and f'(subpath "{ws}/.ndomo")' in text
    hidden = os.path.realpath(home)
    assert f'(deny file-read* (require-all (subpath "{hidden}") (require-not (require-any' in text
    assert f'(subpath "{hidden}/.cargo")' in text
    assert '(deny network-outbound (remote ip "*:*"))' in text
    assert f'(regex #"^{re.escape(ws)}/\\.ndomo/ndomo\\.db")' in text  # databases unreadable
    assert text.count("(") == text.count(")")
    (home / ".cargo").mkdir()
    (home / ".cargo" / "credentials.toml").write_text("secret")
    (repo / "pkg" / ".vscode").mkdir(parents=True)
    q = build_profile(repo, network=False, home_read=["~/.cargo"], env={"HOME": str(home)})
    text = seatbelt_profile(q)
    creds = os.path.realpath(home / ".cargo" / "credentials.toml")
    assert f'(deny file-read* file-write*\n  (literal "{creds}")' in text
    assert f'(subpath "{ws}/pkg/.vscode")' in text  # a nested control folder: no writes
    assert text.count("(") == text.count(")")
    with_net = seatbelt_profile(build_profile(repo, network=True, env={"HOME": str(home)}))
    assert "network" not in with_net
    quoted = sandbox._sb('/a "b"\\c')
    assert quoted == '"/a \\"b\\"\\\\c"'


def test_seatbelt_argv_drops_env_and_uses_the_absolute_program(repo: Path) -> None:
    p = build_profile(
        repo, network=False, drop_env=("NDOMO_API_KEY",), env={"HOME": "/nonexistent"}
    )
    argv = sandbox.seatbelt_argv(p)
    assert argv[:4] == ["/usr/bin/env", "-u", "NDOMO_API_KEY", "NDOMO_SANDBOX=sandbox-exec"]
    assert argv[4:6] == ["/usr/bin/sandbox-exec", "-p"] and argv[-1] == seatbelt_profile(p)


@pytest.mark.parametrize(
    "yaml_text, mode",
    [
        ("sandbox: off\n", "off"),
        ("sandbox: required\n", "required"),
        ("sandbox: {mode: auto}\n", "auto"),
        ("", "auto"),
    ],
)
def test_sandbox_config_shorthands(tmp_path: Path, yaml_text: str, mode: str) -> None:
    # the user's own file (a project's `sandbox: off` would need the user's confirmation)
    user = tmp_path / "user.yaml"
    user.write_text(yaml_text)
    settings, problems = load_settings(None, {"sandbox": {"home": ["~/.x"]}}, {}, user_config=user)
    assert not problems and settings.sandbox.mode == mode and settings.sandbox.home == ["~/.x"]


def test_sandbox_config_rejects_bad_values(tmp_path: Path) -> None:
    settings, problems = load_settings(tmp_path, {"sandbox": "maybe"}, {})
    assert settings.sandbox.mode == "auto" and problems[0].key == "sandbox"
    with pytest.raises(ValueError, match="under ~/ or an absolute path"):
        SandboxConfig(home=["relative/dir"])
    assert load_settings(tmp_path, None, {"NDOMO_SANDBOX": "off"})[0].sandbox.mode == "off"
    assert Settings().sandbox.home == list(sandbox.DEFAULT_HOME_READ)


def test_approval_text_says_sandbox_and_network() -> None:
    base = dict(permission="bash", subject="pytest -q", agent="craftsman", mode="autopilot")
    assert (
        ApprovalRequest(**base, network=True, sandbox="sandboxed (bubblewrap)")
        .text()
        .startswith("if allowed it runs WITH network, sandboxed (bubblewrap) · ")
    )
    assert "without network" in ApprovalRequest(**base, network=False, sandbox="x").text()
    plain = ApprovalRequest(
        permission="edit", subject="a.py", agent="craftsman", mode="autopilot"
    ).text()
    assert "network" not in plain


def test_network_permission_shapes_and_intersection() -> None:
    from ndomo.agents.permissions import decide_network, intersect
    from ndomo.agents.schema import AgentPermission

    assert AgentPermission().network == "ask"
    caller = AgentPermission(bash="allow", network={"npm install*": "allow", "*": "ask"})
    assert decide_network(caller, "npm install") == "allow"
    assert decide_network(caller, "npm install && curl x") == "ask"  # every part must be allowed
    assert (
        decide_network(intersect(caller, AgentPermission(network="deny")), "npm install") == "deny"
    )
    assert (
        decide_network(intersect(caller, AgentPermission(network="allow")), "npm install")
        == "allow"
    )
    assert decide_network(intersect(caller, AgentPermission()), "npm install") == "ask"
    with pytest.raises(ValueError, match="empty pattern"):
        AgentPermission(network={" ": "allow"})


async def test_terminal_prompt_says_sandbox_and_network() -> None:
    import io

    from ndomo.terminal.host import TerminalHost

    host = TerminalHost(interactive=True, out=io.StringIO())
    shown: list[str] = []

    async def prompt(text: str) -> str:
        shown.append(text)
        return "o"

    host._prompt = prompt  # type: ignore[method-assign]
    req = ApprovalRequest(
        permission="bash",
        subject="npm install",
        agent="craftsman",
        mode="autopilot",
        network=True,
        sandbox="sandboxed (bubblewrap)",
    )
    assert await host.approve(req) == "once"
    assert (
        "wants bash: npm install" in shown[0] and "WITH network, sandboxed (bubblewrap)" in shown[0]
    )
    assert "[o]nce / [s]ession / [p]roject / [d]eny / [n]ever" in shown[0]


def test_interpreter_in_the_private_tmp_stays_readable(
    repo: Path, tmp_path: Path, monkeypatch
) -> None:
    """CI and many users run ndomo from a venv under /tmp: the private /tmp must not hide it."""
    import sys

    venv = tmp_path / "venv"
    venv.mkdir()
    monkeypatch.setattr(sys, "prefix", str(venv))
    p = build_profile(repo, network=False, home_read=[], env={"HOME": "/nonexistent"})
    m = _mounts(bwrap_argv("bwrap", p))
    real = os.path.realpath(venv)
    assert _index(m, "--tmpfs", "/tmp") < _index(m, "--ro-bind-try", real)


def test_a_commondir_placeholder_left_by_a_killed_server_is_removed_quietly(repo: Path) -> None:
    (repo / ".git" / "commondir").write_text(".\n")
    p = build_profile(repo, network=False, env={"HOME": "/nonexistent"})
    try:
        assert p.notes == ()  # nothing planted, nothing to report
        # this run holds a fresh one; a concurrent run shares it and says nothing either
        assert (repo / ".git" / "commondir").read_text() == ".\n"
        q = build_profile(repo, network=False, env={"HOME": "/nonexistent"})
        assert q.notes == () and q.placeholders == p.placeholders
        sandbox.release_placeholders(q.placeholders)
        assert (repo / ".git" / "commondir").exists()  # p still holds it
    finally:
        sandbox.release_placeholders(p.placeholders)
    assert not (repo / ".git" / "commondir").exists() and not (repo / ".vscode").exists()


def test_a_submodule_pointer_is_followed_into_the_users_writable_folder(tmp_path: Path) -> None:
    modules = tmp_path / "super" / ".git" / "modules" / "sub"
    modules.mkdir(parents=True)
    ws = tmp_path / "super" / "sub"
    ws.mkdir()
    (ws / ".git").write_text("gitdir: ../.git/modules/sub\n")
    refused = build_profile(ws, network=False, env={"HOME": "/nonexistent"})
    assert "not a git worktree folder" in refused.notes[0]
    sandbox.release_placeholders(refused.placeholders)
    ok = build_profile(
        ws,
        network=False,
        env={"HOME": "/nonexistent"},
        writable_roots=[str(tmp_path / "super" / ".git")],
    )
    sandbox.release_placeholders(ok.placeholders)
    assert ok.notes == () and Path(os.path.realpath(modules)) in ok.writable
