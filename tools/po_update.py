"""Add translations to, and drop unused messages from, the Chinese catalogs (core and studies), each
holding exactly its scope's messages: `python3 tools/po_update.py NEW.py` (docs/development.md).
"""
import runpy
import sys

from babel.messages import pofile
from babel.messages.catalog import PYTHON_FORMAT

from tpu_matmul_repro.experiments.core import i18n

LANG = "zh"


def main(new_path: str | None) -> None:
    held = {}  # (msgid, context) -> translation, from every catalog as written
    for study in [None, *i18n.studies()]:
        held |= {(m.id, m.context): m.string for m in i18n.read_catalog(LANG, study) if m.id and m.string}
    new = runpy.run_path(new_path)["ZH"] if new_path else {}
    for key, msgstr in new.items():
        context, msgid = key if isinstance(key, tuple) else (None, key)
        before = held.get((msgid, context))
        if before and before != msgstr:
            raise SystemExit(f"{new_path}: {key!r} is translated {before!r} already, not {msgstr!r}: "
                             "give one of the two a context (NC_ or pgettext) or change it with po_edit.py")
        held[(msgid, context)] = msgstr
    for study in [None, *i18n.studies()]:
        scope = i18n.scope_messages(study)
        path = i18n.catalog_path(LANG, study)
        if not scope and not path.exists():
            continue
        catalog = i18n.read_catalog(LANG, study)  # its header and dates kept: the same bytes when unchanged
        if not path.exists():
            catalog.header_comment = (f"# Chinese (Simplified) translations of the {study} study's texts\n"
                                      "# (the messages its folder marks that the core does not). Terms\n"
                                      "# follow locale/zh/glossary.yaml. Update with tools/po_update.py.")
            catalog.project, catalog.locale, catalog.fuzzy = "tpu-matmul-repro", "zh_Hans", False
        for message in list(catalog):
            if message.id and (message.id, message.context) not in scope:
                catalog.delete(message.id, context=message.context)
        for msgid, context in sorted(scope, key=lambda k: (k[0] if isinstance(k[0], str) else k[0][0],
                                                          k[1] or "")):
            singular = msgid if isinstance(msgid, str) else msgid[0]  # a plural message: (singular, plural)
            flags = ("python-format",) if PYTHON_FORMAT.search(singular) else ()
            catalog.add(msgid, held.get((msgid, context), ""), flags=flags, context=context)
            # babel's add keeps an existing message's string: set it (an empty one gets its translation)
            catalog.get(singular, context=context).string = held.get((msgid, context), "")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            pofile.write_po(f, catalog, width=100, omit_header=False, sort_output=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
