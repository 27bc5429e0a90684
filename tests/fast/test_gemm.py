"""rl_trainers.fast.gemm: big products on oneDNN (by CPU vendor), small ones on MKL, same results."""

import pytest
import torch

from rl_trainers.fast import gemm

pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN"
)


@pytest.fixture
def onednn_calls(monkeypatch):
    """Counts the products that go to oneDNN."""
    calls = []
    real = gemm._onednn_linear()
    monkeypatch.setattr(gemm, "USE_ONEDNN", True)  # whatever this CPU's default

    def counted(*args):
        calls.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(gemm, "_LINEAR", counted)
    return calls


def _operand(rows, cols, transposed, gen):
    """A ``[rows, cols]`` matrix, row-major or as the transposed view of a ``[cols, rows]``."""
    if transposed:
        return torch.randn(cols, rows, generator=gen).t()
    return torch.randn(rows, cols, generator=gen)


def test_this_build_has_the_onednn_linear():
    assert gemm._onednn_linear() is not None


@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_big_products_match_torch_for_every_layout(a_t, b_t, with_bias, relu, onednn_calls):
    gen = torch.Generator().manual_seed(0)
    a, b = _operand(256, 192, a_t, gen), _operand(192, 128, b_t, gen)
    bias = torch.randn(128, generator=gen) if with_bias else None
    out = gemm.addmm(bias, a, b, relu=relu)
    expected = a.double() @ b.double() + (0 if bias is None else bias.double())
    if relu:
        expected = expected.relu()
    assert out.shape == (256, 128) and out.dtype == torch.float32
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4)
    assert len(onednn_calls) == 1  # [256, 192] @ [192, 128]: oneDNN's side
    out.add_(1.0)  # a fresh tensor: the operands are untouched
    torch.testing.assert_close(
        gemm.mm(a, b).double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4
    )


def test_small_products_wide_doubles_and_the_switch_stay_on_torch(onednn_calls, monkeypatch):
    gen = torch.Generator().manual_seed(1)
    for m, k, n in [(256, 64, 64), (512, 64, 64), (256, 4, 256), (256, 256, 1), (1, 256, 256)]:
        a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
        torch.testing.assert_close(gemm.mm(a, b), a @ b)
    big64 = (torch.randn(256, 256, dtype=torch.float64), torch.randn(256, 256, dtype=torch.float64))
    torch.testing.assert_close(gemm.mm(*big64), big64[0] @ big64[1])
    monkeypatch.setattr(gemm, "USE_ONEDNN", False)
    big = (torch.randn(256, 256, generator=gen), torch.randn(256, 256, generator=gen))
    bias = torch.randn(256, generator=gen)
    torch.testing.assert_close(gemm.addmm(bias, *big, relu=True), torch.addmm(bias, *big).relu())
    assert onednn_calls == []


def test_repeated_products_are_bitwise_equal():
    gen = torch.Generator().manual_seed(2)
    a, b = torch.randn(256, 256, generator=gen), torch.randn(256, 256, generator=gen)
    first = gemm.mm(a.t(), b)
    assert all(torch.equal(first, gemm.mm(a.t(), b)) for _ in range(5))


@pytest.mark.parametrize(
    "vendor, env, expected",
    [
        ("GenuineIntel", None, False),
        ("AuthenticAMD", None, True),
        ("", None, True),
        ("GenuineIntel", "onednn", True),
        ("AuthenticAMD", "MKL", False),
        ("AuthenticAMD", "auto", True),
    ],
)
def test_backend_follows_the_cpu_vendor_unless_overridden(vendor, env, expected, monkeypatch):
    monkeypatch.setattr(gemm, "_cpu_vendor", lambda: vendor)
    if env is None:
        monkeypatch.delenv("RL_TRAINERS_GEMM", raising=False)
    else:
        monkeypatch.setenv("RL_TRAINERS_GEMM", env)
    assert gemm._default_use_onednn() is expected


def test_a_bad_backend_name_is_named(monkeypatch):
    monkeypatch.setenv("RL_TRAINERS_GEMM", "openblas")
    with pytest.raises(ValueError, match="RL_TRAINERS_GEMM='openblas'.*'mkl' or 'onednn'"):
        gemm._default_use_onednn()


def test_the_vendor_is_read_from_this_machine():
    with open("/proc/cpuinfo") as cpuinfo:
        text = cpuinfo.read()
    if "vendor_id" not in text:
        pytest.skip("no x86 vendor here")
    assert gemm._cpu_vendor() in text
