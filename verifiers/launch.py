"""Start a verifier service as a child process on a free loopback port (tests, `make train`, `make eval`).

    with LocalServer(pool_size=2) as srv:
        client = VerifierClient(srv.target)

The server runs as its own process (``python -m verifiers.fronts.server``): the caller never imports the
server or the sandbox, so the same code works against a remote service.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class LocalServer:
    def __init__(
        self,
        pool_size: int = 1,
        registry: str | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        start_timeout_s: float = 180.0,
        log_path: str | None = None,
        command: list[str] | None = None,
    ):
        self.host = host
        self.port = port
        self.target = ""
        self.registry = registry or ""
        # command: what runs the server (default ``python -m verifiers.fronts.server``; a bench wraps it in its own)
        self._args = (
            [
                *(command or [sys.executable, "-m", "verifiers.fronts.server"]),
                "--host",
                host,
                "--port",
                str(port),
                "--pool-size",
                str(pool_size),
            ]
            + (["--registry", registry] if registry else [])
            + (extra_args or [])
        )
        self._env = {**os.environ, **(env or {})}
        self._timeout = start_timeout_s
        self._log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []

    def start(self) -> LocalServer:
        if not self.registry:
            d = ROOT / "var" / "tmp"
            d.mkdir(parents=True, exist_ok=True)
            self.registry = str(d / f"registry-{os.getpid()}-{time.monotonic_ns()}.sqlite")
            self._args += ["--registry", self.registry]
        stderr = open(self._log_path, "ab") if self._log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self._args, cwd=ROOT, env=self._env, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        finally:
            if stderr is not subprocess.DEVNULL:
                stderr.close()  # the child holds its own copy
        try:
            self._wait_serving()
        except BaseException:  # timeout, Ctrl-C, anything: never leave the child running
            self._abort()
            raise
        return self

    def _wait_serving(self) -> None:
        # The raw pipe, not readline(): a buffered readline can pull two lines ("HTTP SERVING on …" and
        # "SERVING on …") out of the pipe at once and return one, and select() then waits for the other.
        fd = self.proc.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + self._timeout
        pending = b""
        try:
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait()
                    raise RuntimeError(
                        f"verifier server exited ({code}) before serving; see {self._log_path or 'its log'}"
                    )
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace") + "\n"
                    self.output.append(line)
                    if line.startswith("SERVING on "):
                        self.target = line.split()[-1]
                        self.port = int(self.target.rsplit(":", 1)[1])
                        return
        finally:
            sel.close()
        raise RuntimeError(f"verifier server not SERVING within {self._timeout:.0f} s")

    def _abort(self, grace_s: float = 30.0) -> None:
        """SIGTERM (the server then removes the containers it started), SIGKILL after ``grace_s``."""
        try:
            self.stop(signal.SIGTERM, timeout_s=grace_s)
        finally:
            if self.proc.poll() is None:  # interrupted again while waiting: no more grace
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
