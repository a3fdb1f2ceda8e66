// push_atomic: lecture 11. One thread per source vertex adds its contribution to each out-neighbour
// with atomicAdd. pulled must be zeroed first; the order of the additions, and so the rounding,
// changes from run to run.
extern "C" __global__ void push_atomic(const int* out_offsets, const int* out_targets,
                                       const float* contrib, float* pulled, int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= n) return;
    float c = contrib[u];
    for (int k = out_offsets[u]; k < out_offsets[u + 1]; ++k) {
        atomicAdd(&pulled[out_targets[k]], c);
    }
}
