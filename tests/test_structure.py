"""The structure the layout promises, read from the code's own import statements (nothing is run):
one installed package with no path setup, no import cycle among the project's modules, no lower
layer importing a higher one, and the sub-packages of experiments/ in one order."""
import ast
import functools
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from syntax_trees import syntax_tree

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tpu_matmul_repro"  # pyproject.toml: each top-level folder below is one of its sub-packages
# Layers, lowest first: a module may import its own layer and those below it, never one above.
LAYERS = {"kernels": 0, "experiments": 1, "analysis": 2, "figures": 3, "report": 4, "studies": 5, "advise": 5}


@functools.cache
def modules() -> dict[str, Path]:
    """tpu_matmul_repro.<folder>.<module> -> its file, for every module of the seven folders."""
    found = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join((PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return found


def layer(module: str) -> int:
    return LAYERS[module.split(".")[1]]


def tracked(*suffixes: str) -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / n for n in names.split() if n.endswith(suffixes) and (ROOT / n).is_file()]


def test_the_installed_package_is_the_tree():
    """pyproject.toml lists the package and every folder of the seven with an __init__.py, nothing else;
    tpu_matmul_repro/ links to each of the seven folders."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    folders = {".".join((PACKAGE, *p.parent.relative_to(ROOT).parts))
               for package in LAYERS for p in (ROOT / package).rglob("__init__.py")}
    assert sorted(setuptools["packages"]) == sorted(folders | {PACKAGE})
    links = {p.name: p.readlink() for p in (ROOT / PACKAGE).iterdir() if p.is_symlink()}
    assert links == {folder: Path("..", folder) for folder in LAYERS}


def test_every_import_of_the_package_is_a_file_a_static_checker_finds():
    """Each `tpu_matmul_repro.<...>` the code imports is a module or package file under tpu_matmul_repro/,
    the path an editor or mypy/pyright looks at (no import hook needed)."""
    name = rf"({PACKAGE}(?:\.\w+)*)"
    pattern = re.compile(rf"^\s*(?:from\s+{name}\s+import|import\s+{name})", re.M)
    imported = {a or b for path in tracked(".py", ".smk", "Snakefile")
                for a, b in pattern.findall(path.read_text())}
    assert len(imported) > 50

    def on_disk(name: str) -> bool:
        path = ROOT.joinpath(*name.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    assert sorted(name for name in imported if not on_disk(name)) == []


def test_the_editable_install_is_a_plain_path_file():
    """What an editable install adds to site-packages is the checkout's path, not an import hook (which
    static checkers cannot follow)."""
    added = [p for folder in map(Path, sys.path) if folder.is_dir()
             for p in folder.glob("__editable__*tpu_matmul_repro*")]
    if not added:
        pytest.skip("not an editable install")
    assert [p.name for p in added if p.suffix != ".pth"] == []  # a finder module is an import hook
    lines = [line for p in added for line in p.read_text().splitlines() if line.strip()]
    assert lines and [line for line in lines if line.startswith("import")] == []
    assert all((Path(line) / PACKAGE / "__init__.py").is_file() for line in lines)  # a checkout's root


def test_no_path_setup_and_no_import_by_folder_name():
    """The code imports the installed package, never a folder from the current directory, and nothing
    edits sys.path. One exception, said where it is: a compile worker in another toolchain's Python
    (which has not got the project installed) finds the package through PYTHONPATH."""
    old_style = re.compile(rf"^\s*(?:from|import)\s+(?:{'|'.join(LAYERS)})(?:\.|\s|$)", re.M)
    path_edit = re.compile(r"sys\.path\.(?:insert|append|extend)|sys\.path\s*[+]?=|\bPYTHONPATH\b")
    allowed = {"experiments/compile_study/tpu_compile.py", "tests/test_measure.py",  # a fake build's folder
               "tests/test_structure.py"}
    files = tracked(".py", ".smk", "Snakefile")
    assert len(files) > 100
    by_folder = [str(p.relative_to(ROOT)) for p in files if old_style.search(p.read_text())]
    assert by_folder == []
    editing = [str(p.relative_to(ROOT)) for p in files
               if path_edit.search(p.read_text()) and str(p.relative_to(ROOT)) not in allowed]
    assert editing == []


def test_the_import_graph_is_not_empty():
    """The tests below read the graph: one that found no import would pass them all."""
    graph = import_graph()
    assert sum(len(v) for v in graph.values()) > 300
    assert f"{PACKAGE}.experiments.core.schema" in graph[f"{PACKAGE}.analysis.aggregate"]


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """module -> the project's modules it imports (at top level or inside functions)."""
    known = modules()
    graph = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(syntax_tree(path)):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                imported.add(base)
                imported |= {f"{base}.{alias.name}" for alias in node.names}
        graph[name] = {m for m in imported if m in known and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_imports_a_higher_layer(module):
    own = layer(module)
    higher = sorted(m for m in import_graph()[module] if layer(m) > own)
    assert not higher, f"{module} (layer {own}) imports {higher}"


# The sub-packages of experiments/, lowest first. A run goes plan -> correctness, compile_study, measure,
# then analysis/ (a layer above, see LAYERS) reads what they wrote; in the code the planner and the stages
# meet only in core's types (core/jobs.py): a module imports its own sub-package and lower-ranked ones
# only, so neither the planner and a stage nor two stages import each other, and core imports none.
STAGE_RANKS = {"core": 0, "plan": 1, "correctness": 1, "compile_study": 1, "measure": 1}


def stage(module: str) -> str | None:
    """The sub-package of experiments/ that `module` is in (None outside them)."""
    parts = module.split(".")
    return parts[2] if parts[1] == "experiments" and len(parts) > 3 else None


def back_edges(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a sub-package of experiments/ other than the module's own and not ranked below it."""
    return sorted(f"{a} -> {b}" for a, imported in graph.items() for b in imported
                  if stage(a) and stage(b) and stage(a) != stage(b)
                  and not STAGE_RANKS[stage(b)] < STAGE_RANKS[stage(a)])


def test_every_sub_package_of_experiments_is_ranked():
    folders = {p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py")}
    assert folders == set(STAGE_RANKS)


def test_the_stage_order_finds_a_back_edge():
    core, plan, study, measure = (f"{PACKAGE}.experiments.{s}.m" for s in
                                  ("core", "plan", "compile_study", "measure"))
    assert back_edges({measure: {core}, study: {core}, plan: {core}, core: set()}) == []
    assert back_edges({plan: {study}, study: {plan}, core: {measure}}) == sorted(
        [f"{core} -> {measure}", f"{plan} -> {study}", f"{study} -> {plan}"])


def test_no_stage_imports_a_stage_of_its_rank_or_above():
    assert back_edges(import_graph()) == []


def study_folders() -> list[str]:
    """Every folder of studies/ with a README: a study with code of its own (then_and_now, history) or a
    config overlay (generations, search; test_an_overlay_only_widens_what_the_core_draws)."""
    return sorted(p.parent.name for p in (ROOT / "studies").glob("*/README.md"))


def test_an_overlay_only_widens_what_the_core_draws():
    """A folder of studies/ without code is a config overlay: its README.md and config.yaml, nothing else,
    setting only the core's config keys (the schema's), never `studies`. What it widens the core draws
    for any config: the generations figures and section compare the config's targets whenever there are
    two or more (the default's v5e and v6e already), the search figures follow the searches it asks for.
    So the figure kinds "generations" and "search" are the core's (figures/figure_specs.py: CORE_KINDS); only
    the overlay's folder is its own, and the core names it nowhere (the test below)."""
    import yaml

    from tpu_matmul_repro.experiments.plan.config import load_yaml, with_defaults
    from tpu_matmul_repro.figures.figure_specs import CORE_KINDS, figure_specs

    keys = set(yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())["properties"])
    overlays = [p for p in sorted((ROOT / "studies").iterdir())
                if (p / "README.md").exists() and not (p / "__init__.py").exists()]
    assert [p.name for p in overlays] == ["generations", "pallas_profile", "search"]
    for folder in overlays:
        assert sorted(f.name for f in folder.iterdir()) == ["README.md", "config.yaml"], folder
        overlay = set(load_yaml(folder / "config.yaml"))
        assert overlay <= keys - {"studies"}, (folder.name, overlay - keys)
    default = with_defaults(load_yaml(ROOT / "config" / "config.yaml"))
    assert len(default["targets"]) > 1 and {"generations", "search"} <= set(CORE_KINDS)
    assert {"generations", "search"} <= {kind for kind, _ in figure_specs(default).values()}


def test_the_core_reads_without_the_studies():
    """Nothing outside studies/ (the scripts, rules, templates and style sheet of the core included)
    names a study, overlays too: not its folder, nor (for a name no core word could be, then_and_now)
    the name itself, its report anchor (then-and-now) or its title's words (then and now, the captions
    included). The core meets a study only by the names of
    the config's `studies` list (experiments/plan/studies.py) and the registries its code fills (report
    sections, figure kinds, figure specs); the layer test above keeps it from importing one."""
    from tpu_matmul_repro.experiments.plan.config import study_names

    names = study_folders()
    assert set(study_names()) < set(names) and {"generations", "search"} <= set(names)
    core = [p for d in ("kernels", "experiments", "analysis", "figures", "report", "scripts", "rules")
            for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".smk", ".j2", ".css", ".rst")]
    assert any(p.suffix == ".css" for p in core) and any(p.suffix == ".j2" for p in core)
    core.append(ROOT / "Snakefile")
    spellings = {name: [rf"studies[./]{name}\b"] + ([rf"(?i)\b{name.replace('_', sep)}\b" for sep in "_- "]
                                                     if "_" in name else []) for name in names}
    naming = [(str(p.relative_to(ROOT)), name) for p in core for name in names
              if any(re.search(pattern, p.read_text()) for pattern in spellings[name])]
    assert naming == []


def test_every_study_with_code_keeps_its_tests_in_its_folder():
    """A study with code of its own (an __init__.py) keeps its tests in studies/<name>/tests/, which
    pyproject's testpaths (and so `python3 -m pytest`, the README's command) collect."""
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "studies" in pytest_options["testpaths"]
    with_code = [p.parent for p in (ROOT / "studies").glob("*/__init__.py")]
    assert with_code
    assert [p.name for p in with_code if not list((p / "tests").glob("test_*.py"))] == []


def test_every_column_is_declared_once_with_its_meaning():
    from tpu_matmul_repro.experiments.core.schema import COLUMN_SPECS, COLUMNS, SOURCES

    assert len(COLUMNS) == len(set(COLUMNS))
    for column in COLUMN_SPECS:
        assert column.meaning and column.sources and set(column.sources) <= set(SOURCES), column.name


def layout_block(text: str) -> list[str]:
    """The lines of the first fenced block under a `## Layout` heading."""
    after = text.split("## Layout", 1)[1]
    return after.split("```", 2)[1].strip("\n").splitlines()


def named_folders(lines: list[str]) -> tuple[set[str], set[str]]:
    """(the top-level names a layout block lists, every folder it names, as a path from the root). A
    line is `names  description`, the names separated by ", ", the description after two spaces or
    more; an indented line that starts with a folder (`core/  ...`) names a folder of the last
    unindented line's, any other indented line goes on with the description. A path in a description
    that does not start with a top-level name is in that line's folder (`core/` on `experiments/`'s)."""
    rows = []  # (indented, names, description)
    for line in lines:
        names, _, description = line.strip().partition("  ")
        indented = line.startswith(" ")
        if indented and not (names.endswith("/") and description):
            names, description = "", line.strip()  # the description of the line above, continued
        rows.append((indented, [n.strip() for n in names.split(",") if n.strip()], description))
    top = {n.split("/")[0] for indented, names, _ in rows if not indented for n in names}
    folders, parent = set(), ""
    for indented, names, description in rows:
        if not indented:
            parent = names[0].split("/")[0] + "/" if "/" in names[0] else ""
        elif names:
            folders |= {parent + n for n in names}
        for token in re.findall(r"[\w./<>-]*/[\w./<>*-]*", description):
            if "<" in token or "//" in token:  # a placeholder (studies/<name>/) or an address
                continue
            folder = token[: token.rindex("/") + 1]
            folders.add(folder if folder.split("/")[0] in top else parent + folder)
    return top, folders


@pytest.mark.parametrize("document", ["README.md", "docs/development.md"])
def test_the_layout_in_the_docs_is_the_tree(document):
    """Every top-level folder of the repository is in the document's layout, and every folder the layout
    names exists (issue 27: the README's layout tree matches the tree)."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    folders = {name.split("/")[0] for name in tracked if "/" in name and not name.startswith(".")}
    top, named = named_folders(layout_block((ROOT / document).read_text()))
    assert folders - top == set(), f"{document}'s layout leaves out {sorted(folders - top)}"
    missing = sorted(n for n in named | {f"{t}/" for t in top} if not (ROOT / n).exists())
    assert missing == [], f"{document}'s layout names {missing}, which the tree does not have"


def test_the_package_version_is_the_citation_s():
    import yaml

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert project["version"] == str(citation["version"])


def test_no_template_line_is_over_160_characters():
    """The report's templates (one per section, report/templates/sections/) and the studies' read like
    code: a long message is split into adjacent literals, which Jinja joins (the msgid is unchanged), and
    a line of markup breaks before a tag that strips the newline ({%- or {{-), so the page is the same."""
    templates = [p for p in tracked(".j2") if p.parts[len(ROOT.parts)] in ("report", "studies")]
    assert any(p.name == "report.html.j2" for p in templates)
    long = [f"{p.relative_to(ROOT)}:{i} ({len(line)})" for p in templates
            for i, line in enumerate(p.read_text().splitlines(), start=1) if len(line) > 160]
    assert long == []


CORE = ("kernels", "experiments", "analysis", "figures", "report", "advise")  # studies keep plugin names


def name_clashes(paths) -> list[list[str]]:
    """Groups of module paths whose stems are the same, or the same but for a plural s."""
    groups = {}
    for path in paths:
        stem = Path(path).stem
        if stem != "__init__":
            groups.setdefault(stem.removesuffix("s"), []).append(str(path))
    return [sorted(group) for group in groups.values() if len(group) > 1]


def test_the_clash_finder_finds_a_plural():
    assert name_clashes(["advise/model.py", "advise/models.py", "report/build.py"]) == [
        ["advise/model.py", "advise/models.py"]]


def test_no_two_core_modules_share_a_name():
    """A name says which module it is: no two modules of the core share a stem or differ by a plural."""
    core = [p.relative_to(ROOT) for p in tracked(".py") if p.relative_to(ROOT).parts[0] in CORE]
    assert name_clashes(core) == []


def test_module_docstrings_are_a_few_lines():
    """A module's docstring says what it holds in at most six lines; the docs carry the rest."""
    long = {}
    for path in tracked(".py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] == "docs" or "tests" in relative.parts:
            continue
        tree = syntax_tree(path)
        if ast.get_docstring(tree) is not None:
            lines = tree.body[0].end_lineno - tree.body[0].lineno + 1
            if lines > 6:
                long[str(relative)] = lines
    assert long == {}
