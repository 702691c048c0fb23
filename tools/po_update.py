"""Add translations to, and drop unused messages from, the Chinese catalog (locale/zh/LC_MESSAGES/).

    python3 tools/po_update.py NEW.py   (NEW.py defines ZH = {msgid: msgstr}; the key of a message
                                         marked with a context, NC_() or pgettext(), is (context, msgid))

Messages that no file marks any more (experiments/core/i18n.py: EXTRACT, used_messages) are removed, so
the catalog holds exactly what the build checks; a message with placeholders is flagged python-format.
"""
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from babel.messages import pofile  # noqa: E402
from babel.messages.catalog import PYTHON_FORMAT  # noqa: E402

from experiments.core import i18n  # noqa: E402


def main(new_path: str | None) -> None:
    catalog = i18n.read_catalog("zh")
    new = runpy.run_path(new_path)["ZH"] if new_path else {}
    for key, msgstr in new.items():
        context, msgid = key if isinstance(key, tuple) else (None, key)
        held = catalog.get(msgid, context=context)
        if held is not None and held.string and held.string != msgstr:
            raise SystemExit(f"{new_path}: {key!r} is translated {held.string!r} already, not {msgstr!r}: "
                             "give one of the two a context (NC_ or pgettext) or change it with po_edit.py")
        flags = ("python-format",) if PYTHON_FORMAT.search(msgid) else ()
        catalog.add(msgid, msgstr, flags=flags, context=context)
    used = i18n.used_messages()
    for message in list(catalog):
        if message.id and (message.id, message.context) not in used:
            catalog.delete(message.id, context=message.context)
    with open(i18n.catalog_path("zh"), "wb") as f:
        pofile.write_po(f, catalog, width=100, omit_header=False, sort_output=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
