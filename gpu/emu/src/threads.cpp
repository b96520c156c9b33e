// The CUDA emulator's threads. The blocks of a grid run on several OS threads at once
// (TORUSGATE_CUDA_EMU_THREADS, default: the cores), each with its own fibers, built-in
// variables and static __shared__ arrays. The threads of a block are fibers (own stacks,
// switched cooperatively), each run until it returns or reaches __syncthreads; a barrier
// opens when every thread of the block waits. Threads that wait while others of the block
// have returned (a barrier in divergent code, undefined behaviour in CUDA) are a device
// fault, as is an exception thrown by kernel code or a wmma misuse (device_fault). Which
// __syncthreads a thread waits at is not compared: the host compiler may duplicate a
// barrier's code into both arms of a branch, which nvcc never does to a barrier (a
// convergent operation).
//
// A kernel whose launch completed without reaching a barrier is remembered, and its later
// launches run each thread as a plain call (no fiber: several times faster); a barrier there
// is a fault that names TORUSGATE_CUDA_EMU_FIBERS=always, which keeps every kernel on fibers.
//
// Between two barriers the threads of a block run one after another, in the order
// TORUSGATE_CUDA_EMU_ORDER names: `forward` (thread 0 first, the default), `reverse`, or
// `shuffle` (a new permutation for every phase of every block, from TORUSGATE_CUDA_EMU_SEED);
// `reverse` and `shuffle` also take the blocks of a grid from the last. A missing barrier
// between a write and another thread's read of it in the same phase (a race on a device)
// gives the read the old value in one of the forward and reverse orders, so a result that
// differs between them shows the race. Stand-in for racecheck, not a replacement: a race
// whose stale value happens to equal the new one, or one between two phases of different
// blocks running at once, can pass.
//
// Thread-block clusters (LaunchConfig::cluster > 1, along x): the blocks of a cluster run
// together on one OS thread, as one set of fibers (cluster size x block threads), each block
// with its own dynamic shared memory buffer; the workers take whole clusters from the grid, and
// such a launch always runs on fibers. A fiber waits at its block's barrier (__syncthreads) or
// at the cluster's (cluster_group::sync). A phase runs the ready threads of every block of the
// cluster in one order (block 0's threads first in forward, the last block's last first in
// reverse, all interleaved in shuffle); when a block's barrier opens, that block goes on at
// once, phase after phase of its own threads, ahead of the threads after it in that order,
// until it waits at a barrier that does not open (its cluster's) or returns. So a block reads
// another's shared memory (map_shared_rank) before that block has written it when no cluster
// barrier orders the two (a __syncthreads orders only its own block): in forward, a lower
// block runs ahead of a higher one, in reverse the other way, and one of the two shows the
// race (releasing all blocks' barriers together would hide it: every block would write
// before any read). A cluster barrier opens when every thread of the cluster waits at it; a
// block whose threads have all returned while the rest of its cluster runs gets its shared
// memory refilled with the 0xC3 pattern (a device frees it), so a read of an exited block's
// shared memory (a missing final cluster barrier) reads garbage. Device faults: a block whose
// threads wait at both barriers at once, a cluster barrier reached while a thread of the
// cluster has returned (it can never arrive), a map_shared_rank outside the calling block's
// dynamic shared memory or to a rank outside the cluster. Static __shared__ arrays are per OS
// thread, so the blocks of a cluster would share them: a cluster kernel keeps its shared memory
// in dynamic shared memory (undetected otherwise).
//
// mbarriers, st.async and cp.async.bulk (store_async, bulk_copy_async, cuda_runtime.h): a
// barrier's state lives beside the shared memory (initialised by mbarrier_init, forgotten when
// its block returns); a fiber waiting for a phase leaves the phase to the others. An
// asynchronous store or bulk copy is delivered (its bytes written, then its transactions
// completed) at once in the reverse order, and in the forward order only when no thread of
// the cluster is ready (every thread waits or has returned), the shuffled order choosing
// either at random: a read that no wait orders after the store sees the old contents in
// forward, a store that lands before a read it must follow shows in reverse. When nothing is
// ready, the stores in flight are delivered and the waits whose phase completed go on; a wait
// that nothing left can complete is a device fault that names the barrier's state.
//
// The fiber switch is a few instructions of x86-64 assembly (the callee-saved registers and
// the stack pointer; kernels never change the floating-point control state, which all fibers
// share); other machines and AddressSanitizer builds use ucontext.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator.hpp"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define TG_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace cuda_emu {
namespace {

constexpr std::size_t stack_bytes = std::size_t{256} << 10;

struct Fiber;
[[noreturn]] void fiber_main(Fiber* fiber);

}  // namespace
}  // namespace cuda_emu

#if defined(TG_EMU_ASM_SWITCH)
extern "C" {
// Saves the callee-saved state on the current stack, stores its pointer in *save and
// continues on the stack `load` (made by tg_emu_switch or by fiber_init below).
void tg_emu_switch(void** save, void* load);
// A new fiber's first return address: calls fiber_main(r12).
void tg_emu_fiber_start();
[[noreturn]] void tg_emu_fiber_entry(void* fiber) {
  cuda_emu::fiber_main(static_cast<cuda_emu::Fiber*>(fiber));
}
}
asm(R"(
  .text
  .globl tg_emu_switch
  .type tg_emu_switch, @function
tg_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size tg_emu_switch, .-tg_emu_switch

  .globl tg_emu_fiber_start
  .type tg_emu_fiber_start, @function
tg_emu_fiber_start:
  movq %r12, %rdi
  call tg_emu_fiber_entry@PLT
  ud2
  .size tg_emu_fiber_start, .-tg_emu_fiber_start
)");
#endif

