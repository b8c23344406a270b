"""Many hosts on one machine: `tpututor train --backend keras` as 2 processes x 4 JAX CPU devices joined on 127.0.0.1
(JAX's multi-controller runtime, what a TPU pod slice runs) must give the result of 1 process x 8 devices; process 0
alone writes the run directory; a host that dies ends the other with an error instead of a hang; a rerun resumes.
One two-host run is shared by both tests: process 1 is killed in fold 2 after folds 0 and 1 trained (fold 1 in the
same processes as fold 0), then the same command resumes fold 2; the resumed run's result is the two-host result."""
import re, signal, socket, subprocess, sys, time
from pathlib import Path
import numpy as np, pandas as pd
import pytest
from conftest import venv_bin, clean_env

ARGS = ['--backend', 'keras', '--folds', '3', '--epochs', '1', '--batch-size', '2', '--max-len', '32', '--lr', '1e-3']
HEARTBEAT = 5   # seconds: process 0 must stop this long after process 1 died (a scheduling stall of 5s is not expected)

@pytest.fixture(scope='module')
def job(tmp_path_factory):
    "A tiny model and 192 labelled rows, and the one-process, eight-device run to compare with"
    from tpututor.testing import tiny_model_dir
    from tpututor.data import rotten_tomatoes
    d = tmp_path_factory.mktemp('multihost')
    rt = rotten_tomatoes()
    tiny_model_dir(d/'tiny', rt.text[:2000], 'bert', vocab_size=500, hidden=32, layers=1, heads=2, max_len=64)
    rt.sample(192, random_state=0)[['text', 'label']].to_csv(d/'data.csv', index=False)
    args = ['train', *ARGS, '--data', str(d/'data.csv'), '--model', str(d/'tiny')]
    r = subprocess.run([venv_bin('tpututor'), *args, '--devices', '8', '--out', str(d/'one')], capture_output=True, text=True,
                       env=clean_env(TPUTUTOR_PROGRESS='lines'), timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert 'backend keras: JAX, 8 devices (cpu)' in r.stdout
    return d, args

def free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def start_hosts(args, out, heartbeat=100, tag=''):
    "Start process 0 and process 1 of a two-host run; (processes, their log files)"
    port, procs, logs = free_port(), [], []
    for i in range(2):
        log = Path(f'{out}{tag}.p{i}.log'); logs.append(log)
        procs.append(subprocess.Popen([venv_bin('tpututor'), *args, '--devices', '4', '--out', str(out), '--coordinator', f'127.0.0.1:{port}',
                                       '--num-processes', '2', '--process-id', str(i), '--heartbeat', str(heartbeat)],
                                      stdout=log.open('w'), stderr=subprocess.STDOUT, env=clean_env(TPUTUTOR_PROGRESS='lines')))
    return procs, logs

def finish(procs, logs, timeout=900):
    rcs = [p.wait(timeout=timeout) for p in procs]
    assert rcs == [0, 0], '\n'.join(f'--- process {i} (exit {rc})\n' + l.read_text()[-3000:] for i, (rc, l) in enumerate(zip(rcs, logs)))
    return [l.read_text() for l in logs]

@pytest.fixture(scope='module')
def two_hosts(job):
    "A two-host run whose process 1 is killed in fold 2 (what process 0 did then), and the same command again"
    d, args = job
    procs, logs = start_hosts(args, d/'two', heartbeat=HEARTBEAT, tag='.killed')
    t0 = time.time()
    while 'fold 2: training' not in logs[0].read_text():                            # folds 0 and 1 finished and written
        assert time.time() - t0 < 600 and procs[0].poll() is None, logs[0].read_text()[-3000:]
        time.sleep(0.5)
    procs[1].send_signal(signal.SIGKILL); t1 = time.time()
    try: rc = procs[0].wait(timeout=240)
    except subprocess.TimeoutExpired: procs[0].kill(); procs[0].wait(); rc = 'hung'
    print(f'process 0 ended {time.time() - t1:.0f}s after process 1 was killed, exit {rc}')
    killed = dict(rc=rc, log0=logs[0].read_text(), log1=logs[1].read_text(),
                  done=[(d/'two'/f'fold{i}'/'done.json').exists() for i in range(3)])
    return killed, finish(*start_hosts(args, d/'two'))                             # the same command again

def test_two_hosts_give_the_one_host_result(job, two_hosts):
    d, _ = job
    killed, (out0, out1) = two_hosts
    assert 'backend keras: JAX, 2 processes x 4 devices (cpu)' in killed['log0']
    assert 'backend keras: JAX, 2 processes x 4 devices (cpu)' in out0
    assert 'process 1: done; process 0 wrote' in out1 and not re.search(r'fold \d', out1)  # no writes, no fold logs
    assert not re.search(r'fold \d', killed['log1'])                                # nor did it in folds 0 and 1
    one, two = np.load(d/'one'/'oof.npy'), np.load(d/'two'/'oof.npy')   # folds 0, 1 from the killed run, 2 resumed
    np.testing.assert_allclose(two, one, atol=1e-4)                        # same batches, same sums up to float order
    assert pd.read_json(d/'two'/'summary.json', typ='series')['devices'] == 'JAX, 2 processes x 4 devices (cpu)'

def test_a_dead_host_ends_the_other_and_a_rerun_resumes(job, two_hosts):
    d, _ = job
    killed, (out0, _) = two_hosts
    assert killed['rc'] != 'hung', 'process 0 hung after process 1 died'
    assert killed['rc'] != 0 and 'heartbeat timeout' in killed['log0']
    assert killed['done'] == [True, True, False]                                     # folds 0 and 1 written, fold 2 not
    assert 'fold 0: finished earlier' in out0 and 'fold 1: finished earlier' in out0
    assert 'folds [0, 1] resumed' in out0
    np.testing.assert_allclose(np.load(d/'two'/'oof.npy'), np.load(d/'one'/'oof.npy'), atol=1e-4)
