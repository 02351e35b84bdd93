"""`ndomo run` start-up: a process spawned → its chat request at the model server, and → its
first text on stdout, against `curl` sending ndomo's own request body to the same server.

`ndomo run` as users run it hands its turn to the resident process (ndomo.terminal.resident)
once an earlier run has started one: that is the judged row. The same command with
`NDOMO_RESIDENT=0` (every run in its own Python, as the first run of a session or a
machine without one) runs in the same rounds and is reported, with the floors beside it.
The resident runs from a folder of the bench's own and is stopped at the end; a handed-over
round is checked to be one (its process's CPU time is a client's, not a run's).

The fake model runs in its own process and stamps each request when its body has been read
(wall clock, comparable across processes). One warm-up run first: it stores the server's
capabilities, so the timed runs send no probes (`/v1/models`, `/props`), as a user's
second run within the freshness window. ndomo's sources are compiled first (as the start-up
bench does: with PYTHONDONTWRITEBYTECODE set, an editable install would compile every
module at each spawn). ROUNDS rounds, the order rotating; medians. Every
answer is checked. Target (issue 31): spawn → request ≤ 250 ms; the rest is reported.

Two Python floors run in the same rounds, sending the same body (`tests/bench/floor_client.py`):
the libraries ndomo is built on doing the least a run must (a YAML config validated by a
pydantic model, a SQLite row, the request streamed with httpx), and the standard library
alone (`urllib`). A third floor imports every library module the warm-up run imported
(its `-X importtime` list, ndomo's own modules left out, the collector held as ndomo holds
it) before doing what the first does: the least any `ndomo run` built on these libraries
could cost, whatever its own code did. A fourth is the third without pydantic (its own
packages left out of the list, the standard modules it pulled in kept; the config checked
by hand): the least a run could cost whose request path defined no pydantic model. They are
reported beside the target: what part of the spawn → request time is Python and ndomo's
libraries, and what part is ndomo's own.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.common import Result, env_for_server, resident_up, stop_resident
from tests.bench.fake_proc import FakeProc

FLOOR = Path(__file__).with_name("floor_client.py")

ROUNDS = 7
TARGET_MS = 250.0
ANSWER = {"text": "a short answer", "chunks": 3}
PYDANTIC = frozenset({"pydantic", "pydantic_core", "annotated_types", "typing_inspection"})


def without_pydantic(modules: list[str]) -> list[str]:
    """`modules` less pydantic and the packages only it brings (their top-level names)."""
    return [m for m in modules if m.split(".")[0] not in PYDANTIC]


def _imported(cmd: list[str], env: dict[str, str], cwd: str) -> list[str]:
    """The modules a run of `cmd` (with `-X importtime`) imported, in the order it printed
    them; the run is also the warm-up: capabilities stored, bytecode written."""
    done = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"warm-up exited {done.returncode}: {done.stderr.decode()[-400:]}")
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    ]
    if not names:
        raise RuntimeError("the warm-up printed no import times")
    return names


def _chat_at(fake: FakeProc, before: int) -> float:
    r = fake._http.get(fake.url.replace("/v1", "") + "/_fake/requests")
    chats = [x for x in r.json() if x["path"].endswith("/chat/completions")]
    if len(chats) != before + 1:
        raise RuntimeError(f"{len(chats) - before} chat requests, not 1")
    return float(chats[-1]["at"])


def _chats(fake: FakeProc) -> int:
    r = fake._http.get(fake.url.replace("/v1", "") + "/_fake/requests")
    return sum(1 for x in r.json() if x["path"].endswith("/chat/completions"))


HANDED_CPU_MS = 120.0  # a handed-over caller's CPU time is ~30 ms; a run in-process ~350


def _cpu_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def _timed(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, bytes]:
    """(spawn wall time, first stdout byte wall time, all stdout) of one process."""
    t0 = time.time()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, bufsize=0
    )  # unbuffered: the first byte read leaves the rest in the pipe for communicate()
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    t_first = time.time()
    rest, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {err.decode()[-400:]}")
    return t0, t_first, first + rest


async def run(rounds: int = ROUNDS) -> list[Result]:
    from tests.bench.startup import compile_ndomo

    compile_ndomo()  # bytecode next to the sources, as an installed package has it
    with (
        tempfile.TemporaryDirectory() as d,
        tempfile.TemporaryDirectory() as elsewhere,  # the floors' SQLite file: not in ndomo's folder
        FakeProc(args=("--props", "--n-ctx", "8192")) as fake,
    ):
        folder = Path(elsewhere) / "resident"
        env = env_for_server(
            {"NDOMO_BASE_URL": fake.url, "NDOMO_RESIDENT": "1", "NDOMO_RESIDENT_DIR": str(folder)}
        )
        in_process = {**env, "NDOMO_RESIDENT": "0"}
        ndomo = [sys.executable, "-m", "ndomo", "run", "--workspace", d, "say hi"]
        fake.push(ANSWER)
        imported = _imported([sys.executable, "-X", "importtime", *ndomo[1:]], in_process, d)
        body = fake.last_chat_body()
        fake.push(ANSWER)  # the run that starts the resident (a user's earlier run)
        subprocess.run(ndomo, env=env, cwd=d, capture_output=True, timeout=60, check=True)
        resident = resident_up(folder)
        modules_file = Path(elsewhere) / "modules.txt"
        libraries = [m for m in imported if m.split(".")[0] != "ndomo"]
        modules_file.write_text("\n".join(libraries))
        plain_file = Path(elsewhere) / "modules-no-pydantic.txt"
        plain = without_pydantic(libraries)
        plain_file.write_text("\n".join(plain))
        body_file = Path(d) / "body.json"
        body_file.write_text(json.dumps(body))
        curl = [
            "curl", "-sSN", "--fail", "-H", "content-type: application/json",
            "--data-binary", f"@{body_file}", f"{fake.url}/chat/completions",
        ]  # fmt: skip
        floor = [sys.executable, str(FLOOR)]
        cmds = {
            "ndomo": ndomo,
            "in-process": ndomo,
            "curl": curl,
            "libraries": [*floor, "libraries", str(body_file), fake.url, elsewhere],
            "stdlib": [*floor, "stdlib", str(body_file), fake.url, elsewhere],
            "everything": [
                *floor, "everything", str(body_file), fake.url, elsewhere, str(modules_file)
            ],
            "no-pydantic": [
                *floor, "no-pydantic", str(body_file), fake.url, elsewhere, str(plain_file)
            ],
        }  # fmt: skip
        sent: dict[str, list[float]] = {who: [] for who in cmds}
        text: dict[str, list[float]] = {who: [] for who in cmds}
        cpu: list[float] = []
        order = list(cmds)
        try:
            for i in range(rounds):
                for who in order[i % len(order) :] + order[: i % len(order)]:  # rotated
                    fake.push(ANSWER)
                    before = _chats(fake)
                    used = _cpu_ms()
                    t0, t_first, out = _timed(
                        cmds[who], in_process if who == "in-process" else env, d
                    )
                    at = _chat_at(fake, before)
                    if ANSWER["text"] not in (
                        _streamed(out.decode()) if who == "curl" else out.decode()
                    ):
                        raise RuntimeError(f"{who} printed {out[:200]!r}, not the answer")
                    if who == "ndomo":
                        cpu.append(_cpu_ms() - used)
                    sent[who].append((at - t0) * 1000)
                    text[who].append((t_first - t0) * 1000)
        finally:
            stop_resident(resident, env)
    if max(cpu) > HANDED_CPU_MS:
        raise RuntimeError(f"a round ran in-process, not in the resident (CPU ms: {cpu})")
    to_request = statistics.median(sent["ndomo"])
    cold = statistics.median(sent["in-process"])
    floors = [
        Result(
            "run",
            f"spawn → request: ndomo in-process vs {label} (median of {rounds})",
            cold,
            statistics.median(sent[who]),
            "ms",
            "report (the same body, the same rounds)",
            True,
            {f"{who}_ms": [round(x) for x in sent[who]]},
        )
        for who, label in (
            ("libraries", "Python + ndomo's libraries"),
            ("stdlib", "Python + urllib"),
            (
                "everything",
                f"Python + every library `ndomo run` imports ({len(libraries)} modules)",
            ),
            (
                "no-pydantic",
                f"Python + the same without pydantic ({len(plain)} modules, the config checked by hand)",
            ),
        )
    ]
    return [
        Result(
            "run",
            f"`ndomo run` spawn → chat request at the server, handed to the resident (median of {rounds})",
            to_request,
            statistics.median(sent["curl"]),
            "ms",
            f"≤ {TARGET_MS:.0f} ms (baseline: curl with ndomo's body)",
            to_request <= TARGET_MS,
            {
                "ndomo_ms": [round(x) for x in sent["ndomo"]],
                "curl_ms": [round(x) for x in sent["curl"]],
            },
        ),
        Result(
            "run",
            f"`ndomo run` spawn → first text on stdout (median of {rounds})",
            statistics.median(text["ndomo"]),
            statistics.median(text["curl"]),
            "ms",
            "report (curl: its first byte)",
            True,
        ),
        Result(
            "run",
            f"`ndomo run` spawn → chat request, in-process (NDOMO_RESIDENT=0) vs handed over (median of {rounds})",
            cold,
            to_request,
            "ms",
            "report (the first run, or none resident)",
            True,
            {
                "in_process_ms": [round(x) for x in sent["in-process"]],
                "handed_cpu_ms": [round(x) for x in cpu],
            },
        ),
        *floors,
    ]


def _streamed(sse: str) -> str:
    """The content of an SSE chat stream, joined."""
    parts = []
    for line in sse.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices") or []:
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)
