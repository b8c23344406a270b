"""The family matrix: eight encoder families, saved as the hub saves them and as bare encoders, on every backend that
trains transformers (one fresh process each, tests/family_probe.py). Every family a backend runs must train and predict;
every family it cannot run must be refused up front naming a backend that runs it; the outcome must be what
bench/results/families.json records, because the docs' supported-models table is drawn from that file."""
import json, subprocess, sys
import pytest
from tpututor.models.families import FAMILIES, backends_for
from conftest import ROOT, clean_env

RECORD = ROOT/'bench'/'results'/'families.json'

def outcome(rows)->dict: return {f"{r['family']}/{r['form']}": r['status'] for r in rows}

@pytest.mark.parametrize('backend', ['keras', 'xla', 'torch', 'tf'])
def test_family_matrix(backend, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT/'tests'/'family_probe.py'), backend, str(tmp_path)], capture_output=True,
                       text=True, env=clean_env(), timeout=900)
    line = [l for l in r.stdout.splitlines() if l.startswith('MATRIX ')]
    assert r.returncode == 0 and line, f'{backend}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-4000:]}'
    rows = json.loads(line[-1][len('MATRIX '):])
    print('\n'.join(f"{x['family']:12} {x['form']:5} {x['task']:14} {x['status']:8} {x['seconds']:5.1f}s {x['error'][:120]}" for x in rows))
    assert {(x['family'], x['form']) for x in rows} == {(f, form) for f in FAMILIES for form in ('hub', 'bare')}
    for x in rows:
        runs = backend in backends_for(x['family'])
        assert x['status'] == ('ok' if runs else 'refused'), f"{backend} {x['family']} {x['form']}: {x['status']} {x['error']}"
        if not runs: assert any(f"'{b}'" in x['error'] for b in backends_for(x['family']) if b != 'bow'), x['error']
        if 'cosine' in x: assert x['cosine'] >= 0.999, f"{x['family']} {x['form']}: KerasHub's encoder differs from the checkpoint's (cosine {x['cosine']})"
    recorded = json.loads(RECORD.read_text())['here'].get(backend, {})
    assert outcome(recorded.get('rows', [])) == outcome(rows), (
        f"bench/results/families.json does not hold what the {backend} matrix shows today: run `./run.sh bench families` "
        f"so that the supported-models table says what holds")
