"""dlrover-local: `python consumers/dlrover_local/main.py -e ENV` (the venv of scripts/setup)."""
import sys

from dlrover_local.consumer import main

if __name__ == "__main__":
    sys.exit(main())
