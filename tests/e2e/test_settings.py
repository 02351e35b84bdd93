"""`workspace/didChangeConfiguration` applied live: the server re-reads each folder's
settings (pulled with `workspace/configuration`, else the pushed `settings.ndomo`) and the
next request and turn use them — in the same server process, without a restart."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.fakes.fake_model import FakeModel


async def _model_name(client, folder) -> str:
    report = await command(
        client, "ndomo.health", {"probe_model": False, "uri": from_fs_path(str(folder))}
    )
    return report["model"]["name"]


async def _assert_model(client, folder, name: str) -> None:
    """The request right after the change already sees it: requests wait for a settings
    change the server received before them."""
    assert await _model_name(client, folder) == name


def _change(client, settings=None) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def test_pulled_settings_apply_per_folder_without_a_restart(lsp, tmp_path):
    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    a.mkdir()
    b.mkdir()
    ua, ub = from_fs_path(str(a)), from_fs_path(str(b))
    (a / "f.py").write_text("x = 1\n", encoding="utf-8")
    in_a = from_fs_path(str(a / "f.py"))  # a turn about a's file runs in a
    with FakeModel(script=[{"text": "one"}, {"text": "two"}]) as fake:
        client = await lsp.start(
            a,
            folders=[a, b],
            env={"NDOMO_BASE_URL": fake.url, "HOME": str(tmp_path)},
            init_options={"model": {"name": "first"}},
        )
        pulls: list[tuple] = []  # what the server asked the editor (pytest-lsp answers)
        answer = client.get_configuration

        def recording(*, section=None, scope_uri=None):
            pulls.append((scope_uri, section))
            return answer(section=section, scope_uri=scope_uri)

        client.get_configuration = recording
        pid = client._server.pid
        await command(client, "ndomo.turn", {"prompt": "hi", "uri": in_a})
        assert fake.chat_requests()[-1]["body"]["model"] == "first"

        client.set_configuration({"model": {"name": "second"}}, section="ndomo", scope_uri=ua)
        _change(client, {"ndomo": {"model": {"name": "ignored: the client offers a pull"}}})
        await _assert_model(client, a, "second")
        assert pulls[-2:] == [(ua, "ndomo"), (ub, "ndomo")]
        assert await _model_name(client, b) == "first"  # b's editor settings name no model

        summary = await command(client, "ndomo.turn", {"prompt": "again", "uri": in_a})
        assert summary["status"] == "done"
        assert fake.chat_requests()[-1]["body"]["model"] == "second"
        assert client._server.pid == pid and client._server.returncode is None

        # a setting removed in the editor falls back to the lower layers
        client.set_configuration(None, section="ndomo", scope_uri=ua)
        _change(client)
        await _assert_model(client, a, "first")


async def test_pushed_settings_apply_when_the_client_cannot_be_asked(lsp, tmp_path):
    def no_pull(caps: types.ClientCapabilities) -> None:
        caps.workspace.configuration = False

    client = await lsp.start(tmp_path, env={"HOME": str(tmp_path.parent)}, capabilities=no_pull)
    pid = client._server.pid
    _change(client, {"ndomo": {"model": {"name": "pushed"}}})
    await _assert_model(client, tmp_path, "pushed")
    assert client._server.pid == pid and client._server.returncode is None


async def test_bad_settings_are_reported_and_the_rest_applied(lsp, tmp_path):
    client = await lsp.start(
        tmp_path, capabilities=lambda c: setattr(c.workspace, "configuration", False)
    )
    _change(client, {"ndomo": {"model": {"name": "good", "timeout_s": "soon"}}})
    await _assert_model(client, tmp_path, "good")
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert {p["key"] for p in report["config"]["problems"]} == {"model.timeout_s"}
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert any("editor settings" in m.message for m in errors)


async def test_a_changed_setting_the_status_shows_is_sent_at_once(lsp, tmp_path):
    """`sandbox.auto_allow` turned on in the editor: the status bar says so right away, not
    with the next turn or session."""
    from tests.e2e.editor_support import wait_for

    statuses: list[dict] = []

    def seen(params) -> None:
        statuses.append(params if isinstance(params, dict) else params._asdict())

    client = await lsp.start(tmp_path, handlers={"ndomo/status": seen})
    await wait_for(lambda: statuses, what="the start-up status")
    assert statuses[-1]["auto_allow"] is False
    client.set_configuration(
        {"sandbox": {"auto_allow": True}}, section="ndomo", scope_uri=from_fs_path(str(tmp_path))
    )
    _change(client)
    await wait_for(lambda: statuses[-1]["auto_allow"] is True, what="a status with auto_allow on")
