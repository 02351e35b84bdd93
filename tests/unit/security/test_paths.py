"""Path confinement corpus: every case is either refused or resolved to an expected place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ndomo.security.paths import PathRefused, is_secret, relative_to_workspace, resolve_in_workspace


@pytest.fixture()
def ws(tmp_path: Path) -> dict[str, Path]:
    """A workspace with an outside neighbour, symlinks of every kind and a nested root."""
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / "nested" / "inner").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    (root / "link_file_out").symlink_to(outside / "secret.txt")
    (root / "link_dir_out").symlink_to(outside)
    (root / "dangling_out").symlink_to(outside / "does-not-exist")
    (root / "dangling_in").symlink_to(root / "src" / "future.py")
    (root / "link_in").symlink_to(root / "src")
    (root / "rel_link_out").symlink_to(Path("..") / "outside")
    (root / "chain1").symlink_to(root / "chain2")
    (root / "chain2").symlink_to(outside)
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "proc_link").symlink_to("/proc/self/root")
    (root / "src" / "up_and_in").symlink_to(Path("..") / "src" / "main.py")
    return {"root": root, "outside": outside, "tmp": tmp_path}


def _roots(ws: dict[str, Path]) -> list[Path]:
    return [ws["root"]]


REFUSED = [
    ("../outside/secret.txt", "escapes"),
    ("src/../../outside", "escapes"),
    ("..", "escapes"),
    ("{tmp}/outside/secret.txt", "outside every workspace folder"),
    ("/etc/passwd", "outside every workspace folder"),
    ("{root}/../outside/secret.txt", "escapes"),
    ("~/.ssh/id_rsa", "home-relative"),
    ("~root/.bashrc", "home-relative"),
    ("~", "home-relative"),
    ("src/main.py\x00.txt", "NUL"),
    ("", "empty"),
    ("   ", "empty"),
    ("/proc/self/root{root}/src/main.py", "/proc"),
    ("/proc/self/environ", "/proc"),
    ("proc_link{root}/src/main.py", "/proc"),
    ("link_file_out", "points outside"),
    ("link_dir_out/secret.txt", "points outside"),
    ("link_dir_out", "points outside"),
    ("dangling_out", "points outside"),
    ("rel_link_out/secret.txt", "points outside"),
    ("chain1/secret.txt", "points outside"),
    ("loop_a", "too many levels"),
    ("C:\\Windows\\system.ini", "Windows drive"),
    ("c:/x", "Windows drive"),
    ("\\\\server\\share\\x", "UNC"),
    ("//server/share/x", "UNC"),
]


@pytest.mark.parametrize(("raw", "expected"), REFUSED, ids=[repr(r) for r, _ in REFUSED])
def test_refused(ws, raw: str, expected: str) -> None:
    raw = raw.format(root=ws["root"], tmp=ws["tmp"])
    with pytest.raises(PathRefused) as info:
        resolve_in_workspace(raw, _roots(ws))
    assert expected in info.value.message


RESOLVED = [
    ("src/main.py", "src/main.py"),
    ("./src//main.py", "src/main.py"),
    ("src/pkg/../main.py", "src/main.py"),
    ("{root}/src/main.py", "src/main.py"),
    (".", "."),
    ("link_in/main.py", "src/main.py"),
    ("dangling_in", "src/future.py"),  # write through an inside dangling link lands inside
    ("src/up_and_in", "src/main.py"),
    ("new_dir/deeper/new_file.txt", "new_dir/deeper/new_file.txt"),
    ("src/new_dir/../also_new.py", "src/also_new.py"),
    ("name with spaces.md", "name with spaces.md"),
    ("back\\slash.txt", "back\\slash.txt"),  # a legal posix name, not a drive or UNC form
]


@pytest.mark.parametrize(("raw", "rel"), RESOLVED, ids=[r for r, _ in RESOLVED])
def test_resolved(ws, raw: str, rel: str) -> None:
    got = resolve_in_workspace(raw.format(root=ws["root"]), _roots(ws))
    assert got.is_absolute()
    expected = ws["root"].resolve() if rel == "." else ws["root"].resolve() / rel
    assert got == expected
    assert relative_to_workspace(got, _roots(ws)) == rel


def test_relative_paths_use_base(ws) -> None:
    got = resolve_in_workspace("main.py", _roots(ws), base=ws["root"] / "src")
    assert got == ws["root"].resolve() / "src" / "main.py"
    with pytest.raises(PathRefused, match="escapes"):
        resolve_in_workspace("../../outside", _roots(ws), base=ws["root"] / "src")
    with pytest.raises(PathRefused, match="base folder"):
        resolve_in_workspace("x", _roots(ws), base=ws["outside"])


def test_nested_roots(ws) -> None:
    """With a root inside another, `..` out of the inner root stays inside the outer one."""
    inner = ws["root"] / "nested" / "inner"
    roots = [inner, ws["root"]]
    got = resolve_in_workspace("../../src/main.py", roots)
    assert got == ws["root"].resolve() / "src" / "main.py"
    assert relative_to_workspace(inner / "a.txt", roots) == "a.txt"  # innermost root wins
    with pytest.raises(PathRefused):
        resolve_in_workspace("../../../outside", roots)
    # only the inner root: leaving it is refused
    with pytest.raises(PathRefused, match="escapes"):
        resolve_in_workspace("../x", [inner])


def test_second_root_absolute(ws) -> None:
    other = ws["tmp"] / "other"
    other.mkdir()
    roots = [ws["root"], other]
    assert resolve_in_workspace(str(other / "f.txt"), roots) == other.resolve() / "f.txt"


def test_root_behind_symlink(ws) -> None:
    """A workspace opened through a symlinked folder still confines correctly."""
    alias = ws["tmp"] / "alias"
    alias.symlink_to(ws["root"])
    assert (
        resolve_in_workspace(str(alias / "src" / "main.py"), [alias])
        == ws["root"].resolve() / "src/main.py"
    )
    with pytest.raises(PathRefused):
        resolve_in_workspace(str(alias / ".." / "outside"), [alias])


def test_no_roots_and_bad_type(ws) -> None:
    with pytest.raises(PathRefused, match="no workspace folder"):
        resolve_in_workspace("a.txt", [])
    with pytest.raises(PathRefused, match="must be a string"):
        resolve_in_workspace(3, _roots(ws))  # type: ignore[arg-type]


def test_relative_to_workspace_outside(ws) -> None:
    with pytest.raises(PathRefused):
        relative_to_workspace(ws["outside"] / "secret.txt", _roots(ws))


SECRETS = [
    (".env", True),
    ("config/.env", True),
    (".env.local", True),
    ("deploy/server.pem", True),
    ("keys/api.key", True),
    ("home/id_rsa", True),
    ("home/id_ed25519.pub", True),
    ("cert.p12", True),
    ("src/main.py", False),
    ("environment.md", False),
    (".envrc", False),
    ("docs/keyboard.md", False),
]


@pytest.mark.parametrize(("rel", "secret"), SECRETS)
def test_secret_default_globs(ws, rel: str, secret: bool) -> None:
    assert is_secret(ws["root"] / rel, _roots(ws)) is secret


def test_secret_custom_globs_and_outside(ws) -> None:
    roots = _roots(ws)
    assert is_secret(ws["root"] / "config" / "prod.yaml", roots, ["config/prod.*"])
    assert not is_secret(ws["root"] / "other" / "config" / "prod.yaml", roots, ["/config/prod.*"])
    assert not is_secret(ws["root"] / ".env", roots, [])
    # a path outside the workspace is still judged (by its absolute form)
    assert is_secret(ws["outside"] / ".env", roots, [".env"])


def test_refusal_is_clear(ws) -> None:
    with pytest.raises(PathRefused) as info:
        resolve_in_workspace("link_dir_out/secret.txt", _roots(ws))
    msg = info.value.message
    assert "link_dir_out" in msg and str(ws["outside"].resolve()) in msg
    assert str(info.value) == msg
    assert os.path.exists(ws["outside"] / "secret.txt")  # nothing touched
