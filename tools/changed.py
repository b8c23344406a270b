"""The tests a change touches, for `./run.sh test --changed`: one pytest argument a line, nothing when nothing changed.

Compared with where this branch left main (`git merge-base HEAD main`, or origin/main), working tree and untracked
files included:
- a notebook: its own test (tests/test_notebooks.py::test_notebook[...]); a tutorial: its TPU setting
  (test_tpu_setting[...]) and tests/test_project.py (the record of its small setting goes stale);
- a module of the package: the notebook that exports it (`#| default_exp`) and the test files that name it;
- a test file: itself (tests/conftest.py: every test; tests/contract_probe.py: tests/test_backends.py;
  tests/family_probe.py: tests/test_families.py);
- bench/, tools/compat/, README.md, pyproject.toml, run.sh, this file: tests/test_project.py (recorded results, README, sync);
  tools/docs/: tests/test_docs.py; pyproject.toml also tests/test_wheel.py."""
import re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def git(*args)->str: return subprocess.run(['git', *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

def changed_files()->set:
    ref = next((r for r in ('origin/main', 'main') if git('rev-parse', '--verify', '-q', r)), 'HEAD')
    base = git('merge-base', 'HEAD', ref) or 'HEAD'
    return set(git('diff', '--name-only', base).split()) | set(git('ls-files', '--others', '--exclude-standard').split())

def exported_by()->dict:
    "Module name -> the notebook that exports it"
    out = {}
    for nb in sorted((ROOT / 'nbs').rglob('*.ipynb')):
        m = re.search(r'#\|\s*default_exp\s+([\w.]+)', nb.read_text())
        if m: out[m.group(1)] = nb
    return out

def nb_test(nb:Path)->str: return f"tests/test_notebooks.py::test_notebook[{nb.relative_to(ROOT / 'nbs')}]"

def targets(files)->list:
    out, tests = [], sorted((ROOT / 'tests').glob('test_*.py'))
    for f in sorted(files):
        p = ROOT / f
        if f.startswith('nbs/') and f.endswith('.ipynb') and p.exists() and not any(s.startswith(('.', '_')) for s in Path(f).parts[1:]):
            rel = p.relative_to(ROOT / 'nbs')
            if rel.parts[0] == 'tutorials':   # the suite runs a tutorial's TPU setting; its small setting is a recorded bench run or a notebook test
                sys.path.insert(0, str(ROOT / 'tests'))
                from test_notebooks import BENCHED
                out += [f"tests/test_notebooks.py::test_tpu_setting[{rel}]"] + ([] if str(rel) in BENCHED else [nb_test(p)]) + ['tests/test_project.py']
            else: out.append(nb_test(p))
        elif f.startswith('tpututor/') and f.endswith('.py') and not Path(f).stem.startswith('_'):
            mod = Path(f).stem
            if mod in exported_by(): out.append(nb_test(exported_by()[mod]))
            out += [str(t.relative_to(ROOT)) for t in tests if re.search(rf'tpututor\.{mod}\b', t.read_text())]
        elif f == 'tests/conftest.py': return ['tests']
        elif f == 'tests/contract_probe.py': out.append('tests/test_backends.py')
        elif f == 'tests/family_probe.py': out.append('tests/test_families.py')
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
