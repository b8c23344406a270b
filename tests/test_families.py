"""The family matrix: eight encoder families, saved as the hub saves them and as bare encoders, on every backend that
trains transformers. It runs in `./run.sh bench families` (tests/family_probe.py, one fresh process per backend, about
seven minutes) and its rows are recorded in bench/results/families.json, with a hash of the code it ran (the probe and
every tpututor module it imported) and the versions; the docs' supported-models table is drawn from that file.
tests/test_project.py::test_records_are_sound fails when the probe or the bench changed since; a change in the library
since is shown above the table (its date, commit and the modules changed), until `./run.sh bench --stale` runs it again.
The smoke run (`bench/run.py --smoke`) runs the probe itself on one family; the suite's (`--smoke --stale`) does so
whenever the record is not current.
Every family a backend runs must have trained and predicted; every family it cannot run must have been refused up
front naming a backend that runs it."""
import json
import pytest
from tpututor.models.families import FAMILIES, backends_for
from conftest import ROOT, stale_records

RECORD = ROOT/'bench'/'results'/'families.json'

def _stale_here(backend:str)->list:
    "Why the 'here' record of `backend` must be made again (its probe or bench changed, or it carries no hashes)"
    return [s['why'] for s in stale_records()
            if s['file'] == 'families.json' and s['where'] == f'/here/{backend}' and s['fails']]

@pytest.mark.parametrize('backend', ['keras', 'xla', 'torch', 'tf'])
def test_family_matrix(backend):
    rec = json.loads(RECORD.read_text())['here']
    assert backend in rec, f'bench/results/families.json has no {backend} matrix: run `./run.sh bench families {backend}`'
    why = _stale_here(backend)
    assert not why, f'the {backend} matrix must be recorded again ({why}): run `./run.sh bench families {backend}`'
    rows = rec[backend]['rows']
    print('\n'.join(f"{x['family']:12} {x['form']:5} {x['task']:14} {x['status']:8} {x['seconds']:5.1f}s {x['error'][:120]}" for x in rows))
    assert sorted((x['family'], x['form']) for x in rows) == sorted((f, form) for f in FAMILIES for form in ('hub', 'bare'))
    for x in rows:
        runs = backend in backends_for(x['family'])
        assert x['status'] == ('ok' if runs else 'refused'), f"{backend} {x['family']} {x['form']}: {x['status']} {x['error']}"
        if not runs: assert any(f"'{b}'" in x['error'] for b in backends_for(x['family']) if b != 'bow'), x['error']
        if backend == 'keras' and runs:   # each converted encoder is the checkpoint's network
            assert x['cosine'] >= 0.999, f"{x['family']} {x['form']}: KerasHub's encoder differs from the checkpoint's (cosine {x['cosine']})"
