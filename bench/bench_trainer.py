"""Time to a target accuracy: every tpututor backend against the anchors a user would pick on this machine, each at
its best, on the same k-fold work (as MLPerf times training to a quality target).

The work: the pretrained MiniLM fine-tuned on Rotten Tomatoes snippets, the same rows and folds for everyone, k folds
trained and the fold ensemble (mean probabilities) scored on held-out rows nobody trains on. A contender's **time to
target** is the wall time of its shortest k-fold run, 1, 2, ... up to `MAX_EPOCHS` epochs, whose fold ensemble reaches
`TARGET` held-out accuracy (or, where none does, its best within `MAX_EPOCHS`). Inside the clock, for everyone:
tokenizing the rows, building each fold's model from the checkpoint, every compile (the compile caches start empty),
training, and predicting the held-out rows. Outside it: starting Python and importing the framework (reported).
Each run is a fresh process, as a user's job is; the runs of one epoch count are interleaved (every contender's
1-epoch run, then the 2-epoch runs of those that have not reached the target, ...), so that load from other work
on the shared cores hits all alike.

The same for all: batch, learning rate and schedule (linear warm-up over 10% of the steps, then linear decay to 0 over
the run), weight decay 0.01 (not on biases and LayerNorm), gradient clipping 1.0, fp32, seed, maximum length, and
every contender computes on all the machine's cores (`THREADS`).

The anchors, each at its best on a CPU:
- the Hugging Face `Trainer` on native PyTorch with its own collator (dynamic padding: each batch padded to its
  longest row), and the same with `group_by_length=True` (batches of rows of similar length: its remedy for padding);
- KerasHub's `TextClassifier` (Keras 3 on JAX) fed the way tpututor feeds its backends: the rows tokenized once and
  batched in the same length buckets, chosen once for the run.

    ./run.sh bench trainer                       every contender, recorded
    python bench/bench_trainer.py NAME ...       some of them (CONTENDERS' keys), printed, not recorded
    python bench/bench_trainer.py --size 400,200,2 NAME ...   a trial on 400 rows, 200 held out, at most 2 epochs (not recorded)
    python bench/bench_trainer.py report         the report again from bench/results/trainer_runs.json
    python bench/bench_trainer.py --smoke        every contender on a tiny checkpoint and a few rows, 2 folds, 1 epoch, each in the
                                                 smoke run's process of its framework (bench/run.py)
"""
import json, os, subprocess, sys, tempfile, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import table, bench_model, smoke_alone, SMOKE, THREADS

N_TRAIN, N_TEST, FOLDS, MAX_LEN, BUCKETS, BATCH, MAX_EPOCHS, TARGET = 2000, 1000, 3, 64, 4, 16, 3, 0.75
if SMOKE: N_TRAIN, N_TEST, FOLDS, BUCKETS, MAX_EPOCHS = 96, 32, 2, 2, 1
if os.environ.get('TPUTUTOR_TRAINER_SIZE'):   # --size ROWS,HELD_OUT,MAX_EPOCHS: a trial on fewer rows (not recorded)
    N_TRAIN, N_TEST, MAX_EPOCHS = map(int, os.environ['TPUTUTOR_TRAINER_SIZE'].split(','))
CONTENDERS = {   # name -> (what it is, anchor?, framework group: the contenders a smoke run puts in one process)
    'trainer_dynamic': ('HF Trainer, native torch, dynamic padding (its default collator)', True, 'torch'),
    'trainer_grouped': ('HF Trainer, native torch, dynamic padding, group_by_length=True', True, 'torch'),
    'kerashub':        (f'KerasHub TextClassifier, Keras 3 on JAX, fed {BUCKETS} length buckets as tpututor', True, 'kerashub'),
    'torch':           (f'tpututor `torch`: native PyTorch, {BUCKETS} length buckets', False, 'torch'),
    'torch_pack':      ('tpututor `torch`: native PyTorch, packed rows (--pack)', False, 'torch'),
    'keras':           (f'tpututor `keras`: Keras 3 on JAX, {BUCKETS} length buckets', False, 'jax'),
    'keras_pack':      ('tpututor `keras`: Keras 3 on JAX, packed rows (--pack)', False, 'jax'),
    'tf':              (f'tpututor `tf`: TensorFlow + tf-keras, {BUCKETS} length buckets', False, 'tf'),
    'xla':             (f'tpututor `xla`: PyTorch/XLA, {BUCKETS} length buckets', False, 'xla'),
}
SCHEDULE = dict(lr=5e-5, warmup=0.1, weight_decay=0.01, clip=1.0, seed=42)

