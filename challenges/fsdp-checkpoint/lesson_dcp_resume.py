import os
import shutil

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
folder = f"/tmp/lesson_ckpt_{os.environ['MASTER_PORT']}"  # one folder per run, seen by both ranks


def build(seed):
    torch.manual_seed(seed)
    model = nn.Linear(3, 4, bias=False)
    fully_shard(model)
    return model


model = build(seed=0)
saved = model.weight.to_local().clone()
dcp.save({"model": model.state_dict(), "step": 120}, checkpoint_id=folder)  # every rank writes

# A restart: build the same sharded model (fresh weights), then load into it.
model = build(seed=1)
before = torch.equal(model.weight.to_local(), saved)
state = {"model": model.state_dict(), "step": 0}
dcp.load(state, checkpoint_id=folder)  # every rank reads, into the tensors of `state`
after = torch.equal(model.weight.to_local(), saved)
print(f"rank {dist.get_rank()}: shard equal to the saved one: before load {before}, after {after}; step {state['step']}", flush=True)

dist.barrier()  # nobody is still reading when rank 0 removes the folder
if dist.get_rank() == 0:
    shutil.rmtree(folder)
dist.destroy_process_group()
