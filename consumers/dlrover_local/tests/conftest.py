import os
import sys

# The package lives beside tests/, not installed: import it from there.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
