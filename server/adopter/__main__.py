"""`python -m adopter` runs the CLI."""

from __future__ import annotations

import sys

from adopter.cli import main

sys.exit(main())
