// pull_segmented: lecture 22. One segment of a source-segmented pull. The in-links are split by
// source into segments whose contributions fit in L2; each segment keeps its own in-CSR over the
// rows it touches (`rows`, `offsets`, `sources`). Launched once per segment, it ADDS the segment's
// contributions to `pulled` (zeroed before the first segment): one thread per listed row, the whole
// warp for each row longer than `threshold`, as pull_hybrid. Rows are distinct within a segment and
// segments run one after another: no atomics, and the same order of additions every run.
extern "C" __global__ void pull_segmented(const int* rows, int count, const int* offsets,
                                          const int* sources, const float* contrib, float* pulled,
                                          int threshold) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    int begin = 0, end = 0;
    if (i < count) { begin = offsets[i]; end = offsets[i + 1]; }
    bool heavy = end - begin > threshold;
    float sum = 0.0f;
    if (!heavy) {
        for (int k = begin; k < end; ++k) sum += contrib[sources[k]];
    }
    unsigned heavy_lanes = __ballot_sync(0xffffffffu, heavy);
    while (heavy_lanes) {
        int owner = __ffs(heavy_lanes) - 1;
        heavy_lanes &= heavy_lanes - 1;
        int b = __shfl_sync(0xffffffffu, begin, owner);
        int e = __shfl_sync(0xffffffffu, end, owner);
        float part = 0.0f;
        for (long long k = b + lane; k < e; k += 32) part += contrib[sources[k]];
        for (int offset = 16; offset > 0; offset /= 2)
            part += __shfl_down_sync(0xffffffffu, part, offset);
        part = __shfl_sync(0xffffffffu, part, 0);
        if (lane == owner) sum = part;
    }
    if (i < count) pulled[rows[i]] += sum;
}
