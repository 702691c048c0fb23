"""Loading and checking config/config.yaml: the JSON schema, then checks the schema cannot express.

Every error names the config key and the offending value, and is raised before any job runs.
"""
import copy
import functools
import math
from pathlib import Path

import jsonschema
import yaml

from tpu_matmul_repro.kernels import DECLARED
from tpu_matmul_repro.kernels.spec import BLOCKS

# The blocked kernels (v3, v5): the ones with block searches and block shapes in the schema.
BLOCKED = tuple(name for name, facts in DECLARED.items() if facts.grid == BLOCKS)
ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A configuration value that cannot run; the message names the key and the value."""


# libyaml's parser where PyYAML has it: the same documents, read several times faster (every Snakemake
# start reads the schema and the config files)
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _schema_file(_mtime_ns: int) -> dict:
    return yaml.load(SCHEMA.read_text(), Loader=_SafeLoader)


def schema() -> dict:
    """config/schema.yaml, with its kernel enums filled from the kernel registry (kernels/)."""
    loaded = copy.deepcopy(_schema_file(SCHEMA.stat().st_mtime_ns))
    defs = loaded["$defs"]
    defs["kernel"]["enum"] = list(DECLARED)
    defs["pallas_kernel"]["enum"] = [name for name, facts in DECLARED.items() if facts.pallas]
    defs["blocked_kernel"]["enum"] = list(BLOCKED)
    loaded["properties"]["studies"]["items"]["enum"] = study_names()
    return loaded


def study_names() -> list[str]:
    """The optional studies with rules of their own: the folders studies/<name>/rules.smk."""
    return sorted(p.parent.name for p in (ROOT / "studies").glob("*/rules.smk"))


def checked(config: dict) -> dict:
    """`config` checked against the schema (ConfigError naming key and value), with its defaults.

    First the strings that `--config` leaves (Snakemake reads a nested value there as text: '6') are
    read as a config file would read them where the schema wants no text; then any NaN or infinity is
    refused, then the schema, whose integers are whole numbers written without a point (1024, not 1024.0).
    """
    config = normalised(config)
    check_finite(config)
    check_schema(config)
    return with_defaults(config)


def normalised(config: dict) -> dict:
    """A copy of `config` with each string the schema does not accept as text at its key (a number, a
    boolean or null from `--config 'measure={samples: 6}'`) read as YAML reads it (6)."""
    root = schema()
    return _normalise(copy.deepcopy(config), root, root)


def _normalise(value, node, root):
    if not isinstance(node, dict):
        return value
    node = _resolve(node, root)
    if isinstance(value, dict):
        known, extra = node.get("properties", {}), node.get("additionalProperties")
        return {k: _normalise(v, known.get(k, extra), root) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v, node.get("items"), root) for v in value]
    if isinstance(value, str) and not _takes_text(value, node):
        return _scalar(value, node)
    return value


def _takes_text(value: str, node: dict) -> bool:
    kinds = node.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return "string" in kinds or value in node.get("enum", ()) or node.get("const") == value


def _scalar(text: str, node: dict):
    """`text` as YAML reads it, if that is a number, boolean or null; as a number where the schema wants
    one and YAML 1.1 keeps text (1e-2); else the text itself, for the schema to refuse."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if "number" in node.get("type", ()):
        try:
            return float(text)
        except ValueError:
            pass
    return text


def check_finite(config, path=()) -> None:
    """Refuse a NaN or infinity anywhere: every comparison with NaN is false, so a schema's minimum and
    maximum let it through (a NaN tolerance would call any result right)."""
    if isinstance(config, dict):
        for key, value in config.items():
            check_finite(value, (*path, key))
    elif isinstance(config, list):
        for i, value in enumerate(config):
            check_finite(value, (*path, i))
    elif isinstance(config, float) and not math.isfinite(config):
        raise ConfigError(f"invalid config: {_key(path)}: {config} is not a finite number")


def with_defaults(config: dict, node: dict | None = None) -> dict:
    """A copy of `config` with every default of the schema filled in, at every depth.

    The schema is the one place defaults live: nothing else writes `.get(key, default)`.
    """
    root = schema() if node is None else None
    node = root if node is None else node
    return _fill(copy.deepcopy(config), node, root or node)


def _resolve(node: dict, root: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _fill(value, node: dict, root: dict):
    node = _resolve(node, root)
    if not isinstance(value, dict):
        return value
    for key, sub in node.get("properties", {}).items():
        declared = [n for n in (sub, _resolve(sub, root)) if "default" in n]  # beside a $ref, or behind it
        if key not in value and declared:
            value[key] = copy.deepcopy(declared[0]["default"])
        if key in value:
            value[key] = _fill(value[key], sub, root)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for key in set(value) - set(node.get("properties", {})):
            value[key] = _fill(value[key], extra, root)
    return value


def _whole_number(checker, instance) -> bool:
    """An integer of the schema: 1024, not 1024.0 (JSON Schema's own "integer" takes both; a float
    size or count crashes a job later, e.g. range() in the kernels)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number))


def check_schema(config: dict) -> None:
    """ConfigError in one line, each error naming the key as the user wrote it (sizes[0])."""
    errors = sorted(Validator(schema()).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key(e.absolute_path) or '<root>'}: {e.message}" for e in errors]
        raise ConfigError("invalid config: " + "; ".join(lines))


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class _StrictLoader(_SafeLoader):
    """YAML that refuses a key given twice in one mapping (plain YAML keeps the last, silently)."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first on line {seen[key] + 1}): YAML would keep "
                            "only the last one", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def load_yaml(path) -> dict:
    """A config file's contents; ConfigError with the file and line of a syntax error or a duplicate key."""
    path = Path(path)
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"{path}: a config file holds a mapping of keys, not a {type(loaded).__name__}")
    return loaded or {}


def load_with_overlays(*paths) -> dict:
    """config/config.yaml with the config files at `paths` merged in as `--configfile` merges them
    (Snakemake's own update_config: mappings key by key, any other value replaced): a study's overlay."""
    from snakemake.utils import update_config

    config = load_yaml(ROOT / "config" / "config.yaml")
    for path in paths:
        update_config(config, load_yaml(path))
    return config

