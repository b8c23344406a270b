"""Every tpututor backend against the Hugging Face `Trainer` (with accelerate) on the same k-fold work: the
same model, rows, folds, epochs, sequence length, batch, learning-rate schedule, weight decay, clipping and seed.

The pretrained MiniLM fine-tuned on real Rotten Tomatoes snippets, all in one process: torch_xla first (with it
installed, accelerate puts the Trainer on the XLA device, as it does on a TPU), then Keras 3 on JAX (JAX and
torch_xla share a process), then TensorFlow with tf-keras (after torch_xla it loads; before, it would kill the
process). The folds are interleaved (fold 1 of every backend, then fold 2, ...), so that load from other work on
the shared cores hits all backends alike.

The Trainer is set up the way the TPU guides say: every batch padded to max_length (static shapes),
`dataloader_drop_last=True`, `optim='adamw_torch'` (the default fused AdamW refuses XLA tensors). Everything else
is its default, as a user would leave it: `AutoModelForSequenceClassification` (the [CLS] pooler head) with its
default attention implementation. tpututor runs `XlaBackend` twice: at the fixed length, which isolates the loop,
and with length buckets, its default way to train; `KerasBackend` (Keras 3 + KerasHub on JAX) and `TfBackend`
(transformers' TF model, tf-keras `fit`) train with the same buckets. Every backend has one CPU device here.

Each backend's examples/s is its training rows over its training wall time, first fold (which compiles)
included, as a user would see it, and separately that of its fastest later fold (compiled graphs reused); the
held-out score is that of the fold ensemble (mean probabilities). The compile caches on disk point at a new
empty folder for the run, so every figure is a first run's: nothing is reused from an earlier process.
"""
import os, sys, tempfile, time, warnings
from common import report, table

ALL = ('trainer', 'keras', 'tf', 'fixed', 'buckets')

