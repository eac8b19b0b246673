# str hashes are salted per process (PYTHONHASHSEED unset), so a set of 30 strings iterates in
# a different order on each torchrun rank. Ranks forked from one warm parent share its hash
# secret: the executor draws each rank's parent among several warm interpreters, and with more
# ranks than those, two ranks iterate alike (the pinned difference, see test_parity.py).
import torch.distributed as dist

dist.init_process_group("gloo")
words = {f"word-{i}" for i in range(30)}
order = list(words)
orders: list = [None] * dist.get_world_size()
dist.all_gather_object(orders, order)
print("set order differs on every rank:", len({tuple(o) for o in orders}) == len(orders))
print("order:", order)
dist.destroy_process_group()
