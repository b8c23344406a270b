"""The one install cell that makes a notebook run on Kaggle and Colab from its first cell.

A notebook whose first code cell is this cell gets the Open in Kaggle / Open in Colab buttons on its docs page;
a notebook without it gets none (its first import would fail there). Every copy must be the text `install_cell`
returns: the part before the last lines is the same everywhere, the last lines name the frameworks the notebook
needs (`install_missing('keras')`, none for a notebook that needs only tpututor's core).

    python tools/docs/install_cell.py keras            # print the cell for a notebook on Keras 3 + JAX
    python tools/docs/install_cell.py --check          # check every notebook's copy (exit 1 naming each one that differs)
"""
import ast, difflib, json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = '# Kaggle / Colab: install what is missing'   # how a copy is recognised: its first line starts so
FRAMEWORKS = ('keras', 'xla', 'torch', 'tf')            # what `install_missing` accepts
MODULE = 'tpututor.devices.frameworks'                  # where `install_missing` lives; the cell imports it from where the source defines it
HEAD = f'''{MARKER} (a no-op where everything is installed)
import importlib.metadata as md, subprocess, sys
REPO = 'https://github.com/tpututor/tpututor'
def pip(*args): return subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', *args]).returncode == 0
def ours():   # tpututor from this project (not missing, not another package under the name)
    try: return REPO in ' '.join(md.metadata('tpututor').get_all('Project-URL') or [])
    except md.PackageNotFoundError: return False
if not ours():   # PyPI first; before the first release (or if the name is taken there), the repository
    source = 'PyPI' if pip('tpututor') and ours() else REPO
    if source == REPO: pip('--force-reinstall', '--no-deps', f'git+{{REPO}}'); pip(f'git+{{REPO}}')
    print(f"tpututor {{md.version('tpututor')}} from {{source}}")'''
_re_call = re.compile(r"install_missing\('(\w+)'\)")


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
    if not frameworks: return HEAD
    return '\n'.join([HEAD, f'from {install_module() or MODULE} import install_missing',
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
    nb = json.loads(Path(path).read_text())
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
    found = [p for nb in sorted(nbs.rglob('*.ipynb')) if '.ipynb_checkpoints' not in nb.parts for p in check_notebook(nb)]
    if any(has_install_cell(json.loads(nb.read_text())) for nb in nbs.rglob('*.ipynb')) and not install_module(package):
        found.insert(0, f'no module under {package} defines install_missing, which every install cell imports and calls '
                        f'(from {MODULE}): define it there')
    return found

if __name__ == '__main__':
    args = sys.argv[1:]
    if args == ['--check']:
        problems = check_all()
        print('\n\n'.join(problems) or 'every install cell is the canonical text')
        sys.exit(1 if problems else 0)
    if any(a.startswith('-') for a in args): sys.exit(__doc__)
    print(install_cell(*args))