# ------------------------------------------------------------------ a run: one contender, k folds of E epochs, in this process
def _start(group):
    "Framework start-up for a process of `group`, before anything imports transformers; every contender on all cores"
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    os.environ['OMP_NUM_THREADS'] = str(THREADS)
    if group == 'xla':
        from tpututor.devices.frameworks import import_xla; import_xla()
    elif group == 'jax':
        os.environ['USE_TORCH_XLA'] = '0'
        from tpututor.devices.jax import import_keras; import_keras('jax')
    elif group == 'kerashub':   # KerasHub's classifier takes its batches through tf.data: TensorFlow joins its process, as for its users
        os.environ['USE_TORCH_XLA'], os.environ['KERAS_BACKEND'] = '0', 'jax'
    elif group == 'tf':
        from tpututor.devices.frameworks import import_tf; import_tf()
    else:
        os.environ['USE_TORCH_XLA'] = os.environ['USE_TF'] = '0'   # native torch: accelerate must not reach for torch_xla
        import torch; torch.set_num_threads(THREADS)

def model_path()->str:
    "The pretrained MiniLM; in a smoke run the tiny random BERT checkpoint the driver made"
    from tpututor.models.hub import resolve_model
    m = bench_model()
    return resolve_model(m) if m == 'minilm' else m

def data():
    "Training rows, held-out rows, and each training row's fold: the same for every contender"
    from tpututor.data import rotten_tomatoes
    from tpututor.splits import make_folds
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    tr, te = rt.iloc[:N_TRAIN], rt.iloc[N_TRAIN:N_TRAIN + N_TEST]
    return tr, te, make_folds(len(tr), FOLDS, tr.label.values, seed=SCHEDULE['seed'])

def _trainer(name, epochs, path, tr, te, fold):
    "The k folds with the Hugging Face Trainer, as a user writes it; per fold its seconds, and the held-out probabilities"
    import numpy as np, torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments, DataCollatorWithPadding
    tok = AutoTokenizer.from_pretrained(path)
    enc, enc_te = (tok(list(t), truncation=True, max_length=MAX_LEN) for t in (tr.text, te.text))   # no padding: the collator pads each batch
    class Rows(torch.utils.data.Dataset):
        def __init__(self, enc, idx, labels): self.enc, self.idx, self.y = enc, idx, labels
        def __len__(self): return len(self.idx)
        def __getitem__(self, i):
            j = self.idx[i]
            return {'input_ids': self.enc['input_ids'][j], 'attention_mask': self.enc['attention_mask'][j], 'labels': int(self.y[j])}
    out = []
    for k in range(FOLDS):
        t0 = time.perf_counter()
        torch.manual_seed(SCHEDULE['seed'])
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=BATCH, per_device_eval_batch_size=2 * BATCH,
                                 num_train_epochs=epochs, learning_rate=SCHEDULE['lr'], warmup_ratio=SCHEDULE['warmup'], lr_scheduler_type='linear',
                                 weight_decay=SCHEDULE['weight_decay'], max_grad_norm=SCHEDULE['clip'], seed=SCHEDULE['seed'],
                                 group_by_length=name == 'trainer_grouped', report_to=[], save_strategy='no', eval_strategy='no',
                                 logging_strategy='no', dataloader_drop_last=True, disable_tqdm=True, use_cpu=True)
        t = Trainer(model=model, args=args, train_dataset=Rows(enc, np.flatnonzero(fold != k), tr.label.values), data_collator=DataCollatorWithPadding(tok))
        t1 = time.perf_counter(); t.train(); t2 = time.perf_counter()
        t.args.dataloader_drop_last = False   # predict every held-out row
        logits = t.predict(Rows(enc_te, np.arange(len(te)), te.label.values)).predictions
        out.append(dict(fold_s=time.perf_counter() - t0, train_s=t2 - t1, compiles='-', prob=torch.softmax(torch.from_numpy(logits).float(), -1).numpy()))
    return out

