"""The checks of nbs/lessons/01a_bf16_training.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 9aaefc29
from fastcore.test import *

# %% after 4ec1a2f4
test_eq(running['bfloat16 in, bfloat16 running sum'][-1], 256)
assert err['bfloat16 in, float32 running sum'][-1] < 1e-3 and err['bfloat16 in, bfloat16 running sum'][-1] > 0.9
assert (np.abs(pairwise - exact[ns - 1]) / exact[ns - 1]).max() < 2**-8
def running_sum(x, f, acc):
    "Round x to format f, then add sequentially with the running sum kept in format acc"
    return float(np.cumsum(round_to(x, f).astype(dtype_of(acc)))[-1])

sums = {}
for n in (10_000,):
    x = np.random.default_rng(n).random(n)
    exact = math.fsum(x)
    sums[f'n = {n:,}'] = {f'{f} in, {acc} sum': relative_error(running_sum(x, f, acc), exact)
                          for f, acc in [('float32', 'float32'), ('bfloat16', 'bfloat16'), ('bfloat16', 'float32'),
                                         ('float16', 'float16'), ('float16', 'float32')]}
    sums[f'n = {n:,}']['exact'] = exact
    last_bf16, last_fp16 = running_sum(x, 'bf16', 'bf16'), running_sum(x, 'fp16', 'fp16')
sum_table = pd.DataFrame(sums)
for col in sum_table:
    s = sum_table[col]
    assert s['bfloat16 in, bfloat16 sum'] > 0.9 and s['float16 in, float16 sum'] > 0.5   # stalled sums
    assert s['bfloat16 in, float32 sum'] < 1e-3 and s['float32 in, float32 sum'] < 1e-4
test_eq((last_bf16, last_fp16), (256.0, 2048.0))

# %% after d756f25c
test_eq(npsum['np.sum(bfloat16 array)'], 256.0)
assert relative_error(npsum['np.sum(bfloat16 array, dtype=np.float32)'], npsum['exact']) < 1e-3
test_eq(npsum['np.sum(float16 array)'], float(round_to(npsum['exact'], 'fp16')))

# %% after 1b2140ce
for col in mm_table:
    s = mm_table[col]
    assert s['bfloat16 in, float32 accumulate (MXU)'] < 2**-8                                # input rounding only
    assert s['all bfloat16'] > 3 * s['bfloat16 in, float32 accumulate (MXU)']               # accumulation costs more
    assert s['float32'] < 1e-6
assert mm_table.loc['all bfloat16', 'K = 1024'] > mm_table.loc['all bfloat16', 'K = 256']  # and grows with K

# %% after afd779d4
test_eq(C_np.dtype, np.float32)
assert relative_error(C_np, fp32_acc(A, B, 'bf16')) < 1e-6

# %% after fa09c105
test_eq((lost['bf16'] >= lost['fp32']).all(), True)                                    # lost in float32 => lost in bfloat16
test_eq((bool(update_lost(1.0, 1e-3, 'bf16')), bool(update_lost(1.0, 1e-3, 'fp32'))), (True, False))

# %% after 512fd39d
test_eq(float(w_bf), 1.0)
test_close(float(w_master), 2.0, eps=1e-3)
test_eq(set(hb), {1.0}); test_eq(len(set(hc)) > 50, True)

# %% after 4210e8ff
assert runs.loc['bfloat16 weights', 'weight error'] > 5 * runs.loc['float32 master weights', 'weight error']
assert runs.loc['float32 master weights', 'weight error'] < 3 * runs.loc['float32 master weights', 'floor: w_true in bfloat16']
test_eq(runs.loc['bfloat16 weights', 'updates lost in last step'], 1.0)   # the prose: every update of the last step
test_eq(runs.loc['float32 master weights', 'updates lost in last step'], 0.0)
assert runs.loc['float32', 'updates lost in last step'] > 0.5 and runs.loc['float32', 'loss'] < 1e-8   # lost only at the answer

# %% after e39f61fd
test_eq(ours[~nan], by_torch[~nan])
test_eq(np.isnan(torch.from_numpy(patterns).to(torch.bfloat16).float().numpy()), nan)
test_eq([format_name(d) for d in (torch.bfloat16, torch.half, torch.float32)], ['bfloat16', 'float16', 'float32'])
test_eq(torch.tensor(1 + 2**-8 + 2**-30, dtype=torch.float64).to(torch.bfloat16).item(), 1.0)   # through float32, as ml_dtypes

# %% after 42eba7db
test_eq((lin.weight.dtype, out.dtype, lin.weight.grad.dtype), (torch.float32, torch.bfloat16, torch.float32))

# %% after 122fbad3
up_gap = float(neighbours(w, 'bf16')[1]) - float(w)
assert 1 < float(w) < 11 and up_gap / 2 > 0.01          # stopped where half a step exceeds the update
test_eq(float(w), 4.0)

# %% after 3727010c
test_eq([bool(update_lost(100.0, u)) for u in (0.1, 0.25, 0.3, 1.0)], [True, True, False, False])
test_eq(float(round_to(100 + float(round_to(0.3, 'bf16')), 'bf16')), 100.5)

# %% after 6de5d914
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('bf16_sum')
bf = ml_dtypes.bfloat16
def plain(xs):
    total = bf(0)
    for x in xs: total = bf(total + x)
    return total
def wide(xs):
    total = np.float32(0)
    for x in xs: total += x
    return bf(total)
def python_float(xs): return bf(sum(float(x) for x in xs))
def wrong_sign(xs):
    total, lost = bf(0), bf(0)
    for x in xs:
        y = bf(x + lost)                  # the loss added back with the wrong sign
        t = bf(total + y)
        lost = bf(bf(t - total) - y)
        total = t
    return total
for fn, says in ((plain, 'that is the plain bfloat16 sum'),
                 (wide, 'a wider accumulator is what the exercise replaces'), (python_float, 'left bfloat16'),
                 (wrong_sign, 'the correction must be subtracted from the next number')):
    test_eq(ex.catches(fn, says), True)
