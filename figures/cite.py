"""How to cite and reuse what the pipeline draws: the project's name, version, URLs and licences, read
from CITATION.cff so they are stated once, and the attribution of the post's numbers."""
import dataclasses
import functools
from pathlib import Path

import yaml

from tpu_matmul_repro.experiments.core.i18n import N_, translate

CITATION_FILE = Path(__file__).resolve().parent.parent / "CITATION.cff"
# Figures and tables are data for others to reuse with credit; the code stays MIT (LICENSE).
RESULTS_LICENCE = "CC BY 4.0"
RESULTS_LICENCE_URL = "https://creativecommons.org/licenses/by/4.0/"


@dataclasses.dataclass(frozen=True)
class Citation:
    title: str
    authors: str
    version: str
    year: str
    code_licence: str
    repository: str | None  # None until CITATION.cff names it (repository-code)
    post_title: str
    post_author: str
    post_date: str
    post_url: str
    post_licence: str


@functools.cache
def citation(path: Path = CITATION_FILE) -> Citation:
    """The project's citation facts from CITATION.cff; a missing field is an error naming it."""
    cff = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    try:
        post = next(r for r in cff.get("references", []) if r.get("type") == "blog")
        return Citation(
            title=cff["title"], authors=", ".join(a["name"] for a in cff["authors"]),
            version=str(cff["version"]), year=str(cff["date-released"])[:4], code_licence=cff["license"],
            repository=cff.get("repository-code"), post_title=post["title"],
            post_author=", ".join(a["name"] for a in post["authors"]), post_date=str(post["date-published"]),
            post_url=post["repository-code"], post_licence=post["license"],
        )
    except (KeyError, StopIteration) as e:
        raise ValueError(f"{path}: missing citation field {e!s} (a blog reference with repository-code, "
                         "license, authors, date-published is required)") from None


# the credit lines, English; translated by translate() (experiments/core/i18n.py)
POST_ATTRIBUTION = N_("Published numbers: %(author)s, “%(title)s” (%(date)s), read off the post's figures by "
                      "pixel position; the post's code and figures: %(url)s (%(licence)s licence).")
CREDIT = N_("Source: %(title)s v%(version)s (commit %(commit)s%(where)s), %(licence)s")


def post_attribution(lang: str) -> str:
    """The credit line for the post's published numbers, wherever they are shown."""
    c = citation()
    return translate(lang, POST_ATTRIBUTION, author=c.post_author, title=c.post_title, date=c.post_date,
                     url=c.post_url, licence=c.post_licence)


def credit(lang: str, commit: str) -> str:
    """The attribution a reuser keeps with a figure (CC BY asks for it)."""
    c = citation()
    where = f", {c.repository}" if c.repository else ""
    return translate(lang, CREDIT, title=c.title, version=c.version, commit=commit, where=where,
                     licence=RESULTS_LICENCE)


def bibtex(key: str, title: str, commit: str, note: str = "") -> str:
    """A BibTeX entry for the project or one of its figures, with version, commit and URL."""
    c = citation()
    fields = [("title", "{" + title + "}"), ("author", "{" + c.authors + "}"), ("year", c.year),
              ("version", c.version)]
    if c.repository:  # no made-up address: the field appears once CITATION.cff names the repository
        fields.append(("url", c.repository))
    fields.append(("note", (note + "; " if note else "") + f"commit {commit}; reproduces {c.post_author}, "
                           f"``{c.post_title}'', {c.post_date}, \\url{{{c.post_url}}}"))
    body = ",\n".join(f"  {k:<7} = {{{v}}}" for k, v in fields)
    return f"@software{{{key},\n{body},\n}}"
