"""On a CUDA GPU: the whole k-fold job on short texts, tpututor's `torch` backend (length buckets or packed rows;
eager, torch.compile or CUDA graphs) against the Hugging Face Trainer at its best (dynamic padding, in random order
or grouped by length, eager or `torch_compile=True`, and HF's padding-free collator where the model's attention takes
it).

The job: 5 folds x 3 epochs of 5,000 Rotten Tomatoes snippets (short and of mixed lengths: about 27 tokens on
average, 68 at most, cut at 128), the fold ensemble scored on 1,000 others; the pretrained MiniLM shipped on PyPI
(nothing downloaded), bfloat16, batch 32 texts for every contender, the same schedule and clipping. Each contender runs
in a fresh process with an empty compile cache. Per contender: the job's seconds (tokenizing, building each fold's
model, compiling, training and predicting the held-out rows; importing the frameworks left out), steady examples/s
(texts trained over seconds, every epoch after a fold's first) and the held-out accuracy of the ensemble, so a
contender that trains fast but learns less shows it. The goals (defaults that finish the job first): the
GPU speed defaults (`torch`, what `tpututor train` picks with no speed option) finish the job >= 2x sooner than the
Trainer at its best and train >= 3x its steady examples/s; which contender finishes first is what the GPU row of
`SPEED_DEFAULTS` should pick.

    python bench/bench_gpu_jobs.py run OUT [NAME ...]   on the GPU machine: every contender, results into OUT/gpu_jobs.json
    python bench/bench_gpu_jobs.py record FILE          here: FILE into bench/results/gpu_jobs.{json,md}
    python bench/bench_gpu_jobs.py --smoke              on the CPU: a tiny random BERT, 2 folds x 2 epochs, eager contenders, fp32
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import smoke_alone, SMOKE
from bench_trainer import model_path as _model   # the MiniLM; a smoke run's tiny random BERT

ROWS, HELD_OUT, FOLDS, EPOCHS, BATCH, MAX_LEN, BUCKETS = (64, 32, 2, 2, 8, 32, 2) if SMOKE else (5000, 1000, 5, 3, 32, 128, 4)
SCHEDULE = dict(lr=5e-5, warmup=0.1, weight_decay=0.01, clip=1.0, seed=42)
LABEL = {   # contender -> (what it is, tpututor's packed rows?, torch.compile mode: False eager, True default, or a mode)
    'torch': ('tpututor `torch`, the GPU speed defaults: 4 length buckets, eager', False, False),
    'torch_pack': ('tpututor `torch`, packed rows, eager', True, False),
    'torch_graphs': ("tpututor `torch`, 4 length buckets, torch.compile('reduce-overhead'): CUDA graphs", False, 'reduce-overhead'),
    'torch_pack_graphs': ("tpututor `torch`, packed rows, torch.compile('reduce-overhead'): CUDA graphs", True, 'reduce-overhead'),
    'torch_pack_compile': ('tpututor `torch`, packed rows, torch.compile', True, True),
    'trainer': ('HF Trainer, dynamic padding, random order, eager', None, False),
    'trainer_grouped': ('HF Trainer, dynamic padding, grouped by length, eager', None, False),
    'trainer_compile': ('HF Trainer, dynamic padding, random order, torch_compile=True', None, True),
    'trainer_grouped_compile': ('HF Trainer, dynamic padding, grouped by length, torch_compile=True', None, True),
    'trainer_flat': ("HF Trainer, padding-free (DataCollatorWithFlattening, flash attention)", None, False),
}
SMOKE_CONTENDERS = ('torch', 'torch_pack', 'trainer', 'trainer_grouped')   # compiling on a CPU takes minutes: the eager paths
GOAL_JOB, GOAL_RATE = 2.0, 3.0
HOW = 'python bench/bench_gpu_jobs.py run OUT (on the GPU); python bench/bench_gpu_jobs.py record OUT/gpu_jobs.json'

def _data():
    "Training rows, held-out rows and each training row's fold: the same for every contender"
    from tpututor.data import rotten_tomatoes
    from tpututor.splits import make_folds
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    tr, te = rt.iloc[:ROWS], rt.iloc[ROWS:ROWS + HELD_OUT]
    return tr, te, make_folds(len(tr), FOLDS, tr.label.values, seed=SCHEDULE['seed'])

def _precision(): import torch; return 'bf16' if torch.cuda.is_available() and not SMOKE else 'fp32'

def _ours(name, path, tr, te, fold)->dict:
    "The k folds with tpututor's torch backend, kept over the folds as `run_kfold` keeps it, the run's shapes fixed once"
    import numpy as np
    from tpututor.backends.torch import TorchBackend
    from tpututor.config import TrainConfig
    from tpututor.encoding import encode, load_tokenizer
    from tpututor.kfold import fixed_shapes
    _, packed, mode = LABEL[name]
    tok = load_tokenizer(path)
    enc, enc_te = encode(tok, tr.text.tolist(), max_len=MAX_LEN), encode(tok, te.text.tolist(), max_len=MAX_LEN)
    be = TorchBackend(compile=mode, verbose=False, compile_cache=tempfile.mkdtemp(prefix='gpu-jobs-cache-'))   # empty: first-run figures
    s = SCHEDULE
    cfg = TrainConfig(model=path, max_len=MAX_LEN, buckets=0 if packed else BUCKETS, pack=packed, batch_size=BATCH, epochs=EPOCHS,
                      lr=s['lr'], warmup=s['warmup'], weight_decay=s['weight_decay'], grad_clip=s['clip'], seed=s['seed'],
                      precision=_precision())
    cfg = fixed_shapes(cfg, enc, enc_te, fold, BATCH * be.replicas())
    y, probs, steady, first = tr.label.values, [], [0.0, 0.0], []
    for k in range(FOLDS):
        t0 = time.perf_counter()
        model, hist = be.fit(cfg, enc[np.flatnonzero(fold != k)], y[fold != k])
        for r in hist.records[1:]: steady[0] += r['examples_per_s'] * r['seconds']; steady[1] += r['seconds']   # texts, packed or not
        probs.append(np.asarray(be.predict(cfg, model, enc_te)))
        be.done_with(model); first.append(time.perf_counter() - t0)
    return dict(probs=probs, steady=steady, fold_s=first, device=be.adapter.kind())

def _trainer(name, path, tr, te, fold)->dict:
    "The k folds with the Hugging Face Trainer as a user writes it at its best: bf16, its collators, the same schedule"
    import dataclasses, numpy as np, torch
    from transformers import (AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments,
                              TrainerCallback, DataCollatorWithPadding, DataCollatorWithFlattening)
    from tpututor.models.hub import has_weights
    tok = AutoTokenizer.from_pretrained(path)
    enc, enc_te = (tok(list(t), truncation=True, max_length=MAX_LEN) for t in (tr.text, te.text))   # the collator pads each batch
    cuda, flat = torch.cuda.is_available(), name == 'trainer_flat'
    grouped = {'group_by_length': True} if 'group_by_length' in {f.name for f in dataclasses.fields(TrainingArguments)} \
        else {'train_sampling_strategy': 'group_by_length'}   # transformers 5 renamed it
    rows = lambda enc, idx, y: [dict(input_ids=enc['input_ids'][j], attention_mask=enc['attention_mask'][j], labels=int(y[j]))
                                for j in idx]   # a list is a dataset to the Trainer; its length grouping reads input_ids
    class Clock(TrainerCallback):   # seconds of every epoch after the first, the GPU synchronised
        def __init__(self): self.t, self.secs = 0.0, 0.0
        def on_epoch_begin(self, args, state, control, **kw):
            if cuda: torch.cuda.synchronize()
            self.t = time.perf_counter()
        def on_epoch_end(self, args, state, control, **kw):
            if cuda: torch.cuda.synchronize()
            if state.epoch > 1.01: self.secs += time.perf_counter() - self.t
    probs, steady, fold_s = [], [0.0, 0.0], []
    for k in range(FOLDS):
        t0 = time.perf_counter()
        torch.manual_seed(SCHEDULE['seed'])
        kw = dict(num_labels=2, **({'attn_implementation': 'flash_attention_2'} if flat else {}))
        model = (AutoModelForSequenceClassification.from_pretrained(path, **kw) if has_weights(path) else
                 AutoModelForSequenceClassification.from_config(AutoConfig.from_pretrained(path, num_labels=2), **kw))
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=BATCH, per_device_eval_batch_size=2 * BATCH,
                                 num_train_epochs=EPOCHS, learning_rate=SCHEDULE['lr'], warmup_ratio=SCHEDULE['warmup'],
                                 lr_scheduler_type='linear', weight_decay=SCHEDULE['weight_decay'], max_grad_norm=SCHEDULE['clip'],
                                 seed=SCHEDULE['seed'], bf16=_precision() == 'bf16', torch_compile=LABEL[name][2] is True,
                                 report_to=[], save_strategy='no', eval_strategy='no', logging_strategy='no', dataloader_drop_last=True,
                                 disable_tqdm=True, use_cpu=not cuda, **(grouped if 'grouped' in name else {}))
        train = rows(enc, np.flatnonzero(fold != k), tr.label.values)
        clock = Clock()
        t = Trainer(model=model, args=args, train_dataset=train, callbacks=[clock],
                    data_collator=DataCollatorWithFlattening() if flat else DataCollatorWithPadding(tok))
        t.train()
        steady[0] += (EPOCHS - 1) * (len(train) // BATCH * BATCH); steady[1] += clock.secs
        t.args.dataloader_drop_last = False   # predict every held-out row
        t.data_collator = DataCollatorWithPadding(tok)
        logits = t.predict(rows(enc_te, np.arange(len(te)), te.label.values)).predictions
        probs.append(torch.softmax(torch.from_numpy(np.asarray(logits)).float(), -1).numpy())
        fold_s.append(time.perf_counter() - t0)
    from tpututor.devices.torch import TorchDevice
    return dict(probs=probs, steady=steady, fold_s=fold_s, device=TorchDevice('cuda' if cuda else 'cpu').kind())

def one(name)->dict:
    "One contender in this process (its frameworks imported before the clock): the job's seconds, steady examples/s, held-out"
    import numpy as np
    os.environ.setdefault('USE_TF', '0'); os.environ.setdefault('USE_TORCH_XLA', '0')
    import torch, transformers   # noqa: F401 (imports are not the job's time)
    from tpututor.splits import score
    path, (tr, te, fold) = _model(), _data()
    t0 = time.perf_counter()
    r = (_trainer if name.startswith('trainer') else _ours)(name, path, tr, te, fold)
    job = time.perf_counter() - t0
    prob = np.mean(r.pop('probs'), 0)
    texts, secs = r.pop('steady')
    return dict(name=name, job_s=round(job, 2), examples_per_s=texts / secs if secs else None,
                held_out=score('classification', te.label.values, prob)['accuracy'],
                fold_s=[round(x, 2) for x in r['fold_s']], device=r['device'], precision=_precision())

def run(out, names=tuple(LABEL)):
    "Every contender in a fresh process of its own (a smoke run: in this one); OUT/gpu_jobs.json after each"
    from common import provenance, track_imports
    track_imports()
    out = Path(out); out.mkdir(parents=True, exist_ok=True)
    res = []
    for name in names:
        if SMOKE: res.append(one(name))
        else:
            r = subprocess.run([sys.executable, __file__, 'one', name], capture_output=True, text=True, timeout=1800)
            line = [l for l in r.stdout.splitlines() if l.startswith('RESULT ')]
            res.append(json.loads(line[-1][7:]) if line else dict(name=name, error=(r.stdout[-1500:] + r.stderr[-3000:])))
        print(name, res[-1] if 'error' not in res[-1] else res[-1]['error'][-2500:], flush=True)
        rec = dict(model='a tiny random BERT' if SMOKE else 'the pretrained MiniLM (all-MiniLM-L6-v2)', rows=ROWS, held_out=HELD_OUT,
                   folds=FOLDS, epochs=EPOCHS, batch=BATCH, max_len=MAX_LEN, buckets=BUCKETS, results=res,
                   **provenance('gpu_jobs', env='gpu', how=HOW))   # made on the GPU machine: its versions are kept, not compared
        (out / 'gpu_jobs.json').write_text(json.dumps(rec, indent=1))   # a run cut short keeps what it measured
    return out / 'gpu_jobs.json'

def record(file):
    "FILE into bench/results/gpu_jobs.md, its goals into gpu_jobs.json, the raw figures into gpu_jobs_runs.json"
    from common import table, record_gpu
    rec = json.loads(Path(file).read_text())
    ok = [r for r in rec['results'] if 'error' not in r]
    failed = [f"{LABEL[r['name']][0]}: {r['error'].strip().splitlines()[-1][:200]}" for r in rec['results'] if 'error' in r]
    anchors = [r for r in ok if r['name'].startswith('trainer')]
    soonest, fastest = (min(anchors, key=lambda r: r['job_s'], default=None),
                        max(anchors, key=lambda r: r['examples_per_s'] or 0, default=None))
    x = lambda a, b: '-' if not (a and b) else f'{a / b:.2f}x'
    rows = [{'run': LABEL[r['name']][0], 'job s': f"{r['job_s']:.0f}", 'sooner than the soonest Trainer': x(soonest and soonest['job_s'], r['job_s']),
             'steady examples/s': f"{r['examples_per_s'] or 0:,.0f}",
             'vs the fastest Trainer': x(r['examples_per_s'], fastest and fastest['examples_per_s']),
             'held-out': f"{r['held_out']:.3f}", 'first fold s': f"{r['fold_s'][0]:.1f}",
             'later folds s': f"{sum(r['fold_s'][1:]) / max(1, len(r['fold_s']) - 1):.1f}"} for r in sorted(ok, key=lambda r: r['job_s'])]
    dev = (ok[0]['device'] if ok else 'no result').removeprefix('CUDA:')
    v = ', '.join(f'{k} {x}' for k, x in rec['versions'].items() if x)
    body = (f"{rec['folds']} folds x {rec['epochs']} epochs of {rec['rows']:,} Rotten Tomatoes snippets (short, of mixed lengths, cut at "
            f"{rec['max_len']} tokens), the fold ensemble scored on {rec['held_out']:,} others; {rec['model']}, "
            f"{ok[0]['precision'] if ok else '-'}, batch {rec['batch']} texts, each contender in a fresh process with an empty compile "
            f"cache, on one **{dev}** ({v}). Job seconds: tokenizing, building, compiling, training and predicting, every fold. "
            f"Steady examples/s: texts trained over seconds in every epoch after a fold's first.\n\n"
            + table(rows, list(rows[0]) if rows else ['run']) + ('\n\nFailed: ' + '; '.join(failed) if failed else ''))
    goals = []
    ours = next((r for r in ok if r['name'] == 'torch'), None)
    if ours and soonest and fastest:
        j, s = soonest['job_s'] / ours['job_s'], (ours['examples_per_s'] or 0) / fastest['examples_per_s']
        goals += [dict(comparison=f"GPU ({dev}), short-text 5-fold job: the speed defaults' job time against {LABEL[soonest['name']][0]}",
                       measured=f'{j:.2f}x sooner', goal=f'>= {GOAL_JOB}x', met=j >= GOAL_JOB),
                  dict(comparison=f"GPU ({dev}), short-text 5-fold job: the speed defaults' steady examples/s against {LABEL[fastest['name']][0]}",
                       measured=f'{s:.2f}x', goal=f'>= {GOAL_RATE}x', met=s >= GOAL_RATE)]
    first = min((r for r in ok if not r['name'].startswith('trainer')), key=lambda r: r['job_s'], default=None)
    if first: goals.append(dict(comparison=f"GPU ({dev}), short-text 5-fold job: the tpututor setting that finishes first (what the GPU "
                                           f"speed defaults should pick)", measured=f"{LABEL[first['name']][0]}, {first['job_s']:.0f} s",
                                goal='reported', met=None))
    text = (f'## GPU: the whole k-fold job on short texts, one {dev}\n\n{body}\n\nMeasured {rec["date"]} on a machine with one {dev}, '
            f'every contender in a fresh process, one after the other. Reproduce: `{HOW}`\n')
    record_gpu('gpu_jobs', rec, goals, text)

def smoke(part=None):
    "A smoke run's part (bench/run.py): the eager contenders on the CPU, in this process, recorded into a scratch folder"
    with tempfile.TemporaryDirectory(prefix='tpututor-smoke-gpu-jobs-') as d: record(run(d, SMOKE_CONTENDERS))

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--smoke']
    cmd = args[0] if args else None
    if cmd == 'run': run(args[1], tuple(args[2:]) or tuple(LABEL))
    elif cmd == 'one': print('RESULT ' + json.dumps(one(args[1])), flush=True)
    elif cmd == 'record': record(args[1])
    elif SMOKE: smoke_alone('gpu_jobs')
    else:
        import torch
        if not torch.cuda.is_available():
            print('bench_gpu_jobs: no CUDA GPU on this machine; bench/results/gpu_jobs.md keeps the figures of the last GPU run')
        else: record(run(tempfile.mkdtemp()))
