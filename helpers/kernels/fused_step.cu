// fused_step: a whole PageRank iteration in one launch. Each vertex sums its in-neighbours' contributions
// (one thread per light vertex, the whole warp on each heavy one, as pull_hybrid), writes its new rank and
// its next contribution, and each block adds up the new dangling mass and the L1 change into `partials`
// (two floats per block); fused_finalize then adds the blocks' partials. scalars[0] holds the dangling
// mass of `rank`. Launch with a multiple of 32 threads per block, at most 1024.
extern "C" __global__ void fused_step(const int* in_offsets, const int* in_sources, const int* out_degree,
                                      const float* contrib, const float* rank, const float* scalars,
                                      float* new_rank, float* new_contrib, float* partials,
                                      int n, float d, int threshold) {
    __shared__ float block_dangling[32], block_change[32];
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int begin = 0, end = 0;
    if (v < n) { begin = in_offsets[v]; end = in_offsets[v + 1]; }
    bool heavy = end - begin > threshold;
    float sum = 0.0f;
    if (!heavy) {
        for (int k = begin; k < end; ++k) sum += contrib[in_sources[k]];
    }
    unsigned heavy_lanes = __ballot_sync(0xffffffffu, heavy);
    while (heavy_lanes) {
        int owner = __ffs(heavy_lanes) - 1;
        heavy_lanes &= heavy_lanes - 1;
        int b = __shfl_sync(0xffffffffu, begin, owner);
        int e = __shfl_sync(0xffffffffu, end, owner);
        float part = 0.0f;
        for (int k = b + lane; k < e; k += 32) part += contrib[in_sources[k]];
        for (int offset = 16; offset > 0; offset /= 2) part += __shfl_down_sync(0xffffffffu, part, offset);
        part = __shfl_sync(0xffffffffu, part, 0);
        if (lane == owner) sum = part;
    }
    float dangling = 0.0f, change = 0.0f;
    if (v < n) {
        float r = d * sum + (d * scalars[0] + (1.0f - d)) / n;
        int degree = out_degree[v];
        new_rank[v] = r;
        new_contrib[v] = degree > 0 ? r / degree : 0.0f;
        dangling = degree == 0 ? r : 0.0f;
        change = fabsf(r - rank[v]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        dangling += __shfl_down_sync(0xffffffffu, dangling, offset);
        change += __shfl_down_sync(0xffffffffu, change, offset);
    }
    if (lane == 0) { block_dangling[warp] = dangling; block_change[warp] = change; }
    __syncthreads();
    if (warp == 0) {
        int warps = blockDim.x / 32;
        dangling = lane < warps ? block_dangling[lane] : 0.0f;
        change = lane < warps ? block_change[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) {
            dangling += __shfl_down_sync(0xffffffffu, dangling, offset);
            change += __shfl_down_sync(0xffffffffu, change, offset);
        }
        if (lane == 0) { partials[2 * blockIdx.x] = dangling; partials[2 * blockIdx.x + 1] = change; }
    }
}
