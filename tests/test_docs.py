"""The docs site, as a reader gets it: built from the notebooks, served on 127.0.0.1, every page opened in
headless Chromium (Debian's `chromium`, driven over the Chrome DevTools Protocol with `websocket-client`).

A page fails on: not loading, a console error or uncaught exception, a failed or 4xx/5xx request, a request to
any host but 127.0.0.1, a name in its module's `__all__` without an API entry, math left unrendered, and,
for the bfloat16 lesson, an explorer widget that renders blank. Screenshots of the home page and the widget
go to tests/artifacts/.

The site is built by the test (`tools/docs/build.py`, cached by content, about 30 s from cold) unless
TPUTUTOR_DOCS_PREBUILT=1 says docs/ is already built. Chromium is installed with apt-get when
/usr/bin/chromium is missing (as root); without it, or without npm for the site's JavaScript, the tests skip
and say why (and fail under CI=true). They take about a minute, well inside the CI budget, so they run by default.
"""
import ast, base64, functools, http.server, json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, unquote
import pytest
from conftest import ROOT, clean_env

SITE = ROOT / 'docs'
ART = ROOT / 'tests' / 'artifacts'
CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run',
         '--disable-component-update', '--disable-sync', '--disable-extensions', '--disable-default-apps',
         '--no-default-browser-check', '--disable-dev-shm-usage', '--hide-scrollbars', '--mute-audio',
         '--window-size=1280,900', '--remote-debugging-port=0', '--remote-debugging-address=127.0.0.1']


# ---------------------------------------------------------------- fixtures: site, server, browser
def _ensure_chromium():
    if Path(CHROMIUM).exists(): return None
    if shutil.which('apt-get') is None or os.geteuid() != 0: return f'{CHROMIUM} is missing: apt-get install -y chromium'
    env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
    for cmd in (['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'chromium']):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode: return f'{" ".join(cmd)} failed:\n{r.stderr[-2000:]}'
    return None if Path(CHROMIUM).exists() else f'{CHROMIUM} still missing after apt-get install chromium'

@pytest.fixture(scope='module')
def site():
    if os.environ.get('TPUTUTOR_DOCS_PREBUILT') != '1':
        if shutil.which('npm') is None: (pytest.fail if os.environ.get('CI') else pytest.skip)('npm is needed to fetch the site\'s JavaScript (ipywidgets, MathJax)')
        t0 = time.time()
        r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'docs' / 'build.py')], cwd=ROOT, capture_output=True,
                           text=True, env=clean_env())
        print(r.stdout[-3000:], f'docs build: {time.time() - t0:.0f}s')
        assert r.returncode == 0, f'docs build failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}'
    assert (SITE / 'index.html').exists(), 'docs/ has no index.html: run ./run.sh docs'
    return SITE

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass

@pytest.fixture(scope='module')
def server(site):
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{httpd.server_address[1]}/'
    httpd.shutdown(); httpd.server_close()

