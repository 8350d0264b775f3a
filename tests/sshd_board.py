"""A real OpenSSH server on a loopback port, with an unprivileged user standing in for a board.

Used by ``tests/test_remote.py``. Everything is generated in a temporary folder:
host key, client key (and a second key the server does not know), an
``sshd_config`` (``UsePAM no``, ``StrictModes no``, ``AuthorizedKeysFile`` in
that folder), a client ``ssh_config`` with a ``known_hosts`` holding the host
key, and a boards file. The board user (``icb<pid>``) is created with
``useradd`` and deleted afterwards; its Python is a venv of Debian's
``/usr/bin/python3`` holding copies of this machine's numpy, ai-edge-litert and
onnxruntime distributions (and nothing of infercast), cached in
``/var/tmp/infercast-test-board`` (readable by the board user, unlike /root).

Needs root (sshd, useradd) and ``/usr/sbin/sshd`` (Debian's ``openssh-server``,
which ``.ci/run`` installs): without them the tests fail with a message, they
do not skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
BOARD_PYTHON = Path("/usr/bin/python3")
BOARD_DISTS = ("numpy", "ai-edge-litert", "onnxruntime")
VENV_ROOT = Path("/var/tmp/infercast-test-board")


@dataclass
class SshBoard:
    user: str
    port: int
    closed_port: int
    dir: Path
    python: str
    ssh_env: dict[str, str]
    """Environment for infercast: INFERCAST_SSH (our ssh_config) and INFERCAST_BOARDS."""

    def processes(self) -> list[str]:
        r = subprocess.run(
            ["ps", "-ww", "-u", self.user, "-o", "pid=,args="], capture_output=True, text=True
        )
        return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]

    def files(self) -> list[str]:
        """What the board user owns in the temporary folders (nothing, after a run)."""
        out: list[str] = []
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            r = subprocess.run(
                ["find", d, "-maxdepth", "1", "-user", self.user],
                capture_output=True,
                text=True,
            )
            out += [ln for ln in r.stdout.splitlines() if ln.strip()]
        return out

    def settle(self, timeout_s: float = 15.0) -> tuple[list[str], list[str]]:
        """Wait until the board user has no processes; then (processes, files) left."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and self.processes():
            time.sleep(0.1)
        return self.processes(), self.files()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def board_venv() -> Path:
    """A venv of /usr/bin/python3 with copies of this machine's runtime distributions."""
    versions = {d: md.version(d) for d in BOARD_DISTS}
    key = hashlib.sha256(repr(sorted(versions.items())).encode()).hexdigest()[:12]
    venv = VENV_ROOT / f"venv-{key}"
    VENV_ROOT.mkdir(parents=True, exist_ok=True)
    os.chmod(VENV_ROOT, 0o755)
    with (VENV_ROOT / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / "ok").is_file():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([str(BOARD_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True)
        ver = subprocess.run(
            [str(BOARD_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        site = venv / "lib" / f"python{ver}" / "site-packages"
        for name in BOARD_DISTS:
            dist = md.distribution(name)
            for f in dist.files or ():
                if Path(f).parts[0] == "..":
                    continue
                src = Path(str(dist.locate_file(f)))
                if src.is_file():
                    out = site / f
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, out)
        for root, dirs, files in os.walk(venv):
            for n in dirs:
                os.chmod(os.path.join(root, n), 0o755)
            for n in files:
                p = os.path.join(root, n)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode | 0o444)
        (venv / "ok").write_text("\n".join(f"{k}=={v}" for k, v in versions.items()))
    return venv


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    end = time.monotonic() + 15
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited ({proc.returncode}): {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"sshd did not listen on {port}: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def ssh_board(target: str = "host") -> Iterator[SshBoard]:
    if not SSHD.exists():
        raise RuntimeError(
            f"{SSHD} is missing: install Debian's openssh-server "
            "(apt-get install -y openssh-server; .ci/run does it)"
        )
    if os.geteuid() != 0:
        raise RuntimeError("the SSH tests need root: they run sshd and create a board user")
    venv = board_venv()
    user = f"icb{os.getpid()}"[:31]
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", user], check=True, capture_output=True)
    # A locked account ('!' in shadow) is refused by sshd without PAM, even with a key.
    subprocess.run(["usermod", "-p", "*", user], check=True)
    # A board folder left by an aborted earlier session whose user had the same uid
    # (userdel frees it for reuse) would read as this board's leftover.
    uid = int(subprocess.run(["id", "-u", user], capture_output=True, text=True).stdout)
    for stale in Path("/tmp").glob("infercast-bench-*"):
        if stale.stat().st_uid == uid:
            shutil.rmtree(stale, ignore_errors=True)
    d = Path(tempfile.mkdtemp(prefix="infercast-sshd-"))
    os.chmod(d, 0o755)
    proc: subprocess.Popen[bytes] | None = None
    try:
        for name in ("host_key", "client_key", "wrong_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(d / name)],
                check=True,
            )
        (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
        os.chmod(d / "authorized_keys", 0o644)
        port, closed = _free_port(), _free_port()
        (d / "sshd_config").write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n"
            f"PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n"
            "PubkeyAuthentication yes\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"AllowUsers {user}\nPermitRootLogin no\nLogLevel VERBOSE\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
        log = d / "sshd.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(d / "sshd_config")], stderr=fh, stdout=fh
            )
        _wait_port(port, proc, log)
        host_pub = (d / "host_key.pub").read_text().split()
        (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
        (d / "ssh_config").write_text(
            f"Host *\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n"
            "  IdentitiesOnly yes\n  IdentityAgent none\n"
            f"Host loopback-board\n  HostName 127.0.0.1\n  HostKeyAlias [127.0.0.1]:{port}\n"
            f"  IdentityFile {d}/client_key\n"
        )
        py = str(venv / "bin" / "python")
        common = f'host = "127.0.0.1"\nuser = "{user}"\nport = {port}\n'
        (d / "boards.toml").write_text(
            f'[boards.loop]\n{common}key = "{d}/client_key"\npython = "{py}"\n'
            f'target = "{target}"\n\n'
            f'[boards.wrongkey]\n{common}key = "{d}/wrong_key"\npython = "{py}"\n\n'
            f'[boards.wrongport]\nhost = "127.0.0.1"\nuser = "{user}"\nport = {closed}\n'
            f'key = "{d}/client_key"\npython = "{py}"\n\n'
            f'[boards.nopython]\n{common}key = "{d}/client_key"\n'
            'python = "/opt/no-such-python/bin/python3"\n'
        )
        env = {
            "INFERCAST_SSH": f"ssh -F {d}/ssh_config",
            "INFERCAST_BOARDS": str(d / "boards.toml"),
        }
        yield SshBoard(user, port, closed, d, py, env)
    finally:
        if proc is not None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        # Processes the tests started as the board user (none, when the tests pass);
        # userdel refuses a user with processes, so kill them by id and retry.
        for _ in range(20):
            r = subprocess.run(["ps", "-u", user, "-o", "pid="], capture_output=True, text=True)
            for pid in r.stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), 9)
            if subprocess.run(["userdel", "-r", user], capture_output=True).returncode in (0, 6):
                break
            time.sleep(0.5)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":  # python tests/sshd_board.py: a board to try by hand
    with ssh_board() as b:
        print(f"export INFERCAST_SSH='{b.ssh_env['INFERCAST_SSH']}'")
        print(f"export INFERCAST_BOARDS={b.ssh_env['INFERCAST_BOARDS']}")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(3600)
