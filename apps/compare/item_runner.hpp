// Runs the comparison workloads on any backend of the contract (core/backend.hpp).
//
// prepare_item() makes an item ready to run, untimed: it encrypts random inputs (a fixed
// synthetic dataset for regression) with the client key and builds the gate batches, or
// records and compiles the circuit. PreparedItem::run is one timed run on the server side
// (the evaluate() calls, or execute() of the compiled schedule; Cannon's algorithm compiles
// each of its steps inside the run). PreparedItem::check decrypts the outputs of the last run
// and compares them with plain arithmetic.
//
// measure_cost() runs an item once on the plaintext backend: its bootstraps, gates and depth
// are exact and the same on every backend. measure_item() times warmup + reps runs on a real
// backend and checks that its counters saw exactly that many bootstraps and levels per run.
//
// A backend joins the comparison as a Runner<B> (BackendRunner is what the driver sees): the
// GPU backend needs no change here, only a Runner<GpuBackend> made where the driver makes
// the CPU ones.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "app_support.hpp"
#include "progress.hpp"
#include "regression_data.hpp"
#include "torusgate/circuits/cannon.hpp"
#include "torusgate/circuits/catalog.hpp"
#include "torusgate/circuits/linalg.hpp"
#include "torusgate/circuits/program.hpp"
#include "torusgate/circuits/regression.hpp"
#include "torusgate/circuits/schedule.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/error.hpp"
#include "workloads.hpp"

