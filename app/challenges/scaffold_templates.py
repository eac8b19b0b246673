"""The files `ranklab new` writes: a set, a topic and a lab that validate and verify as they are.

Each template is a working example on 2 gloo ranks (every key here was observed with torch
2.13.0+cpu), meant to be edited into the author's own content. Guidance for the author sits in
YAML comments, never in learner-facing text (`ranklab validate` flags notes to authors there).
Placeholders are string.Template's: ${id}, ${title}, ${topic}, ${schema}, ${fact}; a literal
dollar sign is written $$.

Pure: the standard library only.
"""

from __future__ import annotations

from string import Template

# ── a challenge set: 5 items (the floor), 3 of them run by `ranklab verify` ───────────────────

SET_YAML = Template("""\
# yaml-language-server: $$schema=${schema}
# Written by `ranklab new set`: a working example that passes `ranklab validate` and
# `ranklab verify` as it is. Edit each item into your own (docs/authoring.md; docs/first-topic.md
# walks through it); keep the ids stable once learners have answered. The floors of a topic: a
# set of at least 5 items, at least half of them run by `ranklab verify` (predict_output,
# debug, or numeric with `printed:`). Every item names the one `fact:` it asks (global across
# topics), and guessing must earn the badge less than 1% of the time: 4 options an item is
# safer than 3 (`ranklab validate` says the chance when it is too high).
id: ${id}
title: ${title}
topic: ${topic}
description: |
  Five timed questions on what `all_reduce` and `broadcast` leave on each rank, and on what
  every rank needs before it can call a collective.
badge:
  name: ${title} badge
  icon: award

items:
  # A predict-output item: every option needs an `outcome:`, the key must be what the ranks
  # print, and every distractor must be shown false by a run.
  - id: all-reduce-sum
    fact: ${fact}-all-reduce-sum-on-every-rank
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: What does all_reduce leave on each rank?
    prompt: |
      Two ranks run this snippet with the gloo backend. What is the output?
    code_file: all_reduce_sum.py
    launch: {nproc: 2, backend: gloo, timeout_s: 20}
    options:
      - id: A
        text: "`sum 3.0` on every rank"
        feedback: "Yes: 1.0 + 2.0, written in place into `t` on every rank."
        outcome:
          ranks:
            all: {stdout: "sum 3.0\\n"}
      - id: B
        text: "`sum 1.0` on rank 0 and `sum 2.0` on rank 1"
        feedback: That is each rank's tensor before the call; `all_reduce` changes it in place.
        outcome:
          ranks:
            "0": {stdout: "sum 1.0\\n"}
            "1": {stdout: "sum 2.0\\n"}
      - id: C
        text: "`sum 3.0` on rank 0 only, and `sum 2.0` on rank 1"
        feedback: That is what `reduce` to rank 0 would aim for; `all_reduce` gives every rank the result.
        outcome:
          ranks:
            "0": {stdout: "sum 3.0\\n"}
            "1": {stdout: "sum 2.0\\n"}
    answer: A
    explanation: |
      `all_reduce` sums every rank's `t` and writes the result into `t` on every rank:
      1.0 + 2.0 = 3.0. Observed (torch 2.13.0+cpu, gloo):

      ```text
      rank 0: sum 3.0
      rank 1: sum 3.0
      ```

  - id: broadcast-from-rank-1
    fact: ${fact}-broadcast-copies-src
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: Whose value does broadcast copy?
    prompt: |
      Two ranks run this snippet with the gloo backend. What is the output?
    code_file: broadcast_src1.py
    launch: {nproc: 2, backend: gloo, timeout_s: 20}
    options:
      - id: A
        text: "`value 10.0` on every rank"
        feedback: "Yes: rank 1 is the source, and its 10.0 is copied into `t` on rank 0."
        outcome:
          ranks:
            all: {stdout: "value 10.0\\n"}
      - id: B
        text: "`value 0.0` on every rank"
        feedback: Rank 0 is not special to `broadcast`; `src=1` names the rank that sends.
        outcome:
          ranks:
            all: {stdout: "value 0.0\\n"}
      - id: C
        text: "`value 0.0` on rank 0 and `value 10.0` on rank 1"
        feedback: "`broadcast` overwrites `t` on every rank but the source."
        outcome:
          ranks:
            "0": {stdout: "value 0.0\\n"}
            "1": {stdout: "value 10.0\\n"}
    answer: A
    explanation: |
      `dist.broadcast(t, src=1)` copies rank 1's `t` into `t` on every other rank. Observed
      (torch 2.13.0+cpu, gloo): `value 10.0` on both ranks.

  # A debug item: `failure:` is what the executor must observe; the fix (fixed_code_file) must
  # run cleanly on every rank.
  - id: missing-init
    fact: ${fact}-collective-needs-init
    kind: debug
    category: Debug
    difficulty: beginner
    title: Why does this fail at once?
    prompt: |
      Two ranks run this snippet under torchrun. Every rank fails on the `all_reduce` line.
      Why?
    code_file: missing_init.py
    fixed_code_file: missing_init_fixed.py
    launch: {nproc: 2, backend: gloo, timeout_s: 20}
    failure:
      ranks:
        all: {exception: ValueError, message_regex: 'not been initialized'}
    options:
      - id: A
        text: It never calls `dist.init_process_group`, so there is no default process group.
        feedback: Yes. Under torchrun it reads its rank and peers from the environment.
      - id: B
        text: The gloo backend cannot reduce a one-element tensor; it needs two or more.
        feedback: gloo reduces tensors of any size, one element included.
      - id: C
        text: "`all_reduce` needs its `op=` argument: it has no default reduction."
        feedback: "`op` defaults to `ReduceOp.SUM`."
      - id: D
        text: The tensor must be on a GPU; collectives never take CPU tensors.
        feedback: gloo runs collectives on CPU tensors; it is NCCL that needs GPU tensors.
    answer: A
    explanation: |
      A collective runs in a process group; `dist.init_process_group("gloo")` creates the
      default one. Without it, torch 2.13 raises `ValueError: Default process group has not
      been initialized, please make sure to call init_process_group.` on every rank.

  - id: world-size
    fact: ${fact}-world-size-counts-ranks
    kind: choice
    category: Conceptual
    difficulty: beginner
    title: What is the world size?
    prompt: |
      After `torchrun --nproc_per_node=4 train.py` on one machine, what does
      `dist.get_world_size()` return?
    options:
      - id: A
        text: "4"
        feedback: "Yes: one process per `--nproc_per_node`, and every one is a rank."
      - id: B
        text: "1"
        feedback: That counts machines (nodes), not ranks.
      - id: C
        text: "3"
        feedback: That is the highest rank number; ranks count from 0.
      - id: D
        text: "0"
        feedback: That is the rank of the first process, not how many there are.
    answer: A
    explanation: The world size counts every rank of the default process group; 4 here.

  # A numeric item whose answer is proven by a run: verify runs the snippet and compares the
  # number rank 0 prints (the regex's one group; without a regex, the whole output) with
  # `answer`, within `tolerance`. Without `printed:`, a numeric item is not run.
  - id: sum-of-three-ranks
    fact: ${fact}-all-reduce-sum-three-ranks
    kind: numeric
    category: Predict Output
    difficulty: intermediate
    title: Three ranks
    prompt: |
      Three ranks run this snippet with the gloo backend. What number does rank 0 print?
    code_file: sum_three_ranks.py
    launch: {nproc: 3, backend: gloo, timeout_s: 20}
    printed: {rank: 0, regex: 'sum ([-\\d.]+)'}
    answer: 6
    tolerance: 0
    explanation: |
      Each rank holds `rank + 1`: 1 + 2 + 3 = 6, on every rank after `all_reduce`.
""")

