"""The `web_fetch` tool (brainstorming only): a web page as readable text, within caps."""

from __future__ import annotations

import asyncio

from pydantic import ConfigDict, Field

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, ToolResult, tool
from ndomo.schema import Schema
from ndomo.tools.web import html_text
from ndomo.tools.web.fetch import MAX_BYTES, Fetched, FetchError, fetch

MAX_CHARS = 20_000
_TEXTUAL = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
)


class WebFetchParams(Schema):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1)


def cap_text(text: str, limit: int = MAX_CHARS) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _is_html(f: Fetched) -> bool:
    if f.content_type in ("text/html", "application/xhtml+xml"):
        return True
    return not f.content_type and f.body.lstrip()[:15].lower().startswith(
        (b"<!doctype html", b"<html")
    )


def render(f: Fetched) -> tuple[str, str]:
    """(title, text) for a fetched body; HTML is parsed off the event loop by the caller."""
    if _is_html(f):
        soup = html_text.parse(f.text())
        return html_text.title_of(soup), html_text.to_text(soup)
    return "", f.text()


@tool(
    "web_fetch",
    WebFetchParams,
    description=(f"Fetch a web page as text (≤{MAX_CHARS} chars)."),
    risk="network",
    permission="webfetch",
)
async def web_fetch(ctx: TurnContext, p: WebFetchParams) -> ToolResult:
    try:
        f = await fetch(p.url)
    except FetchError as exc:
        raise ToolError(str(exc)) from None
    ctype = f.content_type or "unknown type"
    if f.content_type and not f.content_type.startswith(_TEXTUAL) and not _is_html(f):
        return ToolResult.failed(
            f"{f.url} is {ctype} ({len(f.body)} bytes): not text, nothing to show"
        )
    title, text = await asyncio.to_thread(render, f)
    text, dropped = cap_text(text)
    head = [f"URL: {f.url}", f"Status: {f.status} · {ctype}"]
    if f.redirects:
        head.append(f"Redirected from: {' → '.join(f.redirects)}")
    if title:
        head.append(f"Title: {title}")
    notes = []
    if f.cut:
        notes.append(
            f"download stopped at {MAX_BYTES // (1024 * 1024)} MB; the rest of the page was not read"
        )
    if dropped:
        notes.append(f"text cut at {MAX_CHARS} characters; {dropped} more not shown")
    body = "\n".join(head) + "\n\n" + (text or "(no text)") + "".join(f"\n\n[{n}]" for n in notes)
    ok = f.status < 400
    data = {
        "url": f.url,
        "status": f.status,
        "content_type": ctype,
        "cut": f.cut,
        "chars_dropped": dropped,
    }
    return ToolResult(ok=ok, content=body, status="done" if ok else "failed", data=data)
