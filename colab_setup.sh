#!/usr/bin/env bash
# Colab set-up for "PageRank on the GPU": fetch the course once and install its helpers package.
# Called by the first cell of every lecture as: curl -fsSL .../colab_setup.sh | bash -s OWNER/REPO FOLDER
# It keeps Colab's own CuPy (never reinstalls it), and says plainly when no GPU is attached.
set -euo pipefail
repo=${1:?usage: colab_setup.sh OWNER/REPO [FOLDER]}
folder=${2:-pagerank-on-the-gpu}
target=${PAGERANK_CHECKOUT_PARENT:-/content}/$folder
url=${PAGERANK_REPO_URL:-https://github.com/$repo}
pip=${PAGERANK_PIP:-python3 -m pip}

if [ -d "$target/.git" ]; then
  echo "course already fetched in $target"
else
  echo "fetching the course from $url into $target"
  git clone -q --depth 1 "$url" "$target"
fi

if python3 -c "import cupy" 2>/dev/null; then
  echo "CuPy is already installed: keeping it"
  $pip install -q -e "$target"
else
  echo "CuPy is missing: installing the gpu extra (CuPy for CUDA 12)"
  $pip install -q -e "$target[gpu]"
fi

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU: $(nvidia-smi -L | head -n 1)"
else
  echo "GPU: none attached. The CPU lectures (01-03, 30) run as they are; the GPU lectures need one:"
  echo "     Runtime > Change runtime type > T4 GPU, then run the notebook again from the top."
fi
