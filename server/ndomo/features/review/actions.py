"""`review.show` and `review.apply`: a turn's changes, hunk by hunk, kept or put back.

- show: the files the turn changed (its edits and its commands: from its start checkpoint
  to its end one), each diffed from the start checkpoint to the file on disk now, as hunks
  with ids (`<path>#<n>`), and the file's content hash. The default turn is the session's
  last one that changed a file.
- apply: the rejected hunks (by id) are put back; every other change stays. Each file is
  written at once (a temporary file renamed over it); a created file rejected is removed,
  a deleted one written back. A file whose content is no longer the hash the review gave
  is refused and left as it is (review again). Files are compared and written off the
  event loop; git runs as a subprocess (the checkpoints' shadow repository).

An apply that writes is recorded as a turn (agent `review`, prompt `review of turn N`) with
checkpoints before and after it, as a rewind is: a later rewind counts what it put back as
ndomo's, not the user's, and rewinding to that record takes the review back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, action
from ndomo.app import App
from ndomo.features.checkpoints import shadow_of
from ndomo.features.checkpoints.rewind import RECORDS, by_turn, in_session
from ndomo.features.checkpoints.shadow import CheckpointError, Shadow
from ndomo.features.review.hunks import FileDiff, content_hash, diff, revert
from ndomo.schema import Schema
from ndomo.store.checkpoints import Checkpoint
from ndomo.store.models import Turn

REVIEW_AGENT = "review"  # one of rewind's RECORDS: ndomo's own file operations


class ReviewParams(Schema):
    model_config = ConfigDict(extra="forbid")
    turn: int | None = Field(
        default=None,
        description="The turn id (the session's last turn that changed files if unset).",
    )
    session: str | None = Field(default=None, description="Session id (the current one if unset).")
    texts: bool = Field(
        default=False,
        description="Also each file's text at the checkpoint (a diff editor's left side).",
    )


class Hunk(Schema):
    id: str  # "<path>#<n>"
    old_start: int  # 1-based; with old_lines 0, the line after which the added lines go
    old_lines: int
    new_start: int
    new_lines: int
    removed: list[str]
    added: list[str]


class FileReview(Schema):
    path: str
    status: str  # modified, created, deleted, binary
    hash: str  # of the file on disk when the review was made ("absent": none)
    hunks: list[Hunk]
    original: str | None = None  # with `texts`: the checkpoint's text (None: no file, or binary)


class Review(Schema):
    session: str
    turn_id: int | None
    prompt: str | None = None
    checkpoint: str | None = None  # the turn's start snapshot
    files: list[FileReview] = []
    message: str


class ApplyParams(Schema):
    model_config = ConfigDict(extra="forbid")
    turn: int = Field(description="The reviewed turn's id.")
    reject: list[str] = Field(
        default_factory=list, description="Ids of the hunks to put back; every other one stays."
    )
    hashes: dict[str, str] = Field(
        default_factory=dict,
        description="path → the hash the review gave: a file changed since is refused.",
    )
    session: str | None = Field(default=None, description="Session id (the current one if unset).")


class ApplyResult(Schema):
    turn_id: int
    reverted: list[str] = []  # hunk ids put back
    files: list[str] = []  # files written or removed
    refused: dict[str, str] = {}  # path → why it was left as it is
    message: str


class _Turns:
    """The session's top-level turns with their start and end snapshots."""

    def __init__(self, turns: list[Turn], checkpoints: list[Checkpoint], now: str) -> None:
        self.turns = [t for t in turns if t.parent_turn_id is None]
        self.starts = by_turn(checkpoints, "turn_start")
        self.ends = by_turn(checkpoints, "turn_end")
        self.now = now

    def span(self, turn: Turn) -> tuple[str, str] | None:
        start = self.starts.get(turn.id)
        if start is None:
            return None
        # no end (running, or its process died): up to the next turn's start, or now
        later = [self.starts[t.id] for t in self.turns if t.id > turn.id and t.id in self.starts]
        return start, self.ends.get(turn.id, later[0] if later else self.now)


def _inside(root: Path, path: Path) -> bool:
    """`path`'s folder is in the workspace once links are followed: a folder the turn made a
    link to elsewhere is neither read nor written through."""
    real, top = os.path.realpath(path.parent), os.path.realpath(root)
    return real == top or real.startswith(top + os.sep)


