import subprocess, json, time, pytest
_current = [None]; used = {}; dur = {}
_orig = subprocess.Popen.__init__
def _init(self, args, *a, **k):
    text = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
    if _current[0] and ("compile_study.worker" in text or "history" in text or "toolchain" in text or "pip" in text):
        used.setdefault(_current[0], set()).add("compiler")
    if _current[0] and "snakemake" in text:
        used.setdefault(_current[0], set()).add("snakemake")
    return _orig(self, args, *a, **k)
subprocess.Popen.__init__ = _init
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid; t = time.time()
    yield
    dur[item.nodeid] = time.time() - t
    _current[0] = None
def pytest_sessionfinish(session):
    json.dump({"used": {k: sorted(v) for k, v in used.items()}, "dur": dur}, open("/tmp/trace.json", "w"))
