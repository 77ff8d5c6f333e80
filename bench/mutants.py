"""``make mutants``: plant each named bug in a copy of the tree and show the suite catches it.

Each mutation is one exact text replacement in one file (it must match exactly once, so
a mutation can never silently stop applying when the code moves). For each, a copy of
the tracked files is made, the mutation planted, and the reliability suite run against
the copy; the mutation is *caught* if the suite fails. The unmutated copy must pass
first. Prints one line per mutation and ``caught/total``; exits 1 unless all are caught.

    python -m bench.mutants [--only NAME] [--list]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parent.parent
SUITE = [
    "tests/reliability/test_fire_path.py",
    "tests/functional/test_heartbeat_enqueue.py",
    "tests/reliability/test_concurrent_heartbeats.py",
    "tests/functional/test_shard_registry.py",
    "tests/functional/test_runner_batch.py",
    "tests/functional/test_heartbeat_reaper.py",
    "tests/functional/test_standing_rows.py",
    "tests/functional/test_api_patch.py",
    "tests/functional/test_linkedin_oracle.py",
    "tests/functional/test_concurrent_deletes.py",
    "tests/functional/test_events_pull.py",
    "tests/functional/test_ingress.py",
    "tests/functional/test_run_pages.py",
    "tests/functional/test_embedded_aws_save.py",
]

# pytest's exit codes: 0 all passed, 1 some test failed. Anything else (5: ``-k`` chose
# no test; 2/3/4: interrupted, internal or usage error) is neither a pass nor a catch.
PASSED, TESTS_FAILED, NO_TESTS = 0, 1, 5


def _copy_tree(into: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in files:
        if not raw:
            continue
        rel = Path(raw.decode())
        source = ROOT / rel
        if not source.is_file():
            continue
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _plant(tree: Path, mutation: Mutation) -> None:
    path = tree / mutation.path
    text = path.read_text()
    found = text.count(mutation.old)
    if found != 1:
        raise SystemExit(
            f"mutation {mutation.name!r}: anchor found {found} times in {mutation.path}"
        )
    path.write_text(text.replace(mutation.old, mutation.new))


def _suite_passes(tree: Path, *, verbose: bool, focus: str = "") -> tuple[int, float, str]:
    """pytest's exit code over the suite (only the tests ``focus`` selects, if given)."""
    started = time.monotonic()
    selection = ["-k", focus] if focus else []
    # Run from the copy: its chalicelib comes first on sys.path (before the editable
    # install of the real tree), and its conftest is the one collected.
    answer = subprocess.run(
        [sys.executable, "-m", "pytest", *SUITE, *selection, "-q", "-x", "-p", "no:cacheprovider"],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**_env(), "PYTHONPATH": str(tree)},
    )
    tail = "\n".join(answer.stdout.strip().splitlines()[-3:])
    if verbose:
        print(answer.stdout[-3000:])
    return answer.returncode, time.monotonic() - started, tail


def _try(tree: Path, mutation: Mutation, *, verbose: bool) -> tuple[str, float, str]:
    """ "caught" if a test failed, "SURVIVED" if all passed, "ERROR" if pytest did not run.

    The tests meant for it first; if they miss it, the whole suite. A focus that selects
    no test is an error of this file, never a catch.
    """
    code, seconds, tail = _suite_passes(tree, verbose=verbose, focus=mutation.focus)
    if code == NO_TESTS and mutation.focus:
        return "ERROR", seconds, f"focus {mutation.focus!r} selects no test\n{tail}"
    if code == PASSED and mutation.focus:
        code, more, tail = _suite_passes(tree, verbose=verbose)
        seconds += more
    if code == TESTS_FAILED:
        return "caught", seconds, tail
    if code == PASSED:
        return "SURVIVED", seconds, tail
    return "ERROR", seconds, tail


def _env() -> dict:
    import os

    return dict(os.environ)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the mutations whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or args.only in m.name]
    if args.list:
        for m in chosen:
            print(f"{m.name}  ({m.path})")
        return 0
    with tempfile.TemporaryDirectory(prefix="cronhook-mutants-") as tmp:
        base = Path(tmp) / "base"
        _copy_tree(base)
        for m in chosen:  # every anchor must apply before anything runs
            _plant_check = (base / m.path).read_text().count(m.old)
            if _plant_check != 1:
                print(f"anchor of {m.name!r} found {_plant_check} times in {m.path}")
                return 2
        code, seconds, tail = _suite_passes(base, verbose=args.verbose)
        print(f"unmutated suite: {'passes' if code == PASSED else 'FAILS'} ({seconds:.0f} s)")
        if code != PASSED:
            print(tail)
            return 2
        caught = 0
        for n, mutation in enumerate(chosen):
            tree = Path(tmp) / f"m{n}"
            shutil.copytree(base, tree)
            _plant(tree, mutation)
            verdict, seconds, tail = _try(tree, mutation, verbose=args.verbose)
            shutil.rmtree(tree, ignore_errors=True)
            if verdict == "ERROR":
                print(f"ERROR     {mutation.name}: the suite did not run ({seconds:.0f} s)")
                print(tail)
                return 2
            caught += verdict == "caught"
            print(f"{verdict:8}  {mutation.name}  ({seconds:.0f} s)", flush=True)
        print(f"mutants caught: {caught}/{len(chosen)}")
        return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
