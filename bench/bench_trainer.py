"""tpututor k-fold vs the Hugging Face `Trainer` (with accelerate) doing the same folds, on the same XLA device,
and tpututor's Keras 3 backend on JAX (one JAX device) doing them too.

The pretrained MiniLM fine-tuned on real Rotten Tomatoes snippets: the same rows, folds, sequence length,
epochs, batch size, learning-rate schedule, weight decay, clipping and seed for every setting, all in one
process on torch_xla's runtime (with torch_xla installed, accelerate puts the Trainer on the XLA device,
as it does on a TPU). The folds are interleaved (fold 1 of every setting, then fold 2, ...), so that load
from other work on the shared cores hits all settings alike.

The Trainer is set up the way the TPU guides say: every batch padded to max_length (static shapes),
`dataloader_drop_last=True`, `optim='adamw_torch'` (the default fused AdamW refuses XLA tensors).
Everything else is its default, as a user would leave it: `AutoModelForSequenceClassification` (the [CLS]
pooler head) with its default attention implementation. tpututor runs `XlaBackend` twice: at the fixed
length, which isolates the loop, and with length buckets, its default way to train. `KerasBackend` (Keras 3 +
KerasHub on JAX, in the same process: JAX and torch_xla can share one) trains with the same buckets on one JAX
CPU device, the same compute as the one torch_xla device.

Each setting's examples/s is its training rows over its training wall time, first fold (which compiles)
included, as a user would see it, and separately that of its fastest later fold (compiled graphs reused); the held-out score is that of the fold ensemble (mean probabilities).
"""
import os, sys, tempfile, time, warnings
from common import ratio, report, table

