"""The MLflow UI in a real browser: a small sweep logged to an MLflow server (``infra/mlflow-local.sh``, artifacts
proxied) or to a local store served by ``pdors ui``, the comparison URL the sweep prints opened in headless
Chromium (Debian's ``chromium``, driven by Playwright), and the rendered page checked: the runs table lists the
sweep's children with the policy and grid params and the ``total_utility`` columns, and the HTML report in the
artifact viewer shows its images.

Everything (server, sweep, browser) runs in a loopback-only network namespace. Screenshots are kept in
``results/test-artifacts/mlflow-browser/`` (``runs.png``, ``report.png``; ``ui-runs.png``, ``ui-report.png`` for
``pdors ui``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from realstack import BIN, ROOT, config, end_session, in_netns_python, pdors, start, wait_healthy

CHROMIUM = shutil.which("chromium")
SHOTS = ROOT / "results" / "test-artifacts" / "mlflow-browser"
PORT = 5000  # the namespace is the test's own: no other server there
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test's set-up installs it)"),
]

# Runs inside the namespace: opens the URLs, waits for the rendered content, screenshots, reports the DOM.
BROWSE = """
import json, sys
from playwright.sync_api import sync_playwright
chromium, runs_url, report_url, shots, prefix = sys.argv[1:]
out = {}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(runs_url)
    page.wait_for_selector("[col-id='metrics.`total_utility`'] >> text=/[0-9]/", timeout=60000)
    page.wait_for_timeout(3000)
    page.screenshot(path=shots + f"/{prefix}runs.png")
    out["headers"] = [h.strip() for h in page.locator(".ag-header-cell").all_inner_texts()]
    # the right edge of each header cell on screen (None: not rendered), and what navigation the page shows
    out["right_edge"] = {
        h: (lambda b: b and b["x"] + b["width"])(page.locator(f".ag-header-cell[col-id='{h}']").first.bounding_box())
        for h in ("metrics.`total_utility`", "metrics.`paired.ratio_gmean`", "metrics.`paired.wins`",
                  "metrics.`paired.ties`", "metrics.`paired.losses`", "metrics.`completed_share`")
        if page.locator(f".ag-header-cell[col-id='{h}']").count()
    }
    out["genai_nav"] = [t for t in ("Sessions", "Judges", "Prompts")
                        if page.get_by_role("link", name=t, exact=True).count()
                        and page.get_by_role("link", name=t, exact=True).first.is_visible()]
    # the Assistant's panel and its button both carry this attribute (the panel's title text also holds "Beta")
    shown = [b for b in (page.locator("[data-assistant-ui]").nth(i).bounding_box()
                         for i in range(page.locator("[data-assistant-ui]").count())) if b]
    out["assistant_left"] = min((b["x"] for b in shown), default=None)
    out["names"] = page.locator("[col-id='attributes.`Run Name`'].ag-cell").all_inner_texts()
    out["policies"] = page.locator("[col-id='params.`policy`'].ag-cell").all_inner_texts()
    out["machines"] = page.locator("[col-id='params.`machines`'].ag-cell").all_inner_texts()
    out["seeds"] = page.locator("[col-id='params.`seeds`'].ag-cell").all_inner_texts()
    out["utility"] = page.locator("[col-id='metrics.`total_utility`'].ag-cell").all_inner_texts()
    out["matching"] = page.get_by_text("matching runs").all_inner_texts()
    page.goto(report_url)
    page.wait_for_timeout(3000)
    frame = None
    for _ in range(60):
        frame = next((f for f in page.frames if f.evaluate("() => document.images.length") > 1), None)
        if frame:
            break
        page.wait_for_timeout(500)
    page.wait_for_timeout(1000)
    page.screenshot(path=shots + f"/{prefix}report.png")
    out["images"] = frame.evaluate(
        "() => Array.from(document.images).map(i => [i.alt, i.naturalWidth, i.getBoundingClientRect().width])"
    ) if frame else []
    out["report_text"] = frame.evaluate("() => document.body.innerText") if frame else ""
    browser.close()
