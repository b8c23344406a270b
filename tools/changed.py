"""The tests a change touches, for `./run.sh test --changed`: one pytest argument a line, nothing when nothing changed.

Compared with where this branch left main (`git merge-base HEAD main`, or origin/main), working tree and untracked
files included:
- a notebook: its own test (tests/test_notebooks.py::test_notebook[...]); a tutorial: its TPU setting
  (test_tpu_setting[...]) and tests/test_project.py (which reads the tutorials' record and their record-showing cells);
- a module of the package: it and every module that imports it, directly or through others (the reverse closure of
  the static import graph, imports inside functions included); for each of them the notebook that exports it
  (`#| default_exp`), every notebook and tutorial (its TPU setting) whose code names it, and the test files that name
  it; and the backend contract (tests/test_backends.py) whenever a backend is among them. A change to one backend's
  module runs the tests that take a backend as a parameter for that backend alone (its contract, its k-fold run through
  the CLI). A record measured on the older code is shown with a note, not failed, so tests/test_project.py is not
  among them (CI's full run still runs it: the smoke run of every bench);
- a test file: itself (tests/conftest.py: every test; tests/contract_probe.py: tests/test_backends.py;
  tests/family_probe.py: tests/test_families.py and tests/test_project.py, whose family record goes stale);
- bench/, tools/compat/, README.md, pyproject.toml, run.sh, this file: tests/test_project.py (recorded results, README, sync);
  tools/docs/: tests/test_docs.py; pyproject.toml also tests/test_wheel.py."""
import ast, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / 'tpututor'

