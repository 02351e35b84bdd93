"""Saved permission answers, listed and revoked by the user (editor, CLI, slash)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, action
from ndomo.app import App
from ndomo.schema import Schema
from ndomo.store.errors import StoreError
from ndomo.store.models import Approval


class ApprovalsListParams(Schema):
    model_config = ConfigDict(extra="forbid")
    session: str | None = Field(
        default=None, description="Also list this session's approvals (the current one if unset)."
    )


class ApprovalRevokeParams(Schema):
    model_config = ConfigDict(extra="forbid")
    id: int = Field(ge=1, description="Approval id from approvals.list")


@action(
    "approvals.list",
    ApprovalsListParams,
    summary="List saved approvals: the project's and the session's",
    read_only=True,
)
async def approvals_list(app: App, p: ApprovalsListParams) -> list[Approval]:
    from ndomo.runtime.runtime import Runtime

    session = p.session or (await Runtime.of(app).session()).id
    return await (await app.store()).list_approvals(session)


@action(
    "approvals.revoke",
    ApprovalRevokeParams,
    summary="Forget a saved approval: it will be asked again",
)
async def approvals_revoke(app: App, p: ApprovalRevokeParams) -> dict:
    try:
        await (await app.store()).revoke_approval(p.id)
    except StoreError as exc:
        raise ActionError(exc.message, field="id", kind=exc.kind) from None
    return {"revoked": p.id}
