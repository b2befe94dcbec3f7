"""`python -m entrypoints.cli`, as the `club` script."""

from entrypoints.cli.main import main

raise SystemExit(main())
