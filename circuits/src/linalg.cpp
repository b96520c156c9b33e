// Sums, dot products, matrix products and the steps of Cannon's algorithm (L. E. Cannon,
// "A cellular computer to implement the Kalman filter algorithm", PhD thesis, 1969), all as
// fused bit heaps.
#include "torusgate/circuits/linalg.hpp"

#include <string>
#include <vector>

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/core/error.hpp"

namespace torusgate::circuits {

Expr sum(Circuit& c, const Expr& x, std::size_t width) {
  check_operand(x, "sum");
  if (width == 0) width = x.width();
  check_width(width, "sum");
  BitHeap heap(width, 1);
  for (std::size_t e = 0; e < x.lanes(); ++e) heap.add(x.elements(e, 1));
  return heap.sum(c, x.is_signed());
}

Expr dot(Circuit& c, const Expr& x, const Expr& y, std::size_t width) {
  check_operand(x, "dot");
  check_operand(y, "dot");
  check_same_shape(x, y, "dot");
  if (width == 0) width = x.width();
  check_width(width, "dot");
  // The partial products of all elements in one heap of L lanes, then the lanes as rows of
  // a one-lane heap: one carry-save tree and one final adder for the whole dot product.
  BitHeap products(width, x.lanes());
  products.add_product(c, x, y);
  BitHeap heap(width, 1);
  products.add_lanes_to(heap);
  return heap.sum(c, x.is_signed());
}

Expr transpose(const Expr& a) {
  check_operand(a, "transpose");
  std::vector<std::size_t> order;
  order.reserve(a.lanes());
  for (std::size_t j = 0; j < a.cols(); ++j)
    for (std::size_t i = 0; i < a.rows(); ++i) order.push_back(i * a.cols() + j);
  return a.gather(order).reshape(a.cols(), a.rows());
}

Expr matmul(Circuit& c, const Expr& a, const Expr& b, std::size_t width) {
  check_operand(a, "matmul");
  check_operand(b, "matmul");
  EXPECTS(a.type() == b.type(), "matmul: operands are " + to_string(a.type()) + " and " +
                                    to_string(b.type()));
  EXPECTS(a.cols() == b.rows(), "matmul: A is " + std::to_string(a.rows()) + " x " +
                                    std::to_string(a.cols()) + " but B is " +
                                    std::to_string(b.rows()) + " x " + std::to_string(b.cols()));
  if (width == 0) width = a.width();
  check_width(width, "matmul");
  const std::size_t r = a.rows(), k = a.cols(), s = b.cols();
  BitHeap heap(width, r * s);
  for (std::size_t t = 0; t < k; ++t) {
    std::vector<std::size_t> ai, bi;
    for (std::size_t i = 0; i < r; ++i)
      for (std::size_t j = 0; j < s; ++j) {
        ai.push_back(i * k + t);
        bi.push_back(t * s + j);
      }
    heap.add_product(c, a.gather(ai), b.gather(bi));
  }
  return heap.sum(c, a.is_signed()).reshape(r, s);
}

CannonRows cannon_step(Circuit& c, const Expr& a, const Expr& b, const CannonRows& acc,
                       std::size_t grid, std::size_t step, std::size_t width) {
  const std::size_t q = a.rows();
  EXPECTS(a.type() == b.type(), "cannon_step: operands are " + to_string(a.type()) + " and " +
                                    to_string(b.type()));
  EXPECTS(a.cols() == q && b.rows() == q && b.cols() == q,
          "cannon_step: A is " + std::to_string(a.rows()) + " x " + std::to_string(a.cols()) +
              " and B is " + std::to_string(b.rows()) + " x " + std::to_string(b.cols()) +
              " but Cannon's algorithm needs two square matrices of the same size");
  EXPECTS(grid >= 1 && q % grid == 0, "cannon_step: a grid of " + std::to_string(grid) +
                                          " blocks does not divide " + std::to_string(q) +
                                          " rows");
  check_width(width, "cannon_step");
  // The accumulator: none (the first step) or two rows of this step's width and shape; rows
  // of another width would be read as other numbers.
  const auto shaped = [&](const Expr& row) {
    return row.width() == width && row.rows() == q && row.cols() == q;
  };
  const auto describe = [](const Expr& row) {
    std::string text = to_string(row.type());
    text.append(" ").append(std::to_string(row.rows()));
    text.append(" x ").append(std::to_string(row.cols()));
    return text;
  };
  if (!(acc.row0.width() == 0 && acc.row1.width() == 0) &&
      !(shaped(acc.row0) && shaped(acc.row1))) {
    std::string message("cannon_step: the accumulator rows are ");
    message.append(describe(acc.row0)).append(" and ").append(describe(acc.row1));
    message.append(" but must both be empty or ").append(std::to_string(width));
    message.append("-bit ").append(std::to_string(q)).append(" x ").append(std::to_string(q));
    throw InvalidArgument(message);
  }
  const std::size_t block = q / grid;
  BitHeap heap(width, q * q);
  if (acc.row0.width() > 0) {
    heap.add(acc.row0);
    heap.add(acc.row1);
  }
  // Block (I, J) meets A(I, K) and B(K, J), K = (I + J + step) mod grid: the cyclic shifts
  // of Cannon's alignment are views, so the step is one multiply-accumulate round.
  for (std::size_t t = 0; t < block; ++t) {
    std::vector<std::size_t> ai, bi;
    for (std::size_t i = 0; i < q; ++i)
      for (std::size_t j = 0; j < q; ++j) {
        const std::size_t kb = (i / block + j / block + step) % grid;
        const std::size_t kk = kb * block + t;
        ai.push_back(i * q + kk);
        bi.push_back(kk * q + j);
      }
    heap.add_product(c, a.gather(ai), b.gather(bi));
  }
  auto [r0, r1] = heap.reduce_to_two(c);
  return CannonRows{r0.reshape(q, q), r1.reshape(q, q)};
}

Expr cannon_finish(Circuit& c, const CannonRows& acc, bool is_signed) {
  check_same_shape(acc.row0, acc.row1, "cannon_finish");
  // Two rows: the heap has no carry-save stage left, only its final adder.
  BitHeap heap(acc.row0.width(), acc.row0.lanes());
  heap.add(acc.row0);
  heap.add(acc.row1);
  return heap.sum(c, is_signed).reshape(acc.row0.rows(), acc.row0.cols());
}

}  // namespace torusgate::circuits
