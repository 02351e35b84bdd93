"""Project instructions: read into the system prompt under a cap, shown by health, switchable off."""

from __future__ import annotations

from ndomo.features.health import HealthParams, health
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.plugins import build_plugins
from ndomo.runtime.runtime import Runtime
from ndomo.terminal.cli import main
from tests.trusting import trust


def system_prompt(fake, n=-1):
    return fake.chat_requests()[n]["body"]["messages"][0]["content"]


async def test_instruction_files_go_into_the_system_prompt_in_order(app, fake):
    (app.root / "AGENTS.md").write_text("Use tabs, never spaces.\n")
    (app.root / ".ndomo").mkdir(exist_ok=True)
    (app.root / ".ndomo" / "instructions.md").write_text("Tests live in t/.\n")
    (app.root / "CLAUDE.md").write_text("Answer in French.\n")
    await Runtime(app, build_plugins()).run(TurnRequest(prompt="hi"))
    prompt = system_prompt(fake)
    assert "### AGENTS.md\nUse tabs, never spaces." in prompt
    assert (
        prompt.index("Use tabs")
        < prompt.index("Tests live in t/.")
        < prompt.index("Answer in French.")
    )


async def test_the_cap_cuts_and_says_so_and_health_shows_sizes(app, fake):
    app.settings.instructions.max_chars = 100
    (app.root / "AGENTS.md").write_text("A" * 80)
    (app.root / "CLAUDE.md").write_text("B" * 50)
    await Runtime(app, build_plugins()).run(TurnRequest(prompt="hi"))
    prompt = system_prompt(fake)
    assert "A" * 80 in prompt and "B" * 20 in prompt and "B" * 21 not in prompt
    assert "cut at the 100-character cap" in prompt
    report = await health(app, HealthParams(probe_model=False))
    files = {f.path: (f.chars, f.used, f.note) for f in report.instructions.files}
    assert files == {"AGENTS.md": (80, 80, ""), "CLAUDE.md": (50, 20, "truncated at the cap")}


async def test_off_switch_keeps_them_out(app, fake):
    app.settings.instructions.enabled = False
    (app.root / "AGENTS.md").write_text("SECRET-RULE-42")
    await Runtime(app, build_plugins()).run(TurnRequest(prompt="hi"))
    assert "SECRET-RULE-42" not in system_prompt(fake)
    report = await health(app, HealthParams(probe_model=False))
    assert report.instructions.enabled is False and report.instructions.files == []


async def test_a_link_out_of_the_workspace_is_skipped(app, fake, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "evil.md"
    outside.write_text("OUTSIDE-TEXT")
    (app.root / "AGENTS.md").symlink_to(outside)
    await Runtime(app, build_plugins()).run(TurnRequest(prompt="hi"))
    assert "OUTSIDE-TEXT" not in system_prompt(fake)
    report = await health(app, HealthParams(probe_model=False))
    assert report.instructions.files[0].note == "outside the workspace: skipped"


def test_health_on_the_command_line_lists_the_files(tmp_path, capsys):
    (tmp_path / "AGENTS.md").write_text("x" * 12)
    main(["health", "--no-probe-model", "--workspace", str(tmp_path)])
    out = capsys.readouterr().out  # a folder the user never trusted: listed, not read
    assert "instructions AGENTS.md (0 chars, folder not trusted: skipped)" in out
    assert "instructions: AGENTS.md" in out  # among what trusting would apply
    trust(tmp_path)
    main(["health", "--no-probe-model", "--workspace", str(tmp_path)])
    assert "instructions AGENTS.md (12 chars) (cap 16000)" in capsys.readouterr().out
    (tmp_path / ".ndomo").mkdir(exist_ok=True)
    (tmp_path / ".ndomo" / "config.yaml").write_text("instructions:\n  enabled: false\n")
    main(["health", "--no-probe-model", "--workspace", str(tmp_path)])
    assert "instructions off" in capsys.readouterr().out
