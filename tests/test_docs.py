"""The docs site, as a reader gets it: built from the notebooks, served on 127.0.0.1, every page opened in
headless Chromium (Debian's `chromium`, driven over the Chrome DevTools Protocol with `websocket-client`).

A page fails on: not loading, a console error or uncaught exception, a failed or 4xx/5xx request, a request to
any host but 127.0.0.1, Open in Kaggle / Colab buttons where its notebook does not start with the install cell (or
none where it does), a name in its module's `__all__` without an API entry, math left unrendered, and, for the
bfloat16 lesson, an explorer widget that renders blank. At 1280x800 and at a phone's 390x844, every table, `pre`
block, picture and output of every page must fit or scroll inside its own box (nothing clipped, the page never
scrolling sideways), keep its lines and words whole, and show no temporary or home-directory path, no stderr
progress bar and no stray object repr. In that same one load of each page: no code cell of a lesson or tutorial
scrolls sideways at 1280 px, and a lesson page shows no API block but those it asks for with `show_doc`, lists its
sections only in its table of contents, and starts its first section within the first screen (1280x1800).
Screenshots of the home page and the widget go to tests/artifacts/.
Without a browser: every install cell is the canonical text (tools/docs/install_cell.py) and, run offline with a
stand-in for pip, installs tpututor from its pinned commit only; and the package follows
its layout rules (tools/docs/layout.toml: layers, backends apart, no circle).

The site is built by the test (`tools/docs/build.py`, cached by content, about 30 s from cold) unless
TPUTUTOR_DOCS_PREBUILT=1 says docs/ is already built. Chromium is installed with apt-get when
/usr/bin/chromium is missing (as root); without it, or without npm for the site's JavaScript, the tests skip
and say why (and fail under CI=true).
"""
import ast, base64, contextlib, functools, http.server, json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, unquote
import pytest
from conftest import ROOT, clean_env

sys.path.insert(0, str(ROOT / 'tools' / 'docs'))
import install_cell, layout                                  # tools/docs/: the install cell and the layout rules
import importlib.util
_spec = importlib.util.spec_from_file_location('tpututor_docs_build', ROOT / 'tools' / 'docs' / 'build.py')
docs_build = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(docs_build)

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
        for domain in ('Page', 'Runtime', 'Network', 'Log', 'Animation'): self.send(f'{domain}.enable')
        # CSS transitions (the theme's, started by each new window size) run 1000 times faster: a check that waits for
        # their end waits about 1 ms, not their 250 ms; what they end in is the same (0.37 -> 0.16 s a check, 99 pages)
        self.send('Animation.setPlaybackRate', playbackRate=1000)

    def _recv(self):
        msg = json.loads(self.ws.recv())
        if msg.get('method') == 'Fetch.requestPaused':   # the search index, asked for while `small_search` holds: the small one
            self.n += 1
            self.ws.send(json.dumps(dict(id=self.n, method='Fetch.fulfillRequest', params=dict(
                requestId=msg['params']['requestId'], responseCode=200, body=self.small_index,
                responseHeaders=[dict(name='Content-Type', value='application/json')]))))
        elif 'method' in msg: self.events.append(msg)
        return msg

    @contextlib.contextmanager
    def small_search(self, site):
        """Pages opened inside get a search index of one entry instead of the site's: every page's search worker builds
        its index as the page loads, about a CPU-second each for this site's (search itself: `test_nav_shows_the_project`)"""
        index = json.loads((site / 'search' / 'search_index.json').read_text())
        self.small_index = base64.b64encode(json.dumps({**index, 'docs': index['docs'][:1]}).encode()).decode()
        self.send('Fetch.enable', patterns=[dict(urlPattern='*/search/search_index.json', requestStage='Request')])
        try: yield
        finally: self.send('Fetch.disable')

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
        self.ws.settimeout(max(settle / 4, 0.02))   # quiet for `settle` seconds: ended within a quarter of it
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

    def viewport(self, width, height, mobile=False):
        "Lay the page out for a window of `width` x `height` CSS pixels (a phone's touch layout with `mobile`)"
        self.send('Emulation.setDeviceMetricsOverride', width=width, height=height, deviceScaleFactor=1, mobile=mobile)

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
WIDE, PHONE = (1280, 800, False), (390, 844, True)      # window sizes: width, height, a phone's touch layout
CODE_CHARS = 120            # characters a code cell holds at 1280 px: the notebooks' longest line

def pages():
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob('*.html')
                  if p.name != '404.html' and not p.relative_to(SITE).parts[0] in ('assets', 'search'))

def published():
    "{page: notebook} for every notebook the site publishes, at the page nbdev's API links point at"
    return {docs_build.page_of(nb.relative_to(ROOT / 'nbs')): nb for nb in docs_build.notebooks()}

def section_pages(name):
    "The pages of the notebooks in navigation section `name`, in file order"
    return [page for page, nb in published().items() if docs_build.section(nb)[0] == name]

def module_pages():
    "{page: {module: names in its `__all__`}} from the package source and nbdev's index of its symbols"
    spec = {}
    d = ast.literal_eval((ROOT / 'tpututor' / '_modidx.py').read_text().split('d = ', 1)[1])
    for mod, syms in d['syms'].items():
        py = ROOT / (mod.replace('.', '/') + '.py')
        if not py.exists(): py = ROOT / mod.replace('.', '/') / '__init__.py'
        if not syms or not py.exists(): continue
        names = next((ast.literal_eval(s.value) for s in ast.parse(py.read_text()).body if isinstance(s, ast.Assign)
                      and any(getattr(t, 'id', None) == '__all__' for t in s.targets)), [])
        page = next(iter(syms.values()))[0].split('#')[0]
        spec.setdefault(page, {})[mod] = names
    return spec

