"""The checks of nbs/lessons/02_xla.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 647d59ac
from fastcore.test import *

# %% after 5dfad504
test_eq(count_compiles('torch_xla'), 0)
test_eq(count_executions(), 0)

# %% after 704f6f00
test_eq(count_compiles('torch_xla'), 1)
test_eq(count_executions(), 1)
test_eq(c.cpu(), (torch.arange(12.).reshape(4, 3) @ torch.ones(3, 2)).relu() + 1)

# %% after 65ed136b
n = count_compiles('jax')
out = jax.jit(f)(A, B)
test_eq(count_compiles('jax') - n, 1)                          # compiled at the first call
test_eq(np.asarray(out), c.cpu().numpy())               # the numbers of torch_xla's graph
test_eq('stablehlo.dot_general' in lowered.as_text(), True)

# %% after 1ab48f0e
test_eq(seen, [1, 0, 1, 0, 0])   # same shape twice: 1 compile; a new shape compiles; old shapes are cached

# %% after 4b0c5ece
test_eq(seen_j, seen)   # the same rule as torch_xla's: a compile for each new shape, none for a shape seen before

# %% after d791db6e
test_eq([n for _, n, _ in runs], [1, 0, 0, 1, 0])
test_eq(min(slow_) > 5 * max(fast_), True)

# %% after f100cfbd
for name, lens in plans.items():
    test_eq([c for *_, c in timeline[name]], [int(L not in lens[:i]) for i, L in enumerate(lens)])  # a compile exactly where a length is new
test_eq(sum(c for *_, c in timeline['length buckets']), 3)
slow_t = sorted(t for rows in timeline.values() for _, t, c in rows if c)
fast_t = sorted(t for rows in timeline.values() for _, t, c in rows if not c)
assert slow_t[len(slow_t) // 2] > 3 * fast_t[len(fast_t) // 2], (slow_t, fast_t)   # the median compiling step is much slower

# %% after da5d898a
by = {(r.scheme, r.epoch): r for r in side.itertuples()}
test_eq([by[s, 1].shapes for s in ('padded to 64', 'length buckets', 'packed rows')], [1, 4, 1])
test_eq([by[s, 1].compiles for s in ('padded to 64', 'length buckets', 'packed rows')],
        [by[s, 1].new_shapes for s in ('padded to 64', 'length buckets', 'packed rows')])   # a program per new shape
test_eq([by[s, 2].compiles for s in ('padded to 64', 'length buckets', 'packed rows')], [0, 0, 0])
test_eq(by['padded to 64', 1].tokens > 2 * by['length buckets', 1].tokens > 2 * by['packed rows', 1].tokens, True)
assert float(by['packed rows', 1].padding[:-1]) < 10, by['packed rows', 1]

# %% after 7612857e
test_eq((e1 - e0, e2 - e1), (1, 1))

# %% after eadd3946
test_eq(count_executions() - e0, 1)

# %% after e8f1379b
test_eq(by_slice, [1, 1, 1])
test_eq([by_scalar[s] for s in (0.25, 0.75)], [0, 0])
test_eq([by_scalar[s] for s in (1.0, 0.0)], [1, 1])

# %% after d4e8e8e3
d = [b - a for a, b in zip(no_sync, no_sync[1:])]
test_eq(len(set(d)), 1); assert d[0] > 0          # the same number of new nodes every step: linear growth
test_eq(set(with_sync), {1})                      # after a sync the result is one device_data node
del x16

# %% after 9327054e
test_eq((c1.n, c2.n), (1, 0))

# %% after 3eff22c7
test_eq(per_batch, [1, 1, 0, 1, 0])

# %% after 214ff864
test_eq(list(lr_compiles.values()), [1, 0, 0, 0])   # a rate in a tensor: 0.0 and 1.0 are data too

# %% after tpustep2
ops = entry(tpu_step.as_text())
test_eq(sum(op == 'all-reduce' for _, op, *_ in ops), 1)   # one all-reduce of both gradients
ar = next(i for i, (_, op, *_) in enumerate(ops) if op == 'all-reduce')
grads = [i for i, (_, op, _, what, mm) in enumerate(ops) if mm and what.startswith('transpose')]
updates = [i for i, (_, _, _, what, _) in enumerate(ops) if what == 'sub']
assert grads and updates and max(grads) < ar < min(updates), ops   # after the gradients, before the update
test_eq(sum(mm for *_, mm in ops) >= 4, True)   # forward and backward matmuls

# %% after c01f9c85
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('pack')
def one_each(lengths, max_len): return [[i] for i in range(len(lengths))]
def next_fit(lengths, max_len):
    rows, free = [], 0
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if lengths[i] > free: rows.append([]); free = max_len
        rows[-1].append(i); free -= lengths[i]
    return rows
def in_order(lengths, max_len):
    rows, room = [], []
    for i, n in enumerate(lengths):
        for r in range(len(rows)):
            if n <= room[r]: rows[r].append(i); room[r] -= n; break
        else: rows.append([i]); room.append(max_len - n)
    return rows
def overfull(lengths, max_len): return [list(range(len(lengths)))]
def drops_the_last(lengths, max_len): return in_order(lengths[:-1], max_len)
for fn, says in ((one_each, 'one row per text packs nothing'), (next_fit, 'that is next fit'),
                 (in_order, 'that is first fit in the given order'), (overfull, 'more than 64'),
                 (drops_the_last, 'every text index must be in exactly one row')):
    test_eq(ex.catches(fn, says), True)
