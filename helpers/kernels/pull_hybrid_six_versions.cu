// pull_hybrid_six_versions: lecture 13. The six-versions report's "warp-optimised" kernel,
// rewritten to read contributions, bug kept on purpose. A thread whose vertex has more than 32
// in-links strides through ITS OWN list by 32 from its lane index, then shuffles with the full mask
// inside a branch: it adds partial sums of different vertices. Wrong.
extern "C" __global__ void pull_hybrid_six_versions(const int* in_offsets, const int* in_sources,
                                                    const float* contrib, float* pulled, int n) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    if (v < n) {
        int begin = in_offsets[v], end = in_offsets[v + 1];
        float sum = 0.0f;
        if (end - begin > 32) {
            for (int k = begin + lane; k < end; k += 32) sum += contrib[in_sources[k]];
            for (int offset = 16; offset > 0; offset /= 2)
                sum += __shfl_down_sync(0xffffffffu, sum, offset);
            if (lane == 0) pulled[v] = sum;
        } else {
            for (int k = begin; k < end; ++k) sum += contrib[in_sources[k]];
            pulled[v] = sum;
        }
    }
}
