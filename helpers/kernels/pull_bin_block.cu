// pull_bin_block: one block per vertex, for the heaviest bin (hubs with thousands of in-links).
// Each warp reduces with shuffles, warp sums meet in shared memory, the first warp adds them.
extern "C" __global__ void pull_bin_block(const int* vertices, int count, const int* in_offsets,
                                          const int* in_sources, const float* contrib, float* pulled) {
    __shared__ float warp_sums[32];
    int v = vertices[blockIdx.x];             // launched with exactly `count` blocks
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float sum = 0.0f;
    for (long long k = in_offsets[v] + threadIdx.x; k < in_offsets[v + 1]; k += blockDim.x) {
        sum += contrib[in_sources[k]];
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) pulled[v] = sum;
    }
}
