"""Start-up cost where users wait: `pdors --help`, `pdors sweep --help`, `pdors simulate --help`, `sweep status`,
`sweep list` and a sweep re-run with nothing to do import neither Pyomo, Ray nor MLflow, status and list not
pandas nor YAML, and the help texts not even NumPy or a YAML parser (each command in a fresh interpreter, its
``sys.modules`` read at exit). Their times are in `pdors bench` (docs/PERFORMANCE.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sweep_fixtures import TINY, write_config

from pdors_cli.main import main

HEAVY = ("pyomo", "ray", "mlflow")
LIGHT = ("numpy", "yaml")  # not heavy, but a help text needs neither (NumPy alone is ~0.1 s of CPU)
ROWS = ("pandas",)  # ~0.4 s of CPU (also through pyarrow.dataset): status and list read no row into a table
# Runs `pdors ARGV` in this interpreter and prints (exit status, the heavy packages imported) as JSON.
PROBE = (
    "import json, sys\nfrom pdors_cli.main import main\n"
    "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY + LIGHT + ROWS)!r})\n"
    "print(json.dumps([code, heavy]), file=sys.stderr)"
)


def pdors(*argv: str, cwd: Path) -> tuple[int, list[str], str]:
    """Exit status, heavy (or NumPy, YAML) packages imported and standard output of `pdors ARGV` in a fresh
    interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd, timeout=300)
    code, imported = json.loads(done.stderr.strip().splitlines()[-1])
    return code, imported, done.stdout


def heavy_only(imported: list[str]) -> list[str]:
    return [m for m in imported if m in HEAVY]


def test_help_imports_no_solver_ray_or_mlflow(tmp_path: Path) -> None:
    for argv in (["--help"], ["sweep", "--help"], ["sweep", "run", "--help"], ["simulate", "--help"]):
        code, heavy, out = pdors(*argv, cwd=tmp_path)
        assert code == 0 and heavy == [] and "usage: pdors" in out, (argv, heavy)
    code, heavy, out = pdors("opt", "--help", cwd=tmp_path)  # its defaults need the solvers' names, not Pyomo
    assert code == 0 and heavy_only(heavy) == [] and "--method" in out, heavy


def test_status_list_and_an_identical_rerun_import_no_solver_ray_or_mlflow(tmp_path: Path) -> None:
    config = write_config(tmp_path / "tiny.yaml", {**TINY, "mlflow": {"enabled": False}})
    out = str(tmp_path / "out")
    assert main(["sweep", "run", str(config), "--out", out, "--in-process"]) == 0
    summary = tmp_path / "out" / "sweeps"
    published = {p: p.stat().st_mtime_ns for p in summary.rglob("summary.md")}
    for argv in (["sweep", "status", "--out", out], ["sweep", "list", "--out", out]):
        code, heavy, text = pdors(*argv, cwd=tmp_path)
        assert code == 0 and heavy_only(heavy) == [] and "12 ok" in text.replace("     ", " "), (argv, heavy, text)
        assert "pandas" not in heavy and "yaml" not in heavy, argv  # nor the config schema, nor its parser
    # the same sweep again, without --resume or --in-process: nothing to run (no Ray), nothing to publish
    code, heavy, text = pdors("sweep", "run", str(config), "--out", out, cwd=tmp_path)
    assert (
        code == 0 and heavy_only(heavy) == [] and "12 already recorded, 0 to run" in text and "nothing to do" in text
    ), text
    assert {p: p.stat().st_mtime_ns for p in summary.rglob("summary.md")} == published
    # a published file removed: published again (the record of the publish is not trusted alone)
    next(iter(published)).unlink()
    code, heavy, text = pdors("sweep", "run", str(config), "--out", out, cwd=tmp_path)
    assert code == 0 and "nothing to do" not in text and all(p.exists() for p in published), text


def test_the_package_imports_its_public_names_on_first_use(tmp_path: Path) -> None:
    # `import pdors` is light; each public name then resolves to its definition, and `pdors.run` stays the
    # function after the submodule of the same name is imported (by `from pdors.run import ...` anywhere)
    probe = (
        "import sys\nimport pdors\nassert 'numpy' not in sys.modules, 'numpy'\n"
        "from pdors.run import RunSpec\nimport pdors.run\n"
        "from pdors.run import run as defined\nassert pdors.run is defined and callable(pdors.run), pdors.run\n"
        "assert pdors.RunSpec is RunSpec and set(pdors.__all__) <= set(dir(pdors))\n"
        "import json\nhomes = {getattr(getattr(pdors, n), '__module__', 'pdors') for n in pdors.__all__}\n"
        "print(json.dumps(sorted(homes)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    homes = {"pdors", "pdors.model", "pdors.policies", "pdors.run", "pdors.run_summary", "pdors.validator"}
    assert set(json.loads(done.stdout)) == homes | {"pdors.workload"}, done.stdout


# The command line as the `pdors` script runs it (main() without argv), with an exit handler and a thread of
# its own to show that both are honoured by the fast exit.
ENDING = (
    "import atexit, sys, threading, time\nfrom pdors_cli.main import main\n"
    "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
    "threading.Thread(target=lambda: (time.sleep(3), print('thread finished'))).start()\n"
    "sys.exit(main())"
)


def test_the_command_line_ends_its_process_with_its_output_handlers_threads_and_status(tmp_path: Path) -> None:
    """`pdors` ends its process itself, without the interpreter's teardown (pdors_cli.main._leave): what it
    printed reaches a pipe in full (block-buffered there), exit handlers run, threads finish, and the exit status
    is the command's, also for an error."""
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", ENDING, "policies"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=buffered,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "| pdors | builtin |" in done.stdout and "| oasis |" in done.stdout, done.stdout
    assert "thread finished" in done.stdout and "exit handler ran" in done.stderr  # the thread outlives the command
    missing = tmp_path / "missing.yaml"
    done = subprocess.run(
        [sys.executable, "-c", ENDING, "sweep", "run", str(missing)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and f"no such file: {missing}" in done.stderr, done.stderr
