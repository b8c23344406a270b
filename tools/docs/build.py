"""Build the documentation site into docs/ from the notebooks, offline and without Quarto.

    python tools/docs/build.py          (what `./run.sh docs` runs)

1. Each notebook goes through nbdev's own doc processors (front matter, `show_doc` cells after every exported
   function, hidden export cells, links to the API), in a few worker processes that each take a share of the
   notebooks (importing tpututor's modules loads neither TensorFlow nor torch_xla, the two that must not meet in one
   process). One processor is swapped: nbdev's `exec_show_docs` re-runs the notebook's import and export cells to
   evaluate `show_doc`; here `show_doc` is evaluated against the exported module instead, so the executed outputs
   committed with the notebook stay as they are and nothing is re-run.
2. A notebook whose ipywidgets outputs have no widget state stored (nbdev-test --save does not store it) is
   executed once with nbdev's runner, with the test suite's flags, and the widget state is kept with it: in a fresh
   process of its own (TensorFlow and torch_xla must not meet in one process).
3. The processed notebooks (their outputs without stderr progress bars or the run's temporary paths; the Open in
   Kaggle / Colab buttons only where the notebook starts with the install cell of tools/docs/install_cell.py), a
   Performance page from bench/results/*.md, the install and contributing pages, the page "How the code is laid
   out" (tools/docs/layout.py: drawn and checked from the package's source) and the vendored JavaScript (the
   ipywidgets HTML manager and MathJax, from the npm registry, pinned by version and checksum) are rendered
   by MkDocs with mkdocs-material and mkdocs-jupyter (tools/docs/mkdocs.yml, tools/docs/hooks.py), with the
   navigation following the folders of nbs/.

Steps 1 and 2 are cached by content hash in ~/.cache/tpututor-docs (TPUTUTOR_DOCS_CACHE names another folder), shared
by every checkout on the machine: a rebuild after editing one notebook processes that one, and a fresh clone of code
built before processes none.
"""
import functools, hashlib, json, os, re, shutil, subprocess, sys, tarfile, tempfile, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path: sys.path.insert(0, str(HERE))   # install_cell.py and layout.py, beside this file
NBS = ROOT / 'nbs'
WORK = ROOT / '_docs'            # scratch: the generated MkDocs sources (gitignored)
# The processed notebooks, nbconvert's pages and the vendored JavaScript, cached by content outside the checkout, so a
# fresh clone (CI's) on a machine that built the same notebooks before processes none of them again
CACHE = Path(os.environ.get('TPUTUTOR_DOCS_CACHE') or
             Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'tpututor-docs')
SITE = ROOT / 'docs'             # the built site (gitignored; published by .github/workflows/docs.yml)
LESSONS_BELOW = 4                # without nbs/lessons/: notebooks numbered 00..03 are lessons, other numbered ones the library
FOLDER_SECTIONS = {'lessons': 'Lessons', 'tutorials': 'Tutorials'}   # any other folder of nbs/ is a part of the Library
LIBRARY_FOLDERS = ('models', 'devices', 'backends')                  # the Library's parts in this order, other folders after
HOME_OPENS = 'tutorials/01_keras_kfold.ipynb'                        # what the home page's Open in Kaggle / Colab buttons open
WIDGET_MIME = 'application/vnd.jupyter.widget-state+json'
VIEW_MIME = 'application/vnd.jupyter.widget-view+json'
# Served from the site, never from a CDN. Files copied: (path in the package, path under assets/).
NPM = {
    '@jupyter-widgets/html-manager': dict(
        version='1.0.15',
        integrity='sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==',
        files=[(r'dist/embed\.js', 'widgets/'), (r'dist/embed\.js\.LICENSE\.txt', 'widgets/'),
               (r'dist/[0-9a-f]+\.(woff2?|ttf|eot|svg)', 'widgets/')]),
    'mathjax': dict(
        version='3.2.2',
        integrity='sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==',
        files=[(r'LICENSE', 'mathjax/'), (r'es5/tex-chtml\.js', 'mathjax/'),
               (r'es5/(input|output/chtml|ui|a11y|sre|adaptors)/.*', 'mathjax/')]),
}


def log(msg): print(f'docs: {msg}', flush=True)

def sha(*parts):
    h = hashlib.sha256()
    for p in parts: h.update(p if isinstance(p, bytes) else str(p).encode())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- notebooks
def notebooks():
    "Notebooks to publish: every .ipynb under nbs/ and its folders, leaving out files and folders whose names start with `_` or `.`"
    return sorted(p for p in NBS.rglob('*.ipynb') if not any(part.startswith(('_', '.')) for part in p.relative_to(NBS).parts))

