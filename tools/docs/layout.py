"""How the code is laid out: tpututor's modules, their layers and their imports, read from the source (nothing is
imported or run), checked against the rules in tools/docs/layout.toml and drawn for the docs page of that name.

    python tools/docs/layout.py                 # check the rules: exit 1 naming each import that breaks one, and each circle
    python tools/docs/layout.py --svg out.svg   # and draw the picture

The docs build (tools/docs/build.py) writes the page with `layout_page` and the picture with `draw`;
tests/test_docs.py fails when `check` finds a problem.
"""
import ast, fnmatch, re, sys, tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RULES = HERE / 'layout.toml'


# ---------------------------------------------------------------- the package, from its source
@dataclass
class Module:
    path: str                  # under the package: 'backends/keras.py', '__init__.py'
    name: str                  # dotted: 'tpututor.backends.keras', 'tpututor'
    doc: str = ''              # the first sentence of its docstring
    lines: int = 0
    imports: dict = field(default_factory=dict)   # path of a package module it imports -> line of the first such import

def first_sentence(doc:str)->str:
    "The first sentence of docstring `doc` (its first paragraph up to the first full stop), on one line"
    para = re.split(r'\n\s*\n', (doc or '').strip())[0]
    return re.split(r'(?<=[.!?])\s+(?=[A-Z`(])', ' '.join(para.split()))[0]

def _dotted(path:Path, package:Path)->str:
    return '.'.join(path.relative_to(package.parent).with_suffix('').parts).removesuffix('.__init__')

def _targets(name:str, is_pkg:bool, node, known)->list:
    "Dotted names an import statement in module `name` refers to (`from p import m` is module `p.m` where `known` has it, else `p`)"
    if isinstance(node, ast.Import): return [a.name for a in node.names]
    if node.level:
        base = name.split('.') if is_pkg else name.split('.')[:-1]
        base = base[:len(base) - node.level + 1]
        target = '.'.join(base + ([node.module] if node.module else []))
    else: target = node.module or ''
    return [f'{target}.{a.name}' if f'{target}.{a.name}' in known else target for a in node.names]

def read_package(package:Path=ROOT / 'tpututor')->dict:
    "{path: Module} for every module of `package` (nbdev's `_modidx.py` left out), with the package modules each imports"
    package = Path(package)
    files = {p: _dotted(p, package) for p in sorted(package.rglob('*.py')) if p.name != '_modidx.py'}
    by_name = {n: p.relative_to(package).as_posix() for p, n in files.items()}
    mods = {}
    for p, name in files.items():
        src = p.read_text()
        tree = ast.parse(src, str(p))
        doc = first_sentence(ast.get_docstring(tree) or '') or (
            f"the package `{name}`{'' if src.strip() else ' (an empty file)'}" if p.name == '__init__.py' else '(no docstring)')
        m = Module(p.relative_to(package).as_posix(), name, doc, len(src.splitlines()))
        for node in ast.walk(tree):                    # imports inside functions count too: they run when called
            if not isinstance(node, (ast.Import, ast.ImportFrom)): continue
            for t in _targets(name, p.name == '__init__.py', node, by_name):
                while t and t not in by_name and '.' in t: t = t.rsplit('.', 1)[0]
                if t in by_name and by_name[t] != m.path: m.imports.setdefault(by_name[t], node.lineno)
        mods[m.path] = m
    return mods


# ---------------------------------------------------------------- the rules
def load_rules(path:Path=RULES)->dict:
    "The layers, the groups kept apart and the data flow, from `path` (tools/docs/layout.toml)"
    rules = tomllib.loads(Path(path).read_text())
    for key in ('layer', 'apart', 'flow'): rules.setdefault(key, [])
    for i, l in enumerate(rules['layer']):
        missing = [k for k in ('name', 'modules') if k not in l]
        if missing: raise ValueError(f'{path}: layer {i + 1} has no {missing}: each [[layer]] needs a name and modules')
    return rules

def _match(path, pattern): return fnmatch.fnmatchcase(path, pattern)