namespace cuda_emu {
namespace {

// waiting: at its block's barrier; cluster_waiting: at its cluster's; mbarrier_waiting: for a
// phase of an mbarrier (mbarrier_wait_parity).
enum class FiberState { ready, waiting, cluster_waiting, mbarrier_waiting, done };

struct Stack {
  unsigned char* base = nullptr;  // the mapping; its lowest page is a guard page
  std::size_t bytes = 0;
  Stack() {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    bytes = stack_bytes + page;
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("cuda emulator: cannot map a fiber stack");
    base = static_cast<unsigned char*>(m);
    mprotect(base, page, PROT_NONE);  // an overflow faults instead of corrupting memory
  }
  ~Stack() { munmap(base, bytes); }
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  unsigned char* top() const { return base + bytes; }
};

struct Fiber {
  std::unique_ptr<Stack> stack = std::make_unique<Stack>();
#if defined(TG_EMU_ASM_SWITCH)
  void* sp = nullptr;
#else
  ucontext_t context{};
#endif
  uint3 tid;
  uint3 block;        // in a cluster launch: its block's blockIdx
  unsigned rank = 0;  // and that block's rank in the cluster
  FiberState state = FiberState::ready;
  // Asynchronous copies (copy_async) this thread issued and has not waited for: done at its
  // wait_async_copies, not before, so a read of their destination before the wait (or before
  // the barrier after every thread's wait) sees the old contents.
  struct PendingCopy {
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  std::vector<PendingCopy> copies;
  // While mbarrier_waiting: the barrier and the parity of the phase it waits for.
  const std::uint64_t* wait_bar = nullptr;
  unsigned wait_parity = 0;
};

// An mbarrier's state (mbarrier_init): arrivals expected per phase and still pending in the
// current one, its transaction count (below zero while transactions complete before they are
// expected) and its phase number.
struct MBarrier {
  unsigned expected = 0;
  unsigned pending = 0;
  std::int64_t tx = 0;
  std::uint64_t phase = 0;
};

// A store_async or bulk_copy_async not yet delivered: its bytes (a store's in data, a bulk
// copy's read from src when it is delivered), where they go and the barrier they complete on.
struct PendingStore {
  unsigned char* dst;
  const std::uint64_t* bar;
  unsigned bytes;
  unsigned char data[16];
  const unsigned char* src = nullptr;
  const char* what = "store_async";
};

// One per OS thread: blocks run one at a time on it.
struct Scheduler {
#if defined(TG_EMU_ASM_SWITCH)
  void* main_sp = nullptr;
#else
  ucontext_t main_context{};
#endif
  std::vector<std::unique_ptr<Fiber>> fibers;  // reused across blocks and launches
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
  unsigned char* dynamic_shared = nullptr;  // the running block's
  unsigned cluster = 1;                     // blocks per cluster of the running launch
  std::size_t shared_bytes = 0;             // each block's dynamic shared memory, in bytes
  unsigned char* const* cluster_shared = nullptr;  // the dynamic shared memory of each rank
  bool direct = false;          // threads run as plain calls (a kernel without barriers)
  std::uint64_t barriers = 0;   // barriers reached in this grid on this OS thread
  bool faulted = false;
  std::string fault;
  // The running cluster's mbarriers (by address), its undelivered store_async and the state of
  // the shuffled order's choice of when each is delivered.
  std::map<const std::uint64_t*, MBarrier> mbarriers;
  std::vector<PendingStore> stores;
  std::uint64_t store_state = 0;
};

thread_local Scheduler scheduler;

void to_scheduler(Fiber* f) {
#if defined(TG_EMU_ASM_SWITCH)
  tg_emu_switch(&f->sp, scheduler.main_sp);
#else
  swapcontext(&f->context, &scheduler.main_context);
#endif
}

void to_fiber(Fiber* f) {
#if defined(TG_EMU_ASM_SWITCH)
  tg_emu_switch(&scheduler.main_sp, f->sp);
#else
  swapcontext(&scheduler.main_context, &f->context);
#endif
}

std::string where(const uint3& block, const uint3& tid) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "block (%u, %u, %u), thread (%u, %u, %u)", block.x, block.y,
                block.z, tid.x, tid.y, tid.z);
  return buf;
}

std::string where(const uint3& tid) { return where(blockIdx, tid); }

// The order of the threads within a phase and of the blocks within a grid.
enum class Order { forward, reverse, shuffle };

bool parse_order(const std::string& name, Order& order) {
  if (name.empty() || name == "forward") order = Order::forward;
  else if (name == "reverse") order = Order::reverse;
  else if (name == "shuffle") order = Order::shuffle;
  else return false;
  return true;
}

std::atomic<Order>& order_setting() {
  static std::atomic<Order> setting = [] {
    const char* v = std::getenv("TORUSGATE_CUDA_EMU_ORDER");
    Order order = Order::forward;
    if (!parse_order(v == nullptr ? "" : v, order)) {
      std::fprintf(stderr, "cuda emulator: TORUSGATE_CUDA_EMU_ORDER='%s' is not forward, "
                   "reverse or shuffle\n", v);
      std::abort();
    }
    return order;
  }();
  return setting;
}

Order thread_order() { return order_setting().load(std::memory_order_relaxed); }

std::uint64_t shuffle_seed() {
  static const std::uint64_t seed = [] {
    const char* v = std::getenv("TORUSGATE_CUDA_EMU_SEED");
    return v == nullptr ? std::uint64_t{1} : std::strtoull(v, nullptr, 10);
  }();
  return seed;
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// `order` becomes the sequence in which the `threads` threads of the current block run their
// phase number `phase`.
void phase_order(std::vector<unsigned>& order, unsigned threads, std::uint64_t phase) {
  order.resize(threads);
  for (unsigned t = 0; t < threads; ++t) order[t] = t;
  switch (thread_order()) {
    case Order::forward:
      break;
    case Order::reverse:
      std::reverse(order.begin(), order.end());
      break;
    case Order::shuffle: {
      std::uint64_t state = shuffle_seed() ^ (std::uint64_t{blockIdx.x} << 40) ^
                            (std::uint64_t{blockIdx.y} << 20) ^ blockIdx.z ^ (phase << 52) ^
                            (phase * 0xD1B54A32D192ED03ull);
      for (unsigned t = threads; t > 1; --t) {
        std::swap(order[t - 1], order[splitmix64(state) % t]);
      }
      break;
    }
  }
}

void fiber_main(Fiber* f) {
  try {
    (*scheduler.body)();
  } catch (const std::exception& e) {
    if (!scheduler.faulted) scheduler.fault = where(f->tid) + ": " + e.what();
    scheduler.faulted = true;
  } catch (...) {
    if (!scheduler.faulted) scheduler.fault = where(f->tid) + ": an exception";
    scheduler.faulted = true;
  }
  f->state = FiberState::done;
  to_scheduler(f);
  std::abort();  // a finished fiber is never resumed
}

#if !defined(TG_EMU_ASM_SWITCH)
void context_entry(unsigned lo, unsigned hi) {
  fiber_main(reinterpret_cast<Fiber*>((std::uintptr_t{hi} << 32) | lo));
}
#endif

void fiber_init(Fiber* f) {
  f->state = FiberState::ready;
#if defined(TG_EMU_ASM_SWITCH)
  // The frame tg_emu_switch pops: r15, r14, r13, r12 (the fiber), rbx, rbp, then the return
  // address tg_emu_fiber_start; its call then finds the stack 16-aligned.
  auto* sp = reinterpret_cast<std::uint64_t*>(f->stack->top() - 16);
  *--sp = reinterpret_cast<std::uint64_t>(&tg_emu_fiber_start);
  *--sp = 0;                                     // rbp
  *--sp = 0;                                     // rbx
  *--sp = reinterpret_cast<std::uint64_t>(f);    // r12
  *--sp = 0;                                     // r13
  *--sp = 0;                                     // r14
  *--sp = 0;                                     // r15
  f->sp = sp;
#else
  getcontext(&f->context);
  f->context.uc_stack.ss_sp = f->stack->base + static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  f->context.uc_stack.ss_size = stack_bytes;
  f->context.uc_link = nullptr;
  const auto p = reinterpret_cast<std::uintptr_t>(f);
  makecontext(&f->context, reinterpret_cast<void (*)()>(&context_entry), 2,
              static_cast<unsigned>(p & 0xffffffffu), static_cast<unsigned>(p >> 32));
#endif
}

// Runs one block of a kernel known to have no barrier, each thread a plain call; false after
// a fault.
bool run_block_direct(unsigned threads, const dim3& block) {
  Scheduler& s = scheduler;
  thread_local std::vector<unsigned> order;
  phase_order(order, threads, 0);
  s.mbarriers.clear();
  for (const unsigned t : order) {
    threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    try {
      (*s.body)();
    } catch (const std::exception& e) {
      s.fault = where(threadIdx) + ": " + e.what();
      s.faulted = true;
      return false;
    }
  }
  return true;
}

// The blockIdx of the block of linear index b in grid g (x fastest).
uint3 block_at(std::uint64_t b, const dim3& g) {
  return uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
               static_cast<unsigned>(b / (std::uint64_t{g.x} * g.y))};
}

// The rank of the cluster block whose dynamic shared memory holds [p, p + bytes), or -1 (a
// kernel runs: run_blocks has set cluster_shared).
int shared_rank(const void* p, std::size_t bytes) {
  const Scheduler& s = scheduler;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (unsigned r = 0; r < s.cluster; ++r) {
    const auto base = reinterpret_cast<std::uintptr_t>(s.cluster_shared[r]);
    if (a >= base && a - base <= s.shared_bytes && bytes <= s.shared_bytes - (a - base)) {
      return static_cast<int>(r);
    }
  }
  return -1;
}

// Where p lies, for a message: "offset X of block R's shared memory".
std::string shared_place(const void* p) {
  const int r = shared_rank(p, 1);
  if (r < 0) return "an address outside the cluster's shared memory";
  const auto offset = reinterpret_cast<std::uintptr_t>(p) -
                      reinterpret_cast<std::uintptr_t>(scheduler.cluster_shared[r]);
  return "offset " + std::to_string(offset) + " of block rank " + std::to_string(r) +
         "'s shared memory";
}

// The largest transaction count an mbarrier holds either way (2^20 - 1 on a device).
constexpr std::int64_t max_transactions = (1 << 20) - 1;

// The phase completes when its arrivals are all there and its transactions all done.
void advance(MBarrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.expected;
  }
}