def section(nb: Path):
    "Where `nb` goes in the navigation: (section, part of the Library or None)"
    rel = nb.relative_to(NBS)
    if len(rel.parts) > 1: return (FOLDER_SECTIONS[rel.parts[0]], None) if rel.parts[0] in FOLDER_SECTIONS else ('Library', rel.parts[0])
    if nb.stem == 'index': return 'Start', None
    m = re.match(r'(\d+)', nb.stem)
    if not (NBS / 'lessons').is_dir() and m and int(m.group(1)) < LESSONS_BELOW: return 'Lessons', None
    return 'Library', None

def page_of(rel):
    "The page nbdev's API links point at for the notebook at `rel` (under nbs/): `backends/02_keras.ipynb` -> `backends/keras.html`"
    from nbdev.config import nbpath2html
    return nbpath2html(Path(rel)).as_posix()

def _split_title_cell(nb):
    """nbdev turns the whole first `# Title` markdown cell into front matter and drops the rest of it:
    move any prose after the title, `> description` and `- key: value` lines into a cell of its own"""
    from fastcore.nbio import mk_cell
    for i, c in enumerate(nb.cells):
        if c.cell_type != 'markdown': continue
        if not re.match(r'\s*#\s+\S', c.source): return
        blocks = re.split(r'\n\s*\n', c.source.strip())
        head = [b for b in blocks if re.match(r'(#\s|>\s|-\s+\S.*:)', b.strip())]
        n = 0
        while n < len(blocks) and blocks[n] in head: n += 1
        if n < len(blocks):
            c.source = '\n\n'.join(blocks[:n])
            nb.cells.insert(i + 1, mk_cell('\n\n'.join(blocks[n:]), 'markdown'))
        return

def _missing_widget_state(nb):
    "Model ids shown by widget outputs whose state is not stored in the notebook"
    state = ((nb.get('metadata') or {}).get('widgets') or {}).get(WIDGET_MIME, {}).get('state', {})
    ids = {o['data'][VIEW_MIME]['model_id'] for c in nb.cells for o in c.get('outputs', [])
           if VIEW_MIME in (o.get('data') or {})}
    return ids - set(state)

def _execute_for_widgets(nb, path):
    "Run `nb` with nbdev's runner and the test suite's flags, keeping the outputs and the widget state"
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    from nbdev.config import get_config
    from nbdev.process import NBProcessor
    from nbdev.test import _skip_cell
    from ipywidgets import Widget
    cfg = get_config()
    skip_flags = cfg.tst_flags.split() if isinstance(cfg.tst_flags, str) else list(cfg.tst_flags or [])
    force = os.environ.get('TPUTUTOR_NB_FLAGS', 'slow').split()
    NBProcessor(nb=nb, rm_directives=False)                  # parses the `#|` directives the runner reads
    k = CaptureShell(path)
    with working_directory(path.parent):
        k.run_all(nb, exc_stop=True, preproc=_skip_cell(nb, skip_flags, force))
    nb.metadata['widgets'] = {WIDGET_MIME: Widget.get_manager_state(drop_defaults=True)}

def _show_doc_proc(module):
    "A stand-in for nbdev's `exec_show_docs`: evaluates `show_doc(...)` cells in the namespace of `module`"
    import ast, importlib
    from nbdev.process import Processor
    from nbdev.processors import _is_showdoc
    from nbdev.showdoc import show_doc

    class render_show_docs(Processor):
        def begin(self):
            self.ns = dict(vars(importlib.import_module(module))) if module else {}
            self.ns['show_doc'], self.imported = show_doc, False
        def _imports(self):
            "Run the notebook's import-only cells, for `show_doc` of something its module does not define"
            self.imported = True
            for c in self.nb.cells:
                try: tree = ast.parse(c.source) if c.cell_type == 'code' else None
                except SyntaxError: continue
                if tree and tree.body and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body):
                    exec(compile(tree, '<imports>', 'exec'), self.ns)
        def __call__(self, cell):
            if not _is_showdoc(cell): return
            src = '\n'.join(l for l in cell.source.splitlines() if not l.lstrip().startswith('#|')).strip()
            try: res = eval(src, self.ns)
            except NameError:
                if self.imported: raise
                self._imports(); res = eval(src, self.ns)
            md = res._repr_markdown_() if hasattr(res, '_repr_markdown_') else None
            if md and '#LNone' in md:      # nbdev looks the line up by the full name, its table has the short one
                from nbdev.doclinks import _get_exps
                py = f"{module.replace('.', '/')}.py" if module else ''
                line = _get_exps(py).get(str(getattr(res, 'fn', '')).removeprefix(f'{module}.')) if py else None
                md = md.replace('#LNone', f'#L{line}' if line else '')
            cell.outputs = [dict(output_type='display_data', metadata={}, data={'text/markdown': md})] if md else []
    return render_show_docs

