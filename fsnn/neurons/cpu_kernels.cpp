// The fsnn-convention recursion of fsnn/neurons/dynamics.py, forward and reverse time, as compiled CPU loops
// (built on first use by fsnn/neurons/cpu_kernels.py). Direct engine: every lag 1 .. L-1 of the kernel is summed
// exactly, in the engines' normalisation kappa_m = K_m / K_0 (L = T for the whole history, memory + 1 for a window):
//
//   forward   Y_k = U_init + sum_{m=1}^{min(k, L-1)} kappa_m gamma_{k-m}
//             H_k = Y_k + drive X_k + offset - c_leak V_{k-1},   S_k = [H_k >= theta],   V_k = reset(H_k)
//             gamma_k = V_k - Y_k
//   backward  Gbar_k = sum_{m=1}^{min(T-1-k, L-1)} kappa_m Hbar_{k+m}
//             U_k = d_k + c_k (Gbar_k - c_leak U_{k+1}),   Hbar_k = U_k - Gbar_k
//
// Neurons (columns) are independent: each tile of TILE columns walks the whole sequence with its sums in a small
// local array (the inner loops run over the tile, contiguous, and vectorise), and tiles run in parallel over
// torch's intra-op threads (at::parallel_for: one thread when torch.set_num_threads(1)).
#include <torch/extension.h>

#include <algorithm>

namespace {

constexpr int64_t TILE = 64;

template <typename scalar_t>
void forward_tile(const scalar_t* x, const scalar_t* kappa, int64_t L, int64_t T, int64_t N, int64_t n0,
                  int64_t width, scalar_t drive, scalar_t offset, scalar_t c_leak, scalar_t theta, bool hard,
                  scalar_t v_reset, scalar_t v_init, scalar_t* H, scalar_t* G, scalar_t* V) {
  scalar_t y[TILE], v_prev[TILE];
  std::fill(v_prev, v_prev + width, v_init);
  for (int64_t k = 0; k < T; ++k) {
    std::fill(y, y + width, v_init);
    for (int64_t j = std::max<int64_t>(0, k - L + 1); j < k; ++j) {
      const scalar_t a = kappa[k - j];
      const scalar_t* g = G + j * N + n0;
      for (int64_t c = 0; c < width; ++c) y[c] += a * g[c];
    }
    const int64_t row = k * N + n0;
    for (int64_t c = 0; c < width; ++c) {
      const scalar_t h = y[c] + drive * x[row + c] + offset - c_leak * v_prev[c];
      const bool fire = h >= theta;
      const scalar_t v = hard ? (fire ? v_reset : h) : (fire ? h - theta : h);
      H[row + c] = h;
      G[row + c] = v - y[c];
      if (V != nullptr) V[row + c] = v;
      v_prev[c] = v;
    }
  }
}

template <typename scalar_t>
void backward_tile(scalar_t* coef_hbar, scalar_t* drive_u, const scalar_t* kappa, int64_t L, int64_t T, int64_t N,
                   int64_t n0, int64_t width, scalar_t c_leak) {
  scalar_t gbar[TILE];
  for (int64_t k = T - 1; k >= 0; --k) {
    std::fill(gbar, gbar + width, scalar_t(0));
    const int64_t last = std::min(T - 1, k + L - 1);
    for (int64_t j = k + 1; j <= last; ++j) {
      const scalar_t a = kappa[j - k];
      const scalar_t* hbar = coef_hbar + j * N + n0;
      for (int64_t c = 0; c < width; ++c) gbar[c] += a * hbar[c];
    }
    const int64_t row = k * N + n0;
    const scalar_t* u_next = k + 1 < T ? drive_u + row + N : nullptr;
    for (int64_t c = 0; c < width; ++c) {
      const scalar_t carry = u_next != nullptr ? gbar[c] - c_leak * u_next[c] : gbar[c];
      const scalar_t u = drive_u[row + c] + coef_hbar[row + c] * carry;
      drive_u[row + c] = u;
      coef_hbar[row + c] = u - gbar[c];
    }
  }
}

void check(const torch::Tensor& t, const torch::Tensor& like, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == like.scalar_type(), name,
              " must be a contiguous CPU tensor of the input's dtype");
}

}  // namespace

// (H, gamma, V or an empty tensor) of x [T, N]; kappa [L] with kappa[0] unused.
std::vector<torch::Tensor> forward(torch::Tensor x, torch::Tensor kappa, double drive, double offset, double c_leak,
                                   double theta, bool hard, double v_reset, double v_init, bool store_v) {
  check(x, x, "x");
  check(kappa, x, "kappa");
  const int64_t T = x.size(0), N = x.size(1), L = kappa.size(0);
  auto H = torch::empty_like(x), G = torch::empty_like(x);
  auto V = store_v ? torch::empty_like(x) : x.new_empty({0, N});
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fsnn_forward", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* kp = kappa.data_ptr<scalar_t>();
    scalar_t *hp = H.data_ptr<scalar_t>(), *gp = G.data_ptr<scalar_t>();
    scalar_t* vp = store_v ? V.data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, (N + TILE - 1) / TILE, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n0 = t * TILE;
        forward_tile<scalar_t>(xp, kp, L, T, N, n0, std::min(TILE, N - n0), drive, offset, c_leak, theta, hard,
                               v_reset, v_init, hp, gp, vp);
      }
    });
  });
  return {H, G, V};
}

// In place, reverse time: coef (c_k) becomes Hbar and drive (d_k) becomes U.
void backward(torch::Tensor coef, torch::Tensor drive, torch::Tensor kappa, double c_leak) {
  check(coef, coef, "coef");
  check(drive, coef, "drive");
  check(kappa, coef, "kappa");
  const int64_t T = coef.size(0), N = coef.size(1), L = kappa.size(0);
  AT_DISPATCH_FLOATING_TYPES(coef.scalar_type(), "fsnn_backward", [&] {
    scalar_t *cp = coef.data_ptr<scalar_t>(), *dp = drive.data_ptr<scalar_t>();
    const scalar_t* kp = kappa.data_ptr<scalar_t>();
    at::parallel_for(0, (N + TILE - 1) / TILE, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n0 = t * TILE;
        backward_tile<scalar_t>(cp, dp, kp, L, T, N, n0, std::min(TILE, N - n0), c_leak);
      }
    });
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "fsnn-convention forward, direct engine");
  m.def("backward", &backward, "fsnn-convention adjoint recursion, direct engine (in place)");
}