// Delivers store p (its bytes, then its transactions); an error message, empty when none.
std::string deliver(const PendingStore& p) {
  Scheduler& s = scheduler;
  const auto it = s.mbarriers.find(p.bar);
  if (it == s.mbarriers.end()) {
    return std::string(p.what) + ": the mbarrier at " + shared_place(p.bar) +
           " is no longer initialised when the transfer completes (its block has returned?)";
  }
  std::memcpy(p.dst, p.src != nullptr ? p.src : p.data, p.bytes);
  MBarrier& b = it->second;
  b.tx -= p.bytes;
  if (b.tx < -max_transactions) {
    return std::string(p.what) + ": the mbarrier at " + shared_place(p.bar) +
           " has more completed transactions than it can count (2^20 - 1)";
  }
  advance(b);
  return {};
}

// Delivers every store_async not yet delivered, in the order issued; false after a fault.
bool deliver_stores() {
  Scheduler& s = scheduler;
  for (const PendingStore& p : s.stores) {
    if (std::string e = deliver(p); !e.empty()) {
      s.fault = e;
      s.faulted = true;
      return false;
    }
  }
  s.stores.clear();
  return true;
}

// Whether fiber f, waiting for a phase of an mbarrier, may go on.
bool phase_done(const Fiber* f) {
  const auto it = scheduler.mbarriers.find(f->wait_bar);
  return it != scheduler.mbarriers.end() && (it->second.phase & 1) != f->wait_parity;
}

