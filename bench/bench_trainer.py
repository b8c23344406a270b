"""Every tpututor backend against the anchors a user would pick on this machine, on the same k-fold work: the same
model, rows, folds, epochs, sequence length, batch, learning-rate schedule, weight decay, clipping and seed.

The anchors, each run as its users run it on a CPU:
- the Hugging Face `Trainer` on native PyTorch (`use_cpu=True`, no torch_xla in its process), with its own default
  collator (dynamic padding: each batch padded to its longest row), and padded to max_length;
- KerasHub's own `TextClassifier.fit` (Keras 3 on JAX, its preprocessor padding to the sequence length), the anchor
  of the `keras` backend;
- the `Trainer` on torch_xla's device, padded (static shapes, as the TPU guides say): only as the stand-in for a
  TPU, where that is how it runs; nobody trains on torch_xla's CPU device by choice.

The pretrained MiniLM fine-tuned on real Rotten Tomatoes snippets. Every contender lives in a process of its own
(TensorFlow, torch_xla, JAX and a native-torch Trainer each need theirs), started once and kept over the folds, as a
k-fold run keeps its backend; the folds are interleaved (fold 1 of every contender, then fold 2, ...), so that load
from other work on the shared cores hits all alike, and a process waiting for its turn is idle.

Each contender's examples/s is its training rows over its training wall time, first fold (which compiles) included,
as a user would see it, and separately that of its fastest later fold; the held-out score is that of the fold
ensemble (mean probabilities). The compile caches on disk point at a new empty folder for the run, so every figure
is a first run's.

    ./run.sh bench trainer                       every contender
    python bench/bench_trainer.py NAME ...       some of them (CONTENDERS' keys)
"""
import json, os, subprocess, sys, tempfile, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import table

N_TRAIN, N_TEST, FOLDS, MAX_LEN, BUCKETS, BATCH = 600, 240, 3, 64, 4, 32
CONTENDERS = {   # name -> (what it is, anchor?)
    'trainer_dynamic': (f'HF Trainer, native torch, dynamic padding (its default collator)', True),
    'trainer_padded':  (f'HF Trainer, native torch, padded to {MAX_LEN}', True),
    'kerashub':        (f'KerasHub TextClassifier.fit, Keras 3 on JAX, padded to {MAX_LEN}', True),
    'trainer_xla':     (f'HF Trainer on torch_xla (the stand-in for a TPU), padded to {MAX_LEN}', False),
    'torch':           (f'tpututor `torch`: native PyTorch, {BUCKETS} length buckets', False),
    'keras':           (f'tpututor `keras`: Keras 3 on JAX, {BUCKETS} length buckets', False),
    'tf':              (f'tpututor `tf`: TensorFlow + tf-keras, {BUCKETS} length buckets', False),
    'xla_fixed':       (f'tpututor `xla`: PyTorch/XLA, padded to {MAX_LEN}', False),
    'xla':             (f'tpututor `xla`: PyTorch/XLA, {BUCKETS} length buckets', False),
}
OURS = ['torch', 'keras', 'tf', 'xla_fixed', 'xla']   # tpututor's backends; the others are anchors
SCHEDULE = dict(lr=5e-5, warmup=0.1, weight_decay=0.01, clip=1.0, seed=42)

# ------------------------------------------------------------------ the worker: one contender, fold by fold
def _start(name):
    "Framework start-up for `name`'s process, before anything imports transformers"
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    if name in ('trainer_xla', 'xla', 'xla_fixed'):
        from tpututor.devices.frameworks import import_xla; import_xla()
    elif name == 'keras':
        os.environ['USE_TORCH_XLA'] = '0'
        from tpututor.devices.jax import import_keras; import_keras('jax')
    elif name == 'kerashub':   # KerasHub's classifier reads strings through tf.data: TensorFlow joins its process, as it does for its users
        os.environ['USE_TORCH_XLA'], os.environ['KERAS_BACKEND'] = '0', 'jax'
    elif name == 'tf':
        from tpututor.devices.frameworks import import_tf; import_tf()
    else: os.environ['USE_TORCH_XLA'] = os.environ['USE_TF'] = '0'   # native torch: accelerate must not reach for torch_xla