# One evaluation per page and window size: what a reader of that window cannot read. Every table, pre block, picture
# and output must fit its column or scroll inside a box of its own (never clipped, never making the page scroll
# sideways); pre blocks keep their lines and table cells their words; no machine paths outside code, no stderr
# progress bar, no stray object repr.
READABLE = r"""(async (minCodeChars, machinePaths) => {
  document.body.getBoundingClientRect();     // the layout for this window size, then the end of the transitions it started
  await Promise.all(document.getAnimations().filter(a => a instanceof CSSTransition).map(a => a.finished.catch(() => null)));
  const out = [], vw = document.documentElement.clientWidth, art = document.querySelector('article');
  if (!art) return ['no article'];
  const desc = e => e.tagName.toLowerCase() + ' "' + (e.innerText || e.getAttribute('src') || e.getAttribute('alt') || '').trim().replace(/\s+/g, ' ').slice(0, 60) + '"';
  const scrolls = s => ['auto', 'scroll'].includes(s.overflowX);
  for (const e of art.querySelectorAll('table, pre, img, svg, .jp-OutputArea-output')) {
    if (e.closest('button, .md-icon, .headerlink, .md-clipboard') || (e.tagName == 'svg' && e.parentElement.closest('svg'))) continue;
    const b = e.getBoundingClientRect(), st = getComputedStyle(e);
    if (b.width == 0 && b.height == 0) continue;
    let right = b.right;
    if (!['IMG', 'svg'].includes(e.tagName) && e.scrollWidth > e.clientWidth + 1) {
      if (scrolls(st)) continue;
      if (st.overflowX != 'visible') { out.push(`clipped: ${e.scrollWidth}px of content in a ${e.clientWidth}px box: ${desc(e)}`); continue; }
      right = Math.max(right, b.left + e.scrollWidth);
    }
    let a = e.parentElement, bad = null, boxed = false;
    while (a && a !== document.documentElement) {
      const s = getComputedStyle(a);
      if (scrolls(s)) { boxed = true; break; }
      if (s.overflowX != 'visible') { const r = a.getBoundingClientRect();
        if (right > r.right + 1 || b.left < r.left - 1) { bad = a; break; } }
      a = a.parentElement;
    }
    if (bad) out.push(`clipped by ${bad.tagName.toLowerCase()}.${String(bad.className).split(' ')[0]}: ${Math.round(right - b.left)}px wide: ${desc(e)}`);
    else if (!boxed && (right > vw + 1 || b.left < -1)) out.push(`wider than the ${vw}px window, and nothing scrolls it: ${desc(e)}`);
  }
  if (document.documentElement.scrollWidth > vw + 1) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth}px in a ${vw}px window`);
  for (const p of art.querySelectorAll('pre')) {
    const s = getComputedStyle(p);
    if (s.whiteSpace != 'pre' || ['break-all', 'break-word'].includes(s.wordBreak)) { out.push(`wraps its lines (${s.whiteSpace}, ${s.wordBreak}): ${desc(p)}`); break; }
  }
  for (const c of art.querySelectorAll('td code, th code'))
    if (c.getClientRects().length > 1) { out.push(`code split over ${c.getClientRects().length} lines in a table cell: ${desc(c)}`); break; }
  for (const c of art.querySelectorAll('td, th')) {
    const s = getComputedStyle(c);
    if (['break-all', 'break-word'].includes(s.wordBreak) || s.overflowWrap == 'anywhere') { out.push(`breaks words (${s.wordBreak}): ${desc(c)}`); break; }
  }
  for (const o of art.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]'))
    if (/\d+%\|[^|\n]*\||\d+\/\d+ \[\d+:\d+/.test(o.innerText)) out.push(`a progress bar saved into the page: ${desc(o)}`);
  if (art.querySelector('.jp-OutputArea-output progress')) out.push('a progress bar saved into the page');
  let text = '';
  const walk = document.createTreeWalker(art, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) if (!walk.currentNode.parentElement.closest('.jp-InputArea-editor')) text += walk.currentNode.data + '\n';
  const path = text.match(new RegExp('.{0,40}(' + machinePaths + ').{0,40}'));
  if (path) out.push(`a path of the machine that ran it: ${path[0]}`);
  const repr = text.match(/.{0,30}(<[\w.]+ object at 0x[0-9a-f]+>|<Figure size \d+x\d+ with|<matplotlib\.[\w.]+ at 0x).{0,20}/);
  if (repr) out.push(`stray output: ${repr[0]}`);
  if (minCodeChars) {
    const cell = art.querySelector('.jp-CodeCell .jp-InputArea pre');   // a code cell's own box, inside its padding
    if (cell) {
      const cs = getComputedStyle(cell), ctx = document.createElement('canvas').getContext('2d');
      ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
      const fits = Math.floor((cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)) / ctx.measureText('0123456789').width * 10);
      if (fits < minCodeChars) out.push(`a code cell holds ${fits} characters a line, under ${minCodeChars}`);
    }
  }
  return out;
})"""

MACHINE_PATHS = '|'.join(re.escape(p) for p in ('/tmp/', '/root/', '/home/', '/.venv', '.venv/lib', str(ROOT) + '/'))

def readable(browser, minimum=0):
    "What the open page hides from a reader at the browser's window size ([] when everything is readable)"
    return browser.js(f'{READABLE}({minimum}, {json.dumps(MACHINE_PATHS)})')