async def _read(root: Path, rel: str) -> bytes | None:
    path = root / rel

    def read() -> bytes | None:
        try:
            if not _inside(root, path) or path.is_symlink() or not path.is_file():
                return None
            return path.read_bytes()
        except FileNotFoundError:
            return None

    return await asyncio.to_thread(read)


class _Reviewed:
    def __init__(
        self, turn: Turn, start: str, files: dict[str, tuple[bytes | None, bytes | None, FileDiff]]
    ):
        self.turn = turn
        self.start = start
        self.files = files  # path → (old, new, diff), in path order


async def _review(app: App, p: ReviewParams | ApplyParams) -> tuple[str, _Reviewed | None]:
    from ndomo.runtime.runtime import Runtime

    state = await Runtime.of(app).session(p.session)
    store = await app.store()
    turns = await store.list_turns(state.id, limit=1_000_000)
    shadow = shadow_of(app)
    try:
        now = await shadow.snapshot("before a review")
        spans = _Turns(turns, await store.session_checkpoints(state.id), now.commit)
        if p.turn is not None:
            turn = next((t for t in spans.turns if t.id == p.turn), None)
            if turn is None:
                raise ActionError(f"no turn {p.turn} in this session", field="turn")
            span = spans.span(turn)
            if span is None:
                raise ActionError(
                    f"turn {turn.id} has no checkpoint (it ran no tool): nothing to review",
                    field="turn",
                )
            changed = await shadow.diff(*span)
        else:
            for turn in reversed(spans.turns):
                span = spans.span(turn)
                if turn.agent in RECORDS or span is None:
                    continue
                changed = await shadow.diff(*span)
                if changed:
                    break
            else:
                return state.id, None
        return state.id, _Reviewed(turn, span[0], await _diffs(app, shadow, span[0], changed))
    except CheckpointError as exc:
        raise ActionError(f"review failed: {exc}", kind="failed") from None


async def _diffs(
    app: App, shadow: Shadow, start: str, changed: dict[str, str]
) -> dict[str, tuple[bytes | None, bytes | None, FileDiff]]:
    out = {}
    for path in sorted(changed):
        old = None if changed[path] == "A" else await shadow.files(start, path)
        new = await _read(app.root, path)
        if old == new:
            continue  # changed by the turn, then back (by a later turn or the user)
        out[path] = (old, new, await asyncio.to_thread(diff, old, new))  # difflib: off the loop
    return out


def _file_review(
    path: str, old: bytes | None, new: bytes | None, fd: FileDiff, texts: bool = False
) -> FileReview:
    hunks = [
        Hunk(
            id=f"{path}#{c.index}",
            old_start=c.i1 + 1 if c.i2 > c.i1 else c.i1,
            old_lines=c.i2 - c.i1,
            new_start=c.j1 + 1 if c.j2 > c.j1 else c.j1,
            new_lines=c.j2 - c.j1,
            removed=c.removed,
            added=c.added,
        )
        for c in fd.changes
    ]
    original = (
        "".join(fd.old_lines) if texts and old is not None and fd.old_lines is not None else None
    )
    return FileReview(path=path, status=fd.status, hash=fd.new_hash, hunks=hunks, original=original)


@action(
    "review.show",
    ReviewParams,
    summary="A turn's changes (its edits and commands) as files and hunks, to keep or put back",
)
async def review_show(app: App, p: ReviewParams) -> Review:
    session, found = await _review(app, p)
    if found is None:
        return Review(
            session=session, turn_id=None, message="no turn of this session changed a file"
        )
    files = [_file_review(path, *entry, texts=p.texts) for path, entry in found.files.items()]
    count = sum(len(f.hunks) for f in files)
    return Review(
        session=session,
        turn_id=found.turn.id,
        prompt=found.turn.prompt,
        checkpoint=found.start,
        files=files,
        message=f"turn {found.turn.id}: {len(files)} file(s) changed, {count} hunk(s)"
        if files
        else f"turn {found.turn.id}: its changes are no longer in the files",
    )


def _split_id(hunk: str) -> tuple[str, int]:
    path, _, n = hunk.rpartition("#")
    if not path or not n.isdigit():
        raise ActionError(f"not a hunk id: {hunk!r} (expected <path>#<n>)", field="reject")
    return path, int(n)


