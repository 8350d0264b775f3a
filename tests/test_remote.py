"""``infercast bench --remote``: a real OpenSSH server on a loopback port, a separate
unprivileged user as the board, its own Python venv with LiteRT and ONNX Runtime
(``tests/sshd_board.py``). Every failure leaves no file and no process of that user.

No test asserts a speed against the clock: the remote/local agreement asserted
here is a load-robust ratio (0.5-2); the 5% figure is measured by
``bench/bench_remote.py``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infercast.analysis.cost import analyze_graph
from infercast.bench import bench
from infercast.bench.harness import RunSpec, TimingConfig
from infercast.bench.remote import SHIPPED, bench_remote, plan_remote_runs, remote_command
from infercast.bench.remote_boards import RemoteError, load_boards, parse_address, resolve_board
from infercast.frontends import load

sys.path.insert(0, str(Path(__file__).parent))
from sshd_board import SshBoard, ssh_board

FAST = TimingConfig(warmup_runs=2, warmup_time_s=0.0, min_runs=10, min_time_s=0.3)
BENCH = Path(__file__).resolve().parents[1] / "src" / "infercast" / "bench"
A_MINUTE = ("--min-time", "60", "--max-time", "60")
"""Timing options of a run that lasts a minute: one that is still going when it is stopped."""


@pytest.fixture(scope="module")
def board() -> Iterator[SshBoard]:
    try:
        cm = ssh_board()
        b = cm.__enter__()
    except RuntimeError as exc:  # no sshd / not root: fail loudly, never skip
        pytest.fail(f"cannot start the loopback SSH board: {exc}")
    old = {k: os.environ.get(k) for k in b.ssh_env}
    os.environ.update(b.ssh_env)
    try:
        yield b
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cm.__exit__(None, None, None)


def _clean(b: SshBoard) -> None:
    procs, files = b.settle()
    assert procs == [], f"processes left on the board: {procs}"
    assert files == [], f"files left on the board: {files}"


def _cli(b: SshBoard, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **b.ssh_env}
    return subprocess.run(
        [sys.executable, "-m", "infercast", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _cli_env(
    b: SshBoard, extra: dict[str, str], *args: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """:func:`_cli` with ``COLUMNS`` as given in ``extra`` (unset when absent)."""
    env = {k: v for k, v in {**os.environ, **b.ssh_env}.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "infercast", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, **extra},
    )


def _one_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


# --------------------------------------------------------------------------- #
# What goes to the board
# --------------------------------------------------------------------------- #


def test_shipped_modules_need_only_stdlib_numpy_and_the_runtime() -> None:
    allowed = set(sys.stdlib_module_names) | {"numpy", "onnxruntime", "__future__"}
    shipped = {m[:-3] for m in SHIPPED}
    for name in SHIPPED:
        src = (BENCH / name).read_text()
        tree = ast.parse(src, feature_version=(3, 8))  # boards run old Pythons
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name.split(".")[0] in allowed, f"{name} imports {a.name}"
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: must be another shipped module
                    assert node.module in shipped, f"{name} imports .{node.module}"
                else:
                    top = (node.module or "").split(".")[0]
                    assert top in allowed, f"{name} imports from {node.module}"
    # The board's shell finds Python, else says so in a line the host recognises.
    assert "command -v" in remote_command("python3") and "no-python" in remote_command("x")


def test_boards_file_and_addresses(tmp_path: Path) -> None:
    f = tmp_path / "boards.toml"
    f.write_text(
        '[boards.imx8mp]\nhost = "10.0.0.2"\nuser = "root"\nport = 2222\n'
        'key = "~/.ssh/id_board"\npython = "/usr/bin/python3"\ntarget = "imx8mp-npu-vx"\n'
        'delegate = "/usr/lib/libvx_delegate.so"\nthreads = 4\n'
    )
    b = load_boards(f)["imx8mp"]
    assert (b.host, b.user, b.port, b.target, b.threads) == (
        "10.0.0.2",
        "root",
        2222,
        "imx8mp-npu-vx",
        4,
    )
    assert b.key == str(Path("~/.ssh/id_board").expanduser())
    assert resolve_board("imx8mp", f).delegate == "/usr/lib/libvx_delegate.so"
    a = parse_address("pi@raspberrypi.local:2200")
    assert (a.user, a.host, a.port) == ("pi", "raspberrypi.local", 2200)
    a = parse_address("[::1]:22")
    assert (a.user, a.host, a.port) == (None, "::1", 22)
    for bad in ("a@b@c", "host:99999", "-oProxyCommand=x"):
        with pytest.raises(RemoteError):
            parse_address(bad)
    f.write_text('[boards.x]\nhost = "h"\nspeed = 3\n')
    with pytest.raises(RemoteError, match=r"boards.x.speed is not a board setting"):
        load_boards(f)
    f.write_text('[boards.x]\nhost = "h"\nport = "22"\n')
    with pytest.raises(RemoteError, match="must be a int"):
        load_boards(f)


# --------------------------------------------------------------------------- #
# A real board
# --------------------------------------------------------------------------- #


def test_remote_median_agrees_with_local_and_reports_the_board(
    board: SshBoard, edge_dir: Path
) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    loop = resolve_board("loop")
    local_specs = [RunSpec(str(model), "litert", 1, timing=FAST)]
    remote_specs = plan_remote_runs(model, "litert", [1], timing=FAST)
    medians: dict[str, list[float]] = {"local": [], "remote": []}
    rep = None
    for _ in range(2):  # interleaved: the machine's load moves both alike
        loc = bench(local_specs, timeout_s=120)
        rep = bench_remote(remote_specs, loop, timeout_s=120)
        assert loc.runs[0].ok and rep.runs[0].ok, rep.runs[0].error
        medians["local"].append(loc.runs[0].summary.median_s)  # type: ignore[union-attr]
        medians["remote"].append(rep.runs[0].summary.median_s)  # type: ignore[union-attr]
    ratio = sorted(medians["remote"])[0] / sorted(medians["local"])[0]
    assert 0.5 < ratio < 2.0, medians  # the 5% figure: bench/bench_remote.py
    assert rep is not None
    env = rep.environment
    board_py = subprocess.run(
        [board.python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert env["python"] == board_py != "" and env["infercast"] is None
    assert env["runtime_versions"] == {"ai-edge-litert": rep.runs[0].versions["ai-edge-litert"]}
    assert env["remote"]["board"] == "loop" and env["remote"]["target"] == "host"
    assert env["cpu_model"] and env["usable_cores"] >= 1
    run = rep.runs[0]
    assert run.summary is not None and run.summary.n >= 10 and run.first_s is not None
    assert [i["source"] for i in run.inputs] == ["uniform[-1,1) seed=0"]
    _clean(board)


def test_remote_profiles_join_like_local_ones(board: SshBoard, edge_dir: Path) -> None:
    loop = resolve_board("loop")
    for model, runtime in (
        (edge_dir / "convs_5x5_7x7.tflite", "litert"),
        (edge_dir / "convs_5x5_7x7.onnx", "ort"),
    ):
        opts = {"opt_level": "disable"} if runtime == "ort" else {}
        analysis = analyze_graph(load(model))
        local = bench(
            [RunSpec(str(model), runtime, 1, opts, timing=FAST, profile=True, profile_runs=5)],
            timeout_s=120,
            analysis=analysis,
        )
        remote = bench_remote(
            plan_remote_runs(
                model,
                runtime,
                [1],
                opt_level=["disable"],
                timing=FAST,
                profile=True,
                profile_runs=5,
            ),
            loop,
            timeout_s=120,
            analysis=analysis,
        )
        lj, rj = local.joins[0], remote.joins[0]
        # The same units, mapped to the same layers, with the same static cost.
        key = sorted((r.op, tuple(r.layers), r.macs) for r in lj.rows)
        assert sorted((r.op, tuple(r.layers), r.macs) for r in rj.rows) == key
        assert rj.unaccounted == lj.unaccounted == ()
        assert rj.sum_vs_whole is not None and 0.3 < rj.sum_vs_whole < 3.0
        assert rj.achieved_macs_per_s is not None and rj.achieved_macs_per_s > 0
        if runtime == "litert":
            assert {r.provider for r in rj.rows} <= {"XNNPACK", "cpu"}
    _clean(board)


def test_cli_remote_json_and_calibrate_from_it(
    board: SshBoard, edge_dir: Path, tmp_path: Path
) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    out = tmp_path / "result.json"
    r = _cli(
        board,
        "bench",
        str(model),
        "--remote",
        "loop",
        "--min-time",
        "0.3",
        "--profile",
        "--profile-runs",
        "5",
        "-f",
        "json",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["schema"] == "infercast.bench/1" and d["runs"][0]["status"] == "ok"
    assert d["environment"]["remote"]["target"] == "host" and d["profile"]
    assert d["runs"][0]["pct_of_peak"] is not None  # the board's target gives the peak
    # The address form, with the Python given on the command line.
    r = _cli(
        board,
        "bench",
        str(model),
        "--remote",
        f"{board.user}@loopback-board:{board.port}",
        "--remote-python",
        board.python,
        "--min-time",
        "0.2",
    )
    assert r.returncode == 0, r.stderr
    assert "litert" in r.stdout and "ok" in r.stdout
    # What came back calibrates the board's target.
    r = _cli(
        board, "calibrate", "--target", "host", "--from", str(out), "-o", str(tmp_path / "cal.toml")
    )
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "cal.toml").read_text()
    assert 'extends = "host"' in text and "samples = " in text
    r = _cli(
        board,
        "calibrate",
        "--target",
        "rpi4-cpu",
        "--from",
        str(out),
        "-o",
        str(tmp_path / "cal2.toml"),
    )
    assert r.returncode == 2 and "host" in _one_line(r)
    _clean(board)


def test_remote_tables_fit_the_terminal(board: SshBoard, edge_dir: Path) -> None:
    """The table ``bench --remote`` prints (the board, the runs, the per-op profile) fits 80
    and 100 columns without a number cut; piped, it is plain, one line per row."""
    from test_tables import assert_fits

    model = edge_dir / "convs_5x5_7x7.tflite"
    argv = ["bench", str(model), "--remote", "loop", "--min-time", "0.2", "--profile"]
    argv += ["--profile-runs", "3"]
    for width in (80, 100, None):
        env = {"COLUMNS": str(width)} if width else {}
        r = _cli_env(board, env, *argv)
        assert r.returncode == 0, r.stderr
        assert "litert" in r.stdout and "per-op profile" in r.stdout
        if width is None:
            assert "\x1b" not in r.stdout
            assert max(len(ln) for ln in r.stdout.splitlines()) > 100  # not folded
        else:
            assert_fits(r.stdout, width)
    _clean(board)


# --------------------------------------------------------------------------- #
# Failures: one line, the right exit code, nothing left on the board
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("--remote", "wrongport"), 2, "connection refused"),
        (("--remote", "wrongkey"), 2, "refused the login"),
        (("--remote", "nopython"), 2, "no Python '/opt/no-such-python/bin/python3'"),
        (("--remote", "loop", "--runtime", "tflite_runtime"), 3, "needs tflite-runtime"),
        (("--remote", "loop", "--delegate", "/usr/lib/no-such-delegate.so"), 3, "delegate"),
    ],
)
def test_failures_are_one_line(
    board: SshBoard, edge_dir: Path, args: tuple[str, ...], code: int, words: str
) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    r = _cli(board, "bench", str(model), *args, "--min-time", "0.2", "-f", "json")
    assert r.returncode == code, r.stderr
    line = _one_line(r)
    assert words in line, line
    if code == 2:
        assert r.stdout == ""
    else:
        run = json.loads(r.stdout)["runs"][0]
        assert run["status"] == "failed" and run["phase"] == "load"
    _clean(board)


CONNECT_S = 3.0
"""--connect-timeout of the unreachable-board tests (the default is 15 s)."""
START_SLACK_S = 7.0
"""What the ssh client's own start may add on a loaded machine: the bound stays under the
15 s default, so a timeout that did not reach ssh fails the test."""


@pytest.mark.parametrize("where", ["closed port", "unresolvable name", "silent port"])
def test_unreachable_board_fails_within_the_connect_timeout(
    board: SshBoard, edge_dir: Path, where: str
) -> None:
    """Issue 15: a board that cannot be reached is one line, exit 2, within the connect
    timeout: a loopback port nothing listens on (refused at once), a name in the reserved
    ``.invalid`` domain (RFC 6761: never resolves), and a loopback port that takes the TCP
    connection but never says the SSH banner (the kernel completes the handshake of a
    listening socket nobody accepts on), which only ``ConnectTimeout`` ends."""
    from sshd_board import _free_port

    model = edge_dir / "convs_5x5_7x7.tflite"
    with contextlib.ExitStack() as stack:
        if where == "closed port":
            address, words = f"127.0.0.1:{_free_port()}", "connection refused"
        elif where == "unresolvable name":
            address, words = "nobody@no-such-board.invalid", "Could not resolve hostname"
        else:
            silent = stack.enter_context(socket.socket())
            silent.bind(("127.0.0.1", 0))
            silent.listen(4)
            address = f"127.0.0.1:{silent.getsockname()[1]}"
            words = f"no answer within {CONNECT_S:g} s"
        specs = plan_remote_runs(model, "litert", [1], timing=FAST)
        t0 = time.monotonic()
        with pytest.raises(RemoteError) as err:
            bench_remote(specs, parse_address(address), connect_timeout_s=CONNECT_S)
        elapsed_s = time.monotonic() - t0
        assert elapsed_s < CONNECT_S + START_SLACK_S, elapsed_s
        if where == "silent port":
            assert elapsed_s >= CONNECT_S - 0.5, elapsed_s  # it did wait for the banner
        assert f"cannot reach {address}" in str(err.value) and words in str(err.value)
        # The CLI: exactly that one line on stderr, nothing on stdout, exit 2.
        r = _cli(
            board, "bench", str(model), "--remote", address,
            "--connect-timeout", f"{CONNECT_S:g}", "-f", "json",
        )  # fmt: skip
        assert r.returncode == 2, r.stderr
        line = _one_line(r)
        assert f"cannot reach {address}" in line and words in line, line
        assert r.stdout == ""


def test_models_the_board_runtime_refuses(board: SshBoard, edge_dir: Path, tmp_path: Path) -> None:
    from test_bench import _custom_op_tflite

    # A truncated file is bad input here, before anything goes to the board.
    data = (edge_dir / "convs_5x5_7x7.tflite").read_bytes()
    bad = tmp_path / "truncated.tflite"
    bad.write_bytes(data[: len(data) // 2])
    r = _cli(board, "bench", str(bad), "--remote", "loop", "-f", "json")
    assert r.returncode == 2 and "truncated.tflite" in _one_line(r) and r.stdout == ""
    # A model infercast reads but the board's LiteRT cannot run (an unregistered op).
    custom = _custom_op_tflite(edge_dir / "convs_5x5_7x7.tflite", tmp_path / "custom.tflite")
    r = _cli(board, "bench", str(custom), "--remote", "loop", "--min-time", "0.2", "-f", "json")
    assert r.returncode == 3, r.stderr
    assert "InfercastNoSuchOp" in _one_line(r)
    run = json.loads(r.stdout)["runs"][0]
    assert run["status"] == "failed" and run["phase"] == "load"
    _clean(board)


def test_timeout_kills_the_run_on_the_board(board: SshBoard, edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    t0 = time.monotonic()
    r = _cli(
        board, "bench", str(model), "--remote", "loop", *A_MINUTE, "--timeout", "3", "-f", "json"
    )
    assert r.returncode == 3 and time.monotonic() - t0 < 60
    assert "timeout" in _one_line(r)
    run = json.loads(r.stdout)["runs"][0]
    assert run["status"] == "timeout" and "3 s timeout" in run["error"]
    _clean(board)


def _wait_for_runner(b: SshBoard, timeout_s: float = 60) -> int:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for line in b.processes():
            pid, _, args = line.partition(" ")
            if "remote_runner" in args:
                return int(pid)
        time.sleep(0.1)
    raise AssertionError(f"no runner appeared on the board: {b.processes()}")


def test_runner_killed_mid_run(board: SshBoard, edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    box: dict[str, subprocess.CompletedProcess[str]] = {}

    def go() -> None:
        box["r"] = _cli(board, "bench", str(model), "--remote", "loop", *A_MINUTE, "-f", "json")

    t = threading.Thread(target=go)
    t.start()
    pid = _wait_for_runner(board)
    time.sleep(0.5)
    os.kill(pid, 9)  # as the OOM killer would
    t.join(timeout=120)
    r = box["r"]
    assert r.returncode == 3
    assert "SIGKILL" in _one_line(r)
    run = json.loads(r.stdout)["runs"][0]
    assert run["status"] == "crashed" and "killed by SIGKILL" in run["error"]
    _clean(board)


def test_host_going_away_cleans_the_board(board: SshBoard, edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    env = {**os.environ, **board.ssh_env}
    host = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infercast",
            "bench",
            str(model),
            "--remote",
            "loop",
            *A_MINUTE,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        _wait_for_runner(board)
    finally:
        host.kill()  # infercast dies at once; ssh's stdin ends, and so does the board's
        host.wait()
    _clean(board)


def test_external_delegate_on_the_board(board: SshBoard, edge_dir: Path) -> None:
    import hashlib
    import shutil

    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build the test delegate (.ci/run installs it)"
    so = board.dir / "libnoop_delegate.so"
    src = Path(__file__).parent / "data" / "delegates" / "noop_delegate.c"
    subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-o", str(so), str(src)], check=True)
    os.chmod(so, 0o755)
    model = edge_dir / "convs_5x5_7x7.tflite"
    r = _cli(
        board,
        "bench",
        str(model),
        "--remote",
        "loop",
        "--delegate",
        str(so),
        "--min-time",
        "0.2",
        "--profile",
        "--profile-runs",
        "3",
        "-f",
        "json",
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    facts = d["environment"]["delegates"]
    assert facts == [
        {
            "path": str(so),
            "realpath": str(so),
            "size_bytes": so.stat().st_size,
            "sha256": hashlib.sha256(so.read_bytes()).hexdigest(),
            "package": None,  # built here, owned by no Debian package
        }
    ]
    run = d["runs"][0]
    assert run["options"]["delegate"] == str(so)
    # The delegate takes no node; XNNPACK (LiteRT's default) still runs the ops.
    assert run["runtime_meta"]["delegate_nodes"] >= 0
    assert {row["provider"] for row in d["profile"]} <= {"XNNPACK", "cpu"}
    # Options reach the library: fail=1 makes it refuse to load.
    r = _cli(
        board,
        "bench",
        str(model),
        "--remote",
        "loop",
        "--delegate",
        str(so),
        "--delegate-option",
        "fail=1",
        "--min-time",
        "0.2",
        "-f",
        "json",
    )
    assert r.returncode == 3 and "Failed to load delegate" in _one_line(r)
    _clean(board)
