"""Helpers shared by the suites: free loopback ports, real child processes, waiting for HTTP.

Every process started here is put in its own process group and killed with it at teardown,
so a failing test never leaves a server or an agent behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from tests import prefork

ROOT = Path(__file__).resolve().parent.parent


def under_ci() -> bool:
    """True where the suite runs as CI (`CI=true`, which .ci/run sets and CI services set)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing_service(reason: str) -> NoReturn:
    """PostgreSQL or Redis does not answer (`reason` says which and why). On a developer's
    machine the test is skipped with the reason printed: a missing external service is the
    only honest skip. Under CI it is an error (issue 28 §6): .ci/run starts both services, so
    a green CI run has run every test that needs them."""
    import pytest  # here: bench/ imports this module too, without pytest's plugins

    if under_ci():
        pytest.fail(f"{reason} — under CI (CI=true) a missing service is an error, not a skip")
    print(f"\nskipping: {reason}")
    pytest.skip(reason)


# Quart's test app gives startup (migrations on a fresh database, the relay) 6 s, which a
# loaded machine has been seen to need more than; a real server has no such limit.
APP_START_S = 60


def serving(app):
    """`async with serving(app) as test_app`: the app started as Quart's test app, with time
    enough to start on a busy machine."""
    return app.test_app_class(app, startup_timeout=APP_START_S, shutdown_timeout=APP_START_S)


def _ephemeral_floor() -> int:
    """The lowest port the kernel hands out on its own (to `bind(0)` and to every outgoing
    connection's local end)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_slice() -> range:
    """This test process's own ports: a share, by xdist worker, of the ports below the kernel's
    ephemeral range. A port taken from `bind(0)` and closed again was free only at that moment:
    on a busy suite the kernel gave the same number to another test's connection to PostgreSQL
    or Redis before the server the port was meant for could bind it (CI, stop 36: "Address
    already in use"). Below that range only a test asks for a port by number, and each worker
    asks in its own slice."""
    low, high = 10000, _ephemeral_floor()
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    size = max(1, (high - low) // max(1, workers))
    return range(low + index * size, low + (index + 1) * size)


_PORTS = _port_slice()
_next_port = itertools.count(random.randrange(len(_PORTS)))


def free_port() -> int:
    """A loopback port no socket is bound to, from this process's slice, in turn, so that a
    port is not handed out again while an earlier test's server may still hold it."""
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_next_port) % len(_PORTS)]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))  # fails on a listener, or a port in TIME_WAIT
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORTS}")


def wait_for_http(url: str, timeout: float = 15.0, proc: subprocess.Popen | None = None) -> None:
    """Poll `url` until it answers any HTTP status; fail early if `proc` died."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # it answered, with an error status: it is up
        except OSError as exc:
            last = exc
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


class Lines:
    """A child's stderr read line by line on a thread; `wait_for` a pattern."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for raw in stream:
            with self._changed:
                self.lines.append(raw.decode(errors="replace"))
                self._changed.notify_all()

    def _wait(self, pattern: re.Pattern, within_s: float) -> re.Match:
        with self._changed:
            for _ in range(int(within_s * 10)):
                for line in self.lines:
                    if found := pattern.search(line):
                        return found
                self._changed.wait(0.1)
        raise AssertionError(f"no {pattern.pattern!r} in:\n{''.join(self.lines)}")

    async def wait_for(self, pattern: re.Pattern, within_s: float = 90) -> re.Match:
        return await asyncio.to_thread(self._wait, pattern, within_s)


class Processes:
    """Starts `rawp` (or any) child processes and ends every one of them on `close()`."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def rawp(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, **kwargs
    ) -> subprocess.Popen:
        """`python -m rawp_app.cli ARGS` in a new session; forked from tests.prefork's server,
        which has the imports done already, unless RAWP_TEST_PREFORK=0."""
        if prefork.ENABLED and set(kwargs) <= {"stdin", "stdout", "stderr"}:
            proc = prefork.fork_server().launch(
                args,
                env={**os.environ, **(env or {})},
                cwd=cwd or ROOT,
                stdin=kwargs.get("stdin"),
                stdout=kwargs.get("stdout", subprocess.PIPE),
                stderr=kwargs.get("stderr", subprocess.STDOUT),
            )
            self.procs.append(proc)
            return proc
        return self.start([sys.executable, "-m", "rawp_app.cli", *args], env=env, cwd=cwd, **kwargs)

    def start(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        **kwargs,
    ) -> subprocess.Popen:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.STDOUT)
        proc = subprocess.Popen(
            list(argv),
            env={**os.environ, **(env or {})},
            cwd=cwd or ROOT,
            start_new_session=True,
            **kwargs,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            _kill_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait(timeout=5)
        self.procs.clear()


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def self_signed_certificate(directory: Path, name: str | None = None) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (or for the DNS `name`) and its key (mode
    0600), for TLS tests."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name or "127.0.0.1")])
    alt = x509.DNSName(name) if name else x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([alt]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    os.chmod(key_path, 0o600)
    return cert_path, key_path


APT_LOCK = Path("/tmp/rawp-apt.lock")


def apt_install(*packages: str) -> str | None:
    """Make sure Debian packages the tests need on a fresh machine (Chromium, docker.io,
    debootstrap, docker-compose) are installed; None when they are, else why not. Callers ask
    every time, not only when a file is missing: under the one lock every install of the suite
    takes, whichever worker or checkout asks, a package another worker is still unpacking is
    waited for — its program appears on disk before its libraries do, and a Chromium started
    then showed blank pages. dpkg's own lock is waited for rather than refused: on a new
    machine the browser and Docker tests installed at once, and the loser's apt-get failed
    at once (a loaded run, issue 32)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with APT_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [name for name in packages if not _installed(name)]
        if not missing:
            return None
        install = ["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=600", *missing]
        try:
            done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:  # a stale package list names versions gone from the mirror
                subprocess.run(["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600"],
                               env=env, capture_output=True, timeout=600)  # fmt: skip
                done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot run apt-get install {' '.join(missing)}: {exc}"
    if done.returncode != 0:
        return f"apt-get install {' '.join(missing)} failed: {done.stderr[-500:]}"
    return None


def _installed(package: str) -> bool:
    """dpkg's word that `package` is unpacked *and* configured."""
    try:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return status.stdout.strip() == "install ok installed"
