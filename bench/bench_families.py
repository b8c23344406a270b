"""The family matrix (tests/family_probe.py) on every backend that trains transformers, each in a fresh process, recorded
in bench/results/families.json under 'here' with the date and the versions: the supported-models table of the docs is
drawn from it, and tests/test_families.py fails when the matrix no longer shows what it records.
`./run.sh compat families` adds the same matrix on Kaggle's TPU-image versions under 'kaggle'.
Usage: python bench/bench_families.py [BACKEND ...] [--key here|kaggle]
       python bench/bench_families.py --smoke     the torch backend, one family"""
import json, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, _write, provenance, track_imports, SMOKE

def run(backend:str, families=None)->list:
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, str(ROOT/'tests'/'family_probe.py'), backend, d] + ([families] if families else []), capture_output=True, text=True)
    line = [l for l in r.stdout.splitlines() if l.startswith('MATRIX ')]
    if r.returncode or not line: sys.exit(f'{backend}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}')
    rows = json.loads(line[-1][len('MATRIX '):])
    for x in rows: x.pop('folder', None)
    return rows

def main(argv):
    key = argv[argv.index('--key') + 1] if '--key' in argv else 'here'
    names = [a for a in argv if not a.startswith('--') and a != key] or (['keras', 'xla', 'torch'] if key == 'kaggle' else ['keras', 'xla', 'torch', 'tf'])
    path = RESULTS/'families.json'
    rec = json.loads(path.read_text()) if path.exists() else {}
    for b in names:   # written after each backend: a later one that fails keeps the earlier ones' rows
        track_imports()
        rows = run(b, 'bert' if SMOKE else None)
        here = key == 'here'
        prov = provenance('families', 'tests/family_probe.py', args=[b] + ([] if here else ['--key', key]), env=key,
                          how=None if here else './run.sh compat families')
        rec.setdefault(key, {})[b] = dict(rows=rows, **prov)
        print(f"{key} {b}: " + ', '.join(f"{x['family']}/{x['form']} {x['status']}" for x in rows), flush=True)
        _write(path, json.dumps(rec, indent=1) + '\n')

if __name__ == '__main__':
    main(['torch'] if SMOKE else sys.argv[1:])
