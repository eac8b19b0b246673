import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
sharded = nn.Linear(8, 6)
fully_shard(sharded)
dcp.save({"model": sharded.state_dict()}, checkpoint_id="/tmp/ckpt")
full = sharded.weight.full_tensor()  # the whole weight, gathered (for the check below)

plain = nn.Linear(8, 6)  # no sharding at all: every rank wants the whole model
state = {"model": plain.state_dict()}
result = dcp.load(state, checkpoint_id="/tmp/ckpt")  # fills state's tensors in place
print(f"returned {result}, weights equal: {torch.equal(plain.weight, full)}")
dist.destroy_process_group()
