import functools, importlib.util, json, os, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
DURATIONS = ROOT / 'tests' / 'durations.json'           # seconds per test group, measured: the order the suite runs in
MEASURED = ROOT / 'tests' / 'artifacts' / 'durations.json'   # what the last run measured (copy it over DURATIONS to refresh)
NEW_TEST_S = 60                                          # a test the record does not know yet: the budget of a new notebook

@functools.cache
def bench_common():
    "bench/common.py as a module (the records' helpers), loaded once per test process"
    spec = importlib.util.spec_from_file_location('bench_common', ROOT / 'bench' / 'common.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

@functools.cache
def stale_records()->tuple:
    "`stale()` of bench/results, found once per test process (it hashes the code of every record)"
    return tuple(bench_common().stale())

def venv_bin(name):
    "Path of console script `name` beside the running interpreter"
    return str(Path(sys.executable).parent / name)

def clean_env(**extra):
    "The environment for child processes: no IN_TEST (it turns nbdev-export into a no-op), quiet TF"
    env = {k: v for k, v in os.environ.items() if k != 'IN_TEST'}
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    return {**env, **extra}

# ---- scheduling: the suite runs on both cores (pytest-xdist, `--dist loadgroup`), longest groups first
def group_of(nodeid:str)->str:
    "Tests that share a module-scoped fixture stay on one worker: one group per test module; each notebook is a group of its own"
    nodeid = nodeid.split('@')[0] if nodeid.rfind('@') > nodeid.rfind(']') else nodeid   # xdist's '@group' suffix off
    path = Path(nodeid.split('::')[0]).name
    return nodeid.split('::')[-1] if path == 'test_notebooks.py' else path

def _xdist_name(group:str)->str:
    "The group's name as xdist can read it back: it splits a test id at '@' only when no ']' follows, so brackets become parentheses"
    return group.replace('[', '(').replace(']', ')')

@pytest.hookimpl(tryfirst=True)   # before pytest-xdist's own hook, which reads the marks to name each test's group
def pytest_collection_modifyitems(config, items):
    "Mark each test with its group and order the groups by their recorded seconds, longest first (each worker takes the next)"
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    for item in items: item.add_marker(pytest.mark.xdist_group(_xdist_name(group_of(item.nodeid))))
    first = {}
    for i, item in enumerate(items): first.setdefault(group_of(item.nodeid), i)
    items.sort(key=lambda it: (-known.get(group_of(it.nodeid), NEW_TEST_S), first[group_of(it.nodeid)]))

_seconds = {}
def pytest_runtest_logreport(report):
    g = group_of(report.nodeid)
    _seconds[g] = _seconds.get(g, 0.0) + report.duration

def pytest_sessionfinish(session, exitstatus):
    "Record the seconds of each group (in the controller, where every worker's reports arrive)"
    if hasattr(session.config, 'workerinput') or not _seconds: return
    MEASURED.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(MEASURED.read_text()) if MEASURED.exists() else {}
    MEASURED.write_text(json.dumps({**old, **{k: round(v, 1) for k, v in sorted(_seconds.items())}}, indent=1) + '\n')
