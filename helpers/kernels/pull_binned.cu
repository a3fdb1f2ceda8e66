// pull_binned: lecture 14. Degree-binned pull: the vertices are listed in three bins by in-degree,
// and each bin gets the kernel that suits it: pull_bin_thread (one thread per light vertex),
// pull_bin_warp (one warp per medium vertex) and pull_bin_block (one block per hub).
// pull_bin_thread: one thread per vertex, for the vertices listed in one degree bin (the light
// ones).
extern "C" __global__ void pull_bin_thread(const int* vertices, int count, const int* in_offsets,
                                           const int* in_sources, const float* contrib,
                                           float* pulled) {
    // 64-bit: a grid can pass 2^31 threads
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int v = vertices[i];
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += contrib[in_sources[k]];
    pulled[v] = sum;
}
// pull_bin_warp: one warp per vertex, for the vertices listed in the middle degree bin.
extern "C" __global__ void pull_bin_warp(const int* vertices, int count, const int* in_offsets,
                                         const int* in_sources, const float* contrib,
                                         float* pulled) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (i >= count) return;                   // warp-uniform
    int v = vertices[i];
    float sum = 0.0f;
    for (long long k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32)
        sum += contrib[in_sources[k]];
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) pulled[v] = sum;
}
// pull_bin_block: one block per vertex, for the heaviest bin (hubs with thousands of in-links).
// Each warp reduces with shuffles, warp sums meet in shared memory, the first warp adds them.
extern "C" __global__ void pull_bin_block(const int* vertices, int count, const int* in_offsets,
                                          const int* in_sources, const float* contrib,
                                          float* pulled) {
    __shared__ float warp_sums[32];
    int v = vertices[blockIdx.x];             // launched with exactly `count` blocks
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float sum = 0.0f;
    for (long long k = in_offsets[v] + threadIdx.x; k < in_offsets[v + 1]; k += blockDim.x) {
        sum += contrib[in_sources[k]];
    }
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) pulled[v] = sum;
    }
}
