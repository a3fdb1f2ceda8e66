// coo_atomic: lecture 14. One thread per edge (edge list, COO) adds the source's contribution to
// the target with atomicAdd. Perfect load balance; pulled must be zeroed first; rounding changes
// from run to run.
extern "C" __global__ void coo_atomic(const int* sources, const int* targets, const float* contrib,
                                      float* pulled, int num_edges) {
    // 64-bit: edges reach 2^31 - 1
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= num_edges) return;
    atomicAdd(&pulled[targets[e]], contrib[sources[e]]);
}
