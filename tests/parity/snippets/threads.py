# Thread counts a rank starts with: torchrun sets OMP_NUM_THREADS=1 when it starts more than one
# worker, and torch reads it at import; a plain `python snippet.py` uses every core it may.
import os

import torch

print("OMP_NUM_THREADS:", os.environ.get("OMP_NUM_THREADS"))
print("MKL_NUM_THREADS:", os.environ.get("MKL_NUM_THREADS"))
print("torch.get_num_threads():", torch.get_num_threads())
print("torch.get_num_interop_threads():", torch.get_num_interop_threads())
print("cores available:", len(os.sched_getaffinity(0)))
