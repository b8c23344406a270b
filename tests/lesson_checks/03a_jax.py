"""The checks of nbs/lessons/03a_jax.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 73529f4c
from fastcore.test import *

# %% after 135e9435
test_eq((len(devices), jax.device_count()), (8, 8))

# %% after fb0d1176
seen, new = set(), []
for label in timeline.input: new.append(int(label not in seen)); seen.add(label)
test_eq(list(timeline.traced), new)      # traced exactly when the shape/dtype/weak type is new
test_eq(list(timeline.compiled), new)    # and compiled then, and only then
s = JaxDevice().compile_seconds(); double_sum(jnp.ones(64)); test_eq(JaxDevice().compile_seconds() > s, True)   # a new shape: seconds spent compiling

# %% after 65d238c8
test_eq(w.recompiles, 1)
test_eq('x changed from (8,) to (12,)' in str(caught[0].message), True)

# %% after 2de0a33e
test_eq(first_line(jax.jit(relu_sum), jnp.ones(4)).startswith('TracerBoolConversionError'), True)
test_eq([float(jax.jit(cond_sum)(s * jnp.ones(4))) for s in (1, -1)], [4.0, 0.0])
test_eq('Error' in first_line(jax.jit(zeros), 1.0, 3), True)
test_eq((outs, n_static), ([(3,), (3,), (4,)], 2))
test_eq(same[0], same[1]); test_ne(fresh[0], fresh[1])

# %% after d0d65683
test_eq([s.data.shape for s in xs.addressable_shards], [(2, 2)] * 8)
test_eq([s.data.shape for s in xr.addressable_shards], [(16, 2)] * 8)
test_eq(np.asarray(xs.addressable_shards[3].data), np.asarray(rows[6:8]))   # device 3 holds rows 6 and 7
tokens = jnp.zeros((16, 12), jnp.int32)
split, copied = (jax.device_put(tokens, NamedSharding(mesh, spec)) for spec in (P('batch'), P()))
test_eq(sorted(regions(split).items()), [((2 * d, 2 * d + 2, 0, 12), [d]) for d in range(8)])
test_eq(list(regions(copied).values()), [list(range(8))])

# %% after ea1e710d
test_eq(float(total(xs)), float(rows.sum()))
test_eq('all-reduce' in hlo, True)
test_eq('all-reduce' in total.lower(xr).compile().as_text(), False)

# %% after 90616deb
test_eq(ag, np.tile(np.arange(64.0), (8, 1)))           # every device: all 64
test_eq(rs.ravel(), whole.sum(0))                      # device d: the d-th number of the sum of the blocks
test_eq(ar, np.tile(whole.sum(0), (8, 1)))             # every device: the whole sum
test_eq(rsag, ar)                                      # all-reduce = reduce-scatter, then all-gather
test_eq(a2a, whole.T)                                  # device d: the d-th number of every block
test_eq(set(timed.index), set(ring)); assert (timed['here, ms'] > 0).all()
test_close(ring['all-reduce'], ring['reduce-scatter + all-gather'], eps=1e-12)
test_close(ring['all-gather'], 8 * ring['reduce-scatter'], eps=1e-12)   # it ends with 8 blocks; the others act on 1
test_close(ring['all-reduce'], 2 * ring['reduce-scatter'], eps=1e-12)
here = timed['here, ms']   # the prose: the all-gather, writing 8 MiB a device, is the slowest here too
assert here['all-gather'] > here.drop('all-gather').max(), here

# %% after b30e7102
k = m_mp.get_layer('up').kernel
ids = np.vectorize(lambda d: int(str(d).split(':')[-1]))(layout.device_mesh.devices)
test_eq(loss_one[1] < loss_one[0], True)
test_eq(len(devs), 8)
test_eq([s.data.shape for s in m_dp.get_layer('up').kernel.value.addressable_shards], [(16, 32)] * 8)
test_eq(dp.get_data_layout((16, 16)).axes, ('batch', None))
test_eq([s.data.shape for s in k.value.addressable_shards], [(16, 8)] * 8)        # a quarter of the columns each
test_eq(sorted({s.index[1].start for s in k.value.addressable_shards}), [0, 8, 16, 24])  # four quarters, each on 2 devices
test_eq([s.data.shape for s in m_mp.get_layer('down').kernel.value.addressable_shards], [(8, 4)] * 8)
test_eq((tuple(layout.device_mesh.shape), ids.tolist()), ((2, 4), [[0, 1, 2, 3], [4, 5, 6, 7]]))

# %% after c2748798
(k_dp, b_dp), (k_mp, b_mp) = placed.values()
test_eq(list(regions(k_dp).values()), [list(range(8))])                                  # DP: one full copy per device
test_eq(sorted(regions(b_dp).items()), [((2 * d, 2 * d + 2, 0, 16), [d]) for d in range(8)])  # DP: 2 rows each
test_eq(sorted(regions(k_mp).items()), [((0, 16, 8 * q, 8 * q + 8), [q, q + 4]) for q in range(4)])  # MP: a quarter, on 2 devices
test_eq(sorted(regions(b_mp).items()), [((0, 8, 0, 16), [0, 1, 2, 3]), ((8, 16, 0, 16), [4, 5, 6, 7])])  # MP: half a batch per mesh row

# %% after 823460ac
test_close(loss_dp, loss_one, eps=1e-5)
test_close(loss_mp, loss_one, eps=1e-5)
test_close(np.asarray(m_mp.get_layer('up').kernel.value), np.asarray(m_one.get_layer('up').kernel.value), eps=1e-5)

# %% after c576afca
test_eq([rc for rc, out, err in runs], [0] * len(backends))
test_eq(([r['backend'] for r in res.values()], len(backends)), (backends, 3))   # this machine has all three
for b in backends[1:]: test_close(np.array(res[b]['y']), np.array(res['jax']['y']), eps=1e-5)
test_ne(res['jax']['seeded'], res['torch']['seeded'])
test_ne(res['jax']['seeded'], res['tensorflow']['seeded'])

# %% after f304c02b
test_eq(rcs, [0, 0])
test_eq([(r['devices'], r['local'], r['total'], r['agreed'], r['main']) for r in res], [(8, 4, 120.0, 100, True), (8, 4, 120.0, 100, False)])
test_eq([r['rows'] for r in res], [list(range(8)), list(range(8, 16))])
test_eq([r['gathered'] for r in res], [list(range(16))] * 2)
test_eq(res[1]['log'], 'JAX, 2 processes x 4 devices (cpu)')

# %% after f81b07b3
test_eq(ps[1].returncode, 1)
test_eq(rc0 != 0, True)       # never a clean exit: SIGABRT with JAX 0.10, exit code 1 with JAX 0.7
test_eq(waited < 60, True)    # stopped, not hung
test_eq('heartbeat' in log0.lower(), True)   # the cause is named
import shutil; shutil.rmtree(tmp)

# %% after c6f403bd
test_eq(list(table['first'][~table.works]), ['keras_hub', 'import_keras() + set_random_seed'])
test_eq((table.exit_code[~table.works] < 0).all(), True)           # killed by a signal, not a Python error

# %% after 16253829
test_eq('tensorflow' in sys.modules, False)    # the kernel's Keras never loaded TensorFlow

# %% after fd5b8917
test_eq(0 < achieved / measured < 2, True)          # a real, non-zero ratio (noise on a shared CPU can push it past 1)
test_eq(sheet is None, not tpu)
test_eq(datasheet_peak('TPU v5 lite'), 197e12)          # Kaggle's v5e-8 and Colab's v5e-1 (Google Cloud v5e page)
test_eq(datasheet_peak('TPU v3'), 123e12 / 2)            # a v3 chip is two JAX devices
test_eq(datasheet_peak('cpu'), None)

# %% after f6cd99e3
test_eq(compiles, 2)   # one program per sharding: split, replicated; the third call reuses the first

# %% after 1a8c8775
test_eq(({s.data.shape for s in a.addressable_shards}, len(regions(a))), ({(4, 4)}, 8))

# %% after 2dcb3a7b
test_eq(holders, [1, 5])

# %% after dd53b644
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('clip_norm')
def global_norm(grads): return jnp.sqrt(sum(jnp.sum(g ** 2) for g in grads.values()))
def python_if(grads, max_norm):
    norm = global_norm(grads)
    if norm > max_norm: return {k: g * (max_norm / norm) for k, g in grads.items()}
    return grads
def each_its_own(grads, max_norm):
    return {k: g * jnp.minimum(1.0, max_norm / jnp.linalg.norm(g)) for k, g in grads.items()}
def no_square_root(grads, max_norm):
    sq = sum(jnp.sum(g ** 2) for g in grads.values())
    return {k: g * jnp.minimum(1.0, max_norm / sq) for k, g in grads.items()}
def always_to_max(grads, max_norm):
    return {k: g * (max_norm / global_norm(grads)) for k, g in grads.items()}
def as_a_list(grads, max_norm):
    return [g * jnp.minimum(1.0, max_norm / global_norm(grads)) for g in grads.values()]
for fn, says in ((python_if, 'a Python `if` on a traced value'), (each_its_own, 'each array clipped by its own norm'),
                 (no_square_root, 'without its square root'), (always_to_max, 'scaled when the norm'),
                 (as_a_list, 'return a dict with the same keys')):
    test_eq(ex.catches(fn, says), True)
