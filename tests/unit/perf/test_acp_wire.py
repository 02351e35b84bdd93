"""The ACP bench's wire client (`tests/bench/acp_turns.py`, its judged rows) drives a real
`ndomo acp` as the SDK's client side does: the same turn streams the script's text through
both, and the model gets the same request. A client that skipped the agent's chunks or
timed something else would make the rows meaningless."""

from __future__ import annotations

from pathlib import Path

from tests.bench.acp_turns import _sdk, _wire
from tests.bench.common import without_config
from tests.bench.fake_proc import FakeProc
from tests.trusting import trust


async def test_the_wire_client_streams_what_the_sdk_client_streams(tmp_path: Path):
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    trust(ws, data_home=data)
    root = str(ws.resolve())
    answer = {"text": "one two three · ünï", "chunks": 3}
    got, bodies = {}, {}
    with FakeProc() as fake:
        env = without_config()
        env["NDOMO_BASE_URL"] = fake.url
        env["XDG_DATA_HOME"], env["XDG_CONFIG_HOME"] = str(data), str(tmp_path / "config")
        for name, client in (("wire", _wire), ("sdk", _sdk)):
            async with client(env, root) as agent:
                sid = await agent.new_session(root)
                fake.push(answer)
                got[name] = await agent.turn(sid, "say it")
                bodies[name] = fake.last_chat_body()
    for first, total, text in got.values():
        assert text == answer["text"]
        assert 0 < first <= total
    assert bodies["wire"]["messages"] == bodies["sdk"]["messages"]
