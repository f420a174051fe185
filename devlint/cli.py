"""The ``devlint`` command line: parses arguments and hands off to the command that runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from devlint import __version__

# devlint.run.command (and with it LibCST and the rules) is imported inside main(), where Ctrl-C during
# the imports still ends in "interrupted" rather than a traceback.
EXIT_ERROR = 2

FORMATS = ("full", "concise", "json", "github", "sarif", "junit", "gitlab")


def _codes(value: str) -> list[str]:
    return [code.strip() for code in value.split(",") if code.strip()]


def _torch_version(value: str) -> tuple[int, int]:
    from devlint.torchfacts.version import TorchVersionError, parse_version

    try:
        return parse_version(value)
    except TorchVersionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=None, metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--select", type=_codes, help="only these codes or prefixes (DEV1 = DEV1xx)")
    parser.add_argument("--ignore", type=_codes, default=[], help="skip these codes or prefixes")
    parser.add_argument("--extend-select", type=_codes, default=[], help="add these codes to the selection")
    parser.add_argument("--output-format", choices=FORMATS, help="default: full on a terminal, else concise")
    parser.add_argument("--statistics", action="store_true", help="print a count of findings per rule")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    parser.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes marked unsafe")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--device-name", default=None, help="name of the device variable a fix defines")
    parser.add_argument("--device-expression", default=None, help='how a fix defines it ("accelerator" or code)')
    parser.add_argument(
        "--torch-version", type=_torch_version, default=None, metavar="X.Y",
        help="oldest torch the code must run on; no fix uses a newer API (default: from pyproject.toml, else 2.4)",
    )
    parser.add_argument("--config", metavar="FILE", help="use this pyproject.toml / devlint.toml")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write .devlint_cache/")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="worker processes (default: all cores)")
    parser.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    parser.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE")
    parser.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to every line with a finding")
    parser.add_argument("--stdin-filename", metavar="NAME", help="the file name to report when PATH is -")
    parser.add_argument(
        "--diff-base", metavar="REF", default=None,
        help="only findings on lines changed since the merge base of HEAD and REF (uncommitted and new files too)",
    )
    parser.add_argument(
        "--show-settings", action="store_true",
        help="show the settings in force for the first file (torch-version and where it came from); check nothing",
    )


def _add_verify(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser("verify", help="run original and fixed code on every device and compare")
    verify.add_argument("paths", nargs="*", metavar="PATH", help="programs or folders (default: fixtures/programs/)")
    verify.add_argument("--output-format", choices=("full", "json"), default=None)
    verify.add_argument(
        "--tests", metavar="COMMAND", default=None,
        help='prove the fixes with the project\'s own test command, test by test (e.g. "pytest -q tests/"); '
        "PATHs are then what to fix (default: the whole project)",
    )
    verify.add_argument(
        "--timeout", type=float, default=None, help="seconds per run (default 120; with --tests 3600 per test run)"
    )
    verify.add_argument("--rtol", type=float, default=None, help="relative tolerance (torch.testing.assert_close)")
    verify.add_argument("--atol", type=float, default=None, help="absolute tolerance")
    verify.add_argument("--unsafe-fixes", action="store_true", help="verify unsafe fixes too")
    verify.add_argument(
        "--torch-version", type=_torch_version, default=None, metavar="X.Y",
        help="oldest torch the fixes may target (default: each program's configuration, else 2.4)",
    )
    verify.add_argument(
        "--jobs", "-j", type=int, default=None, metavar="N",
        help="runs at a time (default: all cores; with --tests all three)",
    )


def build_parser() -> argparse.ArgumentParser:
    from devlint.verify.environment import supported_torch

    parser = argparse.ArgumentParser(
        prog="devlint", description="Find and fix PyTorch code that only runs on one kind of device."
    )
    parser.add_argument("--version", action="version", version=f"devlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser("check", help="report findings (--fix to apply safe fixes)")
    _add_common(check)
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fix = commands.add_parser("fix", help="apply safe fixes in place, report what remains")
    _add_common(fix)
    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument(
        "--torch-version", type=_torch_version, default=None, metavar="X.Y",
        help="show which rules are on by default for code that must run on this torch",
    )
    rule = commands.add_parser("rule", help="show one rule's documentation")
    rule.add_argument("code", metavar="CODE")
    _add_verify(commands)
    emulate = commands.add_parser(
        "emulate",
        help="run a command with emulated CUDA in every Python process it starts",
        description="Run COMMAND with emulated CUDA installed in every Python process it starts (the "
        "command, its Python subprocesses, DataLoader and pytest-xdist workers): torch sees one CUDA "
        "device whose tensors compute on the CPU. The command's output and exit status are its own. "
        f"Emulation supports torch {supported_torch()}: a process that imports another torch stops with "
        "one line and exit status 2. Example: devlint emulate -- pytest tests/",
    )
    emulate.add_argument("--force", action="store_true", help="emulate even where torch sees a real GPU")
    emulate.add_argument("command_args", nargs=argparse.REMAINDER, metavar="COMMAND [ARGS ...]")
    commands.add_parser(
        "server",
        help="run the language server (LSP over stdio; needs devlint[server])",
        description="Speak the Language Server Protocol on stdin/stdout: diagnostics, quick fixes, "
        "source.fixAll.devlint and rule documentation on hover, for Python files and notebooks. "
        "Editors start it; see the README for VS Code, Neovim, Helix and Zed.",
    )
    return parser


def _print_names_as_their_bytes() -> None:
    """File names that are not UTF-8 reach Python as lone surrogates; a strict stdout would fail
    on them. ``surrogateescape`` prints the bytes the name really has, as ``ls`` does."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", None) == "strict":
        reconfigure(errors="surrogateescape")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        _print_names_as_their_bytes()
        return _main(argv)
    except BrokenPipeError:
        # `devlint check | head`: the reader left; say nothing more.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("devlint: interrupted\n")
        return 130
    except Exception as error:
        # A bug still ends in one line and exit status 2; DEVLINT_TRACEBACK=1 shows the traceback.
        import os

        if os.environ.get("DEVLINT_TRACEBACK"):
            raise
        detail = " ".join(str(error).split())
        sys.stderr.write(f"devlint: internal error: {type(error).__name__}: {detail} (please report this)\n")
        return EXIT_ERROR


