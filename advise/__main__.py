import sys

from tpu_matmul_repro.advise.cli import main

sys.exit(main())
