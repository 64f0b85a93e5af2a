"""``python -m eqi_core.cli``: the ``eqi`` command."""
from eqi_core.cli import main

main()
