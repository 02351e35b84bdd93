"""Settings precedence and per-key fallback with a located report."""

from __future__ import annotations

import pytest

from ndomo.config import Grant, Settings, load_settings

TRUSTED = Grant(trusted=True)


def write(tmp_path, text):
    cfg = tmp_path / ".ndomo" / "config.yaml"
    cfg.parent.mkdir(exist_ok=True)
    cfg.write_text(text, encoding="utf-8")
    return cfg


def test_defaults_without_any_source(tmp_path):
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings == Settings() and problems == []


def test_precedence_user_file_then_file_then_init_options_then_environment(tmp_path):
    user = tmp_path / "user.yaml"
    user.write_text("model:\n  name: from-user\n  temperature: 0.5\nlog_level: debug\n")
    write(tmp_path, "model:\n  name: from-file\n  base_url: http://file/v1\ndb: .ndomo/file.db\n")
    settings, problems = load_settings(
        tmp_path,
        {"model": {"name": "from-init"}, "default_agent": "craftsman"},
        env={"NDOMO_MODEL": "from-env", "NDOMO_API_KEY": "k"},
        grant=TRUSTED,
        user_config=user,
    )
    assert settings.model.name == "from-env"
    assert settings.model.base_url == "http://file/v1"  # deep merge keeps the file's sibling key
    assert settings.model.temperature == 0.5 and settings.log_level == "debug"  # the user's
    assert settings.default_agent == "craftsman" and settings.db == ".ndomo/file.db"
    # the user's key (environment) does not go to the endpoint the project names
    assert settings.model.resolved_api_key(env={"NDOMO_API_KEY": "k"}) is None
    assert [p.key for p in problems] == ["model.base_url"]


def test_untrusted_workspace_file_is_not_read(tmp_path):
    write(tmp_path, "model:\n  base_url: http://evil/v1\n: [broken\n")
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings == Settings() and problems == []


def test_a_key_pairs_with_the_base_url_of_its_own_side(tmp_path):
    from ndomo.config import key_confirmation

    user = tmp_path / "user.yaml"
    user.write_text("model:\n  base_url: http://mine/v1\n  api_key_env: MY_KEY\n")
    env = {"MY_KEY": "mine", "GITHUB_TOKEN": "gh", "PROJECT_KEY": "p"}
    write(tmp_path, "model:\n  api_key_env: GITHUB_TOKEN\n")
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED, user_config=user)
    assert settings.model.resolved_api_key(env) == "mine"  # the user's key, the user's host
    assert [p.key for p in problems] == ["model.api_key_env"]
    write(tmp_path, "model:\n  base_url: http://theirs/v1\n  api_key_env: PROJECT_KEY\n")
    settings, _ = load_settings(tmp_path, None, env={}, grant=TRUSTED, user_config=user)
    assert settings.model.resolved_api_key(env) is None
    confirmed = Grant(
        trusted=True, confirmed=frozenset({key_confirmation("PROJECT_KEY", "http://theirs/v1")})
    )
    settings, _ = load_settings(tmp_path, None, env={}, grant=confirmed, user_config=user)
    assert settings.model.resolved_api_key(env) == "p"
    # the environment's base_url is the user's: the user's key goes with it
    settings, _ = load_settings(
        tmp_path, None, env={"NDOMO_BASE_URL": "http://env/v1"}, grant=TRUSTED, user_config=user
    )
    assert settings.model.base_url == "http://env/v1"
    assert settings.model.resolved_api_key(env) == "mine"


