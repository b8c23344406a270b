"""The family matrix (tests/family_probe.py) on every backend that trains transformers, each in a fresh process, recorded
in bench/results/families.json under 'here' with the date and the versions: the supported-models table of the docs is
drawn from it, and tests/test_families.py fails when the matrix no longer shows what it records.
`./run.sh compat families` adds the same matrix on Kaggle's TPU-image versions under 'kaggle'.
Usage: python bench/bench_families.py [BACKEND ...] [--key here|kaggle]
       python bench/bench_families.py --smoke     the torch backend, one family, the probe in the smoke run's torch process"""
import contextlib, importlib.util, io, json, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, _write, provenance, track_imports, smoke_alone, SMOKE

PROBE = ROOT/'tests'/'family_probe.py'

def probe_here(backend:str, workdir, families=None)->str:
    "The probe's output, run in this process (a smoke run's, whose framework is started): what `python PROBE BACKEND WORKDIR FAMILIES` prints"
    spec = importlib.util.spec_from_file_location('family_probe', PROBE)
    probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)
    out = io.StringIO()
    with contextlib.redirect_stdout(out): probe.main(backend, workdir, families)
    return out.getvalue()

def run(backend:str, families=None)->list:
    with tempfile.TemporaryDirectory() as d:
        if SMOKE: out = probe_here(backend, d, families)   # a smoke run: in this process, its framework already started
        else:
            r = subprocess.run([sys.executable, str(PROBE), backend, d] + ([families] if families else []), capture_output=True, text=True)
            if r.returncode: sys.exit(f'{backend}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}')
            out = r.stdout
    line = [l for l in out.splitlines() if l.startswith('MATRIX ')]
    if not line: sys.exit(f'{backend}: the probe printed no MATRIX line\n{out[-3000:]}')
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

def smoke(part=None): main(['torch'])   # a smoke run's part (bench/run.py)

if __name__ == '__main__':
    if SMOKE: smoke_alone('families')
    else: main(sys.argv[1:])
