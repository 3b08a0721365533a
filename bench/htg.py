"""The numpy reader of hongtu graph files moved to python/hongtu/htg.py (the project's Python module,
docs/USAGE.md); this shim keeps `import htg` / `python3 bench/htg.py FILE.htg` working for bench/."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

from hongtu.htg import *  # noqa: E402,F401,F403
from hongtu.htg import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
