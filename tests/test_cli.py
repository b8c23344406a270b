"""`tpututor train` / `tpututor predict` as a user runs them: every kind of bad input gives one clear
paragraph, exit code 2 and no files; a good run leaves a complete run directory. The fast bag-of-tokens
backend keeps these quick; the notebooks and tests/test_resume.py run the transformer backends."""
import json, os, subprocess, sys
from pathlib import Path
import numpy as np, pandas as pd
import pytest
from conftest import venv_bin, clean_env

def tpututor(*args, cwd=None):
    r = subprocess.run([venv_bin('tpututor'), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                       env=clean_env(HF_HUB_OFFLINE='1'))   # a hub id behaves as on Kaggle with the internet off, here or online
    return r.returncode, r.stdout, r.stderr

@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('csv')
    from tpututor.data import rotten_tomatoes
    rt = rotten_tomatoes().sample(600, random_state=0).reset_index(drop=True)
    df = pd.DataFrame({'id': range(500), 'text': rt.text[:500], 'label': rt.label[:500].map({1: 'fresh', 0: 'rotten'})})
    df.to_csv(d/'train.csv', index=False)
    pd.DataFrame({'id': range(100, 200), 'text': rt.text[500:].values}).to_csv(d/'test.csv', index=False)
    pd.DataFrame({'id': [1], 'target': [0.5]}).to_csv(d/'sample.csv', index=False)        # one float column: P(positive)
    pd.DataFrame({'id': [1], 'target': [0]}).to_csv(d/'sample_int.csv', index=False)      # 0/1 ids: not these string classes
    return d

def write(d, name, df_or_text):
    p = d/name
    if isinstance(df_or_text, pd.DataFrame): df_or_text.to_csv(p, index=False)
    elif isinstance(df_or_text, bytes): p.write_bytes(df_or_text)
    else: p.write_text(df_or_text)
    return p

def bad_cases(d):
    good = pd.read_csv(d/'train.csv')
    nan_text = good.copy(); nan_text.loc[[3, 7], 'text'] = np.nan
    num_text = good.copy(); num_text['text'] = np.arange(len(good))      # a numeric column: no text at all
    nan_label = good.copy(); nan_label.loc[5, 'label'] = np.nan
    one_class = good.assign(label='fresh')
    rare = good.copy(); rare.loc[:2, 'label'] = 'meh'
    (d/'adir').mkdir(exist_ok=True)
    if not (d/'modernbert'/'config.json').exists():
        from transformers import ModernBertConfig
        ModernBertConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2).save_pretrained(d/'modernbert')
    return {
        'missing file':       (['--data', d/'nope.csv'], 'nope.csv does not exist'),
        'a folder':           (['--data', d/'adir'], 'is a folder; give a file (.csv, .tsv, .parquet, .jsonl)'),
        'unreadable bytes':   (['--data', write(d, 'bin.csv', b'text,label\n\xff\xfe\x00bad,1\n')], 'cannot be read as csv'),
        'empty csv':          (['--data', write(d, 'empty.csv', '')], 'empty.csv is empty'),
        'a spreadsheet':      (['--data', write(d, 'train.xlsx', b'PK')], '.xlsx is not a format tpututor reads'),
        'broken parquet':     (['--data', write(d, 'bad.parquet', b'not parquet')], 'bad.parquet cannot be read as parquet'),
        'NaN texts (jsonl)':  (['--data', write(d, 'nantext.jsonl', nan_text.to_json(orient='records', lines=True))],
                               "column 'text': 2 row(s) are missing or not text (rows [3, 7]"),
        'header only':        (['--data', write(d, 'header.csv', 'text,label\n')], 'has a header but no rows'),
        'missing column':     (['--data', d/'train.csv', '--text', 'review'], "has no column(s) ['review']"),
        'NaN texts':          (['--data', write(d, 'nantext.csv', nan_text)], "column 'text': 2 row(s) are missing or not text (rows [3, 7]"),
        'non-string text':    (['--data', write(d, 'numtext.csv', num_text)], "500 row(s) are missing or not text (rows [0, 1, 2, 3, 4] ..., values [0, 1, 2])"),
        'NaN labels':         (['--data', write(d, 'nanlabel.csv', nan_label)], 'missing values in rows [5]'),
        'single class':       (['--data', write(d, 'oneclass.csv', one_class)], "single class ('fresh')"),
        'fewer rows than folds': (['--data', d/'train.csv', '--rows', 3], '3 training rows cannot make 5 folds'),
        'rare class':         (['--data', write(d, 'rare.csv', rare)], "(class, rows) have fewer rows than the 5 folds"),
        'unknown backend':    (['--data', d/'train.csv', '--backend', 'jax'], "invalid choice: 'jax'"),
        'unknown task':       (['--data', d/'train.csv', '--task', 'qa'], "invalid choice: 'qa'"),
        'unknown precision':  (['--data', d/'train.csv', '--precision', 'fp8'], "invalid choice: 'fp8'"),
        'model path missing': (['--data', d/'train.csv', '--model', './models/mine'], "Model path './models/mine' does not exist"),
        'hub id, no internet': (['--data', d/'train.csv', '--model', 'tpututor-tests/never-downloaded'], 'add the model to the notebook as a Kaggle model or dataset'),
        'family the backend cannot run': (['--data', d/'train.csv', '--model', d/'modernbert', '--backend', 'keras'],
                                          "The keras backend cannot run modernbert"),
        'pack on a backend that does not': (['--data', d/'train.csv', '--backend', 'bow', '--pack'],
                                            "pack=True acts only in backend 'xla', 'torch' or 'keras', not in 'bow'"),
        'pack a family that cannot': (['--data', d/'train.csv', '--model', d/'modernbert', '--backend', 'torch', '--pack'],
                                      'pack=True cannot run modernbert'),
        'max length too small': (['--data', d/'train.csv', '--max-len', 4], 'max_len=4 is too small'),
        'batch too large for replicas': (['--data', d/'train.csv', '--batch-size', 1000], 'rows per step, more than the 400 training rows of a fold'),
        'test without text column': (['--data', d/'train.csv', '--test', write(d, 'test_bad.csv', pd.DataFrame({'id': [1], 'body': ['x']}))], "--test file"),
        'output not writable': (['--data', d/'train.csv', '--out', '/proc/tpututor-run'], 'cannot create output folder /proc/tpututor-run'),
        'test without data':  (['--test', d/'test.csv'], '--test needs --data'),
        'sample submission does not fit': (['--data', d/'train.csv', '--test', d/'test.csv', '--sample-submission', d/'sample_int.csv'],
                                           "'target' column holds int64 values, but the classes are ['fresh', 'rotten']"),
    }

