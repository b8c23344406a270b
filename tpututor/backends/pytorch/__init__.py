"""The folder `tpututor/backends/pytorch/` is the torch core that the `torch` and `xla` backends share, and neither
owns. Its files import one another only through a folder's `base.py`:

- `base.py`: the epoch body, fit and evaluation, each step asked of a device adapter
  (`tpututor.devices.torch`, `tpututor.devices.xla`); `torch` and `xla` import the whole core through it alone;
- `batches.py`: datasets and batch plans in a few static shapes (length buckets), prediction in input order, the
  validation loss, weights saved and loaded as safetensors;
- `state.py`: a fold's state saved and resumed mid-fold;
- `model/base.py`: the model and its task heads (`HEADS`), losses, AdamW's parameter groups;
- `model/packed.py`: several texts to a row, attention kept within each text, one output a text."""
