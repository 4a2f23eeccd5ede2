"""ch01.protocols: the six rows of the series' table, each executed in plain Python (value) and on PyTorch's own
objects (pytorch_rows: DataLoader over a Dataset and a lazy IterableDataset, nn.Module.__call__'s pre-hooks, forward
and hooks in order, torch.no_grad as decorator and context manager, model(**batch)). Skipped without torch."""
import contextlib
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement  # noqa: E402

planted = fault()
rows = {}


# 1. __getitem__ / __len__ = the sequence protocol (Dataset)
class Squares:
    def __len__(self):
        return 5

    def __getitem__(self, i):
        if i >= len(self):
            raise IndexError(i)
        return i * i


rows["__getitem__/__len__"] = len(Squares()) == 5 and list(Squares()) == [0, 1, 4, 9, 16]

# 2. yield = lazy: nothing runs before it is asked for
produced = []


def lazy():
    for i in range(10**9):
        produced.append(i)
        yield i


g = lazy()
untouched = produced == []
first3 = [next(g) for _ in range(3)]
rows["yield"] = untouched and first3 == [0, 1, 2] and len(produced) == 3


# 3. __call__ runs hooks, then forward
class Module:
    def __init__(self):
        self.hooks, self.log = [], []

    def __call__(self, x):
        if planted != "no_hooks":
            for h in self.hooks:
                h(self, x)
        return self.forward(x)

    def forward(self, x):
        self.log.append("forward")
        return x + 1


m = Module()
m.hooks.append(lambda mod, x: mod.log.append("hook"))
rows["__call__"] = m(1) == 2 and m.log == ["hook", "forward"]


# 4. one object, decorator and context manager
class no_grad(contextlib.ContextDecorator):
    enabled = True

    def __enter__(self):
        self.prev, no_grad.enabled = no_grad.enabled, False

    def __exit__(self, *exc):
        no_grad.enabled = self.prev
        return planted == "no_grad_swallows"  # (a planted fault: an exception inside the block swallowed)


@no_grad()
def evaluate():
    return no_grad.enabled


with no_grad():
    inside = no_grad.enabled
    with no_grad():  # nested: leaving the inner one restores the outer one's state, not "enabled"
        pass
    after_inner = no_grad.enabled
# An exception inside the block goes on up (a context manager that swallowed it would hide the error), the state
# restored on the way.
try:
    with no_grad():
        raise KeyError("inside")
    propagated = False
except KeyError:
    propagated = True
rows["@no_grad"] = (evaluate() is False and inside is False and after_inner is False and no_grad.enabled is True
                    and propagated)


# 5. **kwargs pass-through: model(**batch)
def forward(input_ids, attention_mask=None, labels=None):
    return (input_ids, attention_mask, labels)


# (The keys in another order than the parameters: passed by name, each lands on its own.)
batch = {"labels": [2, 3], "input_ids": [1, 2], "attention_mask": [1, 1]}
rows["**kwargs"] = forward(**batch) == ([1, 2], [1, 1], [2, 3])


# 6. @dataclass -> asdict -> config.json -> back
@dataclasses.dataclass
class TrainConfig:
    lr: float = 3e-4
    batch_size: int = 32
    seed: int = 1234


cfg = TrainConfig(lr=1e-3)
rows["@dataclass"] = TrainConfig(**json.loads(json.dumps(dataclasses.asdict(cfg)))) == cfg

# PyTorch's own objects on the same protocols (judged: pytorch_rows); without torch the claim is skipped.
torch_rows = {}
try:
    import torch
    from torch.utils.data import DataLoader, Dataset, IterableDataset
except ImportError as e:
    emit(skip=f"the PyTorch rows need torch, which {sys.executable} does not import ({e})")
    sys.exit(0)


class T(Dataset):  # __getitem__ / __len__
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor([i])


torch_rows["Dataset/DataLoader"] = [b.tolist() for b in DataLoader(T(), batch_size=2)] == [[[0], [1]], [[2], [3]]]
pulled = []


class Stream(IterableDataset):  # yield: DataLoader pulls items only as batches are asked for
    def __iter__(self):
        for i in range(10**9):
            pulled.append(i)
            yield torch.tensor([i])


loader = iter(DataLoader(Stream(), batch_size=2))
before = list(pulled)
first = next(loader).tolist()
torch_rows["IterableDataset/yield"] = before == [] and first == [[0], [1]] and pulled == [0, 1]


class Lin(torch.nn.Linear):  # __call__: the pre-hooks, forward, then the hooks
    def forward(self, x):
        order.append("forward")
        return super().forward(x)


lin, order = Lin(2, 2), []
lin.register_forward_pre_hook(lambda mod, args: order.append("pre-hook"))
lin.register_forward_hook(lambda mod, args, out: order.append("hook"))
lin(torch.ones(1, 2))
torch_rows["nn.Module.__call__"] = order == ["pre-hook", "forward", "hook"]
x = torch.ones(1, requires_grad=True)


@torch.no_grad()
def f(t):
    return (t * 2).requires_grad


with torch.no_grad():
    y = (x * 2).requires_grad
torch_rows["torch.no_grad"] = f(x) is False and y is False and (x * 2).requires_grad is True


class Model(torch.nn.Module):  # model(**batch): the keys become forward's arguments by name
    def forward(self, input_ids, attention_mask=None, labels=None):
        return input_ids.sum() * 100 + attention_mask.sum() * 10 + labels.sum()


batch_t = {"labels": torch.tensor([1]), "input_ids": torch.tensor([2]), "attention_mask": torch.tensor([3])}
torch_rows["model(**batch)"] = Model()(**batch_t).item() == 231

emit(measurements=[measurement("value", sum(bool(v) for v in rows.values()), "count"),
                   measurement("pytorch_rows", sum(bool(v) for v in torch_rows.values()), "count")],
     details={"rows": rows, "torch_rows": torch_rows, "torch": torch.__version__, "planted_fault": planted or None},
     assumptions=["each row is executed in plain Python, and on PyTorch's own Dataset, IterableDataset, nn.Module, "
                  "no_grad and **kwargs call (the @dataclass row has no PyTorch object)"])
