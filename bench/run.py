"""Run the benchmarks, each in a fresh process (TensorFlow and torch_xla must not share one), then print one table of
every comparison against its goal and write it to bench/results/summary.md.

    python bench/run.py [NAME ...]   NAME: the part after bench_ (default: every bench/bench_*.py); with NAMEs only those
                                     run again, and the table still shows the latest figures of the others, with their dates
    python bench/run.py --stale      run again what is stale (records whose code or versions changed, or that carry no
                                     code hash), the quickest first (by bench/timings.json, the seconds each took last
                                     time), a line per bench with the time it should take, each record kept as it is
                                     written; then save the notebook outputs that show records again (--outputs)
    python bench/run.py --stale --plan   what --stale would run, in its order, with the time each took last time
    python bench/run.py --outputs    save again the outputs of the notebook cells that print a figure from a record
    python bench/run.py --summary    write bench/results/summary.md again from the records (which GPU records wait for a GPU)
    python bench/run.py --check      list what is stale (and whether it fails the suite or is shown with a note) and
                                     which saved outputs differ from their records; exit 1 if anything made here is
                                     stale
    python bench/run.py --smoke [NAME ...]   every bench (or those named) on tiny shapes, a few seconds each, its record
                                     written into a temporary folder: one process per framework group (`SMOKE_GROUPS`) runs
                                     the smoke parts of its benches in turn (`python bench/bench_NAME.py --smoke` runs one bench's)
    python bench/run.py --smoke --stale   the smoke run of every bench without a current record (what the test suite
                                     runs): a current record ran the bench's code and the library's it imports in full, so
                                     only a changed or unmeasured bench can have stopped running
"""
import gc, importlib, json, os, resource, shutil, subprocess, sys, tempfile, time, traceback
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, BENCH, SMOKE_ENV, drop_empty_results, _write, table, stale, waits_for_gpu, shown_mismatches, refresh_outputs

TIMINGS = BENCH / 'timings.json'   # seconds each bench command took when it last ran here: the order of --stale
ORDER = ['trainer', 'defaults', 'gpu', 'gpu_jobs', 'xla_buckets', 'xla_spmd', 'bf16', 'tokenize', 'cache', 'memory', 'realruns', 'resume', 'tutorials', 'tpu_plan', 'training_memory']   # the summary's order

def names()->list: return sorted(p.stem[6:] for p in BENCH.glob('bench_*.py'))

def summary(found=None, every=False)->str:
    """The summary table of every record; `found`: what `stale()` returned, when the caller has it already. A record
    made on a GPU with code that changed since says it waits for a GPU; with `every` (the Performance page, made at
    each build), every other stale record says so too (bench/results/summary.md leaves those out: they change with any
    edit)"""
    found = stale() if found is None else found
    stem = lambda s: s['file'].removesuffix('_runs.json').removesuffix('.json')
    rows, waiting = [], {stem(s) for s in found if waits_for_gpu(s)}
    changed = {stem(s) for s in found if every and not waits_for_gpu(s)}
    for f in sorted(RESULTS.glob('*.json'), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem)):
        data = json.loads(f.read_text())
        for r in data if isinstance(data, list) else []:   # families.json is a table of its own (the supported-models page)
            when = r['date'] + (' (code changed since: waits for a GPU)' if f.stem in waiting else
                                ' (code changed since: `./run.sh bench --stale`)' if f.stem in changed else '')
            rows.append({'comparison': r['comparison'], 'measured': r['measured'], 'goal': r['goal'],
                         'met': {True: 'yes', False: '**no**', None: '-'}[r['met']], 'measured on': when, 'reproduce': f"`{r['how']}`"})
    return ('## Summary: every comparison against its goal\n\n' +
            table(rows, ['comparison', 'measured', 'goal', 'met', 'measured on', 'reproduce']) +
            '\n\nRatios of the two ways measured side by side in one run, on the machine named in each section below '
            '(a 2-core CPU build machine shared with other work: ratios, not absolute times, are the result). Each '
            'section says how its figures were taken and why a goal that is missed is missed. Every record carries the '
            'code hash of each module it ran, the commit and the versions; a figure measured on code that has changed '
            'since is shown with a note saying what changed, and `./run.sh bench --stale` measures those again.\n')

def timings()->dict:
    """The seconds each bench command took when it last ran here, by command ('bench_trainer.py', 'bench_realruns.py
    xla_minilm')"""
    return json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}

def _minutes(s:float)->str: return f'{s / 60:.0f} min' if s >= 90 else f'{s:.0f} s'

