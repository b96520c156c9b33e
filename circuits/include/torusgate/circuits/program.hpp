// Encrypted integer arrays on a backend (IntArray) and the scheduler that runs circuits on
// them (Program). This is the only part of circuits/ that knows the backend type, and it
// knows it only through the backend contract: the same code runs on the plaintext, CPU and
// GPU backends.
//
//   Program<B> prog(be);
//   Expr x = prog.input(a), y = prog.input(b);           // bind encrypted arrays
//   Expr s = add(prog.circuit(), x, y);                   // record operations...
//   Expr p = multiply(prog.circuit(), x, y);
//   auto out = prog.run({s, p});                          // ...one batch per level for both
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "torusgate/circuits/int_codec.hpp"
#include "torusgate/circuits/netlist.hpp"
#include "torusgate/circuits/schedule.hpp"
#include "torusgate/core/backend.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

// rows x cols encrypted integers of one type on backend B, bit-coalesced: bit j of element e
// is bit j * lanes() + e of the buffer, so bit plane j is one contiguous span.
template <Backend B>
class IntArray {
 public:
  IntArray(BufferOf<B> buffer, IntType type, std::size_t rows, std::size_t cols)
      : buffer_(std::move(buffer)), type_(type), rows_(rows), cols_(cols) {
    EXPECTS(type.width >= 1 && rows >= 1 && cols >= 1,
            "IntArray: type " + to_string(type) + " with shape " + std::to_string(rows) + " x " +
                std::to_string(cols) + " holds no bits");
    const std::size_t needed = bit_count(type, rows, cols, "IntArray");
    EXPECTS(buffer_.size() == needed,
            "IntArray: the buffer has " + std::to_string(buffer_.size()) + " bits but " +
                std::to_string(rows) + " x " + std::to_string(cols) + " " + to_string(type) +
                " needs " + std::to_string(needed));
  }

  // Encrypts `values` (a vector, or rows x cols row-major when rows is given) with the
  // client key. Throws InvalidArgument if a value does not fit `type`.
  static IntArray encrypt(B& be, const typename B::ClientKey& key,
                          std::span<const std::uint64_t> values, IntType type, Csprng& rng,
                          std::size_t rows = 1) {
    check_shape(values.size(), rows, "IntArray::encrypt");
    check_values(values, type, "IntArray::encrypt");
    const std::vector<std::uint8_t> bits = to_bit_planes(values, type);
    return IntArray(torusgate::encrypt(be, key, bits, rng), type, rows, values.size() / rows);
  }
  static IntArray encrypt_signed(B& be, const typename B::ClientKey& key,
                                 std::span<const std::int64_t> values, IntType type, Csprng& rng,
                                 std::size_t rows = 1) {
    EXPECTS(type.is_signed, "IntArray::encrypt_signed: type " + to_string(type) + " is unsigned");
    const std::vector<std::uint64_t> raw = from_signed(values);
    return encrypt(be, key, raw, type, rng, rows);
  }

  // Integers of either signedness as int64 (unsigned types: values 0..2^width - 1): the
  // signed or unsigned encrypt, by the type.
  static IntArray encrypt_integers(B& be, const typename B::ClientKey& key,
                                   std::span<const std::int64_t> values, IntType type, Csprng& rng,
                                   std::size_t rows = 1) {
    if (type.is_signed) return encrypt_signed(be, key, values, type, rng, rows);
    const std::vector<std::uint64_t> raw(values.begin(), values.end());
    return encrypt(be, key, raw, type, rng, rows);
  }

  // Trivial (noiseless, public) encryptions of plaintext constants, made on the backend.
  static IntArray trivial(B& be, std::span<const std::uint64_t> values, IntType type,
                          std::size_t rows = 1);

  // Decrypts with the client key: unsigned values zero-extended, signed ones sign-extended
  // (as uint64 bit patterns; decrypt_signed returns int64). Width 1..64; wider arrays decrypt
  // with decrypt_bits.
  std::vector<std::uint64_t> decrypt(B& be, const typename B::ClientKey& key) const {
    EXPECTS(type_.width <= 64, "IntArray::decrypt: " + to_string(type_) +
                                   " is wider than 64 bits; use decrypt_bits");
    return from_bit_planes(decrypt_bits(be, key), type_, lanes());
  }
  std::vector<std::int64_t> decrypt_signed(B& be, const typename B::ClientKey& key) const {
    const std::vector<std::uint64_t> raw = decrypt(be, key);
    return std::vector<std::int64_t>(raw.begin(), raw.end());
  }
  // Decrypts as int64 whatever the signedness (unsigned arrays: at most 63 bits).
  std::vector<std::int64_t> decrypt_integers(B& be, const typename B::ClientKey& key) const {
    EXPECTS(type_.is_signed || type_.width <= 63,
            "IntArray::decrypt_integers: " + to_string(type_) +
                " values may not fit int64; use decrypt");
    return decrypt_signed(be, key);  // unsigned values are zero-extended, so non-negative
  }
  // The decrypted bit planes: bit j of element e at j * lanes() + e.
  std::vector<std::uint8_t> decrypt_bits(B& be, const typename B::ClientKey& key) const {
    return torusgate::decrypt(be, key, buffer_.bits());
  }