def expected_buttons(page):
    "The notebook the page's Open in Kaggle / Colab buttons must open ('' for none): its own when it starts with the install cell"
    nb = published().get(page)
    if nb is None: return ''
    if install_cell.has_install_cell(json.loads(nb.read_text())): return nb.relative_to(ROOT).as_posix()
    return f'nbs/{docs_build.HOME_OPENS}' if page == 'index.html' else ''

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
    "The navigation follows the folders of nbs/: Start, Lessons, Tutorials, the Library with a part per folder, Performance; every notebook is in it"
    browser.viewport(*WIDE)
    problems = browser.problems(browser.open(server + 'index.html'))
    assert not problems, problems
    nav = browser.js("Array.from(document.querySelectorAll('.md-nav--primary > .md-nav__list > .md-nav__item'))"
                     ".map(li => li.querySelector('label, a').innerText.trim())")
    sections = {docs_build.section(nb)[0] for nb in published().values()}
    want = ['Start'] + [s for s in ('Lessons', 'Tutorials', 'Library') if s in sections] + ['Performance']
    assert nav == want, f'top-level navigation {nav}, expected {want}'
    folders = sorted({f for nb in published().values() if (f := docs_build.section(nb)[1])},
                     key=lambda f: (docs_build.LIBRARY_FOLDERS + (f,)).index(f))
    parts = browser.js("""(() => { const label = li => li.querySelector('label, a').innerText.trim();
        const lib = Array.from(document.querySelectorAll('.md-nav--primary > .md-nav__list > .md-nav__item')).find(li => label(li) == 'Library');
        return Array.from(lib.querySelectorAll(':scope > nav > ul > li.md-nav__item--nested')).map(label); })()""")
    assert parts == [f.replace('_', ' ').capitalize() for f in folders], f'the Library has parts {parts}, expected one per folder of nbs/: {folders}'
    links = browser.js("Array.from(document.querySelectorAll('.md-nav--primary a.md-nav__link')).map(a => a.getAttribute('href'))")
    for page, nb in published().items():
        assert any(l and l.split('#')[0].endswith(page) for l in links), f'{nb.relative_to(ROOT)} ({page}) is not in the navigation'
    for page in ('install.html', 'layout.html', 'contributing.html', 'performance.html'):
        assert any(l and l.endswith(page) for l in links), f'{page} is not in the navigation'
    text = browser.js('document.body.innerText')
    assert 'Open the first tutorial in Colab' in text, 'the home page has no button to the first tutorial'
    browser.screenshot(ART / 'docs_home.png')
    # search works offline: the index and the worker come from the site
    browser.js("document.querySelector('.md-search__input').focus()")
    browser.send('Input.insertText', text='bfloat16')
    assert browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0", 20), 'search found nothing for "bfloat16"'
    browser.screenshot(ART / 'docs_search.png')
    assert not browser.problems(browser.events), browser.problems(browser.events)
    deeper = next(p for p in pages() if '/' in p)   # a page in a folder reaches the worker and the index by a longer path
    assert not browser.problems(browser.open(server + deeper)), browser.problems(browser.events)
    browser.js("document.querySelector('.md-search__input').focus()")
    browser.send('Input.insertText', text='bfloat16')
    assert browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0", 20), f'search found nothing for "bfloat16" on {deeper}'
    assert not browser.problems(browser.events), browser.problems(browser.events)

@pytest.fixture(scope='module')
def page_reports(site, server, browser):
    """Every page opened once (at 1280x800 and 390x844): {page: what is wrong with it}, and {lesson page: what it shows}
    (its figures, folded answers, API blocks, contents), for the tests below to read"""
    ps, api = pages(), module_pages()
    assert len(ps) >= 5, ps
    bad = {page: ['named in tpututor/_modidx.py, and not built'] for page in api if page not in ps}
    lessons, tutorials, shown = set(section_pages('Lessons')), set(section_pages('Tutorials')), {}
    browser.viewport(*WIDE)
    with browser.small_search(site):
        for i, p in enumerate(ps):
            r = check_page(browser, server, i, p, api, bad, lesson=p in lessons, shows=f'{SHOWN}()' if p in lessons | tutorials else None)
            if r is not None: shown[p] = r
    browser.viewport(*WIDE)
    return bad, shown

def test_every_page_loads_clean(page_reports):
    "Every page loads without an error, has its buttons only where its notebook runs on Kaggle and Colab, an API entry for every name in its module's `__all__` (on a lesson, the code that defines it), and is readable at 1280x800 and 390x844"
    bad, _ = page_reports
    assert not bad, json.dumps(bad, indent=1)