class add_const_docs:
    "Like nbdev's `add_show_docs`, for exported constants: an API entry with the name and its assignment"
    max_lines = 12
    def __init__(self, nb): self.nb = nb
    def begin(self):
        import ast
        from fastcore.nbio import mk_cell
        from nbdev.processors import _want_doc
        for cell in reversed([c for c in self.nb.cells if _want_doc(c)]):
            try: tree = ast.parse(cell.source)
            except SyntaxError: continue
            new = []
            for s in tree.body:
                targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
                flat = [e for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
                names = [t.id for t in flat if isinstance(t, ast.Name) and not t.id.startswith('_')]
                if not names: continue
                code = ast.get_source_segment(cell.source, s).splitlines()
                if len(code) > self.max_lines: code = code[:self.max_lines - 2] + ['...']
                body = '\n'.join(code)
                new += [mk_cell(f'---\n\n### {n}\n\n```python\n{body}\n```', 'markdown') for n in names]
            self.nb.cells[cell.idx_ + 1:cell.idx_ + 1] = new
        for i, c in enumerate(self.nb.cells): c.idx_ = i

def _defined(src):
    "The public names a cell of code defines at its top level, and its classes' members (`Layout.bias`), as nbdev names them"
    import ast
    try: tree = ast.parse(src)
    except SyntaxError: return []
    out = []
    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): out.append(s.name)
        if isinstance(s, ast.ClassDef):
            out += [f'{s.name}.{m.name}' for m in s.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not m.name.startswith('_')]
        targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
        out += [e.id for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]) if isinstance(e, ast.Name)]
    return [n for n in out if not n.startswith('_')]

def _is_imports(src):
    "Is `src` (a cell's code) imports only?"
    import ast
    try: tree = ast.parse(src)
    except SyntaxError: return False
    imp = lambda s: isinstance(s, (ast.Import, ast.ImportFrom)) or isinstance(s, ast.If) and all(map(imp, s.body + s.orelse))
    return all(map(imp, tree.body))   # `if TYPE_CHECKING: import pandas` too

class lesson_code:
    """A lesson's page shows the code it exports as code, like the rest of the lesson, and adds no API block for it (nbdev
    would hide the code behind an API entry): before each exported cell that defines something, an anchor for each name
    (nbdev's API links, `bf16.html#round_to`, land on the code that defines it). Exported imports and `#| exporti` cells
    stay hidden; an explicit `show_doc(name)` cell is the one API block a lesson shows (for a function it builds step by step)"""
    def __init__(self, nb): self.nb = nb
    def begin(self):
        from fastcore.nbio import mk_cell
        cells, seen = [], set()
        for c in self.nb.cells:
            d = getattr(c, 'directives_', None) or {}
            if c.cell_type == 'code' and 'export' in d and 'hide' not in d and not _is_imports(c.source):
                ids = [n.lower() for n in _defined(c.source) if n.lower() not in seen]
                seen.update(ids)
                if ids:
                    a = mk_cell(''.join(f'<span class="tt-def" id="{i}"></span>' for i in ids), 'markdown')
                    a.metadata['tags'] = ['tt-anchor']
                    cells.append(a)
                c.directives_.pop('export')          # so rm_export keeps its code (the directive lines are gone already)
            cells.append(c)
        self.nb.cells = cells
        for i, c in enumerate(self.nb.cells): c.idx_ = i

_re_pandoc_link = re.compile(r'\[([^\]]+)\]\(([^)\s]+)\)\{([^}]*)\}')
def _html_links(md):
    "Quarto's `[text](url){target=...}` links (nbdev writes them) as plain HTML links"
    return _re_pandoc_link.sub(lambda m: f'<a href="{m.group(2)}" target="_blank" rel="noopener" class="tt-src">{m.group(1)}</a>', md)

# a tqdm bar as it lands on stderr: `x:  40%|####      | 4/10 [00:01<00:02,  3.9it/s]`
_re_bar = re.compile(r'^[^|\n]*\d+%\|[^|]*\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?')
def _drop_progress(outputs):
    "`outputs` without the progress bars written to stderr (a page would show a bar frozen where the run left it)"
    kept = []
    for o in outputs:
        if o.get('output_type') == 'stream' and o.get('name') == 'stderr':
            text = ''.join(o['text']) if isinstance(o['text'], list) else o['text']
            lines = [l for l in re.split(r'[\r\n]', text) if l.strip()]
            rest = [l for l in lines if not _re_bar.match(l)]
            if not rest: continue
            if len(rest) < len(lines): o['text'] = '\n'.join(rest) + '\n'
        kept.append(o)
    return kept

# a directory made by `tempfile.mkdtemp()` (or with the prefix `tpututor_`): a name that differs on every run
_re_tmpdir = re.compile(r'(?:/private)?(?:/tmp|/var/tmp|/var/folders/\w+/\w+/T)/(?:tmp|tpututor_)[a-z0-9_]{8}(?![\w])')
def _no_machine_paths(text, html=False):
    "`text` with the temporary directories of the run that made it shown as `<tmp>`, and the home directory as `~`"
    text = _re_tmpdir.sub('&lt;tmp&gt;' if html else '<tmp>', text)
    home = str(Path.home())
    return text.replace(home + '/', '~/') if home not in ('/', '') else text

