"""Settings precedence and per-key fallback with a located report."""

from __future__ import annotations

from ndomo.config import Settings, load_settings


def write(tmp_path, text):
    cfg = tmp_path / ".ndomo" / "config.yaml"
    cfg.parent.mkdir(exist_ok=True)
    cfg.write_text(text, encoding="utf-8")
    return cfg


def test_defaults_without_any_source(tmp_path):
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings == Settings() and problems == []


def test_precedence_file_then_init_options_then_environment(tmp_path):
    write(tmp_path, "model:\n  name: from-file\n  base_url: http://file/v1\ndb: file.db\n")
    settings, problems = load_settings(
        tmp_path,
        {"model": {"name": "from-init"}, "default_agent": "craftsman"},
        env={"NDOMO_MODEL": "from-env", "NDOMO_API_KEY": "k"},
    )
    assert problems == []
    assert settings.model.name == "from-env"
    assert settings.model.base_url == "http://file/v1"  # deep merge keeps the file's sibling key
    assert settings.default_agent == "craftsman" and settings.db == "file.db"
    assert settings.model.resolved_api_key(env={}) == "k"


def test_bad_keys_fall_back_and_are_located(tmp_path):
    cfg = write(
        tmp_path,
        "model:\n"
        "  timeout_s: -3\n"  # line 1: out of range
        "  name: ok-model\n"
        "modes:\n"
        "  iteration_caps:\n"
        "    autopilot: many\n"  # line 5: not an int
        "  design_globs: [docs/**]\n"
        "shell: 12\n",  # line 7: not a mapping
    )
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings.model.name == "ok-model" and settings.model.timeout_s == 120.0
    assert settings.modes.design_globs == ["docs/**"]
    assert settings.shell == Settings().shell
    located = {p.key: (p.line, p.source) for p in problems}
    assert located["model.timeout_s"] == (1, str(cfg))
    assert located["modes.iteration_caps.autopilot"] == (5, str(cfg))
    assert located["shell"] == (7, str(cfg))
    # the key's span covers "timeout_s: -3"
    p = next(p for p in problems if p.key == "model.timeout_s")
    assert (p.column, p.end_column) == (2, len("  timeout_s: -3"))


def test_yaml_syntax_error_ignores_the_file_and_points_at_the_line(tmp_path):
    write(tmp_path, "model:\n  name: [unclosed\ndb: x.db\n")
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings == Settings()
    assert (
        len(problems) == 1
        and problems[0].key == "(file)"
        and "not valid YAML" in problems[0].message
    )
    assert problems[0].line is not None and problems[0].line >= 1


def test_file_that_is_not_a_mapping(tmp_path):
    write(tmp_path, "- just\n- a list\n")
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings == Settings() and problems[0].message == "must be a mapping of keys"


def test_bad_init_options_and_env_are_reported_without_lines(tmp_path):
    # (a mode's name is checked against the mode registry by the catalog, not here)
    settings, problems = load_settings(tmp_path, {"modes": {"default": 7}}, env={})
    assert settings.modes.default == "discussion"
    assert problems[0].source == "initializationOptions" and problems[0].key == "modes.default"
    assert problems[0].line is None
    settings, problems = load_settings(tmp_path, "not an object", env={})
    assert problems[0].source == "initializationOptions"
