// pull_warp: lecture 13. One warp (32 threads) per vertex; lanes stride through the in-links, then
// a shuffle tree adds the 32 partial sums. Adjacent lanes read adjacent in_sources: the loads
// coalesce. Indices are 64-bit: 32 threads per vertex pass 2^31 threads from 2^26 vertices on, and
// k + 32 can pass 2^31.
extern "C" __global__ void pull_warp(const int* in_offsets, const int* in_sources,
                                     const float* contrib, float* pulled, int n) {
    long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    // the same v for the whole warp: all 32 lanes leave together
    if (v >= n) return;
    float sum = 0.0f;
    for (long long k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) {
        sum += contrib[in_sources[k]];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) pulled[v] = sum;
}
