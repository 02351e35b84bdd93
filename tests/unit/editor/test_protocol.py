"""The custom protocol has one vocabulary: `lsp/protocol.py` names every `ndomo/*` method,
the server spells none elsewhere, both editor clients use the same names, and the typed
payloads have exactly the fields the engine's models put on the wire."""

from __future__ import annotations

import re
from pathlib import Path

from ndomo import compose
from ndomo.lsp import protocol
from ndomo.lsp.host import approve_params
from ndomo.runtime.events import TextDelta
from ndomo.runtime.host import ApprovalRequest
from ndomo.runtime.runtime import Runtime

ROOT = Path(__file__).resolve().parents[3]
METHOD = re.compile(r"""["'](ndomo/[\w/]+)["']""")
METHODS = {
    protocol.STATUS,
    protocol.TURN_EVENT,
    protocol.SAVE_DOCUMENTS,
    protocol.DIAGNOSTICS,
    protocol.APPROVE,
}
CLIENTS = {
    "vscode": ("editors/vscode/src", "*.ts"),
    "nvim": ("editors/nvim/lua", "*.lua"),
}


def methods_in(folder: Path, pattern: str) -> dict[str, set[Path]]:
    found: dict[str, set[Path]] = {}
    for path in folder.rglob(pattern):
        for name in METHOD.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(path)
    return found


def test_the_server_spells_ndomo_methods_only_in_the_protocol_module():
    found = methods_in(ROOT / "server/ndomo", "*.py")
    elsewhere = {
        name: sorted(str(p.relative_to(ROOT)) for p in paths if p.name != "protocol.py")
        for name, paths in found.items()
    }
    assert {n: p for n, p in elsewhere.items() if p} == {}
    assert set(found) == METHODS


def test_both_clients_speak_the_servers_methods_and_no_other():
    for client, (folder, pattern) in CLIENTS.items():
        used = set(methods_in(ROOT / folder, pattern))
        assert used == METHODS, f"{client}: {sorted(used ^ METHODS)}"


async def test_status_params_carry_exactly_the_typed_fields(app):
    store = await app.store()
    plan = await store.create_plan({"title": "Split config", "overview": "one module per source"})
    rt = Runtime(app, compose.plugins())
    state = await rt.session()
    await store.update_session(state.id, committed_plan_id=plan.id)
    params = protocol.status_params(await rt.status(await rt.session()), "file:///w", "trusted")
    assert list(params) == list(protocol.StatusParams.__annotations__)
    assert params["folder"] == "file:///w"
    assert params["plan"] is not None
    assert list(params["plan"]) == list(protocol.PlanProgress.__annotations__)


def test_a_merged_text_event_is_the_engines_text_event():
    params = protocol.turn_event_params(TextDelta(turn_id=3, text="hi"))
    assert params == {"kind": "text", "turn_id": 3, "text": "hi"}


def test_client_capability_and_save_answers_of_any_shape():
    class Caps:
        experimental = {"ndomo": {"saveDocuments": True}, "other": 1}

    assert protocol.client_capability(Caps()) == {"saveDocuments": True}
    assert protocol.client_capability(None) == {}
    assert protocol.client_capability(type("C", (), {"experimental": {"ndomo": 1}})()) == {}
    assert protocol.saved_uris({"saved": ["file:///a", 3]}) == ["file:///a"]
    assert protocol.saved_uris(None) == [] and protocol.saved_uris({"saved": "x"}) == []
    assert protocol.command("task.status") == "ndomo.task.status"


def test_approve_params_carry_exactly_the_typed_fields_made_inert():
    request = ApprovalRequest(
        permission="bash",
        subject="make \x1b[8m hidden\nnext line",
        agent="craftsman",
        mode="autopilot",
        reason="`make` matches\nno rule",
        network=False,
        sandbox="sandboxed (bubblewrap)",
        rule="make *",
    )
    params = approve_params(request)
    assert list(params) == list(protocol.ApproveParams.__annotations__)
    assert all(list(c) == list(protocol.ApprovalOption.__annotations__) for c in params["choices"])
    assert params["subject"] == "make \\x1b[8m hidden\nnext line"  # its lines kept, ESC shown
    assert params["reason"] == "`make` matches no rule"  # one line
    assert params["message"] == request.short()
    assert [c["id"] for c in params["choices"]] == ["once", "session", "project", "deny", "never"]
    control = approve_params(
        ApprovalRequest(permission="control", subject="AGENTS.md", agent="a", mode="m")
    )
    assert [(c["id"], c["label"]) for c in control["choices"]] == [
        ("once", "Allow once"),
        ("deny", "Deny"),
    ]
    assert control["rule"] == "" and control["network"] is None


def test_approve_answers_of_any_shape():
    assert protocol.approve_choice({"choice": "once"}) == "once"
    assert protocol.approve_choice(type("R", (), {"choice": "deny"})()) == "deny"
    assert protocol.approve_choice({"choice": 3}) is None
    assert protocol.approve_choice(None) is None and protocol.approve_choice([]) is None
