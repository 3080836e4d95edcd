"""`mcoder show`: a step folder, a run folder, a rollouts file and one rollout, through the real CLI;
the HTML report checked as a file and opened in a real headless browser (Chromium)."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.records import Problem, Rollout, Test, from_dict, to_dict

runner = CliRunner()

PROBLEMS = [
    Problem(id="add", source="test", platform="atcoder", difficulty="easy", question="Print a + b.\nInput: a b",
            tests=[Test("1 2\n", "3\n"), Test("5 7\n", "12\n")]),
    Problem(id="double", source="test", platform="codeforces", difficulty="1900", question="Print 2 * n.",
            tests=[Test("4\n", "8\n")]),
]  # fmt: skip
FENCE = "```"
# (rollout id, problem, completion, finish reason): an accepted, a wrong and a crashing program,
# and an output cut off at the length limit inside its code block.
ROLLOUTS = [
    (
        "add/0/0",
        "add",
        f"Sum them.\n{FENCE}python\na, b = map(int, input().split())\nprint(a + b)\n{FENCE}\n",
        "stop",
    ),
    (
        "add/0/1",
        "add",
        f"{FENCE}python\na, b = map(int, input().split())\nprint(a - b)\n{FENCE}\nDone.",
        "stop",
    ),
    (
        "double/0/0",
        "double",
        f"{FENCE}python\nn = int(input())\nraise ValueError('boom ' + str(n))\n{FENCE}",
        "stop",
    ),
    ("double/0/1", "double", f"Let me think.\n{FENCE}python\nn = int(input())\nprint(2 *", "length"),
]
MASKED = "double/0/1"


def mc(*args):
    return runner.invoke(app, [str(a) for a in args])


def _ok(r):
    assert r.exit_code == 0, r.stderr
    return r


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder as `mcoder loop` leaves it: config.json naming the problems, two steps of
    rollouts, verdicts (the real judge) and samples.jsonl rows (the trainer's own Sample.to_row),
    and metrics.jsonl."""
    from mcoder.records import Verdict
    from mcoder.train.batching import Sample

    root = tmp_path_factory.mktemp("show") / "run"
    problems = _write(root.parent / "problems.jsonl", [to_dict(p) for p in PROBLEMS])
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"problems": str(problems)}))
    for step in (1, 2):
        folder = root / f"step_{step:04d}"
        folder.mkdir()
        rollouts = [
            Rollout(id=f"{rid}@{step}", problem_id=pid, completion=text, sample_index=i % 2, finish_reason=finish,
                    completion_token_ids=list(range(10 + 5 * i)), sampling_logprobs=[-0.5 - 0.1 * i] * (10 + 5 * i),
                    temperature=1.0, policy_version=step - 1)
            for i, (rid, pid, text, finish) in enumerate(ROLLOUTS)
        ]  # fmt: skip
        _write(folder / "rollouts.jsonl", [to_dict(r) for r in rollouts])
        verdicts = folder / "verdicts.jsonl"
        _ok(
            mc(
                "judge",
                "-p",
                problems,
                "-r",
                folder / "rollouts.jsonl",
                "-o",
                verdicts,
                "-w",
                1,
                "--unsafe-no-sandbox",
                "-q",
            )
        )
        by_id = {
            v["rollout_id"]: from_dict(Verdict, v) for v in map(json.loads, verdicts.read_text().splitlines())
        }
        rows = []
        for r in rollouts:
            s = Sample(rollout=r, verdict=by_id[r.id], group=0, reward=by_id[r.id].reward)
            s.truncated = s.cut_off = r.finish_reason == "length"
            s.masked = r.id.startswith(MASKED)
            s.mask_reason = "masked_cut_off" if s.masked else "not_truncated"
            s.advantage = 0.0 if s.masked else (1.0 if by_id[r.id].passed else -1.0)
            rows.append(s.to_row())
        _write(folder / "samples.jsonl", rows)
        metrics = {"step": step, "reward/mean": 0.25 * step, "pass_rate": 0.25 * step, "length/mean": 17.5}
        with (root / "metrics.jsonl").open("a") as f:
            f.write(json.dumps(metrics) + "\n")
    return root