ALL_REDUCE_SUM = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank + 1)])  # rank 0 holds 1.0, rank 1 holds 2.0
dist.all_reduce(t, op=dist.ReduceOp.SUM)
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

BROADCAST_SRC1 = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank * 10)])  # rank 0 holds 0.0, rank 1 holds 10.0
dist.broadcast(t, src=1)
print(f"value {t.item()}")
dist.destroy_process_group()
"""

MISSING_INIT = """\
import torch
import torch.distributed as dist

t = torch.tensor([1.0])
dist.all_reduce(t)
print(f"sum {t.item()}")
"""

MISSING_INIT_FIXED = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([1.0])
dist.all_reduce(t)
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

SUM_THREE_RANKS = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

SET_FILES = {
    "all_reduce_sum.py": ALL_REDUCE_SUM,
    "broadcast_src1.py": BROADCAST_SRC1,
    "missing_init.py": MISSING_INIT,
    "missing_init_fixed.py": MISSING_INIT_FIXED,
    "sum_three_ranks.py": SUM_THREE_RANKS,
}

# ── a topic: a lesson, 8 cards, 2 explain-it items, a cheat sheet and a named proof ─────────────────────

_DOCS = "https://docs.pytorch.org/docs/2.13/distributed.html"

TOPIC_YAML = Template(
    """\
