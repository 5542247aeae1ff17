"""PyTorch peer of `nnperf train --profile-one-step`: one training step of a torchvision model
timed per leaf module, forward and backward, in the one_step_layers.csv columns nnperf writes, so
that scripts/train_layers_table.py can put the two side by side layer by layer.

  train_layers_torch.py --model resnet50 --batch-size 32 --input-size 224 --device cuda \
      --csv torch_layers.csv --json torch_layers.json

The same step as nnperf's fixed-iteration driver and train_torch.py --iters (SGD lr 0.1, momentum
0.9, weight decay 1e-4, cross-entropy, synthetic data; on the GPU TF32 off and cudnn.benchmark
unless --no-cudnn-benchmark). --warmup-iters untimed steps, then --measure steps timed whole
without hooks (step_ms: their median), then one step with a start and an end mark around every
leaf module's forward (forward pre-hook and hook) and backward (full backward pre-hook and hook)
and around the four phases. On the GPU the marks are CUDA events read after one synchronisation
at the end of the step (never one per layer); on the CPU perf_counter. Each mark costs an event
record (about 2 us of device time between kernels), so the hooked step runs longer than step_ms.

The unhooked steps run the model as torchvision builds it. For the hooked step it is then made
hookable: every module with an `inplace` flag (ReLU) is set to inplace=False, and ResNet's residual
additions (`out += identity`) become out-of-place calls of a leaf module `add` in each block:
full backward hooks wrap a module's output in a view that may not be modified in place. ResNet's,
VGG's and AlexNet's `torch.flatten(x, 1)` becomes a leaf module `flatten`, so both get rows under
nnperf's names (layer1.0.add, flatten). A module called several times in one forward
(torchvision's Bottleneck reuses one ReLU) gets nnperf's names for its calls: relu, relu_1,
relu_2 in call order; its backward calls are matched to them in reverse. What no leaf module does
in other models is in the phases but in no row. The backward of a module whose input needs no
gradient (the first convolution) has its full backward hooks fired before it runs
(pytorch/pytorch#100528): its row ends instead when autograd delivers the module's weight
gradient (a tensor hook on the weight).

Writes CSV rows node,name,kind,phase,start_ms,ms (node: the module's order of first call; kind:
its class; start_ms from the step's first mark) and JSON {"peer": "torch", "version", "context",
"model", "batch_size", "input_size", "step_ms", "step_ms_all", "phases_ms", "rows"}.
"""

import argparse
import csv
import gc
import json
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_torch  # noqa: E402  (thread set-up and run context shared with the other peers)


