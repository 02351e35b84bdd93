"""A real VS Code for tests: code-server 4.100.3 driven by headless Chromium (playwright-core).

`editors/vscode/scripts/install-code-server.sh` installs both into a cache directory outside
the repository; `.ci/run` runs it. Each `CodeServer` keeps its user data, extensions, config
and XDG directories in the test's temp directory and kills its whole process tree (the
extension host and the `ndomo serve` it started included) when stopped.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXT_SRC = REPO / "editors" / "vscode"
INSTALL_SCRIPT = EXT_SRC / "scripts" / "install-code-server.sh"
DRIVER = Path(__file__).with_name("vscode_driver.mjs")
CODE_SERVER_VERSION = "4.100.3"
CHROMIUM = os.environ.get("NDOMO_CHROMIUM", "/usr/bin/chromium")


def install_dir() -> Path:
    """Where install-code-server.sh puts code-server (same rule as the script)."""
    if os.environ.get("NDOMO_CODE_SERVER_DIR"):
        return Path(os.environ["NDOMO_CODE_SERVER_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ndomo" / f"code-server-{CODE_SERVER_VERSION}"


def entry_js() -> Path:
    return install_dir() / "node_modules" / "code-server" / "out" / "node" / "entry.js"


def missing() -> str | None:
    """Why the real-VS-Code tests cannot run here, or None."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not installed"
    if not entry_js().is_file():
        return f"code-server {CODE_SERVER_VERSION} not installed in {install_dir()}"
    if not (install_dir() / "node_modules" / "playwright-core").is_dir():
        return f"playwright-core not installed in {install_dir()}"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM}"
    return None


# -- building the extension (shared by test_vscode.py and test_vscode_real.py) -------------

_BUILT: dict[str, Path] = {}
_IGNORE = shutil.ignore_patterns("node_modules", "dist", "out-test", "*.vsix")


def npm_run(cmd: list[str], cwd: Path, timeout: float = 300) -> str:
    env = {**os.environ, "CI": "true", "npm_config_fund": "false", "npm_config_audit": "false",
           "npm_config_update_notifier": "false"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-4000:]}"
    return out


def extension_copy(base: Path) -> Path:
    """A fresh copy of editors/vscode with `npm ci` run from the lockfile (once per session)."""
    if "copy" not in _BUILT:
        work = base / "vscode-ext"
        shutil.copytree(EXT_SRC, work, ignore=_IGNORE)
        npm_run([shutil.which("npm") or "npm", "ci"], work, timeout=600)
        _BUILT["copy"] = work
    return _BUILT["copy"]


def extension_vsix(base: Path) -> Path:
    """The extension built and packaged as a .vsix (once per session)."""
    if "vsix" not in _BUILT:
        work = extension_copy(base)
        npm = shutil.which("npm") or "npm"
        npm_run([npm, "run", "build"], work)
        npm_run([npm, "run", "package"], work)
        (vsix,) = work.glob("*.vsix")
        _BUILT["vsix"] = vsix
    return _BUILT["vsix"]


# -- processes -------------------------------------------------------------------------------

