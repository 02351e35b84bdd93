"""The LSP transport's own lines about each message are not echoed back to the editor."""

from __future__ import annotations

import logging

from ndomo.lsp.logs import LogMessageHandler


class _Server:
    class life:  # noqa: N801 - mirrors the attribute the handler reads
        exiting = False


def test_transport_debug_lines_are_not_forwarded_but_ndomo_debug_is():
    h = LogMessageHandler(_Server(), level=logging.DEBUG)  # type: ignore[arg-type]  # the handler reads .life only before ready()
    for name in ("pygls.protocol.json_rpc", "ndomo.runtime"):
        h.handle(logging.LogRecord(name, logging.DEBUG, __file__, 1, "sent %s", ("x",), None))
    h.handle(
        logging.LogRecord(
            "pygls.protocol.json_rpc", logging.INFO, __file__, 1, "Sending data: {}", (), None
        )
    )
    h.handle(
        logging.LogRecord("pygls.server", logging.WARNING, __file__, 1, "broken pipe", (), None)
    )
    assert [text for _, text in h._early] == ["ndomo.runtime: sent x", "pygls.server: broken pipe"]