namespace torusgate::apps::compare {

struct PreparedItem {
  std::function<void(const circuits::ProgressCallback&)> run;  // one timed run
  std::function<std::string()> check;  // after a run: "" when right, else the first mismatch
  std::function<std::uint64_t()> ciphertext_bits;  // encrypted bits alive at the peak of a run
  double compile_s = 0;                            // record + compile (circuit items), untimed
};

// Exact, backend-independent cost of one run of an item (from the plaintext backend).
struct Cost {
  std::uint64_t bootstraps = 0;       // blind rotations (MUX counts 2)
  std::uint64_t gates = 0;            // single-bit gates, free ones included
  std::uint64_t depth = 0;            // bootstrapping levels: batches with a bootstrap, in sequence
  std::uint64_t batches = 0;          // evaluate() calls
  std::uint64_t ciphertext_bits = 0;  // peak encrypted bits (inputs, scratch, outputs)
};

struct Measurement {
  std::vector<double> seconds;  // one per timed run
  Summary summary;
  double compile_s = 0;
  std::string wrong;  // "" when every output decrypted right
};

// Non-template helpers (item_runner.cpp).
std::vector<std::uint8_t> random_bits(Csprng& rng, std::size_t count);
std::vector<std::uint64_t> random_values(Csprng& rng, std::size_t count, std::size_t bits);
// (2^bits) - 1 for bits in 1..64.
std::uint64_t low_mask(std::size_t bits);
// "" when equal, else "<what>: element i: expected X, got Y (N of M differ)".
std::string compare_values(std::span<const std::uint64_t> got, std::span<const std::uint64_t> want,
                           const std::string& what);
// The row-major product of two q x q matrices modulo 2^bits.
std::vector<std::uint64_t> plain_matmul(std::span<const std::uint64_t> a,
                                        std::span<const std::uint64_t> b, std::size_t q,
                                        std::size_t bits);
// The quantized synthetic dataset of a regression item (fixed seed: the same data every run).
QuantizedData regression_data(const Item& item);

namespace detail {

template <Backend B>
std::vector<GateOpOf<B>> batch_of(std::initializer_list<GateOpOf<B>> ops) {
  return std::vector<GateOpOf<B>>(ops);
}

// Gate-level items: fixed batches of AND, XOR, XOR3, MAJ and OR gates over coalesced bits.
template <Backend B>
PreparedItem prepare_gates(B& be, const typename B::ClientKey& key, Csprng& rng, const Item& item) {
  struct State {
    BufferOf<B> a, b, c, tmp, out;
    std::vector<std::vector<GateOpOf<B>>> batches;
    std::vector<std::uint64_t> want;
  };
  auto s = std::make_shared<State>();
  const std::size_t n = item.bits;
  const std::vector<std::uint8_t> a = random_bits(rng, n), b = random_bits(rng, n),
                                  c = random_bits(rng, n);
  s->a = torusgate::encrypt(be, key, a, rng);
  s->b = torusgate::encrypt(be, key, b, rng);
  s->c = torusgate::encrypt(be, key, c, rng);
  const BitsOf<B> A = s->a.bits(), Bb = s->b.bits(), C = s->c.bits();
  const bool two_outputs =
      item.kind != WorkloadKind::GateCoalesced && item.kind != WorkloadKind::GateOneByOne;
  s->out = be.allocate(two_outputs ? 2 * n : n);
  const BitsOf<B> O = s->out.bits(), lo = O.subspan(0, n);
  const BitsOf<B> hi = two_outputs ? O.subspan(n, n) : lo;
  s->want.resize(s->out.size());
  for (std::size_t i = 0; i < n; ++i) {
    const int sum3 = a[i] + b[i] + c[i];
    switch (item.kind) {
      case WorkloadKind::GateCoalesced:
      case WorkloadKind::GateOneByOne:
        s->want[i] = a[i] & b[i];
        break;
      case WorkloadKind::AndXorCompound:
      case WorkloadKind::AndXorSeparate:
        s->want[i] = a[i] & b[i];
        s->want[n + i] = a[i] ^ b[i];
        break;
      default:  // full adders: sum, then carry
        s->want[i] = sum3 & 1;
        s->want[n + i] = sum3 >= 2;
    }
  }
  switch (item.kind) {
    case WorkloadKind::GateCoalesced:
      s->batches.push_back(batch_of<B>({gate::and_(A, Bb, O)}));
      break;
    case WorkloadKind::GateOneByOne:
      for (std::size_t i = 0; i < n; ++i)
        s->batches.push_back(batch_of<B>({gate::and_(A[i], Bb[i], O[i])}));
      break;
    case WorkloadKind::AndXorCompound:
      s->batches.push_back(batch_of<B>({gate::and_(A, Bb, lo), gate::xor_(A, Bb, hi)}));
      break;
    case WorkloadKind::AndXorSeparate:
      s->batches.push_back(batch_of<B>({gate::and_(A, Bb, lo)}));
      s->batches.push_back(batch_of<B>({gate::xor_(A, Bb, hi)}));
      break;
    case WorkloadKind::FullAdderCompound:
      s->batches.push_back(batch_of<B>({gate::xor3(A, Bb, C, lo), gate::majority(A, Bb, C, hi)}));
      break;
    case WorkloadKind::FullAdderTwoInput: {
      // t1 = a XOR b, t2 = a AND b; sum = t1 XOR c, t3 = t1 AND c; carry = t2 OR t3.
      s->tmp = be.allocate(3 * n);
      const BitsOf<B> t1 = s->tmp.bits(0, n), t2 = s->tmp.bits(n, n), t3 = s->tmp.bits(2 * n, n);
      s->batches.push_back(batch_of<B>({gate::xor_(A, Bb, t1), gate::and_(A, Bb, t2)}));
      s->batches.push_back(batch_of<B>({gate::xor_(t1, C, lo), gate::and_(t1, C, t3)}));
      s->batches.push_back(batch_of<B>({gate::or_(t2, t3, hi)}));
      break;
    }
    default:
      throw Error("prepare_gates: " + item.key() + " is not a gate-level item");
  }
  PreparedItem p;
  p.run = [s, &be](const circuits::ProgressCallback&) {
    for (const auto& batch : s->batches) be.evaluate(std::span<const GateOpOf<B>>(batch));
  };
  p.check = [s, &be, &key, what = item.key()] {
    const std::vector<std::uint8_t> bits = torusgate::decrypt(be, key, s->out.bits());
    const std::vector<std::uint64_t> got(bits.begin(), bits.end());
    return compare_values(got, s->want, what + " (output bits)");
  };
  p.ciphertext_bits = [s] {
    return std::uint64_t{s->a.size() + s->b.size() + s->c.size() + s->tmp.size() + s->out.size()};
  };
  return p;
}

// Two random q x q matrices of the item's width, encrypted and appended to `arrays`; returns
// their product modulo 2^width.
template <Backend B>
std::vector<std::uint64_t> encrypt_matrices(B& be, const typename B::ClientKey& key, Csprng& rng,
                                            const Item& item,
                                            std::vector<circuits::IntArray<B>>& arrays) {
  const circuits::IntType type{item.bits, false};
  const std::size_t q = item.dimension;
  const std::vector<std::uint64_t> as = random_values(rng, q * q, item.bits),
                                   bs = random_values(rng, q * q, item.bits);
  arrays.push_back(circuits::IntArray<B>::encrypt(be, key, as, type, rng, q));
  arrays.push_back(circuits::IntArray<B>::encrypt(be, key, bs, type, rng, q));
  return plain_matmul(as, bs, q, item.bits);
}

// Circuit items: encrypted inputs, one compiled schedule, the expected outputs as the uint64
// patterns IntArray::decrypt returns (unsigned values zero-extended, signed sign-extended).
template <Backend B>
struct CircuitState {
  std::vector<circuits::IntArray<B>> inputs;
  circuits::Circuit circuit;
  std::vector<circuits::Expr> outputs;
  std::vector<std::vector<std::uint64_t>> want;
  circuits::Schedule schedule;
  std::vector<circuits::IntArray<B>> results;
};

template <Backend B>
PreparedItem compile_circuit(B& be, const typename B::ClientKey& key,
                             std::shared_ptr<CircuitState<B>> s, const Item& item,
                             std::chrono::steady_clock::time_point record_start) {
  s->schedule = circuits::compile(s->circuit, s->outputs);
  s->circuit = circuits::Circuit();  // the schedule is all a run needs
  PreparedItem p;
  p.compile_s = seconds_since(record_start);
  p.run = [s, &be](const circuits::ProgressCallback& progress) {
    std::vector<const circuits::IntArray<B>*> bound;
    for (const auto& array : s->inputs) bound.push_back(&array);
    s->results.clear();  // frees the last run's outputs first
    s->results = circuits::execute(be, s->schedule,
                                   std::span<const circuits::IntArray<B>* const>(bound), progress);
  };
  p.check = [s, &be, &key, what = item.key()] {
    for (std::size_t k = 0; k < s->want.size(); ++k) {
      const std::vector<std::uint64_t> got = s->results.at(k).decrypt(be, key);
      std::string wrong =
          compare_values(got, s->want[k], what + " (output " + std::to_string(k) + ")");
      if (!wrong.empty()) return wrong;
    }
    return std::string();
  };
  p.ciphertext_bits = [s] {
    std::uint64_t bits = s->schedule.scratch_bits;
    for (const auto& in : s->schedule.inputs) bits += in.bits();
    for (const auto& out : s->schedule.outputs) bits += out.bits();
    return bits;
  };
  return p;
}

template <Backend B>
PreparedItem prepare_circuit(B& be, const typename B::ClientKey& key, Csprng& rng,
                             const Item& item) {
  using Array = circuits::IntArray<B>;
  auto s = std::make_shared<CircuitState<B>>();
  circuits::Circuit& c = s->circuit;
  const auto t0 = std::chrono::steady_clock::now();
  if (item.kind == WorkloadKind::CatalogOp) {
    const circuits::Operation& op = circuits::find_operation(item.operation);
    const circuits::IntType type{item.bits, false};
    const std::vector<std::uint64_t> xs = random_values(rng, item.length, item.bits),
                                     ys = random_values(rng, item.length, item.bits);
    s->inputs.push_back(Array::encrypt(be, key, xs, type, rng));
    s->inputs.push_back(Array::encrypt(be, key, ys, type, rng));
    const circuits::Expr x = c.input(type, 1, item.length), y = c.input(type, 1, item.length);
    s->outputs.push_back(op.record(c, x, y));
    const std::uint64_t mask = low_mask(op.result_width(item.bits));
    std::vector<std::uint64_t> want(item.length);
    for (std::size_t e = 0; e < item.length; ++e)
      want[e] = static_cast<std::uint64_t>(op.reference(xs[e], ys[e], type)) & mask;
    s->want.push_back(std::move(want));
  } else if (item.kind == WorkloadKind::MatMul) {
    const circuits::IntType type{item.bits, false};
    const std::size_t q = item.dimension;
    s->want.push_back(encrypt_matrices(be, key, rng, item, s->inputs));
    const circuits::Expr a = c.input(type, q, q), b = c.input(type, q, q);
    s->outputs.push_back(circuits::matmul(c, a, b));
  } else if (item.kind == WorkloadKind::Regression) {
    const QuantizedData data = regression_data(item);
    s->inputs.push_back(circuits::IntArray<B>::encrypt_integers(be, key, data.x, data.x_type, rng, data.rows));
    s->inputs.push_back(circuits::IntArray<B>::encrypt_integers(be, key, data.y, data.y_type, rng, data.rows));
    const circuits::Expr x = c.input(data.x_type, data.rows, data.attributes);
    const circuits::Expr y = c.input(data.y_type, data.rows, 1);
    const circuits::RegressionAggregates agg = circuits::regression_aggregates(c, x, y, true);
    s->outputs = {agg.xtx, agg.xty};
    const IntegerAggregates plain = plain_aggregates(data, true);
    s->want.emplace_back(plain.xtx.begin(), plain.xtx.end());
    s->want.emplace_back(plain.xty.begin(), plain.xty.end());
  } else {
    throw Error("prepare_circuit: " + item.key() + " is not a circuit item");
  }
  return compile_circuit(be, key, s, item, t0);
}

// Cannon's algorithm: cannon_multiply() runs one schedule per step.
template <Backend B>
PreparedItem prepare_cannon(B& be, const typename B::ClientKey& key, Csprng& rng,
                            const Item& item) {
  using Array = circuits::IntArray<B>;
  struct State {
    std::vector<Array> inputs;
    std::optional<Array> result;
    std::vector<circuits::ScheduleCost> steps;
    std::vector<std::uint64_t> want;
  };
  auto s = std::make_shared<State>();
  const std::size_t q = item.dimension;
  s->want = encrypt_matrices(be, key, rng, item, s->inputs);
  PreparedItem p;
  p.run = [s, &be, q](const circuits::ProgressCallback&) {
    s->result.reset();
    s->steps.clear();
    s->result.emplace(circuits::cannon_multiply(be, s->inputs[0], s->inputs[1], q, 0, &s->steps));
  };
  p.check = [s, &be, &key, what = item.key()] {
    return compare_values(s->result->decrypt(be, key), s->want, what + " (product)");
  };
  p.ciphertext_bits = [s] {
    // Inputs, the carry-save accumulator (two rows) and the output, plus the largest step.
    std::uint64_t scratch = 0;
    for (const auto& step : s->steps) scratch = std::max<std::uint64_t>(scratch, step.scratch_bits);
    const std::uint64_t matrix_bits = s->inputs[0].buffer().size();
    return 2 * matrix_bits + 3 * matrix_bits + scratch;
  };
  return p;
}

}  // namespace detail

template <Backend B>
PreparedItem prepare_item(B& be, const typename B::ClientKey& key, Csprng& rng, const Item& item) {
  switch (item.kind) {
    case WorkloadKind::CatalogOp:
    case WorkloadKind::MatMul:
    case WorkloadKind::Regression:
      return detail::prepare_circuit(be, key, rng, item);
    case WorkloadKind::Cannon:
      return detail::prepare_cannon(be, key, rng, item);
    default:
      return detail::prepare_gates(be, key, rng, item);
  }
}

// One run on the plaintext backend (or any backend): the exact cost. Throws Error when the
// outputs are wrong there, which is a bug of the workload, not of a backend.
template <Backend B>
Cost measure_cost(B& be, const typename B::ClientKey& key, Csprng& rng, const Item& item) {
  PreparedItem p = prepare_item(be, key, rng, item);
  be.reset_stats();
  p.run({});
  const BackendStats& st = be.stats();
  const std::string wrong = p.check();
  if (!wrong.empty()) throw Error("the " + be.name() + " backend computed " + wrong);
  return Cost{st.bootstraps, st.gates, st.bootstrap_batches, st.batches, p.ciphertext_bits()};
}

// warmup untimed runs, then reps timed runs (each with a progress bar when `progress`), the
// backend's counters checked against `cost`, and the outputs of the last run checked.
template <Backend B>
Measurement measure_item(B& be, const typename B::ClientKey& key, Csprng& rng, const Item& item,
                         const Cost& cost, std::size_t warmup, std::size_t reps, bool progress) {
  PreparedItem p = prepare_item(be, key, rng, item);
  Measurement m;
  m.compile_s = p.compile_s;
  for (std::size_t w = 0; w < warmup; ++w) p.run({});
  be.reset_stats();
  for (std::size_t r = 0; r < reps; ++r) {
    ProgressBar bar(item.key() + " run " + std::to_string(r + 1) + "/" + std::to_string(reps),
                    "bootstraps", progress);
    const auto t0 = std::chrono::steady_clock::now();
    p.run([&bar](const circuits::RunProgress& done) {
      bar.update(done.bootstraps_done, done.bootstraps_total);
    });
    m.seconds.push_back(seconds_since(t0));
  }
  const BackendStats& st = be.stats();
  if (st.bootstraps != cost.bootstraps * reps || st.bootstrap_batches != cost.depth * reps) {
    throw Error(item.key() + ": the " + be.name() + " backend counted " +
                std::to_string(st.bootstraps) + " bootstraps in " +
                std::to_string(st.bootstrap_batches) + " levels over " + std::to_string(reps) +
                " runs, but one run has " + std::to_string(cost.bootstraps) + " bootstraps in " +
                std::to_string(cost.depth) + " levels");
  }
  m.summary = summarize(m.seconds);
  m.wrong = p.check();
  return m;
}

// What the driver sees of a backend.
class BackendRunner {
 public:
  virtual ~BackendRunner() = default;
  virtual const std::string& name() const = 0;         // as in --backends
  virtual const std::string& description() const = 0;  // engine, threads, options
  virtual int threads() const = 0;
  // Gates in the batch that measures the throughput: enough to keep the device busy.
  virtual std::size_t calibration_bits() const = 0;
  virtual Measurement measure(const Item& item, const Cost& cost, std::size_t warmup,
                              std::size_t reps, bool progress) = 0;
};

template <Backend B>
class Runner final : public BackendRunner {
 public:
  Runner(std::string name, std::string description, std::unique_ptr<B> backend,
         const typename B::ClientKey& key, int threads, std::size_t calibration_bits)
      : name_(std::move(name)),
        description_(std::move(description)),
        be_(std::move(backend)),
        key_(key),
        threads_(threads),
        calibration_bits_(calibration_bits) {}

  const std::string& name() const override { return name_; }
  const std::string& description() const override { return description_; }
  int threads() const override { return threads_; }
  std::size_t calibration_bits() const override { return calibration_bits_; }
  Measurement measure(const Item& item, const Cost& cost, std::size_t warmup, std::size_t reps,
                      bool progress) override {
    return measure_item(*be_, key_, rng_, item, cost, warmup, reps, progress);
  }

 private:
  std::string name_, description_;
  std::unique_ptr<B> be_;
  const typename B::ClientKey& key_;  // the client's key: encrypts inputs, decrypts outputs
  Csprng rng_;
  int threads_;
  std::size_t calibration_bits_;
};

}  // namespace torusgate::apps::compare
