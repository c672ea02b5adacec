// The CUDA driver's functions, reached through cudart's entry-point table: nothing in
// Braid links libcuda, so the same binaries load on machines without a driver. Internal
// to src/cuda. Thread-safe.
#pragma once

namespace braid::cuda {

// The driver function `name` (its CUDA 12.0 ABI), or nullptr where the driver (or the
// lack of one) does not offer it; a failed lookup leaves no sticky runtime error.
void* driverEntryPoint(const char* name);

}  // namespace braid::cuda