// Where the threads of one block of a cluster are, between two phases.
struct ClusterBlock {
  unsigned live = 0;        // threads not returned
  unsigned at_block = 0;    // threads waiting at __syncthreads
  unsigned at_cluster = 0;  // threads waiting at the cluster barrier
};

// Runs the cluster whose first block has linear index `first` (config.cluster blocks of
// `threads` threads, block r's dynamic shared memory at shared[r]; a launch without clusters
// runs each block as a cluster of one, whose barrier opens at the end of each phase); false
// after a fault.
bool run_cluster(const LaunchConfig& config, std::uint64_t first, unsigned threads,
                 unsigned char* const* shared) {
  Scheduler& s = scheduler;
  const unsigned size = config.cluster;
  const unsigned total = size * threads;
  try {
    while (s.fibers.size() < total) s.fibers.push_back(std::make_unique<Fiber>());
  } catch (const std::exception& e) {
    s.fault = "a cluster of " + std::to_string(size) + " blocks of " + std::to_string(threads) +
              " threads needs " + std::to_string(total) + " fibers on this OS thread: " +
              e.what();
    s.faulted = true;
    return false;
  }
  thread_local std::vector<ClusterBlock> blocks;
  blocks.assign(size, ClusterBlock{threads, 0, 0});
  for (unsigned r = 0; r < size; ++r) {
    std::memset(shared[r], 0xC3, config.shared_bytes);  // uninitialised, as on a device
  }
  s.mbarriers.clear();
  s.stores.clear();
  s.store_state = shuffle_seed() ^ (first * 0x9E3779B97F4A7C15ull);
  const dim3 block = config.block;
  for (unsigned i = 0; i < total; ++i) {
    Fiber* f = s.fibers[i].get();
    const unsigned t = i % threads;
    f->rank = i / threads;
    f->block = block_at(first + f->rank, config.grid);
    f->tid = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    f->copies.clear();
    fiber_init(f);
  }
  const uint3 first_block = block_at(first, config.grid);
  unsigned live = total, live_blocks = size, at_cluster = 0;
  // Runs fiber f until it waits or returns; true when that opens its block's barrier (the
  // block's threads are then ready again).
  const auto step = [&](Fiber* f) {
    threadIdx = f->tid;
    blockIdx = f->block;
    s.dynamic_shared = shared[f->rank];
    s.current = f;
    to_fiber(f);
    s.current = nullptr;
    ClusterBlock& b = blocks[f->rank];
    if (f->state == FiberState::waiting) {
      if (++b.at_block != threads) return false;
      for (unsigned t = 0; t < threads; ++t) {
        s.fibers[f->rank * threads + t]->state = FiberState::ready;
      }
      b.at_block = 0;
      return true;
    }
    if (f->state == FiberState::cluster_waiting) {
      ++b.at_cluster;
      ++at_cluster;
    } else if (f->state == FiberState::done) {
      --live;
      if (--b.live == 0 && --live_blocks != 0) {
        // The block has exited while others of its cluster run: a device frees its shared
        // memory, and a later read of it through map_shared_rank gets garbage; its
        // mbarriers are gone (a store_async still to complete on one faults).
        std::memset(shared[f->rank], 0xC3, config.shared_bytes);
        std::erase_if(s.mbarriers, [&](const auto& m) { return shared_rank(m.first, 8) == static_cast<int>(f->rank); });
      }
    }
    return false;  // done, or waiting for an mbarrier's phase
  };
  thread_local std::vector<unsigned> order, block_order;
  std::uint64_t phase = 0;
  for (;;) {
    blockIdx = first_block;  // the shuffled order's seed: the cluster's first block
    phase_order(order, total, phase++);
    for (const unsigned i : order) {
      Fiber* f = s.fibers[i].get();
      if (f->state != FiberState::ready) continue;
      bool opened = step(f);
      if (s.faulted) return false;
      // The block's barrier opened: the block goes on at once, phase after phase of its own
      // threads (in the order, within the block), ahead of the threads after f in this order,
      // until it waits at a barrier that does not open or returns (see the top of this file).
      const unsigned r = f->rank;
      while (opened) {
        blockIdx = f->block;
        phase_order(block_order, threads, phase++);
        for (const unsigned t : block_order) {
          opened = step(s.fibers[r * threads + t].get());  // only the last one can open it
          if (s.faulted) return false;
        }
      }
    }
    // No thread is ready: each waits at a barrier or an mbarrier, or has returned.
    if (live == 0) return true;
    // The stores in flight complete, and the threads whose mbarrier phase has completed go on.
    if (!deliver_stores()) return false;
    bool woke = false;
    for (unsigned i = 0; i < total; ++i) {
      Fiber* f = s.fibers[i].get();
      if (f->state == FiberState::mbarrier_waiting && phase_done(f)) {
        f->state = FiberState::ready;
        woke = true;
      }
    }
    if (woke) continue;
    if (at_cluster == total) {
      for (unsigned i = 0; i < total; ++i) s.fibers[i]->state = FiberState::ready;
      for (ClusterBlock& b : blocks) b.at_cluster = 0;
      at_cluster = 0;
      continue;
    }
    // An mbarrier phase that nothing left can complete.
    for (unsigned i = 0; i < total; ++i) {
      const Fiber* f = s.fibers[i].get();
      if (f->state != FiberState::mbarrier_waiting) continue;
      const auto it = s.mbarriers.find(f->wait_bar);
      std::string state = "no longer initialised";
      if (it != s.mbarriers.end()) {
        const MBarrier& b = it->second;
        state = "phase " + std::to_string(b.phase) + ", " + std::to_string(b.pending) + " of " +
                std::to_string(b.expected) + " arrivals pending, transaction count " +
                std::to_string(b.tx);
      }
      s.fault = where(f->block, f->tid) + ": waits for the phase of parity " +
                std::to_string(f->wait_parity) + " of the mbarrier at " +
                shared_place(f->wait_bar) + ", which nothing left can complete (" + state + "; " +
                std::to_string(total - live) + " of the cluster's " + std::to_string(total) +
                " threads have returned, " + std::to_string(at_cluster) +
                " wait at cluster.sync())";
      s.faulted = true;
      return false;
    }
    // No barrier can open: say why, naming a waiting thread (and the other side).
    const auto first_in = [&](unsigned r, FiberState state) -> const Fiber* {
      for (unsigned t = 0; t < threads; ++t) {
        const Fiber* f = s.fibers[r * threads + t].get();
        if (f->state == state) return f;
      }
      return nullptr;
    };
    for (unsigned r = 0; r < size; ++r) {
      const ClusterBlock& b = blocks[r];
      if (b.at_block != 0 && b.at_cluster != 0) {
        const Fiber* f = first_in(r, FiberState::cluster_waiting);
        const Fiber* other = first_in(r, FiberState::waiting);
        s.fault = where(f->block, f->tid) + ": cluster.sync() while thread (" +
                  std::to_string(other->tid.x) + ", " + std::to_string(other->tid.y) + ", " +
                  std::to_string(other->tid.z) + ") of the same block waits at __syncthreads (" +
                  std::to_string(b.at_cluster) + " of its " + std::to_string(threads) +
                  " threads wait at cluster.sync(), " + std::to_string(b.at_block) +
                  " at __syncthreads, " + std::to_string(threads - b.live) + " have returned)";
        s.faulted = true;
        return false;
      }
    }
    for (unsigned r = 0; r < size; ++r) {
      const ClusterBlock& b = blocks[r];
      if (b.at_block != 0) {
        // A block barrier in divergent code: some threads returned, the others wait for them.
        const Fiber* f = first_in(r, FiberState::waiting);
        s.fault = where(f->block, f->tid) + ": __syncthreads in divergent code (" +
                  std::to_string(b.at_block) + " of " + std::to_string(threads) +
                  " threads wait, " + std::to_string(threads - b.live) + " have returned)";
        s.faulted = true;
        return false;
      }
    }
    if (at_cluster != 0) {
      // A cluster barrier that a returned thread can never reach.
      const Fiber* f = nullptr;
      const Fiber* gone = nullptr;
      for (unsigned i = 0; i < total; ++i) {
        const Fiber* g = s.fibers[i].get();
        if (f == nullptr && g->state == FiberState::cluster_waiting) f = g;
        if (gone == nullptr && g->state == FiberState::done) gone = g;
      }
      s.fault = where(f->block, f->tid) + ": cluster.sync() while " +
                where(gone->block, gone->tid) + " of the cluster has returned (" +
                std::to_string(at_cluster) + " of the cluster's " + std::to_string(total) +
                " threads wait, " + std::to_string(total - live) + " have returned)";
      s.faulted = true;
      return false;
    }
    // Unreachable by the rules above (every live thread waits, and a block or the cluster can
    // always open unless one of those faults holds); kept so that a scheduler bug reports a
    // deadlock instead of spinning.
    s.fault = "cluster of block (" + std::to_string(first_block.x) + ", " +
              std::to_string(first_block.y) + ", " + std::to_string(first_block.z) +
              "): no barrier can open (" + std::to_string(live) + " threads wait)";
    s.faulted = true;
    return false;
  }
}

}  // namespace