def _expect(t:dict|None)->str:
    "What a timing says: the seconds of the bench's last run here, or those its record timed itself (no process start)"
    if not t: return 'not timed yet'
    return f"{_minutes(t['seconds'])} " + ('by its record (its timed runs alone)' if t.get('estimated')
                                           else 'last time')

def run(cmds, plan=False)->list:
    """Run each bench command (a list: script and arguments) in a fresh process, in the order given, a line before each
    with the time it took last time; its seconds go to bench/timings.json as it ends. The ones that failed. `plan`:
    print the lines alone, running nothing"""
    failed, known = [], timings()
    for i, c in enumerate(cmds, 1):
        key = ' '.join(c)
        left = sum(known.get(' '.join(x), {}).get('seconds') or 0 for x in cmds[i - 1:])
        print(f"== [{i}/{len(cmds)}] python bench/{key}: {_expect(known.get(key))}, "
              f"about {_minutes(left)} for this and the rest (those timed)", flush=True)
        if plan: continue
        t0 = time.time()
        rc = subprocess.run([sys.executable, str(BENCH / c[0]), *c[1:]], cwd=BENCH).returncode
        print(f"== [{i}/{len(cmds)}] python bench/{key}: {'done' if not rc else 'FAILED'} "
              f"in {_minutes(time.time() - t0)}", flush=True)
        if rc: failed.append(key); continue   # a failed bench wrote no record; the ones before it keep theirs
        known[key] = dict(seconds=round(time.time() - t0), date=time.strftime('%Y-%m-%d'))
        _write(TIMINGS, json.dumps(dict(sorted(known.items())), indent=1) + '\n')
    return failed

def rerun_stale()->list:
    "The commands that make every stale record made here again (a whole bench where any of its entries needs it)"
    todo = stale()
    for s in todo: print(f"stale: {s['file']}{s['where']}: {s['why']} ({s['how']})")
    foreign = {s['how'] for s in todo if s['env'] != 'here'}
    for h in sorted(foreign): print(f'made in another environment; run there: {h}')
    cmds = []
    for s in todo:
        if s['env'] != 'here': continue   # made on a GPU or an image's stand-in: run there
        c = s['rerun']
        if [c[0]] in cmds or c in cmds: continue
        if len(c) == 1: cmds = [x for x in cmds if x[0] != c[0]]
        cmds.append(c)
    known = timings()   # the quickest first: a stop of the run keeps the most records
    return sorted(cmds, key=lambda c: known.get(' '.join(c), {}).get('seconds', float('inf')))

# ------------------------------------------------------------------ the smoke run
SMOKE_GROUPS = {   # framework group -> the (bench, part) it runs in turn, `bench_NAME.smoke(part)`, in one process, after `start_group`
    'torch': [('tokenize', None), ('families', None), ('gpu', None), ('gpu_jobs', None), ('memory', None), ('predict', None), ('defaults', None),
              ('cache', None), ('realruns', 'default_job'), ('trainer', 'torch'), ('tutorials', None), ('resume', None)],
    'xla+tf+jax': [('bf16', None), ('xla_buckets', None), ('realruns', 'xla_minilm'), ('trainer', 'xla'),
                     ('realruns', 'tf_minilm'), ('trainer', 'tf'), ('trainer', 'jax'), ('trainer', 'kerashub'),
                     ('tpu_plan', None), ('training_memory', None)],
}   # torch_xla before TensorFlow (TensorFlow first aborts the process); the Trainer's torch apart from torch_xla, which accelerate would pick up

def start_group(group:str):
    "Start the frameworks of smoke group `group` in this process, before its benches run (what each of them would import first)"
    if group == 'torch':   # native torch: transformers must reach for neither TensorFlow nor torch_xla
        os.environ['USE_TF'] = os.environ['USE_TORCH_XLA'] = '0'
        import torch; torch.set_num_threads(1)
    elif group == 'xla+tf+jax':   # torch_xla first; then tf-keras for transformers' TF models, and Keras 3 on JAX for the keras backend and KerasHub
        os.environ.update(USE_TF='AUTO', TF_USE_LEGACY_KERAS='1', KERAS_BACKEND='jax')   # transformers: its torch and its TF models (import_xla would say USE_TF=0)
        from tpututor.devices.frameworks import import_xla, import_tf; import_xla(); import_tf()
    else: raise ValueError(f'no smoke group {group!r}: use one of {list(SMOKE_GROUPS)}')
    import transformers; transformers.AutoModel, transformers.Trainer   # noqa: B018 (transformers loads its classes lazily)

def _cpu(who=resource.RUSAGE_CHILDREN)->float: return (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(who))