class Marks:
    """Start/end marks on the device's timeline (CUDA events) or the host clock."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda, self.marks = torch, cuda, []

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            self.marks.append(e)
        else:
            self.marks.append(time.perf_counter())
        return len(self.marks) - 1

    def ms(self, a, b):
        if self.cuda:
            return self.marks[a].elapsed_time(self.marks[b])
        return (self.marks[b] - self.marks[a]) * 1e3


class LayerHooks:
    """Marks around every leaf module's forward and backward calls, named as nnperf names them."""

    def __init__(self, torch, model, marks):
        self.marks, self.rows, self.handles = marks, [], []
        self.order, self.calls, self.back_calls, self.open = {}, {}, {}, {}
        self.no_input_grad = set()  # calls whose first input needs no gradient
        for name, m in model.named_modules():
            if name and not list(m.children()):
                self.handles += [
                    m.register_forward_pre_hook(self._begin(name, "forward")),
                    m.register_forward_hook(self._end(name, "forward")),
                    m.register_full_backward_pre_hook(self._begin(name, "backward")),
                    m.register_full_backward_hook(self._end(name, "backward")),
                ]
                w = getattr(m, "weight", None)
                if w is not None and getattr(w, "requires_grad", False):
                    self.handles.append(w.register_hook(self._weight_grad(name)))

    def _call_name(self, name, phase):
        n = self.calls.get(name, 0)
        if phase == "forward":
            self.calls[name] = n + 1
            k = n
        else:  # backward calls come in reverse
            j = self.back_calls.get(name, 0)
            self.back_calls[name] = j + 1
            k = n - 1 - j
        return name if k <= 0 else f"{name}_{k}"

    def _begin(self, name, phase):
        def hook(module, *args):
            self.order.setdefault(name, len(self.order) + 1)
            call = self._call_name(name, phase)
            first = args[0][0] if phase == "forward" and args and args[0] else None
            if first is not None and not getattr(first, "requires_grad", True):
                self.no_input_grad.add(call)
            self.open[(call, phase)] = (self.marks.mark(), self.order[name], type(module).__name__)
        return hook

    def _end(self, name, phase):
        def hook(module, *args):
            # The call _begin named: forward, the latest call; backward, the latest matched one.
            n = self.calls.get(name, 0)
            k = n - 1 if phase == "forward" else n - self.back_calls.get(name, 0)
            call = name if k <= 0 else f"{name}_{k}"
            if phase == "backward" and call in self.no_input_grad:
                return  # fired before this backward ran: its weight's gradient ends the row
            begun = self.open.pop((call, phase), None)
            if begun is not None:
                start, node, kind = begun
                self.rows.append((node, call, kind, phase, start, self.marks.mark()))
        return hook

    def _weight_grad(self, name):
        """The end of the backward of a call whose input needs no gradient (the first layer):
        PyTorch fires that module's full backward hook before the backward runs
        (pytorch/pytorch#100528), so the row ends when autograd delivers its weight's gradient."""
        def hook(grad):
            n = self.calls.get(name, 0) - self.back_calls.get(name, 0)
            call = name if n <= 0 else f"{name}_{n}"
            if call in self.no_input_grad and (call, "backward") in self.open:
                start, node, kind = self.open.pop((call, "backward"))
                self.rows.append((node, call, kind, "backward", start, self.marks.mark()))
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def make_hookable(torch, model):
    """Makes `model` hookable in place (see the module's text): ReLUs out of place, ResNet blocks'
    residual additions a leaf module `add` (out of place), ResNet's, VGG's and AlexNet's flatten a
    leaf module `flatten`; the same arithmetic. Returns what was changed, for the JSON."""
    import types

    class Add(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    def basic_block(self, x):  # torchvision's order of calls
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.add(out, identity))

    def bottleneck(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.add(out, identity))

    def resnet(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.flatten(self.avgpool(x)))

    def features_classifier(self, x):  # VGG and AlexNet
        return self.classifier(self.flatten(self.avgpool(self.features(x))))

    forwards = {"BasicBlock": (basic_block, "add"), "Bottleneck": (bottleneck, "add"),
                "ResNet": (resnet, "flatten"), "VGG": (features_classifier, "flatten"),
                "AlexNet": (features_classifier, "flatten")}
    changed = set()
    for m in list(model.modules()):
        if getattr(m, "inplace", False):
            m.inplace = False
            changed.add("inplace=False")
        kind = type(m).__name__
        if kind in forwards and type(m).__module__.startswith("torchvision."):
            forward, leaf = forwards[kind]
            m.add_module(leaf, Add() if leaf == "add" else torch.nn.Flatten(1))
            m.forward = types.MethodType(forward, m)
            changed.add(f"{kind}: {leaf} as a module")
    return sorted(changed)