# yaml-language-server: $$schema=${schema}
# Written by `ranklab new topic`: a working example that passes `ranklab validate` and
# `ranklab verify` as it is. Edit it into your own topic (docs/authoring.md). The floors of a
# topic: at least 8 cards, 2 explain-it items and a cheat sheet, plus a set of at least 5 items
# that names this topic (`ranklab new set NAME --topic ${id}`). Every card rests on a `proof:`
# (a run, checked by `ranklab verify`) or a `source:` (a docs page or torch source path, with
# the torch version read); `fact:` slugs are global across topics, so keep them unique.
id: ${id}
title: ${title}
order: 100
summary: |
  What a rank and the world size are, and what the basic collectives (`all_reduce`,
  `broadcast`) leave on each rank.
cheat_sheet_file: cheatsheet.md

# The lesson is the first thing a learner sees: short sections, each with examples the learner
# predicts and then runs. `ranklab verify` runs every example and checks `output:` (per rank).
lesson:
  title: Ranks and collectives
  intro: |
    Every rank runs the same script. A collective is a call every rank makes together; what it
    leaves on each rank is what you will predict here, then run.
  sections:
    - id: all-reduce
      title: What all_reduce leaves on each rank
      body: |
        Each rank holds its own tensor. `dist.all_reduce(t)` sums them and writes the sum into
        `t`, in place, on every rank.
      examples:
        - id: sum-two-ranks
          code_file: lesson_all_reduce.py
          launch: {nproc: 2, backend: gloo, timeout_s: 20}
          predict:
            rank: 1
          output:
            all: "sum 8.0\n"
          after: Rank 0 held 3.0 and rank 1 held 5.0; both now hold 8.0.
    - id: broadcast
      title: What broadcast copies
      body: |
        `dist.broadcast(t, src)` copies rank `src`'s tensor into `t` on every other rank.
      examples:
        - id: broadcast-from-rank-1
          code: |
            import torch
            import torch.distributed as dist

            dist.init_process_group("gloo")
            t = torch.tensor([float(dist.get_rank() + 5)])
            dist.broadcast(t, src=1)
            print(f"value {t.item()}")
            dist.destroy_process_group()
          launch: {nproc: 2, backend: gloo, timeout_s: 20}
          predict:
            prompt: What does rank 0 print?
            options:
              - {id: A, text: "`value 6.0`"}
              - {id: B, text: "`value 5.0`"}
            answer: A
          output:
            all: "value 6.0\n"
          after: Rank 1 held 6.0, and broadcast copied it to rank 0.
  # The closing check: a pool of questions, of which a try asks `check_asks` (2 or 3); passing
  # one try completes the lesson. A wrong pick shows its option's feedback and a link to the
  # section named in `reread:`; a retry draws questions not missed yet, so the pool must be
  # larger than a try, and every wrong option needs feedback (validate checks both).
  check_asks: 2
  reread:
    where-the-sum-goes: all-reduce
    who-calls-a-collective: broadcast
    what-broadcast-leaves: broadcast
  check:
    - id: where-the-sum-goes
      kind: choice
      category: Conceptual
      difficulty: beginner
      title: Where the sum goes
      prompt: Where does `dist.all_reduce(t)` put the sum?
      options:
        - {id: A, text: "Into `t`, on every rank"}
        - id: B
          text: "Into its return value, on rank 0"
          feedback: The call returns `None`; nothing comes back from it to read.
        - id: C
          text: "Into `t`, on rank 0 only"
          feedback: Rank 0 is not special to `all_reduce`; one rank's result is what `reduce` aims for.
      answer: A
      explanation: In place, into `t`, on every rank.
    - id: who-calls-a-collective
      kind: choice
      category: Conceptual
      difficulty: beginner
      title: Who calls a collective
      prompt: Which ranks call `dist.broadcast(t, src=1)`?
      options:
        - {id: A, text: Every rank}
        - id: B
          text: Rank 1 only
          feedback: A collective that one rank calls alone never completes; the receivers call it too.
        - id: C
          text: Every rank but rank 1
          feedback: The source takes part in the call as well; `src` only says whose tensor is sent.
      answer: A
      explanation: A collective is called by every rank; `src` only says whose tensor is copied.
    - id: what-broadcast-leaves
      kind: choice
      category: Conceptual
      difficulty: beginner
      title: What a receiver holds
      prompt: After `dist.broadcast(t, src=1)`, what does `t` hold on rank 0?
      options:
        - {id: A, text: "Rank 1's tensor"}
        - id: B
          text: "Its own tensor"
          feedback: A receiving rank's tensor is overwritten; what it held before is gone.
        - id: C
          text: "The two added"
          feedback: "`broadcast` copies; adding the ranks' tensors is what `all_reduce` does."
      answer: A
      explanation: "`broadcast` copies rank `src`'s tensor into `t` on every other rank."

