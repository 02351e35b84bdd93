"""Turns against the raw HTTP stream of the same fake model (in its own process).

- first token: `ndomo.turn` sent → first `text` in `ndomo/turn/event`, against a plain
  httpx streamed request → first content chunk, paired round by round (order alternates);
- a 50-chunk turn: `ndomo.turn` sent → its result, against the raw stream's whole time;
- per-turn cost over a session: ndomo's own time per turn (turn wall time minus the raw
  stream's time of the same answer, measured in the same iteration) at turns 91–110 of
  one session against turns 1–20 (history trimmed to its budget as configured).

Every turn's answer is checked: status done and the streamed text equal to the script's.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.bench.common import Result
from tests.bench.fake_proc import FakeProc, RawStream
from tests.bench.lsp_client import NDOMO, start, stop

ROUNDS = 15  # first token / whole turn pairs
SESSION = 110  # turns in the session-growth run
EARLY, LATE = range(0, 20), range(90, 110)
TEXT50 = " ".join(f"w{i}" for i in range(50))
CHUNK_DELAY = 0.01  # a 50-chunk answer streams for ~0.5 s


class Turns:
    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.text: dict[int, list[str]] = {}
        self.sent = 0.0
        self.current: int | None = None

    def on_event(self, params: Any) -> None:
        def get(key: str) -> Any:
            return params.get(key) if isinstance(params, dict) else getattr(params, key, None)

        if get("kind") != "text":
            return
        tid = get("turn_id")
        if tid not in self.first:
            self.first[tid] = time.perf_counter() - self.sent
        self.text.setdefault(tid, []).append(get("text"))


async def _turn(client, rec: Turns, prompt: str) -> tuple[float, float, str]:
    """(first text event, whole turn) seconds and the streamed text; raises unless done."""
    before = set(rec.first)
    rec.sent = time.perf_counter()
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="ndomo.turn", arguments=[{"prompt": prompt}])
    )
    total = time.perf_counter() - rec.sent
    status = res.get("status") if isinstance(res, dict) else getattr(res, "status", None)
    if status != "done":
        raise RuntimeError(f"turn did not finish: {str(res)[:300]}")
    new = [t for t in rec.first if t not in before]
    if len(new) != 1:
        raise RuntimeError(f"expected the text of one turn, saw turns {new}")
    return rec.first[new[0]], total, "".join(rec.text[new[0]])


async def run(rounds: int = ROUNDS, session: int = SESSION) -> list[Result]:
    rec = Turns()
    step = {"text": TEXT50, "chunks": 50, "chunk_delay": CHUNK_DELAY}
    quick = {"text": "a short answer of a few words", "chunks": 5}
    with tempfile.TemporaryDirectory() as d, FakeProc() as fake:
        raw = RawStream(fake.url)
        client, _ = await start(
            NDOMO,
            Path(d),
            {"NDOMO_BASE_URL": fake.url},
            handlers={"ndomo/turn/event": rec.on_event},
        )
        try:
            fake.push(quick)  # warm-up: imports, agents, the model client
            await _turn(client, rec, "warm up")
            fake.push(quick)
            await raw.once()
            firsts, wholes = [], []
            for i in range(rounds):
                pair = []
                for who in ("raw", "ndomo") if i % 2 == 0 else ("ndomo", "raw"):
                    fake.push(step)
                    if who == "raw":
                        f, w, text = await raw.once()
                    else:
                        f, w, text = await _turn(client, rec, f"round {i}")
                    if text != TEXT50:
                        raise RuntimeError(f"{who} streamed {text[:80]!r}, not the scripted answer")
                    pair.append((who, f, w))
                got = dict((who, (f, w)) for who, f, w in pair)
                firsts.append((got["ndomo"][0], got["raw"][0]))
                wholes.append((got["ndomo"][1], got["raw"][1]))
            own = []
            for i in range(session):
                fake.push(quick)
                _, w_raw, _ = await raw.once()
                fake.push(quick)
                _, w, text = await _turn(client, rec, f"session turn {i}: " + "context " * 40)
                if text != quick["text"]:
                    raise RuntimeError(f"turn {i} streamed {text!r}")
                own.append(w - w_raw)
        finally:
            await stop(client)
            await raw.aclose()
    mine_first = statistics.median(f for f, _ in firsts) * 1000
    raw_first = statistics.median(r for _, r in firsts) * 1000
    whole_ratio = statistics.median(m / r for m, r in wholes)
    early = statistics.median(own[i] for i in EARLY) * 1000
    late = statistics.median(own[i] for i in LATE) * 1000
    return [
        Result(
            "turns",
            f"first token p50 (median of {rounds} pairs)",
            mine_first,
            raw_first,
            "ms",
            "≤ raw first chunk + 10 ms",
            mine_first <= raw_first + 10,
            {
                "ndomo_ms": [round(f * 1000, 1) for f, _ in firsts],
                "raw_ms": [round(r * 1000, 1) for _, r in firsts],
            },
        ),
        Result(
            "turns",
            f"50-chunk turn (median of {rounds} paired ratios)",
            statistics.median(m for m, _ in wholes) * 1000,
            statistics.median(r for _, r in wholes) * 1000,
            "ms",
            "paired ratio ≤ 1.05",
            whole_ratio <= 1.05,
            {"paired_ratio_median": round(whole_ratio, 3)},
        ),
        Result(
            "turns",
            "own time per turn, turns 91-110 vs 1-20",
            late,
            early,
            "ms",
            "≤ 1.1× turns 1-20",
            late <= 1.1 * early,
            {"own_ms": [round(x * 1000, 1) for x in own]},
        ),
    ]
