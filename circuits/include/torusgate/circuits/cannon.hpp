// Cannon's matrix product on a backend: one run per step, so only the products of one step
// (q^3 / grid of them) are in memory at once, against q^3 for matmul().
#pragma once

#include <optional>
#include <vector>

#include "torusgate/circuits/linalg.hpp"
#include "torusgate/circuits/program.hpp"

namespace torusgate::circuits {

// A * B for square q x q arrays of the same type, modulo 2^width (0: their width), in `grid`
// steps (grid divides q; grid = q is element-wise Cannon, grid = 1 is one step). The
// accumulator stays in carry-save form between steps; the last step adds its two rows.
// `costs`, when given, receives the schedule cost of every step.
template <Backend B>
IntArray<B> cannon_multiply(B& be, const IntArray<B>& a, const IntArray<B>& b, std::size_t grid,
                            std::size_t width = 0, std::vector<ScheduleCost>* costs = nullptr) {
  if (width == 0) width = a.width();
  std::optional<IntArray<B>> row0, row1;
  for (std::size_t step = 0;; ++step) {
    Program<B> prog(be);
    const Expr ea = prog.input(a), eb = prog.input(b);
    CannonRows acc;
    if (row0) acc = CannonRows{prog.input(*row0), prog.input(*row1)};
    const CannonRows next = cannon_step(prog.circuit(), ea, eb, acc, grid, step, width);
    if (step + 1 >= grid) {
      IntArray<B> out = prog.run(cannon_finish(prog.circuit(), next, a.is_signed()));
      if (costs) costs->push_back(prog.last_schedule().cost);
      return out;
    }
    std::vector<IntArray<B>> rows = prog.run({next.row0, next.row1});
    if (costs) costs->push_back(prog.last_schedule().cost);
    row0.emplace(std::move(rows[0]));
    row1.emplace(std::move(rows[1]));
  }
}

}  // namespace torusgate::circuits