class Browser:
    "Headless Chromium on a fresh profile, one tab, spoken to over the DevTools websocket"
    def __init__(self):
        import websocket
        self.profile = tempfile.mkdtemp(prefix='tpututor-chromium-')
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f'--user-data-dir={self.profile}', 'about:blank'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file, t0 = Path(self.profile) / 'DevToolsActivePort', time.time()
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.time() - t0 > 30:
                self.close(); raise RuntimeError('chromium did not start its DevTools endpoint')
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        req = urllib.request.Request(f'http://127.0.0.1:{port}/json/new?about:blank', method='PUT')
        target = json.load(urllib.request.urlopen(req, timeout=10))
        self.ws = websocket.create_connection(target['webSocketDebuggerUrl'], timeout=60, suppress_origin=True)
        self.n, self.events = 0, []
        for domain in ('Page', 'Runtime', 'Network', 'Log'): self.send(f'{domain}.enable')

    def _recv(self):
        msg = json.loads(self.ws.recv())
        if 'method' in msg: self.events.append(msg)
        return msg

    def send(self, method, **params):
        self.n += 1; n = self.n
        self.ws.send(json.dumps(dict(id=n, method=method, params=params)))
        while True:
            msg = self._recv()
            if msg.get('id') == n:
                if 'error' in msg: raise RuntimeError(f'{method}: {msg["error"]}')
                return msg.get('result', {})

    def js(self, expr):
        "Value of JavaScript expression `expr` (awaited if it is a promise)"
        r = self.send('Runtime.evaluate', expression=expr, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r: raise RuntimeError(f'{expr[:80]}: {r["exceptionDetails"]}')
        return r['result'].get('value')

    def wait_for(self, expr, timeout=20):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.js(expr): return True
            time.sleep(0.2)
        return False

    def open(self, url, settle=1.0, timeout=30):
        "Load `url`; wait for the load event and then until no request has started for `settle` seconds"
        self.events = []
        self.send('Page.navigate', url=url)
        t0 = time.time()
        while not any(e['method'] == 'Page.loadEventFired' for e in self.events):
            if time.time() - t0 > timeout: raise TimeoutError(f'{url} did not load in {timeout}s')
            self._recv()
        last = time.time()
        self.ws.settimeout(0.2)
        try:
            while time.time() - last < settle and time.time() - t0 < timeout:
                try:
                    if self._recv().get('method') == 'Network.requestWillBeSent': last = time.time()
                except Exception: pass   # websocket timeout: nothing new
        finally: self.ws.settimeout(60)
        return self.events

    def problems(self, events):
        "Console errors, exceptions, failed or foreign requests among `events`"
        out, urls = [], {}
        for e in events:
            m, p = e['method'], e['params']
            if m == 'Network.requestWillBeSent':
                url = p['request']['url']; urls[p['requestId']] = url
                u = urlparse(url)
                if u.scheme not in ('data', 'blob', 'about') and u.hostname != '127.0.0.1': out.append(f'request to {url}')
            elif m == 'Network.responseReceived' and p['response']['status'] >= 400:
                out.append(f'HTTP {p["response"]["status"]} for {p["response"]["url"]}')
            elif m == 'Network.loadingFailed' and not p.get('canceled'):
                out.append(f'failed to load {urls.get(p["requestId"], p["requestId"])}: {p.get("errorText")}')
            elif m == 'Runtime.exceptionThrown':
                d = p['exceptionDetails']
                out.append(f'uncaught: {d.get("exception", {}).get("description") or d.get("text")}')
            elif m == 'Runtime.consoleAPICalled' and p['type'] in ('error', 'assert'):
                out.append('console.error: ' + ' '.join(str(a.get('value', a.get('description', ''))) for a in p['args']))
            elif m == 'Log.entryAdded' and p['entry']['level'] == 'error':
                out.append(f'log error: {p["entry"]["text"]} {p["entry"].get("url", "")}')
        return out

    def screenshot(self, path, selector=None):
        clip = None
        if selector:
            r = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
                        f" const b = e.getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; }})()")
            sx, sy, pad = self.js('window.scrollX'), self.js('window.scrollY'), 16   # clip is in page coordinates
            clip = dict(x=max(r[0] + sx - pad, 0), y=max(r[1] + sy - pad, 0), width=r[2] + 2 * pad, height=r[3] + 2 * pad, scale=1)
        data = self.send('Page.captureScreenshot', format='png', **({'clip': clip} if clip else {}))['data']
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        try: self.ws.close()
        except Exception: pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try: self.proc.wait(10)
            except subprocess.TimeoutExpired: self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

@pytest.fixture(scope='module')
def browser():
    why = _ensure_chromium()
    if why and os.environ.get('CI'): pytest.fail(why)      # CI must not pass by skipping the browser
    if why: pytest.skip(why)
    pytest.importorskip('websocket', reason='websocket-client is needed to drive Chromium')
    b = Browser()
    yield b
    b.close()


# ---------------------------------------------------------------- what the site must hold
def pages():
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob('*.html')
                  if p.name != '404.html' and not p.relative_to(SITE).parts[0] in ('assets', 'search'))

def module_pages():
    "{page: {module: names in its `__all__`}} from the package source and nbdev's index of its symbols"
    spec = {}
    d = ast.literal_eval((ROOT / 'tpututor' / '_modidx.py').read_text().split('d = ', 1)[1])
    for mod, syms in d['syms'].items():
        py = ROOT / (mod.replace('.', '/') + '.py')
        if not syms or not py.exists(): continue
        names = next((ast.literal_eval(s.value) for s in ast.parse(py.read_text()).body if isinstance(s, ast.Assign)
                      and any(getattr(t, 'id', None) == '__all__' for t in s.targets)), [])
        page = next(iter(syms.values()))[0].split('#')[0]
        spec.setdefault(page, {})[mod] = names
    return spec

def test_links_between_pages_resolve(site):
    "Every relative link of every page (notebooks link each other as NN_name.ipynb) points at a file of the site, and its #anchor at an id on that page"
    broken, ids = [], {}
    def has_id(path, anchor):
        if path not in ids: ids[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(errors='replace')))
        return anchor in ids[path]
    for page in pages():
        text = (SITE / page).read_text(errors='replace')
        for href, anchor in re.findall(r'href="([^"#]*)(?:#([^"]*))?"', text):
            if re.match(r'^[a-z][a-z0-9+.-]*:', href) or href.startswith('/'): continue   # other hosts, mailto:, absolute
            target = ((SITE / page).parent / href).resolve() if href else (SITE / page)
            if not target.exists(): broken.append(f'{page} -> {href}')
            elif anchor and target.suffix == '.html' and not has_id(target, unquote(anchor)): broken.append(f'{page} -> {href}#{anchor}')
    assert not broken, f'{len(broken)} broken links: {broken[:20]}'

