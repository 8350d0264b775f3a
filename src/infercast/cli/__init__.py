"""The ``infercast`` command: one short module per command (parse, load, call, render, exit).

Exit codes:

* 0 -- done;
* 1 -- an internal error (a bug in infercast: reported on one line, never a traceback);
* 2 -- bad input (unreadable model, bad option, bad target file): one line on stderr
  says what was wrong and what to do;
* 3 -- ``check``: something falls back to the CPU or does not fit; ``bench``: a run
  failed, crashed or timed out (the others are still reported); ``whatif --fit``: no
  variant in the searched ranges fits;
* 4 -- ``analyze`` / ``estimate``: some layer's cost is unknown; the full output is
  still written and its totals say they are incomplete; ``check``: nothing falls
  back, but tensors of unknown size leave the memory fit unknown;
* 130 -- interrupted.

To add a command: write ``cli/<name>.py`` with a function taking typer-annotated
parameters, and register it below.
"""

from __future__ import annotations

import sys
import warnings

import typer
from typer.exceptions import TyperException

from infercast.cli import (
    advise,
    analyze,
    bench,
    calibrate,
    check,
    estimate,
    profile,
    report,
    targets,
    validate,
    whatif,
)
from infercast.cli.common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK
from infercast.errors import InfercastError
from infercast.report.text import one_line

app = typer.Typer(
    name="infercast",
    help="How a .tflite / .onnx model will fit and run on an edge device.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """How a .tflite / .onnx model will fit and run on an edge device."""


app.command()(analyze.analyze)
app.add_typer(targets.app, name="targets")
app.command()(check.check)
app.command()(estimate.estimate)
app.command()(calibrate.calibrate)
app.command()(validate.validate)
app.command()(bench.bench)
app.add_typer(profile.app, name="profile")
app.command()(report.report)
app.command()(whatif.whatif)
app.command()(advise.advise)

EXIT_INTERRUPTED = 130


def _say(message: str) -> None:
    """One line on stderr: model strings in ``message`` escaped, line breaks included."""
    print(f"infercast: {one_line(message)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the app on ``argv``; every error becomes one line on stderr and an exit code."""
    # A library's warning (numpy's divide by zero in a model's constants, a deprecation)
    # is not the user's business: stderr holds the one line of an error, or nothing.
    warnings.simplefilter("ignore")
    try:
        rv = app(args=argv, standalone_mode=False)
    except InfercastError as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_INTERNAL
    except typer.Abort:
        _say("aborted")
        return EXIT_INTERNAL
    except TyperException as exc:
        # Usage errors of the option parser (the help it printed, when the message is empty).
        message = exc.format_message()
        if message:
            _say(f"error: {message}")
        return EXIT_BAD_INPUT
    except Exception as exc:
        _say(
            f"internal error: {type(exc).__name__}: {exc} "
            "(this is a bug in infercast; please report it with the model)"
        )
        return EXIT_INTERNAL
    return rv if isinstance(rv, int) else EXIT_OK


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())


__all__ = ["app", "main", "run"]