  IntType type() const { return type_; }
  std::size_t width() const { return type_.width; }
  bool is_signed() const { return type_.is_signed; }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t lanes() const { return rows_ * cols_; }
  // Bit plane j: bit j of every element.
  BitsOf<B> bit(std::size_t j) const {
    EXPECTS(j < type_.width, "IntArray::bit: bit " + std::to_string(j) + " of a " +
                                 to_string(type_) + " array");
    return buffer_.bits(j * lanes(), lanes());
  }
  const BufferOf<B>& buffer() const { return buffer_; }

  // The same elements as a rows x cols matrix.
  IntArray reshaped(std::size_t rows, std::size_t cols) && {
    check_shape(lanes(), rows, "IntArray::reshaped");
    EXPECTS(rows * cols == lanes(), "IntArray::reshaped: " + std::to_string(rows) + " x " +
                                        std::to_string(cols) + " does not hold " +
                                        std::to_string(lanes()) + " elements");
    return IntArray(std::move(buffer_), type_, rows, cols);
  }

 private:
  static void check_shape(std::size_t count, std::size_t rows, const char* who) {
    EXPECTS(count > 0, std::string(who) + ": no values");
    EXPECTS(rows >= 1 && count % rows == 0,
            std::string(who) + ": " + std::to_string(count) + " values do not fill " +
                std::to_string(rows) + " equal rows");
  }

  BufferOf<B> buffer_;
  IntType type_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
};

// How far a run has got, reported after every batch (progress bars, logs).
struct RunProgress {
  std::size_t batches_done = 0, batches_total = 0;
  std::uint64_t bootstraps_done = 0, bootstraps_total = 0;
};
using ProgressCallback = std::function<void(const RunProgress&)>;

