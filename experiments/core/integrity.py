"""Cache entries that prove their integrity: a JSON entry written with the sha256 of its own content,
parsed and written again canonically, so the digest covers the values (and the key's parts), not the layout.
"""
import hashlib
import json

DIGEST = "sha256"  # the field that holds the digest of the rest of the entry


class Unsealed(ValueError):
    """An entry written before entries carried a digest."""


def _digest(entry: dict) -> str:
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sealed(entry: dict, indent: int | None = None) -> str:
    """`entry` as JSON text with the digest of its content in the field DIGEST."""
    if DIGEST in entry:
        raise ValueError(f"an entry's own field {DIGEST!r} would be overwritten by its digest")
    return json.dumps({**entry, DIGEST: _digest(entry)}, sort_keys=True, indent=indent)


def unsealed(text: str) -> dict:
    """The entry in `text` without its digest; ValueError if it is not a JSON object or its content does
    not match its digest, Unsealed (a ValueError) if it carries none."""
    entry = json.loads(text)
    if not isinstance(entry, dict):
        raise ValueError(f"a JSON {type(entry).__name__}, not an entry")
    if DIGEST not in entry:
        raise Unsealed(f"no {DIGEST} of its content: written before entries carried one")
    content = {k: v for k, v in entry.items() if k != DIGEST}
    if entry[DIGEST] != _digest(content):
        raise ValueError(f"its content does not match its {DIGEST}: changed since it was written")
    return content