def _part(bench:str, part, log:Path)->dict:
    "Run `bench_NAME.smoke(part)` in this process, its output into `log`; the environment and folder are put back after it"
    env, cwd = dict(os.environ), os.getcwd()
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, 'w') as f: os.dup2(f.fileno(), 1); os.dup2(f.fileno(), 2)   # C-level output too (TensorFlow, XLA)
    gc.freeze()   # what earlier benches left is not scanned by this one's collections (the memory bench collects after every fold)
    t0, c0, ok = time.time(), _cpu(resource.RUSAGE_SELF) + _cpu(), False
    try:
        importlib.import_module(f'bench_{bench}').smoke(part); ok = True
    except (Exception, SystemExit): traceback.print_exc()   # a failed bench fails its part; the group goes on with the next
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        for fd, s in zip((1, 2), saved): os.dup2(s, fd); os.close(s)
        os.environ.clear(); os.environ.update(env); os.chdir(cwd)
    return dict(bench=bench, part=part, ok=ok, wall=time.time() - t0, cpu=_cpu(resource.RUSAGE_SELF) + _cpu() - c0, log=str(log))

def smoke_group(group:str, logs:Path, benches:list):
    "In this process: start `group`'s frameworks, then run its parts of `benches`; a SMOKE line of JSON per step on stdout"
    t0, c0 = time.time(), _cpu(resource.RUSAGE_SELF)
    start_group(group)
    print('SMOKE ' + json.dumps(dict(bench=None, part=group, ok=True, wall=time.time() - t0, cpu=_cpu(resource.RUSAGE_SELF) - c0)), flush=True)
    for bench, part in SMOKE_GROUPS[group]:
        if bench in benches: print('SMOKE ' + json.dumps(_part(bench, part, logs / f"{bench}{'-' + part if part else ''}.log")), flush=True)

def _tail(path, n=3000)->str: return Path(path).read_text(errors='replace')[-n:] if Path(path).exists() else ''

