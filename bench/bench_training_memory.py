"""The memory of one training step, split into weights, AdamW's moments, gradients and activations, as libtpu compiles
it for TPU v5e-8, v6e-8 and a v5e-16 pod slice on this CPU: the lesson on training memory
(nbs/lessons/05_training_memory.ipynb) prints this record. Nothing here runs on a TPU: every figure is the compiler's,
for chips that are not here.

The step is the lesson's (`tpututor.lessons.memory`): a BERT-like classifier of 2 layers at BERT-base's width (768,
feed-forward 3072, 12 heads, WordPiece's 30,522 tokens), 128 tokens a row, AdamW, data parallel over every chip. Each
setting is compiled at two batches; what the temporaries gain per row is the activations, what is left of them at no
rows is fixed (the gradients, mostly). Beside each stands `tpututor.memory_plan.memory_plan`'s estimate (compiler 'tpu') for
the same sizes, and the FLOPs of a step (`cost_analysis`).

    ./run.sh bench training_memory                recorded
    python bench/bench_training_memory.py --smoke   a tiny width, one chip setting"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, smoke_alone, SMOKE

DIMS = dict(hidden=128, layers=1, ffn=512, vocab=1024, seq=128) if SMOKE else \
    dict(hidden=768, layers=2, ffn=3072, vocab=30522, seq=128)
ROWS = (2, 4) if SMOKE else (32, 128)           # rows a chip: two batches, the line through them
SETTINGS = {                                     # name -> (precision, remat, donate, accelerator)
    'bf16': ('bf16', 'off', True, 'v5e-8'),
    'bf16, remat full': ('bf16', 'full', True, 'v5e-8'),
    'bf16, remat matmuls': ('bf16', 'matmuls', True, 'v5e-8'),
    'bf16, no donation': ('bf16', 'off', False, 'v5e-8'),
    'fp32': ('fp32', 'off', True, 'v5e-8'),
    'pure_bf16': ('pure_bf16', 'off', True, 'v5e-8'),
    'bf16, v6e-8': ('bf16', 'off', True, 'v6e-8'),
    'bf16, v5e-16': ('bf16', 'off', True, 'v5e-16'),   # a pod slice: 16 chips on 4 hosts
}
if SMOKE: SETTINGS = dict(list(SETTINGS.items())[:2])
CONFIG = dict(model_type='bert', vocab_size=DIMS['vocab'], hidden_size=DIMS['hidden'],
              num_hidden_layers=DIMS['layers'], num_attention_heads=DIMS['hidden'] // 64,
              intermediate_size=DIMS['ffn'], max_position_embeddings=DIMS['seq'], type_vocab_size=0)

def measure(name, precision, remat, donate, accelerator)->dict:
    "One setting compiled at both batches: the compiler's split, its line in the batch, FLOPs, the estimate"
    import numpy as np
    from tpututor.lessons.memory import bert_shapes, compile_step, memory_split
    from tpututor.memory_plan import memory_plan
    from tpututor.devices.tpu import libtpu_version, tpu_devices
    shapes = bert_shapes(**DIMS)
    out = dict(setting=name, precision=precision, remat=remat, donate=donate, accelerator=accelerator,
               kind=tpu_devices(accelerator)[0].device_kind, libtpu=libtpu_version(), by_rows={})
    for rows in ROWS:
        t0 = time.perf_counter()
        c = compile_step(shapes, rows, precision, remat, donate, accelerator)
        ca = c.cost_analysis(); ca = ca[0] if isinstance(ca, list) else ca
        est = memory_plan(CONFIG, DIMS['seq'], rows, precision, params=sum(int(np.prod(s)) for s in shapes.values()),
                          n_outputs=0, compiler='tpu')
        out['by_rows'][str(rows)] = dict(memory_split(c, shapes, precision), flops=float(ca['flops']),
                                         compile_s=round(time.perf_counter() - t0, 1),
                                         estimate={k: float(v) for k, v in est.items()})
    a, b = (out['by_rows'][str(r)]['temporaries'] for r in ROWS)
    out['per_row'] = (b - a) / (ROWS[1] - ROWS[0])           # the activations of one more row a chip
    out['fixed'] = a - out['per_row'] * ROWS[0]              # the temporaries at no rows: the gradients, mostly
    return out

def main():
    track_imports()
    from tpututor.lessons.memory import bert_shapes
    import numpy as np
    runs = [measure(n, *s) for n, s in SETTINGS.items()]
    MB, r = 1e6, str(ROWS[1])
    rows = [{'setting': x['setting'], 'weights MB': x['by_rows'][r]['weights'] / MB,
             'AdamW MB': x['by_rows'][r]['optimizer'] / MB, 'fixed temporaries MB': x['fixed'] / MB,
             'activations MB a row': x['per_row'] / MB, 'new outputs MB': x['by_rows'][r]['outputs'] / MB,
             f'total MB at {r} rows': x['by_rows'][r]['total'] / MB,
             'estimate MB': x['by_rows'][r]['estimate']['total'] / MB,
             'GFLOP': x['by_rows'][r]['flops'] / 1e9, 'compile s': x['by_rows'][r]['compile_s']} for x in runs]
    n = sum(int(np.prod(s)) for s in bert_shapes(**DIMS).values())
    body = (f"One training step of a BERT-like classifier ({DIMS['layers']} layers, width {DIMS['hidden']}, "
            f"{DIMS['seq']} tokens a row, {n:,} weights, AdamW), data parallel, compiled by libtpu for each chip on "
            f"this CPU at {ROWS[0]} and {ROWS[1]} rows a chip; per chip; not run on a TPU.\n\n" +
            table(rows, list(rows[0])) +
            "\n\nThe estimate is `tpututor.memory_plan.memory_plan` (compiler 'tpu'), fitted on the keras backend's step.")
    goals = [dict(comparison=f"training memory: {x['setting']}, compiled total at {r} rows a chip",
                  measured=f"{x['by_rows'][r]['total'] / MB:.0f} MB", goal='recorded', met=None, run=x['setting'],
                  **{k: v for k, v in x.items() if k != 'setting'}) for x in runs]
    report('training_memory', 'The memory of a training step, compiled for TPU v5e-8, v6e-8 and v5e-16', body,
           provenance('training_memory'), goals)

def smoke(part=None): main()

if __name__ == '__main__':
    if SMOKE: smoke_alone('training_memory')
    else: main()
