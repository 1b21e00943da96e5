import sys

from fastslow.cli import main

sys.exit(main())
