"""`ndomo acp`'s Host: a turn's events as ACP `session/update` notifications, approvals as
`session/request_permission`, file reads and edits through the client's `fs/*` methods
when it offers them (the editor sees unsaved buffers and keeps the edit in its undo).

Everything here translates; the turn itself is the engine's (`Runtime.run`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallLocation,
    ToolCallUpdate,
)

from acp import RequestError, helpers
from ndomo.runtime.events import (
    Decision,
    Notice,
    TextDelta,
    ThoughtDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEvent,
)
from ndomo.runtime.host import ApprovalChoice, ApprovalRequest, BaseHost, EditOutcome
from ndomo.runtime.output import current_call
from ndomo.security.text import one_line

if TYPE_CHECKING:
    from acp.interfaces import Client

log = logging.getLogger("ndomo.acp")

# ndomo's tool classes (`ToolDescriptor.tool_kind`) as ACP tool kinds; a few tools by name
# say more than their class (a search reads, a move moves).
KIND_OF_CLASS = {
    "read": "read",
    "edit": "edit",
    "execute": "execute",
    "network": "fetch",
    "plan": "think",
    "interact": "other",
    "compose": "other",
    "commit": "execute",
}
KIND_OF_NAME = {
    "grep": "search",
    "glob": "search",
    "find_symbol": "search",
    "find_references": "search",
    "plan_search": "search",
    "recall": "search",
    "plan_delete": "delete",
}
STATUS_OF = {"done": "completed", "failed": "failed", "cancelled": "failed", "refused": "failed"}

# The permission options and the approval each stands for (docs/editors.md, "Permissions").
# ndomo's "project" choice saves a rule for this workspace: its option names the rule.
# "Never" saves a deny rule for this workspace the same way: its option names it too.
ONCE, SESSION, ALWAYS, DENY, NEVER = "once", "session", "always", "deny", "never"
CHOICE_OF_OPTION: dict[str, ApprovalChoice] = {
    ONCE: "once",
    SESSION: "session",
    ALWAYS: "project",
    DENY: "deny",
    NEVER: "never",
}


def permission_options(request: ApprovalRequest) -> list[PermissionOption]:
    rule = f"{request.permission}: {request.shown_subject()}"
    always = f"{request.permission}: {one_line(request.rule, 300)}" if request.rule else rule
    options = [
        PermissionOption(option_id=ONCE, name="Allow once", kind="allow_once"),
        PermissionOption(option_id=SESSION, name="Allow for this session", kind="allow_always"),
        PermissionOption(
            option_id=ALWAYS,
            name=f"Always allow in this project ({always})",
            kind="allow_always",
        ),
        PermissionOption(option_id=DENY, name="Deny", kind="reject_once"),
        PermissionOption(
            option_id=NEVER, name=f"Never allow in this project ({rule})", kind="reject_always"
        ),
    ]
    if request.permission == "control":  # a control file is asked every time: no rule
        return [o for o in options if o.option_id in (ONCE, DENY)]
    return options


def title(name: str, arguments: dict[str, Any]) -> str:
    """What the editor shows for a call: the tool and what it works on (a path, a command,
    a pattern, a url), on one line with its controls escaped."""
    path, _line = _args_path(arguments)
    subject = path or next(
        (arguments[k] for k in ("command", "pattern", "query", "url") if k in arguments), None
    )
    return one_line(f"{name} {subject}" if isinstance(subject, str) else name, 200)


def _args_path(arguments: dict[str, Any]) -> tuple[str | None, int | None]:
    path = next(
        (arguments[k] for k in ("path", "file", "file_path", "target") if k in arguments), None
    )
    line = next((arguments[k] for k in ("line", "start_line") if k in arguments), None)
    return (
        path if isinstance(path, str) else None,
        line if isinstance(line, int) else None,
    )


class AcpHost(BaseHost):
    """One ACP session's turn host. `kinds`: tool name → ACP kind (from the registry);
    `client_fs`: which of `fs/read_text_file`, `fs/write_text_file` the client offers."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        root: Path,
        *,
        kinds: dict[str, str],
        reads: bool,
        writes: bool,
        overlay: dict[Path, str] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.session_id = session_id
        self.root = root
        self.kinds = kinds
        self.reads = reads
        self.writes = writes
        self.overlay = overlay or {}  # @-mentioned files' unsaved text, for this turn
        self.running: set[str] = set()
        self.last_notice = ""

    async def _update(self, update: Any) -> None:
        await self.client.session_update(session_id=self.session_id, update=update)

    def _location(self, arguments: dict[str, Any]) -> list[ToolCallLocation] | None:
        path, line = _args_path(arguments)
        if path is None:
            return None
        full = Path(path) if Path(path).is_absolute() else self.root / path
        return [ToolCallLocation(path=str(full), line=line)]

    async def emit(self, event: TurnEvent) -> None:
        await super().emit(event)
        if isinstance(event, TextDelta):
            await self._update(helpers.update_agent_message_text(event.text))
        elif isinstance(event, ThoughtDelta):
            await self._update(helpers.update_agent_thought_text(event.text))
        elif isinstance(event, ToolStarted):
            self.running.add(event.call_id)
            await self._update(
                helpers.start_tool_call(
                    event.call_id,
                    title(event.name, event.arguments),
                    kind=self.kinds.get(event.name, "other"),  # type: ignore[arg-type]
                    status="pending",
                    locations=self._location(event.arguments),
                    raw_input=event.arguments,
                )
            )
            await self._update(helpers.update_tool_call(event.call_id, status="in_progress"))
        elif isinstance(event, ToolOutput):
            await self._update(
                helpers.update_tool_call(
                    event.call_id, content=[helpers.tool_content(helpers.text_block(event.text))]
                )
            )
        elif isinstance(event, ToolFinished):
            self.running.discard(event.call_id)
            await self._update(
                helpers.update_tool_call(
                    event.call_id,
                    status=STATUS_OF.get(event.status, "failed"),  # type: ignore[arg-type]
                    raw_output={
                        "status": event.status,
                        "summary": event.summary,
                        **({"sandbox": event.sandbox} if event.sandbox else {}),
                    },
                )
            )
        elif isinstance(event, Decision) and event.auto:
            # the client asked nothing: say why the command ran (its own answers it knows)
            await self._update(helpers.update_agent_message_text(f"\n[{event.text}]\n"))
        elif isinstance(event, Notice):
            self.last_notice = event.message
            await self._update(helpers.update_agent_message_text(f"\n[{event.message}]\n"))

    async def read_text(self, path: Path) -> str | None:
        if path in self.overlay:
            return self.overlay[path]
        if self.reads:
            try:
                got = await self.client.read_text_file(session_id=self.session_id, path=str(path))
                return got.content
            except Exception:  # noqa: BLE001 - not open and not on disk, or the client failed: disk says
                log.debug("fs/read_text_file failed for %s", path, exc_info=True)
        return await super().read_text(path)

    async def apply_edit(
        self, path: Path, new_text: str | None, old_text: str | None
    ) -> EditOutcome:
        call = current_call.get()
        if call is not None:  # the edit, shown as a diff on its tool call
            await self._update(
                helpers.update_tool_call(
                    call[0],
                    content=[helpers.tool_diff_content(str(path), new_text or "", old_text)],
                    locations=[ToolCallLocation(path=str(path))],
                )
            )
        if not self.writes or new_text is None:  # a deletion has no fs method: ndomo does it
            return await super().apply_edit(path, new_text, old_text)
        current = await self.read_text(path)
        if old_text is not None and current != old_text:
            return EditOutcome(applied=False, reason=f"{path.name} changed since it was read")
        try:
            await self.client.write_text_file(
                session_id=self.session_id, path=str(path), content=new_text
            )
        except (RequestError, OSError) as exc:  # the editor refused, or is gone
            return EditOutcome(applied=False, reason=f"the editor did not write {path}: {exc}")
        self.overlay.pop(path, None)
        return EditOutcome(applied=True)

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice:
        call = current_call.get()
        call_id = call[0] if call else f"approval-{request.permission}"
        tool_call = ToolCallUpdate(
            tool_call_id=call_id,
            title=request.text(),
            status="pending",
            raw_input={"permission": request.permission, "subject": request.subject},
        )
        answer = await self.client.request_permission(
            session_id=self.session_id, tool_call=tool_call, options=permission_options(request)
        )
        outcome = answer.outcome
        if isinstance(outcome, AllowedOutcome):
            return CHOICE_OF_OPTION.get(outcome.option_id, "deny")
        return "deny"  # cancelled: the prompt turn is being cancelled