def _apart(a:str, b:str, g:dict)->bool:
    """Does importing `b` from `a` cross group `g`: both its members, `b` not shared, `a` not its registry, and (with
    `by = "folder"`) `a` and `b` not of one folder of the group, or of one folder but around its face (`_around`)?"""
    if not (_match(a, g['modules']) and _match(b, g['modules'])) or b in g.get('shared', []) or a == g.get('registry'):
        return False
    if g.get('by') == 'folder': return not _one_folder(a, b, g) or _around(a, b, g)
    return True

def _one_folder(a:str, b:str, g:dict)->bool:
    "Are `a` and `b` of one folder of group `g` (`by = \"folder\"`), its subfolders included?"
    root = g['modules'].rsplit('/', 1)[0] + '/'
    unit = lambda p: p[len(root):].split('/')[0] if p.startswith(root) else p
    return g.get('by') == 'folder' and unit(a) == unit(b)

def _around(a:str, b:str, g:dict)->bool:
    """Within one folder of group `g`: does `a` import `b` around the folder's face (`through = "base.py"`: neither is a
    base.py of its folder or a subfolder)?"""
    face = g.get('through')
    return bool(face) and not any(p.rsplit('/', 1)[-1] == face for p in (a, b))

def layers_of(path:str, rules:dict)->list:
    "Indexes of the layers (0 = top) whose patterns match module `path`"
    return [i for i, l in enumerate(rules['layer']) if any(_match(path, p) for p in l['modules'])]

def circles(mods:dict)->list:
    "Each circle of imports: (the modules that import each other in a loop, one such loop as a closed path `a -> b -> a`)"
    index, low, stack, on, comps = {}, {}, [], set(), []
    def visit(v):                                      # Tarjan, iterative enough for a package's depth
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in sorted(mods[v].imports):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: comps.append(sorted(comp))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(mods) + 100))
    for v in sorted(mods):
        if v not in index: visit(v)
    loops = []
    for comp in comps:                                 # the shortest way back to the first module, for the message
        start, inside, prev, todo = comp[0], set(comp), {}, [comp[0]]
        while todo and start not in prev:
            nxt = []
            for v in todo:
                for w in sorted(mods[v].imports):
                    if w in inside and w not in prev: prev[w] = v; nxt.append(w)
            todo = nxt
        path, v = [start], prev[start]
        while v != start: path.append(v); v = prev[v]
        loops.append((comp, [start] + path[::-1][:-1] + [start] if len(path) > 1 else [start, start]))
    return loops

def breaks(mods:dict, rules:dict)->set:
    "The imports `(importer, imported)` that break a layer rule or an apart rule"
    out = set()
    for a, m in mods.items():
        la = layers_of(a, rules)
        for b in m.imports:
            lb = layers_of(b, rules)
            if len(la) == 1 and len(lb) == 1 and lb[0] < la[0]: out.add((a, b))
            if any(_apart(a, b, g) for g in rules['apart']): out.add((a, b))
    return out

def check(mods:dict, rules:dict)->list:
    "Every way the package breaks `rules`: a module in no layer or in two, an import up the layers or across an apart group, a circle"
    problems, names = [], [l['name'] for l in rules['layer']]
    for p in sorted(mods):
        ls = layers_of(p, rules)
        if not ls: problems.append(f'{p} is in no layer of tools/docs/layout.toml: add it to the [[layer]] it belongs to')
        elif len(ls) > 1: problems.append(f'{p} matches the layers {[names[i] for i in ls]} in tools/docs/layout.toml: make one pattern match it')
    for a, b in sorted(breaks(mods, rules)):
        line = f'{a}:{mods[a].imports[b]} imports {b}'
        group = next((g for g in rules['apart'] if _apart(a, b, g)), None)
        if group and _one_folder(a, b, group):
            problems.append(f"{line}: {group['within']}")
        elif group:
            problems.append(f"{line}: {group.get('why') or group['modules'] + ' never import each other'}; "
                            f"share it through {', '.join(group.get('shared', [])) or 'a lower layer'} instead")
        else:
            la, lb = layers_of(a, rules)[0], layers_of(b, rules)[0]
            problems.append(f"{line}: layer '{names[la]}' may not import layer '{names[lb]}' above it; "
                            'move what it needs down a layer, or change the layers in tools/docs/layout.toml')
    for members, loop in circles(mods):
        problems.append(f"circle: {', '.join(members)} import each other in a loop (imports inside functions count: "
                        f"they run when called), e.g. {' -> '.join(loop)}: cut one of the imports")
    return problems


