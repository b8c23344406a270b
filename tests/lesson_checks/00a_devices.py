"""The checks of nbs/lessons/00a_devices.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 369c29a9
from fastcore.test import *

# %% after f31f3fc7
if not tpu_present(): test_eq([(r['framework'], r['device'], r['count']) for r in seen if r['count']], [('jax', 'CPU', 1), ('torch_xla', 'CPU', 1), ('tensorflow', 'CPU', 1)][:3 if installed('tensorflow') else 2])
test_eq({'jax', 'tensorflow', 'torch_xla'} & {m for m in sys.modules if sys.modules[m] is not None}, set())

# %% after a2d30183
test_eq(rc, 0)
test_eq(after(out, 'same again'), 'True')
test_eq(float(after(out, 'xla sharded sum')), float(sum(range(16))))
if installed('tensorflow'):
    test_eq(after(out, 'returned'), "{'torch_xla': 8, 'tensorflow': 8}")
    test_eq(after(out, 'tf replicas'), '8')
    test_eq(float(after(out, 'tf all-reduce of 1..8')), sum(range(1, 9)))
    test_eq(json.loads(after(out, 'global batch 16 per replica')), [2] * 8)
    uneven = json.loads(after(out, 'global batch 20 per replica'))
    test_eq((len(uneven), sum(uneven), len(set(uneven)) > 1), (8, 20, True))

# %% after 3f6bb1a8
test_eq(any('replica_groups={{0,1,2,3,4,5,6,7}}' in l for l in all_reduces), True)
import shutil; shutil.rmtree(dump)

# %% after a24eb107
if installed('tensorflow'):
  test_eq(rc, 0)
  assert after(out, 'refused:').startswith('TensorFlow has already initialised its devices (1 CPU device(s))'), out
  assert 'Call virtual_tpu(8) at the top of the notebook' in after(out, 'refused:'), out
  assert after(out, 'warned:').startswith("['Left torch_xla out"), out
  assert after(out, 'order:').startswith('TensorFlow is already imported'), out

# %% after 48547374
test_eq({k: len(v) for k, v in devices.items()}, {'torch_xla': 8, 'tensorflow': 8} if installed('tensorflow') else {'torch_xla': 8})
if not tpu_present():   # on a TPU host JAX shows the chips, not eight CPU devices
    test_eq(len(jax_devices), 8)
    test_eq([(r['framework'], r['device'], r['count']) for r in table if r['count']], [('jax', 'CPU', 8), ('torch_xla', 'CPU', 8), ('tensorflow', 'CPU', 8)][:3 if installed('tensorflow') else 2])
test_eq(any('fresh process' in r['notes'] for r in table), False)   # all three read in this process, which set them up

# %% after 0f09c9ef
assert (v4.devices, v4.hbm_gb_per_device) == (4, 32)

# %% after 99270eb0
assert outcome['virtual_tpu'].startswith('refused') and (tpu_present() or outcome['virtual_jax'].startswith('refused'))

# %% after 58362ce6
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('device_layout')
def number_in_name(accelerator, hbm_per_chip):
    generation, number = accelerator.rsplit('-', 1)
    return int(number), hbm_per_chip[generation]
def halve_all(accelerator, hbm_per_chip):
    generation, number = accelerator.rsplit('-', 1)
    return int(number) // 2, hbm_per_chip[generation]
def only_v4_megacore(accelerator, hbm_per_chip):
    generation, number = accelerator.rsplit('-', 1)
    return (int(number) // 2 if generation == 'v4' else int(number)), hbm_per_chip[generation]
def chip_memory_each(accelerator, hbm_per_chip):
    generation, number = accelerator.rsplit('-', 1)
    return (int(number) // 2 if generation in ('v4', 'v5p') else int(number)), hbm_per_chip[generation]
for fn, says in ((number_in_name, 'That is the number in the name'),
                 (halve_all, 'halving the number on every generation'),
                 (only_v4_megacore, 'v5p counted like v5e'), (chip_memory_each, "a whole chip's memory each")):
    test_eq(ex.catches(fn, says), True)
layouts = [ex.answer(a, HBM_PER_CHIP) for a in ('v4-8', 'v3-8', 'v7x-8', 'v5litepod-8')]
test_eq(layouts, [(4, 32), (8, 16.0), (8, 96.0), (8, 16)])
table = tpu_table().set_index('accelerator')   # the TPU lesson's table agrees
test_eq(layouts, [(table.loc[a].devices, table.loc[a].hbm_gb_per_device) for a in ('v4-8', 'v3-8', 'v7x-8', 'v5e-8')])
