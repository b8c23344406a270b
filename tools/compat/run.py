"""The notebooks and the CLI's default job, run in environments with the versions of Kaggle's and Colab's TPU images.

`./run.sh compat` builds the Kaggle stand-in (.venv-compat: Python 3.12, tools/compat/kaggle-tpu.txt) and runs this
script in it; `./run.sh compat colab` builds the Colab stand-in (.venv-colab: Python 3.13, tools/compat/colab-tpu.txt).
Each notebook runs as `./run.sh test` runs it (nbdev's runner, slow cells too, a fresh process each); then
`tpututor doctor` as a user runs it, and against combinations known to be bad there (IMAGES' `doctor`); then, for
Kaggle, the family matrix; then the default job (`tpututor train` on the embedded data: Kaggle's as the README runs it,
Colab's on 600 rows in 3 folds with the xla backend, IMAGES' `job`). Results go to tools/compat/results-IMAGE.md (shown on
the docs' install page) and results-IMAGE.json, with the Python and framework versions, the date, the pin file's hash
and the package code's hash, and each row with the package code's hash and the date it ran on; full logs to
runs/compat/IMAGE/.
    ./run.sh compat [colab]                  everything (2026-11-26, 2 CPU cores shared with other runs: Kaggle 72 minutes, Colab 24)
    ./run.sh compat [colab] lessons/02_xla   only these notebooks (paths under nbs/, '.ipynb' optional); the table keeps
                                             the other rows while the pins and Python are unchanged, and marks a row
                                             run on older package code with that code's hash and its date
    ./run.sh compat [colab] ... families job doctor
                                             also the family matrix (Kaggle), the default job or the doctor; alone,
                                             only those
"""
import ast, datetime, hashlib, importlib.metadata as md, json, os, platform, re, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
NBS = ROOT / 'nbs'

# What runs on each image: the notebooks as paths under nbs/ (the lists to edit when notebooks move), the family
# matrix's backends, the default job's arguments, and the doctor's known-bad combinations (`run_doctor`).
IMAGES = {
    # Every lesson, the library pages and tutorials of the keras and xla paths (the image has TensorFlow's CPU build beside
    # JAX and torch_xla). The lessons that compile for a chip install the libtpu JAX pins (`install_missing('libtpu')`);
    # after each notebook what its first cell installed is taken out again.
    'kaggle': dict(
        title="Kaggle's TPU image versions", python='3.12', pins='kaggle-tpu.txt', command='./run.sh compat',
        notebooks=['lessons/00_tpu', 'lessons/00a_devices', 'lessons/01_bf16', 'lessons/01a_bf16_training',
                   'lessons/02_xla', 'lessons/02a_xla_watch', 'lessons/02b_xla_devices', 'lessons/02c_jax_watch',
                   'lessons/02d_compiled_step', 'lessons/02e_rooflines', 'lessons/03_frameworks', 'lessons/03a_jax',
                   'lessons/04_parallelism', 'lessons/05_training_memory',
                   'devices/01_frameworks', 'devices/03_jax', 'devices/07_xla',
                   'backends/keras/02_convert', 'backends/keras/03_llm', 'backends/keras/00_backend', 'backends/xla/00_backend',
                   'tutorials/01_keras_kfold', 'tutorials/03_xla_ranking', 'tutorials/04_xla_cores',
                   'tutorials/05_llm_classifier', 'commands/05_doctor'],
        families=['keras', 'xla'], job=[], lacks=[],
        # the v5e-8's own TPU_ACCELERATOR_TYPE, which a host without chips or libtpu contradicts; TensorFlow imported
        # in the process before torch_xla, in the image that ships both
        doctor=[dict(env={'TPU_ACCELERATOR_TYPE': 'v5litepod-8'},
                     expect=['v5litepod-8 is expected, but this machine has no TPU device files',
                             'JAX 0.7.2 is installed but libtpu is not',
                             'torch_xla 2.8.0 is installed but libtpu is not']),
                dict(imports='tensorflow',
                     expect=['TensorFlow is imported in this process, and torch_xla is installed'])]),
    # What the docs send Colab users to: every lesson, the tutorials of the backend the install page recommends there
    # (xla, as shipped) and the default job on it (on 600 of its rows in 3 folds: the same code path as the full job, in a
    # fraction of its time on a CPU); the Keras tutorials, whose first cell adds KerasHub, which the runtime lacks.
    'colab': dict(
        title="Colab's TPU runtime versions", python='3.13', pins='colab-tpu.txt', command='./run.sh compat colab',
        notebooks=['lessons/00_tpu', 'lessons/00a_devices', 'lessons/01_bf16', 'lessons/01a_bf16_training',
                   'lessons/02_xla', 'lessons/02a_xla_watch', 'lessons/02b_xla_devices', 'lessons/02c_jax_watch',
                   'lessons/02d_compiled_step', 'lessons/02e_rooflines', 'lessons/03_frameworks', 'lessons/03a_jax',
                   'lessons/04_parallelism', 'lessons/05_training_memory',
                   'tutorials/03_xla_ranking', 'tutorials/04_xla_cores', 'tutorials/01_keras_kfold',
                   'tutorials/05_llm_classifier', 'commands/05_doctor'],
        families=[], job=['--backend', 'xla', '--rows', '600', '--folds', '3'], lacks=['keras-hub'],
        # the v5e-1's TPU_ACCELERATOR_TYPE on a host without chips or libtpu (no TensorFlow here to import first)
        doctor=[dict(env={'TPU_ACCELERATOR_TYPE': 'v5litepod-1'},
                     expect=['v5litepod-1 is expected, but this machine has no TPU device files',
                             'JAX 0.7.2 is installed but libtpu is not',
                             'torch_xla 2.9.0 is installed but libtpu is not'])]),
}
DISTS = ['torch', 'torch_xla', 'transformers', 'accelerate', 'jax', 'jaxlib', 'keras', 'keras-hub', 'tensorflow-cpu',
         'torchax', 'flax', 'tokenizers', 'numpy']
