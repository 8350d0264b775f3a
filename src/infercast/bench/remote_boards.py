"""Boards: where ``infercast bench --remote NAME`` connects, and which target a board is.

``~/.config/infercast/boards.toml`` (``$XDG_CONFIG_HOME`` respected;
``$INFERCAST_BOARDS`` names another file), one table per board::

    [boards.imx8mp]
    host = "192.168.7.2"          # required
    user = "root"                 # default: ssh's (your ~/.ssh/config, then your login)
    port = 22
    key = "~/.ssh/id_imx8mp"      # default: ssh's (agent, ~/.ssh/config)
    python = "/usr/bin/python3"   # default: python3 on the board's PATH
    target = "imx8mp-npu-vx"      # the infercast target this board is (for --target, calibrate)
    runtime = "tflite_runtime"    # default --runtime on this board
    delegate = "/usr/lib/libvx_delegate.so"   # default --delegate
    delegate_options = { }        # key = "value" strings for load_delegate
    threads = 4                   # default --threads
    ssh_options = ["-o", "ProxyJump=gateway"]   # more ssh arguments

``--remote`` also takes an address, ``[user@]host[:port]`` (``[::1]:2222`` for
IPv6), with everything else from ssh's own configuration.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infercast.errors import InfercastError

BOARDS_ENV = "INFERCAST_BOARDS"


class RemoteError(InfercastError):
    """A remote run could not start: a bad address or boards file, ssh failing, no Python."""


@dataclass(frozen=True)
class Board:
    host: str
    user: str | None = None
    port: int | None = None
    key: str | None = None
    python: str = "python3"
    name: str | None = None
    target: str | None = None
    runtime: str | None = None
    delegate: str | None = None
    delegate_options: Mapping[str, str] = field(default_factory=dict)
    threads: int | None = None
    ssh_options: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        return user + host + (f":{self.port}" if self.port else "")

    @property
    def label(self) -> str:
        return f"{self.name} ({self.address})" if self.name else self.address

    def to_dict(self) -> dict[str, Any]:
        return {
            "board": self.name,
            "host": self.host,
            "user": self.user,
            "port": self.port,
            "python": self.python,
            "target": self.target,
        }


def boards_path() -> Path:
    if os.environ.get(BOARDS_ENV):
        return Path(os.environ[BOARDS_ENV]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "infercast" / "boards.toml"


_KEYS: dict[str, type | tuple[type, ...]] = {
    "host": str,
    "user": str,
    "port": int,
    "key": str,
    "python": str,
    "target": str,
    "runtime": str,
    "delegate": str,
    "delegate_options": dict,
    "threads": int,
    "ssh_options": list,
}


def load_boards(path: str | Path | None = None) -> dict[str, Board]:
    """The boards of ``path`` (default :func:`boards_path`); a missing file has none."""
    p = Path(path) if path is not None else boards_path()
    if not p.is_file():
        if path is not None or os.environ.get(BOARDS_ENV):
            raise RemoteError(f"{p}: no such boards file")
        return {}
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise RemoteError(f"{p}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RemoteError(f"{p}: not valid TOML ({exc})") from None
    tables = data.get("boards", {})
    if not isinstance(tables, dict) or set(data) - {"boards"}:
        raise RemoteError(
            f"{p}: expected only [boards.NAME] tables", 'example: [boards.imx8mp] host = "10.0.0.2"'
        )
    out: dict[str, Board] = {}
    for name, t in tables.items():
        if not isinstance(t, dict):
            raise RemoteError(f"{p}: boards.{name} must be a table")
        for k, v in t.items():
            if k not in _KEYS:
                raise RemoteError(
                    f"{p}: boards.{name}.{k} is not a board setting",
                    f"known settings: {', '.join(_KEYS)}",
                )
            want = _KEYS[k]
            if not isinstance(v, want) or (want is int and isinstance(v, bool)):
                kind = want.__name__ if isinstance(want, type) else "value"
                raise RemoteError(f"{p}: boards.{name}.{k} must be a {kind}, got {v!r}")
        if "host" not in t:
            raise RemoteError(f"{p}: boards.{name} has no host")
        port = t.get("port")
        if port is not None and not 0 < port < 65536:
            raise RemoteError(f"{p}: boards.{name}.port {port} is not a TCP port")
        key = t.get("key")
        out[name] = Board(
            host=t["host"],
            user=t.get("user"),
            port=port,
            key=str(Path(key).expanduser()) if key else None,
            python=t.get("python", "python3"),
            name=name,
            target=t.get("target"),
            runtime=t.get("runtime"),
            delegate=t.get("delegate"),
            delegate_options={str(a): str(b) for a, b in t.get("delegate_options", {}).items()},
            threads=t.get("threads"),
            ssh_options=tuple(str(x) for x in t.get("ssh_options", [])),
        )
    return out


_ADDRESS = re.compile(
    r"^(?:(?P<user>[^@\s:/]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@\s:/\[\]]+))"
    r"(?::(?P<port>\d+))?$"
)


def parse_address(text: str) -> Board:
    """``[user@]host[:port]`` (``[v6-address]:port``) -> a :class:`Board`."""
    m = _ADDRESS.match(text.strip())
    if not m or text.strip().startswith("-"):
        raise RemoteError(
            f"--remote '{text}' is neither a board of {boards_path()} nor [user@]host[:port]",
            "example: --remote root@192.168.7.2:22",
        )
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise RemoteError(f"--remote '{text}': {port} is not a TCP port")
    return Board(host=m["v6"] or m["host"], user=m["user"], port=port)


def resolve_board(text: str, path: str | Path | None = None) -> Board:
    """A board of the boards file by name, else an address."""
    boards = load_boards(path)
    if text in boards:
        return boards[text]
    return parse_address(text)
