#!/usr/bin/env python3
"""The MLP peer written in vectorised NumPy (srivas63_CMSE401's style: weights stored (in, out),
forward X.W + b), trained with the same recipe as mlp_torch.py so nnperf can be compared with a
plain-BLAS implementation. Activations, softmax cross-entropy, Adam and SGD follow PyTorch's
definitions (torch.nn / torch.optim), checked against torch by check_numpy_vs_torch.py.

Run `mlp_numpy.py --help` for the flags; the last stdout line is
`MEASURED_SEC=%.6f IMGS_PER_SEC=%.2f` (training steps only, evaluation excluded).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (no numpy import at load time)

np = None  # imported in main() after the thread variables are set, or by import_numpy()


def import_numpy():
    global np
    if np is None:
        import numpy

        np = numpy
    return np


# ---------------------------------------------------------------------------------------------
# Activations: forward(z) -> a and backward(z, a, da) -> dz, each as PyTorch defines them.


def _sigmoid(z):
    # 0.5 * (1 + tanh(z/2)) is exact algebra and never overflows.
    s = np.tanh(z * 0.5)
    s *= 0.5
    s += 0.5
    return s


def _erfc_nonneg(x):
    """erfc(x) for x >= 0 (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7)."""
    t = 1.0 / (1.0 + 0.5 * x)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    return t * np.exp(-x * x + poly)


def _normal_cdf(z):
    # Phi(z) = 0.5 erfc(-z/sqrt2); computed on |z| so the small tail keeps its relative accuracy.
    half_tail = 0.5 * _erfc_nonneg(np.abs(z) * np.sqrt(0.5).astype(z.dtype))
    return np.where(z < 0, half_tail, 1.0 - half_tail).astype(z.dtype, copy=False)


_INV_SQRT_2PI = 0.3989422804014327


def act_forward(name, z):
    if name == "relu":
        return np.maximum(z, 0)
    if name == "leakyrelu":
        return np.where(z > 0, z, z * 0.01)
    if name == "sigmoid":
        return _sigmoid(z)
    if name == "tanh":
        return np.tanh(z)
    if name == "elu":  # alpha = 1
        return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))
    if name == "silu":
        return z * _sigmoid(z)
    if name == "gelu":  # exact (erf) form, torch's default approximate='none'
        return z * _normal_cdf(z)
    if name == "mish":  # z * tanh(softplus(z)); logaddexp(0, z) is a stable softplus
        return z * np.tanh(np.logaddexp(0, z))
    raise ValueError(f"unknown activation '{name}'")


def act_backward(name, z, a, da):
    """dL/dz given dL/da; may overwrite da."""
    if name == "relu":
        np.multiply(da, z > 0, out=da)
        return da
    if name == "leakyrelu":
        return da * np.where(z > 0, 1.0, 0.01).astype(z.dtype, copy=False)
    if name == "sigmoid":
        return da * (a * (1 - a))
    if name == "tanh":
        return da * (1 - a * a)
    if name == "elu":
        return da * np.where(z > 0, 1.0, np.exp(np.minimum(z, 0))).astype(z.dtype, copy=False)
    if name == "silu":
        s = _sigmoid(z)
        return da * (s * (1 + z * (1 - s)))
    if name == "gelu":
        pdf = np.exp(z * z * -0.5) * _INV_SQRT_2PI
        return da * (_normal_cdf(z) + z * pdf)
    if name == "mish":
        t = np.tanh(np.logaddexp(0, z))
        return da * (t + z * (1 - t * t) * _sigmoid(z))
    raise ValueError(f"unknown activation '{name}'")


# ---------------------------------------------------------------------------------------------
# Model


class MLP:
    """Linear layers with weights W[l] of shape (in, out) and biases b[l] (out,)."""

    def __init__(self, sizes, activation, init, rng, dtype=None):
        import_numpy()
        dtype = dtype or np.float32
        self.sizes = list(sizes)
        self.activation = activation
        self.W, self.b = [], []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            if init == "torch":  # nn.Linear: kaiming_uniform(a=sqrt 5) = U(+-1/sqrt(fan_in))
                bound = 1.0 / np.sqrt(fan_in)
                w = rng.uniform(-bound, bound, size=(fan_in, fan_out))
                b = rng.uniform(-bound, bound, size=fan_out)
            elif init == "he":
                w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out))
                b = np.zeros(fan_out)
            else:
                raise ValueError(f"unknown init '{init}'")
            self.W.append(w.astype(dtype))
            self.b.append(b.astype(dtype))
        self.dW = [np.empty_like(w) for w in self.W]
        self.db = [np.empty_like(b) for b in self.b]

    def params(self):
        return self.W + self.b

    def grads(self):
        return self.dW + self.db

    def forward(self, x, keep=False):
        """Logits; with keep=True also stores the pre-activations and activations for backward."""
        zs, acts = [], []
        h = x
        last = len(self.W) - 1
        for l, (w, b) in enumerate(zip(self.W, self.b)):
            z = h @ w
            z += b
            if l == last:
                h = z
                break
            h = act_forward(self.activation, z)
            if keep:
                zs.append(z)
                acts.append(h)
        if keep:
            self._x, self._zs, self._acts = x, zs, acts
        return h

    def loss_and_backward(self, x, y):
        """Forward, mean softmax cross-entropy and backward into dW/db; returns (loss, logits)."""
        logits = self.forward(x, keep=True)
        n = x.shape[0]
        rows = np.arange(n)
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) - shifted[rows, y]))
        g = e
        g /= s
        g[rows, y] -= 1
        g *= 1.0 / n  # dL/dlogits of the batch mean
        for l in range(len(self.W) - 1, -1, -1):
            a_prev = self._x if l == 0 else self._acts[l - 1]
            np.dot(a_prev.T, g, out=self.dW[l])
            np.sum(g, axis=0, out=self.db[l])
            if l > 0:
                da = g @ self.W[l].T
                g = act_backward(self.activation, self._zs[l - 1], self._acts[l - 1], da)
        return loss, logits


# ---------------------------------------------------------------------------------------------
# Optimizers, as torch.optim defines them (no weight decay, no amsgrad, no nesterov).


class Adam:
    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, betas[0], betas[1], eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.tmp = [np.empty_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        bc1 = 1.0 - self.b1 ** self.t
        bc2_sqrt = (1.0 - self.b2 ** self.t) ** 0.5
        step_size = self.lr / bc1
        for p, g, m, v, tmp in zip(self.params, grads, self.m, self.v, self.tmp):
            np.subtract(g, m, out=tmp)  # m.lerp_(g, 1 - b1)
            tmp *= 1.0 - self.b1
            m += tmp
            v *= self.b2  # v.mul_(b2).addcmul_(g, g, 1 - b2)
            np.multiply(g, g, out=tmp)
            tmp *= 1.0 - self.b2
            v += tmp
            np.sqrt(v, out=tmp)  # denom = sqrt(v) / sqrt(bc2) + eps
            tmp /= bc2_sqrt
            tmp += self.eps
            np.divide(m, tmp, out=tmp)  # p.addcdiv_(m, denom, value=-step_size)
            tmp *= step_size
            p -= tmp


class SGD:
    def __init__(self, params, lr, momentum=0.9):
        self.params, self.lr, self.momentum = params, lr, momentum
        self.buf = [None] * len(params)
        self.tmp = [np.empty_like(p) for p in params]

    def step(self, grads):
        for i, (p, g, tmp) in enumerate(zip(self.params, grads, self.tmp)):
            d = g
            if self.momentum != 0:
                if self.buf[i] is None:  # torch: first step buf = clone(g)
                    self.buf[i] = g.copy()
                else:
                    self.buf[i] *= self.momentum
                    self.buf[i] += g
                d = self.buf[i]
            np.multiply(d, self.lr, out=tmp)
            p -= tmp


def make_optimizer(args, model):
    if args.optimizer == "adam":
        return Adam(model.params(), args.lr)
    return SGD(model.params(), args.lr, args.momentum)


# ---------------------------------------------------------------------------------------------
# Training, evaluation and the per-iteration benchmark


def evaluate(model, x, y):
    loss_sum, correct = 0.0, 0
    for i in range(0, x.shape[0], pc.EVAL_BATCH_SIZE):
        xb, yb = x[i : i + pc.EVAL_BATCH_SIZE], y[i : i + pc.EVAL_BATCH_SIZE]
        logits = model.forward(xb).astype(np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(shifted).sum(axis=1))
        loss_sum += float(np.sum(lse - shifted[np.arange(xb.shape[0]), yb]))
        correct += int(np.sum(logits.argmax(axis=1) == yb))
    return loss_sum / x.shape[0], correct / x.shape[0]


def train(args, data, model, opt):
    def step(xb, yb):
        loss, logits = model.loss_and_backward(xb, yb)
        opt.step(model.grads())
        return loss, logits

    def tally(loss, logits, yb):
        return loss, int(np.count_nonzero(logits.argmax(axis=1) == yb))

    return pc.train_epochs(args, data["x_train"], data["y_train"], step, tally,
                           lambda: evaluate(model, data["x_val"], data["y_val"]))


def iters_bench(args, data):
    sizes = pc.recipe_of(args)["sizes"]

    def setup():
        model = MLP(sizes, args.activation, args.init, np.random.default_rng(args.seed))
        opt = make_optimizer(args, model)

        def train_step(xb, yb):
            model.loss_and_backward(xb, yb)
            opt.step(model.grads())

        return train_step, model.forward

    return pc.iters_bench(args, data["x_train"], data["y_train"], setup)


def main(argv=None):
    args = pc.parse_args("numpy", "Fashion-MNIST MLP in vectorised NumPy (nnperf peer).", argv)
    pc.set_thread_env(args.threads)  # before numpy's OpenBLAS starts its pool
    import_numpy()

    ctx = pc.context(args.threads)
    blas = pc.blas_info()
    blas_threads = [p.get("num_threads") for p in (blas or []) if p.get("user_api") == "blas"]
    if blas is None:
        print("note: threadpoolctl is not installed; BLAS thread count not verified",
              file=sys.stderr)
    elif any(t != args.threads for t in blas_threads):
        print(f"warning: BLAS pools run {blas_threads} threads, asked for {args.threads}",
              file=sys.stderr)
    blas_kernel = ", ".join(f"{p.get('internal_api')} {p.get('version')} {p.get('architecture')}"
                            for p in (blas or []) if p.get("user_api") == "blas")
    print(f"numpy {np.__version__}, BLAS: {blas_kernel or 'unknown'}, threads {args.threads}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}", flush=True)

    data = pc.load_fashion_mnist(args.data_dir, args.val_split, args.seed)
    out = {
        "peer": "numpy",
        "version": np.__version__,
        "threads": args.threads,
        "blas_threads": blas_threads,
        "blas": blas,
        "blas_kernel": blas_kernel,
        "recipe": pc.recipe_of(args),
        "context": ctx,
    }
    if args.iters_bench:
        pc.report_iters_bench(args, out, ctx, iters_bench(args, data))
        return 0

    model = MLP(out["recipe"]["sizes"], args.activation, args.init,
                np.random.default_rng(args.seed))
    opt = make_optimizer(args, model)
    records = train(args, data, model, opt)
    test_loss, test_acc = evaluate(model, data["x_test"], data["y_test"])
    pc.report_training(args, out, ctx, records, test_loss, test_acc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
