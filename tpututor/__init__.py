__version__ = "0.1.0"

import os as _os
if _os.environ.get('TPUTUTOR_RECORD_IMPORTS'):
    # A benchmark's run (bench/common.py): every process that imports tpututor, the benchmark's child processes and
    # theirs too, adds the tpututor modules it imported to this file when it exits, so that the run's record hashes
    # all the code that ran.
    def _list_imports(path=_os.environ['TPUTUTOR_RECORD_IMPORTS']):
        import sys
        with open(path, 'a') as f: f.write(' '.join(sorted(m for m in sys.modules if m.startswith('tpututor.'))) + '\n')
    import atexit as _atexit
    _atexit.register(_list_imports)
