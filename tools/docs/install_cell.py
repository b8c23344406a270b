"""The one install cell that makes a notebook run on Kaggle and Colab from its first cell.

A notebook whose first code cell is this cell gets the Open in Kaggle / Open in Colab buttons on its docs page;
a notebook without it gets none (its first import would fail there). Every copy must be the text `install_cell`
returns: the part before the last lines is the same everywhere, the last lines name the frameworks the notebook
needs (`install_missing('keras')`, none for a notebook that needs only tpututor's core).

    python tools/docs/install_cell.py keras            # print the cell for a notebook on Keras 3 + JAX
    python tools/docs/install_cell.py --check          # check every notebook's copy (exit 1 naming each one that differs)
    python tools/docs/install_cell.py --pin COMMIT     # install that commit (40 hex digits) or release (X.Y.Z) everywhere

The cell installs tpututor only from `PIN`: a commit of the repository, whose hash git checks, or a release on PyPI
as a wheel; never by name alone (a package anyone registers under the name would run its install code first). It
is a no-op where tpututor is installed from `PIN` or from a local copy (an editable checkout: the tests' case).
"""
import ast, difflib, functools, json, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = '# Kaggle / Colab: install what is missing'   # how a copy is recognised: its first line starts so
FRAMEWORKS = ('keras', 'xla', 'torch', 'tf', 'libtpu')  # what `install_missing` accepts
MODULE = 'tpututor.devices.frameworks'                  # where `install_missing` lives; the cell imports it from where the source defines it
REPO = 'https://github.com/tpututor/tpututor'
# What every install cell installs: a commit of REPO (40 hex digits: pip has git fetch it and git checks its hash) or,
# once tpututor is released on PyPI, a version there (X.Y.Z: a wheel only, `--only-binary :all:`, so no code of it runs
# to install it, and PyPI never changes the files of a release). One line; `--pin` rewrites it and every notebook's copy.
PIN = '782dc8553696ca8b0daf7f89da8f85f2c6633830'
_re_commit, _re_version = re.compile(r'[0-9a-f]{40}'), re.compile(r'\d+(\.\d+)+')

def _source_of(pin):
    "(the cell's PIN line, the test that an installed copy came from it, the install line) for `pin`"
    if _re_commit.fullmatch(pin):
        return (f"'git+{REPO}@{pin}'", "u.get('vcs_info', {}).get('commit_id') == PIN[-40:]",
                "pip('install', f'tpututor @ {PIN}')   # git fetches the commit and checks its hash")
    if _re_version.fullmatch(pin):
        return (f"'tpututor=={pin}'", "u == {} and md.version('tpututor') == PIN[10:]",
                "pip('install', '--only-binary', ':all:', PIN)   # a wheel: none of its code runs to install it")
    raise ValueError(f'install_cell: PIN {pin!r} is neither a commit (40 hex digits) nor a version (X.Y.Z)')

def head(pin:str|None=None)->str:
    "The part of the install cell that installs tpututor from `pin` (default `PIN`): a no-op where it is installed already"
    what, same, install = _source_of(pin or PIN)
    return f"""{MARKER} (a no-op where everything is installed)
import importlib.metadata as md, json, subprocess, sys
PIN = {what}
try: d = md.distribution('tpututor'); u = json.loads(d.read_text('direct_url.json') or '{{}}')
except md.PackageNotFoundError: d = u = None
local = d is not None and ('dir_info' in u or 'packages' not in str(d.locate_file('')))   # a checkout
ok = local or d is not None and {same}
pip = lambda *a: subprocess.run([sys.executable, '-m', 'pip', '-q', *a], check=True)
if not ok and d is not None: pip('uninstall', '-y', 'tpututor')   # another one: runs none of its code
if not ok: {install}
print(f"tpututor {{md.version('tpututor')}}", 'was installed already' if ok else f'installed from {{PIN}}')"""

_re_call = re.compile(r"install_missing\('(\w+)'\)")

@functools.cache
def install_module(package:Path=ROOT / 'tpututor')->str|None:
    "The module that defines `install_missing`, read from the source under `package` (None when none does)"
    for py in sorted(Path(package).rglob('*.py')):
        if any(isinstance(s, ast.FunctionDef) and s.name == 'install_missing' for s in ast.parse(py.read_text()).body):
            return '.'.join(py.relative_to(Path(package).parent).with_suffix('').parts).removesuffix('.__init__')
    return None

def install_cell(*frameworks:str)->str:
    "The text of the install cell for a notebook that needs `frameworks` (none: tpututor's core only)"
    bad = [f for f in frameworks if f not in FRAMEWORKS]
    if bad: raise ValueError(f'install_cell: unknown framework(s) {bad}; use some of {list(FRAMEWORKS)}')
    if not frameworks: return head()
    return '\n'.join([head(), f'from {install_module() or MODULE} import install_missing',
                      *(f'install_missing({f!r});' for f in frameworks)])   # `;`: the steps it returns are not shown under the cell

def _source(cell): return ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']

def _code(src):
    "`src` without its `#|` directive lines"
    return '\n'.join(l for l in src.splitlines() if not l.lstrip().startswith('#|')).strip()

def first_code(nb:dict)->str:
    "The first code cell of notebook `nb` that holds code (directive-only cells such as `#| default_exp` skipped), or ''"
    return next((c for c in (_code(_source(c)) for c in nb['cells'] if c['cell_type'] == 'code') if c), '')

def has_install_cell(nb:dict)->bool:
    "Does notebook `nb` (its JSON) start with the install cell, so that it runs on Kaggle and Colab from its first cell?"
    return first_code(nb).startswith(MARKER)