def test_loosening_project_settings_need_a_confirmation(tmp_path):
    from ndomo.config import confirmation

    write(
        tmp_path,
        "sandbox:\n  mode: 'off'\n  home: ['~/.ssh']\n  writable: ['~']\n  env_allow: ['GITHUB_TOKEN']\n"
        "secret_globs: []\n"
        "modes:\n  design_globs: ['**']\ndb: ../victim/.ndomo/ndomo.db\n",
    )
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    base = Settings()
    assert settings.sandbox == base.sandbox and settings.secret_globs == base.secret_globs
    assert settings.modes.design_globs == base.modes.design_globs and settings.db == base.db
    assert {p.key for p in problems} == {
        "sandbox.mode",
        "sandbox.home",
        "sandbox.writable",
        "sandbox.env_allow",
        "secret_globs",
        "modes.design_globs",
        "db",
    }
    confirmed = Grant(
        trusted=True,
        confirmed=frozenset(
            {confirmation("sandbox.mode", "off"), confirmation("sandbox.home", ["~/.ssh"])}
        ),
    )
    settings, problems = load_settings(tmp_path, None, env={}, grant=confirmed)
    assert settings.sandbox.mode == "off" and settings.sandbox.home == ["~/.ssh"]
    assert settings.db == base.db  # never: the database stays inside .ndomo/
    # narrowing needs no confirmation
    write(
        tmp_path,
        "sandbox: required\nsecret_globs: ['.env', '.env.*', '*.pem', '*.key', "
        "'id_rsa*', 'id_ed25519*', '*.p12', '*.sqlite']\n",
    )
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings.sandbox.mode == "required" and "*.sqlite" in settings.secret_globs
    assert problems == []


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
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
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
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings == Settings()
    assert (
        len(problems) == 1
        and problems[0].key == "(file)"
        and "not valid YAML" in problems[0].message
    )
    assert problems[0].line is not None and problems[0].line >= 1


def test_file_that_is_not_a_mapping(tmp_path):
    write(tmp_path, "- just\n- a list\n")
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings == Settings() and problems[0].message == "must be a mapping of keys"


def test_bad_init_options_and_env_are_reported_without_lines(tmp_path):
    # (a mode's name is checked against the mode registry by the catalog, not here)
    settings, problems = load_settings(tmp_path, {"modes": {"default": 7}}, env={})
    assert settings.modes.default == "discussion"
    assert problems[0].source == "initializationOptions" and problems[0].key == "modes.default"
    assert problems[0].line is None
    settings, problems = load_settings(tmp_path, "not an object", env={})
    assert problems[0].source == "initializationOptions"


@pytest.mark.parametrize("spelling", ["true", "yes", "on", "1"])
def test_a_project_cannot_turn_auto_allow_on_without_a_confirmation(tmp_path, spelling):
    from ndomo.config import confirmation

    write(tmp_path, f"sandbox:\n  auto_allow: {spelling}\n")
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings.sandbox.auto_allow is False
    assert [p.key for p in problems] == ["sandbox.auto_allow"]
    assert "without asking" in problems[0].message
    confirmed = Grant(trusted=True, confirmed=frozenset({confirmation("sandbox.auto_allow", True)}))
    settings, problems = load_settings(tmp_path, None, env={}, grant=confirmed)
    assert settings.sandbox.auto_allow is True and problems == []
    # the user's own config turns it on without asking; then the project's saying so is no news
    user = tmp_path / "user.yaml"
    user.write_text("sandbox:\n  auto_allow: true\n")
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED, user_config=user)
    assert settings.sandbox.auto_allow is True and problems == []


def test_a_project_cannot_give_its_commands_destinations_without_a_confirmation(tmp_path):
    from ndomo.config import confirmation

    asked = {"make deploy*": ["attacker.example"]}
    write(tmp_path, "sandbox:\n  destinations:\n    'make deploy*': [attacker.example]\n")
    settings, problems = load_settings(tmp_path, None, env={}, grant=TRUSTED)
    assert settings.sandbox.destinations == {}
    assert [p.key for p in problems] == ["sandbox.destinations"]
    assert "make deploy*" in problems[0].message
    confirmed = Grant(
        trusted=True, confirmed=frozenset({confirmation("sandbox.destinations", asked)})
    )
    settings, problems = load_settings(tmp_path, None, env={}, grant=confirmed)
    assert settings.sandbox.destinations == asked and problems == []