def _clean_outputs(outputs):
    "What a page shows of a cell's `outputs`: no progress bars, no paths of the machine that ran it"
    outputs = _drop_progress(outputs)
    for o in outputs:
        if 'text' in o: o['text'] = _no_machine_paths(''.join(o['text']) if isinstance(o['text'], list) else o['text'])
        for mime in ('text/plain', 'text/html'):
            v = (o.get('data') or {}).get(mime)
            if v is not None: o['data'][mime] = _no_machine_paths(''.join(v) if isinstance(v, list) else v, html=mime == 'text/html')
    return outputs

def _badges(meta):
    "The page's Open in Kaggle / Open in Colab buttons, for the notebook `meta['opens']` (none when it is empty)"
    if not meta.get('opens'): return ''
    what = '' if meta['opens'] == meta['source'] else ' the first tutorial'
    return (f'<a class="tt-kaggle" href="{meta["kaggle"]}" target="_blank" rel="noopener">Open{what} in Kaggle</a> '
            f'<a class="tt-colab" href="{meta["colab"]}" target="_blank" rel="noopener">Open{what} in Colab</a>')

_re_open_in = re.compile(r'^\[Open in (?:Kaggle|Colab)\]\([^)]*\)(?: · \[Open in (?:Kaggle|Colab)\]\([^)]*\))*\n*')
_re_qdir = re.compile(r'^\s*#\|\s*([\w-]+)\s*:\s*(.*?)\s*$')
def _for_renderer(nb, meta):
    "Turn what nbdev made for Quarto into what nbconvert renders: title cell, show_doc markdown, cell options"
    from fastcore.nbio import mk_cell
    cells = []
    for c in nb.cells:
        if c.cell_type == 'raw' and c.source.startswith('---'): continue          # the YAML front matter
        if c.cell_type == 'markdown' and c.source.strip().startswith('<!-- WARNING'): continue
        if c.cell_type == 'markdown': c.source = _re_open_in.sub('', c.source)   # the notebook's own buttons: the page has the badges
        if c.cell_type == 'code':
            c.metadata.pop('execution', None)                                   # execnb's timings: not nbformat
            lines, opts = c.source.splitlines(), {}
            while lines and (m := _re_qdir.match(lines[0])): opts[m.group(1)] = m.group(2).lower(); lines.pop(0)
            c.source = '\n'.join(lines).strip()
            if opts.get('include') == 'false': continue
            if opts.get('output') == 'false': c.outputs = []
            c.outputs = _clean_outputs(c.get('outputs', []))
            for o in c.get('outputs', []):
                if 'text/markdown' in (o.get('data') or {}):
                    md = o['data']['text/markdown']
                    o['data']['text/markdown'] = _html_links(''.join(md) if isinstance(md, list) else md)
            if opts.get('echo') == 'false':
                mds = [o['data']['text/markdown'] for o in c.get('outputs', []) if 'text/markdown' in (o.get('data') or {})]
                if mds and len(mds) == len(c.outputs):                          # show_doc: API entry as page text
                    md = '\n\n'.join(mds)
                    if meta.get('lesson'): md = re.sub(r'^#{1,3} ', '#### ', md, flags=re.M)   # a lesson's contents: its sections
                    cells.append(mk_cell(md, 'markdown')); continue
                c.metadata.setdefault('tags', []).append('hide-input')
            if not c.source and not c.get('outputs'): continue
        cells.append(c)
    head = f'# {meta["title"]}\n\n' + (f'> {meta["description"]}\n\n' if meta.get('description') else '') + _badges(meta)
    nb.cells = [mk_cell(head, 'markdown')] + cells
    nb.metadata['tpututor_docs'] = meta

