import sys

from cudoctor.cli import main

sys.exit(main())
