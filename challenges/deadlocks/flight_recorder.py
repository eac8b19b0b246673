import pickle

import torch
import torch.distributed as dist

torch.cuda.set_device(0)
dist.init_process_group("nccl")
t = torch.ones(4, device="cuda")
dist.all_reduce(t)
dist.broadcast(t, src=0)
torch.cuda.synchronize()
# What the flight recorder holds right now: a pickled dict, one entry per collective.
trace = pickle.loads(torch._C._distributed_c10d._dump_nccl_trace())
print(len(trace["entries"]), [entry["profiling_name"] for entry in trace["entries"]])
dist.destroy_process_group()
