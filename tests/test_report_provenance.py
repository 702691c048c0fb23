"""The report's provenance: every toolchain's rows, the post's era's toolchain's release date beside the
post's, and a "How to reproduce" box with the cold run's time from the benchmark record."""
import re

import pytest
from test_report import render, two_toolchains

from tpu_matmul_repro.report import reproduce
from tpu_matmul_repro.report.typography import visible_text


def provenance_rows(html: str) -> list[list[str]]:
    part = html[html.index('id="provenance"'):]
    body = part[part.index("<tbody>"):part.index("</tbody>")]
    return [[visible_text(c).strip() for c in re.findall(r"<td>(.*?)</td>", r, flags=re.S)]
            for r in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)]


@pytest.mark.slow
def test_every_toolchain_s_rows_are_in_the_provenance_table(table):
    df = two_toolchains(table)
    html = render(df, "en", primary_toolchain="current")
    rows = provenance_rows(html)
    post = [r for r in rows if r[1] == "the post's compiler"]
    assert post and sum(int(r[-1]) for r in post) == int((df.toolchain == "post").sum())
    assert all(r[4] == "0.4.36" and r[5] == "0.0.5" and r[6] == "2024-12-05" for r in post)
    assert sum(int(r[-1]) for r in rows) == len(df)  # every row of the table, of every toolchain
    text = visible_text(html)
    assert "The post is dated 2024-11-27; the post's compiler, jax 0.4.36 with libtpu 0.0.5" in text
    assert "released on 2024-12-05" in text


@pytest.mark.slow
def test_the_reproduce_box_gives_the_commands_versions_and_the_recorded_cold_run(table):
    html = render(two_toolchains(table), "en", primary_toolchain="current")
    raw = html[html.index('<div class="reproduce">'):].split("</div>")[0]
    box = visible_text(re.sub(r"</?code>", "", raw))
    for command in reproduce.COMMANDS:
        assert command in raw
    assert "Today's compiler: jax 0.10.2, libtpu 0.0.42.1." in box
    assert "The post's compiler: jax 0.4.36, libtpu 0.0.5." in box
    record = reproduce.benchmark_record()
    assert record and f"A cold run took {record['cold']} with --cores 1" in box
    assert f"Python {record['python']}" in box


def test_the_benchmark_record_is_read_or_left_out(tmp_path):
    path = tmp_path / "default_run.md"
    path.write_text("# Default run: wall time\n\nMeasured 2026-12-03, commit bdfa8bc, by `x`\n"
                    "on 2 cores (CPU), 23 GiB, Linux, Python 3.11.7.\n\n| run | wall time |\n| --- | --- |\n"
                    "| cold, --cores 1 | 7 min 49 s (469 s) | 477 s |\n")
    assert reproduce.benchmark_record(path) == dict(date="2026-12-03", commit="bdfa8bc", python="3.11.7",
                                                    machine="2 cores (CPU), 23 GiB, Linux",
                                                    cold="7 min 49 s (469 s)")
    path.write_text("nothing recorded\n")
    assert reproduce.benchmark_record(path) is None
    assert reproduce.benchmark_record(tmp_path / "absent.md") is None