def test_nav_shows_the_project(site, server, browser):
    problems = browser.problems(browser.open(server + 'index.html'))
    assert not problems, problems
    nav = browser.js("Array.from(document.querySelectorAll('.md-nav--primary > .md-nav__list > .md-nav__item'))"
                     ".map(li => li.querySelector('label, a').innerText.trim())")
    want = ['Start', 'Lessons', 'Library'] + (['Tutorials'] if list((ROOT / 'nbs' / 'tutorials').glob('*.ipynb')) else []) + ['Performance']
    assert nav == want, f'top-level navigation {nav}, expected {want}'
    links = browser.js("Array.from(document.querySelectorAll('.md-nav--primary a.md-nav__link')).map(a => a.getAttribute('href'))")
    for nb in (ROOT / 'nbs').glob('[0-9]*.ipynb'):
        assert any(l and l.endswith(re.sub(r'^\d+[a-z]?_', '', nb.stem) + '.html') for l in links), f'{nb.name} is not in the navigation'
    assert 'Open in Colab' in browser.js('document.body.innerText')
    browser.screenshot(ART / 'docs_home.png')
    # search works offline: the index and the worker come from the site
    browser.js("document.querySelector('.md-search__input').focus()")
    browser.send('Input.insertText', text='bfloat16')
    assert browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0", 20), 'search found nothing for "bfloat16"'
    browser.screenshot(ART / 'docs_search.png')
    assert not browser.problems(browser.events), browser.problems(browser.events)

def test_every_page_loads_clean(site, server, browser):
    ps = pages()
    assert len(ps) >= 5, ps
    bad = {}
    for p in ps:
        problems = browser.problems(browser.open(server + p))
        title = browser.js('document.querySelector("article h1") && document.querySelector("article h1").innerText')
        if not title: problems.append('no h1 title in the article')
        if p.endswith('.html') and p not in ('performance.html', 'install.html'):
            for cls, what, url in (('tt-colab', 'Colab', 'colab.research.google.com/github/'), ('tt-kaggle', 'Kaggle', 'kaggle.com/kernels/welcome?src=https://github.com/')):
                badge = browser.js(f"Array.from(document.querySelectorAll('a.{cls}')).map(a => a.href)")
                if len(badge) != 1 or url not in badge[0]: problems.append(f'not one Open in {what} badge: {badge}'); continue
                same = browser.js(f"Array.from(document.querySelectorAll('article a')).filter(a => a.href == {json.dumps(badge[0])}).length")
                if same != 1: problems.append(f'the page links its own notebook on {what} {same} times (the notebook\'s own button left in?)')
        clipped = browser.js("""Array.from(document.querySelectorAll('article .jp-OutputArea-output, article table')).filter(e =>
            e.scrollWidth > e.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX)).length""")
        if clipped: problems.append(f'{clipped} output(s) or table(s) wider than the page that do not scroll (clipped at 1280 px)')
        if problems: bad[p] = problems
    assert not bad, json.dumps(bad, indent=1)

def test_install_page(site, server, browser):
    "The install page carries the Tested-on table and the latest compat run of each image: its versions and a result per notebook"
    assert not browser.problems(browser.open(server + 'install.html'))
    text = browser.js('document.body.innerText')
    sys.path.insert(0, str(ROOT / 'tools'))
    from tested_on import records, tested_on
    assert 'Tested on' in text, 'the Tested-on section is not on the page'
    for row in tested_on().strip().splitlines()[2:]:   # each row as the browser reads it: platform, machine, then the rest
        cells = [c.strip().replace('`', '') for c in row.strip('|').split('|')]
        assert '\t'.join(cells[:2]) in text and cells[3] in text, f'{row} is missing from the Tested-on table'
    if not any(r['platform'] == 'TPU' for r in records()): assert 'TPU\tnot yet' in text, 'no TPU record, yet the table does not say "not yet"'
    for image, title in (('kaggle', "Kaggle's TPU image versions"), ('colab', "Colab's TPU runtime versions")):
        res = json.loads((ROOT / 'tools' / 'compat' / f'results-{image}.json').read_text())
        assert f"Tested against {title} ({res['date']})" in text, text[:2000]
        assert f"torch_xla\t{res['versions']['torch_xla']}" in text and f"Python {res['python']}" in text, f'the {image} versions are not on the page'
        for r in res['rows']: assert r['what'] in text, f"{image}: {r['what']} is missing from the install page"