def _kerashub(epochs, path, tr, te, fold):
    "The k folds with KerasHub's TextClassifier on pre-tokenized rows in tpututor's length buckets, fixed for the run, through tf.data"
    import numpy as np, keras, keras_hub, tensorflow as tf
    from tpututor.encoding import encode, choose_buckets, bucket_batches
    enc, enc_te = encode(path, tr.text.tolist(), max_len=MAX_LEN), encode(path, te.text.tolist(), max_len=MAX_LEN)
    buckets = choose_buckets(np.concatenate([enc.lengths, enc_te.lengths]), BUCKETS, max_len=MAX_LEN)
    spec = {k: tf.TensorSpec((None, None), tf.int32) for k in ('token_ids', 'padding_mask', 'segment_ids')}
    def batches(e, idx, y=None, train=True):   # one bucket's rows per batch, reshuffled every epoch, as tpututor batches them
        epoch = [0]
        plan = lambda: bucket_batches(e.lengths[idx], buckets, BATCH if train else 2 * BATCH, shuffle=train, seed=SCHEDULE['seed'] + epoch[0], drop_last=train)
        def gen():
            for n, rows in plan():
                j = idx[rows]
                x = dict(token_ids=e.input_ids[j, :n], padding_mask=e.attention_mask[j, :n], segment_ids=np.zeros((len(j), n), np.int32))
                yield (x, y[j]) if y is not None else x
            epoch[0] += 1
        sig = (spec, tf.TensorSpec((None,), tf.int64)) if y is not None else spec
        return tf.data.Dataset.from_generator(gen, output_signature=sig), plan
    class Linear(keras.optimizers.schedules.LearningRateSchedule):   # warm-up, then linear decay to 0 (the Trainer's 'linear')
        def __init__(self, total): self.total, self.warm = float(total), float(int(total * SCHEDULE['warmup']))
        def __call__(self, step):
            s = keras.ops.cast(step, 'float32')
            return keras.ops.where(s < self.warm, SCHEDULE['lr'] * (s + 1) / max(self.warm, 1.0),
                                   SCHEDULE['lr'] * keras.ops.maximum(0.0, (self.total - s) / max(1.0, self.total - self.warm)))
    out = []
    for k in range(FOLDS):
        t0 = time.perf_counter()
        keras.utils.set_random_seed(SCHEDULE['seed'])
        clf = keras_hub.models.TextClassifier.from_preset(path, num_classes=2, preprocessor=None)
        train, plan = batches(enc, np.flatnonzero(fold != k), tr.label.values.astype(np.int64))
        opt = keras.optimizers.AdamW(Linear(epochs * len(plan())), weight_decay=SCHEDULE['weight_decay'], global_clipnorm=SCHEDULE['clip'])
        opt.exclude_from_weight_decay(var_names=['bias', 'layer_norm', 'layernorm', 'LayerNorm'])
        clf.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        t1 = time.perf_counter(); clf.fit(train, epochs=epochs, verbose=0); t2 = time.perf_counter()
        pred, plan = batches(enc_te, np.arange(len(te)), train=False)
        order = np.concatenate([rows for _, rows in plan()])
        logits = clf.predict(pred, verbose=0)
        prob = np.empty((len(te), 2), np.float32); prob[order] = keras.ops.convert_to_numpy(keras.ops.softmax(logits, -1))
        out.append(dict(fold_s=time.perf_counter() - t0, train_s=t2 - t1, compiles='-', prob=prob))
    return out