def _data():
    import numpy as np
    from tpututor.data import rotten_tomatoes
    from tpututor.kfold import make_folds
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    tr, te = rt.iloc[:N_TRAIN], rt.iloc[N_TRAIN:N_TRAIN + N_TEST]
    return tr, te, make_folds(len(tr), FOLDS, tr.label.values, seed=SCHEDULE['seed'])

def _trainer(name, tr, te):
    "A fold function for the Hugging Face Trainer, as a user writes it"
    import numpy as np, torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, DataCollatorWithPadding
    from tpututor.models.hub import resolve_model
    path = resolve_model('minilm'); tok = AutoTokenizer.from_pretrained(path)
    pad = 'longest' if name == 'trainer_dynamic' else 'max_length'
    class Rows(torch.utils.data.Dataset):   # the tokenizer's output per row
        def __init__(self, texts, labels):
            self.enc = tok(list(texts), truncation=True, max_length=MAX_LEN, padding=False if pad == 'longest' else 'max_length')
            self.y = labels
        def __len__(self): return len(self.y)
        def __getitem__(self, i): return {**{k: v[i] for k, v in self.enc.items()}, 'labels': int(self.y[i])}
    def fold(tr_idx, va_idx):
        torch.manual_seed(SCHEDULE['seed'])
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
        xla = name == 'trainer_xla'
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=BATCH, per_device_eval_batch_size=2 * BATCH,
                                 num_train_epochs=1, learning_rate=SCHEDULE['lr'], warmup_ratio=SCHEDULE['warmup'],
                                 weight_decay=SCHEDULE['weight_decay'], max_grad_norm=SCHEDULE['clip'], seed=SCHEDULE['seed'], report_to=[],
                                 save_strategy='no', eval_strategy='no', logging_strategy='no', dataloader_drop_last=True,
                                 disable_tqdm=True, use_cpu=not xla, **({'optim': 'adamw_torch'} if xla else {}))   # the fused default refuses XLA tensors
        t = Trainer(model=model, args=args, train_dataset=Rows(tr.text.values[tr_idx], tr.label.values[tr_idx]), data_collator=DataCollatorWithPadding(tok))
        c0 = _xla_compiles() if xla else 0
        t0 = time.perf_counter(); t.train(); secs = time.perf_counter() - t0
        comp = str(_xla_compiles() - c0) if xla else '-'
        t.args.dataloader_drop_last = False   # predict every row, the last partial batch too
        prob = lambda texts, labels: torch.softmax(torch.from_numpy(t.predict(Rows(texts, labels)).predictions).float(), -1).numpy()
        return secs, comp, prob(tr.text.values[va_idx], tr.label.values[va_idx]), prob(te.text.values, te.label.values), {}
    return fold

def _xla_compiles():
    from tpututor.devices.ops import count_compiles
    return count_compiles('torch_xla')

