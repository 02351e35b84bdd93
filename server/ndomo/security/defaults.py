"""The sandbox's built-in settings, in one table.

config.py's schema (the `sandbox:` defaults) and security/sandbox.py (the profile) both
use this very object; it imports nothing of ndomo so both can.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SandboxDefaults:
    """The sandbox's built-in settings, defined once (config.py's schema uses this object)."""

    home_read: tuple[str, ...]
    # environment variables whose names contain one of these (case-insensitive) never reach
    # a sandboxed command unless the user's `sandbox.env_allow` names them
    env_deny: tuple[str, ...]
    # credential files and folders hidden even inside the readable home folders (home-relative)
    hidden_in_home: tuple[str, ...]
    # how deep below the workspace root nested control files are protected
    control_depth: int
    control_dirs_cap: int  # folders looked at per scan (a huge tree is scanned in part)


SANDBOX_DEFAULTS = SandboxDefaults(
    home_read=(
        "~/.pyenv",
        "~/.rustup",
        "~/.cargo",
        "~/.nvm",
        "~/.local",
        "~/go",
        "~/.npm",
        "~/.cache",
    ),
    env_deny=("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"),
    hidden_in_home=(
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".npmrc",
        ".npm/.npmrc",
        ".pypirc",
        ".netrc",
        ".docker/config.json",
        ".config/gh/hosts.yml",
        ".config/hub",
        ".cache/huggingface/token",
        ".cache/huggingface/stored_tokens",
        ".huggingface/token",
        ".aws",
        ".kube/config",
        ".git-credentials",
        ".config/git/credentials",
        ".local/share/keyrings",
        ".local/share/fish/fish_history",
        ".local/share/zsh",
        ".local/state/zsh",
        ".local/share/ipython",
        ".local/state/python_history",
        ".local/share/recently-used.xbel",
        ".bash_history",
        ".zsh_history",
        ".python_history",
        ".node_repl_history",
        ".psql_history",
        ".mysql_history",
        ".sqlite_history",
    ),
    control_depth=4,
    control_dirs_cap=20_000,
)
