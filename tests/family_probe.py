"""The family matrix on one backend, in this (fresh) process: tiny random checkpoints of every encoder family, saved
as the hub saves them and as bare encoders, each fitted one epoch and predicted through the backend's API
(classification for the hub-saved ones, the siamese pair task for the bare ones). Prints the rows as JSON.

For keras it also checks that each converted encoder is the checkpoint's network: KerasHub's token vectors against
transformers' torch model on the same rows (cosine similarity of every real token's vector).
Run by bench/bench_families.py (recorded; tests/test_families.py checks the record); `python tests/family_probe.py BACKEND WORKDIR [FAMILY,...]` (default: every family)."""
import json, os, sys
from pathlib import Path
if sys.argv[1] != 'xla': os.environ.setdefault('USE_TORCH_XLA', '0')
if sys.argv[1] != 'tf': os.environ.setdefault('USE_TF', '0')   # transformers would import TensorFlow (and Keras on it) to build the checkpoints

def same_as_torch(folder)->float:
    "The lowest cosine similarity between KerasHub's and transformers' vector of a real token, on 8 reviews"
    import numpy as np, torch, transformers
    from tpututor.config import TrainConfig, features
    from tpututor.backends.keras.model.base import load_backbone, sequence_output, input_fields, KERAS_INPUTS
    from tpututor.encoding import encode
    from tpututor.data import rotten_tomatoes
    enc = encode(str(folder), rotten_tomatoes().text[:8].tolist(), max_len=24)
    bb = load_backbone(TrainConfig(model=str(folder)))
    x = features(enc)
    ours = np.asarray(sequence_output(bb({KERAS_INPUTS[f]: x[f] for f in input_fields(bb)})), np.float32)
    ref_model = transformers.AutoModel.from_pretrained(folder, attn_implementation='eager').eval()
    import inspect; takes = inspect.signature(ref_model.forward).parameters
    with torch.no_grad():
        ref = ref_model(**{k: torch.tensor(v, dtype=torch.long) for k, v in x.items() if k in takes}).last_hidden_state.numpy()
    m = enc.attention_mask.astype(bool)
    return float(((ours[m] * ref[m]).sum(-1) / np.linalg.norm(ours[m], axis=-1) / np.linalg.norm(ref[m], axis=-1)).min())

def main(backend, workdir, families=None):
    if backend == 'keras':
        from tpututor.devices.jax import virtual_jax, import_keras; virtual_jax(8); import_keras()   # the virtual TPU, Keras on JAX
    if backend == 'tf':
        from tpututor.devices.frameworks import import_tf; import_tf()   # Keras 2 for transformers' TF models, before transformers loads
    from tpututor.models.families import FAMILIES
    from tpututor.testing import tiny_checkpoint, run_matrix
    from tpututor.data import rotten_tomatoes
    work, texts = Path(workdir), rotten_tomatoes().text.tolist()[:1000]
    runs = []
    for fam in (families.split(',') if families else FAMILIES):
        for form, task in (('hub', 'classification'), ('bare', 'siamese')):
            folder = work/f'{fam}-{form}'
            if not (folder/'model.safetensors').exists(): tiny_checkpoint(folder, texts, fam, form)
            runs.append((folder, task))
    rows = run_matrix(backend, runs)
    for r, (folder, _) in zip(rows, runs):
        r['form'] = folder.name.rsplit('-', 1)[1]
        if backend == 'keras' and r['status'] == 'ok': r['cosine'] = same_as_torch(folder)
    print('MATRIX ' + json.dumps(rows))

if __name__ == '__main__': main(*sys.argv[1:4])
