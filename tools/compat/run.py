"""The keras and xla notebooks and the CLI's default job, run in an environment with Kaggle's TPU-image versions.

`./run.sh compat` builds that environment (.venv-compat, from tools/compat/kaggle-tpu.txt) and runs this script in it.
Each notebook runs as `./run.sh test` runs it (nbdev's runner, slow cells too, a fresh process each); then the default
job (`tpututor train`, 5 folds on the embedded data). The result table goes to tools/compat/results.md (shown on the
docs' install page) and results.json; full logs to runs/compat/.
    ./run.sh compat                  everything (about 30 minutes on 2 CPU cores)
    ./run.sh compat 09_keras ...     only these notebooks (no default job); the table keeps the other rows
    ./run.sh compat families         only the family matrix (keras and xla), also written to bench/results/families.json
"""
import datetime, hashlib, importlib.metadata as md, json, os, platform, re, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
PINS = HERE / 'kaggle-tpu.txt'
LOGS = ROOT / 'runs' / 'compat'
# The lessons, library pages and tutorials of the two backends that must run on the image as shipped, and the
# lesson on frameworks sharing a process (the image has TensorFlow's CPU build beside JAX and torch_xla).
NOTEBOOKS = ['02_xla', '03_frameworks', '03a_jax', '09_keras', '10_torchxla',
             'tutorials/01_keras_kfold', 'tutorials/03_xla_ranking', 'tutorials/04_xla_cores']
DISTS = ['torch', 'torch_xla', 'transformers', 'accelerate', 'jax', 'jaxlib', 'keras', 'keras-hub', 'tensorflow-cpu',
         'tokenizers', 'numpy']
JOB = 'default job'
FAMILIES = ['families keras', 'families xla']   # the family matrix (bench/bench_families.py), recorded under 'kaggle'

def pins_hash()->str: return hashlib.sha256(PINS.read_bytes()).hexdigest()[:12]

def versions()->dict: return {d: (md.version(d) if _has(d) else None) for d in DISTS}

def _has(d):
    try: md.version(d); return True
    except md.PackageNotFoundError: return False

def _tail(text, n=1):
    "The last error line of a log, after the notebook cell it came from"
    lines = [l for l in text.strip().splitlines() if l.strip()]
    err = [l for l in lines if 'Error' in l or 'error:' in l]
    cell = re.findall(r'While Executing Cell #(\d+)', text)
    return [f'cell {cell[-1]}: ' * bool(cell) + l.strip() for l in (err or lines or [''])[-n:]]

def run_notebook(name)->dict:
    nb = ROOT / 'nbs' / f'{name}.ipynb'
    cmd = [str(Path(sys.executable).parent / 'nbdev-test'), str(nb), '--flags', 'slow']
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'})
    log = LOGS / f"{name.replace('/', '_')}.log"; log.write_text(r.stdout + '\n' + r.stderr)
    ok = r.returncode == 0 and 'Success.' in r.stdout
    return {'what': name, 'ok': ok, 'seconds': round(time.time() - t0), 'detail': '' if ok else _tail(r.stdout + r.stderr)[0][:200]}

def run_job()->dict:
    out = LOGS / 'train'
    cmd = [str(Path(sys.executable).parent / 'tpututor'), 'train', '--out', str(out), '--overwrite']
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    (LOGS / 'train.log').write_text(r.stdout + '\n' + r.stderr)
    row = {'what': JOB, 'ok': r.returncode == 0, 'seconds': round(time.time() - t0)}
    if row['ok']:
        s = json.loads((out / 'summary.json').read_text())
        row['detail'] = (f"backend {s['backend']}" + (f" ({s['devices']})" if s.get('devices') else '') + f", out-of-fold accuracy {s['oof']['accuracy']:.3f}, "
                         f"held-out {s['held_out']['accuracy']:.3f}")
        row['scores'] = {'oof': s['oof'], 'held_out': s['held_out']}
    else: row['detail'] = _tail(r.stdout + r.stderr)[0][:200]
    return row

