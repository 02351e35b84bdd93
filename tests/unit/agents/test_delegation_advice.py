"""Agent files recommend only delegations that can work under the fence.

A sub-agent runs in its caller's mode (design §3), and web access is brainstorming-only, so a
sub-agent whose work is the web (it may fetch and may not edit, write or run anything) is
useful only to a caller that runs in brainstorming. Every delegation an agent's prompt
recommends is checked against the modes that agent runs in, and against its own `task`
permission.
"""

from __future__ import annotations

import re
from pathlib import Path

from ndomo.agents.loader import load_agents
from ndomo.agents.permissions import task_allowed

# The modes each delegating agent runs in (design §3, docs/workflows.md): the foreman plans in
# discussion and researches in brainstorming; the craftsman builds in autopilot.
CALLER_MODES = {"foreman": {"discussion", "brainstorming"}, "craftsman": {"autopilot"}}
ALL_MODES = {"discussion", "brainstorming", "autopilot"}
NEGATIVE = re.compile(r"\b(never|not|no|don't|deny|denied)\b", re.IGNORECASE)


def needed_modes(agent) -> set[str]:
    """Modes where the sub-agent can do its work."""
    p = agent.permission
    web_only = p.webfetch == "allow" and p.edit == "deny" and p.write == "deny" and p.bash == "deny"
    return {"brainstorming"} if web_only else ALL_MODES


def recommended(agent, names: set[str]) -> set[str]:
    """Sub-agents the prompt recommends delegating to: named in a section about delegation
    (its text says "delegate"), in a sentence that is not a prohibition, outside "Never" sections."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in agent.prompt.splitlines():
        if line.startswith("#"):
            sections.append((line, []))
        else:
            sections[-1][1].append(line)
    found: set[str] = set()
    for heading, lines in sections:
        if re.search(r"\bnever\b", heading, re.IGNORECASE) or not re.search(
            r"delegat", "\n".join(lines), re.I
        ):
            continue
        for line in (
            part for ln in lines for part in re.split(r"(?<=[.;])\s+", ln)
        ):  # sentence by sentence
            if NEGATIVE.search(line):
                continue
            for n in names - {agent.name}:
                if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", line):
                    found.add(n)
    return found


def test_every_recommended_delegation_can_work_in_the_callers_modes():
    agents = load_agents(Path("/nonexistent-workspace")).agents
    names = {n for n, a in agents.items() if a.is_subagent}  # what `task` can reach
    delegating = {n for n, a in agents.items() if recommended(a, names) and a.is_primary}
    assert delegating <= set(CALLER_MODES), (
        f"classify the modes of {delegating - set(CALLER_MODES)}"
    )
    problems = []
    for caller in sorted(delegating):
        a = agents[caller]
        assert a.default_mode in CALLER_MODES[caller]
        for target in sorted(recommended(a, names)):
            if not CALLER_MODES[caller] & needed_modes(agents[target]):
                problems.append(
                    f"{caller} recommends {target}, which needs {sorted(needed_modes(agents[target]))}"
                    f" but {caller} runs in {sorted(CALLER_MODES[caller])}"
                )
            if task_allowed(a.permission, target) == "deny":
                problems.append(f"{caller} recommends {target} but its task permission denies it")
    assert problems == [], problems


def test_the_checker_sees_the_known_recommendations():
    agents = load_agents(Path("/nonexistent-workspace")).agents
    names = {n for n, a in agents.items() if a.is_subagent}
    assert {"scout", "scribe", "sage", "guild"} <= recommended(agents["foreman"], names)
    craftsman = recommended(agents["craftsman"], names)
    assert {"scout", "python-smith", "painter", "chronicler"} <= craftsman
    assert "scribe" not in craftsman and "guild" not in craftsman and "sage" not in craftsman
    assert needed_modes(agents["scribe"]) == {"brainstorming"}
