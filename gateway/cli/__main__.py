"""`python -m gateway.cli`: the `callgate` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