# ---------------------------------------------------------------- the picture
PALETTE = ['#dbe8f6', '#e3f1dc', '#f6e7d2', '#ece1f3', '#dcefee', '#f5dde3', '#eeeeda']

def _reduced(mods:dict, keep:set)->tuple:
    "The imports to draw: all but those a longer chain of imports already implies (except the ones in `keep`), and how many were left out"
    def reaches(src, dst, skip):
        seen, todo = {src}, [w for w in mods[src].imports if (src, w) != skip]
        while todo:
            v = todo.pop()
            if v == dst: return True
            if v in seen: continue
            seen.add(v); todo += list(mods[v].imports)
        return False
    draw, left = [], 0
    for a in sorted(mods):
        for b in sorted(mods[a].imports):
            if (a, b) in keep or not reaches(a, b, (a, b)): draw.append((a, b))
            else: left += 1
    return draw, left

def _rows(mods:dict, rules:dict, per_row:int)->list:
    "[(layer name, [(folder or None, [paths])])], top to bottom; a layer wider than `per_row` boxes takes several rows"
    rows, placed = [], set()
    for i, l in enumerate(rules['layer']):
        groups = []
        for pat in l['modules']:
            for p in sorted(q for q in mods if q not in placed and layers_of(q, rules) and layers_of(q, rules)[0] == i and _match(q, pat)):
                folder = p.rsplit('/', 1)[0] + '/' if '/' in p else None
                if folder and groups and groups[-1][0] == folder: groups[-1][1].append(p)
                else: groups.append((folder, [p]))
                placed.add(p)
        if groups: rows.append((l['name'], groups))
    rest = sorted(p for p in mods if p not in placed)
    if rest: rows.append(('in no layer', [(None, [p]) for p in rest]))
    out = []
    for name, groups in rows:                          # wrap a wide layer, keeping a folder whole where it fits
        line, n = [], 0
        for g in groups:
            if line and n + len(g[1]) > per_row: out.append((name, line)); line, n, name = [], 0, ''
            line.append(g); n += len(g[1])
        out.append((name, line))
    return out

