"""The checks of nbs/lessons/02c_jax_watch.ipynb: each block runs in the lesson's namespace right after the code cell
whose id it names (`tests/test_notebooks.py` puts them in); a learner's copy holds none of them."""

# %% after jxw00003
from fastcore.test import *
import ast

# %% after jxw00005
test_eq(step._cache_size(), 2)                                   # "a ragged last batch makes two programs"

# %% after jxw00007
text = '\n'.join(lines)
assert 'all previously seen cache keys differ' in text and 'now f32[5,8] and before f32[16,8]' in text, text

# %% after jxw00009
test_eq(why[0], '* at x, now bf16[16,8] and before f32[16,8]')   # the dtype, named
test_eq(why.count('never seen function:'), 2)                    # the lambda, at each of the two iterations

# %% after jxw00012
test_eq(compiled, ['Compiling jit(broadcast_in_dim)', 'Compiling jit(step)'])   # the eager op, then the step
assert len(took) == 2 and all(t < 5 for t in took), took         # "tens of milliseconds" on a CPU

# %% after jxw00015
first, second = (ast.literal_eval(seen[k]) for k in (1, 2))
assert first.get('cache_misses', 0) >= 2 and 'cache_hits' not in first, first      # the step and the eager ops
test_eq(second, {'cache_hits': first['cache_misses']})                              # every one found, none compiled

# %% after jxw00019
test_eq(double._cache_size(), 3)

# %% after jxw00022
test_eq((static._cache_size(), traced._cache_size()), (2, 1))

# %% after jxw00025
test_eq(bool(exercise('bucketed_mean').check(bucketed_mean)), False)   # the stub, not yet written
