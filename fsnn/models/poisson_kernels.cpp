// The Poisson encoder's compiled sampler (built on first use by fsnn/models/poisson.py): Bernoulli spikes of the
// uncertain entries (0 < q < 1) of an encoding and the currents W s_t they drive, without the [T, B, F] spikes.
//
//   spike     s_{t,r,f} = [u_{t,r,f} < q_{r,f}],  u = u24 2^-24,  u24 uniform on [0, 2^24) from the SplitMix64
//             sequence of the encoding's seed, 8 bits at a time (draw_row: its first byte, and 16 more bits only
//             when that byte does not decide, 1 time in 256)
//   forward   out[t, r, :]  = sum_{f uncertain in row r} s_{t,r,f} W^T[f, :]
//   backward  dW^T[f, :]    = sum_{t, r} s_{t,r,f} g[t, r, :]   (from the spikes the forward pass recorded, a byte each)
//
// SplitMix64 (the generator of Java's SplittableRandom; it passes BigCrush) is counter-based: every spike is a
// function of (seed, t, r, f) alone, so any split of the work gives the same spikes, and no [T, B, F] tensor is
// built. Steps run in parallel over torch's intra-op threads (one thread when torch.set_num_threads(1)).
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

// draw_row reads the bytes of a 64-bit draw in memory order: the stream below is that of little-endian machines
static_assert(std::endian::native == std::endian::little, "fsnn's Poisson kernels assume a little-endian CPU");

