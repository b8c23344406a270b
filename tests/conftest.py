import os, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'

def venv_bin(name):
    "Path of console script `name` beside the running interpreter"
    return str(Path(sys.executable).parent / name)

def clean_env(**extra):
    "The environment for child processes: no IN_TEST (it turns nbdev-export into a no-op), quiet TF"
    env = {k: v for k, v in os.environ.items() if k != 'IN_TEST'}
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    return {**env, **extra}
