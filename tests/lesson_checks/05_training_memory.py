"""The checks of nbs/lessons/05_training_memory.ipynb: each block runs in the lesson's namespace right after the code
cell whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after mem00005
from fastcore.test import *

# %% after mem00009
s_ = bert_shapes()
n_ = sum(int(np.prod(v)) for v in s_.values())
test_eq(n_, 30522 * 768 + 128 * 768 + 768 * 2 + 2 * (768 * 3 * 768 + 768 * 768 + 2 * 768 * 3072 + 2 * 768))

# %% after mem00019
test_eq(kind, 'TPU v5 lite')                                                   # compiled for a v5e, not for this CPU
sp = memory_split(small, tiny, 'bf16')
n_tiny = sum(int(np.prod(v)) for v in tiny.values())
test_eq(n_tiny, 344_576); test_eq(sp['weights'], 4 * n_tiny); test_eq(sp['optimizer'], 8 * n_tiny)
test_eq(sp['temporaries'], 0)                                                  # "the compiler counts no temporaries"
assert sp['outputs'] < 1000, sp                                                # "a few hundred bytes of bookkeeping"
assert 0 <= sp['batch'] - 4 * 128 * 4 - 4 * 4 < 4096, sp                       # ids and labels of 4 rows, padded
assert 'S(1)' in small.as_text()

# %% after mem00022
from tpututor.records import record_entry
rec_ = {r['run']: r for r in record_entry('training_memory.json')}
test_eq(set(rec_), {'bf16', 'bf16, remat full', 'bf16, remat matmuls', 'bf16, no donation', 'fp32', 'pure_bf16',
                    'bf16, v6e-8', 'bf16, v5e-16'})
test_eq({r['kind'] for r in rec_.values()}, {'TPU v5 lite', 'TPU v6 lite'})
for r in rec_.values():
    var = 2 if r['precision'] == 'pure_bf16' else 4
    for rows, x in r['by_rows'].items():
        test_eq(x['weights'], var * n_); test_eq(x['optimizer'], 2 * var * n_)
        test_eq(x['total'], x['weights'] + x['optimizer'] + x['batch'] + x['outputs'] + x['temporaries'])
    lo_, hi_ = sorted(r['by_rows'], key=int)
    a, b = r['by_rows'][lo_]['temporaries'], r['by_rows'][hi_]['temporaries']
    test_close(r['per_row'], (b - a) / (int(hi_) - int(lo_)), eps=1e-6)
    assert r['per_row'] > 0, r['setting']

# %% after mem00025
assert 1.3 < runs['fp32']['per_row'] / runs['bf16']['per_row'] < 2, runs   # float32 activations: not twice
test_close(at('pure_bf16')['weights'] * 2, at('bf16')['weights'], eps=1e-9)

# %% after mem00028
f_, m_, o_ = (at(s) for s in ('bf16, remat full', 'bf16, remat matmuls', 'bf16'))
assert f_['temporaries'] < m_['temporaries'] < o_['temporaries'], (f_, m_, o_)
assert f_['flops'] > m_['flops'] > o_['flops'] * 0.999, (f_['flops'], m_['flops'], o_['flops'])
assert 1.1 < f_['flops'] / o_['flops'] < 1.5, f_['flops'] / o_['flops']         # about a third more: a forward again

# %% after mem00031
nd, d = runs['bf16, no donation']['by_rows'][hi], runs['bf16']['by_rows'][hi]
assert abs(nd["outputs"] / (3 * d["weights"]) - 1) < 1e-3, nd          # new weights and both moments beside
assert d['outputs'] < 1000 and nd['total'] > d['total']

# %% after mem00034
assert abs(runs['bf16, v6e-8']['by_rows'][hi]['total'] / runs['bf16']['by_rows'][hi]['total'] - 1) < 0.02
pod_, eight_ = runs['bf16, v5e-16'], runs['bf16']             # "a pod slice holds the same bytes a chip"
test_eq(pod_['accelerator'], 'v5e-16')
for k_ in ('weights', 'optimizer', 'temporaries', 'total'):
    assert abs(pod_['by_rows'][hi][k_] - eight_['by_rows'][hi][k_]) <= 0.001 * eight_['by_rows'][hi][k_], k_
for s_name, r in runs.items():
    est = r['by_rows'][hi]['estimate']['total'] / r['by_rows'][hi]['total'] - 1
    assert abs(est) < 0.6, (s_name, est)

# %% after mem00040
ks = memory_split(kept, tiny, 'bf16')
assert abs(ks["outputs"] / (3 * 4 * n_tiny) - 1) < 1e-3, ks           # weights and moments, new buffers
test_eq(f"{ks['outputs'] / 1e6:.3f}, {sp['total'] / 1e6:.3f}, {ks['total'] / 1e6:.3f}", '4.135, 4.138, 8.273')

# %% after mem00042
test_eq(max(('weights', 'gradients', 'optimizer', 'activations'), key=plan.get), 'activations')

# %% after mem00046
from tpututor.lessons.answers_chips import _adamw_bytes
test_eq(_adamw_bytes(tiny, "bf16"), sp["optimizer"])                   # the answer is the compiler's
test_eq(_adamw_bytes(bert_shapes(), 'pure_bf16'), runs['pure_bf16']['by_rows'][hi]['optimizer'])
ns = {'np': np}; exec(exercise('adamw_bytes').solution().code, ns)
test_eq(bool(exercise('adamw_bytes').check(ns['adamw_bytes'])), True)
test_eq(bool(exercise('adamw_bytes').check(adamw_bytes)), False)                # the stub, as a learner first runs it
held_back = {   # wrong answers a learner writes, and the words that must name each mistake
    'in bfloat16 under mixed precision': lambda sh, p: 2 * sum(int(np.prod(v)) for v in sh.values()) * (
        4 if p == 'fp32' else 2),
    'one moment a weight': lambda sh, p: sum(int(np.prod(v)) for v in sh.values()) * (2 if p == 'pure_bf16' else 4),
    'the weights counted': lambda sh, p: 3 * sum(int(np.prod(v)) for v in sh.values()) * (2 if p == 'pure_bf16' else 4),
    'float32 in every precision': lambda sh, p: 8 * sum(int(np.prod(v)) for v in sh.values()),
    '1-D weights left out': lambda sh, p: 2 * sum(int(np.prod(v)) for v in sh.values() if len(v) > 1) * (
        2 if p == 'pure_bf16' else 4),
}
for says, fn in held_back.items():
    r = exercise('adamw_bytes').check(fn)
    test_eq(bool(r), False); assert says in ' '.join(repr(r).split()), (says, repr(r))
