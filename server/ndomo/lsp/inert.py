"""Editor-facing text made inert: every `window/showMessage`, `window/showMessageRequest`,
`window/logMessage` and `$/progress` the server sends passes through `inert_params`
(hooked into the protocol, so no sender can forget it).

Message text shows controls, bidi and zero-width characters as visible escapes and has
markdown links and `command:` targets broken (VS Code renders both as clickable in a
toast); a log line keeps its text, controls escaped. See security.text.
"""

from __future__ import annotations

import copy
from typing import Any

from lsprotocol import types

from ndomo.security.text import for_message, one_line, strip_osc, visible


def _with(params: Any, **changes: Any) -> Any:
    """A copy with ``changes`` (the caller's object is left as it was)."""
    new = copy.copy(params)
    for name, value in changes.items():
        setattr(new, name, value)
    return new


def _progress_value(value: Any) -> Any:
    kinds = (types.WorkDoneProgressBegin, types.WorkDoneProgressReport, types.WorkDoneProgressEnd)
    if isinstance(value, kinds):
        changes: dict[str, Any] = {}
        if value.message is not None:
            changes["message"] = for_message(value.message)
        if isinstance(value, types.WorkDoneProgressBegin):
            changes["title"] = for_message(value.title)
        return _with(value, **changes) if changes else value
    return value


def inert_params(method: str, params: Any) -> Any:
    """``params`` of an outgoing message with its user-facing text made inert."""
    if params is None:
        return params
    if method == types.WINDOW_LOG_MESSAGE and isinstance(params, types.LogMessageParams):
        return _with(params, message=visible(strip_osc(params.message)))
    if method == types.WINDOW_SHOW_MESSAGE and isinstance(params, types.ShowMessageParams):
        return _with(params, message=for_message(params.message))
    if method == types.WINDOW_SHOW_MESSAGE_REQUEST and isinstance(
        params, types.ShowMessageRequestParams
    ):
        actions = [
            _with(a, title=inert_title(a.title)) for a in params.actions or []
        ] or params.actions
        return _with(params, message=for_message(params.message), actions=actions)
    if method == types.PROGRESS and isinstance(params, types.ProgressParams):
        return _with(params, value=_progress_value(params.value))
    return params


def inert_title(title: str) -> str:
    """A button's title: one line, controls shown, links inert, capped."""
    return for_message(one_line(title, 80))