proofs:
  - id: sum-on-every-rank
    code_file: proof_all_reduce.py
    launch: {nproc: 2, backend: gloo, timeout_s: 20}
    outcome:
      ranks:
        all: {stdout: "sum 3.0\\n"}

cards:
  - id: all-reduce-card
    fact: ${fact}-all-reduce-every-rank
    front: What does `dist.all_reduce(t)` leave on each rank?
    back: The sum of every rank's `t`, written in place into `t` on every rank.
    proof: sum-on-every-rank

  - id: world-size-card
    fact: ${fact}-world-size
    front: What does `dist.get_world_size()` return?
    back: The number of ranks (processes) in the default process group.
    source: {url: "DOCS#torch.distributed.get_world_size", torch: "2.13.0"}

  - id: rank-card
    fact: ${fact}-rank-numbers
    front: Which numbers can `dist.get_rank()` return?
    back: 0 to world size − 1; each process of the group has its own.
    source: {url: "DOCS#torch.distributed.get_rank", torch: "2.13.0"}

  - id: broadcast-card
    fact: ${fact}-broadcast-src
    front: What does `dist.broadcast(t, src=1)` leave in `t`?
    back: Rank 1's `t`, copied in place into `t` on every rank.
    source: {url: "DOCS#torch.distributed.broadcast", torch: "2.13.0"}

  - id: gloo-card
    fact: ${fact}-gloo-cpu
    front: Which backend runs collectives on CPU tensors?
    back: gloo (NCCL handles CUDA tensors only).
    source: {url: "DOCS#backends", torch: "2.13.0"}

  - id: init-card
    fact: ${fact}-init-from-env
    front: Under torchrun, where does `dist.init_process_group("gloo")` find its rank and peers?
    back: "In the environment torchrun sets: `RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`."
    source: {url: "DOCS#environment-variable-initialization", torch: "2.13.0"}

  - id: same-order-card
    fact: ${fact}-same-calls-same-order
    front: What must every rank of a group do for a collective to complete?
    back: Call the same collective, in the same order as the other ranks.
    source: {url: "DOCS#collective-functions", torch: "2.13.0"}

  - id: destroy-card
    fact: ${fact}-destroy-process-group
    front: What does a script call before it exits, once it is done with collectives?
    back: "`dist.destroy_process_group()`, which releases the process group."
    source: {url: "DOCS#torch.distributed.destroy_process_group", torch: "2.13.0"}

