"""Files written whole or not at all (``-o`` of every command, ``html_report``), and the
lock that lets parallel processes (pytest workers, CI jobs) build one cache entry once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from infercast.errors import InfercastError


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a temporary file in the same directory."""
    real = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror}") from exc
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock (``fcntl.flock``) on ``path`` held for the ``with`` body."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
