"""The competition loop as a user runs it from a shell: texts repeated across folds are warned about and
`--group text` stops it; runs that do not line up are refused with one clear sentence; a run trained from a model
folder predicts with the internet off after that folder is gone. The blend itself (two runs no worse than the
better, a submission from the run directories alone) is checked by tutorials/06_blend_submit and nbs/10a_blend;
runs on other rows are refused there too. The bag-of-tokens baseline keeps these fast; the offline test trains a
tiny RoBERTa."""
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
    pick = np.random.default_rng(0).permutation(np.repeat(np.arange(800, 900), 3))   # 100 texts, each three times
    pd.DataFrame({'text': rt.text[pick].values, 'label': label[pick].values}).to_csv(d/'dup.csv', index=False)
    return d

def test_leaks_and_refusals(data, tmp_path):
    dup, grouped = tmp_path/'dup', tmp_path/'grouped'
    code, stdout, stderr = tpututor('train', '--data', data/'dup.csv', '--backend', 'bow', '--folds', 3, '--out', dup)
    assert code == 0, stderr[-3000:]
    assert 'share their text with a row in another fold' in stdout and '--group text' in stdout, stdout[-3000:]
    leak = json.loads((dup/'summary.json').read_text())['leak']
    assert leak['rows'] > 200 and 'oof_without_leaked' in leak, leak                   # nearly every row has a twin elsewhere
    code, stdout, stderr = tpututor('train', '--data', data/'dup.csv', '--backend', 'bow', '--folds', 3, '--group', 'text', '--out', grouped)
    assert code == 0 and 'another fold' not in stdout, stdout[-3000:] + stderr[-2000:]
    assert 'leak' not in json.loads((grouped/'summary.json').read_text())
    folds, texts = np.load(grouped/'folds.npy'), pd.read_csv(data/'dup.csv').text
    assert pd.Series(folds).groupby(texts.values).nunique().max() == 1                  # equal texts share a fold
    code, _, stderr = tpututor('blend', dup, grouped, '--out', tmp_path/'x')            # the same rows, other folds
    assert code == 2 and 'cannot be blended with' in stderr and 'its folds are not' in stderr and 'Traceback' not in stderr, stderr[-2000:]
    assert not (tmp_path/'x').exists()
    code, _, stderr = tpututor('blend', dup, '--out', tmp_path/'x')
    assert code == 2 and 'at least two runs' in stderr, stderr[-2000:]

def test_predict_offline_after_the_model_folder_is_gone(data, tmp_path):
    from tpututor.data import rotten_tomatoes
    from tpututor.testing import tiny_model_dir
    model = tiny_model_dir(tmp_path/'roberta', rotten_tomatoes().text[:1000], 'roberta', vocab_size=600, hidden=32, layers=1, heads=2, max_len=64)
    run = tmp_path/'run'
    code, _, stderr = tpututor('train', '--data', data/'train.csv', '--test', data/'test.csv', '--model', model, '--backend', 'torch',
                               '--folds', 2, '--epochs', 1, '--max-len', 32, '--buckets', 2, '--batch-size', 16, '--rows', 200, '--out', run,
                               '--precision', 'fp32')   # as predict on a CPU: its predictions must equal the run's
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