namespace {

struct Entries {  // the uncertain entries: row r's are col[start[r]] .. col[start[r + 1] - 1], ascending
  std::vector<int64_t> col, start;
};

Entries entries_of(const torch::Tensor& flat, int64_t rows, int64_t features) {
  Entries e;
  const int64_t n = flat.size(0);
  const int64_t* p = flat.data_ptr<int64_t>();
  e.col.resize(n);
  e.start.assign(rows + 1, 0);
  for (int64_t j = 0; j < n; ++j) {
    e.col[j] = p[j] % features;
    ++e.start[p[j] / features + 1];
  }
  for (int64_t r = 0; r < rows; ++r) e.start[r + 1] += e.start[r];
  return e;
}

// SplitMix64's output at index i of the sequence with seed `seed` (Steele, Lea & Flood 2014; Vigna's splitmix64.c):
// the Weyl step seed + (i + 1) * golden gamma, then Stafford's mix 13.
inline uint64_t splitmix64(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A spike s = [u < q] with u = u24 2^-24 and u24 uniform on [0, 2^24) is [u24 < Q], Q = ceil(q 2^24) (exact for any
// float or double q in (0, 1)). Its first byte decides it unless it equals Q's: Q's top bits, then its low 16.
template <typename scalar_t>
std::vector<uint32_t> thresholds(const scalar_t* q, int64_t n) {
  std::vector<uint32_t> Q(n);
  for (int64_t j = 0; j < n; ++j) Q[j] = uint32_t(std::ceil(double(q[j]) * 16777216.0));
  return Q;
}

struct Stream {  // where an encoding's draws sit in the SplitMix64 sequence of its seed
  uint64_t seed, rows, features, blocks, ties;  // blocks: 8-byte words per row; ties: where tie-breaks start
  Stream(int64_t seed_, int64_t steps, int64_t rows_, int64_t features_)
      : seed(uint64_t(seed_)), rows(uint64_t(rows_)), features(uint64_t(features_)),
        blocks((uint64_t(features_) + 7) / 8), ties(uint64_t(steps) * uint64_t(rows_) * blocks) {}
};

// The features of row r that fire at step t, into `fired` (room for the row's entries); returns how many. The
// spikes of the row's entries go to bits[j] too unless bits is null. `words` has room for s.blocks draws.
//   u24 of entry (t, r, f): byte f % 8 of draw (t R + r) B + f / 8, then, only if that byte equals Q's top byte
//   (1 in 256), the low 16 bits of draw ties + (t R + r) F + f; R rows, F features, B = ceil(F / 8).
// Branch-free on the spike (every entry is written, the count moves by the spike): with q near 1/2 a branch would
// mispredict half the time; the tie branch is taken 1 time in 256.
inline int64_t draw_row(const Entries& e, const uint32_t* __restrict Q, const Stream& s, int64_t t, int64_t r,
                        uint64_t* __restrict words, int64_t* __restrict fired, uint8_t* __restrict bits) {
  const uint64_t row = uint64_t(t) * s.rows + uint64_t(r);
  for (uint64_t b = 0; b < s.blocks; ++b) words[b] = splitmix64(s.seed, row * s.blocks + b);
  // local restrict pointers: the stores below (bits: a byte pointer, which may alias anything) would otherwise make
  // the compiler reload every pointer from memory at each entry
  const uint8_t* __restrict bytes = reinterpret_cast<const uint8_t*>(words);  // byte f % 8 of word f / 8
  const int64_t* __restrict col = e.col.data();
  const int64_t first = e.start[r], last = e.start[r + 1];
  int64_t count = 0;
  for (int64_t j = first; j < last; ++j) {
    const int64_t f = col[j];
    const uint32_t top = Q[j] >> 16, u8 = bytes[f];
    bool spike = u8 < top;
    if (u8 == top) [[unlikely]]
      spike = (splitmix64(s.seed, s.ties + row * s.features + uint64_t(f)) & 0xFFFFu) < (Q[j] & 0xFFFFu);
    fired[count] = f;
    count += spike;
  }
  if (bits != nullptr)  // the spikes again, for the backward pass: a second short pass over the fired list
    for (int64_t k = 0, j = first; j < last; ++j) {
      const bool spike = k < count && fired[k] == col[j];
      bits[j] = spike;
      k += spike;
    }
  return count;
}

// The same list from the spikes recorded by draw_row.
inline int64_t recorded_row(const Entries& e, int64_t r, const uint8_t* bits, int64_t* fired) {
  int64_t count = 0;
  for (int64_t j = e.start[r]; j < e.start[r + 1]; ++j) {
    fired[count] = e.col[j];
    count += bits[j];
  }
  return count;
}

// dst[c] = sum_k w[fired[k] * C + c]: four partial sums, so that consecutive additions do not wait for each other.
template <typename scalar_t>
inline void sum_rows(const scalar_t* __restrict w, const int64_t* fired, int64_t n, int64_t C,
                     scalar_t* __restrict acc, scalar_t* __restrict dst) {
  std::fill(acc, acc + 4 * C, scalar_t(0));
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const scalar_t *w0 = w + fired[k] * C, *w1 = w + fired[k + 1] * C, *w2 = w + fired[k + 2] * C,
                   *w3 = w + fired[k + 3] * C;
    for (int64_t c = 0; c < C; ++c) {
      acc[c] += w0[c];
      acc[C + c] += w1[c];
      acc[2 * C + c] += w2[c];
      acc[3 * C + c] += w3[c];
    }
  }
  for (; k < n; ++k)
    for (int64_t c = 0; c < C; ++c) acc[c] += w[fired[k] * C + c];
  for (int64_t c = 0; c < C; ++c) dst[c] = (acc[c] + acc[C + c]) + (acc[2 * C + c] + acc[3 * C + c]);
}

int64_t widest_row(const Entries& e) {
  int64_t widest = 0;
  for (size_t r = 0; r + 1 < e.start.size(); ++r) widest = std::max(widest, e.start[r + 1] - e.start[r]);
  return widest;
}

void check(const torch::Tensor& t, at::ScalarType type, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == type, name,
              " must be a contiguous CPU tensor of dtype ", type);
}

}  // namespace

// (currents [steps, rows, C], spikes fired [steps] int64, spikes [steps, n] uint8 if record else [0, n]) of the
// uncertain entries flat [n] (row-major positions in [rows, F], ascending) with probabilities q [n], through
// weight_t [F, C]. The recorded spikes (one byte per uncertain entry and step, 1/4 of a float spike tensor's
// uncertain part) spare the backward pass drawing them again.
std::vector<torch::Tensor> currents(torch::Tensor weight_t, torch::Tensor flat, torch::Tensor q, int64_t rows,
                                    int64_t steps, int64_t seed, bool record) {
  check(flat, at::kLong, "flat");
  check(q, weight_t.scalar_type(), "q");
  check(weight_t, q.scalar_type(), "weight_t");
  const int64_t features = weight_t.size(0), C = weight_t.size(1);
  const Entries e = entries_of(flat, rows, features);
  const int64_t widest = widest_row(e);
  const int64_t n_entries = flat.size(0);
  const Stream stream(seed, steps, rows, features);
  auto out = torch::empty({steps, rows, C}, weight_t.options());
  auto fired = torch::zeros({steps}, flat.options());
  auto bits = torch::empty({record ? steps : 0, n_entries}, flat.options().dtype(at::kByte));
  AT_DISPATCH_FLOATING_TYPES(weight_t.scalar_type(), "fsnn_poisson_currents", [&] {
    const scalar_t* w = weight_t.data_ptr<scalar_t>();
    const std::vector<uint32_t> Q = thresholds(q.data_ptr<scalar_t>(), n_entries);
    scalar_t* o = out.data_ptr<scalar_t>();
    int64_t* count = fired.data_ptr<int64_t>();
    uint8_t* b = record ? bits.data_ptr<uint8_t>() : nullptr;
    at::parallel_for(0, steps, 1, [&](int64_t t0, int64_t t1) {
      std::vector<int64_t> spiking(widest);
      std::vector<uint64_t> words(stream.blocks);
      std::vector<scalar_t> acc(4 * C);
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = draw_row(e, Q.data(), stream, t, r, words.data(), spiking.data(),
                                     record ? b + t * n_entries : nullptr);
          sum_rows<scalar_t>(w, spiking.data(), n, C, acc.data(), o + (t * rows + r) * C);
          count[t] += n;
        }
      }
    });
  });
  return {out, fired, bits};
}