def main(n_train=1440, n_test=600, folds=3, max_len=64, buckets=4, batch=32):
    warnings.filterwarnings('ignore', message='`tensorflow` can conflict')
    from tpututor.frameworks import import_xla
    tx = import_xla()
    import numpy as np, torch
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments,
                              DataCollatorWithPadding, logging as hf_logging)
    import accelerate
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.kfold import make_folds, score
    from tpututor.models import resolve_model
    from tpututor.tokenize import encode
    from tpututor.torchxla import XlaBackend
    from tpututor.xla import count_compiles
    from tpututor.jaxdev import import_keras, count_compiles as jax_compiles
    import_keras('jax')
    from tpututor.keras import KerasBackend
    hf_logging.set_verbosity_error()

    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    tr, te = rt.iloc[:n_train], rt.iloc[n_train:n_train + n_test]
    y, y_te = tr.label.values, te.label.values
    fold = make_folds(len(tr), folds, y, seed=42)
    path = resolve_model('minilm')
    enc, enc_te = encode(path, tr.text.tolist(), max_len=max_len), encode(path, te.text.tolist(), max_len=max_len)
    tok = AutoTokenizer.from_pretrained(path)

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
        return secs, comp, prob(tr.text.values[fold == i], y[fold == i]), prob(te.text.values, y_te)

    def ours_fold(be, counter, b, tr_idx, va_idx):   # one tpututor backend, its compile counter, buckets
        cfg = TrainConfig(model='minilm', max_len=max_len, buckets=b, batch_size=batch, epochs=1, lr=5e-5, seed=42)
        c0, t0 = counter(), time.perf_counter()
        model, hist = be.fit(cfg, enc[tr_idx], y[tr_idx])
        secs, comp = time.perf_counter() - t0, counter() - c0
        out = secs, comp, be.predict(cfg, model, enc[va_idx]), be.predict(cfg, model, enc_te)
        be.free(model)
        return out, hist['mfu'][0]

    names = {'trainer': f'HF Trainer + accelerate, padded to {max_len}',
             'keras': f'tpututor KerasBackend (Keras 3 on JAX), {buckets} length buckets',
             'fixed': f'tpututor XlaBackend, padded to {max_len}',
             'buckets': f'tpututor XlaBackend, {buckets} length buckets'}
    runs = {k: dict(secs=[], comp=[], oof=np.zeros((len(tr), 2), np.float32), test=[], mfu=[]) for k in names}
    for i in range(folds):
        tr_idx, va_idx = np.flatnonzero(fold != i), np.flatnonzero(fold == i)
        for k in names:
            if k == 'trainer': res, mfu = trainer_fold(i, tr_idx), None
            elif k == 'keras': res, mfu = ours_fold(KerasBackend(verbose=False), jax_compiles, buckets, tr_idx, va_idx)
            else: res, mfu = ours_fold(XlaBackend(verbose=False), count_compiles, 0 if k == 'fixed' else buckets, tr_idx, va_idx)
            r = runs[k]; r['secs'].append(res[0]); r['comp'].append(res[1]); r['oof'][va_idx] = res[2]
            r['test'].append(res[3]); r['mfu'].append(mfu)
            print(f'fold {i}: {names[k]}: {res[0]:.1f}s, {res[1]} compiles', flush=True)
    rows = []
    train_rows = sum(int((fold != i).sum()) // batch * batch for i in range(folds))
    for k, r in runs.items():
        held = score('classification', y_te, np.mean(r['test'], 0)); oof = score('classification', y, r['oof'])
        r['eps'] = train_rows / sum(r['secs'])
        r['steady'] = max((int((fold != i).sum()) // batch * batch) / r['secs'][i] for i in range(1, folds))   # best later fold
        rows.append({'setting': names[k], 'train seconds per fold': ', '.join(f'{s:.0f}' for s in r['secs']),
                     'compiles per fold': ', '.join(map(str, r['comp'])), 'examples/s': r['eps'],
                     'examples/s, best later fold': r['steady'],
                     'held-out accuracy': f"{held['accuracy']:.3f}", 'out-of-fold accuracy': f"{oof['accuracy']:.3f}",
                     'MFU': '' if r['mfu'][0] is None else f"{np.mean(r['mfu']):.1%}"})
        r['held'] = held['accuracy']
    ratio_b, ratio_f = runs['buckets']['eps'] / runs['trainer']['eps'], runs['fixed']['eps'] / runs['trainer']['eps']
    steady_b = runs['buckets']['steady'] / runs['trainer']['steady']
    ratio_k, steady_k = runs['keras']['eps'] / runs['trainer']['eps'], runs['keras']['steady'] / runs['trainer']['steady']
    keras_xla = runs['keras']['eps'] / runs['buckets']['eps']
    body = (table(rows, ['setting', 'train seconds per fold', 'compiles per fold', 'examples/s', 'examples/s, best later fold', 'MFU',
                         'held-out accuracy', 'out-of-fold accuracy']) +
            f"\n\n- tpututor (buckets) vs Trainer: **{ratio_b:.2f}x** the examples/s (goal >= 1.3x at equal score); "
            f"held-out accuracy {runs['buckets']['held']:.3f} vs {runs['trainer']['held']:.3f}"
            f"\n- the same, best later fold of each (compiles done, the least disturbed by other work): **{steady_b:.2f}x**"
            f"\n- tpututor KerasBackend (JAX) vs Trainer: **{ratio_k:.2f}x** all folds, **{steady_k:.2f}x** best later fold; "
            f"held-out accuracy {runs['keras']['held']:.3f}"
            f"\n- KerasBackend (JAX) vs XlaBackend, both with buckets on one CPU device: **{keras_xla:.2f}x** the examples/s"
            f"\n- tpututor at the Trainer's fixed length vs Trainer: **{ratio_f:.2f}x** (the loop and optimizer alone; "
            f"held-out {runs['fixed']['held']:.3f})"
            f"\n\n{folds} folds of {n_train} Rotten Tomatoes snippets (stratified, seed 42), held-out set of {n_test} "
            f"others; pretrained MiniLM (all-MiniLM-L6-v2), max length {max_len}, batch {batch}, 1 epoch, lr 5e-5 "
            f"with 10% linear warm-up then linear decay, weight decay 0.01, clipping 1.0, fp32; transformers "
            f"{__import__('transformers').__version__}, accelerate {accelerate.__version__}, torch_xla "
            f"{tx.__version__} CPU runtime; Keras {__import__('keras').__version__}, KerasHub {__import__('keras_hub').__version__}, "
            f"JAX {__import__('jax').__version__}. Training time per fold excludes prediction. The Trainer's torch.optim.AdamW "
            f"compiles a second step graph after step 1 (its step counter becomes a device tensor), which is one of "
            f"the compiles counted in its first fold. The MFU column is tpututor's own meter (training FLOPs over "
            f"the device's measured matmul peak).")
    report('trainer', 'k-fold fine-tune: tpututor vs the Hugging Face Trainer', body, './run.sh bench trainer',
           goals=[ratio('k-fold examples/s, all folds with compiles: tpututor (buckets) vs HF Trainer + accelerate', ratio_b, 1.3),
                  ratio('k-fold examples/s, best later fold: tpututor (buckets) vs HF Trainer + accelerate', steady_b, 1.3),
                  ratio('k-fold examples/s, all folds with compiles: tpututor keras (JAX) vs HF Trainer + accelerate', ratio_k, 1.3)])
    return dict(trainer=ratio_b, keras=ratio_k, keras_vs_xla=keras_xla)

if __name__ == '__main__': main(*map(int, sys.argv[1:]))
