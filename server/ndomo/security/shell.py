"""Permission decision for a shell command the model wants to run.

The command is parsed with bashlex and every simple command in it (chains, pipes,
substitutions, subshells, groups, loop and if bodies, function bodies, `bash -c`
and `eval` strings) is judged on its own after normalisation; the strictest verdict
wins. Whatever cannot be parsed or understood asks the user rather than guessing.
"""

from __future__ import annotations

import glob as _glob
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ndomo.schema import Schema
from ndomo.security.control import instruction_file, shell_read_only
from ndomo.security.paths import PathRefused, is_secret, relative_to_workspace, resolve_in_workspace
from ndomo.security.shell_rules import Action, Rules, rank, rule_action, strictest, validate_rules
from ndomo.security.shell_words import (
    DEVICE_SINKS,
    Normalised,
    Word,
    dangerous_assignment,
    normalise,
    render,
    write_targets,
)

MAX_COMMAND_CHARS = 20_000
MAX_DEPTH = 4
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_INPUT_REDIRECTS = frozenset({"<", "<&"})
_TIME_WORD = re.compile(r"(^|[;&|(){}!\n]\s*|\b(?:then|do|else|elif)\s+)time(\s+-p)?(?=\s)")
_NESTED_SUBST = re.compile(r"\$\(|`|[<>]\(")
MAX_GLOB_MATCHES = 1000


class ShellDecision(Schema):
    """Verdict for a whole command line; `reasons[0]` names the deciding simple command."""

    action: Action
    commands: list[str]
    reasons: list[str]

    def explain(self) -> str:
        return "\n".join(self.reasons)


class _Unparsable(Exception):
    pass


@dataclass
class _Unit:
    """One simple command to judge."""

    display: str
    words: list[Word] = field(default_factory=list)  # normalised; empty: nothing to match
    floor: Action = "allow"
    notes: list[str] = field(default_factory=list)
    deny_also: list[str] = field(default_factory=list)  # other spellings checked for deny only
    inputs: list[Word] = field(default_factory=list)  # `<` targets: read like arguments
    outputs: list[Word] = field(default_factory=list)  # `>` targets: written
    paths: list[Word] = field(default_factory=list)  # path values normalisation took out (git -C)
    writes: list[Word] = field(default_factory=list)  # further write targets (git config -f)
    git_config: bool = False  # changes the repository's .git/config
    chdirs: list[Word] = field(default_factory=list)  # folders it runs in (env -C, git -C)
    git_dirs: list[Word] = field(default_factory=list)  # git --git-dir values

    def ask(self, note: str) -> None:
        self.floor = strictest(self.floor, "ask")
        if note not in self.notes:
            self.notes.append(note)

    @property
    def text(self) -> str:
        return render(self.words)


@dataclass
class _Verdict:
    unit: _Unit
    action: Action
    why: str


def _unquoted_specials(raw: str) -> tuple[bool, bool]:
    """(glob, brace): whether the source text of a word holds unquoted glob characters or a
    brace expansion — the quotes are gone from the parsed word, so the source is read."""
    glob = brace = False
    depth = 0
    sq = dq = ansi = False
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if sq:
            if ansi and c == "\\":  # $'…' knows backslash escapes, \' included
                i += 2
                continue
            sq = c != "'"
        elif c == "\\":
            i += 2
            continue
        elif dq:
            dq = c != '"'
        elif c == "'":
            sq, ansi = True, False
        elif c == '"':
            dq = True
        elif c == "$" and raw[i + 1 : i + 2] in ("'", "{"):
            if raw[i + 1] == "'":
                sq, ansi = True, True
            else:
                close = raw.find("}", i)
                i = n if close < 0 else close + 1
                continue
            i += 1
        elif c in "*?[":
            glob = True
        elif c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif depth and (c == "," or raw[i : i + 2] == ".."):
            brace = True
        i += 1
    return glob, brace