def _ours(name, epochs, path, tr, te, fold):
    "The k folds with a tpututor backend, kept over the folds as `run_kfold` keeps it, the run's buckets chosen once"
    import numpy as np
    from tpututor.backends.registry import get_backend
    from tpututor.config import TrainConfig
    from tpututor.kfold import fixed_shapes, compile_cost
    from tpututor.encoding import encode, load_tokenizer
    tok = load_tokenizer(path)
    enc, enc_te = encode(tok, tr.text.tolist(), max_len=MAX_LEN), encode(tok, te.text.tolist(), max_len=MAX_LEN)
    packed = name.endswith('_pack')
    be = get_backend(name.removesuffix('_pack'), verbose=False)
    s = SCHEDULE
    cfg = TrainConfig(model=path, max_len=MAX_LEN, buckets=0 if packed else BUCKETS, pack=packed, batch_size=BATCH, epochs=epochs, lr=s['lr'], warmup=s['warmup'],
                      weight_decay=s['weight_decay'], grad_clip=s['clip'], seed=s['seed'])
    cfg = fixed_shapes(cfg, enc, enc_te, fold, BATCH * be.replicas())
    y, out = tr.label.values, []
    for k in range(FOLDS):
        stats = be.compile_stats if be.compile_stats() is not None else None   # eager torch compiles nothing
        c0, t0 = stats() if stats else None, time.perf_counter()
        model, hist = be.fit(cfg, enc[np.flatnonzero(fold != k)], y[fold != k])
        t1 = time.perf_counter()
        prob = be.predict(cfg, model, enc_te)
        comp = compile_cost(c0, stats())['compiles'] if stats else sum(hist.column('compiles'))
        be.done_with(model)
        out.append(dict(fold_s=time.perf_counter() - t0, train_s=float(sum(hist.column('seconds'))), build_s=t1 - t0 - float(sum(hist.column('seconds'))),
                        compiles=comp, prob=np.asarray(prob),
                        trained=round(sum(r['examples_per_s'] * r['seconds'] for r in hist.records))))   # texts, packed or not
    return out