def process_one(src, dst):
    "Process notebook `src` for the docs into `dst` (in a worker process; one that executes `src` runs alone)"
    os.chdir(ROOT)
    os.environ['IN_TEST'] = '1'
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    from fastcore.nbio import read_nb, write_nb
    from nbdev.config import get_config
    from nbdev.process import NBProcessor
    from nbdev.processors import FilterDefaults, add_show_docs, exec_show_docs, _default_exp
    from install_cell import has_install_cell
    src, dst, t0 = Path(src), Path(dst), time.time()
    nb = read_nb(src)
    executed = bool(_missing_widget_state(nb))
    if executed:                                   # round trip: nbdev's processors expect what read_nb gives
        _execute_for_widgets(nb, src)
        tmp = dst.with_suffix('.exec.ipynb'); tmp.parent.mkdir(parents=True, exist_ok=True)
        write_nb(nb, tmp); nb = read_nb(tmp); tmp.unlink(); nb.path_ = str(src)
    _split_title_cell(nb)
    cfg = get_config()
    exp = _default_exp(nb)
    module = f'{cfg.lib_name}.{exp}' if exp else None
    lesson = section(src)[0] == 'Lessons'
    procs = [lesson_code] if lesson else []
    for p in FilterDefaults().procs():
        if lesson and p is add_show_docs: continue       # a lesson shows its code; API blocks only where it calls show_doc
        procs.append(_show_doc_proc(module) if p is exec_show_docs else p)
        if p is add_show_docs: procs.append(add_const_docs)
    NBProcessor(nb=nb, procs=procs, rm_directives='quarto', process=True)
    fm = nb.frontmatter_
    rel = src.relative_to(NBS).as_posix()
    repo = cfg.git_url.rstrip('/').split('github.com/')[-1]
    out = Path(rel).parent / fm.get('output-file', src.stem + '.html')
    # the buttons open a notebook that runs on Kaggle and Colab from its first cell: this one if it starts with the
    # install cell, the first tutorial from the home page, none elsewhere
    opens = (rel if has_install_cell(json.loads(src.read_text())) else
             HOME_OPENS if rel == 'index.ipynb' and (NBS / HOME_OPENS).exists() else '')
    meta = dict(title=fm.get('title', src.stem), description=fm.get('description', ''), module=module, lesson=lesson,
                page=out.with_suffix('.ipynb').as_posix(), source=rel, opens=opens,
                colab=f'https://colab.research.google.com/github/{repo}/blob/{cfg.branch}/{NBS.name}/{opens}',
                kaggle=f'https://kaggle.com/kernels/welcome?src=https://github.com/{repo}/blob/{cfg.branch}/{NBS.name}/{opens}')
    _for_renderer(nb, meta)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_nb(nb, dst.with_suffix('.tmp'))
    dst.with_suffix('.tmp').replace(dst)
    return rel, time.time() - t0, executed

def process_batch(jobs):
    "`process_one` for each (src, dst) of `jobs` in turn, in this process: [(notebook, seconds, executed, error or '')]"
    out = []
    for src, dst in jobs:
        try: out.append((*process_one(src, dst), ''))
        except Exception as e: out.append((Path(src).relative_to(NBS).as_posix(), 0.0, False, f'{type(e).__name__}: {e}'))
    return out

def process_all(nbs, workers):
    "Processed copies of `nbs` (from the cache where their inputs are unchanged), each with its metadata"
    import nbdev
    common = [Path(__file__).read_bytes(), (HERE / 'install_cell.py').read_bytes(), nbdev.__version__, (ROOT / 'pyproject.toml').read_bytes()]
    modidx = ROOT / 'tpututor' / '_modidx.py'
    if modidx.exists(): common.append(modidx.read_bytes())   # API links and the `show_doc` targets
    cache = CACHE / 'proc'
    cache.mkdir(parents=True, exist_ok=True)
    jobs = {nb: cache / f"{'~'.join(nb.relative_to(NBS).with_suffix('').parts)}-{sha(*common, nb.read_bytes())}.ipynb" for nb in nbs}
    todo = [(nb, dst) for nb, dst in jobs.items() if not dst.exists()]
    if todo:
        # a notebook run for its widget state runs alone in a fresh process (it may import any framework); the others
        # are shared out in a few batches, each processed in one process: 95 notebooks from cold took 54 s in 95
        # processes, most of it starting them
        from fastcore.nbio import read_nb
        runs = [[job] for job in todo if _missing_widget_state(read_nb(job[0]))]
        rest = [job for job in todo if [job] not in runs]
        n = max(1, min(len(rest), 4 * workers))
        batches = runs + [rest[i::n] for i in range(n) if rest[i::n]]
        failed = []
        ctx = get_context('spawn')
        with ProcessPoolExecutor(max_workers=max(1, min(workers, len(batches))), mp_context=ctx,
                                 max_tasks_per_child=1) as ex:
            futs = {ex.submit(process_batch, [(str(nb), str(dst)) for nb, dst in b]): b for b in batches}
            for fut, b in futs.items():
                try: done = fut.result()
                except Exception as e:   # the process itself died: every notebook it had not finished
                    failed += [f'{nb.relative_to(ROOT)}: {type(e).__name__}: {e}' for nb, dst in b if not dst.exists()]
                    continue
                for rel, dt, executed, err in done:
                    if err: failed.append(f'nbs/{rel}: {err}')
                    else: log(f'processed {rel} in {dt:.1f}s' + (' (executed for its widget state)' if executed else ''))
        if failed: sys.exit('docs: could not process\n  ' + '\n  '.join(failed))
    live, week = set(jobs.values()), time.time() - 7 * 86400
    for old in cache.glob('*.ipynb'):   # other checkouts share the cache: what none has used for a week goes
        if old in live: os.utime(old)
        elif old.stat().st_mtime < week: old.unlink(missing_ok=True)
    return {nb: (dst, json.loads(dst.read_text())['metadata']['tpututor_docs']) for nb, dst in jobs.items()}