async def _write(
    root: Path, rel: str, data: bytes | None, expected: str, mode: int | None
) -> str | None:
    """Replace the file with `data` (None: remove it) unless it no longer has the hash
    `expected`; the reason when it is left as it is."""
    path = root / rel

    def write() -> str | None:
        if not _inside(root, path):
            return "not written: its folder is now a link out of the workspace"
        try:
            current = None if path.is_symlink() or not path.is_file() else path.read_bytes()
        except FileNotFoundError:
            current = None
        if content_hash(current) != expected:
            return "changed since the review (review it again)"
        if data is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        keep = os.stat(path).st_mode & 0o7777 if current is not None else (mode or 0o644)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".ndomo", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, keep)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return None

    try:
        return await asyncio.to_thread(write)
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"


async def _mode(shadow: Shadow, commit: str, path: str) -> int | None:
    out = await shadow.git("ls-tree", commit, "--", path, extra={"GIT_LITERAL_PATHSPECS": "1"})
    mode = out.decode().split(" ", 1)[0]
    return 0o755 if mode == "100755" else 0o644 if mode else None


@action(
    "review.apply",
    ApplyParams,
    summary="Put back a reviewed turn's rejected hunks; the accepted ones stay",
)
async def review_apply(app: App, p: ApplyParams) -> ApplyResult:
    return await in_session(
        app,
        p.session,
        lambda session_id: _apply(app, session_id, p),
        busy="a turn is running in this session; review it once it ends",
    )


async def _apply(app: App, session_id: str, p: ApplyParams) -> ApplyResult:
    rejected: dict[str, set[int]] = {}
    for hunk in p.reject:
        path, n = _split_id(hunk)
        rejected.setdefault(path, set()).add(n)
    _, found = await _review(app, ApplyParams(turn=p.turn, session=session_id))
    assert found is not None  # a turn was given
    unknown = sorted(
        f"{path}#{n}"
        for path, ns in rejected.items()
        for n in ns
        if path not in found.files or n not in {c.index for c in found.files[path][2].changes}
    )
    if unknown:
        raise ActionError(
            f"no such hunk in turn {p.turn}'s review: {', '.join(unknown)} (review it again)",
            field="reject",
        )
    reverted: list[str] = []
    written: list[str] = []
    refused: dict[str, str] = {}
    shadow = shadow_of(app)
    store = await app.store()
    record = None
    if rejected:
        try:
            before = await shadow.snapshot(f"before a review of turn {p.turn}")
        except CheckpointError as exc:
            raise ActionError(f"review failed: {exc}", kind="failed") from None
        record = await store.start_turn(session_id, REVIEW_AGENT, None, f"review of turn {p.turn}")
        await store.add_checkpoint(session_id, record.id, "turn_start", before.commit, None)
    for path, ns in sorted(rejected.items()):
        old, new, fd = found.files[path]
        expected = p.hashes.get(path)
        if expected is None:
            refused[path] = "no hash given: the review's hash of the file is needed"
            continue
        if fd.new_hash != expected:
            refused[path] = "changed since the review (review it again)"
            continue
        mode = await _mode(shadow, found.start, path) if new is None else None
        why = await _write(app.root, path, revert(fd, old, new, ns), expected, mode)
        if why is not None:
            refused[path] = why
            continue
        written.append(path)
        reverted += [f"{path}#{n}" for n in sorted(ns)]
    if record is not None:
        try:
            after = await shadow.snapshot(f"reviewed turn {p.turn}")
            await store.add_checkpoint(session_id, record.id, "turn_end", after.commit, None)
        except CheckpointError as exc:
            refused.setdefault("(checkpoint)", f"not taken: {exc}")
        await store.finish_turn(
            record.id,
            "done" if written or not refused else "failed",
            error="; ".join(f"{k}: {v}" for k, v in refused.items()) or None,
        )
    parts = [
        f"turn {p.turn}: put back {len(reverted)} hunk(s) in {', '.join(written) or 'no file'}"
    ]
    parts += [f"refused {path}: {why}" for path, why in refused.items()]
    return ApplyResult(
        turn_id=p.turn, reverted=reverted, files=written, refused=refused, message="; ".join(parts)
    )
