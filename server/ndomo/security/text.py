"""Text that cannot act: untrusted text (model answers, tool output, commands, questions)
made inert before it reaches a terminal or an editor's prompt.

- C0/C1 controls, bidi controls, zero-width and other format characters, line/paragraph
  separators and lone surrogates are shown as visible escapes (``\\x1b``, ``\\u202e``): an
  escape sequence cannot move the cursor, erase a line, hide text or set the clipboard,
  and reordered or invisible characters are seen. Newlines and tabs stay when asked.
- OSC sequences (``ESC ]`` … ``BEL``/``ESC \\``: clipboard, title, hyperlinks) are removed
  from model text whole, also when split across streamed chunks (``OscStripper``).
- ``one_line`` collapses whitespace and caps a subject with "… (N more characters)".
- ``inert_markdown`` breaks markdown links and ``command:`` targets, which VS Code renders
  as clickable in its notification toasts.

Pure logic: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

_SHOWN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_KEPT = {"\n", "\t"}

# Fast path: text with none of these needs no per-character look.
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")


def _escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def _shown(ch: str) -> bool:
    return unicodedata.category(ch) in _SHOWN_CATEGORIES


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control or invisible character as a visible escape.

    With ``keep_newlines``, a CRLF line end is a newline (a CR alone can overwrite the line,
    and is shown)."""
    if keep_newlines and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _PLAIN.fullmatch(text) and (keep_newlines or ("\n" not in text and "\t" not in text)):
        return text
    kept = _KEPT if keep_newlines else set()
    return "".join(_escape(ch) if ch not in kept and _shown(ch) else ch for ch in text)


# ESC ] … terminated by BEL, ESC \ or the C1 ST; the 8-bit OSC (U+009D) likewise.
_OSC = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)")
_OSC_START = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*\x1b?\Z|\x1b\Z")
OSC_MAX = 4096  # an unterminated OSC longer than this is shown, not held back


def strip_osc(text: str) -> str:
    return _OSC.sub("", text)


class OscStripper:
    """Removes OSC sequences from streamed text: a sequence cut between two chunks is held
    back until it ends (at most ``OSC_MAX`` characters, then shown escaped)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = strip_osc(self._held + chunk)
        self._held = ""
        m = _OSC_START.search(text)
        if m and len(text) - m.start() <= OSC_MAX:
            self._held = text[m.start() :]
            text = text[: m.start()]
        return text

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def model_text(text: str) -> str:
    """Model text for a terminal or a message: OSC removed, other controls shown."""
    return visible(strip_osc(text))


def cap(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def one_line(text: str, limit: int | None = None) -> str:
    """One line: whitespace runs collapsed to a space, controls shown, capped."""
    flat = " ".join(text.split())
    shown = visible(flat, keep_newlines=False)
    return cap(shown, limit) if limit is not None else shown


# [label](target): VS Code turns it into a link, `command:` targets run editor commands.
_MD_LINK = re.compile(r"\]\s*\(")
_COMMAND = re.compile(r"\bcommand:", re.IGNORECASE)


def inert_markdown(text: str) -> str:
    """Markdown links broken (``] (``) and ``command:`` targets spelled apart (``command :``)."""
    return _COMMAND.sub("command :", _MD_LINK.sub("] (", text))


def for_message(text: str) -> str:
    """Text for an editor's message, request or progress: controls shown, links inert."""
    return inert_markdown(visible(strip_osc(text)))