# ---------------------------------------------------------------- JavaScript from the npm registry
def vendor():
    "Unpack the pinned npm packages into _docs/vendor/assets (once), checking their checksums"
    out = CACHE / 'vendor'
    stamp = out / f'.ok-{sha(json.dumps(NPM, sort_keys=True))}'
    if stamp.exists(): return out / 'assets'
    shutil.rmtree(out, ignore_errors=True)
    (out / 'assets').mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in NPM.items():
            r = subprocess.run(['npm', 'pack', f'{name}@{spec["version"]}', '--json', '--pack-destination', tmp],
                               capture_output=True, text=True, cwd=tmp)
            if r.returncode: sys.exit(f'docs: npm pack {name}@{spec["version"]} failed:\n{r.stderr}')
            info = json.loads(r.stdout)[0]
            if info['integrity'] != spec['integrity']:
                sys.exit(f'docs: {name}@{spec["version"]} has checksum {info["integrity"]}, expected {spec["integrity"]}')
            n = 0
            with tarfile.open(Path(tmp) / info['filename']) as tar:
                for m in tar.getmembers():
                    path = m.name.split('/', 1)[1]
                    for pat, dest in spec['files']:
                        if m.isfile() and re.fullmatch(pat, path):
                            sub = re.sub(r'^(dist|es5)/', '', path)
                            target = out / 'assets' / dest / sub
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(tar.extractfile(m).read()); n += 1
                            break
            log(f'vendored {name}@{spec["version"]}: {n} files')
    stamp.touch()
    return out / 'assets'


# ---------------------------------------------------------------- site sources and MkDocs
def _cells(row): return [c.strip() for c in re.split(r'(?<!\\)\|', row.strip().removeprefix('|').removesuffix('|'))]   # `\|` stays in its cell

def _tables(md, fix):
    "`md` with `fix(header, rows)` applied to each of its tables (`rows`: lists of cells; `fix` returns the new rows)"
    lines, out, i = md.splitlines(), [], 0
    while i < len(lines):
        if lines[i].startswith('|') and i + 1 < len(lines) and re.match(r'^\|[\s:|-]+\|$', lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].startswith('|'): j += 1
            head = _cells(lines[i])
            out += [lines[i], lines[i + 1]] + ['| ' + ' | '.join(r) + ' |' for r in fix(head, [_cells(l) for l in lines[i + 2:j]])]
            i = j
        else: out.append(lines[i]); i += 1
    return '\n'.join(out)

def _commands_whole(head, rows):
    "A `reproduce` cell of several commands in one code span (`a; b`) becomes one span per command, a line each"
    if 'reproduce' not in head: return rows
    k = head.index('reproduce')
    for r in rows:
        if k < len(r): r[k] = re.sub(r'`([^`]*;[^`]*)`', lambda m: '<br>'.join(f'`{c.strip()}`' for c in m.group(1).split(';') if c.strip()), r[k])
    return rows

def _every_tutorial(head, rows):
    "The tutorials table names every notebook in nbs/tutorials/: `not recorded` where the benchmark has no run of it"
    if not head or head[0] != 'tutorial': return rows
    have = ' '.join(r[0] for r in rows)
    return rows + [[f'tutorials/{nb.name}', 'not recorded'] + ['-'] * (len(head) - 2)
                   for nb in sorted((NBS / 'tutorials').glob('*.ipynb')) if f'tutorials/{nb.name}' not in have]

@functools.cache
def _load(rel:str):
    "The Python file `rel` of this repository as a module (bench/common.py, bench/run.py, tools/compat/run.py)"
    import importlib.util
    if str(ROOT / 'bench') not in sys.path: sys.path.insert(0, str(ROOT / 'bench'))   # bench/run.py imports common
    spec = importlib.util.spec_from_file_location(rel.replace('/', '_').removesuffix('.py'), ROOT / rel)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

RECORD_CALL = re.compile(r"recorded\(\s*'([^']+)'(?:\s*,\s*run\s*=\s*'([^']+)')?")

def with_record_notes(page:Path):
    """The cells of notebook `page` that print a figure from a record (bench/common.py's `SHOWS`) say, above their saved
    outputs, what `recorded` says today when the record was measured on code that has changed since: the line is made
    now, from the record and today's code, whatever the outputs were saved with"""
    from tpututor.records import without_notes, record_notes, record_entry
    nb, changed, shows = json.loads(page.read_text()), False, _load('bench/common.py').SHOWS
    for c in nb['cells']:
        src = ''.join(c['source']) if isinstance(c['source'], list) else c['source']
        if c['cell_type'] != 'code' or not src.startswith(shows): continue
        notes = []
        for file, run in RECORD_CALL.findall(src):
            notes += [n for n in record_notes(record_entry(file, run or None)) if n not in notes]
        outs = []
        for o in c.get('outputs', []):
            if o.get('output_type') == 'stream':
                kept = without_notes(''.join(o['text']) if isinstance(o['text'], list) else o['text'])
                if not kept: continue
                o = {**o, 'text': kept}
            outs.append(o)
        if notes: outs.insert(0, {'output_type': 'stream', 'name': 'stdout', 'text': ''.join(n + '\n' for n in notes)})
        if outs != c.get('outputs', []): c['outputs'], changed = outs, True
    if changed: page.write_text(json.dumps(nb))

