"""The docs state what the code and the runs say: default-run times come from the benchmark record
(tools/mkdocs_hooks.py fills them in), and what a page says the claims use is what analysis/claims.py
calls. (docs/outputs.md's lists: tests/test_report.py.)"""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

RECORDS = """# Default run: wall time

Measured 2027-01-05, commit abc1234, by `python3 benchmarks/default_run.py`

| run | wall time | CPU time |
| --- | --- | --- |
| cold, --cores 1 | 9 min 1 s (541 s) | 560 s |
| no-op | 2.1 s (2 s) | 2 s |

| rule | jobs |
| --- | --- |
| figures | 1 |

Measured 2026-12-02, commit 86c17e5, by `python3 benchmarks/default_run.py`

| run | wall time | CPU time |
| --- | --- | --- |
| cold, --cores 1 | 11 min 26 s (686 s) | 705 s |
"""


def test_the_first_benchmark_record_is_quoted_with_its_date_and_commit():
    record = hooks.benchmark_record(RECORDS)
    assert record == dict(date="2027-01-05", commit="abc1234",
                          runs={"cold, --cores 1": "9 min 1 s (541 s)", "no-op": "2.1 s (2 s)"})
    assert hooks.default_run_time("cold, --cores 1", RECORDS) == (
        "9 min 1 s (541 s), measured 2027-01-05 at commit abc1234 (benchmarks/default_run.md)")


def test_a_run_the_record_lacks_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"benchmarks/default_run.md: no run 'cold, --cores 2'.*no-op"):
        hooks.default_run_time("cold, --cores 2", RECORDS)
    with pytest.raises(ValueError, match="no line 'Measured DATE, commit SHA'"):
        hooks.benchmark_record("| run | wall time |\n")


def test_every_default_run_time_in_the_docs_is_the_benchmark_s():
    """Each `<!-- default-run: RUN -->` names a run of the benchmark's latest record, and becomes its
    wall time exactly as the record prints it (benchmarks/default_run.md)."""
    benchmark = (ROOT / hooks.BENCHMARK).read_text(encoding="utf-8")
    runs = [run for page in DOCS for run in hooks.DEFAULT_RUN.findall(page.read_text(encoding="utf-8"))]
    assert runs, "no page quotes the default run's time"
    for run in runs:
        wall = hooks.default_run_time(run).split(", measured ")[0]
        assert f"| {run} | {wall} |" in benchmark, run


TIME = re.compile(r"\b\d+ min( \d+ s)?\b|\b\d+(\.\d+)? s\b")


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_no_page_copies_a_default_run_time(page):
    """A sentence or table row about the default run states no time of its own: it quotes the benchmark
    (issue 40: docs/development.md gave 11 min 7 s beside the benchmark's other times)."""
    copied = [line for line in page.read_text(encoding="utf-8").splitlines()
              if re.search(r"default run", line, re.I) and TIME.search(hooks.DEFAULT_RUN.sub("", line))
              and "CPU-s" not in line]  # a job's CPU seconds, with its commit, are not the run's time
    assert copied == [], copied


def test_the_timing_model_page_says_what_the_claims_use():
    """docs/timing-model.md names the refit the claims are decided on as analysis/claims.py calls it
    (issue 40: the page said the claims use model_post_tflops, the fit that saw every point)."""
    call = "model.held_out(points)"
    assert call in (ROOT / "analysis" / "claims.py").read_text()
    page = (ROOT / "docs" / "timing-model.md").read_text()
    claims = re.search(r"^- The claims:.*?(?=^- |\Z)", page, re.M | re.S).group(0)
    assert call in claims and "model_post_tflops" not in claims