def main(n_train=600, n_test=240, folds=3, max_len=64, buckets=4, batch=32, backends=ALL):
    warnings.filterwarnings('ignore', message='`tensorflow` can conflict')
    # First-run figures: the persistent compile caches start empty (a new folder, removed at the end)
    cache = tempfile.mkdtemp(prefix='tpututor-bench-compile-')
    os.environ['TPUTUTOR_COMPILE_CACHE'] = cache
    # transformers' TF models in this process: TF is imported after torch_xla (import_xla would keep transformers off TF)
    os.environ['USE_TF'], os.environ['TF_USE_LEGACY_KERAS'] = 'AUTO', '1'
    from tpututor.frameworks import import_xla, import_tf
    tx = import_xla()
    import numpy as np, torch
    from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments,
                              DataCollatorWithPadding, logging as hf_logging)
    import accelerate
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.kfold import make_folds, score
    from tpututor.meter import model_dims, train_flops
    from tpututor.models import resolve_model
    from tpututor.tokenize import encode
    from tpututor.torchxla import XlaBackend
    from tpututor.xla import count_compiles
    from tpututor.jaxdev import import_keras
    import_keras('jax')
    from tpututor.keras import KerasBackend
    tf = import_tf() if 'tf' in backends else None
    if tf is not None: from tpututor.tfkeras import TfBackend
    hf_logging.set_verbosity_error()

    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    tr, te = rt.iloc[:n_train], rt.iloc[n_train:n_train + n_test]
    y, y_te = tr.label.values, te.label.values
    fold = make_folds(len(tr), folds, y, seed=42)
    path = resolve_model('minilm')
    enc, enc_te = encode(path, tr.text.tolist(), max_len=max_len), encode(path, te.text.tolist(), max_len=max_len)
    tok = AutoTokenizer.from_pretrained(path)
    dims = model_dims(AutoConfig.from_pretrained(path))

    class Rows(torch.utils.data.Dataset):   # what a Trainer user writes: the tokenizer's output per row
        def __init__(self, texts, labels):
            self.enc = tok(list(texts), truncation=True, max_length=max_len, padding='max_length')
            self.y = labels
        def __len__(self): return len(self.y)
        def __getitem__(self, i): return {**{k: v[i] for k, v in self.enc.items()}, 'labels': int(self.y[i])}

    def trainer_fold(i, tr_idx):
        torch.manual_seed(42)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=batch,
                                 per_device_eval_batch_size=2 * batch, num_train_epochs=1, learning_rate=5e-5,
                                 warmup_ratio=0.1, weight_decay=0.01, max_grad_norm=1.0, seed=42, report_to=[],
                                 save_strategy='no', eval_strategy='no', logging_strategy='no',
                                 dataloader_drop_last=True, optim='adamw_torch', disable_tqdm=True)
        t = Trainer(model=model, args=args, train_dataset=Rows(tr.text.values[tr_idx], y[tr_idx]),
                    data_collator=DataCollatorWithPadding(tok))
        c0, t0 = count_compiles(), time.perf_counter()
        t.train()
        secs, comp = time.perf_counter() - t0, count_compiles() - c0
        t.args.dataloader_drop_last = False   # predict every row, the last partial batch too
        prob = lambda texts, labels: torch.softmax(torch.from_numpy(t.predict(Rows(texts, labels)).predictions).float(), -1).numpy()
        return (secs, comp, prob(tr.text.values[fold == i], y[fold == i]), prob(te.text.values, y_te)), {}

    from tpututor.kfold import fixed_shapes, compile_cost
    def ours_fold(be, b, tr_idx, va_idx):   # one tpututor backend (kept over the folds, as run_kfold keeps it), buckets
        cfg = TrainConfig(model='minilm', max_len=max_len, buckets=b, batch_size=batch, epochs=1, lr=5e-5, seed=42)
        cfg = fixed_shapes(cfg, enc, enc_te, fold, batch * be.replicas())   # the run's buckets, chosen once (as run_kfold does)
        stats = getattr(be, 'compile_stats', None)   # JAX and torch_xla count compiles and their seconds; tf: its History's traces
        c0, t0 = stats() if stats else None, time.perf_counter()
        model, hist = be.fit(cfg, enc[tr_idx], y[tr_idx])
        secs = time.perf_counter() - t0
        out = [be.predict(cfg, model, enc[va_idx]), be.predict(cfg, model, enc_te)]
        if stats:
            c = compile_cost(c0, stats())
            comp = f"{c['compiles']} ({c['compile_seconds']:.1f}s{', %d from the cache' % c['cache_hits'] if c['cache_hits'] else ''})"
        else: comp = f"{sum(hist.column('compiles'))} traces"
        be.free(model)
        return (secs, comp, *out), {**hist.rate(), 'peak_flops': hist.get('peak_flops')}

    names = {'trainer': f'HF Trainer + accelerate (torch_xla), padded to {max_len}',
             'keras': f'tpututor `keras`: Keras 3 on JAX, {buckets} length buckets',
             'tf': f'tpututor `tf`: TensorFlow {tf.__version__ if tf else ""} + tf-keras, {buckets} length buckets',
             'fixed': f'tpututor `xla`: PyTorch/XLA, padded to {max_len}',
             'buckets': f'tpututor `xla`: PyTorch/XLA, {buckets} length buckets'}
    names = {k: v for k, v in names.items() if k in backends}
    runs = {k: dict(secs=[], comp=[], oof=np.zeros((len(tr), 2), np.float32), test=[], rate=[]) for k in names}
    bes = {k: KerasBackend(verbose=False) if k == 'keras' else TfBackend(verbose=False) if k == 'tf' else XlaBackend(verbose=False)
           for k in names if k != 'trainer'}   # one backend per run, over all its folds
    for i in range(folds):
        tr_idx, va_idx = np.flatnonzero(fold != i), np.flatnonzero(fold == i)
        for k in names:
            if k == 'trainer': res, rate = trainer_fold(i, tr_idx)
            else: res, rate = ours_fold(bes[k], 0 if k == 'fixed' else buckets, tr_idx, va_idx)
            r = runs[k]; r['secs'].append(res[0]); r['comp'].append(res[1]); r['oof'][va_idx] = res[2]
            r['test'].append(res[3]); r['rate'].append(rate)
            print(f'fold {i}: {names[k]}: {res[0]:.1f}s, compiles {res[1]}', flush=True)
    n_rows = [int((fold != i).sum()) // batch * batch for i in range(folds)]   # rows trained per fold (full batches)
    # The Trainer's MFU by the same meter: its padded FLOPs over the measured peak of the one XLA device
    peak = next((r['peak_flops'] for k in ('fixed', 'buckets') if k in runs for r in runs[k]['rate'] if r.get('peak_flops')), None)
    if 'trainer' in runs and peak:
        for j, r in enumerate(runs['trainer']['rate']):
            r['mfu'] = n_rows[j] * train_flops(dims, max_len, max_len) / runs['trainer']['secs'][j] / peak
    base = runs.get('trainer')
    for k, r in runs.items():
        r['held'] = score('classification', y_te, np.mean(r['test'], 0))['accuracy']
        r['oof_acc'] = score('classification', y, r['oof'])['accuracy']
        r['eps'] = sum(n_rows) / sum(r['secs'])
        r['steady'] = max(n_rows[i] / r['secs'][i] for i in range(1, folds)) if folds > 1 else r['eps']   # best later fold
        # MFU over all folds, each fold weighted by its time (the compiles of the first fold lower it)
        mfu = lambda key: (sum(x[key] * s for x, s in zip(r['rate'], r['secs'])) / sum(r['secs'])
                           if all(x.get(key) is not None for x in r['rate']) else None)
        r['mfu'], r['mfu_sheet'] = mfu('mfu'), mfu('mfu_datasheet')
    pct = lambda v: '-' if v is None else f'{v:.1%}'
    rows = [{'backend': names[k], 'train seconds per fold': ', '.join(f'{s:.0f}' for s in r['secs']),
             'compiles per fold': ', '.join(map(str, r['comp'])), 'examples/s': r['eps'],
             'vs Trainer': f"{r['eps'] / base['eps']:.2f}x" if base else '-',
             'examples/s, best later fold': r['steady'],
             'vs Trainer, best later fold': f"{r['steady'] / base['steady']:.2f}x" if base else '-',
             'MFU (measured peak)': pct(r['mfu']), 'MFU (datasheet)': pct(r['mfu_sheet']),
             'held-out accuracy': f"{r['held']:.3f}", 'out-of-fold accuracy': f"{r['oof_acc']:.3f}"}
            for k, r in runs.items()]
    cols = ['backend', 'train seconds per fold', 'compiles per fold', 'examples/s', 'vs Trainer', 'examples/s, best later fold',
            'vs Trainer, best later fold', 'MFU (measured peak)', 'MFU (datasheet)', 'held-out accuracy', 'out-of-fold accuracy']
    ours = [k for k in runs if k != 'trainer']
    best = max(ours, key=lambda k: runs[k]['eps']) if ours else None
    goals, lines = [], []
    if base and best:
        rb = runs[best]; x = rb['eps'] / base['eps']; met = bool(x >= 2 and rb['held'] >= base['held'])
        goals.append(dict(comparison=f'k-fold examples/s, all folds with compiles: the fastest backend ({names[best]}) vs HF Trainer, at equal or better held-out accuracy',
                          measured=f"{x:.2f}x, held-out {rb['held']:.3f} vs {base['held']:.3f}", goal='>= 2x and held-out >= the Trainer\'s', met=met))
        lines.append(f"- **Goal**: the fastest backend, {names[best]}, vs the Trainer: **{x:.2f}x** the examples/s over all folds "
                     f"with compiles (goal >= 2x), held-out accuracy {rb['held']:.3f} vs {base['held']:.3f}: goal "
                     f"{'met' if met else '**not met**'}.")
        for k in ours:
            goals.append(dict(comparison=f'k-fold examples/s, all folds with compiles: {names[k]} vs HF Trainer',
                              measured=f"{runs[k]['eps'] / base['eps']:.2f}x", goal='reported', met=None))
    # Where the time goes: the first fold's extra seconds over the best later fold, per backend (compiles and warm-up)
    if folds > 1:
        for k, r in runs.items():
            extra = r['secs'][0] - n_rows[0] / r['steady']
            lines.append(f"- {names[k]}: first fold {r['secs'][0]:.0f}s ({r['comp'][0]} compiles), " +
                         (f"{extra:.0f}s more than at its best later fold's rate; without that, all folds would give "
                          f"{sum(n_rows) / (sum(r['secs']) - extra):.1f} examples/s" if extra > 0 else
                          "no slower than its best later fold"))
    from tpututor.config import row_lengths
    from tpututor.tokenize import choose_buckets, assign_buckets
    L = row_lengths(enc); bl = choose_buckets(L, buckets, max_len=max_len)
    padded = float(np.mean(np.asarray(bl)[assign_buckets(L, bl)]))
    flop_cut = train_flops(dims, max_len, max_len) / float(np.mean([train_flops(dims, p, p) for p in np.asarray(bl)[assign_buckets(L, bl)]]))
    lines.append(f"- The most length buckets can save here: rows hold {L.mean():.1f} tokens on average; {buckets} buckets "
                 f"({', '.join(map(str, bl))}) pad them to {padded:.1f}, against {max_len} for the Trainer: "
                 f"{flop_cut:.2f}x fewer training FLOPs per row. At equal MFU that is the ceiling of a bucketed backend "
                 f"against the padded Trainer on a CPU, where a smaller matrix does not run faster per FLOP than a bigger one.")
    if best == 'tf': lines.append(
        "- Why `tf` is fastest on this CPU: tf-keras runs the train step as a TensorFlow graph without XLA, traced once "
        "per fold for every bucket length (the graph takes any length), so its buckets cost no compile, while the "
        "Trainer, `xla` and `keras` compile an XLA program per shape; in later folds what is left is the buckets' cut "
        "in FLOPs, at a lower MFU than the padded batches (smaller matrices).")
    if 'keras' in runs or 'buckets' in runs: lines.append(
        "- `keras` and `xla` compile nothing after the first fold: the run's length buckets are chosen once from all its "
        "rows, `xla` keeps its compiled graphs in the process, and `keras` restarts the first fold's model (first "
        "weights back, the fold's step count in the optimizer's variables), so every later fold runs the programs "
        "the first one made.")
    body = table(rows, cols) + '\n\n' + '\n'.join(lines)
    from tpututor.xla import compile_cache_status
    why = compile_cache_status()['why']
    xla_note = (f"torch_xla's cache is not used here ({why}), so the Trainer and `xla` compile again in every process"
                if why else "torch_xla's too (the Trainer and `xla`)")
    body += (f"\n\n{folds} folds of {n_train} Rotten Tomatoes snippets (stratified, seed 42), held-out set of {n_test} "
             f"others; pretrained MiniLM (all-MiniLM-L6-v2), max length {max_len}, batch {batch}, 1 epoch, lr 5e-5 "
             f"with 10% linear warm-up then linear decay, weight decay 0.01, clipping 1.0, fp32, one CPU device per backend; "
             f"transformers {__import__('transformers').__version__}, accelerate {accelerate.__version__}, torch_xla "
             f"{tx.__version__} CPU runtime; Keras {__import__('keras').__version__}, KerasHub {__import__('keras_hub').__version__}, "
             f"JAX {__import__('jax').__version__}" + (f"; TensorFlow {tf.__version__}, tf-keras {__import__('tf_keras').__version__}" if tf else '') +
             ". Training time per fold excludes prediction and model loading. Compile caches on disk "
             "(TPUTUTOR_COMPILE_CACHE) pointed at a new empty folder, so these are first-run figures: a program is read "
             "back from the cache only when an earlier fold of this run wrote it (counted as 'from the cache'). A rerun "
             f"on the same machine would read JAX's programs back (the `keras` backend); {xla_note}; tf-keras traces its "
             "graph again in every process. Compiles: for the Trainer, XLA compiles of the process during `fit` (torch_xla's "
             "metrics); for `xla` and `keras`, the programs the fold made while training and predicting, with the seconds "
             "spent making them, from the backend's `compile_stats` (torch_xla's metrics; JAX's own counters, which count "
             "every small jitted operation too: loading weights and building the optimizer compile a few dozen once per process); for `tf`, the "
             "traces of the Keras train function (tf-keras runs it as a TensorFlow graph, without XLA, so a trace is "
             "its compile). The Trainer's torch.optim.AdamW compiles a second step graph after step 1 (its step "
             "counter becomes a device tensor), one of the compiles in its first fold. MFU is tpututor's meter: "
             "training FLOPs over the device's measured matmul peak, the Trainer's computed the same way at its padded "
             "length; against a datasheet peak only where the device has one (a CPU has none: '-').")
    body += ('\n\n### Which backend to pick where\n\n' + '\n'.join(pick(runs, names, base, flop_cut)))
    report('trainer', 'k-fold fine-tune: every backend vs the Hugging Face Trainer', body, './run.sh bench trainer', goals=goals)
    import shutil; shutil.rmtree(cache, ignore_errors=True)
    return {k: r['eps'] / base['eps'] for k, r in runs.items()} if base else {}

def pick(runs, names, base, flop_cut)->list:
    "The guidance: the measured order on this machine, then what each platform's image allows"
    order = sorted((k for k in runs if k != 'trainer'), key=lambda k: -runs[k]['eps'])
    fmt = lambda k: f"{names[k]} ({runs[k]['eps']:.1f} examples/s" + (f", {runs[k]['eps'] / base['eps']:.2f}x the Trainer" if base else '') + ')'
    return [
        f"- Measured here (CPU, all folds with compiles), fastest first: {'; '.join(fmt(k) for k in order)}.",
        "- Kaggle TPU VM and Colab TPU: `keras` (JAX) or `xla`, both reach the TPU with what the image ships. "
        "Not `tf`: Kaggle's image has `tensorflow-cpu` (TensorFlow cannot see the TPU) and Colab's has no TensorFlow; "
        "`tensorflow-tpu` would replace the image's libtpu and transformers (see the install page).",
        "- A Cloud TPU VM of your own: any of the three; `tf` there needs `tensorflow-tpu` and transformers 4.57 "
        "(the last line with TensorFlow models).",
        "- A GPU: `keras` (JAX) or `xla` (PJRT_DEVICE=CUDA); `tf` where a TensorFlow GPU build is installed.",
        f"- Length buckets: on for every backend unless the texts all fill max_length; on these texts they cut the "
        f"training FLOPs per row {flop_cut:.2f}x (the line above)" +
        (f", while the `xla` loop at the Trainer's padded length runs at {runs['fixed']['eps'] / base['eps']:.2f}x its examples/s." if base and 'fixed' in runs else '.'),
    ]

if __name__ == '__main__': main(*map(int, sys.argv[1:]))
