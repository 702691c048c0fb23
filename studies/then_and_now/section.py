"""The report's "Then and now" section and its lines on the first page, registered with
report.sections when the study is loaded; its messages are marked N_() here and in templates/.
"""
from pathlib import Path

import pandas as pd

from tpu_matmul_repro.analysis.toolchain_rows import toolchains_of
from tpu_matmul_repro.experiments.core.cases import config_label
from tpu_matmul_repro.experiments.core.chips import POST_CHIP
from tpu_matmul_repro.experiments.core.i18n import N_
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.report.sections import Section, register
from tpu_matmul_repro.report.tables import toolchain_name
from tpu_matmul_repro.studies.then_and_now import mechanism_text
from tpu_matmul_repro.studies.then_and_now.analysis import (
    agreement,
    claims_then,
    disagrees,
    from_csv,
    missing_reason,
    then_and_now,
    toolchains_in,
    verdict_changes,
)

HERE = Path(__file__).resolve().parent


def result_cell(status, vmem, error, gettext) -> str:
    """'ok, 12.32 MiB', 'out of VMEM, 48.82 MiB', '≥ 192.00 MiB, not compiled', or the status."""
    if not isinstance(status, str) or not status:
        return "–"
    if status == "ok" and pd.notna(vmem):
        return gettext("ok, %(mib).2f MiB") % {"mib": vmem / MiB}
    if status == "vmem_oom" and pd.notna(vmem):
        if str(error).startswith("not compiled"):
            return gettext("out of VMEM, ≥ %(mib).2f MiB (not compiled)") % {"mib": vmem / MiB}
        return gettext("out of VMEM, %(mib).2f MiB") % {"mib": vmem / MiB}
    return status


def config_cell(row) -> str:
    return " ".join(filter(None, (row.experiment, config_label(row.kernel, row.m, row.bm, row.bk, row.bn))))


def comparison(df: pd.DataFrame, table: pd.DataFrame, primary: str | None, gettext) -> dict | None:
    """The toolchains' summaries and the appendix's rows (from `table`, the study's then_and_now.csv), or
    None when this run has a single toolchain."""
    names = toolchains_of(df, primary)
    if len(names) < 2:
        return None
    est = df[(df.source == "estimate") & (df.target == POST_CHIP)]
    columns, summaries, missing = [], [], []
    for name in names:
        first = est[est.toolchain == name].iloc[0]
        a = agreement(table, name)
        columns.append(dict(name=toolchain_name(name, gettext, standalone=True), jax=first.jax_version,
                            libtpu=first.libtpu_version))
        reason = missing_reason(df, name)
        if reason:
            missing.append(dict(name=toolchain_name(name, gettext, standalone=True), reason=reason))
            continue
        summaries.append(dict(name=toolchain_name(name, gettext, standalone=True), jax=first.jax_version,
                              libtpu=first.libtpu_version, agree=a["agree"],
                              n=a["n"], total=a["total"], pct=100 * a["fraction"] if a["n"] else 0.0))
    verdicts = {"ok": gettext("ok"), "failed": gettext("failed")}
    rows = []
    for r in table.itertuples():
        cells = []
        for name in names:
            agrees = getattr(r, f"{name}_agrees")
            cells.append(dict(text=result_cell(getattr(r, f"{name}_status"), getattr(r, f"{name}_vmem_bytes"),
                                               getattr(r, f"{name}_error"), gettext),
                              disagrees=disagrees(agrees)))
        rows.append(dict(config=config_cell(r), dtype=r.dtype, size=int(r.m),
                         post=verdicts.get(r.published_status, r.published_status), cells=cells))
    return dict(columns=columns, summaries=summaries, missing=missing, rows=rows)


def toolchain_agreement(table: pd.DataFrame | None, primary: str | None) -> list[dict]:
    """Per toolchain of then_and_now.csv (the others first, `primary` last) that compiled any of the
    post's configurations: how many it compiled and how many of those agree with the post's verdict."""
    if table is None or table.empty:
        return []
    names = toolchains_in(table)  # the eras in order (analysis.toolchain_rows.toolchains_of)
    names = [n for n in names if n != primary] + [n for n in names if n == primary]
    return [a for a in (agreement(table, name) for name in names) if a["n"]]


