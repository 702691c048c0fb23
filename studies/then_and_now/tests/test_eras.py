"""The eras of then_and_now.csv: in release order, and the sentence on what changed before today."""
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.analysis.toolchain_rows import toolchains_of
from tpu_matmul_repro.studies.then_and_now.analysis import verdict_changes
from tpu_matmul_repro.studies.then_and_now.section import changes_to_today, first_page

MiB = 2**20


def table(mid2026_status: str) -> pd.DataFrame:
    """Two of the post's configurations under three eras; mid-2026's verdict on the second as given."""
    rows = []
    for m, post, mid, today in ((1024, "ok", "ok", "ok"), (2048, "ok", mid2026_status, "vmem_oom")):
        row = dict(experiment="v2", kernel="v2", dtype="float32", m=m, k=m, n=m, bm=m // 4, bk=m, bn=m // 4,
                   published_status="ok")
        for name, status, libtpu, vmem in (("post", post, "0.0.5", 9.5), ("mid2026", mid, "0.0.42.1", 18.0),
                                           ("current", today, "0.0.50.1", 18.0 + (m == 1024))):
            row.update({f"{name}_status": status, f"{name}_vmem_bytes": vmem * MiB,
                        f"{name}_limit_bytes": 16 * MiB, f"{name}_agrees": status == "ok",
                        f"{name}_libtpu": libtpu, f"{name}_error": ""})
        rows.append(row)
    return pd.DataFrame(rows)


def test_the_eras_go_by_jax_release_not_by_name():
    df = pd.DataFrame(dict(source="estimate", target="v5e", toolchain=["post", "mid2026", "current", "a"],
                           jax_version=["0.4.36", "0.10.2", "0.12.0.1", "0.9.0"]))
    assert toolchains_of(df, "current") == ["post", "a", "mid2026", "current"]


def test_no_changed_verdict_is_said_from_the_data():
    same = table("vmem_oom")
    found = verdict_changes(same, "mid2026", "current")
    assert (found["n"], len(found["changed"]), found["bytes_differ"]) == (2, 0, 1)
    sentence = changes_to_today(same, "current", lambda m: m)
    assert sentence.startswith("No VMEM verdict changed between the mid-2026 compiler (libtpu 0.0.42.1) and "
                               "today's compiler (libtpu 0.0.50.1)")
    assert "all 2 configurations" in sentence and "1 of them with a different number" in sentence
    # said in the study's section (its template prints `changes`), not in the abstract, which stays short
    assert sentence not in first_page(same, "current", lambda m: m)[0]
    template = Path(__file__).resolve().parent.parent / "templates" / "then_and_now.html.j2"
    assert "{{ section.changes }}" in template.read_text()


def test_a_changed_verdict_is_named():
    sentence = changes_to_today(table("ok"), "current", lambda m: m)
    assert "changed on 1 of the 2 configurations" in sentence
    assert "float32 at 2048: fits, now out of VMEM" in sentence


def test_two_eras_have_no_sentence_on_an_era_between():
    two = table("ok").drop(columns=[c for c in table("ok").columns if c.startswith("mid2026_")])
    assert len(first_page(two, "current", lambda m: m)[0]) == 2  # today's and the post's agreement, no more


def test_the_same_verdicts_and_bytes_are_said_as_such():
    same = table("vmem_oom")
    same["current_vmem_bytes"] = same["mid2026_vmem_bytes"]
    assert changes_to_today(same, "current", lambda m: m).endswith(
        "the same outcome and the same VMEM bytes on all 2 configurations both compiled.")
