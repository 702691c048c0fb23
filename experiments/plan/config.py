"""Loading and checking config/config.yaml: a strict YAML read, the JSON schema, then checks the schema
cannot express; every error names the config key and the offending value, before any job runs.
"""
import copy
import functools
import math
import sys
from pathlib import Path

import jsonschema
import yaml

from tpu_matmul_repro.experiments.core import reading
from tpu_matmul_repro.experiments.core.chips import CHIPS, advised_targets
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
    """config/schema.yaml, its kernel enums filled from the kernel registry, its target enums from CHIPS."""
    loaded = copy.deepcopy(_schema_file(SCHEMA.stat().st_mtime_ns))
    defs = loaded["$defs"]
    defs["kernel"]["enum"] = list(DECLARED)
    defs["pallas_kernel"]["enum"] = [name for name, facts in DECLARED.items() if facts.pallas]
    defs["blocked_kernel"]["enum"] = list(BLOCKED)
    defs["target"]["enum"] = list(CHIPS)
    defs["advised_target"]["enum"] = list(advised_targets())
    loaded["properties"]["studies"]["items"]["enum"] = study_names()
    return loaded


def study_names() -> list[str]:
    """The optional studies: the folders with a studies/<name>/rules.smk."""
    return sorted(p.parent.name for p in (ROOT / "studies").glob("*/rules.smk"))


# Bounds on a config's shape, checked before anything walks it (config/config.yaml holds about 300
# values, 7 levels deep): YAML aliases let a few hundred bytes stand for 10^9 values.
MAX_VALUES = 100_000
MAX_DEPTH = 32


def checked(config: dict) -> dict:
    """`config` checked against the schema (ConfigError naming key and value), with its defaults: bounded,
    `--config`'s text ('6') read as YAML reads it where the schema wants no text, NaN refused, then the
    generations, the schema and the advice shapes."""
    check_bounded(config)
    config = normalised(config)
    check_finite(config)
    check_generations(config)
    check_schema(config)
    config = with_defaults(config)
    check_advice(config)
    return config


def check_advice(config: dict) -> None:
    """ConfigError at the first of advice.shapes that does not fit the HBM of a target advised for: the
    advisor's own bound (traffic.hbm_problem), so the config takes exactly the shapes `advise` takes."""
    from tpu_matmul_repro.experiments.core.traffic import hbm_problem

    section = config["advice"]
    targets = section.get("targets") or [t for t in config["targets"] if t in advised_targets()]
    for i, shape in enumerate(section["shapes"]):
        for target in targets:
            why = hbm_problem(shape, section["dtype"], target)
            if why:
                raise ConfigError(f"invalid config: advice.shapes[{i}]: {list(shape)}: {why}")


def normalised(config: dict) -> dict:
    """A copy of `config` with each string the schema takes no text for at its key read as YAML reads it
    (`--config 'measure={samples: 6}'` leaves '6')."""
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
    try:  # libyaml where PyYAML has it: its pure-Python parser recurses (5000 "[" overflowed the stack)
        value = yaml.load(text, Loader=_SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return text
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if "number" in node.get("type", ()):
        try:
            return float(text)
        except ValueError:
            pass
    return text


def check_bounded(config) -> None:
    """ConfigError at the first key past MAX_VALUES values or MAX_DEPTH levels; without recursion, and
    stopping there, so a value shared many times over costs at most MAX_VALUES steps."""
    for seen, (path, _) in enumerate(_walk(config), 1):
        if seen > MAX_VALUES:
            raise ConfigError(f"invalid config: {_key(path) or '<root>'}: more than {MAX_VALUES} values in "
                              "the config (YAML aliases counted where they are used)")
        if len(path) > MAX_DEPTH:
            raise ConfigError(f"invalid config: {_key(path[:MAX_DEPTH])}: nested deeper than {MAX_DEPTH} "
                              "levels")


def check_finite(config) -> None:
    """Refuse a NaN or infinity anywhere: a schema's minimum and maximum let NaN through (a NaN
    tolerance would call any result right)."""
    for path, value in _walk(config):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"invalid config: {_key(path)}: {value} is not a finite number")


