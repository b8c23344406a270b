"""The tutorials in their small CPU setting: real pretrained MiniLM models fine-tuned for minutes, the runs whose outputs
the docs show. Each tutorial runs end to end in a fresh process, as nbdev's test runner runs it (slow cells included, its
own checks of the scores included), and its outputs are saved into the notebook. The test suite runs the tutorials in
their TPU setting on tiny checkpoints (tests/test_notebooks.py::test_tpu_setting); tests/test_project.py checks that this
record is current: each row holds a hash of the notebook's cells as written, of this script and of every tpututor module
the run imported, its child processes' included (docstrings and comments left out), and the framework versions it ran with.
Each tutorial runs with a compile cache of its own that starts empty, so that its saved outputs show what a first run
compiles.

    ./run.sh bench tutorials                          every tutorial, recorded (NAME ...: some of them)
    python bench/bench_tutorials.py --smoke           the same steps on a two-cell notebook made for it
    python bench/bench_tutorials.py --child PATH      one notebook in this process (what the bench starts)"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, notebook_hash, track_imports, child_result, recorded_runs, smoke_alone, NBS, RESULTS, SMOKE

TUTORIALS = ('01_keras_kfold', '02_tf_siamese', '03_xla_ranking', '04_xla_cores')

def child(path)->dict:
    "Run the notebook `path` in this process as `nbdev-test --flags slow --save` does, then clean it; how long it took"
    from nbdev.test import test_nb
    from nbdev.config import get_config
    os.environ.pop('TPUTUTOR_REHEARSE', None)   # the small setting, whatever the caller's environment says
    t0 = time.time()
    ok, _ = test_nb(path, skip_flags=get_config().tst_flags.split(), force_flags=['slow'], save=True, cell_timing_min=20)
    if not ok: sys.exit(f'{path} failed in its small setting (the error is above); its outputs were not saved')
    seconds = time.time() - t0
    subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(path)], check=True)
    return dict(seconds=round(seconds, 1))

def smoke_notebook()->Path:
    "A two-cell notebook in a temporary folder: what a smoke run runs instead of a tutorial"
    cells = [dict(cell_type='code', execution_count=None, id=f'c{i}', metadata={}, outputs=[], source=s)
             for i, s in enumerate(["from tpututor.encoding import encode\nprint(encode('minilm', ['a short text'], max_len=8))",
                                    "import os\nassert os.environ['TPUTUTOR_COMPILE_CACHE']"])]
    p = Path(tempfile.mkdtemp(prefix='tpututor-smoke-nb-')) / 'smoke.ipynb'
    p.write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    return p

def main(names=TUTORIALS):
    unknown = [n for n in names if n not in TUTORIALS]
    if unknown: sys.exit(f'unknown tutorial(s) {unknown}: use some of {list(TUTORIALS)}')
    old = recorded_runs(RESULTS / 'tutorials.json')
    for name in names:
        path = smoke_notebook() if SMOKE else NBS / 'tutorials' / f'{name}.ipynb'
        print(f'running {path.name} in its small setting...', flush=True)
        track_imports()   # the notebook's processes, and those it starts, list their modules
        with tempfile.TemporaryDirectory(prefix='tpututor-compile-') as cache:   # a first run's compiles: an empty cache of its own
            res = child_result([sys.executable, __file__, '--child', str(path)], f'tutorials/{name}', env={**os.environ, 'TPUTUTOR_COMPILE_CACHE': cache})
        nb = str(path) if SMOKE else f'tutorials/{name}.ipynb'   # the notebook that ran (a smoke run's own: an absolute path)
        old[name] = dict(run=name, notebook=nb, source=notebook_hash(path), **res, **provenance('tutorials', args=[name]))
        if SMOKE: break
    runs = [old[n] for n in TUTORIALS if n in old]
    goals = [dict(comparison=f"tutorials/{r['run']}, small CPU setting: runs end to end and passes its own checks",
                  measured='passed', goal='passes', met=True, **r) for r in runs]
    rows = [{'tutorial': r['notebook'], 'minutes': f"{r['seconds'] / 60:.1f}", 'ran on': r['date']} for r in runs]
    body = ('Each tutorial in the setting a CPU runs (pretrained MiniLM from PyPI, real labelled text), end to end in a fresh '
            'process with a compile cache of its own that starts empty, its outputs saved into the notebook: the figures the docs '
            'show, a first run\'s compiles included. The test suite runs the same notebooks in their TPU setting on tiny '
            'checkpoints.\n\n' + table(rows, ['tutorial', 'minutes', 'ran on']))
    report('tutorials', 'Tutorials in their small setting', body, {**runs[-1], 'how': './run.sh bench tutorials'}, goals)

def smoke(part=None): main()   # a smoke run's part (bench/run.py): the notebook still runs in a child process, as nbdev runs it

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--smoke']
    if args[:1] == ['--child']: print('RESULT ' + json.dumps(child(Path(args[1]))), flush=True)
    elif SMOKE: smoke_alone('tutorials')
    else: main(tuple(args) or TUTORIALS)
