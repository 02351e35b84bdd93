"""The half of a loopback relay that runs INSIDE a sandbox's own network namespace.

This file imports nothing from ndomo: its text runs as `python -I -c` inside bubblewrap
(`-I`: the workspace cannot shadow a module it imports). Two modes, one port each:

  serve FD PORT — FD is a TCP socket bound to the host's 127.0.0.1:PORT (ndomo bound it).
      Once the served process listens on 127.0.0.1:PORT inside the sandbox, FD starts
      listening, so the host sees the port open exactly when the server is up; every
      connection is piped to the inner port. Host → sandbox only.
  ask FD PORT CMD… — FD is one end of a unix socket pair whose other end ndomo holds.
      Listens on 127.0.0.1:PORT inside (a browser's namespace), then runs CMD and exits
      with its code; for each connection it asks ndomo for a socket connected to the
      host's 127.0.0.1:PORT and pipes to it. Nothing else on the host is reachable: ndomo
      connects only to that port.
"""

import asyncio
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


async def _pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def _join(client_r, client_w, server_r, server_w):
    try:
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))
    finally:
        for w in (client_w, server_w):
            w.close()


def _wait_inner(port):
    while True:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


async def serve(fd, port):
    outer = socket.socket(fileno=fd)
    await asyncio.to_thread(_wait_inner, port)
    outer.listen(64)
    outer.setblocking(False)

    async def handle(r, w):
        try:
            sr, sw = await asyncio.open_connection(HOST, port)
        except OSError:
            w.close()
            return
        await _join(r, w, sr, sw)

    server = await asyncio.start_server(handle, sock=outer)
    await server.serve_forever()


async def ask(fd, port, argv):
    broker = socket.socket(fileno=fd)
    lock = threading.Lock()

    def connected():
        with lock:
            broker.sendall(b"c")
            _, fds, _, _ = socket.recv_fds(broker, 1, 1)
        if not fds:
            raise OSError("the host refused the connection")
        s = socket.socket(fileno=fds[0])
        s.setblocking(False)
        return s

    async def handle(r, w):
        try:
            s = await asyncio.to_thread(connected)
            sr, sw = await asyncio.open_connection(sock=s)
        except OSError:
            w.close()
            return
        await _join(r, w, sr, sw)

    server = await asyncio.start_server(handle, HOST, port)
    child = await asyncio.create_subprocess_exec(*argv, pass_fds=())
    code = await child.wait()
    server.close()
    return code


if __name__ == "__main__":
    mode, fd_arg, port_arg = sys.argv[1:4]
    if mode == "serve":
        asyncio.run(serve(int(fd_arg), int(port_arg)))
    else:
        sys.exit(asyncio.run(ask(int(fd_arg), int(port_arg), sys.argv[4:])))