def test_api_entries(site, server, browser):
    "Every name in each module's `__all__` has an entry (a heading with that name and nbdev's anchor) on its page"
    missing = {}
    for page, mods in module_pages().items():
        assert (SITE / page).exists(), f'{page} (named in tpututor/_modidx.py) was not built'
        browser.open(server + page, settle=0.3)
        heads = browser.js("Object.fromEntries(Array.from(document.querySelectorAll('article h2, article h3, article h4'))"
                           ".map(h => [h.id, h.innerText.replace(/¶$/, '').trim()]))")
        for mod, names in mods.items():
            for n in names:
                if not any(text == n and hid.startswith(n.lower()) for hid, text in heads.items()):
                    missing.setdefault(page, []).append(f'{mod}.{n}')
    assert not missing, f'API entries missing: {missing}'

def test_math_and_widget(site, server, browser):
    "The bfloat16 lesson: MathJax renders its formulas and the explorer widget renders from its stored state"
    problems = browser.problems(browser.open(server + 'bf16.html'))
    assert browser.wait_for("document.querySelectorAll('mjx-container').length > 0", 20), 'no formula rendered by MathJax'
    assert browser.wait_for("document.querySelector('.widget-vbox .widget-html-content table') !== null", 20), \
        'the explorer widget did not render (no widget table)'
    w = browser.js("""(() => { const v = document.querySelector('.widget-vbox'); const b = v.getBoundingClientRect();
        return {w: b.width, h: b.height, input: v.querySelector('input').value,
                buttons: Array.from(v.querySelectorAll('button')).map(b => b.innerText),
                options: v.querySelector('select').options.length, text: v.innerText}; })()""")
    assert w['w'] > 300 and w['h'] > 100, f'the explorer renders blank: {w}'
    assert float(w['input']) == 0.1 and len(w['buttons']) == 2 and w['options'] > 3, w
    assert 'bfloat16' in w['text'] and 'float16' in w['text'] and 'relative error' in w['text'], w['text']
    browser.screenshot(ART / 'docs_widget.png', '.widget-vbox')
    problems += browser.problems(browser.events)
    assert not problems, problems

LESSON_PAGES = ['tpu.html', 'bf16.html', 'xla.html', 'frameworks.html', 'jax.html']

def test_lessons_show_pictures_and_fold_answers(site, server, browser):
    "The lesson pages carry at least ten rendered figures, animations or widgets, and every exercise's answer is folded"
    count, folded = {}, {}
    for page in LESSON_PAGES:
        problems = browser.problems(browser.open(server + page))
        assert not problems, (page, problems)
        browser.wait_for("document.querySelectorAll('.widget-html-content').length > 0 || true", 5)
        count[page] = browser.js("""(() => {
            const imgs = Array.from(document.querySelectorAll('article .jp-OutputArea-output img'))
                .filter(i => i.closest('.animation') === null && i.naturalWidth > 100 && i.naturalHeight > 50);
            const anims = Array.from(document.querySelectorAll('article .animation'))
                .filter(a => a.querySelector('img') && a.querySelector('img').naturalWidth > 100);
            const widgets = Array.from(document.querySelectorAll('article .jp-OutputArea-output .widget-vbox, article .jp-OutputArea-output .widget-hbox'))
                .filter(w => w.parentElement.closest('.widget-vbox, .widget-hbox') === null && w.getBoundingClientRect().height > 50);
            return imgs.length + anims.length + widgets.length; })()""")
        folded[page] = browser.js("Array.from(document.querySelectorAll('article details')).filter(d => !d.open && "
                                  "d.querySelector('summary') && d.querySelector('summary').innerText.includes('Answer')).length")
    assert sum(count.values()) >= 10 and all(count.values()), f'figures, animations and widgets per lesson page: {count}'
    assert all(n >= 2 for n in folded.values()), f'folded answers per lesson page: {folded}'
    browser.open(server + 'tpu.html')
    assert browser.wait_for("document.querySelector('article .animation img') !== null", 10), 'the systolic animation did not render'

def test_pages_workflow_parses():
    "The GitHub Pages workflow (it cannot run here): valid YAML that builds with ./run.sh docs and uploads docs/"
    import yaml
    wf = yaml.safe_load((ROOT / '.github' / 'workflows' / 'docs.yml').read_text())
    steps = wf['jobs']['build']['steps']
    assert any(s.get('run') == './run.sh docs' for s in steps), steps
    assert any(s.get('uses', '').startswith('actions/upload-pages-artifact') and s['with']['path'] == 'docs' for s in steps)
    assert wf['jobs']['deploy']['needs'] == 'build'
