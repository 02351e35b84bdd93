"""The resident process: `ndomo run` hands its turn to a process that has imported ndomo
already, so a run reaches its model request in ~0.1 s instead of ~0.35 s.

- `client.py` (standard library only, imported before anything else of ndomo): finds the
  resident of this interpreter, hands it the run (argv, working folder, environment,
  umask and the terminal's stdin/stdout/stderr, passed as file descriptors), forwards
  signals and exits with the run's code; when none answers, the run goes on in-process and
  starts one for the next run.
- `server.py`: the resident. It imports the modules a run imported, then forks a child per
  run; the child becomes the caller (argv, folder, environment, stdio) and runs the
  command as the caller's own process would. It refuses callers of another user or in
  another namespace (a sandboxed command), answers nothing once its code changed on disk,
  and exits after `NDOMO_RESIDENT_IDLE` seconds without a run.
- `command.py`: `ndomo resident` (status, `--stop`; `--serve` is how a run starts it).

`NDOMO_RESIDENT=0` turns it off: every run starts its own Python, and none stays behind.
docs/architecture.md ("The resident process") and docs/security.md say more.
"""
