"""Rewrite parts of translations in the Chinese catalogs (locale/zh/LC_MESSAGES/messages.po and the
studies'): python3 tools/po_edit.py EDITS.py, where EDITS.py defines EDITS = [(old, new), ...], each
replaced in every msgstr that holds it."""
import runpy
import sys

from babel.messages import pofile

from tpu_matmul_repro.experiments.core import i18n


def forms(string) -> tuple[str, ...]:
    """A msgstr's forms: one, or a plural message's each."""
    return string if isinstance(string, tuple) else (string or "",)


catalogs = {study: i18n.read_catalog("zh", study) for study in i18n.scopes()}
for old, new in runpy.run_path(sys.argv[1])["EDITS"]:
    hits = [m for catalog in catalogs.values() for m in catalog
            if m.id and any(old in form for form in forms(m.string))]
    if not hits:
        raise SystemExit(f"{old!r}: in no translation")
    for m in hits:  # a plural message's msgstr is a tuple of forms
        m.string = (tuple(form.replace(old, new) for form in m.string) if isinstance(m.string, tuple)
                    else m.string.replace(old, new))
for study, catalog in catalogs.items():
    with open(i18n.catalog_path("zh", study), "wb") as f:
        pofile.write_po(f, catalog, width=100, sort_output=True)