def run(name, epochs)->dict:
    "One k-fold run of contender `name` with `epochs` epochs in this process (its framework started): the clock and the scores"
    import numpy as np
    from tpututor.splits import score
    tr, te, fold = data()
    path = model_path()
    t0 = time.perf_counter()
    fn = {'trainer_dynamic': lambda: _trainer(name, epochs, path, tr, te, fold), 'trainer_grouped': lambda: _trainer(name, epochs, path, tr, te, fold),
          'kerashub': lambda: _kerashub(epochs, path, tr, te, fold)}.get(name, lambda: _ours(name, epochs, path, tr, te, fold))
    folds = fn()
    wall = time.perf_counter() - t0
    prob = np.mean([f.pop('prob') for f in folds], 0)
    # rows trained: full batches, or what a tpututor fit counted (a packed step holds about BATCH texts)
    rows = (sum(f['trained'] for f in folds) if all('trained' in f for f in folds)
            else sum(int((fold != k).sum()) // BATCH * BATCH for k in range(FOLDS)) * epochs)
    return dict(name=name, epochs=epochs, wall_s=round(wall, 2), folds=[{k: (round(v, 2) if isinstance(v, float) else v) for k, v in f.items()} for f in folds],
                train_rows=rows, examples_per_s=rows / sum(f['train_s'] for f in folds),
                held_out=score('classification', te.label.values, prob)['accuracy'], predicted_fresh=float((prob.argmax(1) == 1).mean()))

def worker(names, epochs):
    "Serve runs in this process: contenders `names` (one framework group), `epochs` epochs each; prints READY, then RESULT per run"
    t0 = time.perf_counter()
    warnings.filterwarnings('ignore')
    _start(CONTENDERS[names[0]][2])
    import numpy, transformers   # the framework and transformers imported outside the clock
    print('READY ' + json.dumps(dict(import_s=round(time.perf_counter() - t0, 2))), flush=True)
    for name in names: print('RESULT ' + json.dumps(run(name, epochs)), flush=True)

# ------------------------------------------------------------------ the driver
def start(names, epochs, env)->list:
    "Runs of `names` (one process) with `epochs` epochs: their results, each with the process's import seconds"
    if SMOKE:   # a smoke run: in this process, whose frameworks the smoke run started (`smoke`)
        os.environ.update(env)
        return [dict(run(name, epochs), import_s=0.0) for name in names]
    p = subprocess.run([sys.executable, __file__, 'worker', ','.join(names), str(epochs)], capture_output=True, text=True, env=env)
    lines = p.stdout.splitlines()
    ready = [json.loads(l[6:]) for l in lines if l.startswith('READY ')]
    res = [json.loads(l[7:]) for l in lines if l.startswith('RESULT ')]
    if p.returncode or len(res) != len(names):
        raise RuntimeError(f"{names}, {epochs} epoch(s): the run failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-5000:]}")
    return [dict(r, import_s=ready[0]['import_s']) for r in res]

def main(names=tuple(CONTENDERS), record=True):
    "Every contender in `names`, epoch count by epoch count until its ensemble reaches the target; bench/results/trainer_runs.json, then the report"
    from common import RESULTS, _write, provenance, track_imports
    track_imports(); model_path()   # a smoke run's tiny checkpoint, made once for all its processes
    cache = tempfile.mkdtemp(prefix='tpututor-bench-compile-')   # first-run figures: every compile cache starts empty
    env = {**os.environ, 'TPUTUTOR_COMPILE_CACHE': cache, 'TPUTUTOR_PROGRESS': 'lines'}
    runs, left = [], list(names)
    groups = lambda ns: [[n for n in ns if CONTENDERS[n][2] == g] for g in dict.fromkeys(CONTENDERS[n][2] for n in ns)] if SMOKE else [[n] for n in ns]
    for e in range(1, MAX_EPOCHS + 1):
        for g in groups(left):
            for r in start(g, e, env):
                runs.append(r)
                print(f"{e} epoch(s): {CONTENDERS[r['name']][0]}: {r['wall_s']:.0f}s, held-out accuracy {r['held_out']:.3f}, "
                      f"{r['examples_per_s']:.1f} examples/s", flush=True)
        left = [n for n in left if not any(r['name'] == n and r['held_out'] >= TARGET for r in runs)]
        if not left: break
    import shutil; shutil.rmtree(cache, ignore_errors=True)
    if SMOKE and (RESULTS / 'trainer_runs.json').exists():   # a smoke run's groups run one after the other: each adds its contenders' runs
        runs = [r for r in json.loads((RESULTS / 'trainer_runs.json').read_text())['runs'] if r['name'] not in names] + runs
    rec = dict(runs=runs, settings=dict(rows=N_TRAIN, held_out=N_TEST, folds=FOLDS, max_len=MAX_LEN, buckets=BUCKETS, batch=BATCH,
                                        max_epochs=MAX_EPOCHS, target=TARGET, threads=THREADS, **SCHEDULE),
               load=', '.join(f'{x:.1f}' for x in os.getloadavg()), **provenance('trainer'))
    if not record: return report_runs(rec, write=False)
    _write(RESULTS / 'trainer_runs.json', json.dumps(rec, indent=1) + '\n')
    return report_runs(rec)

def best_runs(rec)->dict:
    "Each contender's run that counts: its first to reach the target, else its best held-out accuracy"
    out = {}
    for r in rec['runs']:
        b = out.get(r['name'])
        reached = lambda x: x is not None and x['held_out'] >= rec['settings']['target']
        if b is None or (not reached(b) and (reached(r) or r['held_out'] > b['held_out'])): out[r['name']] = r
    return out

def _why(o, a, target)->str:
    "Why the fastest tpututor backend `o` takes the time it takes against the fastest anchor `a`, from their figures"
    per_epoch = (a['wall_s'] / a['epochs']) / (o['wall_s'] / o['epochs'])
    speed = o['examples_per_s'] / a['examples_per_s']
    return (f"per epoch of k-fold work (tokenizing, building, compiling, training and predicting included) the anchor takes "
            f"{per_epoch:.2f}x tpututor's time, and trains at {1 / speed:.2f}x its examples/s; it needs {a['epochs']} epoch(s) "
            f"for a held-out accuracy of {a['held_out']:.3f} where tpututor needs {o['epochs']} for {o['held_out']:.3f} (target {target}). "
            f"The time ratio is the product of the two.")

def report_runs(rec=None, write=True):
    "bench/results/trainer.{md,json} from the raw figures (default: bench/results/trainer_runs.json)"
    from common import RESULTS, _write
    rec = rec or json.loads((RESULTS / 'trainer_runs.json').read_text())
    st, best = rec['settings'], best_runs(rec)
    T = st['target']
    hit = lambda r: r['held_out'] >= T
    anchors = [k for k in best if CONTENDERS[k][1]]
    ours = [k for k in best if not CONTENDERS[k][1]]
    key = lambda k: (not hit(best[k]), best[k]['wall_s'] if hit(best[k]) else -best[k]['held_out'])   # reached first, then the fastest
    A = min(anchors, key=key) if anchors else None
    O = min(ours, key=key) if ours else None
    eps_anchor = max((best[k]['examples_per_s'] for k in anchors), default=None)
    rows = []
    for k, r in best.items():
        per_e = {x['epochs']: f"{x['held_out']:.3f}" for x in rec['runs'] if x['name'] == k}
        rows.append({'contender': CONTENDERS[k][0] + (' (anchor)' if CONTENDERS[k][1] else ''),
                     f'time to {T} (s)': f"{r['wall_s']:.0f}" if hit(r) else f"not reached in {st['max_epochs']} epochs",
                     'epochs': r['epochs'], 'vs best anchor': f"{best[A]['wall_s'] / r['wall_s']:.2f}x" if A and hit(r) and hit(best[A]) else '-',
                     'held-out accuracy by epochs': ', '.join(f'{e}: {v}' for e, v in sorted(per_e.items())),
                     'predicted fresh': f"{r['predicted_fresh']:.0%}", 'examples/s': f"{r['examples_per_s']:.1f}",
                     'examples/s vs best anchor': f"{r['examples_per_s'] / eps_anchor:.2f}x" if eps_anchor else '-',
                     'compiles per fold': ', '.join(str(f['compiles']) for f in r['folds']), 'import s': r['import_s']})
    goals, lines = [], []
    if A and O:
        a, o = best[A], best[O]
        if hit(o) and hit(a):
            x = a['wall_s'] / o['wall_s']; met = bool(x >= 2)
            measured, verdict = f"{x:.2f}x ({o['wall_s']:.0f}s vs {a['wall_s']:.0f}s)", f"**{x:.2f}x** less time"
        else:
            met = bool(hit(o) and not hit(a))
            measured = (f"the anchor did not reach {T} in {st['max_epochs']} epochs (best {a['held_out']:.3f}); tpututor in {o['wall_s']:.0f}s"
                        if met else f"tpututor did not reach {T} (best {o['held_out']:.3f})")
            verdict = measured
        goals.append(dict(comparison=f"CPU time to {T} held-out accuracy (k-fold ensemble, MiniLM): the fastest tpututor backend ({CONTENDERS[O][0]}) "
                                     f"vs the fastest anchor ({CONTENDERS[A][0]})", measured=measured, goal='>= 2x less time', met=met))
        lines.append(f"- **Goal**: time to {T} held-out accuracy, {CONTENDERS[O][0]} against {CONTENDERS[A][0]}: {verdict} (goal >= 2x): "
                     f"{'met' if met else '**not met**'}." + ('' if met or not (hit(o) and hit(a)) else ' Why: ' + _why(o, a, T)))
        for k in ours:
            r = best[k]
            goals.append(dict(comparison=f'CPU time to {T}: {CONTENDERS[k][0]} vs the fastest anchor',
                              measured=f"{a['wall_s'] / r['wall_s']:.2f}x" if hit(r) and hit(a) else ('reached' if hit(r) else f"best {r['held_out']:.3f}"),
                              goal='reported', met=None))
            goals.append(dict(comparison=f'CPU training examples/s: {CONTENDERS[k][0]} vs the fastest anchor\'s', measured=f"{r['examples_per_s'] / eps_anchor:.2f}x",
                              goal='reported', met=None))
        for b in ('torch', 'keras'):   # packed rows against the same backend's buckets, run for run at each epoch count
            pairs = [(r, u) for r in rec['runs'] if r['name'] == f'{b}_pack'
                     for u in rec['runs'] if u['name'] == b and u['epochs'] == r['epochs']]
            if not pairs: continue
            r, u = max(pairs, key=lambda q: q[0]['epochs'])
            x, dh = r['examples_per_s'] / u['examples_per_s'], r['held_out'] - u['held_out']
            goals.append(dict(comparison=f'CPU training examples/s, {r["epochs"]} epoch(s): {CONTENDERS[b + "_pack"][0]} vs '
                                         f'{CONTENDERS[b][0]}', measured=f"{x:.2f}x ({r['examples_per_s']:.1f} vs {u['examples_per_s']:.1f})",
                              goal='>= 1.1x', met=bool(x >= 1.1)))
            goals.append(dict(comparison=f'held-out accuracy, {r["epochs"]} epoch(s): {CONTENDERS[b + "_pack"][0]} minus '
                                         f'{CONTENDERS[b][0]}', measured=f"{dh:+.3f} ({r['held_out']:.3f} vs {u['held_out']:.3f})",
                              goal='within 0.015', met=bool(abs(dh) <= 0.015)))
            lines.append(f"- **Packed rows** ({b}, {r['epochs']} epoch(s)): {x:.2f}x the examples/s of {BUCKETS} length buckets "
                         f"(goal >= 1.1x: {'met' if x >= 1.1 else '**not met**'}), held-out {dh:+.3f} "
                         f"(goal within 0.015: {'met' if abs(dh) <= 0.015 else '**not met**'}).")
        if 'keras' in best and 'kerashub' in best and hit(best['keras']) and hit(best['kerashub']):
            goals.append(dict(comparison=f'CPU time to {T}: tpututor `keras` vs KerasHub TextClassifier fed the same way',
                              measured=f"{best['kerashub']['wall_s'] / best['keras']['wall_s']:.2f}x", goal='reported', met=None))
    body = (table(rows, list(rows[0])) + '\n\n' + '\n'.join(lines) +
            f"\n\n{st['folds']} folds of {st['rows']} Rotten Tomatoes snippets (stratified, seed {st['seed']}), the fold ensemble scored on "
            f"{st['held_out']} others; pretrained MiniLM (all-MiniLM-L6-v2), at most {st['max_len']} tokens, batch {st['batch']}, lr {st['lr']} "
            f"with {st['warmup']:.0%} linear warm-up then linear decay to 0, weight decay {st['weight_decay']}, clipping {st['clip']}, fp32, "
            f"{st['threads']} compute threads, each run a fresh process. A contender's time is the wall time of its shortest run, of "
            f"1 to {st['max_epochs']} epochs, whose ensemble reaches {T}: tokenizing, building each fold's model, compiling (empty caches), "
            f"training and predicting the held-out rows; importing the framework is not in it ('import s'). 'predicted fresh': the share "
            f"of held-out rows the ensemble calls fresh (the true share is about 58%: a model that has learnt nothing says 100%). "
            f"Examples/s: rows trained over training seconds. Compiles: from each tpututor backend's `compile_stats` (`tf`: traces); "
            f"the Trainer and KerasHub's classifier are not counted ('-'). "
            f"Versions: {', '.join(f'{m} {v}' for m, v in sorted(rec['versions'].items()) if v)}.")
    text = (f"## Time to {T} held-out accuracy on a CPU: every backend vs the anchors at their best\n\n{body}\n\nMeasured {rec['date']} on "
            f"{rec['machine']}; load average at the end (1, 5, 15 min): {rec['load']}. Reproduce: `./run.sh bench trainer` (the report alone: "
            "`python bench/bench_trainer.py report`)\n")
    print(text)
    if write:
        prov = {k: rec[k] for k in ('bench', 'modules', 'files', 'code', 'versions', 'env', 'date', 'machine', 'rerun', 'how')}
        _write(RESULTS / 'trainer.md', text)
        _write(RESULTS / 'trainer.json', json.dumps([dict(benchmark='trainer', **{**prov, **g}) for g in goals], indent=1) + '\n')
    return {k: r['wall_s'] for k, r in best.items()}

def smoke(group):
    "A smoke run's part (bench/run.py): the contenders of framework group `group` in this process, added to the record"
    _start(group)
    return main(tuple(n for n, c in CONTENDERS.items() if c[2] == group))

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--smoke']
    if SMOKE: smoke_alone('trainer')
    elif args[:1] == ['worker']: worker(args[1].split(','), int(args[2]))
    elif args[:1] == ['report']: report_runs()
    elif args[:1] == ['--size']:
        os.environ['TPUTUTOR_TRAINER_SIZE'] = args[1]
        sys.exit(subprocess.run([sys.executable, __file__, *(args[2:] or CONTENDERS)]).returncode)
    else: main(tuple(args) or tuple(CONTENDERS), record=not args and not os.environ.get('TPUTUTOR_TRAINER_SIZE'))
