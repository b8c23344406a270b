"""The Keras model a fold of the `keras` backend trains, and what builds it. The backend's other files take what they
need of it through `base.py` (the backbone, the task heads and losses, which backbones take packed rows);
`optimizer.py`, `convert.py`, `llm.py` and `packed.py` import nothing of the folder."""
