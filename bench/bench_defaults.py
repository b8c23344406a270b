"""The defaults a user gets: `tpututor train --data` on their own CSV with no speed option (what the command chooses
for the device, `tpututor.commands.options.SPEED_DEFAULTS`, and says so in its log) against each setting of the speed options
(`--buckets`, `--batch-size`, `--precision`) run the same way. Every run is the real command in a fresh process, as a
user runs it: the same rows, folds, model (the pretrained MiniLM) and one epoch, its held-out rows scored by the fold
ensemble. The defaults are right when no setting measured trains faster at no cost in held-out accuracy.

    ./run.sh bench defaults                    recorded
    python bench/bench_defaults.py --smoke     a tiny checkpoint, a few rows, two settings, the command run in this process
"""
import contextlib, io, json, os, subprocess, sys, tempfile, time, traceback
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, bench_model, smoke_alone, SMOKE

ROWS, HELD, FOLDS = (60, 30, 2) if SMOKE else (2000, 1000, 3)
SETTINGS = [{}, dict(buckets=4, batch_size=16)] if SMOKE else [   # {}: no speed option, what the command chooses
    {}, dict(buckets=0, batch_size=16), dict(buckets=4, batch_size=32), dict(buckets=4, batch_size=16),
    dict(buckets=8, batch_size=16), dict(buckets=4, batch_size=16, precision='bf16'), dict(pack=True, batch_size=32),
    dict(pack=True, batch_size=16, precision='fp32')]
ACCURACY_SLACK = 0.01   # a setting counts as "no cost in accuracy" within this of the defaults' held-out accuracy

def flags(s:dict)->list:
    "The command-line flags of setting `s`: `--pack` for pack=True, `--buckets 4` for buckets=4"
    flag = lambda k, v: [f"--{'' if v else 'no-'}{k}"] if isinstance(v, bool) else [f"--{k.replace('_', '-')}", str(v)]
    return [x for k, v in s.items() for x in flag(k, v)]

def train_command(cmd:list, env:dict)->tuple:
    """Run the command line `cmd` (`tpututor train ...`) with the variables `env` added: (exit status, stdout, stderr). In a
    fresh process, as a user runs it; in a smoke run in this process (its framework started), through the same entry point"""
    if not SMOKE:
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
        return p.returncode, p.stdout, p.stderr
    from tpututor.cli import main   # what the `tpututor` command runs (pyproject.toml's [project.scripts])
    out, err, before = io.StringIO(), io.StringIO(), dict(os.environ)
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try: rc = main(cmd[1:])
            except Exception: traceback.print_exc(); rc = 1   # what a process that raised would print and exit with
    finally: os.environ.clear(); os.environ.update(before)
    return rc, out.getvalue(), err.getvalue()

def one(setting:dict, d:Path, i:int)->dict:
    "`tpututor train` with `setting`'s options on the bench's CSV; its speed, score and what it said it chose"
    model = [] if bench_model() == 'minilm' else ['--model', bench_model()]
    cmd = [str(Path(sys.executable).parent / 'tpututor'), 'train', '--data', str(d / 'train.csv'), '--test', str(d / 'test.csv'),
           '--folds', str(FOLDS), '--epochs', '1', '--out', str(d / f'run{i}'), *model, *flags(setting)]
    t0 = time.perf_counter()
    rc, out, err = train_command(cmd, {'TPUTUTOR_COMPILE_CACHE': str(d / f'cache{i}')})
    wall = time.perf_counter() - t0
    if rc: return dict(setting=setting, error=(err.strip().splitlines() or ['?'])[-1][:300])
    s = json.loads((d / f'run{i}' / 'summary.json').read_text())
    eps = [f['examples_per_s'] for f in s['fold_scores']]
    chosen = next((l for l in out.splitlines() if l.startswith('speed options')), None)
    return dict(setting=setting, examples_per_s=sum(eps) / len(eps), held_out=s['held_out']['accuracy'], wall_s=round(wall, 1), chosen=chosen)

def main():
    track_imports()   # every `tpututor train` process lists the modules it imported
    from tpututor.data import rotten_tomatoes
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    d = Path(tempfile.mkdtemp(prefix='tpututor-defaults-'))
    rt.iloc[:ROWS][['text', 'label']].to_csv(d / 'train.csv', index=False)
    rt.iloc[ROWS:ROWS + HELD][['text', 'label']].to_csv(d / 'test.csv', index=False)
    runs = []
    for i, s in enumerate(SETTINGS):
        runs.append(one(s, d, i))
        print(runs[-1], flush=True)
    ok = [r for r in runs if 'error' not in r]
    base = runs[0]
    if 'error' in base: sys.exit(f"tpututor train with no speed option failed: {base['error']}")
    same_acc = [r for r in ok[1:] if r['held_out'] >= base['held_out'] - ACCURACY_SLACK]
    fastest = max(same_acc, key=lambda r: r['examples_per_s'], default=None)
    name = lambda s: ' '.join(flags(s)) or '(no speed option)'
    rows = [{'options': name(r['setting']), 'examples/s': f"{r['examples_per_s']:.1f}" if 'error' not in r else '-',
             'vs no option': f"{r['examples_per_s'] / base['examples_per_s']:.2f}x" if 'error' not in r else '-',
             'held-out accuracy': f"{r['held_out']:.3f}" if 'error' not in r else r['error'], 'run seconds': r.get('wall_s', '-')} for r in runs]
    x = base['examples_per_s'] / fastest['examples_per_s'] if fastest else 1.0
    soonest = min(same_acc, key=lambda r: r['wall_s'], default=None)   # the whole k-fold job, start to finish
    t = soonest['wall_s'] / base['wall_s'] if soonest else 1.0
    goals = [dict(comparison='tpututor train --data with no speed option vs the fastest setting measured at no cost in held-out accuracy '
                             f"({name(fastest['setting']) if fastest else 'none'}): training examples/s", measured=f'{x:.2f}x', goal='>= 0.9x', met=bool(x >= 0.9)),
             dict(comparison='tpututor train --data with no speed option vs the setting that finished the k-fold job soonest at no cost in held-out '
                             f"accuracy ({name(soonest['setting']) if soonest else 'none'}): the job's seconds, its time over the defaults'",
                  measured=f"{t:.2f}x ({base['wall_s']:.0f}s vs {soonest['wall_s']:.0f}s)" if soonest else '-', goal='>= 0.9x', met=bool(t >= 0.9))]
    body = (f"The command chose: {base['chosen'] or 'nothing (no speed option to choose)'}.\n\n" + table(rows, list(rows[0])) +
            f"\n\n{FOLDS} folds of {ROWS} Rotten Tomatoes snippets in a CSV, {HELD} others as the test CSV (labelled, so the fold ensemble "
            f"is scored), `--epochs 1`, the pretrained MiniLM, the backend `auto` picks; each run the real `tpututor train` in a fresh process "
            f"with a compile cache of its own that starts empty. Examples/s: training rows over training seconds, the mean of the folds. "
            f"'No cost in accuracy': held-out accuracy at least the defaults' less {ACCURACY_SLACK}. The goal allows 10% for the noise of a "
            f"shared machine between two runs of the same setting.")
    report('defaults', 'The defaults a user gets: tpututor train with no speed option vs every setting', body, provenance('defaults'), goals)

def smoke(part=None): main()   # a smoke run's part (bench/run.py)

if __name__ == '__main__':
    if SMOKE: smoke_alone('defaults')
    else: main()
