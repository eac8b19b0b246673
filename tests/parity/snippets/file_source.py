# The snippet is a real file: __file__ is an absolute path that exists and can be read back,
# inspect finds a function's source, sys.argv[0] is the name as launched, sys.path[0] is the
# snippet's folder. parity-marker: this line is in the snippet's own source.
import inspect
import os
import sys


def documented() -> int:
    """A function whose source inspect.getsource must find in the file."""
    return 42


print("__name__:", __name__)
print("__file__ basename:", os.path.basename(__file__))
print("__file__ is absolute:", os.path.isabs(__file__))
print("__file__ exists:", os.path.isfile(__file__))
with open(__file__) as handle:
    source = handle.read()
print("reads back its own source:", "parity-marker: this line" in source)
print("source lines:", len(source.splitlines()))
print("inspect.getsource finds documented():", "return 42" in inspect.getsource(documented))
print("sys.argv:", [os.path.basename(arg) for arg in sys.argv])
print("sys.argv[0] == __file__:", sys.argv[0] == __file__)
print("sys.path[0] is the snippet's folder:", sys.path[0] == os.path.dirname(__file__))
print("__spec__:", __spec__)
print("__cached__:", globals().get("__cached__"))
