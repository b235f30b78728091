import sys

from dtrlab.cli import main

sys.exit(main())
