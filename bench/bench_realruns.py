"""The pretrained MiniLM on real text, once per backend: the figures the notebooks show for a real fine-tune.

The notebooks test behaviour on tiny models built from config (fast); what only a real model can show (that a
backend learns a real task, the README's default job end to end) runs here, each in a fresh process, and is recorded
in bench/results/realruns.json. The notebooks read their figures from that file, and tests/test_project.py checks that
it is current: every row records a hash of this script and of the code of every tpututor module its run imported
(docstrings and comments left out), and the framework versions it ran with.

    ./run.sh bench realruns                          every run, recorded
    python bench/bench_realruns.py NAME ...          some of them, recorded (NAME: tf_minilm, xla_minilm or default_job)
    python bench/bench_realruns.py --smoke           every run on a tiny checkpoint and a few rows, each in the smoke run's process of its framework
    python bench/bench_realruns.py --child NAME      one run in this process (what the bench starts)"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, child_result, recorded_runs, bench_model, smoke_alone, RESULTS, SMOKE

RUNS = ('tf_minilm', 'xla_minilm', 'default_job')
TF_ROWS, XLA_ROWS = ((64, 32), (64, 32)) if SMOKE else ((4000, 1000), (2500, 1000))   # (training rows, held out)
REPLICAS, XLA_BUCKETS = (1, 2) if SMOKE else (8, 3)   # the tf run's replicas (a smoke run: one, see SMOKE_GROUPS in run.py), the xla run's buckets

def tf_minilm()->dict:
    "backends/tf/00_backend: one epoch on 4,000 snippets, 3 length buckets, the 8 replicas of the virtual TPU; held-out accuracy on 1,000"
    import numpy as np
    from tpututor.devices.describe import virtual_tpu
    virtual_tpu(REPLICAS, frameworks='tf')
    from tpututor.devices.tf import get_strategy
    from tpututor.backends.tf import TfBackend
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.encoding import encode, choose_buckets
    data = rotten_tomatoes().sample(sum(TF_ROWS), random_state=0)
    tr, te = data[:TF_ROWS[0]], data[TF_ROWS[0]:]
    cfg = TrainConfig(model=bench_model(), task='classification', n_outputs=2, max_len=64, buckets=3, batch_size=8,
                      epochs=1, lr=1e-4, warmup=0.1, seed=0)
    t0 = time.time()
    backend = TfBackend(strategy=get_strategy(), verbose=True)
    e_tr, e_te = encode(cfg.model, tr.text, max_len=64), encode(cfg.model, te.text, max_len=64)
    model, hist = backend.fit(cfg, e_tr, tr.label.values)
    acc = float((backend.predict(cfg, model, e_te).argmax(1) == te.label.values).mean())
    return dict(accuracy=acc, rows=len(tr), held_out=len(te), replicas=hist['replicas'], global_batch=hist['global_batch'],
                optimizer_steps=hist['optimizer_steps'], examples_per_s=hist['examples_per_s'][0], traces=hist['compiles'][0],
                parameters=int(model.count_params()), minutes=(time.time() - t0) / 60,
                lengths=dict(median=int(np.median(e_tr.lengths)), p90=int(np.percentile(e_tr.lengths, 90)), longest=int(e_tr.lengths.max())),
                buckets=[int(b) for b in choose_buckets(e_tr.lengths, cfg.buckets, max_len=64)])

def xla_minilm()->dict:
    "backends/xla/00_backend: one epoch on 2,500 snippets, 3 length buckets, one torch_xla device; held-out accuracy on 1,000"
    from tpututor.backends.xla import XlaBackend
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.encoding import encode
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    t0 = time.time()
    n, k = XLA_ROWS[0], sum(XLA_ROWS)
    e_all = encode(bench_model(), rt.text.tolist()[:k], max_len=64)
    y_all = rt.label.values[:k]
    cfg = TrainConfig(model=bench_model(), max_len=64, buckets=XLA_BUCKETS, batch_size=32, epochs=1, lr=2e-4, seed=0)
    be = XlaBackend()
    m, h = be.fit(cfg, e_all[:n], y_all[:n], e_all[n:], y_all[n:])
    p = be.predict(cfg, m, e_all[n:])
    return dict(accuracy=float((p.argmax(1) == y_all[n:]).mean()), majority=float(max(y_all[n:].mean(), 1 - y_all[n:].mean())),
                rows=n, held_out=int(len(p)), seconds=time.time() - t0, train_seconds=h['seconds'][0], compiles=h['compiles'][0],
                eval_compiles=h['eval_compiles'][0], buckets=[int(b) for b in m.buckets], examples_per_s=h['examples_per_s'][0])

def default_job()->dict:
    "11_cli and the README: `tpututor train` with no options, as `./run.sh train` runs it (compile cache empty)"
    from tpututor.cli import main
    from tpututor.rundir import read_json
    with tempfile.TemporaryDirectory() as d:
        import os; os.environ['TPUTUTOR_COMPILE_CACHE'] = str(Path(d) / 'cache')
        t0 = time.time()
        smoke = ['--rows', '60', '--folds', '2', '--model', bench_model()] if SMOKE else []
        assert main(['train', '--out', str(Path(d) / 'run')] + smoke) == 0
        s = read_json(Path(d) / 'run' / 'summary.json')
        import pandas as pd
        pred = pd.read_csv(Path(d) / 'run' / 'predictions.csv')
    return dict(summary=s, seconds=time.time() - t0, predictions=dict(rows=len(pred), columns=list(pred.columns),
                labels=sorted(set(pred.label)), sums=float((pred.prob_fresh + pred.prob_rotten - 1).abs().max())))

def child(name:str)->dict: return dict(run=name, result=globals()[name]())   # in the child process: its figures

GOALS = {'tf_minilm': ('tf backend (TensorFlow 2 + tf-keras, 8 replicas), MiniLM, 1 epoch: held-out accuracy', 0.75),
         'xla_minilm': ('xla backend (PyTorch/XLA, 1 device), MiniLM, 1 epoch: held-out accuracy', 0.75),
         'default_job': ('the default job (tpututor train: 5 folds, MiniLM): held-out accuracy of the fold ensemble', 0.75)}

def _acc(r): return r['result']['summary']['held_out']['accuracy'] if r['run'] == 'default_job' else r['result']['accuracy']

def main(names=RUNS):
    unknown = [n for n in names if n not in RUNS]
    if unknown: sys.exit(f'unknown run(s) {unknown}: use some of {list(RUNS)}')
    old = recorded_runs(RESULTS / 'realruns.json')   # runs not made again keep their figures and their own provenance
    for name in names:
        track_imports(); bench_model()   # each run's record hashes the modules its own process imported
        res = (child(name) if SMOKE else   # a smoke run: in this process, the smoke process of the run's framework
               child_result([sys.executable, __file__, '--child', name], f'realruns {name}'))
        old[name] = {**res, **provenance('realruns', args=[name])}
    runs = [old[n] for n in RUNS if n in old]
    goals = [dict(comparison=GOALS[r['run']][0], measured=f'{_acc(r):.3f}', goal=f'>= {GOALS[r["run"]][1]}',
                  met=bool(_acc(r) >= GOALS[r['run']][1]), **r) for r in runs]
    rows = [{'run': r['run'], 'held-out accuracy': f'{_acc(r):.3f}',
             'minutes': f"{(r['result'].get('minutes') or r['result']['seconds'] / 60):.1f}", 'ran on': r['date']} for r in runs]
    body = ('The pretrained all-MiniLM-L6-v2 (from PyPI) fine-tuned on Rotten Tomatoes snippets, once per backend, each in a '
            'fresh process: the real-model figures the notebooks show (backends/05_tf, backends/04_xla, 11_cli), which their tests take from '
            'here instead of training a real model on every test run.\n\n' + table(rows, ['run', 'held-out accuracy', 'minutes', 'ran on']))
    report('realruns', 'Real fine-tunes the notebooks show', body, {**runs[-1], 'how': './run.sh bench realruns'}, goals)

def smoke(part): main((part,))   # a smoke run's part (bench/run.py): run `part` in this process, added to the record

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--smoke']
    if args[:1] == ['--child']: print('RESULT ' + json.dumps(child(args[1])), flush=True)
    elif SMOKE: smoke_alone('realruns')
    else: main(tuple(args) or RUNS)
