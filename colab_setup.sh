#!/usr/bin/env bash
# Set the course up from a terminal (on Colab, or any machine with git and pip):
#     bash colab_setup.sh OWNER/REPO [BRANCH]
# colab_setup.py beside this file does the work (a notebook's first cell runs it too); $PYTHON picks the
# interpreter to install into (default: python3).
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/colab_setup.py" "$@"
