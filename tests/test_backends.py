"""The backend contract, checked by running it: every backend, in a fresh process of its own, trains a tiny model
and reports what it saw (tests/contract_probe.py); each must meet the contract, and all must agree where the
contract says they are the same (history keys, the error for a bad target)."""
import json, subprocess, sys
from pathlib import Path
import pytest
from tpututor.loop import EPOCH_KEYS
from tpututor.backends.registry import backend_names
from conftest import ROOT, clean_env

class Reports(dict):
    "What each backend's probe saw, probed on first use: `test_contract[keras]` alone runs the keras probe alone"
    def __init__(self, work): super().__init__(); self.work = work
    def __missing__(self, name):
        r = subprocess.run([sys.executable, str(ROOT/'tests'/'contract_probe.py'), name, str(self.work)],
                           capture_output=True, text=True, env=clean_env(TPUTUTOR_PROGRESS='lines'), timeout=1200)
        line = [l for l in r.stdout.splitlines() if l.startswith('CONTRACT ')]
        assert r.returncode == 0 and line, f'{name}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}'
        self[name] = json.loads(line[-1][len('CONTRACT '):])
        return self[name]
    def every(self)->dict: return {name: self[name] for name in backend_names()}

@pytest.fixture(scope='module')
def reports(tmp_path_factory): return Reports(tmp_path_factory.mktemp('contract'))

def test_every_backend_is_checked(reports):
    # the baseline, Keras 3/JAX, TensorFlow and PyTorch/XLA at least
    assert {'bow', 'keras', 'tf', 'xla'} <= set(reports.every()), sorted(reports)

@pytest.mark.parametrize('name', backend_names())
def test_contract(reports, name):
    r = reports[name]
    assert r['is_backend'], f"{name} is not a tpututor.backends.Backend"
    assert r['history_type'] == 'History'
    assert r['epoch_keys'] == sorted(EPOCH_KEYS)
    assert r['epochs'] == list(range(1, len(r['epochs']) + 1))        # epochs counted from 1
    assert r['best_epoch_ok'] and r['val_loss_is_table_loss'] and r['json_round_trip']
    assert r['shape'] == [37, 2] and r['buckets_shape'] == [37, 2]     # every row, a ragged last batch included
    assert r['input_order'] and r['buckets_input_order'] and r['probabilities']
    assert r['save_load_same']
    assert r['same_seed_same'] < 1e-4, f"{name}: the same seed gave predictions {r['same_seed_same']} apart"
    # a fit that saves its fold state was stopped after its first save and continued from it (to those predictions)
    assert r.get('stopped') == 4 if r['resumable'] else len(r['why_not_resumable']) > 20, r
    assert r['replicas'] == (8 if name == 'keras' else r['replicas']) and r['replicas'] >= 1   # keras: the 8 virtual JAX devices

def test_backends_agree(reports):
    errors = {n: r['bad_target'] for n, r in reports.every().items()}
    assert len(set(errors.values())) == 1 and 'class ids must be in 0..1' in next(iter(errors.values())), errors
    assert len({tuple(r['epoch_keys']) for r in reports.every().values()}) == 1
