"""Run the benchmarks, each in a fresh process (TensorFlow and torch_xla must not share one), then print one
table of every comparison against its goal and write it to bench/results/summary.md.
Usage: python bench/run.py [NAME ...]   NAME: the part after bench_ (default: all of bench/bench_*.py)
With NAMEs, only those run again; the table still shows the latest figures of the others, with their dates."""
import json, subprocess, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, _write, table

ORDER = ['trainer', 'gpu', 'xla_buckets', 'bf16', 'tokenize', 'cache', 'memory', 'realruns', 'tutorials']   # the summary's order: the list

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
            'section says how its figures were taken and why a goal that is missed is missed.\n')

if __name__ == '__main__':
    here = Path(__file__).resolve().parent
    names = sys.argv[1:] or sorted(p.stem[6:] for p in here.glob('bench_*.py'))
    failed = [n for n in names if subprocess.run([sys.executable, str(here / f'bench_{n}.py')], cwd=here).returncode]
    text = summary()
    _write(RESULTS / 'summary.md', text)
    print(text)
    if failed: sys.exit(f'failed: {failed}')
