"The project's own checks: nbdev sync, README sync, and what `import tpututor` may load."
import filecmp, shutil, subprocess, sys
from pathlib import Path
from conftest import ROOT, NBS, venv_bin, clean_env

def _tree_diff(a, b):
    "Relative paths of files that differ between trees `a` and `b` (ignoring caches)"
    out = []
    def walk(c, rel=''):
        out.extend(f'{rel}{f}' for f in c.diff_files + c.left_only + c.right_only if f != '__pycache__')
        for name, sub in c.subdirs.items():
            if name != '__pycache__': walk(sub, f'{rel}{name}/')
    walk(filecmp.dircmp(a, b, ignore=['__pycache__', '.ipynb_checkpoints']))
    return out

def test_nbdev_clean_and_export_leave_no_diff(tmp_path):
    "What nbdev projects' CI checks first: notebooks are clean and the package is exported from them"
    for d in ('nbs', 'tpututor'): shutil.copytree(ROOT/d, tmp_path/d, ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT/'pyproject.toml', tmp_path)
    for cmd in ('nbdev-clean', 'nbdev-export'):
        r = subprocess.run([venv_bin(cmd)], cwd=tmp_path, capture_output=True, text=True, env=clean_env())
        assert r.returncode == 0, f'{cmd} failed:\n{r.stderr}'
    changed = _tree_diff(ROOT/'nbs', tmp_path/'nbs') + _tree_diff(ROOT/'tpututor', tmp_path/'tpututor')
    assert not changed, f'run nbdev-clean and nbdev-export, then commit; out of sync: {changed}'

def test_readme_is_built_from_index():
    sys.path.insert(0, str(ROOT/'tools'))
    from make_readme import readme
    assert (ROOT/'README.md').read_text() == readme(NBS/'index.ipynb'), 'README.md is stale: run python tools/make_readme.py'

# Modules that exist to drive a framework may import it at the top; every other module must not.
FRAMEWORK_MODULES = {'keras', 'tfkeras', 'strategy', 'torchxla', 'jaxdev'}

def test_import_loads_no_framework():
    "`import tpututor` and every framework-free module must not load TensorFlow, torch or transformers"
    mods = ['tpututor'] + [f'tpututor.{p.stem}' for p in sorted((ROOT/'tpututor').glob('*.py'))
                           if not p.stem.startswith('_') and p.stem not in FRAMEWORK_MODULES]
    code = f"import sys; import {', '.join(mods)}; print(sorted({{'tensorflow','torch','torch_xla','transformers'}} & set(sys.modules)))"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '[]', f'importing {mods} loaded {r.stdout.strip()}'
    assert {'tpututor.tokenize', 'tpututor.data', 'tpututor.config'} <= set(mods)

def test_compat_results_are_current():
    "The recorded `./run.sh compat` run used today's pin file (Kaggle's TPU image versions) and every row passed"
    import hashlib, json
    res = json.loads((ROOT / 'tools' / 'compat' / 'results.json').read_text())
    pins = (ROOT / 'tools' / 'compat' / 'kaggle-tpu.txt').read_bytes()
    assert res['pins'] == hashlib.sha256(pins).hexdigest()[:12], 'tools/compat/kaggle-tpu.txt changed since the last ./run.sh compat: run it again'
    wanted = {l.split('==')[0].strip(): l.split('==')[1].split()[0] for l in pins.decode().splitlines() if '==' in l and not l.startswith('#')}
    for dist in ('torch', 'torch_xla', 'transformers', 'jax', 'keras', 'keras-hub'):
        assert res['versions'][dist].startswith(wanted[dist].rstrip('.*')), (dist, res['versions'][dist], wanted[dist])
    assert res['versions']['torch_xla'].startswith('2.8') and res['versions']['transformers'].startswith('5.')
    failed = [r['what'] for r in res['rows'] if not r['ok']]
    assert not failed and {'09_keras', '10_torchxla', 'default job'} <= {r['what'] for r in res['rows']}, failed