// Runs a compiled schedule on `be`: inputs[i] is bound to circuit input i. Returns one array
// per output. Throws InvalidArgument if an input is missing or has the wrong type or shape.
// `progress`, when set, is called after every batch.
template <Backend B>
std::vector<IntArray<B>> execute(B& be, const Schedule& schedule,
                                 std::span<const IntArray<B>* const> inputs,
                                 const ProgressCallback& progress = {}) {
  EXPECTS(inputs.size() == schedule.inputs.size(),
          "execute: " + std::to_string(inputs.size()) + " inputs bound but the circuit has " +
              std::to_string(schedule.inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputInfo& want = schedule.inputs[i];
    EXPECTS(inputs[i] != nullptr, "execute: input " + std::to_string(i) + " is not bound");
    const IntArray<B>& have = *inputs[i];
    EXPECTS(have.type() == want.type && have.rows() == want.rows && have.cols() == want.cols,
            "execute: input " + std::to_string(i) + " is " + std::to_string(have.rows()) + " x " +
                std::to_string(have.cols()) + " " + to_string(have.type()) + " but the circuit expects " +
                std::to_string(want.rows) + " x " + std::to_string(want.cols) + " " +
                to_string(want.type));
    EXPECTS(have.buffer().size() == want.bits(),
            "execute: input " + std::to_string(i) + " (" + to_string(have.type()) + ") holds " +
                std::to_string(have.buffer().size()) + " bits but needs " +
                std::to_string(want.bits()) + " (an array moved from?)");
  }
  BufferOf<B> scratch;
  if (schedule.scratch_bits > 0) scratch = be.allocate(schedule.scratch_bits);
  std::vector<BufferOf<B>> outs;
  outs.reserve(schedule.outputs.size());
  for (const OutputInfo& o : schedule.outputs) outs.push_back(be.allocate(o.bits()));

  // A schedule is a public struct: its locations are checked, not trusted (the bit ranges by
  // bits(), the input and output numbers here).
  const auto span_at = [&](const Location& at, std::size_t count) -> BitsOf<B> {
    switch (at.space) {
      case Location::Space::Input:
        EXPECTS(at.index < inputs.size(), "execute: an op reads input " + std::to_string(at.index) +
                                              " but " + std::to_string(inputs.size()) +
                                              " are bound");
        return inputs[at.index]->buffer().bits(at.offset, count);
      case Location::Space::Output:
        EXPECTS(at.index < outs.size(), "execute: an op writes output " +
                                            std::to_string(at.index) + " but the schedule has " +
                                            std::to_string(outs.size()));
        return outs[at.index].bits(at.offset, count);
      case Location::Space::Scratch: break;
    }
    return scratch.bits(at.offset, count);
  };
  std::vector<GateOpOf<B>> ops;
  RunProgress done{0, schedule.batches.size(), 0, schedule.cost.bootstraps};
  for (const auto& batch : schedule.batches) {
    ops.clear();
    ops.reserve(batch.size());
    for (const ScheduledOp& op : batch) {
      done.bootstraps_done += static_cast<std::uint64_t>(op.spec.bootstraps()) * op.count;
      GateOpOf<B> g;
      g.spec = op.spec;
      for (int i = 0; i < op.spec.arity; ++i) g.in[i] = span_at(op.in[i], op.count);
      g.out = span_at(op.out, op.count);
      ops.push_back(g);
    }
    be.evaluate(std::span<const GateOpOf<B>>(ops));
    ++done.batches_done;
    if (progress) progress(done);
  }
  std::vector<IntArray<B>> result;
  result.reserve(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const OutputInfo& o = schedule.outputs[k];
    result.emplace_back(std::move(outs[k]), o.type, o.rows, o.cols);
  }
  return result;
}

// Records operations over bound arrays and runs them together: every gate is issued in the
// first batch where its inputs are ready, so independent operations share batches.
template <Backend B>
class Program {
 public:
  explicit Program(B& be) : be_(&be) {}

  Circuit& circuit() { return circuit_; }

  // Binds an encrypted array and returns its expression. The program keeps a pointer to the
  // array, not a copy: it must outlive run() and stay where it is (not in a vector that
  // grows), which nothing can check. An array given by value (a temporary, or std::move) is
  // moved into the program instead and lives as long as the program.
  Expr input(const IntArray<B>& array) {
    bound_.push_back(&array);
    return circuit_.input(array.type(), array.rows(), array.cols());
  }
  Expr input(IntArray<B>&& array) {
    owned_.push_back(std::move(array));  // a deque: earlier elements do not move
    return input(owned_.back());
  }
  Expr input(const IntArray<B>&& array) = delete;  // a const temporary cannot be moved from

  // Compiles and runs the gates the outputs need; returns one array per output.
  std::vector<IntArray<B>> run(std::span<const Expr> outputs) {
    last_ = compile(circuit_, outputs);
    return execute(*be_, last_, std::span<const IntArray<B>* const>(bound_), progress_);
  }
  std::vector<IntArray<B>> run(std::initializer_list<Expr> outputs) {
    return run(std::span<const Expr>(outputs.begin(), outputs.size()));
  }
  IntArray<B> run(const Expr& output) {
    std::vector<IntArray<B>> out = run(std::span<const Expr>(&output, 1));
    return std::move(out.front());
  }

  // The schedule of the last run (batches, depth, gate counts).
  const Schedule& last_schedule() const { return last_; }

  // Called after every batch of the following runs (an empty function: no reports).
  void on_progress(ProgressCallback progress) { progress_ = std::move(progress); }

 private:
  B* be_;
  ProgressCallback progress_;
  Circuit circuit_;
  std::deque<IntArray<B>> owned_;  // the arrays bound by value
  std::vector<const IntArray<B>*> bound_;
  Schedule last_;
};

template <Backend B>
IntArray<B> IntArray<B>::trivial(B& be, std::span<const std::uint64_t> values, IntType type,
                                 std::size_t rows) {
  check_shape(values.size(), rows, "IntArray::trivial");
  check_values(values, type, "IntArray::trivial");
  Program<B> prog(be);
  return prog.run(prog.circuit().constant(values, type).reshape(rows, values.size() / rows));
}

// One operation, run at once: compute(be, [](Circuit& c, Expr x, Expr y) { return add(c, x, y); },
// a, b) binds the arrays, records the operation and runs it.
template <Backend B, class F, class... Arrays>
IntArray<B> compute(B& be, F&& operation, const Arrays&... arrays) {
  Program<B> prog(be);
  Expr out = operation(prog.circuit(), prog.input(arrays)...);
  return prog.run(out);
}

}  // namespace torusgate::circuits
