"""The editor's diagnostics reach the agent: another server's diagnostic becomes a quick fix
whose turn carries it to the model, and after an edit the diagnostics the editor then shows
(`ndomo/diagnostics`, answered by the client) are in the next model request; the turn that
leaves a new error says so. A client that does not announce the request is not asked."""

from __future__ import annotations

from lsprotocol import types

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, code_actions
from tests.fakes.fake_model import FakeModel


def _pyright(line: int, message: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=4),
            end=types.Position(line=line, character=9),
        ),
        message=message,
        severity=types.DiagnosticSeverity.Error,
        source="Pyright",
        code="reportUndefinedVariable",
    )


def _announce_diagnostics(caps) -> None:
    caps.experimental = {"ndomo": {"diagnostics": True}}


def _user_messages(fake: FakeModel) -> list[str]:
    return [
        m["content"]
        for r in fake.chat_requests()
        for m in r["body"]["messages"]
        if m["role"] == "user"
    ]


def _tool_messages(fake: FakeModel) -> list[str]:
    return [
        m["content"]
        for r in fake.chat_requests()
        for m in r["body"]["messages"]
        if m["role"] == "tool"
    ]


async def test_a_diagnostic_of_another_server_reaches_the_turn_through_the_quick_fix(lsp, tmp_path):
    src = tmp_path / "app.py"
    src.write_text("x = 1\ny = undefined_name\n", encoding="utf-8")
    with FakeModel(script=[{"text": "fixed"}]) as fake:
        client = await lsp.start(tmp_path, env={"NDOMO_BASE_URL": fake.url})
        disk = EditorDisk()
        uri = disk.open(client, src, src.read_text(encoding="utf-8"))
        diag = _pyright(1, '"undefined_name" is not defined')
        own = types.Diagnostic(
            range=diag.range, message="task #1 of plan x", source="ndomo", code=1
        )
        actions = await code_actions(
            client,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diag.range,
                context=types.CodeActionContext(diagnostics=[diag, own]),
            ),
        )
        fixes = [a for a in actions if a.title == "ndomo: Fix this problem with craftsman"]
        assert len(fixes) == 1, [a.title for a in actions]  # ndomo's own diagnostic: none
        (fix,) = fixes
        assert fix.kind == types.CodeActionKind.QuickFix
        assert fix.diagnostics and fix.diagnostics[0].message == diag.message
        summary = await command(client, fix.command.command, fix.command.arguments[0])
        assert summary["status"] == "done", summary
        (user,) = _user_messages(fake)
        assert "The editor reports in app.py:" in user
        assert (
            '- line 2: error (Pyright reportUndefinedVariable): "undefined_name" is not defined'
            in user
        )
        assert "y = undefined_name" in user  # the diagnostic's line is the selection


async def test_an_edit_is_followed_by_the_editors_diagnostics_in_the_next_request(lsp, tmp_path):
    src = tmp_path / "app.py"
    src.write_text("def f():\n    return 1\n", encoding="utf-8")
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": "app.py", "old_text": "return 1", "new_text": "return z"},
                }
            ]
        },
        {"text": "changed it"},
    ]
    asked: list[list[str]] = []
    disk = EditorDisk()

    def diagnostics(params):
        # like an editor: the type checker now flags what the edit introduced
        uris = list(params.uris)
        asked.append(uris)
        text = disk.buffers[uris[0]][1]
        found = []
        if "return z" in text:
            found.append(
                {
                    "message": '"z" is not defined',
                    "source": "Pyright",
                    "code": "reportUndefinedVariable",
                    "severity": 1,
                    "range": {
                        "start": {"line": 1, "character": 11},
                        "end": {"line": 1, "character": 12},
                    },
                }
            )
        found.append({"message": "plan task", "source": "ndomo", "severity": 3})
        return {"items": [{"uri": uris[0], "diagnostics": found}]}

    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            handlers={
                types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p),
                "ndomo/diagnostics": diagnostics,
            },
            capabilities=_announce_diagnostics,
        )
        uri = disk.open(client, src, src.read_text(encoding="utf-8"))
        summary = await command(
            client, "ndomo.turn", {"prompt": "change f", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done", summary
        assert asked == [[uri], [uri]]  # before the first edit, and after it
        (result,) = _tool_messages(fake)
        assert result.startswith("edited app.py at line 2")
        assert "the editor now reports:" in result
        assert '- app.py line 2: error (Pyright reportUndefinedVariable): "z" is not defined' in (
            result
        )
        assert "plan task" not in result  # ndomo's own diagnostics are not the code's problems
        # the turn left a new error: its answer says so
        assert summary["answer"].startswith("changed it")
        assert "the editor reports 1 new error in app.py" in summary["answer"]


async def test_a_client_that_does_not_answer_diagnostics_is_not_asked(lsp, tmp_path):
    src = tmp_path / "app.py"
    src.write_text("a = 1\n", encoding="utf-8")
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": "app.py", "old_text": "a = 1", "new_text": "a = 2"},
                }
            ]
        },
        {"text": "done"},
    ]
    asked: list = []
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            handlers={"ndomo/diagnostics": lambda p: asked.append(p) or {"items": []}},
        )
        summary = await command(
            client, "ndomo.turn", {"prompt": "edit", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done", summary
        assert asked == []
        (result,) = _tool_messages(fake)
        assert "the editor now reports" not in result
        assert summary["answer"] == "done"
