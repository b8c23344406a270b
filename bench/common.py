"Shared by the benchmarks: timing, the machine's description, and writing a result table."
import datetime, json, os, platform, statistics, sys, time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / 'results'

def best_of(fn, repeat=3):
    "Smallest wall time of `repeat` calls of `fn` (the least disturbed by other work), and the last result"
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); times.append(time.perf_counter() - t0)
    return min(times), out

def machine()->str:
    from tpututor.meter import host_name
    return f'{host_name()}, Python {platform.python_version()}'

def _code(path)->str:
    "The code of a Python file without its docstrings and comments (what runs, not what it says)"
    import ast
    tree = ast.parse(Path(path).read_text())
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], 'value', None), ast.Constant) \
           and isinstance(body[0].value.value, str): node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)

def code_hash(modules, *files)->str:
    "A hash of the code of tpututor `modules` (names like 'tpututor.kfold') and of `files`: it changes when what runs changes"
    import hashlib
    root = Path(__file__).resolve().parents[1]
    paths = [root / (m.replace('.', '/') + '.py') for m in sorted(modules)] + [Path(f) for f in files]
    h = hashlib.sha256()
    for p in paths: h.update(p.name.encode() + b'\0' + _code(p).encode())
    return h.hexdigest()[:16]

def notebook_hash(path)->str:
    "A hash of a notebook's cells as written (their kinds and sources, not their outputs): it changes when what it says or runs changes"
    import hashlib
    h = hashlib.sha256()
    for c in json.loads(Path(path).read_text())['cells']: h.update(c['cell_type'].encode() + b'\0' + ''.join(c['source']).encode() + b'\0')
    return h.hexdigest()[:16]

FRAMEWORKS = ('tensorflow', 'tf-keras', 'torch', 'torch_xla', 'jax', 'keras', 'keras-hub', 'transformers', 'tokenizers')

def versions()->dict:
    "Versions of the frameworks installed here (None for one that is not)"
    import importlib.metadata as md
    def v(d):
        try: return md.version(d)
        except md.PackageNotFoundError: return None
    return {d: v(d) for d in FRAMEWORKS}

def table(rows, cols)->str:
    "A markdown table of dict `rows` with columns `cols`"
    fmt = lambda v: (f'{v:,.0f}' if abs(v) >= 1000 else f'{v:.3g}') if isinstance(v, float) else str(v)
    lines = ['| ' + ' | '.join(cols) + ' |', '|' + '---|' * len(cols)]
    lines += ['| ' + ' | '.join(fmt(r.get(c, '')) for c in cols) + ' |' for r in rows]
    return '\n'.join(lines)

def _write(path, text):
    from tpututor.rundir import write_text
    write_text(path, text)

def ratio(comparison, measured:float, goal:float)->dict:
    "A summary row: a speed ratio against the least ratio that meets the goal"
    return dict(comparison=comparison, measured=f'{measured:.2f}x', goal=f'>= {goal}x', met=bool(measured >= goal))

MADE_BY_REPORT = ('comparison', 'measured', 'goal', 'met', 'benchmark', 'date', 'machine', 'how')   # the keys `report` adds to each row

def recorded_runs(path, ran:bool=False)->dict:
    """The rows a bench recorded in the JSON file `path`, by run name, without the keys `report` adds (it makes
    them again); `ran`: each row also keeps when and where it ran, for runs not made again. {} when there is none."""
    rows = json.loads(Path(path).read_text()) if Path(path).exists() else []
    when = lambda r: {'ran': dict(date=r.get('date'), machine=r.get('machine'))} if ran else {}
    return {r['run']: {**when(r), **{k: v for k, v in r.items() if k not in MADE_BY_REPORT}} for r in rows}

def report(name, title, body, how, goals=()):
    """Print a result and write it to bench/results/NAME.md (atomically); `goals`: rows from `ratio` (or dicts
    like them) for the one summary table of `bench/run.py`, kept in bench/results/NAME.json"""
    load = ', '.join(f'{x:.1f}' for x in os.getloadavg())   # how busy the shared cores were: 2.0 means both fully used
    text = (f'## {title}\n\n{body}\n\nMeasured {datetime.date.today()} on {machine()}; load average at the end '
            f'(1, 5, 15 min): {load}. Reproduce: `{how}`\n')
    print(text)
    _write(RESULTS / f'{name}.md', text)
    rows = [dict(benchmark=name, **g, date=str(datetime.date.today()), machine=machine(), how=how) for g in goals]
    _write(RESULTS / f'{name}.json', json.dumps(rows, indent=1) + '\n')
