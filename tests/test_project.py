"The project's own checks: nbdev sync, README sync, and what `import tpututor` may load."
import filecmp, shutil, subprocess, sys
from pathlib import Path
from conftest import ROOT, NBS, venv_bin, clean_env, bench_common, stale_records

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

# Modules that exist to drive a framework may import it at the top; every other module must not. A backend's folder
# drives its framework: importing any module of it imports the folder's __init__.py, the backend itself.
FRAMEWORK_FOLDERS = ('backends.keras', 'backends.tf', 'backends.torch', 'backends.xla', 'backends.pytorch')
FRAMEWORK_MODULES = {'devices.jax', 'devices.tf', 'devices.torch', 'devices.xla'}

def test_import_loads_no_framework():
    "`import tpututor` and every framework-free module must not load TensorFlow, torch or transformers"
    names = ['.'.join(p.relative_to(ROOT/'tpututor').with_suffix('').parts).removesuffix('.__init__')
             for p in sorted((ROOT/'tpututor').rglob('*.py')) if p.parent != ROOT/'tpututor' or p.name != '__init__.py']
    mods = ['tpututor'] + [f'tpututor.{n}' for n in names if not n.split('.')[-1].startswith('_') and n not in FRAMEWORK_MODULES
                                 and not n.startswith(tuple(f + '.' for f in FRAMEWORK_FOLDERS)) and n not in FRAMEWORK_FOLDERS]
    code = f"import sys; import {', '.join(mods)}; print(sorted({{'tensorflow','torch','torch_xla','transformers'}} & set(sys.modules)))"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '[]', f'importing {mods} loaded {r.stdout.strip()}'
    assert {'tpututor.encoding', 'tpututor.data', 'tpututor.config', 'tpututor.models.checkpoint', 'tpututor.devices.ops', 'tpututor.backends.base',
            'tpututor.backends.bow', 'tpututor.models.keras_presets'} <= set(mods)