def test_a_line_per_group_by_default(run):
    out = _ok(mc("show", run / "step_0001")).stdout.splitlines()
    assert len(out) == 3, out  # two groups and the totals line
    assert out[0].startswith("step 1 add | 1/2 passed | ")
    assert "accepted 1" in out[0] and "wrong_answer 1" in out[0] and "adv +1.00 -1.00" in out[0]
    assert out[1].startswith("step 1 double | 0/2 passed") and "truncated 1, masked 1" in out[1]
    assert out[2].startswith("4 samples, 1 passed, 2 groups")


def test_a_run_folder_shows_its_last_step_or_the_one_asked(run):
    assert "step 2 add" in _ok(mc("show", run)).stdout
    assert "step 1 add" in _ok(mc("show", run, "--step", "1")).stdout
    both = _ok(mc("show", run, "--step", "all")).stdout
    assert "step 1 add" in both and "step 2 add" in both
    r = mc("show", run, "--step", "9")
    assert r.exit_code == 2 and "no step 9" in r.stderr


def test_wrong_answer_in_full_shows_the_program_the_test_and_the_diff(run):
    out = _ok(mc("show", run, "--status", "wrong_answer", "--full")).stdout
    assert "rollout add/0/1@2 | problem add | step 2" in out
    assert "Print a + b." in out  # the problem statement
    assert "completion (the extracted program highlighted)" in out and "print(a - b)" in out
    assert "verdict wrong_answer: 0/2 tests passed" in out
    assert "first failing test: #0" in out and "1 2" in out
    assert "-3" in out and "+-1" in out  # the diff: expected 3, got -1
    assert "mask: not masked (reason: not_truncated)" in out
    assert "rollout add/0/0" not in out  # the filter


def test_runtime_error_shows_stderr(run):
    out = _ok(mc("show", run, "--problem", "double", "--status", "runtime_error", "-f")).stdout
    assert "runtime_error" in out and "ValueError: boom 4" in out


def test_masked_filter_and_the_training_decision(run):
    out = _ok(mc("show", run, "--masked", "--full")).stdout
    assert out.count("rollout ") == 1 and f"rollout {MASKED}@2" in out
    assert "finish: length (cut at the length limit)" in out
    assert "truncated: yes (cut off before its program finished)" in out
    assert "mask: masked: advantage set to 0 (reason: masked_cut_off)" in out
    assert "length: 25 tokens" in out and "mean log-prob: -0.800" in out


def test_one_rollout_by_id(run):
    out = _ok(mc("show", run, "--id", "double/0/0@2")).stdout
    assert out.count("rollout ") == 1 and "boom" in out
    r = mc("show", run, "--id", "double/0/0@1")  # it is in step 1, not the last
    assert r.exit_code == 2 and "--step all" in r.stderr
    assert "boom" in _ok(mc("show", run, "--id", "double/0/0@1", "--step", "all")).stdout


def test_a_rollouts_file_with_its_verdicts_beside_it(run, tmp_path):
    out = _ok(mc("show", run / "step_0002" / "rollouts.jsonl", "-p", run.parent / "problems.jsonl")).stdout
    assert "add | 1/2 passed" in out
    alone = tmp_path / "r.jsonl"
    shutil.copy(run / "step_0002" / "rollouts.jsonl", alone)
    r = _ok(mc("show", alone))
    assert "unjudged 2" in r.stdout and "no verdicts found" in r.stderr


def test_a_difference_past_the_shown_prefix_is_found_and_its_lines_shown(tmp_path):
    """Expected and got kept their first 1,000 characters each: a program wrong at line 1500 of
    2000 showed two identical prefixes ("identical text"). The judge records where the first
    difference is and the lines around it, and show prints them."""
    lines = [f"{i} {i * i}" for i in range(2000)]
    problem = Problem(id="squares", source="test", question="", tests=[Test("", "\n".join(lines) + "\n")])
    code = "for i in range(2000):\n    print(i, i * i + (i == 1500))\n"
    problems = _write(tmp_path / "problems.jsonl", [to_dict(problem)])
    rollouts = _write(tmp_path / "rollouts.jsonl", [to_dict(Rollout(id="sq", problem_id="squares",
                                                                 completion=f"{FENCE}python\n{code}{FENCE}"))])  # fmt: skip
    _ok(mc("judge", "-p", problems, "-r", rollouts, "-o", tmp_path / "verdicts.jsonl", "-w", 1,
           "--unsafe-no-sandbox", "-q"))  # fmt: skip
    out = _ok(mc("show", rollouts, "-p", problems, "--full")).stdout
    assert "first difference: line 1501, column 12 (token 3001)" in out
    assert "-1500 2250000" in out and "+1500 2250001" in out and "1499 2247001" in out
    assert "(identical text)" not in out


