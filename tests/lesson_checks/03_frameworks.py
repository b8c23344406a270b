"""The checks of nbs/lessons/03_frameworks.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after 81bb84b0
from fastcore.test import *

# %% after ce282520
test_eq(tf_first[0] < 0, True)      # killed by a signal (SIGABRT after 'LLVM ERROR', or SIGSEGV): nothing to catch
test_eq(xla_first[0], 0)
test_eq(trap1[pairs[1]].stdout.split(), ['3.0', '3.0'])

# %% after 83cdf7c9
test_eq(r.returncode, 0)
assert r.stdout.startswith('refused: TensorFlow is already imported'), r.stdout

# %% after 4ce05823
test_eq(seen, ['True' if tv.startswith('4.') else 'False', 'False'])   # transformers 5 has no TensorFlow side to load

# %% after 3e2e6a67
test_eq(keras3_modules.split(), ['keras.src.models.model'] * 2)
assert refusal.startswith('refused: tf.keras is Keras 3 here'), refusal

# %% after a8b17d16
test_eq(legacy_module, 'tf_keras.src.engine.training')

# %% after 47b9f488
test_eq((has['tf.distribute.TPUStrategy'], has['strategy.run'], has['strategy.experimental_run_v2']), (True, True, False))

# %% after 0def4b84
test_eq(runs['0'].returncode < 0, True)   # killed by a signal (trap 1), through accelerate

# %% after df18407f
test_eq(r.stdout.strip(), '7.0')

# %% after a5de4c0b
works = dict(zip(three.order, three.works))
test_eq(sorted(o for o, w in works.items() if not w), ['jax → tensorflow → torch_xla', 'tensorflow → torch_xla'])
test_eq(three.died_of[~three.works].isin(['SIGABRT', 'SIGSEGV']).all(), True)   # killed, not a Python error

# %% after 5eaa34cb
test_eq(ex1['works'], True)

# %% after 61160664
test_eq((guarded.returncode, guarded.stdout.strip()), (0, 'survived; torch_xla loaded: False'))

# %% after 7b4bd0b7
assert "pip install 'torch==2.9.*'" in answer

# %% after fe3b5366
# wrong answers a learner would write, each told what it got wrong on its first try (the general hint on the second)
ex = exercise('import_order')
def as_given(modules, loaded=()): return [m for m in modules if m not in loaded]
def only_tensorflow_last(modules, loaded=()):
    return sorted((m for m in modules if m not in loaded), key=lambda m: m == 'tensorflow')
def alphabetical(modules, loaded=()): return sorted(m for m in modules if m not in loaded)
def keeps_loaded(modules, loaded=()): return sorted(modules, key=lambda m: m in ('tensorflow', 'tf_keras', 'keras_hub'))
def never_refuses(modules, loaded=()):
    return sorted((m for m in modules if m not in loaded), key=lambda m: m in ('tensorflow', 'tf_keras', 'keras_hub'))
for fn, says in ((as_given, 'would abort at `import torch_xla`'),
                 (only_tensorflow_last, 'keras_hub loads TensorFlow too'),
                 (alphabetical, 'alphabetical order puts tensorflow first'), (keeps_loaded, 'leave them out'),
                 (never_refuses, 'no order can import torch_xla now')):
    test_eq(ex.catches(fn, says), True)
