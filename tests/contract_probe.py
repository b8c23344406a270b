"""Run the backend contract on one backend in this (fresh) process and print what was observed as JSON.

Used by tests/test_backends.py: each backend gets a process of its own (TensorFlow and torch_xla cannot always
share one), and the test compares what every backend reports."""
import json, sys, tempfile
from pathlib import Path
import numpy as np

def main(name, workdir):
    from tpututor.backends.registry import get_backend, backend_class
    backend_class(name).start_devices(8)   # keras: the virtual TPU, eight JAX CPU devices, data parallel
    from tpututor.backends.base import Backend
    from tpututor.loop import History, EPOCH_KEYS
    from tpututor.config import TrainConfig
    from tpututor.data import rotten_tomatoes
    from tpututor.testing import tiny_model_dir
    from tpututor.encoding import encode
    work = Path(workdir)
    rt = rotten_tomatoes().sample(200, random_state=3).reset_index(drop=True)
    tiny = work/'tiny'
    if not tiny.exists():
        tiny_model_dir(tiny, rotten_tomatoes().text[:2000], 'bert', vocab_size=500, hidden=32, layers=1, heads=2, max_len=64)
    enc = encode(str(tiny), rt.text, max_len=32)
    y = rt.label.values
    tr, va, pr = enc[:120], enc[120:160], enc[160:197]          # 37 rows to predict: a ragged last batch
    cfg = TrainConfig(model=str(tiny), n_outputs=2, max_len=32, batch_size=8, epochs=2, lr=1e-3, seed=0)
    be = get_backend(name, verbose=False)
    out = {'replicas': be.replicas(), 'is_backend': isinstance(be, Backend)}
    model, hist = be.fit(cfg, tr, y[:120], va, y[120:160])
    out['history_type'] = type(hist).__name__
    out['epoch_keys'] = sorted(hist.records[0]) if hist.records else []
    out['epochs'] = hist['epoch']
    out['best_epoch_ok'] = hist.best_epoch in hist['epoch']
    out['val_loss_is_table_loss'] = bool(np.isclose(hist['val_loss'][hist.best_epoch - 1],
                                                    cfg.spec.loss_np(y[120:160], be.predict(cfg, model, va)), atol=1e-4))
    out['json_round_trip'] = History.from_dict(json.loads(json.dumps(hist.to_dict()))) == hist
    p = be.predict(cfg, model, pr)
    out['shape'] = list(p.shape)
    perm = np.random.default_rng(0).permutation(len(pr))
    out['input_order'] = bool(np.allclose(be.predict(cfg, model, pr[perm]), p[perm], atol=1e-5))
    out['probabilities'] = bool(np.allclose(p.sum(1), 1, atol=1e-4))
    with tempfile.TemporaryDirectory() as d:
        be.save(model, Path(d)/'w.safetensors')
        m2 = be.load(cfg, Path(d)/'w.safetensors')
        out['save_load_same'] = bool(np.allclose(be.predict(cfg, m2, pr), p, atol=1e-5))
        be.done_with(m2)
    be.done_with(model)
    # the same seed again; a backend that saves its fold state: stopped after its first save, then continued from it
    out['resumable'], out['why_not_resumable'] = bool(be.resumable), be.why_not_resumable
    kw, cr, ref = {}, cfg, p
    if be.resumable:
        from tpututor.rundir import FoldState, StateStop
        cr = cfg.replace(batch_size=max(1, cfg.batch_size // be.replicas()))   # steps enough for a save inside an epoch
        if cr != cfg:
            m, _ = be.fit(cr, tr, y[:120], va, y[120:160]); ref = be.predict(cr, m, pr); be.done_with(m)
        folder = Path(tempfile.mkdtemp())/'state'
        try: be.fit(cr, tr, y[:120], va, y[120:160], state=FoldState(folder, minutes=0, steps=4, stop_after=1))
        except StateStop: out['stopped'] = json.loads((folder/'state.json').read_text())['step']
        kw = {'state': FoldState(folder, minutes=0, steps=4)}
    model, _ = be.fit(cr, tr, y[:120], va, y[120:160], **kw)
    out['same_seed_same'] = float(np.abs(be.predict(cr, model, pr) - ref).max())
    be.done_with(model)
    cb = cfg.replace(buckets=2, epochs=1)                          # length buckets: still every row, in order
    model, _ = be.fit(cb, tr, y[:120])
    pb = be.predict(cb, model, pr)
    out['buckets_shape'] = list(pb.shape)
    out['buckets_input_order'] = bool(np.allclose(be.predict(cb, model, pr[perm]), pb[perm], atol=1e-5))
    be.done_with(model)
    try: be.fit(cfg, tr, np.full(120, 5)); out['bad_target'] = None
    except ValueError as e: out['bad_target'] = str(e)
    print('CONTRACT ' + json.dumps(out))

if __name__ == '__main__': main(sys.argv[1], sys.argv[2])