class _Analyzer:
    def __init__(self, depth: int = 0) -> None:
        self.depth = depth
        self.units: list[_Unit] = []
        self.problems: list[str] = []
        self.functions: set[str] = set()
        self.source = ""

    # -- entry ---------------------------------------------------------------
    def analyse(self, source: str) -> None:
        parsed = _parse(source, self.problems)
        if parsed is None:
            return
        trees, self.source = parsed
        for tree in trees:
            self.visit(tree, [])

    # -- nodes ---------------------------------------------------------------
    def visit(self, node: Any, inherited: list[str]) -> None:
        kind = getattr(node, "kind", None)
        if kind == "command":
            self.command(node, inherited)
        elif kind in ("list", "pipeline"):
            parts = node.parts
            for i, part in enumerate(parts):
                if part.kind in ("operator", "pipe") or (
                    part.kind == "reservedword" and part.word == "!"
                ):
                    continue
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                if nxt is not None and nxt.kind == "operator" and nxt.op == "&":
                    # outlives the tool call; long-running processes belong to the `serve` tool
                    self.visit(part, inherited + ["runs in the background (&)"])
                else:
                    self.visit(part, inherited)
        elif kind == "compound":
            extra = list(inherited)
            probe = _Unit(display="")
            for r in getattr(node, "redirects", None) or []:
                self.redirect(r, probe)
            extra += [f"the group's {n}" for n in probe.notes]
            for part in node.list:
                if part.kind == "reservedword":
                    continue
                self.visit(part, extra)
        elif kind in ("if", "for", "while", "until"):
            for part in node.parts:
                if part.kind == "reservedword":
                    continue
                if part.kind == "word":  # `for x in WORDS`
                    self.word_parts(part, None)
                    continue
                self.visit(part, inherited)
        elif kind == "function":
            self.functions.add(node.name.word)
            self.visit(node.body, inherited)
        else:
            raise _Unparsable(f"unsupported shell construct ({kind})")

    def command(self, node: Any, inherited: list[str]) -> None:
        unit = _Unit(display="")
        for note in inherited:
            unit.ask(note)
        words: list[Word] = []
        assigns: list[str] = []
        for part in node.parts:
            if part.kind == "assignment":
                assigns.append(part.word)
                if self.word_parts(part, unit):
                    unit.ask(f"assignment `{part.word}` contains a substitution")
                name = dangerous_assignment(part.word)
                if name:
                    unit.ask(f"sets {name}, which can change what actually runs")
            elif part.kind == "word":
                words.append(self.word(part, unit))
            elif part.kind == "redirect":
                self.redirect(part, unit)
            else:
                raise _Unparsable(f"unsupported part of a command ({part.kind})")
        if not words:
            shown = " ".join(assigns) or "(redirection only)"
            unit.display = shown
            self.units.append(unit)
            return
        norm = normalise(words)
        self.add(unit, norm, " ".join(assigns + [render(words)]))

    def add(self, unit: _Unit, norm: Normalised, original: str) -> None:
        unit.words = norm.words
        unit.paths += norm.paths
        unit.writes += norm.writes
        unit.git_config = unit.git_config or norm.writes_git_config
        unit.chdirs += norm.chdirs
        unit.git_dirs += norm.git_dirs
        unit.floor = strictest(unit.floor, norm.floor)
        unit.notes += [n for n in norm.notes if n not in unit.notes]
        if norm.words and "/" in norm.words[0].value:
            # `/bin/rm` must not dodge a deny written for `rm`
            base_form = [Word(norm.words[0].value.rsplit("/", 1)[-1])] + norm.words[1:]
            unit.deny_also.append(render(base_form))
        text = unit.text if norm.words else original
        unit.display = text if text == original else f"{text}  (from `{original}`)"
        self.units.append(unit)
        for script in norm.nested:
            self.nested(script, unit)
        for inner in norm.extra:
            self.add(_Unit(display=""), normalise(inner), render(inner))

    def flag_function_calls(self) -> None:
        for unit in self.units:
            if unit.words and unit.words[0].value in self.functions:
                unit.ask(
                    f"calls the shell function `{unit.words[0].value}` defined in this command"
                )

    def nested(self, script: str, parent: _Unit) -> None:
        if self.depth >= MAX_DEPTH:
            parent.ask("shell code nested too deeply to check")
            return
        sub = _Analyzer(self.depth + 1)
        sub.functions = self.functions
        sub.analyse(script)
        for p in sub.problems:
            parent.ask(f"inner script: {p}")
        self.units.extend(sub.units)

    def word(self, node: Any, unit: _Unit) -> Word:
        literal = not self.word_parts(node, unit)
        start, end = getattr(node, "pos", (0, 0))
        glob, brace = _unquoted_specials(self.source[start:end])
        if brace:
            unit.ask(f"`{node.word}` uses brace expansion")
        return Word(node.word, literal, glob)

    def word_parts(self, node: Any, unit: _Unit | None) -> bool:
        """Judge substitutions inside a word; True when the word's value is not literal."""
        computed = False
        for part in getattr(node, "parts", None) or []:
            kind = part.kind
            if kind == "commandsubstitution":
                computed = True
                self.visit(part.command, [])
            elif kind == "processsubstitution":
                computed = True
                if unit is not None:
                    unit.ask("uses process substitution")
                else:
                    self.problems.append("process substitution in a loop list")
                self.visit(part.command, [])
            elif kind == "parameter":
                computed = True
                if _NESTED_SUBST.search(part.value or ""):
                    raise _Unparsable(f"could not parse the substitution inside ${{{part.value}}}")
            elif kind == "tilde":
                pass
            else:
                raise _Unparsable(f"unsupported word part ({kind})")
            if getattr(part, "parts", None):
                computed = self.word_parts(part, unit) or computed
        return computed

    def redirect(self, node: Any, unit: _Unit) -> None:
        rtype = node.type
        target = node.output
        target_word = target if getattr(target, "kind", None) == "word" else None
        word = self.word(target_word, unit) if target_word is not None else None
        computed = word is not None and not word.literal
        value = target_word.word if target_word is not None else target
        if rtype in ("<<", "<<-"):
            unit.ask("uses a heredoc")
        elif rtype == "<<<":
            unit.ask("uses a here-string")
        elif rtype in _INPUT_REDIRECTS:
            if word is not None and not (rtype == "<&" and (value.isdigit() or value == "-")):
                unit.inputs.append(word)
        elif rtype == ">&" and (isinstance(value, int) or str(value).isdigit() or value == "-"):
            pass  # fd duplication such as 2>&1
        elif rtype in _OUTPUT_REDIRECTS or rtype == ">&":
            if computed or value not in DEVICE_SINKS:
                unit.ask(f"redirects output to the file {value}")
            if word is not None:
                unit.outputs.append(word)
        else:
            raise _Unparsable(f"unsupported redirection {rtype}")


