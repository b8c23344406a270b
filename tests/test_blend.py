"""The competition loop as a user runs it from a shell: two runs on the same rows and folds blend into test
predictions in the label names, no worse out-of-fold than the better run; runs on other rows are refused with one
clear sentence; texts repeated across folds are warned about and `--group text` stops it; a run trained from a
model folder predicts with the internet off after that folder is gone, and a blend submits from the run
directories alone. The bag-of-tokens baseline keeps the blend fast; the offline test trains a tiny RoBERTa."""
import json, shutil
from pathlib import Path
import numpy as np, pandas as pd
import pytest
from test_cli import tpututor

@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('blend')
    from tpututor.data import rotten_tomatoes
    rt = rotten_tomatoes().sample(1000, random_state=0).reset_index(drop=True)
    label = rt.label.map({1: 'fresh', 0: 'rotten'})
    pd.DataFrame({'id': range(600), 'text': rt.text[:600], 'label': label[:600]}).to_csv(d/'train.csv', index=False)
    pd.DataFrame({'id': range(1000, 1200), 'text': rt.text[600:800].values}).to_csv(d/'test.csv', index=False)
    pd.DataFrame({'id': [1], 'target': [0.5]}).to_csv(d/'sample.csv', index=False)
    pick = np.random.default_rng(0).permutation(np.repeat(np.arange(800, 1000), 3))   # 200 texts, each three times
    pd.DataFrame({'text': rt.text[pick].values, 'label': label[pick].values}).to_csv(d/'dup.csv', index=False)
    return d

def train(d, out, *extra):
    code, stdout, stderr = tpututor('train', '--data', d/'train.csv', '--test', d/'test.csv', '--backend', 'bow', '--folds', 3, '--out', out, *extra)
    assert code == 0, stderr[-3000:]
    return stdout

def test_blend_two_runs(data, tmp_path):
    a, b = tmp_path/'short', tmp_path/'long'
    train(data, a, '--max-len', 16); train(data, b, '--max-len', 64)
    code, stdout, stderr = tpututor('blend', a, b, '--out', tmp_path/'blend', '--sample-submission', data/'sample.csv')
    assert code == 0, stderr[-3000:]
    s = json.loads((tmp_path/'blend/summary.json').read_text())
    own = [json.loads((r/'summary.json').read_text())['oof']['accuracy'] for r in (a, b)]
    assert s['oof']['accuracy'] >= max(own) and len(s['fold_scores']) == 3, (s['oof'], own)
    assert 'blend' in stdout and 'accuracy' in stdout
    w = json.loads((tmp_path/'blend/blend.json').read_text())['weights']
    assert abs(sum(w.values()) - 1) < 1e-6 and min(w.values()) >= 0, w
    pred = pd.read_csv(tmp_path/'blend/predictions.csv')
    assert list(pred.columns) == ['id', 'label', 'prob_fresh', 'prob_rotten'] and pred.id.tolist() == list(range(1000, 1200))
    tests = [pd.read_csv(r/'predictions.csv').prob_rotten.values for r in (a, b)]
    np.testing.assert_allclose(pred.prob_rotten, w[str(a)] * tests[0] + w[str(b)] * tests[1], atol=1e-5)
    sub = pd.read_csv(tmp_path/'blend/submission.csv')
    assert list(sub.columns) == ['id', 'target']; np.testing.assert_allclose(sub.target, pred.prob_rotten, atol=1e-6)
    # the submission from the run directories alone, elsewhere, with the internet off
    k = tmp_path/'kaggle'; [shutil.copytree(r, k/r.name) for r in (a, b)]
    code, _, stderr = tpututor('predict', '--run', k/'short', k/'long', '--weights', tmp_path/'blend/blend.json', '--test', data/'test.csv',
                               '--sample-submission', data/'sample.csv', '--output', tmp_path/'sub.csv')
    assert code == 0, stderr[-3000:]
    np.testing.assert_allclose(pd.read_csv(tmp_path/'sub.csv').target, sub.target, atol=1e-5)

def test_refusals_and_leaks(data, tmp_path):
    a, dup, grouped = tmp_path/'a', tmp_path/'dup', tmp_path/'grouped'
    train(data, a)
    code, stdout, stderr = tpututor('train', '--data', data/'dup.csv', '--backend', 'bow', '--folds', 3, '--out', dup)
    assert code == 0, stderr[-3000:]
    assert 'share their text with a row in another fold' in stdout and '--group text' in stdout, stdout[-3000:]
    leak = json.loads((dup/'summary.json').read_text())['leak']
    assert leak['rows'] > 500 and 'oof_without_leaked' in leak, leak                   # nearly every row has a twin elsewhere
    code, stdout, stderr = tpututor('train', '--data', data/'dup.csv', '--backend', 'bow', '--folds', 3, '--group', 'text', '--out', grouped)
    assert code == 0 and 'another fold' not in stdout, stdout[-3000:] + stderr[-2000:]
    assert 'leak' not in json.loads((grouped/'summary.json').read_text())
    folds, texts = np.load(grouped/'folds.npy'), pd.read_csv(data/'dup.csv').text
    assert pd.Series(folds).groupby(texts.values).nunique().max() == 1                  # equal texts share a fold
    code, _, stderr = tpututor('blend', a, dup, '--out', tmp_path/'x')
    assert code == 2 and 'cannot be blended with' in stderr and 'other rows' in stderr and 'Traceback' not in stderr, stderr[-2000:]
    assert not (tmp_path/'x').exists()
    code, _, stderr = tpututor('blend', a, '--out', tmp_path/'x')
    assert code == 2 and 'at least two runs' in stderr, stderr[-2000:]

def test_predict_offline_after_the_model_folder_is_gone(data, tmp_path):
    from tpututor.data import rotten_tomatoes
    from tpututor.testing import tiny_model_dir
    model = tiny_model_dir(tmp_path/'roberta', rotten_tomatoes().text[:1000], 'roberta', vocab_size=600, hidden=32, layers=1, heads=2, max_len=64)
    run = tmp_path/'run'
    code, _, stderr = tpututor('train', '--data', data/'train.csv', '--test', data/'test.csv', '--model', model, '--backend', 'torch',
                               '--folds', 2, '--epochs', 1, '--max-len', 32, '--buckets', 2, '--batch-size', 16, '--rows', 200, '--out', run)
    assert code == 0, stderr[-3000:]
    assert sorted(p.name for p in (run/'model').iterdir()) == ['config.json', 'tokenizer.json']
    kit = json.loads((run/'predict.json').read_text())
    assert kit['family'] == 'roberta' and kit['classes'] == ['fresh', 'rotten'] and len(kit['bucket_lengths']) >= 1, kit
    shutil.rmtree(model)                                                                # the training folder is gone
    moved = shutil.move(str(run), str(tmp_path/'dataset'))                              # and the run is attached elsewhere
    code, stdout, stderr = tpututor('predict', '--run', moved, '--test', data/'test.csv', '--output', tmp_path/'p.csv')
    assert code == 0, stderr[-3000:]
    np.testing.assert_allclose(pd.read_csv(tmp_path/'p.csv').prob_fresh, pd.read_csv(Path(moved)/'predictions.csv').prob_fresh, atol=1e-5)
    assert 'fp32' in stdout                                                             # a CPU: no emulated bf16
