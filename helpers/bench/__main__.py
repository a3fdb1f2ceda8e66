"""python -m helpers.bench"""
import sys

from helpers.bench import main

sys.exit(main())