def check_page(browser, server, i, p, api, bad, lesson=False, shows=None):
    """What is wrong with page `p` (the `i`-th) into `bad`; the API entries it must have are taken out of `api` (a `lesson`
    shows its code instead: an anchor with nbdev's id for each name, on the code that defines it). Returns the value of
    JavaScript expression `shows` on the page at 1280 px (None without one)"""
    shown = None
    sizes = (WIDE, PHONE) if i % 2 == 0 else (PHONE, WIDE)   # laid out once per size: the next page opens in the size this one ended in
    problems = browser.problems(browser.open(server + p, settle=0.1))   # a page's requests end with its load event (the latest of 99 pages: 0.015 s after)
    title = browser.js('document.querySelector("article h1") && document.querySelector("article h1").innerText')
    if not title: problems.append('no h1 title in the article')
    opens = expected_buttons(p)
    for cls, what, url in (('tt-colab', 'Colab', 'https://colab.research.google.com/github/'),
                           ('tt-kaggle', 'Kaggle', 'https://kaggle.com/kernels/welcome?src=https://github.com/')):
        badge = browser.js(f"Array.from(document.querySelectorAll('a.{cls}')).map(a => a.href)")
        if not opens:
            if badge: problems.append(f'Open in {what} on a page whose notebook does not start with the install cell: {badge}')
            continue
        if len(badge) != 1 or not (badge[0].startswith(url) and badge[0].endswith('/' + opens)):
            problems.append(f'not one Open in {what} button for {opens}: {badge}'); continue
        same = browser.js(f"Array.from(document.querySelectorAll('article a')).filter(a => a.href == {json.dumps(badge[0])}).length")
        if same != 1 and p != 'index.html': problems.append(f'the page links its own notebook on {what} {same} times (the notebook\'s own button left in?)')
    if p in api and lesson:
        ids = browser.js("Array.from(document.querySelectorAll('article [id]')).map(e => e.id)")
        missing = [f'{mod}.{n}' for mod, names in api.pop(p).items() for n in names if n.lower() not in ids]
        if missing: problems.append(f'no anchor (nbdev\'s id on the code that defines it) for {missing}')
    elif p in api:
        heads = browser.js("Object.fromEntries(Array.from(document.querySelectorAll('article h2, article h3, article h4'))"
                           ".map(h => [h.id, h.innerText.replace(/¶$/, '').trim()]))")
        missing = [f'{mod}.{n}' for mod, names in api.pop(p).items() for n in names
                   if not any(text == n and hid.startswith(n.lower()) for hid, text in heads.items())]
        if missing: problems.append(f'no API entry (a heading with the name and nbdev\'s anchor) for {missing}')
    for k, size in enumerate(sizes):
        if k: browser.viewport(*size)
        problems += [f'at {size[0]} px: {x}' for x in readable(browser, CODE_CHARS if size == WIDE else 0)]
        if size == WIDE and shows: shown = browser.js(shows)
    if problems: bad[p] = problems
    return shown

def test_readable_finds_what_a_reader_cannot_read(server, browser):
    "The readability check itself: a clipped table, a wrapped log line, a temporary path and a page scrolling sideways are each found"
    browser.viewport(*WIDE)
    browser.open(server + 'contributing.html', settle=0.3)
    assert readable(browser) == [], readable(browser)
    browser.js("""(() => { const a = document.querySelector('article');
        a.insertAdjacentHTML('beforeend', '<div style="overflow: hidden; width: 200px"><img src="layout.svg" style="width: 400px; max-width: none"></div>'
          + '<pre style="white-space: pre-wrap">run 1: /tmp/tmpab12cd34/log</pre><img src="layout.svg" style="width: 3000px; max-width: none">'); })()""")
    found = '\n'.join(readable(browser))
    for what in ('clipped by div', 'wraps its lines', 'a path of the machine', 'the page scrolls sideways'):
        assert what in found, f'{what!r} not found in:\n{found}'

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

def widget_page():
    "The page of the bfloat16 lesson that holds the explorer widget"
    return next(page for page, nb in published().items() if docs_build.section(nb)[0] == 'Lessons' and 'bf16' in nb.stem
                and 'application/vnd.jupyter.widget-view+json' in nb.read_text())

def test_math_and_widget(site, server, browser):
    "The bfloat16 lesson: MathJax renders its formulas and the explorer widget renders from its stored state"
    problems = browser.problems(browser.open(server + widget_page()))
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

# What a lesson or tutorial page shows, evaluated once on the page as `page_reports` opened it (at 1280 px wide): its
# figures, animations and widgets, its folded answers, its API blocks (a markdown cell that opens with a rule and names
# a function in a heading, as nbdev's `show_doc` writes them), the entries of its table of contents in the sidebar, its
# code cells wider than their box (a reader would scroll sideways), and where its first section's heading starts.
SHOWN = r"""(() => {
  const art = document.querySelector('article'), text = e => e.innerText.replace(/¶$/, '').trim();
  const imgs = Array.from(art.querySelectorAll('.jp-OutputArea-output img'))
      .filter(i => i.closest('.animation') === null && i.naturalWidth > 100 && i.naturalHeight > 50);
  const anims = Array.from(art.querySelectorAll('.animation')).filter(a => a.querySelector('img') && a.querySelector('img').naturalWidth > 100);
  const widgets = Array.from(art.querySelectorAll('.jp-OutputArea-output .widget-vbox, .jp-OutputArea-output .widget-hbox'))
      .filter(w => w.parentElement.closest('.widget-vbox, .widget-hbox') === null && w.getBoundingClientRect().height > 50);
  const folded = Array.from(art.querySelectorAll('details')).filter(d => !d.open && d.querySelector('summary')
      && d.querySelector('summary').innerText.includes('Answer')).length;
  const api = Array.from(art.querySelectorAll('.jp-MarkdownOutput')).filter(m => m.firstElementChild
      && m.firstElementChild.tagName == 'HR' && m.querySelector('h2, h3, h4, h5')).map(m => text(m.querySelector('h2, h3, h4, h5')));
  const toc = Array.from(document.querySelectorAll('.md-nav--primary .md-nav__item--active > nav.md-nav--secondary a.md-nav__link'))
      .map(a => a.innerText.trim());
  const sections = Array.from(art.querySelectorAll('h2, h3')).filter(h => !h.closest('.jp-OutputArea')).map(text);
  const wide = Array.from(art.querySelectorAll('.jp-InputArea pre')).filter(p => p.scrollWidth > p.clientWidth + 1).map(p => {
      const line = p.innerText.split('\n').reduce((a, b) => b.length > a.length ? b : a, '');
      return `${p.scrollWidth}px of code in a ${p.clientWidth}px box, its longest line (${line.length} characters): ${line.slice(0, 70)}`; });
  const h2 = art.querySelector('h2');
  return {figures: imgs.length + anims.length + widgets.length, animations: anims.length, folded, api, toc, sections, wide,
          first_section: h2 ? Math.round(h2.getBoundingClientRect().top + window.scrollY) : null};
})"""