JOB = 'default job'
DOCTOR = 'doctor'

def pins_hash(image:str)->str: return hashlib.sha256((HERE / IMAGES[image]['pins']).read_bytes()).hexdigest()[:12]

def _canon(node)->str:
    "An AST as text, the same on every Python from 3.10 on: fields left empty are left out (`ast.dump` shows them or not by version)"
    if isinstance(node, ast.AST):
        fields = [f'{f}={_canon(v)}' for f, v in ast.iter_fields(node) if v is not None and not (isinstance(v, list) and not v)]
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list): return '[' + ', '.join(map(_canon, node)) + ']'
    return repr(node)

def _code(path:Path)->str:
    "The code of a Python file without its docstrings and comments (what runs, not what it says)"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], 'value', None), ast.Constant) \
           and isinstance(body[0].value.value, str): node.body = body[1:] or [ast.Pass()]
    return _canon(tree)

def code_hash(root:Path=ROOT)->str:
    "A hash of the package's code, every tpututor/**/*.py by its path: it changes when what runs changes, not its comments"
    h = hashlib.sha256()
    for p in sorted((root / 'tpututor').rglob('*.py')):
        if '__pycache__' not in p.parts: h.update(p.relative_to(root).as_posix().encode() + b'\0' + _code(p).encode() + b'\0')
    return h.hexdigest()[:16]

def versions()->dict: return {d: _version(d) for d in DISTS}

def _version(d):
    try: return md.version(d)
    except md.PackageNotFoundError: return None

def _tail(text, n=1):
    "The last error line of a log, after the notebook cell it came from"
    lines = [l for l in text.strip().splitlines() if l.strip()]
    err = [l for l in lines if 'Error' in l or 'error:' in l]
    cell = re.findall(r'While Executing Cell #(\d+)', text)
    return [(f'cell {cell[-1]}: ' if cell else '') + l.strip() for l in (err or lines or [''])[-n:]]

def notebook(arg:str)->str:
    "A notebook named on the command line as its path under nbs/ without '.ipynb' (also accepts 'nbs/...' and '.ipynb')"
    name = re.sub(r'\.ipynb$', '', re.sub(r'^(\./)?nbs/', '', arg.strip()))
    if not (NBS / f'{name}.ipynb').exists():
        sys.exit(f"compat: no notebook nbs/{name}.ipynb (from {arg!r}); name notebooks by their path under nbs/, "
                 f"e.g. lessons/02_xla or tutorials/01_keras_kfold")
    return name

def _pip(*args):
    return subprocess.run([sys.executable, '-m', 'pip', *args], capture_output=True, text=True)

