"""Build README.md from nbs/index.ipynb.

nbdev's own `nbdev-readme` renders through Quarto, which cannot be installed from the package
registries; this does the same job for a README: markdown cells as they are, code cells fenced,
their text outputs after them, `#| hide` cells left out and directive lines dropped.
Usage: python tools/make_readme.py
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))

def _src(cell): return ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']

def _directives(src):
    return {l[3:].strip().split(':')[0].split()[0] for l in src.splitlines() if l.startswith('#| ') and l[3:].strip()}

def _outputs(cell):
    for o in cell.get('outputs', []):
        txt = o.get('text') if o['output_type'] == 'stream' else o.get('data', {}).get('text/plain')
        if txt: yield ''.join(txt).rstrip()

def readme(nb_path) -> str:
    "README.md text for the notebook at `nb_path`; a markdown line `<!-- tested-on -->` becomes the Tested-on table"
    from tested_on import MARKER, tested_on
    parts = []
    for cell in json.loads(Path(nb_path).read_text())['cells']:
        src = _src(cell)
        if 'hide' in _directives(src): continue
        body = '\n'.join(l for l in src.splitlines() if not l.startswith('#|')).strip()
        if not body: continue
        if cell['cell_type'] == 'markdown':
            parts.append('\n'.join(tested_on().strip() if l.strip() == MARKER else l for l in body.splitlines()))
        elif cell['cell_type'] == 'code':
            parts.append(f'```python\n{body}\n```')
            parts.extend(f'```\n{o}\n```' for o in _outputs(cell))
    return '\n\n'.join(parts) + '\n'

if __name__ == '__main__':
    (ROOT/'README.md').write_text(readme(ROOT/'nbs'/'index.ipynb'))
    print('README.md written', file=sys.stderr)