def test_verdicts_judged_from_other_rollouts_are_refused_not_shown(run, tmp_path):
    """verdicts.jsonl beside rollouts.jsonl, but judged before the rollouts were made again (the
    ids are the same): each sample would show another completion's verdict (a correct program
    as no_code). Its sidecar names the rollouts it was judged from."""
    problems = run.parent / "problems.jsonl"
    rollouts = tmp_path / "rollouts.jsonl"
    _write(rollouts, [{"id": "add/0/0", "problem_id": "add", "completion": "I do not know."}])
    _ok(mc("judge", "-p", problems, "-r", rollouts, "-o", tmp_path / "verdicts.jsonl", "-w", 1,
           "--unsafe-no-sandbox", "-q"))  # fmt: skip
    assert "no_code 1" in _ok(mc("show", rollouts)).stdout
    good = f"{FENCE}python\na, b = map(int, input().split())\nprint(a + b)\n{FENCE}"
    _write(rollouts, [{"id": "add/0/0", "problem_id": "add", "completion": good}])  # sampled again
    r = mc("show", rollouts, "--full")
    assert r.exit_code == 3, r.output
    assert "verdicts.jsonl" in r.stderr and "judged from other rollouts" in r.stderr and "no_code" not in r.stdout


def test_prompt_prints_what_the_model_was_given_exactly(tmp_path):
    given = "<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\nPrint a + b.<|im_end|>\n<|im_start|>assistant\n"
    rollouts = _write(tmp_path / "r.jsonl", [
        {"id": "a/0/0", "problem_id": "add", "completion": "x = 1", "prompt": given},
        {"id": "a/0/1", "problem_id": "add", "completion": "x = 2"},
    ])  # fmt: skip
    out = _ok(mc("show", rollouts, "--full", "--prompt")).stdout
    assert "prompt (exactly as the model was given it)" in out
    for line in given.splitlines():
        assert line in out, line
    assert "(the rollout did not record its prompt)" in out
    assert "<|im_start|>" not in _ok(mc("show", rollouts, "--full")).stdout  # only when asked


# ------------------------------------------------------------------ the HTML report


@pytest.fixture(scope="module")
def report(run) -> Path:
    out = run.parent / "report.html"
    r = _ok(mc("show", run, "--step", "all", "--html", out, "--k", "1,2"))
    assert r.stdout.strip() == str(out)
    return out


@pytest.fixture(scope="module")
def run_b(run) -> Path:
    """A second run: the first's files, its metrics moved, and one more sample accepted at step 2."""
    other = run.parent / "run_b"
    shutil.copytree(run, other)
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        row["reward/mean"] = row["pass_rate"] = 0.5 * row["step"]
    _write(other / "metrics.jsonl", rows)
    verdicts = [json.loads(x) for x in (other / "step_0002" / "verdicts.jsonl").read_text().splitlines()]
    for v in verdicts:
        if v["rollout_id"] == "add/0/1@2":
            v.update(passed=True, status="accepted", reward=1.0, tests_passed=2, first_failure=None)
    _write(other / "step_0002" / "verdicts.jsonl", verdicts)
    return other


@pytest.fixture(scope="module")
def compared(run, run_b) -> Path:
    out = run.parent / "compared.html"
    _ok(mc("show", run, run_b, "--html", out))
    return out


def _outside_scripts(page: str) -> str:
    """The page without the text of its inline scripts (plotly.js holds URLs as strings)."""
    return re.sub(r"<script>.*?</script>", "<script></script>", page, flags=re.DOTALL)


