"""A workspace's checkpoints: snapshots of its files in a shadow git repository.

The shadow repository lives in the user's data (`$XDG_DATA_HOME/ndomo/checkpoints/<key>/`,
the key a hash of the workspace's real path), never in the workspace, and has its own
index: git runs with `--git-dir=<shadow> --work-tree=<workspace>`, so the user's own
`.git` (HEAD, index, refs, config, hooks) is never read for state nor written. What a
snapshot holds is what git would: tracked and untracked files, not those the workspace's
`.gitignore` files (or its `.git/info/exclude`) ignore, and no `.ndomo/` folder.

A snapshot is a commit on the shadow's `refs/ndomo/checkpoints`. Nothing changed since the
last one: one `git ls-files` (git's stat cache answers) and the last commit is the new
snapshot. A file over `MAX_FILE_BYTES` is left out, and named in the snapshot's notes: a
rewind leaves it as it is. Binary files under the limit are stored byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ndomo.config import user_data_dir

MAX_FILE_BYTES = 10 * 1024 * 1024
REF = "refs/ndomo/checkpoints"
_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # sha-1 or sha-256
STAMP = "ndomo-index-stamp"
# Never in a snapshot: ndomo's control folders (its database, its state; a rewind must
# not put back an old store or the agent's own configuration).
EXCLUDES = ".ndomo/\n"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "ndomo",
    "GIT_AUTHOR_EMAIL": "ndomo@localhost",
    "GIT_COMMITTER_NAME": "ndomo",
    "GIT_COMMITTER_EMAIL": "ndomo@localhost",
}


class CheckpointError(Exception):
    """git failed (or is missing): the message says what it printed."""


@dataclass(frozen=True)
class Snapshot:
    commit: str
    notes: list[str] = field(default_factory=list)  # what it left out, and why


def shadow_dir(root: Path, env: Mapping[str, str] | None = None) -> Path:
    real = os.path.realpath(root)
    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return user_data_dir(env) / "checkpoints" / key


async def _run(
    argv: list[str], *, env: dict[str, str], cwd: Path | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`argv` to its end, on a worker thread: starting a process on the event loop held it
    for 1-4 ms (the fork and exec, then asyncio's thread that waits for the child), and a
    turn's snapshot starts one just after the model's first token, while the answer
    streams. A cancel waits for git to end: a git killed or left mid-write would leave
    the shadow's index locked for the next snapshot."""
    job = asyncio.ensure_future(
        asyncio.to_thread(
            subprocess.run,
            argv,
            cwd=cwd,
            env=env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    )
    try:
        return await asyncio.shield(job)
    except FileNotFoundError as exc:
        if exc.filename not in (argv[0], None):
            raise CheckpointError(f"cannot run git: {exc}") from None
        raise CheckpointError(f"{argv[0]} is not installed: checkpoints need it") from None
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await job
        raise


class Shadow:
    """The shadow repository of one workspace."""

    def __init__(self, root: Path, git_dir: Path | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.git_dir = git_dir or shadow_dir(self.root)
        self._lock = asyncio.Lock()
        self._env: dict[str, str] | None = None

    # -- git ---------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        if self._env is None:
            env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("GIT_") or k in ("GIT_EXEC_PATH",)
            }
            env.update(_IDENTITY)
            env.update(
                GIT_DIR=str(self.git_dir),
                GIT_WORK_TREE=str(self.root),
                GIT_INDEX_FILE=str(self.git_dir / "index"),
                # The user's system and global git config are not ours: no fsmonitor, hooks,
                # autocrlf or filters change what a snapshot stores.
                GIT_CONFIG_NOSYSTEM="1",
                GIT_CONFIG_GLOBAL=os.devnull,
                GIT_TERMINAL_PROMPT="0",
                LC_ALL="C",
            )
            self._env = env
        return self._env

    async def git(self, *args: str, stdin: bytes | None = None, extra: dict | None = None) -> bytes:
        config = ["-c", "core.quotepath=off", "-c", "core.autocrlf=false", "-c", "gc.auto=0"]
        user_exclude = self.root / ".git" / "info" / "exclude"
        if user_exclude.is_file():
            config += ["-c", f"core.excludesFile={user_exclude}"]
        env = self.env() if not extra else {**self.env(), **extra}
        done = await _run(["git", *config, *args], cwd=self.root, env=env, stdin=stdin)
        if done.returncode != 0:
            raise CheckpointError(
                f"git {args[0]} failed ({done.returncode}): "
                f"{done.stderr.decode(errors='replace').strip()}"
            )
        return done.stdout

    async def _init(self) -> None:
        if (self.git_dir / "HEAD").is_file():
            return
        self.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        done = await _run(
            ["git", "init", "-q", "--bare", str(self.git_dir)],
            env={k: v for k, v in self.env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE")},
        )
        if done.returncode != 0:
            raise CheckpointError(
                f"git init failed: {done.stderr.decode(errors='replace').strip()}"
            )
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text(EXCLUDES)
        (self.git_dir / "workspace").write_text(str(self.root) + "\n")

    async def _last(self) -> str | None:
        # The ref's own file, which git leaves loose here (gc.auto=0: nothing packs it) and
        # replaces by a rename: one git process fewer on every snapshot, each turn's end
        # and `ndomo run` included. rev-parse when it is not there (packed, another format).
        try:
            loose = (self.git_dir / REF).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            loose = ""
        if _OID.fullmatch(loose):
            return loose
        try:
            out = await self.git("rev-parse", "-q", "--verify", REF)
        except CheckpointError:
            return None
        return out.decode().strip() or None

    # -- snapshot ----------------------------------------------------------------------

    async def snapshot(self, message: str = "checkpoint") -> Snapshot:
        """The workspace's files now, as a commit id (the last one when nothing changed)."""
        async with self._lock:
            await self._init()
            last = await self._last()
            changed = await self.git(
                "ls-files", "-z", "-m", "-o", "-d", "--exclude-standard", "--full-name"
            )
            paths = list(dict.fromkeys(p for p in changed.decode().split("\0") if p))
            if last is not None and not paths and self._index_stamp() == self._stamped():
                return Snapshot(last)
            return await self._commit(last, paths, message)

    def _index_stamp(self) -> str:
        try:
            st = os.stat(self.git_dir / "index")
        except OSError:
            return ""
        return f"{st.st_mtime_ns} {st.st_size} {st.st_ino}"

    def _stamped(self) -> str:
        """The index's stamp when `REF` was last written from it: another stamp means the
        index moved since (a restore, a snapshot cut short) and `REF` may not hold it."""
        try:
            return (self.git_dir / STAMP).read_text()
        except OSError:
            return "-"

    async def _commit(self, last: str | None, paths: list[str], message: str) -> Snapshot:
        """Stage the workspace (but files over the limit), and commit it unless its tree is
        the last one's."""
        notes: list[str] = []
        stage: list[str] = []
        gone: list[str] = []  # beyond a link now (its folder became one): out of the index
        for rel in paths:
            if self._beyond_link(rel):
                gone.append(rel)
                continue
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                stage.append(rel)  # deleted: `add -A` drops it from the index
                continue
            if st.st_size > MAX_FILE_BYTES and not os.path.islink(self.root / rel):
                notes.append(
                    f"{rel}: {st.st_size // (1024 * 1024)} MB, over the "
                    f"{MAX_FILE_BYTES // (1024 * 1024)} MB checkpoint limit — not snapshotted, "
                    "a rewind leaves it as it is"
                )
                continue
            stage.append(rel)
        if gone:  # `git add` refuses a path beyond a symbolic link
            await self.git(
                "update-index", "-z", "--force-remove", "--stdin", stdin="\0".join(gone).encode()
            )
        if stage:  # only what `ls-files` named: no second walk of the workspace
            await self.git(
                "add",
                "-A",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                stdin="\0".join(stage).encode(),
                extra={"GIT_LITERAL_PATHSPECS": "1"},
            )
        tree = (await self.git("write-tree")).decode().strip()
        commit = last
        if (
            last is None
            or (await self.git("rev-parse", f"{last}^{{tree}}")).decode().strip() != tree
        ):
            parents = ["-p", last] if last else []
            commit = (await self.git("commit-tree", tree, *parents, "-m", message)).decode().strip()
            await self.git("update-ref", REF, commit)
        (self.git_dir / STAMP).write_text(self._index_stamp())
        assert commit is not None
        return Snapshot(commit, notes)

    def _beyond_link(self, rel: str) -> bool:
        """A folder on `rel`'s way from the workspace root is a symbolic link."""
        parts = rel.split("/")[:-1]
        return any(os.path.islink(self.root.joinpath(*parts[: i + 1])) for i in range(len(parts)))

    # -- compare and restore -------------------------------------------------------------

    async def diff(self, a: str, b: str) -> dict[str, str]:
        """path → status (A: only in b, D: only in a, M/T: differs) between two snapshots."""
        if a == b:
            return {}
        out = await self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b)
        parts = out.decode().split("\0")
        return {parts[i + 1]: parts[i][:1] for i in range(0, len(parts) - 1, 2) if parts[i]}

    async def restore(
        self, target: str, current: str, only: Collection[str] | None = None
    ) -> list[str]:
        """Make the workspace's files (those in `only`, when given) what `target` holds,
        from `current` (a snapshot of them now): files created since are deleted, changed
        or deleted ones written back. Returns the paths it changed."""
        changes = await self.diff(target, current)
        if only is not None:
            changes = {p: s for p, s in changes.items() if p in only}
        if not changes:
            return []
        async with self._lock:
            for rel, status in changes.items():
                if status == "A":  # created since the target: not in it
                    path = self.root / rel
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    self._prune(path.parent)
            back = [rel for rel, status in changes.items() if status != "A"]
            if back:
                await self.git(
                    "checkout",
                    target,
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                    stdin="\0".join(back).encode(),
                    extra={"GIT_LITERAL_PATHSPECS": "1"},
                )
        return sorted(changes)

    def _prune(self, folder: Path) -> None:
        """Remove the folders a deletion left empty, up to the workspace root."""
        while folder != self.root and self.root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    async def files(self, commit: str, path: str) -> bytes | None:
        try:
            return await self.git("show", f"{commit}:{path}")
        except CheckpointError:
            return None