FIRST_SCREEN = 1800   # the first section's heading starts within the first screen of a 1280x1800 window

def allowed_api(nb:Path)->list:
    "The API blocks a lesson may show: one for each function it documents with an explicit `show_doc(name)` cell (one it builds step by step)"
    cells = [c for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']
    return re.findall(r'^show_doc\((\w+)', '\n'.join(''.join(c['source']) for c in cells), re.M)

def test_lesson_pages_read_as_lessons(page_reports):
    "Every lesson page shows the lesson: no API block but the ones it asks for (once each), a table of contents of its sections only, no code scrolling sideways at 1280 px, its first section within the first screen; no tutorial's code scrolls sideways"
    _, shown = page_reports
    nbs, bad = published(), {}
    lessons = section_pages('Lessons')
    assert len(lessons) >= 5 and all(p in shown for p in lessons), (lessons, sorted(shown))
    for p, r in shown.items():
        problems = [f'code wider than the column at 1280 px: {w}' for w in r['wide']]
        if p in lessons:
            allowed = allowed_api(nbs[p])
            extra = [n for n in r['api'] if n not in allowed or r['api'].count(n) > 1]
            if extra: problems.append(f'API blocks a lesson does not ask for (with show_doc) or shows twice: {extra}')
            if [t for t in r['toc'] if t in r['api']] or [t for t in r['toc'] if t not in r['sections']]:
                problems.append(f'the contents in the sidebar hold more than the sections {r["sections"]}: {r["toc"]}')
            if not r['toc']: problems.append('no table of contents in the sidebar')
            if r['first_section'] is None or r['first_section'] > FIRST_SCREEN:
                problems.append(f'the first section starts at {r["first_section"]} px, below the first screen ({FIRST_SCREEN} px)')
        if problems: bad[p] = problems
    assert not bad, json.dumps(bad, indent=1)

def test_lessons_show_pictures_and_fold_answers(page_reports):
    "The lesson pages carry at least ten rendered figures, animations or widgets, every exercise's answer is folded, and the first lesson's systolic animation renders"
    _, shown = page_reports
    lessons = section_pages('Lessons')
    count, folded = {p: shown[p]['figures'] for p in lessons}, {p: shown[p]['folded'] for p in lessons}
    assert sum(count.values()) >= 10, f'figures, animations and widgets per lesson page: {count}'
    assert all(n >= 2 for n in folded.values()), f'folded answers per lesson page: {folded}'
    assert shown[lessons[0]]['animations'] > 0, f'the systolic animation did not render on {lessons[0]}'

def test_layout_page(site, server, browser):
    "How the code is laid out: the picture of the real imports, readable at 1280 px; every module with its line; the layer rules and the data flow"
    browser.viewport(*WIDE)
    problems = browser.problems(browser.open(server + 'layout.html'))
    assert not problems, problems
    img = browser.js("(() => { const i = document.querySelector('article img.tt-layout'); "
                     "return i && [i.naturalWidth, i.getBoundingClientRect().width]; })()")
    assert img and img[0] > 600 and img[1] >= 900, f'the layout picture is missing or shown smaller than 900 px at 1280: {img}'
    text = browser.js("document.querySelector('article').innerText")
    mods = layout.read_package(ROOT / 'tpututor')
    missing = [p for p in mods if p not in text]
    assert not missing, f'modules missing from the layout page: {missing}'
    for step in layout.load_rules()['flow']: assert step['step'] in text, f"the data flow step {step['step']!r} is not on the page"
    for l in layout.load_rules()['layer']: assert l['name'] in text, f"the layer {l['name']!r} is not on the page"
    svg = (SITE / 'layout.svg').read_text()
    drawn = sum(len(m.imports) for m in mods.values())
    assert f'{len(mods)} modules, {drawn} imports' in svg, 'the picture was not drawn from the imports of this source'

def test_performance_lists_every_tutorial(site, server, browser):
    "The Performance page's tutorials table names every tutorial, and its reproduce commands show whole"
    browser.viewport(*WIDE)
    assert not browser.problems(browser.open(server + 'performance.html'))
    rows = browser.js("Array.from(document.querySelectorAll('article table')).filter(t => t.querySelector('th') && "
                      "t.querySelector('th').innerText.trim() == 'tutorial').flatMap(t => Array.from(t.querySelectorAll('tbody tr'))"
                      ".map(r => r.querySelector('td').innerText.trim()))")
    want = [f'tutorials/{nb.name}' for nb in sorted((ROOT / 'nbs' / 'tutorials').glob('*.ipynb'))]
    assert sorted(rows) == want, f'tutorials table rows {rows}, expected every tutorial {want}'
    cmds = browser.js("Array.from(document.querySelectorAll('article td code')).filter(c => c.innerText.startsWith('./run.sh') || "
                      "c.innerText.startsWith('python ')).map(c => [c.innerText, c.getClientRects().length])")
    assert cmds and all(n == 1 for _, n in cmds), f'reproduce commands split over lines: {[c for c in cmds if c[1] != 1][:5]}'

# ---------------------------------------------------------------- without the site: the navigation, the install cell and the layout rules
def test_navigation_follows_the_folders(tmp_path, monkeypatch):
    "Pages at nbdev's paths; sections from the folders of nbs/ (a later folder becomes a part of the Library), the flat layout's lessons by number; two notebooks on one page stop the build"
    nbs = tmp_path / 'nbs'
    for f in ('index', '01_data', '00_tpu', 'lessons/00a_devices', 'tutorials/01_keras_kfold', 'models/00_hub', 'backends/02_keras',
              'backends/00_base', 'backends/tf/00_backend', 'backends/tf/01_network', 'explanations/00_why', '_drafts/01_x', '.ipynb_checkpoints/01_data-checkpoint', '_skip'):
        (nbs / f'{f}.ipynb').parent.mkdir(parents=True, exist_ok=True); (nbs / f'{f}.ipynb').write_text('{}')
    monkeypatch.setattr(docs_build, 'NBS', nbs); monkeypatch.setattr(docs_build, 'ROOT', tmp_path)
    found = [nb.relative_to(nbs).as_posix() for nb in docs_build.notebooks()]
    assert found == ['00_tpu.ipynb', '01_data.ipynb', 'backends/00_base.ipynb', 'backends/02_keras.ipynb',
                     'backends/tf/00_backend.ipynb', 'backends/tf/01_network.ipynb', 'explanations/00_why.ipynb',
                     'index.ipynb', 'lessons/00a_devices.ipynb', 'models/00_hub.ipynb', 'tutorials/01_keras_kfold.ipynb'], found
    assert docs_build.page_of('backends/02_keras.ipynb') == 'backends/keras.html' and docs_build.page_of('lessons/00a_devices.ipynb') == 'lessons/devices.html'
    sec = {nb.relative_to(nbs).as_posix(): docs_build.section(nb) for nb in docs_build.notebooks()}
    assert sec['00_tpu.ipynb'] == ('Library', None), 'with nbs/lessons/, a numbered notebook at the top is the library'
    assert sec['lessons/00a_devices.ipynb'] == ('Lessons', None) and sec['tutorials/01_keras_kfold.ipynb'] == ('Tutorials', None)
    assert sec['backends/02_keras.ipynb'] == ('Library', 'backends') and sec['explanations/00_why.ipynb'] == ('Library', 'explanations')
    done = {nb: (None, dict(page=docs_build.page_of(nb.relative_to(nbs)).removesuffix('.html') + '.ipynb', title=nb.stem,
                            module=f'tpututor.{nb.stem.split("_", 1)[1]}' if 'index' not in nb.stem else None))
            for nb in docs_build.notebooks()}
    nav = docs_build.navigation(done)
    assert [next(iter(d)) for d in nav] == ['Start', 'Lessons', 'Tutorials', 'Library', 'Performance'], nav
    library = nav[3]['Library']
    assert [next(iter(d)) for d in library] == ['tpu: 00_tpu', 'data: 01_data', 'Models', 'Backends', 'Explanations'], library
    assert library[3]['Backends'] == [{'base: 00_base': 'backends/base.ipynb'}, {'keras: 02_keras': 'backends/keras.ipynb'},
                                      {'tf': [{'backend: 00_backend': 'backends/tf/backend.ipynb'},   # a folder in a part
                                              {'network: 01_network': 'backends/tf/network.ipynb'}]}]
    assert sec['backends/tf/01_network.ipynb'] == ('Library', 'backends')
    assert [next(iter(d.values())) for d in nav[0]['Start']] == ['index.ipynb', 'install.md', 'layout.md', 'contributing.md']
    (nbs / 'lessons' / '00a_devices.ipynb').rename(nbs / 'lessons' / '01_devices.ipynb')
    (nbs / 'lessons' / '00_devices.ipynb').write_text('{}')
    clash = {nb: (None, dict(page=docs_build.page_of(nb.relative_to(nbs)).removesuffix('.html') + '.ipynb', title='t'))
             for nb in docs_build.notebooks()}
    with pytest.raises(SystemExit, match='lessons/00_devices.ipynb and .*lessons/01_devices.ipynb would both be lessons/devices.ipynb'):
        docs_build.navigation(clash)
    for d in ('lessons', 'tutorials', 'models', 'backends', 'explanations'): shutil.rmtree(nbs / d)
    assert docs_build.section(nbs / '00_tpu.ipynb') == ('Lessons', None) and docs_build.section(nbs / '07_config.ipynb') == ('Library', None), \
        'the flat layout: notebooks numbered below 04 are the lessons'

def test_install_cells_are_one_text():
    "Every notebook's install cell is the canonical text (tools/docs/install_cell.py), every tutorial starts with one, and the module it imports has `install_missing`"
    problems = install_cell.check_all()
    assert not problems, '\n\n'.join(problems)
    for nb in sorted((ROOT / 'nbs' / 'tutorials').glob('*.ipynb')):
        assert install_cell.has_install_cell(json.loads(nb.read_text())), f'{nb.name} does not start with the install cell'
    assert install_cell.install_module(), 'no module of tpututor defines install_missing, which the install cell calls'

def test_install_cell_check_finds_a_changed_copy(tmp_path):
    "A copy that differs from the canonical text, or that runs after other code, is named; the canonical copy passes"
    def nb(*cells):
        p = tmp_path / f'nb{len(list(tmp_path.iterdir()))}.ipynb'
        p.write_text(json.dumps({'cells': [{'cell_type': 'code', 'source': c, 'metadata': {}, 'outputs': []} for c in cells]}))
        return p
    good = install_cell.install_cell('keras')
    assert good.splitlines()[0].startswith(install_cell.MARKER) and good.endswith("install_missing('keras');")
    assert install_cell.check_notebook(nb('#| default_exp x', good, 'import numpy')) == []
    assert install_cell.has_install_cell(json.loads(nb('#| default_exp x', good).read_text()))
    changed = install_cell.check_notebook(nb(good.replace("'-q'", "'-qq'")))
    assert len(changed) == 1 and 'differs from the canonical text' in changed[0] and "-qq" in changed[0], changed
    late = install_cell.check_notebook(nb('import numpy', good))
    assert any('make it the first code cell' in p for p in late), late
    assert not install_cell.has_install_cell(json.loads(nb('import numpy', good).read_text()))
    assert 'unknown framework' in install_cell.check_notebook(nb(good.replace("'keras')", "'jax')")))[0]
    assert install_cell.check_notebook(nb('import numpy')) == []          # no install cell: nothing to check, no buttons

# A stand-in for `python -m pip` (the cell runs pip as `sys.executable -m pip`): it records its arguments, and installs
# (a copy of tpututor from the commit it is given) or uninstalls by writing or removing a dist-info in SITE.
PIP_STAND_IN = """import json, shutil, sys
from pathlib import Path
site, log = Path(sys.argv[0]).parent / 'site-packages', Path(sys.argv[0]).parent / 'pip.log'
log.write_text(log.read_text() + json.dumps(sys.argv[1:]) + '\\n')
if FAILS: sys.exit(1)
for d in site.glob('tpututor-*.dist-info'): shutil.rmtree(d)
if 'install' in sys.argv:
    d, spec = site / 'tpututor-0.1.0.dist-info', sys.argv[-1]
    d.mkdir(); (d / 'METADATA').write_text('Metadata-Version: 2.1\\nName: tpututor\\nVersion: 0.1.0\\n')
    if '@' in spec: (d / 'direct_url.json').write_text(json.dumps(dict(url=spec, vcs_info=dict(vcs='git', commit_id=spec[-40:]))))
"""

def run_cell(tmp:Path, cell:str, dist=None, pip_fails=False, where='site-packages'):
    """Run install cell text `cell` offline in a bare Python (no site-packages of its own) in which tpututor is `dist`,
    (version, its direct_url.json or None) in folder `where`, or missing: (the run, each call to pip as its arguments)"""
    site = tmp / where; site.mkdir(parents=True); (tmp / 'pip.log').write_text('')
    if dist:
        d = site / f'tpututor-{dist[0]}.dist-info'; d.mkdir()
        (d / 'METADATA').write_text(f'Metadata-Version: 2.1\nName: tpututor\nVersion: {dist[0]}\n')
        if dist[1] is not None: (d / 'direct_url.json').write_text(json.dumps(dist[1]))
    fake = tmp / 'python'
    fake.write_text(f'#!{sys.executable}\n' + PIP_STAND_IN.replace('FAILS', str(pip_fails))); fake.chmod(0o755)
    prog = f'import sys; sys.path.insert(0, {str(site)!r}); sys.executable = {str(fake)!r}\nexec(compile({cell!r}, "cell", "exec"))'
    r = subprocess.run([sys.executable, '-I', '-S', '-c', prog], capture_output=True, text=True, timeout=60)
    return r, [json.loads(l) for l in (tmp / 'pip.log').read_text().splitlines()]

def test_install_cell_installs_only_its_pin(tmp_path):
    "The install cell, run offline with a stand-in for pip: it installs tpututor from the pinned commit only (never by name from an index), replaces another copy without running it, says what it installed, and is a no-op where the pinned commit or a local copy is installed"
    assert install_cell.pin_problems() == [], install_cell.pin_problems()
    pin, cell = install_cell.PIN, install_cell.head()
    url = f'git+{install_cell.REPO}@{pin}'
    assert f"PIN = '{url}'" in cell and cell.count('\n') < 12, cell
    install = ['-m', 'pip', '-q', 'install', f'tpututor @ {url}']
    uninstall = ['-m', 'pip', '-q', 'uninstall', '-y', 'tpututor']
    cases = {'none installed': (None, [install]),
             'another tpututor, from an index': (('9.9.9', None), [uninstall, install]),
             'this repository at another commit': (('0.1.0', dict(url='x', vcs_info=dict(vcs='git', commit_id='a' * 40))), [uninstall, install]),
             'the pinned commit': (('0.1.0', dict(url=url, vcs_info=dict(vcs='git', commit_id=pin))), []),
             'a local copy (an editable checkout)': (('0.1.0', dict(url='file:///src', dir_info=dict(editable=True))), [])}
    r, got = run_cell(tmp_path / 'checkout', cell, ('0.1.0', None), where='checkout')
    assert got == [], f'a checkout on the path (its egg-info beside the source): pip ran {got}'
    for i, (what, (dist, calls)) in enumerate(cases.items()):
        r, got = run_cell(tmp_path / str(i), cell, dist)
        assert r.returncode == 0, (what, r.stderr)
        assert got == calls, f'{what}: pip ran {got}, expected {calls}'
        said = r.stdout.strip()
        assert said == (f'tpututor 0.1.0 installed from {url}' if calls else f'tpututor {dist[0]} was installed already'), (what, said)
    r, got = run_cell(tmp_path / 'fails', cell, None, pip_fails=True)
    assert r.returncode != 0 and 'CalledProcessError' in r.stderr and 'installed from' not in r.stdout, (r.stdout, r.stderr[-500:])
    wheel = install_cell.head('0.2.0')          # once released on PyPI: that version's wheel, nothing built from source
    r, got = run_cell(tmp_path / 'pypi', wheel)
    assert got == [['-m', 'pip', '-q', 'install', '--only-binary', ':all:', 'tpututor==0.2.0']], got
    assert run_cell(tmp_path / 'pypi-had', wheel, ('0.2.0', None))[1] == []
    for bad in ('main', 'v0.1.0', '536d6cf'):    # a branch or a tag moves, a short hash is ambiguous: refused
        with pytest.raises(ValueError, match='neither a commit'): install_cell.head(bad)

def test_install_pin_is_kept_in_one_place(tmp_path):
    "`--pin` rewrites PIN and every notebook's install cell at once; the check names a copy pinned elsewhere, and a PIN that is no commit of this history"
    nbs = tmp_path / 'nbs'; nbs.mkdir()
    here = tmp_path / 'install_cell.py'; here.write_text(f"x = 1\nPIN = '{install_cell.PIN}'\n")
    old = install_cell.install_cell('keras').replace(install_cell.head(), install_cell.head('b' * 40))
    (nbs / 'a.ipynb').write_text(json.dumps({'cells': [{'cell_type': 'code', 'source': old, 'metadata': {}, 'outputs': []}]}))
    assert 'differs from the canonical text' in install_cell.check_notebook(nbs / 'a.ipynb')[0]
    assert install_cell.set_pin(install_cell.PIN, nbs, here) == [nbs / 'a.ipynb']
    assert install_cell.check_notebook(nbs / 'a.ipynb') == []
    assert install_cell.set_pin('c' * 40, nbs, here) == [nbs / 'a.ipynb'] and f"PIN = '{'c' * 40}'" in here.read_text()
    assert 'is no commit of' in install_cell.pin_problems('c' * 40)[0]
    assert 'neither a commit' in install_cell.pin_problems('main')[0]

def test_code_follows_its_layout_rules():
    "tpututor's imports follow tools/docs/layout.toml: every module in one layer, no import up a layer, no backend importing another, no circle"
    problems = layout.check(layout.read_package(ROOT / 'tpututor'), layout.load_rules())
    assert not problems, '\n'.join(problems)

def test_layout_check_finds_breaks(tmp_path):
    "On a small package: an import up a layer, one backend importing another, a file importing its folder's other file around the folder's base.py, a circle and a module in no layer are each named; the registry and the shared base pass"
    pkg = tmp_path / 'tpututor'
    files = {'__init__.py': '', 'data.py': 'from .rundir import x', 'rundir.py': 'def f():\n    from .data import y',
             'config.py': 'from .backends.base import Backend', 'kfold.py': 'from .lessons import tpu',
             'backends/__init__.py': 'def get(k):\n    from . import keras, torch', 'backends/base.py': '',
             'backends/keras.py': 'from .base import Backend\nfrom .torch import fit', 'backends/torch.py': 'from .base import Backend',
             'lessons/__init__.py': '', 'lessons/tpu.py': 'from tpututor.kfold import run', 'extra.py': '',
             # a backend's folder: its modules import each other through its base.py, never another backend's
             'backends/tf/__init__.py': 'from .base import build\nfrom ..keras import fit', 'backends/tf/network.py': '',
             'backends/tf/base.py': 'from .network import build', 'backends/tf/pipeline.py': 'from .network import build'}
    for name, src in files.items(): (pkg / name).parent.mkdir(parents=True, exist_ok=True); (pkg / name).write_text(src)
    mods = layout.read_package(pkg)
    assert mods['backends/__init__.py'].imports.keys() == {'backends/keras.py', 'backends/torch.py'}
    found = '\n'.join(layout.check(mods, layout.load_rules()))
    for what in ("config.py:1 imports backends/base.py: layer 'config' may not import layer 'the contract'",
                 "kfold.py:1 imports lessons/tpu.py", 'backends/keras.py:2 imports backends/torch.py: a backend never imports another',
                 'circle: data.py, rundir.py', 'extra.py is in no layer',
                 'backends/tf/__init__.py:2 imports backends/keras.py: a backend never imports another',
                 "backends/tf/pipeline.py:1 imports backends/tf/network.py: within a backend's folder, files import one "
                 'another only through a base.py'):
        assert what in found, f'{what!r} not found in:\n{found}'
    assert 'backends/__init__.py:' not in found and 'imports backends/base.py: a backend' not in found, found
    assert 'base.py:1 imports backends/tf/network.py' not in found, found   # a folder's base.py imports its files
    assert 'imports backends/tf/base.py' not in found, found                # and they import it
    layout.draw(mods, layout.load_rules(), tmp_path / 'layout.svg')
    assert '16 modules, 14 imports' in (tmp_path / 'layout.svg').read_text()

def test_pages_workflow_parses():
    "The GitHub Pages workflow (it cannot run here): valid YAML that builds with ./run.sh docs and uploads docs/"
    import yaml
    wf = yaml.safe_load((ROOT / '.github' / 'workflows' / 'docs.yml').read_text())
    steps = wf['jobs']['build']['steps']
    assert any(s.get('run') == './run.sh docs' for s in steps), steps
    assert any(s.get('uses', '').startswith('actions/upload-pages-artifact') and s['with']['path'] == 'docs' for s in steps)
    assert wf['jobs']['deploy']['needs'] == 'build'