def _compat():
    "tools/compat/run.py as a module: its IMAGES, pins_hash and code_hash"
    import importlib.util
    spec = importlib.util.spec_from_file_location('compat_run', ROOT / 'tools' / 'compat' / 'run.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

def test_compat_results_are_current():
    "Each image's recorded compat run used today's pin file and package code, on the image's Python, and every row passed"
    import json, re
    compat = _compat()
    assert set(compat.IMAGES) == {'kaggle', 'colab'}
    for image, im in compat.IMAGES.items():
        path, redo = compat.results_path(image, 'json'), f"run `{im['command']}` again"
        assert path.exists(), f"{path.relative_to(ROOT)} is missing: {redo}"
        res = json.loads(path.read_text())
        assert res['pins'] == compat.pins_hash(image), f"tools/compat/{im['pins']} changed since the last `{im['command']}`: {redo}"
        # a change since is shown (install page)
        assert len(res['code']) == 16, f"{path.relative_to(ROOT)} carries no code hash: {redo}"
        assert res['python'].rsplit('.', 1)[0] == im['python'], f"{image}: ran on Python {res['python']}, the image has {im['python']}: {redo}"
        pins = (ROOT / 'tools' / 'compat' / im['pins']).read_text()
        wanted = {l.split('==')[0].strip(): l.split('==')[1].split()[0] for l in pins.splitlines() if '==' in l and not l.startswith('#')}
        for dist in set(wanted) & set(res['versions']):
            assert (res['versions'][dist] or '').startswith(wanted[dist].rstrip('.*')), (image, dist, res['versions'][dist], wanted[dist])
        failed = [f"{r['what']}: {r['detail']}" for r in res['rows'] if not r['ok']]
        assert not failed, f'{image}: {failed}'
        ran = {r['what'] for r in res['rows']}
        listed = [n for n in im['notebooks'] if (NBS / f'{n}.ipynb').exists()]   # a list written for notebooks still to move counts once they exist
        assert not set(listed) - ran and 'default job' in ran, f"{image}: not run: {sorted(set(listed) - ran)}; {redo}"
        assert {f'families {b}' for b in im['families']} <= ran and 'doctor' in ran, (image, sorted(ran))
        # every row names the package code and the date it ran on; one of this run's is on its code
        assert all(len(r['code']) == 16 and re.fullmatch(r'\d{4}-\d\d-\d\d', r['date']) for r in res['rows']), image
        assert any(r['code'] == res['code'] and r['date'] == res['date'] for r in res['rows']), image
        doc = next(r for r in res['rows'] if r['what'] == 'doctor')   # as shipped: exit 0; each bad combination: not 0
        assert [c['exit'] == 0 for c in doc['checks']] == [True] + [False] * len(im['doctor']), doc['checks']
    kaggle, colab = (json.loads(compat.results_path(i, 'json').read_text()) for i in ('kaggle', 'colab'))
    assert kaggle['python'].startswith('3.12.') and colab['python'].startswith('3.13.'), (kaggle['python'], colab['python'])
    assert kaggle['versions']['torch_xla'].startswith('2.8') and colab['versions']['torch_xla'].startswith('2.9')
    assert kaggle['versions']['keras-hub'] and colab['versions']['tensorflow-cpu'] is None   # KerasHub is Kaggle's; neither TensorFlow on Colab

def test_compat_older_rows():
    "A row run on older package code is marked with that code and its date in the table; this run's rows are not"
    compat = _compat()
    res = dict(image='colab', date='2026-12-02', python='3.13.0', machine='m', code='b' * 16, pins='p', versions={},
               rows=[dict(what='tutorials/03_xla_ranking', ok=True, seconds=60, code='a' * 16, date='2026-11-26'),
                     dict(what='doctor', ok=True, seconds=2, code='b' * 16, date='2026-12-02'),
                     dict(what='default job', ok=False, seconds=5, detail='x', code='a' * 16, date='2026-11-26')])
    text = compat.table(res)
    assert '| tutorials/03_xla_ranking | passed, older code `aaaaaaaa…`, 2026-11-26 | 60 |' in text, text
    assert '| doctor | passed | 2 |' in text and '| default job | **failed**, older code `aaaaaaaa…`, 2026-11-26 |' in text
    assert '2 of them on older package code' in text and 'a row marked older code ran on' in text, text
    del res['rows'][0], res['rows'][-1]
    assert 'older code' not in compat.table(res)

def test_compat_notebook_names():
    "`./run.sh compat` takes notebooks as paths under nbs/, with or without 'nbs/' and '.ipynb', and refuses one that is not there"
    import pytest
    compat = _compat()
    for arg in ('tutorials/01_keras_kfold', 'nbs/tutorials/01_keras_kfold.ipynb', './nbs/tutorials/01_keras_kfold'):
        assert compat.notebook(arg) == 'tutorials/01_keras_kfold', arg
    with pytest.raises(SystemExit, match=r'no notebook nbs/lessons/99_none\.ipynb.*e\.g\. lessons/02_xla'): compat.notebook('lessons/99_none')

def test_compat_code_hash():
    "The compat record's code hash follows what runs in tpututor/**/*.py (subfolders too), not its comments or docstrings"
    import shutil
    compat = _compat()
    def tree(tmp, files):
        shutil.rmtree(tmp, ignore_errors=True)
        for rel, text in files.items(): (tmp / rel).parent.mkdir(parents=True, exist_ok=True); (tmp / rel).write_text(text)
        return compat.code_hash(tmp)
    base = {'tpututor/a.py': 'def f(x): return x + 1\n', 'tpututor/sub/b.py': 'Y = 2\n'}
    import tempfile
    tmp = Path(tempfile.mkdtemp())
    h = tree(tmp, base)
    assert tree(tmp, {**base, 'tpututor/a.py': '# %% a cell marker\ndef f(x):\n    "adds one"\n    return x + 1\n'}) == h
    assert tree(tmp, {**base, 'tpututor/sub/b.py': 'Y = 3\n'}) != h             # a change in a subfolder
    assert tree(tmp, {**base, 'tpututor/c.py': 'Z = 1\n'}) != h                 # a new module
    assert tree(tmp, {'tpututor/b.py': 'def f(x): return x + 1\n', 'tpututor/sub/b.py': 'Y = 2\n'}) != h   # a module moved
    shutil.rmtree(tmp)
    # the same hash on every Python: the records are written on the images' (3.12, 3.13), this test runs on the project's
    import glob, os
    pys = sorted(glob.glob(os.path.expanduser('~/.pyenv/versions/3.1[0-3].*/bin/python')))
    code = "import importlib.util as u, sys; s = u.spec_from_file_location('r', sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); print(m.code_hash())"
    for py in pys:
        r = subprocess.run([py, '-c', code, str(ROOT / 'tools' / 'compat' / 'run.py')], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == compat.code_hash(), (py, r.stdout, r.stderr[-2000:])

def test_tested_on_table(tmp_path):
    "The Tested-on table comes from the records: a row per kind of run with its machine and latest date, 'not yet' where none ran"
    import json
    sys.path.insert(0, str(ROOT / 'tools'))
    from tested_on import tested_on, MARKER
    from make_readme import readme
    (tmp_path / 'bench' / 'results').mkdir(parents=True); (tmp_path / 'tools' / 'compat').mkdir(parents=True)
    row = lambda machine, date: dict(benchmark='x', comparison='c', measured='1', goal='1', met=True, date=date, machine=machine, how='h')
    (tmp_path / 'bench' / 'results' / 'a.json').write_text(json.dumps([row('AMD EPYC x2, Python 3.11.7', '2026-11-20'),
                                                                      row('Intel Xeon x2, Python 3.11.7', '2026-11-23')]))
    empty = tested_on(tmp_path)
    assert '| CPU | Intel Xeon x2, Python 3.11.7 | the benchmarks (`./run.sh bench`) | 2026-11-23 |' in empty, empty   # the newest record
    assert '| GPU | not yet |' in empty and '| TPU | not yet |' in empty and 'AMD' not in empty, empty
    (tmp_path / 'bench' / 'results' / 'gpu.json').write_text(json.dumps([row('NVIDIA H100 80GB HBM3', '2026-11-24')]))
    (tmp_path / 'tools' / 'compat' / 'results-colab.json').write_text(json.dumps(dict(
        machine='Intel Xeon x2', python='3.13.0', date='2026-11-26', title="Colab's TPU runtime versions", command='./run.sh compat colab')))
    (tmp_path / 'bench' / 'results' / 'predict.json').write_text(json.dumps([   # made on the GPU machine: `machine` is its host CPU
        {**row('Intel Xeon x16, Python 3.12.3', '2026-11-26'), 'env': 'gpu', 'comparison': 'NVIDIA H200: test examples/s of predict'}]))
    full = tested_on(tmp_path)
    assert '| GPU | NVIDIA H100 80GB HBM3 | the GPU benchmark (`bench/bench_gpu.py`) | 2026-11-24 |' in full, full
    assert '| GPU | NVIDIA H200, Python 3.12.3 | the predict benchmark (`bench/bench_predict.py`) | 2026-11-26 |' in full and 'x16' not in full, full
    assert "| CPU | Intel Xeon x2, Python 3.13.0 | the notebooks, the doctor and the default job with Colab's TPU runtime versions (`./run.sh compat colab`) | 2026-11-26 |" in full, full
    assert '| TPU | not yet |' in full and len(full.strip().splitlines()) == 2 + 5, full
    (tmp_path / 'bench' / 'results' / 'tpu_plan.json').write_text(json.dumps([   # compiled for a TPU here, never run on one
        {**row('Intel Xeon x2, Python 3.11.7', '2026-12-02'), 'compiled_for': 'TPU v5e-8, v6e-8', 'libtpu': '0.0.42.1'}]))
    compiled = tested_on(tmp_path)
    assert ('| TPU | TPU v5e-8, v6e-8: compiled for by libtpu 0.0.42.1 on a CPU, not run on a TPU, Python 3.11.7 | the memory '
            "estimate against the TPU compiler, the tutorials' TPU settings (`bench/bench_tpu_plan.py`) | 2026-12-02 |") in compiled, compiled
    assert '| TPU | not yet |' not in compiled and compiled.count('| CPU | Intel Xeon x2, Python 3.11.7') == 1, compiled
    here = tested_on()   # this repository's records: the recorded GPU bench; TPU programs compiled for the chips, none run
    assert '| TPU | TPU v5e-8' in here and 'not run on a TPU' in here and '| GPU | not yet |' not in here, here
    nb = tmp_path / 'index.ipynb'
    nb.write_text(json.dumps({'cells': [{'cell_type': 'markdown', 'source': ['## Tested on\n', '\n', MARKER + '\n', '\n', 'after']}]}))
    assert readme(nb) == '## Tested on\n\n' + here.strip() + '\n\nafter\n'

# The lessons (nbs/lessons/): what a learner reads must hold exercises, further reading and no stale figure.
LESSONS = sorted((NBS / 'lessons').glob('*.ipynb'))

def _cells(nb):
    import json
    return json.loads(Path(nb).read_text())['cells']

def _text(cell): return ''.join(cell['source'])

def test_lessons_end_with_exercises_and_reading():
    """Every lesson ends with 2-3 predict-then-run exercises, each with a cell to run and a folded answer, and at least
    one exercise that asks for code (a stub checked by `exercise(name).check`, the worked answer folded by
    `solution()`), then further reading"""
    import re
    assert [p.stem for p in LESSONS] == ['00_tpu', '00a_devices', '01_bf16', '01a_bf16_training', '02_xla', '02a_xla_watch', '02b_xla_devices',
                                         '02c_jax_watch', '02d_compiled_step', '02e_rooflines', '03_frameworks', '03a_jax', '04_parallelism',
                                         '05_training_memory'], LESSONS
    from tpututor.lessons.exercises import EXERCISES
    asked = []
    for nb in LESSONS:
        cells = _cells(nb)
        heads = [(i, _text(c)) for i, c in enumerate(cells) if c['cell_type'] == 'markdown']
        ex = next((i for i, t in heads if re.search(r'^## Exercises\s*$', t, re.M)), None)
        reading = next((i for i, t in heads if re.search(r'^## Further reading\s*$', t, re.M)), None)
        assert ex is not None and reading is not None and ex < reading, f'{nb.name}: needs "## Exercises" then "## Further reading"'
        shown = [c for c in cells[reading:] if not _text(c).lstrip().startswith('#| hide')]   # nbdev's hidden export cell may follow
        assert all(c['cell_type'] == 'markdown' for c in shown), f'{nb.name}: further reading must come last'
        links = re.findall(r'\]\((https?://[^)]+)\)', ''.join(_text(c) for c in cells[reading:]))
        assert len(links) >= 3, f'{nb.name}: further reading has {len(links)} links'
        # the exercises in reading order: a heading, a prediction asked for, a cell to run, then the folded answer;
        # or a heading asking for code, the stub with its check, then the folded worked answer
        seq, text, code = [], {}, {}
        for c in cells[ex:reading]:
            if c['cell_type'] == 'code':
                t = _text(c)
                if re.search(r"exercise\('\w+'\)\.solution\(\)", t): seq.append('answer')
                elif t.strip(): seq.append('run'); code.setdefault(len([s for s in seq if s == 'ex']), []).append(t)
                continue
            for part in re.split(r'(?m)^(?=### Exercise \d)|(?=<details>)', _text(c)):
                if part.startswith('### Exercise'): seq.append('ex'); text[len(seq)] = part
                elif re.match(r'<details>\s*<summary>\s*Answer', part): seq.append('answer')
                elif seq and seq[-1] == 'ex': text[len(seq)] += part
        parts = ' '.join(seq).split('ex')[1:]
        assert 3 <= len(parts) <= 4, f'{nb.name}: {len(parts)} exercises'
        kinds = []
        for n, (part, t) in enumerate(zip(parts, text.values()), 1):
            assert re.fullmatch(r'\s*(run\s+)+answer\s*', part), f'{nb.name}: exercise {n} needs a cell to run, then a folded answer: {part}'
            if '(write the code)' in t.splitlines()[0]:
                m = re.search(r"exercise\('(\w+)'\)\.check\((\w+)\)", ''.join(code.get(n, [])))
                assert m and m.group(1) == m.group(2) and f'def {m.group(1)}(' in ''.join(code[n]), \
                    f'{nb.name}: exercise {n} asks for code: a stub `def name(...)` checked by exercise(name).check(name)'
                assert m.group(1) in EXERCISES, f'{nb.name}: no exercise {m.group(1)!r} in tpututor.lessons.exercises'
                kinds.append('code'); asked.append(m.group(1))
            else:
                assert 'predict' in t.lower(), f'{nb.name}: exercise {n} does not ask for a prediction'
                kinds.append('predict')
        assert 'code' in kinds and kinds.count('predict') >= 2, f'{nb.name}: exercises {kinds}'
    assert sorted(asked) == sorted(EXERCISES), f'every exercise is asked once: {sorted(asked)} vs {sorted(EXERCISES)}'

def test_lessons_hold_no_checks():
    """A lesson is what a learner opens (Kaggle and Colab show hidden cells): no check in any of its cells; its checks
    live in tests/lesson_checks, each block after a code cell the lesson has, and its predict-then-run exercises keep no
    output (the answer, folded below them)"""
    import re, importlib.util
    from conftest import check_blocks, with_checks
    spec = importlib.util.spec_from_file_location('lessons_tool', ROOT / 'tools' / 'lessons.py')
    tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
    for nb in LESSONS:
        cells = _cells(nb)
        checks = [c['id'] for c in cells if c['cell_type'] == 'code'
                  and re.search(r'(?m)^\s*(assert\b|test_(eq|ne|close|fail|is|warns|shuffled|stdout|fig_exists)\()', _text(c))]
        assert not checks, f'{nb.name}: cells {checks} check; move them to tests/lesson_checks/{nb.stem}.py'
        assert not [c for c in cells if c['cell_type'] == 'code' and _text(c).startswith('#| hide')], f'{nb.name}: a hidden cell'
        assert len(check_blocks(nb)) >= 3, f'{nb.name}: tests/lesson_checks/{nb.stem}.py holds {len(check_blocks(nb))} blocks'
        with_checks(nb, ROOT / 'tests' / 'artifacts' / 'lessons' / 'ids')        # every block names a code cell
        shown = [c['id'] for c in tool.exercise_cells(cells) if c.get('outputs')]
        assert not shown, f'{nb.name}: exercise cells {shown} keep their answer as output: python tools/lessons.py {nb}'

# What each predict-then-run exercise's cell prints, the figures its folded answer names (`python tools/lessons.py
# --show LESSON` prints them before it clears the cell): were a stored output above the question to hold them all, the
# learner would read the answer before predicting it.
ANSWER_FIGURES = {
    '00_tpu': {1: ['50.0%', '12.5%'], 2: ['302', '264', '186']},
    '00a_devices': {1: ['4 devices', '32 GiB'], 2: ['virtual_tpu(4) refused', 'virtual_jax(4) refused']},
    '01_bf16': {1: ['1.0', '0.99609375'], 2: ['2.9981136322021484e-05', '3.0040740966796875e-05']},
    '01a_bf16_training': {1: ['4.0'], 2: ['100.5', '101.0']},
    '02_xla': {1: ['[1, 1, 0, 1, 0]'], 2: ["{0.1: 1, 0.05: 0, 0.0: 0, 1.0: 0}"]},
    '02a_xla_watch': {1: ['2 compiles', 'x changed from (16, 16) to (2, 16)'],
                      2: ['6 rows: RuntimeError', 'f32[6,4]'], 3: ["'EagerOpExecuteTime': 4"]},
    '02b_xla_devices': {1: ['RuntimeError: SPMD mode must be switched on'],
                        2: ['a @ a: torch.bfloat16', 'softmax: torch.float32', '(a @ a) + a: torch.float32']},
    '02c_jax_watch': {1: ['4 calls, 3 programs'], 2: ['static n: 2 programs', 'traced n: 1 program']},
    '02d_compiled_step': {1: ['14,161,920', '82.90'], 2: ['1 program(s)']},
    '02e_rooflines': {1: ['571.5 FLOP/B', '366.8 FLOP/B'], 2: ['15.73 MB', 'compute-bound, 21.1 µs']},
    '03_frameworks': {1: ['torch_xla → jax → tensorflow', "'works': True"],
                      2: ['import_tf: 0', 'torch_xla loaded: False'], 3: ["pip install 'torch==2.9.*'"]},
    '03a_jax': {1: ['3 calls, 2 compiles'], 2: ['{(4, 4)} 8'], 3: ['[1, 5]']},
    '04_parallelism': {1: ['0.295 ms'], 2: ['7.08 MB', '0.035 ms']},
    '05_training_memory': {1: ['4.135', '8.273'], 2: ['2.11 GB', '48']},
}

def _figure(f:str):
    "A regex for figure `f` as a whole: not part of a longer number or name"
    import re
    return re.compile(r'(?<![\w.])' + re.escape(f) + r'(?![\w]|\.\d)')

def _predict_questions(cells:list)->list:
    "(cell index, exercise number) of each predict-then-run question (an exercise heading that does not ask for code)"
    import re
    return [(i, int(m.group(1))) for i, c in enumerate(cells) if c['cell_type'] == 'markdown'
            for m in re.finditer(r'(?m)^### Exercise (\d+):(.*)$', _text(c)) if '(write the code)' not in m.group(2)]

def _answers_above(cells:list, figures:dict)->list:
    "(exercise, cell index) for each predict-then-run question whose figures all stand in one stored output above it"
    found = []
    for i, n in _predict_questions(cells):
        pats = [_figure(f) for f in figures[n]]
        for j, c in enumerate(cells[:i]):
            for o in c.get('outputs', []):
                text = ''.join(o.get('text', '')) + ''.join((o.get('data') or {}).get('text/plain', ''))
                if all(p.search(text) for p in pats): found.append((n, j))
    return found

def test_no_stored_output_above_a_question_holds_its_answer():
    """No predict-then-run exercise is answered above it: no stored output before its question holds all the figures
    its answer names. Every such exercise has its figures listed, and a planted copy of them is found"""
    import copy
    for nb in LESSONS:
        cells = _cells(nb)
        asked, figures = sorted(n for _, n in _predict_questions(cells)), ANSWER_FIGURES[nb.stem]
        assert sorted(figures) == asked, f'{nb.name}: predict-then-run exercises {asked}, figures for {sorted(figures)}'
        found = _answers_above(cells, figures)
        assert not found, f'{nb.name}: the answers of exercises {found} (exercise, cell) stand in an output above them'
        planted = copy.deepcopy(cells)   # the test can fail: the first exercise's figures, printed by a first cell
        first = next(c for c in planted if c['cell_type'] == 'code')
        first['outputs'] = [dict(output_type='stream', name='stdout', text=[' '.join(figures[asked[0]])])]
        assert (asked[0], planted.index(first)) in _answers_above(planted, figures), nb.name

def test_no_stored_output_shows_an_impossible_mfu():
    "A stored MFU of 0.0% or over 100% means a wrong peak or uncounted FLOPs: re-run the notebook after fixing it"
    import re
    bad = []
    for nb in sorted(NBS.rglob('*.ipynb')):
        if any(p.startswith(('.', '_')) for p in nb.relative_to(NBS).parts): continue
        for c in _cells(nb):
            for o in c.get('outputs', []):
                text = ''.join(o.get('text', '')) + ''.join((o.get('data') or {}).get('text/plain', ''))
                for m in re.finditer(r'MFU[^0-9%\n]{0,40}?(\d[\d,]*\.?\d*)%', text):
                    v = float(m.group(1).replace(',', ''))
                    if v == 0 or v > 100: bad.append(f'{nb.relative_to(NBS)}: {m.group(0)}')
    assert not bad, bad

def test_migration_table():
    "One table in the XLA lesson maps the classic notebooks' torch_xla, TF and tokenizer calls to today's"
    rows = [l for c in _cells(NBS / 'lessons' / '02b_xla_devices.ipynb') if c['cell_type'] == 'markdown' for l in _text(c).splitlines() if l.startswith('|')]
    def row(old): return next((r for r in rows if old in r.split('|')[1]), '')
    for old, new in [('xla_device', 'torch_xla.device'), ('mark_step', 'torch_xla.sync'), ('xrt_world_size', 'world_size'),
                     ('xmp.spawn', 'torch_xla.launch'), ('experimental_run_v2', 'strategy.run'), ('XLA_USE_BF16', 'autocast'),
                     ('pad_to_max_length', "padding='max_length'")]:
        assert new in row(old), f'no migration row from {old} to {new}'

# Every figure shown comes from a record under bench/results, and every record says which code made it: each measured entry
# carries a hash of the code of every tpututor module its run imported (its child processes too), of the bench's own
# files, each file's hash on its own, the commit and the framework and Python versions (bench/common.py: `provenance`).
# An entry measured with other library code (or here with other versions) is shown with a note saying what changed;
# one that carries no hashes or whose bench changed fails here: a change to the bench is a change to what is measured.
def test_records_are_sound():
    """Every bench has a record, every record entry carries its hashes and versions, and no bench changed since its
    record (a record made on a GPU never fails here: `test_stale_finds_changed_code_and_missing_hashes`)"""
    bad = [s for s in stale_records() if s['fails']]
    by_cmd = {}
    for s in bad: by_cmd.setdefault(s['how'], []).append(f"bench/results/{s['file']}{s['where']}: {s['why']}")
    assert not bad, ('records that must be made again (a changed bench, or no hashes):\n' +
                     '\n'.join(f'{cmd}\n  ' + '\n  '.join(v) for cmd, v in by_cmd.items()))

def test_pages_say_which_records_are_stale(monkeypatch):
    """A record measured on code that changed since is named as such above its own tables on the Performance page and
    in its summary"""
    import importlib.util
    c, found = bench_common(), list(stale_records())   # found once for this process: it hashes the code of every record
    stem = lambda s: s['file'].removesuffix('_runs.json').removesuffix('.json')
    summary = (ROOT / 'bench' / 'results' / 'summary.md').read_text()
    monkeypatch.syspath_prepend(str(ROOT / 'bench'))
    spec = importlib.util.spec_from_file_location('bench_run', ROOT / 'bench' / 'run.py')
    run = importlib.util.module_from_spec(spec); spec.loader.exec_module(run)
    assert summary == run.summary(found), 'bench/results/summary.md is not what the records say today: python bench/run.py --summary'
    page = run.summary(found, every=True)
    for s in found:
        note = c.stale_note(f'{stem(s)}.md', found=found)
        assert note.startswith('**Measured with code that has changed since**') and s['why'] in note, (s, note)
        rows = [r for r in page.splitlines()
                if f"bench {stem(s)}" in r or f'bench_{stem(s)}' in r]
        assert all('code changed since' in r for r in rows), rows
    current = {p.stem for p in (ROOT / 'bench' / 'results').glob('*.md')} - {stem(s) for s in found} - {'summary'}
    for st in current: assert c.stale_note(f'{st}.md', found=found) == '', st

def test_shown_outputs_equal_records():
    "A notebook cell that prints a figure from a record shows, in its saved output, what that record says today"
    bad = bench_common().shown_mismatches()
    assert not bad, ('saved outputs differ from their records; save them again with `python bench/run.py --outputs`:\n' +
                     '\n'.join(f'nbs/{nb} cell {i}:\n  saved: {saved!r:.300}\n  now:   {now!r:.300}' for nb, i, saved, now in bad))

def test_stale_finds_changed_code_and_missing_hashes(tmp_path):
    """What makes a record stale: a changed module or other versions (shown with a note), a changed bench or no hashes
    (fails)"""
    c = bench_common()
    from tpututor.records import code_hash, module_hashes
    now, mods, files = c.versions_here(), ['tpututor.encoding', 'tpututor.config'], ['bench/bench_tokenize.py']
    good = dict(bench='tokenize', modules=mods, files=files, versions=now, env='here', date='today', commit='abc1234',
                code=code_hash(mods, *[ROOT / f for f in files]), hashes=module_hashes(mods, *files, root=ROOT))
    test = lambda rec: [(s['where'], s['why'].split(':')[0], s['fails']) for s in c.stale(_records(tmp_path, rec))]
    assert test([good]) == []
    old_config = {**good, 'code': '0' * 16, 'hashes': {**good['hashes'], 'tpututor.config': '0' * 16}}
    assert test([old_config]) == [('[0]', 'the code changed since today (commit abc1234)', False)]
    assert 'tpututor.config' in c.stale(_records(tmp_path, [old_config]))[0]['why']   # the note names what changed
    old_bench = {**good, 'code': '0' * 16, 'hashes': {**good['hashes'], 'bench/bench_tokenize.py': '0' * 16}}
    assert test([old_bench]) == [('[0]', 'the bench changed since today', True)]
    assert test([{**old_bench, 'env': 'gpu'}]) == [('[0]', 'the bench changed since today', False)]   # waits for a GPU
    assert test([{**good, 'versions': {**now, 'torch': '0.1'}}]) == [('[0]', 'measured with other versions', False)]
    # made elsewhere: only its code must match
    assert test([{**good, 'versions': {**now, 'torch': '0.1'}, 'env': 'gpu'}]) == []
    no_hashes = {k: v for k, v in good.items() if k != 'hashes'}
    assert test([no_hashes])[0][2] and test([no_hashes, good]) == []   # a summary row takes the hashes of its full record
    assert test([{'comparison': 'x'}]) == [('[0]', 'carries no code hash and versions', True)]
    assert test({'here': {'torch': {'rows': [], 'versions': now}}}) == [
        ('/here/torch', 'carries no code hash and versions', True)]

def _records(folder, rec):
    (folder / 'tokenize.json').write_text(__import__('json').dumps(rec))
    return folder

def test_child_processes_list_their_modules(tmp_path):
    "A bench's record hashes the modules its child processes import: each process that imports tpututor lists them at exit"
    f = tmp_path / 'imports.txt'
    code = "import subprocess, sys, tpututor.config; subprocess.run([sys.executable, '-c', 'import tpututor.kfold'], check=True)"
    r = subprocess.run([sys.executable, '-c', code], env={**clean_env(), 'TPUTUTOR_RECORD_IMPORTS': str(f)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [set(l.split()) for l in f.read_text().splitlines()]
    assert len(lines) == 2 and 'tpututor.kfold' in lines[0] and 'tpututor.kfold' not in lines[1] and 'tpututor.config' in lines[1], lines

def test_every_bench_runs_on_tiny_shapes():
    """`python bench/run.py --smoke --stale`: every benchmark without a current record runs end to end on tiny shapes, so
    none can rot unnoticed. A current record ran the bench and every module it imports, as they are today, in full; a
    change to any of them makes it stale, and then its smoke run is here"""
    import importlib.util
    spec = importlib.util.spec_from_file_location('bench_run', ROOT / 'bench' / 'run.py')
    run_py = importlib.util.module_from_spec(spec); spec.loader.exec_module(run_py)
    found = stale_records()
    todo = run_py.unproven(found=list(found))
    every = {p.stem[6:] for p in (ROOT / 'bench').glob('bench_*.py')}
    # the rule: a bench with one stale entry (here cache's runs file), or with no record at all, has its smoke run; a
    # bench whose entries are all current (bf16) has not
    assert (ROOT / 'bench/results/bf16.json').exists() and not (ROOT / 'bench/results/not_yet.json').exists()
    assert run_py.unproven(['cache', 'bf16', 'not_yet'], found=[{'file': 'cache_runs.json'}]) == ['cache', 'not_yet']
    r = subprocess.run([sys.executable, str(ROOT / 'bench' / 'run.py'), '--smoke', '--stale'], capture_output=True,
                       text=True, env=clean_env(), timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    ran = {l.split(':')[0] for l in r.stdout.splitlines() if ': ok in ' in l}
    assert ran == set(todo), r.stdout
    assert all(b in r.stdout.splitlines()[0] for b in every - set(todo)), r.stdout[:2000]

def test_every_tutorial_runs_somewhere():
    "The suite runs every tutorial in its TPU setting; the ones it does not run in their small setting are in the tutorials record"
    import json
    from test_notebooks import REHEARSED, BENCHED, notebooks
    tutorials = sorted(str(p.relative_to(NBS)) for p in (NBS / 'tutorials').glob('*.ipynb'))
    assert sorted(REHEARSED) == tutorials, 'every tutorial needs a TPU setting run by test_tpu_setting'
    in_suite = {str(p.relative_to(NBS)) for p in notebooks()}
    recorded = {r['notebook'] for r in json.loads((ROOT / 'bench' / 'results' / 'tutorials.json').read_text())}
    assert {t for t in tutorials if t not in in_suite} == recorded, 'run ./run.sh bench tutorials'

def test_changed_maps_files_to_tests():
    "`./run.sh test --changed`: a notebook runs its own test; a module, every notebook and test that imports it, directly or not"
    sys.path.insert(0, str(ROOT / 'tools'))
    from changed import targets, importers
    nb = lambda p: f'tests/test_notebooks.py::test_notebook[{p}]'
    assert targets(['nbs/tutorials/01_keras_kfold.ipynb']) == ['tests/test_notebooks.py::test_tpu_setting[tutorials/01_keras_kfold.ipynb]', 'tests/test_project.py']
    assert targets(['nbs/lessons/02_xla.ipynb']) == [nb('lessons/02_xla.ipynb')]
    tf = targets(['tpututor/backends/tf/__init__.py'])
    assert nb('backends/tf/00_backend.ipynb') in tf and nb('backends/keras/00_backend.ipynb') not in tf   # no backend imports another
    assert {'tests/test_backends.py::test_contract[tf]',
            'tests/test_resume.py::test_kfold_end_to_end[tf]'} <= set(tf), tf
    # the tf cases alone
    assert not {'tests/test_backends.py', 'tests/test_resume.py', 'tests/test_project.py'} & set(tf), tf
    net = targets(['tpututor/backends/tf/network.py'])   # a module of the tf backend's folder: the tf cases too
    assert 'tests/test_backends.py::test_contract[tf]' in net and 'tests/test_backends.py::test_contract[keras]' not in net, net
    config = targets(['tpututor/config.py'])   # every backend imports it: the contract, each backend's notebook, the CLI's tests
    assert {nb('04_config.ipynb'), nb('backends/keras/00_backend.ipynb'), nb('backends/pytorch/00_base.ipynb'), 'tests/test_backends.py', 'tests/test_cli.py'} <= set(config), config
    assert {'tpututor.backends.keras', 'tpututor.cli', 'tpututor.kfold'} <= importers('tpututor.config')
    got = targets(['tpututor/data.py', 'tests/test_cli.py', 'tests/contract_probe.py', 'bench/bench_memory.py', 'tools/docs/build.py'])
    assert {nb('01_data.ipynb'), 'tests/test_cli.py', 'tests/test_backends.py', 'tests/test_project.py', 'tests/test_docs.py'} <= set(got), got
    assert len(got) == len(set(got)) and targets(['tests/conftest.py']) == ['tests'] and targets([]) == []

def _warning_gist(line:str)->str|None:
    "What the prose must quote for a warning printed in `line`: its category ('RecompileWarning'), or the first words of a bare 'Warning: ...'"
    import re
    if m := re.search(r'\b([A-Z]\w*Warning)\b', line): return m.group(1)
    if m := re.search(r'\bWarning: ((?:\S+\s+){2}\S+)', line): return m.group(1)
    return None

def test_warning_gist():
    assert _warning_gist('DeprecationWarning: Use torch_xla.device instead') == 'DeprecationWarning'
    assert _warning_gist('Warning: AMP only supported for XLA:TPU.') == 'AMP only supported'
    assert _warning_gist('warned: nothing here') is None

def test_stored_outputs_show_no_machine_paths():
    """What a reader of the docs sees: no absolute path of the machine that ran a notebook, no CUDA-probe error from a
    CPU machine, no log lines, and no warning that the notebook's prose does not name (a warning the lesson is about is quoted there)"""
    import json, re
    bad_re = re.compile(r'(/(work|root|home|usr|opt)/\S+|site-packages/|\.venv/|cuInit|^[IWE]\d{4} \d\d:\d\d|oneDNN custom operations)', re.M)
    bad = []
    for nb in sorted(NBS.rglob('*.ipynb')):
        if any(p.startswith(('.', '_')) for p in nb.relative_to(NBS).parts): continue
        cells = json.loads(nb.read_text())['cells']
        prose = ' '.join(''.join(c['source']) for c in cells if c['cell_type'] == 'markdown').lower()
        for i, c in enumerate(cells):
            for o in c.get('outputs', []):
                text = ''.join(o.get('text', '')) + ''.join((o.get('data') or {}).get('text/plain', ''))
                bad += [f'{nb.relative_to(NBS)} cell {i}: {m.group(0)}' for m in bad_re.finditer(text)]
                bad += [f'{nb.relative_to(NBS)} cell {i}: a warning the prose does not name ({g!r}): {l.strip()[:120]}'
                        for l in text.splitlines() if (g := _warning_gist(l)) and g.lower() not in prose]
    assert not bad, ('stored outputs show machine paths, log noise or unexplained warnings; fix the cell (or explain the warning '
                     'in the prose) and re-run it with nbdev-test --save:\n' + '\n'.join(bad[:20]))

def test_time_to_target_counts_the_first_run_that_reaches_it():
    "The trainer bench's time to target: a contender's shortest run whose ensemble reaches the target, else its best run"
    import importlib.util
    sys.path.insert(0, str(ROOT / 'bench'))
    spec = importlib.util.spec_from_file_location('bench_trainer', ROOT / 'bench' / 'bench_trainer.py')
    bt = importlib.util.module_from_spec(spec); spec.loader.exec_module(bt)
    run = lambda name, e, acc, wall: dict(name=name, epochs=e, held_out=acc, wall_s=wall)
    rec = dict(settings=dict(target=0.75), runs=[run('torch', 1, 0.76, 100), run('trainer_grouped', 1, 0.60, 60), run('trainer_grouped', 2, 0.74, 120),
                                               run('trainer_grouped', 3, 0.77, 180), run('keras', 1, 0.70, 90), run('keras', 2, 0.72, 180)])
    best = bt.best_runs(rec)
    assert {k: (r['epochs'], r['wall_s']) for k, r in best.items()} == {'torch': (1, 100), 'trainer_grouped': (3, 180), 'keras': (2, 180)}

def _tested(cells)->tuple:
    "(exported code cells, those with a test cell right under them) of a notebook's cells"
    import re
    src = lambda c: ''.join(c['source']) if isinstance(c['source'], list) else c['source']
    exported = lambda c: c['cell_type'] == 'code' and re.match(r'#\|\s*export', src(c))
    test = lambda c: (c['cell_type'] == 'code' and not exported(c)
                      and re.search(r'\b(test_\w+|assert)\b', '\n'.join(l for l in src(c).splitlines() if not l.lstrip().startswith('#'))))
    ex = [i for i, c in enumerate(cells) if exported(c)]
    return len(ex), sum(1 for i in ex if i + 1 < len(cells) and test(cells[i + 1]))

def test_exported_cells_have_tests_under_them():
    "fastcore's habit: on the library pages, at least 60% of the exported cells have a test cell right under them"
    import json
    md, code = lambda s: dict(cell_type='markdown', source=s), lambda s: dict(cell_type='code', source=s)
    assert _tested([code('#| export\ndef f(): pass'), code('test_eq(f(), None)'), code('#| export\ng = 1'), md('g is one'),
                    code('#| export\nh = 2'), code('# test_eq(h, 2) in a comment is no test'), code('#| export\ni = 3')]) == (4, 1)
    pages = [p for p in NBS.rglob('*.ipynb') if p.relative_to(NBS).parts[0] not in ('lessons', 'tutorials')]
    n, tested = map(sum, zip(*(_tested(json.loads(p.read_text())['cells']) for p in pages)))
    assert tested >= 0.6 * n, f'{tested} of {n} exported cells ({tested / n:.0%}) have a test cell under them: 60% at least'
