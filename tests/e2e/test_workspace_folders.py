"""Several workspace folders in one server: one App — one store — per folder root; requests
and commands go to the folder holding their uri; folders come and go with
`workspace/didChangeWorkspaceFolders`, a removed one's store closed and its diagnostics
cleared."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import seed_plan, wait_for


def _folders(tmp_path: Path, *names: str) -> list[Path]:
    out = []
    for name in names:
        (tmp_path / name).mkdir()
        out.append((tmp_path / name).resolve())
    return out


def _uri(path: Path) -> str:
    return from_fs_path(str(path))


async def test_each_folder_has_its_own_store_and_commands_route_by_uri(lsp, tmp_path):
    a, b = _folders(tmp_path, "a", "b")
    statuses: list = []
    client = await lsp.start(
        a,
        folders=[a, b],
        env={"HOME": str(tmp_path)},
        handlers={"ndomo/status": lambda p: statuses.append(p)},
    )
    # each folder's status is sent, saying whose it is
    await wait_for(lambda: {s.folder for s in statuses} >= {_uri(a), _uri(b)}, what="both statuses")
    assert (a / ".ndomo" / "ndomo.db").exists() and (b / ".ndomo" / "ndomo.db").exists()

    slug, _ = await seed_plan(a, [{"description": "tidy", "files": ["x.py"]}])
    in_a = await command(client, "ndomo.plan.list", {"uri": _uri(a / "x.py")})
    in_b = await command(client, "ndomo.plan.list", {"uri": _uri(b / "x.py")})
    assert [p["slug"] for p in in_a] == [slug]
    assert in_b == []
    health_b = await command(client, "ndomo.health", {"probe_model": False, "uri": _uri(b)})
    assert health_b["workspace"] == str(b)
    # diagnostics of a's plan land on a's file only
    await wait_for(lambda: client.diagnostics.get(_uri(a / "x.py")), what="a's diagnostics")
    assert not client.diagnostics.get(_uri(b / "x.py"))

    # without a uri: the folder of the document the user last worked in, else the first
    assert (await command(client, "ndomo.health", {"probe_model": False}))["workspace"] == str(a)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=_uri(b / "y.py"), language_id="python", version=1, text="y = 1\n"
            )
        )
    )
    assert (await command(client, "ndomo.plan.list", {})) == []
    assert (await command(client, "ndomo.health", {"probe_model": False}))["workspace"] == str(b)


async def test_folders_added_and_removed_open_and_close_their_stores(lsp, tmp_path):
    a, b, c = _folders(tmp_path, "a", "b", "c")
    client = await lsp.start(a, folders=[a, b], env={"HOME": str(tmp_path)})
    await seed_plan(b, [{"description": "in b", "files": ["f.py"]}])
    await wait_for(lambda: client.diagnostics.get(_uri(b / "f.py")), what="b's diagnostics")
    assert (b / ".ndomo" / "ndomo.db-wal").exists()  # the server holds b's store open

    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=_uri(c), name="c")],
                removed=[types.WorkspaceFolder(uri=_uri(b), name="b")],
            )
        )
    )
    # b: its diagnostics cleared and its store closed (SQLite removes the WAL on last close)
    await wait_for(lambda: not client.diagnostics.get(_uri(b / "f.py")), what="b cleared")
    await wait_for(lambda: not (b / ".ndomo" / "ndomo.db-wal").exists(), what="b's store closed")
    # c: a store of its own, reached by uri; b's uris now go to the default folder (a)
    health_c = await command(client, "ndomo.health", {"probe_model": False, "uri": _uri(c)})
    assert health_c["workspace"] == str(c) and health_c["database"]["ok"] is True
    assert (c / ".ndomo" / "ndomo.db").exists()
    health_b = await command(client, "ndomo.health", {"probe_model": False, "uri": _uri(b)})
    assert health_b["workspace"] == str(a)


async def test_home_among_the_folders_gets_no_store(lsp, tmp_path):
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    proj = (home / "proj").resolve()
    client = await lsp.start(proj, folders=[home, proj], env={"HOME": str(home)})
    report = await command(client, "ndomo.health", {"probe_model": False, "uri": _uri(home)})
    assert report["workspace"] == str(proj)  # $HOME is no root: the default folder answers
    assert not (home / ".ndomo").exists() and (proj / ".ndomo").is_dir()