def as_shipped(image:str, before:dict|None=None):
    """Uninstall what the image lacks, and with `before` (an `installed()`) also put back what a notebook's first cell
    added or replaced since: the next notebook starts from the image as shipped"""
    now = installed()
    gone = [d for d in now if d in IMAGES[image]['lacks'] or (before is not None and d not in before)]
    if gone: _pip('uninstall', '-y', *gone)
    back = [f'{d}=={v}' for d, v in (before or {}).items() if d in now and now[d] != v]
    if back: _pip('install', '-q', '--no-deps', *back)

def installed()->dict:
    "Every installed distribution and its version"
    return {d.metadata['Name'].lower().replace('_', '-'): d.version for d in md.distributions()}

def installed_by(before:dict, after:dict)->list:
    "What changed between two `installed()`: 'name version' added, 'name old -> new' replaced"
    return [f'{k} {v}' if k not in before else f'{k} {before[k]} -> {v}' for k, v in sorted(after.items()) if before.get(k) != v]

def run_notebook(image, name, logs)->dict:
    as_shipped(image); before = installed()
    cmd = [str(Path(sys.executable).parent / 'nbdev-test'), str(NBS / f'{name}.ipynb'), '--flags', 'slow']
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2', 'PYTHONUNBUFFERED': '1'})
    (logs / f"{name.replace('/', '_')}.log").write_text(r.stdout + '\n' + r.stderr)
    ok = r.returncode == 0 and 'Success.' in r.stdout
    why = '' if ok else _tail(r.stdout + r.stderr)[0][:200] if 'While Executing Cell' in r.stdout + r.stderr else \
          f"nbdev-test {'was killed by signal ' + str(-r.returncode) if r.returncode < 0 else 'exited ' + str(r.returncode)}: {_tail(r.stdout + r.stderr)[0][:160]}"
    row = {'what': name, 'ok': ok, 'seconds': round(time.time() - t0), 'detail': why}
    added = installed_by(before, installed())   # what the notebook's first cell (`install_missing`) installed
    row['detail'] = '; '.join(filter(None, [f"its first cell installed {', '.join(added)}" if added else '', row['detail']]))
    as_shipped(image, before)   # the next notebook starts from the image as shipped
    return row

def run_job(image, logs)->dict:
    out = logs / 'train'
    cmd = [str(Path(sys.executable).parent / 'tpututor'), 'train', *IMAGES[image]['job'], '--out', str(out), '--overwrite']
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    (logs / 'train.log').write_text(r.stdout + '\n' + r.stderr)
    row = {'what': JOB, 'ok': r.returncode == 0, 'seconds': round(time.time() - t0)}
    if row['ok']:
        s = json.loads((out / 'summary.json').read_text())
        row['detail'] = (f"`{' '.join(['tpututor train', *IMAGES[image]['job']])}`: backend {s['backend']}"
                         + (f" ({s['devices']})" if s.get('devices') else '') + f", out-of-fold accuracy {s['oof']['accuracy']:.3f}, "
                         f"held-out {s['held_out']['accuracy']:.3f}")
        row['scores'] = {'oof': s['oof'], 'held_out': s['held_out']}
    else: row['detail'] = _tail(r.stdout + r.stderr)[0][:200]
    return row

def run_families(backend, logs)->dict:
    t0 = time.time()
    r = subprocess.run([sys.executable, str(ROOT/'bench'/'bench_families.py'), backend, '--key', 'kaggle'], capture_output=True, text=True, cwd=ROOT)
    (logs / f'families_{backend}.log').write_text(r.stdout + '\n' + r.stderr)
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

def _doctor_run(check:dict)->dict:
    """`tpututor doctor` in a fresh process, with the stand-in's environment less its TPU_ variables plus `check`'s
    `env`; with `imports`, a process that imports that first and then calls the CLI's entry point (as a notebook
    kernel would)"""
    from tpututor.commands.doctor import LEVELS
    env = {**{k: v for k, v in os.environ.items() if not k.startswith('TPU_')}, **check.get('env', {})}
    if 'imports' in check:
        code = f"import sys, {check['imports']}; from tpututor.cli import main; sys.exit(main(['doctor']))"
        cmd = [sys.executable, '-c', code]
        shown = f"`import {check['imports']}`, then `tpututor.cli.main(['doctor'])`"
    else:
        cmd = [str(Path(sys.executable).parent / 'tpututor'), 'doctor']
        shown = '`' + ' '.join([*(f'{k}={v}' for k, v in check.get('env', {}).items()), 'tpututor doctor']) + '`'
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    lines = [l for l in r.stdout.splitlines() if l.split(':', 1)[0] in LEVELS]
    return dict(command=shown, exit=r.returncode, lines=lines, log=r.stdout + '\n' + r.stderr)

