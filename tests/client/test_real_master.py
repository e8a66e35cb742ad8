"""The local client against the real `rawp master` process: pairing (§3.3) and the config
sync after pairing and after a restart (§4.1.2), both over real loopback HTTP."""

from __future__ import annotations

import stat
import time

from tests.support import free_port, wait_for_http


def read_until(proc, needle: str, limit: float = 30.0) -> str:
    """Lines of a child's output up to the one containing `needle` (fails if it exits)."""
    seen = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never appeared in:\n{''.join(seen)}")


def test_pair_with_the_real_master_then_restart_and_sync_again(tmp_path, processes):
    master_port, client_port = free_port(), free_port()
    master_dir, client_dir = tmp_path / "master", tmp_path / "client"
    common = ["--dev", "--port", str(master_port), "--state-dir", str(master_dir)]
    master = processes.rawp("master", *common)
    wait_for_http(f"http://127.0.0.1:{master_port}/v1/auth/pair", proc=master)

    issue = processes.rawp("master", *common, "pairing-url", "--user", "local:test")
    out, _ = issue.communicate(timeout=60)
    assert issue.returncode == 0, out
    url = out.decode().strip().splitlines()[-1]
    assert url.startswith(f"http://127.0.0.1:{master_port}/v1/auth/pair?token=")

    address = f"http://127.0.0.1:{client_port}"
    pair = processes.rawp(
        "client",
        "pair",
        url,
        "--name",
        "test-box",
        "--dev",
        "--state-dir",
        str(client_dir),
        "--public-address",
        address,
    )
    out, _ = pair.communicate(timeout=60)
    assert pair.returncode == 0, out.decode()
    assert b"paired as 'test-box'" in out
    assert stat.S_IMODE((client_dir / "credentials.json").stat().st_mode) == 0o600

    # The pairing token is single use: a second pairing with it is refused by the master.
    again = processes.rawp("client", "pair", url, "--dev", "--state-dir", str(tmp_path / "x"))
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 2 and b"pairing refused" in out

    client = processes.rawp(
        "client",
        "--dev",
        "--port",
        str(client_port),
        "--state-dir",
        str(client_dir),
        "--allow-root",
        str(tmp_path),
    )
    log = read_until(client, "config synced with the master")
    assert "limits v1, capabilities v1" in log and "failed" not in log

    client.terminate()
    client.wait(timeout=30)

    # §3.5: leaving the network; afterwards there is nothing left to leave.
    leave = processes.rawp("client", "unpair", "--dev", "--state-dir", str(client_dir))
    out, _ = leave.communicate(timeout=60)
    assert leave.returncode == 0 and b"unpaired" in out, out
    again = processes.rawp("client", "unpair", "--dev", "--state-dir", str(client_dir))
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 2 and b"not paired" in out