def _parse(source: str, problems: list[str]) -> tuple[list[Any], str] | None:
    """The parse trees and the text they were parsed from (positions index into it)."""
    # Imported on first use: bashlex builds its parser tables at import (0.3–0.8 s), which
    # the server's start-up (building the tool registry) must not wait for; the LSP warm-up
    # imports it in the background.
    import bashlex

    text = source
    for _ in range(8):
        try:
            return bashlex.parse(text), text
        except NotImplementedError as exc:
            if "time" in str(exc) and _TIME_WORD.search(text):
                # bashlex has no `time` keyword; blank it out (it only times the pipeline)
                text = _TIME_WORD.sub(
                    lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text
                )
                continue
            problems.append(f"could not parse the command ({exc})")
            return None
        except Exception as exc:  # noqa: BLE001 - bashlex raises assorted errors on odd input; fails closed (unparsed)
            problems.append(f"could not parse the command ({type(exc).__name__}: {exc})")
            return None
    problems.append("could not parse the command")
    return None


def _deny_scan(command: str, rules: Rules) -> tuple[str, str] | None:
    """Best effort for unparsable input: split on operators and look for a denied segment."""
    try:
        lexer = shlex.shlex(command.replace("\n", ";"), posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        return None
    segments: list[list[str]] = [[]]
    for tok in tokens:
        if tok and set(tok) <= set(";&|()<>"):
            segments.append([])
        elif tok not in (
            "[[",
            "]]",
            "{",
            "}",
            "!",
            "then",
            "do",
            "else",
            "elif",
            "if",
            "while",
            "until",
        ):
            segments[-1].append(tok)
    for seg in segments:
        if not seg:
            continue
        norm = normalise([Word(t) for t in seg])
        for words in [norm.words] + norm.extra:
            if not words:
                continue
            text = render(words)
            action, pattern = rule_action(text, rules)
            if action == "deny" and pattern is not None:
                return text, pattern
    return None


def _only_comments(command: str) -> bool:
    return all(not line.strip() or line.strip().startswith("#") for line in command.splitlines())


def _texts(w: Word) -> list[str]:
    """The path-like strings one argument may stand for: the word itself, the value of
    `--opt=VAL`, the rest of a short cluster (`-tDIR`), and what follows `=` (`-o k=v`)."""
    v = w.value
    out: list[str] = []
    if v.startswith("--"):
        if "=" in v:
            out.append(v.split("=", 1)[1])
    elif v.startswith("-") and v != "-":
        out += [v[k:] for k in range(2, len(v)) if k == 2 or v[k] in "/.~"]
    else:
        out.append(v)
    for text in list(out):
        while "=" in text:
            text = text.split("=", 1)[1]
            out.append(text)
    return [t for t in dict.fromkeys(out) if t and t != "-" and t not in DEVICE_SINKS]


def _expand(text: str, w: Word, cwd: Path) -> list[str] | None:
    """The paths a word names after the shell's glob expansion (itself when nothing matches);
    None when there are too many matches to check."""
    if not w.glob:
        return [text]
    try:
        it = _glob.iglob(text, root_dir=None if os.path.isabs(text) else cwd)
        matches = []
        for m in it:
            matches.append(m)
            if len(matches) > MAX_GLOB_MATCHES:
                return None
    except (OSError, ValueError):
        return [text]
    return matches or [text]


def _resolved(w: Word, cwd: Path | Sequence[Path], roots: Sequence[Path]):
    """(text, path or PathRefused) for every path an argument stands for, globs expanded,
    from each folder the command may run in."""
    for base in [cwd] if isinstance(cwd, Path) else cwd:
        for text in _texts(w):
            paths = _expand(text, w, base)
            if paths is None:
                yield (
                    text,
                    PathRefused(
                        f"the glob matches more than {MAX_GLOB_MATCHES} files; too many to check"
                    ),
                )
                continue
            for path in paths:
                try:
                    yield path, resolve_in_workspace(path, roots, base=base)
                except PathRefused as exc:
                    yield path, exc


def _folders(units: list[_Unit], cwd: Path | None, roots: Sequence[Path]) -> list[Path]:
    """The folders the line's commands may run in: the start folder plus every literal
    `cd`/`pushd`/`env -C`/`git -C` target inside the workspace. Relative paths are judged
    from each of them, so `cd .git && cp ../x config` is seen as writing .git/config."""
    if cwd is None:
        return []
    out = [cwd]
    for u in units:
        targets = list(u.chdirs)
        if u.words and u.words[0].value in ("cd", "pushd"):
            targets += [w for w in u.words[1:] if not w.value.startswith("-")][:1]
        for w in targets:
            if not w.literal:
                continue
            for base in list(out):
                for _, p in _resolved(w, base, roots):
                    if isinstance(p, Path) and p not in out and p.is_dir():
                        out.append(p)
    return out


def _path_notes(
    unit: _Unit, cwd: Sequence[Path] | None, roots: Sequence[Path], secret_globs: list[str] | None
) -> list[str]:
    """Arguments computed at run time, or pointing outside the workspace or at secrets:
    an allow becomes ask."""
    notes = []
    for w in unit.words[1:] + unit.paths + unit.inputs + unit.outputs + unit.writes:
        if not w.literal:
            notes.append(
                f"argument `{w.value}` is computed at run time (a variable or a substitution)"
            )
            continue
        if not roots or not cwd:
            continue
        for text, p in _resolved(w, cwd, roots):
            if isinstance(p, PathRefused):
                if "\x00" not in text:
                    notes.append(f"argument {text!r}: {p.message}")
            elif is_secret(p, roots, secret_globs):
                notes.append(f"argument {text!r} looks like a secret file")
    if roots and cwd:
        for w in unit.git_dirs:
            for text, p in _resolved(w, cwd, roots):
                if isinstance(p, Path) and relative_to_workspace(p, roots) != ".git":
                    notes.append(
                        f"git --git-dir={text}: git would read its configuration (which can run "
                        "commands) from a folder that is not the repository's .git"
                    )
    return list(dict.fromkeys(notes))


def _control_notes(
    unit: _Unit, cwd: Sequence[Path] | None, roots: Sequence[Path]
) -> tuple[list[str], list[str]]:
    """(deny, ask) notes for a command writing into the control files."""
    deny: list[str] = []
    ask: list[str] = []
    if unit.git_config:
        deny.append(
            "writes .git/config: git configuration is changed by the user by hand, never by an agent"
        )
    if not roots or not cwd:
        return deny, ask
    for w in write_targets(unit.words) + unit.outputs + unit.writes:
        if not w.literal:
            continue
        for _text, p in _resolved(w, cwd, roots):
            if isinstance(p, PathRefused):
                continue
            try:
                rel = relative_to_workspace(p, roots)
            except PathRefused:
                continue
            if shell_read_only(rel):
                deny.append(
                    f"writes into {rel}: .git/config, .git/hooks/ and .ndomo/ are changed by the user by hand, "
                    "never by an agent's shell command"
                )
            elif instruction_file(rel):
                ask.append(f"writes {rel}, which the agents read as project instructions")
    return list(dict.fromkeys(deny)), list(dict.fromkeys(ask))


def _judge(unit: _Unit, rules: Rules, cwd, roots, secret_globs) -> _Verdict:
    if not unit.words:
        action: Action = unit.floor
        why = "; ".join(unit.notes) or "assignment only"
        deny_notes, _ = _control_notes(unit, cwd, roots)
        if deny_notes:
            return _Verdict(unit, "deny", "; ".join(deny_notes))
        return _Verdict(unit, action, why)
    rule_act, pattern = rule_action(unit.text, rules)
    why = (
        f"rule {pattern!r}"
        if pattern
        else ("permission " + repr(rules) if isinstance(rules, str) else "no rule matches")
    )
    for other in unit.deny_also:
        act2, pat2 = rule_action(other, rules)
        if act2 == "deny":
            rule_act, why = "deny", f"rule {pat2!r} (as `{other}`)"
    action = strictest(rule_act, unit.floor)
    notes = list(unit.notes)
    deny_notes, ask_notes = _control_notes(unit, cwd, roots)
    if deny_notes:  # a control-file write is denied whatever the rules say
        why = "; ".join(deny_notes)
        return _Verdict(unit, "deny", why + (f" ({'; '.join(unit.notes)})" if unit.notes else ""))
    if action == "allow":
        path_notes = ask_notes + _path_notes(unit, cwd, roots, secret_globs)
        if path_notes:
            action = "ask"
            notes += path_notes
    if notes and rank(action) > rank(rule_act):
        why = "; ".join(notes) + f" ({why} alone would {rule_act})"
    elif notes:
        why = why + "; " + "; ".join(notes)
    return _Verdict(unit, action, why)


def decide(
    command: str,
    rules: str | Mapping[str, str],
    *,
    cwd: Path | None = None,
    roots: Sequence[Path] | None = None,
    secret_globs: list[str] | None = None,
) -> ShellDecision:
    """Allow, ask or deny a command line under an agent's `bash` permission.

    With `roots`, literal arguments resolving outside the workspace (or to a secret file)
    turn an allow into ask. Touches the filesystem only for that check.
    """
    if not isinstance(command, str) or not command.strip() or _only_comments(command):
        return ShellDecision(action="deny", commands=[], reasons=["empty command: nothing to run"])
    if "\x00" in command:
        return ShellDecision(
            action="deny", commands=[], reasons=["command contains a NUL byte; it cannot run"]
        )
    rule_problems = validate_rules(rules)
    if len(command) > MAX_COMMAND_CHARS:
        return ShellDecision(
            action="ask",
            commands=[],
            reasons=[f"command is longer than {MAX_COMMAND_CHARS} characters; too long to check"],
        )
    analyzer = _Analyzer()
    try:
        analyzer.analyse(command)
    except _Unparsable as exc:
        analyzer.problems.append(
            str(exc) if str(exc).startswith("could not") else f"could not parse: {exc}"
        )
    except RecursionError:
        analyzer.problems.append("could not parse: command nested too deeply")
    if analyzer.problems and not analyzer.units:
        hit = _deny_scan(command, rules)
        if hit is not None:
            segment, pattern = hit
            return ShellDecision(
                action="deny",
                commands=[segment],
                reasons=[
                    f"deny, decided by `{segment}`: rule {pattern!r} (the command could not be parsed; "
                    f"this part was found by a plain split)"
                ]
                + [f"{p}" for p in analyzer.problems],
            )
    analyzer.flag_function_calls()
    roots = list(roots or [])
    if roots and cwd is None:
        cwd = roots[0]
    folders = _folders(analyzer.units, cwd, roots) if roots else []
    verdicts = [_judge(u, rules, folders, roots, secret_globs) for u in analyzer.units]
    if not verdicts and not analyzer.problems:
        return ShellDecision(action="deny", commands=[], reasons=["empty command: nothing to run"])
    overall: Action = "allow"
    for v in verdicts:
        overall = strictest(overall, v.action)
    problems = [f"{p}; asking" for p in analyzer.problems]
    problems += [f"{p}; treated as ask" for p in rule_problems]
    if problems:
        overall = strictest(overall, "ask")
    # the headline names the command that decided, preferring one with a specific reason
    deciding = next(
        (v for v in sorted(verdicts, key=lambda v: not v.unit.notes) if v.action == overall), None
    )
    if deciding is not None and problems and rank(overall) == rank("ask"):
        deciding = None  # the parse problem is the headline
    reasons: list[str] = []
    if deciding is not None:
        reasons.append(f"{overall}, decided by `{deciding.unit.display}`: {deciding.why}")
    reasons += problems
    reasons += [f"`{v.unit.display}` → {v.action}: {v.why}" for v in verdicts if v is not deciding]
    return ShellDecision(
        action=overall,
        commands=[v.unit.text if v.unit.words else v.unit.display for v in verdicts],
        reasons=reasons,
    )