def _noted(md:str, note:str)->str:
    "A record's page with `note` under its heading"
    if not note: return md
    head, _, rest = md.partition('\n')
    return f'{head}\n\n{note}\n{rest}'

def performance_page():
    res = sorted((ROOT / 'bench' / 'results').glob('*.md'), key=lambda p: (p.stem != 'summary', p.stem))   # the summary first
    parts = ['# Performance\n',
             'Each benchmark in `bench/` measures the ways of doing one job side by side in one run and writes a '
             'table here; `./run.sh bench` measures them all again on your machine and prints the summary table '
             '(`./run.sh bench NAME` runs one). Figures are from the machine named under each table.\n']
    c = _load('bench/common.py')
    found = c.stale()   # once for every page: it hashes the code of every record
    note = lambda name: c.stale_note(name, found=found)   # a record measured with older code says so above its tables
    # notes made now
    text = lambda p: _load('bench/run.py').summary(found, every=True) if p.stem == 'summary' else p.read_text()
    parts += [_tables(_tables(_noted(text(p).strip(), note(p.name)), _commands_whole), _every_tutorial) + '\n'
              for p in res] or ['No benchmark has written results yet.\n']
    return '\n'.join(parts)

def install_page():
    """tools/docs/install.md, the Tested-on table (tools/tested_on.py) and the latest compat run of each image
    (tools/compat/results-kaggle.md from `./run.sh compat`, results-colab.md from `./run.sh compat colab`)"""
    sys.path.insert(0, str(ROOT / 'tools'))
    from tested_on import tested_on
    parts = [(HERE / 'install.md').read_text().strip(),
             '## Tested on\n\nWhere this code has run, from the records the benchmarks and the compat runs write (a row '
             'appears when a record does):\n\n' + tested_on().strip()]
    now = _load('tools/compat/run.py').code_hash()   # the package code's hash, as the compat runs record it
    for image, title, cmd in (('kaggle', "Kaggle's TPU image versions", './run.sh compat'),
                              ('colab', "Colab's TPU runtime versions", './run.sh compat colab')):
        res = ROOT / 'tools' / 'compat' / f'results-{image}.md'
        if not res.exists():
            parts.append(f'## Tested against {title}\n\n`{cmd}` has not written results yet.'); continue
        rec = json.loads(res.with_suffix('.json').read_text())
        old = [r['what'] for r in rec['rows'] if r.get('code', rec['code']) != now]   # the code each row ran on
        note = ('' if not old else
                f"**Run on package code that has changed since** (code `{rec['code']}` then, `{now}` now): `{cmd}` "
                "runs it again." if len(old) == len(rec['rows']) else
                f"**{len(old)} of {len(rec['rows'])} rows ran on package code that has changed since** (`{now}` now; "
                f"code `{rec['code']}` is this run's, a row on other code names it): `{cmd}` runs them again.")
        parts.append(_noted(res.read_text().strip(), note))
    return '\n\n'.join(parts) + '\n'

def layout_sources(src, done):
    "The page 'How the code is laid out' (layout.md) and its picture (layout.svg) in `src`, from tpututor's source; the rule breaks found"
    import layout
    mods, rules = layout.read_package(ROOT / 'tpututor'), layout.load_rules()
    path_of = {m.name: p for p, m in mods.items()}
    pages = {path_of[meta['module'].removesuffix('.__init__')]: meta['page'] for _, meta in done.values()
             if meta.get('module') and meta['module'].removesuffix('.__init__') in path_of}
    layout.draw(mods, rules, src / 'layout.svg')
    (src / 'layout.md').write_text(layout.layout_page(mods, rules, pages, 'layout.svg'))
    return layout.check(mods, rules)

def nav_label(meta, section):
    t = meta['title'].replace('`', '')
    if section == 'Start': return 'Overview'
    if section == 'Library' and meta.get('module'): return f"{meta['module'].removesuffix('.__init__').split('.')[-1]}: {t}"
    return t