def draw(mods:dict, rules:dict, out:Path, width:float=13.5):
    "Draw the modules of `mods` (grouped by folder, in rows by layer) and their imports as arrows into the SVG file `out`"
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle
    bw, bh, gap, pad, left_col, row_h = 0.98, 0.34, 0.1, 0.08, 1.3, 0.95
    per_row = int((width - left_col - 0.6) // (bw + gap))
    rows = _rows(mods, rules, per_row)
    loops = {(a, b) for members, _ in circles(mods) for a in members for b in mods[a].imports if b in members}
    bad = breaks(mods, rules)
    edges, left = _reduced(mods, bad | loops)
    height = row_h * len(rows) + 0.75
    plt.rcParams.update({'svg.fonttype': 'none', 'svg.hashsalt': 'tpututor-layout', 'font.family': 'DejaVu Sans'})
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1)); ax.set_xlim(0, width); ax.set_ylim(0, height); ax.axis('off')
    folders = sorted({p.rsplit('/', 1)[0] for p in mods if '/' in p})
    colour = {f: PALETTE[(i + 1) % len(PALETTE)] for i, f in enumerate(folders)}
    neighbours = {p: [a for a, b in edges if b == p] + [b for a, b in edges if a == p] for p in mods}
    def place(rows, order=None):
        "x of each module: the rows centred, the folders kept whole, each folder and module at the mean x of its neighbours"
        pos, row_of = {}, {}
        for r, (name, groups) in enumerate(rows):
            if order:
                bary = lambda p: sum(order[q][0] for q in neighbours[p]) / len(neighbours[p]) if neighbours[p] else order[p][0]
                for folder, paths in groups: paths.sort(key=bary)
                groups.sort(key=lambda g: sum(map(bary, g[1])) / len(g[1]))
            n = sum(len(ps) for _, ps in groups)
            span = n * (bw + gap) - gap + sum(2 * pad + gap for f, _ in groups if f)
            x = left_col + (width - left_col - 0.2 - span) / 2
            for folder, paths in groups:
                if folder: x += pad
                for p in paths: pos[p] = (x + bw / 2, height - 0.55 - r * row_h); row_of[p] = r; x += bw + gap
                if folder: x += pad + gap
        return pos, row_of
    pos, row_of = place(rows)
    for _ in range(3): pos, row_of = place(rows, pos)
    for r, (name, groups) in enumerate(rows):
        y = height - 0.55 - r * row_h
        ax.text(0.15, y, name, ha='left', va='center', fontsize=9, color='#555', style='italic')
        for folder, paths in groups:
            if not folder: continue
            x0 = min(pos[p][0] for p in paths) - bw / 2 - pad; x1 = max(pos[p][0] for p in paths) + bw / 2 + pad
            ax.add_patch(Rectangle((x0, y - bh / 2 - pad), x1 - x0, bh + 2 * pad + 0.2, fc='none', ec='#7a8796', lw=1.0, zorder=1))
            ax.text(x0 + 0.05, y + bh / 2 + pad + 0.1, folder, fontsize=9, fontweight='bold', va='center', color='#333', zorder=1)
    outs = {p: sorted((b for a, b in edges if a == p), key=lambda b: pos[b][0]) for p in mods}
    ins = {p: sorted((a for a, b in edges if b == p), key=lambda a: pos[a][0]) for p in mods}
    def port(p, others, q, side):
        k, n = others.index(q), len(others)
        return (pos[p][0] + (k + 1) / (n + 1) * bw * 0.8 - bw * 0.4, pos[p][1] + side * bh / 2)
    for a, b in edges:
        c = '#d9480f' if (a, b) in loops else '#c92a2a' if (a, b) in bad else '#6b7785'
        lw, alpha = (1.6, 0.95) if c != '#6b7785' else (0.8, 0.6)
        same = row_of[a] == row_of[b]
        up = row_of[b] < row_of[a]
        s = port(a, outs[a], b, 1 if up else -1)
        e = port(b, ins[b], a, -1 if up or same else 1)
        rad = 0.35 if same else 0.08 * (1 if s[0] < e[0] else -1)
        ax.add_patch(FancyArrowPatch(s, e, arrowstyle='-|>', mutation_scale=8, lw=lw, color=c, alpha=alpha,
                                     connectionstyle=f'arc3,rad={rad}', shrinkA=0, shrinkB=1, zorder=2))
    for p, (x, y) in pos.items():
        folder = p.rsplit('/', 1)[0] if '/' in p else ''
        ec = '#c92a2a' if not layers_of(p, rules) else '#4a5a6a'
        ax.add_patch(FancyBboxPatch((x - bw / 2, y - bh / 2), bw, bh, boxstyle='round,pad=0,rounding_size=0.05',
                                    fc=colour.get(folder, PALETTE[0]), ec=ec, lw=1.4 if ec == '#c92a2a' else 0.8, zorder=3))
        label = p.rsplit('/', 1)[-1]
        ax.text(x, y, label, ha='center', va='center', fontsize=8.5 if len(label) < 14 else 7.5, zorder=4, color='#111')
    n_imports = sum(len(m.imports) for m in mods.values())
    note = (f'{len(mods)} modules, {n_imports} imports: an arrow points from a module to one it imports. '
            f'Grey: allowed; red: breaks a rule; orange: part of a circle. '
            f'{left} imports that a longer chain of arrows already implies are not drawn.')
    ax.text(0.15, 0.3, note, fontsize=8.5, color='#444', va='center')
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format='svg', metadata={'Date': None})
    plt.close(fig)


