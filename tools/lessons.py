"""Run lessons with their checks and keep their outputs: what a lesson's stored outputs come from.

    python tools/lessons.py nbs/lessons/00_tpu.ipynb ...     (./run.sh shell python tools/lessons.py ...)

A lesson holds no checks (a learner opens it on Kaggle or Colab, where hidden cells show): its checks live in
tests/lesson_checks/<lesson>.py and run in its namespace right after the cells they name (`with_checks` in
tests/conftest.py, as the test suite runs them). This runs each lesson that way with nbdev's runner, copies the
outputs back into the lesson, clears the outputs of its predict-then-run exercises (their output is the answer, which
stays folded below them) and cleans the notebook with nbdev-clean."""
import json, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))
from conftest import with_checks   # noqa: E402

def exercise_cells(cells:list)->list:
    "The code cells of the predict-then-run exercises (under an exercise heading that does not ask for code)"
    out, on, predict = [], False, False
    for c in cells:
        text = ''.join(c['source'])
        if c['cell_type'] == 'markdown':
            if re.search(r'(?m)^## Exercises\s*$', text): on = True
            if re.search(r'(?m)^## Further reading\s*$', text): on = False
            m = re.search(r'(?m)^### Exercise \d+:.*$', text)
            if m: predict = '(write the code)' not in m.group(0)
        elif on and predict: out.append(c)
    return out

def save(nb:Path)->bool:
    "Run lesson `nb` with its checks; on success keep its outputs (predict-then-run exercises cleared) and clean it"
    run = with_checks(nb, ROOT / 'tests' / 'artifacts' / 'lessons' / 'save')
    r = subprocess.run([str(Path(sys.executable).parent / 'nbdev-test'), str(run), '--flags', 'slow', '--save'],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0 or 'Success.' not in r.stdout:
        print(f'{nb}: failed\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}'); return False
    ran = {c['id']: c for c in json.loads(run.read_text())['cells']}
    d = json.loads(nb.read_text())
    for c in d['cells']:
        if c['cell_type'] == 'code': c.update({k: ran[c['id']][k] for k in ('outputs', 'execution_count')})
    for c in exercise_cells(d['cells']): c['outputs'], c['execution_count'] = [], None
    nb.write_text(json.dumps(d, indent=1, ensure_ascii=False) + '\n')
    run.unlink()
    subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(nb)], cwd=ROOT, check=True)
    print(f'{nb}: saved'); return True

if __name__ == '__main__':
    ok = [save(Path(p).resolve()) for p in sys.argv[1:]]
    sys.exit(0 if all(ok) else 1)
