"""Every string a figure shows, by a short name: English source strings marked N_(), translated in the
one catalog (locale/<lang>/LC_MESSAGES/messages.po)."""
import re

from tpu_matmul_repro.experiments.core.i18n import N_, NC_, translate
from tpu_matmul_repro.kernels import kernel_facts

LABELS = {
    "more_notes": N_("… more notes in the figure's caption and file metadata"),
    "out_of_sample": N_("left out of the fit, off by a median %(pct).0f %% (%(n)s points)"),
    "axis_post": N_("%(unit)s, modelled as the post timed it"),
    "axis_device": N_("%(unit)s, modelled device time"),
    "axis_estimate": N_("%(unit)s, libtpu's estimate"),
    "axis_mixed": N_("%(unit)s"),
    "title_fidelity_compiler": N_("libtpu's estimate\nagainst %(source)s (%(target)s)"),
    "title_fidelity_model": N_("Timing model, out of sample\nagainst %(source)s (%(target)s)"),
    "fidelity_axis": N_("TFLOP/s, estimated"),
    "fidelity_axis_model": N_("TFLOP/s, modelled"),
    "agreement_few": N_("n = %(n)s, median ratio %(ratio).2f, |log| %(mal).2f"),
    "size": N_("Matrix size (M = K = N)"),
    "vmem": N_("VMEM (MiB)"),
    "intensity": N_("Arithmetic intensity (FLOP per HBM byte)"),
    "modelled_post": N_("modelled (timing model fitted to the post)"),
    "flagged_xla": N_("XLA at %(sizes)s not drawn: its estimate falls as size grows (flagged, a cost-model "
                      "artefact)"),
    "sizes_on": N_("%(sizes)s on %(targets)s"),
    "interval_band": N_("shaded: the timing model's 80 %% prediction interval, from its held-out errors on "
                        "the post's v5e numbers"),
    "interval_unchecked": N_("; no measurement on %(target)s checks it"),
    "reference_axis": N_("TFLOP/s, %(source)s"),
    "xla": N_("XLA jnp.matmul"),
    "kernel": N_("Pallas %(kernel)s"),
    "blocks": N_("blocks %(blocks)s"),
    "estimate": N_("estimated"),
    "measured": N_("measured"),
    "published": N_("published (the post)"),
    "peak": N_("peak %(peak).0f"),
    "failed_estimate": N_("✗ %(label)s: VMEM %(need).1f MiB > %(limit).0f MiB"),
    "failed_estimate_bound": N_("✗ %(label)s: VMEM ≥ %(need).1f MiB > %(limit).0f MiB physical (not "
                                "compiled)"),
    "failed_other": N_("✗ %(label)s: %(status)s"),
    "failed_published": N_("✗ %(label)s: failed in the post"),
    "failed_today": N_("✗ %(label)s: today's compiler (libtpu %(libtpu)s) asks VMEM %(need).1f MiB > "
                       "%(limit).0f MiB; the post ran it"),
    "title_experiment": N_("%(experiment)s, %(dtype)s on %(target)s: %(kinds)s"),
    "title_experiment_empty": N_("%(experiment)s, %(dtype)s on %(target)s"),
    "failed_key": N_("× at zero: failed (why: below)"),
    "failed_key_caption": N_("× at zero: failed (why: below and in the caption)"),
    "band_key": N_("shaded: 80 %% interval of the timing model"),
    "modelled": N_("modelled"),
    "caption_out_of_sample": N_("the timing model, %(score)s"),
    "title_vmem": N_("VMEM used against the limit (%(target)s, estimated by libtpu %(libtpu)s)"),
    "title_roofline": N_("Roofline (%(target)s, estimated by libtpu %(libtpu)s)"),
    "title_roofline_modelled": N_("Roofline (%(target)s, modelled from libtpu %(libtpu)s's estimates)"),
    "title_search": N_("%(experiment)s block search: estimated %(unit)s, best bk per cell (%(dtype)s, "
                       "%(target)s)"),
    "title_fidelity": N_("Estimates against %(source)s numbers (%(target)s)"),
    "title_fidelity_modelled": N_("Estimated and modelled against %(source)s numbers (%(target)s)"),
    "title_generations": N_("%(experiment)s across TPU generations (%(dtype)s, estimated)"),
    "title_generations_modelled": N_("%(experiment)s across TPU generations (%(dtype)s, modelled)"),
    "title_search_modelled": N_("%(experiment)s block search: modelled %(unit)s, best bk per cell "
                                "(%(dtype)s, %(target)s)"),
    "limit_default": NC_("vmem figure", "default scoped limit %(limit).0f MiB"),
    "ok_default": N_("fits the default limit"),
    "ok_raised_any": N_("fits a raised limit"),
    "oom": N_("out of VMEM"),
    "hbm_roof": N_("HBM %(bw).0f GB/s"),
    "compute_roof": N_("peak %(peak).0f TFLOP/s (%(dtype)s)"),
    "published_key": N_("filled: published (the post)"),
    "this_run_key": N_("hollow: this run"),
    "size_panel": N_("M = K = N = %(size)s"),
    "bm": N_("bm"),
    "bn": N_("bn"),
    "no_data": N_("no data for this figure"),
    "identity": N_("y = x"),
    "agreement": N_("n = %(n)s, median ratio %(ratio).2f, |log| %(mal).2f, Spearman %(spearman).2f"),
    "best_pallas": N_("best Pallas %(target)s"),
    "xla_target": N_("XLA %(target)s"),
    "missing_cycles": N_("no estimate drawn at %(sizes)s for %(label)s: %(reason)s"),
    "reason_profiler_crashed": N_("libtpu's static profiler crashed (it compiles: VMEM verdict kept)"),
    "reason_no_static_profile": N_("no static profile: not asked for (plain compiles), or this libtpu has "
                                   "none"),
    "reason_over_profile_max_steps": N_("its grid has more steps than compile_study.profile_max_steps: not "
                                        "profiled"),
    "reason_unknown": N_("libtpu gave no cycle estimate"),
    # what an experiment runs: its kernel's SPEC description (kernels/*.py), or one of these
    "description_blocks_of": N_("%(kernel)s's kernel over other block sizes"),
    "description_other": N_("Pallas kernel"),
    "caption_estimate": N_("estimated by libtpu %(libtpu)s for %(target)s without a TPU (dashed lines)"),
    "caption_modelled": N_("modelled from libtpu %(libtpu)s's estimates for %(target)s by the timing model "
                           "fitted on the post's numbers, timed as the post did, without a TPU (dashed "
                           "lines)"),
    "caption_modelled_device": N_("modelled from libtpu %(libtpu)s's estimates for %(target)s by the timing "
                                  "model fitted on the post's numbers, as device time, without a TPU"),
    "caption_measured": N_("measured on %(device_kind)s (solid lines)"),
    "caption_published": N_("the post's published numbers, read off its figures (hollow markers)"),
    "caption_published_filled": N_("the post's published numbers, read off its figures (filled markers)"),
    "others_published": N_("the post's published numbers"),
    "others_measured": N_("measurements"),
    "search_legend_modelled": N_("Each cell: the best modelled %(unit)s over bk (top) and that bk (bottom). "
                                 "×: every bk runs out of VMEM (or fails to compile); blank: no "
                                 "configuration with this (bm, bn), neither the post's nor the search's."),
    "search_legend": N_("Each cell: the best estimated %(unit)s over bk (top) and that bk (bottom). ×: "
                        "every bk runs out of VMEM (or fails to compile); blank: no configuration with "
                        "this (bm, bn), neither the post's nor the search's."),
}
# how a language joins the parts of a sentence and lists of names (Chinese: 、 and full-width ；)
JOINS = {"sentences": N_("; "), "list": N_(", "), "two": N_(" and "), "range": N_("%(first)s to %(last)s"),
         "notes": N_("%(caption)s %(notes)s.")}
