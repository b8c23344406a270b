"""Run the benchmarks, each in a fresh process (TensorFlow and torch_xla must not share one).
Usage: python bench/run.py [NAME ...]   NAME: the part after bench_ (default: all of bench/bench_*.py)"""
import subprocess, sys
from pathlib import Path

here = Path(__file__).resolve().parent
names = sys.argv[1:] or sorted(p.stem[6:] for p in here.glob('bench_*.py'))
failed = [n for n in names if subprocess.run([sys.executable, str(here / f'bench_{n}.py')], cwd=here).returncode]
if failed: sys.exit(f'failed: {failed}')