void sync_threads() {
  if (scheduler.direct) {
    device_fault(
        "__syncthreads in a kernel whose earlier launches reached none, which the emulator "
        "therefore runs without fibers (TORUSGATE_CUDA_EMU_FIBERS=always runs every kernel on "
        "fibers)");
  }
  Fiber* f = scheduler.current;
  if (f == nullptr) device_fault("__syncthreads outside a kernel");
  ++scheduler.barriers;
  f->state = FiberState::waiting;
  to_scheduler(f);
}

void set_thread_order(const std::string& name) {
  Order order = Order::forward;
  if (!parse_order(name, order)) {
    throw std::invalid_argument("cuda emulator: thread order '" + name +
                                "' is not forward, reverse or shuffle");
  }
  order_setting().store(order);
}

std::string thread_order_name() {
  switch (thread_order()) {
    case Order::forward: return "forward";
    case Order::reverse: return "reverse";
    case Order::shuffle: return "shuffle";
  }
  return "forward";
}

unsigned char* dynamic_shared_memory() { return scheduler.dynamic_shared; }

void cluster_sync() {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("cluster.sync() outside a kernel");
  if (s.cluster == 1) {
    // A cluster of one block: its barrier is the block's (and, in a kernel run without fibers,
    // the same fault).
    if (s.direct) {
      device_fault(
          "cluster.sync() in a kernel whose earlier launches reached no barrier, which the "
          "emulator therefore runs without fibers (TORUSGATE_CUDA_EMU_FIBERS=always runs every "
          "kernel on fibers)");
    }
    sync_threads();
    return;
  }
  Fiber* f = s.current;  // a cluster launch always runs on fibers
  ++s.barriers;
  f->state = FiberState::cluster_waiting;
  to_scheduler(f);
}