def _short(line:str)->str:
    "A finding without its fix; a note without what follows its first clause"
    line = line.split('. Fix: ', 1)[0]
    return line.split(' (', 1)[0] if line.startswith('note:') else line

def run_doctor(image, logs)->dict:
    """`tpututor doctor` on the stand-in as shipped, then on each of IMAGES' known-bad combinations.
    As shipped it must exit 0 with no error or warning, say the versions are those the image was tested on, and note
    that there is no TPU: this host has no TPU device files and the check runs without TPU_ACCELERATOR_TYPE, so
    libtpu's absence and the slice are not checked (a CPU run never loads libtpu), the CLI imports no framework before
    it checks the import order, and a process holding libtpu here only compiles (a note). A bad combination must exit
    non-zero with an error line naming each of its `expect`."""
    from tpututor.commands.doctor import TESTED
    as_shipped(image)
    t0, checks = time.time(), []
    for i, check in enumerate([{}, *IMAGES[image]['doctor']]):
        c = _doctor_run(check)
        (logs / f'doctor_{i}.log').write_text(f"{c['command']}\n{c.pop('log')}")
        levels = [l.split(':', 1)[0] for l in c['lines']]
        if not check:
            want = [f"ok: the framework versions of {TESTED[image]['title']}", 'note: no TPU here']
            missing = [w for w in want if not any(l.startswith(w) for l in c['lines'])]
            c['ok'] = c['exit'] == 0 and not {'error', 'warning'} & set(levels) and not missing
            c['shown'] = c['lines']
        else:
            missing = [w for w in check['expect'] if not any(l.startswith('error:') and w in l for l in c['lines'])]
            c['ok'] = c['exit'] != 0 and not missing
            c['shown'] = [l for l in c['lines'] if l.split(':', 1)[0] in ('error', 'warning')]   # its problem lines
        c['missing'] = missing
        checks.append(c)
    def said(i, c):
        text = f"({i}) {c['command']}: exit {c['exit']}" + ''.join(f'; {_short(l)}' for l in c.pop('shown'))
        return text + (f" (**expected, not found**: {'; '.join(c['missing'])})" if c['missing'] else '')
    detail = ' '.join(said(i, c) for i, c in enumerate(checks, 1))
    return {'what': DOCTOR, 'ok': all(c['ok'] for c in checks), 'seconds': round(time.time() - t0), 'detail': detail,
            'checks': checks}

def results_path(image, ext)->Path: return HERE / f'results-{image}.{ext}'

def older(row:dict, res:dict)->bool:
    "Whether a row ran on other package code than the run that wrote `res` (a row without its own hash is the file's)"
    return row.get('code', res['code']) != res['code']

def result(row:dict, res:dict)->str:
    "A row's result cell: passed or failed, and, for a row run on older package code, that code's hash and its date"
    text = 'passed' if row['ok'] else '**failed**'
    return text + (f", older code `{row['code'][:8]}…`, {row['date']}" if older(row, res) else '')

def table(res)->str:
    "The markdown section of one image's results, as the install page shows it"
    im, v = IMAGES[res['image']], res['versions']
    lines = [f"## Tested against {im['title']} ({res['date']})", '',
             f"`{im['command']}` builds an environment from `tools/compat/{im['pins']}` (the image's versions, read from its "
             f"build files on the date in that file) and runs there what the docs send its users to. Python {res['python']} "
             f"(the image has {im['python']}) on {res['machine']}, with PyPI's builds of the same torch and torch_xla versions "
             f"on the CPU: this machine has no TPU. Package code `{res['code']}`, pins `{res['pins']}`"
             + ("; a row marked older code ran on the package code it names, on the date it names, with these pins "
                "and this Python: what changed since is not tested there" if any(older(r, res) for r in res['rows']) else '')
             + '.', '',
             '| package | version |', '|---|---|']
    lines += [f'| {d} | {v[d] or "not installed"} |' for d in DISTS if d in v]
    lines += ['', '| notebook or job | result | seconds | detail |', '|---|---|---|---|']
    lines += [f"| {r['what']} | {result(r, res)} | {r['seconds']} | {r.get('detail', '')} |" for r in res['rows']]
    n_ok, n_old = sum(r['ok'] for r in res['rows']), sum(older(r, res) for r in res['rows'])
    lines += ['', f"{n_ok} of {len(res['rows'])} passed in {sum(r['seconds'] for r in res['rows']) / 60:.0f} minutes"
              + (f"; {n_old} of them on older package code." if n_old else '.')]
    return '\n'.join(lines) + '\n'