def test_the_report_is_one_self_contained_file(report):
    page = report.read_text()
    assert '<table class="passk">' in page and "pass@2 (%, problems averaged)" in page
    assert page.count('<details class="sample"') == 8  # 4 samples x 2 steps
    html = _outside_scripts(page)
    assert "<script src" not in html and "<link" not in html and 'src="http' not in html  # nothing fetched
    assert "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js inlined
    # reward/mean and pass_rate are one series: one chart; length/mean never moved: a line of text
    charts = json.loads(re.search(r"const CHARTS = (.*?); const CHART_CONFIG", page).group(1))
    assert [c["layout"]["title"]["text"] for c in charts] == ["reward/mean = pass_rate"]
    assert [t["legendgroup"] for t in charts[0]["data"]] == ["run", "run"]  # raw + smoothed, one toggle
    assert "constant: length/mean 17.5" in html
    assert "ValueError: boom 4" in page and "masked_cut_off" in page
    assert 'class="diff"' in page and "print" in page


def test_two_runs_compared_in_one_report(compared):
    page = compared.read_text()
    html = _outside_scripts(page)
    assert "<h1>mcoder report: run vs run_b</h1>" in html
    # pass@1 of the last step: run 1 of 4 samples (25.0), run_b 2 of 4 (add 2/2, double 0/2: 50.0)
    assert "<td>run</td><td>2</td><td>4</td><td>25.0 (2)</td><td></td>" in html
    assert '<td>run_b</td><td>2</td><td>4</td><td>50.0 (2)</td><td class="up">+25.0</td>' in html
    assert "run_b (Δ: change against run, points)" in html
    charts = json.loads(re.search(r"const CHARTS = (.*?); const CHART_CONFIG", page).group(1))
    assert [t["name"] for t in charts[0]["data"]] == ["run", "run", "run_b", "run_b"]  # overlaid
    assert html.count('data-run="run_b"') == 4 and '<option value="run_b">run_b</option>' in html


def test_several_targets_need_the_html_report(run, run_b):
    r = mc("show", run, run_b)
    assert r.exit_code == 2 and "--html" in r.stderr
    r = mc(
        "show",
        run,
        run_b,
        "--html",
        run.parent / "x.html",
        "--verdicts",
        run / "step_0001" / "verdicts.jsonl",
    )
    assert r.exit_code == 2 and "--verdicts" in r.stderr


def test_a_bench_report_from_a_rollouts_file(run, tmp_path):
    out = tmp_path / "bench.html"
    _ok(mc("show", run / "step_0001" / "rollouts.jsonl", "-p", run.parent / "problems.jsonl", "--html", out))
    page = out.read_text()
    assert "<td>atcoder</td>" in page and "<td>50.0 (1)</td>" in page  # pass@1 of add: 1 of 2
    assert "Plotly" not in page  # no run, no charts: the page stays small
    assert len(page) < 100_000


