"""``make package``: one deployable SAM template in ``build/<stage>/``, linted.

1. Write the merge template (``infra/template.py``) to ``build/<stage>/merge-template.json``.
2. ``chalice package --stage <stage> --merge-template ... build/<stage>/``: Chalice builds
   ``deployment.zip`` (pip fetches manylinux wheels from PyPI) and ``sam.json``.
3. Post-process ``sam.json``:
   - the API's integrations call the API handler and the authorizer by ARNs built from
     their names, not ``${APIHandler.Arn}``: the functions' environment names the API's
     URL, and CloudFormation refuses the cycle RestAPI -> APIHandler -> RestAPI;
   - every function must run with a role from ``infra/iam.py`` (a new function without
     one fails here, not in production).
4. Drop what the Lambda Python runtime already has (boto3, botocore, s3transfer) from
   the zip: pynamodb pulls in botocore, which is most of the package's size.
5. Rebuild the dependencies for the pinned runtime and architecture
   (``infra/template.py``: python3.12, arm64), whatever Python builds: Chalice vendors
   wheels for the building interpreter on x86_64, and a compiled one (pydantic-core,
   rpds-py) would not load in Lambda. ``pip install --platform`` fetches the right
   wheels; every compiled extension in the zip is then checked against the target.
6. ``cfn-lint`` the template: zero errors, or this fails.
7. Report the package size and each function's cold import time (``infra/coldstart.py``,
   from the source tree with this machine's Python).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from infra.iam import FUNCTIONS, role_logical_id
from infra.template import (
    LAMBDA_ARCHITECTURE,
    LAMBDA_RUNTIME,
    PROJECT_DIR,
    StageConfig,
    merge_template,
)

__all__ = ["package", "PackageReport", "RUNTIME_PROVIDED", "strip_runtime_provided"]

# Top-level names in the zip that the Lambda Python runtime provides. Their
# dependencies (urllib3, jmespath, dateutil, six) stay: our pins are what we test.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
BIN = Path(sys.executable).parent


@dataclass
class PackageReport:
    """What ``make package`` made."""

    stage: str
    template: str
    zip_path: str
    zip_bytes: int
    unzipped_bytes: int
    stripped_bytes: int
    import_app_s: float | None
    lint_warnings: int
    runtime: str = LAMBDA_RUNTIME
    architecture: str = LAMBDA_ARCHITECTURE
    compiled: list[str] | None = None  # the compiled extensions, all built for the target


def _is_runtime_provided(name: str) -> bool:
    top = name.split("/", 1)[0]
    if top.endswith(".dist-info"):
        top = top.split("-", 1)[0]
    return top in RUNTIME_PROVIDED


def strip_runtime_provided(zip_path: Path) -> int:
    """Rewrite ``zip_path`` without the runtime-provided packages; return bytes removed."""
    tmp = zip_path.with_suffix(".tmp")
    removed = 0
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for info in src.infolist():
            if _is_runtime_provided(info.filename):
                removed += info.compress_size
                continue
            dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
    tmp.replace(zip_path)
    return removed


PLATFORM = {"arm64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}
MACHINE = {"arm64": "aarch64", "x86_64": "x86_64"}


def _top(name: str) -> str:
    return name.split("/", 1)[0]


def retarget_dependencies(zip_path: Path, *, runtime: str, architecture: str) -> list[str]:
    """Replace the vendored dependencies with wheels for ``runtime`` on ``architecture``.

    Returns the compiled extensions now in the zip. Fails if any of them is not built
    for the target (a wrong ``.so`` fails at import in Lambda, after the deploy).
    """
    version = runtime.removeprefix("python")
    tag = version.replace(".", "")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "deps"
        _pip_install(target, version=version, architecture=architecture)
        ours = {p.name for p in target.iterdir() if not _is_runtime_provided(p.name)}
        ours.discard("bin")
        tmp_zip = zip_path.with_suffix(".retarget")
        with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tmp_zip, "w") as dst:
            for info in src.infolist():
                top = _top(info.filename)
                vendored = top in ours or top.endswith((".dist-info", ".data"))
                if vendored or _is_runtime_provided(info.filename):
                    continue
                dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
            for path in sorted(target.rglob("*")):
                rel = path.relative_to(target).as_posix()
                if path.is_dir() or _top(rel) not in ours or "__pycache__" in rel:
                    continue
                dst.write(path, rel, compress_type=zipfile.ZIP_DEFLATED)
        tmp_zip.replace(zip_path)
    with zipfile.ZipFile(zip_path) as z:
        compiled = [n for n in z.namelist() if n.endswith(".so") or ".so." in n]
    wrong = [
        n
        for n in compiled
        if MACHINE[architecture] not in n.rsplit("/", 1)[-1]
        or not (f"cpython-{tag}" in n or ".abi3." in n)
    ]
    if wrong:
        raise SystemExit(
            f"compiled extensions not built for {runtime}/{architecture}: {', '.join(wrong)}"
        )
    return compiled


def _pip_install(target: Path, *, version: str, architecture: str) -> None:
    """The requirements' wheels for CPython ``version`` on ``architecture``, into ``target``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--target",
            str(target),
            "--platform",
            PLATFORM[architecture],
            "--implementation",
            "cp",
            "--python-version",
            version,
            "--only-binary=:all:",
            "-r",
            str(PROJECT_DIR / "requirements.txt"),
        ],
        check=True,
    )