def check_notebook(path:Path)->list:
    "What is wrong with the install cell of the notebook at `path`: [] when it has none or its copy is the canonical text"
    text = Path(path).read_text()
    if MARKER not in text: return []                 # no install cell (most library pages): nothing to parse
    nb = json.loads(text)
    cells = [_code(_source(c)) for c in nb['cells'] if c['cell_type'] == 'code']
    found = [i for i, c in enumerate(cells) if c.startswith(MARKER)]
    if not found: return []
    first = next(i for i, c in enumerate(cells) if c)
    problems = [f'{path}: the install cell is code cell {found[0] + 1}, after code that runs first on Kaggle; '
                'make it the first code cell'] if found[0] != first else []
    if len(found) > 1: problems.append(f'{path}: {len(found)} install cells; keep the first')
    have = cells[found[0]]
    try: want = install_cell(*_re_call.findall(have))
    except ValueError as e: return problems + [f'{path}: {e}']
    if have != want:
        diff = difflib.unified_diff(want.splitlines(), have.splitlines(), 'canonical (tools/docs/install_cell.py)', str(path), lineterm='')
        problems.append(f'{path}: the install cell differs from the canonical text:\n' + '\n'.join(diff))
    return problems

def check_all(nbs:Path=ROOT / 'nbs', package:Path=ROOT / 'tpututor')->list:
    "`check_notebook` for every notebook under `nbs`, and whether a module in `package` has the function the cells call"
    paths = [nb for nb in sorted(nbs.rglob('*.ipynb')) if '.ipynb_checkpoints' not in nb.parts]
    found = [p for nb in paths for p in check_notebook(nb)]
    if any(MARKER in nb.read_text() and has_install_cell(json.loads(nb.read_text())) for nb in paths) and not install_module(package):
        found.insert(0, f'no module under {package} defines install_missing, which every install cell imports and calls '
                        f'(from {MODULE}): define it there')
    return found

def _git(*args, cwd=ROOT):
    r = subprocess.run(['git', *args], cwd=cwd, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None

def pin_problems(pin:str|None=None, repo:Path=ROOT)->list:
    """What is wrong with `pin` (default `PIN`) in the checkout `repo`: a commit must be one of its history (HEAD's or an
    ancestor), a version must be the package's version (`tpututor.__version__`); [] when it is right"""
    pin = pin or PIN
    try: _source_of(pin)
    except ValueError as e: return [str(e)]
    if _re_version.fullmatch(pin):
        v = re.search(r'__version__ = "(.+)"', (Path(repo) / 'tpututor' / '__init__.py').read_text())[1]
        return [] if v == pin else [f'PIN is version {pin} but tpututor.__version__ is {v}: release {v} and pin it, or pin a commit']
    if _git('cat-file', '-t', pin, cwd=repo) != 'commit':
        why = ('this clone is shallow: `git fetch --unshallow`, then check again' if _git('rev-parse', '--is-shallow-repository', cwd=repo) == 'true'
               else f'pin one of this history: python tools/docs/install_cell.py --pin $(git rev-parse HEAD)')
        return [f'PIN {pin} is no commit of {repo}: {why}']
    if subprocess.run(['git', 'merge-base', '--is-ancestor', pin, 'HEAD'], cwd=repo).returncode:
        return [f'PIN {pin} is not in the history of HEAD (a commit of another branch?): pin one that is']
    return []

def drift(pin:str|None=None, repo:Path=ROOT)->list:
    "The package files (tpututor/, pyproject.toml) that differ between commit `pin` and the working tree: what a pinned cell does not get"
    out = _git('diff', '--name-only', pin or PIN, '--', 'tpututor', 'pyproject.toml', cwd=repo)
    return out.splitlines() if out else []

def set_pin(pin:str, nbs:Path=ROOT / 'nbs', here:Path=Path(__file__))->list:
    "Pin every install cell under `nbs`, and `PIN` in this file (`here`), to `pin`: the notebooks rewritten"
    _source_of(pin)
    src = Path(here).read_text()
    Path(here).write_text(re.sub(r"^PIN = '[^']*'$", f"PIN = '{pin}'", src, count=1, flags=re.M))
    changed = []
    for path in sorted(Path(nbs).rglob('*.ipynb')):
        if '.ipynb_checkpoints' in path.parts: continue
        nb = json.loads(path.read_text())
        for c in nb['cells']:
            have = _code(_source(c)) if c['cell_type'] == 'code' else ''
            if not have.startswith(MARKER): continue
            want = install_cell(*_re_call.findall(have)).replace(head(), head(pin))
            if want != have:
                c['source'] = want.splitlines(keepends=True)
                changed.append(path)
        if path in changed: path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')
    return changed

if __name__ == '__main__':
    args = sys.argv[1:]
    if args == ['--check']:
        problems = check_all() + pin_problems()
        print('\n\n'.join(problems) or f'every install cell is the canonical text, and installs {PIN}')
        if not problems and (d := drift()):
            print(f'the pinned commit lacks changes to {len(d)} package files ({", ".join(d[:5])}{", ..." if len(d) > 5 else ""}): '
                  'pin a commit that has them once it is pushed (--pin COMMIT)')
        sys.exit(1 if problems else 0)
    if len(args) == 2 and args[0] == '--pin':
        for p in set_pin(args[1]): print(f'pinned {p.relative_to(ROOT)}')
        sys.exit(0)
    if any(a.startswith('-') for a in args): sys.exit(__doc__)
    print(install_cell(*args))
