"""Every notebook under nbs/, each run by nbdev's own runner in a fresh process of its own (the tutorials in their TPU
setting; the small CPU setting of those in BENCHED is a benchmark).

A fresh process per notebook matters here: TensorFlow and torch_xla abort a process that imports them
in the wrong order, and each framework keeps global state (devices, compile caches) for its process.
nbdev's runner honours `tst_flags` from pyproject.toml, `#| eval: false` and `skip_exec`.
`TPUTUTOR_NB_FLAGS` names the flags to run anyway (default `slow`: the README test command runs slow
cells too; `tpu` cells need a real TPU and are never forced here).
"""
import os, subprocess, sys, time
import pytest
from conftest import NBS, ROOT, venv_bin, clean_env, with_checks, check_blocks

# The TPU setting of a tutorial (its FULL branch: the model family, bf16, buckets, steps_per_execution, folds), run here on
# the virtual TPU with a tiny random checkpoint of the same family and fewer rows (tpututor.testing.rehearsal).
BENCHED = ['tutorials/01_keras_kfold.ipynb', 'tutorials/02_tf_siamese.ipynb', 'tutorials/03_xla_ranking.ipynb', 'tutorials/04_xla_cores.ipynb']
# Their small CPU setting fine-tunes the pretrained MiniLM for minutes: heavy evidence, run by bench/bench_tutorials.py
# (`./run.sh bench tutorials`, which saves the outputs the docs show); tests/test_project.py fails when that record is stale.
# The LLM classifier's small setting trains a tiny random decoder: the suite runs it as a notebook.
REHEARSED = BENCHED + ['tutorials/05_llm_classifier.ipynb', 'tutorials/06_blend_submit.ipynb']

def notebooks():
    return sorted(p for p in NBS.rglob('*.ipynb') if str(p.relative_to(NBS)) not in BENCHED
                  and not any(part.startswith(('.', '_')) for part in p.relative_to(NBS).parts))

@pytest.mark.parametrize('nb', notebooks(), ids=lambda p: str(p.relative_to(NBS)))
def test_notebook(nb, tmp_path):
    flags = os.environ.get('TPUTUTOR_NB_FLAGS', 'slow')
    # a lesson holds no checks (a learner opens it on Kaggle or Colab): its checks run in its namespace, put back in a copy
    run = with_checks(nb, ROOT / 'tests' / 'artifacts' / 'lessons' / tmp_path.name) if check_blocks(nb) else nb
    cmd = [venv_bin('nbdev-test'), str(run), '--flags', flags, '--cell-timing-min', '20']
    t0 = time.time()
    # a lesson runs as a learner runs it, JAX's optimisations on: it prints and checks what its programs measure (which
    # of JAX's collectives is slowest here, in lessons/03a_jax; conftest.py turns them off for the rest)
    env = clean_env(**({'JAX_DISABLE_MOST_OPTIMIZATIONS': '0'} if nb.parent.name == 'lessons' else {}))
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    print(f'{nb.name}: {time.time()-t0:.0f}s\n{r.stdout[-3000:]}')
    if run != nb: run.unlink()
    assert r.returncode == 0 and 'Success.' in r.stdout, f'{nb.name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}'

@pytest.mark.parametrize('nb', REHEARSED)
def test_tpu_setting(nb):
    cmd = [venv_bin('nbdev-test'), str(NBS/nb), '--flags', 'slow']
    # JAX's optimisations on, as a user's run has them: a rehearsal runs many steps of few programs, and unoptimised ones
    # cost more than they save (tutorial 01's: 51 CPU-s with them, 91 without; conftest.py)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                       env=clean_env(TPUTUTOR_REHEARSE='1', JAX_DISABLE_MOST_OPTIMIZATIONS='0'))
    assert r.returncode == 0 and 'Success.' in r.stdout, f'{nb} (TPU setting) failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}'