def machine()->str:
    from tpututor.devices.ops import host_name
    return host_name()

def main(argv):
    image = argv.pop(0) if argv and argv[0] in IMAGES else 'kaggle'
    if argv and argv[0] in ('-h', '--help'): print(__doc__); return 0
    im = IMAGES[image]
    if platform.python_version().rsplit('.', 1)[0] != im['python']:
        sys.exit(f"compat: {im['title']} has Python {im['python']}, this is {platform.python_version()}: run it as `{im['command']}`")
    extra = {a for a in argv if a in ('families', 'job', DOCTOR)}
    if 'families' in extra and not im['families']: sys.exit(f"compat: no family matrix on {image}'s stand-in")
    asked = [notebook(a) for a in argv if a not in extra]
    logs = ROOT / 'runs' / 'compat' / image; logs.mkdir(parents=True, exist_ok=True)
    everything = not argv
    todo = im['notebooks'] if everything else asked
    missing = [n for n in todo if not (NBS / f'{n}.ipynb').exists()]
    if missing: sys.exit(f"compat: {image}'s list names notebooks that do not exist: {missing}; edit IMAGES in {Path(__file__).relative_to(ROOT)} "
                         f"or name today's notebooks on the command line")
    res = {'image': image, 'title': im['title'], 'date': datetime.date.today().isoformat(), 'python': platform.python_version(),
           'pins': pins_hash(image), 'code': code_hash(), 'machine': machine(), 'command': im['command'], 'versions': versions(), 'rows': []}
    old = json.loads(results_path(image, 'json').read_text()) if results_path(image, 'json').exists() else {}
    same = all(old.get(k) == res[k] for k in ('pins', 'python'))
    # a row kept from an earlier run keeps the code and date it ran on (an older file's rows: those of its header)
    kept = old.get('rows', []) if not everything and same else []
    rows = {r['what']: {**r, 'code': r.get('code', old['code']), 'date': r.get('date', old['date'])} for r in kept}
    if not everything and old and not same:
        print('== the pins or Python changed since the last run: its rows are dropped', flush=True)
    todo = [(n, lambda n=n: run_notebook(image, n, logs)) for n in todo]
    todo += [(DOCTOR, lambda: run_doctor(image, logs))] if everything or DOCTOR in extra else []
    todo += [(f'families {b}', lambda b=b: run_families(b, logs)) for b in (im['families'] if everything or 'families' in extra else [])]
    todo += [(JOB, lambda: run_job(image, logs))] if everything or 'job' in extra else []
    for name, run in todo:
        print(f'== {name}', flush=True)
        rows[name] = {**run(), 'code': res['code'], 'date': res['date']}
        print(f"   {'passed' if rows[name]['ok'] else 'FAILED'}{': ' * bool(rows[name]['detail'])}{rows[name]['detail']} in {rows[name]['seconds']}s", flush=True)
        write(res, rows)   # after every row: a run stopped half-way keeps what it ran
    print(table(res))
    return 0 if all(r['ok'] for r in res['rows']) else 1

def write(res:dict, rows:dict):
    """Write results-IMAGE.json and .md with `rows` in the image's order: its list, other notebooks asked for, the
    doctor, the matrix, the job"""
    im = IMAGES[res['image']]
    asked = [r for r in rows if not r.startswith('families ') and r not in (JOB, DOCTOR)]
    order = list(dict.fromkeys([*im['notebooks'], *asked, DOCTOR, *[f'families {b}' for b in im['families']], JOB]))
    res['rows'] = [rows[k] for k in order if k in rows]
    for path, text in ((results_path(res['image'], 'json'), json.dumps(res, indent=1) + '\n'), (results_path(res['image'], 'md'), table(res))):
        tmp = path.with_name(path.name + '.tmp'); tmp.write_text(text); tmp.replace(path)

if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
