"""Normalise one simple command's words: strip wrappers, spot what can never be auto-allowed.

Works on already-parsed words (quotes removed by bashlex). `literal` is False for a
word that contains a parameter or command substitution, whose value at run time is
unknown. Unknown wrapper options make the command "ask" rather than guessing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ndomo.security.shell_rules import Action, strictest

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
DEVICE_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
XARGS_ARGS = "…"

SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"}
)
# interpreter -> (short option letters that take inline code, long options that do)
INTERPRETERS: dict[str, tuple[str, frozenset[str]]] = {
    "python": ("c", frozenset()),
    "pypy": ("c", frozenset()),
    "node": ("ep", frozenset({"--eval", "--print"})),
    "nodejs": ("ep", frozenset({"--eval", "--print"})),
    "bun": ("e", frozenset({"--eval", "--print"})),
    "deno": ("", frozenset()),
    "perl": ("eE", frozenset()),
    "ruby": ("e", frozenset()),
    "php": ("rRBE", frozenset()),
    "lua": ("e", frozenset()),
    "rscript": ("e", frozenset()),
    "osascript": ("e", frozenset()),
}
_VERSIONED = re.compile(r"^(python|pypy)[0-9.]*$")

# Variables that change which program runs or what it executes: never stripped silently.
_DANGEROUS_VARS = re.compile(
    r"^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|IFS|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|BASH_FUNC_\w+|"
    r"GIT_\w+|\w*PAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|HOME|XDG_CONFIG_HOME|XDG_CONFIG_DIRS|"
    r"PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PYTHONINSPECT|NODE_OPTIONS|NODE_PATH|PERL5OPT|PERL5LIB|"
    r"PERLLIB|RUBYOPT|RUBYLIB|SSH_ASKPASS|SUDO_ASKPASS|GIT_SSH_COMMAND|SHELL|TMPDIR|NPM_CONFIG_\w+|"
    r"npm_config_\w+|CC|CXX|MAKEFLAGS|TERMINFO)$"
)


@dataclass
class Word:
    """One parsed word. `literal`: no variable or substitution in it; `glob`: it holds
    unquoted glob characters the shell expands against the file system."""

    value: str
    literal: bool = True
    glob: bool = False


@dataclass
class Normalised:
    """What runs, and what normalisation learned on the way."""

    words: list[Word]
    floor: Action = "allow"
    notes: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)  # shell source to judge too (bash -c, eval)
    extra: list[list[Word]] = field(default_factory=list)  # further commands (find -exec)
    xargs: bool = False
    paths: list[Word] = field(default_factory=list)  # path values stripped from the words (git -C)
    writes: list[Word] = field(default_factory=list)  # paths the command writes to (git config -f)
    writes_git_config: bool = False  # `git config` changing the repository's own config
    chdirs: list[Word] = field(default_factory=list)  # folders the command runs in (env -C, git -C)
    git_dirs: list[Word] = field(
        default_factory=list
    )  # `git --git-dir` values: where git reads config

    def ask(self, note: str) -> None:
        self.floor = strictest(self.floor, "ask")
        if note not in self.notes:
            self.notes.append(note)

    def deny(self, note: str) -> None:
        self.floor = "deny"
        if note not in self.notes:
            self.notes.append(note)


def quote(value: str) -> str:
    """Quote a word only where needed, so `'git status'` (one word) never reads as two."""
    if value == "":
        return "''"
    if re.search(r"[\s'\"\\$`;&|<>()#]", value):
        return shlex.quote(value)
    return value


def render(words: list[Word]) -> str:
    return " ".join(quote(w.value) for w in words)


def dangerous_assignment(word: str) -> str | None:
    name = word.split("=", 1)[0].rstrip("+")
    return name if _DANGEROUS_VARS.match(name) else None


def _skip_options(
    words: list[Word],
    i: int,
    flags: str = "",
    with_arg: str = "",
    long_flags: frozenset[str] = frozenset(),
    long_arg: frozenset[str] = frozenset(),
    optional_arg: str = "",
) -> int | None:
    """Index of the first non-option word, or None on an option we do not understand."""
    n = len(words)
    while i < n:
        w = words[i]
        v = w.value
        if not w.literal:
            return None if v.startswith("-") else i
        if v == "--":
            return i + 1
        if v.startswith("--"):
            key = v.split("=", 1)[0]
            if key in long_arg:
                i += 1 if "=" in v else 2
            elif key in long_flags:
                i += 1
            else:
                return None
            continue
        if not v.startswith("-") or v == "-":
            return i
        step = 1
        for j, c in enumerate(v[1:], start=1):
            if c in with_arg:
                step = 1 if j + 1 < len(v) else 2
                break
            if c in optional_arg:
                break
            if c not in flags:
                return None
        i += step
    return i


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _unwrappable(name: str) -> bool:
    """`env` or `/usr/bin/env`, but not `./env` (a local script of that name)."""
    return "/" not in name or name.startswith("/")


def normalise(words: list[Word]) -> Normalised:
    out = Normalised(words=list(words))
    for _ in range(32):  # wrappers nest (`sudo env nice rm`); bounded
        if not out.words:
            return out
        head = out.words[0]
        if not head.literal:
            out.ask(f"the command name `{head.value}` is computed at run time")
            return out
        if re.search(r"[*?\[\]{}]", head.value):
            out.ask(f"the command name `{head.value}` uses glob or brace expansion")
            return out
        name = head.value
        base = _base(name)
        handler = _WRAPPERS.get(base) if _unwrappable(name) else None
        if handler is None:
            _inspect(out)
            return out
        rest = handler(out)
        if rest is None:
            _inspect(out)
            return out
        out.words = rest
    out.ask("too many nested wrappers")
    return out


# --- wrappers: each returns the inner command's words, or None to stop unwrapping ---------


def _env(out: Normalised) -> list[Word] | None:
    ws = out.words
    i, n = 1, len(ws)
    while i < n:
        w = ws[i]
        v = w.value
        if not w.literal and v.startswith("-"):
            out.ask("env has a computed option")
            return None
        if v in ("-S", "--split-string") or v.startswith(("-S", "--split-string=")):
            out.ask("env -S splits a string into a command, which cannot be checked")
            return None
        if v in ("-i", "--ignore-environment", "-", "-0", "--null", "-v", "--debug"):
            i += 1
        elif v in ("-C", "--chdir"):
            if i + 1 < n:
                out.chdirs.append(ws[i + 1])
            i += 2
        elif v.startswith("--chdir=") or (v[:2] == "-C" and len(v) > 2):
            value = v.split("=", 1)[1] if v.startswith("--") else v[2:]
            out.chdirs.append(Word(value, w.literal, w.glob))
            i += 1
        elif v in ("-u", "--unset"):
            i += 2
        elif v.startswith("--unset=") or (v[:2] == "-u" and len(v) > 2):
            i += 1
        elif v == "--":
            i += 1
            break
        elif v.startswith("-"):
            out.ask(f"env option {v} is not understood")
            return None
        else:
            break
    while i < n and ASSIGNMENT.match(ws[i].value):
        _check_assignment(out, ws[i])
        i += 1
    return ws[i:] or None


def _check_assignment(out: Normalised, w: Word) -> None:
    name = dangerous_assignment(w.value)
    if name:
        out.ask(f"sets {name}, which can change what actually runs")
    if not w.literal:
        out.ask(f"assignment `{w.value}` contains a substitution")


def _simple(
    flags: str = "", with_arg: str = "", long_flags=frozenset(), long_arg=frozenset(), optional=""
):
    def handler(out: Normalised) -> list[Word] | None:
        i = _skip_options(
            out.words, 1, flags, with_arg, frozenset(long_flags), frozenset(long_arg), optional
        )
        if i is None:
            out.ask(f"`{out.words[0].value}` has options that are not understood")
            return None
        return out.words[i:] or None

    return handler


def _command(out: Normalised) -> list[Word] | None:
    if any(w.value in ("-v", "-V") for w in out.words[1:2]):
        return None  # a lookup, nothing runs
    return _simple("p")(out)


def _nice(out: Normalised) -> list[Word] | None:
    ws = out.words
    if len(ws) > 1 and re.fullmatch(r"-\d+", ws[1].value):
        return ws[2:] or None
    return _simple("", "n", long_arg={"--adjustment"})(out)


def _timeout(out: Normalised) -> list[Word] | None:
    i = _skip_options(
        out.words,
        1,
        "v",
        "sk",
        frozenset({"--preserve-status", "--foreground", "--verbose"}),
        frozenset({"--signal", "--kill-after"}),
    )
    if i is None:
        out.ask("timeout has options that are not understood")
        return None
    return out.words[i + 1 :] or None  # skip the duration


def _time(out: Normalised) -> list[Word] | None:
    for w in out.words[1:]:
        if not w.value.startswith("-"):
            break
        if w.value.startswith(("-o", "--output", "--append")):
            out.ask("time -o writes to a file")
    return _simple(
        "pavq",
        "fo",
        frozenset({"--portability", "--verbose", "--quiet", "--append"}),
        frozenset({"--format", "--output"}),
    )(out)


def _exec(out: Normalised) -> list[Word] | None:
    out.ask("exec replaces the shell")
    return _simple("cl", "a")(out)


def _sudo(out: Normalised) -> list[Word] | None:
    name = _base(out.words[0].value)
    out.ask(f"{name} is never auto-allowed")
    if name == "doas":
        i = _skip_options(out.words, 1, "nsL", "uC")
    else:
        i = _skip_options(
            out.words,
            1,
            "AbEHkKlnPSsieV",
            "ugCDhprtUTR",
            frozenset(
                {
                    "--preserve-env",
                    "--login",
                    "--shell",
                    "--non-interactive",
                    "--stdin",
                    "--background",
                    "--edit",
                    "--set-home",
                    "--remove-timestamp",
                    "--reset-timestamp",
                    "--askpass",
                }
            ),
            frozenset(
                {
                    "--user",
                    "--group",
                    "--chdir",
                    "--chroot",
                    "--host",
                    "--prompt",
                    "--role",
                    "--type",
                    "--other-user",
                    "--close-from",
                    "--command-timeout",
                }
            ),
        )
    if i is None:
        return None
    ws = out.words
    while i < len(ws) and ASSIGNMENT.match(ws[i].value):
        _check_assignment(out, ws[i])
        i += 1
    return ws[i:] or None


def _xargs(out: Normalised) -> list[Word] | None:
    ws = out.words
    i = _skip_options(
        ws,
        1,
        "0rtpxo",
        "adEILnPs",
        frozenset(
            {
                "--null",
                "--no-run-if-empty",
                "--verbose",
                "--interactive",
                "--exit",
                "--open-tty",
                "--show-limits",
            }
        ),
        frozenset(
            {
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        optional_arg="eil",
    )
    if i is None:
        out.ask("xargs has options that are not understood")
        return None
    replace = any(
        w.value.startswith(("-I", "--replace")) or re.match(r"-[^-]*i", w.value) for w in ws[1:i]
    )
    inner = ws[i:] or [Word("echo")]
    out.xargs = True
    out.notes.append(f"xargs runs `{render(inner)}` with arguments read from its input")
    return inner if replace else inner + [Word(XARGS_ARGS, literal=False)]


_WRAPPERS = {
    "env": _env,
    "command": _command,
    "builtin": _simple(),
    "nohup": _simple(),
    "time": _time,
    "nice": _nice,
    "timeout": _timeout,
    "stdbuf": _simple("", "ioe", long_arg={"--input", "--output", "--error"}),
    "exec": _exec,
    "sudo": _sudo,
    "doas": _sudo,
    "xargs": _xargs,
}


# --- commands that are never auto-allowed ----------------------------------------------


def _short_clusters(args: list[Word]) -> list[str]:
    """Option clusters before the first positional argument (`-ne` -> 'ne')."""
    out = []
    for w in args:
        v = w.value
        if v == "--" or not v.startswith("-") or v == "-":
            break
        if not v.startswith("--"):
            out.append(v[1:])
    return out


def _inspect(out: Normalised) -> None:
    ws = out.words
    name = ws[0].value
    base = _base(name)
    args = ws[1:]
    values = [w.value for w in args]
    if base in SHELLS:
        out.ask(f"`{base}` runs a shell script that cannot be fully checked")
        if any("c" in c for c in _short_clusters(args)):
            script = next((w for w in args if not w.value.startswith("-")), None)
            if script is None:
                out.ask(f"{base} -c has no script")
            elif script.literal:
                out.nested.append(script.value)
            else:
                out.ask(f"the script given to {base} -c is computed at run time")
        return
    if base == "eval":
        out.ask("eval runs a string as shell code")
        if all(w.literal for w in args):
            out.nested.append(" ".join(values))
        else:
            out.ask("eval's argument is computed at run time")
        return
    if base in ("source", "."):
        out.ask(f"`{base}` runs a script inside the shell")
        return
    if base == "trap":
        out.ask("trap installs code to run later")
        return
    versioned = _VERSIONED.match(base)
    interp = versioned.group(1) if versioned else base.lower()
    if interp in INTERPRETERS:
        letters, longs = INTERPRETERS[interp]
        clusters = _short_clusters(args)
        if any(set(c) & set(letters) for c in clusters) or any(
            v.split("=", 1)[0] in longs for v in values
        ):
            out.ask(f"`{base}` runs inline code")
        elif interp in ("python", "pypy") and any("m" in c for c in clusters):
            pass
        elif not [v for v in values if not v.startswith("-")] or "-" in values:
            out.ask(f"`{base}` reads a program from its input")
        return
    if base == "tee":
        for w in args:
            if not w.value.startswith("-") and w.value not in DEVICE_SINKS:
                out.ask(f"tee writes to the file {w.value}")
        return
    if base == "find":
        _find(out, args)
        return
    if base == "git":
        _git(out)


# --- git ------------------------------------------------------------------------------

# Global options (before the subcommand) stripped before matching, so `git -C . push -f`
# meets the rules written for `git push -f`.
_GIT_FLAGS = frozenset(
    {
        "--no-pager",
        "-p",
        "--paginate",
        "-P",
        "--bare",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-lazy-fetch",
        "--no-advice",
    }
)
_GIT_PATH_OPTS = frozenset({"-C", "--git-dir", "--work-tree"})
_GIT_VALUE_OPTS = frozenset({"--namespace", "--super-prefix", "--attr-source", "--list-cmds"})
_GIT_CONFIG_OPTS = frozenset({"-c", "--config-env"})
# Subcommand options that run a command or write a file (git accepts unique prefixes of
# long options, so a prefix of these counts too).
_GIT_RISKY_LONG = {
    "--open-files-in-pager": "runs a command",
    "--output": "writes to a file",
    "--exec": "runs a command",
    "--upload-pack": "runs a command",
    "--receive-pack": "runs a command",
    "--extcmd": "runs a command",
    "--sendmail-cmd": "runs a command",
    "--to-cmd": "runs a command",
    "--cc-cmd": "runs a command",
    "--header-cmd": "runs a command",
    "--config": "sets configuration",
    "--template": "copies hooks from a folder",
}
# subcommand -> short option letters that run a command or set configuration
_GIT_RISKY_SHORT = {
    "grep": "O",
    "rebase": "x",
    "clone": "uc",
    "difftool": "x",
    "mergetool": "x",
    "fetch": "",
    "pull": "",
    "ls-remote": "",
    "archive": "",
    "submodule": "",
}
_GIT_RUNNERS = {
    "filter-branch": "runs shell code",
    "filter-repo": "runs code",
    "instaweb": "starts a web server",
}
_GIT_CONFIG_KEYS = ("core.", "alias.", "include.", "includeif.")
_GIT_CONFIG_WRITES = frozenset(
    {
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "--edit",
        "-e",
    }
)
_GIT_CONFIG_SUBCOMMANDS = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})
_GIT_CONFIG_ELSEWHERE = frozenset({"--global", "--system", "--blob"})


def _git(out: Normalised) -> None:
    ws = out.words
    i = 1
    while i < len(ws):
        w = ws[i]
        v = w.value
        if not w.literal and v.startswith("-"):
            out.ask("git has a computed global option")
            return
        if not v.startswith("-"):
            break
        key, eq, val = v.partition("=")
        if key in _GIT_FLAGS and not eq:
            i += 1
            continue
        takes = (
            key in _GIT_PATH_OPTS
            or key in _GIT_VALUE_OPTS
            or key in _GIT_CONFIG_OPTS
            or key == "--exec-path"
        )
        if not takes:
            break  # --version, --help or an option we do not know: left for the rules to see
        if key == "--exec-path" and not eq:
            i += 1  # prints the path
            continue
        if eq and key not in ("-C", "-c"):
            value, i = Word(val, w.literal, w.glob), i + 1
        elif eq:
            break  # `-C=x` is not git syntax
        elif i + 1 < len(ws):
            value, i = ws[i + 1], i + 2
        else:
            out.ask(f"git {key} has no value")
            return
        if key in _GIT_PATH_OPTS:
            out.paths.append(value)
            if key == "-C":
                out.chdirs.append(value)
            elif key == "--git-dir":
                out.git_dirs.append(value)
        elif key in _GIT_CONFIG_OPTS:
            out.ask(
                f"git {key} {value.value} sets configuration for this run, which can run commands"
            )
        elif key == "--exec-path":
            out.ask(f"git --exec-path={value.value} changes which programs git runs")
    out.words = [ws[0]] + ws[i:]
    if len(out.words) > 1:
        _git_subcommand(out, out.words[1].value, out.words[2:])


def _git_subcommand(out: Normalised, sub: str, args: list[Word]) -> None:
    if sub in _GIT_RUNNERS:
        out.ask(f"git {sub} {_GIT_RUNNERS[sub]}")
    values = [w.value for w in args]
    if sub == "submodule" and "foreach" in values:
        out.ask("git submodule foreach runs a command")
    if sub == "bisect" and "run" in values:
        out.ask("git bisect run runs a command")
    letters = _GIT_RISKY_SHORT.get(sub, "")
    for w in args:
        v = w.value
        if v == "--":
            break
        if v.startswith("--") and len(v) > 3:
            name = v.split("=", 1)[0]
            for risky, what in _GIT_RISKY_LONG.items():
                if risky.startswith(name):
                    out.ask(f"git {sub} {name} (as {risky}) {what}")
        elif v.startswith("-") and not v.startswith("--"):
            hit = set(v[1:]) & set(letters)
            if hit:
                out.ask(f"git {sub} -{sorted(hit)[0]} runs a command or sets configuration")
    if sub == "config":
        _git_config(out, args)


def _git_config(out: Normalised, args: list[Word]) -> None:
    values = [w.value for w in args]
    positional = [v for v in values if not v.startswith("-")]
    keys = [v for v in positional if v.lower().startswith(_GIT_CONFIG_KEYS)]
    for k in keys:
        out.ask(f"git config {k} sets core/alias/include configuration, which can run commands")
    writes = (
        any(v.split("=", 1)[0] in _GIT_CONFIG_WRITES for v in values)
        or (positional[:1] and positional[0] in _GIT_CONFIG_SUBCOMMANDS)
        or len(positional) >= 2
    )
    if not writes or any(v in _GIT_CONFIG_ELSEWHERE for v in values):
        return
    for j, w in enumerate(args):
        if w.value in ("-f", "--file") and j + 1 < len(args):
            out.writes.append(args[j + 1])
            return
        if w.value.startswith("--file="):
            out.writes.append(Word(w.value.split("=", 1)[1], w.literal, w.glob))
            return
    out.writes_git_config = True


# --- commands that write files: their targets, for the control-file rule ------------------

_TARGET_LAST = frozenset({"cp", "install", "ln", "rsync", "scp", "link"})
_WRITES_ALL = frozenset(
    {
        "mv",
        "tee",
        "touch",
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "truncate",
        "chmod",
        "chown",
        "chgrp",
        "mkdir",
        "dd",
        "patch",
        "tar",
        "unzip",
        "cpio",
        "mkfifo",
        "mknod",
        "setfacl",
        "chattr",
        "curl",
        "wget",
        "git-lfs",
        "sqlite3",
        "ed",
        "ex",
        "vi",
        "vim",
        "nvim",
        "nano",
        "emacs",
    }
)
_IN_PLACE = frozenset({"sed", "perl", "ruby"})


def write_targets(words: list[Word]) -> list[Word]:
    """The arguments of a normalised command that may name a file it writes (superset)."""
    if not words:
        return []
    base = _base(words[0].value)
    args = words[1:]
    if base in _WRITES_ALL:
        return list(args)
    if base in _IN_PLACE:
        in_place = any(
            w.value.startswith("--in-place")
            or (w.value.startswith("-") and not w.value.startswith("--") and "i" in w.value)
            for w in args
        )
        return list(args) if in_place else []
    if base not in _TARGET_LAST:
        return []
    targets: list[Word] = []
    positional: list[Word] = []
    j = 0
    while j < len(args):
        w = args[j]
        v = w.value
        if v == "--":
            positional += args[j + 1 :]
            break
        if v in ("-t", "--target-directory") and j + 1 < len(args):
            targets.append(args[j + 1])
            j += 2
            continue
        if v.startswith("--target-directory="):
            targets.append(Word(v.split("=", 1)[1], w.literal, w.glob))
        elif v.startswith("-") and not v.startswith("--") and "t" in v[1:]:
            rest = v[v.index("t", 1) + 1 :]
            if rest:
                targets.append(Word(rest, w.literal, w.glob))
            elif j + 1 < len(args):
                targets.append(args[j + 1])
                j += 1
        elif not v.startswith("-") or v == "-":
            positional.append(w)
        j += 1
    if positional and not targets:
        targets.append(positional[-1])
    return targets


def _find(out: Normalised, args: list[Word]) -> None:
    i = 0
    while i < len(args):
        v = args[i].value
        if v in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j].value not in (";", "+"):
                j += 1
            inner = args[i + 1 : j]
            if inner:
                out.extra.append(inner)
                out.notes.append(f"find {v} runs `{render(inner)}`")
            i = j + 1
            continue
        if v == "-delete":
            out.ask("find -delete removes files")
        elif v in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            out.ask(f"find {v} writes to a file")
        i += 1
