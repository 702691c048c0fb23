import sys

from advise.cli import main

sys.exit(main())