# What `pip install devlint[server]` adds; a missing one means the extra is not installed.
SERVER_PACKAGES = frozenset({"pygls", "lsprotocol", "cattrs", "attrs"})


def _serve() -> int:
    try:
        from devlint.server.protocol import serve
    except ImportError as error:
        package = (error.name or "").split(".")[0]
        if package not in SERVER_PACKAGES:
            raise
        sys.stderr.write(f"devlint: error: `devlint server` needs {package}: pip install 'devlint[server]'\n")
        return EXIT_ERROR
    return serve()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if args.command == "rules":
        from devlint.docs import list_rules

        return list_rules(sys.stdout, torch_version=args.torch_version)
    if args.command == "rule":
        from devlint.docs import show_rule

        return show_rule(args.code, sys.stdout, sys.stderr)
    if args.command == "verify" and args.tests is not None:
        from devlint.verify.suite_command import run_verify_tests

        return run_verify_tests(args, sys.stdout, sys.stderr)
    if args.command == "verify":
        from devlint.verify.command import run_verify

        return run_verify(args, sys.stdout, sys.stderr)
    if args.command == "emulate":
        from devlint.verify.emulate import run_emulate

        return run_emulate(args.command_args, args.force, sys.stderr)
    if args.command == "server":
        return _serve()
    from devlint.run.command import Options, run_check

    options = Options(
        # --stdin-filename without a path reads stdin, as with ruff
        paths=args.paths or (["-"] if args.stdin_filename else ["."]),
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        output_format=args.output_format,
        fix=args.command == "fix" or args.fix,
        diff=args.diff,
        unsafe_fixes=args.unsafe_fixes,
        statistics=args.statistics,
        exit_zero=args.exit_zero,
        quiet=args.quiet,
        device_name=args.device_name,
        device_expression=args.device_expression,
        torch_version=args.torch_version,
        config=args.config,
        no_cache=args.no_cache,
        jobs=args.jobs,
        baseline=args.baseline,
        write_baseline=args.write_baseline,
        add_noqa=args.add_noqa,
        stdin_filename=args.stdin_filename,
        diff_base=args.diff_base,
        show_settings=args.show_settings,
    )
    return run_check(options)
