"""Places in a document and the problems an editor shows there.

A floor below the turn's context and the Host: the request carries diagnostics (a quick
fix's), the Host reads them back from the editor after an edit.
"""

from __future__ import annotations

from pydantic import Field

from ndomo.schema import Schema


class Position(Schema):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(Schema):
    start: Position
    end: Position


class Problem(Schema):
    """A diagnostic the editor shows (another server's: a type checker, a linter), as a
    turn is given it: from a code action's context, or read back after an edit."""

    message: str = Field(max_length=4000)
    source: str | None = Field(default=None, max_length=200)
    code: str | int | None = None
    severity: int | None = Field(default=None, ge=1, le=4)  # LSP: 1 error … 4 hint
    range: Range | None = None

    def describe(self) -> str:
        """One line for the model: where, how bad, who says what."""
        where = f"line {self.range.start.line + 1}" if self.range else "somewhere"
        kind = SEVERITY.get(self.severity or 0, "problem")
        who = " ".join(str(x) for x in (self.source, self.code) if x not in (None, ""))
        return f"{where}: {kind}{f' ({who})' if who else ''}: {self.message}"


SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