def _break_api_cycle(template: dict, cfg: StageConfig) -> None:
    # The functions the API calls: the route handler and the authorizer.
    arns = {
        "${" + FUNCTIONS[function] + ".Arn}": (
            "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"
            + cfg.function_name(function)
        )
        for function in ("api_handler", "authorizer")
    }

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            for ref, arn in arns.items():
                node = node.replace(ref, arn)
            return node
        return node

    api = template["Resources"]["RestAPI"]
    api["Properties"]["DefinitionBody"] = walk(api["Properties"]["DefinitionBody"])


def _check_roles(template: dict) -> None:
    ours = {role_logical_id(f) for f in FUNCTIONS}
    for logical, resource in template["Resources"].items():
        if resource.get("Type") not in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            continue
        role = resource.get("Properties", {}).get("Role")
        if not (isinstance(role, dict) and role.get("Fn::GetAtt", [None])[0] in ours):
            raise SystemExit(
                f"function {logical} has no least-privilege role: add it to FUNCTIONS and "
                "ACCESS in infra/iam.py"
            )


def lint(template_path: Path) -> int:
    """Run cfn-lint; exit on errors, return the number of warnings."""
    answer = subprocess.run(
        [str(BIN / "cfn-lint"), "--format", "parseable", "--", str(template_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")},
    )
    lines = [line for line in answer.stdout.splitlines() if line.strip()]
    errors = [line for line in lines if ":E" in line]
    warnings = [line for line in lines if ":W" in line]
    for line in lines:
        print(f"cfn-lint: {line}")
    # cfn-lint's exit code is a bit mask: 1 fatal, 2 error, 4 warning, 8 info.
    if answer.returncode & 3 or errors:
        sys.stderr.write(answer.stderr)
        raise SystemExit(f"cfn-lint found {len(errors)} error(s) in {template_path}")
    return len(warnings)


def import_time(zip_path: Path, *, runs: int = 3) -> float:
    """Median seconds to ``import app`` with the package's own code (app.py, chalicelib,
    chalice) and this venv's dependencies: the zip's are built for the Lambda target
    (``retarget_dependencies``), which this machine may not be able to load."""
    code = (
        "import sys, time; sys.path.insert(0, '.'); t = time.perf_counter(); import app; "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(zip_path) as z:
            own = [n for n in z.namelist() if _top(n) in ("app.py", "chalicelib", "chalice")]
            z.extractall(tmp, members=own)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONHOOK_", "PYTHON"))}
        env.update({"AWS_DEFAULT_REGION": "us-east-1", "PYTHONDONTWRITEBYTECODE": "1"})
        times = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True
            )
            if out.returncode:
                raise SystemExit(f"import app failed from the package:\n{out.stderr}")
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def _prune_chalice_cache(keep: int = 2) -> None:
    # Chalice caches one ~20 MB zip per distinct app source; keep only the newest few.
    cache = PROJECT_DIR / ".chalice" / "deployments"
    zips = sorted(cache.glob("*.zip"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in zips[keep:]:
        old.unlink(missing_ok=True)


def _chalice_package(stage: str, out: Path) -> dict:
    """``chalice package`` with the merge template: ``deployment.zip`` lands in ``out``;
    returns Chalice's ``sam.json``."""
    merge_path = out / "merge-template.json"
    merge_path.write_text(json.dumps(merge_template(stage), indent=2, sort_keys=True) + "\n")
    env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}
    chalice_out = out / "chalice"
    # Two packagings at once in one project dir (two test workers) share Chalice's cache:
    # the second found the first's zip half written ("Reusing existing deployment package",
    # then BadZipFile). One at a time, under a lock on the cache dir (made here: Chalice
    # creates it without exist_ok, another race).
    cache = PROJECT_DIR / ".chalice" / "deployments"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [
                str(BIN / "chalice"),
                "--project-dir",
                str(PROJECT_DIR),
                "package",
                "--stage",
                stage,
                "--merge-template",
                str(merge_path),
                str(chalice_out),
            ],
            check=True,
            env=env,
            cwd=PROJECT_DIR,
        )
        _prune_chalice_cache()
    zip_path = out / "deployment.zip"
    (chalice_out / "deployment.zip").replace(zip_path)
    template = json.loads((chalice_out / "sam.json").read_text())
    shutil.rmtree(chalice_out)
    return template


def package(
    stage: str, out: Path | None = None, *, run_lint: bool = True, measure_runs: int = 3
) -> PackageReport:
    """Build, post-process, strip and lint ``build/<stage>/sam.json``; see the module doc."""
    cfg = StageConfig.load(stage)
    out = (out or PROJECT_DIR / "build" / stage).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    template = _chalice_package(stage, out)
    template_path = out / "sam.json"
    zip_path = out / "deployment.zip"
    _break_api_cycle(template, cfg)
    _check_roles(template)
    template_path.write_text(json.dumps(template, indent=2) + "\n")
    stripped = strip_runtime_provided(zip_path)
    compiled = retarget_dependencies(
        zip_path, runtime=LAMBDA_RUNTIME, architecture=LAMBDA_ARCHITECTURE
    )
    with zipfile.ZipFile(zip_path) as z:
        unzipped = sum(i.file_size for i in z.infolist())
    warnings = lint(template_path) if run_lint else 0
    report = PackageReport(
        stage=stage,
        template=str(template_path),
        zip_path=str(zip_path),
        zip_bytes=zip_path.stat().st_size,
        unzipped_bytes=unzipped,
        stripped_bytes=stripped,
        import_app_s=round(import_time(zip_path, runs=measure_runs), 3) if measure_runs else None,
        lint_warnings=warnings,
        compiled=compiled,
    )
    (out / "package-report.json").write_text(json.dumps(asdict(report), indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build and lint the deployable template.")
    parser.add_argument("--stage", default="dev")
    parser.add_argument("--out", type=Path, default=None, help="default: build/<stage>")
    parser.add_argument("--no-lint", action="store_true")
    parser.add_argument(
        "--measure-runs", type=int, default=3, help="imports to time (0: skip the measure)"
    )
    args = parser.parse_args(argv)
    report = package(
        args.stage, args.out, run_lint=not args.no_lint, measure_runs=args.measure_runs
    )
    mib = 1024 * 1024
    print(
        f"template:        {report.template} (cfn-lint: 0 errors, {report.lint_warnings} warnings)"
    )
    print(
        f"package:         {report.zip_path}: {report.zip_bytes / mib:.1f} MiB zipped, "
        f"{report.unzipped_bytes / mib:.1f} MiB unzipped "
        f"({report.stripped_bytes / mib:.1f} MiB of boto3/botocore left to the runtime)"
    )
    if report.import_app_s is not None:
        print(
            f"import app:      {report.import_app_s * 1000:.0f} ms "
            f"(median of {args.measure_runs}, on this machine)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
