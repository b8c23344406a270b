"""The checks of nbs/lessons/02b_xla_devices.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after fd51f042
from fastcore.test import *

# %% after c19637eb
test_fail(lambda: torch_xla.launch(hello), contains='Do not use the XLA device before')

# %% after 3cbee61d
test_eq(r.returncode, 0)
test_eq((res['devices'], res['spmd']), (8, True))
for a_, b_ in zip(spmd_w, single): test_close(a_, b_, eps=1e-5)
assert max((a_ - u).abs().max() for a_, u in zip(single, untrained)) > 1e-2   # training did move the weights

# %% after 4c87f895
test_eq(sorted((r0, r1) for _, r0, r1 in res['rows16']), [(2 * i, 2 * i + 2) for i in range(8)])   # 2 rows each
test_eq(len({d for d, *_ in res['rows16']}), 8)
test_eq(sorted(groups), [(0, 4), (4, 8)]); test_eq([len(v) for v in groups.values()], [4, 4])      # 2 halves, 4 owners each
assert res['spec'].startswith('{devices=[8,1]'), res['spec']                                       # split 8 ways along rows only
test_eq(sum(res['rows12']), 12); test_eq(res['rows12'][-2:], [0, 0])
test_eq(res['sum12'][0], res['sum12'][1])
assert 'a batch of 12 does not split evenly over the 8 devices' in res['error12'], res['error12']
r2 = subprocess.run([sys.executable, '-c', 'import sys, tpututor.devices.xla; print(sorted({"torch_xla", "tensorflow"} & set(sys.modules)))'],
                    capture_output=True, text=True)
test_eq(r2.stdout.strip(), '[]')   # importing the module loads neither torch_xla nor TensorFlow: torch_xla comes in when a function needs it

# %% after 12ed0306
if tax:
    test_eq(tax['devices'], 8)
    test_eq([s['compiles'] for s in tax['steps']], [1, 1, 2, 2])   # one compile per shape: 16 compiled, reused; 24 compiled; 16 reused
    test_close(tax['steps'][-1]['loss'], tax['torch_loss'], eps=1e-6)  # the jitted step is the torch module's step
    assert tax['grad_diff'] < 1e-5, tax['grad_diff']
    test_eq(tax['grad_spec'] in ('P()', 'PartitionSpec()'), True)                  # each device got 4 rows; XLA summed their gradients on every device
    test_eq(tax['buffers'], ['bert.embeddings.position_ids', 'bert.embeddings.token_type_ids'])

# %% after 5f412b78
if tax:
    adapt = tax['adapt']
    test_eq(adapt['sdpa'] == 'ConcretizationTypeError', not tax['aware'])   # SDPA's mask check needs a value the trace lacks, unless transformers knows the trace
    test_eq(len(adapt['eager']), 2)                        # eager attention traces
    test_eq(adapt['dropout'][0], adapt['dropout'][1])      # dropout inside jit without a key: the same "random" mask every call
    test_ne(adapt['dropout'][0], adapt['eager'][0])        # ... and dropout does act: half the activations are zeroed

# %% after 37c48781
for k in new: test_eq(checked[k][0], 'runs')
for k in ('xm.xla_device()', 'xm.mark_step()'):
    test_eq(checked[k][0], 'runs'); assert any('DeprecationWarning' in w for w in checked[k][1]), checked[k]
test_eq(checked['xm.xla_device()'][1], ['DeprecationWarning: Use torch_xla.device instead'])
test_eq(checked['xm.mark_step()'][1], ['DeprecationWarning: Use torch_xla.sync instead'])
for k in ('xm.xrt_world_size()', 'xm.get_ordinal()'): assert checked[k][0].startswith('gone'), checked[k]
test_eq((xr.world_size(), xr.global_ordinal()), (1, 0))
assert 'deprecated' in bf16_msg and 'bf16 directly' in bf16_msg, bf16_msg
assert 'can be either 1 or None' in spawn_doc
test_eq(autocast_block(), torch.bfloat16)

# %% after 6e99e42c
test_fail(spmd_mesh, contains='SPMD mode must be switched on before this process uses an XLA device')
import torch_xla.runtime as xr; test_eq(xr.is_spmd(), False)

# %% after 1047a6a9
test_eq((m.dtype, s.dtype, p.dtype), (torch.bfloat16, torch.float32, torch.float32))

# %% after 43c44304
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('shard_rows')
def ceil_div(n, d): return -(-n // d)
def every_device_splits(n_rows, mesh):
    devices = mesh[0] * mesh[1]; size = ceil_div(n_rows, devices)
    return [(min(d * size, n_rows), min((d + 1) * size, n_rows)) for d in range(devices)]
def column_by_column(n_rows, mesh):
    data, model = mesh; size = ceil_div(n_rows, data)
    return [(min(d % data * size, n_rows), min((d % data + 1) * size, n_rows)) for d in range(data * model)]
def like_array_split(n_rows, mesh):
    data, model = mesh
    return [(d // model * n_rows // data, (d // model + 1) * n_rows // data) for d in range(data * model)]
def unclipped(n_rows, mesh):
    data, model = mesh; size = ceil_div(n_rows, data)
    return [(d // model * size, (d // model + 1) * size) for d in range(data * model)]
for fn, says in ((every_device_splits, 'the second axis copies each shard'), (column_by_column, 'column by column'),
                 (like_array_split, "numpy's array_split"), (unclipped, 'shards reaching past the batch')):
    test_eq(ex.catches(fn, says), True)
ends = np.cumsum(res['rows12']).tolist()   # the rows each device held, as measured above
test_eq(ex.answer(12, (8, 1)), list(zip([0] + ends[:-1], ends)))
