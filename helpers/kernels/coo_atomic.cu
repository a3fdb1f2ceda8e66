// coo_atomic: one thread per edge (edge list, COO) adds the source's contribution to the target with
// atomicAdd. Perfect load balance; pulled must be zeroed first; rounding changes from run to run.
extern "C" __global__ void coo_atomic(const int* sources, const int* targets, const float* contrib,
                                      float* pulled, int num_edges) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= num_edges) return;
    atomicAdd(&pulled[targets[e]], contrib[sources[e]]);
}