unsigned cluster_blocks() { return scheduler.cluster; }

void copy_async(void* dst, const void* src, std::size_t bytes) {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("copy_async outside a kernel");
  if (!is_shared(dst) || !is_shared(static_cast<unsigned char*>(dst) + bytes - 1)) {
    device_fault("copy_async: the destination is not in the block's dynamic shared memory");
  }
  if (is_shared(src)) device_fault("copy_async: the source is shared memory, not global");
  if (s.direct || s.current == nullptr) {  // no barrier to order anything: done now
    std::memcpy(dst, src, bytes);
    return;
  }
  s.current->copies.push_back(Fiber::PendingCopy{dst, src, bytes});
}

void wait_async_copies() {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("wait_async_copies outside a kernel");
  if (s.direct || s.current == nullptr) return;
  for (const Fiber::PendingCopy& c : s.current->copies) std::memcpy(c.dst, c.src, c.bytes);
  s.current->copies.clear();
}

bool is_shared(const void* addr) {
  return scheduler.body != nullptr && shared_rank(addr, 1) >= 0;
}

void* map_shared_rank(const void* addr, std::size_t bytes, unsigned rank) {
  const Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("cluster_group::map_shared_rank outside a kernel");
  const auto p = reinterpret_cast<std::uintptr_t>(addr);
  const auto own = reinterpret_cast<std::uintptr_t>(s.dynamic_shared);
  if (p < own || p - own > s.shared_bytes || bytes > s.shared_bytes - (p - own)) {
    // Static __shared__ arrays cannot be mapped: they are one per OS thread (threads.cpp).
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "cluster_group::map_shared_rank: %zu bytes at %p are not in the block's %zu "
                  "bytes of dynamic shared memory at %p (the only shared memory the emulator "
                  "maps)",
                  bytes, addr, s.shared_bytes, static_cast<const void*>(s.dynamic_shared));
    device_fault(buf);
  }
  if (rank >= s.cluster) {
    device_fault(("cluster_group::map_shared_rank: rank " + std::to_string(rank) +
                  ", but the cluster has " + std::to_string(s.cluster) + " blocks")
                     .c_str());
  }
  return s.cluster_shared[rank] + (p - own);
}

namespace {

// The calling block's mbarrier at bar, for `call`: a device fault unless bar is 8-aligned in
// the block's dynamic shared memory and (unless `init`) initialised.
MBarrier& own_mbarrier(std::uint64_t* bar, const char* call, bool init = false) {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault((std::string(call) + " outside a kernel").c_str());
  if (reinterpret_cast<std::uintptr_t>(bar) % 8 != 0 ||
      shared_rank(bar, 8) != static_cast<int>(s.current != nullptr ? s.current->rank : 0)) {
    device_fault((std::string(call) + ": the mbarrier is not 8 bytes aligned to 8 in the "
                  "calling block's dynamic shared memory (" + shared_place(bar) + ")").c_str());
  }
  if (init) return s.mbarriers[bar];
  const auto it = s.mbarriers.find(bar);
  if (it == s.mbarriers.end()) {
    device_fault((std::string(call) + ": no mbarrier_init for the mbarrier at " +
                  shared_place(bar)).c_str());
  }
  return it->second;
}

}  // namespace

void mbarrier_init(std::uint64_t* bar, unsigned count) {
  MBarrier& b = own_mbarrier(bar, "mbarrier_init", true);
  if (count == 0 || count > max_transactions) {
    device_fault(("mbarrier_init: " + std::to_string(count) +
                  " arrivals per phase (1 .. 2^20 - 1)").c_str());
  }
  b = MBarrier{count, count, 0, 0};
}

void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  MBarrier& b = own_mbarrier(bar, "mbarrier_arrive_expect_tx");
  b.tx += bytes;
  if (b.tx > max_transactions) {
    device_fault(("mbarrier_arrive_expect_tx: the mbarrier at " + shared_place(bar) +
                  " would expect " + std::to_string(b.tx) + " transactions (at most 2^20 - 1)")
                     .c_str());
  }
  --b.pending;  // never 0 here: the phase completed at its last arrival
  advance(b);
}

