"""``python -m llmscaler_sim``: the same as the ``llmscaler-sim`` command."""

import sys

from llmscaler_sim.cli import main

sys.exit(main())
