"""The history: which release changed each of the post's VMEM figures that differ between the post's
toolchain and today's: endpoints compared, each difference bisected, then checked after (README.md).
"""
import pandas as pd

from tpu_matmul_repro.experiments.core.cases import Case
from tpu_matmul_repro.experiments.core.units import MiB
from tpu_matmul_repro.studies.history.bisect import Finding, bisect
from tpu_matmul_repro.studies.history.probes import ReleaseCompiler
from tpu_matmul_repro.studies.history.releases import Release
from tpu_matmul_repro.studies.toolchains import config_name, short_error

MATCH = ["experiment", "kernel", "dtype", "m", "k", "n", "bm", "bk", "bn"]


def label(experiment: str, case: Case) -> str:
    """e.g. "v2 N = 4, 2048", as the then-and-now figure says it."""
    return config_name(experiment, case.kernel, case.dtype, case.m, case.bm, case.bk, case.bn)


def changed(compiler: ReleaseCompiler, cases: list[tuple[str, Case]], log) -> list[tuple[str, Case]]:
    """The cases whose VMEM verdict or bytes differ between the first and the last release."""
    last = len(compiler.releases) - 1
    compiler.compile(0, cases)
    compiler.compile(last, cases)
    out = []
    for experiment, case in cases:
        before, after = compiler.answer(0, case), compiler.answer(last, case)
        if before.value != after.value:
            out.append((experiment, case))
            log.info("changed: %s: %s %s -> %s %s", label(experiment, case), before.status,
                     before.vmem_bytes, after.status, after.vmem_bytes)
    log.info("%d of %d configurations differ between %s and %s", len(out), len(cases),
             compiler.releases[0].describe(), compiler.releases[last].describe())
    return out


def run_history(compiler: ReleaseCompiler, cases: list[tuple[str, Case]], log):
    """(vmem_by_release, first_change, after_change) tables; see the module's docstring."""
    targets = changed(compiler, cases, log)
    findings = {}
    for experiment, case in targets:
        def answer(i, case=case):
            compiler.compile(i, targets)  # every changed configuration at each probed release
            return compiler.answer(i, case)

        findings[case] = bisect(len(compiler.releases), answer)
        f = findings[case]
        log.info("%s: first changed in %s (probed %d releases)%s", label(experiment, case),
                 compiler.releases[f.first_changed].describe() if f.first_changed is not None else "-",
                 len(f.probed), f"; {f.note}" if f.note else "")
    return (vmem_table(compiler, targets, findings), first_change_table(compiler.releases, targets, findings),
            after_change(compiler, cases, findings, log))


def after_change(compiler: ReleaseCompiler, cases: list[tuple[str, Case]], findings: dict[Case, Finding],
                 log) -> pd.DataFrame:
    """Every configuration at the newest release that first changed one (else the first release) and at
    the last: whether its VMEM verdict or bytes changed again since, which the endpoints alone can hide."""
    since = max((f.first_changed for f in findings.values() if f.first_changed is not None), default=0)
    last = len(compiler.releases) - 1
    compiler.compile(since, cases)
    compiler.compile(last, cases)
    rows = []
    for experiment, case in cases:
        before, after = compiler.answer(since, case), compiler.answer(last, case)
        rows.append(dict(
            **case_columns(experiment, case), **release_columns(compiler.releases[since], "since_"),
            since_status=before.status, since_vmem_bytes=before.vmem_bytes,
            **release_columns(compiler.releases[last], "last_"), last_status=after.status,
            last_vmem_bytes=after.vmem_bytes,
            verdict_changed=before.usable and after.usable and before.status != after.status,
            bytes_changed=before.usable and after.usable and before.vmem_bytes != after.vmem_bytes))
    table = pd.DataFrame(rows)
    changed = table[table.verdict_changed]
    log.info("after %s: %d of %d configurations changed VMEM verdict by %s%s; %d changed bytes",
             compiler.releases[since].describe(), len(changed), len(table),
             compiler.releases[last].describe(),
             "".join(f"; {r.label}: {r.since_status} -> {r.last_status}" for r in changed.itertuples()),
             int(table.bytes_changed.sum()))
    return table


def release_columns(release: Release, prefix: str = "") -> dict:
    return {f"{prefix}jax": release.jax, f"{prefix}jaxlib": release.jaxlib, f"{prefix}libtpu": release.libtpu,
            f"{prefix}jax_date": release.jax_date, f"{prefix}jax_commit": release.jax_commit}


def case_columns(experiment: str, case: Case) -> dict:
    return dict(experiment=experiment, kernel=case.kernel, dtype=case.dtype, m=case.m, k=case.k, n=case.n,
                bm=case.bm, bk=case.bk, bn=case.bn, label=label(experiment, case))


def vmem_table(compiler: ReleaseCompiler, targets, findings: dict[Case, Finding]) -> pd.DataFrame:
    """One row per probed release and changed configuration: what that release's compiler said."""
    rows = []
    for (index, case), row in sorted(compiler.rows.items(), key=lambda kv: kv[0][0]):
        experiment = next((e for e, c in targets if c == case), None)
        if experiment is None:  # compiled at the endpoints only, unchanged
            continue
        vmem = None if pd.isna(row.get("vmem_bytes")) else int(row["vmem_bytes"])
        rows.append(dict(
            release_index=index, **release_columns(compiler.releases[index]),
            **case_columns(experiment, case),
            bisected=index in findings[case].probed, status=row["status"], vmem_bytes=vmem,
            vmem_mib=None if vmem is None else round(vmem / MiB, 3),
            vmem_limit_bytes=row.get("vmem_limit_bytes"), vmem_method=row.get("vmem_method") or "",
            installed_jax=row.get("jax_version"), installed_jaxlib=row.get("jaxlib_version"),
            installed_libtpu=row.get("libtpu_version"), install_s=compiler.install_s.get(index),
            error=short_error(str(row.get("error") or "")), git_sha=row.get("git_sha")))
    return pd.DataFrame(rows).sort_values(["label", "release_index"], kind="stable").reset_index(drop=True)


def first_change_table(releases: list[Release], targets, findings: dict[Case, Finding]) -> pd.DataFrame:
    rows = []
    for experiment, case in targets:
        f = findings[case]
        first = releases[f.first_changed] if f.first_changed is not None else None
        changed_to = f.probed.get(f.first_changed) if first else None
        rows.append(dict(
            **case_columns(experiment, case),
            before_jax=releases[0].jax, before_status=f.before.status, before_vmem_bytes=f.before.vmem_bytes,
            after_jax=releases[-1].jax, after_status=f.after.status, after_vmem_bytes=f.after.vmem_bytes,
            **(release_columns(first, "first_changed_") if first else {}),
            first_changed_status=changed_to.status if changed_to else None,
            first_changed_vmem_bytes=changed_to.vmem_bytes if changed_to else None,
            last_unchanged_jax=releases[f.last_unchanged].jax if f.last_unchanged is not None else None,
            last_unchanged_libtpu=releases[f.last_unchanged].libtpu if f.last_unchanged is not None else None,
            exact=f.exact, one_step=f.one_step, probed=len(f.probed),
            probed_releases=" ".join(releases[i].jax for i in sorted(f.probed)),
            untested_between=" ".join(releases[i].jax for i in f.untested_between), note=f.note))
    return pd.DataFrame(rows)