def test_the_verdicts_page_states_the_code_s_verdicts_kinds_sources_and_thresholds():
    """docs/verdicts.md names every verdict claims.csv can hold, every kind of claim with its claims,
    each source kind with the class of its numbers, and the thresholds as analysis/claims.py sets them."""
    from tpu_matmul_repro.analysis import claims
    from tpu_matmul_repro.analysis.number_classes import CLASS_NAMES

    page = (ROOT / "docs" / "verdicts.md").read_text()
    assert all(f"**{verdict}**" in page for verdict in claims.VERDICTS)
    rows = {cells[0]: cells for line in page.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    for kind, name in claims.KIND_NAMES.items():
        assert name in rows, name
        claims_of_kind = rows[name][1].split("; ")  # in short, one per claim
        assert len(claims_of_kind) == sum(c.kind == kind for c in claims.REGISTRY), name
    assert f"`ABOUT = {claims.ABOUT}`" in page and f"`NEAR = {claims.NEAR}`" in page
    assert f"`LEVEL = {claims.LEVEL}`" in page
    kinds = re.search(r"`source_kind` says which \(([^)]*)\)", page).group(1)
    assert sorted(k.strip(" `") for k in kinds.split(",")) == sorted(claims.SOURCE_CLASSES)
    classes = re.search(r"`source` begins with the class.*?: ([^.]*)\.", page, re.S).group(1)
    assert sorted(c.strip() for c in classes.split(",")) == sorted(
        CLASS_NAMES[c] for c in set(claims.SOURCE_CLASSES.values()))


def test_the_readme_s_run_times_are_the_benchmark_record_s():
    """The README cannot run the docs' hook, so its two quoted times are checked against the record:
    the cold run's minutes to the nearest half minute, the warm run's seconds as printed there."""
    record = hooks.benchmark_record((ROOT / hooks.BENCHMARK).read_text(encoding="utf-8"))["runs"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cold = int(re.search(r"\((\d+) s\)", record["cold, --cores 1"]).group(1))
    said = float(re.search(r"everything, about ([\d.]+) min cold", readme).group(1))
    assert abs(said - cold / 60) <= 0.25, (said, cold)
    warm = re.search(r"\((\d+) s\)", record["warm cache (results/ deleted), --cores 1"]).group(1)
    assert f"({warm} s in that record)" in readme


def test_the_advisor_s_speed_record_is_the_benchmark_s():
    """docs/advisor.md's speed summary is what benchmarks/advisor_speed.py makes of its record, with the
    record's yardsticks; a sentence that every median meets its goal holds for the table."""
    import pandas as pd
    from test_benchmarks import _script  # which loads the scripts advisor_speed imports from its folder

    speed = _script("advisor_speed")
    record = pd.read_csv(ROOT / "benchmarks" / "advisor_speed.csv")
    text = (ROOT / "docs" / "advisor.md").read_text()
    summary = speed.summary(record)
    assert summary in text
    yardsticks = pd.concat([record.yardstick_before_s, record.yardstick_after_s])
    assert f"(yardstick {yardsticks.min():.2f} to {yardsticks.max():.2f} s" in " ".join(text.split())
    if "Every median meets its goal" in text:
        assert all(line.endswith("| yes |") for line in summary.splitlines()[2:])


def test_the_advisor_examples_are_the_tools_runs_of_the_advisor_as_it_prints_now():
    """docs/advisor.md's examples: exactly tools/advisor_examples.py's commands, in its order, each
    followed by output that opens as the advisor opens now (the recommendation, or the model's title)."""
    spec = importlib.util.spec_from_file_location("advisor_examples", ROOT / "tools" / "advisor_examples.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    page = (ROOT / "docs" / "advisor.md").read_text()
    section = page.split(tool.START)[1].split(tool.END)[0]
    assert re.search(r"Real runs at commit [0-9a-f]{7}(-dirty)?, \d{4}-\d{2}-\d{2} ", section)
    blocks = re.findall(r"```\n\$ (advise[^\n]*)\n(.*?)\n```", section, flags=re.S)
    assert [command for command, _ in blocks] == [command for _, command in tool.EXAMPLES]
    for command, output in blocks:
        first = output.splitlines()[0]
        if "--model" in command:
            assert re.match(r"\S.* at \d+ tokens on \S+ \(", first), first
        else:
            shape = command.split()[1]
            assert re.match(rf"Use (XLA|blocks \(bm, bk, bn\) = \(\d+,\d+,\d+\)) for {shape} ", first), first