SOURCE_NAMES = {"published": N_("published"), "measured": N_("measured"), "estimate": N_("estimated"),
                "modelled": N_("modelled")}


def experiment_description(experiment: str, kernel: str | None, in_language) -> str:
    """What an experiment runs, in a language: its kernel's description, or that it runs that kernel over
    other blocks (v4); "Pallas kernel" where no row says which kernel ran."""
    if kernel is None:
        return in_language(LABELS["description_other"])
    if experiment == kernel:
        return in_language(kernel_facts(kernel).description)
    return in_language(LABELS["description_blocks_of"]) % {"kernel": kernel}


def text(lang: str, key: str, **values) -> str:
    return translate(lang, LABELS[key], **values)


def reason_key(cycles_method: str) -> str:
    """The LABELS key that says why a compiled configuration has no cycles (reason_unknown for a
    cycles_method without its own)."""
    key = f"reason_{cycles_method}"
    return key if key in LABELS else "reason_unknown"


def join(lang: str, how: str, parts) -> str:
    """`parts` joined as `lang` joins sentences ("sentences"), names ("list") or two names ("two")."""
    return translate(lang, JOINS[how]).join(parts)


# First words a sentence keeps in lower case: names as the code and the post spell them.
LOWER_CASE_NAMES = re.compile(r"(libtpu|jax|jaxlib|jnp|bm|bk|bn|v\d)\b")


def sentence(lang: str, words: str) -> str:
    """`words` begun as a sentence: capitalised unless it begins with a lower-case name (libtpu, v5)."""
    if lang != "en" or not words[:1].islower() or LOWER_CASE_NAMES.match(words):
        return words
    return words[0].upper() + words[1:]


def notes_after(lang: str, caption: str, notes: list[str]) -> str:
    """A caption with its notes after it, as one more sentence."""
    if not notes:
        return caption
    notes = sentence(lang, join(lang, "sentences", notes))
    return translate(lang, JOINS["notes"], caption=caption, notes=notes)


def source_names(lang: str) -> dict[str, str]:
    """What each kind of number is called: estimated, measured, published."""
    return {source: translate(lang, name) for source, name in SOURCE_NAMES.items()}

