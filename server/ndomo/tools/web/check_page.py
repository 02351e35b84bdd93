"""The `check_page` tool: does the page we are building load and contain what it should?

Local pages only (127.0.0.1/localhost URLs, or a workspace HTML file) so it cannot be
used to browse the web outside brainstorming.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, ToolResult, tool
from ndomo.schema import Schema
from ndomo.security.paths import PathRefused, relative_to_workspace, resolve_in_workspace
from ndomo.security.sandbox import SandboxRefused, prepare
from ndomo.tools.web import browser, html_text
from ndomo.tools.web.fetch import FetchError, fetch

EXCERPT_CHARS = 1500
MAX_SELECTORS = 30
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class CheckPageParams(Schema):
    model_config = ConfigDict(extra="forbid")
    url_or_path: str = Field(min_length=1, description="localhost URL or HTML file")
    expect: list[str] = Field(
        default_factory=list, max_length=MAX_SELECTORS, description="CSS selectors to find"
    )
    missing: list[str] = Field(
        default_factory=list, max_length=MAX_SELECTORS, description="CSS selectors not to find"
    )


class SelectorCheck(Schema):
    selector: str
    want: str  # "present" or "absent"
    count: int | None  # None: invalid selector
    ok: bool
    error: str | None = None


class PageReport(Schema):
    target: str
    engine: str  # "http", "file", "chromium"
    status: int | None
    title: str
    excerpt: str
    checks: list[SelectorCheck]
    console_errors: list[str] = []
    passed: bool


def _is_url(raw: str) -> bool:
    return "://" in raw or raw.lower().startswith(
        ("http:", "https:", "file:", "data:", "javascript:")
    )


def local_url(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme.lower() not in ("http", "https"):
        raise ToolError(
            f"check_page takes http(s) URLs or workspace files, not {parts.scheme or 'this'}: URLs"
        )
    host = (parts.hostname or "").lower()
    if host not in LOCAL_HOSTS and not host.endswith(".localhost"):
        raise ToolError(
            f"check_page only checks local pages (127.0.0.1 / localhost), not {host or raw!r}; "
            "use web_fetch in brainstorming mode to read the web"
        )
    return raw


def _local_hop(target: str) -> None:
    """The local-only rule applied to a redirect target (fetch refuses the hop on FetchError)."""
    try:
        local_url(target)
    except ToolError as exc:
        raise FetchError(str(exc)) from None


def _read_paths(p: CheckPageParams) -> list[str]:
    return [] if _is_url(p.url_or_path) else [p.url_or_path]


def run_checks(
    html: str, expect: list[str], missing: list[str]
) -> tuple[str, str, list[SelectorCheck]]:
    from soupsieve import SelectorSyntaxError  # with bs4, when a page is read (start-up)

    soup = html_text.parse(html)
    checks = []
    for want, sels in (("present", expect), ("absent", missing)):
        for sel in sels:
            try:
                count = len(soup.select(sel))
            # soupsieve (beautifulsoup4's selector engine) refuses bad syntax and
            # pseudo-elements it cannot match (NotImplementedError)
            except (SelectorSyntaxError, NotImplementedError) as exc:
                checks.append(
                    SelectorCheck(
                        selector=sel,
                        want=want,
                        count=None,
                        ok=False,
                        error=f"invalid CSS selector: {str(exc).splitlines()[0]}",
                    )
                )
                continue
            ok = count > 0 if want == "present" else count == 0
            checks.append(SelectorCheck(selector=sel, want=want, count=count, ok=ok))
    text = html_text.to_text(soup)
    excerpt = text[:EXCERPT_CHARS] + (" …" if len(text) > EXCERPT_CHARS else "")
    return html_text.title_of(soup), excerpt, checks


@tool(
    "check_page",
    CheckPageParams,
    description="Check a local page or HTML file: status, title, text, selectors.",
    risk="read",
    read_paths=_read_paths,
)
async def check_page(ctx: TurnContext, p: CheckPageParams) -> ToolResult:
    chromium = browser.find_chromium()
    status: int | None = None
    errors: list[str] = []
    if _is_url(p.url_or_path):
        url = local_url(p.url_or_path)
        try:
            fetched = await fetch(url, check_hop=_local_hop)  # every redirect hop stays local
        except FetchError as exc:
            raise ToolError(str(exc)) from None
        status, html, target, engine = fetched.status, fetched.text(), fetched.url, "http"
        browse_url = local_url(fetched.url)  # the browser starts at the checked final URL
    else:
        try:
            path = resolve_in_workspace(p.url_or_path, ctx.roots)
        except PathRefused as exc:
            raise ToolError(exc.message) from None
        text = await ctx.host.read_text(path)
        if text is None:
            raise ToolError(f"{p.url_or_path} does not exist")
        html, target, engine = text, relative_to_workspace(path, ctx.roots), "file"
        browse_url = path.as_uri()
    notes: list[str] = []
    if chromium:
        try:
            page, notes = await _in_browser(ctx, chromium, browse_url)
            html, errors, engine = page.dom or html, page.console_errors, "chromium"
        except (TimeoutError, OSError, SandboxRefused) as exc:
            errors = [f"(chromium could not run: {exc}; checked the {engine} HTML instead)"]
    title, excerpt, checks = await asyncio.to_thread(run_checks, html, p.expect, p.missing)
    passed = (
        all(c.ok for c in checks)
        and (status is None or status < 400)
        and not (engine == "chromium" and errors)
    )
    report = PageReport(
        target=target,
        engine=engine,
        status=status,
        title=title,
        excerpt=excerpt,
        checks=checks,
        console_errors=errors,
        passed=passed,
    )
    return ToolResult(
        ok=passed,
        content="\n".join([_render(report), *notes]),
        status="done" if passed else "failed",
        data=report.model_dump(),
    )


async def _in_browser(
    ctx: TurnContext, chromium: str, url: str
) -> tuple[browser.BrowserPage, list[str]]:
    """Chromium inside bubblewrap with no network; an http URL's one port is relayed in."""
    box = await prepare(ctx.app.settings, ctx.app.root, network=False)
    if not box.sandboxed or box.state.backend != "bubblewrap":
        raise OSError(f"it runs only inside bubblewrap ({box.state.label()})")
    port = None
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if port < 1024:
            raise OSError(f"port {port} cannot be relayed into the sandbox (use a port >= 1024)")
        # inside, only 127.0.0.1:port answers; `localhost` may resolve to ::1 there
        url = parts._replace(netloc=f"127.0.0.1:{port}").geturl()
    try:
        page = await browser.render(chromium, url, prefix=box.prefix, relay_port=port)
    finally:
        notes = await asyncio.shield(box.close())
    return page, notes


def _render(r: PageReport) -> str:
    lines = [f"{'PASS' if r.passed else 'FAIL'} {r.target} (engine: {r.engine})"]
    if r.status is not None:
        lines.append(f"status: {r.status}")
    lines.append(f"title: {r.title or '(none)'}")
    for c in r.checks:
        if c.error:
            lines.append(f"✗ {c.selector}: {c.error}")
        else:
            mark = "✓" if c.ok else "✗"
            lines.append(f"{mark} {c.selector}: expected {c.want}, found {c.count}")
    if r.console_errors:
        lines.append("console errors:")
        lines += [f"  {e}" for e in r.console_errors]
    elif r.engine != "chromium":
        lines.append(
            "(no browser installed: scripts did not run and console errors were not checked)"
        )
    lines.append("text:\n" + (r.excerpt or "(no text)"))
    return "\n".join(lines)
