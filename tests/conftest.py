import functools, importlib.util, json, os, re, sys
from pathlib import Path
import pytest

# Two workers share two cores, so a worker's OpenMP threads (torch's on the CPU) often wait on a core the other worker
# holds, and OpenMP's default is to spin while it waits. Passive waiting: a 3-fold `tpututor train` on eager torch,
# two side by side, took 10.2 s (9.3 CPU-s) each spinning and 7.2-7.9 s (6.4-7.0 CPU-s) waiting; alone, 7.8 and 8.2 s.
# Set before torch loads, here (each worker) and in every child process, which inherits it.
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
# The tests' programs are tiny and run a few steps, so JAX's CPU compiles cost more than the programs run: with most of
# XLA's optimisations off (LLVM's lowest level) they compile sooner and compute the same: the memory plan's page, six
# Keras steps compiled, 60 to 42 s; the Keras LLM page 103 to 68 s. JAX's own switch, not XLA_FLAGS: torch_xla reads
# those too, and there the same setting made tutorial 03's TPU setting 57 to 122 s. Programs JAX compiles for a TPU are
# the same HLO either way. Records (bench/) are made without it; so are the lessons' runs (they print what their
# programs measure) and the tutorials' TPU settings (their programs run long enough to repay the optimisations):
# tests/test_notebooks.py.
os.environ.setdefault('JAX_DISABLE_MOST_OPTIMIZATIONS', '1')

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
DURATIONS = ROOT / 'tests' / 'durations.json'           # seconds per test group, measured: the order the suite runs in
MEASURED = ROOT / 'tests' / 'artifacts' / 'durations.json'   # what the last run measured (copy it over DURATIONS to refresh)
NEW_TEST_S = 60                                          # a test the record does not know yet: the budget of a new notebook

CHECKS = ROOT / 'tests' / 'lesson_checks'                   # the lessons' checks, kept out of what a learner opens

def check_blocks(nb:Path)->dict:
    "The checks of lesson `nb`: {id of the code cell each block runs after: its code}; {} for a notebook without any"
    f = CHECKS / f'{Path(nb).stem}.py'
    if Path(nb).parent.name != 'lessons' or not f.exists(): return {}
    parts = re.split(r'(?m)^# %% after (\S+)\n', f.read_text())
    return {k: v.strip('\n') + '\n' for k, v in zip(parts[1::2], parts[2::2])}

# Checks run in a namespace of their own on top of the lesson's: they read everything the lesson made, and what they
# bind stays theirs (a later check sees it), so a lesson cell that needs a name only a check made fails here as it
# would in a learner's copy
_RUNNER = """def _lesson_check(code, where, _own={}):
    ns = {**_own, **globals()}
    exec(compile(code, f'checks after cell {where}', 'exec'), ns)
    _own.update({k: v for k, v in ns.items() if k not in globals() or v is not globals()[k]})"""

def with_checks(nb:Path, out_dir:Path)->Path:
    """A copy of lesson `nb` in `out_dir` with each of its checks run right after the code cell it names (see
    `_RUNNER`); a check naming no code cell of the lesson is an error"""
    nb, blocks = Path(nb), check_blocks(nb)
    d = json.loads(nb.read_text())
    ids = {c['id'] for c in d['cells'] if c['cell_type'] == 'code'}
    if set(blocks) - ids: raise ValueError(f'{CHECKS.name}/{nb.stem}.py: no code cell {sorted(set(blocks) - ids)} in {nb.name}')
    cell = lambda cid, text: dict(cell_type='code', id=cid, metadata={}, execution_count=None, outputs=[],
                                  source=text.splitlines(keepends=True))
    cells = [cell('check-runner', _RUNNER)]
    for c in d['cells']:
        cells.append(c)
        if c['id'] in blocks: cells.append(cell(f"check-{c['id']}", f"_lesson_check({blocks[c['id']]!r}, {c['id']!r})"))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / nb.name
    out.write_text(json.dumps({**d, 'cells': cells}, indent=1))
    return out

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
    from tpututor.devices.tpu import no_tpu_here
    if no_tpu_here(): env.setdefault('TPU_SKIP_MDS_QUERY', '1')   # libtpu without a TPU: no metadata server to ask
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