items:
  # Explain-it items: the model answer must cover every concept (validate checks it).
  - id: explain-all-reduce
    kind: explain
    difficulty: beginner
    title: What all_reduce does
    prompt: |
      Each rank holds a tensor `t`. Explain what `dist.all_reduce(t)` does, and where the
      result ends up.
    explanation: |
      `all_reduce` combines (by default sums) every rank's `t` and writes the result into `t`
      on every rank, in place.
    concepts:
      - name: it sums every rank's tensor
        phrasings: [sum, sums, adds up, add up, combines]
      - name: the result is written in place
        phrasings: [in place, in-place, overwrites t]
      - name: every rank gets the result
        phrasings: [every rank, all ranks, each rank]
    model_answer: |
      It sums the tensor `t` of every rank and writes the result into `t` in place, so every
      rank ends with the same total.

  - id: explain-same-order
    kind: explain
    difficulty: intermediate
    title: Why collectives need every rank
    prompt: |
      Explain why every rank must call the same collectives in the same order.
    explanation: |
      A collective completes only when every rank of the group has entered it; a rank that
      skips a call, or calls another one first, leaves its peers waiting, so the job hangs.
    concepts:
      - name: a collective waits for every rank
        phrasings: [waits for every rank, waits for all ranks, every rank must call]
      - name: otherwise the job hangs
        phrasings: [hang, hangs, deadlock, blocks forever]
    model_answer: |
      A collective waits for every rank to call it. If one rank skips it or calls a different
      one, the others wait for it forever: the job hangs.
""".replace("DOCS", _DOCS)
)

CHEAT_SHEET = Template(
    """\
# ${title}

- `dist.all_reduce(t)` sums `t` over every rank, in place, on every rank. <!-- proof: sum-on-every-rank -->
- `dist.broadcast(t, src)` copies rank `src`'s `t` into `t` on every rank. <!-- source: DOCS#torch.distributed.broadcast torch=2.13.0 -->
- Every rank calls the same collectives, in the same order. <!-- source: DOCS#collective-functions torch=2.13.0 -->
- gloo runs collectives on CPU tensors; NCCL on CUDA tensors. <!-- source: DOCS#backends torch=2.13.0 -->

```python
import torch, torch.distributed as dist

dist.init_process_group("gloo")          # rank and peers from torchrun's environment
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)                       # in place, on every rank
dist.destroy_process_group()
```
""".replace("DOCS", _DOCS)
)

# The lesson has its own snippet and numbers: a set item shown in the lesson minutes before
# would test recall, not understanding (`ranklab validate` refuses it).
LESSON_ALL_REDUCE = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank * 2 + 3)])  # rank 0 holds 3.0, rank 1 holds 5.0
dist.all_reduce(t)
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

TOPIC_FILES = {"proof_all_reduce.py": ALL_REDUCE_SUM, "lesson_all_reduce.py": LESSON_ALL_REDUCE}

# ── a lab: one step whose starter fails its check and whose solution passes ───────────────────

LAB_YAML = Template("""\
# yaml-language-server: $$schema=${schema}
# Written by `ranklab new lab`: a working example that passes `ranklab validate` and
# `ranklab verify` as it is. `ranklab verify` runs each step's solution (it must pass every
# check, on every run) and its starter (it must fail at least one check, so that pressing Run
# does not pass the step). Edit it into your own lab (docs/authoring.md).
id: ${id}
title: ${title}
topic: ${topic}
summary: |
  Add up a value from every rank with `all_reduce`, on two real ranks.
steps:
  - id: all-reduce
    title: Add up the ranks with all_reduce
    instructions: |
      Each rank holds a tensor with `rank + 1`: `1.0` on rank 0 and `2.0` on rank 1. Run it:
      each rank prints its own value.

      Replace the `# Your turn` comment with one call to `dist.all_reduce`. It sums the tensors
      of all ranks and writes the result **in place** into `t` on every rank, so every rank
      should print `sum 3.0`.
    starter_file: all_reduce_starter.py
    solution_file: all_reduce_solution.py
    launch: {nproc: 2, backend: gloo, timeout_s: 20}
    checks:
      - says: Every rank prints `sum 3.0` (1.0 + 2.0)
        expect:
          ranks:
            all: {stdout_regex: 'sum 3\\.0'}
""")

LAB_STARTER = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
# Your turn: sum t over every rank, in place.
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

LAB_SOLUTION = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"sum {t.item()}")
dist.destroy_process_group()
"""

LAB_FILES = {"all_reduce_starter.py": LAB_STARTER, "all_reduce_solution.py": LAB_SOLUTION}