def run_families(backend)->dict:
    t0 = time.time()
    r = subprocess.run([sys.executable, str(ROOT/'bench'/'bench_families.py'), backend, '--key', 'kaggle'], capture_output=True, text=True, cwd=ROOT)
    (LOGS / f'families_{backend}.log').write_text(r.stdout + '\n' + r.stderr)
    row = {'what': f'families {backend}', 'ok': r.returncode == 0, 'seconds': round(time.time() - t0)}
    if row['ok']:
        rows = json.loads((ROOT/'bench'/'results'/'families.json').read_text())['kaggle'][backend]['rows']
        ok = sorted({x['family'] for x in rows if x['status'] == 'ok'}); refused = sorted({x['family'] for x in rows if x['status'] == 'refused'})
        failed = sorted({f"{x['family']}/{x['form']}" for x in rows if x['status'] == 'failed'})
        row['ok'] = not failed
        row['detail'] = f"{len(ok)} of 8 families train (hub-saved and bare)" + (f"; refused up front: {', '.join(refused)}" if refused else '') + \
                        (f"; **failed**: {', '.join(failed)}" if failed else '')
    else: row['detail'] = _tail(r.stdout + r.stderr)[0][:200]
    return row

def table(res)->str:
    v = res['versions']
    lines = [f"## Tested against Kaggle's TPU image versions ({res['date']})", '',
             f"`./run.sh compat` builds a second environment from `tools/compat/kaggle-tpu.txt` (Kaggle's TPU image, "
             f"read from its Dockerfile and requirements on the date in that file) and runs the keras and xla "
             f"notebooks and the default job there. Python {res['python']} on {res['machine']}; the image has "
             f"Python 3.12, and the TPU wheels of the same torch and torch_xla versions (this machine has no TPU).", '',
             '| package | version |', '|---|---|']
    lines += [f'| {d} | {v[d] or "not installed"} |' for d in DISTS]
    lines += ['', '| notebook or job | result | seconds | detail |', '|---|---|---|---|']
    lines += [f"| {r['what']} | {'passed' if r['ok'] else '**failed**'} | {r['seconds']} | {r.get('detail', '')} |" for r in res['rows']]
    n_ok = sum(r['ok'] for r in res['rows'])
    lines += ['', f"{n_ok} of {len(res['rows'])} passed in {sum(r['seconds'] for r in res['rows']) / 60:.0f} minutes."]
    return '\n'.join(lines) + '\n'

def main(argv):
    if argv and argv[0] in ('-h', '--help'): print(__doc__); return 0
    fam = 'families' in argv; argv = [a for a in argv if a != 'families']
    unknown = [a for a in argv if a not in NOTEBOOKS]
    if unknown: sys.exit(f"compat: unknown notebook(s) {unknown}; choose from {NOTEBOOKS}")
    LOGS.mkdir(parents=True, exist_ok=True)
    todo = argv if argv or fam else NOTEBOOKS
    old = json.loads((HERE / 'results.json').read_text()) if (HERE / 'results.json').exists() else {}
    rows = {r['what']: r for r in old.get('rows', [])} if (argv or fam) and old.get('pins') == pins_hash() else {}
    for name in todo:
        print(f'== {name}', flush=True)
        rows[name] = run_notebook(name)
        print(f"   {'passed' if rows[name]['ok'] else 'FAILED: ' + rows[name]['detail']} in {rows[name]['seconds']}s", flush=True)
    if fam or not argv:
        for name in FAMILIES:
            print(f'== {name}', flush=True)
            rows[name] = run_families(name.split()[1]); print(f"   {rows[name]['detail']} in {rows[name]['seconds']}s", flush=True)
    if not argv and not fam:
        print(f'== {JOB}', flush=True)
        rows[JOB] = run_job(); print(f"   {rows[JOB]['detail']} in {rows[JOB]['seconds']}s", flush=True)
    res = {'date': datetime.date.today().isoformat(), 'pins': pins_hash(), 'python': platform.python_version(),
           'machine': f'{os.cpu_count()} CPU cores', 'versions': versions(),
           'rows': [rows[k] for k in NOTEBOOKS + FAMILIES + [JOB] if k in rows]}
    for name, text in (('results.json', json.dumps(res, indent=1) + '\n'), ('results.md', table(res))):
        tmp = HERE / (name + '.tmp'); tmp.write_text(text); tmp.replace(HERE / name)
    print(table(res))
    return 0 if all(r['ok'] for r in res['rows']) else 1

if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
