import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Linear(8, 6)
fully_shard(model)
STEP = 120  # the step the job had reached when it saved
dcp.save({"model": model.state_dict(), "step": STEP}, checkpoint_id="/tmp/ckpt")

state = {"model": model.state_dict(), "step": 0}  # what a restarted job would pass in
dcp.load(state, checkpoint_id="/tmp/ckpt")
print(f"resume at step {state['step']}")
dist.destroy_process_group()