void mbarrier_wait_parity(std::uint64_t* bar, unsigned parity) {
  Scheduler& s = scheduler;
  const MBarrier& b = own_mbarrier(bar, "mbarrier_wait_parity");
  if ((b.phase & 1) != (parity & 1)) return;
  if (s.direct || s.current == nullptr) {
    device_fault(
        "mbarrier_wait_parity: a wait in a kernel whose earlier launches reached no barrier, "
        "which the emulator therefore runs without fibers (TORUSGATE_CUDA_EMU_FIBERS=always "
        "runs every kernel on fibers)");
  }
  Fiber* f = s.current;
  ++s.barriers;
  f->wait_bar = bar;
  f->wait_parity = parity & 1;
  f->state = FiberState::mbarrier_waiting;
  to_scheduler(f);
}

namespace {

// Issues transfer p (checked): delivered at once in the reverse order, when no thread of the
// cluster is ready in forward, either at random in shuffle.
void issue_transfer(const PendingStore& p) {
  Scheduler& s = scheduler;
  const Order order = thread_order();
  const bool now = s.direct || s.current == nullptr || order == Order::reverse ||
                   (order == Order::shuffle && (splitmix64(s.store_state) & 1) != 0);
  if (!now) {
    s.stores.push_back(p);
    return;
  }
  if (std::string e = deliver(p); !e.empty()) device_fault(e.c_str());
}

// The checks of an asynchronous transfer's destination [dst, dst + bytes) and mbarrier bar.
void check_transfer(const char* what, const void* dst, std::size_t bytes,
                    const std::uint64_t* bar) {
  const std::string name = what;
  const int rank = shared_rank(dst, bytes);
  if (rank < 0) {
    device_fault((name + ": the destination is not in the dynamic shared memory of a block "
                  "of the cluster (map_shared_rank)").c_str());
  }
  if (shared_rank(bar, 8) != rank || scheduler.mbarriers.find(bar) == scheduler.mbarriers.end()) {
    device_fault((name + ": the mbarrier is not an initialised one in the destination's block (" +
                  shared_place(bar) + ", the destination at " + shared_place(dst) + ")").c_str());
  }
}

}  // namespace

void store_async(void* dst, const void* src, std::size_t bytes, std::uint64_t* bar) {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("store_async outside a kernel");
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    device_fault(("store_async: " + std::to_string(bytes) + " bytes (4, 8 or 16)").c_str());
  }
  if (reinterpret_cast<std::uintptr_t>(dst) % bytes != 0) {
    device_fault(("store_async: the destination is not aligned to its " + std::to_string(bytes) +
                  " bytes (" + shared_place(dst) + ")").c_str());
  }
  check_transfer("store_async", dst, bytes, bar);
  PendingStore p{static_cast<unsigned char*>(dst), bar, static_cast<unsigned>(bytes), {}};
  std::memcpy(p.data, src, bytes);
  issue_transfer(p);
}

void bulk_copy_async(void* dst, const void* src, std::size_t bytes, std::uint64_t* bar) {
  Scheduler& s = scheduler;
  if (s.body == nullptr) device_fault("bulk_copy_async outside a kernel");
  if (bytes == 0 || bytes % 16 != 0 || bytes > static_cast<std::size_t>(max_transactions)) {
    device_fault(("bulk_copy_async: " + std::to_string(bytes) +
                  " bytes (a positive multiple of 16, at most 2^20 - 1)").c_str());
  }
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % 16 != 0) {
    device_fault(("bulk_copy_async: the source or the destination (" + shared_place(dst) +
                  ") is not aligned to 16 bytes").c_str());
  }
  if (shared_rank(src, 1) >= 0) {
    device_fault("bulk_copy_async: the source is shared memory, not global");
  }
  check_transfer("bulk_copy_async", dst, bytes, bar);
  PendingStore p{static_cast<unsigned char*>(dst), bar, static_cast<unsigned>(bytes), {}};
  p.src = static_cast<const unsigned char*>(src);
  p.what = "bulk_copy_async";
  issue_transfer(p);
}

void device_fault(const char* what) {
  if (scheduler.current == nullptr) throw std::logic_error(what);
  throw std::runtime_error(what);  // caught by fiber_main: the kernel ends with a fault
}

