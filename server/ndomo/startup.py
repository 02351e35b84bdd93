"""The cyclic garbage collector while a process starts.

Start-up makes hundreds of thousands of objects that live as long as the process (modules,
classes, pydantic's validators and schemas) and no garbage worth a pass: the collector,
triggered every few hundred allocations, walked that growing heap again and again while
it was being built — ~100 ms of `ndomo run`'s ~450 ms to its request on this project's
VM (docs/performance.md, "Stop 29"). `hold()` turns it off when the command starts;
`release()`, once the command's registries are built (or a server's warm-up is done),
freezes what start-up made (left out of every later collection, including the one at
exit) and turns it back on. A one-shot command (an action) may end still held: it
frees its memory by exiting.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Collector off until `release()` (only if it was on: a caller's choice is kept)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """Freeze the heap so far and turn the collector back on if `hold()` turned it off.
    Safe to call more than once, and without `hold()` (it then only freezes)."""
    global _held
    gc.freeze()
    if _held:
        _held = False
        gc.enable()