print(json.dumps(out))
"""


def _browse(netns: str, env: dict, runs_url: str, report_url: str, prefix: str = "") -> dict:
    assert CHROMIUM is not None
    SHOTS.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", BROWSE, CHROMIUM, runs_url, report_url, str(SHOTS), prefix]
    out = subprocess.run(
        ["ip", "netns", "exec", netns, *argv],
        env=env,
        text=True,
        capture_output=True,
        timeout=150,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return seen


def _sweep(netns: str, env: dict, tmp_path: Path, base: str) -> tuple[str, str, str]:
    """Run the small sweep logging to ``env``'s tracking URI; its comparison URL, the report's URL in the UI at
    ``base``, and the parent run's artifact URI."""
    cfg = config(tmp_path, "browser", [4, 6], [1, 2], jobs=8, slots=8)
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "out", "--in-process")
    assert rc == 0, log
    said, runs_url = log.strip().splitlines()[-2:]  # the URL alone on the last line, whole
    assert said.startswith("MLflow comparison") and runs_url.startswith(f"{base}/#/experiments/"), log
    assert runs_url.endswith("&workflowType=machine_learning") and len(runs_url) <= 120, runs_url
    logged = in_netns_python(
        netns,
        env,
        (
            "import json\nfrom mlflow.tracking import MlflowClient\nc = MlflowClient()\n"
            "exp = c.get_experiment_by_name('test-browser')\n"
            "p = [r for r in c.search_runs([exp.experiment_id]) if r.data.tags.get('pdors.role') == 'sweep'][0]\n"
            "print(json.dumps([exp.experiment_id, p.info.run_id, p.info.artifact_uri,\n"
            "    [a.path for a in c.list_artifacts(p.info.run_id, 'report')]]))\n"
        ),
    )
    exp_id, parent, artifact_uri, report_files = logged
    page = next(f for f in report_files if f.endswith(".report.html"))
    return runs_url, f"{base}/#/experiments/{exp_id}/runs/{parent}/artifacts/{page}", artifact_uri


def test_comparison_url_opens_the_children_table_and_the_report_renders(netns: str, env: dict, tmp_path: Path) -> None:
    server = start(netns, env, tmp_path, ROOT / "infra" / "mlflow-local.sh", PORT, tmp_path / "server")
    served = {**env, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{PORT}"}
    try:
        wait_healthy(netns, f"http://127.0.0.1:{PORT}/health", server)
        runs_url, report_url, artifact_uri = _sweep(netns, served, tmp_path, f"http://127.0.0.1:{PORT}")
        assert artifact_uri.startswith("mlflow-artifacts:/")  # proxied: no path of the checkout or the server
        seen = _browse(netns, env, runs_url, report_url)
    finally:
        end_session(server)
    # MLflow 3.17 opens its Assistant panel once per browser profile on a loopback host name (its switch is
    # window.location.hostname; no server option): the headline columns must stay left of it
    _check_comparison(seen, visible=seen["assistant_left"] or 1600)


def test_pdors_ui_opens_the_comparison_without_the_assistant(netns: str, env: dict, tmp_path: Path) -> None:
    """`pdors ui` serves the local store on [::1], where MLflow's UI shows no Assistant (tracking.ui_host)."""
    base = f"http://[::1]:{PORT}"
    runs_url, report_url, _ = _sweep(netns, env, tmp_path, base)
    server = start(netns, env, tmp_path, BIN / "pdors", "ui", "--port", PORT)
    try:
        wait_healthy(netns, f"{base}/health", server)
        seen = _browse(netns, env, runs_url, report_url, prefix="ui-")
    finally:
        end_session(server)
    assert seen["assistant_left"] is None, seen  # neither the panel nor its button
    _check_comparison(seen, visible=1600, prefix="ui-")


def _check_comparison(seen: dict, visible: float, prefix: str = "") -> None:
    # 2 policies x 2 machine counts: every child, flat (no parent row), with its defining params and the mean
    names = [n.splitlines()[-1] for n in seen["names"]]  # a colour swatch's label comes first
    assert sorted(names) == [f"{p} machines={m}" for p in ("fifo", "pdors") for m in (4, 6)], seen
    assert names[:2] == ["pdors machines=4", "pdors machines=6"], names  # the reference first
    # the landing page: machine-learning mode (no GenAI navigation), headline columns in the 1600 px
    # viewport (left of the Assistant's panel if it shows), values rounded for display
    assert seen["genai_nav"] == [], seen
    assert len(seen["right_edge"]) == 6 and all(edge and edge <= visible for edge in seen["right_edge"].values()), seen
    assert all(len(u.replace(".", "").lstrip("0")) <= 4 for u in seen["utility"]), seen["utility"]
    assert all(float(u) > 0 for u in seen["utility"]), seen["utility"]
    # the params columns come after the headline metrics: off-screen at 1600 px, so not rendered
    for header in (
        "total_utility",
        "paired.ratio_gmean",
        "paired.wins",
        "paired.ties",
        "paired.losses",
        "completed_share",
    ):
        assert header in seen["headers"], seen["headers"]
    assert seen["matching"] and seen["matching"][0].startswith("4 matching runs"), seen["matching"]
    # the HTML report: the paired figure and the sweep's figure decoded and drawn
    images = {alt: (natural, shown) for alt, natural, shown in seen["images"]}
    assert {"paired", "total_utility"} <= set(images), seen["images"]
    assert all(natural > 1000 and shown > 100 for natural, shown in images.values()), images
    assert "Paired: every policy against PD-ORS" in seen["report_text"]  # display names (issue 48)
    # the screenshots are kept (results/test-artifacts/mlflow-browser/) for a person to look at
    assert all((SHOTS / f"{prefix}{shot}.png").stat().st_size > 10_000 for shot in ("runs", "report"))