def git(*args)->str: return subprocess.run(['git', *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

def changed_files()->set:
    ref = next((r for r in ('origin/main', 'main') if git('rev-parse', '--verify', '-q', r)), 'HEAD')
    base = git('merge-base', 'HEAD', ref) or 'HEAD'
    return set(git('diff', '--name-only', base).split()) | set(git('ls-files', '--others', '--exclude-standard').split())

def module_of(path:Path)->str:
    "'tpututor.backends.keras.model.base' for tpututor/backends/keras/model/base.py, 'tpututor.backends.keras' for its __init__.py"
    return '.'.join(path.relative_to(ROOT).with_suffix('').parts).removesuffix('.__init__')

def import_graph()->dict:
    "Module -> the package modules it imports (statically, anywhere in the file)"
    mods = {module_of(p): p for p in PKG.rglob('*.py') if p.name != '_modidx.py'}
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import): names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = m.split('.') if p.name == '__init__.py' else m.split('.')[:-1]
                mod = ('.'.join(base[:len(base) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module) or ''
                names = [f'{mod}.{a.name}' for a in node.names] + [mod]
            else: continue
            for t in names:
                while t and t not in mods and '.' in t: t = t.rsplit('.', 1)[0]
                if t in mods and t != m: edges[m].add(t)
    return edges

def importers(mod:str, graph=None)->set:
    "`mod` and every module that imports it, directly or through others"
    graph = graph or import_graph()
    out, todo = {mod}, [mod]
    while todo:
        m = todo.pop()
        for a, bs in graph.items():
            if m in bs and a not in out: out.add(a); todo.append(a)
    return out

def _code(nb:Path)->str:
    import json
    return '\n'.join(''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code')

def notebooks_naming(mods:set)->list:
    "Notebooks whose code (imports, or programs they run) names one of `mods`, or that export one"
    pat = re.compile(r'tpututor\.([\w.]+)')
    out = []
    for nb in sorted((ROOT / 'nbs').rglob('*.ipynb')):
        if any(s.startswith(('.', '_')) for s in nb.relative_to(ROOT / 'nbs').parts): continue
        code = _code(nb)
        exp = re.search(r'#\|\s*default_exp\s+([\w.]+)', code)
        named = {'tpututor.' + exp.group(1).removesuffix('.__init__')} if exp else set()
        for m in pat.finditer(code):
            t = 'tpututor.' + m.group(1)
            while t.count('.') >= 1:
                named.add(t); t = t.rsplit('.', 1)[0]
        if named & mods: out.append(nb)
    return out

def nb_targets(nb:Path, edited=True)->list:
    "The tests of notebook `nb`; `edited`: the notebook itself changed (not only a module it names)"
    rel = nb.relative_to(ROOT / 'nbs')
    if rel.parts[0] == 'tutorials':   # the suite runs a tutorial's TPU setting; its small setting is a recorded bench run or a notebook test
        sys.path.insert(0, str(ROOT / 'tests'))
        from test_notebooks import BENCHED
        return ([f"tests/test_notebooks.py::test_tpu_setting[{rel}]"] + ([] if str(rel) in BENCHED else [nb_test(nb)]) +
                ['tests/test_project.py'] * edited)
    return [nb_test(nb)]

def nb_test(nb:Path)->str: return f"tests/test_notebooks.py::test_notebook[{nb.relative_to(ROOT / 'nbs')}]"

# Test files whose tests take a backend's name as their parameter: a change to one backend's module runs its own
BY_BACKEND = {'tests/test_backends.py': ['test_contract'], 'tests/test_resume.py': ['test_kfold_end_to_end']}

def backend_of(mod:str)->str|None:
    "The backend whose folder holds module `mod` ('tpututor.backends.keras.model.base' -> 'keras'), else None"
    from tpututor.backends.registry import backend_names
    name = mod.removeprefix('tpututor.backends.').split('.')[0]
    return name if mod.startswith('tpututor.backends.') and name in backend_names() else None

def module_targets(mod:str, graph=None)->list:
    "Every test a change to module `mod` can break"
    mods, tests = importers(mod, graph), sorted((ROOT / 'tests').glob('test_*.py'))
    out = [t for nb in notebooks_naming(mods) for t in nb_targets(nb, edited=False)]
    out += [str(t.relative_to(ROOT)) for t in tests
            if t.name not in ('test_notebooks.py', 'test_project.py')   # notebooks: above
            and any(re.search(rf'{re.escape(m)}\b', t.read_text()) for m in mods)]
    if any(m == 'tpututor.cli' or m.startswith('tpututor.commands') for m in mods):   # they run the `tpututor` command
        out += ['tests/test_cli.py', 'tests/test_resume.py']
    if any('.backends.' in m or m == 'tpututor.backends' for m in mods): out.append('tests/test_backends.py')
    if (name := backend_of(mod)):   # one backend changed: its own case of each test that runs every backend
        resumed = re.search(r"parametrize\('backend', \[([^]]*)\]",
                            (ROOT / 'tests' / 'test_resume.py').read_text())
        # the CLI finds a backend by name
        if resumed and f"'{name}'" in resumed.group(1): out.append('tests/test_resume.py')
        out = [y for x in dict.fromkeys(out)
               for y in ([f'{x}::{t}[{name}]' for t in BY_BACKEND[x]] if x in BY_BACKEND else [x])]
        if name == 'torch': out.append('tests/test_resume.py::test_sigkill_during_fold_2_resumes')   # it kills a torch run
    return out

def targets(files)->list:
    out, graph = [], None
    for f in sorted(files):
        p = ROOT / f
        if f.startswith('nbs/') and f.endswith('.ipynb') and p.exists() and not any(s.startswith(('.', '_')) for s in Path(f).parts[1:]):
            out += nb_targets(p)
        elif f.startswith('tpututor/') and f.endswith('.py') and p.exists() and p.name != '_modidx.py':
            graph = graph or import_graph()
            out += module_targets(module_of(p), graph)
        elif f == 'tests/conftest.py': return ['tests']
        elif f == 'tests/contract_probe.py': out.append('tests/test_backends.py')
        elif f == 'tests/family_probe.py': out += ['tests/test_families.py', 'tests/test_project.py']
        elif f.startswith('tests/test_') and f.endswith('.py') and p.exists(): out.append(f)
        elif f.startswith(('bench/', 'tools/compat/')) or f in ('README.md', 'pyproject.toml', 'run.sh', 'tools/make_readme.py', 'tools/changed.py'):
            out.append('tests/test_project.py')
            if f == 'pyproject.toml': out.append('tests/test_wheel.py')
        elif f.startswith('tools/docs/'): out.append('tests/test_docs.py')
    return list(dict.fromkeys(out))

if __name__ == '__main__':
    found = targets(changed_files())
    if found: print('\n'.join(found))
    print(f"--changed: {len(found)} test target(s) from the files changed since main", file=sys.stderr)
