"""The shipped agent definitions: all load, all follow the contract of design §3."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndomo.agents.loader import builtin_agents_dir, load_agents
from ndomo.agents.permissions import task_allowed
from ndomo.agents.tone import TONE_SNIPPET

SUBAGENTS = [
    "scout",
    "scribe",
    "sage",
    "guild",
    "smith",
    "go-smith",
    "js-smith",
    "vue-smith",
    "python-smith",
    "rust-smith",
    "zig-smith",
    "painter",
    "chronicler",
    "inspector",
]
ALL = ["foreman", "craftsman", *SUBAGENTS]
SMITHS = ["smith", "go-smith", "js-smith", "vue-smith", "python-smith", "rust-smith", "zig-smith"]


@pytest.fixture(scope="module")
def agents():
    return load_agents(None)


def test_builtin_dir_holds_the_checkout_agents():
    """From a source checkout it is agents/; from an installed wheel, ndomo/_agents — same files."""
    folder = builtin_agents_dir()
    assert folder.name in ("agents", "_agents")
    assert sorted(p.stem for p in folder.glob("*.md")) == sorted(ALL)
    checkout = Path(__file__).resolve().parents[3] / "agents"
    for p in checkout.glob("*.md"):
        assert (folder / p.name).read_bytes() == p.read_bytes()


def test_every_shipped_file_loads_without_problems(agents):
    assert agents.problems == []
    assert sorted(agents.agents) == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_prompt_starts_with_tone_snippet(agents, name):
    agent = agents.get(name)
    assert agent.prompt.startswith(TONE_SNIPPET)
    assert len(agent.prompt) > len(TONE_SNIPPET) + 200  # a real prompt follows


@pytest.mark.parametrize("name", ALL)
def test_no_vendor_model_is_hard_coded(agents, name):
    assert agents.get(name).model is None


def test_primaries_and_modes(agents):
    assert agents.get("foreman").mode == "primary"
    assert agents.get("craftsman").mode == "primary"
    assert agents.get("foreman").default_mode == "discussion"
    assert agents.get("craftsman").default_mode == "autopilot"
    names = [a.name for a in agents.primaries()]
    assert "foreman" in names and "craftsman" in names
    assert "go-smith" not in names
    for name in SUBAGENTS:
        assert agents.get(name).is_subagent


def test_foreman_task_map(agents):
    perm = agents.get("foreman").permission
    for name in ["scout", "scribe", "sage", "guild"]:
        assert task_allowed(perm, name) == "allow", name
    for name in [*SMITHS, "painter", "chronicler", "inspector", "craftsman", "unknown-agent"]:
        assert task_allowed(perm, name) == "deny", name
    # the denials are written out, not only implied by "*"
    for name in [*SMITHS, "painter", "chronicler", "inspector"]:
        assert perm.task[name] == "deny"
    assert perm.bash == "deny"


def test_craftsman_threshold_and_permissions(agents):
    craftsman = agents.get("craftsman")
    assert (craftsman.threshold.direct, craftsman.threshold.planned) == (2, 5)
    perm = craftsman.permission
    assert perm.edit == "allow" and perm.plan_db == "allow"
    assert perm.bash["*"] == "ask"
    assert perm.bash["git status*"] == "allow"
    assert perm.bash["git diff*"] == "allow"
    assert perm.bash["git log*"] == "allow"
    assert perm.bash["git push*"] == "ask"
    assert perm.bash["rm *"] == "ask"
    for name in ["scout", "scribe", *SMITHS, "painter", "chronicler", "inspector"]:
        assert task_allowed(perm, name) == "allow", name
    for name in ["foreman", "guild", "sage"]:
        assert task_allowed(perm, name) == "deny", name


def test_only_the_craftsman_has_a_threshold(agents):
    assert [a.name for a in agents.agents.values() if a.threshold is not None] == ["craftsman"]


@pytest.mark.parametrize("name", ["scout", "scribe", "sage", "guild", "inspector"])
def test_read_only_helpers_cannot_write(agents, name):
    perm = agents.get(name).permission
    assert perm.edit == "deny" and perm.write == "deny"
    bash = perm.bash
    assert bash == "deny" or (isinstance(bash, dict) and bash.get("*") in ("deny", "ask"))


@pytest.mark.parametrize(
    "name, command",
    [
        ("python-smith", "pytest*"),
        ("go-smith", "go test*"),
        ("rust-smith", "cargo test*"),
        ("zig-smith", "zig build*"),
        ("js-smith", "npm test*"),
        ("vue-smith", "npx vue-tsc*"),
    ],
)
def test_smiths_edit_and_run_their_stack_tests(agents, name, command):
    perm = agents.get(name).permission
    assert perm.edit == "allow"
    assert perm.bash["*"] == "ask"
    assert perm.bash[command] == "allow"
    assert task_allowed(perm, "scout") == "deny"  # sub-agents do not delegate


def test_only_craftsman_can_reach_painter(agents):
    reach = [
        a.name for a in agents.agents.values() if task_allowed(a.permission, "painter") != "deny"
    ]
    assert reach == ["craftsman"]


@pytest.mark.parametrize(
    "command, action",
    [
        ("git status", "allow"),
        ("git diff HEAD~1", "allow"),
        ("ls", "allow"),
        ("pytest -q", "allow"),
        ("go test ./...", "allow"),
        ("git push origin main", "ask"),
        ("git push --force", "deny"),
        ("git push origin main --force", "deny"),
        ("rm -rf build", "ask"),
        ("curl https://x", "ask"),
        ("sudo ls", "ask"),
        ("git status; rm -rf x", "ask"),
        ("npm publish", "deny"),
    ],
)
def test_craftsman_shell_rules_with_the_real_parser(agents, command, action):
    shell = pytest.importorskip(
        "ndomo.security.shell", reason="security helper's shell.py not available yet"
    )
    assert shell.decide(command, agents.get("craftsman").permission.bash).action == action


@pytest.mark.parametrize("name", ["scout", "chronicler"])
def test_read_only_shells_refuse_writes(agents, name):
    shell = pytest.importorskip(
        "ndomo.security.shell", reason="security helper's shell.py not available yet"
    )
    rules = agents.get(name).permission.bash
    assert shell.decide("git status", rules).action == "allow"
    assert shell.decide("rm -rf src", rules).action == "deny"
    assert shell.decide("echo x > f", rules).action in ("ask", "deny")