namespace {

// Runs blocks of the grid (whole clusters in a cluster launch), taking their linear indices
// (the clusters') from `next`, on this OS thread until none is left or some thread faulted
// (`stop`); false after a fault of its own.
bool run_blocks(const LaunchConfig& config, const std::function<void()>& thread, bool direct,
                std::atomic<std::uint64_t>& next, std::atomic<bool>& stop,
                std::atomic<std::uint64_t>& barriers, std::string& message) {
  Scheduler& s = scheduler;
  const unsigned threads = config.block.x * config.block.y * config.block.z;
  const dim3 g = config.grid;
  const std::uint64_t blocks = std::uint64_t{g.x} * g.y * g.z;
  const unsigned cluster = config.cluster;  // launch() checked that it divides g.x
  const std::uint64_t units = blocks / cluster;  // what the OS threads take: blocks or clusters
  // Exactly the bytes asked for, so that a sanitizer sees an access beyond them; one buffer
  // per block of a cluster, 256-byte aligned (a device's dynamic shared memory is at least as
  // aligned as a kernel declares it, up to 128 bytes; WMMA needs 32).
  constexpr std::align_val_t shared_alignment{256};
  struct AlignedDelete {
    void operator()(unsigned char* p) const { ::operator delete[](p, shared_alignment); }
  };
  std::vector<std::unique_ptr<unsigned char[], AlignedDelete>> owned(cluster);
  std::vector<unsigned char*> shared(cluster);
  for (unsigned r = 0; r < cluster; ++r) {
    owned[r].reset(static_cast<unsigned char*>(::operator new[](
        std::max<std::size_t>(config.shared_bytes, 1), shared_alignment)));
    shared[r] = owned[r].get();
  }
  s.body = &thread;
  s.dynamic_shared = shared[0];
  s.cluster = cluster;
  s.shared_bytes = config.shared_bytes;
  s.cluster_shared = shared.data();
  s.faulted = false;
  s.fault.clear();
  s.direct = direct;
  s.barriers = 0;
  gridDim = config.grid;
  blockDim = config.block;
  bool ok = true;
  const bool from_last = thread_order() != Order::forward;
  for (std::uint64_t taken = next++; taken < units && !stop.load(); taken = next++) {
    const std::uint64_t u = from_last ? units - 1 - taken : taken;
    bool ran = false;
    if (direct) {
      blockIdx = block_at(u, g);
      std::memset(shared[0], 0xC3, config.shared_bytes);  // uninitialised, as on a device
      ran = run_block_direct(threads, config.block);
    } else {
      // A cluster's blocks are consecutive along x (g.x is a multiple of the cluster size).
      ran = run_cluster(config, u * cluster, threads, shared.data());
    }
    if (!ran) {
      ok = false;
      message = std::string("kernel ") + config.name + ": " + s.fault;
      s.fibers.clear();  // abandoned fibers are never resumed
      stop = true;
      break;
    }
  }
  barriers += s.barriers;
  s.body = nullptr;
  s.dynamic_shared = nullptr;
  s.cluster = 1;
  s.shared_bytes = 0;
  s.cluster_shared = nullptr;
  s.direct = false;
  return ok;
}

// What the emulator knows of a kernel: whether its launches reach __syncthreads. A kernel
// runs on fibers until one of its launches completed without reaching any; from then on its
// threads are plain calls (several times faster), unless TORUSGATE_CUDA_EMU_FIBERS=always.
enum class Barriers { unknown, none, some };

Barriers& barriers_of(const void* kernel, std::unique_lock<std::mutex>& lock) {
  static std::mutex mutex;
  static std::map<const void*, Barriers> known;
  lock = std::unique_lock(mutex);
  return known[kernel];
}

bool always_fibers() {
  static const bool always = [] {
    const char* v = std::getenv("TORUSGATE_CUDA_EMU_FIBERS");
    return v != nullptr && std::string(v) == "always";
  }();
  return always;
}

// Worker threads that run blocks beside the launching thread (TORUSGATE_CUDA_EMU_THREADS
// OS threads in all, default: the machine's cores, at most 16). One grid uses them at a time;
// a grid launched meanwhile from another host thread runs on its own thread alone.
class Workers {
 public:
  Workers() {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    if (const char* v = std::getenv("TORUSGATE_CUDA_EMU_THREADS"); v != nullptr && *v != '\0') {
      n = static_cast<unsigned>(std::max(1L, std::strtol(v, nullptr, 10)));
    }
    n = std::min(n, 16u);
    for (unsigned i = 1; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  // Runs `job` on every worker and on the caller; returns when all are done. False (and
  // nothing run) when the workers are busy with another grid.
  bool run(const std::function<void()>& job) {
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      ++generation_;
      running_ = static_cast<unsigned>(threads_.size());
    }
    wake_.notify_all();
    job();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job = nullptr;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        job = job_;
      }
      (*job)();
      std::lock_guard lock(mutex_);
      if (--running_ == 0) done_.notify_all();
    }
  }
  std::vector<std::thread> threads_;  // detached at exit: never joined (see workers())
  std::mutex busy_, mutex_;
  std::condition_variable wake_, done_;
  const std::function<void()>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  unsigned running_ = 0;
};

Workers& workers() {
  static Workers* w = new Workers;  // never destroyed: its threads wait for ever
  return *w;
}

}  // namespace

bool run_grid(const LaunchConfig& config, const std::function<void()>& thread,
              std::string& message) {
  if (scheduler.body != nullptr) {
    message = std::string(config.name) + ": a kernel launched from inside a kernel";
    return false;
  }
  bool direct = false;
  if (config.cluster == 1) {  // a cluster launch always runs on fibers
    std::unique_lock<std::mutex> lock;
    direct = barriers_of(config.kernel, lock) == Barriers::none && !always_fibers();
  }
  std::atomic<std::uint64_t> next{0}, barriers{0};
  std::atomic<bool> stop{false};
  std::mutex message_mutex;
  bool ok = true;
  const std::function<void()> job = [&] {
    std::string mine;
    if (!run_blocks(config, thread, direct, next, stop, barriers, mine)) {
      std::lock_guard lock(message_mutex);
      if (ok) message = mine;
      ok = false;
    }
  };
  const std::uint64_t units =
      std::uint64_t{config.grid.x} * config.grid.y * config.grid.z / config.cluster;
  if (units == 1 || !workers().run(job)) job();
  if (ok && !direct) {
    std::unique_lock<std::mutex> lock;
    Barriers& b = barriers_of(config.kernel, lock);
    if (b == Barriers::unknown) b = barriers.load() == 0 ? Barriers::none : Barriers::some;
  }
  return ok;
}

}  // namespace cuda_emu