def _walk(config):
    """(path, value) of `config` and of everything in it, in order, without recursion."""
    stack = [((), config)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(reversed([((*path, k), v) for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([((*path, i), v) for i, v in enumerate(value)]))


def with_defaults(config: dict) -> dict:
    """A copy of `config` with the schema's defaults filled in at every depth (their one place)."""
    root = schema()
    return _fill(copy.deepcopy(config), root, root)


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
    """An integer of the schema: 1024, not 1024.0 (JSON Schema's "integer" takes both; a float size
    crashes a job later)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number))


# Every TPU generation jax knows, tried without a TPU with the pipeline's libtpu (tools/tpu_generations.py).
GENERATIONS = ROOT / "data" / "tpu_generations.csv"


def target_places(config: dict):
    """(key, target) for every target the config names: targets, advice, searches and toolchains; before
    the schema, so any value may be of any type."""
    def listed(key, value):
        return [(f"{key}[{i}]", t) for i, t in enumerate(value)] if isinstance(value, list) else []

    def mapping(value) -> dict:
        return value if isinstance(value, dict) else {}

    places = listed("targets", config.get("targets"))
    places += listed("advice.targets", mapping(config.get("advice")).get("targets"))
    for name, spec in mapping(mapping(config.get("compile_study")).get("experiments")).items():
        search = mapping(mapping(spec).get("search"))
        places += listed(f"compile_study.experiments.{name}.search.targets", search.get("targets"))
    for name, spec in mapping(config.get("toolchains")).items():
        for key in ("targets", "estimates_for"):
            places += listed(f"toolchains.{name}.{key}", mapping(spec).get(key))
    return places


@functools.cache
def _generations(_mtime_ns: int) -> dict:
    import csv

    with open(GENERATIONS, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {row["generation"]: row for row in rows}


def check_generations(config: dict) -> None:
    """ConfigError for a target the pipeline's libtpu cannot compile for (data/tpu_generations.csv)."""
    try:
        known = _generations(GENERATIONS.stat().st_mtime_ns)
    except OSError:
        return
    for key, target in target_places(config):
        row = known.get(str(target))
        if row and row["compiles"] != "true":
            why = row["error"].split(";")[0]
            raise ConfigError(f"{key}: {target!r}: libtpu {row['libtpu']} cannot compile for TPU {target} "
                              f"without a TPU ({why}; data/tpu_generations.csv, tools/tpu_generations.py)")


def check_schema(config: dict) -> None:
    """ConfigError in one line, each error naming the key as the user wrote it (sizes[0])."""
    errors = sorted(Validator(schema()).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{_key(e.absolute_path) or '<root>'}: {_shortened(e.message)}" for e in errors]
        raise ConfigError("invalid config: " + "; ".join(lines))


def _shortened(message: str, longest: int = 300) -> str:
    """A schema message quotes the value whole: a long one (a list of a thousand sizes) in part."""
    return message if len(message) <= longest else f"{message[:longest // 2]} … {message[-longest // 3:]}"


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


def _bounded(node, path: Path) -> None:
    """ConfigError unless the composed document `node`, aliases expanded, holds at most MAX_VALUES values
    at most MAX_DEPTH levels deep, and no alias inside the value it names; each node visited once."""
    size, depth, open_nodes = {}, {}, set()

    def children(n):
        if isinstance(n, yaml.MappingNode):
            return [part for pair in n.value for part in pair]
        return list(n.value) if isinstance(n, yaml.SequenceNode) else []

    def refuse(n, why):
        mark = n.start_mark
        raise ConfigError(f"{path}:{mark.line + 1}:{mark.column + 1}: {why}")

    stack = [(node, False)]
    while stack:
        n, finished = stack.pop()
        if finished:
            open_nodes.discard(id(n))
            parts = children(n)
            size[id(n)] = 1 + sum(size[id(c)] for c in parts)
            depth[id(n)] = 1 + max((depth[id(c)] for c in parts), default=0)
            if size[id(n)] > MAX_VALUES:
                refuse(n, f"more than {MAX_VALUES} values once its YAML aliases are expanded (a config "
                          f"holds a few hundred)")
            if depth[id(n)] > MAX_DEPTH:
                refuse(n, f"nested deeper than {MAX_DEPTH} levels")
        elif id(n) in open_nodes:
            refuse(n, "an alias inside the value it names: a value that contains itself")
        elif id(n) not in size:
            open_nodes.add(id(n))
            stack.append((n, True))
            stack.extend((c, False) for c in children(n) if id(c) not in size)


def load_yaml(path, kind: str = "config file") -> dict:
    """A config file's contents; ConfigError naming the file (and line and column): not a regular file,
    too large, not UTF-8, not YAML, a duplicate key, or too large or deep once expanded (_bounded)."""
    path = Path(path)
    try:
        text = reading.read_text(path, kind)
    except reading.ReadError as e:
        raise ConfigError(str(e)) from None
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _bounded(node, path)
            loaded = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except RecursionError:  # PyYAML's pure-Python parser, where libyaml is missing, composes recursively
        raise ConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: {e.problem or e.context}") from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow (NUL, other controls)
        raise ConfigError(f"{path}: not valid YAML: {e.reason} (character {e.position})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {str(e).strip().splitlines()[0]}") from None
    if loaded is None:  # as Snakemake refuses one, but naming it
        raise ConfigError(f"{path}: empty; a {kind} holds a mapping of keys")
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: a {kind} holds a mapping of keys, not a {type(loaded).__name__}")
    return loaded


def load_with_overlays(*paths) -> dict:
    """config/config.yaml with the files at `paths` merged as `--configfile` merges them."""
    from snakemake.utils import update_config

    config = load_yaml(ROOT / "config" / "config.yaml")
    for path in paths:
        update_config(config, load_yaml(path))
    return config


CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")  # Snakemake's spellings; each takes one or more paths


def configfiles_of(argv) -> list[str]:
    """The paths a Snakemake command line gives `--configfile`/`--configfiles` (each option takes the
    words up to the next option; `--configfile=PATH` too)."""
    paths, taking = [], False
    for word in argv:
        name, equals, value = word.partition("=")
        if name in CONFIGFILE_OPTIONS:
            taking = not equals
            paths += [value] if equals else []
        elif word.startswith("-"):
            taking = False
        elif taking:
            paths.append(word)
    return paths


def check_configfiles(argv) -> None:
    """Refuse, in one line naming it, the first `--configfile` of a Snakemake command line that load_yaml
    refuses: run from the default profile, before Snakemake reads the files (its messages name none)."""
    for path in configfiles_of(argv):
        try:
            load_yaml(path)
        except ConfigError as e:
            print(f"--configfile {e}", file=sys.stderr)
            raise SystemExit(1) from None
