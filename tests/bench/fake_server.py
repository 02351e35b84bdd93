"""`python -m tests.bench.fake_server`: the fake model (tests/fakes/fake_model.py) as a
process, with TCP_NODELAY on its connections.

Without it a stream's small writes (headers, then the first chunk) meet the client's
delayed ACK: ~40 ms stalls that hit raw and ndomo requests at random and drown what the
benchmarks measure. Real model servers (uvicorn, llama.cpp) set TCP_NODELAY too.
"""

from __future__ import annotations

import socket
import sys

from tests.fakes import fake_model

_setup = fake_model._Handler.setup


def _nodelay_setup(self) -> None:
    _setup(self)
    self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


fake_model._Handler.setup = _nodelay_setup  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(fake_model.main())
