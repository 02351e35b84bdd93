"""Assemble streamed tool-call fragments into whole ToolCalls.

OpenAI streams each call as an id+name fragment followed by argument
fragments, keyed by `index`. Local servers bend this: some omit `index`,
some send every call at index 0 with distinct ids, some omit ids.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .messages import ToolCall


@dataclass
class _Slot:
    id: str | None = None
    name: str = ""
    parts: list[str] = field(default_factory=list)


class ToolCallAssembler:
    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}

    def add(
        self, index: int | None, id: str | None, name: str | None, arguments: str | None
    ) -> None:
        slot = self._slot_for(index, id, name)
        if id and not slot.id:
            slot.id = id
        if name:
            # A name arrives whole in one fragment; repeating servers resend it whole.
            slot.name = name if not slot.name or slot.name == name else slot.name + name
        if arguments:
            slot.parts.append(arguments)

    def _slot_for(self, index: int | None, id: str | None, name: str | None) -> _Slot:
        if id:
            for slot in self._slots:
                if slot.id == id:
                    return slot
        if index is not None:
            known = self._by_index.get(index)
            if known is not None and not (id and known.id and known.id != id):
                return known
        elif not id and not name and self._slots:
            return self._slots[-1]  # continuation fragment; a name would start a new call
        slot = _Slot()
        self._slots.append(slot)
        if index is not None:
            self._by_index[index] = slot
        return slot

    def __bool__(self) -> bool:
        return bool(self._slots)

    def finish(self) -> list[ToolCall]:
        """The assembled calls, in order; clears the assembler."""
        calls = [
            ToolCall.from_raw(
                slot.id or f"call_{n}_{uuid.uuid4().hex[:8]}", slot.name, "".join(slot.parts)
            )
            for n, slot in enumerate(self._slots)
        ]
        self._slots.clear()
        self._by_index.clear()
        return calls
