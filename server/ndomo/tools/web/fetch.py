"""Bounded HTTP GET: http/https only, redirects re-checked hop by hop, a download cap and a
total time cap, errors as readable text."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from ndomo.schema import Schema

MAX_BYTES = 2 * 1024 * 1024
TIME_CAP_S = 30.0
MAX_REDIRECTS = 5
USER_AGENT = "ndomo/0.1 (+https://github.com/ndomo; research fetch)"
_REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(Exception):
    """Readable reason a URL could not be fetched."""


class Fetched(Schema):
    url: str  # final URL after redirects
    status: int
    content_type: str
    charset: str | None
    body: bytes
    cut: bool  # stopped at MAX_BYTES
    redirects: list[str] = []

    def text(self) -> str:
        return self.body.decode(self.charset or "utf-8", errors="replace")


def check_url(url: str) -> str:
    """The URL if it is absolute http(s) with a host; a FetchError saying why otherwise."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise FetchError(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"'{scheme}:'" if scheme else "no scheme"
        raise FetchError(f"only http and https URLs can be fetched ({shown} given)")
    if not parts.hostname:
        raise FetchError(f"URL has no host: {url!r}")
    if parts.username or parts.password:
        raise FetchError("URLs with credentials (user:password@) are not fetched")
    return url.strip()


async def fetch(
    url: str,
    *,
    max_bytes: int = MAX_BYTES,
    time_cap_s: float = TIME_CAP_S,
    check_hop: Callable[[str], object] | None = None,
) -> Fetched:
    """GET `url`, following redirects by hand; `check_hop` (raising FetchError to refuse) is
    applied to every redirect target as well, so a caller's URL rule holds on each hop."""
    url = check_url(url)
    try:
        async with asyncio.timeout(time_cap_s):
            return await _fetch(url, max_bytes, check_hop)
    except TimeoutError:
        raise FetchError(f"gave up on {url} after {time_cap_s:g}s") from None


async def _fetch(
    url: str, max_bytes: int, check_hop: Callable[[str], object] | None = None
) -> Fetched:
    import httpx  # when a page is fetched, not when the tool is registered (start-up)

    hops: list[str] = []
    timeout = httpx.Timeout(15.0, connect=10.0)
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=timeout, headers={"User-Agent": USER_AGENT}, trust_env=False
    ) as client:
        while True:
            try:
                async with client.stream("GET", url) as resp:
                    if resp.status_code in _REDIRECTS and "location" in resp.headers:
                        target = urljoin(url, resp.headers["location"])
                        if len(hops) >= MAX_REDIRECTS:
                            raise FetchError(
                                f"more than {MAX_REDIRECTS} redirects (last: {url} → {target})"
                            )
                        try:
                            target = check_url(target)
                            if check_hop is not None:
                                check_hop(target)
                        except FetchError as exc:
                            raise FetchError(f"redirect from {url} refused: {exc}") from None
                        hops.append(url)
                        url = target
                        continue
                    body = bytearray()
                    cut = False
                    async for chunk in resp.aiter_bytes():
                        room = max_bytes - len(body)
                        if len(chunk) > room:
                            body += chunk[:room]
                            cut = True
                            break
                        body += chunk
                    ctype = resp.headers.get("content-type", "")
                    return Fetched(
                        url=str(resp.url),
                        status=resp.status_code,
                        content_type=ctype.split(";")[0].strip().lower(),
                        charset=resp.charset_encoding,
                        body=bytes(body),
                        cut=cut,
                        redirects=hops,
                    )
            except httpx.TimeoutException:
                raise FetchError(f"{url} did not answer in time") from None
            except httpx.HTTPError as exc:
                raise FetchError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from None
