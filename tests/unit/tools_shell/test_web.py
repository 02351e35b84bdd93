from __future__ import annotations

import pytest

from ndomo.tools.web.fetch import FetchError, check_url

PAGE = b"""<!doctype html><html><head><title>Test Page</title><style>.x{color:red}</style>
<script>var secret = "do-not-show";</script></head>
<body><nav><a href="https://example.org/docs">Docs</a></nav>
<h1>Main heading</h1><p>First   paragraph
with text.</p><ul><li>one</li><li>two</li></ul>
<div id="app" class="card big"><button class="primary">Go</button></div></body></html>"""


@pytest.fixture
def site(web):
    html = {"Content-Type": "text/html; charset=utf-8"}
    web.routes["/page"] = (200, html, PAGE)
    web.routes["/moved"] = (302, {"Location": "/page"}, b"")
    web.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    web.routes["/to-file"] = (302, {"Location": "file:///etc/passwd"}, b"")
    web.routes["/big"] = (200, {"Content-Type": "text/plain"}, b"a" * (3 * 1024 * 1024))
    web.routes["/img"] = (200, {"Content-Type": "image/png"}, b"\x89PNG....")
    web.routes["/gone"] = (404, html, b"<title>nope</title>")
    return web


async def test_web_fetch_only_in_brainstorming(make_ctx, site):
    for mode in ("discussion", "autopilot"):
        ctx = await make_ctx(mode)
        assert "web_fetch" not in {t.name for t in ctx.tools}
        res = await ctx.runtime.plugins.tools.execute(ctx, "web_fetch", {"url": site.url + "/page"})
        assert res.status == "refused" and "switch to brainstorming" in res.content
    ctx = await make_ctx("brainstorming")
    assert "web_fetch" in {t.name for t in ctx.tools}


async def test_web_fetch_html_to_text(make_ctx, site):
    ctx = await make_ctx("brainstorming")
    res = await ctx.runtime.plugins.tools.execute(ctx, "web_fetch", {"url": site.url + "/moved"})
    assert res.ok, res.content
    text = res.content
    assert "Title: Test Page" in text and "Redirected from: " + site.url + "/moved" in text
    assert "# Main heading" in text and "First paragraph with text." in text
    assert "- one" in text and "- two" in text and "Docs (https://example.org/docs)" in text
    assert "do-not-show" not in text and "color:red" not in text


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.org/x",
        "data:text/plain,hi",
        "javascript:alert(1)",
        "/relative",
    ],
)
async def test_web_fetch_refuses_other_schemes(make_ctx, url):
    ctx = await make_ctx("brainstorming")
    res = await ctx.runtime.plugins.tools.execute(ctx, "web_fetch", {"url": url})
    assert res.status == "failed" and "only http and https" in res.content


async def test_web_fetch_caps_and_errors(make_ctx, site):
    ctx = await make_ctx("brainstorming")
    run = ctx.runtime.plugins.tools.execute
    big = await run(ctx, "web_fetch", {"url": site.url + "/big"})
    assert big.data["cut"] and "download stopped at 2 MB" in big.content
    assert "text cut at 20000 characters" in big.content and len(big.content) < 21_000
    assert (
        "more than 5 redirects"
        in (await run(ctx, "web_fetch", {"url": site.url + "/loop"})).content
    )
    refused = await run(ctx, "web_fetch", {"url": site.url + "/to-file"})
    assert "redirect from" in refused.content and "only http and https" in refused.content
    img = await run(ctx, "web_fetch", {"url": site.url + "/img"})
    assert img.status == "failed" and "image/png" in img.content and "not text" in img.content
    gone = await run(ctx, "web_fetch", {"url": site.url + "/gone"})
    assert gone.status == "failed" and "Status: 404" in gone.content
    closed = await run(ctx, "web_fetch", {"url": "http://127.0.0.1:1/"})
    assert closed.status == "failed" and "could not fetch" in closed.content


