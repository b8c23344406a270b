"""k-fold runs on the transformer backends, through the CLI as a user runs them (tiny models, so fast):
every backend produces a complete run directory from length buckets and folds of unequal sizes, and the
backends that compile (keras, xla) compile nothing after the first fold, and eager torch nothing at all; a run killed with
SIGKILL at random steps inside its first fold, and again inside its second, continues each fold from its last save
(the fold's state, `tpututor.rundir.FoldState`), does not redo a finished fold, and ends with the predictions of an
uninterrupted run.
Resuming folds is the k-fold layer's (`run_folds`, `open_run`), the same for every backend; resuming inside a fold is
the backend's (`Backend.resumable`). It is checked on eager torch, which starts fastest of the backends whose folds last
long enough to be killed half-way (keras trains a fold in under a second), and whose resumed run builds fold 1 afresh
where the uninterrupted run reuses fold 0's model."""
import json, os, signal, subprocess, time
from pathlib import Path
import numpy as np, pandas as pd
import pytest
from conftest import venv_bin, clean_env

@pytest.fixture(scope='module')
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp('e2e')
    from tpututor.data import rotten_tomatoes
    from tpututor.testing import tiny_model_dir
    rt = rotten_tomatoes().sample(370, random_state=1).reset_index(drop=True)
    rt[['text', 'label']][:310].to_csv(d/'train.csv', index=False)   # folds of 104, 103, 103 rows
    rt[['text']][310:].assign(id=range(60)).to_csv(d/'test.csv', index=False)
    tiny_model_dir(d/'tiny', rotten_tomatoes().text[:2000], 'bert', vocab_size=1000, hidden=32, layers=1, heads=2, max_len=64)
    return d

def cmd(d, backend, out, folds=3):
    return [venv_bin('tpututor'), 'train', '--data', str(d/'train.csv'), '--test', str(d/'test.csv'), '--model', str(d/'tiny'),
            '--backend', backend, '--folds', str(folds), '--epochs', '2', '--max-len', '32', '--buckets', '3', '--batch-size', '4', '--out', str(out),
            '--precision', 'fp32']   # as `predict` on a CPU, which must reproduce the run's test predictions

