"""Run lessons with their checks and keep their outputs: what a lesson's stored outputs come from.

    python tools/lessons.py nbs/lessons/00_tpu.ipynb ...     (./run.sh shell python tools/lessons.py ...)

A lesson holds no checks (a learner opens it on Kaggle or Colab, where hidden cells show): its checks live in
tests/lesson_checks/<lesson>.py and run in its namespace right after the cells they name (`with_checks` in
tests/conftest.py, as the test suite runs them). This runs each lesson that way with nbdev's runner, copies the
outputs back into the lesson, clears the outputs of its exercises (a predict-then-run cell's output is the answer, which
stays folded below it; a code exercise's stub and its worked answer run when the learner runs them) and cleans the
notebook with nbdev-clean. `--show` prints what the exercise cells printed before they are cleared (what each folded
answer must agree with, and the figures tests/test_project.py keeps out of the outputs above each question)."""
import json, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))
from conftest import with_checks   # noqa: E402

def exercise_cells(cells:list, code:bool=True)->list:
    """The code cells of the exercises: those of the predict-then-run ones, and with `code` the stubs and worked answers
    of those that ask for code (under a heading that says `(write the code)`)"""
    out, on, predict = [], False, False
    for c in cells:
        text = ''.join(c['source'])
        if c['cell_type'] == 'markdown':
            if re.search(r'(?m)^## Exercises\s*$', text): on = True
            if re.search(r'(?m)^## Further reading\s*$', text): on = False
            m = re.search(r'(?m)^### Exercise \d+:.*$', text)
            if m: predict = '(write the code)' not in m.group(0)
        elif on and (predict or code): out.append(c)
    return out

def save(nb:Path, show:bool=False)->bool:
    "Run lesson `nb` with its checks; on success keep its outputs (exercises cleared; printed first with `show`)"
    run = with_checks(nb, ROOT / 'tests' / 'artifacts' / 'lessons' / 'save')
    r = subprocess.run([str(Path(sys.executable).parent / 'nbdev-test'), str(run), '--flags', 'slow', '--save'],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0 or 'Success.' not in r.stdout:
        print(f'{nb}: failed\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}'); return False
    ran = {c['id']: c for c in json.loads(run.read_text())['cells']}
    d = json.loads(nb.read_text())
    for c in d['cells']:
        if c['cell_type'] == 'code': c.update({k: ran[c['id']][k] for k in ('outputs', 'execution_count')})
    for c in exercise_cells(d['cells']):
        if show: print(f"{nb.name} {c['id']}:", *(''.join(o.get('text', '')) for o in c['outputs']), sep='\n')
        c['outputs'], c['execution_count'] = [], None
    nb.write_text(json.dumps(d, indent=1, ensure_ascii=False) + '\n')
    run.unlink()
    subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(nb)], cwd=ROOT, check=True)
    print(f'{nb}: saved'); return True

if __name__ == '__main__':
    show = '--show' in sys.argv[1:]
    ok = [save(Path(p).resolve(), show) for p in sys.argv[1:] if p != '--show']
    sys.exit(0 if all(ok) else 1)
