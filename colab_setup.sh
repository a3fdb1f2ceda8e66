#!/usr/bin/env bash
# Colab set-up for "PageRank on the GPU": fetch the course at the branch or tag a notebook was synced from,
# and install its helpers package.
#
#   colab_setup.sh OWNER/REPO [CHECKOUT] [REF]
#
# CHECKOUT: the folder to clone into (a relative name goes under $PAGERANK_CHECKOUT_PARENT, default /content);
# REF: the branch or tag to clone (helpers/course.py: BRANCH; every notebook's first cell passes its own).
# The first cell downloads this script, checking the download, and runs it until it has succeeded once:
# the last step writes CHECKOUT/.course-installed, and while that marker is missing the cell runs this again.
# A clone that is complete and at REF is then kept and only the install repeated; a partial clone, or one
# at another commit, is removed and cloned afresh. Every failure stops with a message that says what to do.
# It keeps Colab's own CuPy (never reinstalls it) and installs the lectures' extra, never Jupyter (Colab has
# its own). Test hooks: PAGERANK_REPO_URL (what to clone), PAGERANK_PIP (the pip command).
set -euo pipefail
repo=${1:?usage: colab_setup.sh OWNER/REPO [CHECKOUT] [REF]}
folder=${2:-pagerank-on-the-gpu}
ref=${3:-main}
case $folder in
  /*) target=$folder ;;
  *) target=${PAGERANK_CHECKOUT_PARENT:-/content}/$folder ;;
esac
url=${PAGERANK_REPO_URL:-https://github.com/$repo}
pip=${PAGERANK_PIP:-python3 -m pip}
marker=$target/.course-installed

fail() {
  echo "colab_setup.sh: $*" >&2
  exit 1
}

# A complete clone whose checked-out files are those of REF's commit.
complete_at_ref() {
  local head want
  head=$(git -C "$target" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null) || return 1
  want=$(git -C "$target" rev-parse -q --verify "refs/remotes/origin/$ref^{commit}" 2>/dev/null) ||
    want=$(git -C "$target" rev-parse -q --verify "refs/tags/$ref^{commit}" 2>/dev/null) || return 1
  [ "$head" = "$want" ] && git -C "$target" diff --quiet HEAD -- 2>/dev/null
}

if [ -f "$marker" ]; then
  echo "the course is already set up in $target ($(cat "$marker"))"
  exit 0
fi

if [ -e "$target" ] && complete_at_ref; then
  echo "the course was fetched into $target before, but its install did not finish: installing again"
else
  if [ -e "$target" ]; then
    echo "$target holds an unfinished fetch of the course (or another version of it): fetching it again"
    rm -rf "$target"
  fi
  echo "fetching $repo at $ref from $url into $target"
  git clone -q --depth 1 --branch "$ref" "$url" "$target" ||
    fail "could not clone $url at '$ref'. Check that the repository exists and is public and that '$ref' is one of
its branches or tags. If the course lives elsewhere: set REPOSITORY and BRANCH in helpers/course.py, run
python -m helpers.course sync, push, and open the notebook from its new badge."
fi

if python3 -c "import cupy" 2>/dev/null; then
  echo "CuPy is already installed: keeping it"
  extras=lectures
else
  echo "CuPy is missing: installing the gpu extra (CuPy for CUDA 12) as well"
  extras=gpu,lectures
fi
echo "installing helpers and what the lectures import ($pip install -q -e $target[$extras])"
$pip install -q -e "$target[$extras]" ||
  fail "installing the course into this runtime failed (pip's messages above say why); run the cell again to retry."
echo "$ref $(git -C "$target" rev-parse HEAD)" >"$marker"
echo "the course is set up in $target: $repo at $ref (commit $(git -C "$target" rev-parse --short HEAD))"
