// The thread-block cluster of cooperative groups (compute capability 9.0) as the CUDA emulator
// (gpu/emu) provides it: this_cluster() and its barrier, its block rank and map_shared_rank,
// for clusters along x (LaunchConfig::cluster in cuda_runtime.h). A kernel written against it
// compiles unchanged under nvcc with the toolkit's <cooperative_groups.h>. In a launch without
// clusters, this_cluster() is a cluster of one block, as on a device.
//
// map_shared_rank maps only dynamic shared memory (the launch's third argument): the emulator
// keeps each block's in its own buffer, while a static __shared__ array is one per OS thread
// and so shared by the blocks of a cluster; a cluster kernel must use dynamic shared memory
// alone (cuda_runtime.h). A pointer elsewhere, or a rank outside the cluster, is a device fault.
#pragma once

#include <type_traits>

#include "cuda_runtime.h"

namespace cooperative_groups {

class cluster_group {
 public:
  // Waits for every thread of every block of the cluster; orders shared memory as a block
  // barrier does, across the cluster's blocks.
  void sync() const { cuda_emu::cluster_sync(); }
  // The calling block's index in its cluster: blockIdx.x % num_blocks() (clusters run along x).
  unsigned block_rank() const { return blockIdx.x % cuda_emu::cluster_blocks(); }
  unsigned num_blocks() const { return cuda_emu::cluster_blocks(); }
  dim3 dim_blocks() const { return dim3(cuda_emu::cluster_blocks(), 1, 1); }
  // The calling block's position in its cluster, as a 3-D index.
  dim3 block_index() const { return dim3(block_rank(), 0, 0); }
  // `addr` (in the calling block's dynamic shared memory) at the same offset in block `rank`'s.
  template <class T>
  T* map_shared_rank(T* addr, unsigned rank) const {
    // The whole object must lie in the calling block's buffer (for void*, its first byte).
    using Object = std::conditional_t<std::is_void_v<T>, char, T>;
    return static_cast<T*>(cuda_emu::map_shared_rank(addr, sizeof(Object), rank));
  }
};

inline cluster_group this_cluster() { return cluster_group{}; }

}  // namespace cooperative_groups
