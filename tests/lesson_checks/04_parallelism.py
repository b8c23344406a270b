"""The checks of nbs/lessons/04_parallelism.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after par00003
from fastcore.test import *

# %% after par00005
test_eq(n_params, 768 * 3 * 768 + 768 * 768 + 2 * 768 * 3072 + 2 * 768)    # 7,079,424: BERT-base's layer, no biases
GAINS = 2 * 768                                                                # the two LayerNorm gains, never split
MATS_MB = 2 * (n_params - GAINS) / 1e6                                         # the weight matrices in bfloat16

# %% after par00008
test_eq(set(programs), {'data parallel', 'FSDP', 'tensor parallel'})
test_eq(kind, 'TPU v5 lite')                                                   # compiled for a v5e, not for this CPU
test_eq(len(tpu_devices('v5e-8')), 8)

# %% after par00010
w = memory.weights
test_close(w['data parallel'], 2 * n_params / 1e6, eps=1e-9)                   # the whole layer on every chip
test_close(w['FSDP'], MATS_MB / 8 + 2 * GAINS / 1e6, eps=1e-9)                 # an eighth of each matrix
test_close(w['tensor parallel'], MATS_MB / 4 + 2 * GAINS / 1e6, eps=1e-9)      # a quarter
batch_mb = memory.inputs - w                                                   # x and y: 2 bytes a value
test_close(batch_mb['data parallel'], 2 * 2 * 128 * 768 * 2 / 1e6, eps=5e-3)   # 2 sequences a chip: 0.8 MB
test_close(batch_mb['tensor parallel'], 2 * 8 * 128 * 768 * 2 / 1e6, eps=5e-3) # the copy's 8 sequences
assert 0.15 < memory.total['FSDP'] / memory.total['data parallel'] < 0.25, memory   # "about a fifth"
test_eq((memory.temporaries == 0).all(), True)                                 # "no temporary in HBM at this batch"
assert 'S(1)' in programs['data parallel'].as_text()

# %% after par00013
cs = {s: collectives(c) for s, c in programs.items()}
dp_, fs_, tp_ = cs['data parallel'], cs['FSDP'], cs['tensor parallel']
test_eq(set(dp_.kind), {'all-reduce'}); test_eq(len(dp_), 2); test_eq(set(dp_.devices), {8})
test_close(dp_.MB.max(), MATS_MB, eps=1e-6)                                    # every gradient, summed once
gathers, scatters = fs_[fs_.kind == 'all-gather'], fs_[fs_.kind == 'reduce-scatter']
test_eq((len(gathers), len(scatters), set(fs_.devices)), (4, 4, {8}))
test_close(gathers.MB.sum(), MATS_MB, eps=1e-6)                                # the whole layer on every chip
test_close(scatters.MB.sum(), MATS_MB / 8, eps=1e-6)                           # each chip's eighth of the gradients
test_eq(set(fs_[~fs_.kind.isin(['all-gather', 'reduce-scatter'])].kind), {'all-reduce'})   # the gains
assert 'chain_id' in programs['FSDP'].as_text()                                # an all-gather cut into a chain
acts_ = tp_[tp_.activations]
test_eq((len(acts_), set(acts_.kind), set(acts_.devices)), (4, {'all-reduce'}, {4}))   # 2 forward, 2 backward
test_close(acts_.MB.iloc[0], 8 * 128 * 768 * 2 / 1e6, eps=1e-6)                # [8, 128, 768] in bfloat16
ar_lines = [l for l in programs['tensor parallel'].as_text().splitlines()
            if re.search(r' all-reduce(-start)?\(', l) and ',128,768]' in l.split(' all-reduce')[0]]
test_eq(sorted('transpose(jvp' in l for l in ar_lines), [False, False, True, True])   # 2 forward, 2 backward
grads_ = tp_[~tp_.activations]
test_eq(set(grads_.devices), {2}); test_close(grads_.MB.max(), MATS_MB / 4, eps=1e-6)
test_eq(group_size("replica_groups={{0,1,2,3}}, x"), 4); test_eq(group_size("replica_groups=[4,2]<=[8], x"), 2)

# %% after par00016
test_close(table.ring_ms['data parallel'], table.ring_ms['FSDP'], eps=1e-4)    # the same bytes, but for the gains
test_close(table.ring_ms['data parallel'], 1e3 * 7 / 8 * dp_.MB.sum() * 1e6 / 45e9, eps=1e-9)   # per chip, not x 8
assert 4.5 < table.ring_ms['data parallel'] / table.compute_ms['data parallel'] < 5.5, table   # "about 5 times"
assert 0.4 < table.ring_ms['tensor parallel'] / table.ring_ms['data parallel'] < 0.6, table    # "about half"
test_close(table.GFLOP['tensor parallel'], table.GFLOP['data parallel'], eps=0.1)   # the same work a chip
model_flops = 6 * n_params * 2 * 128 + 3 * 2 * (4 * 128 * 128 * 768)          # matmuls, attention's two: 6 x P x tokens
test_close(table.GFLOP['data parallel'] * 1e9 / model_flops, 1, eps=0.03)      # FLOPs are rows times a layer's
test_eq(f"{table.ring_ms['data parallel']:.3f}, {table.compute_ms['data parallel']:.3f}", '0.275, 0.057')

# %% after par00019
first = lambda name: int(rows[plot[name][0] >= plot[name][1]][0])
test_eq([first(f'{s}, v5e-8') for s in ('data parallel', 'FSDP')], [10, 10])
test_eq(first('data parallel, v6e-8'), 23)
comp, comm = plot['tensor parallel, v5e-8']
assert (comm > comp).all() and 1.5 < comm[-1] / comp[-1] < 2.5, comm[-1] / comp[-1]   # "about twice at every batch"
v5, v6 = tpu_spec('v5e-8'), tpu_spec('v6e-8')
test_eq(round(v6['peak_bf16_tflops_per_chip'] / v5['peak_bf16_tflops_per_chip'], 1), 4.7)
test_eq(v6['ici_gbps_per_link'] / v5['ici_gbps_per_link'], 2)
test_eq(v6e.input_shardings[0][0]['w1'].mesh.devices.flat[0].device_kind, 'TPU v6 lite')

# %% after par00023
pc = collectives(pod)
test_close(pc.MB.max(), MATS_MB, eps=1e-6); test_eq(set(pc.devices), {16})     # the same bytes, over 16
test_eq(len(tpu_devices('v5e-16')), 16)
r16, r8 = costs(pod, 'v5e-16')['ring_ms'], table.ring_ms['data parallel']
test_eq((f'{r16:.3f}', round(100 * (r16 / r8 - 1))), ('0.295', 7))

# %% after par00025
test_close(per_device_mb(tp2)['weights'], MATS_MB / 2 + 2 * GAINS / 1e6, eps=1e-9)   # half the layer: 7.1 MB
test_eq(f"{per_device_mb(tp2)['weights']:.1f}", '7.1')
test_eq((len(acts), set(acts.devices)), (4, {2})); test_close(acts.MB.iloc[0], 0.786, eps=1e-3)
test_eq(f'{1e3 * t_acts:.3f}', '0.035')
W5_ = tpu_spec('v5e-8')['ici_gbps_per_link'] * 1e9
tp4 = sum(ring_seconds(r.kind, r.MB, r.devices, W5_) for r in acts_.itertuples())
test_eq(f'{1e3 * tp4:.3f}', '0.105')
from tpututor.lessons.answers_chips import _tp_seconds                         # the exercise's answer is the compiler's
test_close(_tp_seconds(16, 128, 768, (2, 4), W5_), tp4, eps=1e-12)
test_close(_tp_seconds(16, 128, 768, (4, 2), W5_), t_acts, eps=1e-12)

# %% after par00029
ns = {'np': np}; exec(exercise('tp_seconds').solution().code, ns)
test_eq(bool(exercise('tp_seconds').check(ns['tp_seconds'])), True)
test_eq(bool(exercise('tp_seconds').check(tp_seconds)), False)                 # the stub, as a learner first runs it