def self_test():
    """LayerHooks' naming and pairing on a stand-in model (no torch needed): a block that calls its
    ReLU three times, forward in call order, backward in reverse, as autograd runs it; the first
    layer's input needs no gradient, so its full backward hooks fire back to back before its
    backward and its row ends at its weight's gradient."""

    class Handle:
        def remove(self):
            pass

    class Leaf:
        def __init__(self):
            self.hooks = {}

        def children(self):
            return []

        def _register(self, kind, fn):
            self.hooks[kind] = fn
            return Handle()

        def register_forward_pre_hook(self, fn):
            return self._register("fwd_begin", fn)

        def register_forward_hook(self, fn):
            return self._register("fwd_end", fn)

        def register_full_backward_pre_hook(self, fn):
            return self._register("bwd_begin", fn)

        def register_full_backward_hook(self, fn):
            return self._register("bwd_end", fn)

    class Weight:
        requires_grad = True

        def register_hook(self, fn):
            self.hook = fn
            return Handle()

    class Conv2d(Leaf):
        def __init__(self):
            super().__init__()
            self.weight = Weight()

    class BatchNorm2d(Leaf):
        pass

    class ReLU(Leaf):
        pass

    mods = {"conv1": Conv2d(), "bn1": BatchNorm2d(), "relu": ReLU()}

    class Model:
        def named_modules(self):
            return [("", self)] + list(mods.items())

        def children(self):
            return list(mods.values())

    hooks = LayerHooks(None, Model(), Marks(None, False))
    order = ["conv1", "bn1", "relu", "relu", "relu"]
    class Tensor:
        def __init__(self, requires_grad):
            self.requires_grad = requires_grad

    for i, name in enumerate(order):
        mods[name].hooks["fwd_begin"](mods[name], (Tensor(i > 0),))
        mods[name].hooks["fwd_end"](mods[name], (), None)
    for name in reversed(order):
        mods[name].hooks["bwd_begin"](mods[name], ())
        mods[name].hooks["bwd_end"](mods[name], (), ())
    mods["conv1"].weight.hook(None)  # autograd delivers conv1's weight gradient
    got = [(r[1], r[2], r[3], r[0]) for r in hooks.rows]
    want = [("conv1", "Conv2d", "forward", 1), ("bn1", "BatchNorm2d", "forward", 2),
            ("relu", "ReLU", "forward", 3), ("relu_1", "ReLU", "forward", 3),
            ("relu_2", "ReLU", "forward", 3), ("relu_2", "ReLU", "backward", 3),
            ("relu_1", "ReLU", "backward", 3), ("relu", "ReLU", "backward", 3),
            ("bn1", "BatchNorm2d", "backward", 2), ("conv1", "Conv2d", "backward", 1)]
    if got != want or any(r[5] <= r[4] for r in hooks.rows):
        print(f"train_layers_torch self-test: got {got}, want {want}")
        return 1
    print(f"train_layers_torch self-test: all {len(want)} rows named, paired and ordered as "
          "nnperf names them, the first layer's backward ended by its weight's gradient")
    return 0


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--input-size", type=int, default=224)
    ap.add_argument("--in-channels", type=int, default=3)
    ap.add_argument("--num-classes", type=int, default=1000)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--no-cudnn-benchmark", action="store_true",
                    help="cuDNN's heuristics instead of timing its algorithms (cudnn.benchmark)")
    ap.add_argument("--warmup-iters", type=int, default=5)
    ap.add_argument("--measure", type=int, default=10, help="unhooked steps timed whole")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", default=None, metavar="FILE")
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args(argv)
    if min(a.batch_size, a.input_size, a.in_channels, a.num_classes, a.measure, a.threads) < 1 \
            or a.warmup_iters < 0:
        ap.error("sizes, --measure and --threads must be >= 1, --warmup-iters >= 0")
    return a


def make_step(torch, model, opt, x, y, marks=None):
    """One SGD step; with `marks`, a mark before and after each phase (index pairs returned)."""
    m = marks.mark if marks else (lambda: None)
    t0 = m()
    opt.zero_grad(set_to_none=True)
    out = model(x)
    t1 = m()
    loss = torch.nn.functional.cross_entropy(out, y)
    t2 = m()
    loss.backward()
    t3 = m()
    opt.step()
    t4 = m()
    return {"forward": (t0, t1), "loss": (t1, t2), "backward": (t2, t3), "optimizer": (t3, t4)}