# ---------------------------------------------------------------- the page
def _mod_link(path, pages, mods):
    if path in mods and path in pages: return f'[`{path}`]({pages[path]})'
    return f'`{path}`' + ('' if any(_match(q, path) for q in mods) else ' (not in the package yet)')

def layout_page(mods:dict, rules:dict, pages:dict, svg:str='layout.svg')->str:
    "The markdown of the page: folders and modules, the layer rules and their check, the data flow, the picture `svg`; `pages` maps a module path to its docs page"
    problems = check(mods, rules)
    names = [l['name'] for l in rules['layer']]
    n_imports = sum(len(m.imports) for m in mods.values())
    md = ['# How the code is laid out\n',
          '> The folders, what each layer may import, and the way data flows from a CSV to predictions: '
          'generated from the source by the docs build, so it shows the code as it is.\n',
          '## The picture\n',
          f'Every module of `tpututor/`, grouped by folder, in rows by layer (the top row may import every row below it), '
          'with an arrow for each import the source makes (imports inside functions too). Open the picture on its own to zoom.\n',
          f'<a href="{svg}"><img class="tt-layout" src="{svg}" alt="The modules of tpututor in layers, with arrows for their imports"></a>\n',
          '## What each layer may import\n',
          'A module may import the modules of its own layer and of every layer below it, never one above: '
          'what two modules share lives below both. `tools/docs/layout.toml` declares the layers; the docs build checks '
          f'them against the imports in the source ({len(mods)} modules, {n_imports} imports), and `tests/test_docs.py` '
          'fails naming each import that breaks a rule.\n',
          '| layer | modules | what it holds |', '|---|---|---|']
    for l in rules['layer']:
        md.append(f"| {l['name']} | {', '.join(f'`{p}`' for p in l['modules'])} | {l.get('role', '')} |")
    md.append('')
    for g in rules['apart']:
        shared = ', '.join(f'`{s}`' for s in g.get('shared', []))
        md.append(f"Inside a layer, too: {g.get('why') or g['modules'] + ' never import each other'}"
                  + (' (the modules of one of its folders import each other freely)' if g.get('by') == 'folder' else '')
                  + (f" ({shared} is theirs to share" if shared else '')
                  + (f"; `{g['registry']}` may import each of them, to return the one asked for)" if g.get('registry') else ')' if shared else '')
                  + '.\n')
    if problems:
        md += ['!!! warning "The code breaks its layout rules"', '',
               *[f'    - {p}' for p in problems], '']
    else:
        md.append('Checked: every module is in one layer, no import goes up a layer or across a group kept apart, '
                  'and no modules import each other in a circle.\n')
    md += ['## From a CSV to predictions\n', 'The data flows one way, through these steps:\n']
    for i, f in enumerate(rules['flow'], 1):
        mods_md = ', '.join(_mod_link(p, pages, mods) for p in f.get('modules', []))
        md.append(f"{i}. **{f['step']}**: {f.get('what', '')} ({mods_md})")
    md += ['', '## The folders and modules\n', 'Each module with the first sentence of its docstring; the name links to its page.\n',
           '| module | layer | what it does |', '|---|---|---|']
    for p in sorted(mods, key=lambda p: (layers_of(p, rules)[:1] or [len(names)], p)):
        ls = layers_of(p, rules)
        md.append(f"| {_mod_link(p, pages, mods)} | {names[ls[0]] if len(ls) == 1 else 'none' if not ls else 'several'} "
                  f"| {mods[p].doc.replace('|', '&#124;')} |")
    return '\n'.join(md) + '\n'

if __name__ == '__main__':
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--package', default=str(ROOT / 'tpututor'))
    ap.add_argument('--rules', default=str(RULES))
    ap.add_argument('--svg', help='also draw the picture into this SVG file')
    a = ap.parse_args()
    mods, rules = read_package(Path(a.package)), load_rules(Path(a.rules))
    if a.svg: draw(mods, rules, Path(a.svg))
    problems = check(mods, rules)
    print('\n'.join(problems) or f'{len(mods)} modules follow the rules of {a.rules}')
    sys.exit(1 if problems else 0)
