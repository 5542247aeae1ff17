#!/usr/bin/env python3
"""Checks that the NumPy peer computes what PyTorch computes: for every activation and both
optimizers, an MLP with odd layer sizes starts from identical weights, takes several steps on
seeded random batches in float64 in both, and the losses, first-step gradients and final
parameters must agree (tolerances below; GELU's looser one is the 1.2e-7 erfc fit).
Exit status 0 when everything agrees. Needs torch; runs in a few seconds.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

STEPS = 6
SIZES = [23, 19, 11, 13, 10]  # odd widths, three hidden layers
BATCHES = (7, 1, 16)  # cycled; includes a batch of one


def rel_err(a, b, np):
    return float(np.max(np.abs(a - b)) / max(1e-30, float(np.max(np.abs(b)))))


def check_one(np, torch, mlp_numpy, activation, optimizer, seed):
    import mlp_torch

    rng = np.random.default_rng(seed)
    model = mlp_numpy.MLP(SIZES, activation, "torch", rng, dtype=np.float64)
    tmodel = mlp_torch.build_model(torch, SIZES, activation, "torch").double()
    linears = [m for m in tmodel if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for lin, w, b in zip(linears, model.W, model.b):
            lin.weight.copy_(torch.from_numpy(w.T))
            lin.bias.copy_(torch.from_numpy(b))
    lr = 1e-2 if optimizer == "adam" else 5e-2
    if optimizer == "adam":
        opt = mlp_numpy.Adam(model.params(), lr)
        topt = torch.optim.Adam(tmodel.parameters(), lr=lr)
    else:
        opt = mlp_numpy.SGD(model.params(), lr, momentum=0.9)
        topt = torch.optim.SGD(tmodel.parameters(), lr=lr, momentum=0.9)

    tol = 1e-6 if activation == "gelu" else 1e-9
    worst = 0.0
    for step in range(STEPS):
        n = BATCHES[step % len(BATCHES)]
        x = rng.normal(0.0, 1.5, size=(n, SIZES[0]))  # spans both sides of every activation
        y = rng.integers(0, SIZES[-1], size=n)
        loss, _ = model.loss_and_backward(x, y)
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        tloss.backward()
        worst = max(worst, abs(loss - tloss.item()) / max(1e-30, abs(tloss.item())))
        if step == 0:
            for lin, dw, db in zip(linears, model.dW, model.db):
                worst = max(worst, rel_err(dw, lin.weight.grad.numpy().T, np),
                            rel_err(db, lin.bias.grad.numpy(), np))
        opt.step(model.grads())
        topt.step()
    for lin, w, b in zip(linears, model.W, model.b):
        worst = max(worst, rel_err(w, lin.weight.detach().numpy().T, np),
                    rel_err(b, lin.bias.detach().numpy(), np))
    return worst, tol


def main():
    import numpy as np
    import torch

    import mlp_numpy

    mlp_numpy.import_numpy()
    torch.set_num_threads(1)
    failures = 0
    for optimizer in ("adam", "sgd"):
        for i, activation in enumerate(pc.ACTIVATIONS):
            worst, tol = check_one(np, torch, mlp_numpy, activation, optimizer, seed=100 + i)
            ok = worst <= tol
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {optimizer:4s} {activation:9s} "
                  f"max relative difference {worst:.2e} (tolerance {tol:.0e})")
    # float32 erfc fit against torch's erf at the points GELU cares about.
    z = np.linspace(-9, 9, 20001)
    phi = mlp_numpy._normal_cdf(z)
    ref = 0.5 * torch.special.erfc(torch.from_numpy(-z / np.sqrt(2.0))).numpy()
    rel = float(np.max(np.abs(phi - ref) / ref))
    ok = rel < 2e-7
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} normal CDF fit on [-9, 9]: max relative error {rel:.2e}")
    print("all checks passed" if failures == 0 else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