def navigation(done):
    """The site's navigation: Start, Lessons, Tutorials, the Library (top-level notebooks, then a part per folder, a
    folder inside it a group of its own), Performance"""
    nav, parts, seen = {'Start': [], 'Lessons': [], 'Tutorials': [], 'Library': []}, {}, {}
    for nb, (proc, meta) in done.items():
        if meta['page'] in seen: sys.exit(f"docs: {seen[meta['page']].relative_to(ROOT)} and {nb.relative_to(ROOT)} would both be "
                                          f"{meta['page']}: rename one (a page is named after its notebook without the number)")
        seen[meta['page']] = nb
        sec, folder = section(nb)
        entry, rel = {nav_label(meta, sec): meta['page']}, nb.relative_to(NBS).parts
        if folder and len(rel) > 2:   # a folder inside a part of the Library (backends/keras/): its own group there
            group = parts.setdefault(folder, [])
            box = next((d for d in group if list(d) == [rel[1]] and isinstance(d[rel[1]], list)), None)
            if box is None: box = {rel[1]: []}; group.append(box)
            box[rel[1]].append(entry)
        else: (parts.setdefault(folder, []) if folder else nav[sec]).append(entry)
    nav['Start'] += [{'Install on Kaggle, Colab and elsewhere': 'install.md'}, {'How the code is laid out': 'layout.md'},
                     {'Contributing: tests and their budget': 'contributing.md'}]
    order = sorted(parts, key=lambda f: (LIBRARY_FOLDERS.index(f) if f in LIBRARY_FOLDERS else len(LIBRARY_FOLDERS), f))
    nav['Library'] += [{f.replace('_', ' ').capitalize(): parts[f]} for f in order]
    return [{k: v} for k, v in nav.items() if v] + [{'Performance': 'performance.md'}]

def with_tested_on(page:Path):
    "The home page's `<!-- tested-on -->` line replaced by the Tested-on table, as the README has it (made now, from the records)"
    sys.path.insert(0, str(ROOT / 'tools'))
    from tested_on import MARKER, tested_on
    nb = json.loads(page.read_text())
    for c in nb['cells']:
        s = ''.join(c['source']) if isinstance(c['source'], list) else c['source']
        if c['cell_type'] == 'markdown' and MARKER in s: c['source'] = s.replace(MARKER, tested_on().strip())
    page.write_text(json.dumps(nb))

def write_sources(done, assets):
    "The MkDocs sources in _docs/src and its config _docs/mkdocs.yml"
    import yaml
    src = WORK / 'src'
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    shutil.copytree(assets, src / 'assets')
    for f in (HERE / 'assets').iterdir(): shutil.copy(f, src / 'assets' / f.name)
    for nb, (proc, meta) in done.items():
        (src / meta['page']).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(proc, src / meta['page'])
        if meta['page'].endswith('.ipynb'): with_record_notes(src / meta['page'])
    with_tested_on(src / done[NBS / 'index.ipynb'][1]['page']) if NBS / 'index.ipynb' in done else None
    (src / 'performance.md').write_text(performance_page())
    (src / 'install.md').write_text(install_page())
    shutil.copy(HERE / 'contributing.md', src / 'contributing.md')
    breaks = layout_sources(src, done)
    if breaks: log(f'the code breaks {len(breaks)} of its layout rules (tools/docs/layout.toml), listed on the layout page:\n  '
                   + '\n  '.join(breaks))
    cfg = yaml.safe_load((HERE / 'mkdocs.yml').read_text())
    cfg['nav'] = navigation(done)
    cfg.update(docs_dir=str(src), site_dir=str(SITE), hooks=[str(HERE / 'hooks.py')])
    for p in cfg['plugins']:
        if isinstance(p, dict) and 'mkdocs-jupyter' in p:
            p['mkdocs-jupyter']['cache_dir'] = str(CACHE / 'nbconvert-cache')
    (WORK / 'mkdocs.yml').write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return WORK / 'mkdocs.yml'

def build(workers=2):
    t0 = time.time()
    nbs = notebooks()
    if not nbs: sys.exit(f'docs: no notebooks in {NBS}')
    assets = vendor()
    done = process_all(nbs, workers)
    t1 = time.time()
    cfg = write_sources(done, assets)
    r = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '--strict', '-q', '-f', str(cfg)], cwd=ROOT,
                       env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'})   # mkdocs-material's end-of-life banner
    if r.returncode: sys.exit(f'docs: mkdocs build failed ({r.returncode})')
    log(f'built {len(nbs)} notebooks into {SITE.relative_to(ROOT)}/ in {time.time() - t0:.0f}s '
        f'(notebooks {t1 - t0:.0f}s, MkDocs {time.time() - t1:.0f}s)')

if __name__ == '__main__':
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--workers', type=int, default=min(2, os.cpu_count() or 1), help='notebooks processed at once')
    ap.add_argument('--force', action='store_true', help='process every notebook again, ignoring the cache')
    a = ap.parse_args()
    if a.force:
        shutil.rmtree(CACHE / 'proc', ignore_errors=True); shutil.rmtree(CACHE / 'nbconvert-cache', ignore_errors=True)
    build(a.workers)
