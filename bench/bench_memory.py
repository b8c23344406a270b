"""Resident memory across the folds of a k-fold run, per backend: does it stay flat, or does each fold leave its model
behind? Each backend runs in a fresh process (TensorFlow and torch_xla must not share one): `run_kfold` with the
pretrained MiniLM, and the process's resident memory (VmRSS) read after every fold, once the backend has freed the model.

    ./run.sh bench memory                    recorded
    python bench/bench_memory.py --smoke     the torch backend, a tiny checkpoint, a few rows
    python bench/bench_memory.py --child BACKEND   one backend in this process (what the bench starts)"""
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, child_result, bench_model, smoke_alone, SMOKE

BACKENDS = ('torch',) if SMOKE else ('tf', 'keras', 'xla', 'torch')
FOLDS, ROWS, MAX_LEN, BATCH = (5, 25, 16, 4) if SMOKE else (5, 200, 32, 16)   # small folds: the memory a fold leaves behind is the model's, whatever the rows
GOAL_MB = 150                                 # the growth from fold 2 to fold 4 that is still "flat"

def child(name:str)->dict:
    "Run the folds of backend `name` in this process; resident MB after each fold"
    from tpututor.kfold import run_kfold, memory_mb
    from tpututor.config import TrainConfig
    from tpututor.commands.train import default_data
    from tpututor.encoding import load_tokenizer, encode
    if name == 'keras':
        from tpututor.devices.jax import virtual_jax; virtual_jax(1)
    from tpututor.backends.registry import get_backend
    backend = get_backend(name, verbose=False)
    df, _ = default_data(ROWS, 100)
    cfg = TrainConfig(model=bench_model(), max_len=MAX_LEN, batch_size=BATCH, epochs=1)
    data = encode(load_tokenizer(cfg.model), df.text.tolist(), max_len=MAX_LEN)
    y = (df.label == 'fresh').to_numpy().astype('int64')
    rss, done_with = [], backend.done_with
    def done_and_measure(model=None):   # what run_kfold calls after each fold; then its own gc.collect
        done_with(model); import gc; gc.collect(); rss.append(memory_mb()['rss_mb'])
    backend.done_with = done_and_measure
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d: run_kfold(backend, cfg, data, y, folds=FOLDS, out=d, verbose=False)
    return {'backend': name, 'rss_mb': rss, 'peak_mb': memory_mb()['peak_mb'], 'seconds': round(time.time() - t0, 1)}

def main():
    track_imports(); bench_model()   # the children's modules are listed for the record; a smoke run's tiny checkpoint made once
    rows, goals = [], []
    for name in BACKENDS:
        r = child(name) if SMOKE else child_result([sys.executable, __file__, '--child', name], f'memory bench, backend {name}')   # a smoke run: in this process
        m = r['rss_mb']; d = m[4] - m[2]
        rows.append({'backend': name, **{f'fold {i}': f'{v:,.0f}' for i, v in enumerate(m)}, 'fold 4 - fold 2 (MB)': f'{d:+.0f}',
                     'per fold, 0 to 4 (MB)': f'{(m[4] - m[0]) / 4:+.0f}', 'seconds': r['seconds']})
        goals.append(dict(comparison=f'{name}: resident memory of fold 4 minus fold 2', measured=f'{d:+.0f} MB',
                          goal=f'<= {GOAL_MB} MB', met=bool(d <= GOAL_MB), run=name, rss_mb=m))
    cols = ['backend'] + [f'fold {i}' for i in range(FOLDS)] + ['fold 4 - fold 2 (MB)', 'per fold, 0 to 4 (MB)', 'seconds']
    body = (f'Resident memory (MB, VmRSS) of a fresh process after each of {FOLDS} folds of `run_kfold`, measured once the backend '
            f'has freed the fold\'s model: the pretrained MiniLM, {ROWS} rows ({ROWS - ROWS // FOLDS} training rows '
            f'a fold), {MAX_LEN} tokens, batch {BATCH}, 1 epoch, one device. The goal: fold 4 within {GOAL_MB} MB of fold 2, '
            'so a run of many folds of a large model fits in the memory of its first folds.\n\n' + table(rows, cols) +
            '\n\nFold 0 includes the framework, its compiled programs and the first model; what follows it is what each fold '
            'leaves behind. A model kept alive after its fold costs its weights and the optimizer\'s two moment copies, '
            'three times the size of the model. The `tf` backend kept every fold\'s model until its `fit` callback was a class made '
            'once per process (TensorFlow holds every class it has inspected for good, and a class made per fit whose methods '
            'closed over the model held that model): see the tf lesson.')
    report('memory', 'Memory across folds', body, provenance('memory'), goals)

def smoke(part=None): main()   # a smoke run's part (bench/run.py): the torch backend in this process

if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']: print('RESULT ' + json.dumps(child(sys.argv[2])), flush=True)
    elif SMOKE: smoke_alone('memory')
    else: main()
