"""``python -m infercast`` runs the CLI."""

from infercast.cli import main

raise SystemExit(main())
