"""k-fold runs on the transformer backends, through the CLI as a user runs them (tiny models, so fast):
every backend produces a complete run directory from length buckets and folds of unequal sizes, and the
backends that compile (keras, xla) compile nothing after the first fold, and eager torch nothing at all.
Interruptions: on the default backend (eager torch here), a session whose time limit runs out after fold 1 writes a
partial ensemble and says so; the same command in a new session, on a copy of the run directory, is killed with SIGKILL
at a random step inside its first fold, after one of the fold's in-fold saves (`tpututor.rundir.FoldState`, every 5
steps here), and the same command again continues that fold from its last save and ends with the predictions of an
uninterrupted run, fold 1 not redone.
Resuming is the k-fold layer's (`run_folds`, `open_run`), the same for every backend: eager torch starts fastest of the
backends whose folds last long enough to be killed half-way (keras trains a fold in under a second), and its resumed run
builds fold 2 afresh where the uninterrupted run reuses fold 1's model. `predict --run` and `blend` (bow runs) are
killed at random moments: every file a user reads is absent or the uninterrupted run's, and a rerun writes that."""
import json, os, shutil, signal, subprocess, time
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
            '--backend', backend, '--folds', str(folds), '--epochs', '2', '--max-len', '32', '--buckets', '3', '--batch-size', '8', '--out', str(out),
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

def kill_at(args, seconds:float)->bool: # whether it ended before
    "Start command `args` as a user would and SIGKILL it with its children `seconds` later, unless it ended first"
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(),
                         start_new_session=True)
    try: p.wait(seconds); return True
    except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL); p.wait(); return False

def _kill_at(p, state:Path, step:int, limit:float=600)->int: # the step of the save it was killed after
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

