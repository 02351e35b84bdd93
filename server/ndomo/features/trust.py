"""`trust.get` / `trust.set`: the editors' side of workspace trust (LSP commands
`ndomo.trust.get` / `ndomo.trust.set`; the CLI has `ndomo trust`, terminal/trust.py).

`trust.get` → `{"root", "state": "trusted" | "untrusted" | "unknown", "configures": [...]}`
for the routed folder; `trust.set {"trusted": bool}` records the user's answer in the
trust record (ndomo.trust) and reloads that folder's App, so its config, agents, reflexes
and instructions apply (or stop applying) at once. Confirmations of project settings that
need one (a key for a project host, `sandbox: off` …) are given in `ndomo trust` only.
"""

from __future__ import annotations

import asyncio

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, NoParams, action
from ndomo.app import App
from ndomo.schema import Schema
from ndomo.trust import TrustError, TrustState, configures, set_trust


class TrustInfo(Schema):
    root: str
    state: TrustState
    configures: list[str]
    note: str = ""  # why it is untrusted whatever the record says (Restricted Mode, bad record)


class TrustSetParams(Schema):
    model_config = ConfigDict(extra="forbid")
    trusted: bool = Field(description="The user's answer: trust this folder or not.")


async def trust_info(app: App) -> TrustInfo:
    if not app.has_root:
        return TrustInfo(root="", state="unknown", configures=[], note="no workspace folder")
    found = await asyncio.to_thread(configures, app.root, app.settings, app.db_elsewhere)
    return TrustInfo(
        root=str(app.root), state=app.trust.state, configures=found, note=app.trust.note
    )


@action(
    "trust.get",
    NoParams,
    summary="This folder's trust and what it would configure",
    surfaces=("lsp",),
)
async def trust_get(app: App, params: NoParams) -> TrustInfo:
    return await trust_info(app)


@action(
    "trust.set",
    TrustSetParams,
    summary="Record whether the user trusts this folder, and apply it",
    surfaces=("lsp",),
)
async def trust_set(app: App, params: TrustSetParams) -> TrustInfo:
    if not app.has_root:
        raise ActionError("no workspace folder to trust", kind="failed")
    try:
        await asyncio.to_thread(set_trust, app.root, params.trusted)
    except (TrustError, OSError) as exc:
        raise ActionError(str(exc), kind="failed") from None
    if app.reloader is None:
        return await trust_info(app)
    fresh = await app.reloader()
    return await trust_info(fresh)
