"""Run the benchmarks, each in a fresh process (TensorFlow and torch_xla must not share one), then print one table of
every comparison against its goal and write it to bench/results/summary.md.

    python bench/run.py [NAME ...]   NAME: the part after bench_ (default: every bench/bench_*.py); with NAMEs only those
                                     run again, and the table still shows the latest figures of the others, with their dates
    python bench/run.py --stale      run again what is stale (records whose code or versions changed, or that carry no
                                     code hash), then save the notebook outputs that show records again (--outputs)
    python bench/run.py --outputs    save again the outputs of the notebook cells that print a figure from a record
    python bench/run.py --check      list what is stale and which saved outputs differ from their records; exit 1 if any
    python bench/run.py --smoke      every bench on tiny shapes (a few seconds each), records into a temporary folder
"""
import json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, BENCH, _write, table, stale, shown_mismatches, refresh_outputs

ORDER = ['trainer', 'defaults', 'gpu', 'xla_buckets', 'xla_spmd', 'bf16', 'tokenize', 'cache', 'memory', 'realruns', 'tutorials']   # the summary's order

def names()->list: return sorted(p.stem[6:] for p in BENCH.glob('bench_*.py'))

def summary()->str:
    rows = []
    for f in sorted(RESULTS.glob('*.json'), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem)):
        data = json.loads(f.read_text())
        for r in data if isinstance(data, list) else []:   # families.json is a table of its own (the supported-models page)
            rows.append({'comparison': r['comparison'], 'measured': r['measured'], 'goal': r['goal'],
                         'met': {True: 'yes', False: '**no**', None: '-'}[r['met']], 'measured on': r['date'], 'reproduce': f"`{r['how']}`"})
    return ('## Summary: every comparison against its goal\n\n' +
            table(rows, ['comparison', 'measured', 'goal', 'met', 'measured on', 'reproduce']) +
            '\n\nRatios of the two ways measured side by side in one run, on the machine named in each section below '
            '(a 2-core CPU build machine shared with other work: ratios, not absolute times, are the result). Each '
            'section says how its figures were taken and why a goal that is missed is missed. Every record carries the '
            'code hash of what it ran and the versions; the test suite fails when one is stale (`./run.sh bench --stale` '
            'measures those again).\n')

def run(cmds)->list:
    "Run each bench command (a list: script and arguments) in a fresh process; the ones that failed"
    failed = []
    for c in cmds:
        print(f"== python bench/{' '.join(c)}", flush=True)
        if subprocess.run([sys.executable, str(BENCH / c[0]), *c[1:]], cwd=BENCH).returncode: failed.append(' '.join(c))
    return failed

def rerun_stale()->list:
    "The commands that make every stale record made here again (a whole bench where any of its entries needs it)"
    todo = stale()
    for s in todo: print(f"stale: {s['file']}{s['where']}: {s['why']} ({s['how']})")
    foreign = {s['how'] for s in todo if s['env'] not in ('here', 'gpu')}
    for h in sorted(foreign): print(f'made in another environment; run there: {h}')
    cmds = []
    for s in todo:
        if s['env'] == 'kaggle' or s['env'] not in ('here', 'gpu'): continue
        c = s['rerun']
        if [c[0]] in cmds or c in cmds: continue
        if len(c) == 1: cmds = [x for x in cmds if x[0] != c[0]]
        cmds.append(c)
    return cmds

def smoke()->list:
    "Every bench's --smoke, one after the other, with its records in a temporary folder; the ones that failed"
    failed = []
    env = {**os.environ, 'TPUTUTOR_BENCH_RESULTS': tempfile.mkdtemp(prefix='tpututor-smoke-'), 'TPUTUTOR_PROGRESS': 'lines'}
    cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    for n in names():
        t0, c0 = time.time(), cpu()
        p = subprocess.run([sys.executable, str(BENCH / f'bench_{n}.py'), '--smoke'], cwd=BENCH, env=env, capture_output=True, text=True)
        print(f"{n}: {'ok' if p.returncode == 0 else f'FAILED (exit {p.returncode})'} in {time.time() - t0:.0f}s "
              f"({cpu() - c0:.0f} CPU seconds)", flush=True)
        if p.returncode: failed.append(n); print(p.stdout[-2000:], p.stderr[-4000:])
    return failed

def check()->int:
    "Print what is stale and which saved outputs differ from their records; 1 if anything does"
    bad = stale()
    for s in bad: print(f"stale: bench/results/{s['file']}{s['where']}: {s['why']}; refresh: {s['how']}")
    mism = shown_mismatches()
    for nb, i, saved, now in mism: print(f'nbs/{nb} cell {i}: its saved output differs from what its record says now; refresh: python bench/run.py --outputs')
    return int(bool(bad or mism))

if __name__ == '__main__':
    args = sys.argv[1:]
    if '--smoke' in args:
        failed = smoke()
        sys.exit(f'smoke run failed: {failed}' if failed else 0)
    if '--check' in args: sys.exit(check())
    if '--outputs' in args:
        print('saved again:', refresh_outputs() or 'nothing (every output matches its record)'); sys.exit(0)
    failed = run(rerun_stale() if '--stale' in args else [[f'bench_{n}.py'] for n in (args or names())])
    if '--stale' in args: print('saved again:', refresh_outputs() or 'nothing')
    text = summary()
    _write(RESULTS / 'summary.md', text)
    print(text)
    if failed: sys.exit(f'failed: {failed}')