def test_time_limit_then_sigkill_resumes(setup, tmp_path, tmp_path_factory):
    (ref, _), first = trained(setup, 'torch', tmp_path_factory), tmp_path/'first'
    # the same command in every session; a save inside a fold every 5 steps (about 26 an epoch, 2 epochs a fold)
    limited = lambda out: cmd(setup, 'torch', out) + ['--time-limit', '10m', '--save-steps', '5', '--save-minutes', '0']
    # a session with 55 s left when the command starts: fold 1 has no time to be estimated from, so it starts; then
    # fold 2 would need its time and the 60 s kept for writing the ensemble
    r = subprocess.run(limited(first), capture_output=True, text=True,
                       env=clean_env(TPUTUTOR_SESSION_START=str(time.time() - 600 + 55)))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert 'PARTIAL: partial ensemble of 1 of 3 folds' in r.stdout and 'fold 1 not started: it needs about' in r.stdout
    assert '(a partial ensemble of 1 of 3 folds)' in r.stdout                          # beside the predictions written
    assert json.loads((first/'summary.json').read_text())['partial']['left'] == [1, 2]
    assert json.loads((first/'metrics.json').read_text())['partial']['folds_done'] == [0]
    assert 'partial ensemble of 1 of 3 folds' in (first/'log.txt').read_text()
    np.testing.assert_allclose(np.load(first/'test.npy'), np.load(ref/'fold0/test.npy'), atol=1e-5)   # fold 1's alone
    # the next session, on a copy of the run directory (a Kaggle dataset is read-only), killed during its first fold
    out = tmp_path/'copy'; shutil.copytree(first, out)
    p = subprocess.Popen(limited(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=clean_env(), start_new_session=True)
    step = int(np.random.default_rng().integers(8, 45))   # a random step inside fold 2, after a save
    at = _kill_at(p, out/'fold1'/'state', step)
    assert not (out/'fold1/done.json').exists(), f'fold 2 finished before the kill at step {at}'
    fold0_mtime = (out/'fold0/weights.safetensors').stat().st_mtime
    stdout = run(limited(out))
    assert 'resumed from an earlier run' in stdout and 'fold 0: finished earlier' in stdout and 'PARTIAL' not in stdout
    assert 'continuing from the state saved at step' in stdout, (step, stdout[-2000:])   # inside fold 2, not from 0
    assert (out/'fold0/weights.safetensors').stat().st_mtime == fold0_mtime           # fold 1 not redone
    np.testing.assert_allclose(np.load(out/'oof.npy'), np.load(ref/'oof.npy'), atol=1e-5)
    np.testing.assert_allclose(np.load(out/'test.npy'), np.load(ref/'test.npy'), atol=1e-5)
    assert 'partial' not in json.loads((out/'summary.json').read_text())
    assert not list(out.rglob('*.tmp')) and not list(out.rglob('.*.tmp'))
    assert not list(out.glob('fold*/state')), 'a finished fold keeps its in-fold state'

@pytest.fixture(scope='module')
def bow_runs(setup, tmp_path_factory):
    "Two finished bow runs of the same rows and folds at two lengths, made in this process: what predict and blend read"
    from tpututor.cli import main
    d = tmp_path_factory.mktemp('bow')
    for name, length in (('a', 32), ('b', 16)):
        assert main(['train', '--data', str(setup/'train.csv'), '--test', str(setup/'test.csv'),
                     '--model', str(setup/'tiny'), '--backend', 'bow', '--folds', '3', '--max-len', str(length),
                     '--out', str(d/name)]) == 0
    return d

def test_time_limit_too_short_refused(bow_runs, setup, tmp_path, capsys):
    "A budget too short for one fold is refused before training, with the estimate; one it cannot read names the forms"
    from tpututor.cli import main
    out = tmp_path/'run'; shutil.copytree(bow_runs/'a', out); shutil.rmtree(out/'fold2')   # a run with one fold to go
    args = ['train', '--data', str(setup/'train.csv'), '--test', str(setup/'test.csv'), '--model', str(setup/'tiny'),
            '--backend', 'bow', '--folds', '3', '--max-len', '32', '--out', str(out)]
    kept = ('oof.npy', 'test.npy', 'predictions.csv', 'summary.json', 'metrics.json')   # the results written before
    before = [(out/n).stat().st_mtime_ns for n in kept]
    assert main(args + ['--time-limit', '30']) == 2
    err = capsys.readouterr().err
    assert 'time limit 30.0s is too short for one fold: fold 2 needs about' in err
    assert '60s to write the ensemble' in err
    assert not (out/'fold2').exists() and [(out/n).stat().st_mtime_ns for n in kept] == before   # nothing trained
    assert main(args + ['--time-limit', 'eight hours']) == 2
    assert 'write it as 8h30m, 90m, 45s, 1.5h' in capsys.readouterr().err

def same(a:Path, b:Path)->bool:
    "Are two files the same output (JSON but for its seconds and the paths written; arrays equal; else byte for byte)?"
    if a.suffix == '.npy': return np.array_equal(np.load(a), np.load(b))
    if a.suffix == '.json':
        drop = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k not in ('seconds', 'written')}
        return drop(a) == drop(b)
    return a.read_bytes() == b.read_bytes()

@pytest.mark.parametrize('job', ['predict', 'blend'])
def test_sigkill_during_predict_and_blend(job, bow_runs, setup, tmp_path):
    """SIGKILL at 3 random moments of `predict --run` and of `blend` (drawn over the time an uninterrupted one takes): every
    file a user reads is absent or whole, the uninterrupted run's; a rerun writes that output and leaves no temporary
    file"""
    tp, a, b = venv_bin('tpututor'), str(bow_runs/'a'), str(bow_runs/'b')
    args, files = {
        'predict': ([tp, 'predict', '--run', a, '--test', str(setup/'test.csv'), '--output', '{}/p.csv'], ['p.csv']),
        'blend': ([tp, 'blend', a, b, '--out', '{}'],
                  ['oof.npy', 'test.npy', 'predictions.csv', 'blend.json', 'summary.json'])
    }[job]
    ref, out = tmp_path/'ref', tmp_path/'killed'
    t0 = time.time(); run([x.format(ref) for x in args]); took = time.time() - t0
    for at in np.random.default_rng(58).uniform(0, took, 3):   # the same moments each time the test runs
        kill_at([x.format(out) for x in args], at)
        for f in files:
            assert not (out/f).exists() or same(out/f, ref/f), f'{f} after a kill at {at:.2f}s of {took:.2f}s'
    from tpututor.cli import main
    assert main([x.format(out) for x in args[1:]]) == 0   # the rerun: the same command, in this process (no start-up)
    for f in files: assert same(out/f, ref/f), f
    assert not list(out.glob('.*.tmp'))