def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(d.name))
    return kids


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc), found before anything is killed."""
    kids = _children()
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def mentioning(text: str) -> list[int]:
    """Processes whose command line contains `text` (a test's own temp path): helpers that
    detach from their parent, such as Chromium's crash handler, are found this way."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if text in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_tree(proc: subprocess.Popen, grace: float = 5.0) -> list[int]:
    """SIGTERM the process group and every descendant, then SIGKILL what is left.
    Returns the pids that were still alive afterwards (should be none)."""
    pids = [proc.pid, *descendants(proc.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            try:
                proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
        if not any(alive(p) for p in pids):
            break
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    return [p for p in pids if alive(p)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class CodeServer:
    """One code-server on 127.0.0.1 with its own dirs under `root`."""

    root: Path
    workspace: Path
    settings: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    trust: bool = False  # False: --disable-workspace-trust (every folder trusted)
    proc: subprocess.Popen | None = None
    port: int = 0
    # VS Code puts its IPC sockets in $XDG_RUNTIME_DIR and its TypeScript server's files in
    # $TMPDIR (else the system's temp folder, where they outlive the test): a short folder of
    # the test's own, as a socket path has ≤ 107 characters, removed by `stop`
    runtime_dir: Path | None = None

    @property
    def user_settings(self) -> Path:
        return self.root / "user-data" / "User" / "settings.json"

    @property
    def log(self) -> Path:
        return self.root / "code-server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={self.workspace}"

    def _common(self) -> list[str]:
        return ["--config", str(self.root / "config.yaml"), "--user-data-dir", str(self.root / "user-data"),
                "--extensions-dir", str(self.root / "extensions")]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VSCODE_", "ELECTRON_", "NDOMO_"))}
        home = self.root / "home"
        home.mkdir(exist_ok=True)
        if self.runtime_dir is None:
            self.runtime_dir = Path(tempfile.mkdtemp(prefix="ndomo-cs-", dir="/tmp"))
        env.update({
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "TMPDIR": str(self.runtime_dir),  # the TypeScript server's folder, and the rest
            "XDG_CONFIG_HOME": str(self.root / "xdg-config"),
            "XDG_DATA_HOME": str(self.root / "xdg-data"),
            "XDG_CACHE_HOME": str(self.root / "xdg-cache"),
            "XDG_STATE_HOME": str(self.root / "xdg-state"),
            # the extension host takes PATH from a login shell: give it a plain one, so what
            # it finds does not depend on this machine's shell profile
            "HOME": str(home),
            "SHELL": "/bin/sh",
        })
        env.update(self.env)
        return env

    def write_settings(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.user_settings.parent.mkdir(parents=True, exist_ok=True)
        # written in place, as an editor saves it: VS Code watches this file's inode, and a
        # rename-over would go unnoticed
        self.user_settings.write_text(json.dumps(settings, indent=2), encoding="utf-8")

    def start(self, vsix: Path) -> None:
        self.port = free_port()
        (self.root / "config.yaml").write_text(f"bind-addr: 127.0.0.1:{self.port}\nauth: none\ncert: false\n")
        self.write_settings(self.settings)
        node = shutil.which("node") or "node"
        inst = subprocess.run([node, str(entry_js()), *self._common(), "--install-extension", str(vsix)],
                              env=self._env(), capture_output=True, text=True, timeout=300)
        assert inst.returncode == 0 and "successfully installed" in inst.stdout, inst.stdout + inst.stderr
        flags = ["--disable-telemetry", "--disable-update-check", "--disable-getting-started-override"]
        if not self.trust:
            flags.append("--disable-workspace-trust")
        out = self.log.open("wb")
        self.proc = subprocess.Popen([node, str(entry_js()), *self._common(), *flags, str(self.workspace)],
                                     env=self._env(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        out.close()
        deadline = time.monotonic() + 120
        while "HTTP server listening" not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, f"code-server exited:\n{self.log.read_text(errors='replace')[-3000:]}"
            assert time.monotonic() < deadline, f"code-server did not start:\n{self.log.read_text(errors='replace')[-3000:]}"
            time.sleep(0.2)

    def stop(self) -> list[int]:
        if self.proc is None:
            self._remove_runtime_dir()
            return []
        left = kill_tree(self.proc)
        for p in mentioning(str(self.root)):  # anything that detached from code-server
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        self.proc = None
        self._remove_runtime_dir()
        return sorted({*left, *(p for p in mentioning(str(self.root)) if alive(p))})

    def _remove_runtime_dir(self) -> None:
        if self.runtime_dir is not None:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
            self.runtime_dir = None


class DriverError(AssertionError):
    pass


class Driver:
    """The node/playwright driver process (tests/editors/vscode_driver.mjs)."""

    def __init__(self, shots: Path) -> None:
        self.shots = shots
        self.home = shots / "browser-home"  # Chromium's profile, caches and crash database
        self.proc: subprocess.Popen | None = None
        self.browser_pid: int | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._id = 0
        self.shot_dir: Path = shots

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "NDOMO_CODE_SERVER_DIR": str(install_dir()), "NDOMO_CHROMIUM": CHROMIUM,
               "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / "config"),
               "XDG_CACHE_HOME": str(self.home / "cache")}
        self.proc = subprocess.Popen([shutil.which("node") or "node", str(DRIVER)], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True)
        threading.Thread(target=self._pump, daemon=True).start()
        hello = json.loads(self._next(120))
        assert hello.get("ready"), hello
        self.browser_pid = hello["browserPid"]

    def _pump(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put("")

    def _next(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise DriverError(f"driver silent for {timeout}s") from None
        if not line:
            err = self.proc.stderr.read() if self.proc and self.proc.stderr else ""
            raise DriverError(f"driver exited: {err[-3000:]}")
        return line

    def call(self, op: str, *, timeout: float = 180, shot: bool = True, **args: Any) -> Any:
        assert self.proc and self.proc.stdin
        self._id += 1
        if "wait_ms" in args:  # the driver's own timeout (`timeout` here is this side's, in s)
            args["timeout"] = args.pop("wait_ms")
        self.proc.stdin.write(json.dumps({"id": self._id, "op": op, **args}) + "\n")
        self.proc.stdin.flush()
        while True:
            msg = json.loads(self._next(timeout))
            if msg.get("id") == self._id:
                break
        if not msg["ok"]:
            where = ""
            if shot and op != "screenshot":
                where = f"\nscreenshot: {self.screenshot(f'failed-{op}')}"
            raise DriverError(f"{op} {json.dumps(args)[:300]} failed: {msg['error'][:3000]}{where}")
        return msg["value"]

    def screenshot(self, name: str, selector: str | None = None) -> Path | str:
        """The window (or the part `selector` names) as a PNG; a sentence when it failed."""
        path = self.shot_dir / f"{name}-{int(time.time() * 1000)}.png"
        try:
            args = {"selector": selector} if selector else {}
            self.call("screenshot", path=str(path), shot=False, timeout=60, **args)
        except DriverError as exc:
            return f"(no screenshot: {exc})"
        return path

    def stop(self) -> list[int]:
        """Close the browser, then kill the driver and everything below it (Chromium runs in
        its own process group, so it is killed by pid). Returns pids still alive."""
        if self.proc is None:
            return []
        tree = [self.proc.pid, *descendants(self.proc.pid), *mentioning(str(self.home))]
        try:
            if self.proc.poll() is None and self.proc.stdin:
                self.proc.stdin.write(json.dumps({"id": 0, "op": "close"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        left = kill_tree(self.proc)
        tree += mentioning(str(self.home))
        for p in tree:
            if alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(alive(p) for p in tree):
            time.sleep(0.1)
        self.proc = None
        return sorted({*left, *(p for p in tree if alive(p))})


STATUS = '[id="ndomo.ndomo"]'
# a webview view's page: VS Code's iframe, then the page's own frame inside it
CHAT = ["iframe.webview", "iframe#active-frame"]
TOAST = ".notifications-toasts .notification-toast"
ROWS = ".quick-input-list .monaco-list-row"
DIALOG = ".monaco-dialog-box"


# blurs the webview frame holding the focus, if one does; says whether it had to
_BLUR_WEBVIEW = """(() => {
    const a = document.activeElement;
    if (a && a.tagName === 'IFRAME') { a.blur(); return true; }
    return false;
})()"""
_BOX_VALUE = """(() => {
    const w = [...document.querySelectorAll('.quick-input-widget')].find(x => x.style.display !== 'none');
    const i = w && w.querySelector('.quick-input-box input');
    return i && document.activeElement === i ? i.value : null;
})()"""
# what a failed attempt leaves: the focused element and each quick-input widget's state
_FOCUS_REPORT = """(() => {
    const a = document.activeElement;
    const desc = e => e ? `${e.tagName}${e.id ? '#' + e.id : ''}.${String(e.className).split(' ').slice(0, 3).join('.')}` : 'none';
    const ws = [...document.querySelectorAll('.quick-input-widget')].map(w => ({
        display: w.style.display, placeholder: (w.querySelector('input') || {}).placeholder }));
    return JSON.stringify({ active: desc(a), hasFocus: document.hasFocus(),
        dialogs: document.querySelectorAll('.monaco-dialog-box').length, widgets: ws });
})()"""


class Workbench:
    """What a user does in the VS Code window, as driver calls."""

    def __init__(self, driver: Driver) -> None:
        self.d = driver
        self.url = ""

    def open(self, url: str) -> None:
        self.url = url
        self.d.call("open", url=url)
        self.d.call("waitSelector", selector=STATUS)

    # -- status bar ------------------------------------------------------------------------
    def status(self) -> str:
        return " ".join(t.strip() for t in self.d.call("texts", selector=STATUS))

    def wait_status(self, regex: str, timeout: float = 90_000) -> str:
        return self.d.call("waitText", selector=STATUS, regex=regex, timeout=timeout).strip()

    # -- quick input -----------------------------------------------------------------------
    def _settle_focus(self) -> None:
        """Give the focus to the workbench's page and wait until no webview takes it back.

        VS Code focuses a webview 50 ms after asking (webviewElement.ts `_doFocus`, its
        workaround for microsoft/vscode#75209) and again when a dialog gives the focus back to
        it; a palette opened in between closes at once (it closes on blur). A user's next key
        comes long after that; a driver's comes within milliseconds."""
        quiet = 0
        for _ in range(50):
            try:
                took = self.d.call("eval", js=_BLUR_WEBVIEW, shot=False)
            except DriverError as exc:  # a window reload still navigating: wait for its page
                if "context was destroyed" not in str(exc) and "navigat" not in str(exc):
                    raise
                self.d.call("waitSelector", selector=".monaco-workbench")
                took = True
            quiet = 0 if took else quiet + 1
            if quiet >= 3:
                return
            time.sleep(0.1)

    def _quick_input(self, keys: str, text: str) -> None:
        box = ".quick-input-widget .quick-input-box input"
        seen: list[str] = []
        for attempt in range(5):
            self.escape()
            self._settle_focus()
            # F1, then the palette's other key: one lost key press is not the test's subject
            self.d.call("press", keys="Control+Shift+P" if keys == "F1" and attempt % 2 else keys)
            try:
                self.d.call("waitSelector", selector=box, wait_ms=15_000, shot=False)
                # the box holds the focus and stays open past a webview's late focus request
                time.sleep(0.2)
                self.d.call("click", selector=box, wait_ms=3_000, shot=False)
                self.d.call("insert", text=text)
                value = self.d.call("eval", js=_BOX_VALUE)  # the palette's box starts with ">"
                if value is not None and value.removeprefix(">") == text:
                    return
                seen.append(f"attempt {attempt}: the box lost the text")
            except DriverError as e:
                seen.append(f"attempt {attempt}: {str(e).splitlines()[0][:200]}")
            seen.append(f"  focus and widgets: {self.d.call('eval', js=_FOCUS_REPORT)}")
        raise DriverError(f"the quick input ({keys}) did not take {text!r}:\n" + "\n".join(seen)
                          + f"\nscreenshot: {self.d.screenshot('failed-quick-input')}")

    def palette_labels(self, text: str) -> list[str]:
        self._quick_input("F1", text)
        self.d.call("waitText", selector=ROWS, text=text)
        labels = self.d.call("attr", selector=ROWS, name="aria-label")
        self.escape()
        return [str(x) for x in labels if x]

    def palette(self, label: str) -> None:
        """Run a command by its palette label (category included, e.g. "ndomo: Health")."""
        self._quick_input("F1", label)
        try:
            self.d.call("waitText", selector=ROWS, text=label, shot=False)
        except DriverError:  # the palette opened without the text (F1 raced a focus change)
            self._quick_input("F1", label)
        self.pick(label)

    def pick(self, label: str, exact: bool = False) -> None:
        """Choose the quick-pick row whose label starts with `label` (or equals it)."""
        self.d.call("waitText", selector=ROWS, text=label)
        esc = "".join("\\" + c if c in ".*+?^${}()|[]\\" else c for c in label)
        regex = f"^\\s*(\\$\\(check\\)\\s*)?{esc}" + ("\\s*$" if exact else "")
        self.d.call("click", selector=f"{ROWS} .label-name, {ROWS} .monaco-icon-label", regex=regex)

    def input(self, text: str) -> None:
        """Answer an input box."""
        self.d.call("waitSelector", selector=".quick-input-widget .quick-input-box input")
        self.d.call("insert", text=text)
        self.d.call("press", keys="Enter")

    def escape(self) -> None:
        self.d.call("press", keys=["Escape", "Escape"])

    # -- editors ---------------------------------------------------------------------------
    def open_file(self, name: str) -> None:
        # Quick Open's file index can miss a file created a moment ago ("No matching results"):
        # asking again re-queries it, as a user would.
        for attempt in range(4):
            self._quick_input("Control+p", name)
            try:  # the focused row, once the list is filtered (before that it lists recent files)
                self.d.call("waitText", selector=f"{ROWS}.focused", regex=f"^\\s*{name}", timeout=15000)
                break
            except DriverError:
                if attempt == 3:
                    raise
                self.d.call("press", keys="Escape")
        self.d.call("press", keys="Enter")
        self.d.call("waitText", selector=".editor-group-container .tab.active", text=name)

    def select_line(self, text: str) -> None:
        """Put the cursor on the line holding `text` and select the whole line."""
        self.d.call("click", selector=".editor-group-container.active .monaco-editor .view-line", text=text)
        self.d.call("press", keys=["Home", "Home", "Shift+End"])

    def close_all_editors(self) -> None:
        """Close every editor, dropping unsaved changes (no save prompt)."""
        for _ in range(30):
            if not self.d.call("count", selector=".editor-group-container .tab"):
                return
            self.palette("View: Revert and Close Editor")
        raise DriverError(f"editors would not close; screenshot: {self.d.screenshot('close-all')}")

    def editor_text(self) -> str:
        """Visible text of the active editor (enough for the small files used here)."""
        return "\n".join(self.d.call("texts", selector=".editor-group-container.active .monaco-editor .view-lines"))

    def wait_editor_text(self, text: str, gone: bool = False) -> None:
        self.d.call("waitText", selector=".editor-group-container.active .monaco-editor .view-lines", text=text, gone=gone)

    def focus(self) -> dict[str, Any]:
        """Where keyboard focus is: the active tab of the group that holds it, and editor groups' tabs."""
        return self.d.call("eval", js="""(() => {
            const el = document.activeElement;
            const group = el && el.closest('.editor-group-container');
            const tab = group && group.querySelector('.tab.active');
            const groups = [...document.querySelectorAll('.editor-group-container')].map(
                g => [...g.querySelectorAll('.tab')].map(t => t.innerText.trim()));
            return {inEditor: !!(el && el.closest('.monaco-editor')), tab: tab ? tab.innerText.trim() : null, groups};
        })()""")

    def go_to_line(self, line: int, column: int = 1) -> None:
        """Move the active editor's cursor, as Go to Line does (Quick Open's ":line:column",
        through the guarded quick input: a bare Ctrl+G raced a webview's late focus request
        and its box closed before the text)."""
        want = f"Ln {line}, Col {column}"
        seen: list[str] = []
        for attempt in range(3):
            self._quick_input("Control+p", f":{line}:{column}")
            try:  # Enter before the go-to-line row shows accepts nothing (one CI run in five)
                self.d.call("waitText", selector=ROWS, regex=f"\\b{line}\\b", wait_ms=15_000, shot=False)
            except DriverError as e:
                seen.append(f"attempt {attempt}: no go-to-line row: {str(e).splitlines()[0][:200]}")
                continue
            self.d.call("press", keys="Enter")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.cursor().startswith(want):
                    return
                time.sleep(0.1)
            seen.append(f"attempt {attempt}: the cursor stayed at {self.cursor()!r}")
        raise DriverError(f"Go to Line did not reach {want!r}:\n" + "\n".join(seen)
                          + f"\nscreenshot: {self.d.screenshot('go-to-line')}")

    def cursor(self) -> str:
        """The status bar's cursor position, e.g. "Ln 2, Col 5"."""
        return " ".join(self.d.call("texts", selector='[id="status.editor.selection"]')).strip()

    def code_action(self, title: str) -> None:
        """Run the code action (or quick fix) whose title starts with `title`."""
        self.d.call("press", keys="Control+.")
        self.d.call("waitText", selector=".action-widget .monaco-list-row", text=title)
        # the keyboard, as a user would: mouse clicks on this widget race its layout
        for _ in range(12):
            focused = self.d.call("attr", selector=".action-widget .monaco-list-row.focused", name="aria-label")
            if focused and str(focused[0]).startswith(title):
                self.d.call("press", keys="Enter")
                return
            self.d.call("press", keys="ArrowDown")
        raise DriverError(f"code action {title!r} could not be focused; screenshot: {self.d.screenshot('code-action')}")

    def edit_user_settings(self, server: CodeServer, settings: dict[str, Any]) -> None:
        """Replace the user settings the way a user does: in settings.json, saved in the editor.
        (code-server does not notice the file changing behind its back.)"""
        self.palette("Preferences: Open User Settings (JSON)")
        self.d.call("waitText", selector=".editor-group-container .tab.active", text="settings.json")
        self.d.call("click", selector=".editor-group-container.active .monaco-editor .view-line")
        self.d.call("press", keys=["Control+a", "Delete"])
        self.d.call("insert", text=json.dumps(settings))  # one line: no auto-indent to fight
        self.save()
        deadline = time.monotonic() + 60
        while True:
            try:
                if json.loads(server.user_settings.read_text(encoding="utf-8")) == settings:
                    break
            except ValueError:
                pass
            if time.monotonic() > deadline:
                raise DriverError(f"settings.json not saved as intended: {server.user_settings.read_text()!r}; "
                                  f"screenshot: {self.d.screenshot('settings')}")
            time.sleep(0.2)
        server.settings = settings
        self.palette("View: Close Editor")

    def save(self) -> None:
        self.d.call("press", keys="Control+s")

    # -- notifications ---------------------------------------------------------------------
    def toasts(self) -> list[str]:
        return self.d.call("texts", selector=TOAST)

    def wait_toast(self, text: str | None = None, regex: str | None = None, timeout: float = 90_000) -> str:
        return self.d.call("waitText", selector=TOAST, text=text, regex=regex, timeout=timeout)

    def toast_gone(self, text: str, timeout: float = 90_000) -> None:
        self.d.call("waitText", selector=TOAST, text=text, gone=True, timeout=timeout)

    def toast_buttons(self, text: str) -> list[dict[str, Any]]:
        """Buttons of the toast containing `text`: label and whether it is cut off."""
        return self.d.call("eval", js=f"""(() => {{
            const toast = [...document.querySelectorAll('{TOAST}')].find(t => t.innerText.includes({json.dumps(text)}));
            if (!toast) return [];
            return [...toast.querySelectorAll('.monaco-button')].map(b => ({{
                label: b.innerText.trim(), clipped: b.scrollWidth > b.clientWidth + 1,
                title: b.getAttribute('title') || ''}}));
        }})()""")

    def click_toast_button(self, text: str, button: str) -> None:
        self.d.call("eval", js=f"""(() => {{
            const toast = [...document.querySelectorAll('{TOAST}')].find(t => t.innerText.includes({json.dumps(text)}));
            const b = toast && [...toast.querySelectorAll('.monaco-button')].find(b => b.innerText.trim() === {json.dumps(button)});
            if (!b) throw new Error('no button ' + {json.dumps(button)} + ' in a toast with ' + {json.dumps(text)});
            return true;
        }})()""")
        self.d.call("click", selector=f"{TOAST} .monaco-button", regex=f"^\\s*{button}\\s*$")

    def clear_toasts(self) -> None:
        self._quick_input("F1", "Notifications: Clear All Notifications")
        self.pick("Notifications: Clear All Notifications")

    # -- modal dialogs (showWarningMessage with modal: true) ---------------------------------
    def wait_dialog(self, text: str, timeout: float = 90_000) -> str:
        """The open modal dialog's text (message and detail) once it holds `text`."""
        return self.d.call("waitText", selector=DIALOG, text=text, timeout=timeout)

    def dialog_buttons(self) -> list[str]:
        return [t.strip() for t in self.d.call("texts", selector=f"{DIALOG} .dialog-buttons .monaco-button")]

    def click_dialog_button(self, label: str) -> None:
        esc = "".join("\\" + c if c in ".*+?^${}()|[]\\" else c for c in label)
        self.d.call("click", selector=f"{DIALOG} .dialog-buttons .monaco-button", regex=f"^\\s*{esc}\\s*$")
        self.d.call("waitSelector", selector=DIALOG, state="detached")

    def dismiss_dialog(self) -> None:
        """Escape, as a user closing the dialog without an answer."""
        self.d.call("press", keys="Escape")
        self.d.call("waitSelector", selector=DIALOG, state="detached")

    def dialogs(self) -> int:
        return int(self.d.call("count", selector=DIALOG))

    # -- panels ----------------------------------------------------------------------------
    def problems(self, text: str) -> list[str]:
        """Open the Problems panel, wait for a row with `text`, return every row."""
        self.palette("View: Focus Problems (Errors, Warnings, Infos)")
        self.d.call("waitText", selector=".markers-panel .monaco-list-row", text=text)
        return self.d.call("texts", selector=".markers-panel .monaco-list-row")

    # -- the conversation view (a webview: its DOM is two iframes down) ----------------------
    def open_chat(self) -> None:
        """Open the conversation view (the ndomo activity-bar container's view)."""
        self.palette("ndomo: Focus on Conversation View")
        self.d.call("frameWaitText", frames=CHAT, selector="#send", text="Send")

    def chat_page(self) -> dict[str, Any]:
        """The view's page: its CSP meta, scripts, links, resources fetched and origin."""
        return self.d.call("framePage", frames=CHAT)

    def chat_send(self, prompt: str) -> None:
        self.d.call("frameFill", frames=CHAT, selector="#prompt", text=prompt)
        self.d.call("frameClick", frames=CHAT, selector="#send")

    def chat_select(self, selector: str, value: str) -> None:
        """Pick the option `value` of a <select> in the view."""
        self.d.call("frameSelect", frames=CHAT, selector=selector, value=value)

    def chat_click(self, selector: str, text: str | None = None) -> None:
        self.d.call("frameClick", frames=CHAT, selector=selector, text=text)

    def chat_eval(self, js: str) -> Any:
        """A function (its source, called with the page's root element) run in the view's page."""
        return self.d.call("frameEval", frames=CHAT, js=js)

    def wait_chat(self, selector: str, text: str | None = None, regex: str | None = None, gone: bool = False) -> str:
        return self.d.call("frameWaitText", frames=CHAT, selector=selector, text=text, regex=regex, gone=gone)
