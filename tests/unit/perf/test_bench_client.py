"""The bench's LSP client reads ndomo's own methods as an editor does: their params are the
JSON's dicts (pygls's fallback would build a namedtuple class for every object in them), and
what lsprotocol knows is still structured by it."""

from __future__ import annotations

import json

from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage

from tests.bench.lsp_client import make_client


def _read(body: dict):
    protocol = make_client().protocol
    return json.loads(json.dumps(body), object_hook=protocol.structure_message)


def test_an_ndomo_notification_keeps_its_params_as_the_json_dicts():
    params = {"kind": "text", "turn_id": 3, "text": "hi", "usage": {"in": 1, "out": [{"a": 2}]}}
    got = _read({"jsonrpc": "2.0", "method": "ndomo/turn/event", "params": params})
    assert isinstance(got, JsonRPCNotification)
    assert got.method == "ndomo/turn/event"
    assert got.params == params
    assert type(got.params) is dict and type(got.params["usage"]["out"][0]) is dict


def test_an_ndomo_request_keeps_its_id_and_params():
    params = {"tool": "bash", "args": {"command": "ls"}}
    got = _read({"jsonrpc": "2.0", "id": 7, "method": "ndomo/approve", "params": params})
    assert isinstance(got, JsonRPCRequestMessage)
    assert (got.id, got.method, got.params) == (7, "ndomo/approve", params)


def test_a_method_lsprotocol_knows_is_still_typed():
    got = _read(
        {
            "jsonrpc": "2.0",
            "method": "$/progress",
            "params": {"token": "t", "value": {"kind": "end", "message": "done"}},
        }
    )
    assert isinstance(got, types.ProgressNotification)
    assert got.params.token == "t"


def test_the_handler_gets_the_dicts():
    seen = []
    client = make_client({"ndomo/status": seen.append})
    message = json.dumps(
        {"jsonrpc": "2.0", "method": "ndomo/status", "params": {"busy": True, "plan": {"id": 1}}}
    )
    client.protocol.handle_message(
        json.loads(message, object_hook=client.protocol.structure_message)
    )
    assert seen == [{"busy": True, "plan": {"id": 1}}]