def run(args):
    r = subprocess.run(args, capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout

_RUNS = {}
def trained(setup, backend, tmp_path_factory):
    "(run directory, stdout) of the k-fold run of `backend`, made once: the resume test compares with the torch one"
    if backend not in _RUNS:
        out = tmp_path_factory.mktemp(backend)/'run'
        _RUNS[backend] = out, run(cmd(setup, backend, out))
    return _RUNS[backend]

@pytest.mark.parametrize('backend', ['keras', 'xla', 'torch', 'tf'])
def test_kfold_end_to_end(setup, backend, tmp_path, tmp_path_factory):
    out, stdout = trained(setup, backend, tmp_path_factory)
    assert 'out-of-fold accuracy' in stdout
    oof, folds = np.load(out/'oof.npy'), np.load(out/'folds.npy')
    assert oof.shape == (310, 2) and not np.isnan(oof).any()           # every training row predicted exactly once
    assert np.bincount(folds).tolist() == [104, 103, 103]
    np.testing.assert_allclose(oof.sum(1), 1, rtol=1e-4)                # probabilities
    per_fold = np.stack([np.load(out/f'fold{i}/test.npy') for i in range(3)])
    np.testing.assert_allclose(np.load(out/'test.npy'), per_fold.mean(0), rtol=1e-6)
    for i in range(3): assert (out/f'fold{i}/weights.safetensors').stat().st_size > 10_000
    summary = json.loads((out/'summary.json').read_text())
    if backend in ('keras', 'xla'):   # JAX and torch_xla count their compiles: folds 1 and 2 make none (the same shapes, the same programs)
        compiles = [f['compiles'] for f in summary['fold_scores']]
        assert compiles[0] > 0 and compiles[1:] == [0, 0], compiles
        assert summary['compiles']['after_first_fold'] == 0 and summary['compiles']['first_seconds'] > 0, summary['compiles']
        assert 'compiles expected: in fold 0, one training and one prediction program for ' in stdout
        assert 'compiles: ' in stdout and ' after it (0.0s)' in stdout
        epochs = [l for l in stdout.splitlines() if l.startswith('epoch ')]
        assert len(epochs) == 6 and all(', 0 compiles (+0 evaluating)' in l for l in epochs[2:]), epochs
    if backend == 'torch':   # eager PyTorch compiles nothing: every epoch line says so
        epochs = [l for l in stdout.splitlines() if l.startswith('epoch ')]
        assert len(epochs) == 6 and all(', 0 compiles (+0 evaluating)' in l for l in epochs), epochs
    sub = pd.read_csv(out/'predictions.csv'); assert len(sub) == 60 and sub.id.tolist() == list(range(60))
    assert list(sub.columns) == ['id', 'label', 'prob_0', 'prob_1']
    # predict from the saved weights reproduces the averaged test predictions
    r = subprocess.run([venv_bin('tpututor'), 'predict', '--run', str(out), '--test', str(setup/'test.csv'), '--output', str(tmp_path/'p.csv')],
                       capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr[-3000:]
    np.testing.assert_allclose(pd.read_csv(tmp_path/'p.csv').prob_1, sub.prob_1, atol=1e-5)

def _kill_at(p, state:Path, step:int, limit:float=600):
    "SIGKILL `p` once the fold whose state folder is `state` has saved at `step` or later: a kill inside the fold"
    t0 = time.time()
    while True:
        try: at = json.loads((state/'state.json').read_text())['step']
        except (OSError, ValueError, KeyError): at = -1
        if at >= step: break
        assert p.poll() is None, f'the run ended before its save at step {step} ({state})'
        assert time.time() - t0 < limit, f'no save at step {step} in {state}'
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL); p.wait()
    return at

def test_sigkill_inside_folds_resumes(setup, tmp_path, tmp_path_factory):
    """Killed at random steps inside fold 0 and again inside fold 1, each rerun continues the fold from its last
    save (every 5 steps here), and the last one ends with the uninterrupted run's predictions"""
    (ref, _), out = trained(setup, 'torch', tmp_path_factory), tmp_path/'killed'
    args, rng = cmd(setup, 'torch', out) + ['--save-steps', '5', '--save-minutes', '0'], np.random.default_rng()
    steps = [int(s) for s in rng.integers(8, 80, 2)]   # about 50 optimizer steps an epoch, 2 epochs a fold
    logs = [tmp_path/f'run{i}.txt' for i in range(2)]
    for i, (fold, step) in enumerate(zip((0, 1), steps)):
        with open(logs[i], 'w') as f:
            p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, env=clean_env(), start_new_session=True)
            at = _kill_at(p, out/f'fold{fold}'/'state', step)
        assert not (out/f'fold{fold}/done.json').exists(), f'fold {fold} finished before the kill at step {at}'
    assert 'continuing from the state saved at step' in logs[1].read_text(), logs[1].read_text()[-2000:]
    fold0_mtime = (out/'fold0/weights.safetensors').stat().st_mtime
    stdout = run(args)
    assert 'resumed from an earlier run' in stdout and 'fold 0: finished earlier' in stdout
    assert 'continuing from the state saved at step' in stdout, (steps, stdout[-2000:])
    assert (out/'fold0/weights.safetensors').stat().st_mtime == fold0_mtime           # fold 0 not redone
    # eager torch on a CPU resumes bit for bit (the torch core's notebook checks it); the tolerance is the run's own
    np.testing.assert_allclose(np.load(out/'oof.npy'), np.load(ref/'oof.npy'), atol=1e-5, err_msg=f'kills at {steps}')
    np.testing.assert_allclose(np.load(out/'test.npy'), np.load(ref/'test.npy'), atol=1e-5, err_msg=f'kills at {steps}')
    assert not list(out.rglob('*.tmp')) and not list(out.rglob('.*.tmp'))
    assert not list(out.glob('fold*/state')), 'a finished fold keeps its in-fold state'
