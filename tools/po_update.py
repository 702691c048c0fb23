"""Add translations to, and drop unused messages from, the report's Chinese catalog.

    python3 tools/po_update.py NEW.py   (NEW.py defines ZH = {msgid: msgstr})

Messages the report no longer uses (report.build.used_messages) are removed, so the catalog holds
exactly what the build checks.
"""
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from babel.messages import pofile  # noqa: E402

from report import build  # noqa: E402


def main(new_path: str | None) -> None:
    path = build.LOCALE / "zh" / "LC_MESSAGES" / "messages.po"
    with open(path, "rb") as f:
        catalog = pofile.read_po(f, locale="zh_Hans")
    new = runpy.run_path(new_path)["ZH"] if new_path else {}
    for msgid, msgstr in new.items():
        flags = ("python-format",) if "%(" in msgid else ()
        catalog.add(msgid, msgstr, flags=flags)
    used = build.used_messages()
    for message in list(catalog):
        if message.id and message.id not in used:
            del catalog[message.id]
    with open(path, "wb") as f:
        pofile.write_po(f, catalog, width=100, omit_header=False, sort_output=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