def changes_to_today(table: pd.DataFrame | None, primary: str | None, gettext) -> str | None:
    """One sentence, from then_and_now.csv: which of the post's configurations changed VMEM verdict
    between the era just before today's (the newest other toolchain) and today's, or that none did;
    None with fewer than two toolchains that compiled them."""
    eras = toolchain_agreement(table, primary)
    if len(eras) < 2 or eras[-1]["toolchain"] != primary:
        return None
    before, after = eras[-2], eras[-1]
    found = verdict_changes(table, before["toolchain"], after["toolchain"])
    names = dict(before=toolchain_name(before["toolchain"], gettext), then=before["libtpu"],
                 after=toolchain_name(after["toolchain"], gettext), now=after["libtpu"], n=found["n"],
                 bytes=found["bytes_differ"])
    if found["changed"].empty and not found["bytes_differ"]:
        return gettext(
            "No VMEM verdict changed between %(before)s (libtpu %(then)s) and %(after)s (libtpu %(now)s): "
            "the same outcome and the same VMEM bytes on all %(n)s configurations both compiled.") % names
    if found["changed"].empty:
        return gettext(
            "No VMEM verdict changed between %(before)s (libtpu %(then)s) and %(after)s (libtpu %(now)s): "
            "the same on all %(n)s configurations both compiled, %(bytes)s of them with a different number "
            "of VMEM bytes.") % names
    was, now = f"{before['toolchain']}_status", f"{after['toolchain']}_status"
    changed = "; ".join(
        gettext("%(config)s %(dtype)s at %(size)s: %(was)s, now %(now)s") % dict(
            config=config_cell(r), dtype=r.dtype, size=int(r.m), was=verdict_name(getattr(r, was), gettext),
            now=verdict_name(getattr(r, now), gettext))
        for r in found["changed"].itertuples())
    return gettext(
        "Between %(before)s (libtpu %(then)s) and %(after)s (libtpu %(now)s) the VMEM verdict changed on "
        "%(changed)s of the %(n)s configurations both compiled: %(which)s.") % dict(
        names, changed=len(found["changed"]), which=changed)


def verdict_name(status: str, gettext) -> str:
    """"fits" for ok, "out of VMEM" for vmem_oom."""
    return gettext("fits") if status == "ok" else gettext("out of VMEM")


def first_page(table: pd.DataFrame | None, primary: str | None, gettext,
               ngettext=lambda singular, plural, n: singular if n == 1 else plural
               ) -> tuple[list[str], list[str]]:
    """The abstract's sentences and the key findings' lines, from then_and_now.csv."""
    agreement_rows = toolchain_agreement(table, primary)
    abstract = []
    if len(agreement_rows) > 1:
        now, then = agreement_rows[-1], agreement_rows[0]
        abstract.append(gettext(
            "Today's compiler (libtpu %(libtpu)s) gives the post's VMEM verdict for %(agree)s of %(n)s of "
            "its configurations; the post's own (libtpu %(then)s) for %(then_agree)s of %(then_n)s.") % dict(
            libtpu=now["libtpu"], agree=now["agree"], n=now["n"], then=then["libtpu"],
            then_agree=then["agree"], then_n=then["n"]))
        if then["agree"] == then["n"] and now["agree"] < now["n"]:
            abstract.append(gettext("The configurations that no longer fit changed with the compiler, not "
                                    "with the kernels."))
    findings = []
    for a in agreement_rows:
        label = toolchain_name(a["toolchain"], gettext)
        findings.append(ngettext(
            "%(label)s (libtpu %(libtpu)s) gives the post's VMEM verdict on %(agree)s of its %(num)s "
            "configuration.",
            "%(label)s (libtpu %(libtpu)s) gives the post's VMEM verdict on %(agree)s of its %(num)s "
            "configurations.", a["n"]) % dict(label=label.capitalize(), libtpu=a["libtpu"], agree=a["agree"],
                                             num=a["n"]))
    return abstract, findings


def context(inputs) -> dict:
    """The section's context (report.sections.Inputs in): every toolchain's rows of the run's table."""
    table = inputs.tables.get("then_and_now")  # the study's file, as the report script read it
    table = then_and_now(inputs.df, inputs.primary) if table is None else from_csv(table)
    compared = comparison(inputs.df, table, inputs.primary, inputs.gettext)
    abstract, findings = first_page(table, inputs.primary, inputs.gettext, inputs.ngettext)
    names = sorted(n for n, (kind, _) in inputs.specs.items() if kind == "then_and_now")
    return dict(compared=compared, figures=inputs.figures(names), abstract=abstract, findings=findings,
                changes=changes_to_today(table, inputs.primary, inputs.gettext)
                if len(toolchain_agreement(table, inputs.primary)) > 2 else None,  # an era between
                appendix=compared is not None,
                mechanism=mechanism_text.sentences(*mechanism_text.read(), inputs.gettext))


def claims(inputs) -> pd.DataFrame:
    """The post's claims about what compiles under the other toolchains: a column each in the first page's
    key findings, and rows of the claims section (report.sections.Section.claims)."""
    table = inputs.tables.get("then_and_now_claims")  # the study's file, as the report script read it
    return claims_then(inputs.df, inputs.primary) if table is None else table


register(Section(
    anchor="then-and-now", title=N_("Then and now: the post's compiler against today's"),
    templates=HERE / "templates", body="then_and_now.html.j2", context=context,
    tables=("then_and_now", "then_and_now_claims"), claims=claims, claims_table="then_and_now_claims",
    appendix="then_and_now_table.html.j2", appendix_title=N_("Then and now, every configuration"),
    style="style.css"))