CASES = ['missing file', 'a folder', 'unreadable bytes', 'empty csv', 'header only', 'missing column', 'NaN texts',
         'non-string text', 'NaN labels', 'single class', 'fewer rows than folds', 'rare class', 'unknown backend',
         'unknown task', 'unknown precision', 'model path missing', 'hub id, no internet', 'family the backend cannot run', 'pack on a backend that does not',
         'pack a family that cannot', 'max length too small', 'batch too large for replicas',
         'test without text column', 'output not writable', 'test without data', 'sample submission does not fit']

@pytest.mark.parametrize('case', CASES)
def test_bad_input(case, data, tmp_path):
    args, expected = bad_cases(data)[case]
    out = tmp_path/'run'
    extra = ([] if '--out' in args else ['--out', out]) + ([] if '--backend' in args else ['--backend', 'bow'])
    code, stdout, stderr = tpututor('train', *args, *extra)
    assert code == 2, (code, stderr[-2000:])
    assert expected in stderr, stderr[-2000:]
    assert 'Traceback' not in stderr, stderr[-2000:]
    assert not out.exists(), f'{case}: left {list(out.rglob("*"))}'

def test_debug_shows_traceback(data, tmp_path):
    code, _, stderr = tpututor('train', '--data', data/'nope.csv', '--backend', 'bow', '--out', tmp_path/'r', '--debug')
    assert code != 0 and 'Traceback' in stderr and 'does not exist' in stderr