def test_without_plotly_a_run_report_says_what_to_install(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly.offline", None)  # a fake fault: the package not installed
    r = mc("show", run, "--html", tmp_path / "x.html")
    assert r.exit_code == 4 and "mcoder[report]" in r.stderr
    assert not (tmp_path / "x.html").exists()


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def _headless(*args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start;
    # --enable-logging=stderr: every console message of the page is printed there ("CONSOLE")
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def _console(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def _loaded(page: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran; fails on any console message or script error."""
    dom = _headless("--dump-dom", page.as_uri() + fragment)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom) == []
    html_tag = re.search(r"<html[^>]*>", dom.stdout).group(0)
    assert "data-errors" not in html_tag, html_tag
    return dom.stdout


def _drawn_charts(dom: str) -> dict[str, int]:
    """Chart id -> traces drawn (the page's data-drawn), for every chart div of the page."""
    out = {}
    for tag in re.findall(r'<div[^>]*class="chart[^"]*"[^>]*>', dom):
        chart_id = re.search(r'id="([^"]+)"', tag).group(1)
        drawn = re.search(r'data-drawn="(\d+)"', tag)
        out[chart_id] = int(drawn.group(1)) if drawn else 0
    return out


@pytest.mark.heavy
def test_the_report_opens_in_a_real_browser(report, tmp_path):
    dom = _loaded(report)
    assert '<table class="passk">' in dom and "<caption>pass@1 (%, problems averaged)</caption>" in dom
    assert dom.count('<details class="sample"') == 8 and "add/0/1@2" in dom
    assert _drawn_charts(dom) == {"chart-reward-0": 2}  # raw and smoothed line, drawn as SVG
    assert "js-plotly-plot" in dom and "main-svg" in dom
    # the page's own script runs: a filter in the link hides the other samples
    dom = _loaded(report, "#status=runtime_error")
    assert dom.count('style="display: none;"') == 6
    assert '<span id="shown-count">2</span>' in dom
    _screenshot(report, tmp_path / "report.png")


@pytest.mark.heavy
def test_the_comparison_opens_in_a_real_browser(compared):
    dom = _loaded(compared)
    assert _drawn_charts(dom) == {"chart-reward-0": 4}  # two runs overlaid, raw and smoothed each
    dom = _loaded(compared, "#run=run_b&status=accepted")
    assert '<span id="shown-count">2</span>' in dom  # run_b's accepted samples at step 2


# Loads the report in a frame (same origin with --allow-file-access-from-files) and uses the first
# chart as a person would: hover at step 2, a click on the first run in the legend, a drag to zoom.
HARNESS = """<!doctype html><html><body><pre id="out">waiting</pre>
<iframe id="f" src="REPORT" width="1200" height="900"></iframe>
<script>
const pause = ms => new Promise(r => setTimeout(r, ms));
document.getElementById('f').addEventListener('load', async () => {
  const w = document.getElementById('f').contentWindow, res = {};
  try {
    await pause(300);
    const gd = w.document.getElementById('chart-reward-0');
    const span = () => { const r = gd._fullLayout.xaxis.range; return r[1] - r[0]; };
    res.span = span();
    w.Plotly.Fx.hover(gd, {xval: 2});
    res.hover = Array.from(gd.querySelectorAll('.hoverlayer text')).map(t => t.textContent);
    const item = gd.querySelector('.legend .traces .legendtoggle'), box = item.getBoundingClientRect();
    for (const type of ['mousedown', 'mouseup', 'click'])
      item.dispatchEvent(new w.MouseEvent(type, {bubbles: true, button: 0, clientX: box.x + 5, clientY: box.y + 5}));
    await pause(1000);  // a legend click acts once plotly's double-click window (300 ms) has passed
    res.visible = gd.data.map(t => t.visible === undefined ? true : t.visible);
    const drag = gd.querySelector('.nsewdrag'), b = drag.getBoundingClientRect();
    const at = (type, f, el) => el.dispatchEvent(new w.MouseEvent(type,
      {bubbles: true, button: 0, buttons: 1, clientX: b.x + b.width * f, clientY: b.y + b.height / 2}));
    at('mousedown', 0.2, drag);
    for (let i = 1; i <= 10; i++) at('mousemove', 0.2 + 0.04 * i, w.document);
    at('mouseup', 0.6, w.document);
    await pause(300);
    res.zoomed = span();
  } catch (e) { res.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(res);
});
</script></body></html>"""


@pytest.mark.heavy
def test_the_charts_answer_hover_a_legend_click_and_a_drag(compared, tmp_path):
    shutil.copy(compared, tmp_path / "report.html")
    harness = tmp_path / "harness.html"
    harness.write_text(HARNESS.replace("REPORT", "report.html"))
    dom = _headless("--allow-file-access-from-files", "--dump-dom", harness.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom) == []
    res = json.loads(html_lib.unescape(re.search(r'<pre id="out">(.*?)</pre>', dom.stdout).group(1)))
    assert "error" not in res, res
    # hover: every run's raw and smoothed value at step 2 (run 0.5, run_b 1.0 raw)
    assert any("run : raw 0.5" in t for t in res["hover"]) and any("run_b : raw 1" in t for t in res["hover"])
    assert res["visible"] == ["legendonly", "legendonly", True, True]  # both lines of run, not run_b's
    assert 0 < res["zoomed"] < res["span"] * 0.6


def _screenshot(page: Path, shot: Path) -> None:
    r = _headless(f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 1600)


def test_an_unknown_status_is_refused(run):
    r = mc("show", run, "--status", "wrong")
    assert r.exit_code == 2 and "not a verdict status" in r.stderr and "wrong_answer" in r.stderr


def test_help_has_an_example():
    """(Its width, every flag whole: tests/cli/test_cli.py.)"""
    text = runner.invoke(app, ["show", "-h"], env={"COLUMNS": "80"}).stdout
    assert "Example: mcoder show" in text


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4)))  # fmt: skip
def test_chart_data_cannot_close_its_script(value):
    """Run labels and metric names come from folders and files: inside <script> they stay data."""
    from mcoder.show.charts import script_json

    text = script_json(value)
    assert "<" not in text and ">" not in text and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == value
