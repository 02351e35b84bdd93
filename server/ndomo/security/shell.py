"""Permission decision for a shell command the model wants to run.

The command is parsed with bashlex and every simple command in it (chains, pipes,
substitutions, subshells, groups, loop and if bodies, function bodies, `bash -c`
and `eval` strings) is judged on its own after normalisation; the strictest verdict
wins. Whatever cannot be parsed or understood asks the user rather than guessing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import bashlex
from pydantic import BaseModel

from ndomo.security.paths import PathRefused, is_secret, resolve_in_workspace
from ndomo.security.shell_rules import Action, Rules, rank, rule_action, strictest, validate_rules
from ndomo.security.shell_words import (
    DEVICE_SINKS,
    Normalised,
    Word,
    dangerous_assignment,
    normalise,
    render,
)

MAX_COMMAND_CHARS = 20_000
MAX_DEPTH = 4
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_INPUT_REDIRECTS = frozenset({"<", "<&"})
_TIME_WORD = re.compile(r"(^|[;&|(){}!\n]\s*|\b(?:then|do|else|elif)\s+)time(\s+-p)?(?=\s)")
_NESTED_SUBST = re.compile(r"\$\(|`|[<>]\(")


class ShellDecision(BaseModel):
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


class _Analyzer:
    def __init__(self, depth: int = 0) -> None:
        self.depth = depth
        self.units: list[_Unit] = []
        self.problems: list[str] = []
        self.functions: set[str] = set()

    # -- entry ---------------------------------------------------------------
    def analyse(self, source: str) -> None:
        trees = _parse(source, self.problems)
        if trees is None:
            return
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
                if part.kind in ("operator", "pipe") or (part.kind == "reservedword" and part.word == "!"):
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
                literal = not self.word_parts(part, unit)
                words.append(Word(part.word, literal))
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
                unit.ask(f"calls the shell function `{unit.words[0].value}` defined in this command")

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
        computed = self.word_parts(target_word, unit) if target_word is not None else False
        value = target_word.word if target_word is not None else target
        if rtype in ("<<", "<<-"):
            unit.ask("uses a heredoc")
        elif rtype == "<<<":
            unit.ask("uses a here-string")
        elif rtype in _INPUT_REDIRECTS:
            pass
        elif rtype == ">&" and (isinstance(value, int) or str(value).isdigit() or value == "-"):
            pass  # fd duplication such as 2>&1
        elif rtype in _OUTPUT_REDIRECTS or rtype == ">&":
            if computed or value not in DEVICE_SINKS:
                unit.ask(f"redirects output to the file {value}")
        else:
            raise _Unparsable(f"unsupported redirection {rtype}")


def _parse(source: str, problems: list[str]) -> list[Any] | None:
    text = source
    for _ in range(8):
        try:
            return bashlex.parse(text)
        except NotImplementedError as exc:
            if "time" in str(exc) and _TIME_WORD.search(text):
                # bashlex has no `time` keyword; blank it out (it only times the pipeline)
                text = _TIME_WORD.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text)
                continue
            problems.append(f"could not parse the command ({exc})")
            return None
        except Exception as exc:  # bashlex raises assorted errors on odd input
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
        elif tok not in ("[[", "]]", "{", "}", "!", "then", "do", "else", "elif", "if", "while", "until"):
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


def _path_notes(
    unit: _Unit, cwd: Path | None, roots: Sequence[Path], secret_globs: list[str] | None
) -> list[str]:
    """Arguments that point outside the workspace or at secrets: an allow becomes ask."""
    notes = []
    for w in unit.words[1:]:
        if not w.literal:
            continue
        v = w.value
        if v.startswith("--") and "=" in v:
            v = v.split("=", 1)[1]
        elif v.startswith("-"):
            continue
        if not v or v in DEVICE_SINKS:
            continue
        try:
            p = resolve_in_workspace(v, roots, base=cwd)
        except PathRefused as exc:
            if "\x00" not in v:
                notes.append(f"argument {v!r}: {exc.message}")
            continue
        if is_secret(p, roots, secret_globs):
            notes.append(f"argument {v!r} looks like a secret file")
    return notes


def _judge(unit: _Unit, rules: Rules, cwd, roots, secret_globs) -> _Verdict:
    if not unit.words:
        action: Action = unit.floor
        why = "; ".join(unit.notes) or "assignment only"
        return _Verdict(unit, action, why)
    rule_act, pattern = rule_action(unit.text, rules)
    why = f"rule {pattern!r}" if pattern else ("permission " + repr(rules) if isinstance(rules, str) else "no rule matches")
    for other in unit.deny_also:
        act2, pat2 = rule_action(other, rules)
        if act2 == "deny":
            rule_act, why = "deny", f"rule {pat2!r} (as `{other}`)"
    action = strictest(rule_act, unit.floor)
    notes = list(unit.notes)
    if action == "allow" and roots:
        path_notes = _path_notes(unit, cwd, roots, secret_globs)
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
        return ShellDecision(action="deny", commands=[], reasons=["command contains a NUL byte; it cannot run"])
    rule_problems = validate_rules(rules)
    if len(command) > MAX_COMMAND_CHARS:
        return ShellDecision(
            action="ask", commands=[],
            reasons=[f"command is longer than {MAX_COMMAND_CHARS} characters; too long to check"],
        )
    analyzer = _Analyzer()
    try:
        analyzer.analyse(command)
    except _Unparsable as exc:
        analyzer.problems.append(str(exc) if str(exc).startswith("could not") else f"could not parse: {exc}")
    except RecursionError:
        analyzer.problems.append("could not parse: command nested too deeply")
    if analyzer.problems and not analyzer.units:
        hit = _deny_scan(command, rules)
        if hit is not None:
            segment, pattern = hit
            return ShellDecision(
                action="deny", commands=[segment],
                reasons=[f"deny, decided by `{segment}`: rule {pattern!r} (the command could not be parsed; "
                         f"this part was found by a plain split)"] + [f"{p}" for p in analyzer.problems],
            )
    analyzer.flag_function_calls()
    roots = list(roots or [])
    if roots and cwd is None:
        cwd = roots[0]
    verdicts = [_judge(u, rules, cwd, roots, secret_globs) for u in analyzer.units]
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
