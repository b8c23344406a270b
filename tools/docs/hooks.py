"""MkDocs hooks for the docs site (named in the config that tools/docs/build.py writes).

- Everything a page loads comes from the site: the `TPUTUTOR_ASSETS/` placeholder and the CDN address that
  nbconvert writes for the ipywidgets HTML manager become paths relative to the page.
- The style sheets nbconvert writes into every notebook page (JupyterLab's, 574 KB, the same on every page) are
  written once under assets/ and linked: a reader's browser loads and parses them once for the whole site.
- Links that nbdev writes to the published site (`https://tpututor.github.io/tpututor/data.html#encode`)
  become relative links, so the site works wherever it is served.
- Links nbdev writes to private functions (`tf.html#_fit_loop`) become plain code: those have no API entry.
- A lesson's anchors for the names its code defines (build.py's `lesson_code`) give way to a heading of the same id.
- Notebook pages get heading ids the way Quarto/pandoc makes them (`data.html#rotten_tomatoes`,
  `bf16.html#layout.bias`: the anchors nbdev's API links use) and a table of contents built from the
  headings actually on the page.
"""
import hashlib, html as _html
import re
from pathlib import Path
from mkdocs.structure.toc import get_toc
from nbdev.config import nbpath2html

_re_heading = re.compile(r'<h([1-6])\b([^>]*)>(.*?)</h\1>', re.S)
_re_tags = re.compile(r'<[^>]+>')
_re_widget_cdn = re.compile(r'https://unpkg\.com/[^\'"]*\.js')
# a relative link to another notebook, as written in the notebooks (`../lessons/01_bf16.ipynb#part`,
# `tutorials/05_llm_classifier.ipynb`), and the page it became (`../lessons/bf16.html#part`,
# `tutorials/llm_classifier.html`): nbdev's name for the page, the notebook's without its number (see build.py)
_re_nb_link = re.compile(r'href="((?:\.\.?/)*(?:[\w-]+/)*)([\w.-]+)\.ipynb(#[^"]*)?"')
_re_mermaid = re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid.*?</script>', re.S)

def _rel_root(page):
    return '../' * page.url.count('/')

def slug(text):
    "pandoc's auto identifier: lower case, keep letters, digits, `_`, `-` and `.`, spaces to `-`"
    s = re.sub(r'[^\w\s.-]', '', text.lower(), flags=re.U)
    s = re.sub(r'\s+', '-', s.strip())
    s = re.sub(r'^[^a-z]+', '', s)
    return s or 'section'

def _headings(content, max_level):
    "Give every heading a pandoc-style id; return the new content and the TOC tokens"
    seen, flat = {}, []
    def sub(m):
        level, attrs, inner = int(m.group(1)), m.group(2), m.group(3)
        text = _html.unescape(_re_tags.sub('', re.sub(r'<a class="(anchor-link|headerlink)".*?</a>', '', inner, flags=re.S))).strip()
        base = slug(text)
        n = seen.get(base, 0); seen[base] = n + 1
        hid = base if n == 0 else f'{base}-{n}'
        attrs = re.sub(r'\s+id="[^"]*"', '', attrs)
        # nbconvert's anchor link, as mkdocs-material's own (styled alike, and left out of the search index)
        inner = re.sub(r'<a class="anchor-link" href="#[^"]*"', f'<a class="headerlink" href="#{hid}"', inner)
        if level <= max_level: flat.append(dict(level=level, id=hid, name=_html.escape(text), children=[]))
        return f'<h{level}{attrs} id="{hid}">{inner}</h{level}>'
    content = _re_heading.sub(sub, content)
    root, stack = [], []
    for t in flat:
        while stack and stack[-1]['level'] >= t['level']: stack.pop()
        (stack[-1]['children'] if stack else root).append(t)
        stack.append(t)
    return content, root

# a link nbdev made to a private function (`_epoch`): it has no API entry to land on, so it stays code, unlinked
_re_private_link = re.compile(r'<a href="[^"#]*#_[^"]*">(<code>[^<]*</code>)</a>')

_re_def = re.compile(r'<span class="tt-def" id="([^"]+)"></span>')
_re_id = re.compile(r'<h[1-6][^>]*\sid="([^"]+)"')

_re_style = re.compile(r'<style type="text/css">(.*?)</style>', re.S)

def _shared_styles(html, rel, site_dir):
    "Each large inline style sheet of `html` written once to assets/nb-HASH.css under `site_dir` and linked instead"
    def sub(m):
        if len(m[1]) < 2000: return m[0]   # a small one stays where it is
        css = m[1].strip() + '\n'
        name = f'assets/nb-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css'
        out = Path(site_dir) / name
        if not out.exists(): out.parent.mkdir(parents=True, exist_ok=True); out.write_text(css, encoding='utf-8')
        return f'<link rel="stylesheet" href="{rel}{name}">'
    return _re_style.sub(sub, html)

def on_page_content(html, page, config, files):
    rel = _rel_root(page)
    html = _shared_styles(html, rel, config['site_dir'])
    html = _re_private_link.sub(r'\1', html)
    html = html.replace('TPUTUTOR_ASSETS/', f'{rel}assets/')
    html = _re_widget_cdn.sub(f'{rel}assets/widgets/embed.js', html)
    html = _re_mermaid.sub('', html)          # nbconvert's loader for mermaid diagrams, from a CDN: none here
    html = _re_nb_link.sub(lambda m: f'href="{m[1]}{nbpath2html(m[2] + ".ipynb").name}{m[3] or ""}"', html)
    site = (config.get('site_url') or '').rstrip('/') + '/'
    if site != '/':
        html = html.replace(f'href="{site}', f'href="{rel}')
        html = html.replace(f'href="{site.replace("https://", "http://")}', f'href="{rel}')
    if page.file.src_path.endswith('.ipynb'):
        html, tokens = _headings(html, 3)
        page.toc = get_toc(tokens)
        ids = set(_re_id.findall(html))   # a lesson's anchor for a name its code defines, where a heading has that id: one id
        html = _re_def.sub(lambda m: '' if m[1] in ids else m[0], html)
    return html
