"""Predicting a test set with the 5 fold models of a k-fold run: `tpututor predict` (`tpututor.predict.predict_run`, from
the run directory alone) against what a user would otherwise call, the Hugging Face `pipeline` and `Trainer.predict`,
each at its best on the same device: bfloat16 where the device has it, batches of the same size, the 5 folds'
models loaded from disk one after the other, their probabilities averaged.

- tpututor: the run's model built from `RUN/model`, rows sorted into the run's length buckets (each batch padded to
  its bucket), bf16 autocast on a GPU (`precision='auto'`).
- pipeline: `pipeline('text-classification', model=fold, dtype=bfloat16, device=0)`, its texts tokenized and padded
  batch by batch (`batch_size`), every class's score (`top_k=None`).
- Trainer.predict: the texts tokenized once (as a user does), `DataCollatorWithPadding` (each batch padded to its
  longest row), `bf16_full_eval=True`.

The model is BERT-base's architecture (12 x 768, the uncased 30,522-token vocabulary) with random weights, for the
speed of bert-base-uncased without a download; the anchors' fold checkpoints are `BertForSequenceClassification`s of
the same config. The tpututor run is a real one: `run_kfold` with the `torch` backend, one short epoch per fold on
a few hundred rows (its weights' values do not change the speed). The test set is the Rotten Tomatoes snippets not
trained on: short texts of varied length, as most Kaggle text competitions have. Each contender runs in a fresh
process, first once to warm the GPU up (not timed), then timed: test examples/s over all 5 folds, model loading
and tokenization included, as a submission notebook spends them.

    python bench/bench_predict.py --smoke              seconds, on this CPU: a tiny model, 2 folds, every contender in one process
    python bench/bench_predict.py prepare DIR          here: the texts, and a config-only BERT-base folder with its tokenizer
    python bench/bench_predict.py run DIR OUT          on the GPU machine: the 5-fold run, then every contender: OUT/predict.json
    python bench/bench_predict.py record FILE          here: FILE (OUT/predict.json) into bench/results/predict.{md,json}
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import smoke_alone, SMOKE

FOLDS, LEN, BATCH, TRAIN_ROWS, GOAL = (2, 32, 32, 64, 1.5) if SMOKE else (5, 128, 128, 320, 1.5)
SMOKE_TEST_ROWS = 64   # a smoke run's test texts
CONTENDERS = {'tpututor': f'tpututor predict ({FOLDS} folds, from the run directory)', 'pipeline': 'HF pipeline, bf16', 'trainer': 'HF Trainer.predict, bf16_full_eval'}
HOW = 'python bench/bench_predict.py prepare DIR; python bench/bench_predict.py run DIR OUT (on a GPU); python bench/bench_predict.py record OUT/predict.json'

def prepare(d, smoke:bool=False):
    "The training and test texts as CSVs, and a config-only model folder (BERT-base, or a tiny BERT for --smoke) with MiniLM's tokenizer"
    import shutil
    import pandas as pd
    from transformers import BertConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.models.hub import minilm_path
    d = Path(d); d.mkdir(parents=True, exist_ok=True)
    rt = rotten_tomatoes().sample(frac=1, random_state=0).reset_index(drop=True)
    rt['label'] = rt.label.map({1: 'fresh', 0: 'rotten'})
    rt[:TRAIN_ROWS][['text', 'label']].to_csv(d/'train.csv', index=False)
    rt[TRAIN_ROWS:TRAIN_ROWS + (SMOKE_TEST_ROWS if smoke else len(rt))][['text']].assign(id=lambda x: range(len(x))).to_csv(d/'test.csv', index=False)
    (d/'bert').mkdir(exist_ok=True)
    (BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64) if smoke else BertConfig()).save_pretrained(d/'bert')
    for f in ('tokenizer.json', 'tokenizer_config.json', 'vocab.txt', 'special_tokens_map.json'):
        if (minilm_path()/f).exists(): shutil.copy(minilm_path()/f, d/'bert'/f)   # the uncased vocabulary BERT-base has
    print(f"{d}: {TRAIN_ROWS} training rows, {len(pd.read_csv(d/'test.csv')):,} test rows, {'a tiny BERT' if smoke else 'BERT-base'}")

def make_run(d, out):
    "The k-fold run tpututor predicts with (torch backend), and a Hugging Face checkpoint per fold for the anchors"
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification
    from tpututor.cli import main
    run = Path(out)/'run'
    if not (run/'summary.json').exists():
        assert main(['train', '--data', str(Path(d)/'train.csv'), '--model', str(Path(d)/'bert'), '--backend', 'torch', '--folds', str(FOLDS),
                     '--epochs', '1', '--max-len', str(LEN), '--buckets', '4', '--batch-size', '32', '--out', str(run)]) == 0
    for i in range(FOLDS):
        torch.manual_seed(i)
        m = AutoModelForSequenceClassification.from_config(AutoConfig.from_pretrained(Path(d)/'bert', num_labels=2))
        m.save_pretrained(Path(out)/'hf'/f'fold{i}', safe_serialization=True)
    return run

def _texts(d)->list:
    import pandas as pd
    return pd.read_csv(Path(d)/'test.csv').text.tolist()

def _tpututor(d, out, device):
    from tpututor.predict import predict_run
    return lambda: predict_run(Path(out)/'run', _texts(d), batch_size=BATCH, verbose=False)

def _pipeline(d, out, device):
    import numpy as np, torch
    from transformers import pipeline, AutoTokenizer
    tok, dtype = AutoTokenizer.from_pretrained(Path(d)/'bert'), torch.bfloat16 if device != 'cpu' else torch.float32
    def fold(i, texts):
        pipe = pipeline('text-classification', model=str(Path(out)/'hf'/f'fold{i}'), tokenizer=tok, device=device, dtype=dtype)
        res = pipe(texts, batch_size=BATCH, truncation=True, max_length=LEN, top_k=None)
        return np.array([[next(s['score'] for s in r if s['label'] == f'LABEL_{j}') for j in range(2)] for r in res])
    return lambda: np.mean([fold(i, _texts(d)) for i in range(FOLDS)], 0)

def _trainer(d, out, device):
    import numpy as np, torch
    from transformers import AutoTokenizer, AutoModelForSequenceClassification, Trainer, TrainingArguments, DataCollatorWithPadding
    tok = AutoTokenizer.from_pretrained(Path(d)/'bert')
    class Rows(torch.utils.data.Dataset):
        def __init__(self, texts): self.enc = tok(texts, truncation=True, max_length=LEN)
        def __len__(self): return len(self.enc['input_ids'])
        def __getitem__(self, i): return {k: v[i] for k, v in self.enc.items()}
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_eval_batch_size=BATCH, bf16_full_eval=device != 'cpu', report_to=[],
                             use_cpu=device == 'cpu', disable_tqdm=True)
    def run():
        rows, out_ = Rows(_texts(d)), []
        for i in range(FOLDS):
            t = Trainer(model=AutoModelForSequenceClassification.from_pretrained(Path(out)/'hf'/f'fold{i}'), args=args, data_collator=DataCollatorWithPadding(tok))
            out_.append(torch.softmax(torch.from_numpy(t.predict(rows).predictions).float(), -1).numpy())
        return np.mean(out_, 0)
    return run

def one(name, d, out)->dict:
    "One contender in this process: a warm-up pass, then a timed one; its figures"
    import numpy as np, torch
    os.environ.setdefault('USE_TF', '0'); os.environ.setdefault('USE_TORCH_XLA', '0')
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    fn = {'tpututor': _tpututor, 'pipeline': _pipeline, 'trainer': _trainer}[name](d, out, device)
    fn()                                     # warm-up: CUDA context, kernels, file cache
    if device == 'cuda': torch.cuda.synchronize()
    t0 = time.perf_counter(); pred = fn()
    if device == 'cuda': torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    mods = sorted(m for m in sys.modules if m.startswith('tpututor.') and not m.startswith('tpututor._'))
    from tpututor.records import code_hash
    kind = torch.cuda.get_device_name() if device == 'cuda' else 'CPU'
    return dict(name=name, seconds=secs, rows=len(pred), examples_per_s=len(pred) * 1.0 / secs, device=kind,
                shape=list(np.asarray(pred).shape), modules=mods, code=code_hash(mods, Path(__file__)))

def run(d, out, names=tuple(CONTENDERS)):
    """Every contender in a fresh process, one after the other (a smoke run: in this process); the raw figures into
    OUT/predict.json, with the code hash of what every process imported"""
    from common import provenance, track_imports
    track_imports()
    os.environ.setdefault('USE_TF', '0'); os.environ.setdefault('USE_TORCH_XLA', '0'); os.environ['TPUTUTOR_PROGRESS'] = 'lines'
    Path(out).mkdir(parents=True, exist_ok=True)
    if SMOKE: make_run(d, out)
    else: subprocess.run([sys.executable, __file__, 'make_run', str(d), str(out)], check=True)
    results = []
    for n in names:
        if SMOKE:
            results.append(one(n, d, out)); continue
        p = subprocess.run([sys.executable, __file__, 'one', n, str(d), str(out)], capture_output=True, text=True)
        line = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
        results.append(json.loads(line[-1][7:]) if line else dict(name=n, error=(p.stdout + p.stderr)[-3000:]))
        print(f"{n}: {results[-1].get('examples_per_s', 0):,.0f} examples/s" if line else f"{n} failed:\n{results[-1]['error']}", flush=True)
    rec = dict(folds=FOLDS, length=LEN, batch=BATCH, results=results, **provenance('predict', env='gpu', how=HOW))   # made on the GPU machine
    (Path(out)/'predict.json').write_text(json.dumps(rec, indent=1) + '\n')
    return rec

def summary(rec)->tuple: # (body, goal row)
    "The table and the goal: tpututor's examples/s against the faster anchor"
    from common import table, ratio
    ok = {r['name']: r for r in rec['results'] if 'error' not in r}
    dev = next(iter(ok.values()))['device']
    secs = f"seconds ({rec['folds']} folds)"
    rows = [{'contender': CONTENDERS[n], 'examples/s': f"{r['examples_per_s']:,.0f}", secs: f"{r['seconds']:.1f}", 'code': r['code']}
            for n, r in ok.items()]
    anchor = max((r for n, r in ok.items() if n != 'tpututor'), key=lambda r: r['examples_per_s'])
    x = ok['tpututor']['examples_per_s'] / anchor['examples_per_s']
    goal = ratio(f"{dev}: test examples/s of tpututor predict ({rec['folds']} folds, bf16 where the device has it) vs the faster of the HF pipeline and Trainer.predict ({CONTENDERS[anchor['name']]})", x, GOAL)
    body = (f"{next(iter(ok.values()))['rows']:,} test texts, {rec['folds']} folds, batches of {rec['batch']}, length <= {rec['length']}, one {dev}; "
            f"{', '.join(f'{k} {v}' for k, v in rec['versions'].items() if v)}.\n\n" + table(rows, ['contender', 'examples/s', secs, 'code']))
    return body, goal

def record(file):
    "FILE into bench/results/predict.md and .json (the goal row, with the code hash tpututor's contender ran)"
    from common import report
    rec = json.loads(Path(file).read_text())
    body, goal = summary(rec)
    prov = {k: rec[k] for k in ('bench', 'modules', 'files', 'code', 'versions', 'env', 'date', 'machine', 'rerun', 'how')}
    report('predict', f"Predicting a test set with {rec['folds']} folds: tpututor predict vs the HF pipeline and Trainer.predict", body, prov, [goal])

def smoke(part=None):
    "A smoke run's part (bench/run.py): every contender on a tiny BERT and a few texts, in this process; recorded into the run's temporary folder"
    with tempfile.TemporaryDirectory(prefix='tpututor-smoke-predict-') as d:
        prepare(d, smoke=True)
        rec = run(d, d)
        failed = [r for r in rec['results'] if 'error' in r]
        if failed: sys.exit(f"failed: {[r['name'] for r in failed]}")
        assert all(r['shape'] == [SMOKE_TEST_ROWS, 2] for r in rec['results']), rec['results']
        record(Path(d)/'predict.json')

if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else None
    if SMOKE: smoke_alone('predict')
    elif cmd == 'prepare': prepare(sys.argv[2])
    elif cmd == 'make_run': make_run(sys.argv[2], sys.argv[3])
    elif cmd == 'run': run(sys.argv[2], sys.argv[3], tuple(sys.argv[4:]) or tuple(CONTENDERS))
    elif cmd == 'one': print('RESULT ' + json.dumps(one(sys.argv[2], sys.argv[3], sys.argv[4])), flush=True)
    elif cmd == 'record': record(sys.argv[2])
    else:
        import torch
        if not torch.cuda.is_available():
            print('bench_predict: no CUDA GPU on this machine (its figures are a GPU\'s); bench/results/predict.md keeps those of the last GPU run. '
                  'python bench/bench_predict.py --smoke checks it runs here.')
        else:
            d = tempfile.mkdtemp(); prepare(d); run(d, d); record(Path(d)/'predict.json')
