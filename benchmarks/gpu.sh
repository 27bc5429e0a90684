#!/usr/bin/env bash
# PPO and SAC HalfCheetah on a CUDA GPU (eager, compiled, CUDA graphs), then the CUDA tests.
#
#   bash benchmarks/gpu.sh fetch   # here, with network: the wheels a bare GPU machine lacks
#   bash benchmarks/gpu.sh         # on the GPU machine (python3 with a CUDA torch), < 9 min
#
# A GPU machine without network gets the project's pure-Python and MuJoCo dependencies as
# wheels in .whl/ (made by `fetch`, for CPython 3.12 on x86-64 Linux); its own torch stays.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "fetch" ]; then
  rm -rf .whl && mkdir -p .whl
  for pkg in tensordict==0.15.3 pyvers hydra-core==1.3.8 omegaconf==2.3.1 \
      gymnasium==1.4.0 farama-notifications \
      mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 glfw pyopengl; do
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform any -d .whl "$pkg"
  done
  # omegaconf's parser runtime is published as a pure-Python source archive only
  $PY -m pip download -q --no-deps --no-binary=:all: -d .whl antlr4-python3-runtime==4.9.3
  ls .whl
  exit 0
fi

export PYTHONPATH=$PWD
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-build-isolation \
    --target /tmp/site .whl/*
  export PYTHONPATH=/tmp/site:$PWD
fi
export MUJOCO_GL=egl PYTHONUNBUFFERED=1
status=0
timeout 480 $PY benchmarks/gpu.py "$@" || status=1
timeout 60 $PY -m pytest -q -p no:cacheprovider tests/app/test_accelerator.py || status=1
exit $status
