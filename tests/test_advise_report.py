"""The advisor's recommendation in the report (37, item 2): the line the CLI prints on top, made by the
same function from the advice table's numbers, in both languages, its words checked against those
numbers."""
import re

import pandas as pd
import pytest

from tpu_matmul_repro.advise import ranking as advice_table
from tpu_matmul_repro.experiments.core.i18n import translations
from tpu_matmul_repro.report import advice

WORK = 2 * 8192 * 4096 * 14336  # FLOPs of the shape


def row(target, kernel, rank, blocks, ms, tie="", status="ok", bound=None, factor=1.17):
    bm, bk, bn = blocks
    timed = ms is not None
    tflops = WORK / ms / 1e9 if timed else None
    return dict(target=target, m=8192, k=4096, n=14336, kernel=kernel, rank=rank, bm=bm, bk=bk, bn=bn,
                status=status, tie=tie, padded_shape=None, lower_bound_seconds=bound, vmem_mib=20.0,
                vmem_limit_mib=32.0, model_device_ms=ms, model_device_ms_hi80=ms * factor if timed else None,
                model_device_tflops=tflops, model_device_tflops_lo80=tflops / factor if timed else None,
                model_device_tflops_hi80=tflops * factor if timed else None)


def v6e_table() -> pd.DataFrame:
    """XLA modelled fastest, two blocks inside its band, one beyond it, one pruned by its bound."""
    tie = "tie with XLA (within its 80 % interval)"
    return pd.DataFrame([
        row("v6e", "v5", 1, (1024, 4096, 256), 1.181, tie, factor=1.495),
        row("v6e", "v5", 2, (1024, 1024, 2048), 1.215, tie),
        row("v6e", "v5", 3, (512, 4096, 256), 1.597),
        row("v6e", "v5", None, (256, 256, 256), None, status=advice.PRUNED, bound=2.1e-3),
        row("v6e", "xla", None, (None,) * 3, 1.139, factor=1.166)])


def numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_prints_the_cli_s_recommendation_in_its_language(lang):
    gettext = translations(lang).gettext
    section = advice.advice_section({"8192x4096x14336": v6e_table()}, lambda names: [], gettext)
    line = section[0]["rows"][0]["recommendation"]
    english = advice.recommendation(v6e_table(), 32 << 20, csv_hint=False)
    # the CLI's words, from the same function on the same numbers
    assert english == ("XLA or any of these 2 blocks: XLA is modelled 4 % faster than the best blocks "
                       "(1024,4096,256), inside the 80 % band (x/1.17): (1024,4096,256), (1024,1024,2048)")
    if lang == "en":
        assert line == english
    else:
        assert line.startswith("XLA 或下列 2 个分块中的任一个均可（建模值显示 XLA 比最优分块 (1024,4096,256) "
                               "快 4%"), line
        assert line.count("：") == 0  # one sentence, not a chain of colons
        assert "80% 区间（x/1.17）之内" in line
        assert sorted(numbers(line)) == sorted(numbers(english))  # the same numbers
    # the words against the numbers: 4 % is XLA's lead, x1.17 XLA's band, two blocks within it
    xla, best = 1.139, 1.181
    assert f"{100 * (best / xla - 1):.0f} %" == "4 %" and f"x{1.166:.2f}" == "x1.17"
    assert sum(t <= xla * 1.166 for t in (1.181, 1.215, 1.597)) == 2
    assert section[0]["rows"][0]["ties"] == 2


def test_the_report_s_line_is_the_cli_s_but_for_the_csv_hint():
    many = pd.DataFrame([row("v5e", "v5", i + 1, (128 * (i + 1), 512, 512), 1.0 + 0.01 * i,
                             "tie with #1 (within its 80 % interval)" if i else "") for i in range(10)]
                        + [row("v5e", "xla", None, (None,) * 3, 2.0)])
    cli = advice.recommendation(many, 16 << 20)
    report = advice.recommendation(many, 16 << 20, csv_hint=False)
    assert cli.startswith("Any of these 10 blocks, which the model cannot tell apart")
    assert cli.endswith("and 2 more (--csv lists them); XLA is modelled 100 % slower, beyond the band")
    assert report == cli.replace(" (--csv lists them)", "")
    assert advice_table.recommendation is advice.recommendation  # one function, the CLI's and the report's