def write_outputs(a, torch, ctx, step_ms, phases, rows, marks, first):
    out_rows = sorted(((node, name, kind, phase, marks.ms(first, s), marks.ms(s, e))
                       for node, name, kind, phase, s, e in rows), key=lambda r: r[4])
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["node", "name", "kind", "phase", "start_ms", "ms"])
            for r in out_rows:
                w.writerow([r[0], r[1], r[2], r[3], f"{r[4]:.6g}", f"{r[5]:.6g}"])
    doc = {"peer": "torch", "version": torch.__version__, "context": ctx, "model": a.model,
           "batch_size": a.batch_size, "input_size": a.input_size,
           "step_ms": statistics.median(step_ms), "step_ms_all": step_ms,
           "phases_ms": phases, "rows": len(out_rows)}
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, a.json)
    return out_rows


def main(argv=None):
    if (argv if argv is not None else sys.argv[1:]) == ["--self-test"]:
        return self_test()
    a = parse_args(argv)
    torch = conv_torch.import_torch(a.threads, a.device, "train_layers_torch")
    if torch is None:
        return 2
    import torchvision

    cuda = a.device == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = not a.no_cudnn_benchmark
    if not callable(getattr(torchvision.models, a.model, None)):
        print(f"train_layers_torch: unknown torchvision model '{a.model}'", file=sys.stderr)
        return 2
    torch.manual_seed(a.seed)
    model = getattr(torchvision.models, a.model)(weights=None, num_classes=a.num_classes)
    if a.in_channels != 3 and isinstance(getattr(model, "conv1", None), torch.nn.Conv2d):
        c = model.conv1
        model.conv1 = torch.nn.Conv2d(a.in_channels, c.out_channels, c.kernel_size, c.stride,
                                      c.padding, bias=c.bias is not None)
    dev = torch.device(a.device)
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    g = torch.Generator().manual_seed(a.seed)
    x = torch.randn(a.batch_size, a.in_channels, a.input_size, a.input_size, generator=g).to(dev)
    y = torch.randint(0, a.num_classes, (a.batch_size,), generator=g).to(dev)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(a.warmup_iters):
        make_step(torch, model, opt, x, y)
    sync()
    gc.collect()
    step_ms = []
    for _ in range(a.measure):
        whole = Marks(torch, cuda)
        s = whole.mark()
        make_step(torch, model, opt, x, y)
        e = whole.mark()
        sync()
        step_ms.append(whole.ms(s, e))
    changed = make_hookable(torch, model)
    make_step(torch, model, opt, x, y)  # the hookable model's first step: its new allocations
    sync()
    marks = Marks(torch, cuda)
    hooks = LayerHooks(torch, model, marks)
    # Expected for the first convolution, whose row its weight's gradient ends (the module's text).
    warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are "
                            "computed with respect to module outputs")
    gc.collect()  # no collection inside the one hooked step (a full one took 185 ms on the CPU)
    gc.disable()
    first = marks.mark()
    pairs = make_step(torch, model, opt, x, y, marks)
    sync()
    gc.enable()
    hooks.remove()
    phases = {k: marks.ms(s, e) for k, (s, e) in pairs.items()}
    ctx = conv_torch.run_context(torch, a.threads, a.warmup_iters, a.measure)
    ctx.update({"device": a.device, "tf32": False, "hooked_step_changes": changed,
                "cudnn_benchmark": bool(cuda and not a.no_cudnn_benchmark),
                "cuda_device": torch.cuda.get_device_name() if cuda else None,
                "cudnn": torch.backends.cudnn.version() if cuda else None})
    rows = write_outputs(a, torch, ctx, step_ms, phases, hooks.rows, marks, first)
    print(f"torch {torch.__version__} {a.model} batch {a.batch_size} {a.input_size}x{a.input_size} "
          f"on {a.device}: step {statistics.median(step_ms):.3f} ms unhooked (median of "
          f"{a.measure}); hooked: " + ", ".join(f"{k} {v:.3f} ms" for k, v in phases.items())
          + f"; {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
