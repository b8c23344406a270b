"""The checks of nbs/lessons/02d_compiled_step.ipynb: each block runs in the lesson's namespace right after the code
cell whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after cstep003
from fastcore.test import *

# %% after cstep006
test_eq(mesh.devices.flat[0].device_kind, 'TPU v5 lite')                     # compiled for a v5e, not for this CPU
test_eq(mesh.size, 8)
assert 'not run on a TPU' in WHERE and libtpu_version() in WHERE
assert 1_800 < len(hlo.splitlines()) < 2_000, len(hlo.splitlines())           # "about 1,900 lines"

# %% after cstep008
n_ = hlo_counts(hlo)
test_eq(n_['convolution'], 20)                                                 # "Twenty matmuls: 7 + 13"
test_eq(n_['all-reduce'], 2)                                                   # "Two all-reduces"
test_eq({k: n_[k] for k in ('all-gather', 'reduce-scatter', 'all-to-all', 'collective-permute')},
        dict.fromkeys(('all-gather', 'reduce-scatter', 'all-to-all', 'collective-permute'), 0))
test_eq(sum('transpose' in w for w in mm), 13)                                 # backward fusions with a matmul
test_eq(sum("transpose" not in w for w in mm), 6)                # "two of the forward ones share a fusion"
ops_ = Counter(op for _, op, *_ in ops)
assert ops_['custom-call'] > 0 and ops_['copy'] > 0, ops_
test_eq(ops_['copy-start'], ops_['copy-done']); test_eq(ops_['slice-start'], ops_['slice-done'])

# %% after cstep011
ars_ = [(i, strip(k)) for i, (_, op, k, *_) in enumerate(ops) if op == 'all-reduce']
big_ = [(i, k) for i, k in ars_ if k.count('[') == 5]
small_ = [(i, k) for i, k in ars_ if k.count('[') == 2]
test_eq(len(big_), 1); test_eq(len(small_), 1)                                 # one tuple of 5, one of the 2 gains
test_eq(sorted(re.findall(r'bf16\[[\d,]+\]', big_[0][1])),
        sorted(['bf16[768,2]', 'bf16[768,3072]', 'bf16[3072,768]', 'bf16[768,768]', 'bf16[768,2304]']))  # bfloat16
test_eq(re.findall(r'bf16\[[\d,]+\]', small_[0][1]), ['bf16[768]', 'bf16[768]'])
assert big_[0][0] > last_mm, (big_, last_mm)                                   # after the last backward matmul
assert small_[0][0] < last_mm, (small_, last_mm)                               # in the middle of the backward pass
test_eq(len(updates), 7)
test_eq(sum(u > big_[0][0] for u in updates), 5)                               # five matrices updated after it
test_eq(sum(u < last_mm for u in updates), 2)                                  # the gains' before the last matmuls

# %% after cstep014
lay_ = layouts(hlo, 'f32[768,3072]', 'bf16[768,3072]', 'bf16[8,128,768]', 'f32[8,12,128,128]', 'f32[768]')
assert lay_['f32[768,3072]'].startswith('{1,0:T(8,128)'), lay_
assert lay_['bf16[768,3072]'].startswith('{1,0:T(8,128)(2,1)'), lay_
assert lay_['f32[8,12,128,128]'].startswith('{2,3,1,0:T(8,128)'), lay_
assert lay_['f32[768]'].startswith('{0:T(1024)'), lay_
assert hlo.count('S(1)') > 100

# %% after cstep017
ls_ = layouts(short.as_text(), 'bf16[8,100,768]', 'f32[8,12,100,100]')
assert ls_['bf16[8,100,768]'].startswith('{2,1,0:T(8,128)(2,1)'), ls_        # 100 second-minor: padded to 112
assert ls_['f32[8,12,100,100]'].startswith('{2,3,1,0:T(8,128)'), ls_          # one 100 minor (128), one next (104)
assert re.search(r'= bf16\[8,100,768\]\{2,0,1:T\(8,128\)\(2,1\)\} parameter\(', short.as_text())   # 100 outermost

# %% after cstep019
assert 0.7 < f100 / f128 < 100 / 128, f100 / f128                             # a little less than the tokens' share
assert 0.95 < b100 / b128 < 1, b100 / b128                                     # "barely move"
test_eq(a128 - a100, 8 * 28 * 768 * 2)                                         # the input pads nothing
test_close(tiled(100, 100) / scores(100, 100), 4 / 3, eps=0.01)                # "a third more room"
test_close(f128 / 1e9, 41.51, eps=0.01)

# %% after cstep022
test_eq(len({a, b}), 2)
test_eq(len(only(a, b)), 1); test_eq(len(only(b, a)), 1)                       # the programs differ by one line
assert 'constant(0.001)' in only(a, b)[0] and 'constant(0.0001)' in only(b, a)[0], (only(a, b), only(b, a))
assert 'f32[]{:T(128)}' in only(a, b)[0]

# %% after cstep026
test_eq(summed(step.as_text()), (2, 2 * 7_080_960))                            # 14,161,920 bytes
test_eq(summed(big.as_text()), (2, 2 * 7_080_960))
test_eq(sum(math.prod(s) for s in layer_shapes().values()), 7_080_960)
test_close(big.cost_analysis()['flops'] / 1e9, 82.90, eps=0.01)
assert 1.99 < big.cost_analysis()['flops'] / f128 < 2.01

# %% after cstep028
test_eq(len(programs), 1)

# %% after cstep032
from tpututor.lessons.answers_programs import _padded_shape
import numpy as np
test_eq(_padded_shape((8, 100, 768), 'bfloat16'), (8, 112, 768))              # section 2's activations: 112 rows
test_eq(_padded_shape((768, 3072), 'float32'), (768, 3072))
ns = {'np': np}; exec(exercise('padded_shape').solution().code, ns)
test_eq(bool(exercise('padded_shape').check(ns['padded_shape'])), True)
test_eq(bool(exercise('padded_shape').check(padded_shape)), False)            # the stub, as a learner first runs it
held_back = {   # wrong answers a learner writes, and the words that must name each mistake
    '(8, 128) tiles for every dtype': lambda s, d: (*s[:-2], -(-s[-2] // 8) * 8, -(-s[-1] // 128) * 128),
    'only the last two are tiled': lambda s, d: tuple(-(-n // 8) * 8 for n in s[:-2]) + _padded_shape(s[-2:], d),
    'round up': lambda s, d: (*s[:-2], s[-2] // (32 // {'float32': 4, 'int32': 4, 'bfloat16': 2, 'int8': 1}[d])
                              * (32 // {'float32': 4, 'int32': 4, 'bfloat16': 2, 'int8': 1}[d]), s[-1] // 128 * 128),
}
for says, fn in held_back.items():
    r = exercise('padded_shape').check(fn)
    test_eq(bool(r), False); assert says in ' '.join(repr(r).split()), (says, repr(r))
