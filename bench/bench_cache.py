"""The persistent compile cache: does a rerun, or a resume after SIGKILL, compile nothing new?

`tpututor train --rows 300 --folds 3 --epochs 1` (keras: `--devices 1`) run as a user runs it, each run a fresh
process with a fresh run directory, all sharing one compile cache folder that starts empty (`--compile-cache`):
  run 1  the job, cold cache (fold 0 compiles every program; later folds reuse them);
  run 2  the same job again in a new run directory (warm cache);
  run 3  the same job again, killed with SIGKILL as soon as fold 0 is finished, then resumed with the same
         command (warm cache; the resumed process trains folds 1 and 2).
Per fold, from what the run directory records: the fold's seconds, programs compiled (training, validation and
prediction), of those loaded from the cache, and the seconds compiling by the framework's own timers
(fold*/done.json), and its training epoch's seconds (fold*/history.json). The checks: no fold after the first of
a process compiles anything, and (where the runtime can load compiled programs: JAX) the first fold a new process
trains takes at most 1.3x a later fold of the same process. All folds of one process run under the same load,
which is why the ratio is taken within a process.

    ./run.sh bench cache                    keras and xla, recorded
    python bench/bench_cache.py --smoke     the same runs with the bag-of-tokens baseline (nothing to compile) on 30 rows
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, smoke_alone, SMOKE

def _fold_rows(run:Path, proc:str)->list:
    "One row per fold trained in `run` (folds loaded from an earlier process are skipped)"
    rows = []
    for fd in sorted(run.glob('fold*/history.json')):
        if not (fd.parent / 'done.json').exists(): continue   # killed before the fold was recorded: the resume trains it again
        done, h = json.loads((fd.parent / 'done.json').read_text()), json.loads(fd.read_text())
        r = h['records'][0]
        rows.append(dict(run=proc, fold=int(fd.parent.name[4:]), fold_s=done['seconds'], train_s=round(r['seconds'], 1),
                         compiles=done.get('compiles') or 0, from_cache=done.get('cache_hits') or 0, compile_s=done.get('compile_seconds') or 0))
    return rows

def _train(cmd, out:Path, env, kill_after_fold0=False)->float:
    "Run `tpututor train` into `out`; with `kill_after_fold0`, SIGKILL it once fold 0 is recorded. Returns its wall seconds"
    t0 = time.perf_counter()
    log = open(out.with_suffix('.log'), 'a')
    p = subprocess.Popen(cmd + ['--out', str(out)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    if kill_after_fold0:
        while p.poll() is None and not (out / 'fold0' / 'done.json').exists(): time.sleep(0.05)
        if p.poll() is None: os.killpg(p.pid, signal.SIGKILL)
    rc = p.wait()
    if rc and not kill_after_fold0: sys.exit(f'{" ".join(cmd)} failed ({rc}): see {out.with_suffix(".log")}')
    return time.perf_counter() - t0

def _over(a:float, b:float): return a / b if b else None   # a ratio of recorded seconds; None where the later one rounds to 0 (a fold of the baseline)

def _x(v, digits=2)->str: return '-' if v is None else f'{v:.{digits}f}x'

def measure(backend:str, rows=300, folds=3)->dict:
    "Runs 1-3 of `backend` with a fresh compile cache; the fold table and the ratios"
    tmp = Path(tempfile.mkdtemp(prefix=f'cache_{backend}_'))
    cc = tmp / 'compile_cache'
    env = {k: v for k, v in os.environ.items() if k != 'TPUTUTOR_COMPILE_CACHE'}
    cmd = [str(Path(sys.executable).parent / 'tpututor'), 'train', '--backend', backend, '--rows', str(rows), '--folds', str(folds),
           '--epochs', '1', '--compile-cache', str(cc)] + (['--devices', '1'] if backend == 'keras' else [])
    walls = {}
    walls['1 cold'] = _train(cmd, tmp / 'run1', env)
    walls['2 rerun'] = _train(cmd, tmp / 'run2', env)
    _train(cmd, tmp / 'run3', env, kill_after_fold0=True)
    killed = _fold_rows(tmp / 'run3', '3 killed')
    walls['3 resumed'] = _train(cmd, tmp / 'run3', env)
    rows = _fold_rows(tmp / 'run1', '1 cold') + _fold_rows(tmp / 'run2', '2 rerun') + killed
    rows += [r | {'run': '3 resumed'} for r in _fold_rows(tmp / 'run3', '3 resumed') if r['fold'] not in {k['fold'] for k in killed}]
    cache_mb = sum(f.stat().st_size for f in cc.rglob('*') if f.is_file()) / 2**20
    def first_over_later(run):
        f = [r for r in rows if r['run'] == run]
        if not f: return {'fold_s': None, 'train_s': None, 'first': '-'}   # (smoke) the killed run finished every fold first
        first = min(r['fold'] for r in f)   # the resumed process starts after the folds the killed one finished
        a = next(r for r in f if r['fold'] == first); later = [r for r in f if r['fold'] > first]
        return {k: _over(a[k], sum(r[k] for r in later) / len(later)) if later else None for k in ('fold_s', 'train_s')} | {'first': first}
    fold0 = {r['run']: r['fold_s'] for r in rows if r['fold'] == 0}
    later = {p: sum(r['compiles'] for r in rows if r['run'] == p and r['fold'] > min((q['fold'] for q in rows if q['run'] == p), default=0))
             for p in ('1 cold', '2 rerun', '3 resumed')}   # compiles after each process's first fold
    res = dict(backend=backend, rows=rows, later_compiles=later, cold_over_rerun=_over(fold0['1 cold'], fold0['2 rerun']), walls={k: round(v, 1) for k, v in walls.items()}, cache_mb=round(cache_mb, 1),
               cold=first_over_later('1 cold'), rerun=first_over_later('2 rerun'), resumed=first_over_later('3 resumed'))
    shutil.rmtree(tmp, ignore_errors=True)
    return res

def main(backends=('keras', 'xla')):
    track_imports()   # the record hashes the modules every `tpututor train` process imported
    results = [measure(b, rows=30) if SMOKE else measure(b) for b in backends]
    body, goals = [], []
    for r in results:
        b = r['backend']
        body.append(f"### `--backend {b}`\n\n" + table(r['rows'], ['run', 'fold', 'fold_s', 'train_s', 'compiles', 'from_cache', 'compile_s']))
        body.append(f"Cache folder after the runs: {r['cache_mb']} MB. Process wall seconds (start-up, tokenizing and "
                    f"every fold): " + ', '.join(f'run {k} {v}s' for k, v in r['walls'].items()) + '.')
        lines = [dict(process=k, first=f"fold {r[k]['first']}", fold_ratio=_x(r[k]['fold_s']),
                      train_ratio=_x(r[k]['train_s'])) for k in ('cold', 'rerun', 'resumed')]
        body.append('First fold a process trains over the mean of its later folds (fold seconds; training epoch seconds):\n\n'
                    + table(lines, ['process', 'first', 'fold_ratio', 'train_ratio']))
        body.append(f"Fold 0 of the cold run took {_x(r['cold_over_rerun'], 1)} as long as fold 0 of the rerun (two processes, "
                    "so the machine's load may differ between them): what the cache saves a new run.")
        n = sum(r['later_compiles'].values())
        goals.append(dict(comparison=f"{b}: compiles after fold 0 (every later fold of the cold run, the rerun and the resumed run)",
                          measured=str(n), goal='0', met=n == 0))
        if b == 'keras':   # JAX loads compiled programs on every device; torch_xla's CPU runtime cannot (on a TPU it can)
            built = sum(x['compiles'] - x['from_cache'] for x in r['rows'] if x['run'] in ('2 rerun', '3 resumed'))
            goals.append(dict(comparison=f"{b}: compiles in a rerun and a resumed run that are not loads from the compile cache",
                              measured=str(built), goal='0', met=built == 0))
        for k, what in (('rerun', 'a rerun (new run directory, warm cache)'), ('resumed', 'a resume after SIGKILL (warm cache)')):
            m = r[k]['fold_s']
            goals.append(dict(comparison=f"{b}: first fold's time over a later fold's, {what}" +
                              (': the first fold builds the model and traces its programs, later folds neither' if b == 'keras'
                               else ' (this CPU runtime cannot load the cache)'), measured=_x(m), goal='reported', met=None))
    body.append("`fold_s`: the fold's seconds in `fold*/done.json` (build the model, train, predict the validation and test rows, save); "
                "`compiles`, `from_cache`, `compile_s`: the programs the fold made (training, validation, prediction), of those "
                "loaded from the compile cache, and the seconds spent tracing, lowering and compiling or loading them, by the "
                "framework's own counters (`fold*/done.json`); `train_s`: its training epoch's seconds (`fold*/history.json`). "
                "`3 killed`: the process stopped with SIGKILL once fold 0 was recorded; `3 resumed`: the same command again, "
                "which loads fold 0 and trains folds 1 and 2. Every fold pads to the length buckets the run chose once from all "
                "its rows, and the keras backend restarts fold 0's model (first weights back, the fold's step count in the "
                "optimizer's variables), so later folds run the programs fold 0 made. One epoch of 200 training rows per fold "
                "(keras on one JAX device) keeps the bench short, so a compile is a large share of a fold. What a rerun's first fold still "
                "pays over a later fold is building the model and tracing and lowering its programs (JAX computes the cache key "
                "from the lowered program, so the cache cannot skip that; it is most of `compile_s` in a rerun), which later "
                "folds no longer do at all: so the ratio of first to later folds grew as the later folds got faster, and it "
                "is reported, not a goal. The cache's own saving is the cold run's fold 0 over the rerun's.")
    report('cache', 'Compile cache: a rerun and a resume compile nothing new', '\n\n'.join(body), provenance('cache'), goals)

def smoke(part=None): main(('bow',))   # a smoke run's part (bench/run.py): the runs are real processes (one is killed)

if __name__ == '__main__':
    if SMOKE: smoke_alone('cache')
    else: main(tuple(sys.argv[1:]) or ('keras', 'xla'))