def test_train_predict_end_to_end(data, tmp_path):
    out = tmp_path/'run'
    args = ['train', '--data', data/'train.csv', '--test', data/'test.csv', '--sample-submission', data/'sample.csv',
            '--backend', 'bow', '--folds', 4, '--out', out]
    code, stdout, stderr = tpututor(*args)
    assert code == 0, stderr[-3000:]
    assert 'out-of-fold accuracy' in stdout
    names = {p.name for p in out.iterdir()}
    assert {'run.json', 'folds.npy', 'oof.npy', 'test.npy', 'metrics.json', 'loss.png', 'folds.png', 'log.txt',
            'predictions.csv', 'submission.csv', 'summary.json', 'cli.json', 'fold0', 'fold3'} <= names, names
    oof, folds = np.load(out/'oof.npy'), np.load(out/'folds.npy')
    assert oof.shape == (500, 2) and not np.isnan(oof).any()                      # every training row predicted
    assert np.bincount(folds).tolist() == [125, 125, 125, 125]                      # 500 rows in 4 equal folds
    per_fold = [np.load(out/f'fold{i}/test.npy') for i in range(4)]
    np.testing.assert_allclose(np.load(out/'test.npy'), np.mean(per_fold, 0), rtol=1e-6)
    pred = pd.read_csv(out/'predictions.csv')                                      # the user's own terms
    assert list(pred.columns) == ['id', 'label', 'prob_fresh', 'prob_rotten'] and pred.id.tolist() == list(range(100, 200))
    np.testing.assert_allclose(pred.prob_rotten, np.mean(per_fold, 0)[:, 1], rtol=1e-5)
    assert (pred.label == np.where(pred.prob_fresh > pred.prob_rotten, 'fresh', 'rotten')).all()
    sub = pd.read_csv(out/'submission.csv')                                        # the competition's shape
    assert list(sub.columns) == ['id', 'target'] and sub.id.tolist() == list(range(100, 200))
    np.testing.assert_allclose(sub.target, pred.prob_rotten, rtol=1e-5)
    assert not list(out.rglob('*.tmp')), 'temporary files left behind'
    # predict with the finished run reproduces the submission
    code, stdout, stderr = tpututor('predict', '--run', out, '--test', data/'test.csv', '--sample-submission', data/'sample.csv', '--output', tmp_path/'p.csv')
    assert code == 0, stderr[-3000:]
    np.testing.assert_allclose(pd.read_csv(tmp_path/'p.csv').target, sub.target, rtol=1e-5)
    # the same command again resumes every fold
    code, stdout, _ = tpututor(*args)
    assert code == 0 and 'resumed from an earlier run' in stdout
    # a different config on the same run directory is refused, and says what changed
    code, _, stderr = tpututor(*args[:-2], '--epochs', 3, '--out', out)
    assert code == 2 and 'holds a different run' in stderr and 'epochs: 2 -> 3' in stderr
    # without a sample, predict writes the user's terms
    code, _, stderr = tpututor('predict', '--run', out, '--test', data/'test.csv', '--output', tmp_path/'q.csv')
    assert code == 0, stderr[-2000:]
    q = pd.read_csv(tmp_path/'q.csv'); assert list(q.columns) == list(pred.columns)
    np.testing.assert_allclose(q.prob_fresh, pred.prob_fresh, rtol=1e-5)

def test_corrupted_run_and_checkpoint(data, tmp_path):
    out = tmp_path/'run'
    args = ['train', '--data', data/'train.csv', '--backend', 'bow', '--folds', 2, '--out', out]
    assert tpututor(*args)[0] == 0
    (out/'fold1/weights.safetensors').write_bytes(b'garbage')
    code, _, stderr = tpututor('predict', '--run', out, '--test', data/'test.csv')
    assert code == 2 and 'fold1/weights.safetensors is corrupted' in stderr, stderr[-2000:]
    (out/'run.json').write_text('{"config": ')
    code, _, stderr = tpututor(*args)
    assert code == 2 and 'run.json is corrupted' in stderr, stderr[-2000:]

def test_cache_command(tmp_path):
    "`tpututor cache` lists each framework's folder with its size; --clear empties one framework's or all"
    cc = tmp_path/'cc'
    for fw, n in (('jax', 2 << 20), ('torch_xla', 1 << 20)):
        (cc/fw/'sub').mkdir(parents=True); (cc/fw/'sub'/'prog').write_bytes(b'x' * n)
    code, out, err = tpututor('cache', '--compile-cache', cc)
    assert code == 0, err
    assert [l.split()[:4] for l in out.splitlines()[1:]] == [['jax', '1', 'files', '2.0'], ['torch_xla', '1', 'files', '1.0'],
                                                              ['total', '2', 'files', '3.0']], out
    code, out, err = tpututor('cache', '--compile-cache', cc, '--clear', 'torch_xla')
    assert code == 0 and 'cleared 1.0 MB' in out and sorted(p.name for p in cc.iterdir()) == ['jax'], (out, err)
    code, out, err = tpututor('cache', '--compile-cache', cc, '--clear')
    assert code == 0 and 'cleared 2.0 MB' in out and list(cc.iterdir()) == [], (out, err)
    code, out, err = tpututor('cache', '--compile-cache', 'off')
    assert code == 0 and 'compile cache: off' in out, (out, err)
    code, out, err = tpututor('cache', '--compile-cache', cc, '--clear', '../etc')
    assert code == 2 and "framework='../etc'" in err and 'Traceback' not in err, err

def test_compile_cache_off_trains(data, tmp_path):
    "--compile-cache off is accepted by train (the bag-of-tokens baseline compiles nothing; keras: bench/bench_cache.py)"
    code, out, err = tpututor('train', '--data', data/'train.csv', '--backend', 'bow', '--folds', 2, '--compile-cache', 'off', '--out', tmp_path/'r')
    assert code == 0, err[-2000:]