def _kerashub(tr, te):
    "A fold function for KerasHub's own classifier: `TextClassifier.from_preset` on the MiniLM folder, then `fit`"
    import numpy as np, keras, keras_hub
    from tpututor.models.hub import resolve_model
    path = resolve_model('minilm')
    def fold(tr_idx, va_idx):
        keras.utils.set_random_seed(SCHEDULE['seed'])
        clf = keras_hub.models.TextClassifier.from_preset(path, num_classes=2)
        clf.preprocessor.sequence_length = MAX_LEN
        steps = len(tr_idx) // BATCH
        sched = keras.optimizers.schedules.PolynomialDecay(SCHEDULE['lr'], steps, 0.0)   # linear decay (KerasHub has no warm-up)
        clf.compile(optimizer=keras.optimizers.AdamW(sched, weight_decay=SCHEDULE['weight_decay'], global_clipnorm=SCHEDULE['clip']),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        x, y = tr.text.values[tr_idx][:steps * BATCH], tr.label.values[tr_idx][:steps * BATCH]
        t0 = time.perf_counter(); clf.fit(x=x, y=y, batch_size=BATCH, epochs=1, shuffle=True, verbose=0); secs = time.perf_counter() - t0
        prob = lambda texts: keras.ops.convert_to_numpy(keras.ops.softmax(clf.predict(texts, batch_size=2 * BATCH, verbose=0), -1))
        return secs, '-', prob(tr.text.values[va_idx]), prob(te.text.values), {}
    return fold

def _ours(name, tr, te, fold):
    "A fold function for a tpututor backend, kept over the folds as `run_kfold` keeps it, with the run's buckets chosen once"
    from tpututor.backends.base import get_backend
    from tpututor.config import TrainConfig
    from tpututor.kfold import fixed_shapes, compile_cost
    from tpututor.encoding import encode
    enc, enc_te = encode('minilm', tr.text.tolist(), max_len=MAX_LEN), encode('minilm', te.text.tolist(), max_len=MAX_LEN)
    be = get_backend(name.split('_')[0], verbose=False)
    s = SCHEDULE
    cfg = TrainConfig(model='minilm', max_len=MAX_LEN, buckets=0 if name == 'xla_fixed' else BUCKETS, batch_size=BATCH, epochs=1, lr=s['lr'],
                      warmup=s['warmup'], weight_decay=s['weight_decay'], grad_clip=s['clip'], seed=s['seed'])
    cfg = fixed_shapes(cfg, enc, enc_te, fold, BATCH * be.replicas())
    y = tr.label.values
    def run(tr_idx, va_idx):
        stats = getattr(be, 'compile_stats', None)
        c0, t0 = stats() if stats else None, time.perf_counter()
        model, hist = be.fit(cfg, enc[tr_idx], y[tr_idx])
        secs = time.perf_counter() - t0
        out = [be.predict(cfg, model, enc[va_idx]), be.predict(cfg, model, enc_te)]
        if stats:
            c = compile_cost(c0, stats())
            comp = f"{c['compiles']} ({c['compile_seconds']:.1f}s{', %d from the cache' % c['cache_hits'] if c['cache_hits'] else ''})"
        else: comp = f"{sum(hist.column('compiles'))} traces"
        be.free(model)
        return secs, comp, *out, {**hist.rate(), 'peak_flops': hist.get('peak_flops')}
    return run

def worker(name):
    "Serve folds of `name` over stdin/stdout: 'FOLD i' in, 'RESULT {...}' out"
    warnings.filterwarnings('ignore')
    _start(name)
    tr, te, fold = _data()
    run = (_trainer(name, tr, te) if name.startswith('trainer') else _kerashub(tr, te) if name == 'kerashub' else _ours(name, tr, te, fold))
    versions = {m: __import__(m).__version__ for m in ('torch', 'transformers', 'torch_xla', 'keras', 'keras_hub', 'jax', 'tensorflow', 'accelerate')
                if m in sys.modules}
    print('READY ' + json.dumps(versions), flush=True)
    for line in sys.stdin:
        if not line.startswith('FOLD '): break
        import numpy as np
        i = int(line.split()[1])
        secs, comp, p_va, p_te, rate = run(np.flatnonzero(fold != i), np.flatnonzero(fold == i))
        print('RESULT ' + json.dumps(dict(secs=secs, comp=comp, p_va=np.asarray(p_va).tolist(), p_te=np.asarray(p_te).tolist(), rate=rate)), flush=True)

# ------------------------------------------------------------------ the driver
class Worker:
    def __init__(self, name, env):
        self.name = name
        self.p = subprocess.Popen([sys.executable, __file__, 'worker', name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env)
        self.versions = json.loads(self._read('READY '))
    def _read(self, tag):
        for line in self.p.stdout:
            if line.startswith(tag): return line[len(tag):]
        raise RuntimeError(f'{self.name}: the worker ended without {tag.strip()} (exit {self.p.wait()})')
    def fold(self, i):
        self.p.stdin.write(f'FOLD {i}\n'); self.p.stdin.flush()
        return json.loads(self._read('RESULT '))
    def close(self):
        try: self.p.stdin.write('END\n'); self.p.stdin.close()
        except (BrokenPipeError, ValueError): pass
        self.p.wait(60)

def main(names=tuple(CONTENDERS)):
    "Measure every contender in `names`, fold by fold; the raw figures go to bench/results/trainer_runs.json, then the report"
    import datetime, numpy as np
    from common import RESULTS, _write, machine
    cache = tempfile.mkdtemp(prefix='tpututor-bench-compile-')   # first-run figures: the compile caches start empty
    env = {**os.environ, 'TPUTUTOR_COMPILE_CACHE': cache, 'TPUTUTOR_PROGRESS': 'lines'}
    tr, te, fold = _data()
    workers = {k: Worker(k, env) for k in names}   # started one after the other: start-up is not timed
    runs = {k: dict(secs=[], comp=[], p_va={}, test=[], rate=[]) for k in names}
    try:
        for i in range(FOLDS):
            for k, w in workers.items():
                res = w.fold(i); r = runs[k]
                r['secs'].append(res['secs']); r['comp'].append(res['comp']); r['p_va'][i] = res['p_va']
                r['test'].append(res['p_te']); r['rate'].append(res['rate'])
                print(f"fold {i}: {CONTENDERS[k][0]}: {res['secs']:.1f}s, compiles {res['comp']}", flush=True)
    finally:
        for w in workers.values(): w.close()
    import shutil; shutil.rmtree(cache, ignore_errors=True)
    load = ', '.join(f'{x:.1f}' for x in os.getloadavg())
    rec = dict(date=str(datetime.date.today()), machine=machine(), load=load, runs=runs,
               versions={m: v for w in workers.values() for m, v in w.versions.items()})
    _write(RESULTS / 'trainer_runs.json', json.dumps(rec) + '\n')
    return report_runs(rec)

def report_runs(rec=None):
    "bench/results/trainer.{md,json} from the raw figures (default: bench/results/trainer_runs.json)"
    import numpy as np
    from common import RESULTS
    from tpututor.config import row_lengths
    from tpututor.kfold import score
    from tpututor.meter import model_dims, train_flops
    from tpututor.models.hub import resolve_model
    from tpututor.encoding import encode, choose_buckets, assign_buckets, bucket_batches
    from transformers import AutoConfig
    rec = rec or json.loads((RESULTS / 'trainer_runs.json').read_text())
    tr, te, fold = _data()
    y, y_te = tr.label.values, te.label.values
    runs = {k: dict(r, oof=np.zeros((len(tr), 2), np.float32), test=[np.asarray(t) for t in r['test']]) for k, r in rec['runs'].items()}
    for r in runs.values():
        for i, p in r['p_va'].items(): r['oof'][fold == int(i)] = np.asarray(p)
    versions = rec['versions']
    n_rows = [int((fold != i).sum()) // BATCH * BATCH for i in range(FOLDS)]   # rows trained per fold (full batches)
    path = resolve_model('minilm'); dims = model_dims(AutoConfig.from_pretrained(path))
    enc = encode(path, tr.text.tolist(), max_len=MAX_LEN); L = row_lengths(enc)
    peak = next((x['peak_flops'] for k in ('torch',) if k in runs for x in runs[k]['rate'] if x.get('peak_flops')), None)
    for k in runs:   # the padded anchors' MFU by the same meter, against the native torch device's measured peak
        if peak and k in ('trainer_padded', 'kerashub', 'trainer_xla'):
            for j, x in enumerate(runs[k]['rate']): x['mfu'] = n_rows[j] * train_flops(dims, MAX_LEN, MAX_LEN) / runs[k]['secs'][j] / peak
    for k, r in runs.items():
        r['held'] = score('classification', y_te, np.mean(r['test'], 0))['accuracy']
        r['oof_acc'] = score('classification', y, r['oof'])['accuracy']
        r['eps'] = sum(n_rows) / sum(r['secs'])
        r['steady'] = max(n_rows[i] / r['secs'][i] for i in range(1, FOLDS)) if FOLDS > 1 else r['eps']
        mfu = lambda key: (sum(x[key] * s for x, s in zip(r['rate'], r['secs'])) / sum(r['secs'])
                           if all(x.get(key) is not None for x in r['rate']) else None)
        r['mfu'] = mfu('mfu')
    anchors = [k for k in runs if CONTENDERS[k][1]]
    base = max(anchors, key=lambda k: runs[k]['eps']) if anchors else None
    ours = [k for k in runs if k in OURS]
    best = max(ours, key=lambda k: runs[k]['eps']) if ours else None
    pct = lambda v: '-' if v is None else f'{v:.1%}'
    B = runs[base] if base else None
    rows = [{'run': CONTENDERS[k][0] + (' (anchor)' if CONTENDERS[k][1] else ''), 'train seconds per fold': ', '.join(f'{s:.0f}' for s in r['secs']),
             'compiles per fold': ', '.join(map(str, r['comp'])), 'examples/s': r['eps'],
             'vs best anchor': f"{r['eps'] / B['eps']:.2f}x" if B else '-', 'examples/s, best later fold': r['steady'],
             'vs best anchor, best later fold': f"{r['steady'] / B['steady']:.2f}x" if B else '-',
             'MFU (measured peak)': pct(r['mfu']), 'held-out accuracy': f"{r['held']:.3f}", 'out-of-fold accuracy': f"{r['oof_acc']:.3f}"}
            for k, r in runs.items()]
    cols = list(rows[0])
    bl = choose_buckets(L, BUCKETS, max_len=MAX_LEN)
    plan = bucket_batches(L, [MAX_LEN], BATCH, shuffle=True, seed=0, drop_last=True)   # random batches, as the Trainer's sampler draws them
    dyn = np.concatenate([np.full(len(idx), L[idx].max()) for _, idx in plan])
    lens = dict(buckets=float(np.asarray(bl)[assign_buckets(L, bl)].mean()), dynamic=float(dyn.mean()))
    per_row = lambda lengths: float(np.mean([train_flops(dims, p, p) for p in lengths]))
    cut = dict(padded=train_flops(dims, MAX_LEN, MAX_LEN) / per_row(np.asarray(bl)[assign_buckets(L, bl)]),
               dynamic=per_row(dyn) / per_row(np.asarray(bl)[assign_buckets(L, bl)]))
    n_shapes = len({int(x) for x in dyn})
    def why_not(anchor):
        if anchor == 'trainer_dynamic':
            return (f"the fastest anchor pads each batch to its longest row, so the buckets' FLOPs cut against it is only {cut['dynamic']:.2f}x "
                    f"(against padding to {MAX_LEN}: {cut['padded']:.2f}x), and on a CPU its many shapes cost eager PyTorch nothing. What is left "
                    "is the loop and the head. Where a compiler sees each batch (a TPU), dynamic padding would compile almost every batch.")
        return "the first fold's compiles and the small matrices of short buckets cost on a CPU what the buckets save."
    goals, lines = [], []
    if base and best:
        rb = runs[best]; x = rb['eps'] / B['eps']; met = bool(x >= 2 and rb['held'] >= B['held'])
        goals.append(dict(comparison=f'CPU k-fold examples/s, all folds with compiles: the fastest tpututor backend ({CONTENDERS[best][0]}) vs the fastest anchor ({CONTENDERS[base][0]}), at equal or better held-out accuracy',
                          measured=f"{x:.2f}x, held-out {rb['held']:.3f} vs {B['held']:.3f}", goal='>= 2x and held-out >= the anchor\'s', met=met))
        lines.append(f"- **Goal**: the fastest tpututor backend, {CONTENDERS[best][0]}, against the fastest anchor, {CONTENDERS[base][0]}: "
                     f"**{x:.2f}x** the examples/s over all folds with compiles (goal >= 2x), held-out accuracy {rb['held']:.3f} vs "
                     f"{B['held']:.3f}: goal {'met' if met else '**not met**'}." + ('' if met else
                     f" Why: {why_not(base)}"))
        for k in ours:
            goals.append(dict(comparison=f'CPU k-fold examples/s, all folds with compiles: {CONTENDERS[k][0]} vs the fastest anchor',
                              measured=f"{runs[k]['eps'] / B['eps']:.2f}x", goal='reported', met=None))
        if 'keras' in runs and 'kerashub' in runs:
            goals.append(dict(comparison='CPU k-fold examples/s, all folds with compiles: tpututor `keras` vs its anchor, KerasHub TextClassifier.fit',
                              measured=f"{runs['keras']['eps'] / runs['kerashub']['eps']:.2f}x", goal='reported', met=None))
    if FOLDS > 1:
        for k, r in runs.items():
            extra = r['secs'][0] - n_rows[0] / r['steady']
            lines.append(f"- {CONTENDERS[k][0]}: first fold {r['secs'][0]:.0f}s (compiles: {r['comp'][0]}), " +
                         (f"{extra:.0f}s more than at its best later fold's rate" if extra > 0 else "no slower than its best later fold"))
    lines.append(f"- What the padding costs here: rows hold {L.mean():.1f} tokens on average; padded to {MAX_LEN}, a row costs {cut['padded']:.2f}x "
                 f"the training FLOPs of {BUCKETS} length buckets ({', '.join(map(str, bl))}: {lens['buckets']:.1f} tokens per row); dynamic "
                 f"padding (each batch to its longest row: {lens['dynamic']:.1f} per row) costs {cut['dynamic']:.2f}x, at the price of a new shape "
                 f"almost every batch ({n_shapes} shapes in an epoch here): free in eager PyTorch on a CPU, a compile each where a compiler "
                 "sees the batch (a TPU, `torch.compile`), which is why the TPU guides pad to max_length.")
    body = table(rows, cols) + '\n\n' + '\n'.join(lines)
    body += (f"\n\n{FOLDS} folds of {N_TRAIN} Rotten Tomatoes snippets (stratified, seed 42), held-out set of {N_TEST} others; pretrained "
             f"MiniLM (all-MiniLM-L6-v2), max length {MAX_LEN}, batch {BATCH}, 1 epoch, lr 5e-5 with 10% linear warm-up then linear decay "
             f"(KerasHub: linear decay, it has no warm-up), weight decay 0.01, clipping 1.0, fp32, one CPU device per contender, each in a "
             f"process of its own; {', '.join(f'{m} {v}' for m, v in sorted(versions.items()))}. Training time per fold excludes prediction "
             "and model loading. Compiles: tpututor's from each backend's `compile_stats` (with the seconds spent), the XLA Trainer's from "
             "torch_xla's metrics, `tf`'s the traces of its train function; the native Trainer and KerasHub's eager-on-JAX classifier are "
             "not counted ('-'). MFU: training FLOPs over the native torch device's measured matmul peak (the `torch` backend's), the padded "
             "anchors' at their padded length; dynamic padding has no single length ('-').")
    from common import _write
    text = (f"## k-fold fine-tune on a CPU: every backend vs the anchors users pick\n\n{body}\n\nMeasured {rec['date']} on {rec['machine']}; "
            f"load average at the end (1, 5, 15 min): {rec['load']}. Reproduce: `./run.sh bench trainer` (the report alone, from the "
            "recorded figures: `python bench/bench_trainer.py report`)\n")
    print(text)
    _write(RESULTS / 'trainer.md', text)
    _write(RESULTS / 'trainer.json', json.dumps([dict(benchmark='trainer', **g, date=rec['date'], machine=rec['machine'], how='./run.sh bench trainer')
                                                 for g in goals], indent=1) + '\n')
    return {k: r['eps'] / B['eps'] for k, r in runs.items()} if B else {}

if __name__ == '__main__':
    if sys.argv[1:2] == ['worker']: worker(sys.argv[2])
    elif sys.argv[1:2] == ['report']: report_runs()
    else: main(tuple(sys.argv[1:]) or tuple(CONTENDERS))
