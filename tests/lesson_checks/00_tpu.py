"""The checks of nbs/lessons/00_tpu.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 16a73b40
from fastcore.test import *

# %% after 58dc7774
test_eq([pad_to_multiple(n) for n in (0, 1, 127, 128, 129, 256, 300)], [0, 128, 128, 128, 256, 256, 384])
test_eq([pad_to_multiple(n, 8) for n in (1, 8, 9, 20)], [8, 8, 16, 24])
test_fail(lambda: pad_to_multiple(10, 0), contains='`m` must be an int >= 1')
test_fail(lambda: pad_to_multiple(-1), contains='`n` must be an int >= 0')

# %% after 094a935f
busy = [int((g >= 0).sum()) for g in trace]
test_eq(busy, [sum(1 for i in range(4) for j in range(4) if 0 <= t - i - j < 3) for t in range(cycles)])
test_eq(busy, [1, 3, 6, 9, 10, 9, 6, 3, 1])

# %% after 00d837dd
test_close(c6, a6 @ b6, eps=1e-9); test_eq(len(trace6), cyc6)
test_eq(('maxcdn' in html, 'fa fa-' in html), (False, False))
shapes = [((8, 8, 8), 8), ((1, 3, 5), 4), ((50, 37, 20), 8), ((16, 24, 9), 4), ((7, 130, 129), 128)]
for (M_, K_, N_), s_ in shapes:   # the simulator against numpy, on shapes that need padding and tiling, and on an MXU-sized array
    a_, b_ = rng.standard_normal((M_, K_)), rng.standard_normal((K_, N_))
    c_, cyc_ = systolic_matmul(a_, b_, size=s_)
    test_close(c_, a_ @ b_, eps=1e-9)
    test_eq(cyc_, math.ceil(K_ / s_) * math.ceil(N_ / s_) * (M_ + 2*s_ - 2))
test_eq(systolic_matmul(np.ones((8, 8)), np.ones((8, 8)))[1], 22)   # one tile: 8 rows + 7 to fill + 7 to drain
test_fail(lambda: systolic_matmul(np.ones((2, 3)), np.ones((4, 5))), contains='(2, 3) and (4, 5)')

# %% after 182732ea
test_eq(cyc9, 4 * cyc8)

# %% after 8b502909
for size, u in zip((128, 256), util.values()): test_close(list(u.values()), [M / (M + 2*size - 2) for M in u], eps=1e-12)
test_eq(all(x < y for x, y in zip(list(util['128 x 128 array'].values()), list(util['128 x 128 array'].values())[1:])), True)

# %% after 99f2f938
from torch.utils.flop_counter import FlopCounterMode
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertLayer

for seq, batch in ((128, 1), (64, 3)):
    bert = BertLayer(BertConfig(attn_implementation='eager')).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        bert(torch.randn(batch, seq, 768))
    ours = sum(r['flops'] for r in layer_flops(seq=seq, batch=batch) if r['unit'] == 'MXU')
    test_eq(counter.get_total_flops(), ours)
test_eq('tensorflow' in sys.modules, False)

# %% after 37fe8dd9
test_eq(by.devices.to_dict(), {'v5e-8': 8, 'v5e-1': 1, 'v6e-8': 8, 'v5p-8': 4, 'v4-8': 4, 'v3-8': 8, 'v2-8': 8, 'v7x-8': 8})
test_eq(by.hbm_gb_per_device.to_dict(), {'v5e-8': 16, 'v5e-1': 16, 'v6e-8': 32, 'v5p-8': 95, 'v4-8': 32, 'v3-8': 16, 'v2-8': 8,
                                          'v7x-8': 96})
test_eq((by.loc['v6e-8', 'mxu'], by.loc['v6e-8', 'peak_bf16_tflops_per_chip'], by.loc['v6e-8', 'hbm_gb_per_chip']), ('256x256', 918, 32))
test_eq(tt.implied_clock_ghz.dropna().between(0.5, 2.0).all(), True)   # every row with its MXUs: an ordinary clock
test_eq(by.implied_clock_ghz.isna().to_dict()['v7x-8'], True)          # v7x: Google's page does not give them
test_eq(all(r['source'].startswith('https://') for r in TPU_SPECS), True)
test_eq([round(v) for v in show['FLOPs/byte'].dropna()], [241, 241, 560, 166, 229, 137, 313])   # part 4's "241 on v5e, 560 on v6e"
v6e_2mxu = dict(tpu_spec('v6e-8'), mxus_per_core=2)
test_eq(tpu_table([v6e_2mxu]).implied_clock_ghz.tolist(), [3.5])   # the prose's 3.5 GHz
test_eq([mxu_size(n) for n in ('v5e-8', 'v5e', 'TPU v5 lite', 'v6e-8', 'TPU v6 lite', 'TPU v4', 'TPU v5', 'v3-8')],
        [128, 128, 128, 256, 256, 128, 128, 128])
test_fail(lambda: mxu_size('v8'), contains="Unknown TPU 'v8'")
test_fail(lambda: mxu_size('TPU v9'), contains="'TPU v6 lite'")

# %% after 9c21fe0a
v5e = tpu_spec('v5e-8')   # the prose: HBM 819 GB/s is 18x one ICI link's 45 GB/s, which is 3x PCIe's 15 GB/s
test_eq((round(v5e['hbm_gbps_per_chip'] / v5e['ici_gbps_per_link']), round(v5e['ici_gbps_per_link'] / v5e['pcie_gbps_per_chip'])), (18, 3))

# %% after ef33b709
test_eq(pods.loc['v6e-8', 'ici_over_dcn'], 64.0)   # the prose: 64 to 192 times less

# %% after e38ddd09
test_eq(mxu_utilisation(128), 1.0)
test_eq(mxu_utilisation(129), 129 / 256)
test_eq(mxu_utilisation((129, 129)), (129 / 256) ** 2)
test_eq(mxu_utilisation((768, 3072)), 1.0)               # BERT-base's feed-forward weight fills whole 128 tiles...
test_eq(mxu_utilisation((768, 3072), tile=mxu_size('v6e')), 1.0)   # ...and whole 256 tiles
test_eq(mxu_utilisation((64, 128)), 0.5)                 # one head's Q @ K^T contracts over 64: half the array
test_eq(mxu_utilisation((64, 128), tile=mxu_size('v6e')), 0.125)  # and an eighth of v6e's
test_eq(mxu_utilisation((20, 128), tile=(8, 128)), 20 / 24)
test_fail(lambda: mxu_utilisation((3, 4), tile=(8,)), contains='one tile size per dimension')
test_fail(lambda: mxu_utilisation((0, 4)), contains='`shape` must be an int >= 1')

# %% after f0c6518b
ns_pad = np.arange(1, 1025)
u128, u256 = ([mxu_utilisation((n, n), tile=t) for n in ns_pad] for t in (128, 256))
test_eq(all(b <= a for a, b in zip(u128, u256)), True)     # 256-wide tiles never waste less...
test_eq([n for n, a, b in zip(ns_pad, u128, u256) if a == b == 1], [256, 512, 768, 1024])   # ...and only multiples of 256 fill both

# %% after 2e7c77a3
assert by_batch[top] > 1.2 * by_batch[1] and top >= 16, by_batch
test_close(mxu_utilisation((129, 129)), 0.254, eps=1e-3)   # the prose: "about a quarter of the work it pays for"

# %% after dbca95e3
test_eq(all(x < y for x, y in zip(list(ai.values()), list(ai.values())[1:])), True)   # intensity grows with the batch...
test_eq(ai[128] / ai[1] < 128, True)                                                    # ...far slower than the batch

# %% after 91c9f0d5
ridge5e, ridge6e = (roofs[k][0] / roofs[k][1] for k in list(roofs)[:2])
test_eq((ai[1] < ridge5e < ai[8], ai[128] < ridge6e, ai[1] > roofs['this CPU'][0] / roofs['this CPU'][1]), (True, True, True))

# %% after 5c7ce8f0
test_close(t.summary(seconds=10 * 64 / rate)['mfu_datasheet'], rate * per_seq / (8 * v5e_chip), eps=1e-12)
from torch.utils.flop_counter import FlopCounterMode
from transformers.models.bert.modeling_bert import BertEncoder
cfg = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024, attn_implementation='eager')
enc = BertEncoder(cfg)
for seq, batch in ((64, 2), (40, 3)):   # train_flops against every matmul of a forward and backward pass, counted by torch
    x = torch.randn(batch, seq, 256, requires_grad=True)   # the gradient reaches the embeddings, as in fine-tuning
    with FlopCounterMode(display=False) as counter: enc(x).last_hidden_state.sum().backward()
    test_eq(counter.get_total_flops(), train_flops(model_dims(cfg), batch * seq, seq))
t = Throughput(model_dims(cfg), peak=cpu_peak)              # a measured peak: three real training steps here
x = torch.randn(8, 32, 256, requires_grad=True)
enc(x).last_hidden_state.sum().backward(); t.reset()
for _ in range(3): enc(x).last_hidden_state.sum().backward(); t.add(8, 32)
assert 0 < t.summary()['mfu'] <= 1, t.summary()
test_eq(t.summary(seconds=2.0)['examples_per_s'], 12.0)    # 3 steps of 8 rows in 2 seconds
test_close(t.summary(seconds=2.0)['mfu'], 3 * train_flops(model_dims(cfg), 8 * 32, 32) / 2 / cpu_peak)

# %% after 3607253f
test_eq((u5e, u6e), (0.5, 0.125))

# %% after 4e643420
vals = list(same_tokens.values())
test_eq(vals, sorted(vals, reverse=True))   # the answer: longer sequences, at the same tokens, lower the intensity
test_eq([round(v) for v in vals], [302, 264, 186])

# %% after tpulay01
assert chip is not None, 'libtpu is installed here (./run.sh test installs the tpu extra): the cell must compile'
f32 = for_chip(lambda x: x * 2, ((129, 129), jnp.float32))
test_eq(f32.memory_analysis().argument_size_in_bytes, 136 * 256 * 4)   # tiles of (8, 128): 129 x 129 -> 136 x 256
assert 'f32[129,129]{1,0:T(8,128)}' in f32.as_text()
b16 = for_chip(lambda x: x * 2, ((129, 129), jnp.bfloat16))
assert 'bf16[129,129]{1,0:T(8,128)(2,1)}' in b16.as_text()   # two rows to a 32-bit word
test_eq(b16.memory_analysis().argument_size_in_bytes, 136 * 256 * 2)

# %% after tpulay03
test_eq(mm.cost_analysis()['flops'], 2 * 129**3)
assert ' convolution(' in mm.as_text()

# %% after c0ecd5db
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('hops')
def manhattan(a, b, shape, generation):
    return sum(abs(x - y) for x, y in zip(a, b))
def every_axis_a_ring(a, b, shape, generation):
    total = 0
    for x, y, n in zip(a, b, shape): total += min(abs(x - y), n - abs(x - y))
    return total
def cube_rule_everywhere(a, b, shape, generation):
    return sum(min(abs(x - y), n - abs(x - y)) if n % 4 == 0 else abs(x - y) for x, y, n in zip(a, b, shape))
def the_long_way(a, b, shape, generation):
    ring = lambda n: n == 16 if generation in ('v5e', 'v6e') else n % 4 == 0
    return sum(n - abs(x - y) if ring(n) and x != y else abs(x - y) for x, y, n in zip(a, b, shape))
def longest_axis(a, b, shape, generation):
    return max(abs(x - y) for x, y in zip(a, b))
for fn, says in ((manhattan, 'That is a Manhattan distance'), (every_axis_a_ring, 'wraparound on every axis'),
                 (cube_rule_everywhere, 'the v4 and v5p rule (a multiple of 4 chips) on a v5e or v6e'),
                 (the_long_way, 'always the other way round a ring'), (longest_axis, 'the longest axis alone')):
    test_eq(ex.catches(fn, says), True)
test_eq((ex.answer((0, 0), (15, 15), (16, 16), 'v5e'), ex.answer((0, 0), (7, 7), (8, 8), 'v5e')), (2, 14))
