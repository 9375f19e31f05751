"""``python -m examples.runner [sklearn|pytorch|transformers|all ...]``: see ``cli.py``."""

import sys

from examples.runner.cli import main

sys.exit(main())
