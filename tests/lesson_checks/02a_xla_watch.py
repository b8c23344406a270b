"""The checks of nbs/lessons/02a_xla_watch.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 379b546b
from fastcore.test import *

# %% after a0f01aa3
test_eq(sorted(new), ['aten::median', 'aten::nonzero'])
test_close(m.cpu(), x.cpu().median())

# %% after 597e99a4
test_eq(cw.recompiles, 0)
test_eq(cw.steps, 4)
test_eq((cw.compiles, cw.warmup_compiles), (1, 1))

# %% after 66392cad
test_eq(cw.recompiles, 1)
test_eq([e['step'] for e in cw.events], [3])
test_eq(len(caught), 1)
assert 'step 3 recompiled: input_ids changed from (4, 12) to (4, 9)' in str(caught[0].message), caught[0].message
assert 'step 3 recompiled' in cw.report() and '(4, 9)' in cw.report()
def strict_loop():
    with CompileWatcher(warmup=1, strict=True) as cw:
        for seq_len in (12, 7):
            ids = torch.randint(0, 100, (4, seq_len))
            loss = text_step(ids.to(dev)); torch_xla.sync()
            cw.step(input_ids=ids)
test_fail(strict_loop, contains='input_ids changed from (4, 12) to (4, 7)')

# %% after 19d6151d
test_eq([e['step'] for e in w1.events], [2])
assert 'no input shape changed' in w1.report() and 'warmup=2' in w1.report()

# %% after 16a34f92
test_eq((w2.recompiles, w2.warmup_compiles), (0, 2))

# %% after e7c7dbe4
test_eq(is_eager_mode(), False)
test_eq((modes['lazy + sync']['CompileTime'], modes['lazy + sync']['ExecuteTime']), (1, 1))       # one graph for 3 ops
test_eq(modes['eager']['EagerOpExecuteTime'], 3); test_eq(modes['eager']['CompileTime'], 0)      # each op ran on its own
test_eq(modes['eager + torch_xla.compile']['EagerOpExecuteTime'], 0)
test_eq(modes['eager + torch_xla.compile']['ExecuteTime'], 1)                                     # compiled region: one graph
test_eq(modes['same, called again']['CompileTime'], 0)                                            # ... cached the second time

# %% after fcc85e53
test_eq(rd.returncode, 0)
test_eq(len(blocks), 4)                    # 8 rows, 6 rows (8 again is cached), the .item(), the gelu chain
test_eq(causes[:2], ['user torch_xla.sync'] * 2)
test_ne(hashes[0], hashes[1])              # a new shape is a new graph
assert 'access tensor value' in causes[2], causes[2]

# %% after 0075cca7
assert len(elementwise) >= 5, elementwise                           # several separate ops before XLA
test_eq(after.count(' fusion('), 1)                                   # one fused kernel after
test_eq(re.findall(r'\b(multiply|erf)\(', entry), [])                 # none of them left outside it

# %% after dfc865ab
test_eq(list(summary.what), ['compiles', 'executions', 'device -> host transfers', 'host -> device transfers', 'CPU fallbacks'])
s = summary.set_index('what')
test_eq(s.loc['compiles', 'count'], count_compiles('torch_xla'))
test_eq(s.loc['executions', 'count'], count_executions())
test_eq(s.loc['CPU fallbacks', 'count'], sum(v for k, v in fallbacks().items() if k != 'aten::_local_scalar_dense'))
assert 'median' in s.loc['CPU fallbacks', 'advice'] and '_local_scalar_dense' not in s.loc['CPU fallbacks', 'advice']
assert 'by .item()' in s.loc['device -> host transfers', 'advice']
met.clear_all()
test_eq(metrics_summary(show=False)['count'].tolist(), [0, 0, 0, 0, 0])

# %% after 252bf515
assert 1e9 < peak < 1e13, peak     # between a slow CPU and more than any CPU here could do
c0 = count_compiles('torch_xla'); test_eq(peak_flops('torch_xla'), peak); test_eq(count_compiles('torch_xla'), c0)   # cached

# %% after 7e4f537e
test_eq(watcher.recompiles, 0)
test_eq(watcher.compiles, watcher.warmup_compiles)
test_eq(summary.set_index('what').loc['compiles', 'count'], watcher.compiles)
test_eq(summary.set_index('what').loc['CPU fallbacks', 'count'], 0)

# %% after 894a508a
test_eq(cw.compiles, 2); test_eq([e['step'] for e in cw.events], [4])
assert 'x changed from (16, 16) to (2, 16)' in cw.report(), cw.report()

# %% after 21a9c8c6
outcomes = []
for rows in (8, 8, 6):
    try: guarded(torch.randn(rows, 16).to(dev)); outcomes.append('ok')
    except RuntimeError as e: outcomes.append(str(e))
test_eq(outcomes[:2], ['ok', 'ok'])
assert 'Maximum number of different graphs allowed per function exceeded: 1' in outcomes[2], outcomes
assert 'aten::mm, xla_shape=f32[6,4]' in outcomes[2] and 'aten::mm, xla_shape=f32[8,4]' in outcomes[2], outcomes

# %% after 36ca6e8f
test_eq((in_eager['EagerOpExecuteTime'], in_eager['CompileTime']), (4, 0))
test_eq((first['CompileTime'], first['ExecuteTime'], first['EagerOpExecuteTime']), (1, 1, 0))
test_eq((second['CompileTime'], second['ExecuteTime']), (0, 1))

# %% after b1b7dad5
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('pad_batch')
def padded(x, rows, dtype=None, device=None, top=False):
    pad = torch.zeros((rows - len(x), *x.shape[1:]), dtype=dtype or x.dtype, device=device or x.device)
    return (torch.cat([pad, x]) if top else torch.cat([x, pad])), torch.arange(rows, device=device or x.device) < len(x)
def largest(x, buckets): return padded(x, max(buckets))
def first_given(x, buckets): return padded(x, next(b for b in buckets if b >= len(x)))
def smallest(buckets, n): return min(b for b in buckets if b >= n)
def float_zeros(x, buckets):
    rows = smallest(buckets, len(x))
    return torch.cat([x, torch.zeros(rows - len(x), *x.shape[1:])]), torch.arange(rows) < len(x)
def on_the_cpu(x, buckets): return padded(x, smallest(buckets, len(x)), device='cpu')
def on_top(x, buckets): return padded(x, smallest(buckets, len(x)), top=True)
def no_refusal(x, buckets): return padded(x, min([b for b in buckets if b >= len(x)] or [len(x)]))   # too big: unpadded
for fn, says in ((largest, 'the largest bucket; take the smallest'),
                 (first_given, 'the first bucket in the order given'),
                 (float_zeros, "keep the batch's dtype"), (on_the_cpu, 'make the zeros on x'),
                 (on_top, 'the padding went on top'), (no_refusal, 'must raise a ValueError')):
    test_eq(ex.catches(fn, says), True)
