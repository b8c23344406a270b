"""The torch core's model: `base.py` (the Hugging Face encoder, the task heads and losses, AdamW's parameter groups),
and `packed.py` (several texts to a row), which only `base.py` of this folder imports."""
