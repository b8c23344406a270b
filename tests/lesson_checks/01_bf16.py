"""The checks of nbs/lessons/01_bf16.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 671acdbc
from fastcore.test import *

# %% after bbd305ac
test_eq([format_name(d) for d in ('bf16', np.float16, 'torch.bfloat16', 'float32')], ['bfloat16', 'float16', 'bfloat16', 'float32'])
test_fail(lambda: format_name('float64'), contains="use one of ['float32', 'bfloat16', 'float16']")
test_fail(lambda: format_name(np.int8), contains='Unsupported float format')

# %% after eda63043
for f, L in LAYOUTS.items():
    fi = ml_dtypes.finfo(DTYPES[f])
    test_eq((L.ebits, L.mbits, L.nbits), (fi.nexp, fi.nmant, DTYPES[f].itemsize * 8))
    test_eq(from_layout(L), {'max': float(fi.max), 'smallest normal': float(fi.smallest_normal),
                             'smallest subnormal': float(fi.smallest_subnormal), 'eps': float(fi.eps)})

# %% after d11f73a3
test_eq(len(ax.patches), sum(L.nbits for L in LAYOUTS.values()))   # one box per bit
test_eq(bits(-2.5, 'bf16'), Bits('1', '10000000', '0100000', -2.5))
test_eq(bits(1.0, 'fp16'), Bits('0', '01111', '0000000000', 1.0))
test_eq(bits(-0.0, 'bf16')[:3], ('1', '00000000', '0000000'))
test_eq(math.copysign(1, bits(-0.0, 'bf16').value), -1.0)

rng = np.random.default_rng(0)
probe = np.concatenate([rng.standard_normal(600) * 10.0**rng.integers(-45, 39, 600),  # all scales, both signs
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1e-45, 65504.0, 65520.0, 3.4e38, 1e39]])
for f in LAYOUTS:
    stored = round_to(probe, f).astype(np.float64)
    decoded = np.array([bits(x, f).value for x in probe])
    test_eq(np.isnan(decoded), np.isnan(stored))
    ok = ~np.isnan(stored)
    test_eq(decoded[ok], stored[ok])
    test_eq(np.signbit(decoded[ok]), np.signbit(stored[ok]))
# the reference for bfloat16: the decoded value is float32(ml_dtypes.bfloat16(x))
test_eq([bits(x, 'bf16').value for x in probe[:200]], [float(np.float32(ml_dtypes.bfloat16(x))) for x in probe[:200]])
test_fail(lambda: bits([1.0, 2.0]), contains='shows one number')
test_fail(lambda: decode(0, 256, 0, 'bf16'), contains='exponent 0..255')

# %% after 9fbb1ca0
test_eq(our_bits(patterns), ref_bits(patterns))
every_edge = {
    'zero': 0.0, 'negative zero': -0.0, 'one': 1.0,
    'smallest float32 subnormal (to 0)': f32(0x00000001), 'a bfloat16 subnormal, exact': f32(0x00400000),
    'subnormal tie, to even (down)': f32(0x00008000), 'subnormal tie, to even (up)': f32(0x00018000),
    'subnormal rounding up into the normals': f32(0x007FFFFF), 'smallest normal': f32(0x00800000),
    'tie 1 + 2^-8': f32(0x3F808000), 'tie 1 + 3*2^-8': f32(0x3F818000), 'negative tie': f32(0xBF818000),
    'bfloat16 max': f32(0x7F7F0000), 'just below max + half ulp': f32(0x7F7F7FFF),
    'tie between bfloat16 max and inf': f32(0x7F7F8000), 'float32 max (overflows to inf)': f32(0x7F7FFFFF),
    '-float32 max (overflows to -inf)': f32(0xFF7FFFFF), 'inf': np.inf, '-inf': -np.inf,
    'quiet NaN': f32(0x7FC00000), 'negative NaN': f32(0xFFC00000),
    'NaN with payload only in the dropped bits': f32(0x7F800001), 'NaN 0x7FFFFFFF (would carry into the sign)': f32(0x7FFFFFFF),
}
ee = np.array([np.float32(v) for v in every_edge.values()], dtype=np.float32)
test_eq(our_bits(ee), ref_bits(ee))
test_eq(np.isnan(np.asarray(to_bf16(ee), np.float32)), np.isnan(ee))  # NaN stays NaN, nothing else becomes NaN
test_eq(type(to_bf16(1/3)), ml_dtypes.bfloat16)                        # scalars stay scalars
test_eq(float(to_bf16(1/3)), 0.333984375)
x64 = 1 + 2**-8 + 2**-30      # float64 through float32 rounds twice: to float32 (the tie 1 + 2^-8), then to even
from packaging.version import Version
once = Version(ml_dtypes.__version__) >= Version('0.7')   # ml_dtypes 0.7 rounds a float64 once
test_eq((float(ml_dtypes.bfloat16(x64)), float(np.float32(x64))), (1 + 2**-7 if once else 1.0, 1 + 2**-8))
test_eq(float(ml_dtypes.bfloat16(np.float32(x64))), 1.0)   # the second rounding, from the float32 tie

# %% after e24cdf8e
test_close(relative_error(1.01, 1.0), 0.01, eps=1e-12)
test_close(relative_error([3.0, 4.0 + 1e-3], [3.0, 4.0]), 1e-3 / 5, eps=1e-12)
test_eq(relative_error(to_bf16(1/3), 1/3), abs(0.333984375 - 1/3) / (1/3))   # bfloat16 input works
test_eq(relative_error(round_to(70000, 'fp16'), 70000), math.inf)
test_eq(relative_error(np.ones((2, 3)), np.ones((2, 3))), 0.0)
test_fail(lambda: relative_error([1, 2], [1, 2, 3]), contains='shape (2,) but exact has shape (3,)')
test_fail(lambda: relative_error(1.0, 0.0), contains='all zeros')

# %% after 424091c2
assert err_bf.max() <= 2**-8 and err_bf.max() > 0.99 * 2**-8, err_bf.max()     # the bound holds and is reached
assert err_fp16.max() <= 2**-11 and err_fp16.max() > 0.99 * 2**-11, err_fp16.max()
assert err_tr.max() > 2**-8 and abs(signed(to_bf16(x_bf), x_bf)) < 0.05 * abs(signed(trunc, x_bf))

# %% after 9b2a64c8
def check_neighbours(v, f):
    dt = dtype_of(f)
    down, up = neighbours(v, f)
    with np.errstate(invalid='ignore', over='ignore'):
        ref_down, ref_up = np.nextafter(v, np.array(-np.inf, dt)), np.nextafter(v, np.array(np.inf, dt))
    for ours, ref in ((down, ref_down), (up, ref_up)):
        with np.errstate(invalid='ignore'): a, b = ours.astype(np.float64), ref.astype(np.float64)
        test_eq(np.isnan(a), np.isnan(b))
        test_eq(a[~np.isnan(a)], b[~np.isnan(b)])

every16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
check_neighbours(every16.view(ml_dtypes.bfloat16), 'bf16')
check_neighbours(every16.view(np.float16), 'fp16')
check_neighbours(patterns[:200_000], 'fp32')
test_eq([float(n) for n in neighbours(np.inf, 'bf16')], [float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), math.inf])
test_eq([float(n) for n in neighbours(0.0, 'fp16')], [-2.0**-24, 2.0**-24])

# %% after 95c4261c
test_eq(line['bfloat16'].tolist(), [250, 251, 252, 253, 254, 255, 256, 258, 260])
test_eq(np.diff(line['float16'])[[0, -1]].tolist(), [1/8, 1/4])
test_eq(int(np.float32(258).view(np.uint32)) - int(np.float32(256).view(np.uint32)), 2**16)   # 2^16 float32 steps per bfloat16 step

# %% after 42714b01
g = np.random.default_rng(3)
for f, lo_bound, hi_bound, (wlo, whi) in [('bf16', 2**-9, 2**-8, (1e-30, 1e30)), ('fp32', 2**-25, 2**-24, (1e-30, 1e30)),
                                           ('fp16', 2**-12, 2**-11, (1.0, 1000.0))]:
    w = log_uniform(wlo, whi, 100_000, g)
    w = round_to(w, f).astype(np.float64)                                   # weights that are stored in f
    sign = g.choice([-1, 1], w.size)
    small = sign * np.abs(w) * g.uniform(0.01, 0.99, w.size) * lo_bound     # |delta| < bound * |w|
    large = sign * np.abs(w) * g.uniform(1.01, 16, w.size) * hi_bound       # |delta| > bound * |w|
    test_eq(update_lost(w, small, f).all(), True)
    test_eq(update_lost(w, large, f).any(), False)
test_eq(update_lost(1.0, 0.0).item(), False)                                  # no update is not a lost update
test_eq(update_lost(1.0, 1e-8, 'fp16').item(), True)                          # delta underflowing is lost too
test_eq(update_lost([1.0, 1.0], [1e-3, 1e-2]).tolist(), [True, False])
test_eq(update_lost(1.0, [1e-4, 1e-3, 3e-3, 5e-3, 1e-2]).tolist(), [True, True, True, False, False])

# %% after 56a1ff47
for f, m in (('bfloat16', 7), ('float32', 23), ('float16', 10)):   # normal numbers: the gap is 2^-m to 2^-(m+1) of |x|
    v, gap = gaps[f]; normal = v >= float(ml_dtypes.finfo(DTYPES[f]).smallest_normal)
    r = gap[normal] / v[normal]
    assert (r > 2.0**-(m + 1)).all() and (r <= 2.0**-m).all(), f
test_eq(bool((gaps['float16'][0] <= 65504).all()), True)

# %% after e1c4655c
fp16_col, bf16_col = range_table['float16'], range_table['bfloat16']
test_eq(fp16_col.iloc[:3].tolist(), [math.inf] * 3)                      # overflow in float16
test_eq(fp16_col.iloc[3:].tolist(), [0.0] * 3)                           # underflow in float16
test_eq([float(round_to(v, 'fp16')) for v in (65519.0, 65520.0, 2.0**-25, 2.0**-25 * 1.01)], [65504.0, math.inf, 0.0, 2.0**-24])
assert np.isfinite(bf16_col).all() and (bf16_col != 0).all()
assert (range_table['bfloat16 relative error'].iloc[:5] <= 2**-8).all()  # normal numbers: within 2^-8

# %% after 9ad8c733
assert np.isnan(probs['float16']).any()
test_close(probs['bfloat16'].values, probs['float64'].values, eps=2e-3)

# %% after ad056041
for x in (1/3, -2.5, 70000.0, 1e-8, 1e-40, 0.0, 3.3e38):
    t = encodings_table(x)
    for f in LAYOUTS:
        u = int(round_to(x, f).view(f'u{layout(f).nbits // 8}'))
        test_eq(t.loc[f, 'sign'] + t.loc[f, 'exponent'] + t.loc[f, 'mantissa'], format(u, f'0{layout(f).nbits}b'))
        test_eq(t.loc[f, 'stored'], float(round_to(x, f).astype(np.float64)))
        test_eq([t.loc[f, 'next down'], t.loc[f, 'next up']],
                [float(np.nextafter(round_to(x, f), np.array(s, dtype_of(f)))) for s in (-np.inf, np.inf)])
test_eq(encodings_table(70000.0).loc['float16', 'stored'], math.inf)
test_close(encodings_table(1/3).loc['bfloat16', 'relative error'], abs(0.333984375 - 1/3) * 3, eps=1e-12)

# %% after 2f25f396
r = subprocess.run([sys.executable, '-c', "import sys, tpututor.lessons.bf16; print(sorted({'torch', 'tensorflow', 'ipywidgets', 'pandas', 'matplotlib'} & set(sys.modules)))"],
                   capture_output=True, text=True)
test_eq(r.stdout.strip(), '[]')   # importing the module loads no framework, no widgets, no pandas and no matplotlib

# %% after d3f07d4f
test_eq((float(to_bf16(1 - 2**-9)), float(to_bf16(1 - 2**-9 - 2**-20))), (1.0, 1 - 2**-8))

# %% after 974bb8f3
assert 0 < h < 2.0**-14 and relative_error(h, 3e-5) < relative_error(bf, 3e-5) <= 2**-8   # a subnormal, and closer

# %% after 1b00a2de
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('stochastic_bf16')
bf = ml_dtypes.bfloat16
def nearest(x, rng): return np.asarray(x, np.float32).astype(bf)
def truncate(x, rng):
    u = np.asarray(x, np.float32).view(np.uint32)
    return (u >> 16).astype(np.uint16).view(bf)
def coin_toss(x, rng):
    u = np.asarray(x, np.float32).view(np.uint32)
    up = rng.random(u.shape) < 0.5
    return ((u >> 16) + up).astype(np.uint16).view(bf)
def nan_carries(x, rng):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + rng.integers(0, 1 << 16, u.shape, dtype=np.uint64)) >> 16).astype(np.uint16).view(bf)
def float32_out(x, rng):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((u + rng.integers(0, 1 << 16, u.shape, dtype=np.uint64)) >> 16) << 16).astype(np.uint32).view(np.float32)
for fn, says in ((nearest, 'that is round-to-nearest'), (truncate, 'that is truncation'), (coin_toss, 'a coin toss'),
                 (nan_carries, 'a NaN must stay a NaN'), (float32_out, 'not bfloat16')):
    test_eq(ex.catches(fn, says), True)
