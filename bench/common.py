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

from tpututor.testing import code_hash, notebook_hash, versions, FRAMEWORKS   # the hashes and versions a record carries

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
