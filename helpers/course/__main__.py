"""``python -m helpers.course``: the course's maintenance commands (execute, refresh, sync, check, report)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.core import cli
from helpers.course import exercise_notebooks, lecture_notebooks, needs_gpu, report
from helpers.course.tools import sync
from helpers.course.tools.execute import DEFAULT_OUT, DEFAULT_TIMEOUT, execute_all, executed_path, refresh
from helpers.data.settings import ROOT

DESCRIPTION = ("The course's commands: run its notebooks, refresh the GPU lectures' outputs, keep them in "
               "step with its settings, report.")
COMMANDS = {   # name: what it does (its help and its description)
    "execute": "run notebooks top to bottom in fresh kernels, each in its own folder (those that need a GPU "
               "are skipped, with the reason, where there is none)",
    "refresh": "re-run the GPU lectures (or the notebooks named) at the student scale, writing their outputs "
               "in place; then name the slowest cells and any over 60 s",
    "sync": "write REPOSITORY and BRANCH into the notebooks' first cells, their Colab GPU requests, the "
            "student versions and the README's tables",
    "check": "fail, naming each file, if sync would change anything",
    "report": "print Python, CPU, GPU, the scale and the data directory (what a first cell prints)",
}


def build_parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser and each subcommand's, by name."""
    parser = argparse.ArgumentParser(prog="python -m helpers.course", description=DESCRIPTION,
                                     formatter_class=cli.HelpFormatter)
    subparsers = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    commands = {name: subparsers.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                                            formatter_class=cli.HelpFormatter)
                for name, text in COMMANDS.items()}
    for name, default in (("execute", "every lecture; with --exercises every exercise notebook too"),
                          ("refresh", "every lecture that needs a GPU")):
        commands[name].add_argument("notebooks", nargs="*", type=Path, metavar="NOTEBOOK",
                                    help=f"the notebooks to run (default: {default})")
        commands[name].add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                                    help="the longest one cell may run")
    execute = commands["execute"]
    execute.add_argument("--exercises", action="store_true",
                         help="also run every exercise notebook, solutions and student versions")
    execute.add_argument("--cpu-only", action="store_true",
                         help="skip the notebooks that need a GPU even where there is one")
    where = execute.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                       help="the folder the executed copies go to, laid out as notebooks/ is "
                            "(default: %(default)s/ in the current directory)")
    where.add_argument("--in-place", action="store_true",
                       help="overwrite the notebooks themselves with their new outputs")
    execute.add_argument("--allow-failed-checks", action="store_true",
                         help="an exercise check that fails does not fail the run (the student versions' "
                              "checks fail until they are solved); it is still named")
    return parser, commands


def notebooks_named(parser: argparse.ArgumentParser, named: list[Path], default: list[Path]) -> list[Path]:
    """The notebooks given (``default`` where none); a usage error for any that is not an .ipynb file."""
    for path in named or default:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"not a notebook: {path}")
    return named or default


def run_execute(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    notebooks = notebooks_named(parser, args.notebooks, lecture_notebooks() +
                                (exercise_notebooks() if args.exercises else []))
    out = None if args.in_place else args.out.resolve()
    clash = [p for p in notebooks if out is not None and executed_path(p, out) == p.resolve()]
    if clash:
        parser.error(f"--out {args.out} would overwrite {clash[0]} itself; use --in-place for that")
    return execute_all(notebooks, out, cpu_only=args.cpu_only, timeout=args.timeout,
                       failed_checks_fail=not args.allow_failed_checks)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    parser, commands = build_parsers()
    if not argv:                                       # no command: what there is, not an error about it
        parser.print_help(sys.stderr)
        return 2
    if argv[0] == "execute":                           # its options before or after the notebooks
        return run_execute(commands["execute"], commands["execute"].parse_intermixed_args(argv[1:]))
    args = parser.parse_args(argv)
    if args.command == "refresh":
        gpu_lectures = [p for p in lecture_notebooks() if needs_gpu(p)]
        return refresh(notebooks_named(commands["refresh"], args.notebooks, gpu_lectures),
                       timeout=args.timeout)
    if args.command == "report":
        report()
        return 0
    try:
        if args.command == "sync":
            for path in sync.sync():
                print(f"updated {path.relative_to(ROOT)}")
            return 0
        problems = sync.out_of_step()
    except ValueError as error:                # a notebook without a set-up cell, a README marker gone
        print(f"python -m helpers.course {args.command}: {error}", file=sys.stderr)
        return 1
    print("\n".join(problems) or "everything is in step: first cells, Colab requests, student versions, "
                                 "README tables")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