def smoke(benches=None)->list:
    """Every bench's smoke (or those of `benches`): one process per framework group runs its benches' parts in turn, their
    records into a temporary folder, then every bench must have written a current record. Prints each bench's CPU seconds;
    returns the benches that failed"""
    benches = list(benches or names())
    unknown = [b for b in benches if b not in names()]
    if unknown: sys.exit(f'no bench {unknown}: use some of {names()}')
    missing = [b for b in benches if not any(b == x for steps in SMOKE_GROUPS.values() for x, _ in steps)]
    if missing: sys.exit(f'bench(es) {missing} are in no smoke group: add them to SMOKE_GROUPS in bench/run.py')
    tmp = Path(tempfile.mkdtemp(prefix='tpututor-smoke-'))
    results, logs = tmp / 'results', tmp / 'logs'; logs.mkdir()
    (tmp / 'work').mkdir()   # every temporary file of the benches and their processes: removed with the rest
    env = {**os.environ, **SMOKE_ENV, 'TPUTUTOR_BENCH_RESULTS': str(results), 'TPUTUTOR_BENCH_MODEL': str(tmp / 'bert'), 'TMPDIR': str(tmp / 'work')}
    T0, C0, steps = time.time(), _cpu(), []
    for group, plan in SMOKE_GROUPS.items():
        todo = [(b, p) for b, p in plan if b in benches]
        if not todo: continue
        glog, c0 = logs / f'group-{group}.log', _cpu()
        with open(glog, 'w') as err:
            p = subprocess.Popen([sys.executable, __file__, '--smoke', '--group', group, str(logs), *dict.fromkeys(b for b, _ in todo)],
                                 cwd=BENCH, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
            done = []
            for line in p.stdout:
                if not line.startswith('SMOKE '): continue
                s = json.loads(line[6:]); done.append(s)
                what = 'starting its frameworks' if s['bench'] is None else f"{s['bench']}{' ' + s['part'] if s['part'] else ''}"
                print(f"  [{group}] {what}: {'done' if s['ok'] else 'FAILED'}, {s['cpu']:.1f} CPU seconds in {s['wall']:.0f}s", flush=True)
            rc = p.wait()
        reported = {(s['bench'], s['part']) for s in done}
        for b, part in [t for t in todo if t not in reported]:   # what a process that died never reported
            done.append(dict(bench=b, part=part, ok=False, wall=0.0, cpu=0.0, log=str(glog), why=f'the {group} process died (exit {rc})'))
        print(f"  [{group}] the process: {_cpu() - c0:.1f} CPU seconds", flush=True)
        steps += [dict(s, group=group) for s in done]
    failed = []
    for b in benches:
        mine = [s for s in steps if s['bench'] == b]
        bad = [s for s in mine if not s['ok']]
        if not bad and not (results / f'{b}.json').exists(): bad = [dict(mine[-1], why=f'it wrote no record ({b}.json) into the results folder')]
        cpu, wall = sum(s['cpu'] for s in mine), sum(s['wall'] for s in mine)
        print(f"{b}: {'ok' if not bad else 'FAILED'} in {wall:.0f}s ({cpu:.1f} CPU seconds)", flush=True)
        for s in bad:
            failed.append(b)
            print(f"--- {b} {s['part'] or ''} ({s['group']}): {s.get('why', 'failed')}; the end of {s['log']}:\n{_tail(s['log'])}", flush=True)
    for s in stale(results):   # a record a bench wrote must say which code made it (a smoke run's records are all of today's code)
        failed.append(s['file'].split('.')[0].removesuffix('_runs'))
        print(f"--- the record {s['file']}{s['where']} that the smoke run wrote is not current: {s['why']}", flush=True)
    starts = sum(s['cpu'] for s in steps if s['bench'] is None)
    print(f"smoke run: {len(benches) - len(set(failed))} of {len(benches)} benches ok, {_cpu() - C0:.0f} CPU seconds "
          f"({starts:.0f} of them starting the frameworks) in {time.time() - T0:.0f}s", flush=True)
    if failed: print(f'the smoke run\'s records and logs are kept in {tmp}')
    else: shutil.rmtree(tmp, ignore_errors=True)
    return sorted(set(failed))

def check()->int:
    """Print what is stale (failing the suite, shown with a note, or waiting for a GPU) and which saved outputs differ
    from their records; 1 if anything this machine can make again is stale or differs"""
    bad = stale()
    for s in bad:
        state = 'FAILS the suite' if s['fails'] else 'waits for a GPU' if waits_for_gpu(s) else 'shown with a note'
        print(f"stale ({state}): bench/results/{s['file']}{s['where']}: {s['why']}; refresh: {s['how']}")
    mism = shown_mismatches()
    for nb, i, saved, now in mism: print(f'nbs/{nb} cell {i}: its saved output differs from what its record says now; refresh: python bench/run.py --outputs')
    here = [s for s in bad if not waits_for_gpu(s)]
    print(f"{len(here)} stale record entries this machine makes again (./run.sh bench --stale), "
          f"{len(bad) - len(here)} waiting for a GPU, {len(mism)} saved outputs differing")
    return int(bool(here or mism))

def unproven(benches=None, found=None)->list:
    """The benches (of `benches`; default every one) with no current record: a stale entry (a GPU record waiting for a
    GPU is one), or no record at all. The others' records ran today's code of the bench and of every module it
    imports, in full.
    `found`: what `stale()` returned, when the caller has it already"""
    kept = BENCH / 'results'   # the records kept with the code (a smoke run writes its own elsewhere)
    found = stale(kept) if found is None else found
    old = {Path(s['file']).stem.removesuffix('_runs') for s in found}
    return [b for b in (benches or names()) if b in old or not (kept / f'{b}.json').exists()]

if __name__ == '__main__':
    args = sys.argv[1:]
    if '--group' in args:   # one smoke group, in this process (what `smoke` starts)
        i = args.index('--group'); smoke_group(args[i + 1], Path(args[i + 2]), args[i + 3:]); sys.exit(0)
    if '--smoke' in args:
        asked = [a for a in args if a not in ('--smoke', '--stale')]
        if '--stale' in args:
            todo = unproven(asked)
            print(f"current records, no smoke run needed: {', '.join(sorted(set(asked or names()) - set(todo))) or 'none'}",
                  flush=True)
            if not todo: print('smoke run: 0 benches to run'); sys.exit(0)
            asked = todo
        failed = smoke(asked)
        drop_empty_results()
        sys.exit(f'smoke run failed: {failed}' if failed else 0)
    if '--check' in args: sys.exit(check())
    if '--outputs' in args:
        print('saved again:', refresh_outputs() or 'nothing (every output matches its record)'); sys.exit(0)
    if '--summary' in args: _write(RESULTS / 'summary.md', summary()); sys.exit(0)
    if '--stale' in args and '--plan' in args: run(rerun_stale(), plan=True); sys.exit(0)
    failed = run(rerun_stale() if '--stale' in args else [[f'bench_{n}.py'] for n in (args or names())])
    if '--stale' in args: print('saved again:', refresh_outputs() or 'nothing')
    text = summary()
    _write(RESULTS / 'summary.md', text)
    print(text)
    if failed: sys.exit(f'failed: {failed}')
