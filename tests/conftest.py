"""Suite-wide rules.

With `NDOMO_NO_SKIP=1` (set by `.ci/run`), a skipped test fails instead: the real-editor,
sandbox and inotify tests skip on a machine that lacks their component, and CI installs
every component, so a skip there means a real check silently did not run. Under the same
flag the run fails when it leaves anything in the system's temp folder (a socket VS Code
made, a folder a test forgot): tests clean up after themselves.
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if (
        os.environ.get("NDOMO_NO_SKIP") == "1"
        and report.skipped
        and not hasattr(report, "wasxfail")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under NDOMO_NO_SKIP=1 (CI must run every real check): {reason}"


XDG_PREFIX = "ndomo-test-xdg-"


def pytest_configure(config: pytest.Config) -> None:
    """The user's data and config directories (the trust record, user approvals, the user
    config file) point into a throw-away folder: the suite never reads or writes the real
    ones, and every `ndomo` subprocess inherits the same."""
    import tempfile

    # a nested pytest (a test's subprocess, whose NDOMO_* variables may be scrubbed) keeps
    # its parent's folder
    if XDG_PREFIX in os.environ.get("XDG_DATA_HOME", ""):
        return
    base = tempfile.mkdtemp(prefix=XDG_PREFIX)
    config._ndomo_xdg = base  # type: ignore[attr-defined]
    os.environ["XDG_DATA_HOME"] = os.path.join(base, "data")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(base, "config")
    # `ndomo run` hands no turn to a resident process (none stays behind a test); a test of
    # the resident turns it on, and its socket lives here (tests/unit/resident).
    os.environ["NDOMO_RESIDENT"] = "0"
    os.environ["NDOMO_RESIDENT_DIR"] = os.path.join(base, "resident")


def _temp_entries() -> set[str]:
    """What the temp folder holds. pytest's base folder for tmp_path is kept between runs by
    design; Neovim's per-user folder (`nvim.<user>`) is too, so what counts is what Neovim
    leaves inside it (a killed Neovim's own folder)."""
    import tempfile

    top = tempfile.gettempdir()
    names: set[str] = set()
    for n in os.listdir(top):
        if n.startswith("pytest-of-"):
            continue
        if n.startswith("nvim.") and os.path.isdir(os.path.join(top, n)):
            names.update(f"{n}/{c}" for c in os.listdir(os.path.join(top, n)))
            continue
        names.add(n)
    return names


def pytest_sessionstart(session: pytest.Session) -> None:
    import time

    session.config._ndomo_temp = _temp_entries()  # type: ignore[attr-defined]
    session.config._ndomo_start = time.time()  # type: ignore[attr-defined]


def _residents_left(since: float) -> list[int]:
    """Resident processes (`ndomo run`'s) started since `since` and still running, from the
    suite's folder or the default ones, stopped here: none may outlive the run (a user's
    own resident, older, is left alone)."""
    import glob
    import signal

    from ndomo.terminal.resident import server

    folders = {os.environ.get("NDOMO_RESIDENT_DIR", ""), f"/tmp/ndomo-{os.getuid()}"}
    if os.environ.get("XDG_RUNTIME_DIR", "").startswith("/run/"):
        folders.add(os.environ["XDG_RUNTIME_DIR"] + "/ndomo")
    left = []
    for lock in sorted(p for d in folders if d for p in glob.glob(f"{d}/run-*.lock")):
        pid = server.running(lock)
        if pid is not None and os.stat(lock).st_mtime >= since:
            left.append(pid)
            os.kill(pid, signal.SIGTERM)
    return left


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    since = getattr(session.config, "_ndomo_start", None)
    nested = getattr(session.config, "_ndomo_xdg", None) is None
    residents = [] if nested or since is None else _residents_left(since)
    if residents:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"resident processes left running (stopped): {residents}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    before = getattr(session.config, "_ndomo_temp", None)
    # a nested pytest (no folder of its own) leaves the check to the run that started it
    if before is None or getattr(session.config, "_ndomo_xdg", None) is None:
        return
    if os.environ.get("NDOMO_NO_SKIP") != "1":
        return
    left = sorted(_temp_entries() - before)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")
            reporter.write_line(
                f"left in the temp folder by this run ({len(left)}): {', '.join(left[:10])}",
                red=True,
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    base = getattr(config, "_ndomo_xdg", None)
    if base:
        shutil.rmtree(base, ignore_errors=True)
