// pull_hybrid: lecture 13. One thread per vertex for light vertices; the whole warp, together, for
// each heavy one (more than `threshold` in-links) in turn. Lanes never leave before the ballot:
// every shuffle is full-warp.
extern "C" __global__ void pull_hybrid(const int* in_offsets, const int* in_sources,
                                       const float* contrib, float* pulled, int n, int threshold) {
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    int begin = 0, end = 0;
    if (v < n) { begin = in_offsets[v]; end = in_offsets[v + 1]; }
    bool heavy = end - begin > threshold;
    float sum = 0.0f;
    if (!heavy) {
        for (int k = begin; k < end; ++k) sum += contrib[in_sources[k]];
    }
    unsigned heavy_lanes = __ballot_sync(0xffffffffu, heavy);
    while (heavy_lanes) {
        int owner = __ffs(heavy_lanes) - 1;           // the lowest lane still waiting for its sum
        heavy_lanes &= heavy_lanes - 1;
        int b = __shfl_sync(0xffffffffu, begin, owner);
        int e = __shfl_sync(0xffffffffu, end, owner);
        float part = 0.0f;
        for (long long k = b + lane; k < e; k += 32) part += contrib[in_sources[k]];
        for (int offset = 16; offset > 0; offset /= 2)
            part += __shfl_down_sync(0xffffffffu, part, offset);
        part = __shfl_sync(0xffffffffu, part, 0);
        if (lane == owner) sum = part;
    }
    if (v < n) pulled[v] = sum;
}
