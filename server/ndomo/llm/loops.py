"""A streamed answer that repeats itself: small local models loop ("I'm glad you're
here." until the context is full), and nothing else stops them before the output cap.

The watch looks at the tail of the answer every `every` characters: when its last `span`
characters repeat with a period of at most `span // repeats` (the same stretch, `repeats`
times or more, back to back), the answer is looping. Natural prose and code do not repeat
exactly over that long a stretch; a run of one character (newlines, spaces, `=`) does, and
is a loop too.
"""

from __future__ import annotations


class LoopWatch:
    def __init__(self, span: int = 2000, repeats: int = 4, every: int = 250) -> None:
        self.span, self.repeats, self.every = span, repeats, every
        self._text: list[str] = []
        self._size = 0
        self._next = span

    def feed(self, piece: str) -> bool:
        """Add a streamed piece; True once the answer loops."""
        self._text.append(piece)
        self._size += len(piece)
        if self._size < self._next:
            return False
        self._next = self._size + self.every
        tail = "".join(self._text)[-(self.span + self.span // self.repeats) :]
        self._text = [tail]  # only the tail is ever looked at again
        return looping(tail, self.span, self.repeats)


def looping(text: str, span: int, repeats: int) -> bool:
    """Whether the last `span` characters of `text` have a period of at most span/repeats."""
    if len(text) < span + 1:
        return False
    last = text[-1]
    tail = text[-span:]
    for period in range(1, span // repeats + 1):
        # one character first: most periods fail there without copying the tail
        if text[-1 - period] == last and tail == text[-span - period : -period]:
            return True
    return False
