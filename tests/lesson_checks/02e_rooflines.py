"""The checks of nbs/lessons/02e_rooflines.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after roof003
from fastcore.test import *

# %% after roof005
test_close(ridge['v5e'], 240.5, eps=0.05); test_close(ridge['v6e'], 559.8, eps=0.05)   # "240 ... 560"
test_close(p6 / p5, 4.66, eps=0.005); test_close(b6 / b5, 2.00, eps=0.005)            # "4.66 times ... twice"
test_close(ridge['v6e'] / ridge['v5e'], 2.3, eps=0.05)                                 # "2.3 times the intensity"
test_eq(set(first), {'v5e', 'v6e', 'v5p', 'v4', 'v3', 'v7x'})                          # v2 has no bandwidth on its row
test_eq(roofline(2e12, 1, 'v5e'), (2e12 / 197e12, 'compute'))                          # the datasheet's figures
test_eq(roofline(1, 819e9, 'v5e'), (1.0, 'memory'))

# %% after roof008
assert 'not run on a TPU' in WHERE and libtpu_version() in WHERE
test_eq(tpu_mesh('v5e-1').devices.flat[0].device_kind, 'TPU v5 lite')                 # compiled for a v5e, not this CPU
for (B_, D_, F_), c_ in mm.items():
    test_eq(c_.cost_analysis()['flops'], 2 * B_ * D_ * F_)                             # "agree to the last one"
    assert c_.cost_analysis()['bytes accessed'] > 2 * (B_ * D_ + D_ * F_ + B_ * F_)     # "libtpu counts more"
r_ = max(c_.cost_analysis()['bytes accessed'] / (2 * (B_ * D_ + D_ * F_ + B_ * F_)) for (B_, D_, F_), c_ in mm.items())
assert 4.5 < r_ < 5, r_                                                                # "up to almost five times"

# %% after roof010
for (B_, D_, F_), c_ in mm.items():
    test_eq(prefetched(c_), ['w'] if B_ <= 512 else ['x'])                             # the weight up to 512 rows
    size_ = 2 * (B_ * D_ if B_ > 512 else D_ * F_)
    test_eq(c_.cost_analysis()['bytes accessed'] - 2 * (B_ * D_ + D_ * F_ + B_ * F_), 4 * size_ + 4_608)   # exactly
    assert 'copy-start(' in c_.as_text() and 'copy-done(' in c_.as_text()
test_eq(off.cost_analysis()['bytes accessed'], 2 * (8 * 768 + 768 * 768 + 8 * 768))    # no prefetch: the formula
assert 'copy-start(' not in off.as_text()

# %% after roof012
for (B_, D_, F_), c_ in mm.items(): test_eq(hbm_bytes(c_), 2 * (B_ * D_ + D_ * F_ + B_ * F_))
test_eq(hbm_bytes(off), off.cost_analysis()['bytes accessed'])
test_eq(nbytes('bf16[16,128,768]{2,1,0:T(8,128)(2,1)}'), 3_145_728)
test_eq(nbytes('(f32[4,2]{1,0}, u32[])'), 32)

# %% after roof014
i_ = {k: c_.cost_analysis()['flops'] / hbm_bytes(c_) for k, c_ in mm.items()}
test_close(i_[(8, 768, 768)], 7.8, eps=0.05); test_close(ridge['v5e'] / i_[(8, 768, 768)], 30, eps=1)   # "thirty times"
for (B_, D_, F_), v_ in i_.items(): test_close(v_, 1 / (1 / B_ + 1 / D_ + 1 / F_), eps=1e-9)
assert all(v_ < ridge['v6e'] for v_ in i_.values())                                    # none reaches v6e's at 4,096
test_eq([k for k, v_ in i_.items() if v_ > ridge['v5e']], [(4096, 768, 768), (512, 768, 3072), (4096, 768, 3072)])
test_eq(1 / (1 / 768 + 1 / 768), 384); test_close(1 / (1 / 768 + 1 / 3072), 614.4, eps=1e-9)
test_eq(round(1 / (1 / ridge['v5e'] - 2 / 768)), 644)                                  # "from about 644 tokens"
test_eq(round(1 / (1 / ridge['v5e'] - 1 / 768 - 1 / 3072)), 395)
test_eq(round(1 / (1 / ridge['v6e'] - 1 / 768 - 1 / 3072)), 6_294)
test_eq(1 / (1 / 768 + 1 / 2304), 576); test_eq(round(1 / (1 / ridge['v6e'] - 1 / 768 - 1 / 2304)), 19_849)
assert 1 / ridge['v6e'] < 2 / 768                                                      # a square 768 never reaches it

# %% after roof017
f_, m_, k_ = ({n: v[i] for n, v in counts.items()} for i in range(3))   # FLOPs, HBM bytes, bytes counted
bound_ = {chip: {n: roofline(f_[n], m_[n], chip)[1] for n in counts} for chip in SHEET}
mats_ = ['QKV projection', 'out projection', 'FFN up', 'FFN down']
test_eq({n for n in counts if f_[n] / m_[n] > 240}, set(mats_))                        # "the only ops above 240"
test_eq({n for n, b in bound_['v5e'].items() if b == 'compute'}, set(mats_))           # compute-bound on v5e
test_eq(set(bound_['v6e'].values()), {'memory'})                                       # all memory-bound on v6e
assert 300 < f_['out projection'] / m_['out projection'] < 384
for n in ('scores Q.K', 'scores x V'): test_close(f_[n] / m_[n], 32, eps=1e-9)        # 1/(1/128+1/64+1/128)
assert min(r['peak_bf16_tflops_per_chip'] * 1e3 / r['hbm_gbps_per_chip'] for r in first.values()) > 64   # never past 64: memory-bound on every chip
test_close(f_['softmax'] / m_['softmax'], 1.25, eps=0.005); test_close(f_['GELU'] / m_['GELU'], 3.50, eps=0.005)
test_close(roofline(f_['softmax'], m_['softmax'], 'v5e')[0], roofline(f_['scores Q.K'], m_['scores Q.K'], 'v5e')[0],
           eps=1e-12)                                                                  # "as long as each attention matmul's"
test_close(roofline(f_['GELU'], m_['GELU'], 'v5e')[0] / roofline(f_['softmax'], m_['softmax'], 'v5e')[0], 2, eps=1e-6)
test_eq(m_['add + LayerNorm'], 5 * 3_145_728 + 2 * 768)                                # four reads, one write, the gain
test_close(k_['add + LayerNorm'] / 1e6, 47.28, eps=0.005)
test_eq({n for n in counts if m_[n] != k_[n]}, {'add + LayerNorm'})                    # elsewhere the two counts agree
ln_ = entry(ops['add + LayerNorm'])
test_eq(sum(op == 'copy-start' for _, _, op, _ in ln_), 2)                             # copies of the two inputs
for n in counts: test_eq(sum(op == 'fusion' for _, _, op, _ in entry(ops[n])), 1 if n != 'add + LayerNorm' else 5)
test_eq(m_['QKV projection'], 2 * (2048 * 768 + 768 * 2304 + 2048 * 2304))

# %% after roof020
test_close(sum_flops, flops, eps=flops * 1e-3)                                        # "the same FLOPs"
test_close(sum_moved / moved, 7, eps=0.5)                                              # "a seventh of the HBM traffic"
test_eq(len(to_hbm), 1); test_eq(to_hbm[0], 'bf16[16,128,768]')                        # one instruction writes to HBM
weights_ = 2 * sum(math.prod(s) for s in shapes.values())
test_close(weights_ / 1e6, 14.2, eps=0.05)
test_eq(moved, weights_ + 2 * 3_145_728 + 3_145_728)                                   # the input read twice, the output
test_eq(sum(op == 'slice-start' and args == ['x.1'] for _, _, op, args in entry(whole)), 4)   # the input in slices
test_close(moved / 1e6, 23.60, eps=0.005); test_close(moved / bw * 1e6, 28.8, eps=0.05)
test_close(flops / peak * 1e6, 152.1, eps=0.05); test_eq(roofline(flops, moved, 'v5e')[1], 'compute')
test_close(sum(s for s, _ in times) * 1e6, 262.4, eps=0.05)
test_close(sum(s for s, b in times if b == 'memory') * 1e6, 115.2, eps=0.05)
test_close(counted / 1e6, 200.63, eps=0.005); test_eq(roofline(flops, counted, 'v5e')[1], 'memory')
test_close(counted / bw * 1e6, 245.0, eps=0.05)
test_close(12 * layer_s * 1e3, 1.82, eps=0.005); test_close(rows * seq / (12 * layer_s) / 1e6, 1.12, eps=0.005)
test_eq(SHEET['v5e']['vmem_mib'], 128)
test_close(2 * rows * seq * ffn / 1e6, 12.6, eps=0.05)                                 # the GELU's 12.6 MB

# %% after roof024
test_eq(tpu_mesh('v6e-1').devices.flat[0].device_kind, 'TPU v6 lite')                 # compiled for a v6e
test_close(c.cost_analysis()['flops'] / hbm_bytes(c), 366.8, eps=0.05)                 # the last: the out projection
test_eq(roofline(c.cost_analysis()['flops'], hbm_bytes(c), 'v6e')[1], 'memory'); test_close(s * 1e6, 16.1, eps=0.05)
test_eq(hbm_bytes(c), 2 * (8192 * 768 * 2 + 768 * 768))
test_close(1 / (1 / 8192 + 1 / 768 + 1 / 3072), 571.5, eps=0.05)                     # the FFN's, as printed above it
from tpututor.lessons.answers_programs import _matmul_time
test_eq(_matmul_time(8192, 768, 3072, 'v6e-8')[1], 'compute')                         # the FFN's: compute-bound
test_close(_matmul_time(8192, 768, 3072, 'v6e-8')[0] * 1e6, 42.1, eps=0.05)
test_close(_matmul_time(8192, 768, 768, 'v6e-8')[0], s, eps=1e-15)                    # the formula, the compiled program

# %% after roof026
test_close(hbm_bytes(c) / 1e6, 15.73, eps=0.005); test_eq(hbm_bytes(c), 3_145_728 * 2 + 4_718_592 * 2)
test_close(hbm_bytes(c) / bw * 1e6, 9.6, eps=0.05); test_close(c.cost_analysis()['flops'] / 1e9, 19.42, eps=0.005)
test_close(s * 1e6, 21.1, eps=0.05); test_eq(bound, 'compute'); test_close(apart * 1e6, 40.3, eps=0.05)
test_eq({roofline(*counts[n][:2], 'v6e')[1] for n in ('FFN up', 'GELU', 'FFN down')}, {'memory'})
test_close(counts['FFN up'][0] / counts['FFN up'][1], 473, eps=0.5)

# %% after roof030
import numpy as np
test_close(_matmul_time(4096, 768, 3072, 'v5e-8')[0], roofline(*counts['FFN up'][:2], 'v5e')[0] * 2, eps=1e-12)
ns = {'np': np}; exec(exercise('matmul_time').solution().code, ns)
test_eq(bool(exercise('matmul_time').check(ns['matmul_time'])), True)
test_eq(bool(exercise('matmul_time').check(matmul_time)), False)              # the stub, as a learner first runs it
def held_back_(flop=2, size=2, out=True, add=False, fixed=None):
    "A wrong answer a learner writes"
    def fn(B, D, F, chip):
        row = tpu_spec(fixed or chip)
        c, m = flop * B * D * F / (row['peak_bf16_tflops_per_chip'] * 1e12), size * (
            B * D + D * F + B * F * out) / (row['hbm_gbps_per_chip'] * 1e9)
        return (c + m if add else max(c, m)), 'compute' if c >= m else 'memory'
    return fn
for says, fn in {'one FLOP a multiply-add': held_back_(flop=1), "float32's 4 bytes": held_back_(size=4),
                 "the output's bytes left out": held_back_(out=False), 'the two times added': held_back_(add=True),
                 "another chip's figures": held_back_(fixed='v5e-1')}.items():
    exercise('matmul_time').tries = 0
    r = exercise('matmul_time').check(fn)
    test_eq(bool(r), False); assert says in ' '.join(repr(r).split()), (says, repr(r))
exercise('matmul_time').tries = 0
