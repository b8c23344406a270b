"""The "Tested on" table: where this project's code has run and when, read from its records, never typed by hand.

Records read: every benchmark row in bench/results/*.json (its `machine` and `date`; a row with `compiled_for` names the TPU
chips libtpu compiled it for, on a CPU, and says it did not run on them) and the compat runs (tools/compat/results-*.json). The docs' install page shows the table (tools/docs/build.py); tools/make_readme.py puts
it where nbs/index.ipynb has a markdown line `<!-- tested-on -->`.
Usage: python tools/tested_on.py    (prints the table)
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = '<!-- tested-on -->'   # a markdown line of nbs/index.ipynb that the README replaces with the table

def _platform(machine:str)->str:
    "'TPU', 'GPU' or 'CPU': the kind of device a record's machine names"
    if re.search(r'\bTPU\b', machine): return 'TPU'
    return 'GPU' if re.search(r'NVIDIA|\bGPU\b|Instinct', machine) else 'CPU'

def records(root:Path=ROOT)->list:
    "One dict per record: platform, machine (without its Python), python, date and what ran"
    out = []
    for p in sorted((root / 'bench' / 'results').glob('*.json')):
        rows = json.loads(p.read_text())
        for r in rows if isinstance(rows, list) else []:   # the summary rows; the per-run files beside them are dicts
            if not (r.get('machine') and r.get('date')): continue
            machine, _, py = r['machine'].partition(', Python ')
            gpu = re.search(r'NVIDIA [^,:)]+', r.get('comparison', '')) if r.get('env') == 'gpu' else None
            if gpu: machine = gpu.group(0)   # made on the GPU machine: its GPU, which the comparison names (`machine` is its host CPU)
            what = {'gpu': 'the GPU benchmark (`bench/bench_gpu.py`)', 'predict': 'the predict benchmark (`bench/bench_predict.py`)'}.get(
                p.stem, 'the benchmarks (`./run.sh bench`)')
            if r.get('compiled_for'):   # compiled for a TPU by libtpu on this CPU: a TPU row that says it did not run there
                out.append(dict(platform='TPU', machine=f"{r['compiled_for']}: compiled for by libtpu {r['libtpu']} on a CPU, "
                                'not run on a TPU', python=py or None, date=r['date'],
                                what=f"the memory estimate against the TPU compiler, the tutorials' TPU settings (`bench/bench_{p.stem}.py`)"))
                continue
            out.append(dict(platform=_platform(machine), machine=machine, python=py or None, date=r['date'], what=what))
    for p in sorted((root / 'tools' / 'compat').glob('results-*.json')):
        r = json.loads(p.read_text())
        out.append(dict(platform=_platform(r['machine']), machine=r['machine'], python=r['python'], date=r['date'],
                        what=f"the notebooks, the doctor and the default job with {r['title']} (`{r['command']}`)"))
    return out

def tested_on(root:Path=ROOT)->str:
    "The markdown table: per platform, each kind of run with its machine and latest date; 'not yet' where nothing ran"
    recs, lines = records(root), ['| platform | machine | what ran there | last run |', '|---|---|---|---|']
    for plat in ('CPU', 'GPU', 'TPU'):
        mine = [r for r in recs if r['platform'] == plat]
        if not mine:
            lines.append(f'| {plat} | not yet | nothing has run on one' + (': the lessons run on a virtual TPU of CPU devices, and what '
                         "the docs say of TPUs comes from datasheets, the images' build files and the libraries' docs" if plat == 'TPU' else '')
                         + ' | not yet |')
            continue
        for what in dict.fromkeys(r['what'] for r in mine):
            last = max((r for r in mine if r['what'] == what), key=lambda r: r['date'])
            py = f", Python {last['python']}" if last['python'] else ''
            lines.append(f"| {plat} | {last['machine']}{py} | {what} | {last['date']} |")
    return '\n'.join(lines) + '\n'

if __name__ == '__main__': sys.stdout.write(tested_on())
