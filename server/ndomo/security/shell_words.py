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

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
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
    value: str
    literal: bool = True


@dataclass
class Normalised:
    """What runs, and what normalisation learned on the way."""

    words: list[Word]
    floor: Action = "allow"
    notes: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)  # shell source to judge too (bash -c, eval)
    extra: list[list[Word]] = field(default_factory=list)  # further commands (find -exec)
    xargs: bool = False

    def ask(self, note: str) -> None:
        self.floor = strictest(self.floor, "ask")
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
        elif v in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif v.startswith(("--unset=", "--chdir=")) or (v[:2] in ("-u", "-C") and len(v) > 2):
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


def _simple(flags: str = "", with_arg: str = "", long_flags=frozenset(), long_arg=frozenset(), optional=""):
    def handler(out: Normalised) -> list[Word] | None:
        i = _skip_options(out.words, 1, flags, with_arg, frozenset(long_flags), frozenset(long_arg), optional)
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
        out.words, 1, "v", "sk", frozenset({"--preserve-status", "--foreground", "--verbose"}),
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
    return _simple("pavq", "fo", frozenset({"--portability", "--verbose", "--quiet", "--append"}),
                   frozenset({"--format", "--output"}))(out)


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
            out.words, 1, "AbEHkKlnPSsieV", "ugCDhprtUTR",
            frozenset({"--preserve-env", "--login", "--shell", "--non-interactive", "--stdin", "--background",
                       "--edit", "--set-home", "--remove-timestamp", "--reset-timestamp", "--askpass"}),
            frozenset({"--user", "--group", "--chdir", "--chroot", "--host", "--prompt", "--role",
                       "--type", "--other-user", "--close-from", "--command-timeout"}),
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
        ws, 1, "0rtpxo", "adEILnPs",
        frozenset({"--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty",
                   "--show-limits"}),
        frozenset({"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args",
                   "--max-procs", "--max-chars", "--process-slot-var"}),
        optional_arg="eil",
    )
    if i is None:
        out.ask("xargs has options that are not understood")
        return None
    replace = any(w.value.startswith(("-I", "--replace")) or re.match(r"-[^-]*i", w.value) for w in ws[1:i])
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
        if any(set(c) & set(letters) for c in clusters) or any(v.split("=", 1)[0] in longs for v in values):
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