def test_check_url_refuses_credentials():
    with pytest.raises(FetchError, match="credentials"):
        check_url("http://user:pw@127.0.0.1/")


async def test_check_page_local_url(make_ctx, site, monkeypatch):
    monkeypatch.setattr("ndomo.tools.web.browser.find_chromium", lambda: None)
    ctx = await make_ctx("discussion")  # every mode
    res = await ctx.runtime.plugins.tools.execute(
        ctx,
        "check_page",
        {
            "url_or_path": site.url + "/page",
            "expect": ["#app .primary", "h1", "li"],
            "missing": [".error", "#login"],
        },
    )
    assert res.ok, res.content
    assert (
        res.data["engine"] == "http"
        and res.data["status"] == 200
        and res.data["title"] == "Test Page"
    )
    assert (
        res.content.startswith("PASS")
        and "✓ #app .primary: expected present, found 1" in res.content
    )
    bad = await ctx.runtime.plugins.tools.execute(
        ctx,
        "check_page",
        {
            "url_or_path": site.url + "/page",
            "expect": [".missing-thing", "div[["],
            "missing": ["li"],
        },
    )
    assert not bad.ok and bad.content.startswith("FAIL")
    assert "✗ .missing-thing: expected present, found 0" in bad.content
    assert "✗ li: expected absent, found 2" in bad.content
    assert "invalid CSS selector" in bad.content


async def test_check_page_workspace_file_and_refusals(make_ctx, tmp_path, monkeypatch):
    monkeypatch.setattr("ndomo.tools.web.browser.find_chromium", lambda: None)
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "index.html").write_text("<title>Local</title><main class='hero'>Hi</main>")
    ctx = await make_ctx("brainstorming")
    run = ctx.runtime.plugins.tools.execute
    res = await run(
        ctx,
        "check_page",
        {"url_or_path": "web/index.html", "expect": ["main.hero"], "missing": ["nav"]},
    )
    assert res.ok and res.data["engine"] == "file" and res.data["target"] == "web/index.html"
    assert res.data["status"] is None and "Hi" in res.content
    remote = await run(ctx, "check_page", {"url_or_path": "https://example.org/"})
    assert remote.status == "failed" and "only checks local pages" in remote.content
    outside = await run(ctx, "check_page", {"url_or_path": "../../etc/passwd"})
    assert outside.status == "failed" and "escapes the workspace" in outside.content
    absent = await run(ctx, "check_page", {"url_or_path": "web/none.html"})
    assert absent.status == "failed" and "does not exist" in absent.content


@pytest.mark.parametrize(
    "location",
    [
        "http://0x7f000001:{port}/page",
        "http://2130706433:{port}/page",
        "https://example.org/",
        "http://127.0.0.1.nip.io:{port}/page",
    ],
)
async def test_check_page_applies_the_local_rule_to_every_redirect_hop(
    make_ctx, site, monkeypatch, location
):
    monkeypatch.setattr("ndomo.tools.web.browser.find_chromium", lambda: None)
    port = site.server_address[1]
    site.routes["/away"] = (302, {"Location": location.format(port=port)}, b"")
    site.routes["/two-hops"] = (302, {"Location": "/away"}, b"")
    ctx = await make_ctx("autopilot")
    direct = await ctx.runtime.plugins.tools.execute(
        ctx, "check_page", {"url_or_path": location.format(port=port)}
    )
    assert not direct.ok and "only checks local pages" in direct.content
    for start in ("/away", "/two-hops"):
        res = await ctx.runtime.plugins.tools.execute(
            ctx, "check_page", {"url_or_path": site.url + start}
        )
        assert (
            not res.ok
            and "redirect from" in res.content
            and "only checks local pages" in res.content
        ), res.content
    local = await ctx.runtime.plugins.tools.execute(
        ctx, "check_page", {"url_or_path": site.url + "/moved"}
    )
    assert local.ok and local.data["title"] == "Test Page"