// dW^T [F, C] of the currents' gradient grad [steps, rows, C], from the spikes [steps, n] that currents() recorded.
torch::Tensor currents_backward(torch::Tensor grad, torch::Tensor flat, torch::Tensor bits, int64_t features) {
  check(flat, at::kLong, "flat");
  check(bits, at::kByte, "bits");
  TORCH_CHECK(grad.device().is_cpu() && grad.is_contiguous(), "grad must be a contiguous CPU tensor");
  const int64_t steps = grad.size(0), rows = grad.size(1), C = grad.size(2), n_entries = flat.size(0);
  const Entries e = entries_of(flat, rows, features);
  const int64_t widest = widest_row(e);
  const int64_t threads = at::get_num_threads();
  auto partial = torch::zeros({threads, features, C}, grad.options());
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "fsnn_poisson_currents_backward", [&] {
    const scalar_t* g = grad.data_ptr<scalar_t>();
    const uint8_t* b = bits.data_ptr<uint8_t>();
    scalar_t* acc = partial.data_ptr<scalar_t>();
    at::parallel_for(0, steps, 1, [&](int64_t t0, int64_t t1) {
      scalar_t* mine = acc + int64_t(at::get_thread_num()) * features * C;
      std::vector<int64_t> spiking(widest);
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = recorded_row(e, r, b + t * n_entries, spiking.data());
          const scalar_t* src = g + (t * rows + r) * C;
          for (int64_t k = 0; k < n; ++k) {
            scalar_t* dst = mine + spiking[k] * C;
            for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
          }
        }
      }
    });
  });
  return partial.sum(0);
}

// The spikes [steps, rows * F] of the uncertain entries (0 elsewhere).
torch::Tensor spikes(torch::Tensor flat, torch::Tensor q, int64_t rows, int64_t features, int64_t steps,
                     int64_t seed) {
  check(flat, at::kLong, "flat");
  TORCH_CHECK(q.device().is_cpu() && q.is_contiguous(), "q must be a contiguous CPU tensor");
  const Entries e = entries_of(flat, rows, features);
  const int64_t widest = widest_row(e);
  const Stream stream(seed, steps, rows, features);
  auto out = torch::zeros({steps, rows * features}, q.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "fsnn_poisson_spikes", [&] {
    const std::vector<uint32_t> Q = thresholds(q.data_ptr<scalar_t>(), flat.size(0));
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, steps, 1, [&](int64_t t0, int64_t t1) {
      std::vector<int64_t> spiking(widest);
      std::vector<uint64_t> words(stream.blocks);
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = draw_row(e, Q.data(), stream, t, r, words.data(), spiking.data(), nullptr);
          scalar_t* row = o + (t * rows + r) * features;
          for (int64_t k = 0; k < n; ++k) row[spiking[k]] = scalar_t(1);
        }
      }
    });
  });
  return out;
}

// SplitMix64's first n outputs with seed `seed` (for the known-answer test), as signed 64-bit integers.
std::vector<int64_t> splitmix64_sequence(int64_t seed, int64_t n) {
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = int64_t(splitmix64(uint64_t(seed), uint64_t(i)));
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("currents", &currents, "Poisson spikes of the uncertain entries through a linear layer");
  m.def("currents_backward", &currents_backward, "gradient of currents() with respect to the weight");
  m.def("spikes", &spikes, "Poisson spikes of the uncertain entries");
  m.def("splitmix64_sequence", &splitmix64_sequence, "SplitMix64's first outputs");
}
