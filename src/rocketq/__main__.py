import sys

from rocketq.cli.main import main

sys.exit(main())
